"""Every page on every sample (AppTest), and what the pages show."""
from __future__ import annotations

import pytest
from conftest import HOSTILE, OTHER_PAGES, PAGES, SAMPLES, plotly_spec, walk

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.lint.scan import lint_trace
from agent_core.trace.reader import read_trace
from agent_core.trace.tokens import counter_for


def _ids(paths):
    return [p.name for p in paths]


@pytest.mark.parametrize("path", SAMPLES + [HOSTILE], ids=_ids(SAMPLES + [HOSTILE]))
def test_every_page_opens_without_exception(open_studio, path):
    at = open_studio(path)
    trace = read_trace(path)
    for page, title in PAGES.items():
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        assert at.title[0].value == title, page
        assert not at.error or page in ("screens/timeline.py", "screens/lint.py", "screens/learn.py"), \
            (page, [e.value for e in at.error])
    for page in OTHER_PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
    # The sidebar picker opened the file given on the command line.
    kind = "sample" if path.parent.resolve() == SAMPLE_TRACES.resolve() else "open"
    assert at.sidebar.selectbox(key="trace_pick").value == f"{kind}:{path.resolve()}"
    assert at.sidebar.selectbox(key="trace_pick").options.count(
        at.sidebar.selectbox(key="trace_pick").format_func(f"{kind}:{path.resolve()}")) == 1
    at.switch_page("screens/timeline.py").run()
    assert at.metric[0].value == f"{len(trace.calls):,}"


def test_samples_are_there():
    assert {p.name for p in SAMPLES} >= {"classic_remembers.jsonl", "naive_trim_orphan.jsonl",
                                         "long_trimmed_fact.jsonl", "huge_tool_result.jsonl",
                                         "history_not_passed.jsonl"}


def test_orphan_sample_flags_orphan_tool_on_the_right_message(open_studio):
    path = SAMPLE_TRACES / "naive_trim_orphan.jsonl"
    trace = read_trace(path)
    orphans = [f for f in lint_trace(trace) if f.rule == "orphan-tool"]
    assert orphans
    target = orphans[0]
    at = open_studio(path, "screens/timeline.py")
    at.number_input(key="call_input").set_value(target.call).run()
    assert not at.exception
    assert at.header[0].value == f"Call {target.call}"
    # Find the message card holding the orphan-tool box: its caption names the message index.
    cards = []
    for node in walk(at.main):
        children = list(getattr(node, "children", {}).values())
        if not children:
            continue
        captions = [c.value for c in walk(node) if getattr(c, "type", None) == "caption" and
                    str(c.value).startswith("#")]
        boxes = [e.value for e in walk(node) if getattr(e, "type", None) == "error"]
        if len(captions) == 1 and any("orphan-tool" in b for b in boxes):
            cards.append(captions[0])
    assert cards, "an orphan-tool box inside a message card"
    index = {int(c.split(" ")[0][1:]) for c in cards}
    assert index == {target.index}
    assert trace.calls[target.call].messages[target.index]["role"] == "tool"
    # The provider's exact text is shown as code.
    assert any(target.api_error in c.value for c in at.code)


def test_classic_flow_has_no_problem_under_openai_but_fails_under_bedrock(open_studio):
    at = open_studio(SAMPLE_TRACES / "classic_remembers.jsonl", "screens/timeline.py")
    column = list(at.dataframe[0].value["findings"])
    assert column == [""] * 4
    assert at.metric[2].value == "0"
    at.number_input(key="call_input").set_value(2).run()
    assert [b.value for b in at.info if "tools-missing-for-history" in b.value]    # still explained, as a note
    assert not [w for w in at.warning if "tools-missing-for-history" in w.value]
    at.sidebar.selectbox(key="profile").set_value("bedrock").run()
    column = list(at.dataframe[0].value["findings"])
    assert column == ["", "", "tools-missing-for-history", ""]
    assert [e for e in at.error if "tools-missing-for-history" in e.value]
    assert ("The toolConfig field must be defined when using toolUse and toolResult content blocks."
            in [c.value for c in at.code])


