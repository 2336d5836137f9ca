"""A big trace's first replay in a studio server takes the recorded findings its linting child stored
(``studio/count_child.py : _replay``, ``replay_services.take_recorded_findings``) instead of linting the recorded
payloads again: what it takes equals the server's own lint."""
from __future__ import annotations

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest.detect import load_any
from agent_core.replay import findings

SAMPLE = SAMPLE_TRACES / "naive_trim_orphan.jsonl"


def _exported(found: dict) -> dict:
    return {call: [f.export() for f in fs] for call, fs in found.items()}


def test_the_studio_server_takes_what_its_linting_child_stored(tmp_path, monkeypatch):
    from studio import replay_services, view_store

    monkeypatch.setenv(view_store.ENV, str(tmp_path / "views"))
    source = load_any(SAMPLE)
    assert view_store.save(replay_services.RECORDED_FINDINGS, "d1", "openai",
                           findings.recorded_findings_json(source, "openai"))

    class Loaded:
        digest = "d1"
        trace = load_any(SAMPLE)
    replay_services.take_recorded_findings(Loaded, "openai")
    assert "_lint_entries" not in Loaded.trace.meta and "openai" in Loaded.trace.meta["_recorded_findings"]
    assert _exported(findings.recorded_findings(Loaded.trace, "openai")) == \
        _exported(findings.recorded_findings(source, "openai"))
