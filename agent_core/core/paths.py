"""Where bundled files live (from a checkout or an editable install), and where recordings go."""
from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_TRACES = PROJECT_ROOT / "sample_traces"
STUDIO_APP = PROJECT_ROOT / "studio" / "app.py"

TRACES_ENV = "CHAIN_STUDIO_TRACES_DIR"
"""Environment variable: the folder recordings go to and the studio lists (default ``./traces``)."""


def traces_dir() -> Path:
    """Where ``chat`` and ``proxy`` record and the studio looks: ``$CHAIN_STUDIO_TRACES_DIR`` or ./traces/."""
    configured = os.environ.get(TRACES_ENV)
    return Path(configured) if configured else Path.cwd() / "traces"
