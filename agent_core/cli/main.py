"""``chain-studio``: the studio, the chat REPL, the demo model and the trace tools.

One module per command beside this one; each has ``add(subparsers)`` and the
``run(args)`` it registers. Every error a user can cause ends as one line on
stderr and a non-zero exit code (2 for input that cannot be used: a file,
a parameter, a name); tracebacks only
with ``CHAIN_STUDIO_DEBUG=1``.
"""
from __future__ import annotations

import argparse
import os
import sys

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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "progress", False):
        from agent_core.ingest import line_log

        line_log.ASKED["progress"] = True
    if not getattr(args, "func", None):
        args.func = studio.run_studio
    try:
        return int(args.func(args) or 0)
    except ChainStudioError as err:
        if os.environ.get("CHAIN_STUDIO_DEBUG"):
            raise
        print(f"chain-studio: {err}", file=sys.stderr)
        return EXIT_USAGE if isinstance(err, InputError) else 1
