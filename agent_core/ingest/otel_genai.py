"""The OpenTelemetry GenAI conventions: one model call per span (and its log events).

Three generations are read, each into a ``TelemetryCall`` rebuilt from what was recorded:

- current: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON arrays of ``{"role", "parts"}``)
  with ``gen_ai.system_instructions`` and ``gen_ai.tool.definitions`` (the official
  ``opentelemetry-instrumentation-openai-v2`` in span mode, Traceloop/OpenLLMetry);
- events: the messages as OTLP log records tied to the span by span id (``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice``): the
  official instrumentation's default mode;
- flat (older OpenLLMetry): ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``.

Request parameters come from ``gen_ai.request.*``; what no convention carries is listed as unrecorded.
"""
from __future__ import annotations

import json
import re
from typing import Any

from .otel_call import TelemetryCall, normalise_finish
from .otlp import failed

_FLAT = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_PARAMS = {"gen_ai.request.temperature": "temperature", "gen_ai.request.top_p": "top_p",
           "gen_ai.request.max_tokens": "max_tokens", "gen_ai.request.frequency_penalty": "frequency_penalty",
           "gen_ai.request.presence_penalty": "presence_penalty", "gen_ai.request.seed": "seed",
           "gen_ai.request.stop_sequences": "stop", "gen_ai.request.choice.count": "n"}
_RECORDS_TOOLS = ("opentelemetry.instrumentation.openai.",)
"""Instrumentation scopes that write ``gen_ai.tool.definitions`` whenever a request has tools (Traceloop, in its
default span-attribute mode): for their spans a missing attribute means no tools were sent. Others (and
Traceloop's events mode) make it opt-in or never record it."""
_ROLE_OF_EVENT = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                  "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
EVENT_NAMES = frozenset([*_ROLE_OF_EVENT, "gen_ai.choice"])


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def is_model_span(attrs: dict) -> bool:
    """A model call's span (it names the model or the chat operation), whatever it recorded of the messages."""
    return attrs.get("gen_ai.operation.name") in ("chat", "text_completion", "generate_content") or any(
        key in attrs for key in ("gen_ai.request.model", "gen_ai.response.model"))


def has_messages(attrs: dict) -> bool:
    return "gen_ai.input.messages" in attrs or any(_FLAT.match(k) for k in attrs if isinstance(k, str))


def json_attr(attrs: dict, key: str, warnings: list[str], where: str) -> Any:
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


def from_parts(message: dict, warnings: list[str], where: str) -> list[dict]:
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
    if role == "tool" or (results and not texts and not calls):
        return results
    first: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else (None if calls else "")}
    if message.get("name"):
        first["name"] = message["name"]
    if calls:
        first["tool_calls"] = calls
    return [first, *results]


def flat_messages(attrs: dict, kind: str) -> list[dict]:
    """Rebuild ``gen_ai.prompt.N.*`` attributes into OpenAI messages."""
    by_index: dict[int, dict] = {}
    for key, value in attrs.items():
        m = _FLAT.match(key) if isinstance(key, str) else None
        if m and m.group(1) == kind:
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


def tool_definitions(attrs: dict, warnings: list[str], where: str) -> list[dict] | None:
    """``gen_ai.tool.definitions`` (or OpenLLMetry's ``llm.request.functions.N.*``) as Chat Completions tools.

    The conventions write a definition flat (``{"type": "function", "name", "parameters"}``); the API wants
    ``{"type": "function", "function": {...}}``, so the wrapper is put back.
    """
    defs = json_attr(attrs, "gen_ai.tool.definitions", warnings, where)
    if isinstance(defs, list):
        out = []
        for d in defs:
            if not isinstance(d, dict):
                continue
            if isinstance(d.get("function"), dict):
                out.append(d)
            else:
                out.append({"type": d.get("type") or "function", "function": {k: v for k, v in d.items() if k != "type"}})
        return out
    flat: dict[int, dict] = {}
    for key, value in attrs.items():
        m = re.match(r"^llm\.request\.functions\.(\d+)\.(name|description|parameters)$", key) if isinstance(key, str) else None
        if m:
            fn = flat.setdefault(int(m.group(1)), {})
            fn[m.group(2)] = json.loads(value) if m.group(2) == "parameters" and isinstance(value, str) else value
    return [{"type": "function", "function": flat[i]} for i in sorted(flat)] or None


def _parameters(attrs: dict) -> dict:
    return {name: attrs[key] for key, name in _PARAMS.items() if key in attrs}


def _usage(attrs: dict) -> dict:
    for prompt, completion in (("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"),
                               ("gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens")):
        usage = {k: attrs[a] for k, a in (("prompt_tokens", prompt), ("completion_tokens", completion))
                 if isinstance(attrs.get(a), int)}
        if usage:
            return usage
    return {}


def _response(attrs: dict, model: Any, reply: dict | None, finish: Any) -> dict | None:
    if reply is None:
        return None
    response: dict[str, Any] = {"id": attrs.get("gen_ai.response.id"), "object": "chat.completion",
                                "model": attrs.get("gen_ai.response.model") or model,
                                "choices": [{"index": 0, "message": reply, "finish_reason": normalise_finish(finish)}]}
    usage = _usage(attrs)
    if usage:
        response["usage"] = usage
    return response


