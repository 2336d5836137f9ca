"""The wire-API seam: what every adapter provides, and how to find the adapter for a request.

One module per wire API implements ``WireApi`` (``chat_completions``, ``responses``).
A new API (the Responses API's ``input`` items, Anthropic Messages' content
blocks, Gemini's ``contents[].parts[]``) is one more module and one more row
in ``_APIS``; the linter, the proxy and the exports reach it through here.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from agent_core.core.errors import UnknownChoiceError

from .anthropic_messages import ANTHROPIC_MESSAGES
from .chain import Chain, Entry
from .chat_completions import CHAT_COMPLETIONS
from .gemini import GEMINI
from .responses import RESPONSES


@runtime_checkable
class WireApi(Protocol):
    """One wire API: its request shape, its streams and how to re-send a request."""

    name: str
    """Stable name (``chat-completions``)."""
    paths: tuple[str, ...]
    """The URL path suffixes it serves (``/chat/completions``)."""
    turns_key: str | None
    """The body key holding the conversation as role-tagged turns (``messages``, Gemini's ``contents``), which
    continuity grouping aligns call to call (``ingest/payload_log.py``); None when the API's list is not turns
    (the Responses API's ``input`` items, grouped by ``previous_response_id`` instead)."""

    def claims(self, body: Any) -> bool:
        """Whether a request body is written for this API."""
        ...

    def items(self, body: Any) -> Any:
        """The native conversation value of a body (``messages``), as sent, without deriving entries."""
        ...

    def reply(self, response: Any) -> Any:
        """The turn a response adds, in the shape the app sends it back (Chat Completions: the first choice's
        ``message``; Gemini: the first candidate's ``content``); None when there is none or it is not matched
        back (continuity grouping, ``ingest/payload_log.py``, then relies on the request prefix alone)."""
        ...

    def entries(self, items: list, start: int = 0) -> tuple[Entry, ...]:
        """The entries of native conversation items, numbered from ``start`` (to resume a longer payload).

        Each entry's path ends with ``[index]`` and every path inside it starts with the entry's path:
        the linter derives one entry per distinct message and ``chain.relocate`` moves its paths to
        wherever the message sits in another payload (a test checks this for every adapter in ``_APIS``).
        """
        ...

    def chain(self, body: Any) -> Chain:
        """The provider-neutral chain of a request body; never raises on any JSON value."""
        ...

    def parse_stream(self, raw: bytes) -> tuple[list[dict], bool]:
        """The chunks of a streamed response body, and whether the stream ended properly."""
        ...

    def reassemble(self, chunks: list[dict]) -> dict[str, Any]:
        """One non-streamed response body from a stream's chunks."""
        ...

    def url(self, base_url: str | None) -> str:
        """The endpoint URL under a base URL (the provider's default when None)."""
        ...

    def curl(self, body: dict, base_url: str | None = None) -> str:
        """A shell command that re-sends ``body`` exactly, reading the key from the environment."""
        ...


_APIS: tuple[WireApi, ...] = (ANTHROPIC_MESSAGES, GEMINI, RESPONSES, CHAT_COMPLETIONS)  # most specific claim first
DEFAULT_API: WireApi = CHAT_COMPLETIONS
"""The API assumed for a body no adapter claims (and for bare message lists)."""


def api_names() -> list[str]:
    """The names of every supported wire API."""
    return [api.name for api in _APIS]


def get_api(name: str) -> WireApi:
    """The adapter called ``name``; ``UnknownChoiceError`` naming the choices otherwise."""
    for api in _APIS:
        if api.name == name:
            return api
    raise UnknownChoiceError(f"unknown wire API {name!r}; choose one of {', '.join(api_names())}")


def api_for_path(path: str) -> WireApi | None:
    """The adapter serving a URL or URL path (query ignored), None when no adapter does."""
    hit = split_endpoint(path)
    return hit[0] if hit else None


@lru_cache(maxsize=256)      # a trace's calls share a handful of URLs
def split_endpoint(url: str) -> tuple[WireApi, str] | None:
    """The adapter serving an endpoint URL and the base URL before its path (query dropped), else None."""
    url = url.split("?", 1)[0].rstrip("/")
    for api in _APIS:
        for suffix in api.paths:
            if url.endswith(suffix):
                return api, url[: -len(suffix)]
    return None


def api_for_body(body: Any) -> WireApi:
    """The adapter that claims a request body, else ``DEFAULT_API`` (so any JSON value can be linted)."""
    return next((api for api in _APIS if api.claims(body)), DEFAULT_API)
