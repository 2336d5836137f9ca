"""Repair strategies: exact edits on examples, and "a repaired payload lints clean" on random broken payloads."""
from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lint.cases import AC, C, T

from agent_core.lint.repair import (
    PLACEHOLDER,
    STRATEGIES,
    repair_payload,
    repair_request,
)
from agent_core.lint.scan import lint_payload

TOOLS = [{"type": "function", "function": {"name": "get_weather"}}]


U = {"role": "user", "content": "hi"}
A = {"role": "assistant", "content": "done"}


def _errors(messages, tools=None, profile="openai"):
    return [(f.rule, f.index) for f in lint_payload(messages, tools, profile=profile, check_tools=False)
            if f.severity == "error"]


def test_strategies():
    assert STRATEGIES == ("drop", "placeholder", "move")
    with pytest.raises(ValueError, match="unknown repair strategy"):
        repair_payload([U], strategy="magic")


def test_drop_removes_orphans_and_unanswered_calls():
    broken = [{"role": "tool", "tool_call_id": "old", "content": "x"}, U, AC(C("a"), C("b")), T("a"), A]
    result = repair_payload(broken, strategy="drop")
    assert result.messages == [U, AC(C("a")), T("a"), A]
    assert [(e.action, e.index, e.rule, e.tool_call_ids) for e in result.edits] == [
        ("drop", 0, "orphan-tool", ("old",)), ("drop", 2, "missing-tool-result", ("b",))]


def test_drop_removes_an_assistant_left_with_nothing():
    result = repair_payload([U, AC(C("a")), U], strategy="drop")
    assert result.messages == [U, U]
    assert [e.action for e in result.edits] == ["drop", "drop"]


def test_placeholder_keeps_calls():
    result = repair_payload([U, AC(C("a"), C("b")), T("b")], strategy="placeholder")
    assert result.messages == [U, AC(C("a"), C("b")), {"role": "tool", "tool_call_id": "a", "content": PLACEHOLDER},
                               T("b")]
    assert [(e.action, e.index, e.tool_call_ids) for e in result.edits] == [("insert", 1, ("a",))]


def test_move_puts_the_interleaved_message_after_the_run():
    wait = {"role": "user", "content": "wait"}
    result = repair_payload([U, AC(C("a")), wait, T("a"), A], strategy="move")
    assert result.messages == [U, AC(C("a")), T("a"), wait, A]
    assert [(e.action, e.index, e.rule) for e in result.edits] == [("move", 3, "interleaved-message")]


def test_per_message_fixes():
    long_id = "call_" + "z" * 40
    broken = [{"role": "user", "content": None}, AC(C(long_id, name="weather.get", args={"city": "Paris"})),
              T(long_id), {"role": "bot", "content": "?"}, {"role": "assistant", "content": "x", "tool_calls": []}]
    result = repair_payload(broken, strategy="placeholder")
    new_id = result.messages[1]["tool_calls"][0]["id"]
    assert len(new_id) <= 40 and result.messages[2]["tool_call_id"] == new_id
    assert result.messages[0] == {"role": "user", "content": ""}
    assert result.messages[1]["tool_calls"][0]["function"] == {"name": "weather_get", "arguments": '{"city": "Paris"}'}
    assert result.messages[3] == {"role": "assistant", "content": "x"}
    assert len(result.messages) == 4
    assert _errors(result.messages) == []


def test_duplicate_ids_in_one_message_are_split():
    result = repair_payload([U, AC(C("a"), C("a")), T("a"), T("a", "second"), A], strategy="drop")
    ids = [c["id"] for c in result.messages[1]["tool_calls"]]
    assert ids[0] == "a" and ids[1] != "a"
    assert [m.get("tool_call_id") for m in result.messages[2:4]] == ids
    assert _errors(result.messages) == []


def test_missing_tool_call_id_is_filled_when_unambiguous():
    result = repair_payload([U, AC(C("a")), {"role": "tool", "content": "x"}, A], strategy="placeholder")
    assert result.messages[2] == {"role": "tool", "content": "x", "tool_call_id": "a"}


