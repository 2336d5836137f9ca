"""The OpenAI Responses wire API (``POST /responses``): its chain, streams, chat view and curl command.

``RESPONSES`` is the adapter (see ``base.WireApi``). A Responses request holds
``input`` (a string, or a list of items: ``message`` items with ``input_text``
/ ``output_text`` parts, ``function_call`` with ``call_id`` / ``name`` /
``arguments``, ``function_call_output`` with ``call_id`` / ``output``,
``reasoning``), ``instructions``, flat function ``tools``
(``{"type": "function", "name", "parameters"}``), and optionally
``previous_response_id``: then the server prepends the stored chain of that
response (its input and output items) and the body holds only the new items.

The derived ``Chain`` has one entry per input item, each at ``input[N]``:
a ``function_call`` is an entry that makes one call (id = its ``call_id``),
a ``function_call_output`` one that carries one result, a ``reasoning`` item
one whose ``reasoning`` is its summary. Streams are SSE events
(``response.created`` ... ``response.completed``) without a ``[DONE]``; the
terminal event carries the whole response object.

Sources: platform.openai.com/docs/api-reference/responses (create, streaming
events) and the installed ``openai`` SDK's ``types/responses``.
"""
from __future__ import annotations

import json
import shlex
from types import MappingProxyType
from typing import Any

from .chain import MISSING, Chain, Entry, ToolCall, ToolDecl, ToolResult
from .chat_completions import DEFAULT_BASE_URL, KEY_VARIABLE, strip_credentials

NAME = "responses"
PATH = "/responses"
TERMINAL_EVENTS = ("response.completed", "response.failed", "response.incomplete")
"""The stream events that end a response (they carry the whole response object)."""

_ENTRY_KEYS = MappingProxyType({"role": ".role", "content": ".content", "reasoning": ".summary"})
_CALL_KEYS = MappingProxyType({"id": ".call_id", "type": ".type", "name": ".name", "arguments": ".arguments"})
_RESULT_KEYS = MappingProxyType({"id": ".call_id", "content": ".output"})
_TOOL_KEYS = MappingProxyType({"name": ".name"})
_NESTED_TOOL_KEYS = MappingProxyType({"name": ".function.name"})


def item_type(item: Any) -> str | None:
    """The item's type as the API reads it: ``type``, or ``message`` for an untyped ``{role, content}``."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return kind if isinstance(kind, str) else None


def _entry(i: int, item: Any, path: str | None = None) -> Entry:
    path = path or f"input[{i}]"
    if not isinstance(item, dict):
        return Entry(path=path, keys=_ENTRY_KEYS, index=i, native=item)
    kind = item_type(item)
    if kind == "function_call":
        call = ToolCall(path=path, keys=_CALL_KEYS, position=0, id=item.get("call_id", MISSING),
                        name=item.get("name", MISSING), arguments=item.get("arguments", MISSING),
                        type="function", native=item)
        return Entry(path=path, keys=_ENTRY_KEYS, index=i, role="assistant", calls=(call,), calls_native=[item],
                     native=item)
    if kind == "function_call_output":
        result = ToolResult(path=path, keys=_RESULT_KEYS, id=item.get("call_id", MISSING),
                            content=item.get("output", MISSING))
        return Entry(path=path, keys=_ENTRY_KEYS, index=i, role="tool", content=item.get("output", MISSING),
                     results=(result,), native=item)
    if kind == "reasoning":
        return Entry(path=path, keys=_ENTRY_KEYS, index=i, role="assistant",
                     reasoning=item.get("summary", MISSING), native=item)
    return Entry(path=path, keys=_ENTRY_KEYS, index=i, role=item.get("role"), content=item.get("content", MISSING),
                 native=item)


def _tool(path: str, item: Any) -> ToolDecl:
    if not isinstance(item, dict):
        return ToolDecl(path=path, native=item)
    if isinstance(item.get("function"), dict):        # the Chat Completions shape, sent here by mistake
        return ToolDecl(path=path, keys=_NESTED_TOOL_KEYS, name=item["function"].get("name", MISSING), native=item)
    if item.get("type", "function") != "function":     # built-in tools (web_search, file_search ...) have no name
        return ToolDecl(path=path, name=MISSING, native=item)
    return ToolDecl(path=path, keys=_TOOL_KEYS, name=item.get("name", MISSING), native=item)


def input_items(body: Any) -> list:
    """A request's ``input`` as a list of items (a string is one user message), [] when absent or unusable."""
    value = body.get("input") if isinstance(body, dict) else None
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return list(value) if isinstance(value, list) else []


