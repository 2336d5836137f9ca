"""What a conversion between wire shapes produced: the new body, where each message came from, what was lost."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loss:
    """One thing the conversion could not carry into the target shape."""

    path: str
    """Native JSON path of the element (``messages[3].content[0].signature``)."""
    what: str
    """One sentence: what was lost and what that means for the provider."""


@dataclass(frozen=True)
class Converted:
    """A Chat Completions body made from a native body."""

    body: dict
    """The Chat Completions request body."""
    origin: list[str]
    """For each converted message, the native path it was made from."""
    losses: list[Loss]
    """What the conversion could not carry, in native order."""
