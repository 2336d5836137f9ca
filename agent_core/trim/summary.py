"""summary-window: like sliding-window, but what falls out is folded into a running summary."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from agent_core.core.ids import new_id
from agent_core.core.msg import Msg

from .base import TrimCut, TrimResult, user_cut
from .config import Configured, at_least_one
from .summarizers import Summarizer, make_summarizer

SUMMARY_ID_PREFIX = "summary"


@dataclass(frozen=True)
class SummaryWindowConfig:
    """Parameters of summary-window."""

    keep_turns: int = 5
    """How many of the latest user turns stay verbatim; older ones are folded into the summary."""
    summarizer: Literal["extractive", "llm"] = "extractive"
    """extractive (offline, deterministic) or llm (asks the configured endpoint, else the demo model)."""

    def __post_init__(self) -> None:
        at_least_one(self, "keep_turns")


def is_summary(m: Msg) -> bool:
    """A summary message made by summary-window (recognised by its id prefix)."""
    return m.id.startswith(SUMMARY_ID_PREFIX + "_")


class SummaryWindow(Configured):
    """Like sliding-window, but what falls out is folded into a running summary system message.

    The summary sits after the leading system messages and is replaced (not
    stacked) at each fold. ``summarizer`` is ``extractive`` (offline,
    deterministic) or ``llm`` (needs ``client``; the call is recorded with
    ``purpose="summary"``), or any object with ``summarize(previous, dropped)``.
    """

    name = "summary-window"

    Config = SummaryWindowConfig

    def __init__(self, keep_turns: int = SummaryWindowConfig.keep_turns,
                 summarizer: str | Summarizer = SummaryWindowConfig.summarizer, client=None):  # noqa: ANN001
        self.summarizer: Summarizer = make_summarizer(summarizer, client) if isinstance(summarizer, str) else summarizer
        self.config = SummaryWindowConfig(int(keep_turns), self.summarizer.name)  # type: ignore[arg-type]
        self.keep_turns = self.config.keep_turns

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        cut = user_cut(messages, self.keep_turns)
        if cut is None:
            return TrimResult(list(messages))
        head = messages[:cut]
        old = next((m for m in head if is_summary(m)), None)
        dropped = [m for m in head if m.role != "system"]
        text = self.summarizer.summarize(old.text if old is not None else None, dropped)
        summary = Msg(role="system", content=text, id=new_id(SUMMARY_ID_PREFIX))
        systems = [m for m in head if m.role == "system" and not is_summary(m)]
        kept = systems + [summary] + list(messages[cut:])
        removed = dropped + ([old] if old is not None else [])
        return TrimResult(kept, removed, f"more than {self.keep_turns} user turns: folded {len(dropped)} older "
                                         f"messages into the running summary ({self.summarizer.name})")

    def incremental(self) -> _FoldTrimmer | None:
        """Replay's trimmer: ``apply`` only when a user message was added (a subclass gets ``apply``: it may
        change the rule)."""
        return _FoldTrimmer(self) if type(self) is SummaryWindow else None


class _FoldTrimmer:
    """summary-window's rule on the owner's list (``base.IncrementalTrimmer``): ``apply`` after a user add only.

    After any ``apply`` the list has no cut (``user_cut`` is None): either it had none, or the fold left the
    system messages and the summary (all system) before the ``keep_turns``-th newest user message. Appending a
    message that is not a user message keeps that user message where it was, with the same messages before it,
    so there is still no cut and ``apply`` would keep everything; only a user add can make one. After ``close``
    (a clear, a new conversation: the owner's list is replaced) the next add runs ``apply`` whatever it adds."""

    def __init__(self, policy: SummaryWindow) -> None:
        self.policy = policy
        self._settled = True        # the owner's list starts empty: no cut

    def add(self, messages: list[Msg]) -> TrimCut | TrimResult:
        if self._settled and messages[-1].role != "user":
            return TrimCut([])
        self._settled = True
        return self.policy.apply(messages)

    def close(self, messages: Sequence[Msg]) -> None:
        """The owner's list is replaced: the next add is checked by ``apply`` whatever it is."""
        self._settled = False