def test_tokens_chart_equals_the_traces_usage(open_studio):
    path = SAMPLE_TRACES / "classic_remembers.jsonl"
    trace = read_trace(path)
    at = open_studio(path, "screens/tokens.py")
    roles = plotly_spec(at, 0)
    bars = [d for d in roles["data"] if d["type"] == "bar"]
    totals = [sum(b["y"][i] for b in bars) for i in range(len(trace.calls))]
    usage = [c.usage["prompt_tokens"] for c in trace.calls]
    assert totals == usage
    counter = counter_for(trace.calls[0].model)
    assert totals == [counter.count_payload(c.messages, c.tools) for c in trace.calls]
    by_name = {b["name"]: b["y"] for b in bars}
    assert by_name["tool results"] == [counter.count_by_role(c.messages, c.tools)["tool"] for c in trace.calls]
    reported = plotly_spec(at, 2)
    series = {d["name"]: d for d in reported["data"]}
    assert series["reported (usage.prompt_tokens)"]["y"] == usage
    cumulative = plotly_spec(at, 1)
    tokens_line = next(d for d in cumulative["data"] if d["name"] == "cumulative prompt tokens")
    assert tokens_line["y"][-1] == sum(usage)
    assert at.metric[1].value == f"{sum(usage):,}"


def test_diff_of_call_3_lists_the_added_messages(open_studio):
    path = SAMPLE_TRACES / "classic_remembers.jsonl"
    trace = read_trace(path)
    at = open_studio(path, "screens/timeline.py")
    at.number_input(key="call_input").set_value(3).run()
    at.session_state["timeline_tab"] = "Diff vs previous call"    # lazy tabs: only the open one is built
    at.run()
    assert not at.exception
    prev, cur = trace.calls[2].messages, trace.calls[3].messages
    added = cur[len(prev):]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Added"] == str(len(added))
    assert metrics["Kept"] == str(len(prev))
    assert metrics["Dropped"] == "0"
    tab = at.tabs[1]
    assert tab.label == "Diff vs previous call"
    shown = [t.value for t in walk(tab) if getattr(t, "type", None) == "text"]
    for m in added:
        assert m["content"] in shown
    captions = [c.value for c in walk(tab) if getattr(c, "type", None) == "caption" and str(c.value).startswith("#")]
    assert captions == [f"#{len(prev) + i} · {counter_for(None).count_message(m):,} tokens" for i, m in
                        enumerate(added)]


def test_dropped_messages_show_their_trim_event(open_studio):
    path = SAMPLE_TRACES / "naive_trim_orphan.jsonl"
    at = open_studio(path, "screens/timeline.py")
    at.number_input(key="call_input").set_value(3).run()
    at.session_state["timeline_tab"] = "Diff vs previous call"
    tab = at.run().tabs[1]
    texts = [t.value for t in walk(tab) if getattr(t, "type", None) == "text"]
    assert any(t.startswith("naive-drop-oldest") or "max_messages" in t for t in texts)


def test_language_switch(open_studio):
    at = open_studio(SAMPLE_TRACES / "classic_remembers.jsonl", "screens/timeline.py")
    at.sidebar.segmented_control(key="lang").set_value("zh").run()
    assert not at.exception
    assert at.title[0].value == "时间线"
    assert at.metric[0].label == "调用"
    # message content is not translated
    assert "我叫小明" in [t.value for t in at.text]


def test_pasted_garbage_gets_one_sentence(open_studio):
    at = open_studio(None)
    at.text_area(key="paste_text").input("{not json").run()
    at.button(key="paste_open").click().run()
    assert not at.exception
    assert len(at.error) == 1
    assert "\n" not in at.error[0].value and len(at.error[0].value) < 300


def test_pasted_payload_opens(open_studio):
    at = open_studio(None)
    body = ('{"model": "gpt-4o", "messages": [{"role": "system", "content": "s"}, {"role": "tool", '
            '"tool_call_id": "call_x", "content": "42"}]}')
    at.text_area(key="paste_text").input(body).run()
    at.button(key="paste_open").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.sidebar.selectbox(key="trace_pick").value.startswith("paste:")
    at.switch_page("screens/lint.py").run()
    assert not at.exception
    assert "orphan-tool" in at.dataframe[0].value["rule"].tolist()


def test_no_trace_shows_an_empty_state(open_studio, monkeypatch, tmp_path):
    monkeypatch.setattr("agent_core.core.paths.SAMPLE_TRACES", tmp_path / "none")
    import studio.services as services
    monkeypatch.setattr(services, "SAMPLE_TRACES", tmp_path / "none")
    at = open_studio(None, "screens/timeline.py")
    assert not at.exception
    assert at.info and at.info[0].value.startswith("No trace is open")


def test_learn_page_shows_the_exact_api_errors(open_studio):
    at = open_studio(None, "screens/learn.py")
    codes = [c.value for c in at.code]
    assert any("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
               "'tool_calls'." in c for c in codes)
    assert any("did not have response messages" in c for c in codes)
    at.pagination(key="learn_step").set_value(3).run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Step 3 of 7")


