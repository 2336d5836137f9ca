"""The replay report's default JSON: linear in the trace, every message and every drop listed once.

``--full`` prints every call's whole payload (``ReplayResult.to_json``): a
full-history trace of N calls then repeats O(N²) messages (26 MB at 1,000
calls, 132 MB at 5,000). By default the report lists each message of any
replayed payload once, in ``messages`` (by id), and each call gives its payload
as runs over that list (``[first, count]`` pairs: ``messages[first:first +
count]``), and its drops as indexes into ``drops`` (each removal listed once).
``expand`` turns such a document back into the full one.
"""
from __future__ import annotations

from typing import Any

from agent_core.trace.payload import Payload

from .edited import EditedPayload
from .result import ReplayedCall, ReplayResult

FORMAT = "chain-studio-replay-refs/1"
"""The value of the document's ``format`` key (the full document has none)."""


class _Runs:
    """Each call's payload ids as runs over one list of distinct message ids, computed from the previous call's:
    a payload that grew or slid by a window costs C-speed list comparisons, not a Python loop per message."""

    def __init__(self) -> None:
        self.order: list[str] = []          # distinct ids in first-seen order
        self.bodies: list[dict] = []
        self.where: dict[str, int] = {}
        self._prev_ids: list[str] | None = []
        self._prev_runs: list[list[int]] = []
        self._prev_payload: Payload | EditedPayload | None = None   # when set, ``_prev_ids`` may be None (built
        # when needed)
        self._prev_call: int | None = None

    def _index(self, mid: str, body: dict) -> int:
        i = self.where.get(mid)
        if i is None:
            i = self.where[mid] = len(self.order)
            self.order.append(mid)
            self.bodies.append(body)
        return i

    def runs_of(self, payload: Payload | EditedPayload, call: int | None = None) -> list[list[int]] | dict:
        """``runs`` of a replayed payload; one that extends the previous one (the same shared list, longer)
        costs its new messages only, without building either id list (keep-all stays linear). An edited
        payload that follows the previous call's (``EditedPayload.follows``) is given as that call's payload
        changed: ``{"from": call, "set": [[position, message], ...], "append": runs}``."""
        prev = self._prev_payload
        if isinstance(payload, EditedPayload):
            if payload.follows(prev) and self._prev_call is not None:
                sets, _, tail = payload.delta_from(prev)
                out: dict = {"from": self._prev_call,
                             "set": [[pos, self._index(mid, body)] for pos, body, mid in sets], "append": []}
                self._extend(out["append"], [mid for _, mid in tail], [body for body, _ in tail])
            else:
                if prev is not None and self._prev_ids is None:
                    self._prev_ids = prev.ids()
                out = self.runs(payload.ids(), payload.messages())
            # a following plain payload is listed from scratch (no runs to resume from)
            self._prev_ids, self._prev_runs, self._prev_payload, self._prev_call = [], [], payload, call
            return out
        self._prev_call = call
        if prev is not None and payload.added is prev.added and payload.starts_with(prev):
            k = len(prev)
            runs = [list(r) for r in self._prev_runs]
            self._extend(runs, payload.ids(k), payload.messages(k))
            self._prev_ids, self._prev_runs, self._prev_payload = None, runs, payload
            return [list(r) for r in runs]
        if prev is not None and self._prev_ids is None:
            self._prev_ids = prev.ids()
        out = self.runs(payload.ids(), payload.messages())
        self._prev_payload = payload
        return out

    def _extend(self, runs: list[list[int]], ids: list[str], messages: list[dict]) -> None:
        for mid, body in zip(ids, messages):
            i = self._index(mid, body)
            if runs and runs[-1][0] + runs[-1][1] == i:
                runs[-1][1] += 1
            else:
                runs.append([i, 1])

    def runs(self, ids: list[str], messages: list[dict]) -> list[list[int]]:
        prev, start, runs = self._prev_ids, 0, []
        if prev and ids:
            # The previous payload's first p messages (a kept system message, or all of it: grown), minus the k
            # after them, then new ones: a window that slid under a pinned head costs its new messages only.
            p, n = 0, min(len(prev), len(ids))
            while p < n and ids[p] == prev[p]:
                p += 1
            try:
                k = p if p == len(prev) or p == len(ids) else prev.index(ids[p], p + 1)
            except ValueError:
                k = -1
            if k >= 0 and len(ids) - p >= len(prev) - k and ids[p:p + len(prev) - k] == prev[k:]:
                runs = _joined(_window(self._prev_runs, 0, p), _window(self._prev_runs, k, len(prev)))
                start = p + len(prev) - k
        self._extend(runs, ids[start:], messages[start:])
        self._prev_ids, self._prev_runs, self._prev_payload = ids, runs, None
        return [list(r) for r in runs]


