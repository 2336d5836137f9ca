"""The Gemini wire API (``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent``).

``GEMINI`` is the adapter (see ``base.WireApi``). A request body has
``contents[]`` of {role: user | model, parts[]}; a part holds ``text``, a
``functionCall`` {name, args, id?} (with a sibling ``thoughtSignature`` on
Gemini 3), or a ``functionResponse`` {name, response, id?}. ``systemInstruction``
is a top-level content, tools are ``tools[].functionDeclarations[]``. The model
is in the URL, not the body. A stream is SSE (``?alt=sse``: ``data:`` lines) or
one JSON array of ``GenerateContentResponse`` chunks; ``reassemble`` merges them
into one response. The curl command reads the key from ``$GEMINI_API_KEY``
(header ``x-goog-api-key``).
"""
from __future__ import annotations

import json
import shlex
from types import MappingProxyType
from typing import Any

from .chain import MISSING, Chain, Entry, ToolCall, ToolDecl, ToolResult
from .converted import Converted, Loss

NAME = "gemini"
PATHS = (":generateContent", ":streamGenerateContent")
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
KEY_VARIABLE = "GEMINI_API_KEY"

_ENTRY_KEYS = MappingProxyType({"role": ".role", "content": ".parts", "calls": ".parts"})
_CALL_KEYS = MappingProxyType({"id": ".functionCall.id", "name": ".functionCall.name", "arguments": ".functionCall.args"})
_RESULT_KEYS = MappingProxyType({"id": ".functionResponse.id", "content": ".functionResponse.response"})
_TOOL_KEYS = MappingProxyType({"name": ".name"})


def _entry(i: int, c: Any) -> Entry:
    path = f"contents[{i}]"
    if not isinstance(c, dict):
        return Entry(path=path, keys=_ENTRY_KEYS, index=i, native=c)
    parts = c.get("parts", MISSING)
    calls, results, thought = [], [], []
    for k, p in enumerate(parts if isinstance(parts, list) else []):
        if not isinstance(p, dict):
            continue
        at = f"{path}.parts[{k}]"
        fc, fr = p.get("functionCall"), p.get("functionResponse")
        if isinstance(fc, dict):
            calls.append(ToolCall(path=at, keys=_CALL_KEYS, position=k, id=fc.get("id", MISSING),
                                  name=fc.get("name", MISSING), arguments=fc.get("args", MISSING), native=p))
        if isinstance(fr, dict):
            results.append(ToolResult(path=at, keys=_RESULT_KEYS, id=fr.get("id", fr.get("name", MISSING)),
                                      content=fr.get("response", MISSING)))
        if "thoughtSignature" in p or p.get("thought"):
            thought.append(p)
    return Entry(path=path, keys=_ENTRY_KEYS, index=i, role=c.get("role"), content=parts, calls=tuple(calls),
                 calls_native=parts if calls else MISSING, results=tuple(results),
                 reasoning=thought if thought else MISSING, native=c)


