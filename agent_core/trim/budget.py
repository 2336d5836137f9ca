"""token-budget: the newest whole groups that fit a token budget, updated incrementally."""
from __future__ import annotations

import operator
from typing import Sequence

from agent_core.core.msg import Msg
from agent_core.trace.tokens import REPLY_PRIMING

from .base import PolicyError, TrimResult, is_call, is_result, result_of
from .message_tokens import MessageTokens


class TokenBudget:
    """System messages plus the newest whole groups that fit ``max_tokens - reserve_for_output``.

    ``reserve_for_output`` defaults to ``max_tokens // 8``. A group is one message, except that an assistant ``tool_calls`` message
    and its tool results form one group, so pairs are never split. The
    count is the cookbook formula over the whole candidate payload (messages,
    ``tools`` definitions if given, reply priming) -- the formula is a sum,
    so adding groups newest first counts the whole candidate incrementally
    instead of re-tokenizing it per step. Tool results without their call
    (broken input) are dropped. When even the system messages do not fit,
    they are kept anyway and the reason says so.
    """

    name = "token-budget"

    def __init__(self, max_tokens: int = 8000, reserve_for_output: int | None = None, model: str | None = None,
                 tools: list[dict] | None = None):
        max_tokens = int(max_tokens)
        # Default reserve: an eighth of the window (1,000 of 8,000), so a small max_tokens alone still works.
        reserve = max_tokens // 8 if reserve_for_output is None else int(reserve_for_output)
        if max_tokens < 1 or reserve < 0 or reserve >= max_tokens:
            raise PolicyError("token-budget needs max_tokens > reserve_for_output >= 0")
        self.max_tokens = max_tokens
        self.reserve_for_output = reserve
        self.model = model
        self.tools = tools
        self._tokens = MessageTokens(model)
        self._tool_tokens = self._tokens.counter.count_tools(tools)
        # The last output and its count, so the next apply (last output + one message) is O(1).
        self._last: list[Msg] | None = None
        self._last_total = 0
        self._last_groups = 0

    def params(self) -> dict:
        return {"max_tokens": self.max_tokens, "reserve_for_output": self.reserve_for_output, "model": self.model}

    @property
    def budget(self) -> int:
        """Tokens the prompt may use."""
        return self.max_tokens - self.reserve_for_output

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        fast = self._incremental(messages)
        return fast if fast is not None else self._walk(messages)

    def _walk(self, messages: Sequence[Msg]) -> TrimResult:
        """The definition: newest whole groups first, while the whole candidate fits."""
        tok = self._tokens.tokens
        total = REPLY_PRIMING + self._tool_tokens + sum(tok(m) for m in messages if m.role == "system")
        # No shortcut for "everything fits": the walk also drops a result whose call was
        # dropped while its siblings were still arriving (a group that outgrew the budget mid-way).
        rest = [m for m in messages if m.role != "system"]
        keep: set[str] = set()
        i = len(rest) - 1
        groups = 0
        while i >= 0:
            j = i
            if is_result(rest[i]):
                while j >= 0 and is_result(rest[j]):
                    j -= 1
                if j < 0 or not is_call(rest[j]):
                    i = j               # orphan results: can never be sent, skip them
                    continue
            group = rest[j:i + 1]
            cost = sum(tok(m) for m in group)
            if total + cost > self.budget:
                break
            total += cost
            keep.update(m.id for m in group)
            groups += 1
            i = j - 1
        kept = [m for m in messages if m.role == "system" or m.id in keep]
        return self._finish(messages, kept, total, groups)

    def _incremental(self, messages: Sequence[Msg]) -> TrimResult | None:
        """The same result in amortized O(1) when ``messages`` is this policy's last output plus one
        message (how memory and replay call it): add the new message's tokens, then drop the oldest
        groups until the candidate fits again. None when the input is anything else.

        The check that the input extends the last output is one identity comparison per message
        in C; the rest is O(dropped). The state list is extended and cut in place."""
        last = self._last
        if last is None or len(messages) != len(last) + 1 or not all(map(operator.is_, messages, last)):
            return None
        new = messages[-1]
        groups = self._last_groups
        if self._orphan(last, new):
            return self._finish(messages, list(last), self._last_total, groups, [new])   # never kept
        if not is_result(new) and new.role != "system":
            groups += 1
        total = self._last_total + self._tokens.tokens(new)
        kept = last                               # becomes the new state
        kept.append(new)
        if total <= self.max_tokens - self.reserve_for_output:    # the common case: it fits
            self._last_total, self._last_groups = total, groups
            return TrimResult(list(messages))
        found = self._oldest_groups(kept, total)
        if found is None:
            return self._walk(messages)          # a system message inside a group: rare, take the long way
        cuts, total = found
        removed = [m for a, b in cuts for m in kept[a:b]]
        for a, b in reversed(cuts):
            del kept[a:b]
        return self._finish(messages, kept, total, groups - len(cuts), removed, owned=True)

    def _orphan(self, last: Sequence[Msg], new: Msg) -> bool:
        """Is ``new`` a tool result whose call is not at the end of ``last`` (past results and system
        messages)? Such a result can never be sent, so it is dropped on arrival."""
        if not is_result(new):
            return False
        j = len(last) - 1
        while j >= 0 and (is_result(last[j]) or last[j].role == "system"):
            j -= 1
        return j < 0 or not is_call(last[j])

    def _oldest_groups(self, kept: Sequence[Msg], total: int) -> tuple[list[tuple[int, int]], int] | None:
        """The ``[start, end)`` ranges in ``kept`` of the oldest whole groups that must go for ``total``
        to fit the budget, oldest first, and the total without them; None when a system message sits
        right after a group's results (then only the walk gives the definition's answer).

        Ranges, not a cut list, so replay can cut its parallel lists in step (``_replay_memory.BudgetMemory``)."""
        budget = self.max_tokens - self.reserve_for_output
        tok = self._tokens.tokens
        cuts: list[tuple[int, int]] = []
        n, k = len(kept), 0
        while total > budget:
            while k < n and kept[k].role == "system":   # system messages always stay
                k += 1
            if k == n:
                break
            end = k + 1
            if is_call(kept[k]):
                while end < n and is_result(kept[end]):
                    end += 1
                if end < n and kept[end].role == "system":
                    return None
            cuts.append((k, end))
            for i in range(k, end):
                total -= tok(kept[i])
            k = end
        return cuts, total

    def _reason(self, total: int, groups: int) -> str:
        over = " (the system messages alone exceed it)" if total > self.budget else ""
        return (f"over the token budget {self.budget} (max_tokens={self.max_tokens} - reserve_for_output="
                f"{self.reserve_for_output}){over}: kept the system messages and the newest {groups} whole "
                f"groups ({total} tokens)")

    def _finish(self, messages: Sequence[Msg], kept: list[Msg], total: int, groups: int,
                removed: list[Msg] | None = None, owned: bool = False) -> TrimResult:
        """Keep ``kept`` as the state (``owned``: it is already this policy's own list) and report."""
        if owned:
            self._last, kept = kept, list(kept)
        else:
            self._last = list(kept)
        self._last_total, self._last_groups = total, groups
        reason = self._reason(total, groups)
        if removed is not None:
            return TrimResult(kept, removed, reason) if removed else TrimResult(list(messages))
        return result_of(messages, kept, reason)
