"""A message the linter has seen at one position is reported where it sits in each later payload.

``lint_trace`` derives each distinct message into a chain entry once and feeds
it at whatever index it has in each payload (a windowed replay shifts every
message on every call). The hand-written paths below follow from the payloads;
the case sweep checks every rule against linting each payload on its own, which
derives every entry afresh at its true position.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lint.cases import AC, CASES, TOOLS, A, C, S, T, U

from agent_core.apis.base import api_for_body
from agent_core.apis.chain import relocate
from agent_core.apis.chat_completions import CHAT_COMPLETIONS
from agent_core.lint.scan import lint_request, lint_trace
from agent_core.trace.model import Call, Trace


def _trace(bodies: list[dict]) -> Trace:
    return Trace(source="<test>", format="test", calls=[Call(index=k, request=b) for k, b in enumerate(bodies)])


def _found(findings) -> list[tuple[int, str, int | None, str]]:
    return [(f.call, f.rule, f.index, f.path) for f in findings]


def test_a_window_that_slides_reports_each_finding_at_the_new_index() -> None:
    call = AC(C("a"), C("b"))                      # b is never answered
    first = [U(), call, T("a"), A()]
    slid = [call, T("a"), A(), U("next")]          # the same objects, one place earlier (max-messages)
    grown = [U("x"), U("y"), *first]               # two places later
    found = lint_trace(_trace([{"messages": m, "tools": TOOLS} for m in (first, slid, grown)]))
    assert _found(f for f in found if f.rule == "missing-tool-result") == [
        (0, "missing-tool-result", 1, "messages[1].tool_calls[1]"),
        (1, "missing-tool-result", 0, "messages[0].tool_calls[1]"),
        (2, "missing-tool-result", 3, "messages[3].tool_calls[1]")]
    assert [f.message for f in found if f.rule == "missing-tool-result"][1].startswith(
        "The assistant message at index 0 called b")


def test_shifted_orphans_interleaving_and_order_name_their_new_places() -> None:
    call, late, wait = AC(C("a"), C("b")), T("a"), U("wait")
    first = [U(), call, wait, late, A()]            # a user message cuts the run; a answered late, b never
    slid = first[1:]
    orphaned = first[3:] + [T("b")]                 # the call was trimmed away: its results are orphans
    found = lint_trace(_trace([{"messages": m, "tools": TOOLS} for m in (first, slid, orphaned)]))
    assert [(c, r, i, p) for c, r, i, p in _found(found) if r != "user-after-tool"] == [
        (0, "missing-tool-result", 1, "messages[1].tool_calls[1]"),
        (0, "interleaved-message", 2, "messages[2]"),
        (1, "missing-tool-result", 0, "messages[0].tool_calls[1]"),
        (1, "interleaved-message", 1, "messages[1]"),
        (2, "orphan-tool", 0, "messages[0]"),
        (2, "orphan-tool", 2, "messages[2]")]
    assert "(a user message comes next, at index 1)" in found[2].message
    reordered = [AC(C("a"), C("b")), T("b"), T("a"), A()]
    found = lint_trace(_trace([{"messages": m} for m in ([U(), *reordered], [S(), U(), U(), *reordered])]),
                       profile="vllm")           # servers that pair by position warn about the order
    assert [(f.call, f.index, f.path) for f in found if f.rule == "results-out-of-order"] == [
        (0, 1, "messages[1].tool_calls"), (1, 3, "messages[3].tool_calls")]


def _variants(messages: list) -> list[list]:
    """The case's payload at other positions, every message the same object as in the case."""
    pad = [U("earlier"), A("ok")]
    return [messages, pad + messages, messages[1:], [U("again")] + messages[2:], messages + [U("later")],
            messages[1:] + pad + messages[:1]]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_case_at_every_shift_says_what_linting_each_payload_alone_says(case) -> None:
    bodies = []
    for messages in _variants(case.messages):
        body = {"model": "deepseek-reasoner" if case.thinking else "gpt-4o", "messages": messages}
        if case.tools is not None:
            body["tools"] = case.tools
        bodies.append(body)
    alone = [f for k, b in enumerate(bodies) for f in lint_request(b, profile=case.profile, call=k)]
    assert lint_trace(_trace(bodies), profile=case.profile) == alone


_ids = st.one_of(st.text(max_size=3), st.integers(), st.none())
_call = st.one_of(st.integers(), st.fixed_dictionaries({"id": _ids}, optional={
    "type": st.just("function"), "function": st.one_of(st.none(), st.fixed_dictionaries(
        {}, optional={"name": st.text(max_size=3), "arguments": st.text(max_size=3)}))}))
