"""compose: policies applied in sequence."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from agent_core.core.msg import Msg

from .base import PolicyError, TrimPolicy, TrimResult, result_of


@dataclass(frozen=True)
class ComposeConfig:
    """Parameters of compose, as the CLI and the studio give them."""

    policies: str = "summary-window:keep_turns=5+token-budget:max_tokens=8000"
    """Stages joined by +, each name:key=value,key=value."""


class Compose:
    """Policies applied in sequence (e.g. summary-window, then token-budget)."""

    name = "compose"
    Config = ComposeConfig

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
