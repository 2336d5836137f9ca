"""AgentScope ``Msg`` JSON (a memory dump: a list of ``Msg.to_dict()``) as a conversation.

AgentScope keeps tool use inside content blocks: ``tool_use`` (1.x) or
``tool_call`` (2.x) blocks on the assistant's message, ``tool_result`` blocks
on a following message (often of role ``system``). They become Chat Completions ``tool_calls`` and ``tool``
messages; ids, names and timestamps are kept; other blocks are kept as text
with a warning.
"""
from __future__ import annotations

import json
from typing import Any

_BLOCK_TYPES = {"text", "tool_use", "tool_call", "tool_result", "thinking", "image", "audio", "video", "data", "hint"}


def _is_msg(value: Any) -> bool:
    return (isinstance(value, dict) and {"role", "content", "name"} <= set(value)
            and ("timestamp" in value or "created_at" in value or "id" in value))


def _messages_of(value: Any) -> list | None:
    if isinstance(value, dict):
        memory = value.get("memory")
        if isinstance(memory, dict) and isinstance(memory.get("content"), list):
            value = memory["content"]
        elif isinstance(value.get("content"), list) and "memory" not in value and not _is_msg(value):
            value = value["content"]
    if not isinstance(value, list) or not value:
        return None
    # InMemoryMemory state dicts store [msg, marks] pairs
    items = [v[0] if isinstance(v, list) and v and isinstance(v[0], dict) else v for v in value]
    return items if all(_is_msg(i) for i in items) else None


def looks_like(value: Any) -> bool:
    items = _messages_of(value)
    if not items:
        return False
    blocks = [b for i in items if isinstance(i["content"], list) for b in i["content"]]
    return all(isinstance(b, dict) and isinstance(b.get("type"), str) and b["type"] in _BLOCK_TYPES for b in blocks)


def _text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(b["text"] if isinstance(b, dict) and isinstance(b.get("text"), str)
                         else json.dumps(b, ensure_ascii=False) for b in output)
    return json.dumps(output, ensure_ascii=False)


def to_messages(value: Any, warnings: list[str]) -> list[dict]:
    """The OpenAI messages of an AgentScope memory dump, in order."""
    out: list[dict] = []
    for n, msg in enumerate(_messages_of(value) or []):
        role = msg.get("role")
        content = msg.get("content")
        extra = {"name": msg["name"]} if role == "user" and msg.get("name") not in (None, "user") else {}
        if not isinstance(content, list):
            out.append({"role": role, "content": content, **extra})
            continue
        texts, calls, results = [], [], []
        for block in content:
            kind = block.get("type")
            if kind == "text":
                text = block.get("text", "")
                texts.append(text if isinstance(text, str) else json.dumps(text, ensure_ascii=False))
            elif kind in ("tool_use", "tool_call"):
                args = block.get("input")
                calls.append({"id": block.get("id"), "type": "function", "function": {
                    "name": block.get("name"),
                    "arguments": args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False)}})
            elif kind == "tool_result":
                results.append({"role": "tool", "tool_call_id": block.get("id"), "content": _text(block.get("output"))})
            else:
                warnings.append(f"message {n}: a {kind!r} block has no Chat Completions form and was kept as text")
                texts.append(json.dumps(block, ensure_ascii=False))
        if texts or calls:
            message: dict[str, Any] = {"role": "assistant" if calls else role,
                                       "content": "\n".join(texts) if texts else None, **extra}
            if calls:
                message["tool_calls"] = calls
            out.append(message)
        out.extend(results)
    return out