class Responses:
    """The Responses adapter (``base.WireApi``); use the ``RESPONSES`` instance."""

    name = NAME
    paths = (PATH,)
    turns_key = None

    def claims(self, body: Any) -> bool:
        """Whether ``body`` is a Responses request: an object with ``input`` (or ``previous_response_id``),
        no ``messages``; an embeddings body (``input`` with ``encoding_format`` / ``dimensions``) is not one."""
        if not isinstance(body, dict) or "messages" in body:
            return False
        if "previous_response_id" in body or "instructions" in body:
            return True
        if "input" not in body or "encoding_format" in body or "dimensions" in body:
            return False
        value = body["input"]
        return isinstance(value, str) or (isinstance(value, list) and any(isinstance(x, dict) for x in value))

    def items(self, body: Any) -> Any:
        """The native conversation value (``input``), as sent; None when the body has none."""
        return body.get("input") if isinstance(body, dict) else None

    def reply(self, response: Any) -> Any:
        """None: Responses conversations are grouped by ``previous_response_id`` (``serve/proxy_responses.py``)."""
        return None

    def entries(self, items: list, start: int = 0) -> tuple[Entry, ...]:
        """The entries of native input items, numbered from ``start``."""
        return tuple(_entry(i, item) for i, item in enumerate(items, start))

    def chain(self, body: Any) -> Chain:
        """The provider-neutral chain of a request body; never raises on any JSON value.

        A string ``input`` is one user entry at path ``input``. Thinking mode: a
        ``reasoning`` request option, or reasoning items in the input.
        """
        if not isinstance(body, dict):
            return Chain(api=NAME, entries=None, entries_native=None, entries_path="input", tools=None,
                         tools_path="tools")
        value = body.get("input", MISSING)
        if isinstance(value, str):
            entries: tuple[Entry, ...] | None = (
                Entry(path="input", keys=MappingProxyType({}), index=0, role="user", content=value,
                      native={"role": "user", "content": value}),)
        elif isinstance(value, list):
            entries = self.entries(value)
        elif value is MISSING and "previous_response_id" in body:
            entries = ()
        else:
            entries = None
        tools = body.get("tools")
        thinking = isinstance(body.get("reasoning"), dict) or any(
            item_type(x) == "reasoning" for x in (value if isinstance(value, list) else []))
        return Chain(api=NAME, entries=entries, entries_native=value if value is not MISSING else None,
                     entries_path="input",
                     tools=tuple(_tool(f"tools[{k}]", t) for k, t in enumerate(tools))
                     if isinstance(tools, list) else None, tools_path="tools", thinking=thinking)

    def parse_stream(self, raw: bytes) -> tuple[list[dict], bool]:
        """The events of a streamed response body; see ``parse_events``."""
        return parse_events(raw)

    def reassemble(self, chunks: list[dict]) -> dict[str, Any]:
        """One response object from a stream's events; see ``reassemble``."""
        return reassemble(chunks)

    def url(self, base_url: str | None) -> str:
        """``<base>/responses`` (a full responses URL is kept as is)."""
        base = (base_url or DEFAULT_BASE_URL).rstrip("/")
        return base if base.endswith(PATH) else base + PATH

    def curl(self, body: dict, base_url: str | None = None) -> str:
        """The shell command that POSTs ``body`` to the responses endpoint; the key comes from the environment."""
        url = strip_credentials(self.url(base_url))
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        return (f"curl {shlex.quote(url)} \\\n  -H 'Content-Type: application/json' \\\n"
                f"  -H \"Authorization: Bearer ${KEY_VARIABLE}\" \\\n  -d {shlex.quote(data)}")


RESPONSES = Responses()


# --- streams -------------------------------------------------------------------------------------------

def parse_events(raw: bytes) -> tuple[list[dict], bool]:
    """The JSON events of a Responses SSE body, and whether a terminal event (``response.completed`` ...) came."""
    events: list[dict] = []
    done = False
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":       # not part of the API, but some compatible servers add it
            continue
        try:
            event = json.loads(data)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict):
            events.append(event)
            if event.get("type") in TERMINAL_EVENTS:
                done = True
    return events, done


def reassemble(events: list[dict]) -> dict[str, Any]:
    """The response object of a stream: the terminal event's ``response``, else one rebuilt from the events.

    A stream cut before its terminal event is rebuilt from ``response.created``
    and every ``response.output_item.done`` (items still open are rebuilt from
    their deltas), with ``status`` left as the last event said.
    """
    for event in reversed(events):
        if event.get("type") in TERMINAL_EVENTS and isinstance(event.get("response"), dict):
            return event["response"]
    out: dict[str, Any] = {"id": None, "object": "response", "status": "in_progress", "output": []}
    items: dict[int, dict] = {}
    for event in events:
        kind = event.get("type")
        if kind in ("response.created", "response.in_progress") and isinstance(event.get("response"), dict):
            out.update({k: v for k, v in event["response"].items() if k != "output"})
        index = event.get("output_index")
        if not isinstance(index, int):
            continue
        if kind in ("response.output_item.added", "response.output_item.done") and isinstance(event.get("item"), dict):
            items[index] = dict(event["item"])
        elif kind == "response.output_text.delta" and index in items:
            parts = items[index].setdefault("content", [])
            if not parts:
                parts.append({"type": "output_text", "text": "", "annotations": []})
            parts[-1]["text"] = parts[-1].get("text", "") + str(event.get("delta", ""))
        elif kind == "response.function_call_arguments.delta" and index in items:
            items[index]["arguments"] = items[index].get("arguments", "") + str(event.get("delta", ""))
    out["output"] = [items[i] for i in sorted(items)]
    return out


