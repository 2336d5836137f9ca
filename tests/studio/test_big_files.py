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


def test_the_first_open_of_a_big_trace_shows_its_steps_once_then_freezes_it(open_studio, tmp_path, monkeypatch):
    import gc
    import uuid

    from agent_core.trace.writer import write_trace
    from studio import opening

    trace = synthetic_trace(30)
    trace.meta["run"] = uuid.uuid4().hex            # a digest no earlier test has opened
    trace.meta["padding"] = "x" * 1_100_000          # over 1 MB: the path of big files (hashed once, parsed cached)
    path = tmp_path / "long.jsonl"
    write_trace(trace, path)
    size = path.stat().st_size
    assert size > 1_000_000
    monkeypatch.setattr(opening, "BIG_CALLS", 20)      # 30 calls count as big here, and so does the file
    monkeypatch.setattr(opening, "BIG_BYTES", 1)
    shown: list[str] = []
    real = opening._progress
    monkeypatch.setattr(opening, "_progress", lambda bar, value, text: shown.append(text) or real(bar, value, text))
    frozen = gc.get_freeze_count()
    try:
        at = open_studio(path, "screens/timeline.py")
        assert not at.exception and at.metric[0].value == "30"
        assert [t for t in shown if "MB" in t and "parsing" in t] == [f"Reading and parsing {size / 1e6:,.1f} MB …"]
        steps = [t for t in shown if "30 calls" in t]
        assert steps == [f"{label} (30 calls, {size / 1e6:,.1f} MB) …"
                         for label in ("Linting", "Building the call table")], shown   # tokens: in the background
        assert gc.get_freeze_count() > frozen
        before = len(shown)
        at.switch_page("screens/tokens.py").run()
        at.switch_page("screens/timeline.py").run()
        assert not at.exception and len(shown) == before        # drawn once per trace and profile
    finally:
        gc.unfreeze()


def test_a_line_logs_first_read_draws_its_progress_in_the_main_area(open_studio, tmp_path, monkeypatch):
    import uuid

    from streamlit.proto.RootContainer_pb2 import RootContainer

    from studio import opening

    trace = synthetic_trace(160)
    path = tmp_path / "requests.jsonl"
    with open(path, "w", encoding="utf-8") as f:      # a digest no earlier test has read
        f.write(json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": uuid.uuid4().hex}]}) + "\n")
        f.writelines(json.dumps(c.request, ensure_ascii=False) + "\n" for c in trace.calls)
    assert path.stat().st_size > 1_000_000
    where: list[tuple[int, str]] = []
    real = opening._progress
    monkeypatch.setattr(opening, "_progress",
                        lambda bar, value, text: where.append((bar._root_container, text)) or real(bar, value, text))
    at = open_studio(path, "screens/timeline.py")
    assert not at.exception
    reads = [(root, text) for root, text in where if text.startswith("Reading ")]
    assert reads and {root for root, _ in reads} == {RootContainer.MAIN}, where     # not under the sidebar's picker
    assert reads[-1][1].endswith(" calls") and "MB" in reads[-1][1]
