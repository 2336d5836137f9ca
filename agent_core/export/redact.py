"""PII redaction with stable placeholders, so a trace can be shared.

Phone numbers (Chinese mobiles ``1[3-9]`` + 9 digits with or without ``+86``,
Chinese landlines, international ``+CC`` numbers, ``(555) 123-4567`` style),
emails, Chinese resident ID numbers (18 characters, checksum validated), bank
card numbers (13-19 digits starting 2-6, Luhn validated) and API keys
(``sk-...``/``sk-proj-...``, ``Bearer`` tokens, ``api_key=...``-style pairs,
GitHub/AWS/Google/Slack token shapes) become ``<PHONE_1>``, ``<EMAIL_2>``,
``<ID_CARD_1>``, ``<BANK_CARD_1>``, ``<API_KEY_1>``.

The same value gets the same placeholder everywhere in a trace (one
``RedactionState`` per trace), so the structure survives: a user who gave
the same number twice is still seen giving the same number. Values are
compared canonically (``+86 138-0013-8000`` and ``13800138000`` are one
phone, emails are case-insensitive). Nothing is mutated: every function
returns new objects. Keys of JSON objects are left alone (they are schema,
not data); ids redact deterministically, so tool calls still pair with results.

Checksums keep false positives down: an 18-digit number that fails the ID
checksum is not an ID, a 16-digit number that fails Luhn is not a card, and
digits glued to letters (``call_4485...``, hashes) are never matched.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Callable

from agent_core.core.msg import Msg
from agent_core.trace.events import CallAttempt
from agent_core.trace.model import Trace

KINDS = ("API_KEY", "EMAIL", "ID_CARD", "BANK_CARD", "PHONE")
_PLACEHOLDER = re.compile(r"<(?:API_KEY|EMAIL|ID_CARD|BANK_CARD|PHONE)_\d+>")
# ASCII boundaries: CJK text around a number is fine ("电话13800138000"), letters and digits are not.
_L = r"(?<![0-9A-Za-z_])(?<!\d\.)"        # and not the decimals of a number (3.14159265358)
_R = r"(?![0-9A-Za-z_])(?!\.\d)"

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def valid_id_card(number: str) -> bool:
    """A Chinese resident ID: 17 digits + check digit (ISO 7064 MOD 11-2), a real birth date."""
    number = number.upper()
    if not re.fullmatch(r"[1-9]\d{16}[\dX]", number):
        return False
    try:
        born = date(int(number[6:10]), int(number[10:12]), int(number[12:14]))
    except ValueError:
        return False
    if not 1900 <= born.year <= date.today().year:
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS))
    return _ID_CHECK[total % 11] == number[17]


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _phone_key(text: str) -> str:
    d = _digits(text)
    for prefix in ("0086", "86"):   # +86 138..., 0086 138... and 138... are one number
        if len(d) == 11 + len(prefix) and d.startswith(prefix) and d[len(prefix)] == "1":
            return d[len(prefix):]
    return d


@dataclass
class _Rule:
    kind: str
    pattern: re.Pattern
    group: int = 0
    """The group that holds the secret (the rest, such as ``api_key=``, stays)."""
    check: Callable[[str], bool] = lambda s: True
    key: Callable[[str], str] = lambda s: s


_RULES: list[_Rule] = [
    # keys first: they may contain digit runs that look like cards or phones
    _Rule("API_KEY", re.compile(r"(?<![0-9A-Za-z_-])(sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,})")),
    _Rule("API_KEY", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{8,}=*)"), group=1),
    _Rule("API_KEY", re.compile(
        r"(?i)((?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret|password|passwd|token)"
        r"[\"']?\s*[:=]\s*[\"']?)([^\s\"'&,;<>]{6,})"), group=2,
        check=lambda s: not _PLACEHOLDER.fullmatch(s) and s.lower() not in ("null", "none", "true", "false")),
    _Rule("API_KEY", re.compile(r"\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}|"
                                r"AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35}|xox[abprs]-[A-Za-z0-9\-]{10,})")),
    _Rule("EMAIL", re.compile(r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,})"),
          key=str.lower),
    _Rule("ID_CARD", re.compile(_L + r"([1-9]\d{16}[\dXx])" + _R), check=valid_id_card, key=str.upper),
    _Rule("BANK_CARD", re.compile(_L + r"([2-6]\d{12,18}|[2-6]\d{3}([ -])\d{4}\2\d{4}\2\d{4}(?:\2\d{1,3})?"
                                       r"|3\d{3}([ -])\d{6}\3\d{5})" + _R, re.ASCII), group=1,
          check=lambda s: 13 <= len(_digits(s)) <= 19 and luhn_valid(_digits(s)), key=_digits),
    _Rule("PHONE", re.compile(_L + r"((?:\+|00)?86[ -]?)?(1[3-9]\d[ -]?\d{4}[ -]?\d{4})" + _R), group=0,
          key=_phone_key),
    _Rule("PHONE", re.compile(_L + r"(0\d{2,3}-\d{7,8})" + _R), key=_digits),
    _Rule("PHONE", re.compile(r"(?<![0-9A-Za-z_+])(\+\d{1,3}[ -]?\(?\d{1,4}\)?(?:[ -]?\d{2,4}){2,4})" + _R),
          check=lambda s: 8 <= len(_digits(s)) <= 15, key=_digits),
    _Rule("PHONE", re.compile(_L + r"(\(\d{3}\) ?\d{3}-\d{4}|\d{3}-\d{3}-\d{4})" + _R), key=_digits),
]


@dataclass
class RedactionState:
    """Placeholders handed out so far: one state per trace keeps them stable."""

    mapping: dict[tuple[str, str], str] = field(default_factory=dict)
    """(kind, canonical value) -> placeholder."""
    counts: dict[str, int] = field(default_factory=dict)
    """How many distinct values of each kind were replaced."""
    replacements: int = 0
    """How many occurrences were replaced in total."""
    _seen: dict[str, tuple[str, int]] = field(default_factory=dict, repr=False)
    """Text already redacted (a trace repeats each message in every later payload)."""

    def placeholder(self, kind: str, key: str) -> str:
        found = self.mapping.get((kind, key))
        if found is None:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            found = self.mapping[(kind, key)] = f"<{kind}_{self.counts[kind]}>"
        self.replacements += 1
        return found

    def summary(self) -> dict[str, int]:
        """Distinct values per kind (never the values themselves)."""
        return {k: self.counts[k] for k in KINDS if k in self.counts}


def _findings(text: str) -> list[tuple[int, int, str, str]]:
    """Non-overlapping (start, end, kind, canonical value) spans, in reading order.

    Every rule looks at the original text; where spans overlap, the earlier one
    wins, and at the same start the rule listed first (keys before numbers).
    """
    spans = []
    for priority, rule in enumerate(_RULES):
        for m in rule.pattern.finditer(text):
            value = m.group(rule.group) if rule.group else m.group(0)
            if not value or _PLACEHOLDER.fullmatch(value) or not rule.check(value):
                continue
            g = rule.group
            spans.append((m.start(g), m.end(g), priority, rule.kind, rule.key(value)))
    spans.sort(key=lambda s: (s[0], s[2]))
    out, end = [], -1
    for start, stop, _, kind, key in spans:
        if start >= end:
            out.append((start, stop, kind, key))
            end = stop
    return out


def redact_text(text: str, state: RedactionState | None = None) -> str:
    """``text`` with every detected value replaced by its placeholder (numbered in reading order)."""
    state = state if state is not None else RedactionState()
    cached = state._seen.get(text)
    if cached is not None:
        state.replacements += cached[1]
        return cached[0]
    found = _findings(text)
    out = text
    if found:
        parts, last = [], 0
        for start, stop, kind, key in found:
            parts.append(text[last:start])
            parts.append(state.placeholder(kind, key))
            last = stop
        parts.append(text[last:])
        out = "".join(parts)
    if len(text) < 1_000_000:
        state._seen[text] = (out, len(found))
    return out


def redact_value(obj: Any, state: RedactionState | None = None, _depth: int = 0) -> Any:
    """A redacted deep copy of any JSON-like value: strings are redacted, keys and ids kept.

    Integers that are a phone or card number on their own (``{"phone": 13800138000}``)
    become the placeholder string.
    """
    state = state if state is not None else RedactionState()
    if _depth > 100:
        # absurdly deep: keep no structure rather than risk a RecursionError or an unredacted value
        try:
            return redact_text(json.dumps(obj, ensure_ascii=False), state)
        except (TypeError, ValueError, RecursionError):
            return "<REDACTED_DEEP_VALUE>"
    if isinstance(obj, str):
        return _redact_string(obj, state, _depth)
    if isinstance(obj, bool) or obj is None or isinstance(obj, float):
        return obj
    if isinstance(obj, int):
        text = str(obj)
        if len(text) >= 11:
            redacted = redact_text(text, state)
            return obj if redacted == text else redacted
        return obj
    if isinstance(obj, list):
        return [redact_value(v, state, _depth + 1) for v in obj]
    if isinstance(obj, tuple):
        return tuple(redact_value(v, state, _depth + 1) for v in obj)
    if isinstance(obj, dict):
        # values only: keys are schema. Ids redact deterministically, so call/result pairs still match.
        return {k: redact_value(v, state, _depth + 1) for k, v in obj.items()}
    return copy.deepcopy(obj)


def _redact_string(text: str, state: RedactionState, depth: int) -> str:
    """A string holding JSON (tool arguments, tool results) is redacted as JSON, so it stays valid."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "[") and len(text) < 8_000_000:
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, (dict, list)):
            redacted = redact_value(parsed, state, depth + 1)
            if redacted == parsed:
                return text
            compact = not re.search(r'[,:] ', text)
            return json.dumps(redacted, ensure_ascii=not _NON_ASCII.search(text) and "\\u" in text,
                              separators=(",", ":") if compact else None)
    return redact_text(text, state)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def redact_message(msg: Msg, state: RedactionState) -> Msg:
    """The same message (id, parent, time, key order) with its content redacted."""
    return replace(msg, content=redact_value(msg.content, state), name=redact_value(msg.name, state),
                   tool_calls=redact_value(msg.tool_calls, state),
                   extra=tuple((k, redact_value(v, state)) for k, v in msg.extra))


