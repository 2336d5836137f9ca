"""One recorded call as the attributes of an OpenTelemetry GenAI inference span (current conventions).

The conventions (opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans, and the JSON schemas
``gen-ai-input-messages.json``, ``gen-ai-output-messages.json``, ``gen-ai-system-instructions.json``,
``gen-ai-tool-definitions.json`` beside it) ask for:

- ``gen_ai.operation.name`` (``chat``), ``gen_ai.provider.name``, ``gen_ai.request.model`` and the request
  parameters (``gen_ai.request.temperature`` ...), ``gen_ai.response.id / model / finish_reasons``,
  ``gen_ai.usage.input_tokens / output_tokens``, ``server.address / port``, ``error.type``;
- ``gen_ai.input.messages``: the chat history as ``[{"role", "parts": [...]}]`` with parts
  ``{"type": "text", "content"}``, ``{"type": "tool_call", "id", "name", "arguments"}`` and
  ``{"type": "tool_call_response", "id", "response"}``; ``gen_ai.output.messages`` the same plus
  ``finish_reason``; recorded as JSON strings (the spec allows that where structured values are not supported);
- ``gen_ai.system_instructions`` only for instructions the API takes *separately* from the chat history
  (Responses ``instructions``, Anthropic ``system``, Gemini ``systemInstruction``): a Chat Completions
  ``system`` message stays in ``gen_ai.input.messages``, as the spec says;
- ``gen_ai.tool.definitions``: ``[{"type": "function", "name", "description", "parameters"}]``.

Chain Studio adds what the conventions have no key for: the exact request and response bodies as
``input.value`` / ``output.value`` with ``input.mime_type`` ``application/json`` and ``openinference.span.kind``
``LLM`` (OpenInference's keys, so Phoenix and the OpenInference importers show them and take the exact body), the SHA-256 of the bytes sent when it was recorded
(``chain_studio.request.sha256``) and the linter's findings (span events, ``otlp.py``).

Values are as sent, converted only where the schema demands a type (a tool name that is not a string is
written as its JSON text): a message that breaks the schema would make a backend drop the whole list.
Every string passes through ``scrub`` (API keys removed) before it leaves.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from agent_core.apis.base import api_for_body
from agent_core.apis.chain import MISSING, Entry

_HOST_PROVIDERS = (("api.openai.com", "openai"), ("openai.azure.com", "azure.ai.openai"),
                   ("api.anthropic.com", "anthropic"), ("api.deepseek.com", "deepseek"),
                   ("api.mistral.ai", "mistral_ai"), ("generativelanguage.googleapis.com", "gcp.gemini"),
                   ("api.groq.com", "groq"), ("api.x.ai", "x_ai"), ("api.perplexity.ai", "perplexity"))
_API_PROVIDERS = {"chat-completions": "openai", "responses": "openai", "anthropic-messages": "anthropic",
                  "gemini": "gcp.gemini"}
"""The telemetry flavour of a wire API when the host names no provider (the spec: best knowledge)."""
_FINISH = {"tool_calls": "tool_call", "function_call": "tool_call", "end_turn": "stop", "stop_sequence": "stop",
           "max_tokens": "length", "tool_use": "tool_call", "STOP": "stop", "MAX_TOKENS": "length"}
"""Provider finish reasons -> the conventions' (``stop``, ``length``, ``content_filter``, ``tool_call``, ``error``)."""
_PARAMS = (("temperature", "gen_ai.request.temperature", float), ("top_p", "gen_ai.request.top_p", float),
           ("max_tokens", "gen_ai.request.max_tokens", int),
           ("max_completion_tokens", "gen_ai.request.max_tokens", int),
           ("frequency_penalty", "gen_ai.request.frequency_penalty", float),
           ("presence_penalty", "gen_ai.request.presence_penalty", float),
           ("seed", "gen_ai.request.seed", int), ("n", "gen_ai.request.choice.count", int))
_CALL_PART_TYPES = ("tool_use", "tool_result", "function_call", "function_call_output", "functionCall",
                    "functionResponse")
"""Content items an adapter already turned into calls / results (not repeated as generic parts)."""
_SERIALIZATIONS = ({"ensure_ascii": False, "separators": (",", ":")},
                   {"ensure_ascii": True, "separators": (",", ":")},
                   {"ensure_ascii": False, "separators": (", ", ": ")},
                   {"ensure_ascii": True, "separators": (", ", ": ")})
