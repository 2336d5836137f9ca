"""The Anthropic Messages wire API (``POST /v1/messages``): its chain, streams and curl command.

``ANTHROPIC_MESSAGES`` is the adapter (see ``base.WireApi``). A request body
has a top-level ``system`` (not a message), ``messages`` whose ``content`` is a
string or a list of content blocks (``text``, ``tool_use`` {id, name, input},
``tool_result`` {tool_use_id, content}, ``thinking`` {thinking, signature},
``redacted_thinking``), ``tools`` as {name, description, input_schema} and
``thinking`` {type: enabled | adaptive | disabled}. The derived chain keeps each
block's native path (``messages[2].content[1]``); Anthropic's own error texts
number them ``messages.2.content.1`` (``anthropic_location``).

A stream is SSE with named events, in the documented order: ``message_start``,
then per block ``content_block_start`` / ``content_block_delta`` (``text_delta``,
``input_json_delta``, ``thinking_delta``, ``signature_delta``) /
``content_block_stop``, then ``message_delta`` (stop reason, output tokens) and
``message_stop`` (``ping`` and ``error`` may come in between). ``reassemble``
builds the one Message body a non-streamed call returns. The curl command reads
the key from ``$ANTHROPIC_API_KEY`` (header ``x-api-key``) and sends the
``anthropic-version`` header the SDK sends.
"""
from __future__ import annotations

import json
import re
import shlex
from types import MappingProxyType
from typing import Any

from .chain import MISSING, Chain, Entry, ToolCall, ToolDecl, ToolResult

NAME = "anthropic-messages"
PATH = "/v1/messages"
DEFAULT_BASE_URL = "https://api.anthropic.com"
KEY_VARIABLE = "ANTHROPIC_API_KEY"
API_VERSION = "2023-06-01"
"""The ``anthropic-version`` header value the anthropic SDK sends."""
THINKING_TYPES = ("thinking", "redacted_thinking")
_BLOCK_TYPES = ("text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking",
                "server_tool_use", "web_search_tool_result", "search_result", "container_upload")

_ENTRY_KEYS = MappingProxyType({"role": ".role", "content": ".content", "calls": ".content"})
_CALL_KEYS = MappingProxyType({"id": ".id", "name": ".name", "arguments": ".input", "type": ".type"})
_RESULT_KEYS = MappingProxyType({"id": ".tool_use_id", "content": ".content"})
_TOOL_KEYS = MappingProxyType({"name": ".name"})


def anthropic_location(path: str) -> str:
    """A native path in Anthropic's own error notation: ``messages[2].content[1]`` -> ``messages.2.content.1``."""
    return re.sub(r"\[(\d+)\]", r".\1", path)


