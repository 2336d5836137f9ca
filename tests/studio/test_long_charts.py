"""A long trace's Tokens page draws its binned chart as one stacked area per role (a few SVG paths, not 500 bars
per role) and its cumulative line without 500 markers; the areas are still the exact means of the real counts."""
from __future__ import annotations

import pytest
from conftest import plotly_spec

from agent_core.trace.reader import read_trace
from agent_core.trace.tokens import counter_for
from benchmarks.synthetic import generate
from studio.viewmodels.tokens import CHART_POINTS


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("long") / "synthetic-1200.jsonl", 1200)


def test_a_long_tokens_chart_is_stacked_areas_of_the_exact_means(open_studio, long_trace):
    trace = read_trace(long_trace)
    at = open_studio(long_trace, "screens/tokens.py")
    roles = plotly_spec(at, 0)["data"]
    areas = [d for d in roles if d.get("stackgroup") == "roles"]
    assert areas and not [d for d in roles if d["type"] == "bar"]
    assert all(d["type"] == "scatter" and d["mode"] == "lines" and len(d["x"]) <= CHART_POINTS for d in areas)
    # bin k of the stack: the mean over its calls of the whole request counted by tiktoken
    counter = counter_for(trace.calls[0].model)
    k, size = 7, -(-len(trace.calls) // CHART_POINTS)
    calls = trace.calls[k * size:(k + 1) * size]
    expected = sum(counter.count_payload(c.messages, c.tools) for c in calls) / len(calls)
    assert sum(d["y"][k] for d in areas) == pytest.approx(expected)
    assert areas[0]["customdata"][k][:2] == [calls[0].index, calls[-1].index]      # the exact calls on hover
    assert at.caption[0].value.startswith(f"1,200 calls in {len(areas[0]['x'])} bins, stacked by role: each point is "
                                          f"the mean of {size} consecutive calls")
    cumulative = plotly_spec(at, 1)["data"]
    assert {d["mode"] for d in cumulative} == {"lines"}
