"""Every jump between screens keeps the open trace and lands on the call it names (AppTest).

The trace under test is never the first one in the sidebar: before the fix, a jump
(``st.switch_page``) dropped the sidebar's widget state and the picker fell back to
the first sample, so Lint's orphan-tool finding on ``naive_trim_orphan`` opened
call 3 of ``classic_remembers``.
"""
from __future__ import annotations

from pathlib import Path

from conftest import OTHER_PAGES, PAGES, SAMPLES, walk

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.lint.scan import lint_trace
from agent_core.trace.reader import read_trace
from studio.viewmodels.lineage import calls_including

ORPHAN = SAMPLE_TRACES / "naive_trim_orphan.jsonl"
LONG = SAMPLE_TRACES / "long_trimmed_fact.jsonl"
# The screens with a link to another screen, and the widget keys of their links.
LINKS = {"screens/traces.py": {"page_link:timeline", "page_link:tokens", "page_link:lint"},
         "screens/lint.py": {"button:lint_go"}, "screens/lineage.py": {"button:lineage_go"}}


def _key(path: Path) -> str:
    return f"sample:{path.resolve()}"


def _open_on(open_studio, path: Path, page: str):
    """The studio started without a file, ``path`` picked in the sidebar, the non-default profile and
    redaction on, then ``page``."""
    at = open_studio(None)
    assert at.sidebar.selectbox(key="trace_pick").value == _key(SAMPLES[0])
    assert _key(path) != _key(SAMPLES[0]), "the trace under test must not be the default one"
    at.sidebar.selectbox(key="trace_pick").set_value(_key(path)).run()
    at.sidebar.selectbox(key="profile").set_value("deepseek").run()
    at.sidebar.toggle(key="redact_pii").set_value(True).run()
    at.switch_page(page).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _lands_on(at, path: Path, call: int) -> None:
    """The Timeline shows call ``call`` of ``path``, with the sidebar unchanged."""
    assert not at.exception, [e.message for e in at.exception]
    assert at.title[0].value == "Timeline"
    assert at.sidebar.selectbox(key="trace_pick").value == _key(path)
    assert at.sidebar.selectbox(key="profile").value == "deepseek"
    assert at.sidebar.toggle(key="redact_pii").value is True
    trace = read_trace(path)
    assert at.metric[0].value == f"{len(trace.calls):,}", "the Timeline counts the calls of this trace"
    assert at.header[0].value == f"Call {call}"
    status = trace.calls[call].status
    badges = [str(m.value) for m in at.markdown]
    assert any(f"HTTP {status}" in b for b in badges), (status, badges)


def _links_on(at) -> set[str]:
    links = {f"page_link:{e.proto.page}" for e in at.get("page_link")}
    buttons = {f"button:{b.key}" for b in at.button if b.key and b.key.endswith("_go")}
    return links | buttons


def test_every_link_is_tested(open_studio):
    """A screen that gains a link must gain a case here: the set of links per screen is pinned."""
    at = open_studio(LONG)
    found = {}
    for page in [*PAGES, *OTHER_PAGES]:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        links = _links_on(at)
        if links:
            found[page] = links
    assert found == LINKS


def test_every_lint_finding_opens_its_call_of_the_same_trace(open_studio):
    trace = read_trace(ORPHAN)
    rank = {"error": 0, "warning": 1, "info": 2}
    findings = sorted((f.export() for f in lint_trace(trace, profile="deepseek")),
                      key=lambda f: (rank[f["severity"]], f["call"], f["index"] if f["index"] is not None else -1))
    assert any(f["rule"] == "orphan-tool" and f["call"] == 3 for f in findings)
    at = _open_on(open_studio, ORPHAN, "screens/lint.py")
    for i, f in enumerate(findings):
        at.selectbox(key="lint_pick").set_value(i).run()
        assert at.button(key="lint_go").label == f"Open call {f['call']} in the Timeline"
        at.button(key="lint_go").click().run()
        _lands_on(at, ORPHAN, f["call"])
        boxes = [e.value for e in walk(at.main) if getattr(e, "type", None) in ("error", "warning", "info")]
        assert any(f["rule"] in b for b in boxes), (f["rule"], boxes)
        at.switch_page("screens/lint.py").run()
    assert at.title[0].value == "Lint"


def test_lineage_show_in_timeline_opens_each_call_of_the_same_trace(open_studio):
    trace = read_trace(LONG)
    first_user = next(m for m in trace.stream if m.role == "user")
    calls = calls_including(trace, first_user.id)
    assert len(calls) > 2
    at = _open_on(open_studio, LONG, "screens/lineage.py")
    for call in (calls[0], calls[len(calls) // 2], calls[-1]):
        at.selectbox(key="lineage_msg").set_value(trace.stream.index(first_user)).run()
        at.selectbox(key="lineage_call").set_value(call).run()
        at.button(key="lineage_go").click().run()
        _lands_on(at, LONG, call)
        at.switch_page("screens/lineage.py").run()


def test_traces_page_links_keep_the_trace_and_the_call(open_studio):
    at = _open_on(open_studio, ORPHAN, "screens/timeline.py")
    at.number_input(key="call_input").set_value(3).run()
    assert at.header[0].value == "Call 3"
    findings = lint_trace(read_trace(ORPHAN), profile="deepseek")
    for slug, title in (("timeline", "Timeline"), ("tokens", "Tokens"), ("lint", "Lint")):
        at.switch_page("screens/traces.py").run()
        assert f"page_link:{slug}" in _links_on(at)
        # Following a page link is a page switch that keeps the session, as the browser does.
        at.switch_page(f"screens/{slug}.py").run()
        assert not at.exception, [e.message for e in at.exception]
        assert at.title[0].value == title
        assert at.sidebar.selectbox(key="trace_pick").value == _key(ORPHAN)
        if slug == "timeline":
            _lands_on(at, ORPHAN, 3)
        if slug == "lint":
            assert {m.label: m.value for m in at.metric}["Findings"] == str(len(findings))


def test_a_jump_keeps_the_language(open_studio):
    at = _open_on(open_studio, ORPHAN, "screens/lint.py")
    at.sidebar.segmented_control(key="lang").set_value("zh").run()
    at.button(key="lint_go").click().run()
    assert not at.exception
    assert at.title[0].value == "时间线"
    assert at.sidebar.segmented_control(key="lang").value == "zh"
    assert at.sidebar.selectbox(key="trace_pick").value == _key(ORPHAN)
