"""compose: policies applied in sequence."""
from __future__ import annotations

from typing import Sequence

from agent_core.core.msg import Msg

from .base import PolicyError, TrimPolicy, TrimResult, result_of


class Compose:
    """Policies applied in sequence (e.g. summary-window, then token-budget)."""

    name = "compose"

    def __init__(self, *policies: TrimPolicy):
        if not policies:
            raise PolicyError("compose needs at least one policy")
        self.policies = list(policies)

    def params(self) -> dict:
        return {"policies": [{"name": p.name, "params": p.params()} for p in self.policies]}

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        current: Sequence[Msg] = messages
        reasons = []
        for p in self.policies:
            r = p.apply(current)
            if r.changed:
                reasons.append(f"{p.name}: {r.reason}")
            current = r.messages
        return result_of(messages, list(current), "; then ".join(reasons))
