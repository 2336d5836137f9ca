"""The provider-neutral chain: what a request body says, whatever wire API it was written for.

A wire adapter (``chat_completions.py`` ...) derives a ``Chain`` from a request
body; the native body stays the source of truth and the chain is never stored.
Every element keeps its native JSON path (``messages[3].tool_calls[0]``) so a
finding about it can point at the exact place in the body, and its native
value, so a checker can word what it found there (``an array``, ``null``).

Values are as sent: the body is untrusted, so an id may be a number and a role
may be a list. ``MISSING`` marks a key that is absent, which providers treat
differently from an explicit ``null``.

Elements are plain slotted dataclasses, read-only by convention (a frozen
dataclass's ``__init__``, one ``object.__setattr__`` per field, doubled the lint
time of a 1,000-call trace).

Paths follow one convention, which ``relocate`` relies on: an entry's path ends
with ``[index]`` (``messages[3]``, ``input[3]``, ``contents[3]``) and the path of
every element inside it starts with the entry's path. So an entry derived once
for a message can stand for that message at any position: the linter derives
one per distinct message of a trace, not one per message per call (a windowed
replay shifts every message on every call), and rewrites a path only when a
finding is made.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Self


class _Missing:
    """The type of ``MISSING``: falsy, never equal to a JSON value, one instance."""

    _instance: _Missing | None = None

    def __new__(cls) -> Self:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""A key the native element does not have (as opposed to one set to ``null``)."""

_NO_KEYS: Mapping[str, str] = MappingProxyType({})


@dataclass(slots=True)
class _Located:
    path: str
    """Native JSON path of the element (``messages[3]``, ``tools[1]``)."""
    keys: Mapping[str, str] = field(default_factory=lambda: _NO_KEYS, compare=False, repr=False)
    """Neutral field name -> native path suffix (``"name"`` -> ``".function.name"``), from the adapter."""

    def at(self, name: str) -> str:
        """The native path of one of the element's fields (the element's own path for an unknown name).

        Args:
            name: a neutral field name (``id``, ``name``, ``arguments``, ``content`` ...).
        """
        return self.path + self.keys.get(name, "")


@dataclass(slots=True)
class ToolCall(_Located):
    """One tool call an entry makes (a ``tool_calls`` item, a ``tool_use`` block, a ``functionCall``)."""

    position: int = 0
    """Its position among the entry's calls in the native list."""
    id: Any = MISSING
    """The pairing id as sent; results name it."""
    name: Any = MISSING
    """The function name as sent."""
    arguments: Any = MISSING
    """The arguments as sent (Chat Completions: a string that should hold a JSON object)."""
    type: Any = MISSING
    """The call's declared type as sent (Chat Completions: ``"function"``), where the API has one."""
    defect: str | None = None
    """None when well formed; ``not-object`` (the item is no JSON object) or ``no-function`` (no function part)."""
    native: Any = None
    """The native item itself."""


@dataclass(slots=True)
class ToolResult(_Located):
    """One tool result (a ``tool`` message, a ``tool_result`` block, a ``functionResponse``)."""

    id: Any = MISSING
    """The id of the call it answers, as sent."""
    content: Any = MISSING
    """The result as sent."""


@dataclass(slots=True)
class Entry(_Located):
    """One element of the conversation (a message, or a Responses API input item)."""

    index: int = 0
    """Its position in the native list (the message index the reports show); ``path`` ends with ``[index]``."""
    role: Any = None
    """The role as sent (None when absent or the element is not an object)."""
    content: Any = MISSING
    """The content as sent (text or content parts)."""
    calls: tuple[ToolCall, ...] = ()
    """The tool calls it makes, in native order."""
    calls_native: Any = MISSING
    """The native call list as sent (it may be null, empty or not a list at all)."""
    results: tuple[ToolResult, ...] = ()
    """The tool results it carries."""
    legacy_call: ToolCall | None = None
    """A call in the API's deprecated id-less form (Chat Completions' ``function_call``); None when absent."""
    reasoning: Any = MISSING
    """The reasoning (thinking) the model returned and the client echoes back, as sent."""
    native: Any = None
    """The native element itself."""

    @property
    def is_object(self) -> bool:
        """Whether the native element is a JSON object at all."""
        return isinstance(self.native, dict)


def relocate(path: str, entry: Entry, index: int) -> str:
    """The native ``path`` of ``entry`` or of an element inside it, as it reads with the entry at ``index``.

    Args:
        path: ``entry.path`` or a path inside it (``entry.at("content")``, a call's ``at("id")``).
        entry: the entry as derived (at ``entry.index``).
        index: the position the message really has in the payload at hand.
    """
    if index == entry.index:
        return path
    head = entry.path
    return f"{head[:head.rindex('[')]}[{index}]{path[len(head):]}"


@dataclass(slots=True)
class ToolDecl(_Located):
    """One tool the request declares."""

    name: Any = MISSING
    """The declared function name as sent (MISSING when the item is no object)."""
    native: Any = None
    """The native declaration."""


@dataclass(frozen=True)
class Chain:
    """A request body as a provider-neutral chain of entries, tools and flags."""

    api: str
    """The wire API's name (``chat-completions``)."""
    entries: tuple[Entry, ...] | None
    """The conversation in order; None when the native list is not a list."""
    entries_native: Any
    """The native conversation value as sent (for wording when it is not a list)."""
    entries_path: str
    """Native path of the conversation list (``messages``, ``input``, ``contents``)."""
    tools: tuple[ToolDecl, ...] | None
    """The declared tools; None when the request sends no tools list."""
    tools_path: str
    """Native path of the tools list (``tools``, or ``functions`` for the legacy API)."""
    thinking: bool = False
    """The request runs a reasoning (thinking) mode."""
