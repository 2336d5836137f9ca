"""Replay's simulated memory and its per-trace record of the recorded payloads.

``replay.replay`` adds the stream's messages one by one to a ``Memory`` and
snapshots it where each call was made. The memory keeps each message's
OpenAI dict, id and token count in step with its list, so a snapshot costs
a ``Payload`` over its dict and id lists (no copy: they are copied on write) and a running total; it trims through the policy's
incremental trimmer (``trim.base.trimmer_for``), so a policy that offers one
(token-budget) costs O(dropped) per add. ``recorded_payloads`` reads what
replay needs of each recorded call once per trace. Internal to replay: the
public API is there.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Sequence

from agent_core.core.msg import Msg, openai_dict
from agent_core.trace.model import Call, Trace, payload_tail
from agent_core.trace.payload import Payload
from agent_core.trace.tokens import encoding_name_for_model
from agent_core.trim.base import IncrementalTrimmer, TrimCut, TrimEdit
from agent_core.trim.message_tokens import MessageTokens

from .edited import EditedPayload


class Counts:
    """Token counters per encoding, each with its message cache."""

    def __init__(self) -> None:
        self._by_enc: dict[str, MessageTokens] = {}
        self._by_model: dict[str | None, MessageTokens] = {}

    def for_model(self, model: str | None) -> MessageTokens:
        mt = self._by_model.get(model)
        if mt is None:
            enc = encoding_name_for_model(model)
            mt = self._by_enc.get(enc)
            if mt is None:
                mt = self._by_enc[enc] = MessageTokens(model)
            self._by_model[model] = mt
        return mt


class Memory:
    """The simulated memory, with each message's OpenAI dict, id and token count kept in step.

    A call's snapshot is then a ``Payload`` over the dict and id lists (which are
    copied on write, never changed in place once handed out) and a running total rather than a
    pass over every message, and a trim that only removed messages (what every
    built-in policy but summary-window does) deletes their entries instead of
    rebuilding them. Counts are those of one encoding, ``mt``'s (the trace's
    model); a call of another model recounts (``tokens_for``).
    """

    def __init__(self, mt: MessageTokens, trimmer: IncrementalTrimmer) -> None:
        self.mt = mt
        self.trimmer = trimmer
        self.msgs: list[Msg] = []
        self.dicts: list[dict] = []
        self.ids: list[str] = []
        self._toks: list[int] = []
        self.total = 0
        self.version = 0
        """Bumped by every change but an append: equal versions mean "only appended since"."""
        self._log: list | None = None
        """While messages are replaced in place (``TrimEdit``): the edit log over ``dicts``/``ids``, which then
        hold the originals and only grow (``EditedPayload``); None otherwise."""
        self._over: dict[int, tuple[dict, str]] = {}
        """Position -> (body, id) of each message that differs from ``dicts``/``ids`` (while ``_log`` is set)."""
        self._last_edit: int | None = None
        self._gone: list | None = []
        """The bodies that left since the last ``changes()`` (None after a rebuild: not tracked)."""
        self._come: list = []
        """The bodies that came in since the last ``changes()``."""

    def changes(self) -> tuple[list, list] | None:
        """The bodies that left and came in since the last ask (a multiset change: a body replaced in place
        is one of each), or None when the memory was rebuilt meanwhile; then starts anew. Lets retention
        follow a window that slid by its changes instead of re-reading it (``probes._masks``)."""
        gone, come = self._gone, self._come
        self._gone, self._come = [], []
        return None if gone is None else (gone, come)

    def payload(self, tools: list | None) -> Payload | EditedPayload:
        """The memory's messages now, shared with the memory (never changed in place once handed out)."""
        n = len(self.msgs)
        if self._log is not None:
            at = self._last_edit if self._last_edit in self._over else next(iter(self._over), None)
            last = None if at is None else (at, self._over[at][0])
            return EditedPayload(self.dicts, self.ids, n, self._log, len(self._log), tools or None, last)
        return Payload([(0, n)] if n else [], self.dicts, self.ids, tools or None)

    def edit(self, edits: Sequence[tuple[int, Msg]]) -> None:
        """Replace messages in place: the originals stay in ``dicts``/``ids`` and each change goes to the log."""
        if self._log is None:
            self._log, self._over = [], {}
        self.version += 1
        log, over, msgs, toks = self._log, self._over, self.msgs, self._toks
        for k, new in edits:
            d, n = self.mt.dict_and_tokens(new)
            old_d, old_id = over.get(k) or (self.dicts[k], self.ids[k])
            log.append((k, old_d, old_id, d, new.id))
            if self._gone is not None:
                self._gone.append(old_d)
                self._come.append(d)
            if d is self.dicts[k] and new.id == self.ids[k]:
                over.pop(k, None)
            else:
                over[k] = (d, new.id)
                self._last_edit = k
            self.total += n - toks[k]
            toks[k] = n
            msgs[k] = new

    def _fold(self) -> None:
        """Leave the edit mode: ``dicts``/``ids`` become new lists holding the edited messages."""
        if self._log is None:
            return
        dicts, ids = list(self.dicts), list(self.ids)
        for k, (d, mid) in self._over.items():
            dicts[k], ids[k] = d, mid
        self.dicts, self.ids, self._log, self._over, self._last_edit = dicts, ids, None, {}, None

    def append(self, m: Msg) -> None:
        d, n = self.mt.dict_and_tokens(m)
        self.msgs.append(m)
        self.dicts.append(d)
        self.ids.append(m.id)
        self._toks.append(n)
        self.total += n
        self._come.append(d)

    def _own_dicts(self) -> list[dict]:
        """``dicts``, copied first: snapshots share the list (they only read a prefix of it), so the
        memory only ever appends to a list it has handed out (copy on write)."""
        self.dicts = list(self.dicts)
        return self.dicts

    def _own_ids(self) -> list[str]:
        """``ids``, copied first (see ``_own_dicts``)."""
        self.ids = list(self.ids)
        return self.ids

    def reset(self, messages: Sequence[Msg]) -> None:
        """Become ``messages`` (a clear, a new conversation): the trimmer is told first."""
        self.trimmer.close(self.msgs)
        self._rebuild(messages)

    def _rebuild(self, messages: Sequence[Msg]) -> None:
        self.version += 1
        self._log, self._over, self._last_edit = None, {}, None
        self._gone = None
        self.msgs = list(messages)
        pairs = [self.mt.dict_and_tokens(m) for m in self.msgs]
        self.dicts = [d for d, _ in pairs]
        self._toks = [n for _, n in pairs]
        self.ids = [m.id for m in self.msgs]
        self.total = sum(self._toks)

    def trimmed(self, kept: Sequence[Msg], removed: Sequence[Msg]) -> None:
        """Become ``kept``: delete the entries of ``removed`` when that is what happened (found by identity, in
        order; usually near the head), then insert the messages ``kept`` adds (summary-window's new running
        summary: one new entry, not a rebuild of every entry per fold); else rebuild from ``kept``."""
        self._fold()
        old = self.msgs
        n = len(old)
        if len(kept) + len(removed) >= n:
            # where each removed message is, by identity, in memory order (summary-window removes its old summary,
            # which comes before the messages it folds): a scan that stops when all are found
            wanted = {id(r) for r in removed}
            where: list[int] = []
            if len(wanted) == len(removed):
                for k, m in enumerate(old):
                    if id(m) in wanted:
                        where.append(k)
                        if len(where) == len(wanted):
                            break
            if len(where) == len(removed):
                self.version += 1
                msgs, dicts, ids, toks = old, self._own_dicts(), self._own_ids(), self._toks
                if self._gone is not None:
                    self._gone.extend(dicts[i] for i in where)
                for i in reversed(where):
                    self.total -= toks[i]
                    del msgs[i], dicts[i], ids[i], toks[i]
                if len(msgs) == len(kept) and all(map(operator.is_, msgs, kept)):
                    return
                if self._insert(kept):
                    return
        self._rebuild(kept)

    def _insert(self, kept: Sequence[Msg]) -> bool:
        """Become ``kept`` by inserting messages, when the memory's messages are ``kept`` in order with a few
        more between them (found by identity); False (nothing changed) otherwise."""
        msgs, new, i = self.msgs, [], 0
        for j, m in enumerate(kept):
            if i < len(msgs) and msgs[i] is m:
                i += 1
            else:
                new.append((j, m))
        if i != len(msgs) or len(new) > 8:
            return False
        dicts, ids, toks = self.dicts, self.ids, self._toks      # already this memory's own (copied on delete)
        for j, m in new:
            d, t = self.mt.dict_and_tokens(m)
            msgs.insert(j, m)
            dicts.insert(j, d)
            ids.insert(j, m.id)
            toks.insert(j, t)
            self.total += t
            if self._gone is not None:
                self._come.append(d)
        return True

    def cut(self, ranges: Sequence[tuple[int, int]]) -> list[Msg]:
        """Delete the ``[start, end)`` ranges (ascending, not overlapping) from every list; what went."""
        self._fold()
        self.version += 1
        msgs, dicts, ids, toks = self.msgs, self._own_dicts(), self._own_ids(), self._toks
        removed = [m for a, b in ranges for m in msgs[a:b]]
        if self._gone is not None:
            for a, b in ranges:
                self._gone.extend(dicts[a:b])
        for a, b in reversed(ranges):
            self.total -= sum(toks[a:b])
            del msgs[a:b], dicts[a:b], ids[a:b], toks[a:b]
        return removed

    def add(self, m: Msg) -> tuple[list[Msg], str] | None:
        """Add ``m`` and let the policy trim, as ``ShortTermMemory.add`` does: what it removed and why."""
        self.append(m)
        outcome = self.trimmer.add(self.msgs)
        if isinstance(outcome, TrimCut):
            return (self.cut(outcome.ranges), outcome.reason) if outcome.ranges else None
        if isinstance(outcome, TrimEdit):
            self.edit(outcome.edits)
            return outcome.removed, outcome.reason
        if not outcome.changed:
            return None
        self.trimmed(outcome.messages, outcome.removed)
        return outcome.removed, outcome.reason

    def done(self) -> None:
        """Replay is over: the trimmer hands its state back to the policy."""
        self.trimmer.close(self.msgs)

    def tokens_for(self, mt: MessageTokens) -> int:
        return self.total if mt is self.mt else sum(mt.tokens(m) for m in self.msgs)


