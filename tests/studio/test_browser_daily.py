"""The studio as a daily tool, walked by a user in real Chromium (issue 16's "Done when").

One studio on the bundled samples: /traces resolves; a broken upload leaves the Traces page usable;
Lint's finding on naive_trim_orphan opens call 3 of that trace (HTTP 400); the deep link
?trace=long_trimmed_fact.jsonl&call=20 shows call 20 with the dropped 工号 message marked; searching
"A-2024-0715" lists the calls that carried it and the one where it was dropped; Replay prices every
sample above $0 with the model it is priced as; 中文 mode explains findings in Chinese. A second studio
on a copy of a trace: two calls appended by ``chain-studio chat --trace`` appear without a click.

Screenshots land in tests/artifacts/ (git-ignored).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest
from test_browser import _APP, ARTIFACTS, CHROMIUM, _settle, _studio

from agent_core.core.paths import SAMPLE_TRACES

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium "
                                                     "(apt-get install chromium)"),
]
SAMPLES = sorted(p.name for p in SAMPLE_TRACES.glob("*.jsonl"))


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM),
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield b
        b.close()


_T0 = [0.0]


def _shot(page, name: str) -> None:
    """Screenshot of the step, and how long the walk took to get there (printed with -s)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"daily-{name}.png"), full_page=False)
    print(f"{name}: {time.monotonic() - _T0[0]:.1f} s")


def _no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, "a Streamlit exception on the page"


def _metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has=page.get_by_text(label, exact=True)).first
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


def test_a_day_with_the_studio(browser, tmp_path_factory):
    with _studio([], tmp_path_factory) as url:
        _T0[0] = time.monotonic()
        page = browser.new_page(viewport={"width": 1400, "height": 1300})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        main = page.locator(_APP)

        # /traces is a page of the router (it said "Page not found").
        page.goto(f"{url}/traces")
        _settle(page)
        assert "Page not found" not in page.locator("body").inner_text()
        assert main.locator("h1").first.inner_text().strip() == "Traces"

        # A broken upload: one error, and the samples, upload and paste boxes stay.
        broken = tmp_path_factory.mktemp("upload") / "broken.jsonl"
        broken.write_text('{"this is": "not a trace"\n{{{\n', encoding="utf-8")
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(broken))
        page.wait_for_timeout(500)
        _settle(page)
        _shot(page, "1-broken-upload")
        text = main.inner_text()
        assert page.locator('[data-testid="stAlertContentError"]').count() >= 1, "the broken file is reported"
        assert "Bundled samples" in text and "naive_trim_orphan.jsonl" in text, "the samples table is still there"
        assert "Upload a file" in text and "Paste JSON" in text, "the upload and paste boxes are still there"
        _no_exception(page)

        # Lint's finding on naive_trim_orphan -> the Timeline of the same trace, call 3, HTTP 400.
        page.goto(f"{url}/lint?trace=naive_trim_orphan.jsonl")
        _settle(page)
        main.get_by_role("button", name="Open call 3 in the Timeline").click()
        page.wait_for_url("**/timeline**", timeout=30_000)
        _settle(page)
        _shot(page, "2-lint-to-timeline-call3")
        assert "Call 3" in main.locator("h2").first.inner_text()
        text = main.inner_text()
        assert "HTTP 400" in text and "orphan-tool" in text
        assert re.search(r"trace=naive_trim_orphan\.jsonl&call=3", page.url), page.url

        # A deep link to call 20 of long_trimmed_fact: the dropped 工号 message is marked on the call.
        page.goto(f"{url}/timeline?trace=long_trimmed_fact.jsonl&call=20")
        _settle(page)
        _shot(page, "3-deep-link-call20")
        assert "Call 20" in main.locator("h2").first.inner_text()
        marked = main.locator(".st-key-dropped-here").inner_text()
        assert "dropped just before this call" in marked
        assert "我叫小明，我的工号是 A-2024-0715，请记住。" in marked

        # Search: the calls that carried the id, and the call where it was dropped.
        box = main.get_by_label("Search message text across all calls")
        box.fill("A-2024-0715")
        box.press("Enter")
        page.wait_for_timeout(500)
        _settle(page)
        _shot(page, "4-search")
        text = main.inner_text()
        assert "Carried by 20 call(s): 0–19" in text, text[:2000]
        assert "dropped at call 20" in text

        # ← / → step through the calls (Streamlit's button shortcuts).
        main.locator("h1").first.click()     # focus off the search box
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(300)
        _settle(page)
        assert "Call 21" in main.locator("h2").first.inner_text()

        # Replay: every sample's cost is above $0 and names the model it is priced as.
        for name in SAMPLES:
            page.goto(f"{url}/replay?trace={name}")
            _settle(page)
            _no_exception(page)
            costs = [float(v.inner_text().strip().lstrip("$").replace(",", "")) for v in
                     main.locator('[data-testid="stMetric"]').filter(has=page.get_by_text("Est. cost", exact=True))
                     .locator('[data-testid="stMetricValue"]').all()]
            assert costs and all(c > 0 for c in costs), (name, costs)
            assert "priced as gpt-4o-mini" in main.inner_text(), name
            if name == "long_trimmed_fact.jsonl":
                _shot(page, "5-replay-long_trimmed_fact")

        # 中文 mode: the finding's explanation is Chinese (the provider's own text stays as it is).
        page.goto(f"{url}/lint?trace=naive_trim_orphan.jsonl")
        _settle(page)
        page.locator('[data-testid="stSidebar"]').get_by_text("中文", exact=True).click()
        _settle(page)
        _shot(page, "6-lint-zh")
        text = main.inner_text()
        assert "tool 消息必须位于带 tool_calls 的 assistant 消息之后" in text
        assert "must be a response to a preceeding message with 'tool_calls'" in text
        assert errors == [], errors
        page.close()


