"""Reassemble a streamed Chat Completions response (SSE chunks) into one completion."""
from __future__ import annotations

import json
from typing import Any


def parse_sse(raw: bytes) -> tuple[list[dict], bool]:
    """The JSON chunks of an SSE body, and whether it ended with ``[DONE]``."""
    chunks: list[dict] = []
    done = False
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            continue
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            continue
        if isinstance(chunk, dict):
            chunks.append(chunk)
    return chunks, done


def reassemble(chunks: list[dict]) -> dict[str, Any]:
    """Merge ``chat.completion.chunk`` deltas into a ``chat.completion`` body."""
    out: dict[str, Any] = {"id": None, "object": "chat.completion", "created": None, "model": None, "choices": []}
    choices: dict[int, dict] = {}
    for chunk in chunks:
        for key in ("id", "created", "model", "system_fingerprint"):
            if chunk.get(key) is not None and out.get(key) is None:
                out[key] = chunk[key]
        if chunk.get("usage"):
            out["usage"] = chunk["usage"]
        for c in chunk.get("choices") or []:
            index = c.get("index", 0)
            choice = choices.setdefault(index, {"index": index, "message": {"role": "assistant", "content": None},
                                                "finish_reason": None})
            delta = c.get("delta") or {}
            message = choice["message"]
            if delta.get("role"):
                message["role"] = delta["role"]
            if delta.get("content") is not None:
                message["content"] = (message["content"] or "") + delta["content"]
            for tc in delta.get("tool_calls") or []:
                calls = message.setdefault("tool_calls", [])
                position = tc.get("index", len(calls))
                while len(calls) <= position:
                    calls.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                call = calls[position]
                if tc.get("id"):
                    call["id"] = tc["id"]
                if tc.get("type"):
                    call["type"] = tc["type"]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    call["function"]["name"] += fn["name"]
                if fn.get("arguments"):
                    call["function"]["arguments"] += fn["arguments"]
            if c.get("finish_reason"):
                choice["finish_reason"] = c["finish_reason"]
    out["choices"] = [choices[i] for i in sorted(choices)]
    return out
