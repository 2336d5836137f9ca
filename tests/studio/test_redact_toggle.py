"""The sidebar's Redact PII switch hides personal data on every page, and switching back shows it again."""
from __future__ import annotations

import json

from conftest import OTHER_PAGES, PAGES, walk

from agent_core.core.msg import Msg
from agent_core.trace.events import CallAttempt
from agent_core.trace.writer import TraceWriter

PHONE = "13812345678"
EMAIL = "xiaoming@example.com"


def _shown(at) -> str:
    parts = []
    for node in walk(at._tree):
        for attr in ("value", "body", "label"):
            value = getattr(node, attr, None)
            if isinstance(value, str):
                parts.append(value)
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
    return "\n".join(parts)


def test_redact_switch(open_studio, tmp_path):
    path = tmp_path / "pii.jsonl"
    user = Msg(role="user", content=f"我的手机是 {PHONE}，邮箱 {EMAIL}")
    with TraceWriter(path) as w:
        w.message_added(user)
        w.call_attempt(CallAttempt(call=0, attempt=1, method="POST", url="http://127.0.0.1:9/v1/chat/completions",
                                   request_body={"model": "gpt-4o", "messages": [user.to_openai()]}, status=200,
                                   response_body={"choices": [{"index": 0, "message": {"role": "assistant",
                                                  "content": f"好的，我会打 {PHONE}"}, "finish_reason": "stop"}]}))
    at = open_studio(path, "screens/timeline.py")
    assert PHONE in _shown(at)
    at.sidebar.toggle(key="redact_pii").set_value(True).run()
    for page in list(PAGES) + list(OTHER_PAGES):
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        shown = _shown(at)
        assert PHONE not in shown and EMAIL not in shown, page
    at.switch_page("screens/timeline.py").run()
    assert "<PHONE_1>" in _shown(at) or "PHONE_1" in _shown(at)
    at.sidebar.toggle(key="redact_pii").set_value(False).run()
    assert PHONE in _shown(at)
    assert json.loads(path.read_text().splitlines()[1])["value"]["content"].count(PHONE) == 1   # file untouched
