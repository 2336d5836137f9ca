"""Replay: recorded traces rebuilt under their own policy equal what was sent; other policies show
what they would have sent, what the API would reject, and what it costs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_streams import pairing_errors, traces

from agent_core.apis.responses import input_items
from agent_core.chat.agent import Agent
from agent_core.chat.client import Endpoint, LLMClient
from agent_core.chat.memory import ShortTermMemory
from agent_core.cli.main import main
from agent_core.core.errors import MalformedTraceError
from agent_core.core.msg import Msg
from agent_core.core.models import price_as
from agent_core.ingest.detect import load_any
from agent_core.lint.finding import Finding
from agent_core.lint.scan import lint_payload
from agent_core.replay.counterfactual import resend
from agent_core.replay.engine import chat_calls, policy_for_trace, replay
from agent_core.replay.findings import attach_recorded_findings
from agent_core.replay.responses import is_responses_trace, replay_responses, sent_here
from agent_core.serve.demo_model import MODEL_NAME
from agent_core.serve.demo_server import DemoModelServer
from agent_core.trace.events import MemoryEvent
from agent_core.trace.model import StreamEvent
from agent_core.trace.reader import read_trace
from agent_core.trace.recorder import FanOut, MemoryRecorder
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trace.writer import TraceWriter
from agent_core.trim.base import ApplyEachAdd, TrimCut, trimmer_for
from agent_core.trim.budget import BudgetTrimmer, TokenBudget
from agent_core.trim.compose import Compose
from agent_core.trim.message_tokens import MessageTokens
from agent_core.trim.registry import POLICIES, make_policy
from agent_core.trim.summary import SummaryWindow
from agent_core.trim.window import KeepAll, MaxMessages, SlidingWindow

TURNS = ["我叫小明，我的工号是 A-2024-0715，请记住。", "帮我查一下北京天气", "算一下 (12+30)*2", "讲讲你的计划",
         "现在东京几点？", "帮我查一下上海天气", "我喜欢喝绿茶", "算一下 365*24", "推荐一本书", "帮我查一下深圳天气"]

PAIRING_RULES = {"missing-tool-result", "orphan-tool", "interleaved-message", "unknown-tool-call-id",
                 "duplicate-tool-call-id"}


def _record(path: Path, server: DemoModelServer, policy, turns: list[str], clear_at: int | None = None) -> None:
    with TraceWriter(path, meta={"model": MODEL_NAME}) as writer:
        client = LLMClient(Endpoint(base_url=server.base_url, model=MODEL_NAME, is_demo=True), recorder=writer,
                           max_retries=0)
        agent = Agent(client, ShortTermMemory(policy=policy, recorder=writer, system_prompt="你是一个助手。"))
        for i, turn in enumerate(turns):
            if i == clear_at:
                agent.clear()
            agent.chat(turn)
        client.close()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """36 turns with tool rounds under max-messages(7), with a /clear in the middle."""
    path = tmp_path_factory.mktemp("replay") / "max7.jsonl"
    with DemoModelServer() as server:
        _record(path, server, MaxMessages(7), [TURNS[i % len(TURNS)] for i in range(36)], clear_at=20)
    return path


def _payload_json(messages) -> list[str]:
    return [json.dumps(m, ensure_ascii=False) for m in messages]   # key order matters on the wire


# --- replay under the recorded policy equals what was sent ------------------------

def test_max_messages_replay_equals_every_recorded_payload_exactly(recorded):
    trace = read_trace(recorded)
    calls = chat_calls(trace)
    assert len(calls) > 50 and any(e.event.type == "clear" for e in trace.events)
    assert sum(e.event.type == "trim" for e in trace.events) > 20
    result = replay(trace, MaxMessages(7))
    assert [c.call for c in result.calls] == [c.index for c in calls]
    for rc, c in zip(result.calls, calls):
        assert _payload_json(rc.messages) == _payload_json(c.messages), f"call {c.index}"
        assert rc.same and rc.diff.dropped == [] and rc.diff.added == []
        # our cookbook count is what the demo model reported as usage.prompt_tokens
        assert rc.tokens == rc.recorded_tokens == c.reported_prompt_tokens
        assert [f.rule for f in rc.findings if f.severity == "error"] == []
        assert {f.rule for f in rc.findings} <= {"tools-missing-for-history"}   # the classic flow's 2nd call
    totals = result.totals
    assert totals["same_as_recorded"] == len(calls) and totals["rejected"] == 0


@pytest.mark.parametrize("name", sorted(p.name for p in Path(__file__).resolve().parents[2].joinpath(
    "sample_traces").glob("*.jsonl")))
def test_each_sample_replayed_under_its_own_policy_equals_what_was_sent(sample_traces, name):
    trace = read_trace(sample_traces / name)
    if is_responses_trace(trace):     # no message stream: each call's effective input, by item groups
        for r, c in zip(replay_responses(trace, make_policy("keep-all")), trace.calls):
            assert [s.item for s in r.items if sent_here(s)] == input_items(c.request) and not r.dropped
        return
    result = replay(trace, make_policy(trace.meta["policy"], **trace.meta.get("policy_params", {})))
    if name == "history_not_passed.jsonl":
        # the app sent only the current turn, not its memory: replay shows what memory held instead
        assert not all(rc.same for rc in result.calls) and result.calls[0].same
        assert all(not rc.diff.dropped for rc in result.calls)
        return
    assert all(rc.same for rc in result.calls)
    for rc, c in zip(result.calls, chat_calls(trace)):
        assert _payload_json(rc.messages) == _payload_json(c.messages)


def test_keep_all_replay_of_a_full_history_log_equals_it():
    trace = synthetic_trace(200)
    result = replay(trace, KeepAll())
    assert result.totals["same_as_recorded"] == 200
    assert result.totals["tokens"] == result.totals["recorded_tokens"]
    mt = MessageTokens("gpt-4o")
    c = trace.calls[57]
    assert result.calls[57].tokens == mt.counter.count_payload(c.messages, c.tools)


# --- other policies ---------------------------------------------------------------

def orphan_id(c) -> str:
    return c.ids[next(f.index for f in c.findings if f.rule == "orphan-tool")]


def test_naive_drop_oldest_yields_orphan_tool_on_the_60_round_sample(sample_traces):
    trace = read_trace(sample_traces / "long_trimmed_fact.jsonl")
    result = replay(trace, make_policy("naive-drop-oldest", max_messages=40))
    rejected = [c for c in result.calls if c.rejected]
    assert rejected and result.totals["rejected_calls"] == [c.call for c in rejected]
    first = rejected[0]
    orphan = [f for f in first.findings if f.rule == "orphan-tool"]
    assert orphan and first.messages[orphan[0].index]["role"] == "tool"
    assert any(d.policy == "naive-drop-oldest" and d.role == "assistant" for d in first.dropped)
    # the recorded (max-messages) payload of that call was fine: the policy introduced the error
    attach_recorded_findings(result, trace)
    assert [f.rule for f in first.introduced] == ["orphan-tool"]
    assert not first.same and orphan_id(first) in first.diff.added   # max-messages had dropped it with its call
    # typed findings all the way; dicts only in the JSON export, the linter's own export() of each
    assert all(isinstance(f, Finding) for c in result.calls for f in c.findings + (c.recorded_findings or []))
    assert first.export()["findings"] == [f.export() for f in lint_payload(first.messages, first.tools,
                                                                          call=first.call)]


def test_dropped_entries_name_the_rule_and_the_position(recorded):
    trace = read_trace(recorded)
    result = replay(trace, SlidingWindow(turns=2))
    drops = [d for c in result.calls for d in c.dropped]
    assert drops == result.drops[:len(drops)]      # per-call drops partition the drop log
    by_id = {m.id: m for m in trace.stream}
    for d in drops:
        assert by_id[d.msg_id].role == d.role
        assert d.policy in ("sliding-window", "clear") and d.reason
    assert any(d.policy == "clear" for d in drops)


def test_totals_priced_as_a_chosen_catalogue_model(recorded):
    trace = read_trace(recorded)
    assert trace.models == [MODEL_NAME]
    result = replay(trace, KeepAll(), pricing=price_as(trace.models, "gpt-4o"))
    t = result.totals
    # gpt-4o's list price: $2.50 per 1M input tokens (openai.com/api/pricing)
    assert t["cost_usd"] == round(t["tokens"] * 2.50 / 1e6, 6) > 0
    assert t["recorded_cost_usd"] == round(t["recorded_tokens"] * 2.50 / 1e6, 6)
    assert t["tokens"] > t["recorded_tokens"]          # keep-all sends more than max-messages(7) did
    assert result.pricing.label == "priced as gpt-4o" and t["unpriced_models"] == []
    # unpriced demo trace, nothing picked: price_as falls back to gpt-4o-mini ($0.15 per 1M input tokens)
    default = replay(trace, KeepAll(), pricing=price_as(trace.models))
    assert default.totals["cost_usd"] == round(t["tokens"] * 0.15 / 1e6, 6)
    assert default.pricing.label == "priced as gpt-4o-mini"


def test_without_a_pricing_each_call_is_priced_at_its_own_model():
    """The demo model's row has no price: it is listed as unpriced, never costed at a silent $0."""
    demo = replay(synthetic_trace(5, model=MODEL_NAME), KeepAll())
    assert demo.totals["unpriced_models"] == [MODEL_NAME] and all(c.cost_usd is None for c in demo.calls)
    own = replay(synthetic_trace(5, model="gpt-4o-2024-08-06"), KeepAll())
    assert own.totals["cost_usd"] == round(own.totals["tokens"] * 2.50 / 1e6, 6) > 0
    unknown = replay(synthetic_trace(5, model="llama-3"), KeepAll())
    assert unknown.totals["unpriced_models"] == ["llama-3"] and unknown.totals["cost_usd"] == 0
    assert all(c.cost_usd is None for c in unknown.calls)


