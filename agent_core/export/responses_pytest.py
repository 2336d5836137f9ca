"""A Responses API call as a standalone pytest file that re-sends it, with the chain it continues.

A request with ``previous_response_id`` only makes sense after the response it
names exists on the endpoint. The file therefore re-sends, in order, every
recorded request of that chain (each body exactly as recorded), putting the id
the endpoint returns for one step into the next step's ``previous_response_id``
(the only value changed, and the file says so). The last step is the exported
call; it must come back ``completed`` (or end with ``response.completed`` when
streamed).
"""
from __future__ import annotations

import json
from pathlib import Path

from agent_core.trace.model import Call, Trace

_TEMPLATE = '''"""Re-send call {index} of {source} (a Responses API call) and check the endpoint accepts it.

Exported by ``chain-studio export --as pytest``. Recorded outcome: {outcome}.
The request continues a chain through previous_response_id: the {steps} recorded request(s) of that chain are
re-sent in order, each body as recorded except previous_response_id, which is set to the id the endpoint
returned for the step before (the recorded ids do not exist on a new endpoint).

Endpoint: OPENAI_BASE_URL and OPENAI_API_KEY (CHAIN_STUDIO_MODEL overrides the model). With neither set,
the bundled Chain Studio demo model is started on a free port (skipped when chain-studio is not installed).
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

# The exact request bodies, as recorded, oldest first (the last one is call {index}).
CHAIN_JSON = {chain!r}
RECORDED_STATUS = {status!r}


@pytest.fixture(scope="module")
def endpoint():
    base = os.environ.get("OPENAI_BASE_URL")
    key = os.environ.get("OPENAI_API_KEY")
    if base or key:
        yield (base or "{default_base}").rstrip("/"), key or ""
        return
    demo_server = pytest.importorskip("agent_core.serve.demo_server")
    with demo_server.DemoModelServer() as server:
        yield server.base_url, ""


def _post(url, body, key):
    headers = {{"Content-Type": "application/json"}}
    if key:
        headers["Authorization"] = "Bearer " + key
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read()


def _response(content_type, raw):
    if not content_type.startswith("text/event-stream"):
        return json.loads(raw)
    events = [json.loads(line[5:]) for line in raw.decode("utf-8").splitlines() if line.startswith("data:")
              and line[5:].strip() != "[DONE]"]
    assert events and events[-1].get("type") == "response.completed", "the stream ended before response.completed"
    return events[-1]["response"]


def test_endpoint_accepts_the_recorded_chain(endpoint):
    base, key = endpoint
    previous = None
    for step, body in enumerate(json.loads(CHAIN_JSON)):
        if os.environ.get("CHAIN_STUDIO_MODEL"):
            body["model"] = os.environ["CHAIN_STUDIO_MODEL"]
        if step:
            body["previous_response_id"] = previous
        status, content_type, raw = _post(base + "/responses", body, key)
        assert status == 200, "step %d: HTTP %s: %s" % (step, status, raw[:2000].decode("utf-8", "replace"))
        reply = _response(content_type, raw)
        assert reply["status"] == "completed" and isinstance(reply["output"], list), reply
        previous = reply["id"]
'''


def chain_calls(trace: Trace, call: Call) -> list[Call]:
    """The recorded calls whose responses ``call`` continues through ``previous_response_id``, oldest first,
    ending with ``call`` (a previous response not in the trace ends the walk)."""
    by_id = {c.response.get("id"): c for c in trace.calls if isinstance(c.response, dict)
             and isinstance(c.response.get("id"), str)}
    chain = [call]
    seen = {id(call)}
    while True:
        prev = chain[0].request.get("previous_response_id") if isinstance(chain[0].request, dict) else None
        before = by_id.get(prev) if isinstance(prev, str) else None
        if before is None or id(before) in seen:
            return chain
        seen.add(id(before))
        chain.insert(0, before)


def responses_pytest(trace: Trace, call: Call, default_base: str, outcome: str) -> str:
    """The pytest file that re-sends ``call`` after the chain it continues."""
    chain = chain_calls(trace, call)
    source = (Path(trace.source).name if trace.source else "a trace").replace("\\", "/").replace('"""', "'''")
    return _TEMPLATE.format(index=call.index, source=source, outcome=outcome.replace('"""', "'''"), steps=len(chain),
                            chain=json.dumps([c.request for c in chain], ensure_ascii=False, separators=(",", ":")),
                            status=call.status, default_base=default_base)
