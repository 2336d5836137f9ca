"""The verdict matrix on the Lint page (AppTest) and its view model."""
from __future__ import annotations

from agent_core.core.paths import PROJECT_ROOT
from agent_core.ingest.detect import load_any
from agent_core.lint.profiles import PROFILES
from studio.viewmodels import verdicts as vm

CHAIN = PROJECT_ROOT / "tests" / "fixtures" / "verdicts" / "anthropic_unanswered_tool_use.json"


def test_view_model_rows():
    trace = load_any(CHAIN)
    rows = vm.trace_matrix(trace)
    assert [r["provider"] for r in rows] == list(PROFILES)
    by = {r["provider"]: r for r in rows}
    assert by["ollama"]["verdict"] == "accepted" and by["ollama"]["text"] == ""
    assert by["anthropic"]["verdict"] == "rejected" and by["anthropic"]["location"] == "messages[1].content[1]"
    assert by["anthropic"]["text"].startswith("messages.1: `tool_use` ids were found without `tool_result` blocks")
    assert by["bedrock"]["text"] == "(text not documented)"
    assert vm.call_matrix(trace) == [{"call": 0, **{p: "ok" if by[p]["verdict"] == "accepted" else "missing-tool-result"
                                                    for p in PROFILES}}]


def test_lint_page_shows_the_matrix(open_studio):
    at = open_studio(CHAIN, "screens/lint.py")
    frames = [d.value for d in at.dataframe]
    table = next(f for f in frames if "provider" in f.columns)     # AppTest finds dataframes by position only
    assert list(table["provider"]) == list(PROFILES)
    assert list(table["verdict"]) == [r["verdict"] for r in vm.trace_matrix(load_any(CHAIN))]
    calls = next(f for f in frames if "vllm" in f.columns)
    assert list(calls.columns) == ["call", *PROFILES] and list(calls["call"]) == [0]