_message = st.one_of(st.integers(), st.lists(st.none(), max_size=1), st.fixed_dictionaries({}, optional={
    "role": st.sampled_from(["user", "assistant", "tool", "function", "nope"]), "content": st.one_of(st.none(),
    st.text(max_size=3)), "tool_calls": st.one_of(st.none(), st.lists(_call, max_size=3)), "tool_call_id": _ids,
    "function_call": st.one_of(st.none(), st.integers(), st.fixed_dictionaries({"name": st.text(max_size=3)})),
    "reasoning_content": st.text(max_size=3)}))


@settings(max_examples=200, deadline=None)
@given(_message, st.integers(0, 120), st.integers(0, 120))
def test_relocate_gives_every_path_the_adapter_derives_at_the_other_index(message, i: int, j: int) -> None:
    (here,) = CHAT_COMPLETIONS.entries([message], i)
    (there,) = CHAT_COMPLETIONS.entries([message], j)
    fields = ("role", "content", "calls", "reasoning", "id", "name", "arguments", "type", "function")
    pairs = [(here, there), *zip(here.calls, there.calls), *zip(here.results, there.results)]
    if here.legacy_call is not None:
        pairs.append((here.legacy_call, there.legacy_call))
    for a, b in pairs:
        assert relocate(a.path, here, j) == b.path
        for name in fields:
            assert relocate(a.at(name), here, j) == b.at(name)


# One body per wire API shape (Chat Completions, Responses, Anthropic Messages, Gemini): whichever adapter
# claims it must derive paths that ``relocate`` moves exactly; a shape no adapter reads yet is skipped.
_BODIES = [
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}, 7],
        "function_call": {"name": "g"}}, {"role": "tool", "tool_call_id": "a", "content": "ok"}]},
    {"input": [{"role": "user", "content": "hi"}, {"type": "function_call", "call_id": "a", "name": "f",
               "arguments": "{}"}, {"type": "function_call_output", "call_id": "a", "output": "ok"}]},
    {"model": "claude-sonnet-4", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}, {
        "role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "tool_use", "id": "a", "name": "f",
                                                                        "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]}]},
    {"contents": [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [
        {"functionCall": {"name": "f", "args": {}}}]}, {"role": "user", "parts": [
        {"functionResponse": {"name": "f", "response": {}}}]}]},
]


def _located(e) -> list:
    return [e, *e.calls, *e.results, *([e.legacy_call] if e.legacy_call is not None else [])]


@pytest.mark.parametrize("body", _BODIES, ids=["chat", "responses", "anthropic", "gemini"])
def test_every_adapter_derives_paths_that_relocate_moves(body) -> None:
    api = api_for_body(body)
    items = api.items(body)
    if not isinstance(items, list):
        pytest.skip(f"no adapter reads this shape yet ({api.name} claims it)")
    for k, item in enumerate(items):
        (here,) = api.entries([item], k)
        (there,) = api.entries([item], k + 5)
        assert here.path.endswith(f"[{k}]") and there.path.endswith(f"[{k + 5}]")
        for a, b in zip(_located(here), _located(there), strict=True):
            assert a.path.startswith(here.path) and relocate(a.path, here, k + 5) == b.path
            for name in a.keys:
                assert relocate(a.at(name), here, k + 5) == b.at(name)


def test_each_distinct_message_is_derived_once_per_trace(sample_traces, monkeypatch) -> None:
    from agent_core.apis.chat_completions import ChatCompletions
    from agent_core.replay.engine import replay
    from agent_core.trace.reader import read_trace
    from agent_core.trim.registry import make_policy

    derived: list[int] = []
    entries = ChatCompletions.entries

    def counting(self, items, start=0):
        derived.extend(id(m) for m in items)
        return entries(self, items, start)

    monkeypatch.setattr(ChatCompletions, "entries", counting)
    trace = read_trace(sample_traces / "long_trimmed_fact.jsonl")        # 84 calls, full history
    sent = {id(m) for c in trace.calls for m in c.messages}
    lint_trace(trace)
    lint_trace(trace, profile="mistral")
    assert sorted(derived) == sorted(sent)            # once each, though linted twice
    derived.clear()
    results = [replay(trace, make_policy("max-messages", max_messages=6)),
               replay(trace, make_policy("sliding-window", turns=2))]
    replayed = {id(m) for r in results for c in r.calls for m in c.messages}
    assert len(derived) == len(set(derived)) == len(replayed - sent)     # windows shift them on every call
