"""Calls read from a trace file keep payloads as runs; everything computed from runs must equal
what the plain lists give."""
from __future__ import annotations

import dataclasses

import pytest

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.lint.scan import lint_trace
from agent_core.trace.model import Trace, message_occurrences, payload_tail
from agent_core.trace.payload import Payload
from agent_core.trace.reader import read_trace
from agent_core.trace.tokens import TokenCounter
from agent_core.trace.writer import write_trace
from studio.viewmodels.tokens import largest_messages

A, B, C, D = ({"role": "user", "content": x} for x in "abcd")
EXTRA = {"role": "system", "content": "never added"}


def test_payload_builds_slices_ids_and_the_request():
    bodies, ids = [A, B, C, D], ["a", "b", "c", "d"]
    p = Payload([(1, 2), [EXTRA], (0, 1)], bodies, ids, tools=[{"type": "function"}])
    assert len(p) == 4 and p.messages() == [B, C, EXTRA, A] and p.ids() == ["b", "c", None, "a"]
    assert p.messages(1) == [C, EXTRA, A] and p.messages(2) == [EXTRA, A] and p.messages(4) == []
    assert p.request({"model": "m", "messages": None, "tools": None}) == {
        "model": "m", "messages": [B, C, EXTRA, A], "tools": [{"type": "function"}]}


@pytest.mark.parametrize("before, after, expected", [
    ([(0, 2)], [(0, 3)], True), ([(0, 2)], [(0, 2)], True), ([], [(0, 1)], True),
    ([(0, 3)], [(0, 2)], False), ([(1, 2)], [(0, 3)], False), ([(0, 1), [EXTRA]], [(0, 1), [EXTRA], (1, 2)], True),
    ([(0, 1), [A]], [(0, 1), [EXTRA]], False), ([(0, 1), (2, 1)], [(0, 1), (2, 2)], True),
    ([(0, 1), (2, 1)], [(0, 1), (3, 1)], False),
])
def test_starts_with_is_the_prefix_relation_of_the_lists(before, after, expected):
    bodies, ids = [A, B, C, D], list("abcd")
    p, q = Payload(before, bodies, ids), Payload(after, bodies, ids)
    assert q.starts_with(p) is expected
    if expected:
        assert q.messages()[:len(p)] == p.messages()


def _plain(trace: Trace) -> Trace:
    """The same trace with every payload as a plain list (replace drops the payload)."""
    calls = [dataclasses.replace(c, request=c.request) for c in trace.calls]
    assert all(c.payload is None for c in calls)
    return dataclasses.replace(trace, calls=calls)


def _file_traces(tmp_path, real_traces):
    from agent_core.ingest.detect import load_any
    # Responses API samples carry no messages list, so no payload runs (their items are stored as sent)
    out = [read_trace(p) for p in sorted(SAMPLE_TRACES.glob("*.jsonl")) if not p.name.startswith("responses_")]
    for path in sorted(real_traces.rglob("*"))[:12]:
        if path.is_file() and path.suffix in (".json", ".jsonl", ".traj"):
            try:
                imported = load_any(path)
            except Exception:      # noqa: BLE001  (files no importer reads are another test's business)
                continue
            write_trace(imported, tmp_path / f"{path.stem}.jsonl")
            out.append(read_trace(tmp_path / f"{path.stem}.jsonl"))
    return out


def test_runs_and_lists_give_the_same_lint_counts_and_largest_messages(tmp_path, real_traces):
    from agent_core.trace.synthetic import synthetic_trace
    traces = _file_traces(tmp_path, real_traces)
    write_trace(synthetic_trace(60), tmp_path / "synthetic.jsonl")
    traces.append(read_trace(tmp_path / "synthetic.jsonl"))
    assert len(traces) > 8 and all(any(c.payload is not None for c in t.calls) for t in traces)
    for trace in traces:
        plain = _plain(trace)
        assert [f.export() for f in lint_trace(trace)] == [f.export() for f in lint_trace(plain)]
        counter = TokenCounter("gpt-4o")
        assert counter.count_calls_by_role(trace.calls) == TokenCounter("gpt-4o").count_calls_by_role(plain.calls) \
            == [counter.count_by_role(c.messages, c.tools) for c in plain.calls]
        assert largest_messages(trace, 50) == largest_messages(plain, 50)


def test_occurrences_from_runs_count_every_payload_slot(tmp_path):
    from agent_core.trace.synthetic import synthetic_trace
    write_trace(synthetic_trace(40), tmp_path / "s.jsonl")
    trace = read_trace(tmp_path / "s.jsonl")
    rows = message_occurrences(trace.calls)
    assert sum(r[3] for r in rows) == sum(len(c.messages) for c in trace.calls)
    first_seen: dict[int, tuple[int, int]] = {}
    for c in trace.calls:
        for i, m in enumerate(c.messages):
            first_seen.setdefault(id(m), (c.index, i))
    assert {id(r[2]): (r[0], r[1]) for r in rows} == first_seen


def test_payload_tail_falls_back_to_lists_for_plain_calls(tmp_path):
    trace = read_trace(SAMPLE_TRACES / "classic_remembers.jsonl")
    plain = _plain(trace)
    tails = [payload_tail(a, b) for a, b in zip(trace.calls, trace.calls[1:])]
    assert tails == [payload_tail(a, b) for a, b in zip(plain.calls, plain.calls[1:])]
    assert all(t is not None for t in tails) and payload_tail(None, plain.calls[0]) is None


def test_holds_is_membership_in_the_id_list(tmp_path, real_traces):
    """``Payload.holds`` (the Lineage page's "which calls included a message?") tests runs, never builds the id
    list: it must answer what the id list answers, for every stream id, a message added more than once, one
    matching no added message (None) and an unknown id."""
    from agent_core.trace.synthetic import synthetic_trace

    traces = _file_traces(tmp_path, real_traces)
    write_trace(synthetic_trace(60), tmp_path / "synthetic.jsonl")
    traces += [read_trace(tmp_path / "synthetic.jsonl"), read_trace(SAMPLE_TRACES / "long_trimmed_fact.jsonl")]
    for trace in traces:
        calls = [c for c in trace.calls if c.payload is not None]
        for msg_id in [*dict.fromkeys(m.id for m in trace.stream), None, "no-such-id"]:
            positions: dict = {}
            assert [c.index for c in calls if c.payload.holds(msg_id, positions)] == \
                [c.index for c in calls if msg_id in c.payload.ids()], (trace.source, msg_id)
    bodies, ids = [A, B, C, A], ["a", "b", "c", "a"]         # "a" added twice: either place counts
    assert Payload([(3, 1)], bodies, ids).holds("a", {}) and not Payload([(1, 2)], bodies, ids).holds("a", {})
    assert Payload([(1, 1), [EXTRA]], bodies, ids).holds(None, {})
    assert not Payload([(0, 4)], bodies, ids).holds(None, {})
