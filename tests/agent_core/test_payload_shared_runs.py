"""A full-history log's calls share one list of runs that grows with each call (trace/payload.py, ingest/
payload_runs.py): each payload still reads exactly its own messages, and whatever is computed from runs equals
what each call's own message list gives."""
from __future__ import annotations

import json

from agent_core.ingest.detect import load_any
from agent_core.trace.model import message_occurrences, payload_tail
from agent_core.trace.payload import Payload

A, B, C, D, E = ({"role": "user", "content": x} for x in "abcde")


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_a_payload_reads_its_own_length_of_a_list_grown_after_it():
    bodies, ids = [A, B, C, D, E], list("abcde")
    runs = [(0, 2)]
    p = Payload(runs, bodies, ids)
    runs[-1] = (0, 3)                   # the next call lengthened the run ...
    q = Payload(runs, bodies, ids)
    runs.append((4, 1))                 # ... and the one after added a run
    r = Payload(runs, bodies, ids)
    assert (p.parts, q.parts, r.parts) == ([(0, 2)], [(0, 3)], [(0, 3), (4, 1)])
    assert (p.messages(), q.messages(), r.messages()) == ([A, B], [A, B, C], [A, B, C, E])
    assert (p.ids(1), q.ids(), r.ids(3)) == (["b"], ["a", "b", "c"], ["e"])
    assert r.starts_with(q) and r.starts_with(p) and q.starts_with(p)
    assert not p.starts_with(q) and not q.starts_with(r)
    empty = Payload([], bodies, ids)
    assert empty.parts == [] and empty.messages() == []


def test_a_full_history_logs_calls_share_one_list_and_read_what_they_sent(tmp_path):
    lines, messages = [], [{"role": "system", "content": "s"}]
    for k in range(30):
        messages = messages + [{"role": "user", "content": f"q{k}"}]
        sent = messages if k != 20 else messages[:1] + messages[-3:]     # one trimmed call starts a new list
        lines.append(json.dumps({"request": {"model": "m", "messages": sent},
                                 "response": {"choices": [{"message": {"role": "assistant", "content": f"a{k}"}}]}}))
        messages = messages + [{"role": "assistant", "content": f"a{k}"}]
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    trace = load_any(path)
    lists = [c.payload._parts for c in trace.calls]
    assert all(x is lists[0] for x in lists[:20]) and lists[20] is not lists[0]
    assert all(x is lists[21] for x in lists[21:])
    for call, line in zip(trace.calls, lines):      # the real json library on each line alone
        assert _dumps(call.request) == _dumps(json.loads(line)["request"])
    # what is computed from runs equals what each call's own list gives
    rows = message_occurrences(trace.calls)
    assert sum(r[3] for r in rows) == sum(len(c.messages) for c in trace.calls)
    first_seen: dict[int, tuple[int, int]] = {}
    for c in trace.calls:
        for i, m in enumerate(c.messages):
            first_seen.setdefault(id(m), (c.index, i))
    assert {id(r[2]): (r[0], r[1]) for r in rows} == first_seen
    for a, b in zip(trace.calls, trace.calls[1:]):
        tail = payload_tail(a, b)
        grows = b.messages[:len(a.messages)] == a.messages and all(x is y for x, y in zip(b.messages, a.messages))
        assert (tail is not None) == grows
        if tail is not None:
            assert tail == (b.messages[len(a.messages):], len(a.messages))
