"""``chain-studio lint`` and ``chain-studio repair``: exit codes, JSON schema, one-line errors, call counting."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from agent_core.cli.main import main
from agent_core.core.paths import SAMPLE_TRACES

U = {"role": "user", "content": "hi"}
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]}
RES = {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
A = {"role": "assistant", "content": "ok"}
TOOLS = [{"type": "function", "function": {"name": "get_weather"}}]


def _write(tmp_path, name, value) -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return str(path)


def _lint_json(capsys, *args) -> tuple[int, dict]:
    code = main(["lint", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_clean_file_exits_0(tmp_path, capsys):
    path = _write(tmp_path, "ok.json", {"model": "m", "messages": [U, CALL, RES, A], "tools": TOOLS})
    code, report = _lint_json(capsys, path)
    assert code == 0 and report["calls"] == 1 and report["findings"] == []


def test_errors_exit_1_with_schema(tmp_path, capsys):
    path = _write(tmp_path, "bad.json", [U, CALL, U])
    code, report = _lint_json(capsys, path)
    assert code == 1 and report["calls"] == 1
    (finding,) = [f for f in report["findings"] if f["severity"] == "error"]
    assert {"rule", "severity", "call", "index", "message", "api_error", "fix", "tool_call_ids"} <= set(finding)
    assert (finding["rule"], finding["call"], finding["index"], finding["tool_call_ids"]) == (
        "missing-tool-result", 0, 1, ["call_1"])
    assert finding["api_error"].endswith("did not have response messages: call_1")
    assert finding["path"] == "messages[1].tool_calls[0]"      # the call left without a result


def test_warnings_only_exit_0(tmp_path, capsys):
    path = _write(tmp_path, "warn.json", {"model": "m", "messages": [U, CALL, RES, U], "tools": TOOLS})
    code, report = _lint_json(capsys, path)
    assert code == 0 and [f["rule"] for f in report["findings"]] == ["user-after-tool"]


def test_classic_flow_is_a_note_under_openai_and_an_error_under_bedrock(capsys):
    # The bundled "good" sample: its second call sends the tool history without tools, as the classic flow does.
    path = str(SAMPLE_TRACES / "classic_remembers.jsonl")
    code, report = _lint_json(capsys, path)
    assert code == 0 and (report["errors"], report["warnings"], report["notes"]) == (0, 0, 1)
    assert [(f["rule"], f["severity"], f["call"]) for f in report["findings"]] == [
        ("tools-missing-for-history", "info", 2)]
    assert main(["lint", path]) == 0
    text = capsys.readouterr().out
    assert "0 errors, 0 warnings, 1 notes" in text and "warning tools-missing" not in text
    code, report = _lint_json(capsys, path, "--profile", "bedrock")
    assert code == 1 and report["errors"] == 1
    [finding] = report["findings"]
    assert finding["api_error"] == ("The toolConfig field must be defined when using toolUse and toolResult "
                                    "content blocks.")
    assert main(["lint", path, "--profile", "bedrock"]) == 1
    assert "    bedrock says: The toolConfig field must be defined" in capsys.readouterr().out


def test_profile_changes_the_verdict(tmp_path, capsys):
    path = _write(tmp_path, "warn.json", {"model": "m", "messages": [U, CALL, RES, U], "tools": TOOLS})
    code, report = _lint_json(capsys, path, "--profile", "mistral")
    assert code == 1
    assert {f["rule"] for f in report["findings"] if f["severity"] == "error"} == {"user-after-tool",
                                                                                   "invalid-tool-call-id"}


def test_call_counting(tmp_path, capsys):
    lines = "\n".join(json.dumps({"model": "m", "messages": [U] + [A, U] * k}) for k in range(3)) + "\n"
    assert _lint_json(capsys, _write(tmp_path, "log.jsonl", lines))[1]["calls"] == 3
    records = [{"traj": [U, CALL, RES, A, U, A]}, {"traj": [U, A]}]
    assert _lint_json(capsys, _write(tmp_path, "conv.json", records))[1]["calls"] == 4
    assert _lint_json(capsys, _write(tmp_path, "one.json", [U, A, U]))[1]["calls"] == 1


def _proxy_other_file(demo_server, tmp_path):
    """The proxy's ``other.jsonl``, made by the real openai SDK through the real proxy: GET /v1/models and an
    embeddings request (the demo model answers 404)."""
    import openai

    from agent_core.serve.proxy import RecordingProxy

    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key="sk-test", max_retries=0)
        client.models.list()
        with pytest.raises(openai.NotFoundError):
            client.embeddings.create(model="demo", input="hi")
    return tmp_path / "proxy" / "other.jsonl"


def test_one_count_for_a_file_of_other_exchanges(demo_server, tmp_path, capsys):
    """lint, export and replay count the same calls, and say that they are not chat completions."""
    path = _proxy_other_file(demo_server, tmp_path)
    index = [json.loads(line) for line in (path.parent / "index.jsonl").read_text().splitlines()]
    expected = [e for e in index if e["file"] == "other.jsonl"]
    assert [(e["method"], e["path"]) for e in expected] == [("GET", "/v1/models"), ("POST", "/v1/embeddings")]
    code, report = _lint_json(capsys, str(path))
    assert code == 0 and report["calls"] == len(expected) and report["findings"] == []
    note = ("2 of 2 calls are not chat completions (GET /v1/models, POST /v1/embeddings): they are shown as "
            "recorded; there are no messages in them to lint or replay")
    assert report["loader_warnings"] == [note]
    assert main(["lint", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: chain-studio, 2 calls, profile openai: 0 errors, 0 warnings", f"  note: {note}"]
    assert main(["export", str(path), "--as", "payloads"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(expected)
    assert main(["replay", str(path), "--policy", "keep-all"]) == 0
    totals = json.loads(capsys.readouterr().out)["totals"]
    assert (totals["calls"], totals["replayed_calls"]) == (len(expected), 0)
    assert main(["replay", str(path), "--policy", "keep-all", "--format", "text"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(
        "totals: 2 calls, 0 replayed (not replayed: other calls), 0 tokens")


def test_text_report(tmp_path, capsys):
    path = _write(tmp_path, "bad.json", [U, CALL, U])
    assert main(["lint", path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: messages, 1 calls, profile openai: 1 errors, 0 warnings"
    assert out[1] == ("call 0, message 1: error missing-tool-result: The assistant message at index 1 called call_1, "
                      "but no tool result for it follows (a user message comes next, at index 2).")
    assert out[2].startswith("    openai says: An assistant message with 'tool_calls' must be followed")
    assert out[3].startswith("    fix: ")


@pytest.mark.parametrize("content,where", [('[{"role": "user",\n "content": }]', ":2:13: invalid JSON"),
                                           ("", ":1:1: the input is empty")])
def test_unreadable_exits_2_with_one_line(tmp_path, content, where):
    path = _write(tmp_path, "broken.json", content)
    done = subprocess.run([sys.executable, "-m", "agent_core.cli", "lint", path], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"chain-studio: {path}{where}")


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["lint", str(tmp_path / "nope.json")]) == 2
    assert "nope.json" in capsys.readouterr().err


def test_real_tau_bench_via_subprocess(real_traces):
    path = real_traces / "tau-bench-gpt-4o-airline" / "gpt-4o-airline.sample.json"
    done = subprocess.run([sys.executable, "-m", "agent_core.cli", "lint", str(path), "--format", "json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["calls"] == 619 and report["errors"] == 0
    mistral = subprocess.run([sys.executable, "-m", "agent_core.cli", "lint", str(path), "--profile", "mistral"],
                             capture_output=True, text=True)
    assert mistral.returncode == 1 and "duplicate-tool-call-id" in mistral.stdout


def test_repair_writes_a_copy_and_never_overwrites(tmp_path, capsys):
    path = _write(tmp_path, "bad.json", [U, CALL, U])
    digest = hashlib.sha256((tmp_path / "bad.json").read_bytes()).hexdigest()
    assert main(["repair", path, "--strategy", "placeholder"]) == 0
    out_path = tmp_path / "bad.repaired.json"
    assert capsys.readouterr().out.startswith(f"{out_path}: 1 edits in 1 payload(s), strategy placeholder")
    repaired = json.loads(out_path.read_text())
    assert repaired[2]["role"] == "tool" and repaired[2]["tool_call_id"] == "call_1"
    assert hashlib.sha256((tmp_path / "bad.json").read_bytes()).hexdigest() == digest
    assert main(["lint", str(out_path)]) == 0
    capsys.readouterr()
    assert main(["repair", path, "--strategy", "drop", "-o", path]) == 1
    assert "refusing to overwrite" in capsys.readouterr().err
    assert hashlib.sha256((tmp_path / "bad.json").read_bytes()).hexdigest() == digest


def test_repair_jsonl_and_conversations(tmp_path, capsys):
    lines = "\n".join(json.dumps({"model": "m", "messages": m}) for m in ([U, CALL], [U, CALL, U])) + "\n"
    path = _write(tmp_path, "log.jsonl", lines)
    out = tmp_path / "fixed.jsonl"
    assert main(["repair", path, "--strategy", "drop", "-o", str(out)]) == 0
    bodies = [json.loads(line) for line in out.read_text().splitlines()]
    assert [b["messages"] for b in bodies] == [[U], [U, U]] and bodies[0]["model"] == "m"
    conv = _write(tmp_path, "conv.json", [{"task_id": 1, "traj": [U, CALL, U, A]}])
    assert main(["repair", conv, "--strategy", "drop"]) == 0
    records = json.loads((tmp_path / "conv.repaired.json").read_text())
    assert records == [{"name": "task 1", "messages": [U, U, A]}]
    capsys.readouterr()


def test_text_output_names_the_responses_input_item(tmp_path, capsys):
    # the orphan function_call_output is item 1 of `input`; "instructions" is no input item
    body = {"model": "gpt-4.1", "instructions": "be brief", "input": [
        {"role": "user", "content": "hi"}, {"type": "function_call_output", "call_id": "call_A", "output": "x"}]}
    path = _write(tmp_path, "responses.json", body)
    assert main(["lint", path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("call 0, input[1]: error responses-orphan-output: ")
    assert "message 1" not in out[1].split(":")[0]
