"""The Chat Completions wire API (``POST /chat/completions``): its chain, streams and curl command.

``CHAT_COMPLETIONS`` is the adapter (see ``base.WireApi``): it derives the
provider-neutral ``Chain`` from a request body (``messages`` with
``tool_calls`` / ``tool`` messages, ``tools`` or the legacy ``functions``),
reassembles a streamed response (SSE ``chat.completion.chunk`` deltas) into one
completion, and writes the curl command that re-sends a body. The key is never
inside that command: it reads ``$OPENAI_API_KEY`` at run time, so a copied
command is safe to paste into a ticket.
"""
from __future__ import annotations

import json
import shlex
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .chain import MISSING, Chain, Entry, ToolCall, ToolDecl, ToolResult

NAME = "chat-completions"
PATH = "/chat/completions"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLE = "OPENAI_API_KEY"

# neutral field name -> native path suffix, shared by every element (the chain stores no strings per field)
_ENTRY_KEYS = MappingProxyType({"role": ".role", "content": ".content", "calls": ".tool_calls",
                                "reasoning": ".reasoning_content"})
_CALL_KEYS = MappingProxyType({"id": ".id", "type": ".type", "function": ".function", "name": ".function.name",
                               "arguments": ".function.arguments"})
_LEGACY_CALL_KEYS = MappingProxyType({"name": ".name", "arguments": ".arguments"})
_RESULT_KEYS = MappingProxyType({"id": ".tool_call_id", "content": ".content"})
_TOOL_KEYS = MappingProxyType({"name": ".function.name"})
_FUNCTION_KEYS = MappingProxyType({"name": ".name"})


def _call(path: str, k: int, item: Any) -> ToolCall:
    if not isinstance(item, dict):
        return ToolCall(path=path, keys=_CALL_KEYS, position=k, defect="not-object", native=item)
    fn = item.get("function")
    if not isinstance(fn, dict):
        return ToolCall(path=path, keys=_CALL_KEYS, position=k, id=item.get("id", MISSING),
                        type=item.get("type", MISSING), defect="no-function", native=item)
    return ToolCall(path=path, keys=_CALL_KEYS, position=k, id=item.get("id", MISSING), name=fn.get("name", MISSING),
                    arguments=fn.get("arguments", MISSING), type=item.get("type", MISSING), native=item)


def _legacy_call(path: str, value: Any) -> ToolCall:
    """A legacy ``function_call`` as a call without id (its path is the ``function_call`` key)."""
    if not isinstance(value, dict):
        return ToolCall(path=path, keys=_LEGACY_CALL_KEYS, defect="not-object", native=value)
    return ToolCall(path=path, keys=_LEGACY_CALL_KEYS, name=value.get("name", MISSING),
                    arguments=value.get("arguments", MISSING), native=value)


def _entry(i: int, m: Any) -> Entry:
    path = f"messages[{i}]"
    if not isinstance(m, dict):
        return Entry(path=path, keys=_ENTRY_KEYS, index=i, native=m)
    get = m.get
    role, content = get("role"), get("content", MISSING)
    native_calls = get("tool_calls", MISSING)
    calls = tuple(_call(f"{path}.tool_calls[{k}]", k, c) for k, c in enumerate(native_calls)) \
        if isinstance(native_calls, list) and native_calls else ()
    results = (ToolResult(path=path, keys=_RESULT_KEYS, id=get("tool_call_id", MISSING), content=content),) \
        if role == "tool" else ()
    legacy = get("function_call", MISSING)
    return Entry(path=path, keys=_ENTRY_KEYS, index=i, role=role, content=content, calls=calls,
                 calls_native=native_calls, results=results,
                 legacy_call=None if legacy is MISSING else _legacy_call(f"{path}.function_call", legacy),
                 reasoning=get("reasoning_content", MISSING), native=m)


def _tool(path: str, item: Any) -> ToolDecl:
    if not isinstance(item, dict):
        return ToolDecl(path=path, native=item)
    fn = item.get("function")
    if isinstance(fn, dict):
        return ToolDecl(path=path, keys=_TOOL_KEYS, name=fn.get("name", MISSING), native=item)
    # a bare {"name", "parameters"} (legacy functions, or a flattened tool)
    return ToolDecl(path=path, keys=_FUNCTION_KEYS, name=item.get("name", MISSING), native=item)


