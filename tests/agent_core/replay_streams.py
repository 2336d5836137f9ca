"""Hypothesis strategies for the replay tests: random valid Function Calling streams.

A stream is what an agent adds to memory: an optional system prompt, then
turns of user message, zero to two tool rounds (an assistant ``tool_calls``
message with one to three calls, then every result in order), and a final
answer. Calls are made where the agent makes them: after each user message
and after each round's results.
"""
from __future__ import annotations

import itertools

from hypothesis import strategies as st

from agent_core.core.msg import Msg
from agent_core.trace.model import Call, Trace

_WORDS = ["天气", "北京", "weather", "please", "A-2024-0715", "计划", "the", "tool", "result", "42", "ok", "小明"]
_counter = itertools.count()

text = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=25).map(" ".join)


@st.composite
def turns(draw) -> list[list[dict]]:
    """Each turn as a list of segments; a call is made after each segment."""
    n_turns = draw(st.integers(1, 8))
    out = []
    for _ in range(n_turns):
        segments = [[{"role": "user", "content": draw(text) or "hi"}]]
        for _ in range(draw(st.integers(0, 2))):
            ids = [f"call_{next(_counter)}" for _ in range(draw(st.integers(1, 3)))]
            seg = [{"role": "assistant", "content": draw(st.sampled_from(["", None])), "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "北京"}'}}
                for i in ids]}]
            seg += [{"role": "tool", "tool_call_id": i, "content": draw(text)} for i in ids]
            segments.append(seg)
        segments[-1].append({"role": "assistant", "content": draw(text) or "done"})
        out.append(segments)
    return out


@st.composite
def traces(draw, with_system: bool | None = None) -> Trace:
    """A trace whose calls sent the whole stream so far (a keep-all request log)."""
    system = draw(st.booleans()) if with_system is None else with_system
    stream: list[Msg] = []
    calls: list[Call] = []
    if system:
        stream.append(Msg.from_openai({"role": "system", "content": draw(text) or "You are helpful."}))
    for turn in draw(turns()):
        for seg in turn:
            # the final answer of a turn is added after the turn's last call
            body, tail = (seg[:-1], seg[-1:]) if seg[-1].get("role") == "assistant" and not seg[-1].get(
                "tool_calls") else (seg, [])
            for m in body:
                stream.append(Msg.from_openai(m))
            calls.append(Call(index=len(calls), request={"model": "gpt-4o",
                                                         "messages": [m.to_openai() for m in stream]},
                              stream_index=len(stream), message_ids=[m.id for m in stream]))
            for m in tail:
                stream.append(Msg.from_openai(m))
    return Trace(source="<hypothesis>", format="synthetic", calls=calls, stream=stream)


def pairing_errors(messages: list[dict]) -> list[str]:
    """The two pairing rules, independent of the linter: every call answered right after it,
    every tool result right after a call that has its id."""
    errors = []
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.get("role") == "tool":
            errors.append(f"orphan tool at {i}")
            i += 1
            continue
        if m.get("role") == "assistant" and m.get("tool_calls"):
            want = [c["id"] for c in m["tool_calls"]]
            j = i + 1
            got = []
            while j < len(messages) and messages[j].get("role") == "tool":
                got.append(messages[j].get("tool_call_id"))
                j += 1
            if sorted(got) != sorted(want):
                errors.append(f"call at {i} answered by {got}, wants {want}")
            i = j
            continue
        i += 1
    return errors
