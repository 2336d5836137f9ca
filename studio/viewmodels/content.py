"""Message content for display: text parts as text, images as (bytes, size) instead of raw base64 JSON.

A ``data:`` URL is decoded here, once, so the screen can show a thumbnail and
its byte size; a remote image URL is never fetched (the studio loads nothing
from the network), it is listed as a link-less text. Other non-text parts
(audio, files) are summarized by type and size.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?(;[^,]*)?,", re.DOTALL)
MAX_THUMB_BYTES = 8 * 1024 * 1024
"""Larger images are listed with their size but not decoded for a thumbnail."""


@dataclass(frozen=True)
class Part:
    """One non-text content part."""

    kind: str
    """``image``, ``image-url`` (remote, not fetched), or the part's own type (``input_audio`` ...)."""
    mime: str | None
    """The data URL's media type, when it has one."""
    size: int
    """Decoded bytes (data URLs), else the characters of the reference."""
    data: bytes | None = None
    """The decoded image, for a thumbnail (None when remote, too large or not decodable)."""
    ref: str = ""
    """The remote URL, or a short description (trace data: render escaped)."""


@dataclass(frozen=True)
class Content:
    """Text to show, and the non-text parts beside it."""

    text: str
    parts: tuple[Part, ...] = ()


def _decode(url: str) -> tuple[str | None, bytes | None, int]:
    m = _DATA_URL.match(url)
    if not m:
        return None, None, len(url)
    mime, params, payload = m.group(1), m.group(2) or "", url[m.end():]
    if ";base64" not in params:
        return mime, None, len(payload)
    size = len(payload) * 3 // 4 - payload[-2:].count("=")
    if size > MAX_THUMB_BYTES:
        return mime, None, size
    try:
        data = base64.b64decode(payload, validate=False)
    except (binascii.Error, ValueError):
        return mime, None, size
    return mime, data, len(data)


def split_content(content: Any) -> Content:
    """String content as is; a list of parts as its text parts plus one ``Part`` per other part."""
    if content is None:
        return Content("")
    if isinstance(content, str):
        return Content(content)
    if not isinstance(content, list):
        return Content(json.dumps(content, ensure_ascii=False))
    texts, parts = [], []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
            continue
        if isinstance(part, dict) and part.get("type") in ("image_url", "input_image", "image"):
            ref = part.get("image_url")
            url = ref.get("url") if isinstance(ref, dict) else ref if isinstance(ref, str) else None
            if isinstance(url, str) and url.startswith("data:"):
                mime, data, size = _decode(url)
                parts.append(Part("image", mime, size, data))
                continue
            if isinstance(url, str):
                parts.append(Part("image-url", None, len(url), None, url))
                continue
        if isinstance(part, dict):
            raw = json.dumps(part, ensure_ascii=False)
            parts.append(Part(str(part.get("type") or "part"), None, len(raw), None,
                              raw if len(raw) <= 300 else raw[:300] + "…"))
        else:
            texts.append(json.dumps(part, ensure_ascii=False))
    return Content("\n".join(texts), tuple(parts))


def human_bytes(n: int) -> str:
    """``1.2 MB``, ``35.0 KB``, ``512 B``."""
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} B"


def tool_definitions(tools: Any) -> list[dict]:
    """The tools a request offers as rows: name, description, parameter names (trace data)."""
    rows = []
    for t in tools or []:
        if not isinstance(t, dict):
            rows.append({"name": "?", "description": json.dumps(t, ensure_ascii=False)[:200], "parameters": ""})
            continue
        fn = t.get("function") if isinstance(t.get("function"), dict) else t
        params = fn.get("parameters") if isinstance(fn.get("parameters"), dict) else {}
        props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
        required = set(params.get("required") or []) if isinstance(params.get("required"), list) else set()
        rows.append({"name": str(fn.get("name", t.get("type", "?"))),
                     "description": str(fn.get("description") or ""),
                     "parameters": ", ".join(f"{k}{'*' if k in required else ''}" for k in props)})
    return rows
