"""What keeps a 25,000-call page as cheap as a 1,000-call one: paged long texts, binned charts, a binned heatmap."""
from __future__ import annotations

import itertools
import json

from agent_core.replay.probes import Probe, ProbeRetention, RetentionMatrix
from studio import replay_services as rs
from studio.viewmodels.preview import HIGHLIGHT_CHARS, text_pages
from studio.viewmodels.tokens import CallTokens, call_bins, sample_rows


def test_a_long_body_is_cut_into_pages_at_line_breaks_and_nothing_is_lost():
    body = {"messages": [{"role": "tool", "content": "行" * 300 + str(i)} for i in range(2000)]}
    text = json.dumps(body, ensure_ascii=False, indent=2)
    pages = text_pages(text, 50_000)
    assert not pages.highlight and len(text) > HIGHLIGHT_CHARS
    assert "".join(pages.page(i) for i in range(1, pages.pages + 1)) == text
    assert all(pages.page(i).endswith("\n") for i in range(1, pages.pages))
    assert all(len(pages.page(i)) <= 50_000 for i in range(1, pages.pages + 1))
    assert pages.page_of(len(text) - 1) == pages.pages
    small = text_pages('{"a": 1}')
    assert small.highlight and small.pages == 1 and small.page(1) == '{"a": 1}'
    one_line = text_pages("x" * 250, 100)      # no line break: cut where the page ends
    assert [one_line.page(i) for i in (1, 2, 3)] == ["x" * 100, "x" * 100, "x" * 50]


def _series(n: int) -> list[CallTokens]:
    return [CallTokens(call=i, by_role={"system": 10, "user": i, "tool": 2 * i, "odd": 1}, estimated=11 + 3 * i,
                       reported=11 + 3 * i if i % 2 else None, completion=5, context_window=128_000)
            for i in range(n)]


def test_token_bins_cover_every_call_once_with_the_exact_means():
    series = _series(25_000)
    bins = call_bins(series)
    assert len(bins) <= 500
    assert next(b.first for b in bins) == 0 and bins[-1].last == 24_999
    assert all(b.first == a.last + 1 for a, b in itertools.pairwise(bins))
    b = bins[7]
    calls = range(b.first, b.last + 1)
    assert b.by_role["user"] == sum(calls) / len(calls)
    assert b.by_role["other"] == 1         # an odd role is stacked as "other"
    assert (b.estimated_min, b.estimated_max) == (11 + 3 * b.first, 11 + 3 * b.last)
    assert b.reported_mean == sum(11 + 3 * i for i in calls if i % 2) / len([i for i in calls if i % 2])
    # up to 500 calls: one bin per call, its values the call's own
    few = call_bins(series[:300])
    assert [(x.first, x.last, x.by_role["tool"]) for x in few] == [(i, i, 2 * i) for i in range(300)]


def test_running_totals_are_sampled_exactly_and_keep_the_last_call():
    rows = [{"call": i, "total": i * (i + 1) // 2} for i in range(25_000)]
    picked = sample_rows(rows)
    assert len(picked) <= 501 and picked[-1] == rows[-1] and picked[0] == rows[0]
    assert all(r["total"] == r["call"] * (r["call"] + 1) // 2 for r in picked)
    assert sample_rows(rows[:10]) == rows[:10]


def _row(probe: Probe, present: list[bool]) -> ProbeRetention:
    gone = present.index(False)
    return ProbeRetention(probe=probe, present=present, first_present=0, first_gone=gone, dropped_by=None,
                          returned=None, why="")


def test_the_heatmap_keeps_a_single_forgotten_call_visible_and_names_it():
    calls = list(range(25_000))
    present = [True] * 25_000
    present[12_345] = False                   # forgotten on one call only
    probe = Probe(label="A-2024-0715", pattern="A-2024-0715")
    matrix = RetentionMatrix(source="recorded", calls=calls,
                             rows=[_row(probe, present)])
    hm = rs.heatmap([matrix])
    assert hm.binned and len(hm.x) <= rs.HEATMAP_COLUMNS
    column = next(i for i, h in enumerate(hm.hover[0]) if h[0] <= 12_345 <= h[1])
    first, last, carried, gone = hm.hover[0][column]
    assert gone == 12_345 and carried == last - first and hm.z[0][column] < 1
    assert all(z == 1 for i, z in enumerate(hm.z[0]) if i != column)
    small = rs.heatmap([RetentionMatrix(source="recorded", calls=[0, 1, 2],
                                        rows=[_row(probe, [True, False, True])])])
    assert not small.binned and small.z == [[1, 0, 1]] and small.x == [0, 1, 2]


def _largest_by_brute_force(trace, limit):
    """Every payload slot of every call walked (each copy counted), bodies compared as sorted JSON (tokens: the counter's, tested
    against the cookbook elsewhere; what is under test here is which bodies are listed, merged and ranked)."""
    from agent_core.trace.tokens import counter_for

    bodies: dict[str, list] = {}
    for call in trace.calls:
        for i, m in enumerate(call.messages):
            if not isinstance(m, dict):
                continue
            key = json.dumps(m, sort_keys=True, ensure_ascii=False)
            if key not in bodies:
                bodies[key] = [counter_for(call.model).count_message(dict(m)), call.index, i, 0, m.get("role")]
            bodies[key][3] += 1      # every copy sent is paid for: a body twice in one payload counts twice
    rows = sorted(bodies.values(), key=lambda b: (-b[0], b[1], b[2]))
    return [(t, c, i, n, r) for t, c, i, n, r in rows[:limit]]


def test_largest_messages_only_serializes_the_heavy_bodies_and_agrees_with_a_brute_force_count(monkeypatch):
    import copy

    from agent_core.core.paths import SAMPLE_TRACES
    from agent_core.trace.model import Trace
    from agent_core.trace.reader import read_trace
    from studio.viewmodels import tokens as tokens_view

    keyed = []
    real_key = tokens_view.message_key
    monkeypatch.setattr(tokens_view, "message_key", lambda m: keyed.append(m) or real_key(m))
    for name in ("classic_remembers.jsonl", "huge_tool_result.jsonl", "long_trimmed_fact.jsonl"):
        trace = read_trace(SAMPLE_TRACES / name)
        # the same conversation with every payload's messages as separate objects: equal bodies, not one object
        plain = Trace(source=name, format=trace.format, calls=[copy.deepcopy(c) for c in trace.calls])
        for c, src in zip(plain.calls, trace.calls):
            c.payload = None
            c.request = {**copy.deepcopy(src.request), "messages": copy.deepcopy(src.messages)}
        for t in (trace, plain):
            for limit in (1, 3, 10):
                keyed.clear()
                got = [(b.tokens, b.first_call, b.index, b.calls, b.role) for b in tokens_view.largest_messages(t, limit)]
                assert got == _largest_by_brute_force(t, limit), (name, limit)
                distinct = len({json.dumps(m, sort_keys=True) for c in t.calls for m in c.messages})
                if limit == 1 and distinct > 3:
                    assert len(keyed) < distinct, (name, len(keyed), distinct)    # not every body serialized
