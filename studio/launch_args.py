"""The trace file the studio was started on: ``chain-studio open PATH`` passes it after streamlit's ``--``.

Read by the server's entry point before anything else is imported (``studio/preload.py``) and by the trace list
(``services.builtin_sources``); standard library only.
"""
from __future__ import annotations

import os
import sys

OPEN_ENV = "CHAIN_STUDIO_OPEN"
"""The file to open when the command line names none."""


def open_argument(argv: list[str] | None = None) -> str | None:
    """``--open PATH`` after streamlit's ``--`` (``chain-studio open``), else $CHAIN_STUDIO_OPEN."""
    argv = sys.argv if argv is None else argv
    for i, arg in enumerate(argv):
        if arg == "--open" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--open="):
            return arg.split("=", 1)[1]
    return os.environ.get(OPEN_ENV) or None
