"""Token counts must equal the openai-cookbook formula, computed here independently with tiktoken."""
from __future__ import annotations

from agent_core.trace.tokens import TokenCounter, encoding_name_for_model, get_encoding

PAYLOAD = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "我叫小明", "name": "xiaoming"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"成都\"}"}}]},
    {"role": "tool", "content": "{\"condition\": \"多云\"}", "tool_call_id": "call_1"},
    {"role": "assistant", "content": "成都多云。"},
]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather.",
                                           "parameters": {"type": "object", "properties": {
                                               "city": {"type": "string", "description": "City name"},
                                               "unit": {"type": "string", "enum": ["c", "f"]}}}}}]


def _cookbook(messages, tools, enc):
    n = 0
    for m in messages:
        n += 3
        for key, value in m.items():
            if key == "tool_calls":
                for c in value:
                    n += len(enc.encode(c["function"]["name"])) + len(enc.encode(c["function"]["arguments"]))
            else:
                n += len(enc.encode(value))
            if key == "name":
                n += 1
    n += 3
    if tools:
        for t in tools:
            f = t["function"]
            n += 7
            n += len(enc.encode(f"{f['name']}:{f['description'].rstrip('.')}"))
            props = f["parameters"]["properties"]
            n += 3
            for key, p in props.items():
                n += 3
                if "enum" in p:
                    n -= 3
                    for item in p["enum"]:
                        n += 3 + len(enc.encode(item))
                n += len(enc.encode(f"{key}:{p['type']}:{p.get('description', '').rstrip('.')}"))
        n += 12
    return n


def test_payload_count_equals_the_cookbook_formula():
    enc = get_encoding("o200k_base")   # tiktoken itself, its vocabulary seeded offline
    counter = TokenCounter("gpt-4o")
    assert counter.count_payload(PAYLOAD) == _cookbook(PAYLOAD, None, enc)
    assert counter.count_payload(PAYLOAD, TOOLS) == _cookbook(PAYLOAD, TOOLS, enc)


def test_known_value_hello_world():
    # 3 (message) + 1 ("user") + 2 ("hello world") + 3 (priming), on both encodings
    assert TokenCounter("gpt-4o").count_payload([{"role": "user", "content": "hello world"}]) == 9
    assert TokenCounter("gpt-4").count_payload([{"role": "user", "content": "hello world"}]) == 9


def test_encoding_choice_by_model():
    assert encoding_name_for_model("gpt-4o-mini") == "o200k_base"
    assert encoding_name_for_model("gpt-4.1") == "o200k_base"
    assert encoding_name_for_model("gpt-4-turbo") == "cl100k_base"
    assert encoding_name_for_model("gpt-3.5-turbo") == "cl100k_base"
    assert encoding_name_for_model("some-future-model") == "o200k_base"
    assert encoding_name_for_model(None) == "o200k_base"


def test_vocabulary_is_the_real_one_loaded_offline():
    enc = get_encoding("cl100k_base")
    assert enc.n_vocab == 100277
    assert enc.encode("hello world") == [15339, 1917]


def test_each_distinct_message_is_tokenized_once():
    counter = TokenCounter("gpt-4o")
    counter._store = None                    # the in-memory caches alone (the on-disk one: test_token_store.py)
    counter._load()
    calls = []
    real = counter._encode_ordinary          # the tokenizer itself
    counter._encode_ordinary = lambda text: calls.append(text) or real(text)
    for _ in range(50):
        counter.count_payload(PAYLOAD)
    fields = sum(len(m) for m in PAYLOAD) + 1   # tool_calls is two values: name and arguments
    assert fields == 14
    # every distinct field value encoded once, not 50 times: the second "assistant" role is the first's text
    assert sorted(calls) == sorted({*calls}) and len(calls) == fields - 1


def test_content_parts_are_counted_by_their_text():
    counter = TokenCounter("gpt-4o")
    parts = [{"role": "user", "content": [{"type": "text", "text": "hello world"}]}]
    assert counter.count_payload(parts) == 9


def test_series_counting_reuses_the_previous_payload_and_agrees_with_counting_each():
    counter = TokenCounter("gpt-4o")
    shared = [dict(m) for m in PAYLOAD]
    payloads = [(shared[:2], TOOLS), (shared[:4], TOOLS), (shared[:5], None),
                ([shared[0], shared[4]], None),                  # trimmed: not a prefix, counted afresh
                ([dict(m) for m in PAYLOAD], TOOLS)]            # equal copies, not the same objects
    from agent_core.trace.model import Call
    calls = [Call(index=i, request={"messages": m, **({"tools": t} if t else {})}) for i, (m, t) in enumerate(payloads)]
    series = counter.count_calls_by_role(calls)
    assert series == [counter.count_by_role(m, t) for m, t in payloads]
    assert sum(series[-1].values()) == counter.count_payload(PAYLOAD, TOOLS)
