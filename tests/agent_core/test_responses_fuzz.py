"""Hostile Responses bodies: the adapter, the linter, the effective input and the demo model never raise."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.apis.responses import RESPONSES, as_chat_messages, item_groups, items_from_chat, reply_message
from agent_core.lint.scan import lint_request, lint_trace
from agent_core.serve.demo_responses import ResponsesStore, respond
from agent_core.serve.proxy_responses import ResponsesLineage
from agent_core.trace.model import Call, Trace
from agent_core.trace.responses_chain import effective_inputs

scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.sampled_from(
    ["function_call", "function_call_output", "reasoning", "message", "user", "assistant", "call_1", "rs_1", "fc_1"])
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.sampled_from(["type", "role", "content", "call_id", "id", "name", "arguments", "output", "summary", "text"]),
    inner, max_size=5), max_leaves=20)
bodies = st.fixed_dictionaries({"input": json_values}, optional={
    "previous_response_id": json_values, "instructions": json_values, "tools": json_values})


@settings(max_examples=150, deadline=None)
@given(body=bodies, response=json_values)
def test_nothing_raises_on_hostile_bodies(body, response):
    chain = RESPONSES.chain(body)
    assert chain.api == "responses"
    lint_request(body)
    items = body["input"] if isinstance(body["input"], list) else []
    item_groups(items)
    as_chat_messages(items, body.get("instructions"))
    reply_message(response)
    items_from_chat([m for m in items if isinstance(m, dict)])
    effective_inputs([(body, response), (body, None)])
    lint_trace(Trace(source="t", format="x", calls=[Call(index=0, request=body, response=response if isinstance(
        response, dict) else None)]))
    lineage = ResponsesLineage()
    lineage.place(body, response, None)
    lineage.place(body, response, "s")
    status, _ = respond(body, ResponsesStore())
    assert status in (200, 400)