def test_lint_page_filters_jumps_and_repairs(open_studio):
    path = SAMPLE_TRACES / "naive_trim_orphan.jsonl"
    trace = read_trace(path)
    expected = [f.export() for f in lint_trace(trace)]
    at = open_studio(path, "screens/lint.py")
    table = at.dataframe[0].value
    rank = {"error": 0, "warning": 1, "info": 2}
    ordered = sorted(expected, key=lambda f: (rank[f["severity"]], f["call"], f["index"] if f["index"] is not None
                                              else -1))
    assert table["rule"].tolist() == [f["rule"] for f in ordered], "errors first, then by call"
    assert table["call"].tolist() == [f["call"] for f in ordered]
    at.multiselect(key="lint_sev").set_value(["error"]).run()
    table = at.dataframe[0].value
    assert set(table["rule"]) == {"orphan-tool"} and len(table) == sum(f["severity"] == "error" for f in expected)
    # The selected finding is an orphan-tool error: repair it.
    assert at.selectbox(key="lint_pick").value == 0
    metrics = {m.label: m.value for m in at.metric}
    first = next(f for f in expected if f["severity"] == "error")
    assert metrics[f"Edits to call {first['call']}"] != "0"
    assert metrics["Errors left"] == "0"
    at.button(key="lint_go").click().run()
    assert not at.exception
    assert at.title[0].value == "Timeline"
    assert at.header[0].value == f"Call {first['call']}"


def test_timeline_stepper(open_studio):
    at = open_studio(SAMPLE_TRACES / "classic_remembers.jsonl", "screens/timeline.py")
    assert at.button(key="call_prev").disabled
    at.button(key="call_next").click().run()
    assert at.header[0].value == "Call 1"
    at.switch_page("screens/tokens.py").run()
    at.switch_page("screens/timeline.py").run()
    assert at.header[0].value == "Call 1", "the selected call survives a page switch"


@pytest.mark.parametrize("content", [b"", b"not json at all\n", b'{"type": "header", "format": "chain-studio-trace", '
                                     b'"version": 99}\n', b"\xff\xfe\x00binary"],
                         ids=["empty", "garbage", "future-version", "binary"])
def test_a_broken_file_gets_one_sentence_on_every_page(open_studio, tmp_path, content):
    path = tmp_path / "broken.jsonl"
    path.write_bytes(content)
    at = open_studio(path)
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        assert at.title[0].value == PAGES[page], "the error sits under the page's title"
        if page in ("screens/timeline.py", "screens/tokens.py", "screens/lineage.py", "screens/lint.py"):
            assert len(at.error) == 1, (page, [e.value for e in at.error])
            message = at.error[0].value
            assert "\n" not in message and "Traceback" not in message and len(message) < 400, message


def test_real_traces_open_on_every_page(open_studio, real_traces):
    """One file per real-trace format (tau-bench, ToolBench legacy function_call, SWE-agent .traj)."""
    picks = [next(iter(sorted(d.rglob(pattern)))) for d, pattern in (
        (real_traces / "tau-bench-gpt-4o-airline", "*.json"),
        (real_traces / "toolbench-chatgpt-function-call", "*.json"),
        (real_traces / "swe-agent-function-calling-demos", "*.traj"))]
    for path in picks:
        at = open_studio(path)
        for page in PAGES:
            at.switch_page(page).run()
            assert not at.exception, (path.name, page, [e.message for e in at.exception])
        at.switch_page("screens/timeline.py").run()
        assert int(at.metric[0].value.replace(",", "")) >= 1, path.name


def test_uploaded_file_opens_and_gets_a_summary_row(open_studio):
    data = (SAMPLE_TRACES / "classic_remembers.jsonl").read_bytes()
    at = open_studio(None)
    at.file_uploader(key="upload").upload("mine.jsonl", data).run()
    assert not at.exception, [e.message for e in at.exception]
    pick = at.sidebar.selectbox(key="trace_pick").value
    assert pick.startswith("upload:")
    assert "mine.jsonl (upload)" in [t.value for t in at.text]
    at.switch_page("screens/timeline.py").run()
    assert at.metric[0].value == str(len(read_trace(SAMPLE_TRACES / "classic_remembers.jsonl").calls))


def test_lineage_lists_the_calls_that_carried_a_message(open_studio):
    from studio.viewmodels.lineage import calls_including, compact_ranges

    path = SAMPLE_TRACES / "long_trimmed_fact.jsonl"
    trace = read_trace(path)
    at = open_studio(path, "screens/lineage.py")
    first_user = next(m for m in trace.stream if m.role == "user")
    at.selectbox(key="lineage_msg").set_value(trace.stream.index(first_user)).run()
    assert not at.exception
    calls = calls_including(trace, first_user.id)
    assert at.success[0].value == f"Sent in {len(calls)} call(s): {compact_ranges(calls)}"
    removed = trace.event_that_removed(first_user.id)
    assert removed is not None, "the 60-round sample trims its first user message"
    assert removed.event.reason in [t.value for t in at.text]
    at.selectbox(key="lineage_call").set_value(calls[-1]).run()
    at.button(key="lineage_go").click().run()
    assert at.title[0].value == "Timeline" and at.header[0].value == f"Call {calls[-1]}"


