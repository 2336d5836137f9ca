"""Trim policies: what short-term memory drops when it grows too long.

A policy is a small object with a ``name``, its ``params()`` and ``apply()``,
which takes the current message list and returns what to keep. Policies are
pure: the live memory and replay call the same ``apply`` after each add.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from agent_core.core.msg import Msg


@dataclass(frozen=True)
class TrimResult:
    """The outcome of one ``apply``: the new list and what left it, and why."""

    messages: list[Msg]
    """The list memory holds afterwards (may contain new messages, e.g. a summary)."""
    removed: list[Msg] = field(default_factory=list)
    """Messages that were dropped, oldest first."""
    reason: str = ""
    """One sentence naming the rule that dropped them."""

    @property
    def changed(self) -> bool:
        return bool(self.removed)


@runtime_checkable
class TrimPolicy(Protocol):
    """Decides which messages stay in short-term memory."""

    name: str

    def params(self) -> dict:
        """The policy's parameters, as recorded in trim events."""
        ...

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        """Return what stays after this policy runs on ``messages``."""
        ...


def oldest_non_system(messages: Sequence[Msg]) -> int | None:
    """Index of the first message that is not a system message (what trimming removes first)."""
    return next((k for k, m in enumerate(messages) if m.role != "system"), None)


class KeepAll:
    """Never drops anything: the payload grows with every turn."""

    name = "keep-all"

    def params(self) -> dict:
        return {}

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        return TrimResult(list(messages))


class MaxMessages:
    """The classic policy: at most ``max_messages`` messages, system included.

    While over the limit it removes the oldest non-system message and then
    every tool message directly after it, so a tool result never outlives
    its call. System messages are never removed. A tool message heading the
    non-system part is dropped too: that happens when the limit is hit while
    the results of one call are still being added, and such a result's call
    is already gone.
    """

    name = "max-messages"

    def __init__(self, max_messages: int = 40):
        if max_messages < 1:
            raise ValueError("max_messages must be at least 1")
        self.max_messages = int(max_messages)

    def params(self) -> dict:
        return {"max_messages": self.max_messages}

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        kept = list(messages)
        removed: list[Msg] = []
        while len(kept) > self.max_messages:
            i = oldest_non_system(kept)
            if i is None:
                break
            removed.append(kept.pop(i))
            while i < len(kept) and kept[i].role == "tool":
                removed.append(kept.pop(i))
        head = oldest_non_system(kept)
        while head is not None and head < len(kept) and kept[head].role == "tool":
            removed.append(kept.pop(head))
        reason = (
            f"over max_messages={self.max_messages}: dropped the oldest non-system message"
            " and the tool results directly after it"
        ) if removed else ""
        return TrimResult(kept, removed, reason)


DEFAULT_MAX_MESSAGES = 40


def default_policy() -> TrimPolicy:
    return MaxMessages(DEFAULT_MAX_MESSAGES)
