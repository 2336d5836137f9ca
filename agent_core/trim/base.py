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

from agent_core.core.errors import InputError
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
    """Decides which messages stay in short-term memory.

    Optional hook: ``incremental() -> IncrementalTrimmer | None``. A policy
    that can trim a list it is only ever appended to faster than ``apply``
    on the whole list returns a trimmer with the same outcome per add (replay
    uses it through ``trimmer_for``); None, or no such method, means
    ``apply`` on every add.
    """

    name: str

    def params(self) -> dict:
        """The policy's parameters, as recorded in trim events."""
        ...

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        """Return what stays after this policy runs on ``messages``."""
        ...


@dataclass(frozen=True)
class TrimCut:
    """The outcome of one incremental add: which index ranges of the owner's list go, and why."""

    ranges: list[tuple[int, int]]
    """``[start, end)`` ranges of the list the trimmer was given, ascending and disjoint; empty: all stay."""
    reason: str = ""
    """One sentence naming the rule that dropped them."""


@dataclass(frozen=True)
class TrimEdit:
    """The outcome of one incremental add that replaced messages in place (context editing: a tool result
    becomes a placeholder): the list keeps its length, ``edits`` name the new message at each changed index."""

    edits: list[tuple[int, Msg]]
    """``(index, new message)`` pairs, ascending by index, of the list the trimmer was given."""
    removed: list[Msg]
    """The messages the edits replaced, oldest first (what ``apply`` would report as removed)."""
    reason: str = ""
    """One sentence naming the rule."""


class IncrementalTrimmer(Protocol):
    """A policy's rule on a list its owner only appends to, one add at a time (``TrimPolicy.incremental``)."""

    def add(self, messages: list[Msg]) -> TrimCut | TrimEdit | TrimResult:
        """Trim after ``messages[-1]`` was appended.

        ``messages`` is the owner's list: what the previous answer left, plus
        the new message. The owner applies the answer (deletes a cut's ranges,
        replaces an edit's indexes, or becomes the result's ``messages``) before the next add, and never
        changes the list otherwise without calling ``close`` first.
        """
        ...

    def close(self, messages: Sequence[Msg]) -> None:
        """The owner is about to replace its list (a clear) or is done with it.

        Leaves the policy as ``apply`` would have after returning
        ``messages``, so it goes on live from there; the next ``add`` starts
        over.
        """
        ...


class ApplyEachAdd:
    """The fallback trimmer: the policy's ``apply`` on the whole list after every add."""

    def __init__(self, policy: TrimPolicy) -> None:
        self.policy = policy

    def add(self, messages: list[Msg]) -> TrimResult:
        return self.policy.apply(messages)

    def close(self, messages: Sequence[Msg]) -> None:
        """Nothing to hand back: the policy saw every add."""


def trimmer_for(policy: TrimPolicy) -> IncrementalTrimmer:
    """The policy's own incremental trimmer when its optional hook offers one, else ``ApplyEachAdd``."""
    hook = getattr(policy, "incremental", None)
    trimmer = hook() if callable(hook) else None
    return trimmer if trimmer is not None else ApplyEachAdd(policy)


def oldest_non_system(messages: Sequence[Msg]) -> int | None:
    """Index of the first message that is not a system message (what trimming removes first)."""
    return next((k for k, m in enumerate(messages) if m.role != "system"), None)


class PolicyError(InputError):
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
