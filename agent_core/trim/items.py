"""openai-truncation-auto: what the Responses API's ``truncation: "auto"`` does when the input is too long.

OpenAI documents that with ``truncation: "auto"`` the server drops items from
the beginning of the conversation until the input fits the model's context
window (platform.openai.com/docs/api-reference/responses/create, ``truncation``);
it does not say which items went. This policy emulates that on whole item
groups (``apis/responses.item_groups``: a function_call with its output, a
reasoning item with its follower), so what it keeps is always a valid input.
On chat messages it keeps system messages and the newest whole groups that
fit (token-budget with nothing reserved). Registered as
``openai-truncation-auto`` with the alias ``truncation-auto``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_core.apis.responses import as_chat_messages, chat_tools, item_groups
from agent_core.core import models
from agent_core.core.msg import Msg
from agent_core.trace.tokens import counter_for

from .base import IncrementalTrimmer, PolicyError, TrimCut, TrimResult
from .budget import TokenBudget
from .config import FROM_TRACE, Configured


@dataclass(frozen=True)
class TruncationAutoConfig:
    """Parameters of openai-truncation-auto."""

    context_window: int | None = None
    """Input tokens the server accepts; None means the model's context window from the model catalogue."""
    model: str | None = field(default=None, metadata={FROM_TRACE: True})
    """The model whose tokenizer counts and whose window applies (the trace's own when replaying)."""

    def __post_init__(self) -> None:
        if self.context_window is not None and self.context_window < 1:
            raise PolicyError("openai-truncation-auto needs context_window >= 1")


class TruncationAuto(Configured):
    """Drop the oldest item groups until the input fits the context window (the last group always stays)."""

    name = "openai-truncation-auto"
    Config = TruncationAutoConfig

    def __init__(self, context_window: int | None = None, model: str | None = None):
        self.config = TruncationAutoConfig(None if context_window is None else int(context_window), model)

    @property
    def window(self) -> int:
        """The token limit in force."""
        return self.config.context_window or models.context_window(self.config.model)

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        """Chat messages: system messages plus the newest whole groups that fit the window."""
        result = TokenBudget(max_tokens=self.window, reserve_for_output=0, model=self.config.model).apply(messages)
        if result.removed:
            return TrimResult(result.messages, result.removed, self._reason())
        return result

    def incremental(self) -> IncrementalTrimmer | None:
        """Replay's trimmer: token-budget's own, O(dropped) per add (``apply`` walks the whole memory on every
        add: quadratic at 25,000 calls), with this policy's reason."""
        inner = TokenBudget(max_tokens=self.window, reserve_for_output=0, model=self.config.model).incremental()
        return None if inner is None else _Renamed(inner, self._reason())

    def _reason(self) -> str:
        return (f"the input exceeded the {self.window:,}-token context window; the oldest groups "
                "were dropped (truncation: auto)")

    def apply_items(self, items: list, *, instructions: Any = None, tools: Any = None,
                    model: str | None = None) -> tuple[list[int], str]:
        """Responses items: the indexes kept (the newest whole groups that fit) and the reason, "" when all stay."""
        counter = counter_for(model or self.config.model)
        window = self.config.context_window or models.context_window(model or self.config.model)
        spans = item_groups(items)
        first = 0
        while first < len(spans) - 1 and counter.count_payload(
                as_chat_messages(items[spans[first][0]:], instructions), chat_tools(tools)) > window:
            first += 1
        start = spans[first][0] if spans else 0
        if not start:
            return list(range(len(items))), ""
        return list(range(start, len(items))), (f"the input exceeded the {window:,}-token context window; the "
                                                f"oldest {start} item(s) were dropped (truncation: auto)")


class _Renamed:
    """An ``IncrementalTrimmer`` whose drops are given another reason (truncation-auto over token-budget's)."""

    def __init__(self, inner: IncrementalTrimmer, reason: str) -> None:
        self._inner = inner
        self._reason = reason

    def add(self, messages: list[Msg]) -> TrimCut | TrimResult:
        out = self._inner.add(messages)
        if isinstance(out, TrimCut):
            return TrimCut(out.ranges, self._reason) if out.ranges else out
        return TrimResult(out.messages, out.removed, self._reason) if out.removed else out

    def close(self, messages: Sequence[Msg]) -> None:
        self._inner.close(messages)