def _window(runs: list[list[int]], a: int, b: int) -> list[list[int]]:
    """Positions ``a`` to ``b`` of the payload ``runs`` describe, as runs (new lists)."""
    out, at = [], 0
    for first, count in runs:
        lo, hi = max(a, at), min(b, at + count)
        if lo < hi:
            out.append([first + lo - at, hi - lo])
        at += count
        if at >= b:
            break
    return out


def _joined(head: list[list[int]], rest: list[list[int]]) -> list[list[int]]:
    """``head`` then ``rest``, one run where they meet end to start (as ``_extend`` would have made it)."""
    if head and rest and head[-1][0] + head[-1][1] == rest[0][0]:
        head[-1][1] += rest[0][1]
        return head + rest[1:]
    return head + rest


def _call_entry(c: ReplayedCall, runs: list[list[int]] | dict, drop_index: dict[int, int], drops: list[dict]) -> dict:
    dropped = []
    for d in c.dropped:
        i = drop_index.get(id(d))
        if i is None:                       # not in the result's list (never the case for the engine's drops)
            i = drop_index[id(d)] = len(drops)
            drops.append(d.export())
        dropped.append(i)
    return {"call": c.call, "payload": runs, "message_count": len(c.payload), "tokens": c.tokens,
            "dropped": dropped, "findings": [f.export() for f in c.findings]}


class PayloadRuns:
    """Each replayed call's payload as runs, and the ``messages`` list they index: what the document says of the
    payloads, which does not depend on the linter's findings (so it can be written while they are found)."""

    def __init__(self, result: ReplayResult) -> None:
        table = _Runs()
        self.runs = [table.runs_of(c.payload, c.call) for c in result.calls]
        self.messages = [{"id": mid, "message": body} for mid, body in zip(table.order, table.bodies)]

    def head(self, result: ReplayResult) -> dict:
        """The document's first members, up to ``messages``."""
        return {"format": FORMAT, "policy": result.policy, "params": result.params, "messages": self.messages}


def referenced_json(result: ReplayResult, probes: dict | None = None, runs: PayloadRuns | None = None) -> dict:
    """The default ``chain-studio replay --format json`` document (see the module docstring); ``runs``: the
    payloads' runs when they were made before (``PayloadRuns``)."""
    runs = runs or PayloadRuns(result)
    drops = [d.export() for d in result.drops]
    drop_index = {id(d): i for i, d in enumerate(result.drops)}
    calls = [_call_entry(c, r, drop_index, drops) for c, r in zip(result.calls, runs.runs)]
    return {**runs.head(result), "drops": drops, "calls": calls, "probes": probes or {}, "totals": result.totals}


def expand(doc: dict[str, Any]) -> dict[str, Any]:
    """The full document (``--full``) rebuilt from a referenced one: each call's ``messages`` and ``dropped``."""
    if doc.get("format") != FORMAT:
        return doc
    bodies = [m["message"] for m in doc["messages"]]
    calls = []
    by_call: dict[Any, list] = {}
    for c in doc["calls"]:
        payload = c["payload"]
        if isinstance(payload, dict):           # an edited payload: the call it changes, edited and extended
            messages = list(by_call[payload["from"]])
            for pos, i in payload["set"]:
                messages[pos] = bodies[i]
            messages += [bodies[i] for first, count in payload["append"] for i in range(first, first + count)]
        else:
            messages = [bodies[i] for first, count in payload for i in range(first, first + count)]
        by_call[c["call"]] = messages
        calls.append({"call": c["call"], "messages": messages, "tokens": c["tokens"],
                      "dropped": [doc["drops"][i] for i in c["dropped"]],
                      "findings": c["findings"]})
    return {"policy": doc["policy"], "params": doc["params"], "calls": calls, "probes": doc["probes"],
            "totals": doc["totals"]}
