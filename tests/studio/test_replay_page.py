"""The Replay page (AppTest): policies side by side, token chart, retention heatmap, diffs, counterfactual."""
from __future__ import annotations

from conftest import HOSTILE, plotly_spec, walk

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.replay.engine import chat_calls, replay
from agent_core.replay.probes import probe_from_text, recorded_retention
from agent_core.trace.reader import read_trace
from agent_core.trim.window import MaxMessages, NaiveDropOldest

LONG = SAMPLE_TRACES / "long_trimmed_fact.jsonl"
PAGE = "screens/replay.py"
FACT = "A-2024-0715"


def _texts(node) -> list[str]:
    return [str(e.value) for e in walk(node) if getattr(e, "type", None) == "text"]


def test_replay_page_shows_two_policies_charts_and_the_diagnosis(open_studio):
    at = open_studio(LONG, PAGE)
    assert at.title[0].value == "Replay"
    trace = read_trace(LONG)
    recorded_total = replay(trace, MaxMessages(40)).totals["recorded_tokens"]
    metrics = {(m.label, i): m.value for i, m in enumerate(at.metric)}
    # first column: max-messages(40), the recorded policy -> same tokens, no change
    assert at.metric[0].label == "Prompt tokens" and at.metric[0].value == f"{recorded_total:,}"
    assert at.metric[2].label == "Rejected calls" and at.metric[2].value == "0"
    assert len(metrics) == 6
    tokens_chart = plotly_spec(at, 0)
    names = [t["name"] for t in tokens_chart["data"]]
    # the page's defaults are the CLI's (the policy's config): 8,000 tokens, an eighth reserved; the recorded
    # line is drawn last, on top of the policies' (it equals max-messages(40) here), and listed first
    assert names == ["max-messages(max_messages=40)", "token-budget(max_tokens=8000, reserve_for_output=1000)",
                     "recorded"]
    assert tokens_chart["data"][-1]["legendrank"] < 1000       # plotly's default rank
    heat = plotly_spec(at, 1)["data"][0]
    assert heat["type"] == "heatmap"
    assert heat["y"][0] == f"recorded · {FACT}"
    gone = recorded_retention(trace, [probe_from_text(FACT)]).rows[0].first_gone
    calls = [c.index for c in chat_calls(trace)]
    assert heat["x"] == calls
    assert heat["z"][0][calls.index(gone)] == 0 and heat["z"][0][calls.index(gone) - 1] == 1
    texts = _texts(at.main)
    # One readable line per outcome: the call, the policy and the user's message quoted (no ids, no "after add").
    line = next(t for t in texts if t.startswith(f"• Forgotten at call {gone}: max-messages removed the user's message"))
    assert FACT in line and "msg_" not in line and "after add" not in line


def test_switching_to_naive_drop_oldest_highlights_the_orphan_it_introduces(open_studio):
    at = open_studio(LONG, PAGE)
    at.selectbox(key="replay_policy_1").set_value("naive-drop-oldest").run()
    assert not at.exception, [e.message for e in at.exception]
    naive = replay(read_trace(LONG), NaiveDropOldest(40))
    assert at.metric[5].value == str(naive.totals["rejected"]) != "0"
    bad_call = next(c.call for c in naive.calls if c.rejected)
    at.selectbox(key="replay_call").set_value(bad_call).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("orphan-tool" in e for e in errors), errors
    assert any(t.startswith("kept ") and "added 1" in t for t in _texts(at.main))


def test_custom_probes_and_a_bad_regex(open_studio):
    at = open_studio(LONG, PAGE)
    assert len(at.text_area) == 1
    at.text_area[0].set_value("工号\nre:A-\\d{4}").run()
    assert not at.exception
    heat = plotly_spec(at, 1)["data"][0]
    assert heat["y"][:2] == ["recorded · 工号", "recorded · re:A-\\d{4}"] and len(heat["y"]) == 6
    at.text_area[0].set_value("re:(").run()
    assert not at.exception and at.error and _unescaped(at.error[0].value).startswith("A probe's regex does not compile")


def test_bad_compose_spec_is_one_sentence(open_studio):
    at = open_studio(LONG, PAGE)
    at.selectbox(key="replay_policy_1").set_value("compose").run()
    at.text_input(key="replay_1_compose_policies").set_value("nope:x=1").run()
    assert not at.exception
    assert _unescaped(at.error[0].value).startswith("unknown policy 'nope'")


def test_counterfactual_resend_through_the_demo_model(open_studio):
    at = open_studio(LONG, PAGE)
    at.selectbox(key="replay_policy_1").set_value("keep-all").run()
    at.selectbox(key="replay_resend_policy").set_value(1).run()
    at.button(key="replay_resend").click().run()
    assert not at.exception, [e.message for e in at.exception]
    texts = _texts(at.main)
    recorded = read_trace(LONG).calls[-1].reply["content"]
    assert recorded in texts                       # the recorded answer: forgotten
    assert any(FACT in t and "工号" in t for t in texts if t != recorded)   # keep-all still knows it


def test_hostile_trace_opens_and_stays_literal(open_studio):
    at = open_studio(HOSTILE, PAGE)
    assert not at.exception
    for node in walk(at.main):
        if getattr(node, "type", None) in ("markdown", "caption", "error", "warning", "info", "success"):
            assert "<script" not in str(node.value) and "onerror" not in str(node.value)
    for chart in at.get("plotly_chart"):
        assert "<script" not in chart.proto.spec and "<img" not in chart.proto.spec


