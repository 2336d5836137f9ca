"""Everything that holds message chains becomes a ``Trace``: format detection (detect), payload-log inference
(payload_log, with alignment and message_keys), OpenTelemetry spans (otel), AgentScope dumps (agentscope)."""
