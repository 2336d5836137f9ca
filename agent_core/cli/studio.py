"""``chain-studio`` / ``chain-studio studio`` / ``chain-studio open PATH``: start the Streamlit studio."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from agent_core.core.errors import MalformedTraceError
from agent_core.core.paths import PROJECT_ROOT, STUDIO_APP, TRACES_ENV, traces_dir


def studio_command(target: Path | None, port: int | None, extra: list[str] | None = None) -> list[str]:
    """The ``streamlit run`` command line that serves the studio (on ``target`` when given)."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(STUDIO_APP),
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
    """Start the studio on one trace file."""
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
    p.add_argument("path")
    p.add_argument("--port", type=int, default=None)
    p.set_defaults(func=run_open)
