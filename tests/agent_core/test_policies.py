"""Trim policies: each rule on hand-made lists, the registry, and the langchain emulation
checked against the observed behaviours and against the real ``langchain_core.trim_messages``."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_streams import pairing_errors, traces

from agent_core.chat.memory import ShortTermMemory
from agent_core.core.msg import Msg
from agent_core.trace.tokens import counter_for
from agent_core.trim.base import PolicyError
from agent_core.trim.budget import TokenBudget
from agent_core.trim.compose import Compose
from agent_core.trim.langchain import LangchainTrimLast
from agent_core.trim.registry import POLICIES, describe, make_policy, parse_params, policy_params
from agent_core.trim.summarizers import (
    SUMMARY_HEADER,
    ExtractiveSummarizer,
    summary_facts,
)
from agent_core.trim.summary import SummaryWindow, is_summary
from agent_core.trim.window import KeepAll, MaxMessages, NaiveDropOldest, SlidingWindow


def _call(*ids: str) -> Msg:
    return Msg.from_openai({"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]})


def _tool(cid: str, content: str = "r") -> Msg:
    return Msg(role="tool", content=content, tool_call_id=cid)


def _design_case() -> list[Msg]:
    """System, Human, AI(calls c1,c2), Tool c1, Tool c2, AI: the case in trim-policies-elsewhere.md."""
    return [Msg(role="system", content="You are helpful."), Msg(role="user", content="weather in 北京 and 上海?"),
            _call("c1", "c2"), _tool("c1", "sunny"), _tool("c2", "rain"), Msg(role="assistant", content="Done.")]


def _roles(msgs) -> list[str]:
    return [m.role + (":" + m.tool_call_id if m.tool_call_id else "") for m in msgs]


# --- registry and parameters ------------------------------------------------

def test_registry_names_every_policy_of_the_issue():
    assert list(POLICIES)[:8] == ["keep-all", "max-messages", "naive-drop-oldest", "sliding-window", "token-budget",
                                  "summary-window", "langchain-trim-last", "compose"]
    assert {"anthropic-clear-tool-uses", "anthropic-clear-thinking", "openai-truncation-auto"} <= set(POLICIES)    # issue 19
    assert POLICIES["keep-all"] is KeepAll and POLICIES["max-messages"] is MaxMessages


def test_make_policy_parses_string_parameters():
    p = make_policy("langchain-trim-last", max_tokens="10", start_on="human", include_system="true")
    assert isinstance(p, LangchainTrimLast)
    assert p.params() == {"max_tokens": 10, "start_on": "human", "include_system": True, "token_counter": "tiktoken"}
    assert make_policy("max-messages", max_messages="7").params() == {"max_messages": 7}
    assert make_policy("token-budget", max_tokens="800").params() == {"max_tokens": 800, "reserve_for_output": 100,
                                                                      "model": None}
    assert parse_params(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}


def test_make_policy_builds_compose_from_a_spec_string():
    p = make_policy("compose", policies="summary-window:keep_turns=2+token-budget:max_tokens=300,reserve_for_output=50")
    assert isinstance(p, Compose)
    assert p.params() == {"policies": [
        {"name": "summary-window", "params": {"keep_turns": 2, "summarizer": "extractive"}},
        {"name": "token-budget", "params": {"max_tokens": 300, "reserve_for_output": 50, "model": None}}]}
    assert describe(p) == ("summary-window(keep_turns=2, summarizer=extractive) + "
                           "token-budget(max_tokens=300, reserve_for_output=50)")


@pytest.mark.parametrize("name, params, text", [
    ("nope", {}, "unknown policy 'nope'"),
    ("max-messages", {"max_messages": "x"}, "max_messages must be an integer"),
    ("max-messages", {"turns": "3"}, "has no parameter 'turns'"),
    ("langchain-trim-last", {"include_system": "maybe"}, "must be true or false"),
    ("token-budget", {"max_tokens": "100", "reserve_for_output": "100"}, "max_tokens > reserve_for_output"),
    ("summary-window", {"summarizer": "llm"}, "needs an LLM client"),
    ("summary-window", {"summarizer": "gpt"}, "summary-window: summarizer must be one of extractive, llm, not 'gpt'"),
    ("langchain-trim-last", {"token_counter": "words"}, "token_counter must be one of tiktoken, len, not 'words'"),
    ("sliding-window", {"turns": "1.5"}, "sliding-window: turns must be an integer, not '1.5'"),
    ("token-budget", {"reserve_for_output": "no"}, "reserve_for_output must be an integer, not 'no'"),
])
def test_make_policy_errors_are_one_sentence(name, params, text):
    with pytest.raises(Exception) as info:
        make_policy(name, **params)
    assert text in str(info.value)
    assert isinstance(info.value, PolicyError) or "LLM client" in str(info.value)


def test_parameters_are_derived_from_each_policys_typed_config():
    by_name = {name: {p.name: p for p in policy_params(name)} for name in POLICIES}
    assert list(by_name["token-budget"]) == ["max_tokens", "reserve_for_output", "model"]
    budget = by_name["token-budget"]
    assert (budget["max_tokens"].kind, budget["max_tokens"].default) == (int, 8000)
    assert budget["reserve_for_output"].optional and budget["reserve_for_output"].default is None
    assert budget["model"].from_trace and not budget["max_tokens"].from_trace
    assert by_name["summary-window"]["summarizer"].choices == ("extractive", "llm")
    assert by_name["langchain-trim-last"]["token_counter"].choices == ("tiktoken", "len")
    assert by_name["langchain-trim-last"]["include_system"].kind is bool
    assert by_name["keep-all"] == {}
    # every field explains itself: the studio's help texts are these docstrings
    assert all(p.help for fields in by_name.values() for p in fields.values())
    assert by_name["compose"]["policies"].help == "Stages joined by +, each name:key=value,key=value."
    # the defaults are the configs', so a policy built bare reports them
    for name, fields in by_name.items():
        built = make_policy(name).params()
        for key, p in fields.items():
            if name != "compose" and p.default is not None and key in built:
                assert built[key] == p.default, (name, key)


def test_bad_parameter_syntax():
    with pytest.raises(PolicyError, match="key=value"):
        parse_params(["max_tokens"])


# --- naive-drop-oldest ----------------------------------------------------------

def test_naive_drop_oldest_leaves_the_tool_results_of_a_dropped_call():
    msgs = _design_case()
    r = NaiveDropOldest(max_messages=4).apply(msgs)
    assert [m.id for m in r.removed] == [msgs[1].id, msgs[2].id]
    assert _roles(r.messages) == ["system", "tool:c1", "tool:c2", "assistant"]
    assert pairing_errors([m.to_openai() for m in r.messages]) == ["orphan tool at 1", "orphan tool at 2"]
    assert "without its tool results" in r.reason


def test_naive_drop_oldest_removes_exactly_one_per_overflow_in_live_memory():
    memory = ShortTermMemory(policy=NaiveDropOldest(3), system_prompt="s")
    for m in _design_case()[1:]:
        memory.add(m)
    assert _roles(memory.messages()) == ["system", "tool:c2", "assistant"]


# --- sliding-window -------------------------------------------------------------

def test_sliding_window_cuts_only_at_user_messages():
    s = Msg(role="system", content="s")
    t1 = [Msg(role="user", content="u1"), _call("a"), _tool("a"), Msg(role="assistant", content="x")]
    t2 = [Msg(role="user", content="u2"), Msg(role="assistant", content="y")]
    t3 = [Msg(role="user", content="u3"), _call("b", "c"), _tool("b"), _tool("c")]
    r = SlidingWindow(turns=2).apply([s] + t1 + t2 + t3)
    assert [m.id for m in r.messages] == [m.id for m in [s] + t2 + t3]
    assert [m.id for m in r.removed] == [m.id for m in t1]
    assert SlidingWindow(turns=3).apply([s] + t1 + t2 + t3).changed is False


# --- token-budget ---------------------------------------------------------------

def test_token_budget_keeps_newest_whole_groups_within_the_whole_payload_count():
    counter = counter_for(None)
    msgs = _design_case()
    dicts = [m.to_openai() for m in msgs]
    group = counter.count_payload(dicts[0:1] + dicts[2:])        # system + the call group + answer
    p = TokenBudget(max_tokens=group + 10, reserve_for_output=10)
    r = p.apply(msgs)
    assert [m.id for m in r.messages] == [msgs[0].id] + [m.id for m in msgs[2:]]
    assert counter.count_payload([m.to_openai() for m in r.messages]) == group
    tighter = TokenBudget(max_tokens=group + 9, reserve_for_output=10).apply(msgs)
    # one token less: the call group no longer fits, and it is never split
    assert _roles(tighter.messages) == ["system", "assistant"]


def test_token_budget_counts_tool_definitions_when_given():
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                               "parameters": {"type": "object", "properties": {
                                                   "city": {"type": "string", "description": "City"}}}}}]
    counter = counter_for(None)
    msgs = _design_case()
    full = counter.count_payload([m.to_openai() for m in msgs], tools)
    assert TokenBudget(full, 0, tools=tools).apply(msgs).changed is False
    assert TokenBudget(full - 1, 0, tools=tools).apply(msgs).changed is True


def test_token_budget_drops_orphan_results_in_broken_input():
    msgs = [Msg(role="system", content="s"), _tool("zz"), Msg(role="user", content="u")]
    r = TokenBudget(max_tokens=12, reserve_for_output=0).apply(msgs)   # s=5+u=5+3 priming > 12
    assert _roles(r.messages) == ["system"]
    r = TokenBudget(max_tokens=13, reserve_for_output=0).apply(msgs)
    assert _roles(r.messages) == ["system", "user"]


# --- summary-window -------------------------------------------------------------

def test_summary_window_folds_facts_into_one_running_system_summary():
    s = Msg(role="system", content="sys")
    msgs = [s, Msg(role="user", content="我叫小明，我的工号是 A-2024-0715，请记住。"),
            Msg(role="assistant", content="好的"), Msg(role="user", content="随便聊聊"),
            Msg(role="assistant", content="嗯"), Msg(role="user", content="I prefer green tea. What now?")]
    p = SummaryWindow(keep_turns=1)
    r = p.apply(msgs)
    assert r.messages[0] is s and is_summary(r.messages[1]) and r.messages[1].role == "system"
    assert [m.id for m in r.messages[2:]] == [msgs[-1].id]
    assert summary_facts(r.messages[1].content) == ["我叫小明，我的工号是 A-2024-0715，请记住。"]
    # the next fold replaces the summary and keeps the old facts
    more = r.messages + [Msg(role="assistant", content="ok"), Msg(role="user", content="next")]
    r2 = p.apply(more)
    assert r.messages[1] in r2.removed and sum(is_summary(m) for m in r2.messages) == 1
    assert summary_facts(r2.messages[1].content) == ["我叫小明，我的工号是 A-2024-0715，请记住。",
                                                     "I prefer green tea."]


def test_extractive_summarizer_is_deterministic_and_skips_non_facts():
    dropped = [Msg(role="user", content="hello there. My name is Alice. Call 555-123-4567 please."),
               Msg(role="assistant", content="My name is Bot 42"), Msg(role="user", content="nice")]
    a = ExtractiveSummarizer().summarize(None, dropped)
    assert a == ExtractiveSummarizer().summarize(None, dropped)
    assert a == SUMMARY_HEADER + "\n- My name is Alice.\n- Call 555-123-4567 please."


# --- compose ---------------------------------------------------------------------

def test_compose_applies_in_sequence_and_reports_removed_inputs_only():
    msgs = _design_case() + [Msg(role="user", content="again"), Msg(role="assistant", content="ok")]
    p = Compose(SummaryWindow(keep_turns=1), TokenBudget(max_tokens=400, reserve_for_output=0))
    r = p.apply(msgs)
    assert {m.id for m in r.removed} == {m.id for m in msgs[1:6]}
    assert is_summary(r.messages[1]) and "summary-window:" in r.reason


# --- langchain-trim-last: observed behaviours (trim-policies-elsewhere.md) -------

def test_langchain_last_len_budget_2_returns_an_orphan_tool():
    r = LangchainTrimLast(max_tokens=2, token_counter="len").apply(_design_case())
    assert _roles(r.messages) == ["tool:c2", "assistant"]


def test_langchain_start_on_human_budget_3_returns_nothing():
    r = LangchainTrimLast(max_tokens=3, start_on="human", token_counter="len").apply(_design_case())
    assert r.messages == [] and len(r.removed) == 6


def _system_of(tokens: int) -> Msg:
    counter = counter_for(None)
    for n in range(1, 200):
        m = Msg(role="system", content="rule " * n)
        if counter.count_payload([m.to_openai()]) == tokens:
            return m
    raise AssertionError("no such content")


def test_langchain_include_system_keeps_a_system_message_over_budget():
    system = _system_of(55)
    msgs = [system] + _design_case()[1:]
    r = LangchainTrimLast(max_tokens=10, include_system=True).apply(msgs)
    assert [m.id for m in r.messages] == [system.id]


# --- langchain-trim-last vs the real langchain_core ---------------------------

def _lc_trim(msgs: list[Msg], **kwargs) -> list[str]:
    lc = pytest.importorskip("langchain_core.messages")
    converted = lc.convert_to_messages([{**m.to_openai(), "id": m.id} for m in msgs])
    return [m.id for m in lc.trim_messages(converted, strategy="last", **kwargs)]


def _lc_tiktoken_counter(msgs: list[Msg]):
    counter = counter_for(None)
    by_id = {m.id: m.to_openai() for m in msgs}
    return lambda lc_msgs: sum(counter.count_message(by_id[m.id]) for m in lc_msgs) + 3


@pytest.mark.parametrize("kwargs, ours", [
    ({"max_tokens": 2, "token_counter": len}, {"max_tokens": 2, "token_counter": "len"}),
    ({"max_tokens": 3, "token_counter": len, "start_on": "human"},
     {"max_tokens": 3, "token_counter": "len", "start_on": "human"}),
    ({"max_tokens": 4, "token_counter": len, "include_system": True},
     {"max_tokens": 4, "token_counter": "len", "include_system": True}),
])
def test_observed_cases_match_real_langchain(kwargs, ours):
    msgs = _design_case()
    assert [m.id for m in LangchainTrimLast(**ours).apply(msgs).messages] == _lc_trim(msgs, **kwargs)


def test_include_system_case_matches_real_langchain_with_the_same_tiktoken_counter():
    msgs = [_system_of(55)] + _design_case()[1:]
    expected = _lc_trim(msgs, max_tokens=10, include_system=True, token_counter=_lc_tiktoken_counter(msgs))
    assert [m.id for m in LangchainTrimLast(max_tokens=10, include_system=True).apply(msgs).messages] == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=traces(), budget=st.integers(1, 400), start_on=st.sampled_from([None, "human", "ai"]),
       include_system=st.booleans(), use_len=st.booleans())
def test_emulation_equals_real_trim_messages_on_random_streams(trace, budget, start_on, include_system, use_len):
    pytest.importorskip("langchain_core")
    msgs = trace.stream
    if use_len:
        budget = budget % 12 + 1
    ours = LangchainTrimLast(max_tokens=budget, start_on=start_on, include_system=include_system,
                             token_counter="len" if use_len else "tiktoken").apply(msgs)
    kwargs = {"max_tokens": budget, "include_system": include_system,
              "token_counter": len if use_len else _lc_tiktoken_counter(msgs)}
    if start_on:
        kwargs["start_on"] = start_on
    assert [m.id for m in ours.messages] == _lc_trim(msgs, **kwargs)


def test_include_system_counts_reply_priming_twice_like_langchain():
    counter = counter_for(None)
    msgs = _design_case()
    whole = counter.count_payload([msgs[0].to_openai(), msgs[-1].to_openai()])   # system + last answer, as sent
    r = LangchainTrimLast(max_tokens=whole, include_system=True).apply(msgs)
    # the pair fits as one payload, but the system message is counted alone (with its own +3 priming)
    assert [m.id for m in r.messages] == [msgs[0].id]
    assert [m.id for m in LangchainTrimLast(max_tokens=whole + 3, include_system=True).apply(msgs).messages] == \
        [msgs[0].id, msgs[-1].id]
    expected = _lc_trim(msgs, max_tokens=whole, include_system=True, token_counter=_lc_tiktoken_counter(msgs))
    assert expected == [msgs[0].id]


@pytest.mark.parametrize("name", list(POLICIES))
def test_every_policy_builds_with_defaults_and_runs_live(name):
    memory = ShortTermMemory(policy=make_policy(name), system_prompt="s")
    for m in _design_case()[1:] * 30:
        memory.add(Msg.from_openai(m.to_openai()))
    assert memory.message_count() >= 1
    assert make_policy("compose").params()["policies"][0]["name"] == "summary-window"


def test_token_budget_says_what_it_kept_in_words_when_no_group_or_one_fits():
    system = Msg(role="system", content="be brief")
    huge = [system, Msg(role="user", content="hi"), Msg(role="assistant", content="word " * 400)]
    reason = TokenBudget(max_tokens=80, reserve_for_output=0).apply(huge).reason
    assert "kept only the system messages (the newest group alone does not fit)" in reason
    one = [system, Msg(role="user", content="hello " * 100), Msg(role="assistant", content="hi")]
    assert "kept the system messages and the newest whole group (" in \
        TokenBudget(max_tokens=80, reserve_for_output=0).apply(one).reason
