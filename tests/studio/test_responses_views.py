"""Responses API calls in the studio: what the model saw (stored chain + this request), tokens, every page."""
from __future__ import annotations

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.trace.reader import read_trace
from studio.viewmodels.responses import what_the_model_saw

SAMPLE = SAMPLE_TRACES / "responses_previous_id.jsonl"


def test_the_last_call_saw_the_whole_stored_chain_and_its_one_new_item():
    trace = read_trace(SAMPLE)
    last = trace.calls[-1]
    assert last.request["input"] == "What is my name?" and last.request["previous_response_id"]
    view = what_the_model_saw(trace, last.index)
    # calls 0-2 each sent one item and got one output item back: six stored items, then the new question
    assert [r.sent for r in view.rows] == [False] * 6 + [True]
    assert [r.kind for r in view.rows] == ["message", "message", "message", "function_call", "function_call_output",
                                          "message", "message"]
    assert view.rows[0].text == "Hi, my name is Ada." and view.rows[-1].text == "What is my name?"
    assert view.rows[1].origin == f"from response {trace.calls[0].response['id']}"
    assert view.rows[3].path == f"{trace.calls[1].response['id']}.output[0]"
    assert view.instructions is None        # not carried over from call 0
    assert list(view.tokens_by_type) == ["message", "function_call", "function_call_output"]
    assert sum(view.tokens_by_type.values()) == sum(r.tokens for r in view.rows)
    assert view.reported == last.response["usage"]["input_tokens"] and not view.silently_truncated
    assert what_the_model_saw(trace, 0).instructions == "You are a helpful assistant."


def test_a_chat_completions_call_has_no_responses_view():
    trace = read_trace(SAMPLE_TRACES / "classic_remembers.jsonl")
    assert what_the_model_saw(trace, 0) is None


def test_silent_truncation_is_flagged_when_usage_is_far_below_the_input():
    from agent_core.trace.model import Call, Trace

    long = "lorem ipsum dolor sit amet " * 200
    call = Call(index=0, request={"model": "gpt-4.1", "input": long, "truncation": "auto"}, status=200,
                response={"id": "resp_x", "output": [], "usage": {"input_tokens": 40, "output_tokens": 5}})
    view = what_the_model_saw(Trace(source="t", format="chain-studio", calls=[call]), 0)
    assert view.estimated > 1000 and view.reported == 40 and view.silently_truncated


def test_chat_page_switch_records_responses_calls_that_every_page_opens(open_studio, tmp_path):
    from pathlib import Path

    from conftest import PAGES

    from agent_core.apis.responses import RESPONSES

    at = open_studio(None, "screens/chat.py")
    at.button_group(key="chat_api").set_value("responses").run()
    at.chat_input(key="chat_input").set_value("What is the weather in Paris?").run()
    assert not at.exception, [e.message for e in at.exception]
    path = Path(at.sidebar.selectbox(key="trace_pick").value.split(":", 1)[1])
    trace = read_trace(path)
    assert len(trace.calls) == 2 and all(RESPONSES.claims(c.request) for c in trace.calls)
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])


def test_chat_page_server_state_chains_each_call_on_the_last_response(open_studio):
    from pathlib import Path

    at = open_studio(None, "screens/chat.py")
    at.button_group(key="chat_api").set_value("responses").run()
    at.toggle(key="chat_server_state").set_value(True).run()
    at.chat_input(key="chat_input").set_value("What is the weather in Paris?").run()
    assert not at.exception, [e.message for e in at.exception]
    calls = read_trace(Path(at.sidebar.selectbox(key="trace_pick").value.split(":", 1)[1])).calls
    assert calls[1].request["previous_response_id"] == calls[0].response["id"]
    assert [i["type"] for i in calls[1].request["input"]] == ["function_call_output"]    # only the new item


def test_learn_responses_flow_is_generated_by_the_demo_model():
    from studio.viewmodels.learn_responses import responses_flow

    steps = responses_flow()
    assert [s.status for s in steps] == [200, 200, 200, 400]
    call = steps[0].response["output"][0]
    assert call["type"] == "function_call" and call["name"] == "get_weather"
    assert [i.get("type", "message") for i in steps[1].seen] == ["message", "function_call", "function_call_output"]
    assert list(steps[1].request["input"][0]) == ["type", "call_id", "output"]      # only the new item was sent
    assert steps[2].response["output"][0]["content"][0]["text"] == "Your name is Ada."
    assert steps[3].response["error"]["message"] == \
        f"No tool call found for function call output with call_id {call['call_id']}."


def test_response_chain_rows_name_the_call_each_continues():
    from studio.viewmodels.responses import response_chain_rows

    trace = read_trace(SAMPLE)
    rows = response_chain_rows(trace)
    assert [r["continues"] for r in rows] == ["", "call 0", "call 1", "call 2"]
    assert [(r["sent"], r["seen"]) for r in rows] == [(1, 1), (1, 3), (1, 5), (1, 7)]
    assert rows[1]["previous_response_id"] == trace.calls[0].response["id"]
    assert response_chain_rows(read_trace(SAMPLE_TRACES / "classic_remembers.jsonl")) == []


