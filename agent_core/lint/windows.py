"""Findings of sliding windows over one message sequence, without scanning each window whole.

A windowed replay (max-messages, token-budget, openai-truncation-auto ...) sends
per call the leading system messages plus a slice of the history, and the slice
slides: no payload extends the one before, so ``lint_trace`` scanned each whole
(openai-truncation-auto with a 128k window at 25,000 calls: 12 million feeds).

Here one *leader* scan reads the history once, head included, and records at each
position whether it is settled (no tool run open, nothing unanswered) and how (the
role before, whether the conversation started) and how many findings it made so far.
A window's own scan reads its head and its first messages only until it reaches a
position where it is settled the same way as the leader: from there both scans take
the same steps (the scan's other state is an index-keyed record of what is settled,
and the ids of earlier calls, which only add duplicate-id findings; the window's are
a subset of the leader's). So when the leader made no finding from there to the
window's end, the window makes none either, and its end state is the leader's moved
to the window's indexes, which is what ``finish`` reads. Anything else (a finding in
that stretch, no such position, another head, Anthropic turn numbering): the window
is scanned whole, as before.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Any

from agent_core.apis.chain import Chain, Entry

from .facts import PLAIN, entry_kind
from .finding import Finding
from .profiles import Profile
from .scan import _Scan


class _Shifted:
    """``call_paths`` of the leader read at a window's indexes (owner and entry index moved by ``delta``)."""

    def __init__(self, paths: dict, delta: int) -> None:
        self._paths, self._delta = paths, delta

    def __getitem__(self, owner: int) -> tuple:
        e, i, calls = self._paths[owner + self._delta]
        return e, i - self._delta, calls


def _settled(scan: _Scan) -> tuple | None:
    """How the scan stands when nothing is open (else None): what decides every later step but indexes."""
    if scan.run_owner is not None or scan.unresolved or scan.missing or scan.late or scan.interrupt:
        return None
    return scan.prev_role, scan.seen_non_system


