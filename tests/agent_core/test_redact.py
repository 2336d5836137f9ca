"""PII redaction: what is caught, what is not (checksums), stable placeholders, no mutation."""
from __future__ import annotations

import copy
import json

import pytest

from agent_core.export.redact import (
    RedactionState,
    luhn_valid,
    redact_text,
    redact_trace,
    redact_value,
    valid_id_card,
)
from agent_core.ingest.payload_log import trace_from_requests

_W = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def id_card(first17: str) -> str:
    return first17 + "10X98765432"[sum(int(d) * w for d, w in zip(first17, _W)) % 11]


def luhn_card(prefix: str, length: int) -> str:
    body = prefix + "3" * (length - len(prefix) - 1)
    return next(body + str(d) for d in range(10) if luhn_valid(body + str(d)))


VALID_ID = id_card("11010519491231002")          # the check digit is X
VALID_ID_2 = id_card("44030419900307123")
UNIONPAY = luhn_card("622202", 19)
VISA = luhn_card("4", 16)


def test_id_checksum_and_luhn_helpers():
    assert VALID_ID.endswith("X") and valid_id_card(VALID_ID) and valid_id_card(VALID_ID.lower())
    assert not valid_id_card(VALID_ID[:-1] + "1")            # wrong check digit
    assert not valid_id_card(id_card("11010519491332002"))   # month 13: checksum fine, date impossible
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")


@pytest.mark.parametrize("text", [
    "我的手机13800138000", "电话：+86 13800138000", "+8613800138000", "0086-138-0013-8000", "138 0013 8000",
    "call me at 138-0013-8000.",
])
def test_chinese_mobile_forms_are_one_phone(text):
    state = RedactionState()
    out = redact_text(text, state)
    assert "<PHONE_1>" in out and "138" not in out and "0013" not in out
    assert redact_text("13800138000", state) == "<PHONE_1>"      # the same number, the same placeholder


@pytest.mark.parametrize("text", [
    "12800138000",            # no mobile prefix 12x
    "1380013800",             # 10 digits
    "138001380001",           # 12 digits
    "订单号213800138000",       # part of a longer number
    "call_13800138000abc",    # glued to letters: an id, not a phone
    "version 1.2.3, 2026-12-02 12:30:45, 3.14159265358",
    "ts 1700000000000",       # a millisecond timestamp is not a card (cards start 2-6)
])
def test_things_that_are_not_pii_are_kept(text):
    assert redact_text(text) == text


def test_other_phone_shapes():
    out = redact_text("Office (555) 123-4567, mobile +1 415 555 2671, 北京 010-12345678, US 415-555-2671")
    assert out == "Office <PHONE_1>, mobile <PHONE_2>, 北京 <PHONE_3>, US <PHONE_4>"


def test_emails_case_insensitive_and_stable():
    state = RedactionState()
    assert redact_text("写信给Zhang.San@Example.COM或 ops+alerts@mail.example.org", state) == \
        "写信给<EMAIL_1>或 <EMAIL_2>"
    assert redact_text("zhang.san@example.com", state) == "<EMAIL_1>"
    assert redact_text("not an email: a@b, @handle, x@y.z1") == "not an email: a@b, @handle, x@y.z1"


def test_id_cards_only_with_a_valid_checksum():
    state = RedactionState()
    text = f"身份证{VALID_ID}，另一个 {VALID_ID_2.lower()}，错的 {VALID_ID[:-1]}1，日期错 {id_card('11010519491332002')}"
    out = redact_text(text, state)
    assert out == f"身份证<ID_CARD_1>，另一个 <ID_CARD_2>，错的 {VALID_ID[:-1]}1，日期错 {id_card('11010519491332002')}"
    assert redact_text(VALID_ID.lower(), state) == "<ID_CARD_1>"
    assert state.summary() == {"ID_CARD": 2}


def test_bank_cards_only_when_luhn_valid():
    spaced = " ".join(VISA[i:i + 4] for i in range(0, 16, 4))
    bad = VISA[:-1] + str((int(VISA[-1]) + 1) % 10)
    out = redact_text(f"卡号{UNIONPAY}; visa {spaced}; same {VISA}; typo {bad}; amex 3782 822463 10005")
    assert out == f"卡号<BANK_CARD_1>; visa <BANK_CARD_2>; same <BANK_CARD_2>; typo {bad}; amex <BANK_CARD_3>"