def _unescaped(markdown: str) -> str:
    """An error box's text as shown: the page backslash-escapes punctuation so markdown shows it literally."""
    import re
    return re.sub(r"\\(.)", r"\1", markdown)


def test_every_bundled_sample_is_priced_and_says_as_what(open_studio):
    """The demo model has no price: the page prices it as gpt-4o-mini ($0.15 per 1M input tokens,
    openai.com/api/pricing), never at a silent $0, and says so next to the cost."""
    for path in sorted(SAMPLE_TRACES.glob("*.jsonl")):
        if path.name.startswith("responses_"):   # replayed by item groups, no cost columns: test_responses_views.py
            continue
        at = open_studio(path, PAGE)
        assert not at.exception, (path.name, [e.message for e in at.exception])
        assert at.selectbox(key=next(k for k in _keys(at) if k.startswith("replay_price_as_"))).value == "gpt-4o-mini"
        for col in (0, 3):                                  # the two policy columns
            tokens = int(at.metric[col].value.replace(",", ""))
            assert at.metric[col + 1].label == "Est. cost"
            assert at.metric[col + 1].value == f"${tokens * 0.15 / 1e6:.4f}" != "$0.0000", path.name
        captions = [c.value for c in at.caption]
        assert captions.count("Est. cost: priced as gpt-4o-mini") == 2, path.name


def test_price_as_another_model_reprices_every_column(open_studio):
    at = open_studio(LONG, PAGE)
    key = next(k for k in _keys(at) if k.startswith("replay_price_as_"))
    at.selectbox(key=key).set_value("gpt-4o").run()
    assert not at.exception
    tokens = int(at.metric[0].value.replace(",", ""))
    assert at.metric[1].value == f"${tokens * 2.50 / 1e6:.4f}"       # gpt-4o: $2.50 per 1M input tokens
    assert "Est. cost: priced as gpt-4o" in [c.value for c in at.caption]


def _keys(at) -> list[str]:
    return [str(s.key) for s in at.selectbox if s.key]


def test_a_big_trace_replays_under_a_progress_bar_once_per_policy(open_studio, tmp_path, monkeypatch):
    import uuid

    from streamlit.elements.progress import ProgressMixin

    from studio import replay_services as rs
    path = tmp_path / "long.jsonl"       # a digest no earlier test has replayed
    path.write_text(LONG.read_text(encoding="utf-8").replace('"meta":{', f'"meta":{{"run":"{uuid.uuid4().hex}",', 1),
                    encoding="utf-8")
    n = len(read_trace(path).calls)
    monkeypatch.setattr(rs, "PROGRESS_CALLS", 10)       # this trace counts as big here
    shown: list[str] = []
    real = ProgressMixin.progress
    monkeypatch.setattr(ProgressMixin, "progress",
                        lambda self, value, text=None, **kw: shown.append(text) or real(self, value, text=text, **kw))
    at = open_studio(path, PAGE)
    assert not at.exception
    replaying = [t for t in shown if t and t.startswith("Replaying")]
    assert replaying == [f"Replaying {n:,} calls under max-messages (1 of 2) …",
                         f"Replaying {n:,} calls under token-budget (2 of 2) …"]
    at.run()
    assert not at.exception and [t for t in shown if t and t.startswith("Replaying")] == replaying   # cached: no bar


def test_a_call_that_drops_thousands_of_messages_lists_them_a_page_at_a_time(open_studio, tmp_path):
    """One request body of 3,000 messages under max-messages (40) drops 2,960 at that call: the page lists 50 a page
    (it used to draw every one, 400,000 elements for a 200,000-message body)."""
    import json

    body = {"model": "gpt-4o", "messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
                                            for i in range(3000)]}
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(body))
    at = open_studio(path, PAGE)
    labels = [e.label for e in at.expander if "Dropped since the previous call" in (e.label or "")]
    assert "Dropped since the previous call (2,960)" in labels
    assert not [t for t in at.text if " · max-messages" in t.value]      # closed: nothing drawn
    at.session_state["replay_dropped_max-messages_0"] = True               # opened: one page of 50
    at.run()
    drop_lines = [t.value for t in at.text if " · max-messages" in t.value]
    assert len(drop_lines) == 50 and drop_lines[0].startswith("user · max-messages: ")


def test_the_heatmap_speaks_chinese_under_zhongwen(open_studio):
    """Under 中文 the recorded rows and the hover say so in Chinese; a policy keeps its name and the fact stays as
    the trace has it."""
    at = open_studio(LONG, PAGE)
    at.sidebar.segmented_control(key="lang").set_value("zh").run()
    assert not at.exception, [e.message for e in at.exception]
    heat = plotly_spec(at, 1)["data"][0]
    assert heat["y"][0] == f"实际记录 · {FACT}"
    assert sorted({y.split(" · ")[0] for y in heat["y"]}) == [
        "max-messages(max_messages=40)", "token-budget(max_tokens=8000, reserve_for_output=1000)", "实际记录"]
    assert heat["hovertemplate"].startswith("调用 ")