def test_calls_appended_by_chat_show_up_without_a_click(browser, tmp_path_factory):
    trace = tmp_path_factory.mktemp("live") / "growing.jsonl"
    shutil.copy(SAMPLE_TRACES / "classic_remembers.jsonl", trace)
    with _studio(["open", str(trace)], tmp_path_factory) as url:
        _T0[0] = time.monotonic()
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/timeline")
        _settle(page)
        before = int(_metric(page, "Calls"))
        # Two plain turns: the demo model answers each with one call, no tools.
        subprocess.run(["chain-studio", "chat", "--trace", str(trace)], input="讲讲你今天的计划\n推荐一本书\n",
                       text=True, capture_output=True, timeout=60, check=True)
        appended = time.monotonic()
        shown = before
        while time.monotonic() - appended < 10 and shown < before + 2:
            page.wait_for_timeout(250)
            try:
                shown = int(_metric(page, "Calls"))
            except ValueError:
                continue
        took = time.monotonic() - appended
        _shot(page, "7-live-refresh")
        assert shown == before + 2, f"the page still shows {shown} calls, {took:.1f} s after the append"
        print(f"two appended calls shown {took:.1f} s after the append")
        page.close()


def test_a_link_to_a_later_call_shows_its_table_page_and_the_terminal_stays_clean(browser, tmp_path_factory):
    """``chain-studio open`` on a 45-call trace, then ``/timeline?call=33``: the table shows page 2 (calls 20-39)
    with the call marked, and the server's terminal shows no stack (``_studio`` checks: the table page set through
    session state made Streamlit log one)."""
    from benchmarks.synthetic import generate

    trace = generate(tmp_path_factory.mktemp("long") / "long.jsonl", 45)
    with _studio(["open", str(trace)], tmp_path_factory) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/timeline?call=33")
        _settle(page)
        _no_exception(page)
        assert page.locator('[data-testid="stHeading"]').filter(has_text="Call 33").count() == 1
        # the call table's pagination comes first (the call's own messages have one of their own below)
        assert page.locator('[data-testid="stPaginationPageActive"]').first.inner_text().strip() == "2"
        page.close()
