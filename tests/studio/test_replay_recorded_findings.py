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
    monkeypatch.setattr(replay_services, "PROGRESS_CALLS", 0)       # a small trace stands for a big one
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


def test_the_server_takes_the_recorded_matrix_its_linting_child_stored(tmp_path, monkeypatch):
    """The proposed probes' recorded retention matrix, with the stream's probe masks: taken, not computed, and equal
    to the matrix computed from the trace."""
    from agent_core.replay import probes as probes_module
    from studio import replay_services, view_store

    monkeypatch.setenv(view_store.ENV, str(tmp_path / "views"))
    monkeypatch.setattr(replay_services, "PROGRESS_CALLS", 0)       # a small trace stands for a big one

    def loaded(digest: str):
        class Loaded:
            trace = load_any(SAMPLE_TRACES / "long_trimmed_fact.jsonl")
        Loaded.digest = digest
        return Loaded

    replay_services.keep_recorded(loaded("d2"), "openai")
    server = loaded("d2")
    probes = replay_services.parse_probes("\n".join(replay_services.proposed_probes(server)).splitlines())
    assert probes
    expected = probes_module.recorded_retention(loaded("d2").trace, probes).export()
    computed = []
    real = probes_module.recorded_retention
    monkeypatch.setattr(probes_module, "recorded_retention", lambda *a: computed.append(a) or real(*a))
    assert replay_services.recorded_retention(server, probes).export() == expected
    assert computed == []
    other = loaded("d3")        # nothing stored for it: computed
    assert replay_services.recorded_retention(other, probes).export() == expected and len(computed) == 1
