"""Exports: payload JSON, curl (run for real), a pytest file (run in a subprocess), JSONL, HTML."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.chat.agent import Agent
from agent_core.chat.client import Endpoint, LLMClient
from agent_core.chat.memory import ShortTermMemory
from agent_core.cli.main import main
from agent_core.export.formats import (
    ExportError,
    call_curl,
    call_json,
    call_pytest,
    export_trace,
    html_report,
    payloads_jsonl,
)
from agent_core.ingest.payload_log import trace_from_requests
from agent_core.trace.reader import read_trace
from agent_core.trace.writer import TraceWriter

KEY = "sk-proj-exportTestKey0123456789abcdef"
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def recorded(demo_server, tmp_path):
    """A real trace: the agent over the SDK against the demo model, a key configured."""
    path = tmp_path / "chat.jsonl"
    writer = TraceWriter(path, secrets=[KEY])
    client = LLMClient(Endpoint(base_url=demo_server.base_url, model="demo", api_key=KEY), recorder=writer,
                       max_retries=0)
    agent = Agent(client, ShortTermMemory(recorder=writer, system_prompt="你是一个助手。"))
    for turn in ["我叫小明，电话 13800138000", "帮我查一下成都天气", "it's Tom's turn: what's my name?"]:
        agent.chat(turn)
    writer.close()
    demo_server.received.clear()
    return path


def _compact(body) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def test_json_is_the_exact_payload(recorded):
    trace = read_trace(recorded)
    for i, c in enumerate(trace.calls):
        text = call_json(trace, i)
        assert json.loads(text) == c.request and list(json.loads(text)) == list(c.request)
    assert json.loads(call_json(trace)) == trace.calls[-1].request       # default: the last call
    with pytest.raises(ExportError, match=r"no call 9; the trace has calls 0\.\.3"):
        call_json(trace, 9)


@pytest.mark.skipif(not shutil.which("curl"), reason="curl is not installed")
def test_curl_has_no_key_and_resends_the_exact_bytes(recorded, demo_server):
    trace = read_trace(recorded)
    command = call_curl(trace, 3)
    assert KEY not in command and "$OPENAI_API_KEY" in command
    assert command.startswith(f'curl "${{OPENAI_BASE_URL:-{demo_server.base_url}}}/chat/completions"')
    assert "Tom'\\''s" in command                        # the single quote survives shell quoting
    env = {"PATH": os.environ["PATH"], "OPENAI_BASE_URL": demo_server.base_url, "OPENAI_API_KEY": "sk-anything"}
    out = subprocess.run(["sh", "-c", command], capture_output=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert demo_server.received == [_compact(trace.calls[3].request)]
    assert json.loads(out.stdout)["choices"][0]["message"]["content"] == "Your name is 小明."


def _run_pytest(path: Path, env_extra: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHAIN_STUDIO_", "PYTEST_"))}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
                          capture_output=True, text=True, cwd=path.parent, env=env, timeout=120)


def test_generated_pytest_passes_against_the_demo_model(recorded, demo_server, tmp_path):
    trace = read_trace(recorded)
    source = call_pytest(trace, 1)
    assert KEY not in source and "OPENAI_API_KEY" in source
    test_file = tmp_path / "gen" / "test_call_1.py"
    test_file.parent.mkdir()
    test_file.write_text(source, encoding="utf-8")
    result = _run_pytest(test_file, {"OPENAI_BASE_URL": demo_server.base_url, "OPENAI_API_KEY": "sk-anything"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert demo_server.received == [_compact(trace.calls[1].request)]
    # with no endpoint configured it starts the bundled demo model itself
    result = _run_pytest(test_file, {})
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout + result.stderr


def test_generated_pytest_fails_while_the_payload_is_rejected(demo_server, tmp_path):
    orphan = {"model": "demo", "messages": [{"role": "user", "content": "hi"},
                                            {"role": "tool", "tool_call_id": "call_x", "content": "42"}]}
    trace = trace_from_requests([orphan], [{"error": {"message": "messages with role 'tool' must be a response"}}],
                                statuses=[400])
    test_file = tmp_path / "test_rejected.py"
    test_file.write_text(call_pytest(trace, 0), encoding="utf-8")
    assert "Recorded outcome: HTTP 400" in test_file.read_text(encoding="utf-8")
    result = _run_pytest(test_file, {"OPENAI_BASE_URL": demo_server.base_url})
    assert result.returncode == 1
    assert "HTTP 400" in result.stdout and "must be a response to a preceeding message" in result.stdout


def test_payload_jsonl_and_trace_jsonl_round_trip(recorded, tmp_path):
    trace = read_trace(recorded)
    lines = payloads_jsonl(trace).splitlines()
    assert [json.loads(line) for line in lines] == [c.request for c in trace.calls]
    again = trace_from_requests([json.loads(line) for line in lines])
    assert [c.request for c in again.calls] == [c.request for c in trace.calls]
    out = export_trace(trace, "trace", output=tmp_path / "copy.jsonl")
    copy = read_trace(out)
    assert [c.request for c in copy.calls] == [c.request for c in trace.calls]
    assert [m.to_openai() for m in copy.stream] == [m.to_openai() for m in trace.stream]
    with pytest.raises(ExportError, match="give -o OUT"):
        export_trace(trace, "trace")


def _hostile_trace():
    tool_call = {"id": "call_1", "type": "function",
                 "function": {"name": HOSTILE, "arguments": json.dumps({"q": HOSTILE})}}
    b0 = {"model": "m", "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": HOSTILE,
                                                                             "name": HOSTILE}]}
    b1 = {"model": "m", "messages": b0["messages"] + [{"role": "assistant", "content": None, "tool_calls": [tool_call]},
                                                      {"role": "tool", "tool_call_id": "call_1", "content": HOSTILE},
                                                      {"role": "tool", "tool_call_id": "call_2", "content": "orphan"}]}
    responses = [{"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [tool_call]}}],
                  "usage": {"prompt_tokens": 40, "completion_tokens": 5}},
                 {"error": {"message": HOSTILE}}]
    trace = trace_from_requests([b0, b1], responses, statuses=[200, 400], source=f"/tmp/{HOSTILE}.jsonl")
    return trace


def test_html_report_escapes_everything_and_loads_nothing(tmp_path):
    page = html_report(_hostile_trace())
    assert "<script" not in page.lower()
    assert re.search(r"<img|<iframe|<link|<object|<embed|@import|url\(", page, re.I) is None
    assert re.search(r"""<[a-z][^>]*\s(?:src|href|action|srcset|style)\s*=""", page, re.I) is None   # in any tag
    assert "http://" not in page and "https://" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # timeline, findings, token chart
    assert page.count("<details>") == 2 and "HTTP 400" in page
    assert page.count("<svg") == 1 and page.count("<rect") > 4
    assert "(API: 40)" in page
    assert "unknown-tool-call-id" in page and "invalid-tool-name" in page     # the linter's findings on call 1


def test_redacted_exports_hold_no_pii(recorded):
    trace = read_trace(recorded)
    for fmt in ("json", "curl", "pytest", "payloads", "html", "otlp"):
        text = export_trace(trace, fmt, call=3, redact=True)
        assert "13800138000" not in text, fmt
        assert "<PHONE_1>" in text or "&lt;PHONE_1&gt;" in text, fmt
    assert "13800138000" in export_trace(trace, "json", call=3)         # and only when asked


def test_cli_export(recorded, tmp_path, capsys):
    assert main(["export", str(recorded), "--as", "json", "--call", "0"]) == 0
    assert json.loads(capsys.readouterr().out) == read_trace(recorded).calls[0].request
    report = tmp_path / "report.html"
    assert main(["export", str(recorded), "--as", "html", "--redact", "-o", str(report)]) == 0
    assert f"wrote {report}" in capsys.readouterr().err
    text = report.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "13800138000" not in text and KEY not in text
    assert main(["export", str(recorded), "--as", "trace", "-o", str(recorded)]) == 1
    assert capsys.readouterr().err.strip().endswith("refusing to overwrite the input; choose another -o")
    assert main(["export", str(recorded), "--as", "curl", "--call", "12"]) == 1
    assert "no call 12" in capsys.readouterr().err


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is not installed")
def test_html_report_opens_from_a_file_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    path = tmp_path / "report.html"
    path.write_text(html_report(_hostile_trace()), encoding="utf-8")
    requests, dialogs = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        title = page.title()
        heading = page.inner_text("h1")
        rects = page.locator("svg rect").count()
        browser.close()
    assert requests == [path.as_uri()] and dialogs == []
    assert title.startswith("Chain Studio report") and HOSTILE in heading
    assert rects > 4


def test_every_sample_trace_reports_every_call_and_memory_event(sample_traces):
    for path in sorted(sample_traces.glob("*.jsonl")):
        trace = read_trace(path)
        page = html_report(trace)
        assert page.count("<details>") == len(trace.calls), path.name
        assert page.count('<p class="dim">memory: ') == len(trace.events), path.name
        assert page.count("<rect") >= len(trace.calls), path.name


def test_enumerated_options_are_validated_by_the_parser(capsys):
    """`export --profile nope` (and every other enumerated option) exits 2 with argparse's one-line usage error."""
    sample = str(Path(__file__).resolve().parents[2] / "sample_traces" / "classic_remembers.jsonl")
    for argv in (["export", sample, "--as", "html", "--profile", "nope"], ["export", sample, "--as", "yaml"],
                 ["lint", sample, "--profile", "nope"], ["replay", sample, "--policy", "nope"],
                 ["replay", sample, "--policy", "keep-all", "--price-as", "nope"],
                 ["repair", sample, "--strategy", "nope"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2, argv
        assert "invalid choice: 'nope'" in capsys.readouterr().err or argv[3] == "yaml"
