"""The legacy functions API (``functions`` + ``function_call`` + role ``function``) in the tools protocol.

The importers convert a legacy trace with it (saying so in a warning); the linter's ``legacy-function-call``
finding names it as the fix.
"""
from __future__ import annotations

import copy


def convert_legacy(messages: list) -> tuple[list, list[str]]:
    """Convert ``function_call`` / role ``function`` messages to ``tool_calls`` / role ``tool``.

    Ids are minted (``call_legacy_<n>``) and each function result is paired
    with the latest unanswered call of the same name (else the latest call).
    Returns new messages (the input is not modified) and one note per change.
    """
    out: list = []
    notes: list[str] = []
    pending: list[tuple[str, str | None]] = []  # (id, name) of calls not answered yet
    minted = 0
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            out.append(copy.deepcopy(m))
            continue
        if m.get("role") == "assistant" and isinstance(m.get("function_call"), dict):
            fc = m["function_call"]
            cid = f"call_legacy_{minted}"
            minted += 1
            new = {k: copy.deepcopy(v) for k, v in m.items() if k != "function_call"}
            new["tool_calls"] = [{"id": cid, "type": "function",
                                  "function": {"name": fc.get("name"), "arguments": fc.get("arguments", "{}")}}]
            out.append(new)
            pending.append((cid, fc.get("name")))
            notes.append(f"message {i}: function_call {fc.get('name')!r} became tool call {cid}")
        elif m.get("role") == "function":
            name = m.get("name")
            match = next((p for p in reversed(pending) if p[1] == name), pending[-1] if pending else None)
            new = {"role": "tool"}
            if match is not None:
                pending.remove(match)
                new["tool_call_id"] = match[0]
                notes.append(f"message {i}: function result {name!r} became a tool message answering {match[0]}")
            else:
                notes.append(f"message {i}: function result {name!r} answers no function_call; it has no "
                             "tool_call_id")
            new.update({k: copy.deepcopy(v) for k, v in m.items() if k != "role"})
            out.append(new)
        else:
            out.append(copy.deepcopy(m))
    return out, notes


def convert_legacy_request(body: dict) -> tuple[dict, list[str]]:
    """A legacy request body (``functions`` + function messages) in the tools protocol."""
    new = {k: v for k, v in body.items() if k not in ("messages", "functions", "function_call")}
    messages, notes = convert_legacy(body.get("messages") or [])
    new["messages"] = messages
    if isinstance(body.get("functions"), list):
        new["tools"] = [{"type": "function", "function": copy.deepcopy(f)} for f in body["functions"]]
        notes.append(f"{len(new['tools'])} functions became tools")
    return new, notes