class ChatCompletions:
    """The Chat Completions adapter (``base.WireApi``); use the ``CHAT_COMPLETIONS`` instance."""

    name = NAME
    paths = (PATH,)
    turns_key = "messages"

    def claims(self, body: Any) -> bool:
        """Whether ``body`` is written for this API: an object with ``messages``."""
        return isinstance(body, dict) and "messages" in body

    def items(self, body: Any) -> Any:
        """The native conversation value (``messages``), as sent; None when the body has none."""
        return body.get("messages") if isinstance(body, dict) else None

    def reply(self, response: Any) -> Any:
        """The first choice's ``message`` (what the app appends and sends back), else None."""
        try:
            return response["choices"][0]["message"]
        except (TypeError, KeyError, IndexError):
            return None

    def entries(self, items: list, start: int = 0) -> tuple[Entry, ...]:
        """The entries of native messages ``items``, numbered from ``start`` (to resume a longer payload)."""
        return tuple(map(_entry, range(start, start + len(items)), items))

    def chain(self, body: Any) -> Chain:
        """The provider-neutral chain of a request body; never raises on any JSON value.

        ``tools`` wins over the legacy ``functions``, which play the same role
        for the declared-names check. Thinking mode: a ``*reasoner*`` model or
        ``"thinking": {"type": "enabled"}`` (DeepSeek).
        """
        if not isinstance(body, dict):
            return Chain(api=NAME, entries=None, entries_native=None, entries_path="messages", tools=None,
                         tools_path="tools")
        messages = body.get("messages")
        tools, tools_path = body.get("tools"), "tools"
        if not isinstance(tools, list) and isinstance(body.get("functions"), list):
            tools, tools_path = body["functions"], "functions"
        model = body.get("model")
        mode = body.get("thinking")
        thinking = (isinstance(model, str) and "reasoner" in model) or (
            isinstance(mode, dict) and mode.get("type") == "enabled")
        return Chain(api=NAME, entries=self.entries(messages) if isinstance(messages, list) else None,
                     entries_native=messages, entries_path="messages",
                     tools=tuple(_tool(f"{tools_path}[{k}]", t) for k, t in enumerate(tools))
                     if isinstance(tools, list) else None, tools_path=tools_path, thinking=thinking)

    def parse_stream(self, raw: bytes) -> tuple[list[dict], bool]:
        """The chunks of a streamed response body; see ``parse_sse``."""
        return parse_sse(raw)

    def reassemble(self, chunks: list[dict]) -> dict[str, Any]:
        """One completion from a stream's chunks; see ``reassemble``."""
        return reassemble(chunks)

    def url(self, base_url: str | None) -> str:
        """The endpoint URL under a base URL; see ``chat_url``."""
        return chat_url(base_url)

    def curl(self, body: dict, base_url: str | None = None) -> str:
        """The shell command that re-sends ``body``; see ``curl_command``."""
        return curl_command(body, base_url)


CHAT_COMPLETIONS = ChatCompletions()


def chat_url(base_url: str | None) -> str:
    """``<base>/chat/completions`` for a base URL (a full completions URL is kept as is)."""
    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    if base.endswith(PATH):
        return base
    return base + PATH


def strip_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part (all of it, even when the password holds an ``@``)."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        parts = parts._replace(netloc=parts.netloc.rsplit("@", 1)[1])
    return urlunsplit(parts)


def curl_command(body: dict, base_url: str | None = None) -> str:
    """The shell command that POSTs ``body`` to ``base_url``.

    Args:
        body: the exact request body (``Call.request``).
        base_url: an OpenAI-compatible base URL; default the OpenAI API.

    Returns:
        A multi-line POSIX shell command; the body is single-quoted verbatim
        (JSON with non-ASCII kept), the key comes from ``$OPENAI_API_KEY``.
    """
    url = strip_credentials(chat_url(base_url))
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return (
        f"curl {shlex.quote(url)} \\\n"
        f"  -H 'Content-Type: application/json' \\\n"
        f"  -H \"Authorization: Bearer ${KEY_VARIABLE}\" \\\n"
        f"  -d {shlex.quote(data)}"
    )


# --- streams -------------------------------------------------------------------------------------------

def parse_sse(raw: bytes) -> tuple[list[dict], bool]:
    """The JSON chunks of an SSE body, and whether it ended with ``[DONE]``."""
    chunks: list[dict] = []
    done = False
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            continue
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            continue
        if isinstance(chunk, dict):
            chunks.append(chunk)
    return chunks, done


def reassemble(chunks: list[dict]) -> dict[str, Any]:
    """Merge ``chat.completion.chunk`` deltas into a ``chat.completion`` body."""
    out: dict[str, Any] = {"id": None, "object": "chat.completion", "created": None, "model": None, "choices": []}
    choices: dict[int, dict] = {}
    for chunk in chunks:
        for key in ("id", "created", "model", "system_fingerprint"):
            if chunk.get(key) is not None and out.get(key) is None:
                out[key] = chunk[key]
        if chunk.get("usage"):
            out["usage"] = chunk["usage"]
        for c in chunk.get("choices") or []:
            index = c.get("index", 0)
            choice = choices.setdefault(index, {"index": index, "message": {"role": "assistant", "content": None},
                                                "finish_reason": None})
            delta = c.get("delta") or {}
            message = choice["message"]
            if delta.get("role"):
                message["role"] = delta["role"]
            if delta.get("content") is not None:
                message["content"] = (message["content"] or "") + delta["content"]
            for tc in delta.get("tool_calls") or []:
                calls = message.setdefault("tool_calls", [])
                position = tc.get("index", len(calls))
                while len(calls) <= position:
                    calls.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                call = calls[position]
                if tc.get("id"):
                    call["id"] = tc["id"]
                if tc.get("type"):
                    call["type"] = tc["type"]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    call["function"]["name"] += fn["name"]
                if fn.get("arguments"):
                    call["function"]["arguments"] += fn["arguments"]
            if c.get("finish_reason"):
                choice["finish_reason"] = c["finish_reason"]
    out["choices"] = [choices[i] for i in sorted(choices)]
    return out