# --- a chat view of items (for the demo model's rules and token counts; derived, never stored) -----------

def part_text(content: Any) -> str:
    """The text of a message item's content: a string, or its ``input_text`` / ``output_text`` / ``text`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict)
                       and p.get("type") in ("input_text", "output_text", "text", "refusal"))
    return ""


def as_chat_messages(items: list, instructions: Any = None) -> list[dict]:
    """Items as Chat Completions messages (derived): message -> role/text, function_call -> an assistant
    message with ``tool_calls`` (consecutive calls share one), function_call_output -> a ``tool`` message,
    reasoning -> nothing. ``instructions`` becomes the first (system) message."""
    out: list[dict] = []
    if isinstance(instructions, str) and instructions:
        out.append({"role": "system", "content": instructions})
    for item in items:
        kind = item_type(item)
        if kind == "message":
            out.append({"role": item.get("role"), "content": part_text(item.get("content"))})
        elif kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
            if out and out[-1].get("role") == "assistant" and out[-1].get("tool_calls") and out[-1]["content"] is None:
                out[-1]["tool_calls"].append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            out.append({"role": "tool", "tool_call_id": item.get("call_id"),
                        "content": output if isinstance(output, str) else part_text(output)})
    return out


def chat_tools(tools: Any) -> list[dict] | None:
    """Flat Responses function tools as Chat Completions tools (``{"type": "function", "function": {...}}``)."""
    if not isinstance(tools, list):
        return None
    out = []
    for t in tools:
        if isinstance(t, dict) and t.get("type", "function") == "function" and isinstance(t.get("name"), str):
            fn = {k: t[k] for k in ("name", "description", "parameters", "strict") if k in t}
            out.append({"type": "function", "function": fn})
    return out


def item_groups(items: list) -> list[tuple[int, int]]:
    """The items as groups that must be kept or dropped together, as ``(start, end)`` spans in order.

    A ``reasoning`` item belongs with the item after it; a ``function_call``
    with every item up to its ``function_call_output`` (parallel calls and their
    outputs form one group). Anything else is a group of its own. Dropping part
    of a group is what the API rejects ("No tool output found ...", "... without
    its required following item").
    """
    spans: list[tuple[int, int]] = []
    start: int | None = None
    open_calls: set = set()
    for i, item in enumerate(items):
        kind = item_type(item)
        if start is None:
            start = i
        if kind == "function_call":
            open_calls.add(item.get("call_id"))
        elif kind == "function_call_output":
            open_calls.discard(item.get("call_id"))
        if not open_calls and kind != "reasoning":
            spans.append((start, i + 1))
            start = None
    if start is not None:
        spans.append((start, len(items)))
    return spans


def item_key(item: Any) -> tuple:
    """What an item says, for recognising it when a client re-sends it (ids and status fields aside):
    a message by role and text, a call or an output by ``call_id``, anything else by its id or its JSON."""
    kind = item_type(item)
    if kind == "message":
        return ("message", item.get("role"), part_text(item.get("content")))
    if kind in ("function_call", "function_call_output"):
        return (kind, item.get("call_id"))
    if isinstance(item, dict) and isinstance(item.get("id"), str):
        return (kind, item["id"])
    return ("json", json.dumps(item, sort_keys=True, default=str))


def items_from_chat(messages: list[dict]) -> list[dict]:
    """Chat Completions messages as Responses input items (what an agent keeping chat-style memory sends):
    an assistant message's text becomes an ``output_text`` message item and each of its ``tool_calls`` a
    ``function_call``; a ``tool`` message becomes a ``function_call_output``; others keep role and text."""
    items: list[dict] = []
    for m in messages:
        role, content = m.get("role"), m.get("content")
        text = content if isinstance(content, str) else part_text(content) if isinstance(content, list) else ""
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": m.get("tool_call_id"), "output": text})
        elif role == "assistant":
            if text:
                items.append({"role": "assistant", "content": [{"type": "output_text", "text": text}]})
            for c in m.get("tool_calls") or []:
                fn = c.get("function") or {}
                items.append({"type": "function_call", "call_id": c.get("id"), "name": fn.get("name"),
                              "arguments": fn.get("arguments")})
        else:
            items.append({"role": role, "content": text})
    return items


def reply_message(response: Any) -> dict:
    """A response's output as one Chat Completions assistant message (text, and ``tool_calls`` for its
    ``function_call`` items), so an agent loop written for chat messages can run over the Responses API."""
    output = response.get("output") if isinstance(response, dict) else None
    text, calls = [], []
    for item in output if isinstance(output, list) else []:
        kind = item_type(item)
        if kind == "message" and item.get("role") == "assistant":
            text.append(part_text(item.get("content")))
        elif kind == "function_call":
            calls.append({"id": item.get("call_id"), "type": "function",
                          "function": {"name": item.get("name"), "arguments": item.get("arguments")}})
    message: dict = {"role": "assistant", "content": "".join(text) or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message
