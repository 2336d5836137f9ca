"""What a person waits for: the studio in headless Chromium against a real ``streamlit run`` server.

    python benchmarks/browser.py [--sizes 100 1000 5000 25000] [--repeats 3] [--think 5] [--json] [--cli] [--log-gb 1]
        [--policies] [--search QUERY ...] [--switch K] [--screenshots DIR]

For each size N it generates (once, cached in ``--workdir``) the deterministic
full-history conversation of ``benchmarks/synthetic.py`` (tool rounds, Chinese
and English, a few 50 KB tool results), then per repeat starts a FRESH server
(``chain-studio open``'s exact ``streamlit run`` command line) and one fresh
Chromium page, and times these actions in order:

- ``timeline_cold``: open ``/timeline`` in a new tab (the server parses, lints
  and counts the trace here);
- ``middle_call``: type call N // 2 into the Timeline's call box and press Enter;
- ``tokens``, ``replay``, ``lint``, ``lineage``, ``chat``, ``compare``, ``learn``: click the page in the sidebar
  navigation (``PAGES``);
- with ``--policies``, right after ``replay``: ``pick <policy>`` for every policy the Replay page offers but
  ``compose``, picked in the first column's Policy box (the whole trace replayed under it, as a person waits);
- with ``--search``, after the last page: back on the Timeline (not timed), ``search <query>`` for each query typed
  into its search box and Enter pressed (each a new query: the calls that carried it and where it was dropped);
- ``rss_mb``: the server's resident memory after the last action, ``hwm_mb`` its peak (VmHWM);
- ``cpu_s``: per action, the server's CPU seconds (user + system, every thread: a background warm-up's too, and
  its child processes': the token counting worker's) from the action's start until the page settled: the figure a
  loaded, shared machine does not distort;
- ``timeline_reopen``: a second fresh server opens ``/timeline`` cold with the token counts the first one
  stored (every server starts with an empty on-disk token store otherwise; the CLI's replays are timed
  both ways too);
- ``replay_at_once``: a third fresh server with an empty token store opens ``/timeline`` cold, and the Replay page
  is clicked as soon as the Timeline has settled (a person who opens a trace to replay it: the page's first view
  is still being computed then, where the flow above reaches it a page later).

With ``--switch K``, one more fresh server is opened on the largest size with a recordings folder of K copies of
that trace (each its own digest), and one tab goes Timeline, Replay, then for each copy: the Traces page, its Open
button, Timeline, Replay; the server's memory is read after each trace (``studio/residency.py`` bounds it).

"Fully rendered and idle" is defined as: the server has sent ``script_finished``
for a run started after the action (read from Streamlit's own websocket
messages, decoded with its ``ForwardMsg`` protobuf; the 2-second live-refresh
fragment's runs are not the action's, nor is the flip of the app's run-state
attribute that every run makes, nor that fragment's empty container going stale and back, nor the screen
reader's live region, none of them drawn) and no run is going on, no
element is marked ``data-stale="true"``, no skeleton or spinner is shown, no
HTTP request of the page is in flight, and the DOM has not changed for
``QUIET_S`` seconds. (The status widget is not used: the app's
``toolbarMode = "minimal"`` hides its running icon.) The time of an action is
from its start (navigation start for the cold open; the click / Enter
otherwise) to the LAST DOM mutation before that quiet period (or the last
``script_finished`` of a page run, if later), i.e. the moment the page stopped changing.
Figures are medians over the repeats.

With ``--cli`` it also times, per size in a subprocess with its own peak RSS,
``chain-studio lint`` and ``chain-studio replay --policy P`` for every policy,
and with ``--log-gb X`` a full-history payload log of about X GB (written to
the workdir, never into the repo) opened by the CLI (``lint``) next to the
floor of ``json.loads`` on every line.

The machine is shared: ``uptime``'s load average and its speed at the moment (``conditions``) are recorded with
every run, and each repeat runs every size in turn. A benchmark prints figures; it asserts nothing.
"""
from __future__ import annotations

import argparse
import shutil
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
QUIET_S = 1.5
"""How long the page must stay unchanged (and Streamlit idle) to count as fully rendered."""
TIMEOUT_S = 600
FULL_HEIGHT = 3200
"""The window height of the ``-full`` screenshots (Streamlit scrolls inside its main block, so a full-page
screenshot of a normal window shows only its first screen)."""
PAGES = ("tokens", "replay", "lint", "lineage", "chat", "compare", "learn")
"""The pages clicked in the sidebar after the middle call, in order (every page of the navigation but the Traces
page, which ``--switch`` times)."""
ACTIONS = ("timeline_cold", "middle_call", *PAGES, "timeline_reopen", "replay_at_once")
POLICY_PARAMS = {
    "keep-all": [], "max-messages": ["max_messages=40"], "naive-drop-oldest": ["max_messages=40"],
    "sliding-window": ["turns=10"], "token-budget": ["max_tokens=16000"],
    "summary-window": ["keep_turns=5"], "langchain-trim-last": ["max_tokens=16000"],
}

