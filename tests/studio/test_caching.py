"""Switching pages recomputes nothing: every view model is cached by the trace's content hash."""
from __future__ import annotations

import collections
import functools
import shutil
import uuid

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest import detect as importers
from agent_core.replay import engine as replay
from agent_core.replay import probes as probes_core
from studio.viewmodels import findings as findings_view
from studio.viewmodels import lineage as lineage_view
from studio.viewmodels import timeline as timeline_view
from studio.viewmodels import tokens as tokens_view

# the functions that do a screen's work; services/replay_services call them through the module
COUNTED = [(importers, "parse_any"), (tokens_view, "token_series"), (findings_view, "findings_for"),
           (timeline_view, "timeline_rows"), (replay, "replay"), (lineage_view, "turns"),
           (tokens_view, "largest_messages"), (probes_core, "replay_retention"),
           (tokens_view, "truncation_suspects"), (tokens_view, "tool_result_share"), (tokens_view, "reported_field")]
VISITS = ["screens/traces.py", "screens/timeline.py", "screens/tokens.py", "screens/lint.py", "screens/lineage.py",
          "screens/replay.py"]


def test_second_visit_of_every_page_recomputes_nothing(open_studio, monkeypatch, tmp_path):
    # a copy with a unique header makes a digest no earlier test has cached
    path = tmp_path / "classic.jsonl"
    shutil.copy(SAMPLE_TRACES / "classic_remembers.jsonl", path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"meta":{', f'"meta":{{"run":"{uuid.uuid4().hex}",', 1), encoding="utf-8")
    calls: collections.Counter = collections.Counter()
    for module, name in COUNTED:
        original = getattr(module, name)

        @functools.wraps(original)
        def counted(*args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)
        monkeypatch.setattr(module, name, counted)

    at = open_studio(path)
    for page in VISITS:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
    first = dict(calls)
    # the home page summarises every listed trace once (the samples too); each page did its work once
    assert first["parse_any"] >= 1 and first["token_series"] >= 1 and first["replay"] >= 1, first
    assert first["timeline_rows"] == 1 and first["largest_messages"] == 1, first
    assert first["truncation_suspects"] == first["tool_result_share"] == first["reported_field"] == 1, first
    assert first["replay_retention"] == first["replay"] >= 2, first    # one matrix per replayed policy
    for page in VISITS:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
    assert dict(calls) == first, "a second visit recomputed something"