"""How clients write a body, most common first (the same list as ``trace/model.py : reserializes_to``)."""

Scrub = Callable[[str], str]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def body_text(body: Any, sha256: str | None = None) -> str:
    """The body as the text that was sent: the client serialization whose SHA-256 matches, else compact JSON."""
    import hashlib

    if isinstance(body, str):
        return body
    for options in _SERIALIZATIONS:
        try:
            text = json.dumps(body, **options)
        except (TypeError, ValueError, RecursionError):
            return json.dumps(None)
        if sha256 is None or hashlib.sha256(text.encode("utf-8")).hexdigest() == sha256:
            return text
    return json.dumps(body, **_SERIALIZATIONS[0])


def _content_parts(content: Any) -> list[dict]:
    if content is MISSING or content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append({"type": "text", "content": item["text"]})
            elif isinstance(item, dict) and item.get("type") in _CALL_PART_TYPES:
                continue
            elif isinstance(item, str):
                parts.append({"type": "text", "content": item})
            else:
                kind = item.get("type") if isinstance(item, dict) else None
                parts.append({"type": kind if isinstance(kind, str) and kind else "json", "content": item})
        return parts
    return [{"type": "json", "content": content}]


def entry_message(entry: Entry) -> list[dict]:
    """One conversation entry -> OTel messages (a tool message per result, as the schema has one id per part)."""
    role = entry.role if isinstance(entry.role, str) else _text(entry.role)
    if not entry.is_object:
        return [{"role": "user", "parts": [{"type": "json", "content": entry.native}]}]
    if entry.results:
        return [{"role": "tool" if role in ("tool", "function") else role, "parts": [
            {"type": "tool_call_response", "id": r.id if isinstance(r.id, str) else None,
             "response": None if r.content is MISSING else r.content}]} for r in entry.results]
    parts = _content_parts(entry.content)
    calls = list(entry.calls) + ([entry.legacy_call] if entry.legacy_call is not None else [])
    for call in calls:
        name = call.name if isinstance(call.name, str) else _text(None if call.name is MISSING else call.name)
        parts.append({"type": "tool_call", "id": call.id if isinstance(call.id, str) else None, "name": name,
                      "arguments": None if call.arguments is MISSING else call.arguments})
    message: dict[str, Any] = {"role": role, "parts": parts}
    if isinstance(entry.native, dict) and isinstance(entry.native.get("name"), str):
        message["name"] = entry.native["name"]
    return [message]


def input_messages(body: Any) -> list[dict] | None:
    """``gen_ai.input.messages`` of a request body (any registered wire API); None when it has no list."""
    chain = api_for_body(body).chain(body)
    if chain.entries is None:
        return None
    return [m for e in chain.entries for m in entry_message(e)]


def system_instructions(body: Any) -> list[dict] | None:
    """``gen_ai.system_instructions``: instructions sent beside the history (Responses, Anthropic, Gemini)."""
    if not isinstance(body, dict):
        return None
    for key in ("instructions", "system", "systemInstruction", "system_instruction"):
        value = body.get(key)
        if isinstance(value, dict) and isinstance(value.get("parts"), list):   # Gemini Content
            value = value["parts"]
        parts = _content_parts(value)
        if parts:
            return parts
    return None


def tool_definitions(body: Any) -> list[dict] | None:
    """``gen_ai.tool.definitions``: each declared tool flattened to ``{"type", "name", "description", "parameters"}``."""
    chain = api_for_body(body).chain(body)
    if chain.tools is None:
        return None
    out = []
    for decl in chain.tools:
        native = decl.native if isinstance(decl.native, dict) else {}
        fn = native.get("function") if isinstance(native.get("function"), dict) else native
        kind = native.get("type") if isinstance(native.get("type"), str) else "function"
        item: dict[str, Any] = {"type": kind, "name": decl.name if isinstance(decl.name, str) else _text(
            None if decl.name is MISSING else decl.name)}
        if isinstance(fn.get("description"), str):
            item["description"] = fn["description"]
        schema = fn.get("parameters", fn.get("input_schema", native.get("parameters")))
        if isinstance(schema, dict):
            item["parameters"] = schema
        out.append(item)
    return out


