"""Untrusted content never reaches markdown; the chat page records a trace; a 1,000-call trace paginates."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import make_hostile
import pytest
from conftest import HOSTILE, PAGES, walk

from agent_core.core.msg import Msg
from agent_core.trace.events import CallAttempt
from agent_core.trace.reader import read_trace
from agent_core.trace.writer import TraceWriter

# Element types Streamlit renders as markdown (or HTML labels): trace data must never be in them.
_MARKDOWN_TYPES = {"markdown", "caption", "error", "warning", "info", "success", "title", "header", "subheader",
                   "badge"}
_DANGER = ("<script", "<img", "<svg", "onerror=", "onload=", "](javascript:", "javascript:alert", ":red[", "<b>",
           "<i>", "$x^2$", "**not bold**")
HOSTILE_NAME = "<img src=x onerror=alert('fname')> [a](javascript:alert('fname2')) :red[x] $y$.jsonl"


def _unescaped(value: str) -> str:
    """What markdown would interpret: backslash-escaped punctuation removed (it shows literally)."""
    return re.sub(r"\\[!-/:-@\[-`{-~]", "", value)


def _assert_no_live_markup(at, where: str) -> None:
    for node in walk(at.main):
        kind = getattr(node, "type", None)
        if kind in _MARKDOWN_TYPES:
            value = _unescaped(str(getattr(node, "value", "")))
            assert not any(d in value for d in _DANGER), (where, kind, value)
        label = getattr(getattr(node, "proto", None), "label", "")
        if isinstance(label, str):
            assert not any(d in label for d in _DANGER), (where, "label", label)


def test_fixture_is_current(tmp_path):
    fresh = make_hostile.build(tmp_path / "h.jsonl")
    assert read_trace(fresh).calls[0].request == read_trace(HOSTILE).calls[0].request


@pytest.mark.parametrize("page", list(PAGES))
def test_hostile_text_is_shown_literally_and_never_as_markdown(open_studio, page):
    at = open_studio(HOSTILE, page)
    literal = [getattr(e, "value", "") for e in walk(at.main) if getattr(e, "type", None) in ("text", "code")]
    _assert_no_live_markup(at, page)
    if page == "screens/timeline.py":
        # the tabs are lazy: open each one in turn, every one must render its markup inert
        for label in ("Diff vs previous call", "Raw JSON", "curl", "Response"):
            at.session_state["timeline_tab"] = label
            at.run()
            assert not at.exception and any(t.children for t in at.tabs), label
            _assert_no_live_markup(at, page)
            literal += [getattr(e, "value", "") for e in walk(at.main) if getattr(e, "type", None) in ("text", "code")]
        joined = "\n".join(map(str, literal))
        for s in (make_hostile.SCRIPT, make_hostile.IMG, make_hostile.JS_LINK, make_hostile.NAME):
            assert s in joined, s
        assert make_hostile.ARGUMENT in joined.replace('\\"', '"') or "xss-arg" in joined
        assert make_hostile.TOOL_NAME in joined


def test_chat_records_a_trace_that_opens_in_the_other_pages(open_studio, tmp_path, monkeypatch):
    at = open_studio(None, "screens/chat.py")
    assert at.info[0].value.startswith("Type a message below to start")
    assert not (tmp_path / "traces").exists() or not list((tmp_path / "traces").iterdir()), \
        "visiting the chat page records nothing"
    at.chat_input(key="chat_input").set_value("What is the weather in Paris?").run()
    assert not at.exception, [e.message for e in at.exception]
    assert ":green-badge[:material/smart_toy: demo model]" in [m.value for m in at.markdown]
    roles = [m.name for m in at.chat_message]
    # The user's turn, the assistant's tool call, the tool result, the answer: the whole round as recorded.
    assert roles == ["user", "assistant", "assistant", "assistant"]
    assert any("get_weather" in e.value for e in walk(at.chat_message[1]) if getattr(e, "type", None) == "text")
    answer = [e.value for e in walk(at.chat_message[-1]) if getattr(e, "type", None) == "text"]
    assert answer == [trace_answer := answer[0]] and "Paris" in trace_answer
    pick = at.sidebar.selectbox(key="trace_pick").value
    assert pick.startswith("chat:")
    path = Path(pick.split(":", 1)[1])
    assert path.parent == tmp_path / "traces"
    trace = read_trace(path)
    assert [c.status for c in trace.calls] == [200, 200]
    assert trace.calls[-1].reply["content"] == trace_answer
    at.switch_page("screens/timeline.py").run()
    assert not at.exception
    assert at.metric[0].value == "2"
    assert at.header[0].value == "Call 1", "a live chat opens on its latest call"
    at.switch_page("screens/chat.py").run()
    at.chat_input(key="chat_input").set_value("What is 6*7?").run()
    assert len(read_trace(path).calls) == 4
    at.button(key="chat_clear").click().run()
    assert not at.exception
    assert read_trace(path).events[-1].event.type == "clear"


def test_chat_key_is_never_written_or_shown(open_studio, demo_server, monkeypatch):
    secret = "sk-test-NEVER-WRITE-THIS-0123456789"
    monkeypatch.setenv("OPENAI_BASE_URL", demo_server.base_url)
    at = open_studio(None)
    at.switch_page("screens/chat.py").run()
    at.text_input(key="chat_key").input(secret).run()
    at.button(key="chat_start").click().run()
    at.chat_input(key="chat_input").set_value("What is the weather in Paris?").run()
    assert not at.exception, [e.message for e in at.exception]
    path = Path(at.sidebar.selectbox(key="trace_pick").value.split(":", 1)[1])
    assert secret not in path.read_text(encoding="utf-8")
    shown = [str(getattr(e, "value", "")) for e in walk(at.main) if getattr(e, "type", None) != "text_input"]
    assert not any(secret in s for s in shown)
    assert ":blue-badge[:material/smart_toy: configured endpoint]" in [m.value for m in at.markdown]
    assert read_trace(path).calls[0].status == 200


def _big_trace(path: Path, calls: int) -> Path:
    with TraceWriter(path, meta={"model": "gpt-4o-mini"}) as w:
        history = [Msg(role="system", content="s")]
        w.message_added(history[0])
        for n in range(calls):
            m = Msg(role="user", content=f"question {n}")
            w.message_added(m)
            history.append(m)
            payload = [h.to_openai() for h in history[-40:]]
            w.call_attempt(CallAttempt(call=n, attempt=1, method="POST", url="http://x/v1/chat/completions",
                                       request_body={"model": "gpt-4o-mini", "messages": payload}, status=200,
                                       response_body={"choices": [{"message": {"role": "assistant", "content": "a"},
                                                                   "finish_reason": "stop"}],
                                                      "usage": {"prompt_tokens": 10}}))
    return path


def test_thousand_call_trace_paginates(open_studio, tmp_path):
    path = _big_trace(tmp_path / "big.jsonl", 1000)
    at = open_studio(path, "screens/timeline.py")
    assert at.metric[0].value == "1,000"
    assert len(at.dataframe[0].value) == 20
    at.pagination(key="timeline_table_page").set_value(50).run()
    assert not at.exception
    frame = at.dataframe[0].value
    assert frame["call"].tolist() == list(range(980, 1000))
    at.number_input(key="call_input").set_value(999).run()
    assert at.header[0].value == "Call 999"
    for page in ("screens/tokens.py", "screens/lineage.py", "screens/lint.py", "screens/traces.py"):
        at.switch_page(page).run()
        assert not at.exception, page
    at.switch_page("screens/lineage.py").run()
    assert len(at.get("graphviz_chart")) == 1
    at.switch_page("screens/timeline.py").run()
    at.number_input(key="call_input").set_value(500).run()
    at.pagination(key="timeline_table_page").set_value(1).run()   # wherever the table was left ...
    at.switch_page("screens/tokens.py").run()
    at.switch_page("screens/timeline.py").run()                  # ... coming back shows the selected call's page
    assert 500 in at.dataframe[0].value["call"].tolist()


@pytest.mark.parametrize("broken", [False, True], ids=["valid", "broken"])
def test_hostile_file_name_is_never_markup(open_studio, tmp_path, broken):
    path = tmp_path / HOSTILE_NAME
    if broken:
        path.write_text("{not json\n", encoding="utf-8")
    else:
        shutil.copy(HOSTILE, path)
    at = open_studio(path)
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        _assert_no_live_markup(at, page)
    if broken:
        at.switch_page("screens/timeline.py").run()
        assert len(at.error) == 1 and "onerror" in at.error[0].value  # shown, escaped
    else:
        at.switch_page("screens/traces.py").run()
        assert HOSTILE_NAME in [t.value for t in at.text]


def test_unreachable_endpoint_is_one_line_in_the_chat(open_studio):
    at = open_studio(None, "screens/chat.py")
    at.text_input(key="chat_base").input("http://127.0.0.1:9/v1").run()
    at.button(key="chat_start").click().run()
    at.chat_input(key="chat_input").set_value("hello").run()
    assert not at.exception, [e.message for e in at.exception]
    reply = [e.value for e in walk(at.chat_message[-1]) if getattr(e, "type", None) == "text"]
    assert len(reply) == 1 and reply[0].startswith("error: ") and "\n" not in reply[0]
    path = Path(at.sidebar.selectbox(key="trace_pick").value.split(":", 1)[1])
    call = read_trace(path).calls[-1]
    assert call.failed and call.status is None, "the failed call is recorded"
    at.switch_page("screens/timeline.py").run()
    assert not at.exception
