"""Size limits on untrusted input, in one place.

Parsing JSON costs several times its size in memory; past these limits a
file is refused with one sentence instead of exhausting the machine.
"""
from __future__ import annotations

import os
from pathlib import Path

from .errors import MalformedTraceError

MAX_INPUT_MB = int(os.environ.get("CHAIN_STUDIO_MAX_INPUT_MB", "64"))
MAX_INPUT_BYTES = MAX_INPUT_MB * 1024 * 1024


def check_input_size(path: Path, size: int | None = None) -> None:
    """Refuse a file (or upload of ``size`` bytes) over the limit, naming the limit and how to raise it."""
    size = path.stat().st_size if size is None else size
    if size > MAX_INPUT_BYTES:
        raise MalformedTraceError(
            str(path), f"is {size / 1024 / 1024:.0f} MB; Chain Studio opens files up to {MAX_INPUT_MB} MB "
                       "(set CHAIN_STUDIO_MAX_INPUT_MB to raise the limit)")
