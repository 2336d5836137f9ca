"""The agent: the classic Function Calling flow over short-term memory."""
from __future__ import annotations

from typing import Any

from agent_core.apis.responses import items_from_chat, reply_message
from agent_core.core.msg import Msg
from agent_core.core.parents import LineageTracker

from .client import LLMClient
from .memory import ShortTermMemory
from .tools import ToolRegistry, default_tools


class Agent:
    """Talks to a model through ``LLMClient`` and keeps the conversation in memory.

    Args:
        client: the recording LLM client.
        memory: short-term memory (its policy trims after each add).
        tools: the tools offered on the first call of each round.
        max_tool_rounds: 1 is the classic flow (one tool round, then a call
            without ``tools``); more lets the model keep calling tools, up
            to this many rounds, before the final answer.
        send_history: False sends only the system prompt and the current
            turn, which is how an app "forgets" (sample trace b).
        api: ``chat-completions`` (default) or ``responses``: the same memory and
            flow, each payload sent as Responses input items (``POST /responses``).
        server_state: with ``responses`` only: after the first call, send only the
            messages added since the last call (the tool results, the next user
            turn), naming the last response in ``previous_response_id``. The server
            then keeps the conversation, so the memory's trim no longer decides what
            the model sees (``/clear`` starts a new chain). False (default) sends
            the memory's messages each time.
    """

    def __init__(self, client: LLMClient, memory: ShortTermMemory | None = None,
                 tools: ToolRegistry | None = None, max_tool_rounds: int = 1, send_history: bool = True,
                 api: str = "chat-completions", server_state: bool = False):
        if max_tool_rounds < 1:
            raise ValueError("max_tool_rounds must be at least 1")
        if api not in ("chat-completions", "responses"):
            raise ValueError(f"api must be chat-completions or responses, not {api!r}")
        if server_state and api != "responses":
            raise ValueError("server_state needs api='responses' (only the Responses API keeps a conversation)")
        self.api = api
        self.server_state = server_state
        self._previous: str | None = None        # the last response of the server-side chain
        self._unsent: list[Msg] = []             # added since the last call: the next call's input
        self.client = client
        self.memory = memory or ShortTermMemory(recorder=client.recorder)
        self.tools = tools if tools is not None else default_tools()
        self.max_tool_rounds = max_tool_rounds
        self.send_history = send_history
        self._lineage = LineageTracker()
        for m in self.memory.messages():
            self._lineage.observe(m)
        self._turn_start: str | None = None

    def _add(self, msg: Msg, sent: bool = False) -> Msg:
        """Into memory; ``sent``: the server's chain holds it already (the model's own reply)."""
        linked = self._lineage.link(msg)
        self.memory.add(linked)
        if self.server_state and not sent:
            self._unsent.append(linked)     # kept here, not read back from memory: a trim must not lose it
        return linked

    def _payload(self) -> tuple[list[dict], list[str]]:
        msgs = self.memory.messages()
        if not self.send_history:
            ids = [m.id for m in msgs]
            start = ids.index(self._turn_start) if self._turn_start in ids else len(msgs)
            msgs = [m for m in msgs[:start] if m.role == "system"] + msgs[start:]
        return [m.to_openai() for m in msgs], [m.id for m in msgs]

    def _call(self, with_tools: bool) -> dict:
        messages, ids = self._payload()
        if self.api == "responses":
            tools = [{"type": "function", **s["function"]} for s in self.tools.schemas()] if with_tools else None
            if not self.server_state:
                return reply_message(self.client.respond(items_from_chat(messages), tools, message_ids=ids))
            if self._previous is not None:
                messages, ids = [m.to_openai() for m in self._unsent], [m.id for m in self._unsent]
            response = self.client.respond(items_from_chat(messages), tools, previous_response_id=self._previous,
                                           message_ids=ids)
            # no id to chain on: the next call starts a new chain with the whole memory
            self._previous = response.get("id") if isinstance(response.get("id"), str) else None
            self._unsent = []
            return reply_message(response)
        response = self.client.complete(messages, self.tools.schemas() if with_tools else None, message_ids=ids)
        choices = response.get("choices") or [{}]
        return choices[0].get("message") or {"role": "assistant", "content": ""}

    def chat(self, user_input: str) -> str:
        """One user turn; returns the final assistant text.

        Raises:
            EndpointError: the endpoint failed; the user message stays in memory
                and the failed call is in the trace.
        """
        self._turn_start = self._add(Msg(role="user", content=user_input)).id
        reply = self._call(with_tools=bool(self.tools.names()))
        rounds = 0
        while reply.get("tool_calls"):
            rounds += 1
            self._add(Msg.from_openai(_assistant_with_calls(reply)), sent=True)
            for call in reply["tool_calls"]:
                fn = call.get("function") or {}
                result = self.tools.run(fn.get("name", ""), fn.get("arguments") or "{}")
                self._add(Msg(role="tool", content=result, tool_call_id=call.get("id")))
            reply = self._call(with_tools=rounds < self.max_tool_rounds)
        final = {"role": "assistant", "content": reply.get("content") or ""}
        self._add(Msg.from_openai(final), sent=True)
        return final["content"]

    def clear(self) -> None:
        """/clear: forget the conversation, keep the system prompt."""
        self.memory.clear_non_system()
        self._lineage = LineageTracker()
        self._previous, self._unsent = None, []     # a new server-side chain, from the system prompt


def _assistant_with_calls(reply: dict[str, Any]) -> dict:
    """The assistant message as it goes back into history: tool_calls kept, content "" when None."""
    calls = [{"id": c.get("id"), "type": c.get("type", "function"),
              "function": {"name": (c.get("function") or {}).get("name"),
                           "arguments": (c.get("function") or {}).get("arguments")}}
             for c in reply["tool_calls"]]
    return {"role": "assistant", "content": reply.get("content") or "", "tool_calls": calls}
