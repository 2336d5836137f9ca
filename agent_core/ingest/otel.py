"""OpenTelemetry GenAI spans (OTLP JSON) as a trace.

Two generations of the semantic conventions are read:

- current: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON arrays of
  ``{"role", "parts": [...]}``; parts ``text``, ``tool_call``, ``tool_call_response``)
  plus ``gen_ai.system_instructions`` and ``gen_ai.tool.definitions``;
- older (OpenLLMetry): flattened ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``.

Each chat span becomes one call, ordered by start time; the message stream
and its lineage are inferred from the payloads (``payload_lineage``). What
cannot be mapped is named in the trace's warnings.
"""
from __future__ import annotations

import json
import re
from typing import Any

from agent_core.trace.model import Trace

from .payload_log import trace_from_requests

_FLAT = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")


def looks_like(value: Any) -> bool:
    """An OTLP JSON export: ``{"resourceSpans": [...]}`` (or a list of them)."""
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, dict) and "resourceSpans" in v for v in value)
    return isinstance(value, dict) and isinstance(value.get("resourceSpans"), list)


def _attr_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [_attr_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {kv.get("key"): _attr_value(kv.get("value")) for kv in (value["kvlistValue"] or {}).get("values", [])}
    return None


def _spans(value: Any) -> list[dict]:
    exports = value if isinstance(value, list) else [value]
    spans = []
    for export in exports:
        for resource in export.get("resourceSpans") or []:
            for scope in (resource or {}).get("scopeSpans") or (resource or {}).get("instrumentationLibrarySpans") or []:
                spans.extend(s for s in (scope or {}).get("spans") or [] if isinstance(s, dict))
    return spans


def _json_attr(attrs: dict, key: str, warnings: list[str], where: str) -> Any:
    raw = attrs.get(key)
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            warnings.append(f"{where}: {key} is not valid JSON and was skipped")
            return None
    return raw


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value if value is not None else {}, ensure_ascii=False)


def _from_parts(message: dict, warnings: list[str], where: str) -> list[dict]:
    """One OTel message -> one or more OpenAI messages (each tool response is its own tool message)."""
    role = message.get("role")
    parts = message.get("parts") if isinstance(message.get("parts"), list) else []
    texts, calls, results = [], [], []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            texts.append(str(part.get("content", "")))
        elif kind == "tool_call":
            calls.append({"id": part.get("id"), "type": "function",
                          "function": {"name": part.get("name"), "arguments": _arguments(part.get("arguments"))}})
        elif kind == "tool_call_response":
            response = part.get("response", part.get("result"))
            results.append({"role": "tool", "tool_call_id": part.get("id"),
                            "content": response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)})
        else:
            warnings.append(f"{where}: a {kind!r} part of a {role} message has no Chat Completions form and was kept as text")
            texts.append(json.dumps(part, ensure_ascii=False))
    out: list[dict] = []
    if role == "tool" or (results and not texts and not calls):
        return results
    content = "\n".join(texts) if texts else (None if calls else "")
    first: dict[str, Any] = {"role": role, "content": content}
    if message.get("name"):
        first["name"] = message["name"]
    if calls:
        first["tool_calls"] = calls
    out.append(first)
    return out + results


def _flat_messages(attrs: dict, kind: str) -> list[dict]:
    """Rebuild ``gen_ai.prompt.N.*`` attributes into OpenAI messages."""
    by_index: dict[int, dict] = {}
    for key, value in attrs.items():
        m = _FLAT.match(key)
        if not m or m.group(1) != kind:
            continue
        by_index.setdefault(int(m.group(2)), {})[m.group(3)] = value
    out = []
    for _, fields in sorted(by_index.items()):
        message: dict[str, Any] = {"role": fields.get("role", "user"), "content": fields.get("content")}
        calls: dict[int, dict] = {}
        for key, value in fields.items():
            cm = re.match(r"^tool_calls\.(\d+)\.(id|name|arguments)$", key)
            if cm:
                call = calls.setdefault(int(cm.group(1)), {"id": None, "type": "function",
                                                           "function": {"name": None, "arguments": "{}"}})
                if cm.group(2) == "id":
                    call["id"] = value
                else:
                    call["function"][cm.group(2)] = value
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        if fields.get("tool_call_id"):
            message["tool_call_id"] = fields["tool_call_id"]
        if kind == "completion" and fields.get("finish_reason"):
            message["_finish_reason"] = fields["finish_reason"]
        out.append(message)
    return out