def test_profile_specific_repairs():
    reused = [U, AC(C("abcdefghi")), T("abcdefghi"), A, U, AC(C("abcdefghi")), T("abcdefghi"), A]
    assert _errors(reused, profile="mistral")
    fixed = repair_payload(reused, strategy="drop", profile="mistral").messages
    assert _errors(fixed, profile="mistral") == []
    ollama = repair_payload([U, AC(C("a")), T("a"), A], strategy="drop", profile="ollama").messages
    assert ollama[1]["content"] == "" and _errors(ollama, profile="ollama") == []


def test_repair_request_drops_empty_tools():
    new, edits = repair_request({"model": "m", "messages": [U], "tools": []}, strategy="drop")
    assert new == {"model": "m", "messages": [U]} and [e.rule for e in edits] == ["empty-tools"]


def test_repair_request_keeps_other_keys():
    body = {"model": "m", "messages": [U, AC(C("a"))], "tools": [{"type": "function", "function": {"name": "a b"}}],
            "temperature": 0}
    new, edits = repair_request(body, strategy="drop")
    assert new["model"] == "m" and new["temperature"] == 0 and new["messages"] == [U]
    assert new["tools"][0]["function"]["name"] == "a_b" and body["tools"][0]["function"]["name"] == "a b"
    assert any(e.rule == "invalid-tool-name" and e.index is None for e in edits)
    assert str(edits[0]).startswith("set payload [invalid-tool-name]")


# --- property: every strategy yields a payload without errors, and never touches its input ------------

_IDS = st.sampled_from(["a", "b", "c", "call_" + "q" * 40, ""])


@st.composite
def _call(draw):
    call = {"id": draw(_IDS), "type": "function",
            "function": {"name": draw(st.sampled_from(["get_weather", "bad.name", ""])),
                         "arguments": draw(st.sampled_from(['{"x": 1}', "{}", "nope", "[1]"]))}}
    if draw(st.booleans()) and draw(st.booleans()):
        call["function"]["arguments"] = {"x": 1}
    if draw(st.integers(0, 9)) == 0:
        del call["type"]
    if draw(st.integers(0, 9)) == 0:
        del call["id"]
    return call


@st.composite
def _message(draw):
    kind = draw(st.sampled_from(["user", "system", "text", "calls", "tool", "tool", "tool", "junk"]))
    if kind == "user":
        return {"role": "user", "content": draw(st.sampled_from(["hi", None]))}
    if kind == "system":
        return {"role": "system", "content": "s"}
    if kind == "text":
        return {"role": "assistant", "content": draw(st.sampled_from(["ok", None]))}
    if kind == "calls":
        return {"role": "assistant", "content": draw(st.sampled_from([None, "", "thinking"])),
                "tool_calls": draw(st.lists(_call(), min_size=0, max_size=3))}
    if kind == "tool":
        m = {"role": "tool", "content": draw(st.sampled_from(["r", None]))}
        cid = draw(st.one_of(st.none(), _IDS))
        if cid is not None:
            m["tool_call_id"] = cid
        return m
    return draw(st.sampled_from(["junk", {"role": "robot", "content": "x"}, {"role": "function", "name": "f",
                                                                                "content": "legacy"}]))


@settings(max_examples=250, deadline=None)
@given(st.lists(_message(), min_size=0, max_size=12), st.sampled_from(STRATEGIES))
def test_repaired_payload_lints_clean(messages, strategy):
    payload = [{"role": "user", "content": "start"}] + messages
    before = copy.deepcopy(payload)
    result = repair_payload(payload, strategy=strategy)
    assert payload == before, "repair must not modify its input"
    assert _errors(result.messages) == [], (json.dumps(payload), strategy)
    assert all(isinstance(m, dict) for m in result.messages)
    if not _errors(payload):
        assert result.edits == [] or all(e.rule in ("legacy-function-call",) for e in result.edits)


@settings(max_examples=100, deadline=None)
@given(st.lists(_message(), min_size=0, max_size=10))
def test_repair_under_other_profiles(messages):
    payload = [{"role": "user", "content": "start"}] + messages
    for profile in ("mistral", "ollama", "anthropic"):
        result = repair_payload(payload, strategy="drop", profile=profile)
        assert [e for e in _errors(result.messages, profile=profile)
                if e[0] not in ("user-after-tool", "system-not-first")] == [], profile
