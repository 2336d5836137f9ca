"""Forgetting diagnosis: which facts each payload still carried, and what removed them.

A probe is a fact to look for (a literal string or a regex), entered by the
user or proposed from the early user turns (names, ids such as
``A-2024-0715``, e-mails, phone numbers, numbers). For the recorded
payloads, and for each replayed policy, the retention matrix says per call
whether the fact was in the payload; for each probe: the first call where it
is gone, the trim event that removed the message holding it, and one
sentence answering "why did it forget?".
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import reduce
from operator import itemgetter, or_
from typing import Callable, Sequence

from agent_core.core.msg import content_text
from agent_core.trace.model import Call, Trace, payload_tail

from .calls import call_position, chat_calls
from .edited import EditedPayload
from .result import Drop, ReplayResult

REGEX_PREFIX = "re:"


@dataclass(frozen=True)
class Probe:
    """A fact to look for in every payload."""

    label: str
    """What the user sees (``id A-2024-0715``)."""
    pattern: str
    """The text, or the regex when ``regex`` is set."""
    regex: bool = False
    """Whether ``pattern`` is a regular expression."""
    kind: str = "text"
    """text | regex | name | id | email | phone | number."""
    origin: str | None = None
    """Stream id of the user message it was proposed from."""

    def compiled(self) -> re.Pattern:
        return re.compile(self.pattern if self.regex else re.escape(self.pattern))

    def export(self) -> dict:
        return {"pattern": self.pattern, "regex": self.regex, "kind": self.kind, "origin": self.origin}


def probe_from_text(text: str) -> Probe:
    """A user probe: literal text, or a regex when written ``re:PATTERN``.

    Raises:
        ValueError: the regex does not compile.
    """
    if text.startswith(REGEX_PREFIX):
        pattern = text[len(REGEX_PREFIX):]
        re.compile(pattern)
        return Probe(label=text, pattern=pattern, regex=True, kind="regex")
    return Probe(label=text, pattern=text)


# --- proposals ------------------------------------------------------------

_EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")
_PHONE = re.compile(r"(?<![\w-])\+?\d[\d ().-]{6,30}\d(?![\w-])")
_IDS = [
    re.compile(r"\b[A-Za-z]{1,6}-\d[\dA-Za-z]{0,40}(?:-[\dA-Za-z]{1,40}){0,8}\b"),          # A-2024-0715, ORD-10001
    re.compile(r"\b[a-z]{1,40}(?:_[a-z]{1,40}){0,6}_\d{2,20}\b"),                              # mia_li_3668
    re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,12}\b"),        # ZFA04Y, booking codes
]
_NAMES = [re.compile(p) for p in (
    r"我叫([\u4e00-\u9fff]{1,4}?)(?=[，,。！!\s]|$)", r"我的名字是([\u4e00-\u9fff]{1,4}?)(?=[，,。！!\s]|$)",
    r"\b[Mm]y name is ([A-Z][a-zA-Z'-]+(?: [A-Z][a-zA-Z'-]+)?)", r"\bI am ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b",
    r"\bI'm ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b", r"\b[Cc]all me ([A-Z][a-zA-Z'-]+)")]
_NUMBER = re.compile(r"(?<![\w.-])\d{3,}(?:\.\d+)?(?![\w-])")
_SCAN_CHARS = 200_000     # facts worth tracking are stated early in a turn; a 40 MB turn is not scanned whole
_NOT_NAMES = {"I", "Im", "Sorry", "Not", "Just", "Here", "Looking", "Trying", "Going", "Fine", "Good", "Sure"}


def _candidates(text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, m: re.Match, group: int = 0) -> None:
        start, end = m.span(group)
        if any(a < end and start < b for a, b in taken):
            return
        taken.append((start, end))
        found.append((kind, m.group(group)))

    for m in _EMAIL.finditer(text):
        add("email", m)
    for pat in _IDS:
        for m in pat.finditer(text):
            add("id", m)
    for m in _PHONE.finditer(text):
        if sum(ch.isdigit() for ch in m.group(0)) >= 8:
            add("phone", m)
    for pat in _NAMES:
        for m in pat.finditer(text):
            if m.group(1) not in _NOT_NAMES:
                add("name", m, 1)
    for m in _NUMBER.finditer(text):
        add("number", m)
    return found


_EARLY_MAX = 5


def propose_probes(trace: Trace, *, early_turns: int | None = None, limit: int = 8) -> list[Probe]:
    """Facts from the first user turns worth tracking: names, ids, e-mails, phones, numbers.

    ``early_turns`` defaults to the first third of the user turns (at least 1, at most ``_EARLY_MAX``).
    """
    users = trace.first_user_messages(3 * _EARLY_MAX if early_turns is None else early_turns)
    if early_turns is None:     # from 15 user turns on it is 5: those are all it reads
        early_turns = min(_EARLY_MAX, max(1, len(users) // 3))
    out: list[Probe] = []
    seen: set[str] = set()
    order = {"id": 0, "email": 1, "phone": 2, "name": 3, "number": 4}
    cands = []
    for turn, m in enumerate(users[:early_turns]):
        for kind, value in _candidates(m.text[:_SCAN_CHARS]):
            if value not in seen:
                seen.add(value)
                cands.append((order[kind], turn, kind, value, m.id))
    for _, _, kind, value, origin in sorted(cands)[:limit]:
        out.append(Probe(label=f"{kind} {value}", pattern=value, kind=kind, origin=origin))
    return out


# --- retention ------------------------------------------------------------

@dataclass
class PayloadView:
    """One call's payload, as the diagnosis reads it.

    Built on demand: the payloads of an N-call full history hold O(N²)
    messages, and a view that extends the previous one is read by its tail.
    """

    call: int
    """The call's index in the trace."""
    position: int
    """Stream messages added before it (drops are placed by the same count)."""
    payload: Callable[[], tuple[list, list]]
    """``(ids, messages)``: the stream id of each payload message (None where unknown), and the message."""
    tail: Callable[[], tuple[list, list]] | None = None
    """``(ids, messages)`` it adds to the previous view's payload, when it starts with that one."""
    delta: Callable[[], tuple[list, list]] | None = None
    """``(messages gone, messages come)`` against the previous view's payload (a multiset change): a replayed
    memory's own record of it (``_memory.Memory.changes``: a window that slid), or an edited payload's
    (``edited.EditedPayload``: context editing keeps the history, so no tail applies)."""


