"""Anthropic Messages rules, checked on the native body with Anthropic's own texts and locations.

A request written for ``POST /v1/messages`` is judged here when the profile is
``anthropic``: tool_use / tool_result pairing by the *next* message, results only
in user messages, the extended-thinking rules, signatures of thinking blocks
that changed between calls, and empty blocks and messages. Every text below is
quoted from a public report (``SOURCES``); locations are native paths
(``messages[3].content[1]``), the texts use Anthropic's ``messages.3.content.1``.

``ThinkingLedger`` carries what a trace showed of each signed thinking block
(from responses and earlier requests) so a later request that sends it back
changed is caught: the signature check fails if a block "differs in any way".
"""
from __future__ import annotations

import re
from typing import Any

from agent_core.apis.anthropic_messages import THINKING_TYPES, blocks
from agent_core.apis.chain import MISSING, Chain, Entry

from .finding import Finding
from .native_texts import ANTHROPIC_TEXTS as TEXTS
from .profiles import Profile
from .rules import RULES

_ID_RE = re.compile(r"^[a-zA-Z0-9_-]+$")


def _key(value: Any) -> Any:
    """An id as a set member: as sent when hashable, else its repr (ids are untrusted JSON)."""
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def _at(path: str) -> str:
    return re.sub(r"\[(\d+)\]", r".\1", path)


class ThinkingLedger:
    """Every signed thinking block a trace has shown so far: signature -> the block as first seen."""

    def __init__(self) -> None:
        self.by_signature: dict[str, dict] = {}

    def learn(self, content: Any) -> None:
        """Remember the signed thinking blocks of a response's or request's content (first sighting wins)."""
        for b in blocks(content):
            if isinstance(b, dict) and b.get("type") == "thinking" and isinstance(b.get("signature"), str):
                self.by_signature.setdefault(b["signature"], b)

    def changed(self, block: dict) -> bool:
        """Whether a sent thinking block carries a known signature but differs from the block it was issued with."""
        sig = block.get("signature")
        known = self.by_signature.get(sig) if isinstance(sig, str) else None
        return known is not None and known != block


class _Check:
    def __init__(self, prof: Profile, call: int):
        self.p, self.call, self.findings = prof, call, []

    def emit(self, rule: str, index: int | None, path: str, message: str, call_ids: list | None = None,
             variant: str | None = None, **fill: Any) -> None:
        severity = self.p.severity(rule, variant, RULES[rule].severity)
        if severity == "off":
            return
        template = TEXTS.get(f"{rule}:{variant}") if variant else None
        template = template or TEXTS.get(rule)
        self.findings.append(Finding(rule=rule, severity=severity, call=self.call, index=index,
                                     tool_call_ids=[str(i) for i in call_ids or []], message=message,
                                     api_error=template.format(**fill) if template else None, fix=RULES[rule].fix,
                                     profile=self.p.name, path=path))


def _final_assistant(entries: tuple[Entry, ...]) -> int | None:
    """The assistant turn the request continues: the last message if it is one, or the assistant message
    before a closing run of user messages that only carry tool results."""
    i = len(entries) - 1
    if i >= 0 and entries[i].role == "assistant":
        return i
    while i >= 0 and entries[i].role == "user" and entries[i].results and all(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks(entries[i].content)):
        i -= 1
    if i < len(entries) - 1 and i >= 0 and entries[i].role == "assistant":
        return i
    return None


