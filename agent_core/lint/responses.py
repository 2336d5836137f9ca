"""Lint rules for the Responses API: pairing of ``function_call`` / ``function_call_output`` items,
reasoning items and their followers, duplicate item ids, and history re-sent after ``previous_response_id``.

The rules run on the *effective* input (``trace/responses_chain.py``): the
stored chain of the previous response plus this request's items, because
that is what the server checks (an output may answer a call the stored chain
holds). Findings about an item this request sent point at ``input[N]``; about
a stored item, at where it was recorded (``resp_….output[0]``, ``call 2 input[1]``).
When the stored chain is not in the trace, rules that need it are skipped,
never guessed.

The exact texts and their sources are in ``TEXTS`` (from
../shared/design/protocol-errors.md section 5, and the threads named there);
they are OpenAI's, the one provider of this API, so they do not vary by profile.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_core.apis.responses import item_type, part_text
from agent_core.trace.model import Trace
from agent_core.trace.responses_chain import (
    SENT,
    EffectiveInput,
    SeenItem,
    call_exchanges,
    effective_inputs,
    output_reasoning_pairs,
)

from .finding import Finding
from .profiles import Profile
from .rules import RULES

TEXTS: dict[str, tuple[str, str]] = {
    "responses-missing-output": ("No tool output found for function call {id}.",
                                 "CLIProxyAPI #2368; tjardoo/openai-client #124"),
    "responses-orphan-output": ("No tool call found for function call output with call_id {id}.",
                                "continue #10092; microsoft/vscode #320060"),
    "responses-missing-call-id": ("Missing required parameter: '{param}'.",
                                  "openai/codex #42088 (OpenAI's missing-parameter wording)"),
    "responses-missing-call-id:empty": (("Invalid '{param}': empty string. Expected a string with minimum length 1, "
                                         "but got an empty string instead."), "BigPizzaV3/CodexPlusPlus #315"),
    "responses-reasoning-without-follower": (
        "Item '{id}' of type 'reasoning' was provided without its required following item.",
        "continue #8933; vercel/ai #7099"),
    "responses-call-without-reasoning": (
        "Item '{id}' of type 'function_call' was provided without its required 'reasoning' item: '{rs}'.",
        "cline #12242; continue #10018; langchainjs PR #9082"),
    "responses-duplicate-item": (("Duplicate item found with id {id}. Remove duplicate items from your input and "
                                  "try again."), "OpenRouterTeam/ai-sdk-provider #254"),
}
"""rule id (or ``rule:variant``) -> (OpenAI's exact text with ``{placeholders}``, where it is documented)."""


class _Check:
    def __init__(self, profile: Profile, call: int):
        self.profile, self.call = profile, call
        self.findings: list[Finding] = []

    def emit(self, rule: str, seen: SeenItem | None, ids: list[str], message: str, *, path: str,
             variant: str | None = None, fill: dict | None = None, param: str | None = "input",
             code: str | None = None) -> None:
        info = RULES[rule]
        severity = self.profile.severity(rule, variant, info.severity)
        if severity == "off":
            return
        text = TEXTS.get(f"{rule}:{variant}") or TEXTS.get(rule)
        self.findings.append(Finding(rule=rule, severity=severity, call=self.call,
                                     index=seen.index if seen is not None else None,
                                     tool_call_ids=[str(i) for i in ids], message=message,
                                     api_error=text[0].format(**(fill or {})) if text else None, fix=info.fix,
                                     profile=self.profile.name, param=param, code=code, path=path))


def _where(s: SeenItem) -> str:
    return s.path if s.origin == SENT else f"{s.path} ({s.origin})"


def _item_id(item: Any) -> str | None:
    value = item.get("id") if isinstance(item, dict) else None
    return value if isinstance(value, str) and value else None


def _same(a: Any, b: Any) -> bool:
    """Whether two items say the same thing (ids aside): a message by role and text, a call by call_id."""
    ka, kb = item_type(a), item_type(b)
    if ka != kb or ka is None:
        return False
    if ka == "message":
        return a.get("role") == b.get("role") and part_text(a.get("content")) == part_text(b.get("content"))
    if ka in ("function_call", "function_call_output"):
        return a.get("call_id") == b.get("call_id") and a.get("call_id") is not None
    return _item_id(a) is not None and _item_id(a) == _item_id(b)


def lint_effective(seen: EffectiveInput, profile: Profile, *, reasoning_pairs: dict[str, str] | None = None,
                   call: int | None = None) -> list[Finding]:
    """Every finding for one call's effective input, in item order."""
    check = _Check(profile, seen.call if call is None else call)
    items = seen.items
    known_chain = seen.unresolved is None
    calls_before: set[str] = set()
    answered: set[str] = set()
    by_id: dict[str, SeenItem] = {}
    pairs = reasoning_pairs or {}
    for pos, s in enumerate(items):
        item, kind = s.item, item_type(s.item)
        iid = _item_id(item)
        if iid is not None:
            if iid in by_id:
                first = by_id[iid]
                what = "repeats an item the stored chain already holds" if first.origin != SENT and s.origin == SENT \
                    else "has the same id as an earlier item"
                check.emit("responses-duplicate-item", s, [], f"{_where(s)} {what}: id {iid!r}, first at "
                           f"{_where(first)}.", path=s.path, fill={"id": iid})
            else:
                by_id[iid] = s
        if kind == "function_call":
            cid = item.get("call_id")
            if isinstance(cid, str) and cid:
                calls_before.add(cid)
            rs = pairs.get(iid) if iid else None
            before = items[pos - 1].item if pos else None
            if rs is not None and _item_id(before) != rs:
                check.emit("responses-call-without-reasoning", s, [cid] if isinstance(cid, str) else [],
                           f"{_where(s)} is the function_call {iid!r} whose response returned it after the reasoning "
                           f"item {rs!r}, which is not right before it here.", path=s.path, fill={"id": iid, "rs": rs})
        elif kind == "function_call_output":
            cid = item.get("call_id")
            if not isinstance(cid, str) or not cid:
                param = f"{s.path}.call_id"
                check.emit("responses-missing-call-id", s, [], f"The function_call_output at {_where(s)} has "
                           f"{'an empty' if cid == '' else 'no'} call_id, so it answers no call.", path=param,
                           variant="empty" if cid == "" else None, fill={"param": param}, param=param,
                           code="empty_string" if cid == "" else "missing_required_parameter")
                continue
            if cid in calls_before:
                answered.add(cid)
            elif known_chain:
                check.emit("responses-orphan-output", s, [cid], f"The function_call_output at {_where(s)} answers "
                           f"{cid!r}, but no function_call with that call_id comes before it.", path=f"{s.path}.call_id",
                           fill={"id": cid})
        elif kind == "reasoning":
            nxt = items[pos + 1].item if pos + 1 < len(items) else None
            follows = item_type(nxt) == "function_call" or (item_type(nxt) == "message" and nxt.get("role") ==
                                                           "assistant")
            if not follows:
                what = "it is the last item" if nxt is None else f"the next item is a {item_type(nxt) or 'non-item'}"
                check.emit("responses-reasoning-without-follower", s, [], f"The reasoning item {iid or '(no id)'} at "
                           f"{_where(s)} is not followed by the output item it belongs to ({what}).", path=s.path,
                           fill={"id": iid or ""})
    for pos, s in enumerate(items):
        if item_type(s.item) == "function_call":
            cid = s.item.get("call_id")
            if isinstance(cid, str) and cid and cid not in answered:
                check.emit("responses-missing-output", s, [cid], f"The function_call {cid!r} at {_where(s)} has no "
                           "function_call_output with its call_id after it.", path=s.path, fill={"id": cid})
                answered.add(cid)
    _repeated_history(check, seen)
    return check.findings


def _repeated_history(check: _Check, seen: EffectiveInput) -> None:
    """A request that continues a stored chain and re-sends its first items: the model sees them twice."""
    stored = [s for s in seen.items if s.origin != SENT]
    sent = [s for s in seen.items if s.origin == SENT]
    k = 0
    while k < min(len(stored), len(sent)) and _same(stored[k].item, sent[k].item):
        k += 1
    if k and seen.previous_response_id:
        check.emit("responses-repeated-history", sent[0], [], f"input[0..{k - 1}] repeat the first {k} item(s) of "
                   f"the stored chain of {seen.previous_response_id}: with previous_response_id the server already "
                   "holds them, so the model sees them twice.", path="input", param="previous_response_id")


def lint_responses_request(body: dict, profile: Profile, call: int = 0) -> list[Finding]:
    """Findings for one Responses body on its own (a stored chain it continues is unknown: rules needing it skip)."""
    seen = effective_inputs([(body, None)])[0]
    return lint_effective(seen, profile, call=call) if seen is not None else []


def lint_responses_trace(trace: Trace, profile: Profile) -> list[Finding]:
    """Findings for every Responses call of a trace, each on its effective input."""
    calls = trace.calls
    inputs = effective_inputs(call_exchanges(calls))
    pairs = output_reasoning_pairs(c.response for c in calls)
    out: list[Finding] = []
    for position, (c, seen) in enumerate(zip(calls, inputs)):
        if seen is not None:
            out.extend(lint_effective(seen, profile, reasoning_pairs=pairs,
                                      call=c.index if isinstance(c.index, int) else position))
    return out


def is_responses_call(request: Any) -> bool:
    """Whether a recorded request body is a Responses API request."""
    from agent_core.apis.responses import RESPONSES

    return RESPONSES.claims(request)


def rule_ids() -> Iterable[str]:
    """The rule ids this module emits (their texts and sources are in ``TEXTS``)."""
    return [k for k in TEXTS if ":" not in k] + ["responses-repeated-history"]
