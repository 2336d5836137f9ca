"""summary-window: like sliding-window, but what falls out is folded into a running summary."""
from __future__ import annotations

from typing import Sequence

from agent_core.core.ids import new_id
from agent_core.core.msg import Msg

from .base import PolicyError, TrimResult, user_cut
from .summarizers import Summarizer, make_summarizer

SUMMARY_ID_PREFIX = "summary"


def is_summary(m: Msg) -> bool:
    """A summary message made by summary-window (recognised by its id prefix)."""
    return m.id.startswith(SUMMARY_ID_PREFIX + "_")


class SummaryWindow:
    """Like sliding-window, but what falls out is folded into a running summary system message.

    The summary sits after the leading system messages and is replaced (not
    stacked) at each fold. ``summarizer`` is ``extractive`` (offline,
    deterministic) or ``llm`` (needs ``client``; the call is recorded with
    ``purpose="summary"``), or any object with ``summarize(previous, dropped)``.
    """

    name = "summary-window"

    def __init__(self, keep_turns: int = 5, summarizer: str | Summarizer = "extractive", client=None):  # noqa: ANN001
        if int(keep_turns) < 1:
            raise PolicyError("keep_turns must be at least 1")
        self.keep_turns = int(keep_turns)
        self.summarizer: Summarizer = make_summarizer(summarizer, client) if isinstance(summarizer, str) else summarizer

    def params(self) -> dict:
        return {"keep_turns": self.keep_turns, "summarizer": self.summarizer.name}

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
