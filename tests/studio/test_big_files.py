"""A payload log over the input limit opens in the studio (streamed), and a rerun does not read it again."""
from __future__ import annotations

import json

from agent_core.core import limits
from agent_core.trace.synthetic import synthetic_trace
from studio import services


def test_a_line_log_over_the_limit_opens_and_is_read_once(open_studio, tmp_path, monkeypatch):
    trace = synthetic_trace(160)
    path = tmp_path / "requests.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(c.request, ensure_ascii=False) + "\n" for c in trace.calls)
    assert path.stat().st_size > 1_000_000
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 1024 * 1024)     # the file is over it
    reads = []
    real = services._importers.load_any
    monkeypatch.setattr(services._importers, "load_any", lambda *a, **k: reads.append(a) or real(*a, **k))
    at = open_studio(path, "screens/timeline.py")
    assert at.metric[0].value == "160"
    at.run()
    at.switch_page("screens/tokens.py").run()
    assert not at.exception and len(reads) == 1
