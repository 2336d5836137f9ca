"""What is recorded and how it is kept: events and the Recorder interface, the in-memory Trace (model,
payload), the file format (writer, reader, codec, upgrades) and token counts (tokens)."""
