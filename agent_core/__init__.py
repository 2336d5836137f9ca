"""Chain Studio's agent core, in layers (docs/architecture.md).

Each subpackage imports only the ones below it (checked by ``lint-imports``)::

    cli      one module per command
    export   json, curl, pytest, html report, redaction
    replay   another trim policy over a recorded trace; probes; the report
    chat     memory, the recording client, tools, the agent, a chat session
    serve    the demo model and the recording proxy
    ingest   format detection, payload-log inference, OpenTelemetry, datasets
    lint     rules, provider profiles, the scan, repair | trim   the trim policies
    trace    recorded events, the in-memory trace, the file format, tokens
    apis     one adapter per wire API (Chat Completions today)
    core     Msg, ids, errors, limits, paths

The names below are re-exported lazily: ``import agent_core`` imports nothing
else, so importing the linter or the reader never loads the ``openai`` SDK.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Agent": "agent_core.chat.agent",
    "Endpoint": "agent_core.chat.client",
    "LLMClient": "agent_core.chat.client",
    "configured_endpoint": "agent_core.chat.client",
    "ShortTermMemory": "agent_core.chat.memory",
    "ChainStudioError": "agent_core.core.errors",
    "EndpointError": "agent_core.core.errors",
    "MalformedTraceError": "agent_core.core.errors",
    "PayloadMismatchError": "agent_core.core.errors",
    "Msg": "agent_core.core.msg",
    "CallAttempt": "agent_core.trace.events",
    "MemoryEvent": "agent_core.trace.events",
    "MemoryRecorder": "agent_core.trace.recorder",
    "NullRecorder": "agent_core.trace.recorder",
    "TokenCounter": "agent_core.trace.tokens",
    "count_payload": "agent_core.trace.tokens",
    "Call": "agent_core.trace.model",
    "Trace": "agent_core.trace.model",
    "TraceWriter": "agent_core.trace.writer",
    "read_trace": "agent_core.trace.reader",
    "write_trace": "agent_core.trace.writer",
    "KeepAll": "agent_core.trim.window",
    "MaxMessages": "agent_core.trim.window",
    "TrimPolicy": "agent_core.trim.base",
    "TrimResult": "agent_core.trim.base",
}

__all__ = [
    "Agent",
    "Call",
    "CallAttempt",
    "ChainStudioError",
    "Endpoint",
    "EndpointError",
    "KeepAll",
    "LLMClient",
    "MalformedTraceError",
    "MaxMessages",
    "MemoryEvent",
    "MemoryRecorder",
    "Msg",
    "NullRecorder",
    "PayloadMismatchError",
    "ShortTermMemory",
    "TokenCounter",
    "Trace",
    "TraceWriter",
    "TrimPolicy",
    "TrimResult",
    "configured_endpoint",
    "count_payload",
    "read_trace",
    "write_trace",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # for type checkers and editors only
    from agent_core.chat.agent import Agent
    from agent_core.chat.client import Endpoint, LLMClient, configured_endpoint
    from agent_core.chat.memory import ShortTermMemory
    from agent_core.core.errors import (
        ChainStudioError,
        EndpointError,
        MalformedTraceError,
        PayloadMismatchError,
    )
    from agent_core.core.msg import Msg
    from agent_core.trace.events import CallAttempt, MemoryEvent
    from agent_core.trace.model import Call, Trace
    from agent_core.trace.reader import read_trace
    from agent_core.trace.recorder import MemoryRecorder, NullRecorder
    from agent_core.trace.tokens import TokenCounter, count_payload
    from agent_core.trace.writer import TraceWriter, write_trace
    from agent_core.trim.base import TrimPolicy, TrimResult
    from agent_core.trim.window import KeepAll, MaxMessages