@dataclass
class ProbeRetention:
    """One probe across one source's calls."""

    probe: Probe
    """The fact."""
    present: list[bool]
    """Per call of ``RetentionMatrix.calls``."""
    first_present: int | None
    """Call index where it first appears."""
    first_gone: int | None
    """First call, after one that had it, where it is missing."""
    dropped_by: Drop | None
    """The removal of the message that held it, between those two calls."""
    returned: int | None
    """A later call where it is back (the user said it again)."""
    why: str
    """One sentence: why did it forget?"""

    def export(self, calls: list[int]) -> dict:
        return {**self.probe.export(), "present": [c for c, p in zip(calls, self.present) if p],
                "first_present": self.first_present, "first_gone": self.first_gone,
                "dropped_by": self.dropped_by.export() if self.dropped_by else None,
                "returned": self.returned, "why": self.why}


@dataclass
class RetentionMatrix:
    """Calls x probes for one source (``recorded`` or a replayed policy)."""

    source: str
    """``recorded`` or the replayed policy's label."""
    calls: list[int]
    """The call indexes, one per matrix row."""
    rows: list[ProbeRetention] = field(default_factory=list)
    """One per probe, in probe order."""

    @property
    def matrix(self) -> list[list[bool]]:
        """``matrix[i][j]``: call ``calls[i]`` carried probe ``j``."""
        return [[row.present[i] for row in self.rows] for i in range(len(self.calls))]

    def export(self) -> dict:
        return {row.probe.label: row.export(self.calls) for row in self.rows}


def body_text(d: object) -> str:
    """What a probe is looked for in: a message's content as text and its tool calls as JSON (anything else in a
    payload as ``str``)."""
    return _message_text(d) if isinstance(d, dict) else str(d)


