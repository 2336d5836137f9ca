from __future__ import annotations

from datetime import timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.core.msg import Msg, format_timestamp, parse_timestamp
from agent_core.core.parents import link_stream


def test_round_trip_keeps_unknown_keys_and_key_order():
    original = {"tool_call_id": "call_1", "role": "tool", "name": "get_weather", "content": "{}",
                "x_vendor": {"cache": True}}
    msg = Msg.from_openai(original)
    out = msg.to_openai()
    assert out == original
    assert list(out) == list(original)


def test_round_trip_assistant_with_null_content_and_tool_calls():
    original = {"role": "assistant", "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    msg = Msg.from_openai(original)
    assert msg.tool_call_ids == ["c1"]
    assert msg.to_openai() == original


def test_to_openai_returns_copies_so_the_record_stays_immutable():
    msg = Msg.from_openai({"role": "user", "content": [{"type": "text", "text": "hi"}]})
    out = msg.to_openai()
    out["content"][0]["text"] = "changed"
    assert msg.to_openai()["content"][0]["text"] == "hi"


def test_ids_are_unique_and_sort_by_creation():
    ids = [Msg(role="user", content=str(i)).id for i in range(2000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)


def test_export_round_trip_with_utc_iso_timestamp():
    msg = Msg(role="user", content="你好", parent_id="msg_x")
    data = msg.export()
    assert data["timestamp"].endswith("Z")
    back = Msg.from_export(data)
    assert back.id == msg.id and back.parent_id == "msg_x" and back.content == "你好"
    assert back.timestamp.tzinfo == timezone.utc
    assert abs((back.timestamp - msg.timestamp).total_seconds()) < 0.001


def test_timestamp_parse_accepts_offsets():
    ts = parse_timestamp("2026-01-02T03:04:05+08:00")
    assert format_timestamp(ts) == "2026-01-01T19:04:05.000Z"


def test_lineage_follows_the_function_calling_flow():
    stream = link_stream([
        Msg(role="system", content="s"),
        Msg(role="user", content="hi"),
        Msg(role="assistant", content="hello"),
        Msg(role="user", content="weather?"),
        Msg.from_openai({"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "w", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "w", "arguments": "{}"}}]}),
        Msg(role="tool", content="1", tool_call_id="b"),
        Msg(role="tool", content="2", tool_call_id="a"),
        Msg(role="assistant", content="sunny"),
        Msg(role="user", content="thanks"),
    ])
    system, u1, a1, u2, call, t1, t2, final, u3 = stream
    assert system.parent_id is None
    assert u1.parent_id is None                     # no earlier final reply
    assert a1.parent_id == u1.id                    # answers the user message
    assert u2.parent_id == a1.id                    # follows the previous final reply
    assert call.parent_id == u2.id
    assert t1.parent_id == call.id and t2.parent_id == call.id   # the assistant whose call it answers
    assert final.parent_id == t2.id                 # answers the last tool result
    assert u3.parent_id == final.id                 # not the tool-calling assistant message


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                           max_leaves=10)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12), json_values, max_size=8),
       st.sampled_from(["system", "user", "assistant", "tool"]))
def test_any_message_dict_round_trips(extra, role):
    original = {"role": role, **{k: v for k, v in extra.items() if k != "role"}}
    if "tool_calls" in original and not isinstance(original["tool_calls"], (list, type(None))):
        original["tool_calls"] = None
    assert Msg.from_openai(original).to_openai() == original


def test_from_parsed_equals_from_openai_without_copies():
    from datetime import datetime, timezone
    ts = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for data in ({"role": "user", "content": "hi"}, {"content": None, "role": "assistant", "x": [1],
                 "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": "c", "content": "ok", "name": "f"},
                 # known keys only, of the wrong type (a key order seen before takes from_parsed's fast path)
                 {"role": "tool", "tool_call_id": 7, "content": "ok"},
                 {"role": "tool", "tool_call_id": "c", "content": "ok"},
                 {"role": "user", "content": "hi", "name": ["a"]}, {"role": "user", "content": "hi", "name": "a"},
                 {"role": {"r": 1}, "content": "hi"}, {"role": None, "content": "hi"},
                 {"role": "assistant", "content": None, "tool_calls": 7},
                 {"role": "assistant", "content": None, "tool_calls": "x"},
                 {"role": "assistant", "content": None, "tool_calls": None}):
        for _ in range(2):
            fast = Msg.from_parsed(data, "m1", "m0", ts)
            assert fast == Msg.from_openai(data, id="m1", parent_id="m0", timestamp=ts, copy_values=False)
            assert fast.to_openai() == data and list(fast.to_openai()) == list(data)


def test_messages_with_the_same_key_order_share_it_and_each_keeps_its_own():
    a = Msg.from_openai({"role": "user", "content": "x"})
    b = Msg.from_parsed({"role": "user", "content": "y"}, "id-b", None, a.timestamp)
    c = Msg.from_openai({"content": "z", "role": "user"})
    assert a.key_order is b.key_order                    # one tuple per distinct order
    assert list(c.to_openai()) == ["content", "role"] and list(a.to_openai()) == ["role", "content"]
