"""Responses API lint rules on hand-made broken inputs: exact texts (protocol-errors.md section 5, and the
threads it names) at the right ``input[N]``."""
from __future__ import annotations

from agent_core.apis.base import api_for_body, api_for_path
from agent_core.lint.scan import lint_request, lint_trace
from agent_core.trace.model import Call, Trace

USER = {"role": "user", "content": [{"type": "input_text", "text": "weather in Paris?"}]}
FC = {"type": "function_call", "id": "fc_1", "call_id": "call_A", "name": "get_weather", "arguments": '{"city":"Paris"}'}
OUT = {"type": "function_call_output", "call_id": "call_A", "output": '{"temperature_c": 21}'}
RS = {"type": "reasoning", "id": "rs_1", "summary": []}
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]


def body(*items, **extra):
    return {"model": "gpt-4.1", "input": list(items), "tools": TOOLS, **extra}


def errors(b):
    return [f for f in lint_request(b) if f.severity == "error"]


def test_the_adapter_claims_responses_bodies_and_paths():
    assert api_for_body(body(USER)).name == "responses"
    assert api_for_body({"model": "m", "input": "hi"}).name == "responses"
    assert api_for_body({"model": "m", "messages": []}).name == "chat-completions"
    assert api_for_body({"model": "text-embedding-3-small", "input": "hi", "encoding_format": "float"}).name \
        != "responses"
    assert api_for_path("http://127.0.0.1:9/v1/responses").name == "responses"


def test_a_well_formed_tool_round_is_clean():
    assert lint_request(body(USER, FC, OUT)) == []
    assert lint_request({"model": "m", "input": "hello", "instructions": "be brief"}) == []


def test_function_call_without_output():
    [f] = errors(body(USER, FC, {"role": "user", "content": "and Rome?"}))
    assert f.rule == "responses-missing-output"
    assert f.api_error == "No tool output found for function call call_A."
    assert (f.index, f.path, f.param) == (1, "input[1]", "input")


def test_output_without_call():
    [f] = errors(body(USER, OUT))
    assert f.rule == "responses-orphan-output"
    assert f.api_error == "No tool call found for function call output with call_id call_A."
    assert (f.index, f.path) == (1, "input[1].call_id")


def test_output_before_its_call_is_an_orphan_and_the_call_unanswered():
    found = {f.rule: f for f in errors(body(USER, OUT, FC))}
    assert found["responses-orphan-output"].index == 1
    assert found["responses-missing-output"].index == 2


def test_output_without_call_id_and_with_an_empty_one():
    [f] = errors(body(USER, FC, OUT, {"type": "function_call_output", "output": "x"}))
    assert (f.rule, f.index, f.param) == ("responses-missing-call-id", 3, "input[3].call_id")
    assert f.api_error == "Missing required parameter: 'input[3].call_id'."
    [g] = errors(body(USER, FC, OUT, {"type": "function_call_output", "call_id": "", "output": "x"}))
    assert g.api_error == ("Invalid 'input[3].call_id': empty string. Expected a string with minimum length 1, "
                           "but got an empty string instead.")


def test_reasoning_item_without_its_following_item():
    [f] = errors(body(USER, RS))
    assert f.api_error == "Item 'rs_1' of type 'reasoning' was provided without its required following item."
    assert f.index == 1
    [g] = errors(body(USER, RS, {"role": "user", "content": "next"}))
    assert g.rule == "responses-reasoning-without-follower"
    assert errors(body(USER, RS, FC, OUT)) == []


def test_function_call_without_its_reasoning_item_uses_the_recorded_response():
    first = Call(index=0, request=body(USER), status=200,
                 response={"id": "resp_1", "object": "response", "output": [RS, FC]})
    second = Call(index=1, request=body(USER, FC, OUT), status=200)   # rs_1 dropped by the client
    findings = lint_trace(Trace(source="t", format="chain-studio", calls=[first, second]))
    [f] = [f for f in findings if f.severity == "error"]
    assert f.rule == "responses-call-without-reasoning"
    assert f.api_error == "Item 'fc_1' of type 'function_call' was provided without its required 'reasoning' item: 'rs_1'."
    assert (f.call, f.index, f.path) == (1, 1, "input[1]")


def test_duplicate_item_ids():
    [f] = errors(body(USER, FC, OUT, dict(FC, call_id="call_B"), dict(OUT, call_id="call_B")))
    assert f.rule == "responses-duplicate-item"
    assert f.api_error == "Duplicate item found with id fc_1. Remove duplicate items from your input and try again."
    assert f.index == 3


def test_previous_response_id_with_items_the_chain_already_holds():
    msg = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": "21 C", "annotations": []}]}
    first = Call(index=0, request=body(USER), status=200, response={"id": "resp_1", "output": [FC]})
    second = Call(index=1, request=body(OUT, previous_response_id="resp_1"), status=200,
                  response={"id": "resp_2", "output": [msg]})
    # the client re-sends the whole history (with ids) and previous_response_id
    third = Call(index=2, request=body(USER, FC, OUT, msg, {"role": "user", "content": "thanks"},
                                       previous_response_id="resp_2"))
    findings = lint_trace(Trace(source="t", format="chain-studio", calls=[first, second, third]))
    assert [f for f in findings if f.call in (0, 1)] == []       # the output answers the stored call
    errs = [f for f in findings if f.call == 2 and f.severity == "error"]
    assert {f.api_error for f in errs} == {
        "Duplicate item found with id fc_1. Remove duplicate items from your input and try again.",
        "Duplicate item found with id msg_1. Remove duplicate items from your input and try again."}
    assert sorted(f.index for f in errs) == [1, 3]
    [w] = [f for f in findings if f.call == 2 and f.rule == "responses-repeated-history"]
    assert w.severity == "warning" and "resp_2" in w.message


def test_an_output_for_a_stored_call_is_not_an_orphan_when_the_chain_is_unknown():
    assert errors(body(OUT, previous_response_id="resp_not_in_this_trace")) == []


def test_every_responses_rule_is_exercised_here():
    from pathlib import Path

    from agent_core.lint.rules import RULES

    source = Path(__file__).read_text(encoding="utf-8")
    for rule in (r for r in RULES if r.startswith("responses-")):
        assert f'"{rule}"' in source.replace(source[source.index("def test_every"):], ""), rule


def test_a_pasted_responses_body_and_a_jsonl_of_them_are_linted_by_the_cli(tmp_path, capsys):
    import json

    from agent_core.cli.main import main

    one = tmp_path / "body.json"
    one.write_text(json.dumps(body(USER, OUT)), encoding="utf-8")
    assert main(["lint", str(one)]) == 1
    out = capsys.readouterr().out
    assert "responses-bodies, 1 calls" in out
    assert "No tool call found for function call output with call_id call_A." in out
    many = tmp_path / "bodies.jsonl"
    many.write_text(json.dumps(body(USER, FC, OUT)) + "\n" + json.dumps(body(USER, FC)) + "\n", encoding="utf-8")
    assert main(["lint", str(many), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "responses-jsonl"
    assert [(f["call"], f["path"]) for f in report["findings"]] == [(1, "input[1]")]