def test_policy_for_trace_fills_the_model_and_tool_definitions(recorded):
    trace = read_trace(recorded)
    p = policy_for_trace("token-budget", {"max_tokens": "900"}, trace)
    assert p.model == MODEL_NAME and p.tools == next(c.tools for c in chat_calls(trace) if c.tools)
    result = replay(trace, p)
    assert all(c.tokens <= 900 - p.reserve_for_output for c in result.calls)


# --- property tests over random streams ----------------------------------------------

PAIR_SAFE = [
    lambda: MaxMessages(4), lambda: MaxMessages(9), lambda: SlidingWindow(1), lambda: SlidingWindow(3),
    lambda: TokenBudget(120, 20), lambda: TokenBudget(400, 0), lambda: SummaryWindow(2),
    lambda: Compose(SummaryWindow(2), TokenBudget(300, 50)), lambda: KeepAll(),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=traces(), which=st.integers(0, len(PAIR_SAFE) - 1))
def test_pair_safe_policies_never_yield_a_pairing_error(trace, which):
    policy = PAIR_SAFE[which]()
    result = replay(trace, policy)
    n_system = sum(m.role == "system" for m in trace.stream)
    for c in result.calls:
        users = sum(m["role"] == "user" for m in c.messages)
        if isinstance(policy, MaxMessages):
            assert len(c.messages) <= max(policy.max_messages, n_system)
        if isinstance(policy, (SlidingWindow, SummaryWindow)):
            assert users <= getattr(policy, "turns", getattr(policy, "keep_turns", 0))
        assert pairing_errors(c.messages) == []
        # an emptied payload (no system prompt, tiny limit) is the one error a pair-safe policy may cause
        assert {f.rule for f in c.findings if f.severity == "error"} <= {"invalid-messages"}
        assert not {f.rule for f in lint_payload(c.messages, c.tools)} & PAIRING_RULES


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=traces(), max_tokens=st.integers(40, 600), reserve=st.integers(0, 30))
def test_token_budget_stays_within_budget_when_feasible(trace, max_tokens, reserve):
    policy = TokenBudget(max_tokens + reserve, reserve)
    counter = MessageTokens(None).counter
    result = replay(trace, policy)
    system = [m.to_openai() for m in trace.stream if m.role == "system"]
    feasible = counter.count_payload(system) <= policy.budget
    for c in result.calls:
        assert c.tokens == counter.count_payload(c.messages, c.tools)
        if feasible:
            assert c.tokens <= policy.budget
        assert pairing_errors(c.messages) == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=traces(), which=st.sampled_from(["max-messages", "naive-drop-oldest", "sliding-window", "token-budget",
                                                "summary-window", "langchain-trim-last"]))
