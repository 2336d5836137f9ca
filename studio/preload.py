"""``python -m studio.preload run studio/app.py ... -- --open PATH``: the studio's server, reading its trace at once.

``chain-studio open big.jsonl`` starts a server, then a browser loads the studio's page (about 1.8 s of
JavaScript before the page's first run even starts). The first run of a 25,000-call trace then parsed it (1.3 s
of CPU), linted it (0.8 s), built its call table and counted the table page's tokens: a cold Timeline took about
twice as long as one of 100 calls. Nothing in that work depends on the browser, so this entry point starts
Streamlit exactly as ``python -m streamlit`` does and, beside it, reads the file named by ``--open`` on a
background thread (``preload``): the same cached functions the first page run calls (``studio/services.py``,
``studio/estimate_services.py``), with the provider profile that run will use when the user has picked none
(the trace's own: ``services.default_profile``). The page run finds them done, or waits for the one under way
(Streamlit's cached functions compute a value once: a second caller waits for the first), never computes twice.

- Only a big file (``opening.BIG_BYTES``) that is not a line-oriented payload log (those are streamed with a
  progress bar by the page: ``opening.load_line_log``); a small one costs its page run little.
- Its token series is counted from the end of the parse by a child forked from the server (``opening.parsed``,
  ``count_child.fork``), as after a page's own first parse.
- Nothing here draws: the first-open steps are marked done (``opening.mark_prepared``) only once all of them are
  cached, so a page that arrives before shows its progress bar and waits for the same values.
- A failure (an unreadable file) is left for the page to meet and report: the preload only stops.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from studio.launch_args import open_argument
from studio.phases import mark

PRELOAD_THREAD = "trace-preload"
RUNTIME_WAIT_S = 30.0
"""How long the preload waits for Streamlit's runtime to exist (its cached functions' storage) before it gives up."""


def _runtime_ready(timeout: float) -> bool:
    from streamlit.runtime import Runtime

    deadline = time.monotonic() + timeout
    while not Runtime.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


SMALL_BYTES = 1_000_000
"""Files under this size are never preloaded (checked before anything is imported: a server on a small file or
on the samples starts as fast as before); ``opening.BIG_BYTES`` decides for the others."""


def preload(path: str) -> bool:
    """Read, parse, lint and tabulate the big trace file ``path`` into the studio's caches, and count its first
    table page's tokens; True when done, False when the file is small, a payload log, or could not be read."""
    from studio import residency

    with residency.in_use():        # the caches it fills are not dropped meanwhile
        return _preload(path)


def _preload(path: str) -> bool:
    path = os.path.realpath(path)       # the key the studio's sources give it (``services.builtin_sources``)
    try:
        if os.stat(path).st_size < SMALL_BYTES:
            return False
        from agent_core.ingest import detect as _importers
        from studio import estimate_services, opening, services

        stat = os.stat(path)
        if stat.st_size < opening.BIG_BYTES or _importers.line_log.is_line_log(Path(path)):
            return False
        mark("preload start")
        digest = services._file_digest(path, stat.st_size, stat.st_mtime_ns)
        trace = services._parse_file(digest, path)
        mark("preload parsed")
        opening.parsed(digest, trace, path, stat.st_size)      # its token series is counted from now, in a child
        loaded = services.Loaded(services.Source(f"open:{path}", os.path.basename(path), "open", path), digest, trace)
        if len(trace.calls) < opening.BIG_CALLS:
            return True
        profile = services.default_profile(loaded)
        # the first table page's tokens and the table's rows while the child lints (``count_child.fork``), then
        # the findings
        estimate_services.row_estimates(loaded, [c.index for c in trace.calls[:estimate_services.TABLE_PAGE]])
        mark("preload first page counted")
        services.timeline_rows(loaded)      # while the child lints
        mark("preload rows")
        _page_imports()                     # still while it lints: this thread would only wait for it
        mark("preload imports")
        services.findings(loaded, profile)
        mark("preload findings")
        services.timeline(loaded, profile)
        opening.mark_prepared(digest, profile)
        mark("preload done")
        return True
    except Exception:  # noqa: BLE001 - the page run meets the same error and reports it in one sentence
        return False


def _page_imports() -> None:
    """What the Timeline's first run imports that the preload does not: pandas (with numpy and pyarrow) for its
    table, 0.5 s of that run's 0.8 s at 25,000 calls (py-spy, ``-X importtime``), and the page's services and
    components. A module missing from this list is imported by the page as before."""
    import pandas  # noqa: F401
    import pyarrow.pandas_compat  # noqa: F401

    from studio import call_services  # noqa: F401
    from studio.components import exports, long_text, messages, responses  # noqa: F401


def _preload_opened(argv: list[str]) -> bool:
    """``preload`` the file ``--open`` names in ``argv``, once Streamlit's runtime exists (the server has imported
    what it needs: this thread's imports do not race the server's own)."""
    if not _runtime_ready(RUNTIME_WAIT_S):
        return False
    path = open_argument(argv)
    return bool(path) and preload(path)



def start(argv: list[str]) -> threading.Thread:
    """Start ``_preload_opened(argv)`` on a daemon thread."""
    thread = threading.Thread(target=_preload_opened, args=(list(argv),), name=PRELOAD_THREAD, daemon=True)
    thread.start()
    return thread


def main() -> None:
    """``python -m streamlit``, with the ``--open`` file read beside the server's start."""
    from streamlit.web.cli import main as streamlit_main

    mark("server start")
    start(sys.argv)
    streamlit_main(prog_name="streamlit")


if __name__ == "__main__":
    main()