def _message_text(d: dict) -> str:
    text = content_text(d.get("content"))
    calls = d.get("tool_calls")
    if isinstance(calls, list):
        text += "\n" + json.dumps(calls, ensure_ascii=False)
    return text


class _Matcher:
    """Which probes each distinct message body holds, as a bit mask, scanned once per body object.

    The last matcher is kept (``_matcher_for``): the recorded and the replayed retention of one
    trace ask about the same body objects, so each body is searched once for both."""

    def __init__(self, probes: Sequence[Probe]):
        self.key = tuple(probes)
        # a literal probe is a substring test (what searching its escaped pattern finds, without the regex engine)
        self._literals = [(1 << j, p.pattern) for j, p in enumerate(probes) if not p.regex]
        self._patterns = [(1 << j, p.compiled()) for j, p in enumerate(probes) if p.regex]
        self.cache: dict[int, tuple[object, int]] = {}

    def mask(self, d: object) -> int:
        """Bit ``j`` set: probe ``j`` occurs in ``d``."""
        entry = self.cache.get(id(d))
        if entry is None or entry[0] is not d:
            text = body_text(d)
            entry = (d, sum(bit for bit, literal in self._literals if literal in text)
                     + sum(bit for bit, pat in self._patterns if pat.search(text)))
            self.cache[id(d)] = entry
        return entry[1]


_last_matcher: list[_Matcher] = []
_MASK = itemgetter(1)


def _matcher_for(probes: Sequence[Probe]) -> _Matcher:
    key = tuple(probes)
    if not _last_matcher or _last_matcher[0].key != key:
        _last_matcher[:] = [_Matcher(probes)]
    return _last_matcher[0]


def _masks(views: Sequence[PayloadView], matcher: _Matcher) -> list[int]:
    """Per view, the probes its payload carries (bit masks); a view that extends the one before scans its tail.

    A body's cache entry holds the body, so while the body lives no other object has its id: the entries of a
    payload whose bodies were all seen before (every message of a window but its new ones) are looked up and
    or-ed at C speed, a million window slots at 25,000 calls."""
    get, mask, out = matcher.cache.get, matcher.mask, []
    counts: list[int] | None = None          # per probe, how many messages of the previous payload carry it
    for i, v in enumerate(views):
        if i and v.delta is not None:
            gone, come = v.delta()
            if counts is None and not gone:        # it only grew: the one before's probes and its new bodies'
                out.append(reduce(or_, map(mask, come), out[-1]))
                continue
            if counts is None:
                counts = _counts(views[i - 1].payload()[1], mask, len(matcher.key))
            for d, step in [(d, -1) for d in gone] + [(d, 1) for d in come]:
                m = mask(d)
                j = 0
                while m:
                    if m & 1:
                        counts[j] += step
                    m >>= 1
                    j += 1
            out.append(sum(1 << j for j, n in enumerate(counts) if n > 0))
            continue
        counts = None
        if i and v.tail is not None:
            _, messages = v.tail()
            m = out[-1]
        else:
            _, messages = v.payload()
            m = 0
        entries = list(map(get, map(id, messages)))
        if None in entries:
            entries = [(d, mask(d)) if e is None else e for d, e in zip(messages, entries)]
        out.append(reduce(or_, map(_MASK, entries), m))
    return out


def _counts(messages: list, mask: Callable[[dict], int], probes: int) -> list[int]:
    """Per probe, how many of ``messages`` carry it."""
    counts = [0] * probes
    for d in messages:
        m, j = mask(d), 0
        while m:
            if m & 1:
                counts[j] += 1
            m >>= 1
            j += 1
    return counts


