"""``python -m agent_core.cli``: the same as the ``chain-studio`` command."""
from __future__ import annotations

from agent_core.cli.main import console

console()
