"""OpenAI Agents SDK trace exports as a trace: one call per ``generation`` span.

The SDK's exporters send ``{"data": [item, ...]}`` where an item is ``trace.export()`` (``"object": "trace"``)
or ``span.export()`` (``"object": "trace.span"``); a file processor writes the same items as a JSON array or
one per line (JSONL). A ``generation`` span (the Chat Completions model) holds the exact ``input`` messages
sent, the ``output`` messages, the model, its ``model_config`` and the usage. It does not hold the tool
definitions (the agent span lists only their names) nor the finish reason, so those are unrecorded.
``response`` spans (the Responses API model) hold only a response id: they are counted, not imported.
Each SDK trace (or its ``group_id``, a conversation of several runs) is one conversation.
"""
from __future__ import annotations

from typing import Any

from agent_core.trace.model import Trace

from .otel_call import TelemetryCall, calls_to_trace

_PARAMS = ("temperature", "top_p", "frequency_penalty", "presence_penalty", "tool_choice", "parallel_tool_calls",
           "max_tokens", "store", "metadata", "top_logprobs")


def _items(value: Any) -> list | None:
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        value = value["data"]
    if isinstance(value, dict):
        value = [value]
    return value if isinstance(value, list) else None


def looks_like(value: Any) -> bool:
    """An export of Agents SDK traces and spans (``{"data": [...]}``, an array, or one item)."""
    items = _items(value)
    return bool(items) and all(isinstance(i, dict) and i.get("object") in ("trace", "trace.span") for i in items)


def _ns(timestamp: Any) -> int:
    from datetime import datetime

    if not isinstance(timestamp, str):
        return 0
    try:
        return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return 0


def _reply(output: Any) -> dict | None:
    message = output[0] if isinstance(output, list) and output and isinstance(output[0], dict) else None
    if message is None:
        return None
    return {k: v for k, v in message.items() if v is not None or k == "content"}


def to_trace(value: Any, source: str) -> Trace:
    """The trace of an Agents SDK export (see the module docstring)."""
    items = _items(value) or []
    groups = {i.get("id"): i.get("group_id") for i in items if i.get("object") == "trace" and i.get("group_id")}
    warnings: list[str] = []
    calls: list[TelemetryCall] = []
    responses = other = 0
    for item in items:
        data = item.get("span_data") if item.get("object") == "trace.span" else None
        if not isinstance(data, dict):
            continue
        if data.get("type") == "response":
            responses += 1
            continue
        if data.get("type") != "generation":
            other += 1
            continue
        if not isinstance(data.get("input"), list):
            warnings.append(f"generation span {item.get('id')}: no input messages (trace_include_sensitive_data "
                            "was off?); skipped")
            continue
        config = data.get("model_config") if isinstance(data.get("model_config"), dict) else {}
        body: dict[str, Any] = {"model": data.get("model"), "messages": data["input"],
                                **{k: config[k] for k in _PARAMS if config.get(k) is not None}}
        reply = _reply(data.get("output"))
        response = None
        if reply is not None:
            response = {"object": "chat.completion", "model": data.get("model"),
                        "choices": [{"index": 0, "message": reply, "finish_reason": None}]}
            usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
            tokens = {k: usage[a] for k, a in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens"))
                      if isinstance(usage.get(a), int)}
            if tokens:
                response["usage"] = tokens
        error = item.get("error")
        trace_id = item.get("trace_id")
        group = groups.get(trace_id)
        calls.append(TelemetryCall(body=body, response=response, status=400 if error else 200, exact_messages=True,
                                   unrecorded=["tools", "the finish reason", "request parameters left at their default"],
                                   convention="agents-sdk", start_ns=_ns(item.get("started_at")), trace_id=trace_id,
                                   span_id=item.get("id"), root=False, session=str(group) if group else None))
    if responses:
        warnings.append(f"{responses} response span(s) (the Responses API model) hold only a response id, not the "
                        "messages: nothing of them can be imported; use OpenAIChatCompletionsModel, or the proxy")
    if other:
        warnings.append(f"{other} span(s) are not model calls (agent, function, handoff, custom) and were skipped")
    return calls_to_trace(calls, warnings, source, "openai-agents")
