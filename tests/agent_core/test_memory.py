from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.chat.memory import ShortTermMemory
from agent_core.core.msg import Msg
from agent_core.trace.recorder import MemoryRecorder
from agent_core.trim.window import KeepAll, MaxMessages


def _call(*ids: str) -> Msg:
    return Msg.from_openai({"role": "assistant", "content": "", "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]})


def test_default_policy_is_max_messages_40():
    memory = ShortTermMemory()
    assert isinstance(memory.policy, MaxMessages) and memory.policy.max_messages == 40


def test_max_messages_drops_user_first_then_the_tool_group_together():
    rec = MemoryRecorder()
    memory = ShortTermMemory(policy=MaxMessages(5), recorder=rec)
    system = Msg(role="system", content="s")
    user = Msg(role="user", content="weather?")
    call = _call("c1")
    result = Msg(role="tool", content="sunny", tool_call_id="c1")
    answer = Msg(role="assistant", content="It is sunny")
    user2 = Msg(role="user", content="thanks")
    for m in (system, user, call, result, answer):
        memory.add(m)
    assert memory.message_count() == 5
    memory.add(user2)   # 6 > 5: the oldest non-system message (the user) goes
    assert [m.id for m in memory.messages()] == [system.id, call.id, result.id, answer.id, user2.id]
    memory.add(Msg(role="assistant", content="welcome"))   # next: the call goes with its result
    assert [m.role for m in memory.messages()] == ["system", "assistant", "user", "assistant"]
    assert call.id not in [m.id for m in memory.messages()]
    trims = [e for kind, e in rec.events if kind == "memory"]
    assert [e.removed for e in trims] == [[user.id], [call.id, result.id]]
    assert all(e.policy == "max-messages" and e.params == {"max_messages": 5} and e.reason for e in trims)


def test_system_messages_are_never_removed_even_over_the_limit():
    memory = ShortTermMemory(policy=MaxMessages(1))
    memory.add(Msg(role="system", content="a"))
    memory.add(Msg(role="system", content="b"))
    memory.add(Msg(role="user", content="hi"))
    assert [m.content for m in memory.messages()] == ["a", "b"]


def test_clear_non_system_emits_an_event_and_keeps_system():
    rec = MemoryRecorder()
    memory = ShortTermMemory(policy=KeepAll(), recorder=rec, system_prompt="sys")
    u = Msg(role="user", content="hi")
    memory.add(u)
    memory.clear_non_system()
    assert memory.to_api_format() == [{"role": "system", "content": "sys"}]
    event = rec.events[-1][1]
    assert event.type == "clear" and event.removed == [u.id]


def test_to_api_format_is_the_openai_list():
    memory = ShortTermMemory(system_prompt="sys")
    memory.add(Msg(role="user", content="hi", name="bob"))
    assert memory.to_api_format() == [{"role": "system", "content": "sys"},
                                      {"role": "user", "content": "hi", "name": "bob"}]


_counter = iter(range(10**9))


@st.composite
def _adds(draw):
    """Any sequence of adds an agent can produce: roles in any order, tool results only after a call."""
    kinds = draw(st.lists(st.sampled_from(["system", "user", "assistant", "call", "tool"]), max_size=60))
    out: list[Msg] = []
    for k in kinds:
        n = next(_counter)
        if k == "call":
            out.append(_call(f"c{n}", f"d{n}"))
        elif k == "tool":
            if out and (out[-1].tool_calls or out[-1].role == "tool"):
                out.append(Msg(role="tool", content="r", tool_call_id=f"c{n}"))
        else:
            out.append(Msg(role=k, content=str(n)))
    return out


@settings(max_examples=300, deadline=None)
@given(_adds(), st.integers(min_value=1, max_value=12))
def test_max_messages_invariants(adds, limit):
    memory = ShortTermMemory(policy=MaxMessages(limit))
    systems: list[str] = []
    for m in adds:
        memory.add(m)
        if m.role == "system":
            systems.append(m.id)
        held = memory.messages()
        assert [x.id for x in held if x.role == "system"] == systems     # system messages survive
        assert len(held) <= max(limit, len(systems))                      # count <= max
        non_system = [x for x in held if x.role != "system"]
        assert not non_system or non_system[0].role != "tool"             # never starts with a tool message
