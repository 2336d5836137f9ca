"""A payload log's line is parsed against the line before: exactly ``json.loads``' value, sharing only what is the
same JSON text (never a look-alike that ``==`` calls equal but that serializes differently)."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.ingest.detect import load_any
from agent_core.ingest.line_parse import LineParser

# Each pair is equal by ``==`` but serializes differently: key order, 1 / 1.0 / true, 0 / -0.0.
LOOK_ALIKES = [
    ('{"role":"user","content":"hi","name":"a"}', '{"content":"hi","role":"user","name":"a"}'),
    ('{"role":"user","content":"n","metadata":{"k":1}}', '{"role":"user","content":"n","metadata":{"k":1.0}}'),
    ('{"role":"user","content":"n","metadata":{"k":1}}', '{"role":"user","content":"n","metadata":{"k":true}}'),
    ('{"role":"user","content":"n","metadata":{"k":0}}', '{"role":"user","content":"n","metadata":{"k":-0.0}}'),
]


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _look_alike_log(tmp_path):
    """Call k+1 re-sends call k's messages, but one of them in its look-alike form; tools change the same way."""
    lines = []
    for first, second in LOOK_ALIKES:
        for k, message in enumerate((first, second)):
            history = '{"role":"system","content":"s"},' + message
            x = "1" if k == 0 else "1.0"
            tools = '[{"type":"function","function":{"name":"f","parameters":{"type":"object","x":' + x + '}}}]'
            lines.append('{"request":{"model":"m","messages":[' + history + '],"tools":' + tools + '},'
                         '"response":{"id":"r' + str(len(lines)) + '"}}')
            lines.append('{"request":{"model":"m","messages":[' + history + ',{"role":"assistant","content":"ok"}],'
                         '"tools":' + tools + '}}')
    path = tmp_path / "lookalikes.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, lines


def test_look_alike_messages_are_shown_as_each_line_sent_them(tmp_path):
    path, lines = _look_alike_log(tmp_path)
    trace = load_any(path)
    assert len(trace.calls) == len(lines)
    for call, line in zip(trace.calls, lines):
        sent = json.loads(line)["request"]          # the real library, on this line alone
        assert _dumps(call.request) == _dumps(sent)
        assert [_dumps(m) for m in call.messages] == [_dumps(m) for m in sent["messages"]]
        assert _dumps(call.tools) == _dumps(sent["tools"])
    # each look-alike is its own stream message; the system prompt, sent identically every time, is one
    bodies = [_dumps(m.to_openai()) for m in trace.stream]
    for first, second in LOOK_ALIKES:
        assert _dumps(json.loads(first)) in bodies and _dumps(json.loads(second)) in bodies
    assert bodies.count('{"role":"system","content":"s"}') == 1


def test_identical_text_is_shared_and_look_alikes_are_not():
    parser = LineParser()
    a = parser.parse(b'{"messages":[{"role":"system","content":"s"},{"a":1,"b":2}],"tools":[{"x":1}]}')
    b = parser.parse(b'{"messages":[{"role":"system","content":"s"},{"b":2,"a":1},{"c":1}],"tools":[{"x":1.0}]}')
    c = parser.parse(b'{"messages":[{"role":"system","content":"s"},{"b":2,"a":1},{"c":1},{"d":1}],"tools":[{"x":1.0}]}')
    assert a["messages"][0] is b["messages"][0] is c["messages"][0]
    assert a["messages"][1] is not b["messages"][1] and list(b["messages"][1]) == ["b", "a"]
    assert b["messages"][1] is c["messages"][1] and b["messages"][2] is c["messages"][2]
    assert a["tools"] is not b["tools"] and b["tools"] is c["tools"]
    assert _dumps(b["tools"]) == '[{"x":1.0}]'


def test_a_trimmed_line_shares_what_it_kept():
    parser = LineParser()
    parser.parse(b'{"messages":[{"role":"system","content":"s"},{"n":1},{"n":2},{"n":3}]}')
    first = parser._messages.values
    kept = parser.parse(b'{"messages": [{"role": "system", "content": "s"}, {"n":2}, {"n":3}, {"n":4}]}')["messages"]
    # the system prompt's text differs (spaces after the colons): parsed again; the kept messages are shared
    assert kept[0] is not first[0] and kept[1] is first[2] and kept[2] is first[3]


TRICKY = [
    b'{"messages":[5]}', b'{"messages":[56]}', b'{"messages":[5,6]}', b'{"messages":[5 , 6 ]}',
    b'{"messages":[NaN, -Infinity]}', b'{"messages":[{"a":1,"a":2}], "model":"x", "model":"y"}',
    b'{"request":{"messages":[{"a":"\\u00e9"}]}, "response": {"choices": []}}',
    b'{"request":{"messages":[{"a":"\xc3\xa9"}],"messages":[1]}}', b'{"messages":[]}', b'{"messages":[[], {}]}',
    b' {"messages":[true,false,null]} \r\n', b'[{"messages":[1]}]', b'"text"', b'{}', b'{"request":[1]}',
    b'{"messages":[1,]}', b'{"messages":[1', b'{"messages":[1]} x', b'{"messages":[{"a":1}]',
    b'{"request":{"messages":[{"a":1}],"tools":[{"t":1}]},"messages":[{"a":1}]}',
    b'{"request":{"messages":[{"a":1}]}}', b'{"request":{"messages":[{"a":1},{"c":3}]},"messages":[{"b":2}]}',
    b'{"request":{"messages":[{"a":1},{"c":3},{"d":4}]}}',
]


