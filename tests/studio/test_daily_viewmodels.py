"""View models of the daily-tool features (issue 16): drops per call, search, filters, Chinese texts,
"Why did it forget?", content parts, compare, deep links; and the pages that use them (AppTest).

Expected values come from the payloads themselves (what a call sent or did not send), from the real
trim policy, from Pillow's PNG encoder, or from the sample's README; not from the code under test.
"""
from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import pytest

from agent_core.core.msg import Msg
from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest.detect import load_any
from agent_core.lint.rules import RULES
from agent_core.replay import probes as P
from agent_core.replay.calls import call_position
from agent_core.replay.engine import policy_for_trace, replay
from agent_core.trace.reader import read_trace
from agent_core.trim.window import MaxMessages
from benchmarks.synthetic import generate
from studio.viewmodels import forgetting, zh
from studio.viewmodels.compare import compare_traces
from studio.viewmodels.content import human_bytes, split_content, tool_definitions
from studio.viewmodels.drops import drops_by_call
from studio.viewmodels.lineage import compact_ranges
from studio.viewmodels.search import SearchIndex, search, verbatim
from studio.viewmodels.timeline import filter_rows, page_of

REAL = Path(__file__).parents[1] / "fixtures" / "real_traces"
FACT = "我叫小明，我的工号是 A-2024-0715，请记住。"


@pytest.fixture(scope="module")
def long_trace():
    return read_trace(SAMPLE_TRACES / "long_trimmed_fact.jsonl")


def _sent(call, text: str) -> bool:
    return text in json.dumps(call.messages, ensure_ascii=False)


# --- drops and search ------------------------------------------------------------

def test_the_fact_is_marked_dropped_on_the_first_call_that_no_longer_sends_it(long_trace):
    calls = long_trace.calls
    gone = next(c.index for c in calls if c.index and _sent(calls[c.index - 1], FACT) and not _sent(c, FACT))
    dropped = drops_by_call(long_trace)
    assert FACT in [d.text for d in dropped[gone]]
    # No other call claims it.
    assert [c for c, ds in dropped.items() if any(d.text == FACT for d in ds)] == [gone]
    # A call without a drop has no entry (the column stays empty there).
    assert 0 not in dropped


@pytest.mark.parametrize("query", ["A-2024-0715", "a-2024-0715", "小明", "no such text anywhere"])
def test_search_lists_exactly_the_calls_whose_payload_holds_the_text(long_trace, query):
    expected = [c.index for c in long_trace.calls
                if query.casefold() in json.dumps(c.messages, ensure_ascii=False).casefold()]
    hit = search(long_trace, query)
    assert hit.carried == expected
    lost = [c for c in range(1, len(long_trace.calls)) if c - 1 in expected and c not in expected]
    assert [loss.call for loss in hit.losses] == lost


def _with_a_message_never_added(tmp_path):
    """long_trimmed_fact.jsonl with its last call also sending a body no add holds (a ``{"b": n}`` part of its
    runs)."""
    lines = (SAMPLE_TRACES / "long_trimmed_fact.jsonl").read_text(encoding="utf-8").splitlines()
    trace = read_trace(SAMPLE_TRACES / "long_trimmed_fact.jsonl")
    bodies = 1 + max(json.loads(line)["n"] for line in lines if json.loads(line).get("type") == "body")
    last = max(k for k, line in enumerate(lines) if json.loads(line).get("type") == "call")
    event = json.loads(lines[last])
    event["messages_ref"] = [list(p) for p in trace.calls[-1].payload.parts] + [{"b": bodies}]
    body = {"type": "body", "n": bodies, "value": {"role": "user", "content": "Injected Z-99"}}
    lines[last:last + 1] = [json.dumps(body), json.dumps(event, ensure_ascii=False)]
    path = tmp_path / "injected.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_any(path)


