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

    def incremental(self) -> _CapTrimmer | None:
        """Replay's trimmer: the same drops found by index (a subclass gets ``apply``: it may change the rule)."""
        if type(self) not in (MaxMessages, NaiveDropOldest):
            return None
        return _CapTrimmer(self, with_results=type(self) is MaxMessages)


class _CapTrimmer:
    """max-messages' and naive-drop-oldest's rule on the owner's list, as index ranges (``base.TrimCut``).

    ``apply`` copies the list and pops from its head on every add; here the same messages are found by index:
    what goes is always the oldest non-system messages (system messages stay wherever they are), with
    max-messages also the tool results right after each and a tool result heading what is left. Costs the
    leading system messages plus what goes."""

    def __init__(self, policy: _MessageCap, with_results: bool) -> None:
        self._policy = policy
        self._with_results = with_results

    def add(self, messages: list[Msg]) -> TrimCut:
        n, cap, results = len(messages), self._policy.max_messages, self._with_results
        gone: list[int] = []
        p = 0                       # every non-system message before ``p`` is gone
        while n - len(gone) > cap:
            while p < n and messages[p].role == "system":
                p += 1
            if p == n:
                break
            gone.append(p)
            p += 1
            while results and p < n and messages[p].role == "tool":
                gone.append(p)
                p += 1
        if results:                 # max-messages: a tool result heading the non-system part goes too
            h = p
            while h < n and messages[h].role == "system":
                h += 1
            while h < n and messages[h].role == "tool":
                gone.append(h)
                h += 1
        if not gone:
            return TrimCut([])
        ranges: list[tuple[int, int]] = []
        for k in gone:
            if ranges and ranges[-1][1] == k:
                ranges[-1] = (ranges[-1][0], k + 1)
            else:
                ranges.append((k, k + 1))
        return TrimCut(ranges, self._policy.reason)

    def close(self, messages: Sequence[Msg]) -> None:
        """Nothing to hand back: the rule holds no state."""


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
        return TrimResult(kept, removed, self.reason if removed else "")

    @property
    def reason(self) -> str:
        return (f"over max_messages={self.max_messages}: dropped the oldest non-system message"
                " and the tool results directly after it")


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
        return TrimResult(kept, removed, self.reason)

    @property
    def reason(self) -> str:
        return (f"over max_messages={self.max_messages}: dropped the oldest non-system message, without its "
                "tool results or call")


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
        return result_of(messages, kept, self.reason)

    @property
    def reason(self) -> str:
        return (f"more than {self.turns} user turns: dropped the turns before the last {self.turns}, cutting at "
                "a user message")

    def incremental(self) -> _TurnsTrimmer | None:
        """Replay's trimmer: the user messages' positions kept in step (``apply`` walks the list per add)."""
        return _TurnsTrimmer(self) if type(self) is SlidingWindow else None


class _TurnsTrimmer:
    """sliding-window's rule on the owner's list, as index ranges (``base.TrimCut``).

    Keeps the positions of the user messages and of the first non-system message; ``user_cut`` is the
    ``turns``-th newest user message when a non-system message comes before it, and what goes is every
    non-system message before it. Costs O(turns) per cut, O(1) per other add."""

    def __init__(self, policy: SlidingWindow) -> None:
        self._policy = policy
        self._synced = False

    def _sync(self, messages: list[Msg]) -> None:
        self._users = [k for k, m in enumerate(messages) if m.role == "user"]
        self._first = next((k for k, m in enumerate(messages) if m.role != "system"), None)
        self._synced = True

    def add(self, messages: list[Msg]) -> TrimCut:
        if not self._synced:
            self._sync(messages[:-1])
        k, m = len(messages) - 1, messages[-1]
        if m.role == "user":
            self._users.append(k)
        if m.role != "system" and self._first is None:
            self._first = k
        turns = self._policy.turns
        if len(self._users) < turns:
            return TrimCut([])
        cut = self._users[-turns]
        if self._first is None or self._first >= cut:
            return TrimCut([])
        ranges: list[tuple[int, int]] = []
        for j in range(self._first, cut):         # the non-system messages before the cut, as runs
            if messages[j].role == "system":
                continue
            if ranges and ranges[-1][1] == j:
                ranges[-1] = (ranges[-1][0], j + 1)
            else:
                ranges.append((j, j + 1))
        gone = sum(b - a for a, b in ranges)
        self._users = [u - gone for u in self._users[-turns:]]
        self._first = cut - gone
        return TrimCut(ranges, self._policy.reason)

    def close(self, messages: Sequence[Msg]) -> None:
        """The next add starts over from the list it is given."""
        self._synced = False


def default_policy() -> TrimPolicy:
    """What short-term memory trims with unless told otherwise: max-messages with its default."""
    return MaxMessages()