def test_a_second_messages_array_after_the_request_is_not_taken_for_the_requests():
    parser = LineParser()
    for raw in TRICKY[-3:]:
        assert json.dumps(parser.parse(raw)) == json.dumps(json.loads(raw))


@given(st.lists(st.sampled_from(TRICKY), min_size=1, max_size=6))
@settings(max_examples=150, deadline=None)
def test_every_line_parses_to_what_json_loads_gives_or_raises_the_same_error(lines):
    parser = LineParser()
    for raw in lines:
        try:
            expected = json.loads(raw)
        except ValueError as err:
            try:
                parser.parse(raw)
            except ValueError as mine:
                assert str(mine) == str(err)
            else:
                raise AssertionError(f"{raw!r} parsed but json.loads raises {err}")
            continue
        got = parser.parse(raw)
        assert json.dumps(got) == json.dumps(expected)


_MESSAGE = st.dictionaries(st.sampled_from(["role", "content", "k"]),
                           st.one_of(st.integers(-2, 2), st.floats(-2, 2).map(lambda f: round(f, 1)), st.booleans(),
                                     st.text("ab é", max_size=3), st.none()), max_size=3)


@given(st.lists(st.lists(_MESSAGE, max_size=5), min_size=1, max_size=5), st.sampled_from([",", ", "]))
@settings(max_examples=200, deadline=None)
def test_growing_and_trimmed_histories_parse_exactly(payloads, separator):
    parser = LineParser()
    history: list = []
    for k, new in enumerate(payloads):
        history = (history[1:] if k % 3 == 2 else history) + new     # some lines drop the oldest message
        line = json.dumps({"model": "m", "messages": history}, separators=(separator, ":"))
        got = parser.parse(line.encode())
        assert json.dumps(got) == json.dumps(json.loads(line))
        assert json.dumps(got, separators=(separator, ":")) == line


_SHAPES = st.fixed_dictionaries({
    "record": st.booleans(),                        # {"request": body, "response": ...} or the bare body
    "stamp": st.booleans(),                         # a key before the messages that changes on every line
    "after": st.sampled_from([None, "tools", "temperature"]),   # a key after the messages
    "sep": st.sampled_from([",", ", ", " , "]),
    "response_first": st.booleans(),
})


@given(st.lists(st.tuples(st.lists(_MESSAGE, max_size=3), st.sampled_from(["grow", "drop", "edit", "same"])),
                min_size=1, max_size=6), _SHAPES)
@settings(max_examples=250, deadline=None)
def test_records_of_every_shape_parse_exactly_and_share_only_identical_text(steps, shape):
    """Full histories, drops and edits, under each record layout: the value is json.loads' and a message object
    comes from the line before only when its text there was the same."""
    parser = LineParser()
    history: list = []
    before: dict[int, str] = {}
    sep = shape["sep"]
    for k, (new, op) in enumerate(steps):
        if op == "drop":
            history = history[1:]
        elif op == "edit" and history:
            history = history[:-1] + [{**history[-1], "k": 1.0}]
        history = history + (new if op != "same" else [])
        body = '{"model":"m"' + sep + '"messages":[' + sep.join(_dumps(m) for m in history) + "]"
        if shape["after"] == "tools":
            body += sep + '"tools":[{"type":"function","x":' + ("1" if k % 2 else "1.0") + "}]"
        elif shape["after"] == "temperature":
            body += sep + '"temperature":' + str(k)
        body += "}"
        stamp = f'"at":"{k}"' + sep if shape["stamp"] else ""
        if shape["record"]:
            response = f'"response":{{"choices":[{{"message":{{"role":"assistant","content":"r{k}"}}}}]}}'
            inner = (response + sep + '"request":' + body) if shape["response_first"] else \
                ('"request":' + body + sep + response)
            line = "{" + stamp + inner + "}"
        else:
            line = "{" + stamp + body[1:]
        got = parser.parse(line.encode())
        expected = json.loads(line)
        assert json.dumps(got) == json.dumps(expected)
        messages = (got["request"] if shape["record"] else got)["messages"]
        for m in messages:          # a shared object is only ever one the previous line sent with the same text
            if id(m) in before:
                assert before[id(m)] == _dumps(m)
        before = {id(m): _dumps(m) for m in messages}
        keep = got          # noqa: F841  (the objects stay alive: their ids are not reused)
