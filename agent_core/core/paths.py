"""Where bundled files live, whether run from a checkout or an editable install."""
from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_TRACES = PROJECT_ROOT / "sample_traces"
STUDIO_APP = PROJECT_ROOT / "studio" / "app.py"


def default_traces_dir() -> Path:
    """Recordings of ``chain-studio chat`` go to ./traces/ of the working directory."""
    return Path.cwd() / "traces"
