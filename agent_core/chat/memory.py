"""Short-term memory: the message list the agent sends on each call."""
from __future__ import annotations

from agent_core.core.msg import Msg
from agent_core.trace.events import MemoryEvent
from agent_core.trace.recorder import NullRecorder, Recorder
from agent_core.trim.base import TrimPolicy
from agent_core.trim.window import default_policy


class ShortTermMemory:
    """An ordered list of messages, trimmed by a pluggable policy after each add.

    Every add, trim and clear is reported to the recorder, so a trace shows
    not only each payload but what shaped it.
    """

    def __init__(self, policy: TrimPolicy | None = None, recorder: Recorder | None = None,
                 system_prompt: str | None = None):
        self.policy: TrimPolicy = policy or default_policy()
        self.recorder: Recorder = recorder or NullRecorder()
        self._messages: list[Msg] = []
        if system_prompt:
            self.add(Msg(role="system", content=system_prompt))

    def add(self, msg: Msg) -> None:
        """Append ``msg``, then let the policy trim."""
        self._messages.append(msg)
        self.recorder.message_added(msg)
        self._trim()

    def _trim(self) -> None:
        result = self.policy.apply(self._messages)
        if not result.changed:
            return
        before = {m.id for m in self._messages}
        self._messages = list(result.messages)
        for m in self._messages:
            if m.id not in before:
                self.recorder.message_added(m, source=self.policy.name)
        self.recorder.memory_event(MemoryEvent(
            type="trim", policy=self.policy.name, params=self.policy.params(),
            removed=[m.id for m in result.removed], reason=result.reason,
            added=[m.id for m in self._messages if m.id not in before],
        ))

    def clear_non_system(self) -> None:
        """Forget the conversation but keep the system prompt (/clear)."""
        removed = [m for m in self._messages if m.role != "system"]
        self._messages = [m for m in self._messages if m.role == "system"]
        self.recorder.memory_event(MemoryEvent(
            type="clear", policy="clear", removed=[m.id for m in removed],
            reason="the user cleared the conversation; system messages kept",
        ))

    def messages(self) -> list[Msg]:
        return list(self._messages)

    def to_api_format(self) -> list[dict]:
        """The ``messages`` list for the next Chat Completions request."""
        return [m.to_openai() for m in self._messages]

    def message_count(self) -> int:
        return len(self._messages)
