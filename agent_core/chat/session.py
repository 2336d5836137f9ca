"""A chat session: agent + memory + trace writer + endpoint, shared by the CLI and the studio."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from agent_core.core.errors import EndpointError
from agent_core.trace.recorder import FanOut, MemoryRecorder, Recorder
from agent_core.trace.tokens import count_payload
from agent_core.trace.writer import TraceWriter
from agent_core.trim.base import TrimPolicy
from agent_core.trim.window import MaxMessages

from .agent import Agent
from .client import Endpoint, LLMClient
from .connection import Connection, connect
from .memory import ShortTermMemory

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant. 你是一个乐于助人的助手。"


@dataclass
class ChatSession:
    """Everything one conversation needs; ``close()`` stops what it started."""

    agent: Agent
    endpoint: Endpoint
    writer: TraceWriter | None
    recorder: MemoryRecorder
    connection: Connection | None = None
    """Where the calls go; closing the session stops the demo model it may have started."""

    @classmethod
    def start(cls, trace_path: Path | None, model: str | None = None, base_url: str | None = None,
              api_key: str | None = None, max_messages: int = 40, max_tool_rounds: int = 1,
              system_prompt: str | None = None, policy: TrimPolicy | None = None,
              api: str = "chat-completions", recorders: tuple[Recorder, ...] = (),
              server_state: bool = False) -> "ChatSession":
        """Connect to the configured endpoint, or start the demo model in-process when none is set.

        ``recorders`` receive every event too (the live OTLP exporter of ``chat --otlp-endpoint``);
        ``server_state``: see ``Agent`` (Responses only)."""
        connection = connect(model, base_url, api_key)
        endpoint = connection.endpoint
        writer = None
        sinks: list[Recorder] = []
        if trace_path is not None:
            try:
                writer = TraceWriter(trace_path, secrets=[endpoint.api_key] if endpoint.api_key else [],
                                     meta={"model": endpoint.model, "endpoint": endpoint.host, "api": api,
                                           **({"server_state": True} if server_state else {}),
                                           "demo": endpoint.is_demo, "recorded_by": "chain-studio chat"})
            except BaseException:
                connection.close()      # a trace in use (or unreadable) must not leave the demo model running
                raise
            sinks.append(writer)
        memory_recorder = MemoryRecorder()
        recorder = FanOut(*sinks, memory_recorder, *recorders)
        # an existing trace is appended to: calls go on after its last one, never from 0 again
        client = LLMClient(endpoint, recorder=recorder, first_call=writer.first_call if writer else 0)
        memory = ShortTermMemory(policy=policy or MaxMessages(max_messages), recorder=recorder,
                                 system_prompt=system_prompt or DEFAULT_SYSTEM_PROMPT)
        agent = Agent(client, memory, max_tool_rounds=max_tool_rounds, api=api, server_state=server_state)
        return cls(agent=agent, endpoint=endpoint, writer=writer, recorder=memory_recorder, connection=connection)

    def describe(self) -> str:
        return f"{self.endpoint.model} at {self.endpoint.host}" + (" (bundled demo model)" if self.endpoint.is_demo
                                                                    else "") + f" over {self.agent.api}" + (
            " (server state: previous_response_id)" if self.agent.server_state else "")

    def handle(self, line: str) -> str:
        """One REPL line: a command or a user message; returns the text to show."""
        if line == "/clear":
            self.agent.clear()
            return "(conversation cleared; system messages kept)"
        if line == "/history":
            payload = self.agent.memory.to_api_format()
            tokens = count_payload(payload, self.agent.tools.schemas(), self.endpoint.model)
            return json.dumps(payload, ensure_ascii=False, indent=2) + f"\n({len(payload)} messages, {tokens} tokens)"
        try:
            return self.agent.chat(line)
        except EndpointError as err:
            return f"error: {err}"

    def close(self) -> None:
        self.agent.client.close()
        if self.writer is not None:
            self.writer.close()
        if self.connection is not None:
            self.connection.close()