def test_replay_equals_live_memory_for_every_policy(trace, which):
    params = {"max-messages": {"max_messages": 5}, "naive-drop-oldest": {"max_messages": 5},
              "sliding-window": {"turns": 2}, "token-budget": {"max_tokens": 200},
              "summary-window": {"keep_turns": 2}, "langchain-trim-last": {"max_tokens": 150}}[which]
    memory = ShortTermMemory(policy=make_policy(which, **params))
    live = []
    for pos, m in enumerate(trace.stream + [None]):
        for c in trace.calls:
            if c.stream_index == pos:
                live.append([(x.role, x.content) for x in memory.messages()])
        if m is not None:
            memory.add(m)
    result = replay(trace, make_policy(which, **params))
    assert [[(d["role"], d.get("content")) for d in c.messages] for c in result.calls] == live


# --- imports and real traces ----------------------------------------------------------

def _real_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".json", ".traj") and p.is_file())


def test_every_real_conversation_replays_under_every_policy(real_traces):
    files = _real_files(real_traces)
    assert len(files) >= 20
    specs = {"keep-all": {}, "max-messages": {"max_messages": 6}, "naive-drop-oldest": {"max_messages": 6},
             "sliding-window": {"turns": 1}, "token-budget": {"max_tokens": 1500},
             "summary-window": {"keep_turns": 1}, "langchain-trim-last": {"max_tokens": 800, "start_on": "human"},
             "compose": {"policies": "summary-window:keep_turns=2+token-budget:max_tokens=2000"},
             "anthropic-clear-tool-uses": {"trigger": 500}, "anthropic-clear-thinking": {},
             "openai-truncation-auto": {"context_window": 1500}}
    assert set(specs) == set(POLICIES)
    for path in files:
        try:
            trace = load_any(path)
        except MalformedTraceError as err:  # a ToolBench answer file with no valid chain imports no call
            assert "no train_messages" in str(err), path
            continue
        for name, params in specs.items():
            result = replay(trace, policy_for_trace(name, params, trace))
            assert len(result.calls) == len(chat_calls(trace)), (path, name)