def test_lineage_takes_a_call_number_when_a_message_was_sent_in_very_many_calls(open_studio, tmp_path):
    """Over ``CALL_OPTIONS`` calls the Lineage page asks for a call number instead of listing every call (25,000
    options took 0.4 s in the browser); a call that did not send the message is refused, never shown as one."""
    from agent_core.trace.synthetic import synthetic_trace
    from agent_core.trace.writer import write_trace

    trace = synthetic_trace(1_100)
    first_user = next(m for m in trace.stream if m.role == "user")
    gap = trace.calls[600]          # one call that left the first user message out
    keep = [i for i, mid in enumerate(gap.message_ids) if mid != first_user.id]
    gap.request = {**gap.request, "messages": [gap.request["messages"][i] for i in keep]}
    gap.message_ids = [gap.message_ids[i] for i in keep]
    path = tmp_path / "many.jsonl"
    write_trace(trace, path)
    sent = [c.index for c in read_trace(path).calls if first_user.id in c.message_ids]    # the file's own payloads
    assert len(sent) > 1_000 and 600 not in sent
    at = open_studio(path, "screens/lineage.py")
    at.selectbox(key="lineage_msg").set_value(1).run()      # the first user message
    assert not at.exception
    assert at.success[0].value.startswith(f"Sent in {len(sent):,} call(s): ")
    assert not [s for s in at.selectbox if s.key == "lineage_call"]
    at.number_input(key="lineage_call_number").set_value(600).run()
    at.button(key="lineage_go").click().run()
    assert at.error[0].value == "Call 600 did not include this message." and at.title[0].value == "Lineage"
    at.number_input(key="lineage_call_number").set_value(sent[-1]).run()
    at.button(key="lineage_go").click().run()
    assert at.title[0].value == "Timeline" and at.header[0].value == f"Call {sent[-1]}"


