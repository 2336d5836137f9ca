"""The replay report is linear in the trace: each message and each drop listed once, calls refer to them.

The full document (``--full``) repeats every payload: a full-history trace of N calls holds O(N²) messages.
"""
from __future__ import annotations

import json

import pytest

from agent_core.replay.engine import replay
from agent_core.replay.probes import probe_from_text, recorded_retention, replay_retention
from agent_core.replay.references import expand
from agent_core.replay.report import report_json
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trim.registry import make_policy


def _reports(calls: int, policy: str, **params) -> tuple[dict, dict]:
    """(the default referenced document, the full one) of one replay."""
    trace = synthetic_trace(calls)
    result = replay(trace, make_policy(policy, **params))
    probes = [probe_from_text("A-2024-0715")]
    recorded, replayed = recorded_retention(trace, probes), replay_retention(result, probes)
    return (report_json(result, recorded, replayed, trace),
            report_json(result, recorded, replayed, trace, full=True))


def _size(doc: dict) -> int:
    return len(json.dumps(doc, ensure_ascii=False))


@pytest.mark.parametrize(("policy", "params"), [("keep-all", {}), ("max-messages", {"max_messages": 30})])
def test_the_report_grows_linearly_with_the_calls(policy, params):
    small, full_small = _reports(200, policy, **params)
    big, full_big = _reports(400, policy, **params)
    assert _size(big) / _size(small) < 2.2, (_size(small), _size(big))
    if policy == "keep-all":      # the full document is quadratic: twice the calls, about four times the bytes
        assert _size(full_big) / _size(full_small) > 3.2


@pytest.mark.parametrize(("policy", "params"), [("keep-all", {}), ("max-messages", {"max_messages": 9}),
                                                ("token-budget", {"max_tokens": 700}),
                                                ("summary-window", {"keep_turns": 2})])
def test_the_referenced_report_expands_to_the_full_one(policy, params):
    referenced, full = _reports(120, policy, **params)
    assert expand(referenced) == full
    # each message of any payload and each removal is listed once
    ids = [m["id"] for m in referenced["messages"]]
    assert len(ids) == len(set(ids))
    referenced_drops = [i for c in referenced["calls"] for i in c["dropped"]]
    assert len(referenced_drops) == len(set(referenced_drops)) == sum(len(c["dropped"]) for c in full["calls"])