def retention(views: Sequence[PayloadView], probes: Sequence[Probe], drops: Sequence[Drop],
              source: str, conversations: Sequence[dict] | None = None) -> RetentionMatrix:
    """The retention matrix and per-probe diagnosis for one sequence of payloads.

    ``conversations`` (``trace.meta["conversations"]``) keeps each diagnosis inside the
    conversation where the fact first appears: the next conversation not knowing it is no loss."""
    matcher = _matcher_for(probes)
    masks = _masks(views, matcher)
    present = [[bool(m >> j & 1) for m in masks] for j in range(len(probes))]

    def holders(j: int, i: int) -> list[str]:
        # In payload order, not a set: of two holders dropped by one add, the earliest is named,
        # whatever the string hash seed (a set made the report differ between runs).
        ids, messages = views[i].payload()
        return list(dict.fromkeys(mid for mid, d in zip(ids, messages) if mid and matcher.mask(d) >> j & 1))
    drops_by_id: dict[str, list[Drop]] = {}
    for d in drops:
        drops_by_id.setdefault(d.msg_id, []).append(d)
    calls = [v.call for v in views]
    matrix = RetentionMatrix(source=source, calls=calls)
    ends = _segment_ends(calls, conversations)
    for j, probe in enumerate(probes):
        matrix.rows.append(_diagnose(probe, views, present[j], lambda i, j=j: holders(j, i), drops_by_id, source,
                                     ends))
    return matrix


def _segment_ends(calls: list[int], conversations: Sequence[dict] | None) -> list[int]:
    """For each view position, the position just past the last view of its conversation."""
    n = len(calls)
    ranges = []
    for r in conversations or ():
        try:
            ranges.append((int(r["calls"][0]), int(r["calls"][1])))
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    if len(ranges) < 2:
        return [n] * n
    ends = [n] * n
    for c0, c1 in ranges:
        members = [i for i, c in enumerate(calls) if c0 <= c < c1]
        for i in members:
            ends[i] = members[-1] + 1
    return ends


def _diagnose(probe: Probe, views: Sequence[PayloadView], present: list[bool], holders: Callable[[int], list[str]],
              drops_by_id: dict[str, list[Drop]], source: str, ends: list[int]) -> ProbeRetention:
    label = repr(probe.pattern)
    first = next((i for i, p in enumerate(present) if p), None)
    if first is None:
        why = (f"{label} never reached the model under {source}: no payload contains it"
               + (" (no calls)." if not views else "."))
        return ProbeRetention(probe, present, None, None, None, None, why)
    end = ends[first]
    gone = next((i for i in range(first + 1, end) if not present[i]), None)
    if gone is None:
        scope = "the last" if end == len(views) else "the end of its conversation"
        why = (f"{label} was not forgotten under {source}: every call from call {views[first].call} "
               f"to {scope} (call {views[end - 1].call}) carries it.")
        return ProbeRetention(probe, present, views[first].call, None, None, None, why)
    last = gone - 1
    lo, hi = views[last].position, views[gone].position
    candidates = [d for mid in holders(last) for d in drops_by_id.get(mid, ()) if lo <= d.after_add <= hi]
    drop = max(candidates, key=lambda d: d.after_add) if candidates else None
    back = next((i for i in range(gone + 1, end) if present[i]), None)
    returned = views[back].call if back is not None else None
    gone_call = views[gone].call
    if drop is not None:
        how = ("the user's /clear removed" if drop.policy == "clear" else f"{drop.policy} removed")
        folded = " (its summary did not keep the fact)" if drop.policy == "summary-window" or \
            drop.msg_id.startswith("summary_") else ""
        why = (f"{label} is gone from call {gone_call} under {source}: {how} the {drop.role} message holding it "
               f"({drop.msg_id}) after add {drop.after_add}{folded} -- {drop.reason}.")
    else:
        why = (f"{label} is gone from call {gone_call} under {source}, but no trim event removed it: the app "
               f"built that payload without the message that held it (history not sent, or an import "
               f"without memory events).")
    if returned is not None:
        why += f" It is back in call {returned}, because a later message repeats it."
    return ProbeRetention(probe, present, views[first].call, gone_call, drop, returned, why)


def recorded_drops(trace: Trace) -> list[Drop]:
    """The trace's own trim and clear events, one ``Drop`` per removed message."""
    roles = {m.id: m.role for m in trace.stream}
    roles.update({k: m.role for k, m in trace.policy_messages.items()})
    return [Drop(mid, roles.get(mid, "?"), e.after_add, e.event.policy, e.event.reason)
            for e in trace.events for mid in e.event.removed]


