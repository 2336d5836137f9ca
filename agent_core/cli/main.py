"""``chain-studio``: the studio, the chat REPL, the demo model and the trace tools.

One module per command beside this one; each has ``add(subparsers)`` and the
``run(args)`` it registers. Every error a user can cause ends as one line on
stderr and a non-zero exit code (2 for input that cannot be used: a file,
a parameter, a name); tracebacks only
with ``CHAIN_STUDIO_DEBUG=1``.
"""
from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
from typing import NoReturn

from agent_core.core import heap
from agent_core.core.errors import ChainStudioError, InputError

from . import chat, collect, demo_model, export, lint, proxy, repair, replay, studio

EXIT_USAGE = 2
_COMMANDS = (studio, chat, demo_model, lint, repair, replay, proxy, export, collect)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chain-studio",
        description="Chain Studio: see exactly what the model saw on every call. "
                    "With no command, starts the studio on the bundled sample traces.")
    parser.add_argument("--port", type=int, default=None, help="studio port (with no command)")
    sub = parser.add_subparsers(dest="command")
    for command in _COMMANDS:
        command.add(sub)
    return parser


def safe_output() -> None:
    """Text a trace holds may contain lone surrogates ("\\ud800" in JSON) that UTF-8 cannot encode: every
    write escapes them as ``\\ud800`` instead of raising (inside a JSON string that is the same escape)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):      # a closed or detached stream: nothing to configure
                pass


def _quiet_exit_on_closed_pipe() -> int:
    """``chain-studio lint big.jsonl | head``: the reader went away; stop without a traceback.

    Python flushes stdout again at exit, which would raise once more; point it at /dev/null first.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 1      # no line to print: the output was cut by its reader


def main(argv: list[str] | None = None) -> int:
    safe_output()
    args = build_parser().parse_args(argv)
    if getattr(args, "progress", False):
        from agent_core.ingest import line_log

        line_log.ASKED["progress"] = True
    if not getattr(args, "func", None):
        args.func = studio.run_studio
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _quiet_exit_on_closed_pipe()
    except ChainStudioError as err:
        if os.environ.get("CHAIN_STUDIO_DEBUG"):
            raise
        print(f"chain-studio: {err}", file=sys.stderr)
        return EXIT_USAGE if isinstance(err, InputError) else 1
    except Exception as err:      # the last line of defence: one line, not a traceback
        if os.environ.get("CHAIN_STUDIO_DEBUG"):
            raise
        print(f"chain-studio: internal error ({type(err).__name__}: {str(err)[:200]}); this is a Chain Studio "
              "bug, please report it (CHAIN_STUDIO_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


def console(argv: list[str] | None = None) -> NoReturn:
    """The ``chain-studio`` command: ``main``, then the process ends without freeing what the command built
    (``core/heap.py : keep``) once its output is flushed and the exit handlers have run (the token store's
    last counts among them). A command that left a thread running exits the usual way."""
    heap.leave_at_exit()
    code = main(argv)
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):     # a reader gone away: as main's closed-pipe exit
        sys.exit(code)
    atexit._run_exitfuncs()
    os._exit(code)
