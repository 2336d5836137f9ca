"""Chain Studio's agent core: messages with lineage, memory and trim policies,
a recording OpenAI-SDK client, the demo model, tokens and the trace format."""
from __future__ import annotations

from .agent import Agent
from .client import Endpoint, LLMClient, configured_endpoint
from .errors import ChainStudioError, EndpointError, MalformedTraceError, PayloadMismatchError
from .memory import ShortTermMemory
from .msg import Msg
from .recording import CallAttempt, MemoryEvent, MemoryRecorder, NullRecorder
from .tokens import TokenCounter, count_payload
from .trace import Call, Trace
from .trace_format import TraceWriter, read_trace, write_trace
from .trim import KeepAll, MaxMessages, TrimPolicy, TrimResult

__all__ = [
    "Agent", "Call", "CallAttempt", "ChainStudioError", "Endpoint", "EndpointError", "KeepAll", "LLMClient",
    "MalformedTraceError", "MaxMessages", "MemoryEvent", "MemoryRecorder", "Msg", "NullRecorder",
    "PayloadMismatchError", "ShortTermMemory", "TokenCounter", "Trace", "TraceWriter", "TrimPolicy", "TrimResult",
    "configured_endpoint", "count_payload", "read_trace", "write_trace",
]