def test_replay_page_replays_a_responses_trace_by_item_groups(open_studio):
    at = open_studio(SAMPLE, "screens/replay.py")
    assert not at.exception, [e.message for e in at.exception]
    assert at.metric[1].label == "Rejected calls" and at.metric[1].value == "0"
    at.number_input(key="replay_responses_window").set_value(120).run()
    assert not at.exception
    assert at.metric[0].value == "1"          # call 2 (130 tokens) loses its oldest group at 120 tokens
    from studio.viewmodels.responses import replay_rows

    rows = [r for r in replay_rows(read_trace(SAMPLE), 120) if r["policy"] == "openai-truncation-auto"]
    assert [r["dropped"] for r in rows] == [0, 0, 1, 0] and all(r["rejected"] == "" for r in rows)


def test_truncated_sample_shows_silent_truncation_and_truncation_auto_replays_it():
    from agent_core.replay.responses import replay_responses
    from agent_core.serve.demo_responses import CONTEXT_WINDOW
    from agent_core.trim.items import TruncationAuto

    trace = read_trace(SAMPLE_TRACES / "responses_truncated.jsonl")
    flagged = [c.index for c in trace.calls if what_the_model_saw(trace, c.index).silently_truncated]
    assert flagged == [7, 8, 9]
    assert trace.calls[-1].response["output"][0]["content"][0]["text"] == "You have not told me your name."
    # the server's truncation, emulated at its documented window, gives the input sizes it reported
    replayed = replay_responses(trace, TruncationAuto(context_window=CONTEXT_WINDOW))
    assert [r.tokens for r in replayed] == [c.response["usage"]["input_tokens"] for c in trace.calls]
    assert [len(r.dropped) for r in replayed][:4] == [0, 0, 0, 0] and all(len(r.dropped) for r in replayed[4:])


def test_traces_page_counts_responses_input_items_not_zero_messages():
    from agent_core.trace.model import Call, Trace
    from studio.viewmodels.summary import summarize

    three = [{"role": "user", "content": "hi"}, {"type": "function_call", "call_id": "c", "name": "f",
                                                  "arguments": "{}"}, {"type": "function_call_output", "call_id": "c",
                                                                       "output": "1"}]
    reply = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
    first = Call(index=0, request={"model": "gpt-4.1", "input": three}, status=200,
                 response={"id": "resp_1", "output": [reply]})
    alone = Trace(source="t", format="chain-studio", calls=[first])
    assert summarize(alone, [], []).messages == 3          # the three items sent
    trace = Trace(source="t", format="chain-studio", calls=[
        first, Call(index=1, request={"model": "gpt-4.1", "input": "next", "previous_response_id": "resp_1"},
                    status=200)])
    assert summarize(trace, [], []).messages == 5          # 3 sent + 1 output of resp_1 + the new one
    # the sample's last call: six stored items and its new question (see the first test)
    assert summarize(read_trace(SAMPLE), [], []).messages == 7


def test_a_call_header_counts_what_its_wire_api_sends_not_zero_messages():
    """The header badge and the table: a Responses call sends input items, a Gemini call contents (counting
    ``messages`` gave 0 for both); the counts are those of the bodies as written here."""
    from agent_core.trace.model import Call
    from studio.viewmodels.timeline import conversation_size

    gemini = {"contents": [{"role": "user", "parts": [{"text": "weather?"}]},
                           {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {}}}]},
                           {"role": "user", "parts": [{"functionResponse": {"name": "w", "response": {}}}]}]}
    responses = {"model": "gpt-4.1", "input": [{"role": "user", "content": "hi"},
                                               {"type": "function_call_output", "call_id": "c", "output": "1"}]}
    anthropic = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    assert conversation_size(Call(index=0, request=gemini)) == (3, "contents")
    assert conversation_size(Call(index=0, request=responses)) == (2, "input items")
    assert conversation_size(Call(index=0, request={**responses, "input": "one string"})) == (1, "input items")
    assert conversation_size(Call(index=0, request=anthropic)) == (1, "messages")
    assert conversation_size(Call(index=0, request={"messages": 7})) == (None, "messages")
    assert [conversation_size(c)[0] for c in read_trace(SAMPLE).calls] == [1, 1, 1, 1]   # strings, then one output


def test_the_tokens_legend_names_the_usage_key_the_api_reports():
    """The Responses API reports usage.input_tokens (Chat Completions usage.prompt_tokens): the legend names the
    key the recorded responses hold, read here from the raw file."""
    import json

    from studio.viewmodels.tokens import reported_field

    raw = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    assert any("input_tokens" in json.dumps(r) for r in raw) and not any("prompt_tokens" in json.dumps(r) for r in raw)
    assert reported_field(read_trace(SAMPLE)) == "usage.input_tokens"
    assert reported_field(read_trace(SAMPLE_TRACES / "classic_remembers.jsonl")) == "usage.prompt_tokens"