def blocks(content: Any) -> list:
    """The content blocks of a message's ``content``: a string is one text block; anything else as sent."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _entry(i: int, m: Any) -> Entry:
    path = f"messages[{i}]"
    if not isinstance(m, dict):
        return Entry(path=path, keys=_ENTRY_KEYS, index=i, native=m)
    content = m.get("content", MISSING)
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    thinking: list = []
    if isinstance(content, list):
        for k, b in enumerate(content):
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            at = f"{path}.content[{k}]"
            if kind == "tool_use":
                calls.append(ToolCall(path=at, keys=_CALL_KEYS, position=k, id=b.get("id", MISSING),
                                      name=b.get("name", MISSING), arguments=b.get("input", MISSING),
                                      type="tool_use", native=b))
            elif kind == "tool_result":
                results.append(ToolResult(path=at, keys=_RESULT_KEYS, id=b.get("tool_use_id", MISSING),
                                          content=b.get("content", MISSING)))
            elif kind in THINKING_TYPES:
                thinking.append(b)
    return Entry(path=path, keys=_ENTRY_KEYS, index=i, role=m.get("role"), content=content, calls=tuple(calls),
                 calls_native=content if calls else MISSING, results=tuple(results),
                 reasoning=thinking if thinking else MISSING, native=m)


def thinking_enabled(body: Any) -> bool:
    """Whether a request turns extended thinking on (``thinking.type`` ``enabled`` or ``adaptive``)."""
    mode = body.get("thinking") if isinstance(body, dict) else None
    return isinstance(mode, dict) and mode.get("type") in ("enabled", "adaptive")


class AnthropicMessages:
    """The Anthropic Messages adapter (``base.WireApi``); use the ``ANTHROPIC_MESSAGES`` instance."""

    name = NAME
    paths = (PATH,)
    turns_key = "messages"

    def claims(self, body: Any) -> bool:
        """Whether ``body`` is written for this API: ``messages`` plus a sign only Anthropic has.

        The signs: a top-level ``system``; a tool with ``input_schema``; a content
        block of a type Chat Completions does not have (``tool_use``,
        ``tool_result``, ``thinking`` ...); a message without role ``system``/``tool``
        whose content blocks carry no OpenAI part types is not enough on its own.
        """
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return False
        if "system" in body and not isinstance(body.get("system"), dict):
            return True
        tools = body.get("tools")
        if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
            return True
        for m in body["messages"]:
            content = m.get("content") if isinstance(m, dict) else None
            if isinstance(content, list) and any(
                    isinstance(b, dict) and b.get("type") in _BLOCK_TYPES[3:] for b in content):
                return True
        return False

    def items(self, body: Any) -> Any:
        """The native conversation value (``messages``), as sent; None when the body has none."""
        return body.get("messages") if isinstance(body, dict) else None

    def reply(self, response: Any) -> Any:
        """None: an assistant turn of content blocks is not matched back yet (the loose key of
        ``ingest/message_keys.py`` reads text, so tool_use-only turns would all look alike); grouping uses the
        request prefix alone."""
        return None

    def entries(self, items: list, start: int = 0) -> tuple[Entry, ...]:
        """The entries of native messages ``items``, numbered from ``start``."""
        return tuple(_entry(i, m) for i, m in enumerate(items, start))

    def chain(self, body: Any) -> Chain:
        """The provider-neutral chain of a request body; never raises on any JSON value."""
        if not isinstance(body, dict):
            return Chain(api=NAME, entries=None, entries_native=None, entries_path="messages", tools=None,
                         tools_path="tools")
        messages, tools = body.get("messages"), body.get("tools")
        decls = tuple(ToolDecl(path=f"tools[{k}]", keys=_TOOL_KEYS,
                               name=t.get("name", MISSING) if isinstance(t, dict) else MISSING, native=t)
                      for k, t in enumerate(tools)) if isinstance(tools, list) else None
        return Chain(api=NAME, entries=self.entries(messages) if isinstance(messages, list) else None,
                     entries_native=messages, entries_path="messages", tools=decls, tools_path="tools",
                     thinking=thinking_enabled(body))

    def parse_stream(self, raw: bytes) -> tuple[list[dict], bool]:
        """The events of a streamed response (each the ``data`` object), and whether ``message_stop`` came."""
        events: list[dict] = []
        done = False
        for line in raw.decode("utf-8", errors="replace").splitlines():
            if not line.startswith("data:"):
                continue
            try:
                event = json.loads(line[5:].strip())
            except (ValueError, RecursionError):
                continue
            if isinstance(event, dict):
                events.append(event)
                done = done or event.get("type") == "message_stop"
        return events, done

    def reassemble(self, chunks: list[dict]) -> dict[str, Any]:
        """One Message body from a stream's events; see ``reassemble``."""
        return reassemble(chunks)

    def url(self, base_url: str | None) -> str:
        """``<base>/v1/messages`` (a base that already ends in ``/v1`` or the full path is kept)."""
        base = (base_url or DEFAULT_BASE_URL).rstrip("/")
        if base.endswith(PATH):
            return base
        return base + ("/messages" if base.endswith("/v1") else PATH)

    def curl(self, body: dict, base_url: str | None = None) -> str:
        """The shell command that re-sends ``body``; the key comes from ``$ANTHROPIC_API_KEY``."""
        from .chat_completions import strip_credentials

        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        return (f"curl {shlex.quote(strip_credentials(self.url(base_url)))} \\\n"
                f"  -H 'content-type: application/json' \\\n"
                f"  -H 'anthropic-version: {API_VERSION}' \\\n"
                f"  -H \"x-api-key: ${KEY_VARIABLE}\" \\\n"
                f"  -d {shlex.quote(data)}")


ANTHROPIC_MESSAGES = AnthropicMessages()


def reassemble(events: list[dict]) -> dict[str, Any]:
    """Merge a stream's events into the Message body a non-streamed call returns.

    Text, thinking and signature deltas are concatenated; ``input_json_delta``
    fragments are joined and parsed into the tool_use block's ``input`` (kept as
    the raw string under ``input`` when they do not parse: nothing is dropped).
    """
    out: dict[str, Any] = {"id": None, "type": "message", "role": "assistant", "model": None, "content": [],
                           "stop_reason": None, "stop_sequence": None, "usage": {}}
    partial: dict[int, str] = {}
    for ev in events:
        kind = ev.get("type")
        if kind == "message_start" and isinstance(ev.get("message"), dict):
            start = ev["message"]
            out.update({k: v for k, v in start.items() if k != "content"})
            out["usage"] = dict(start.get("usage") or {})
            out["content"] = list(start.get("content") or [])
        elif kind == "content_block_start":
            index = ev.get("index", len(out["content"]))
            while len(out["content"]) <= index:
                out["content"].append(None)
            out["content"][index] = dict(ev.get("content_block") or {})
        elif kind == "content_block_delta":
            index, delta = ev.get("index", 0), ev.get("delta") or {}
            if not isinstance(index, int) or index >= len(out["content"]) or out["content"][index] is None:
                continue
            block = out["content"][index]
            dtype = delta.get("type")
            if dtype == "text_delta":
                block["text"] = block.get("text", "") + str(delta.get("text", ""))
            elif dtype == "input_json_delta":
                partial[index] = partial.get(index, "") + str(delta.get("partial_json", ""))
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
            elif dtype == "signature_delta":
                block["signature"] = block.get("signature", "") + str(delta.get("signature", ""))
        elif kind == "message_delta":
            for key, value in (ev.get("delta") or {}).items():
                out[key] = value
            out["usage"].update(ev.get("usage") or {})
    for index, text in partial.items():
        try:
            out["content"][index]["input"] = json.loads(text) if text else {}
        except (ValueError, RecursionError):
            out["content"][index]["input"] = text
    out["content"] = [b for b in out["content"] if b is not None]
    return out