def recorded_views(trace: Trace) -> list[PayloadView]:
    n = len(trace.stream)
    views: list[PayloadView] = []
    previous: Call | None = None
    for c in chat_calls(trace):
        extends = payload_tail(previous, c)
        tail = (lambda c=c, k=extends[1]: _ids_and_messages(c, k)) if extends is not None else None
        views.append(PayloadView(c.index, call_position(c, n), lambda c=c: _ids_and_messages(c), tail))
        previous = c
    return views


def _ids_and_messages(c: Call, start: int = 0) -> tuple[list, list]:
    """The call's payload from ``start`` on, with the stream id of each message (None where unknown)."""
    if c.payload is not None:
        return c.payload.ids(start), c.payload.messages(start)
    messages, ids = c.messages, c.message_ids
    ids = list(ids) if len(ids) == len(messages) else [None] * len(messages)
    return ids[start:], messages[start:]


def replay_views(result: ReplayResult) -> list[PayloadView]:
    """A view per replayed call; one whose payload extends the call before's (the same shared list, longer:
    keep-all, or a window that only grew) gives its tail, so the matrix costs the new messages only."""
    views: list[PayloadView] = []
    previous = None
    seq = None
    for c in result.calls:
        p = c.payload
        follows, seq = seq is not None and c._seq == seq + 1 and c._changes is not None, c._seq
        if follows:
            # the memory's own record of what left and came since the snapshot before (a window that slid):
            # the matrix costs the changes, not the window
            views.append(PayloadView(c.call, c.position, lambda p=p: (p.ids(), p.messages()), None,
                                     lambda changes=c._changes: changes))
            previous = p
            continue
        if isinstance(p, EditedPayload) and p.follows(previous):
            delta = (lambda p=p, q=previous: _gone_come(p, q))
            views.append(PayloadView(c.call, c.position, lambda p=p: (p.ids(), p.messages()), None, delta))
            previous = p
            continue
        k = len(previous) if previous is not None and p.added is previous.added and p.starts_with(previous) else -1
        tail = (lambda p=p, k=k: (p.ids(k), p.messages(k))) if k >= 0 else None
        views.append(PayloadView(c.call, c.position, lambda p=p: (p.ids(), p.messages()), tail))
        previous = p
    return views


def _gone_come(p: EditedPayload, prev: EditedPayload) -> tuple[list, list]:
    _, swaps, tail = p.delta_from(prev)
    return [old for old, _, _ in swaps], [new for _, new, _ in swaps] + [body for body, _ in tail]


def recorded_retention(trace: Trace, probes: Sequence[Probe]) -> RetentionMatrix:
    return retention(recorded_views(trace), probes, recorded_drops(trace), "recorded",
                     trace.meta.get("conversations"))


def replay_retention(result: ReplayResult, probes: Sequence[Probe]) -> RetentionMatrix:
    return retention(replay_views(result), probes, result.drops, result.label, result.conversations)


def diagnose(trace: Trace, probes: Sequence[Probe] | None = None,
             replays: Sequence[ReplayResult] = ()) -> list[RetentionMatrix]:
    """Recorded first, then each replay; probes default to ``propose_probes(trace)``."""
    probes = list(probes) if probes is not None else propose_probes(trace)
    return [recorded_retention(trace, probes)] + [replay_retention(r, probes) for r in replays]


def body_masks(probes: Sequence[Probe], bodies: Sequence[object]) -> list[int]:
    """The probe bit mask of each of ``bodies`` (searched once per body per process: the matrices' own cache)."""
    return list(map(_matcher_for(probes).mask, bodies))


def remember_masks(probes: Sequence[Probe], bodies: Sequence[object], masks: Sequence[int]) -> None:
    """Take ``masks`` as the bit masks of ``bodies`` for ``probes`` (found by an earlier run: ``replay/stored.py``),
    so the retention matrices of this process do not search those bodies again."""
    cache = _matcher_for(probes).cache
    for d, m in zip(bodies, masks):
        cache[id(d)] = (d, m)