@pytest.mark.parametrize("source", ["sample", "injected", "tau-bench", "synthetic"])
def test_search_matches_a_scan_of_every_calls_whole_payload(source, long_trace, tmp_path):
    """The index reads each call as runs over shared bodies; the expected calls come from each call's own message
    list, every message scanned (runs, bodies in no add, and calls without runs all covered)."""
    if source == "sample":
        trace = long_trace
    elif source == "injected":
        trace = _with_a_message_never_added(tmp_path)
        assert any(type(p) is list for p in trace.calls[-1].payload.parts)
    elif source == "tau-bench":
        trace = load_any(REAL / "tau-bench-gpt-4o-airline" / "gpt-4o-airline.sample.json")
        assert all(c.payload is None for c in trace.calls)
    else:
        generate(tmp_path / "synthetic.jsonl", 400)
        trace = load_any(tmp_path / "synthetic.jsonl")
    index = SearchIndex(trace)
    for query in ("A-2024-0715", "injected z-99", "成都", "the", "ticket #1", "\"city\"", "no such text anywhere",
                  "İnjected", "invoıce", "我叫小明，我的工号是 A-2024"):
        pattern = re.compile("(?i)" + re.escape(query))
        expected = [c.index for c in trace.calls if c.purpose == "chat" and any(
            pattern.search(_scanned(m)) for m in c.messages)]
        assert index.search(query).carried == expected, query
        assert search(trace, query).carried == expected, query
    assert index.search("injected z-99").carried == ([trace.calls[-1].index] if source == "injected" else [])


def test_the_part_of_a_query_a_match_holds_as_typed_is_what_the_regex_engine_says():
    """``verbatim`` prefilters the search: it must only hold characters that a case-insensitive pattern matches to
    themselves alone. Checked against the real regex engine over every code point, for the characters it keeps, and
    for letters it must not keep (each matches several code points: "i" also "İ" and "ı", "k" the Kelvin sign)."""
    everything = "".join(map(chr, range(0x110000)))
    assert verbatim("A-2024-0715") == "-2024-0715"
    assert verbatim("工号是 A-2024-0715，请记住") == "-2024-0715，请记住"
    assert verbatim("invoice") == "" and verbatim("Ǆ") == ""
    for ch in "0123456789 -_#/:.,()[]{}\"'成都，。工号":
        assert verbatim(ch) == ch
        assert re.compile("(?i)" + re.escape(ch)).findall(everything) == [ch], ch
    for ch in "iksµ":
        assert verbatim(ch) == ""
        assert len(set(re.compile("(?i)" + re.escape(ch)).findall(everything))) > 2, ch


def _scanned(m) -> str:
    if not isinstance(m, dict):
        return str(m)
    content = m.get("content")
    text = content if isinstance(content, str) else "" if content is None else "\n".join(
        p["text"] if isinstance(p, dict) and isinstance(p.get("text"), str) else json.dumps(p, ensure_ascii=False)
        for p in content) if isinstance(content, list) else json.dumps(content, ensure_ascii=False)
    if isinstance(m.get("tool_calls"), list):
        text += "\n" + json.dumps(m["tool_calls"], ensure_ascii=False)
    return text


def test_search_names_the_message_that_took_the_fact_with_it(long_trace):
    hit = search(long_trace, "A-2024-0715")
    assert compact_ranges(hit.carried) == "0–19"
    (loss,) = hit.losses
    assert [d.text for d in loss.drops] == [FACT] and loss.drops[0].role == "user"
    assert loss.drops[0].policy == "max-messages"


# --- timeline rows: filters and the page that follows the selection -------------------

def test_filters_and_table_page():
    rows = [{"call": i, "findings": "orphan-tool" if i == 3 else "", "failed": i == 3, "dropped": "✂ 1" if i == 5 else ""}
            for i in range(8)]
    assert [r["call"] for r in filter_rows(rows, ["findings"])] == [3]
    assert [r["call"] for r in filter_rows(rows, ["dropped"])] == [5]
    assert filter_rows(rows, ["findings", "dropped"]) == []
    assert filter_rows(rows, []) == rows
    assert [page_of(i, 20) for i in (0, 19, 20, 4999)] == [1, 1, 2, 250]


# --- Chinese -------------------------------------------------------------------------

def test_every_rule_has_a_chinese_title_explanation_and_fix():
    missing = sorted(set(RULES) - set(zh.RULES_ZH))
    assert not missing, f"rules without a Chinese text: {missing}"
    for rule, (title, explanation, fix) in zh.RULES_ZH.items():
        # (keys for rules of other adapters are allowed: the lookup is by the finding's rule id)
        assert all(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in (title, explanation, fix)), rule


