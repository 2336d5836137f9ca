"""The demo model's Anthropic Messages endpoint (``POST /v1/messages``), plain and streaming.

The same offline brain as the Chat Completions endpoint (``demo_model.respond``:
weather, time, calculate, "what is my name?"), reached through the faithful
conversion of the request (``apis/convert.py``); the answer goes back as an
Anthropic Message: ``content`` blocks (``text``, ``tool_use`` with ``toolu_``
ids), ``stop_reason`` ``end_turn`` or ``tool_use``, ``usage`` with
``input_tokens`` / ``output_tokens``. A malformed chain is rejected as the
Messages API does: HTTP 400 with Anthropic's error envelope and the first
error the linter's native anthropic rules find (their exact texts).
Streaming sends the documented event sequence (``stream_events``).
"""
from __future__ import annotations

import json
from typing import Any

from agent_core.apis.anthropic_messages import ANTHROPIC_MESSAGES
from agent_core.apis.convert import to_chat_completions
from agent_core.serve import demo_faults, demo_model

PATH = "/v1/messages"


def error(message: str, kind: str = "invalid_request_error") -> dict:
    """Anthropic's error envelope."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def rejection(body: Any) -> dict | None:
    """The 400 body the Messages API would return for ``body``, else None."""
    if not isinstance(body, dict):
        return error("Input should be a valid dictionary")
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return error(f"{key}: Field required")
    from agent_core.lint.native import lint_native  # the linter owns the rules and the exact wording
    from agent_core.lint.profiles import get_profile
    from agent_core.lint.scan import lint_request

    # the path decides the API: a plain-text body is an Anthropic request here even if Chat Completions could read it
    for f in lint_native(ANTHROPIC_MESSAGES, body, get_profile("anthropic"), 0, lint_request):
        if f.severity == "error":
            return error(f.api_error or f.message)
    return None


def _toolu(call_id: str) -> str:
    return "toolu_" + call_id.removeprefix("call_")


def respond(body: dict) -> dict:
    """The Message the demo model returns for a valid Messages request body."""
    converted = to_chat_completions("anthropic-messages", body)
    completion = demo_model.respond(converted.body if converted else {"messages": []})
    message = completion["choices"][0]["message"]
    content: list[dict] = []
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        content.append({"type": "tool_use", "id": _toolu(call["id"]), "name": call["function"]["name"],
                        "input": json.loads(call["function"]["arguments"])})
    usage = completion["usage"]
    return {"id": "msg_" + completion["id"].removeprefix("chatcmpl-demo-"), "type": "message", "role": "assistant",
            "model": demo_model.MODEL_NAME, "content": content,
            "stop_reason": "tool_use" if message.get("tool_calls") else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": max(usage["completion_tokens"], 1)}}


def stream_events(message: dict) -> list[tuple[str, dict]]:
    """The message as the documented SSE event sequence: (event name, data) pairs."""
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}}
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": start}),
                                      ("ping", {"type": "ping"})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            text = block["text"]
            for i in range(0, len(text), 8):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": {"type": "text_delta", "text": text[i:i + 8]}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
            args = json.dumps(block["input"], ensure_ascii=False)
            for i in range(0, len(args), 10):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "input_json_delta", "partial_json": args[i:i + 10]}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def sse(events: list[tuple[str, dict]]) -> bytes:
    """The events as SSE bytes (``event:`` and ``data:`` lines)."""
    return b"".join(f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
                    for name, data in events)


def fault(kind: str, body: Any) -> demo_faults.FaultReply | None:
    """An injected fault in the Messages API's shape: its error envelope and types (docs.claude.com, "Errors":
    ``invalid_request_error`` 400, ``authentication_error`` 401, ``rate_limit_error`` 429 with ``retry-after``,
    ``api_error`` 500), or a stream cut after the first text delta (no ``message_stop``)."""
    if kind == "400":
        return demo_faults.error(400, error("Injected fault (demo model)."))
    if kind == "401":
        return demo_faults.error(401, error("invalid x-api-key", "authentication_error"))
    if kind == "429":
        return demo_faults.error(429, error("Rate limited (demo model fault injection).", "rate_limit_error"),
                                 {"retry-after": "1"})
    if kind == "500":
        return demo_faults.error(500, error("Internal server error", "api_error"))
    if kind == "timeout":
        return demo_faults.error(504, error("The demo model timed out on purpose.", "api_error"))
    if kind == "malformed":
        return demo_faults.malformed()
    if kind != "cut-stream":
        return None
    message = {"id": "msg_cut", "type": "message", "role": "assistant", "model": demo_model.MODEL_NAME,
               "content": [{"type": "text", "text": "This answer was cut mid-way by the demo model's cut-stream "
                                                    "fault."}],
               "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    if not demo_faults.wants_stream(body):
        return demo_faults.cut_body(message)
    events = stream_events(message)
    first_delta = next(n for n, (name, _) in enumerate(events) if name == "content_block_delta")
    return demo_faults.cut_stream(sse(events[:first_delta + 1]))