# Records the time of the last DOM change and the HTTP requests in flight (installed before any page script).
_OBSERVER = """
window.__cs = {last: performance.now(), inflight: 0};
// Not a change of what is shown (the end of the action's run is script_finished): Streamlit's run-state marker on
// the app (data-test-script-state), which flips on every run, the sidebar's 2-second live-refresh fragment's too;
// that fragment's own container, which draws nothing (an stEmpty) and goes stale and back on each of its runs; and
// the screen reader's live region (role="log"), which is never drawn. Counted, they moved an action's end by up to
// 4 s: each one restarted the quiet period.
const _unseen = (m) => {
  const t = m.target;
  if (m.type === "attributes" && m.attributeName === "data-test-script-state") return true;
  if (m.type === "attributes" && t.getAttribute && t.getAttribute("data-testid") === "stElementContainer"
      && t.children.length === 1 && t.firstElementChild.getAttribute("data-testid") === "stEmpty") return true;
  const el = t.nodeType === 1 ? t : t.parentElement;
  return !!(el && el.closest && el.closest('[role="log"][aria-live]'));
};
new MutationObserver((ms) => {
  if (ms.some((m) => !_unseen(m))) {
    window.__cs.last = performance.now();
  }
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
const _fetch = window.fetch;
window.fetch = function (...a) {
  window.__cs.inflight++;
  return _fetch.apply(this, a).finally(() => { window.__cs.inflight--; window.__cs.last = performance.now(); });
};
"""
_BUSY = """() => document.querySelectorAll('[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-stale="true"]')
  .length + window.__cs.inflight"""


class Runs:
    """Script runs as the browser sees them, from Streamlit's websocket messages (ForwardMsg)."""

    def __init__(self, page) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._msg = ForwardMsg
        self.running = False
        self.finished_at = 0.0      # time.monotonic() of the last script_finished
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload) -> None:
        if not isinstance(payload, bytes):
            return
        msg = self._msg()
        try:
            msg.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - not a ForwardMsg: not ours to judge
            return
        kind = msg.WhichOneof("type")
        if kind == "new_session" or kind == "session_status_changed" and msg.session_status_changed.script_is_running:
            self.running = True
        elif kind == "script_finished":
            self.running = False
            # The sidebar's live-refresh fragment reruns every 2 s (router._watch_open_file) and draws nothing: its
            # end is not the end of the action's run (counting it added up to 2 s to any action).
            if msg.script_finished != self._msg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
                self.finished_at = time.monotonic()


def load_average() -> str:
    """``uptime``'s 1, 5 and 15 minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


LOOP = 3_000_000


def _loop() -> None:
    total = 0
    for i in range(LOOP):
        total += i


def loop_seconds() -> tuple[float, float]:
    """The machine's speed at the moment: seconds of a fixed pure-Python loop (``LOOP`` additions) alone, and of two
    such loops in two processes at once (on two real cores as long as one). Recorded with each run beside the load
    average. On the shared 2-core development VM, within one evening, the loop alone moved by half while the load
    average stayed under 1.5, and two at once took from 1.0x to 1.4x the time of one: the figures at 25,000 calls,
    where the server's children count and replay on the second core, move with both."""
    _loop()         # a first pass: the interpreter and the core warmed up
    start = time.perf_counter()
    _loop()
    alone = time.perf_counter() - start
    start = time.perf_counter()
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            try:
                _loop()
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    return alone, time.perf_counter() - start


def conditions() -> dict:
    """What a run is measured under, recorded with it: ``load`` (``load_average``) and ``loop_s`` (``loop_seconds``)."""
    return {"load": load_average(), "loop_s": loop_seconds()}


def conditions_text(record: dict) -> str:
    """A record's ``conditions`` as printed beside its figures."""
    alone, both = record["loop_s"]
    return f"load {record['load']}, loop {alone:.2f} s, two at once {both:.2f} s"


