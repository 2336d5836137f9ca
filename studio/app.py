"""Chain Studio's entry point: ``streamlit run studio/app.py [-- --open PATH]``.

Started by ``chain-studio`` / ``chain-studio open PATH``. The page list and
the shared sidebar live in ``studio/router.py``.
"""
from __future__ import annotations

import sys
from pathlib import Path

# `streamlit run studio/app.py` puts studio/ on sys.path, not the project root.
_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from studio.router import main  # noqa: E402

main()