def output_messages(response: Any) -> list[dict] | None:
    """``gen_ai.output.messages``: one assistant message per choice, with its finish reason."""
    if not isinstance(response, dict) or not isinstance(response.get("choices"), list):
        return None
    out = []
    api = api_for_body({"messages": []})
    for k, choice in enumerate(response["choices"]):
        if not isinstance(choice, dict):
            continue
        message = choice.get("message")
        entry = api.entries([message if isinstance(message, dict) else {}], k)[0]
        msg = entry_message(entry)[0]
        msg["role"] = msg["role"] if msg.get("role") else "assistant"
        msg["finish_reason"] = finish_reason(choice.get("finish_reason")) or "stop"
        out.append(msg)
    return out


def finish_reason(value: Any) -> str | None:
    """A provider's finish reason in the conventions' words (unknown ones kept as sent)."""
    if not isinstance(value, str) or not value:
        return None
    return _FINISH.get(value, value)


def provider_name(body: Any, url: str | None) -> str:
    """``gen_ai.provider.name``: the provider the host names, else the flavour of the wire API."""
    host = urlsplit(url or "").hostname or ""
    for suffix, name in _HOST_PROVIDERS:
        if host == suffix or host.endswith("." + suffix):
            return name
    return _API_PROVIDERS.get(api_for_body(body).name, "openai")


def _json(value: Any, scrub: Scrub) -> str:
    return scrub(json.dumps(value, ensure_ascii=False))


def call_attributes(request: Any, response: Any, *, status: int | None, error: str | None, url: str | None,
                    request_sha256: str | None, scrub: Scrub) -> dict[str, Any]:
    """Every attribute of one call's span (see the module docstring); strings scrubbed of secrets."""
    body = request if isinstance(request, dict) else {}
    model = body.get("model")
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider_name(request, url)}
    if isinstance(model, str):
        attrs["gen_ai.request.model"] = scrub(model)
    for key, attr, kind in _PARAMS:
        value = body.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[attr] = kind(value)
    stop = body.get("stop")
    if isinstance(stop, str) or (isinstance(stop, list) and all(isinstance(s, str) for s in stop)):
        attrs["gen_ai.request.stop_sequences"] = [scrub(s) for s in ([stop] if isinstance(stop, str) else stop)]
    if isinstance(body.get("stream"), bool):
        attrs["gen_ai.request.stream"] = body["stream"]
    parts = urlsplit(url or "")
    if parts.hostname:
        attrs["server.address"] = parts.hostname
        if parts.port:
            attrs["server.port"] = parts.port
    for key, value in (("gen_ai.system_instructions", system_instructions(request)),
                       ("gen_ai.input.messages", input_messages(request)),
                       ("gen_ai.tool.definitions", tool_definitions(request)),
                       ("gen_ai.output.messages", output_messages(response))):
        if value is not None:
            attrs[key] = _json(value, scrub)
    attrs["openinference.span.kind"] = "LLM"       # OpenInference readers then take input.value as the exact body
    attrs["input.value"] = scrub(body_text(request, request_sha256))
    attrs["input.mime_type"] = "application/json"
    if request_sha256:
        attrs["chain_studio.request.sha256"] = request_sha256
    if response is not None:
        attrs["output.value"] = scrub(body_text(response))
        attrs["output.mime_type"] = "application/json"
    if isinstance(response, dict):
        for key, attr in (("id", "gen_ai.response.id"), ("model", "gen_ai.response.model")):
            if isinstance(response.get(key), str):
                attrs[attr] = scrub(response[key])
        reasons = [finish_reason(c.get("finish_reason")) for c in response.get("choices") or [] if isinstance(c, dict)]
        if any(reasons):
            attrs["gen_ai.response.finish_reasons"] = [r or "" for r in reasons]
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        for attr, keys in (("gen_ai.usage.input_tokens", ("prompt_tokens", "input_tokens")),
                           ("gen_ai.usage.output_tokens", ("completion_tokens", "output_tokens"))):
            value = next((usage[k] for k in keys if isinstance(usage.get(k), int)), None)
            if value is not None:
                attrs[attr] = value
    if status is not None:
        attrs["http.response.status_code"] = status
    if error is not None or (status is not None and status >= 400):
        attrs["error.type"] = str(status) if status is not None else "no_response"
    return attrs