def trace_for(n: int, workdir: Path) -> Path:
    """The synthetic trace of ``n`` calls (generated once per workdir)."""
    path = workdir / f"synthetic-{n}.jsonl"
    if not path.exists():
        from benchmarks.synthetic import generate

        tmp = workdir / f"synthetic-{n}.jsonl.part"
        generate(tmp, n)
        tmp.rename(path)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of the server in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and its descendants: their own (running ones) and their reaped children's."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:        # exited between the listing and the read: its time is its parent's cutime once reaped
        return 0.0
    total = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")     # utime stime cutime cstime
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            children = task.read_text().split()
        except OSError:
            continue
        total += sum(_tree_cpu_s(int(c)) for c in children)
    return total


def fresh_token_cache(workdir: Path, name: str = "token-counts") -> Path:
    """An empty on-disk token store (``agent_core/trace/token_store.py``): a first open encodes every text."""
    path = workdir / name
    shutil.rmtree(path, ignore_errors=True)
    return path


class Server:
    """A fresh ``streamlit run`` of the studio on one trace (the command line ``chain-studio open`` runs)."""

    def __init__(self, trace: Path, workdir: Path, token_cache: Path | None = None, recordings: Path | None = None):
        from agent_core.cli.studio import studio_command

        self.port = _free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
        env["PYTHONPATH"] = str(ROOT)
        env["CHAIN_STUDIO_TRACES_DIR"] = str(recordings or workdir / "no-recordings")
        env["CHAIN_STUDIO_TOKEN_CACHE"] = str(token_cache or fresh_token_cache(workdir))
        self.log_path = workdir / f"server-{self.port}.log"
        self.log = open(self.log_path, "w")  # noqa: SIM115 - the server writes to it until close()
        self.proc = subprocess.Popen(studio_command(trace, self.port), cwd=ROOT, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://localhost:{self.port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=1).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(f"the studio did not start: {self.log_path.read_text()[-2000:]}")
                time.sleep(0.2)

    def memory(self) -> tuple[float, float]:
        return _rss_mb(self.proc.pid)

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the server has used so far (robust to a loaded machine), with its child
        processes' (the token counting worker: ``studio/token_worker.py``), running or exited."""
        return _tree_cpu_s(self.proc.pid)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def settle(page, runs: Runs, start: float, started: float) -> float:
    """Seconds from the action's start (``start`` on the page clock in ms, ``started`` on time.monotonic())
    until the page is fully rendered and idle (see the module docstring)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        page.wait_for_timeout(100)
        busy, last, now = page.evaluate(f"() => [({_BUSY})(), window.__cs.last, performance.now()]")
        finished = runs.finished_at > started and not runs.running
        if finished and not busy and now - last >= QUIET_S * 1000:
            exceptions = page.locator('[data-testid="stException"]').count()
            if exceptions:
                raise RuntimeError(page.locator('[data-testid="stException"]').first.inner_text()[:500])
            return max(0.0, (last - start) / 1000, runs.finished_at - started)
    raise TimeoutError(f"the page did not settle within {TIMEOUT_S} s")


def act(page, runs: Runs, action) -> float:
    """Run ``action()`` (a click, a key press) and time it until the page settles."""
    from studio.phases import mark

    start, started = page.evaluate("performance.now()"), time.monotonic()
    mark("bench action")
    action()
    seconds = settle(page, runs, start, started)
    mark(f"bench settled {seconds:.2f}")
    return seconds


def browse_once(browser, trace: Path, n: int, workdir: Path, shots: Path | None = None, think: float = 0,
                policies: bool = False, queries: tuple[str, ...] = ()) -> dict:
    """One repeat: a fresh server and an empty token store, a fresh page, every action timed; then
    ``timeline_reopen``: the Timeline opened cold again by another fresh server that finds the token counts the
    first one stored (a trace opened again another day). With ``policies``, on the Replay page each policy is
    picked in turn in its first column (``pick_policies``)."""
    store = fresh_token_cache(workdir)
    server = Server(trace, workdir, store)
    out: dict = {}
    cpu: dict[str, float] = {}       # the server's CPU seconds from each action's start until it settled
    out["cpu_s"] = cpu
    try:
        cpu0 = server.cpu_s()
        context, page, runs, out["timeline_cold"] = open_timeline(browser, server)
        cpu["timeline_cold"] = server.cpu_s() - cpu0
        box = page.locator('[data-testid="stNumberInput"] input').first
        page.wait_for_timeout(think * 1000)     # a person reads the page before the next action
        box.fill(str(n // 2))
        cpu0 = server.cpu_s()
        out["middle_call"] = act(page, runs, lambda: box.press("Enter"))
        cpu["middle_call"] = server.cpu_s() - cpu0
        header = page.locator('[data-testid="stMain"] h2').first.inner_text()
        if str(n // 2) not in header:
            raise RuntimeError(f"stepping to call {n // 2} shows {header!r}")
        if shots:
            page.screenshot(path=str(shots / f"timeline-{n}.png"), full_page=False)
        for name in PAGES:
            link = page.locator(f'[data-testid="stSidebarNav"] a[href$="/{name}"]')
            page.wait_for_timeout(think * 1000)
            cpu0 = server.cpu_s()
            out[name] = act(page, runs, link.click)
            cpu[name] = server.cpu_s() - cpu0
            title = page.locator("h1").first.inner_text().lower()       # the Chat page's is outside stMain
            if name not in title:
                raise RuntimeError(f"clicking {name} shows the page {title!r}")
            if shots and name in ("tokens", "replay"):
                page.screenshot(path=str(shots / f"{name}-{n}.png"), full_page=True)
            if name == "replay" and policies:
                pick_policies(page, runs, server, out, cpu, think, shots, n)
        if queries:
            search(page, runs, server, out, cpu, think, queries)
        out["rss_mb"], out["hwm_mb"] = server.memory()
        if shots:       # after every timing: each page again on a tall window, below the fold included
            page.set_viewport_size({"width": 1400, "height": FULL_HEIGHT})
            for name in ("timeline", "tokens", "replay"):
                act(page, runs, page.locator(f'[data-testid="stSidebarNav"] a[href$="/{name}"]').click)
                page.screenshot(path=str(shots / f"{name}-{n}-full.png"))
        context.close()
    finally:
        server.close()
    out["timeline_reopen"], cpu["timeline_reopen"] = reopen(browser, trace, workdir, store)
    out["replay_at_once"], cpu["replay_at_once"] = replay_at_once(browser, trace, workdir)
    return out


def search(page, runs: Runs, server: Server, out: dict, cpu: dict, think: float, queries: tuple[str, ...]) -> None:
    """Back on the Timeline, each of ``queries`` typed into the search box and Enter pressed: ``search <query>``."""
    act(page, runs, page.locator('[data-testid="stSidebarNav"] a[href$="/timeline"]').click)
    box = page.get_by_placeholder("A-2024-0715")
    for query in queries:
        page.wait_for_timeout(think * 1000)
        box.fill(query)
        cpu0 = server.cpu_s()
        out[f"search {query}"] = act(page, runs, lambda: box.press("Enter"))
        cpu[f"search {query}"] = server.cpu_s() - cpu0
        if not page.locator('[data-testid="stMain"]').get_by_text("call(s):").count() and \
                not page.locator('[data-testid="stMain"]').get_by_text("No call's payload contains this text.").count():
            raise RuntimeError(f"searching {query!r} shows no answer")


def studio_policies() -> list[str]:
    """Every policy the Replay page offers but ``compose`` (it needs its parts named), in the order picked: the
    page's first column shows max-messages at first (``studio/replay_services.py : DEFAULT_POLICIES``), so it comes
    last (picking the shown one would start no run)."""
    from agent_core.trim.registry import POLICIES

    names = [p for p in POLICIES if p not in ("compose", "max-messages")]
    return names + ["max-messages"]


def pick_policies(page, runs: Runs, server: Server, out: dict, cpu: dict, think: float, shots: Path | None,
                  n: int) -> None:
    """On the Replay page, pick each of ``studio_policies()`` in the first column's Policy box, with its default
    parameters, and time each until the page is fully rendered (``pick <policy>``): the replay of that policy
    over the whole trace, its retention matrix and stories, as a person waits for them."""
    for policy in studio_policies():
        box = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').first
        page.wait_for_timeout(think * 1000)
        box.click()
        option = page.get_by_role("option", name=policy, exact=True)
        cpu0 = server.cpu_s()
        out[f"pick {policy}"] = act(page, runs, option.click)
        cpu[f"pick {policy}"] = server.cpu_s() - cpu0
        shown = box.locator("input").input_value()
        if shown != policy:
            raise RuntimeError(f"picking {policy} shows {shown!r} in the first column")
        if shots and policy == "summary-window":
            page.screenshot(path=str(shots / f"replay-{policy}-{n}.png"), full_page=True)


def open_timeline(browser, server: Server) -> tuple:
    """A new page on ``server``'s ``/timeline``: (context, page, runs, seconds until fully rendered)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(_OBSERVER)
    page = context.new_page()
    runs = Runs(page)
    from studio.phases import mark

    started = time.monotonic()
    mark("bench open timeline")
    page.goto(f"{server.url}/timeline", wait_until="commit")
    seconds = settle(page, runs, 0.0, started)
    mark(f"bench settled {seconds:.2f}")
    return context, page, runs, seconds   # performance.now() counts from navigation


def reopen(browser, trace: Path, workdir: Path, store: Path) -> tuple[float, float]:
    """Seconds until the Timeline of a fresh server on ``trace`` is fully rendered, with the token store ``store``,
    and the server's CPU seconds meanwhile."""
    server = Server(trace, workdir, store)
    try:
        cpu0 = server.cpu_s()
        context, _, _, seconds = open_timeline(browser, server)
        cpu = server.cpu_s() - cpu0
        context.close()
        return seconds, cpu
    finally:
        server.close()


def replay_at_once(browser, trace: Path, workdir: Path) -> tuple[float, float]:
    """Seconds from clicking the Replay page, as soon as a fresh server's cold Timeline has settled (an empty token
    store), until it is fully rendered; and the server's CPU seconds meanwhile."""
    server = Server(trace, workdir)
    try:
        context, page, runs, _ = open_timeline(browser, server)
        link = page.locator('[data-testid="stSidebarNav"] a[href$="/replay"]')
        cpu0 = server.cpu_s()
        seconds = act(page, runs, link.click)
        cpu = server.cpu_s() - cpu0
        title = page.locator('[data-testid="stMain"] h1').first.inner_text().lower()
        if "replay" not in title:
            raise RuntimeError(f"clicking replay shows the page {title!r}")
        context.close()
        return seconds, cpu
    finally:
        server.close()


def copies_of(trace: Path, k: int, workdir: Path) -> Path:
    """A recordings folder with ``k`` copies of ``trace``, each with its own header title (so its own digest)."""
    folder = workdir / f"recordings-{trace.stem}"
    folder.mkdir(exist_ok=True)
    for i in range(2, k + 2):
        path = folder / f"{trace.stem}-copy{i}.jsonl"
        if path.exists():
            continue
        with open(trace, "rb") as src, open(path.with_suffix(".part"), "wb") as out:
            out.write(src.readline().replace(trace.stem.encode(), path.stem.encode(), 1))
            shutil.copyfileobj(src, out)
        path.with_suffix(".part").rename(path)
    return folder


def switch_traces(browser, n: int, k: int, workdir: Path) -> dict:
    """One tab on a fresh server open on the ``n``-call trace (Timeline, then Replay), then ``k`` other traces of
    that size opened one after another from the Traces page (its Open button; then Timeline, then Replay), as a
    person going through a folder of long runs: the seconds of each step and the server's memory after each."""
    trace = trace_for(n, workdir)
    server = Server(trace, workdir, recordings=copies_of(trace, k, workdir))
    steps: list[dict] = []
    try:
        context, page, runs, seconds = open_timeline(browser, server)

        def go(title: str) -> float:
            return act(page, runs, page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True)
                       .click)
        steps.append({"trace": trace.name, "timeline": seconds, "replay": go("Replay")})
        steps[-1]["rss_mb"], steps[-1]["hwm_mb"] = server.memory()
        for i in range(2, k + 2):
            name = f"{trace.stem}-copy{i}.jsonl"
            step = {"trace": name, "traces_page": go("Traces")}
            row = page.locator('[data-testid="stHorizontalBlock"]').filter(has_text=name).last
            step["open"] = act(page, runs, row.get_by_role("button", name="Open").click)
            step["timeline"], step["replay"] = go("Timeline"), go("Replay")
            step["rss_mb"], step["hwm_mb"] = server.memory()
            steps.append(step)
        context.close()
    finally:
        server.close()
    return {"n": n, **conditions(), "steps": steps}


