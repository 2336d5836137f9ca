"""The real app in real Chromium: ``chain-studio open <trace>``, every page, screenshots, nothing executes.

Screenshots land in tests/artifacts/ (git-ignored).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import make_hostile
import pytest
from conftest import HOSTILE  # noqa: E402
from test_hostile_and_chat import HOSTILE_NAME  # noqa: E402

from agent_core.core.paths import PROJECT_ROOT, SAMPLE_TRACES

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = PROJECT_ROOT / "tests" / "artifacts"
# The home page (Traces) is the default page: its URL is "/".
PAGES = ["", "timeline", "tokens", "lineage", "lint", "chat", "learn", "replay"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium "
                                                     "(apt-get install chromium)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _studio(args: list[str], tmp_path_factory):
    """A studio started exactly as a user does (``chain-studio ARGS --port P``); yields its URL."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CHAIN_STUDIO_OPEN")}
    env["CHAIN_STUDIO_TRACES_DIR"] = str(tmp_path_factory.mktemp("traces"))
    log = open(tmp_path_factory.mktemp("log") / "studio.log", "w")
    proc = subprocess.Popen(["chain-studio", *args, "--port", str(port)],
                            cwd=tmp_path_factory.mktemp("cwd"), env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://localhost:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(f"the studio did not start: {Path(log.name).read_text()[-2000:]}")
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    output = Path(log.name).read_text(errors="replace")
    assert "(most recent call last)" not in output, f"the studio's terminal shows a stack: {output[-3000:]}"


@pytest.fixture(scope="module", params=[("hostile", HOSTILE),
                                        ("orphan-sample", SAMPLE_TRACES / "naive_trim_orphan.jsonl")],
                ids=["hostile", "orphan-sample"])
def studio_url(request, tmp_path_factory):
    """``chain-studio open PATH``."""
    name, path = request.param
    if name == "hostile":
        # Under a file name that is itself markup: it shows in the picker, the summary and error boxes.
        path_copy = tmp_path_factory.mktemp("hostile") / HOSTILE_NAME
        shutil.copy(path, path_copy)
        path = path_copy
    with _studio(["open", str(path)], tmp_path_factory) as url:
        yield url, name


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM),
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield b
        b.close()


# The page body (with a chat input Streamlit moves the main block out of stMain).
_APP = '[data-testid="stAppViewContainer"]'


def _settle(page) -> None:
    """Wait for the page title, then until Streamlit has been idle for 1.5 s."""
    page.wait_for_selector(f"{_APP} h1", timeout=60_000)
    quiet = 0
    for _ in range(240):
        page.wait_for_timeout(250)
        busy = page.locator('[data-testid="stStatusWidget"]').count() + page.locator(
            '[data-testid="stSkeleton"]').count()
        quiet = 0 if busy else quiet + 1
        if quiet >= 6:
            return


def test_a_cold_deep_link_shows_only_the_routers_navigation(studio_url, browser):
    """The first load of a fresh server (this test runs first per server) never lists raw file names.

    With the screens in a ``pages/`` folder, Streamlit ran the app as a legacy
    multipage app on a server's first run and the sidebar flashed ``app, chat, learn, ...``.
    """
    url, _ = studio_url
    page = browser.new_page()
    page.goto(f"{url}/timeline", wait_until="commit")
    shown: list[str] = []
    for _ in range(40):
        nav = page.locator('[data-testid="stSidebarNav"]')
        if nav.count():
            shown.append(nav.first.inner_text())
        page.wait_for_timeout(100)
    page.close()
    assert shown, "the sidebar navigation never appeared"
    for text in shown:
        entries = [line.strip() for line in text.splitlines() if line.strip()]
        assert "Timeline" in entries and "app" not in entries, entries