def _tools(attrs: dict, warnings: list[str], where: str) -> list[dict] | None:
    defs = _json_attr(attrs, "gen_ai.tool.definitions", warnings, where)
    if isinstance(defs, list):
        return [d if "function" in d or d.get("type") == "function" else {"type": "function", "function": d}
                for d in defs if isinstance(d, dict)]
    flat: dict[int, dict] = {}
    for key, value in attrs.items():
        m = re.match(r"^llm\.request\.functions\.(\d+)\.(name|description|parameters)$", key)
        if m:
            fn = flat.setdefault(int(m.group(1)), {})
            fn[m.group(2)] = json.loads(value) if m.group(2) == "parameters" and isinstance(value, str) else value
    return [{"type": "function", "function": flat[i]} for i in sorted(flat)] or None


def _is_model_span(attrs: dict) -> bool:
    """A model call's span (it names the model or the chat operation), whatever it recorded of the messages."""
    return attrs.get("gen_ai.operation.name") in ("chat", "text_completion", "generate_content") or any(
        key in attrs for key in ("gen_ai.request.model", "gen_ai.response.model"))


def to_trace(value: Any, source: str) -> Trace:
    """Build the trace; spans that carry no chat messages are skipped with a warning (model spans recorded
    without their content get one that says how to record it)."""
    warnings: list[str] = []
    spans = sorted(_spans(value), key=lambda s: int(s.get("startTimeUnixNano") or 0))
    bodies, responses, statuses = [], [], []
    skipped = no_content = 0
    for span in spans:
        attrs = {a.get("key"): _attr_value(a.get("value")) for a in span.get("attributes") or [] if isinstance(a, dict)}
        where = f"span {span.get('name', '?')} ({span.get('spanId', '?')})"
        model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
        if "gen_ai.input.messages" in attrs:
            messages = []
            system = _json_attr(attrs, "gen_ai.system_instructions", warnings, where)
            if isinstance(system, list):
                text = "\n".join(str(p.get("content", "")) for p in system if isinstance(p, dict))
                messages.append({"role": "system", "content": text})
            for m in _json_attr(attrs, "gen_ai.input.messages", warnings, where) or []:
                if isinstance(m, dict):
                    messages.extend(_from_parts(m, warnings, where))
            outputs = [r for m in (_json_attr(attrs, "gen_ai.output.messages", warnings, where) or [])
                       if isinstance(m, dict) for r in [(m, _from_parts(m, warnings, where))]]
            reply = outputs[0][1][0] if outputs and outputs[0][1] else None
            finish = outputs[0][0].get("finish_reason") if outputs else None
        elif any(_FLAT.match(k) for k in attrs):
            messages = _flat_messages(attrs, "prompt")
            completions = _flat_messages(attrs, "completion")
            reply = completions[0] if completions else None
            finish = reply.pop("_finish_reason", None) if reply else None
        elif _is_model_span(attrs):
            no_content += 1
            continue
        else:
            skipped += 1
            continue
        body: dict[str, Any] = {"model": model, "messages": messages}
        tools = _tools(attrs, warnings, where)
        if tools:
            body["tools"] = tools
        bodies.append(body)
        usage = {k: attrs[a] for k, a in (("prompt_tokens", "gen_ai.usage.input_tokens"),
                                          ("completion_tokens", "gen_ai.usage.output_tokens")) if isinstance(attrs.get(a), int)}
        if not usage:
            usage = {k: attrs[a] for k, a in (("prompt_tokens", "gen_ai.usage.prompt_tokens"),
                                              ("completion_tokens", "gen_ai.usage.completion_tokens"))
                     if isinstance(attrs.get(a), int)}
        response: dict[str, Any] | None = None
        if reply is not None:
            response = {"id": attrs.get("gen_ai.response.id"), "object": "chat.completion",
                        "model": attrs.get("gen_ai.response.model") or model,
                        "choices": [{"index": 0, "message": reply, "finish_reason": finish}]}
            if usage:
                response["usage"] = usage
        responses.append(response)
        statuses.append(400 if (span.get("status") or {}).get("code") in (2, "STATUS_CODE_ERROR") else 200)
    if no_content:
        # Instrumentations record the messages only when asked (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).
        warnings.append(f"{no_content} span{'s carry' if no_content > 1 else ' carries'} no message content: "
                        "enable content capture in your instrumentation")
    if skipped:
        warnings.append(f"{skipped} span(s) carry no gen_ai messages (tools, agents, HTTP) and were skipped")
    trace = trace_from_requests(bodies, responses, statuses=statuses, source=source, format="otel-genai")
    trace.warnings.extend(warnings)
    return trace
