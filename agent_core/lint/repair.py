"""Repair a broken payload: a fixed copy plus the list of edits that made it.

Strategies (``STRATEGIES``) differ in how they restore call/result pairing:

- ``drop``: drop every tool message that answers nothing in its place
  (orphans, unknown ids, duplicate results, late results) and every call
  left without a result; an assistant message left empty goes too.
- ``placeholder``: keep every call. A late result (one separated from its
  call by another message) moves back next to its call; a call with no result
  anywhere gets a placeholder result. Orphans and duplicates are dropped.
- ``move``: move late results next to their call (the same as moving the
  interleaved message after the tool run); what cannot be moved is dropped
  as in ``drop``.

All strategies also fix the per-message errors the same way: ``content: null``
becomes ``""``, argument objects are serialised, invalid function names and
over-long ids are rewritten consistently, ``tool_calls: []`` is removed,
unknown roles and non-objects are dropped. The result lints without errors
under the profile given (openai by default). The input is never modified.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from agent_core.core.errors import ChainStudioError, UnknownChoiceError

from .finding import Finding
from .profiles import get_profile
from .rules import VALID_ROLES
from .scan import lint_payload

STRATEGIES = ("drop", "placeholder", "move")
PLACEHOLDER = "[no result recorded for this call: inserted by chain-studio repair]"
_NAME_BAD = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True)
class Edit:
    """One change the repair made."""

    action: str
    """drop | insert | move | set."""
    index: int | None
    """Message index in the ORIGINAL payload (for insert: the call's assistant message)."""
    rule: str
    """The lint rule the edit fixes."""
    tool_call_ids: tuple[str, ...] = ()
    """Ids involved."""
    detail: str = ""
    """One plain sentence."""

    def __str__(self) -> str:
        where = f"message {self.index}" if self.index is not None else "payload"
        return f"{self.action} {where} [{self.rule}]: {self.detail}"

    def export(self) -> dict:
        """Plain JSON-ready dict (the studio's repair view uses it)."""
        return {"action": self.action, "index": self.index, "rule": self.rule,
                "tool_call_ids": list(self.tool_call_ids), "detail": self.detail}


@dataclass
class RepairResult:
    """The repaired payload and how it was obtained."""

    messages: list
    """The fixed messages (new objects)."""
    edits: list[Edit] = field(default_factory=list)
    """Every change, in payload order."""
    tools: list | None = None
    """The tools list with invalid names fixed (None when none was given)."""


def _fix_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        return "unnamed_tool"
    return _NAME_BAD.sub("_", name)


@dataclass
class _Pairing:
    """Which result answers which call, by position in the cleaned message list."""

    owner_of: dict[int, int] = field(default_factory=dict)
    """Position of a result in its call's run -> position of that assistant message."""
    answered: dict[int, dict[str, int]] = field(default_factory=dict)
    """Position of an assistant message with calls -> call id -> position of its result."""
    late: set[int] = field(default_factory=set)
    """Positions of results found after another message, to move next to their call."""


class _Repair:
    def __init__(self, strategy: str, profile):
        self.strategy = strategy
        self.max_id = profile.max_tool_call_id
        self.pattern = profile.tool_call_id_pattern
        self.unique_ids = profile.severity("duplicate-tool-call-id", "reused") == "error"
        self.string_content = profile.severity("null-content", "assistant-tool-calls") == "error"
        self.used: set[str] = set()
        self.edits: list[Edit] = []

    def id_ok(self, cid: str) -> bool:
        if self.max_id is not None and len(cid) > self.max_id:
            return False
        return self.pattern is None or re.fullmatch(self.pattern, cid) is not None

    def new_id(self, old: str, salt: str = "") -> str:
        digest = hashlib.sha1(f"{old}\0{salt}".encode("utf-8", "surrogatepass")).hexdigest()
        return digest[:9] if self.pattern == r"[a-zA-Z0-9]{9}" else "call_" + digest[:24]

    def edit(self, action: str, index: int | None, rule: str, ids=(), detail: str = "") -> None:
        self.edits.append(Edit(action, index, rule, tuple(str(i) for i in ids), detail))

    # --- pass 1: each message on its own ---------------------------------------------------------
    def clean(self, messages: list) -> list[tuple[int, dict, Any]]:
        """(original index, cleaned copy, original tool_call_id) per kept message."""
        out: list[tuple[int, dict, Any]] = []
        for i, raw in enumerate(messages):
            if not isinstance(raw, dict):
                self.edit("drop", i, "invalid-role", detail="not a message object")
                continue
            role = raw.get("role")
            if role not in VALID_ROLES:
                self.edit("drop", i, "invalid-role", detail=f"unknown role {role!r}")
                continue
            m = copy.deepcopy(raw)
            if "function_call" in m and role != "assistant":
                del m["function_call"]
                self.edit("set", i, "legacy-function-call", detail="removed function_call from a non-assistant message")
            if "tool_calls" in m:
                self._clean_calls(i, m)
            if role == "tool":
                tcid = m.get("tool_call_id")
                if isinstance(tcid, str) and tcid and not self.id_ok(tcid):
                    m["tool_call_id"] = self.new_id(tcid)
                if m.get("content") is None:
                    m["content"] = ""
                    self.edit("set", i, "null-content", detail='tool content null -> ""')
            elif m.get("content", None) is None and not (role == "assistant" and (m.get("tool_calls")
                                                                                  or m.get("function_call"))):
                m["content"] = ""
                self.edit("set", i, "null-content", detail=f'{role} content null -> ""')
            out.append((i, m, raw.get("tool_call_id")))
        return out

    def _clean_calls(self, i: int, m: dict) -> None:
        calls = m["tool_calls"]
        if calls is None:
            return
        if m.get("role") != "assistant" or not isinstance(calls, list) or not calls:
            del m["tool_calls"]
            rule = "malformed-tool-call" if m.get("role") != "assistant" else "empty-tool-calls"
            self.edit("set", i, rule, detail="removed an empty or misplaced tool_calls")
            if m.get("role") == "assistant" and m.get("content") is None and not m.get("function_call"):
                m["content"] = ""
            return
        kept, old_ids, seen = [], [], set()
        for k, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
                self.edit("drop", i, "malformed-tool-call", detail=f"dropped tool_calls[{k}] (no function object)")
                continue
            cid = call.get("id")
            old_ids.append(cid)
            if not isinstance(cid, str) or not cid:
                cid = self.new_id(f"{i}:{k}", "missing")
                self.edit("set", i, "missing-tool-call-id", [cid], f"tool_calls[{k}] had no id; gave it {cid}")
            elif not self.id_ok(cid):
                new = self.new_id(cid)
                self.edit("set", i, "tool-call-id-too-long" if self.max_id is not None and len(cid) > self.max_id
                          else "invalid-tool-call-id", [cid, new], f"id {cid} -> {new}")
                cid = new
            if cid in seen:
                new = self.new_id(cid, f"{i}:{k}")
                self.edit("set", i, "duplicate-tool-call-id", [cid, new], f"second use of {cid} in one message -> {new}")
                cid = new
            elif self.unique_ids and cid in self.used:
                new = self.new_id(cid, f"{i}:{k}")
                self.edit("set", i, "duplicate-tool-call-id", [cid, new], f"{cid} was used by an earlier call -> {new}")
                cid = new
            call["id"] = cid
            seen.add(cid)
            if call.get("type") is None:
                call["type"] = "function"
                self.edit("set", i, "malformed-tool-call", [cid], 'added "type": "function"')
            fn = call["function"]
            name = fn.get("name")
            if not isinstance(name, str) or not name or _NAME_BAD.search(name):
                fn["name"] = _fix_name(name)
                self.edit("set", i, "invalid-tool-name", [cid], f"function name {name!r} -> {fn['name']!r}")
            args = fn.get("arguments")
            if not isinstance(args, str):
                fn["arguments"] = json.dumps({} if args is None else args, ensure_ascii=False)
                self.edit("set", i, "invalid-tool-arguments", [cid], "serialised the arguments to a JSON string")
            else:
                try:
                    ok = isinstance(json.loads(args), dict)
                except (ValueError, RecursionError):
                    ok = False
                if not ok:
                    fn["arguments"] = json.dumps({"_raw_arguments": args}, ensure_ascii=False)
                    self.edit("set", i, "invalid-tool-arguments", [cid], "wrapped non-object arguments as "
                              '{"_raw_arguments": ...}')
            kept.append(call)
        self.used.update(seen)
        m["tool_calls"] = kept
        m["_old_ids"] = old_ids
        if not kept:
            del m["tool_calls"]
            if m.get("content") is None:
                m["content"] = ""
        elif self.string_content and m.get("content") is None:
            m["content"] = ""
            self.edit("set", i, "null-content", detail='assistant content null -> "" (this provider wants a string)')

    # --- pass 2: pairing ---------------------------------------------------------------------------
    def pair(self, items: list[tuple[int, dict, Any]]) -> list[dict]:
        """The cleaned messages with every call followed right away by its results (see the three passes)."""
        pairing = self._pair_in_place(items)
        if self.strategy in ("placeholder", "move"):
            self._claim_late_results(items, pairing)
        return self._emit(items, pairing)

    def _pair_in_place(self, items: list[tuple[int, dict, Any]]) -> _Pairing:
        """Pass 2a. Invariant: each tool message in the run right after an assistant message with
        tool_calls answers at most one of that message's calls, by the call's final id.

        A result whose call id the clean pass rewrote is retagged with the new id
        (matched by the old one); outside ``drop`` a result without id takes the
        only call of its run still unanswered.
        """
        n = len(items)
        pairing = _Pairing()
        pos = 0
        while pos < n:
            m = items[pos][1]
            if not (m.get("role") == "assistant" and m.get("tool_calls")):
                pos += 1
                continue
            ids = [c["id"] for c in m["tool_calls"]]
            old_ids = m.get("_old_ids", ids)
            taken: set[int] = set()
            answered = pairing.answered[pos] = {}
            j = pos + 1
            while j < n and items[j][1].get("role") == "tool":
                t = items[j][1]
                cid = t.get("tool_call_id")
                raw = items[j][2]
                q = next((q for q, o in enumerate(old_ids) if o == raw and q not in taken), None) \
                    if len(old_ids) == len(ids) else None
                if q is not None:
                    taken.add(q)
                if q is not None and ids[q] != cid:
                    # the call's id was rewritten: retag the result that answered the old id
                    t["tool_call_id"] = cid = ids[q]
                    self.edit("set", items[j][0], "missing-tool-call-id" if raw is None else
                              "duplicate-tool-call-id" if old_ids.count(raw) > 1 else "tool-call-id-too-long",
                              [cid], f"tool_call_id {raw} -> {cid}, as its call was renamed")
                if (not isinstance(cid, str) or not cid) and self.strategy != "drop":
                    open_ids = [x for x in ids if x not in answered]
                    if len(open_ids) == 1:
                        t["tool_call_id"] = cid = open_ids[0]
                        self.edit("set", items[j][0], "missing-tool-call-id", [cid],
                                  f"the only unanswered call of message {items[pos][0]} is {cid}")
                if isinstance(cid, str) and cid in ids and cid not in answered:
                    answered[cid] = j
                    pairing.owner_of[j] = pos
                j += 1
            pos = j
        return pairing

    def _claim_late_results(self, items: list[tuple[int, dict, Any]], pairing: _Pairing) -> None:
        """Pass 2b (placeholder, move). Invariant: a result separated from its call by another message
        answers the most recent earlier call with its id that is still unanswered, and is marked late
        so the emit pass moves it next to that call."""
        open_calls: dict[str, int] = {}
        for p, (_, m, _) in enumerate(items):
            if p in pairing.answered:
                for c in m["tool_calls"]:
                    if c["id"] not in pairing.answered[p]:
                        open_calls[c["id"]] = p
            elif m.get("role") == "tool" and p not in pairing.owner_of:
                cid = m.get("tool_call_id")
                if isinstance(cid, str) and cid in open_calls:
                    pairing.answered[open_calls.pop(cid)][cid] = p
                    pairing.late.add(p)

    def _emit(self, items: list[tuple[int, dict, Any]], pairing: _Pairing) -> list[dict]:
        """Pass 2c. Invariant of the output: every assistant call is followed immediately by exactly
        one result per call, and every tool message answers a call right before it.

        Results that answer nothing are dropped; an unanswered call gets a
        placeholder result (``placeholder``) or is dropped with, when nothing
        else is left, its assistant message (``drop``, ``move``).
        """
        out: list[dict] = []
        for p, (index, m, _) in enumerate(items):
            m.pop("_old_ids", None)
            role = m.get("role")
            if role == "tool" and (p in pairing.owner_of or p in pairing.late):
                continue  # emitted with its call
            if role == "tool":
                self.edit("drop", index, "orphan-tool", [m.get("tool_call_id")] if m.get("tool_call_id") else [],
                          "a tool result that answers no call in its place")
                continue
            if p not in pairing.answered:
                out.append(m)
                continue
            calls = m["tool_calls"]
            results = pairing.answered[p]
            if self.strategy == "placeholder":
                keep = calls
            else:
                keep = [c for c in calls if c["id"] in results]
                for c in calls:
                    if c["id"] not in results:
                        self.edit("drop", index, "missing-tool-result", [c["id"]], f"dropped the call {c['id']} "
                                  "that has no result")
            if not keep:
                m = {k: v for k, v in m.items() if k != "tool_calls"}
                if m.get("content") in (None, "", []):
                    self.edit("drop", index, "missing-tool-result", [c["id"] for c in calls],
                              "dropped the assistant message: none of its calls has a result")
                    continue
                out.append(m)
                continue
            m["tool_calls"] = keep
            out.append(m)
            for c in keep:
                cid = c["id"]
                if cid in results:
                    r = results[cid]
                    if r in pairing.late:
                        self.edit("move", items[r][0], "interleaved-message", [cid],
                                  f"moved the result for {cid} next to its call in message {index}")
                    out.append(items[r][1])
                else:
                    out.append({"role": "tool", "tool_call_id": cid, "content": PLACEHOLDER})
                    self.edit("insert", index, "missing-tool-result", [cid], f"placeholder result for {cid}")
        return out


def repair_payload(messages: list, tools: list | None = None, *, strategy: str,
                   profile: str = "openai") -> RepairResult:
    """Repair ``messages`` (and ``tools``' names) by ``strategy``; the input is not modified."""
    if strategy not in STRATEGIES:
        raise UnknownChoiceError(f"unknown repair strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    prof = get_profile(profile)
    job = _Repair(strategy, prof)
    if not isinstance(messages, list):
        return RepairResult(messages=[], edits=[Edit("drop", None, "invalid-messages", (), "messages was not a list")],
                            tools=copy.deepcopy(tools))
    try:
        fixed = job.pair(job.clean(messages))
    except RecursionError:
        raise RepairError("the payload is nested too deeply to repair") from None
    new_tools = None
    if isinstance(tools, list):
        new_tools = copy.deepcopy(tools)
        for k, t in enumerate(new_tools):
            fn = t.get("function") if isinstance(t, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str) and _NAME_BAD.search(fn["name"]):
                old = fn["name"]
                fn["name"] = _fix_name(old)
                job.edit("set", None, "invalid-tool-name", (), f"tools[{k}] name {old!r} -> {fn['name']!r}")
    job.edits.sort(key=lambda e: -1 if e.index is None else e.index)
    return RepairResult(messages=fixed, edits=job.edits, tools=new_tools)


def repair_request(body: dict, *, strategy: str, profile: str = "openai") -> tuple[dict, list[Edit]]:
    """A repaired copy of a request body (messages and tools), and the edits."""
    result = repair_payload(body.get("messages"), body.get("tools"), strategy=strategy, profile=profile)
    new = {k: (result.messages if k == "messages" else result.tools if k == "tools" else copy.deepcopy(v))
           for k, v in body.items()}
    edits = list(result.edits)
    if new.get("tools") == []:
        del new["tools"]
        edits.insert(0, Edit("drop", None, "empty-tools", (), "removed tools: []"))
    return new, edits


def remaining_errors(messages: list, tools: list | None = None, profile: str = "openai") -> list[Finding]:
    """Error findings still present (empty after a successful repair)."""
    return [f for f in lint_payload(messages, tools, profile=profile, check_tools=False) if f.severity == "error"]


# --- files (the CLI's ``repair``) ------------------------------------------------------------------------

class RepairError(ChainStudioError):
    """A payload the repair cannot process (nested deeper than Python can copy)."""