def browse(sizes: list[int], repeats: int, workdir: Path, shots: Path | None, think: float = 0,
           policies: bool = False, queries: tuple[str, ...] = ()) -> list[dict]:
    from playwright.sync_api import sync_playwright

    runs: dict[int, list[dict]] = {n: [] for n in sizes}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for r in range(repeats):        # the sizes in turn within each repeat: a machine whose speed drifts
                for n in sizes:             # over minutes moves every size alike, not one size more than another
                    measured = conditions()
                    run = browse_once(browser, trace_for(n, workdir), n, workdir,
                                      shots if r == repeats - 1 else None, think, policies, queries)
                    run.update(measured)
                    runs[n].append(run)
                    print(f"  N={n} run {r + 1}/{repeats} ({conditions_text(run)}): "
                          + ", ".join(f"{k} {v:.2f}" for k, v in run.items() if isinstance(v, float)),
                          file=sys.stderr, flush=True)
        finally:
            browser.close()
    timed = [*ACTIONS, *(f"pick {p}" for p in studio_policies() if policies), *(f"search {q}" for q in queries)]
    rows = []
    for n in sizes:
        med = {k: statistics.median(r[k] for r in runs[n]) for k in (*timed, "rss_mb", "hwm_mb")}
        med["cpu_s"] = {k: statistics.median(r["cpu_s"][k] for r in runs[n]) for k in timed}
        rows.append({"n": n, "file_mb": trace_for(n, workdir).stat().st_size / 1e6, "median": med, "runs": runs[n]})
    return rows


