"""The replay report's payload runs (``references._Runs``): each payload as the fewest runs over the list of
distinct messages in first-seen order, however it relates to the payload before (grown, slid, slid under a
kept head, shrunk, unrelated). The reference is the definition, computed from scratch for every payload."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.replay.references import _Runs


def _expected(payloads: list[list[str]]) -> list[list[list[int]]]:
    where: dict[str, int] = {}
    out = []
    for ids in payloads:
        runs: list[list[int]] = []
        for mid in ids:
            i = where.setdefault(mid, len(where))
            if runs and runs[-1][0] + runs[-1][1] == i:
                runs[-1][1] += 1
            else:
                runs.append([i, 1])
        out.append(runs)
    return out


def _runs(payloads: list[list[str]]) -> list[list[list[int]]]:
    table = _Runs()
    return [table.runs(ids, [{"id": m} for m in ids]) for ids in payloads]


def test_a_window_sliding_under_a_kept_system_message():
    stream = [f"m{k}" for k in range(12)]
    payloads = [["sys", *stream[max(0, k - 4):k]] for k in range(1, 13)]
    assert _runs(payloads) == _expected(payloads)
    assert _runs(payloads)[-1] == [[0, 1], [9, 4]]       # sys, then m8..m11 (m0 is index 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=16),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 16), st.integers(0, 16)), min_size=1, max_size=12))
def test_any_sequence_of_payloads_gets_the_fewest_runs_in_first_seen_order(stream, cuts):
    # each payload: the first h stream messages kept, then a window [a, b) of the rest (slid, grown or shrunk)
    payloads = [stream[:h] + stream[h + a:h + max(a, b)] for h, a, b in cuts]
    payloads = [p for p in payloads if p] or [stream]
    assert _runs(payloads) == _expected(payloads)