def test_the_real_max_messages_reason_is_translated():
    msgs = [Msg.from_openai({"role": "user", "content": f"m{i}"}) for i in range(5)]
    reason = MaxMessages(max_messages=3).apply(msgs).reason
    out = zh.reason_zh(reason)
    assert "max_messages=3" in out and "删除了最早的一条非 system 消息" in out
    assert "dropped" not in out
    assert zh.reason_zh("max-messages: " + reason).startswith("max-messages：超过")
    assert zh.reason_zh("some reason we never wrote") == "some reason we never wrote"


# --- "Why did it forget?" -------------------------------------------------------------

def _stories(trace, probes, lang, results=()):
    matrices = P.diagnose(trace, probes, list(results))
    texts = {m.id: (m.role, m.text) for m in trace.stream}
    n = len(trace.stream)
    extra = {"recorded": forgetting.SourceDrops({d.msg_id: d for d in P.recorded_drops(trace)},
                                                {c.index: call_position(c, n) for c in trace.calls})}
    for r in results:
        extra[r.label] = forgetting.SourceDrops({d.msg_id: d for d in r.drops}, {c.call: c.position for c in r.calls})
    return forgetting.stories(matrices, texts, lang, extra)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_forgetting_blames_the_users_words_and_shows_no_ids(long_trace, lang):
    # Typed probes carry no origin: the blame must still go to the user's message, not the greeting after it.
    probes = [P.probe_from_text("A-2024-0715"), P.probe_from_text("小明")]
    for story in _stories(long_trace, probes, lang):
        (outcome,) = story.outcomes
        assert outcome.forgotten and outcome.calls == (0, 20)
        assert FACT in outcome.text and "你好，小明" not in outcome.text, outcome.text
        assert "msg_" not in outcome.text and "after add" not in outcome.text and "--" not in outcome.text
        if lang == "zh":
            assert outcome.text.startswith("第 20 次调用时忘了") and "dropped the oldest" not in outcome.text


def test_recorded_and_a_policy_that_did_the_same_share_one_line(long_trace):
    same = replay(long_trace, policy_for_trace("max-messages", {"max_messages": 40}, long_trace))
    roomy = replay(long_trace, policy_for_trace("max-messages", {"max_messages": 400}, long_trace))
    (story,) = _stories(long_trace, [P.probe_from_text("A-2024-0715")], "en", [same, roomy])
    assert [o.sources for o in story.outcomes] == [("recorded", same.label), (roomy.label,)]
    assert story.outcomes[1].text.startswith("Not forgotten")


# --- content parts and tools ---------------------------------------------------------------

def test_an_inline_image_is_a_thumbnail_with_its_byte_size_not_base64():
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(buf, format="PNG")
    png = buf.getvalue()
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    content = split_content([{"type": "text", "text": "what is this?"},
                             {"type": "image_url", "image_url": {"url": url}},
                             {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}}])
    assert content.text == "what is this?"
    image, remote = content.parts
    assert (image.kind, image.mime, image.size, image.data) == ("image", "image/png", len(png), png)
    assert remote.kind == "image-url" and remote.data is None and remote.ref == "https://example.com/x.png"
    assert "base64" not in content.text
    assert human_bytes(len(png)) == f"{len(png)} B" and human_bytes(1536) == "1.5 KB"


def test_tool_definitions_of_a_recorded_call():
    trace = read_trace(SAMPLE_TRACES / "classic_remembers.jsonl")
    tools = trace.calls[0].tools
    rows = tool_definitions(tools)
    assert [r["name"] for r in rows] == [t["function"]["name"] for t in tools]
    weather = next(r for r in rows if r["name"] == "get_weather")
    assert "city*" in weather["parameters"]


# --- compare -------------------------------------------------------------------------------

