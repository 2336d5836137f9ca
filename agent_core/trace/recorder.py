"""Where recorded events go: the ``Recorder`` interface and the sinks that need no file.

``NullRecorder`` makes recording-off cost nothing (no scattered ``if``
checks); ``MemoryRecorder`` keeps events in a list for tests and the live
studio; ``FanOut`` sends each event to several recorders. The file sink,
``writer.TraceWriter``, implements the same interface.
"""
from __future__ import annotations

from typing import Any, Protocol

from agent_core.core.msg import Msg

from .events import CallAttempt, MemoryEvent


class Recorder(Protocol):
    def message_added(self, msg: Msg, source: str = "memory") -> None:
        """``source`` is ``memory`` for messages the program added, else the policy that made it."""
        ...
    def memory_event(self, event: MemoryEvent) -> None: ...
    def call_attempt(self, attempt: CallAttempt) -> None: ...


class NullRecorder:
    """Recording off."""

    def message_added(self, msg: Msg, source: str = "memory") -> None:
        pass

    def memory_event(self, event: MemoryEvent) -> None:
        pass

    def call_attempt(self, attempt: CallAttempt) -> None:
        pass


class MemoryRecorder:
    """Keeps every event in order, in memory."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def message_added(self, msg: Msg, source: str = "memory") -> None:
        self.events.append(("add", msg))

    def memory_event(self, event: MemoryEvent) -> None:
        self.events.append(("memory", event))

    def call_attempt(self, attempt: CallAttempt) -> None:
        self.events.append(("call", attempt))

    @property
    def calls(self) -> list[CallAttempt]:
        return [e for kind, e in self.events if kind == "call"]


class FanOut:
    """Sends every event to several recorders."""

    def __init__(self, *recorders: Recorder):
        self.recorders = recorders

    def message_added(self, msg: Msg, source: str = "memory") -> None:
        for r in self.recorders:
            r.message_added(msg, source)

    def memory_event(self, event: MemoryEvent) -> None:
        for r in self.recorders:
            r.memory_event(event)

    def call_attempt(self, attempt: CallAttempt) -> None:
        for r in self.recorders:
            r.call_attempt(attempt)
