"""Which conversation a Responses API exchange belongs to, for the recording proxy.

A Responses request that names ``previous_response_id`` continues exactly the
conversation whose call returned that id: no inference needed. Without it, a
session header (``X-Chain-Studio-Session``) decides; else a request whose
``input`` starts by re-sending a conversation's whole chain so far (its items
and outputs, as the OpenAI Agents SDK does by default) continues it, and that
placement is labelled inferred with its evidence; anything else starts a new
conversation.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_core.apis.responses import input_items, item_key


@dataclass(frozen=True)
class Placement:
    """Where one exchange goes and why."""

    conversation: int
    """0-based conversation number."""
    reason: str
    """Why, in one line (``previous_response_id resp_… (exact)``, ``inferred: …``)."""
    label: str | None
    """The session label, when a header named it."""


class ResponsesLineage:
    """Places Responses exchanges in conversations, one call at a time."""

    def __init__(self) -> None:
        self._by_response: dict[str, int] = {}
        self._chains: dict[str, list[tuple]] = {}      # response id -> item keys of its chain (input + output)
        self._tails: dict[int, list[tuple]] = {}       # conversation -> item keys of its chain after the last call
        self._labels: dict[int, str | None] = {}
        self._by_label: dict[str, int] = {}

    def _new(self, label: str | None) -> int:
        conv = len(self._labels)
        self._labels[conv] = label
        if label is not None:
            self._by_label[label] = conv
        return conv

    def place(self, request: Any, response: Any, session: str | None) -> Placement:
        """The conversation of one exchange (and remember its chain for the next ones)."""
        prev = request.get("previous_response_id") if isinstance(request, dict) else None
        sent = [item_key(x) for x in input_items(request)]
        stored: list[tuple] = []
        if isinstance(prev, str) and prev in self._by_response:
            conv = self._by_response[prev]
            stored = self._chains.get(prev, [])
            reason = f"previous_response_id {prev} (exact)"
        elif isinstance(prev, str):
            conv = self._by_label[session] if session in self._by_label else self._new(session)
            reason = (f"previous_response_id {prev} was not recorded by this proxy: "
                      + ("session header" if session else "new conversation (its earlier chain is unknown)"))
        elif session is not None:
            conv = self._by_label[session] if session in self._by_label else self._new(session)
            reason = "X-Chain-Studio-Session header"
        else:
            best = max(((len(tail), c) for c, tail in self._tails.items()
                        if tail and sent[:len(tail)] == tail), default=None)
            if best is not None:
                conv = best[1]
                reason = (f"inferred: its input re-sends all {best[0]} items of conversation {conv + 1} "
                          "(no previous_response_id)")
            else:
                conv = self._new(None)
                reason = "new conversation: no previous_response_id, and its input continues no recorded one"
        chain = stored + sent
        rid = response.get("id") if isinstance(response, dict) else None
        output = response.get("output") if isinstance(response, dict) else None
        if isinstance(rid, str) and isinstance(output, list):
            chain = chain + [item_key(x) for x in output]
            self._by_response[rid] = conv
            self._chains[rid] = chain
        self._tails[conv] = chain
        return Placement(conv, reason, self._labels[conv])
