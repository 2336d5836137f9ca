"""Faithful conversion of a native request body into the Chat Completions shape, and what it cannot carry.

The verdict matrix judges one chain by every provider profile; the profiles of
OpenAI-compatible providers read Chat Completions. ``to_chat_completions``
rewrites an Anthropic Messages (or Gemini) body into that shape, keeps for each
converted message the native path it came from (so a finding points back into
the body that was sent), and lists every piece the target shape has no place
for (a thinking block's signature, a redacted thinking block, a Gemini thought
signature) as a ``Loss``: the conversion never drops anything silently.
"""
from __future__ import annotations

import json
from typing import Any

from .anthropic_messages import NAME as ANTHROPIC
from .anthropic_messages import thinking_enabled
from .converted import Converted, Loss
from .gemini import NAME as GEMINI
from .gemini import to_chat_completions as _gemini


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(b.get("text", "") if isinstance(b, dict) and isinstance(b.get("text"), str) else ""
                       for b in value)
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _anthropic(body: dict) -> Converted:
    messages: list = []
    origin: list[str] = []
    losses: list[Loss] = []
    system = body.get("system")
    if system is not None:
        messages.append({"role": "system", "content": _text(system)})
        origin.append("system")
    for i, m in enumerate(body.get("messages") or []):
        path = f"messages[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("content"), list):
            messages.append(m)
            origin.append(path)
            continue
        role, parts, calls, thinking = m.get("role"), [], [], []
        for k, b in enumerate(m["content"]):
            at = f"{path}.content[{k}]"
            kind = b.get("type") if isinstance(b, dict) else None
            if kind == "tool_result" and role == "user":
                messages.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text(b.get("content"))})
                origin.append(at)
            elif kind == "tool_use":
                calls.append({"id": b.get("id"), "type": "function", "function": {
                    "name": b.get("name"), "arguments": json.dumps(b.get("input"), ensure_ascii=False)}})
            elif kind == "thinking":
                thinking.append(str(b.get("thinking", "")))
                if b.get("signature"):
                    losses.append(Loss(f"{at}.signature", "The thinking block's signature has no place in Chat "
                                       "Completions; the provider cannot verify the thinking (it travels as "
                                       "reasoning_content text at best)."))
            elif kind == "redacted_thinking":
                losses.append(Loss(at, "A redacted_thinking block (encrypted reasoning) has no place in Chat "
                                   "Completions; it is left out."))
            elif kind == "text":
                parts.append(str(b.get("text", "")))
            else:
                losses.append(Loss(at, f"A {kind!r} block is not converted to Chat Completions; it is left out."))
        if role == "assistant":
            out: dict = {"role": "assistant", "content": "".join(parts)}    # no text block: "" (not null)
            if calls:
                out["tool_calls"] = calls
            if thinking:
                out["reasoning_content"] = "".join(thinking)
            messages.append(out)
            origin.append(path)
        elif parts or not any(o.startswith(path + ".") for o in origin):
            messages.append({"role": role, "content": "".join(parts)})
            origin.append(path)
    cc: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tools = body.get("tools")
    if isinstance(tools, list):
        cc["tools"] = [{"type": "function", "function": {"name": t.get("name"), "description": t.get("description", ""),
                                                         "parameters": t.get("input_schema", {})}}
                       if isinstance(t, dict) else t for t in tools]
    if thinking_enabled(body):
        cc["thinking"] = {"type": "enabled"}
    return Converted(cc, origin, losses)


def to_chat_completions(api: str, body: Any) -> Converted | None:
    """The Chat Completions form of a body written for ``api``; None when it is already one (or unknown)."""
    if not isinstance(body, dict):
        return None
    if api == ANTHROPIC:
        return _anthropic(body)
    if api == GEMINI:
        return _gemini(body)
    return None
