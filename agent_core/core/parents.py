"""Parent links between messages, by the Function Calling flow.

- a user message follows the previous final assistant reply;
- an assistant message answers the latest user message or tool result;
- a tool message answers the assistant message whose call it carries.

The agent links messages as it creates them; importers run the same rules
over a message stream that has no ids of its own.
"""
from __future__ import annotations

from typing import Iterable

from .msg import Msg


class LineageTracker:
    """Assigns ``parent_id`` to each message of a stream, in order."""

    def __init__(self) -> None:
        self._last_final_reply: str | None = None
        self._last_prompt: str | None = None
        self._call_owner: dict[str, str] = {}
        self._last_tool_caller: str | None = None

    def parent_for(self, msg: Msg) -> str | None:
        if msg.role == "user":
            return self._last_final_reply
        if msg.role == "assistant":
            return self._last_prompt
        if msg.role in ("tool", "function"):
            owner = self._call_owner.get(msg.tool_call_id or "")
            return owner if owner is not None else self._last_tool_caller
        return None

    def observe(self, msg: Msg) -> None:
        """Update the state after ``msg`` joins the stream."""
        if msg.role == "user":
            self._last_prompt = msg.id
        elif msg.role == "assistant":
            if msg.tool_calls or any(k == "function_call" for k, _ in msg.extra):
                self._last_tool_caller = msg.id
                for call_id in msg.tool_call_ids:
                    if call_id:
                        self._call_owner[call_id] = msg.id
            else:
                self._last_final_reply = msg.id
        elif msg.role in ("tool", "function"):
            self._last_prompt = msg.id

    def link(self, msg: Msg) -> Msg:
        """Return ``msg`` with its parent set, and remember it."""
        linked = msg.with_parent(self.parent_for(msg))
        self.observe(linked)
        return linked


def link_stream(messages: Iterable[Msg]) -> list[Msg]:
    """Assign parents to a whole stream (for imported traces)."""
    tracker = LineageTracker()
    return [tracker.link(m) for m in messages]
