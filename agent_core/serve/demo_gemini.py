"""The demo model's Gemini endpoint (``POST .../models/{model}:generateContent`` and ``:streamGenerateContent``).

The same offline brain as the other endpoints (``demo_model.respond``), reached
through the conversion of the Gemini body (``apis/gemini.py : to_chat_completions``);
the answer goes back as a ``GenerateContentResponse``: one candidate whose
``content.parts`` hold ``text`` or ``functionCall`` {name, args}, ``finishReason``
``STOP`` and ``usageMetadata``. A malformed chain is rejected as Gemini does:
HTTP 400, ``{"error": {"code": 400, "message", "status": "INVALID_ARGUMENT"}}``
with the first error the linter's native gemini rules find. ``:streamGenerateContent``
answers SSE (``data:`` lines) with ``?alt=sse`` and one JSON array without it.
"""
from __future__ import annotations

import json
from typing import Any

from agent_core.apis.gemini import GEMINI, to_chat_completions
from agent_core.serve import demo_faults, demo_model

SUFFIXES = (":generateContent", ":streamGenerateContent")


def serves(path: str) -> bool:
    """Whether a request path (query ignored) is a Gemini generate call."""
    return path.split("?", 1)[0].rstrip("/").endswith(SUFFIXES)


def error(message: str, status: str = "INVALID_ARGUMENT", code: int = 400) -> dict:
    """Google's error envelope."""
    return {"error": {"code": code, "message": message, "status": status}}


def rejection(body: Any) -> dict | None:
    """The 400 body Gemini would return for ``body``, else None."""
    if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
        return error("* GenerateContentRequest.contents: contents is not specified")
    from agent_core.lint.native import lint_native  # the linter owns the rules and the exact wording
    from agent_core.lint.profiles import get_profile
    from agent_core.lint.scan import lint_request

    for f in lint_native(GEMINI, body, get_profile("gemini"), 0, lint_request):
        if f.severity == "error":
            return error(f.api_error or f.message)
    return None


def respond(body: dict) -> dict:
    """The ``GenerateContentResponse`` the demo model returns for a valid body."""
    completion = demo_model.respond(to_chat_completions(body).body)
    message = completion["choices"][0]["message"]
    parts: list[dict] = []
    if message.get("content"):
        parts.append({"text": message["content"]})
    for call in message.get("tool_calls") or []:
        parts.append({"functionCall": {"name": call["function"]["name"],
                                       "args": json.loads(call["function"]["arguments"])}})
    usage = completion["usage"]
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": usage["prompt_tokens"],
                              "candidatesTokenCount": usage["completion_tokens"],
                              "totalTokenCount": usage["prompt_tokens"] + usage["completion_tokens"]},
            "modelVersion": demo_model.MODEL_NAME}


def stream_chunks(response: dict) -> list[dict]:
    """The response as stream chunks: text in pieces, calls whole, the finish reason and usage on the last."""
    parts = response["candidates"][0]["content"]["parts"]
    chunks: list[dict] = []
    for part in parts:
        pieces = [{"text": part["text"][i:i + 8]} for i in range(0, len(part["text"]), 8)] if "text" in part \
            else [part]
        for p in pieces:
            chunks.append({"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}],
                           "modelVersion": response["modelVersion"]})
    if not chunks:
        chunks.append({"candidates": [{"content": {"role": "model", "parts": []}, "index": 0}]})
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    chunks[-1]["usageMetadata"] = response["usageMetadata"]
    return chunks


def stream_bytes(response: dict, sse: bool) -> bytes:
    """The stream's bytes: SSE ``data:`` lines (``?alt=sse``) or one JSON array."""
    chunks = stream_chunks(response)
    if sse:
        return b"".join(f"data: {json.dumps(c, ensure_ascii=False)}\r\n\r\n".encode() for c in chunks)
    return json.dumps(chunks, ensure_ascii=False).encode()


def fault(kind: str, body: Any, path: str) -> demo_faults.FaultReply | None:
    """An injected fault in Google's shape: ``{"error": {"code", "message", "status"}}`` with the canonical
    statuses (INVALID_ARGUMENT 400, UNAUTHENTICATED 401, RESOURCE_EXHAUSTED 429 with a RetryInfo detail,
    INTERNAL 500, DEADLINE_EXCEEDED 504), or a ``:streamGenerateContent`` answer cut after its first chunk
    (no chunk with ``finishReason``); ``path`` tells the stream and its framing (``?alt=sse``)."""
    if kind == "400":
        return demo_faults.error(400, error("Injected fault (demo model)."))
    if kind == "401":
        return demo_faults.error(401, error("Request had invalid authentication credentials (demo model fault "
                                            "injection).", "UNAUTHENTICATED", 401))
    if kind == "429":
        payload = error("Resource has been exhausted (demo model fault injection).", "RESOURCE_EXHAUSTED", 429)
        payload["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]
        return demo_faults.error(429, payload, {"Retry-After": "1"})
    if kind == "500":
        return demo_faults.error(500, error("An internal error has occurred (demo model fault injection).",
                                            "INTERNAL", 500))
    if kind == "timeout":
        return demo_faults.error(504, error("The demo model timed out on purpose.", "DEADLINE_EXCEEDED", 504))
    if kind == "malformed":
        return demo_faults.malformed()
    if kind != "cut-stream":
        return None
    response = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "This answer was cut mid-way by the demo model's cut-stream fault."}]}, "finishReason": "STOP",
        "index": 0}], "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": demo_model.MODEL_NAME}
    if ":streamGenerateContent" not in path:
        return demo_faults.cut_body(response)
    first = stream_chunks(response)[0]
    if "alt=sse" in path:
        return demo_faults.cut_stream(f"data: {json.dumps(first, ensure_ascii=False)}\r\n\r\n".encode())
    return demo_faults.cut_stream(("[" + json.dumps(first, ensure_ascii=False) + ",\n").encode(), "application/json")