# List prices, USD per 1M tokens (input, output), from https://openai.com/api/pricing.
LIST_PRICES = {"gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.00), "gpt-4.1": (2.00, 8.00)}


def _usage_cost(trace, model: str) -> float:
    price_in, price_out = LIST_PRICES[model]
    return sum(c.usage["prompt_tokens"] * price_in + c.usage["completion_tokens"] * price_out
               for c in trace.calls) / 1_000_000


def _cost_metric(at):
    return next(m for m in at.metric if m.label == "Estimated cost")


def test_cost_follows_the_chosen_price(open_studio):
    path = SAMPLE_TRACES / "classic_remembers.jsonl"
    trace = read_trace(path)
    at = open_studio(path, "screens/tokens.py")
    at.selectbox(key="price_model").set_value("gpt-4o").run()
    assert _cost_metric(at).value == f"${_usage_cost(trace, 'gpt-4o'):.4f}"
    assert _cost_metric(at).delta == "priced as gpt-4o"


def test_the_unpriced_demo_model_is_priced_as_a_named_model(open_studio):
    """The demo model has no price: the cost is gpt-4o-mini's, never a silent $0, and it says so."""
    path = SAMPLE_TRACES / "classic_remembers.jsonl"
    trace = read_trace(path)
    assert set(trace.models) == {"chain-studio-demo-model"}
    at = open_studio(path, "screens/tokens.py")
    assert at.selectbox(key="price_model").value == "gpt-4o-mini"
    assert "chain-studio-demo-model" not in at.selectbox(key="price_model").options
    cost = _usage_cost(trace, "gpt-4o-mini")
    assert cost > 0 and _cost_metric(at).value == f"${cost:.4f}"
    assert _cost_metric(at).delta == "priced as gpt-4o-mini"
    cumulative = plotly_spec(at, 1)
    assert [d["name"] for d in cumulative["data"]][1] == "cumulative cost (USD, priced as gpt-4o-mini)"


def test_a_priced_model_is_priced_as_itself_until_another_is_picked(open_studio, tmp_path):
    path = tmp_path / "gpt4o.jsonl"
    text = (SAMPLE_TRACES / "classic_remembers.jsonl").read_text(encoding="utf-8")
    path.write_text(text.replace("chain-studio-demo-model", "gpt-4o-2024-08-06"), encoding="utf-8")
    trace = read_trace(path)
    assert set(trace.models) == {"gpt-4o-2024-08-06"}
    at = open_studio(path, "screens/tokens.py")
    assert at.selectbox(key="price_model").value == "gpt-4o"
    assert _cost_metric(at).value == f"${_usage_cost(trace, 'gpt-4o'):.4f}"
    assert _cost_metric(at).delta == "gpt-4o list price"
    at.selectbox(key="price_model").set_value("gpt-4.1").run()
    assert _cost_metric(at).value == f"${_usage_cost(trace, 'gpt-4.1'):.4f}"
    assert _cost_metric(at).delta == "priced as gpt-4.1"


def test_lint_profile_follows_the_sidebar_both_ways(open_studio):
    from agent_core.lint.profiles import PROFILES

    other = next(p for p in PROFILES if p != "openai")
    at = open_studio(SAMPLE_TRACES / "naive_trim_orphan.jsonl", "screens/lint.py")
    at.selectbox(key="lint_profile").set_value(other).run()
    assert at.sidebar.selectbox(key="profile").value == other
    at.sidebar.selectbox(key="profile").set_value("openai").run()
    assert at.selectbox(key="lint_profile").value == "openai"


def test_learn_page_in_chinese(open_studio):
    at = open_studio(None, "screens/learn.py")
    at.sidebar.segmented_control(key="lang").set_value("zh").run()
    assert not at.exception
    assert at.title[0].value == "学习：一次工具调用的消息流程"
    assert at.subheader[0].value == "第 1 步，共 7 步：系统提示词"
    # payload content stays as generated (English)
    assert "You are a helpful assistant." in [t.value for t in at.text]


def test_raw_json_tab_says_whether_the_stored_body_is_byte_identical(open_studio, tmp_path):
    """A call recorded by the client carries the sha256 of the bytes sent: verified; a sample from before: no hash."""
    from agent_core.chat.session import ChatSession

    path = tmp_path / "recorded.jsonl"
    session = ChatSession.start(trace_path=path)
    try:
        session.handle("我叫小明")
    finally:
        session.close()
    for trace, expected in ((path, "byte-identical: verified"),
                            (SAMPLE_TRACES / "classic_remembers.jsonl", "no raw-bytes hash recorded")):
        at = open_studio(trace, "screens/timeline.py")
        at.session_state["timeline_tab"] = "Raw JSON"
        badges = [str(m.value) for m in at.run().markdown if "badge[" in str(m.value)]
        assert any(expected in b for b in badges), badges


def test_an_inferred_drop_is_labelled_as_inferred_with_its_evidence(open_studio, tmp_path):
    """Payloads alone have no memory events: the drop read from call 2's payload is marked inferred, not recorded."""
    sys_m, u1, a1 = {"role": "system", "content": "s"}, {"role": "user", "content": "我叫小明"}, \
        {"role": "assistant", "content": "你好"}
    u2, a2, u3 = {"role": "user", "content": "天气"}, {"role": "assistant", "content": "晴"}, \
        {"role": "user", "content": "我叫什么？"}
    bodies = [[sys_m, u1], [sys_m, u1, a1, u2], [sys_m, u2, a2, u3]]
    from agent_core.ingest.payload_log import trace_from_requests
    from agent_core.trace.writer import write_trace

    path = tmp_path / "inferred.jsonl"      # what the recording proxy writes: payloads and their inferred events
    write_trace(trace_from_requests([{"model": "gpt-4o", "messages": b} for b in bodies]), path)
    at = open_studio(path, "screens/timeline.py")
    at.number_input(key="call_input").set_value(2).run()
    at.session_state["timeline_tab"] = "Diff vs previous call"
    diff_tab = at.run().tabs[1]
    badges = [str(m.value) for m in walk(diff_tab) if "badge[" in str(getattr(m, "value", ""))]
    assert sum("inferred from the payloads, not recorded" in b for b in badges) == 2, badges     # u1 and a1
    captions = [str(c.value) for c in walk(diff_tab) if getattr(c, "type", None) == "caption"]
    assert any(c.startswith("Evidence: the inferred trim event") for c in captions), captions
    recorded = open_studio(SAMPLE_TRACES / "naive_trim_orphan.jsonl", "screens/timeline.py")
    recorded.number_input(key="call_input").set_value(3).run()
    recorded.session_state["timeline_tab"] = "Diff vs previous call"
    recorded.run()
    assert recorded.tabs[1].children, "the diff tab is open"
    assert not any("inferred from the payloads" in str(getattr(m, "value", "")) for m in walk(recorded.tabs[1]))