# --- the CLI -------------------------------------------------------------------------------------

# A child's own peak: its VmHWM, printed to stderr at exit. Not ``ru_maxrss``: subprocess starts a child with
# vfork, and Linux carries the parent's peak RSS into the child's ``ru_maxrss`` across the exec (a 195 MB
# benchmark process made every child report at least 195 MB).
_PEAK = ("import atexit, sys\natexit.register(lambda: print('peak-kb', [l.split()[1] for l in open('/proc/self/status') "
         "if l.startswith('VmHWM')][0], file=sys.stderr))\n")


def _peak_of(stderr: str) -> float:
    """MB from the ``peak-kb N`` line ``_PEAK`` printed last."""
    lines = [line for line in stderr.splitlines() if line.startswith("peak-kb ")]
    return int(lines[-1].split()[1].strip("[]'")) / 1024 if lines else float("nan")


def _timed_command(args: list[str], token_cache: Path) -> dict:
    """Wall time and peak RSS of one ``chain-studio`` command (its own process; stdout discarded), with the
    on-disk token store ``token_cache``."""
    cmd = [sys.executable, "-c", _PEAK + "from agent_core.cli.main import console; console(sys.argv[1:])", *args]
    env = dict(os.environ, PYTHONPATH=str(ROOT), CHAIN_STUDIO_TOKEN_CACHE=str(token_cache))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out_bytes = 0
    assert proc.stdout is not None
    for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):
        out_bytes += len(chunk)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = proc.wait()
    seconds = time.perf_counter() - t0
    if code not in (0, 1):      # lint exits 1 when it finds errors
        raise RuntimeError(f"{' '.join(args)} exited {code}: {err[-500:]}")
    return {"s": seconds, "peak_mb": _peak_of(err), "stdout_mb": out_bytes / 1e6}