def lint_anthropic(chain: Chain, prof: Profile, call: int = 0, check_tools: bool = True,
                   ledger: ThinkingLedger | None = None) -> list[Finding]:
    """Every finding for one Anthropic Messages request, by message index."""
    c = _Check(prof, call)
    entries = chain.entries
    if entries is None or not entries:
        c.emit("invalid-messages", None, chain.entries_path, "The request has no messages.")
        return c.findings
    has_calls = False
    for e in entries:
        n, role = e.index, e.role
        if not e.is_object:
            c.emit("invalid-role", n, e.path, f"Message {n} is not a JSON object.", role="none")
            continue
        if role not in ("user", "assistant"):
            c.emit("invalid-role", n, e.at("role"), f"Message {n} has role {role!r}; the Messages API knows only "
                   "user and assistant (system is a top-level field, tool results are user content blocks).",
                   role=role if isinstance(role, str) else "none")
        content = e.content
        last = n == len(entries) - 1
        if (content == "" or content == [] or content is MISSING or content is None) and not (
                last and role == "assistant"):
            c.emit("empty-message", n, e.at("content"), f"Message {n} has empty content.", n=n)
        for k, b in enumerate(content if isinstance(content, list) else []):
            if isinstance(b, dict) and b.get("type") == "text" and b.get("text") == "":
                c.emit("empty-text-block", n, f"{e.path}.content[{k}]", f"Text block {k} of message {n} is empty.")
        for r in e.results:
            if role != "user":
                c.emit("tool-result-outside-user", n, r.path, f"Message {n} ({role}) carries a tool_result; only "
                       "user messages may.", call_ids=[r.id])
        for t in e.calls:
            has_calls = True
            if isinstance(t.id, str) and not _ID_RE.match(t.id) or t.id is MISSING:
                c.emit("invalid-tool-call-id", n, t.at("id"), f"tool_use id {t.id!r} in message {n} does not match "
                       "^[a-zA-Z0-9_-]+$.", call_ids=[t.id], n=n, k=t.position)
        _pairing(c, entries, e)
        _thinking_order(c, e)
        if ledger is not None:
            for k, b in enumerate(content if isinstance(content, list) else []):
                if isinstance(b, dict) and b.get("type") == "thinking" and ledger.changed(b):
                    c.emit("thinking-changed", n, f"{e.path}.content[{k}]", f"The thinking block {k} of message {n} "
                           "carries a signature issued for a different block (edited, re-serialized or reordered "
                           "since the model returned it).", n=n, k=k)
    _final_thinking(c, entries, chain.thinking)
    if check_tools and has_calls and not chain.tools:
        c.emit("tools-missing-for-history", None, chain.tools_path, "The history holds tool_use blocks but the "
               "request declares no tools.")
    if ledger is not None:
        for e in entries:
            ledger.learn(e.content)
    return sorted(c.findings, key=lambda f: -1 if f.index is None else f.index)


def _pairing(c: _Check, entries: tuple[Entry, ...], e: Entry) -> None:
    n = e.index
    nxt = entries[n + 1] if n + 1 < len(entries) else None
    if e.role == "assistant" and e.calls:
        answered = {_key(r.id) for r in nxt.results} if nxt is not None and nxt.role == "user" else set()
        missing = [t.id for t in e.calls if _key(t.id) not in answered]
        if missing:
            where = "the request ends" if nxt is None else f"message {n + 1} does not answer them"
            c.emit("missing-tool-result", n, e.calls[0].path, f"The tool_use blocks of message {n} get no "
                   f"tool_result in the next message ({where}).", call_ids=missing, n=n,
                   ids=", ".join(str(i) for i in missing))
    if e.role == "user" and e.results:
        prev = entries[n - 1] if n > 0 else None
        called = {_key(t.id) for t in prev.calls} if prev is not None and prev.role == "assistant" else set()
        for r in e.results:
            if _key(r.id) not in called:
                k = int(r.path.rsplit("[", 1)[1][:-1])
                c.emit("unknown-tool-call-id", n, r.at("id"), f"The tool_result at message {n}, block {k} answers "
                       f"{r.id!r}, which the previous message did not call.", call_ids=[r.id], n=n, k=k, id=r.id)


def _thinking_order(c: _Check, e: Entry) -> None:
    content = e.content
    if e.role != "assistant" or not isinstance(content, list) or e.reasoning is MISSING or not content:
        return
    first = content[0].get("type") if isinstance(content[0], dict) else None
    if first not in THINKING_TYPES:
        c.emit("thinking-not-first", e.index, f"{e.path}.content[0]", f"Assistant message {e.index} holds thinking "
               f"blocks but starts with a {first!r} block.", variant="order", n=e.index, type=first)


def _final_thinking(c: _Check, entries: tuple[Entry, ...], thinking: bool) -> None:
    i = _final_assistant(entries)
    if i is None:
        return
    e = entries[i]
    content = blocks(e.content)
    first = content[0].get("type") if content and isinstance(content[0], dict) else "nothing"
    if thinking and first not in THINKING_TYPES and not any(
            f.rule == "thinking-not-first" and f.index == i for f in c.findings):
        c.emit("thinking-not-first", i, f"{e.path}.content[0]", f"Thinking is on and the final assistant turn "
               f"(message {i}) does not start with a thinking block.", n=i, type=first)
    elif not thinking and e.reasoning is not MISSING:
        k = next(k for k, b in enumerate(content) if isinstance(b, dict) and b.get("type") in THINKING_TYPES)
        c.emit("thinking-when-disabled", i, f"{e.path}.content[{k}]", f"Thinking is off but the final assistant "
               f"turn (message {i}) holds a thinking block.", n=i, k=k)
