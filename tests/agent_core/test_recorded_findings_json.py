"""The recorded payloads' findings carried from one process to another (replay/findings.py:
recorded_findings_json, take_recorded_findings): a studio server's first replay takes its linting child's instead
of linting the recorded trace again. What is taken equals what linting the trace here gives; a document that does
not fit the trace is not taken."""
from __future__ import annotations

import json

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest.detect import load_any
from agent_core.replay import findings

SAMPLE = SAMPLE_TRACES / "naive_trim_orphan.jsonl"      # its orphaned tool result is an error under openai


def _exported(found: dict) -> dict:
    return {call: [f.export() for f in fs] for call, fs in found.items()}


def test_a_trace_takes_another_process_findings_and_they_equal_its_own_lint():
    doc = json.loads(json.dumps(findings.recorded_findings_json(load_any(SAMPLE), "openai")))
    assert doc["findings"], "the sample has findings to carry"
    taker, linted = load_any(SAMPLE), load_any(SAMPLE)
    assert findings.take_recorded_findings(taker, "openai", doc)
    assert "_lint_entries" not in taker.meta          # taken, not linted
    assert _exported(findings.recorded_findings(taker, "openai")) == \
        _exported(findings.recorded_findings(linted, "openai"))


def test_a_document_that_does_not_fit_is_not_taken():
    doc = findings.recorded_findings_json(load_any(SAMPLE), "openai")
    other = load_any(SAMPLE_TRACES / "classic_remembers.jsonl")
    assert not findings.take_recorded_findings(other, "openai", doc)          # other calls
    trace = load_any(SAMPLE)
    broken = {**doc, "findings": [{**doc["findings"][0], "rule": None, "extra": 1}]}
    assert not findings.take_recorded_findings(trace, "openai", broken)
    assert not findings.take_recorded_findings(trace, "openai", ["not", "a", "document"])
    assert "_recorded_findings" not in trace.meta

