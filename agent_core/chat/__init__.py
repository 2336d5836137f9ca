"""The agent side: short-term memory, the recording openai-SDK client, tools, the agent loop, where calls go
(connection: the configured endpoint or the demo model) and a chat session that wires them to a trace file."""
