""""Why did it forget?" as a person reads it: one block per fact, one line per distinct outcome.

The replay layer's diagnosis (``replay/probes.py``) answers per source in a
log-like sentence (message ids, "after add 41 --"). Here the same fields
become: the fact as the headline; which sources share an outcome (the
recording and a policy that did the same are one line, not two identical
blocks); the message that carried the fact, quoted by its text and role, not
its id; the call numbers as separate values the screen turns into links.
English or Chinese; trim reasons translated by ``zh.reason_zh``.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from agent_core.replay.probes import ProbeRetention, RetentionMatrix
from agent_core.replay.result import Drop

from .zh import reason_zh

ROLE_ZH = {"user": "用户", "assistant": "助手", "system": "系统", "tool": "工具"}


@dataclass(frozen=True)
class Outcome:
    """What happened to one fact under one or more sources that agree."""

    sources: tuple[str, ...]
    """``recorded`` and/or replayed policy labels (shown as they are)."""
    text: str
    """The sentence, in the chosen language (holds trace text: render escaped)."""
    calls: tuple[int, ...] = ()
    """Calls worth opening (where it was first sent, gone, back), in that order."""
    forgotten: bool = False
    """The fact is missing from a later call of its conversation."""


@dataclass(frozen=True)
class FactStory:
    """One probe across every source."""

    fact: str
    """The probe's text (trace data)."""
    outcomes: list[Outcome] = field(default_factory=list)


