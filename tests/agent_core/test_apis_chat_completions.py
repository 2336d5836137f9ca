"""The Chat Completions adapter: the chain it derives, the registry, stream reassembly and curl."""
from __future__ import annotations

import shlex

import pytest

from agent_core.apis.base import WireApi, api_for_body, api_for_path, api_names, get_api, split_endpoint
from agent_core.apis.chain import MISSING
from agent_core.apis.chat_completions import CHAT_COMPLETIONS, chat_url, curl_command, strip_credentials
from agent_core.export.curl import call_base_url
from agent_core.trace.model import Call
from agent_core.trace.recorder import CallAttempt

BODY = {
    "model": "deepseek-reasoner",
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "reasoning_content": "two cities",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
                        {"id": "c2", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2"},
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}, "junk"],
}


def test_the_adapter_is_a_wire_api():
    assert isinstance(CHAT_COMPLETIONS, WireApi)
    assert CHAT_COMPLETIONS.name == "chat-completions" and CHAT_COMPLETIONS.paths == ("/chat/completions",)


def test_chain_entries_calls_and_results_keep_native_paths():
    chain = CHAT_COMPLETIONS.chain(BODY)
    assert chain.api == "chat-completions" and chain.thinking is True
    assert chain.entries_path == "messages" and chain.entries_native is BODY["messages"]
    assert [(e.index, e.path, e.role) for e in chain.entries] == [
        (0, "messages[0]", "system"), (1, "messages[1]", "user"), (2, "messages[2]", "assistant"),
        (3, "messages[3]", "tool"), (4, "messages[4]", "tool")]
    call_entry = chain.entries[2]
    assert call_entry.content is None and call_entry.reasoning == "two cities"
    assert call_entry.at("reasoning") == "messages[2].reasoning_content"
    first, second = call_entry.calls
    assert (first.position, first.path, first.id, first.name, first.arguments, first.type) == (
        0, "messages[2].tool_calls[0]", "c1", "get_weather", '{"city": "Paris"}', "function")
    assert first.at("name") == "messages[2].tool_calls[0].function.name"
    assert first.at("arguments") == "messages[2].tool_calls[0].function.arguments"
    assert second.type is MISSING and second.defect is None and second.at("type") == "messages[2].tool_calls[1].type"
    (result,) = chain.entries[3].results
    assert (result.id, result.content, result.at("id")) == ("c1", "sunny", "messages[3].tool_call_id")
    assert chain.entries[4].results[0].content is MISSING          # absent, which is not the same as null
    assert chain.entries[1].calls == () and chain.entries[1].calls_native is MISSING
    assert chain.entries[1].legacy_call is None and chain.entries[1].results == ()


def test_chain_tools_and_legacy_functions():
    chain = CHAT_COMPLETIONS.chain(BODY)
    assert chain.tools_path == "tools"
    assert [(t.path, t.name) for t in chain.tools] == [("tools[0]", "get_weather"), ("tools[1]", MISSING)]
    assert chain.tools[0].at("name") == "tools[0].function.name"
    legacy = CHAT_COMPLETIONS.chain({"messages": [], "functions": [{"name": "lookup"}]})
    assert legacy.tools_path == "functions" and legacy.tools[0].at("name") == "functions[0].name"
    assert legacy.thinking is False and legacy.entries == ()
    assert CHAT_COMPLETIONS.chain({"messages": []}).tools is None


def test_chain_of_odd_values_never_raises():
    assert CHAT_COMPLETIONS.chain([1, 2]).entries is None
    odd = CHAT_COMPLETIONS.chain({"messages": "hi", "thinking": {"type": "enabled"}})
    assert odd.entries is None and odd.entries_native == "hi" and odd.thinking is True
    (e,) = CHAT_COMPLETIONS.chain({"messages": [[1]]}).entries
    assert not e.is_object and e.native == [1] and e.role is None
    (e,) = CHAT_COMPLETIONS.chain({"messages": [{"role": "assistant", "tool_calls": [3, {"id": "x"}],
                                                 "function_call": "f"}]}).entries
    assert [c.defect for c in e.calls] == ["not-object", "no-function"] and e.calls[1].id == "x"
    assert e.legacy_call.defect == "not-object" and e.legacy_call.path == "messages[0].function_call"


def test_entries_resume_at_an_offset():
    tail = CHAT_COMPLETIONS.entries([{"role": "user", "content": "x"}], start=7)
    assert [(e.index, e.path, e.at("content")) for e in tail] == [(7, "messages[7]", "messages[7].content")]


def test_registry():
    assert "chat-completions" in api_names() and get_api("chat-completions") is CHAT_COMPLETIONS
    with pytest.raises(KeyError, match="unknown wire API 'no-such-api'"):
        get_api("no-such-api")
    assert api_for_path("https://h/v1/chat/completions?api-version=1") is CHAT_COMPLETIONS
    assert api_for_path("/v1/embeddings") is None
    assert split_endpoint("http://u:p@h:8/v1/chat/completions/") == (CHAT_COMPLETIONS, "http://u:p@h:8/v1")
    assert api_for_body({"messages": []}) is CHAT_COMPLETIONS
    assert api_for_body("not a body") is CHAT_COMPLETIONS        # the default, so anything can be linted


def test_reassemble_merges_deltas_of_parallel_calls():
    chunks, done = CHAT_COMPLETIONS.parse_stream(
        b'data: {"id": "r1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", '
        b'"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "get_", "arguments": ""}}]}}]}\n\n'
        b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "weather", '
        b'"arguments": "{}"}}, {"index": 1, "id": "c2", "function": {"name": "t", "arguments": "{\\"a\\":1}"}}]}}]}\n\n'
        b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": {"total_tokens": 9}}\n\n'
        b"data: [DONE]\n\n")
    assert done is True and len(chunks) == 3
    assert CHAT_COMPLETIONS.reassemble(chunks) == {
        "id": "r1", "object": "chat.completion", "created": None, "model": "m", "usage": {"total_tokens": 9},
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
                                    {"id": "c2", "type": "function", "function": {"name": "t", "arguments": '{"a":1}'}}]}}]}
    assert CHAT_COMPLETIONS.parse_stream(b'data: {"choices": []}\n') == ([{"choices": []}], False)


def test_curl_never_holds_credentials_and_quotes_the_body():
    body = {"model": "m", "messages": [{"role": "user", "content": "it's"}]}
    cmd = CHAT_COMPLETIONS.curl(body, "https://user:p@ss@example.com/v1/")
    assert cmd == curl_command(body, "https://user:p@ss@example.com/v1/")
    assert "p@ss" not in cmd and "user" not in cmd.split("-d")[0]
    words = shlex.split(cmd.replace("\\\n", " "))
    assert words[1] == "https://example.com/v1/chat/completions"
    assert words[-1] == '{"model":"m","messages":[{"role":"user","content":"it\'s"}]}'
    assert CHAT_COMPLETIONS.url(None) == chat_url(None) == "https://api.openai.com/v1/chat/completions"
    assert strip_credentials("https://a:b@c@h/v1") == "https://h/v1"


def test_call_base_url_takes_the_last_known_endpoint_without_credentials():
    def attempt(n, url):
        return CallAttempt(call=0, attempt=n, method="POST", url=url, request_body={})
    call = Call(index=0, request={"messages": []}, attempts=[attempt(0, "https://u:pw@one.example/v1/chat/completions"),
                                                             attempt(1, "https://two.example/other")])
    assert call_base_url(call) == "https://one.example/v1"
    assert call_base_url(Call(index=0, request={})) is None
