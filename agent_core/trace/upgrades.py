"""Named, append-only upgrade steps for older trace format versions.

Each bump of the format adds one step here (``v1_to_v2`` ...) and one
fixture under tests/fixtures/traces/; a released step is never edited.
"""
from __future__ import annotations

CURRENT_VERSION = 1

# version -> function taking the event list of that version, returning version + 1
_STEPS: dict[int, object] = {}


def upgrade(events: list[dict], version: int) -> list[dict]:
    """Bring events of ``version`` up to ``CURRENT_VERSION``."""
    while version < CURRENT_VERSION:
        events = _STEPS[version](events)  # type: ignore[operator]
        version += 1
    return events