def cli(sizes: list[int], workdir: Path) -> list[dict]:
    rows = []
    for n in sizes:
        trace = trace_for(n, workdir)
        row = {"n": n, **conditions(),
               "lint": _timed_command(["lint", str(trace), "--format", "json"], fresh_token_cache(workdir)),
               "replay": {}, "replay_again": {}}
        for policy, params in POLICY_PARAMS.items():
            args = ["replay", str(trace), "--policy", policy, "--format", "json"]
            for p in params:
                args += ["--param", p]
            store = fresh_token_cache(workdir)      # first: every text encoded; again: the counts it stored
            row["replay"][policy] = _timed_command(args, store)
            row["replay_again"][policy] = _timed_command(args, store)
        rows.append(row)
        print(f"  CLI N={n} done (load {row['load']})", file=sys.stderr, flush=True)
    return rows


def payload_log(target_gb: float, workdir: Path) -> Path:
    """A full-history payload log (one request body per line) of about ``target_gb`` GB, from the synthetic
    conversation: as many calls as it takes (written once per workdir)."""
    path = workdir / f"payload-log-{target_gb:g}gb.jsonl"
    if path.exists():
        return path
    n = 5000
    source = trace_for(n, workdir)
    from agent_core.trace.reader import read_trace

    trace = read_trace(source)
    tmp = path.with_suffix(".part")
    written = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for call in trace.calls:
            line = json.dumps({"request": call.request, "response": call.response}, ensure_ascii=False)
            f.write(line + "\n")
            written += len(line.encode()) + 1
            if written >= target_gb * 1e9:
                break
    tmp.rename(path)
    return path