def _redact_attempt(a: CallAttempt, state: RedactionState) -> CallAttempt:
    return replace(a, url=redact_text(a.url, state) if a.url else a.url,
                   request_body=redact_value(a.request_body, state),
                   response_body=redact_value(a.response_body, state), error=redact_value(a.error, state),
                   message_ids=list(a.message_ids) if a.message_ids is not None else None)


def redact_trace(trace: Trace, state: RedactionState | None = None) -> Trace:
    """A redacted copy of a whole trace; ``meta["redaction"]`` holds the counts per kind.

    Private ``meta`` entries (``_``-prefixed caches of raw bodies) are dropped.

    Stream messages and payloads share one state, so a message and its copy
    in a payload redact identically and ``message_ids`` still resolve.
    """
    state = state if state is not None else RedactionState()
    stream = [redact_message(m, state) for m in trace.stream]
    policy = {k: redact_message(m, state) for k, m in trace.policy_messages.items()}
    calls = [replace(c, request=redact_value(c.request, state), response=redact_value(c.response, state),
                     error=redact_value(c.error, state), message_ids=list(c.message_ids),
                     attempts=[_redact_attempt(a, state) for a in c.attempts]) for c in trace.calls]
    out = Trace(source=trace.source, format=trace.format, calls=calls, stream=stream,
                events=[replace(e, event=replace(e.event, reason=redact_text(e.event.reason, state),
                                                 removed=list(e.event.removed), added=list(e.event.added),
                                                 params=redact_value(e.event.params, state)))
                        for e in trace.events],
                meta=redact_value({k: v for k, v in trace.meta.items() if not k.startswith("_")}, state),
                warnings=[redact_text(w, state) for w in trace.warnings],
                policy_messages=policy)
    out.meta["redaction"] = state.summary()
    return out

