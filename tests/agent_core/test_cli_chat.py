"""The real ``chain-studio chat`` command, scripted through stdin."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agent_core.core.errors import UnsupportedTraceVersion
from agent_core.core.paths import PROJECT_ROOT
from agent_core.trace.reader import read_trace

SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"


def _run_chat(args, stdin, env_extra, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "agent_core.cli", "chat", *args], input=stdin, text=True,
                          capture_output=True, env=env, cwd=cwd, timeout=120)


def test_scripted_chat_with_a_key_records_a_trace_without_the_key(demo_server, tmp_path):
    trace_path = tmp_path / "session.jsonl"
    result = _run_chat(["--trace", str(trace_path), "--api-key", SECRET, "--base-url", demo_server.base_url,
                        "--max-messages", "6"],
                       "我叫小明\n帮我查一下成都天气\n/history\n/clear\n我刚才说我叫什么名字？\n/exit\n",
                       {}, tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "你好，小明" in out and "成都现在多云" in out and "tokens)" in out
    assert "没有告诉" in out                       # /clear made it forget
    trace = read_trace(trace_path)
    assert len(trace.calls) == 4
    assert [e.event.type for e in trace.events][-1] == "clear"
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    assert SECRET not in out and SECRET not in result.stderr


def test_chat_without_key_uses_the_in_process_demo_model(tmp_path):
    result = _run_chat([], "帮我查一下北京天气\n", {}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "北京现在晴" in result.stdout
    recorded = list((tmp_path / "traces").glob("*.jsonl"))
    assert len(recorded) == 1 and len(read_trace(recorded[0]).calls) == 2
    assert "bundled demo model" in result.stderr


def test_chat_reports_endpoint_errors_and_goes_on(demo_server, tmp_path):
    # nothing listens on port 9: every call fails with a refused connection
    result = _run_chat(["--trace", str(tmp_path / "t.jsonl"), "--base-url", "http://127.0.0.1:9/v1"],
                       "你好\n再见\n", {}, tmp_path)
    assert result.returncode == 0
    assert result.stdout.count("error: could not connect to 127.0.0.1:9") == 2
    trace = read_trace(tmp_path / "t.jsonl")
    assert len(trace.calls) == 2 and all(c.failed and c.status is None for c in trace.calls)


@pytest.mark.parametrize("name, error", [("future_version", UnsupportedTraceVersion),
                                         ("missing_version", UnsupportedTraceVersion)])
def test_broken_fixtures_are_refused(name, error):
    with pytest.raises(error):
        read_trace(PROJECT_ROOT / "tests" / "fixtures" / "traces" / "broken" / f"{name}.jsonl")


def test_torn_fixture_loads_its_complete_events():
    trace = read_trace(PROJECT_ROOT / "tests" / "fixtures" / "traces" / "broken" / "torn_tail.jsonl")
    assert trace.warnings and trace.stream


def test_open_missing_file_is_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "agent_core.cli", "open", str(tmp_path / "nope.jsonl")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "no such file" in result.stderr


def test_chat_records_into_chain_studio_traces_dir_like_the_studio_lists(tmp_path):
    """Without --trace, `chat` records into $CHAIN_STUDIO_TRACES_DIR (the folder the studio lists), not ./traces."""
    traces = tmp_path / "recordings"
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    result = _run_chat([], "我叫小明\n/exit\n", {"CHAIN_STUDIO_TRACES_DIR": str(traces)}, cwd)
    assert result.returncode == 0, result.stderr
    recorded = list(traces.glob("*.jsonl"))
    assert len(recorded) == 1 and len(read_trace(recorded[0]).calls) == 1
    assert not (cwd / "traces").exists()


def test_a_chat_resumed_five_times_appends_calls_numbered_in_order(tmp_path):
    from agent_core.lint.scan import lint_trace

    path = tmp_path / "same.jsonl"
    cities = ["成都", "北京", "上海", "广州", "深圳"]
    for city in cities:            # five separate processes, one line each, the bundled demo model
        result = _run_chat(["--trace", str(path)], f"帮我查一下{city}天气\n", {}, tmp_path)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
    trace = read_trace(path)
    # each turn is a tool call and the answer: 2 calls per session, none filed as a retry of an earlier one
    assert [c.index for c in trace.calls] == list(range(10))
    assert [(a.call, a.attempt) for c in trace.calls for a in c.attempts] == [(n, 1) for n in range(10)]
    asked = [next(m["content"] for m in reversed(c.messages) if m["role"] == "user") for c in trace.calls]
    assert asked == [f"帮我查一下{city}天气" for city in cities for _ in range(2)]
    assert [c.started_at for c in trace.calls] == sorted(c.started_at for c in trace.calls)
    assert path.read_text(encoding="utf-8").count('"type":"header"') == 1
    assert [f for f in lint_trace(trace) if f.severity == "error"] == []
    assert all(c.bytes_verified for c in trace.calls)


def test_a_second_writer_on_a_trace_in_use_is_refused_in_one_line(tmp_path):
    from agent_core.trace.writer import TraceInUseError, TraceWriter

    path = tmp_path / "busy.jsonl"
    with TraceWriter(path) as writer:
        before = path.read_bytes()
        with pytest.raises(TraceInUseError, match="another chain-studio process is recording"):
            TraceWriter(path)
        result = _run_chat(["--trace", str(path)], "你好\n", {}, tmp_path)
        assert result.returncode != 0
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert result.stderr.startswith(f"chain-studio: {path}: another chain-studio process is recording")
        assert path.read_bytes() == before        # nothing interleaved
        assert writer.first_call == 0
    with TraceWriter(path) as again:             # released on close
        assert again.first_call == 0
