"""OpenInference LLM spans (Arize Phoenix's ``openinference-instrumentation-*``) as model calls.

The richest source first: ``input.value`` with ``input.mime_type`` ``application/json`` is the exact request
body the SDK sent (and ``output.value`` the response). Without it (hidden inputs, another SDK) the call is
rebuilt from ``llm.input_messages.N.message.*``, ``llm.output_messages.N.message.*``,
``llm.tools.N.tool.json_schema``, ``llm.invocation_parameters`` and ``llm.token_count.*``.
"""
from __future__ import annotations

import json
import re
from typing import Any

from . import otlp
from .otel_call import TelemetryCall, normalise_finish

_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_TOOL_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)$")
_CONTENT = re.compile(r"^contents\.(\d+)\.message_content\.(type|text|image\.image\.url)$")
_TOOL = re.compile(r"^llm\.tools\.(\d+)\.tool\.json_schema$")


def is_openinference(attrs: dict) -> bool:
    """An OpenInference LLM span."""
    return attrs.get("openinference.span.kind") == "LLM" or any(
        isinstance(k, str) and k.startswith(("llm.input_messages.", "llm.output_messages.")) for k in attrs)


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def _messages(attrs: dict, direction: str, warnings: list[str], where: str) -> list[dict]:
    by_index: dict[int, dict] = {}
    for key, value in attrs.items():
        m = _MESSAGE.match(key) if isinstance(key, str) else None
        if m and m.group(1) == direction:
            by_index.setdefault(int(m.group(2)), {})[m.group(3)] = value
    out = []
    for _, fields in sorted(by_index.items()):
        message: dict[str, Any] = {"role": fields.get("role")}
        calls: dict[int, dict] = {}
        parts: dict[int, dict] = {}
        for key, value in fields.items():
            if (cm := _TOOL_CALL.match(key)):
                call = calls.setdefault(int(cm.group(1)), {"id": None, "type": "function", "function": {}})
                if cm.group(2) == "id":
                    call["id"] = value
                else:
                    call["function"][cm.group(2).split(".")[1]] = value
            elif (pm := _CONTENT.match(key)):
                parts.setdefault(int(pm.group(1)), {})[pm.group(2)] = value
            elif key not in ("role", "content", "name", "tool_call_id", "function_call_name",
                             "function_call_arguments_json"):
                warnings.append(f"{where}: llm.{direction}_messages attribute {key!r} has no mapping and was skipped")
        if "content" in fields:
            message["content"] = fields["content"]
        elif parts:
            message["content"] = [{"type": "text", "text": p.get("text")} if p.get("type") == "text" else
                                  {"type": "image_url", "image_url": {"url": p.get("image.image.url")}}
                                  for _, p in sorted(parts.items())]
        if fields.get("name"):
            message["name"] = fields["name"]
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        if fields.get("tool_call_id"):
            message["tool_call_id"] = fields["tool_call_id"]
        out.append(message)
    return out


def call_from_span(span: dict, attrs: dict, warnings: list[str]) -> TelemetryCall:
    """The call an OpenInference LLM span records."""
    where = f"span {span.get('name', '?')} ({span.get('spanId', '?')})"
    status = 400 if otlp.failed(span) else 200
    body = _json(attrs.get("input.value")) if attrs.get("input.mime_type") == "application/json" else None
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        response = _json(attrs.get("output.value")) if attrs.get("output.mime_type") == "application/json" else None
        if not (isinstance(response, dict) and isinstance(response.get("choices"), list)):
            response = _rebuilt_response(attrs, warnings, where)
        return TelemetryCall(body=body, response=response, status=status, exact=True, convention="openinference")
    if "input.value" in attrs:
        warnings.append(f"{where}: input.value is not a JSON request body; the call was rebuilt from "
                        "llm.input_messages")
    params = _json(attrs.get("llm.invocation_parameters"))
    body = {"model": attrs.get("llm.model_name")}
    unrecorded = []
    if isinstance(params, dict):
        body.update({k: v for k, v in params.items() if k not in ("messages", "tools")})
    else:
        unrecorded.append("parameters")
    body["messages"] = _messages(attrs, "input", warnings, where)
    tools = []
    for key, value in sorted(attrs.items(), key=lambda kv: str(kv[0])):
        if isinstance(key, str) and (tm := _TOOL.match(key)):
            tool = _json(value)
            if isinstance(tool, dict):
                tools.append((int(tm.group(1)), tool if "function" in tool or "type" in tool
                              else {"type": "function", "function": tool}))
            else:
                warnings.append(f"{where}: {key} is not a JSON tool definition and was skipped")
    if tools:
        body["tools"] = [t for _, t in sorted(tools, key=lambda t: t[0])]
    return TelemetryCall(body=body, response=_rebuilt_response(attrs, warnings, where), status=status,
                         unrecorded=unrecorded, convention="openinference")


def _rebuilt_response(attrs: dict, warnings: list[str], where: str) -> dict | None:
    outputs = _messages(attrs, "output", warnings, where)
    if not outputs:
        return None
    usage = {k: attrs[a] for k, a in (("prompt_tokens", "llm.token_count.prompt"),
                                      ("completion_tokens", "llm.token_count.completion"))
             if isinstance(attrs.get(a), int)}
    response: dict[str, Any] = {"object": "chat.completion", "model": attrs.get("llm.model_name"),
                                "choices": [{"index": 0, "message": outputs[0],
                                             "finish_reason": normalise_finish(attrs.get("llm.finish_reason"))}]}
    if usage:
        response["usage"] = usage
    return response
