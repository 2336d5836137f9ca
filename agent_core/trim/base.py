"""What every trim policy shares: the protocol, its result, and the group helpers.

A policy is a small object with a ``name``, its ``params()`` and ``apply()``,
which takes the current message list and returns what to keep. Policies are
pure: the live memory and replay call the same ``apply`` after each add.
The policies themselves live one family per module (``window``, ``budget``,
``summary``, ``langchain``, ``compose``); ``registry`` builds them by name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from agent_core.core.errors import ChainStudioError
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


class PolicyError(ChainStudioError):
    """An unknown policy name or a parameter that does not parse."""


def is_call(m: Msg) -> bool:
    """An assistant message that asks for tools (``tool_calls`` or legacy ``function_call``)."""
    return m.role == "assistant" and (bool(m.tool_calls) or (bool(m.extra) and any(
        k == "function_call" for k, _ in m.extra)))


def is_result(m: Msg) -> bool:
    """A tool result (``tool``, or the legacy ``function`` role)."""
    return m.role in ("tool", "function")


def result_of(messages: Sequence[Msg], kept: list[Msg], reason: str) -> TrimResult:
    """The ``TrimResult`` of keeping ``kept`` out of ``messages`` (unchanged when nothing left)."""
    kept_ids = {m.id for m in kept}
    removed = [m for m in messages if m.id not in kept_ids]
    if not removed and len(kept) == len(messages):
        return TrimResult(list(messages))
    return TrimResult(kept, removed, reason)


def user_cut(messages: Sequence[Msg], turns: int) -> int | None:
    """Index of the user message that starts the last ``turns`` user turns, or None if there are fewer."""
    seen = 0
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            seen += 1
            if seen == turns:
                # Only cut when something non-system lies before it.
                return i if any(m.role != "system" for m in messages[:i]) else None
    return None
