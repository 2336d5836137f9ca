"""The demo model's Responses API (``POST /v1/responses``): same offline rules, Responses shapes.

What it does, as the real API documents it (platform.openai.com/docs/api-reference/responses):

- ``input`` is a string or a list of items (``message`` with ``input_text`` /
  ``output_text`` parts, ``function_call``, ``function_call_output``,
  ``reasoning``); ``instructions`` come first and are not carried over from a
  previous response; flat function ``tools``.
- ``previous_response_id``: the stored chain of that response (its input and
  output items) comes before this request's items. Responses are stored
  unless ``"store": false``; an unknown id is a 400
  ("Previous response with id 'resp_…' not found.", code
  ``previous_response_not_found``, maximhq/bifrost #2441).
- The effective input is linted with the Responses rules (``lint/responses.py``);
  the first error is the 400 the real API returns.
- ``CONTEXT_WINDOW`` tokens (counted with tiktoken over the derived messages):
  above it, ``truncation: "auto"`` drops the oldest item groups (a call with
  its output, a reasoning item with its follower) until the rest fits;
  otherwise a 400 ``context_length_exceeded``.
- ``usage`` reports ``input_tokens`` of what the model actually used (after
  truncation) and ``output_tokens``.
- ``stream: true``: the documented SSE events, ``response.created`` …
  ``response.completed``, each with a ``sequence_number``.

``ResponsesStore.used`` keeps, per response id, the exact items and
instructions the model answered from, so tests can compare a recording's
reconstruction with what the server really used.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agent_core.apis.responses import as_chat_messages, chat_tools, input_items
from agent_core.lint.profiles import get_profile
from agent_core.lint.responses import lint_effective
from agent_core.trace.responses_chain import SENT, EffectiveInput, SeenItem, output_reasoning_pairs
from agent_core.trace.tokens import counter_for
from agent_core.trim.items import TruncationAuto

from . import demo_faults, demo_model

CONTEXT_WINDOW = 2048
"""Tokens of effective input the demo model accepts on ``/v1/responses`` (small, so truncation can be shown)."""


def _error(message: str, param: str | None = None, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


@dataclass
class ResponsesStore:
    """The demo model's stored responses (thread-safe)."""

    chains: dict[str, list] = field(default_factory=dict)
    """response id -> its chain (the effective input before truncation, then its output items)."""
    used: dict[str, dict] = field(default_factory=dict)
    """response id -> ``{"instructions", "input"}``: exactly what the model answered from (after truncation)."""
    outputs: list[Any] = field(default_factory=list)
    """Every response body returned, in order (for the reasoning-pair rule)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    count: int = 0


def _tokens(items: list, instructions: Any, tools: Any) -> int:
    return counter_for(None).count_payload(as_chat_messages(items, instructions), chat_tools(tools))


def _truncate(items: list, instructions: Any, tools: Any) -> list:
    """Drop the oldest item groups until the input fits ``CONTEXT_WINDOW`` (the last group always stays)."""
    keep, _ = TruncationAuto(context_window=CONTEXT_WINDOW).apply_items(items, instructions=instructions, tools=tools)
    return [items[k] for k in keep]


def _output_items(completion: dict, rid: str) -> list[dict]:
    message = completion["choices"][0]["message"]
    tag = rid[5:17]
    if message.get("tool_calls"):
        return [{"type": "function_call", "id": f"fc_{tag}{k}", "call_id": c["id"], "name": c["function"]["name"],
                 "arguments": c["function"]["arguments"], "status": "completed"}
                for k, c in enumerate(message["tool_calls"])]
    return [{"type": "message", "id": f"msg_{tag}", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": message.get("content") or "", "annotations": []}]}]


def respond(body: Any, store: ResponsesStore) -> tuple[int, dict]:
    """The HTTP status and body the demo model answers a ``/v1/responses`` request with."""
    if not isinstance(body, dict):
        return 400, _error("Invalid type for request body: expected an object.")
    prev = body.get("previous_response_id")
    if "input" not in body and prev is None:
        return 400, _error("Missing required parameter: 'input'.", param="input", code="missing_required_parameter")
    if "input" in body and not isinstance(body["input"], (str, list)):
        return 400, _error("Invalid type for 'input': expected one of a string or an array of input items.",
                           param="input", code="invalid_type")
    if prev is not None and not isinstance(prev, str):
        return 400, _error("Invalid type for 'previous_response_id': expected a string.",
                           param="previous_response_id", code="invalid_type")
    with store.lock:
        if prev is not None and prev not in store.chains:
            return 400, _error(f"Previous response with id '{prev}' not found.", param="previous_response_id",
                               code="previous_response_not_found")
        stored = list(store.chains.get(prev, [])) if prev is not None else []
        pairs = output_reasoning_pairs(store.outputs)
        store.count += 1
        number = store.count
    sent = input_items(body)
    seen = EffectiveInput(call=0, instructions=body.get("instructions"), previous_response_id=prev)
    seen.items = [SeenItem(x, f"from response {prev}", f"{prev} item {k}", None) for k, x in enumerate(stored)] + \
                 [SeenItem(x, SENT, f"input[{k}]", k) for k, x in enumerate(sent)]
    for f in lint_effective(seen, get_profile("openai"), reasoning_pairs=pairs):
        if f.severity == "error":
            return 400, _error(f.api_error or f.message, param=f.param, code=f.code)
    effective = stored + sent
    instructions, tools = body.get("instructions"), body.get("tools")
    used = effective
    if _tokens(effective, instructions, tools) > CONTEXT_WINDOW:
        if body.get("truncation") != "auto":
            return 400, _error("Your input exceeds the context window of this model. Please adjust your input and "
                               "try again.", param="input", code="context_length_exceeded")
        used = _truncate(effective, instructions, tools)
    completion = demo_model.respond({"messages": as_chat_messages(used, instructions), "tools": chat_tools(tools)})
    digest = hashlib.sha1(json.dumps([number, used], ensure_ascii=False, default=str).encode("utf-8")).hexdigest()
    rid = "resp_" + digest[:32]
    output = _output_items(completion, rid)
    usage = completion["usage"]
    response = {
        "id": rid, "object": "response", "created_at": int(time.time()), "status": "completed", "error": None,
        "incomplete_details": None, "instructions": instructions, "max_output_tokens": body.get("max_output_tokens"),
        "model": demo_model.MODEL_NAME, "output": output, "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": prev, "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True) is not False, "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}}, "tool_choice": body.get("tool_choice", "auto"),
        "tools": tools if isinstance(tools, list) else [], "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"), "metadata": body.get("metadata") or {},
        "usage": {"input_tokens": usage["prompt_tokens"], "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": usage["completion_tokens"], "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]},
    }
    with store.lock:
        store.used[rid] = {"instructions": instructions, "input": used}
        store.outputs.append(response)
        if response["store"]:
            store.chains[rid] = effective + output
    return 200, response


def stream_events(response: dict) -> list[dict]:
    """The response as the documented SSE event sequence (``response.created`` ... ``response.completed``)."""
    events: list[dict] = []

    def add(kind: str, **data: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **data})

    start = {**response, "status": "in_progress", "output": [], "usage": None}
    add("response.created", response=start)
    add("response.in_progress", response=start)
    for n, item in enumerate(response["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            add("response.output_item.added", output_index=n, item={**item, "status": "in_progress", "content": []})
            part = {"type": "output_text", "text": "", "annotations": []}
            add("response.content_part.added", item_id=item["id"], output_index=n, content_index=0, part=part)
            for i in range(0, len(text), 8):
                add("response.output_text.delta", item_id=item["id"], output_index=n, content_index=0,
                    delta=text[i:i + 8], logprobs=[])
            add("response.output_text.done", item_id=item["id"], output_index=n, content_index=0, text=text,
                logprobs=[])
            add("response.content_part.done", item_id=item["id"], output_index=n, content_index=0,
                part={**part, "text": text})
        else:
            args = item["arguments"]
            add("response.output_item.added", output_index=n, item={**item, "status": "in_progress", "arguments": ""})
            add("response.function_call_arguments.delta", item_id=item["id"], output_index=n, delta=args)
            add("response.function_call_arguments.done", item_id=item["id"], output_index=n, arguments=args)
        add("response.output_item.done", output_index=n, item=item)
    add("response.completed", response=response)
    return events


CUT_TEXT = "This answer was cut mid-way by the demo model's cut-stream fault."


def fault(kind: str, body: Any) -> demo_faults.FaultReply | None:
    """The Responses API's own shape of an injected fault; None where it is Chat Completions' (the error
    envelope, status and texts of 400, 401, 429, 500, timeout and malformed are OpenAI's on both endpoints).

    ``cut-stream``: a streamed request gets the documented events up to the first text delta and no
    ``response.completed``; a plain one gets its JSON body cut in half.
    """
    if kind != "cut-stream":
        return None
    rid = "resp_" + hashlib.sha1(json.dumps(body, default=str).encode("utf-8", "replace")).hexdigest()[:32]
    response = {
        "id": rid, "object": "response", "created_at": int(time.time()), "status": "completed", "error": None,
        "incomplete_details": None, "instructions": None, "model": demo_model.MODEL_NAME, "output": [
            {"type": "message", "id": "msg_" + rid[5:17], "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": CUT_TEXT, "annotations": []}]}],
        "parallel_tool_calls": True, "previous_response_id": None, "store": False, "tool_choice": "auto",
        "tools": [], "truncation": "disabled", "text": {"format": {"type": "text"}},
        "usage": {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2}}
    if not demo_faults.wants_stream(body):
        return demo_faults.cut_body(response)
    events = stream_events(response)
    first_delta = next(n for n, e in enumerate(events) if e["type"] == "response.output_text.delta")
    return demo_faults.cut_stream(b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in events[:first_delta + 1]))