def test_api_keys_and_tokens():
    text = ('key sk-proj-AbCdEf0123456789_xyzXYZ and sk-abcdefghijklmnopqrstuvwx; '
            'Authorization: Bearer eyJhbGciOi.J9-abc_DEF; api_key="hunter2hunter2"; {"password": "s3cr3t-pw"}; '
            'token=abcdef123456&x=1; ghp_0123456789abcdefghijABCDEFGHIJ012345')
    out = redact_text(text)
    assert out == ('key <API_KEY_1> and <API_KEY_2>; Authorization: Bearer <API_KEY_3>; api_key="<API_KEY_4>"; '
                   '{"password": "<API_KEY_5>"}; token=<API_KEY_6>&x=1; <API_KEY_7>')
    # a short word after "token:" in prose, and the usage field names, are not keys
    assert redact_text('"max_tokens": 100, "prompt_tokens": 12, token: ok') == \
        '"max_tokens": 100, "prompt_tokens": 12, token: ok'


def test_redact_value_walks_json_without_mutating():
    value = {"messages": [{"role": "user", "content": [{"type": "text", "text": "我是张三 13800138000"}]},
                          {"role": "tool", "tool_call_id": "call_abc", "content": json.dumps(
                              {"email": "z@example.com", "phone": 13800138000}, ensure_ascii=False)}],
             "metadata": {"phone": 13800138000, "count": 12345678901234567890, "ok": True, "score": 1.5}}
    before = copy.deepcopy(value)
    state = RedactionState()
    out = redact_value(value, state)
    assert value == before
    assert out["messages"][0]["content"][0]["text"] == "我是张三 <PHONE_1>"
    assert json.loads(out["messages"][1]["content"]) == {"email": "<EMAIL_1>", "phone": "<PHONE_1>"}
    assert out["messages"][1]["tool_call_id"] == "call_abc"
    assert out["metadata"] == {"phone": "<PHONE_1>", "count": 12345678901234567890, "ok": True, "score": 1.5}
    assert state.summary() == {"EMAIL": 1, "PHONE": 1} and state.replacements == 4


def test_redact_trace_keeps_structure_and_ids():
    pii = f"我叫张三，电话 13800138000，邮箱 zs@example.com，身份证 {VALID_ID}"
    call_ = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": json.dumps(
        {"phone": "+86 138 0013 8000"})}}
    b0 = {"model": "m", "messages": [{"role": "user", "content": pii}]}
    b1 = {"model": "m", "messages": [{"role": "user", "content": pii},
                                     {"role": "assistant", "content": None, "tool_calls": [call_]},
                                     {"role": "tool", "tool_call_id": "call_1", "content": f"card {UNIONPAY}"}]}
    responses = [{"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call_]}}]},
                 {"choices": [{"message": {"role": "assistant", "content": "已发送到 zs@example.com"}}]}]
    trace = trace_from_requests([b0, b1], responses)
    original = json.dumps([c.request for c in trace.calls] + [m.to_openai() for m in trace.stream], ensure_ascii=False)
    red = redact_trace(trace)
    assert json.dumps([c.request for c in trace.calls] + [m.to_openai() for m in trace.stream],
                      ensure_ascii=False) == original          # input untouched
    dumped = json.dumps([c.request for c in red.calls] + [c.response for c in red.calls] +
                        [m.to_openai() for m in red.stream] + [a.request_body for c in red.calls for a in c.attempts],
                        ensure_ascii=False)
    for secret in ("13800138000", "138 0013 8000", "zs@example.com", VALID_ID, UNIONPAY):
        assert secret not in dumped
    assert red.stream[0].content == "我叫张三，电话 <PHONE_1>，邮箱 <EMAIL_1>，身份证 <ID_CARD_1>"
    assert json.loads(red.stream[1].tool_calls[0]["function"]["arguments"]) == {"phone": "<PHONE_1>"}
    assert red.calls[1].reply["content"] == "已发送到 <EMAIL_1>"
    assert red.meta["redaction"] == {"EMAIL": 1, "ID_CARD": 1, "BANK_CARD": 1, "PHONE": 1}
    # same ids, and each still resolves to exactly its (redacted) payload message
    assert [m.id for m in red.stream] == [m.id for m in trace.stream]
    table = red.message_by_id()
    assert [[table[i].to_openai() for i in c.message_ids] for c in red.calls] == [c.messages for c in red.calls]
    assert red.calls[1].messages[2]["tool_call_id"] == red.calls[1].messages[1]["tool_calls"][0]["id"] == "call_1"


def test_absurdly_deep_values_never_leak_or_crash():
    deep = json.loads("[" * 950 + '"13800138000"' + "]" * 950)
    out = redact_value(deep)
    assert "13800138000" not in json.dumps(out)
