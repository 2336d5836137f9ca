"""``chain-studio`` / ``chain-studio studio`` / ``chain-studio open PATH``: start the Streamlit studio."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from agent_core.core.errors import MalformedTraceError
from agent_core.core.paths import PROJECT_ROOT, STUDIO_APP, TRACES_ENV, traces_dir


def studio_command(target: Path | None, port: int | None, extra: list[str] | None = None) -> list[str]:
    """The ``streamlit run`` command line that serves the studio (on ``target`` when given), through
    ``studio/preload.py``: Streamlit's own command line, with the trace read while the browser loads the page."""
    cmd = [sys.executable, "-m", "studio.preload", "run", str(STUDIO_APP),
           "--server.address", "localhost", "--server.headless", "true",
           "--browser.gatherUsageStats", "false"]
    if port:
        cmd += ["--server.port", str(port)]
    cmd += extra or []
    if target is not None:
        cmd += ["--", "--open", str(target)]
    return cmd


def run_studio(args: argparse.Namespace) -> int:
    """Start the studio on the bundled sample traces."""
    return _serve(None, args.port)


def run_open(args: argparse.Namespace) -> int:
    """Start the studio on one trace file, or on a Phoenix project's LLM spans (its http://HOST:6006/projects/ID URL)."""
    if re.match(r"^https?://", args.path):
        from .open_url import fetch_url

        path = fetch_url(args.path, out=args.out, trace_id=args.trace_id)
        if args.out:
            return 0
        return _serve(path, args.port)
    path = Path(args.path).resolve()
    if not path.is_file():
        raise MalformedTraceError(args.path, "no such file")
    return _serve(path, args.port)


def _serve(target: Path | None, port: int | None) -> int:
    env = dict(os.environ)
    env.setdefault(TRACES_ENV, str(traces_dir()))
    cmd = studio_command(target, port)
    # Run from the project root so .streamlit/config.toml (theme, limits) applies.
    if os.name == "posix":
        # Become the server: a SIGTERM to `chain-studio studio` (a supervisor, a test) must stop
        # streamlit too, not leave it orphaned and holding the port.
        os.chdir(PROJECT_ROOT)
        os.execve(sys.executable, cmd, env)
    return subprocess.call(cmd, cwd=PROJECT_ROOT, env=env)


def add(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("studio", help=run_studio.__doc__, description=run_studio.__doc__)
    p.add_argument("--port", type=int, default=None)
    p.set_defaults(func=run_studio)
    p = sub.add_parser("open", help=run_open.__doc__, description=run_open.__doc__)
    p.add_argument("path", help="a trace file, or a Phoenix project URL (http://HOST:6006/projects/<id or name>)")
    p.add_argument("--port", type=int, default=None)
    p.add_argument("--out", default=None, help="with a URL: write the trace here and do not start the studio")
    p.add_argument("--trace-id", default=None, help="with a URL: the conversation (trace id) to open; default the newest")
    p.set_defaults(func=run_open)