def _floor_parse(path: Path) -> dict:
    code = (_PEAK + "import json,time,resource\nt=time.perf_counter()\n"
            "for line in open(sys.argv[1], encoding='utf-8'):\n    json.loads(line)\n"
            "r=resource.getrusage(resource.RUSAGE_SELF)\n"
            "print(time.perf_counter()-t, r.ru_utime+r.ru_stime)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    s, cpu = out.stdout.split()
    return {"s": float(s), "peak_mb": _peak_of(out.stderr), "cpu_s": float(cpu)}


def open_cold(path: Path, workdir: Path, shots: Path | None = None) -> dict:
    """The studio's Timeline opened cold on ``path`` (one fresh server): seconds, server memory, and what its
    progress bar said while the file loaded (the first and last texts seen, polled every 0.5 s); with ``shots``,
    a screenshot of the page while the bar shows (``log-loading.png``) and once rendered (``log-timeline.png``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        server = Server(path, workdir)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.add_init_script(_OBSERVER)
            page = context.new_page()
            runs = Runs(page)
            cpu0 = server.cpu_s()
            started = time.monotonic()
            page.goto(f"{server.url}/timeline", wait_until="commit")
            bar = page.locator('[data-testid="stProgress"]')
            texts: list[tuple[float, str]] = []
            while not (runs.finished_at > started and not runs.running) and time.monotonic() - started < TIMEOUT_S:
                if bar.count():
                    try:
                        text = bar.first.inner_text(timeout=1000).strip()
                    except Exception:  # noqa: BLE001 - the bar went away between count() and inner_text()
                        text = ""
                    if text and (not texts or texts[-1][1] != text):
                        if shots and not texts:
                            page.screenshot(path=str(shots / "log-loading.png"))
                        texts.append((round(time.monotonic() - started, 1), text))
                page.wait_for_timeout(500)
            seconds = settle(page, runs, 0.0, started)
            calls = page.locator('[data-testid="stMetricValue"]').first.inner_text()
            rss, hwm = server.memory()
            cpu = server.cpu_s() - cpu0
            if shots:
                page.screenshot(path=str(shots / "log-timeline.png"))
        finally:
            server.close()
            browser.close()
    return {"s": seconds, "cpu_s": cpu, "calls_shown": calls, "rss_mb": rss, "hwm_mb": hwm, "progress_seen": len(texts),
            "progress_first": texts[0] if texts else None, "progress_last": texts[-1] if texts else None}


def _distinct_mb(calls: int, workdir: Path) -> float:
    """Every distinct message of the log's first ``calls`` calls once (full history: the last payload holds all
    the sent ones), plus each response, as JSON text."""
    from agent_core.core.msg import message_key
    from agent_core.trace.reader import read_trace

    trace = read_trace(trace_for(5000, workdir))
    sent = sum(len(message_key(m).encode()) for m in trace.calls[calls - 1].messages)
    replies = sum(len(json.dumps(c.response, ensure_ascii=False).encode()) for c in trace.calls[:calls])
    return (sent + replies) / 1e6


def big_log(target_gb: float, workdir: Path, with_browser: bool, shots: Path | None = None) -> dict:
    path = payload_log(target_gb, workdir)
    with open(path, "rb") as f:
        lines = sum(1 for _ in f)
    out = {"file_gb": path.stat().st_size / 1e9, "calls": lines, **conditions(),
           "json_parse_floor": _floor_parse(path),
           "lint": _timed_command(["lint", str(path), "--format", "json"], fresh_token_cache(workdir))}
    out["distinct_mb"] = _distinct_mb(lines, workdir)
    if with_browser:
        out["studio"] = open_cold(path, workdir, shots)
    return out


# --- output ----------------------------------------------------------------------------------------

def print_table(result: dict) -> None:
    rows = result.get("browser") or []
    if rows:
        print(f"\nbrowser (medians of {result['repeats']}; seconds until fully rendered and idle; "
              f"{result['date']}, {result['machine']})")
        print("| | " + " | ".join(f"{r['n']:,} calls" for r in rows) + " |")
        print("|---|" + "---|" * len(rows))
        labels = {"timeline_cold": "open the Timeline (cold)", "middle_call": "show the middle call",
                  "tokens": "Tokens page", "replay": "Replay page", "lint": "Lint page", "lineage": "Lineage page",
                  "chat": "Chat page", "compare": "Compare page", "learn": "Learn page",
                  "timeline_reopen": "open the Timeline again (new server, token counts stored)",
                  "replay_at_once": "Replay page right after the cold Timeline (new server)"}
        labels.update({k: f"Replay page: {k} in the first column" for k in rows[0]["median"]["cpu_s"]
                       if k.startswith("pick ")})
        labels.update({k: f"Timeline: {k!r}" for k in rows[0]["median"]["cpu_s"] if k.startswith("search ")})
        for key, label in labels.items():
            print(f"| {label} | " + " | ".join(f"{r['median'][key]:.1f} s ({r['median']['cpu_s'][key]:.1f} s server CPU)"
                                               for r in rows) + " |")
        print("| server memory (RSS / peak) | " + " | ".join(
            f"{r['median']['rss_mb']:.0f} / {r['median']['hwm_mb']:.0f} MB" for r in rows) + " |")
        print("| load average at each run | " + " | ".join("; ".join(run["load"] for run in r["runs"]) for r in rows)
              + " |")
        speeds = ["; ".join(f"{a:.2f} / {b:.2f} s" for a, b in (run["loop_s"] for run in r["runs"])) for r in rows]
        print(f"| a {LOOP:,}-addition Python loop at each run, alone / two at once (the machine's speed) | "
              + " | ".join(speeds) + " |")
    switch = result.get("switch")
    if switch:
        print(f"\ntraces of {switch['n']:,} calls opened one after another in one tab ({conditions_text(switch)}; "
              "seconds until fully rendered; server memory after each)")
        print("| trace | Traces page | Open | Timeline | Replay | server RSS / peak |")
        print("|---|---|---|---|---|---|")
        for st in switch["steps"]:
            cells = [f"{st[k]:.1f} s" if k in st else "—" for k in ("traces_page", "open", "timeline", "replay")]
            print(f"| {st['trace']} | " + " | ".join(cells) + f" | {st['rss_mb']:.0f} / {st['hwm_mb']:.0f} MB |")
    for r in result.get("cli") or []:
        print(f"\nCLI N={r['n']:,} ({conditions_text(r)}): lint {r['lint']['s']:.2f} s, "
              f"{r['lint']['peak_mb']:.0f} MB")
        for policy, m in r["replay"].items():
            again = r["replay_again"][policy]
            print(f"  replay {policy:<22}{m['s']:7.2f} s {m['peak_mb']:7.0f} MB  report {m['stdout_mb']:8.2f} MB"
                  f"   again (token counts stored) {again['s']:7.2f} s")
    log = result.get("payload_log")
    if log:
        print(f"\npayload log {log['file_gb']:.2f} GB, {log['calls']:,} calls, distinct messages "
              f"{log['distinct_mb']:.1f} MB ({conditions_text(log)}): "
              f"json.loads per line {log['json_parse_floor']['s']:.1f} s ({log['json_parse_floor']['cpu_s']:.1f} s CPU) / "
              f"{log['json_parse_floor']['peak_mb']:.0f} MB; "
              f"chain-studio lint {log['lint']['s']:.1f} s / {log['lint']['peak_mb']:.0f} MB"
              + (f"; studio Timeline cold {log['studio']['s']:.1f} s (server {log['studio']['cpu_s']:.1f} s CPU), "
                 f"server {log['studio']['hwm_mb']:.0f} MB peak, "
                 f"progress bar seen {log['studio']['progress_seen']} times (first {log['studio']['progress_first']}, "
                 f"last {log['studio']['progress_last']})" if "studio" in log else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 5000, 25000],
                        help="trace sizes in calls (none: only --cli / --log-gb)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--cli", action="store_true", help="also time the CLI's lint and replay per policy")
    parser.add_argument("--no-browser", action="store_true", help="skip the browser part")
    parser.add_argument("--log-gb", type=float, default=0, help="also open a payload log of this many GB")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/chain-studio-bench"),
                        help="where generated traces and logs are kept (never inside the repo)")
    parser.add_argument("--think", type=float, default=0,
                        help="seconds to wait on each page before the next action, as a person reading it (default 0: "
                             "the next action as soon as the page is idle)")
    parser.add_argument("--policies", action="store_true",
                        help="on the Replay page, also pick each policy in the first column and time its replay")
    parser.add_argument("--search", nargs="+", default=[], metavar="QUERY",
                        help="after the last page, back on the Timeline, search each query in turn and time it")
    parser.add_argument("--switch", type=int, default=0, metavar="K",
                        help="also open K more traces of the largest size one after another in one tab (from the "
                             "Traces page) and print the server's memory after each")
    parser.add_argument("--screenshots", type=Path, help="save Timeline/Tokens/Replay screenshots here (and, after "
                        "the timings, each on a 3,200-pixel-high window: *-full.png)")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    result: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "machine": f"{os.cpu_count()} cores, {os.uname().machine}", "repeats": args.repeats,
                    "quiet_s": QUIET_S, "think_s": args.think}
    if not args.no_browser:
        result["browser"] = browse(args.sizes, args.repeats, args.workdir, args.screenshots, args.think,
                                   args.policies, tuple(args.search))
    if args.switch and args.sizes and not args.no_browser:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            result["switch"] = switch_traces(browser, max(args.sizes), args.switch, args.workdir)
            browser.close()
    if args.cli:
        result["cli"] = cli(args.sizes, args.workdir)
    if args.log_gb:
        result["payload_log"] = big_log(args.log_gb, args.workdir, not args.no_browser, args.screenshots)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
        print("\n" + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