def test_compare_finds_where_two_runs_start_to_differ():
    left = read_trace(SAMPLE_TRACES / "classic_remembers.jsonl")
    right = read_trace(SAMPLE_TRACES / "history_not_passed.jsonl")
    pairs = compare_traces(left, right)
    assert len(pairs) == max(len(left.calls), len(right.calls))
    for p in pairs:
        a, b = left.calls[p.call].messages, right.calls[p.call].messages
        expected = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
        if expected is None and len(a) != len(b):
            expected = min(len(a), len(b))
        assert p.first_difference == expected
        assert p.same == (a == b and left.calls[p.call].tools == right.calls[p.call].tools)
    assert pairs[0].same and not pairs[1].same
    assert [p.call for p in compare_traces(left, right, 1, 3)] == [1, 2]


# --- pages (AppTest) -----------------------------------------------------------------------------

def test_a_deep_link_opens_call_20_with_the_dropped_fact_marked(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from agent_core.core.paths import PROJECT_ROOT

    monkeypatch.delenv("CHAIN_STUDIO_OPEN", raising=False)
    at = AppTest.from_file(str(PROJECT_ROOT / "studio" / "app.py"), default_timeout=120)
    at.query_params["trace"] = "long_trimmed_fact.jsonl"
    at.query_params["call"] = "20"
    at.run()
    at.switch_page("screens/timeline.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.header[0].value == "Call 20"
    texts = [t.value for t in at.text]
    assert f"user «{FACT}»" in texts
    # The table page holds the selected call, marked.
    frame = at.dataframe[0].value
    assert frame.loc[frame["call"] == 20, "at"].tolist() == ["▶"]
    assert frame.loc[frame["call"] == 20, "dropped"].tolist() == ["✂ 2"]
    # The URL follows the selection.
    at.number_input(key="call_input").set_value(21).run()
    assert at.query_params["call"] == ["21"] or at.query_params["call"] == "21"
    # A name the studio does not list opens nothing (a link never reads an arbitrary path).
    at2 = AppTest.from_file(str(PROJECT_ROOT / "studio" / "app.py"), default_timeout=120)
    at2.query_params["trace"] = "/etc/passwd"
    at2.run()
    assert any("does not list" in w.value for w in at2.warning)


def test_a_broken_paste_keeps_the_traces_page(open_studio):
    at = open_studio(None)
    at.text_area(key="paste_text").set_value("{not json").run()
    at.button(key="paste_open").click().run()
    assert not at.exception
    assert at.error, "the broken paste is reported"
    assert at.text_area(key="paste_text") is not None and at.button(key="paste_open") is not None
    assert any(s.value == "Bundled samples" for s in at.subheader)
    # The sample lines say what each teaches (the README's sentences).
    captions = [c.value for c in at.caption]
    assert any("orphan tool message" in c for c in captions)


def test_curl_goes_to_the_base_url_box_and_a_big_command_is_previewed(open_studio, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = open_studio(SAMPLE_TRACES / "huge_tool_result.jsonl", "screens/timeline.py")
    at.session_state["timeline_tab"] = "curl"        # lazy tabs: only the open one is built
    at.number_input(key="call_input").set_value(4).run()
    box = at.text_input(key="curl_base")
    assert box.value == "http://127.0.0.1:8765/v1"          # `chain-studio demo-model`'s port, not the recording's
    curl = [c.value for c in at.code if c.value.startswith("curl ")]
    assert curl and curl[0].startswith("curl http://127.0.0.1:8765/v1/chat/completions")
    box.set_value("https://gateway.example.test/v1").run()
    curl = [c.value for c in at.code if c.value.startswith("curl ")]
    assert curl[0].startswith("curl https://gateway.example.test/v1/chat/completions")
    # The recorded payload is over 20,000 characters and under the 100 KB plain-text threshold
    # (studio/viewmodels/preview.py): the whole command, highlighted, ending with the body it re-sends.
    trace = read_trace(SAMPLE_TRACES / "huge_tool_result.jsonl")
    assert len(json.dumps(trace.calls[4].request, ensure_ascii=False)) > 20_000
    from agent_core.apis.chat_completions import CHAT_COMPLETIONS
    assert curl[0] == CHAT_COMPLETIONS.curl(trace.calls[4].request, "https://gateway.example.test/v1")


def test_exports_of_a_call_and_the_report_come_from_the_export_layer():
    from studio import call_services, services

    source = services.Source("sample:x", "naive_trim_orphan.jsonl", "sample", str(SAMPLE_TRACES / "naive_trim_orphan.jsonl"))
    loaded = services.load(source)
    body = json.loads(call_services.export_call(loaded, 3, "json"))
    assert body == read_trace(SAMPLE_TRACES / "naive_trim_orphan.jsonl").calls[3].request
    compile(call_services.export_call(loaded, 3, "pytest"), "exported.py", "exec")
    curl = call_services.export_call(loaded, 3, "curl", base_url="http://127.0.0.1:8765/v1")
    assert curl.startswith('curl "${OPENAI_BASE_URL:-http://127.0.0.1:8765/v1}/chat/completions"'), curl[:120]
    report = call_services.export_report(loaded, "openai")
    assert report.lstrip().lower().startswith("<!doctype html") and "<script" not in report.lower()


def test_every_trim_policys_real_reason_has_a_chinese_translation(long_trace):
    """Each policy of the registry, replayed for real until it drops something: its reason is translated
    (a new policy or a reworded reason fails here until zh.py knows it)."""
    from agent_core.trim import registry

    dropping = set()
    for name in registry.POLICIES:
        takes = {p.name for p in registry.policy_params(name)}
        result = replay(long_trace, policy_for_trace(name, {"max_tokens": 1500} if "max_tokens" in takes else {},
                                                     long_trace))
        for reason in {d.reason for d in result.drops}:
            dropping.add(name)
            assert zh.reason_zh(reason) != reason, (name, reason)
    # The policies that trim a Chat Completions history all dropped something, so each was checked.
    assert {"max-messages", "naive-drop-oldest", "sliding-window", "token-budget", "summary-window",
            "langchain-trim-last"} <= dropping, dropping


def test_every_price_label_has_a_chinese_translation():
    """The labels core.models writes: a model's own list price and a price borrowed from another model."""
    from agent_core.core.models import DEFAULT_PRICE_AS, price_as

    own, other, unpriced = price_as(["gpt-4o"], None), price_as(["gpt-4o"], "gpt-4o-mini"), price_as(["demo"], None)
    assert zh.price_label_zh(own.label) == "gpt-4o 标价"
    assert zh.price_label_zh(other.label) == "按 gpt-4o-mini 计价"
    assert zh.price_label_zh(unpriced.label) == f"按 {DEFAULT_PRICE_AS} 计价"


def test_the_tokens_page_names_its_price_in_chinese(open_studio):
    at = open_studio(SAMPLE_TRACES / "classic_remembers.jsonl", "screens/tokens.py")
    at.sidebar.segmented_control(key="lang").set_value("zh").run()
    assert not at.exception
    [cost] = [m for m in at.metric if m.label == "估算费用"]
    assert "计价" in cost.proto.delta or "标价" in cost.proto.delta, cost.proto.delta


def test_a_dropped_tool_call_turn_is_described_by_its_call():
    trace = read_trace(SAMPLE_TRACES / "naive_trim_orphan.jsonl")
    texts = [d.text for d in drops_by_call(trace)[3]]
    call = next(m for m in trace.calls[2].messages if m.get("tool_calls"))
    fn = call["tool_calls"][0]["function"]
    assert f"→ {fn['name']}({fn['arguments']})" in texts


def test_a_link_naming_only_the_call_opens_it_in_the_opened_trace(monkeypatch):
    """``chain-studio open FILE`` then ``/timeline?call=20``: the call is opened in FILE, not reset to 0 when the
    first trace is picked."""
    from streamlit.testing.v1 import AppTest

    from agent_core.core.paths import PROJECT_ROOT, SAMPLE_TRACES

    monkeypatch.setenv("CHAIN_STUDIO_OPEN", str(SAMPLE_TRACES / "long_trimmed_fact.jsonl"))
    at = AppTest.from_file(str(PROJECT_ROOT / "studio" / "app.py"), default_timeout=120)
    at.query_params["call"] = "20"
    at.run()
    at.switch_page("screens/timeline.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.header[0].value == "Call 20"
    frame = at.dataframe[0].value
    assert frame.loc[frame["call"] == 20, "at"].tolist() == ["▶"]