class WindowLint:
    """Lints a sequence of payloads ``head + body`` whose bodies are slices of one growing history (see module)."""

    def __init__(self, profile: Profile, head_chain: Chain, check_tools: bool, api: Any,
                 entries: dict[int, tuple[Entry, int]]) -> None:
        self._p, self._chain, self._check_tools, self._api = profile, head_chain, check_tools, api
        self._entries = entries
        self._parsed: dict[str, str] = {}
        self._head: list | None = None
        self._j: int | None = None                 # where the last window's body started in the history
        self._own: tuple[int, int, _Scan] | None = None   # (start, end, scan) of the last window scanned whole

    def _entry(self, m: Any, i: int) -> tuple[Entry, int]:
        known = self._entries.get(id(m))
        if known is None:
            e = self._api.entries([m], i)[0]
            known = self._entries[id(m)] = (e, entry_kind(e))
        return known

    def _start(self, head: list) -> None:
        self._head = head
        self._body: list = []                      # the history after the head, as the leader read it
        self._where: dict[int, int] = {}           # id(body message) -> its position
        self._leader = _Scan(self._p, self._chain, self._check_tools, self._parsed)
        for i, m in enumerate(head):
            e, kind = self._entry(m, i)
            self._leader.feed(e, i, kind)
        self._settled: list[tuple | None] = []     # per body position: the leader before reading it
        self._found: list[int] = []                # per body position: the leader's findings before reading it
        self._calls: list[int] = []                # body positions of messages that call tools
        self._j = self._own = None

    def _extend(self, messages: list) -> None:
        leader, h = self._leader, len(self._head)
        for m in messages:
            k = len(self._body)
            self._settled.append(_settled(leader))
            self._found.append(len(leader.findings))
            self._where[id(m)] = k
            self._body.append(m)
            e, kind = self._entry(m, h + k)
            if e.role == "assistant" and isinstance(e.calls_native, list) and e.calls_native:
                self._calls.append(k)
            leader.feed(e, h + k, kind)

    def lint(self, head: list, body: list) -> list[Finding]:
        """The findings of ``head + body`` (sorted by index, call 0), as ``_Scan`` over it gives them."""
        n = len(head) + len(body)
        if self._p.index_style == "anthropic" or not body:
            self._j = None
            return self._whole(head + body, n)
        if self._head is None or (head != self._head and not self._lints_alike(head)):
            self._start(head)           # equal bodies lint alike: list equality will do
        j = self._where.get(id(body[0]))
        if j is None or self._body[j] is not body[0]:
            self._start(head)
            j = 0
        own = len(self._body) - j
        if own > len(body) or self._body[j:] != body[:own]:
            self._start(head)
            j, own = 0, 0
        self._extend(body[own:])
        self._j = j
        return self._window(j, len(self._body), n)

    def _lints_alike(self, head: list) -> bool:
        """Whether ``head`` scans as the current head does: position by position the same message, or two
        ``PLAIN`` ones of the same role (what a ``PLAIN`` entry yields depends on its role and the scan's state
        alone: ``facts.PLAIN``). summary-window's head is the system prompt and a new running summary per fold:
        the leader then goes on instead of re-reading the history."""
        old = self._head
        if old is None or len(head) != len(old):
            return False
        for i, (a, b) in enumerate(zip(head, old)):
            if a is b:
                continue
            ea, ka = self._entry(a, i)
            eb, kb = self._entry(b, i)
            if ka != PLAIN or kb != PLAIN or ea.role != eb.role:
                return False
        return True

    @property
    def ready(self) -> bool:
        """Whether ``extended`` may follow: the last payload was a window over the history."""
        return self._j is not None

    def extended(self, tail: list, n: int) -> list[Finding]:
        """The findings of the last payload followed by ``tail`` (``n`` messages in all): costs ``tail``, not
        the payload (keep-all, a window that grew)."""
        self._extend(tail)
        return self._window(self._j, len(self._body), n)

    def _whole(self, messages: list, n: int) -> list[Finding]:
        scan = _Scan(self._p, self._chain, self._check_tools, self._parsed)
        for i, m in enumerate(messages):
            e, kind = self._entry(m, i)
            scan.feed(e, i, kind)
        return scan.finish(n)

    def _window(self, j: int, end: int, n: int) -> list[Finding]:
        """The window ``head + history[j:end]``: its own scan resumed when the last one was this window shorter,
        else scanned until it settles like the leader, else whole (and kept, to resume)."""
        if j == 0:              # the window is what the leader read, at the same indexes
            return self._leader.clone(for_finish=True).finish(n)
        head, body, h = self._head, self._body, len(self._head)
        own = self._own
        if own is not None and own[0] == j and own[1] <= end:
            scan = own[2]
            for k in range(own[1], end):
                e, kind = self._entry(body[k], h + k - j)
                scan.feed(e, h + k - j, kind)
            self._own = (j, end, scan)
            return scan.clone(for_finish=True).finish(n)
        scan = _Scan(self._p, self._chain, self._check_tools, self._parsed)
        for i, m in enumerate(head):
            e, kind = self._entry(m, i)
            scan.feed(e, i, kind)
        last_found = len(self._leader.findings)
        for k in range(j, end):
            sig = self._settled[k]
            if sig is not None and scan.count and sig == _settled(scan) and self._found[k] == last_found:
                return self._finish_from_leader(scan, j, k, end, n)
            e, kind = self._entry(body[k], h + k - j)
            scan.feed(e, h + k - j, kind)
        self._own = (j, end, scan)
        return scan.clone(for_finish=True).finish(n)

    def _finish_from_leader(self, scan: _Scan, j: int, k: int, end: int, n: int) -> list[Finding]:
        """``scan`` (the window's, settled at body position ``k`` like the leader) finished as the leader's end
        state moved to the window's indexes (``delta``: how far the window's body starts into the leader's)."""
        delta = j
        leader = self._leader
        fin = leader.clone(for_finish=True)
        fin.findings = list(scan.findings)
        fin.count = scan.count + (end - k)
        fin.run_owner = None if leader.run_owner is None else leader.run_owner - delta
        fin.run_answered = {cid: i - delta for cid, i in leader.run_answered.items()}
        fin.unresolved = {cid: o - delta for cid, o in leader.unresolved.items()}
        fin.missing = {o - delta: list(v) for o, v in leader.missing.items()}
        fin.late = {o - delta: list(v) for o, v in leader.late.items()}
        fin.interrupt = {o - delta: (at, None if i is None else i - delta, role)
                         for o, (at, i, role) in leader.interrupt.items()}
        fin.call_paths = _Shifted(leader.call_paths, delta)
        fin.owner_anth = {}
        fin._i = leader._i - delta
        if scan.first_call_index is not None:
            fin.first_call_index = scan.first_call_index
        else:
            at = bisect_left(self._calls, k)
            fin.first_call_index = (len(self._head) + self._calls[at] - j) if at < len(self._calls) and \
                self._calls[at] < end else None
        return fin.finish(n)
