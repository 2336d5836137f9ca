"""The demo model's /v1/responses over real HTTP with the real openai SDK: plain, streamed, previous_response_id,
store, truncation, and the real API's error texts."""
from __future__ import annotations

import openai
import pytest

from agent_core.serve.demo_responses import CONTEXT_WINDOW

TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather in a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
WEATHER = '{"city": "Paris", "condition": "sunny", "temperature_c": 21, "humidity": 40}'


@pytest.fixture
def client(demo_server):
    return openai.OpenAI(base_url=demo_server.base_url, api_key="dummy", max_retries=0)


def test_tool_round_with_previous_response_id_and_what_the_model_used(client, demo_server):
    first = client.responses.create(model="m", input="Weather in Paris?", tools=TOOLS, instructions="Be brief.")
    [call] = first.output
    assert call.type == "function_call" and call.name == "get_weather" and call.call_id.startswith("call_")
    second = client.responses.create(model="m", previous_response_id=first.id, tools=TOOLS, input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": WEATHER}])
    assert second.output_text == "Paris: sunny, 21°C, humidity 40%."
    assert second.usage.input_tokens > 0 and second.usage.output_tokens > 0
    used = demo_server.responses.used[second.id]
    # the stored chain (first input, its output) then the new item; instructions are not carried over
    assert used["instructions"] is None
    assert [x.get("type", "message") for x in used["input"]] == ["message", "function_call", "function_call_output"]


def test_streaming_sends_the_documented_events(client):
    events = list(client.responses.create(model="m", input="Hi, my name is Ada.", stream=True))
    types = [e.type for e in events]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert "response.output_text.delta" in types and "response.output_item.done" in types
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == events[-1].response.output_text == "Nice to meet you, Ada!"


def test_streamed_function_call_arguments(client):
    events = list(client.responses.create(model="m", input="Weather in Paris?", tools=TOOLS, stream=True))
    args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert args == events[-1].response.output[0].arguments == '{"city": "Paris"}'


def test_the_model_remembers_only_through_the_chain(client):
    first = client.responses.create(model="m", input="Hi, my name is Ada.")
    assert client.responses.create(model="m", previous_response_id=first.id,
                                   input="What is my name?").output_text == "Your name is Ada."
    assert client.responses.create(model="m", input="What is my name?").output_text == "You have not told me your name."
    unstored = client.responses.create(model="m", input="Hi, my name is Bo.", store=False)
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="m", previous_response_id=unstored.id, input="What is my name?")
    assert err.value.body["message"] == f"Previous response with id '{unstored.id}' not found."
    assert err.value.body["code"] == "previous_response_not_found"


def test_malformed_chains_get_the_real_texts(client):
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="m", input=[{"role": "user", "content": "hi"},
                                                  {"type": "function_call_output", "call_id": "call_Z", "output": "1"}])
    assert err.value.body["message"] == "No tool call found for function call output with call_id call_Z."
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="m", input=[
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "call_Y", "name": "get_weather", "arguments": "{}"},
            {"role": "user", "content": "again"}], tools=TOOLS)
    assert err.value.body["message"] == "No tool output found for function call call_Y."


def test_truncation_auto_drops_the_oldest_groups_and_usage_shows_it(client, demo_server):
    filler = "lorem ipsum dolor sit amet " * 60          # ~420 tokens per message
    items = [{"role": "user", "content": f"{k}: {filler}"} for k in range(8)] + [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="m", input=items)
    assert err.value.body["code"] == "context_length_exceeded"
    r = client.responses.create(model="m", input=items, truncation="auto")
    used = demo_server.responses.used[r.id]["input"]
    assert 0 < len(used) < len(items) and used == items[-len(used):]
    assert r.usage.input_tokens <= CONTEXT_WINDOW