def recorded_ids_of(c: Call) -> list[str | None]:
    """The call's message ids, or all None when the reader did not give one per message."""
    rec_ids = c.message_ids
    n = len(c.messages)
    return rec_ids if len(rec_ids) == n else [None] * n


@dataclass
class Recorded:
    """What replay needs of one recorded chat payload; it does not depend on the policy."""

    call: Call
    """The call (the cache entry is only valid for this very object)."""
    length: int
    """How many messages it sent."""
    ids_given: bool
    """Whether the reader gave an id per message (else ``recorded_ids`` is all None)."""
    tokens: int
    """Cookbook count of its messages, in its own model's encoding (tools and priming not included)."""
    model: str | None
    """``call.model``."""
    tools: list[dict] | None
    """``call.tools``."""
    tool_tokens: int
    """Count of ``tools`` in the model's encoding."""
    reported_prompt_tokens: int | None
    """``call.reported_prompt_tokens``."""
    after: Call | None = None
    """For a call read from a file: the call just before it (in replay order) when this payload is that
    one's plus ``tail`` (``payload_tail``), so replay can decide ``same`` from the tail alone."""
    tail: list | None = None
    """The messages this payload adds to ``after``'s."""


def recorded_payloads(trace: Trace, calls: Sequence[Call], counts: Counts,
                      by_id: dict[str, Msg], known: Sequence[int] | None = None) -> dict[int, Recorded]:
    """Each chat call's ``Recorded`` by ``id(call)``, computed once per trace (``trace.meta``) and
    shared by every replay of it: recorded payloads are read-only.

    A count resumes from the previous call of the same encoding when the payload extends it
    (a full-history log adds one or two messages per call), so it costs the new messages,
    not a recount: for calls read from a file ``payload_tail`` finds them by comparing payload
    runs; for others a prefix comparison of ids does. ``known``: each call's count (``Recorded.tokens``, in
    ``calls`` order) as an earlier run found it (``stored.py``): then nothing is counted."""
    cache: dict[int, Recorded] = trace.meta.setdefault("_replay_recorded", {})
    prev: dict[str, tuple[list, int]] = {}
    prev_run: dict[str, tuple[Call, int]] = {}
    last: Call | None = None                   # the call before, of any model
    by_body: dict[int, Msg] | None = None      # id(a stream message's dict) -> the message
    for i, c in enumerate(calls):
        done = cache.get(id(c))
        if done is not None and done.call is c:
            last = c
            continue
        model = c.model
        mt = counts.for_model(model)
        enc = mt.counter.encoding_name
        after = tail_of_last = None
        if c.payload is not None:
            n, ids_given = len(c.payload), True
            if last is not None and last.payload is not None:
                found = payload_tail(last, c)
                if found is not None:
                    after, tail_of_last = last, found[0]
            before = prev_run.get(enc)
            if known is not None:
                total = known[i]
            elif before is not None and before[0] is after:
                tail = (tail_of_last, 0)
            else:
                tail = payload_tail(before[0], c) if before is not None else None
            if known is None:
                added, total = (tail[0], before[1]) if tail is not None else (c.messages, 0)
                # A payload's messages are its trace's added bodies themselves, so counting the body
                # is counting the stream message (the count depends on the content alone): the count kept on
                # the message (``MessageTokens``; made by another process, ``counting.py``) where there is one.
                if by_body is None:
                    by_body = {id(openai_dict(m)): m for m in by_id.values()}
                count, tokens = mt.counter.count_message, mt.tokens
                for d in added:
                    m = by_body.get(id(d))
                    total += count(d) if m is None or m.openai_cache is not d else tokens(m)
                prev_run[enc] = (c, total)
        elif known is not None:
            n, total = len(c.messages), known[i]
            ids_given = len(c.message_ids) == n
        else:
            messages, given = c.messages, c.message_ids
            n, start, total = len(messages), 0, 0
            ids = given if len(given) == n else [None] * n
            ids_given = ids is given
            before_ids = prev.get(enc)
            if before_ids is not None:
                p_ids, p_sum = before_ids
                k = len(p_ids)
                if n >= k and ids[:k] == p_ids and all(ids[k:]):
                    start, total = k, p_sum
            for i in range(start, n):
                rid = ids[i]
                m = by_id.get(rid) if rid else None
                total += mt.tokens(m) if m is not None else mt.counter.count_message(messages[i])
            if start or all(ids):
                prev[enc] = (ids, total)
            else:
                prev.pop(enc, None)
        tools = c.tools
        cache[id(c)] = Recorded(c, n, ids_given, total, model, tools, mt.counter.count_tools(tools),
                                c.reported_prompt_tokens, after, tail_of_last)
        last = c
    return cache


def recorded_tokens(trace: Trace, calls: Sequence[Call]) -> list[int] | None:
    """Each of ``calls``' ``Recorded.tokens`` as ``recorded_payloads`` found them (None when one is missing)."""
    cache = trace.meta.get("_replay_recorded") or {}
    out = []
    for c in calls:
        rec = cache.get(id(c))
        if rec is None or rec.call is not c:
            return None
        out.append(rec.tokens)
    return out