def test_keep_all_replay_of_tau_bench_equals_each_conversation(real_traces):
    trace = load_any(real_traces / "tau-bench-gpt-4o-airline" / "gpt-4o-airline.sample.json")
    assert len(trace.meta["conversations"]) > 1
    result = replay(trace, KeepAll())
    # memory starts empty at each conversation, so every call is exactly its recorded prefix
    assert result.totals["same_as_recorded"] == len(result.calls) == len(trace.calls)


# --- counterfactual ------------------------------------------------------------------

def test_resend_a_replayed_call_to_the_demo_model(demo_server, sample_traces):
    trace = read_trace(sample_traces / "long_trimmed_fact.jsonl")
    endpoint = Endpoint(base_url=demo_server.base_url, model=MODEL_NAME, is_demo=True)
    rec = MemoryRecorder()
    kept = replay(trace, KeepAll()).calls[-1]     # the demo model recalls facts from user messages only
    answer = resend(kept, endpoint, recorder=rec)
    assert answer.error is None and "A-2024-0715" in answer.reply["content"]
    assert "A-2024-0715" not in (trace.calls[-1].reply or {}).get("content", "")    # recorded: forgotten
    broken = next(c for c in replay(trace, make_policy("naive-drop-oldest", max_messages=40)).calls if c.rejected)
    refused = resend(broken, endpoint, recorder=rec)
    assert refused.reply is None and "HTTP 400" in refused.error and "role 'tool'" in refused.error
    assert [a.purpose for a in rec.calls] == ["counterfactual", "counterfactual"]
    assert json.loads(demo_server.received[0])["messages"] == kept.messages


def test_llm_summarizer_calls_are_recorded_with_purpose_summary(tmp_path, demo_server):
    path = tmp_path / "llm.jsonl"
    with TraceWriter(path, meta={"model": MODEL_NAME}) as writer:
        rec = MemoryRecorder()
        client = LLMClient(Endpoint(base_url=demo_server.base_url, model=MODEL_NAME, is_demo=True),
                           recorder=FanOut(writer, rec), max_retries=0)
        policy = make_policy("summary-window", keep_turns=1, summarizer="llm", client=client)
        agent = Agent(client, ShortTermMemory(policy=policy, recorder=writer, system_prompt="s"))
        for t in TURNS[:4]:
            agent.chat(t)
        client.close()
    trace = read_trace(path)
    purposes = [c.purpose for c in trace.calls]
    assert purposes.count("summary") == 3 and purposes.count("chat") == len(chat_calls(trace))
    assert trace.policy_messages and all(m.role == "system" for m in trace.policy_messages.values())
    # replay re-summarizes through its own client and skips the recorded summary calls
    rec2 = MemoryRecorder()
    client2 = LLMClient(Endpoint(base_url=demo_server.base_url, model=MODEL_NAME, is_demo=True), recorder=rec2)
    result = replay(trace, make_policy("summary-window", keep_turns=1, summarizer="llm", client=client2))
    assert len(result.calls) == len(chat_calls(trace))
    assert [a.purpose for a in rec2.calls] == ["summary"] * 3
    for rc, c in zip(result.calls, chat_calls(trace)):
        assert [m["role"] for m in rc.messages] == [m["role"] for m in c.messages]
    client2.close()