def call_from_span(span: dict, attrs: dict, events: list[dict], warnings: list[str]) -> TelemetryCall | None:
    """The call a GenAI span records (with its log ``events``), or None when it holds no messages at all."""
    where = f"span {span.get('name', '?')} ({span.get('spanId', '?')})"
    model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
    convention = "gen_ai"
    finish: Any = None
    inferred = 0
    if "gen_ai.input.messages" in attrs:
        messages = []
        system = json_attr(attrs, "gen_ai.system_instructions", warnings, where)
        if isinstance(system, list):
            text = "\n".join(str(p.get("content", "")) for p in system if isinstance(p, dict))
            messages.append({"role": "system", "content": text})
        for m in _as_list(json_attr(attrs, "gen_ai.input.messages", warnings, where)):
            if isinstance(m, dict):
                messages.extend(from_parts(m, warnings, where))
        outputs = [(m, from_parts(m, warnings, where))
                   for m in _as_list(json_attr(attrs, "gen_ai.output.messages", warnings, where)) if isinstance(m, dict)]
        reply = outputs[0][1][0] if outputs and outputs[0][1] else None
        finish = outputs[0][0].get("finish_reason") if outputs else None
    elif has_messages(attrs):
        convention = "gen_ai flat"
        messages = flat_messages(attrs, "prompt")
        completions = flat_messages(attrs, "completion")
        reply = completions[0] if completions else None
        finish = reply.pop("_finish_reason", None) if reply else None
    elif events:
        convention = "gen_ai events"
        messages, reply, finish = messages_from_events(events, warnings, where)
        inferred = infer_tool_call_ids(messages)
    else:
        return None
    if finish is None and isinstance(attrs.get("gen_ai.response.finish_reasons"), list) and \
            attrs["gen_ai.response.finish_reasons"]:
        finish = attrs["gen_ai.response.finish_reasons"][0]
    body: dict[str, Any] = {"model": model, "messages": messages, **_parameters(attrs)}
    unrecorded = ["request parameters other than gen_ai.request.* (tool_choice, response_format ...)"]
    if convention == "gen_ai events" and inferred:
        unrecorded.append("the tool_call_id of tool results (each was paired by position with the tool calls "
                          "before it: inferred)")
    tools = tool_definitions(attrs, warnings, where)
    if tools:
        body["tools"] = tools
    elif convention != "gen_ai" or not str(span.get("_scope") or "").startswith(_RECORDS_TOOLS):
        unrecorded.append("tools")
    return TelemetryCall(body=body, response=_response(attrs, model, reply, finish), status=400 if failed(span) else 200,
                         unrecorded=unrecorded, convention=convention)


def messages_from_events(events: list[dict], warnings: list[str], where: str) -> tuple[list[dict], dict | None, Any]:
    """The official instrumentation's log events of one call -> (input messages, reply, finish reason)."""
    from .otlp import attr_value, event_name, nanos

    messages: list[dict] = []
    reply, finish = None, None
    for record in sorted(events, key=lambda r: nanos(r, "timeUnixNano", "observedTimeUnixNano")):
        name = event_name(record)
        body = attr_value(record.get("body"))
        body = body if isinstance(body, dict) else {}
        if name == "gen_ai.choice":
            if reply is None:
                message = body.get("message") if isinstance(body.get("message"), dict) else {}
                if "tool_calls" not in message and isinstance(body.get("tool_calls"), list):
                    message = {**message, "tool_calls": body["tool_calls"]}     # Traceloop puts them beside it
                reply = _event_message("assistant", message)
                finish = body.get("finish_reason")
            continue
        role = _ROLE_OF_EVENT.get(name or "")
        if role is None:
            warnings.append(f"{where}: a log event {name!r} is not a GenAI message event and was skipped")
            continue
        messages.append(_event_message(role, body))
    if any("content" not in m and "tool_calls" not in m for m in messages):
        warnings.append(f"{where}: message events carry no content: enable content capture in your instrumentation "
                        "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)")
    return messages, reply, finish


def infer_tool_call_ids(messages: list[dict]) -> int:
    """Give tool messages recorded without their ``tool_call_id`` (Traceloop's events mode) the id of the call
    they answer by position: the k-th result after an assistant's tool calls answers its k-th call. Returns how
    many were inferred (the caller labels them)."""
    inferred = 0
    pending: list[Any] = []
    for m in messages:
        if m.get("role") == "assistant":
            pending = [c.get("id") for c in m.get("tool_calls") or [] if isinstance(c, dict)]
        elif m.get("role") == "tool":
            if "tool_call_id" not in m and pending:
                m["tool_call_id"] = pending[0]
                inferred += 1
            if pending:
                pending.pop(0)
        else:
            pending = []
    return inferred


def _event_message(role: str, body: dict) -> dict:
    message: dict[str, Any] = {"role": body.get("role") if isinstance(body.get("role"), str) else role}
    if "content" in body:
        message["content"] = body["content"]
    if isinstance(body.get("tool_calls"), list):
        message["tool_calls"] = [
            {"id": c.get("id"), "type": c.get("type") or "function",
             "function": {"name": (c.get("function") or {}).get("name"),
                          "arguments": _arguments((c.get("function") or {}).get("arguments"))}}
            for c in body["tool_calls"] if isinstance(c, dict)]
    if role == "tool" and ("id" in body or "tool_call_id" in body):
        message["tool_call_id"] = body.get("id", body.get("tool_call_id"))
    return message
