"""What a replay produces: per call the payload it would have sent, and per trace the totals."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from agent_core.core.models import Pricing
from agent_core.core.msg import message_key
from agent_core.trace.model import Call
from agent_core.trace.payload import Payload

from ._memory import recorded_ids_of
from .edited import EditedPayload

if TYPE_CHECKING:
    from agent_core.lint.finding import Finding

def is_error(finding: Finding) -> bool:
    """A finding of error severity: the provider would reject the payload."""
    return finding.severity == "error"


@dataclass
class Drop:
    """One message a policy (or the user's /clear) removed from memory."""

    msg_id: str
    """The removed message's stream id."""
    role: str
    """Its role, so a report can say "the user message" without a lookup."""
    after_add: int
    """How many stream messages had been added when it was removed."""
    policy: str
    """The policy's name, or ``clear``."""
    reason: str
    """The rule, in one sentence."""

    def export(self) -> dict:
        return {"id": self.msg_id, "role": self.role, "after_add": self.after_add, "policy": self.policy,
                "reason": self.reason}


@dataclass
class PayloadDiff:
    """Replayed payload vs the recorded one, by message id."""

    kept: list[str]
    """In both."""
    added: list[str]
    """Only in the replay (messages the recorded call did not carry, and summaries)."""
    dropped: list[str]
    """Only in the recorded payload (recorded messages without a stream id show as ``recorded[i]``)."""
    same: bool
    """True when the replayed messages equal the recorded ones exactly, order and keys included."""

    def export(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class ReplayedCall:
    """What one call would have sent under the replayed policy."""

    call: int
    """The call's index in the trace."""
    position: int
    """Stream messages added before the call."""
    payload: Payload | EditedPayload
    """The replayed payload as a run over the replay's shared arrays (``messages``, ``ids``): calls whose
    memory only grew between them share one list, so keep-all holds its N payloads in linear memory; under
    context editing (anthropic-clear-tool-uses) the shared history plus an edit log (``edited.EditedPayload``)."""
    tools: list[dict] | None
    """The tool definitions the recorded call sent (replay keeps them)."""
    model: str | None
    """The recorded call's model: it picks the tokenizer and the price."""
    tokens: int
    """Cookbook count of messages + tool definitions + reply priming."""
    recorded_tokens: int
    """The same count for the payload that was really sent."""
    reported_prompt_tokens: int | None
    """``usage.prompt_tokens`` of the recorded response, if any."""
    dropped: list[Drop]
    """What left memory since the previous replayed call."""
    findings: list[Finding]
    """Linter findings on the replayed payload."""
    same: bool
    """True when the replayed messages equal the recorded ones exactly, order and keys included."""
    cost_usd: float | None
    """Estimated input cost of the replayed payload (see ``ReplayResult.pricing``); None when the call's
    model is not in the catalogue and no model to price it as was given."""
    recorded_cost_usd: float | None
    """The same for the payload that was really sent."""
    recorded_findings: list[Finding] | None = None
    """Linter findings on the recorded payload; filled by ``attach_recorded_findings`` (recorded
    payloads do not depend on the policy, so they are linted once per trace, on demand)."""
    _call: Call | None = field(default=None, repr=False)
    """The recorded call: ``recorded_messages`` and ``recorded_ids`` are read from it when asked,
    so a result does not pin a materialized payload per call."""
    _recorded_ids: list[str | None] | Payload | EditedPayload | None = field(default=None, repr=False)
    """Cache of ``recorded_ids`` (set at replay, to ``payload``, when bodies, not ids, showed the payloads equal)."""
    _diff: PayloadDiff | None = field(default=None, repr=False)
    """Cache of ``diff``."""
    _seq: int = field(default=-1, repr=False)
    """The order in which replay took the snapshots (-1: not a replay's own)."""
    _changes: tuple[list, list] | None = field(default=None, repr=False)
    """The bodies that left and came in since the snapshot before (``_seq - 1``); None when not known."""

    @property
    def messages(self) -> list[dict]:
        """The replayed payload (OpenAI dicts, shared with other calls: treat as read-only); a new list per ask."""
        return self.payload.messages()

    @property
    def ids(self) -> list[str]:
        """Stream id (or summary id) of each payload message; a new list per ask."""
        return self.payload.ids()

    @property
    def recorded_messages(self) -> list[dict]:
        """The payload that was really sent."""
        return self._call.messages if self._call is not None else []

    @property
    def recorded_ids(self) -> list[str | None]:
        """Stream id of each recorded payload message (None where the reader matched none)."""
        if isinstance(self._recorded_ids, (Payload, EditedPayload)):     # the replayed payload's own ids
            return self._recorded_ids.ids()
        if self._recorded_ids is None:
            self._recorded_ids = recorded_ids_of(self._call) if self._call is not None else []
        return self._recorded_ids

    @property
    def diff(self) -> PayloadDiff:
        """Replayed vs recorded, by id (computed when first asked: most callers never need it)."""
        if self._diff is None:
            self._diff = _diff(self.ids, self.messages, self.recorded_ids, self.recorded_messages, self.same)
        return self._diff

    @property
    def rejected(self) -> bool:
        """Would the API refuse this payload (any error finding)?"""
        return any(is_error(f) for f in self.findings)

    @property
    def introduced(self) -> list[Finding]:
        """Error findings of the replay that the recorded payload did not have: same rule on the
        same message (by id; by position where the recorded message has no id)."""
        def where(f: Finding, ids: Sequence[str | None]) -> object:
            i = f.index
            return ids[i] if i is not None and 0 <= i < len(ids) and ids[i] else ("at", i)

        rec_ids = self.recorded_ids if self.same is False else self.ids
        before = {(f.rule, where(f, rec_ids)) for f in self.recorded_findings or () if is_error(f)}
        return [f for f in self.findings if is_error(f) and (f.rule, where(f, self.ids)) not in before]

    def export(self) -> dict:
        """The CLI's per-call JSON: exactly call, messages, tokens, dropped, findings."""
        return {"call": self.call, "messages": self.messages, "tokens": self.tokens,
                "dropped": [d.export() for d in self.dropped], "findings": [f.export() for f in self.findings]}


@dataclass
class ReplayResult:
    """A whole trace replayed under one policy."""

    policy: str
    """The policy's registry name."""
    params: dict
    """Its parameters, as ``params()`` reports them."""
    label: str
    """``token-budget(max_tokens=2000, ...)``, for legends."""
    calls: list[ReplayedCall]
    """One per chat call of the trace, in call order."""
    drops: list[Drop]
    """Every removal, in stream order."""
    pricing: Pricing | None = None
    """The model every cost is priced as (``core.models.price_as``); None: each call at its own
    model's catalogue row, and a model without a price (the demo model) is listed as unpriced."""
    conversations: list[dict] = field(default_factory=list)
    """The trace's ``meta["conversations"]`` (several in one import), for per-conversation diagnosis."""

    @property
    def totals(self) -> dict:
        priced = [c for c in self.calls if c.cost_usd is not None]
        unpriced = sorted({c.model or "(unknown)" for c in self.calls if c.cost_usd is None})
        rec_cost = sum(c.recorded_cost_usd for c in priced)
        return {
            "calls": len(self.calls),
            "tokens": sum(c.tokens for c in self.calls),
            "recorded_tokens": sum(c.recorded_tokens for c in self.calls),
            "cost_usd": round(sum(c.cost_usd for c in priced), 6),
            "recorded_cost_usd": round(rec_cost, 6),
            "unpriced_models": unpriced,
            "priced_as": self.pricing.facts.name if self.pricing is not None else None,
            "rejected": len([c for c in self.calls if c.rejected]),
            "rejected_calls": [c.call for c in self.calls if c.rejected],
            "error_findings": sum(1 for c in self.calls for f in c.findings if is_error(f)),
            "dropped_messages": len({d.msg_id for d in self.drops}),
            "same_as_recorded": sum(1 for c in self.calls if c.same),
        }

    def to_json(self, probes: dict | None = None) -> dict:
        """The ``chain-studio replay --format json`` document."""
        return {"policy": self.policy, "params": self.params, "calls": [c.export() for c in self.calls],
                "probes": probes or {}, "totals": self.totals}

    def call(self, index: int) -> ReplayedCall | None:
        return next((c for c in self.calls if c.call == index), None)



def _role(message: object) -> object:
    """A payload entry's role (None for a dict without one and for what is no dict)."""
    return message.get("role") if isinstance(message, dict) else None


def _diff(ids: list[str], messages: list[dict], rec_ids: list[str | None], recorded: list[dict],
          same: bool) -> PayloadDiff:
    labels = [rid if rid else f"recorded[{i}]" for i, rid in enumerate(rec_ids)]
    rec_set = set(labels)
    mine = set(ids)
    added = [i for i, mid in enumerate(ids) if mid not in rec_set]
    dropped = [i for i, label in enumerate(labels) if label not in mine]
    if added and dropped:
        # A recorded message without (or with another) id but the same body is the same message. Equal bodies
        # have equal roles, so only the dropped messages of an added one's role are serialized: a summary added
        # where a full history was recorded is one system message against thousands of others.
        roles = {_role(messages[i]) for i in added}
        free: dict[str, list[int]] = {}
        for i in dropped:
            if _role(recorded[i]) in roles:
                free.setdefault(message_key(recorded[i]), []).append(i)
        matched_added, matched_dropped = set(), set()
        for i in added:
            bucket = free.get(message_key(messages[i]))
            if bucket:
                matched_dropped.add(bucket.pop(0))
                matched_added.add(i)
        added = [i for i in added if i not in matched_added]
        dropped = [i for i in dropped if i not in matched_dropped]
    added_set = set(added)
    return PayloadDiff(kept=[mid for i, mid in enumerate(ids) if i not in added_set],
                       added=[ids[i] for i in added], dropped=[labels[i] for i in dropped], same=same)

