"""token-budget: the newest whole groups that fit a token budget, updated incrementally."""
from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass, field
from typing import Sequence

from agent_core.core.msg import Msg
from agent_core.trace.tokens import REPLY_PRIMING

from .base import IncrementalTrimmer, PolicyError, TrimCut, TrimResult, is_call, is_result, result_of
from .config import FROM_TRACE, Configured
from .message_tokens import MessageTokens


@dataclass(frozen=True)
class TokenBudgetConfig:
    """Parameters of token-budget."""

    max_tokens: int = 8000
    """The model's window this policy budgets for: prompt plus reserved output, in tokens."""
    reserve_for_output: int | None = None
    """Tokens kept free for the reply; None means an eighth of max_tokens (1,000 of 8,000)."""
    model: str | None = field(default=None, metadata={FROM_TRACE: True})
    """The model whose tokenizer counts (the trace's own when replaying)."""

    def __post_init__(self) -> None:
        # An eighth by default, so a small max_tokens alone still leaves room for a prompt.
        if self.reserve_for_output is None:
            object.__setattr__(self, "reserve_for_output", self.max_tokens // 8)
        if self.max_tokens < 1 or self.reserve_for_output < 0 or self.reserve_for_output >= self.max_tokens:
            raise PolicyError("token-budget needs max_tokens > reserve_for_output >= 0")


class TokenBudget(Configured):
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
    Config = TokenBudgetConfig

    def __init__(self, max_tokens: int = TokenBudgetConfig.max_tokens, reserve_for_output: int | None = None,
                 model: str | None = None, tools: list[dict] | None = None):
        self.config = TokenBudgetConfig(int(max_tokens), None if reserve_for_output is None else int(reserve_for_output),
                                        model)
        self.max_tokens = self.config.max_tokens
        self.reserve_for_output: int = self.config.reserve_for_output  # type: ignore[assignment]
        self.model = model
        self.tools = tools
        self._tokens = MessageTokens(model)
        self._tool_tokens = self._tokens.counter.count_tools(tools)
        # The last output and its count, so the next apply (last output + one message) is O(1).
        self._last: list[Msg] | None = None
        self._last_total = 0
        self._last_groups = 0

    def covering(self, tool_lists: Sequence[list[dict]]) -> TokenBudget:
        """The same budget with the largest of ``tool_lists`` counted in every candidate payload."""
        if not tool_lists:
            return self
        biggest = max(tool_lists, key=self._tokens.counter.count_tools)
        return TokenBudget(**dataclasses.asdict(self.config), tools=biggest)

    @property
    def budget(self) -> int:
        """Tokens the prompt may use."""
        return self.max_tokens - self.reserve_for_output

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        last = self._last
        if last is None or len(messages) != len(last) + 1 or not all(map(operator.is_, messages, last)):
            return self._walk(messages)
        # ``messages`` is the last output plus one message (how memory calls it): one step of the
        # rule, O(dropped) after the identity check (one comparison per message, in C).
        last.append(messages[-1])
        step = self._step(last, self._last_total, self._last_groups)
        if step is None:
            return self._walk(messages)
        cuts, self._last_total, self._last_groups = step
        if not cuts:
            return TrimResult(list(messages))
        removed = [m for a, b in cuts for m in last[a:b]]
        for a, b in reversed(cuts):
            del last[a:b]
        return TrimResult(list(last), removed, self._reason(self._last_total, self._last_groups))

    def incremental(self) -> IncrementalTrimmer | None:
        """This rule on its owner's list, O(dropped) per add (``TrimPolicy.incremental``)."""
        # Only this very class: a subclass may change the rule the trimmer repeats.
        return BudgetTrimmer(self) if type(self) is TokenBudget else None

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
        self._last, self._last_total, self._last_groups = list(kept), total, groups
        return result_of(messages, kept, self._reason(total, groups))

    def _step(self, kept: list[Msg], total: int, groups: int) -> tuple[list[tuple[int, int]], int, int] | None:
        """One add by the rule, without a walk: ``kept`` is an output of ``total`` tokens in ``groups``
        groups with the new message appended. The ``[start, end)`` ranges of ``kept`` that go (oldest
        first; a result whose call is gone goes on arrival) and the total and groups after; None when
        only the walk gives the definition's answer."""
        n = len(kept)
        if self._orphan(kept, n - 1):
            return [(n - 1, n)], total, groups
        new = kept[-1]
        if not is_result(new) and new.role != "system":
            groups += 1
        total += self._tokens.tokens(new)
        if total <= self.budget:                  # the common case: it fits
            return [], total, groups
        found = self._oldest_groups(kept, total)
        if found is None:
            return None
        cuts, total = found
        return cuts, total, groups - len(cuts)

    def _orphan(self, kept: Sequence[Msg], i: int) -> bool:
        """Is ``kept[i]`` a tool result whose call is not right before it (past results and system
        messages)? Such a result can never be sent, so it is dropped on arrival."""
        if not is_result(kept[i]):
            return False
        j = i - 1
        while j >= 0 and (is_result(kept[j]) or kept[j].role == "system"):
            j -= 1
        return j < 0 or not is_call(kept[j])

    def _oldest_groups(self, kept: Sequence[Msg], total: int) -> tuple[list[tuple[int, int]], int] | None:
        """The ``[start, end)`` ranges in ``kept`` of the oldest whole groups that must go for ``total``
        to fit the budget, oldest first, and the total without them; None when a system message sits
        right after a group's results (then only the walk gives the definition's answer)."""
        budget = self.budget
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
        kept = ("only the system messages (the newest group alone does not fit)" if groups == 0 else
                f"the system messages and the newest {'whole group' if groups == 1 else f'{groups} whole groups'}")
        return (f"over the token budget {self.budget} (max_tokens={self.max_tokens} - reserve_for_output="
                f"{self.reserve_for_output}){over}: kept {kept} ({total} tokens)")


class BudgetTrimmer:
    """token-budget's rule run on its owner's list: each add costs O(dropped), not a copy.

    The owner's list *is* the policy's last output, so the identity check and
    the two list copies of ``apply`` are not needed. The first add (and the
    first after ``close``) goes through ``apply``; ``close`` hands the state
    back, so the policy then goes on exactly as if ``apply`` had run every add.
    """

    def __init__(self, policy: TokenBudget) -> None:
        self._policy = policy
        self._synced = False
        """Whether the owner's list is an output whose total and groups are known here."""
        self._total = 0
        self._groups = 0

    def add(self, messages: list[Msg]) -> TrimCut | TrimResult:
        p = self._policy
        if self._synced:
            step = p._step(messages, self._total, self._groups)
            if step is not None:
                cuts, self._total, self._groups = step
                return TrimCut(cuts, p._reason(self._total, self._groups) if cuts else "")
            result = p._walk(messages)           # rare: a system message inside a group
        else:
            result = p.apply(messages)
        self._synced, self._total, self._groups = True, p._last_total, p._last_groups
        return result

    def close(self, messages: Sequence[Msg]) -> None:
        if self._synced:
            p = self._policy
            p._last, p._last_total, p._last_groups = list(messages), self._total, self._groups
            self._synced = False
