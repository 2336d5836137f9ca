"""The real ``google-genai`` SDK -> the recording proxy -> the demo model's Gemini endpoint, over real HTTP.

The expected shapes come from the SDK's own typed responses (``function_calls``, streamed ``text``).
"""
from __future__ import annotations

import json

from google import genai
from google.genai import types

from agent_core.apis.base import api_for_path
from agent_core.ingest.detect import load_any
from agent_core.lint.scan import lint_request, lint_trace
from agent_core.serve.proxy import SESSION_HEADER, RecordingProxy

KEY = "AIzaSyProxyTestKey0123456789abcdefXYZ"
WEATHER = {"city": "Paris", "condition": "sunny", "temperature_c": 21, "humidity": 40}


def test_sdk_tool_round_through_the_proxy(demo_server, tmp_path):
    root = demo_server.base_url.removesuffix("/v1")
    with RecordingProxy(root, port=0, trace_dir=tmp_path / "proxy") as proxy:
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(
            base_url=proxy.base_url.removesuffix("/v1"), headers={SESSION_HEADER: "gemini-round"}))
        tool = types.Tool(function_declarations=[types.FunctionDeclaration(
            name="get_weather", description="Weather for a city",
            parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}})])
        config = types.GenerateContentConfig(
            tools=[tool], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
        contents = [types.Content(role="user", parts=[types.Part(text="What's the weather in Paris?")])]
        first = client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
        assert [(c.name, c.args) for c in first.function_calls] == [("get_weather", {"city": "Paris"})]
        contents += [first.candidates[0].content, types.Content(role="user", parts=[
            types.Part.from_function_response(name="get_weather", response=WEATHER)])]
        text = "".join(chunk.text or "" for chunk in client.models.generate_content_stream(
            model="gemini-2.5-flash", contents=contents, config=config))
    assert text == "Paris: sunny, 21°C, humidity 40%."
    assert proxy.errors == []
    for path in (tmp_path / "proxy").iterdir():
        assert KEY.encode() not in path.read_bytes(), path.name
    (trace_file,) = proxy.trace_files()
    trace = load_any(trace_file)
    assert len(trace.calls) == 2
    assert [api_for_path(c.attempts[-1].url).name for c in trace.calls] == ["gemini", "gemini"]
    sent = trace.calls[1].request
    assert [c["role"] for c in sent["contents"]] == ["user", "model", "user"]
    assert sent["contents"][2]["parts"][0]["functionResponse"]["response"] == WEATHER
    # the stream, reassembled, is the text the SDK put together
    assert trace.calls[1].response["candidates"][0]["content"]["parts"] == [{"text": text}]
    assert lint_trace(trace, profile="gemini") == [] and lint_trace(trace, profile="openai") == []


def test_demo_model_rejects_a_broken_gemini_chain_with_geminis_text(demo_server):
    import httpx

    url = demo_server.base_url.removesuffix("/v1") + "/v1beta/models/gemini-2.5-flash:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "weather?"}]},
                         {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}},
                                                     {"functionCall": {"name": "get_time", "args": {}}}]},
                         {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {}}}]}]}
    answer = httpx.post(url, content=json.dumps(body), headers={"x-goog-api-key": KEY})
    assert answer.status_code == 400
    # google-gemini/gemini-cli#3124 (quoted in ../shared/design/protocol-errors.md)
    assert answer.json() == {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": (
        "Please ensure that the number of function response parts is equal to the number of function call parts "
        "of the function call turn.")}}
    assert lint_request(body, profile="gemini")[0].path == "contents[1].parts[0]"