def _quote(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return "«" + (text[:limit] + "…" if len(text) > limit else text) + "»"


def _role(role: str, lang: str) -> str:
    if lang == "zh":
        return ROLE_ZH.get(role, role) + "消息"
    return {"user": "the user's message", "assistant": "the assistant's message", "system": "the system message",
            "tool": "the tool result"}.get(role, f"a {role} message")


@dataclass(frozen=True)
class SourceDrops:
    """What a source removed, to find the message that first carried a fact."""

    drops: dict[str, Drop]
    """Stream id -> its removal."""
    positions: dict[int, int]
    """Call index -> stream messages added before it."""
    _index: tuple = field(init=False, repr=False, compare=False)
    """(sorted call indexes, sorted drop keys (after_add, order), drops in that order): a fact's gap is found by
    bisection, not by a walk over every drop and call (25,000 calls, 50,000 drops, per probe and source)."""

    def __post_init__(self) -> None:
        ordered = sorted(enumerate(self.drops.values()), key=lambda e: (e[1].after_add, e[0]))
        object.__setattr__(self, "_index", (sorted(self.positions), [(d.after_add, i) for i, d in ordered],
                                            [(i, d) for i, d in ordered]))

    def previous_call(self, call: int) -> int | None:
        """The last call before ``call`` (None when there is none)."""
        calls = self._index[0]
        k = bisect.bisect_left(calls, call)
        return calls[k - 1] if k else None

    def removed_between(self, lo: int, hi: int) -> list[Drop]:
        """The drops with ``lo <= after_add <= hi``, in the order of ``drops``."""
        _, keys, ordered = self._index
        a = bisect.bisect_left(keys, (lo, -1))
        b = bisect.bisect_right(keys, (hi, len(keys)))
        return [d for _, d in sorted(ordered[a:b], key=lambda e: e[0])]


def _blamed(row: ProbeRetention, extra: SourceDrops | None, texts: dict[str, tuple[str, str]]) -> Drop | None:
    """The removal to blame: of the messages holding the fact that left in the same gap as the last holder,
    the fact's origin (a proposed probe's user turn), else a user message, else the earliest one.

    A trim that takes "我叫小明" and the greeting "你好，小明" together blames the user's words, not the greeting.
    """
    drop = row.dropped_by
    if drop is None or extra is None or row.first_gone is None:
        return drop
    previous = extra.previous_call(row.first_gone)
    lo = extra.positions.get(previous, 0) if previous is not None else 0
    hi = extra.positions.get(row.first_gone, drop.after_add)
    pattern = row.probe.compiled()
    same_gap = [d for d in extra.removed_between(lo, hi) if d.msg_id in texts and pattern.search(texts[d.msg_id][1])]
    if not same_gap:
        return drop
    origin = [d for d in same_gap if d.msg_id == row.probe.origin]
    users = [d for d in same_gap if d.role == "user"]
    return (origin or users or sorted(same_gap, key=lambda d: d.after_add))[0]


def _sentence(row: ProbeRetention, texts: dict[str, tuple[str, str]], lang: str,
              extra: SourceDrops | None = None) -> tuple[str, tuple[int, ...]]:
    zh = lang == "zh"
    if row.first_present is None:
        return ("从未发给模型：没有任何请求包含它。" if zh else "Never reached the model: no payload contains it."), ()
    if row.first_gone is None:
        return ((f"没有忘记：从第 {row.first_present} 次调用起，每次调用都带着它。" if zh else
                 f"Not forgotten: every call from call {row.first_present} on carries it."), (row.first_present,))
    calls = [row.first_present, row.first_gone]
    drop = _blamed(row, extra, texts)
    if drop is None:
        text = (f"第 {row.first_gone} 次调用时丢失，但没有截断事件删除它：应用构造这次请求时没有带上包含它的消息"
                f"（没有发送历史，或导入的文件没有记忆事件）。" if zh else
                f"Gone from call {row.first_gone}, but no trim event removed it: the app built that payload without "
                f"the message holding it (history not sent, or an import without memory events).")
    else:
        role, body = texts.get(drop.msg_id, (drop.role, ""))
        holder = _role(role, lang) + (" " + _quote(body) if body else "")
        origin = texts.get(row.probe.origin or "") if row.probe.origin and row.probe.origin != drop.msg_id else None
        reason = reason_zh(drop.reason) if zh else drop.reason
        if drop.policy == "clear":
            how = "用户的 /clear 删除了" if zh else "the user's /clear removed"
        else:
            how = f"{drop.policy} 删除了" if zh else f"{drop.policy} removed"
        if zh:
            text = f"第 {row.first_gone} 次调用时忘了：{how}{holder}（{reason}）。"
            if origin is not None:
                text += f"这个事实最初来自{_role(origin[0], lang)} {_quote(origin[1])}，它被删得更早；上面是最后一条还带着它的消息。"
        else:
            text = f"Forgotten at call {row.first_gone}: {how} {holder} ({reason})."
            if origin is not None:
                text += (f" The fact was first given in {_role(origin[0], lang)} {_quote(origin[1])}, removed earlier; "
                         f"this was the last message still carrying it.")
        if drop.policy == "summary-window" or drop.msg_id.startswith("summary_"):
            text += "它的摘要没有保留这个事实。" if zh else " Its summary did not keep the fact."
    if row.returned is not None:
        calls.append(row.returned)
        text += (f"第 {row.returned} 次调用时又出现了，因为后来的消息重复了它。" if zh else
                 f" It is back at call {row.returned}: a later message repeats it.")
    return text, tuple(calls)


def stories(matrices: list[RetentionMatrix], texts: dict[str, tuple[str, str]], lang: str = "en",
            extra: dict[str, SourceDrops] | None = None) -> list[FactStory]:
    """One story per probe; sources whose outcome reads the same share one line.

    ``texts``: stream id -> (role, text) of the trace's messages and of the replays' summaries;
    ``extra``: per source label, its removals and call positions (to blame the fact's first message).
    """
    extra = extra or {}
    if not matrices:
        return []
    out = []
    for j, first in enumerate(matrices[0].rows):
        outcomes: dict[tuple, tuple[list[str], str, tuple[int, ...], bool]] = {}
        for m in matrices:
            if j >= len(m.rows):
                continue
            row = m.rows[j]
            text, calls = _sentence(row, texts, lang, extra.get(m.source))
            key = (text, calls)
            label = ("实际记录" if m.source == "recorded" else m.source) if lang == "zh" else m.source
            if key in outcomes:
                outcomes[key][0].append(label)
            else:
                outcomes[key] = ([label], text, calls, row.first_gone is not None)
        out.append(FactStory(first.probe.pattern if not first.probe.regex else first.probe.label,
                             [Outcome(tuple(s), t, c, f) for s, t, c, f in outcomes.values()]))
    return out