# --- CLI ---------------------------------------------------------------------------

def test_cli_replay_json_schema(recorded, capsys):
    args = ["replay", str(recorded), "--policy", "naive-drop-oldest", "--param", "max_messages=6",
            "--probe", "A-2024-0715", "--format", "json"]
    assert main(args) == 0
    referenced = json.loads(capsys.readouterr().out)
    assert main([*args, "--full"]) == 0       # every call's whole payload, as before the referenced default
    doc = json.loads(capsys.readouterr().out)
    from agent_core.replay.references import expand

    assert referenced["format"] == "chain-studio-replay-refs/1" and expand(referenced) == doc
    assert list(doc) == ["policy", "params", "calls", "probes", "totals"]
    assert doc["policy"] == "naive-drop-oldest" and doc["params"] == {"max_messages": 6}
    assert all(list(c) == ["call", "messages", "tokens", "dropped", "findings"] for c in doc["calls"])
    assert all(list(d) == ["id", "role", "after_add", "policy", "reason"] for c in doc["calls"] for d in c["dropped"])
    assert doc["totals"]["rejected"] == len([c for c in doc["calls"] if any(
        f["severity"] == "error" for f in c["findings"])]) > 0
    probe = doc["probes"]["A-2024-0715"]
    assert probe["first_gone"] is not None and "naive-drop-oldest removed" in probe["why"]
    assert probe["recorded"]["first_gone"] is not None


