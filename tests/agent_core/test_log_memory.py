"""Issue 18: a full-history payload log's trace in memory under twice the JSON text of its distinct messages and
responses (each message once, every response), measured with tracemalloc on the benchmark's conversation."""
from __future__ import annotations

import gc
import json
import tracemalloc

from agent_core.ingest import snapshot
from agent_core.ingest.detect import load_any
from agent_core.trace.reader import read_trace
from benchmarks.synthetic import generate


def test_a_full_history_logs_trace_holds_under_twice_its_distinct_json(tmp_path, monkeypatch):
    monkeypatch.setenv(snapshot.ENV, "off")         # parsed here, not loaded from a stored trace
    source = read_trace(generate(tmp_path / "conversation.jsonl", 100))
    path = tmp_path / "payload-log.jsonl"
    with open(path, "w", encoding="utf-8") as f:    # what an app that logs each request and response writes
        f.writelines(json.dumps({"request": c.request, "response": c.response}, ensure_ascii=False) + "\n"
                     for c in source.calls)
    # the denominator the README reports: the JSON text of each distinct message once (the last request sends
    # them all) and of every response
    distinct = sum(len(json.dumps(m, ensure_ascii=False).encode()) for m in source.calls[-1].request["messages"]) \
        + sum(len(json.dumps(c.response, ensure_ascii=False).encode()) for c in source.calls)
    assert path.stat().st_size > 40 * distinct     # a full history: the file re-sends everything
    del source
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        trace = load_any(path, keep=False)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert len(trace.calls) == 100
    assert held < 2 * distinct, f"{held / distinct:.2f}x"
