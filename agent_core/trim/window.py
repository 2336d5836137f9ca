"""Count-based policies: keep-all, max-messages, naive-drop-oldest and sliding-window."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from agent_core.core.msg import Msg

from .base import TrimCut, TrimPolicy, TrimResult, oldest_non_system, result_of, user_cut
from .config import Configured, at_least_one


@dataclass(frozen=True)
class KeepAllConfig:
    """keep-all takes no parameters."""


@dataclass(frozen=True)
class MaxMessagesConfig:
    """Parameters of max-messages and naive-drop-oldest."""

    max_messages: int = 40
    """At most this many messages stay in memory, system messages included."""

    def __post_init__(self) -> None:
        at_least_one(self, "max_messages")


@dataclass(frozen=True)
class SlidingWindowConfig:
    """Parameters of sliding-window."""

    turns: int = 10
    """How many of the latest user turns stay (with every message after each)."""

    def __post_init__(self) -> None:
        at_least_one(self, "turns")


class KeepAll:
    """Never drops anything: the payload grows with every turn."""

    name = "keep-all"
    Config = KeepAllConfig
    config = KeepAllConfig()

    def params(self) -> dict:
        return {}

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        return TrimResult(list(messages))

    def incremental(self) -> _KeepEverything:
        """Replay's trimmer: nothing to look at per add (``apply`` on every add copied the whole list)."""
        return _KeepEverything()


class _KeepEverything:
    """keep-all's incremental trimmer (``base.IncrementalTrimmer``): every add keeps all."""

    def add(self, messages: list[Msg]) -> TrimCut:
        return TrimCut([])

    def close(self, messages: Sequence[Msg]) -> None:
        """Nothing to hand back: keep-all holds no state."""


class _MessageCap(Configured):
    """What max-messages and naive-drop-oldest share: a cap on the message count."""

    Config = MaxMessagesConfig

    def __init__(self, max_messages: int = MaxMessagesConfig.max_messages):
        self.config = MaxMessagesConfig(int(max_messages))
        self.max_messages = self.config.max_messages

    def _drop_oldest(self, kept: list[Msg], with_results: bool) -> list[Msg]:
        """While over the cap, pop the oldest non-system message from ``kept`` (and, ``with_results``,
        the tool results right after it); what was popped, in order."""
        removed: list[Msg] = []
        while len(kept) > self.max_messages:
            i = oldest_non_system(kept)
            if i is None:
                break
            removed.append(kept.pop(i))
            while with_results and i < len(kept) and kept[i].role == "tool":
                removed.append(kept.pop(i))
        return removed


class MaxMessages(_MessageCap):
    """The classic policy: at most ``max_messages`` messages, system included.

    While over the limit it removes the oldest non-system message and then
    every tool message directly after it, so a tool result never outlives
    its call. System messages are never removed. A tool message heading the
    non-system part is dropped too: that happens when the limit is hit while
    the results of one call are still being added, and such a result's call
    is already gone.
    """

    name = "max-messages"

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        kept = list(messages)
        removed = self._drop_oldest(kept, with_results=True)
        head = oldest_non_system(kept)
        while head is not None and head < len(kept) and kept[head].role == "tool":
            removed.append(kept.pop(head))
        reason = (
            f"over max_messages={self.max_messages}: dropped the oldest non-system message"
            " and the tool results directly after it"
        ) if removed else ""
        return TrimResult(kept, removed, reason)


class NaiveDropOldest(_MessageCap):
    """The classic bug: over ``max_messages``, drop the single oldest non-system message.

    No group handling: when the oldest is an assistant ``tool_calls``
    message its tool results stay behind as orphans, which the API rejects.
    """

    name = "naive-drop-oldest"

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        kept = list(messages)
        removed = self._drop_oldest(kept, with_results=False)
        if not removed:
            return TrimResult(kept)
        return TrimResult(kept, removed, f"over max_messages={self.max_messages}: dropped the oldest "
                                         "non-system message, without its tool results or call")


class SlidingWindow(Configured):
    """System messages plus the last ``turns`` user turns, cut only where a user message starts."""

    name = "sliding-window"
    Config = SlidingWindowConfig

    def __init__(self, turns: int = SlidingWindowConfig.turns):
        self.config = SlidingWindowConfig(int(turns))
        self.turns = self.config.turns

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        cut = user_cut(messages, self.turns)
        if cut is None:
            return TrimResult(list(messages))
        kept = [m for m in messages[:cut] if m.role == "system"] + list(messages[cut:])
        return result_of(messages, kept, f"more than {self.turns} user turns: dropped the turns before the "
                                       f"last {self.turns}, cutting at a user message")


def default_policy() -> TrimPolicy:
    """What short-term memory trims with unless told otherwise: max-messages with its default."""
    return MaxMessages()