def test_cli_replay_text_and_errors(recorded, capsys):
    assert main(["replay", str(recorded), "--policy", "compose", "--param",
                 "policies=summary-window:keep_turns=2+token-budget:max_tokens=1500", "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("replay under summary-window(keep_turns=2, summarizer=extractive) + token-budget(")
    assert "totals:" in out and "why did it forget?" in out
    assert main(["replay", str(recorded), "--policy", "token-budget", "--param", "max_tokens=lots"]) == 2
    assert "max_tokens must be an integer" in capsys.readouterr().err
    assert main(["replay", str(recorded), "--policy", "max-messages", "--param", "turns=2"]) == 2
    assert main(["replay", str(recorded.parent / "missing.jsonl"), "--policy", "keep-all"]) == 2


@pytest.mark.parametrize("policy, param, line", [
    ("max-messages", "turns=2", "max-messages has no parameter 'turns' (parameters: max_messages)"),
    ("sliding-window", "turns=two", "sliding-window: turns must be an integer, not 'two'"),
    ("summary-window", "summarizer=gpt", "summary-window: summarizer must be one of extractive, llm, not 'gpt'"),
    ("langchain-trim-last", "include_system=maybe", "langchain-trim-last: include_system must be true or false, "
                                                     "not 'maybe'"),
])
def test_cli_replay_bad_param_is_one_line(recorded, capsys, policy, param, line):
    assert main(["replay", str(recorded), "--policy", policy, "--param", param]) != 0
    captured = capsys.readouterr()
    assert captured.err == f"chain-studio: {line}\n" and captured.out == ""


def test_errors_already_in_the_recording_are_not_introduced(sample_traces):
    trace = read_trace(sample_traces / "naive_trim_orphan.jsonl")     # recorded under naive-drop-oldest
    assert trace.meta["policy"] == "naive-drop-oldest"
    limit = trace.meta["policy_params"]["max_messages"]
    same = attach_recorded_findings(replay(trace, make_policy("naive-drop-oldest", max_messages=limit)), trace)
    assert all(c.same for c in same.calls) and same.totals["rejected"] > 0
    assert [f for c in same.calls for f in c.introduced] == []
    fixed = attach_recorded_findings(replay(trace, MaxMessages(limit)), trace)
    assert fixed.totals["rejected"] == 0 and not any(c.introduced for c in fixed.calls)


class _WalkOnly(TokenBudget):
    """Token-budget by its definition only (no incremental shortcut), for the equivalence test."""

    def apply(self, messages):
        return self._walk(messages)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=traces(), max_tokens=st.integers(20, 700), reserve=st.integers(0, 15))
def test_incremental_token_budget_equals_its_definition(trace, max_tokens, reserve):
    fast = replay(trace, TokenBudget(max_tokens + reserve, reserve))
    slow = replay(trace, _WalkOnly(max_tokens + reserve, reserve))
    assert [c.ids for c in fast.calls] == [c.ids for c in slow.calls]
    assert [(d.msg_id, d.after_add, d.reason) for d in fast.drops] == \
        [(d.msg_id, d.after_add, d.reason) for d in slow.drops]


class _CutsOnItsOwn(MaxMessages):
    """max-messages with an incremental trimmer of its own that answers with ranges and logs its calls."""

    def __init__(self, n: int):
        super().__init__(n)
        self.log: list[str] = []

    def incremental(self):
        policy = self

        class Trimmer:
            def add(self, messages):
                policy.log.append("add")
                result = policy.apply(messages)
                gone = {id(m) for m in result.removed}
                return TrimCut([(i, i + 1) for i, m in enumerate(messages) if id(m) in gone], result.reason)

            def close(self, messages):
                policy.log.append(f"close {len(messages)}")

        return Trimmer()


def test_replay_trims_through_the_policys_public_incremental_hook():
    trace = synthetic_trace(40)
    trace.events.append(StreamEvent(after_add=30, event=MemoryEvent(type="clear", policy="clear", removed=[],
                                                                    reason="/clear")))
    hooked = _CutsOnItsOwn(9)
    fast, plain = replay(trace, hooked), replay(trace, MaxMessages(9))
    # every add went to the hook, which was closed before the clear and at the end
    assert hooked.log.count("add") == len(trace.stream)
    assert [e for e in hooked.log if e != "add"] == ["close 9", "close 9"]
    assert [c.ids for c in fast.calls] == [c.ids for c in plain.calls]
    assert [d.export() for d in fast.drops] == [d.export() for d in plain.drops]
    assert any(d.policy == "clear" for d in fast.drops) and any(d.policy == "max-messages" for d in fast.drops)


def test_trimmer_for_falls_back_to_apply_and_subclasses_do_not_inherit_the_budget_rule():
    assert not isinstance(trimmer_for(MaxMessages(5)), ApplyEachAdd)       # its index-range trimmer

    class _OwnCap(MaxMessages):
        pass
    assert isinstance(trimmer_for(_OwnCap(5)), ApplyEachAdd)                 # a subclass may change the rule
    assert not isinstance(trimmer_for(SummaryWindow(2)), ApplyEachAdd)     # apply after user adds only

    class _OwnSummary(SummaryWindow):
        pass
    assert isinstance(trimmer_for(_OwnSummary(2)), ApplyEachAdd)
    assert trimmer_for(KeepAll()).add([Msg(role="user", content="x")] * 3) == TrimCut([])     # keeps all, no copy
    assert isinstance(trimmer_for(TokenBudget(500)), BudgetTrimmer)
    assert isinstance(trimmer_for(_WalkOnly(500)), ApplyEachAdd)


def test_the_cli_prices_an_unpriced_trace_as_a_named_model(capsys):
    """`chain-studio replay` on a demo-model sample: priced as gpt-4o-mini by default, named, or as --price-as
    (list prices per 1M input tokens: gpt-4o-mini $0.15, gpt-4o $2.50)."""
    from agent_core.cli.main import main

    sample = Path(__file__).resolve().parents[2] / "sample_traces" / "classic_remembers.jsonl"
    for extra, model, per_million in (([], "gpt-4o-mini", 0.15), (["--price-as", "gpt-4o"], "gpt-4o", 2.50)):
        assert main(["replay", str(sample), "--policy", "keep-all", *extra]) == 0
        totals = json.loads(capsys.readouterr().out)["totals"]
        assert totals["priced_as"] == model and totals["unpriced_models"] == []
        assert totals["cost_usd"] == round(totals["tokens"] * per_million / 1e6, 6) > 0


def test_diff_matches_a_recorded_message_without_id_by_its_whole_body():
    """A recorded message the reader gave no id is the replayed one of the same body, role included: a system
    message and a user message with the same text stay apart."""
    from agent_core.replay.result import _diff

    mine = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
            {"role": "system", "content": "Summary: hi"}]
    recorded = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Summary: hi"},
                {"role": "user", "content": "hi"}, {"role": "system", "content": "Summary: hi"}]
    d = _diff(["s", "u1", "summary_1"], mine, ["s", None, None, None], recorded, False)
    # "u1" is recorded[2] (same body), "summary_1" is recorded[3], not the user message of the same text
    assert d.added == [] and d.dropped == ["recorded[1]"] and d.kept == ["s", "u1", "summary_1"]
