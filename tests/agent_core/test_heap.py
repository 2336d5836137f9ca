"""core/heap.py freezes a loaded trace out of the cyclic GC; that is only safe while a trace holds no cycles
(reference counting alone then frees it when dropped). These tests fail if a cycle creeps into the model."""
from __future__ import annotations

import gc
from pathlib import Path

import pytest

from agent_core.core.heap import long_lived
from agent_core.ingest.detect import load_any
from agent_core.lint.scan import lint_trace
from agent_core.replay.engine import replay
from agent_core.trim.registry import make_policy

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "sample_traces").glob("*.jsonl"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_a_loaded_linted_replayed_trace_leaves_no_cyclic_garbage(path):
    gc.unfreeze()       # what earlier tests' loads froze, garbage included
    gc.collect()
    trace = load_any(path)
    gc.unfreeze()       # let the collector see the trace's objects again
    lint_trace(trace)
    replay(trace, make_policy("max-messages", max_messages=4))
    del trace
    assert gc.collect() == 0


def test_long_lived_pauses_the_collector_and_resumes_it_once_nested_loads_end():
    assert gc.isenabled()
    with long_lived():
        assert not gc.isenabled()
        with long_lived():
            assert not gc.isenabled()
        assert not gc.isenabled()
        kept = [{"a": [i]} for i in range(100)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(kept)
    gc.unfreeze()