def test_every_page_renders_and_executes_nothing(studio_url, browser):
    url, name = studio_url
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    for slug in PAGES:
        page.goto(f"{url}/{slug}")
        _settle(page)
        page.screenshot(path=str(ARTIFACTS / f"{name}-{slug or 'traces'}.png"))
        assert page.locator('[data-testid="stException"]').count() == 0, f"{slug}: a Streamlit exception"
        assert "Page not found" not in page.locator("body").inner_text(), f"{slug}: not a page of the router"
        assert page.locator(f"{_APP} h1").first.inner_text().strip(), slug
        main = page.locator(_APP)
        assert main.locator("script").count() == 0, slug
        assert main.locator("img[onerror], svg[onload]").count() == 0, slug
        assert main.locator('a[href^="javascript:"]').count() == 0, slug
        if name == "hostile" and slug == "":
            assert HOSTILE_NAME in main.inner_text(), "the file name is shown literally"
        if name == "hostile" and slug == "timeline":
            text = main.inner_text()
            for s in (make_hostile.SCRIPT, make_hostile.IMG, make_hostile.JS_LINK, make_hostile.NAME,
                      make_hostile.MARKDOWN, make_hostile.TOOL_NAME):
                assert s in text, f"not shown literally: {s}"
    if name == "orphan-sample":
        _orphan_finding_is_visible_on_its_call(page, url)
    if name == "hostile":
        _hostile_probe_is_shown_literally(page, url)
    assert dialogs == [], f"JavaScript dialogs opened: {dialogs}"
    assert errors == [], f"JavaScript errors: {errors}"
    page.close()


HOSTILE_PROBE = "<img src=x onerror=alert('xss-probe')>"


def _hostile_probe_is_shown_literally(page, url: str) -> None:
    """A probe typed by the user is text too: it shows literally in the diagnosis and runs nothing."""
    page.goto(f"{url}/replay")
    _settle(page)
    box = page.get_by_role("textbox", name="Fact probes", exact=False)
    box.fill(HOSTILE_PROBE)
    box.press("Control+Enter")
    page.wait_for_timeout(500)
    _settle(page)
    main = page.locator(_APP)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert main.locator("img[onerror]").count() == 0 and main.locator("script").count() == 0
    assert HOSTILE_PROBE in main.inner_text(), "the probe text is shown literally"
    page.screenshot(path=str(ARTIFACTS / "hostile-replay-probe.png"))


def _orphan_finding_is_visible_on_its_call(page, url: str) -> None:
    """Typing a call number shows that call, with orphan-tool and OpenAI's exact text on it."""
    page.goto(f"{url}/timeline")
    _settle(page)
    field = page.get_by_label("Call", exact=True)
    field.fill("3")
    field.press("Enter")
    page.wait_for_timeout(500)
    _settle(page)
    main = page.locator(_APP)
    assert "Call 3" in main.locator("h2").all_inner_texts()
    text = main.inner_text()
    assert "orphan-tool" in text
    assert "must be a response to a preceeding message with 'tool_calls'" in text
    page.screenshot(path=str(ARTIFACTS / "orphan-sample-timeline-call3.png"))




def test_lint_finding_opens_its_call_in_the_timeline_of_the_same_trace(browser, tmp_path_factory):
    """Started on the samples (the first is classic_remembers), the orphan sample picked in the sidebar:
    Lint's "Open call 3 in the Timeline" shows call 3 of that sample, the HTTP 400 call."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with _studio([], tmp_path_factory) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(url)
        _settle(page)
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.get_by_role("combobox", name="Trace", exact=False).first.click()
        page.get_by_role("option", name="naive_trim_orphan.jsonl", exact=False).click()
        _settle(page)
        # In-app navigation (a new URL would start a new session).
        sidebar.locator('[data-testid="stSidebarNav"]').get_by_text("Lint", exact=True).click()
        _settle(page)
        main = page.locator(_APP)
        assert main.locator("h1").first.inner_text().strip() == "Lint"
        button = main.get_by_role("button", name="Open call 3 in the Timeline")
        page.screenshot(path=str(ARTIFACTS / "link-lint-orphan.png"))
        button.click()
        page.wait_for_url("**/timeline**", timeout=30_000)  # the URL now carries ?trace=...&call=3
        _settle(page)
        page.screenshot(path=str(ARTIFACTS / "link-lint-to-timeline-call3.png"))
        assert main.locator("h1").first.inner_text().strip() == "Timeline"
        assert "Call 3" in main.locator("h2").all_inner_texts()
        text = main.inner_text()
        assert "HTTP 400" in text and "orphan-tool" in text
        picked = sidebar.get_by_role("combobox", name="Trace", exact=False).first
        shown = picked.input_value() or picked.evaluate("e => e.closest('[data-testid=stSelectbox]').innerText")
        assert "naive_trim_orphan.jsonl" in shown, shown
        page.close()
