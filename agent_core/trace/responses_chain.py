"""What the model saw on a Responses API call: the stored chain it continues, plus what the request sent.

With ``previous_response_id`` a Responses request holds only the new items;
the server prepends the stored chain of that response: its own effective input
followed by its output items, recursively (OpenAI docs, "Conversation state":
``previous_response_id``; ``instructions`` are not carried over from the
previous response). ``effective_inputs`` rebuilds that for every call of a
trace from the recorded bodies alone, each item labelled with where it came
from. A previous response that is not in the trace cannot be rebuilt: the call
says so (``unresolved``), it never pretends the chain started there.

``truncation: "auto"`` lets the server drop the oldest items without saying
which; ``silent_truncation`` compares the reported ``usage.input_tokens`` with
the estimate of the rebuilt input.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agent_core.apis.responses import RESPONSES, as_chat_messages, input_items

SENT = "sent in this request"
"""The origin label of an item the request itself carried."""


@dataclass(frozen=True)
class SeenItem:
    """One item of the effective input and where it came from."""

    item: Any
    """The native item as sent or as returned (a string input is shown as one user message item)."""
    origin: str
    """``sent in this request``, or ``from response resp_…`` (its input or its output)."""
    path: str
    """Where it is in the recorded bodies: ``input[3]`` of this request, or ``resp_….output[0]`` /
    ``call 2 input[1]`` for a stored item."""
    index: int | None
    """Its position in this request's ``input`` when it was sent in this request, else None."""


@dataclass
class EffectiveInput:
    """What the model saw on one Responses call (as far as the trace shows)."""

    call: int
    """The call's index in the trace."""
    instructions: Any
    """This request's ``instructions`` (never carried over from the previous response)."""
    items: list[SeenItem] = field(default_factory=list)
    """The stored chain's items, then this request's, in the order the model saw them."""
    previous_response_id: str | None = None
    """The ``previous_response_id`` the request named, if any."""
    unresolved: str | None = None
    """A response id of the chain that no recorded call returned (the chain before it is unknown), else None."""
    truncation: Any = None
    """The request's ``truncation`` setting as sent (``auto`` lets the server drop the oldest items)."""

    def native_items(self) -> list:
        """The effective input as native items."""
        return [s.item for s in self.items]

    def chat_messages(self) -> list[dict]:
        """The effective input (with ``instructions`` first) as derived Chat Completions messages."""
        return as_chat_messages(self.native_items(), self.instructions)


def _output(response: Any) -> list:
    out = response.get("output") if isinstance(response, dict) else None
    return [x for x in out if isinstance(x, dict)] if isinstance(out, list) else []


def _response_id(response: Any) -> str | None:
    rid = response.get("id") if isinstance(response, dict) else None
    return rid if isinstance(rid, str) else None


def call_exchanges(calls: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    """``(request, response)`` of each recorded call, for ``effective_inputs``: a request is built only when its
    head is a Responses request, so a chat call's payload list (a full-history trace: quadratic) is never built."""
    for c in calls:
        yield (c.request if RESPONSES.claims(c.request_head()) else None), c.response


def effective_inputs(exchanges: Iterable[tuple[Any, Any]]) -> list[EffectiveInput | None]:
    """For every ``(request, response)`` exchange in order, its effective input (None for a non-Responses call).

    A request's ``previous_response_id`` is resolved against the responses of
    the exchanges before it; the stored chain of a response is its effective
    input plus its output items.
    """
    stored: dict[str, list[SeenItem]] = {}
    out: list[EffectiveInput | None] = []
    for n, (request, response) in enumerate(exchanges):
        if not RESPONSES.claims(request):
            out.append(None)
            continue
        prev = request.get("previous_response_id")
        seen = EffectiveInput(call=n, instructions=request.get("instructions"),
                              previous_response_id=prev if isinstance(prev, str) else None,
                              truncation=request.get("truncation"))
        if isinstance(prev, str):
            if prev in stored:
                seen.items.extend(stored[prev])
            else:
                seen.unresolved = prev
        string_input = isinstance(request.get("input"), str)
        for i, item in enumerate(input_items(request)):
            seen.items.append(SeenItem(item=item, origin=SENT, path="input" if string_input else f"input[{i}]",
                                       index=i))
        rid = _response_id(response)
        if rid is not None:
            chain = [SeenItem(item=s.item, origin=s.origin if s.origin != SENT else f"from response {rid}",
                              path=s.path if s.origin != SENT else f"call {n} {s.path}", index=None)
                     for s in seen.items]
            chain += [SeenItem(item=x, origin=f"from response {rid}", path=f"{rid}.output[{k}]", index=None)
                      for k, x in enumerate(_output(response))]
            if seen.unresolved is None:
                stored[rid] = chain
        out.append(seen)
    return out


def output_reasoning_pairs(responses: Iterable[Any]) -> dict[str, str]:
    """``fc_…`` item id -> the ``rs_…`` reasoning item that came right before it in a response's output.

    The API wants such a function_call sent back with its reasoning item
    ("... was provided without its required 'reasoning' item"); only the
    responses show which reasoning item belongs to which call.
    """
    pairs: dict[str, str] = {}
    for response in responses:
        last_rs: str | None = None
        for x in _output(response):
            if x.get("type") == "reasoning" and isinstance(x.get("id"), str):
                last_rs = x["id"]
            elif x.get("type") == "function_call" and isinstance(x.get("id"), str) and last_rs:
                pairs[x["id"]] = last_rs
                last_rs = None      # parallel calls: only the first follows the reasoning item
            else:
                last_rs = None
    return pairs