class Gemini:
    """The Gemini adapter (``base.WireApi``); use the ``GEMINI`` instance."""

    name = NAME
    paths = PATHS
    turns_key = "contents"

    def claims(self, body: Any) -> bool:
        """Whether ``body`` is written for this API: an object with a ``contents`` list."""
        return isinstance(body, dict) and isinstance(body.get("contents"), list)

    def items(self, body: Any) -> Any:
        """The native conversation value (``contents``), as sent."""
        return body.get("contents") if isinstance(body, dict) else None

    def reply(self, response: Any) -> Any:
        """The first candidate's ``content`` ({role: model, parts}: what the SDK appends and sends back), else None."""
        try:
            content = response["candidates"][0]["content"]
        except (TypeError, KeyError, IndexError):
            return None
        return content if isinstance(content, dict) else None

    def entries(self, items: list, start: int = 0) -> tuple[Entry, ...]:
        """The entries of native ``contents`` items, numbered from ``start``."""
        return tuple(_entry(i, c) for i, c in enumerate(items, start))

    def chain(self, body: Any) -> Chain:
        """The provider-neutral chain of a request body; never raises on any JSON value."""
        if not isinstance(body, dict):
            return Chain(api=NAME, entries=None, entries_native=None, entries_path="contents", tools=None,
                         tools_path="tools")
        contents, tools = body.get("contents"), body.get("tools")
        decls: list[ToolDecl] | None = None
        if isinstance(tools, list):
            decls = []
            for t, tool in enumerate(tools):
                fns = tool.get("functionDeclarations") if isinstance(tool, dict) else None
                for k, fn in enumerate(fns if isinstance(fns, list) else []):
                    decls.append(ToolDecl(path=f"tools[{t}].functionDeclarations[{k}]", keys=_TOOL_KEYS,
                                          name=fn.get("name", MISSING) if isinstance(fn, dict) else MISSING,
                                          native=fn))
        config = body.get("generationConfig")
        thinking = isinstance(config, dict) and isinstance(config.get("thinkingConfig"), dict)
        return Chain(api=NAME, entries=self.entries(contents) if isinstance(contents, list) else None,
                     entries_native=contents, entries_path="contents",
                     tools=tuple(decls) if decls is not None else None, tools_path="tools", thinking=thinking)

    def parse_stream(self, raw: bytes) -> tuple[list[dict], bool]:
        """The chunks of a streamed response (SSE ``data:`` lines or one JSON array); ended = a finishReason came."""
        text = raw.decode("utf-8", errors="replace")
        chunks: list[dict] = []
        if text.lstrip().startswith("["):
            try:
                chunks = [c for c in json.loads(text) if isinstance(c, dict)]
            except (ValueError, RecursionError):
                chunks = []
        else:
            for line in text.splitlines():
                if line.startswith("data:"):
                    try:
                        chunk = json.loads(line[5:].strip())
                    except (ValueError, RecursionError):
                        continue
                    if isinstance(chunk, dict):
                        chunks.append(chunk)
        done = any(isinstance(c.get("candidates"), list) and any(
            isinstance(x, dict) and x.get("finishReason") for x in c["candidates"]) for c in chunks)
        return chunks, done

    def reassemble(self, chunks: list[dict]) -> dict[str, Any]:
        """One ``GenerateContentResponse`` from a stream's chunks: text parts joined, other parts kept in order."""
        parts: list[dict] = []
        out: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}
        for chunk in chunks:
            for key in ("usageMetadata", "modelVersion", "responseId"):
                if key in chunk:
                    out[key] = chunk[key]
            for cand in chunk.get("candidates") or []:
                if not isinstance(cand, dict):
                    continue
                if cand.get("finishReason"):
                    out["candidates"][0]["finishReason"] = cand["finishReason"]
                for p in (cand.get("content") or {}).get("parts") or []:
                    if set(p) == {"text"} and parts and set(parts[-1]) == {"text"}:
                        parts[-1] = {"text": parts[-1]["text"] + str(p["text"])}
                    else:
                        parts.append(dict(p))
        return out

    def url(self, base_url: str | None) -> str:
        """``<base>:generateContent``; ``base_url`` is the model's URL (``.../v1beta/models/gemini-2.5-flash``)."""
        base = (base_url or DEFAULT_BASE_URL).rstrip("/")
        return base if base.endswith(PATHS) else base + PATHS[0]

    def curl(self, body: dict, base_url: str | None = None) -> str:
        """The shell command that re-sends ``body``; the key comes from ``$GEMINI_API_KEY``."""
        from .chat_completions import strip_credentials

        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        return (f"curl {shlex.quote(strip_credentials(self.url(base_url)))} \\\n"
                f"  -H 'Content-Type: application/json' \\\n"
                f"  -H \"x-goog-api-key: ${KEY_VARIABLE}\" \\\n"
                f"  -d {shlex.quote(data)}")


GEMINI = Gemini()


def _text(parts: list) -> str:
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and "text" in p and not p.get("thought"))


def to_chat_completions(body: dict) -> Any:
    """The Chat Completions form of a Gemini body (see ``convert.to_chat_completions``).

    Gemini pairs responses with calls by position (and name), ids are optional:
    a call without id gets ``gemini-<content>-<part>`` and the k-th response of
    the next turn answers the k-th call; thought signatures are losses.
    """
    messages: list = []
    origin: list[str] = []
    losses: list[Loss] = []
    system = body.get("systemInstruction")
    if isinstance(system, dict):
        messages.append({"role": "system", "content": _text(system.get("parts") or [])})
        origin.append("systemInstruction")
    pending: list[str] = []
    for i, c in enumerate(body.get("contents") or []):
        path = f"contents[{i}]"
        parts = c.get("parts") if isinstance(c, dict) else None
        if not isinstance(parts, list):
            messages.append(c)
            origin.append(path)
            continue
        role = c.get("role")
        calls, answered = [], 0
        for k, p in enumerate(parts):
            if not isinstance(p, dict):
                continue
            if "thoughtSignature" in p:
                losses.append(Loss(f"{path}.parts[{k}].thoughtSignature", "The part's thoughtSignature has no place "
                                   "in Chat Completions; a Gemini 3 model reached this way cannot verify its calls."))
            fc, fr = p.get("functionCall"), p.get("functionResponse")
            if isinstance(fc, dict):
                cid = fc.get("id") or f"gemini-{i}-{k}"
                calls.append({"id": cid, "type": "function", "function": {
                    "name": fc.get("name"), "arguments": json.dumps(fc.get("args", {}), ensure_ascii=False)}})
            elif isinstance(fr, dict):
                cid = fr.get("id") or (pending[answered] if answered < len(pending) else f"gemini-{i}-{k}")
                answered += 1
                messages.append({"role": "tool", "tool_call_id": cid,
                                 "content": json.dumps(fr.get("response"), ensure_ascii=False)})
                origin.append(f"{path}.parts[{k}]")
        text = _text(parts)
        if role == "model":
            out: dict = {"role": "assistant", "content": text}    # no text part: "" (not null)
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
            origin.append(path)
            pending = [x["id"] for x in calls]
        else:
            if text or not answered:
                messages.append({"role": "user" if role in (None, "user") else role, "content": text})
                origin.append(path)
            pending = []
    cc: dict[str, Any] = {"messages": messages}
    decls = [d.native for d in (GEMINI.chain(body).tools or ())]
    if isinstance(body.get("tools"), list):
        cc["tools"] = [{"type": "function", "function": {"name": d.get("name"), "description": d.get("description", ""),
                                                         "parameters": d.get("parameters", {})}}
                       if isinstance(d, dict) else d for d in decls]
    return Converted(cc, origin, losses)
