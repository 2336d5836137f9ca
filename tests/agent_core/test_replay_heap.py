"""``replay_file`` (``chain-studio replay``) pauses the cyclic collector and freezes what it built (core/heap.py).

That is only safe while a replay and its report hold no reference cycles: reference counting alone then frees
them. These tests fail if a cycle creeps in under any policy, in either report format."""
from __future__ import annotations

import gc
import io
from pathlib import Path

import pytest

from agent_core.replay import report
from agent_core.replay.report import replay_file

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "long_trimmed_fact.jsonl"
POLICIES = ["keep-all", "max-messages", "naive-drop-oldest", "sliding-window", "token-budget", "summary-window",
            "langchain-trim-last", "openai-truncation-auto"]


@pytest.mark.parametrize("policy", POLICIES)
def test_a_replay_report_leaves_no_cyclic_garbage(policy):
    gc.unfreeze()
    gc.collect()
    gc.disable()        # so every object made below is still there for the count
    try:
        out = io.StringIO()
        replay_file(str(SAMPLE), policy, out=out)
        gc.unfreeze()   # what replay_file froze: let the collector see it again
        text = replay_file(str(SAMPLE), policy, fmt="text")
        gc.unfreeze()
        assert out.getvalue().startswith("{") and text.startswith("replay under")
        del out, text
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_the_collector_is_paused_while_replaying_and_resumed_after(monkeypatch):
    seen: list[bool] = []
    real = report.run_replay
    monkeypatch.setattr(report, "run_replay", lambda *a, **k: (seen.append(gc.isenabled()), real(*a, **k))[1])
    assert gc.isenabled()
    replay_file(str(SAMPLE), "max-messages", fmt="text")
    assert seen == [False]
    assert gc.isenabled()
    gc.unfreeze()
