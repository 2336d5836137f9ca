"""Protocol linter: every request a provider would reject or silently mis-pair, before it is sent.

The wire adapter (``agent_core.apis``) derives the provider-neutral chain of a
request; one left-to-right scan over its entries (``_Scan``) checks each one
and the pairing of tool calls with the results after them. Every finding
points at its native JSON path (``messages[3].tool_calls[1].id``). The scan
state can be cloned, so ``lint_trace`` over a full-history log resumes from the
previous call's state when a payload extends the previous one: linting N
calls costs the new messages only, not N whole payloads.

Rule ids are stable (docs, tests and the studio refer to them); each provider profile (``profiles.py``)
decides which are errors and supplies its exact error text. ``api_rejection`` turns the first error into
OpenAI's HTTP 400 body; the demo model answers with it. Responses API bodies get their own rules (``responses.py``).
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Iterable

from agent_core.apis.base import api_for_body
from agent_core.apis.chain import MISSING, Chain, Entry, ToolCall, relocate
from agent_core.trace.model import Trace, payload_tail, same_head

from .facts import CALLS, GENERAL, NAME_RE, PLAIN, entry_kind, feed_calls
from .finding import Finding, group_findings, has_errors
from .native import NATIVE_PROFILES, ThinkingLedger, api_of_call, lint_native
from .profiles import Profile, get_profile
from .responses import is_responses_call, lint_responses_request, lint_responses_trace
from .rules import RULES, VALID_ROLES, RuleInfo
from .shape import check_types, fill_template, superseded
from .shape import type_name as _type_name
from .shape import type_shown as _show

__all__ = ["Finding", "RULES", "RuleInfo", "lint_payload", "lint_request", "lint_trace", "api_rejection",
           "group_findings", "has_errors"]

_NAME_RE = NAME_RE
_INVALID = object()


def _short(ids: Iterable[str]) -> str:
    return ", ".join(str(i) for i in ids)


class _Scan:
    """The linter's state machine over one payload; ``clone`` lets a longer payload resume from it."""

    def __init__(self, profile: Profile, chain: Chain, check_tools: bool, parsed: dict[str, str] | None = None):
        self.p = profile
        # arguments string -> "" (a JSON object) or what it is instead; shared by the scans of one trace
        self.parsed: dict[str, str] = {} if parsed is None else parsed
        self.check_tools = check_tools
        self.thinking = chain.thinking
        self.tools_path = chain.tools_path
        self.entries_path = chain.entries_path
        self.tools_given = bool(chain.tools)
        self.declared: set[str] | None = None
        self.findings: list[Finding] = []
        self.count = 0
        self.prev_role: str | None = None
        self.seen_non_system = False
        self.first_call_index: int | None = None
        # the run of tool messages right after an assistant message with tool_calls
        self.run_owner: int | None = None
        self.run_ids: list[str] = []
        self.run_answered: dict[str, int] = {}
        self.run_order: list[str] = []
        # calls whose run ended without their result: id -> assistant index
        self.unresolved: dict[str, int] = {}
        self.missing: dict[int, list[str]] = {}
        # assistant index -> the entry that cut its run short and its index (None: the payload ended), its role
        self.interrupt: dict[int, tuple[Entry | None, int | None, str | None]] = {}
        self.late: dict[int, list[str]] = {}
        self.owner_anth: dict[int, int] = {}
        # assistant index -> (its entry, that index, id -> the call): their paths, made when a finding needs one
        self.call_paths: dict[int, tuple[Entry, int, dict[str, ToolCall]]] = {}
        self._e: Entry | None = None     # the entry being fed and its index in this payload (see ``_p``)
        self._i = 0
        self.ids_seen: dict[str, int] = {}
        # Anthropic turn numbering (system dropped, consecutive same-role messages merged)
        self.anth_n = -1
        self.anth_role: str | None = None
        self.anth_k = 0
        if chain.tools is not None:
            self._scan_tools(chain)
            if not chain.tools:
                self.emit("empty-tools", None, [], "The request sends tools: [] (an empty list); leave the key "
                          "out when there are no tools.", param="tools", code="empty_array", path=chain.tools_path)

    def clone(self, for_finish: bool = False) -> "_Scan":
        """An independent copy; ``for_finish`` shares what only ``feed`` changes (ids seen, turn numbers, paths),
        so finishing a copy of a long payload's state does not cost O(payload) per call."""
        other = object.__new__(_Scan)
        other.__dict__.update(self.__dict__)
        other.findings = list(self.findings)
        other.run_ids = list(self.run_ids)
        other.run_answered = dict(self.run_answered)
        other.run_order = list(self.run_order)
        other.unresolved = dict(self.unresolved)
        other.missing = dict(self.missing)
        other.interrupt = dict(self.interrupt)
        other.late = {k: list(v) for k, v in self.late.items()}
        if not for_finish:
            other.owner_anth = dict(self.owner_anth)
            other.call_paths = dict(self.call_paths)
            other.ids_seen = dict(self.ids_seen)
        return other

    # --- emitting ---------------------------------------------------------------------------------
    def emit(self, rule: str, index: int | None, ids: list[str], message: str, *, path: str,
             variant: str | None = None, fill: dict | None = None, fix: str | None = None, param: str | None = None,
             code: str | None = None, fallback: bool = True) -> None:
        """Record a finding at native ``path`` unless the profile turns the rule off. ``fallback=False``: a variant
        without its own template gets no text (the base rule's wording would describe a different request)."""
        info = RULES[rule]
        severity = self.p.severity(rule, variant, info.severity)
        if severity == "off" or superseded(rule, path, self._e, self._i):
            return
        template = self.p.template(rule, variant) if fallback or variant is None else \
            self.p.templates.get(f"{rule}:{variant}")
        api_error = fill_template(template, fill)
        self.findings.append(Finding(rule=rule, severity=severity, call=0, index=index,
                                     tool_call_ids=[str(i) for i in ids], message=message, api_error=api_error,
                                     fix=fix or info.fix, profile=self.p.name, param=param, code=code, path=path))

    def _n(self, index: int, anth: int | None = None) -> int:
        """The message number the provider's text uses."""
        if self.p.index_style == "anthropic":
            return self.anth_n if anth is None else anth
        return index

    # --- tools ------------------------------------------------------------------------------------
    def _scan_tools(self, chain: Chain) -> None:
        names: set[str] = set()
        for k, tool in enumerate(chain.tools or ()):
            name = tool.name
            if isinstance(name, str):
                names.add(name)
                if not _NAME_RE.match(name):
                    self.emit("invalid-tool-name", None, [], f"The tool declared at tools[{k}] is named {name!r}; "
                              "names may only hold letters, digits, '_' and '-'.", variant="tools",
                              fill={"k": k}, param=f"tools[{k}].function.name", code="invalid_value",
                              path=tool.at("name"))
        self.declared = names

    # --- messages ---------------------------------------------------------------------------------
    def feed(self, e: Entry, i: int | None = None, kind: int = GENERAL) -> None:
        """Check one entry, at index ``i`` of this payload (default ``e.index``), and advance the pairing state.
        ``kind``: what ``facts.entry_kind`` says of ``e`` (the checks it settles are skipped; same findings)."""
        i = e.index if i is None else i
        self._e, self._i = e, i
        self.count += 1
        if kind == PLAIN:
            role = e.role
            if self.p.index_style == "anthropic":
                self._anthropic_turn(role)
            if self.run_owner is not None:
                self.close_run(e, i, role)
            self._order(e, i, role)
            self.prev_role = role
            return
        if kind == GENERAL:
            check_types(self, e, i)
        if kind == GENERAL and not isinstance(e.native, dict):
            self.close_run(e, i, "not an object")
            self.emit("invalid-role", i, [], f"Message {i} is {_type_name(e.native)}, not a JSON object with a role.",
                      fill={"role": _type_name(e.native), "n": i}, param=f"messages.[{i}]", code="invalid_type",
                      fix="Replace it with a message object, or remove it.", path=self._p(e.path))
            self.prev_role = None
            self.seen_non_system = True
            return
        role = e.role
        if self.p.index_style == "anthropic":
            self._anthropic_turn(role)
        if role == "tool":
            self._tool(e, i)
            self.prev_role = "tool"
            return
        if self.run_owner is not None:
            self.close_run(e, i, role if isinstance(role, str) else "no role")
        if role not in VALID_ROLES:
            shown = role if isinstance(role, str) else "missing" if role is None else _type_name(role)
            self.emit("invalid-role", i, [], f"Message {i} has role {shown!r}; the API knows only system, "
                      "developer, user, assistant and tool.", fill={"role": shown, "n": i},
                      param=f"messages[{i}].role", code="invalid_value", path=self._p(e.at("role")))
        self._order(e, i, role)
        self._content(e, i, role)
        if e.reasoning is not MISSING and self.p.reasoning_check is not None:    # DeepSeek-R1 (lint/deepseek.py)
            self.p.reasoning_check(self, e, i)
        if role == "function" or e.legacy_call is not None:
            self._legacy(e, i, role)
        if kind == CALLS:
            feed_calls(self, e, i)
        elif e.calls_native is not MISSING:
            self._tool_calls(e, i, role)
        self.prev_role = role if isinstance(role, str) else None

    def _order(self, e: Entry, i: int, role: Any) -> None:
        """The rules on where a message of ``role`` may stand: a system message after the start, a user message
        right after a tool result."""
        if role in ("system", "developer"):
            if self.seen_non_system:
                self.emit("system-not-first", i, [], f"The {role} message at index {i} comes after the "
                          "conversation started; some providers want it first.", path=self._p(e.path))
        else:
            self.seen_non_system = True
        if role == "user" and self.prev_role == "tool":
            self.emit("user-after-tool", i, [], f"User message {i} follows a tool result directly; the "
                      "assistant never answered the tool results.", fill={"n": self._n(i)}, path=self._p(e.path))

    def _p(self, path: str) -> str:
        """``path`` (of the entry being fed, or inside it) at that entry's index in this payload: an entry is
        derived once per distinct message, wherever it sits, so a path is moved only when a finding names it."""
        return relocate(path, self._e, self._i)

    def _anthropic_turn(self, role: Any) -> None:
        if role in ("system", "developer"):
            return
        turn = "assistant" if role == "assistant" else "user"
        if turn == self.anth_role:
            self.anth_k += 1
        else:
            self.anth_n += 1
            self.anth_role = turn
            self.anth_k = 0

    def _content(self, e: Entry, i: int, role: Any) -> None:
        if e.content is not MISSING and e.content is not None:
            return
        has_calls = bool(e.calls_native) or (e.legacy_call is not None and bool(e.legacy_call.native))
        if e.content is MISSING:
            if role == "assistant" and has_calls:
                return
            if role in VALID_ROLES:
                self.emit("null-content", i, [], f"The {role} message at index {i} has no content key.",
                          variant="missing", fill={"n": i}, param=f"messages[{i}].content",
                          fix='Add "content" with the text (an empty string if there is none).', path=self._p(e.at("content")))
            return
        if role == "assistant" and has_calls:
            self.emit("null-content", i, [], f"The assistant message at index {i} calls tools with content "
                      "null; this provider wants a string.", variant="assistant-tool-calls", fill={"n": i},
                      param=f"messages.[{i}].content", fix='Send "content": "" instead of null.', path=self._p(e.at("content")))
        elif role in VALID_ROLES:
            self.emit("null-content", i, [], f"The {role} message at index {i} has content null where a "
                      "string is required.", fill={"n": i}, param=f"messages.[{i}].content",
                      fix='Send the text, or "" (tool results: the tool\'s output as a string).', path=self._p(e.at("content")))

    def _legacy(self, e: Entry, i: int, role: Any) -> None:
        fc = e.legacy_call
        if fc is not None and role != "assistant":
            self.emit("legacy-function-call", i, [], f"Message {i} has a function_call but role {_show(role)}; only "
                      "assistant messages can call functions.", variant="non-assistant", fill={"n": i},
                      param=f"messages.[{i}].function_call", path=self._p(fc.path))
            return
        what = "a legacy role 'function' result" if role == "function" else "a legacy function_call"
        self.emit("legacy-function-call", i, [], f"Message {i} uses {what} (the deprecated functions API); "
                  "newer models reject it and ids cannot be paired.", fill={"n": i},
                  path=self._p(e.path if fc is None else fc.path))
        if role == "assistant" and fc is not None and fc.defect is None:
            if self.first_call_index is None:
                self.first_call_index = i
            self._undeclared(i, fc, [])

    def _undeclared(self, i: int, call: ToolCall, ids: list[str]) -> None:
        name = call.name
        if self.check_tools and self.declared is not None and self.tools_given and isinstance(name, str) \
                and name and name not in self.declared:
            self.emit("undeclared-tool", i, ids, f"Message {i} calls {name!r}, which the request's tools do "
                      "not declare.", path=self._p(call.at("name")))

    def _tool_calls(self, e: Entry, i: int, role: Any) -> None:
        calls = e.calls_native
        if calls is None:
            return
        if role != "assistant":
            self.emit("malformed-tool-call", i, [], f"Message {i} has tool_calls but role {_show(role)}; only "
                      "assistant messages call tools.", fix="Move the tool_calls to an assistant message.",
                      path=self._p(e.at("calls")))
            return
        if not isinstance(calls, list) or not calls:
            empty = isinstance(calls, list)
            self.emit("empty-tool-calls", i, [], f"The assistant message at index {i} has tool_calls "
                      + ("[] (an empty list)." if empty else f"set to {_type_name(calls)}, not a list."),
                      fill={"n": i} if empty else None, param=f"messages[{i}].tool_calls",
                      code="empty_array" if empty else "invalid_type", path=self._p(e.at("calls")))
            return
        if self.first_call_index is None:
            self.first_call_index = i
        ids: list[str] = []
        here: dict[str, int] = {}
        paths: dict[str, ToolCall] = {}
        content = e.content
        block0 = 1 if (isinstance(content, str) and content) or (isinstance(content, list) and content) else 0
        for call in e.calls:
            k = call.position
            if call.defect == "not-object":
                self.emit("malformed-tool-call", i, [], f"tool_calls[{k}] of message {i} is "
                          f"{_type_name(call.native)}, not a tool call object.", path=self._p(call.path))
                continue
            cid = call.id
            if not isinstance(cid, str) or not cid:
                self.emit("missing-tool-call-id", i, [], f"tool_calls[{k}] of message {i} has no id, so no "
                          "result can answer it.", variant="call", fill={"n": self._n(i), "k": block0 + k},
                          param=f"messages[{i}].tool_calls[{k}].id",
                          fix="Give the call an id and use it as the result's tool_call_id.", path=self._p(call.at("id")))
                cid = None
            else:
                self._check_id(i, call, block0, here)
                here.setdefault(cid, k)
                paths.setdefault(cid, call)
                if cid not in ids:
                    ids.append(cid)
            if call.type is None or call.type is MISSING:
                self.emit("malformed-tool-call", i, [cid] if cid else [], f"tool_calls[{k}] of message {i} has "
                          'no "type": "function".', fill={"n": i, "k": k}, param=f"messages[{i}].tool_calls[{k}].type",
                          fix='Add "type": "function" to the call.', path=self._p(call.at("type")))
            if call.defect == "no-function":
                self.emit("malformed-tool-call", i, [cid] if cid else [], f"tool_calls[{k}] of message {i} has "
                          "no function object (name and arguments).", path=self._p(call.at("function")))
                continue
            self._check_name(i, call, cid)
            self._check_arguments(i, call, cid)
            self._undeclared(i, call, [cid] if cid else [])
        if self.thinking and e.reasoning is MISSING:
            self.emit("missing-reasoning-content", i, ids, f"The assistant tool-call message at index {i} does not "
                      "echo its reasoning_content, which thinking mode requires in a tool loop.", fill={"i": i},
                      path=self._p(e.at("reasoning")))
        for cid in ids:
            self.ids_seen.setdefault(cid, i)
        self.run_owner = i
        self.run_ids = ids
        self.run_answered = {}
        self.run_order = []
        self.owner_anth[i] = self.anth_n
        self.call_paths[i] = (e, i, paths)

    def _check_id(self, i: int, call: ToolCall, block0: int, here: dict[str, int]) -> None:
        k, cid = call.position, call.id
        limit = self.p.max_tool_call_id
        if limit is not None and len(cid) > limit:
            self.emit("tool-call-id-too-long", i, [cid], f"Tool call id {cid!r} in message {i} is {len(cid)} "
                      f"characters long; this provider accepts at most {limit}.", fill={"n": i, "k": k, "L": len(cid)},
                      param=f"messages[{i}].tool_calls[{k}].id", code="string_above_max_length", path=self._p(call.at("id")))
        pattern = self.p.tool_call_id_pattern
        if pattern is not None and not re.fullmatch(pattern, cid):
            self.emit("invalid-tool-call-id", i, [cid], f"Tool call id {cid!r} in message {i} does not have the "
                      f"form this provider requires ({pattern}).", fill={"id": cid, "n": self._n(i), "k": block0 + k},
                      path=self._p(call.at("id")))
        if cid in here:
            self.emit("duplicate-tool-call-id", i, [cid], f"Message {i} uses the id {cid!r} for two tool calls "
                      f"(tool_calls[{here[cid]}] and tool_calls[{k}]).", variant="same-message", fallback=False,
                      fill={"id": cid, "i": i, "j": i}, fix="Give every call in one message its own id.", path=self._p(call.at("id")))
        elif cid in self.ids_seen:
            self.emit("duplicate-tool-call-id", i, [cid], f"The id {cid!r} in message {i} was already used by "
                      f"the call in message {self.ids_seen[cid]}; this provider counts them as one.",
                      variant="reused", fallback=False, fill={"id": cid, "i": self.ids_seen[cid], "j": i},
                      fix="Rename the later call's id (and its result's tool_call_id) so every id is unique.",
                      path=self._p(call.at("id")))

    def _check_name(self, i: int, call: ToolCall, cid: str | None) -> None:
        k, name = call.position, call.name
        ids = [cid] if cid else []
        if not isinstance(name, str) or not name:
            self.emit("invalid-tool-name", i, ids, f"tool_calls[{k}] of message {i} has an empty function name.",
                      variant="empty", fill={"n": i, "k": k}, param=f"messages[{i}].tool_calls[{k}].function.name",
                      code="empty_value", path=self._p(call.at("name")))
        elif not _NAME_RE.match(name):
            self.emit("invalid-tool-name", i, ids, f"Function name {name!r} in message {i} holds characters "
                      "other than letters, digits, '_' and '-'.", fill={"n": i, "k": k},
                      param=f"messages[{i}].tool_calls[{k}].function.name", code="invalid_value", path=self._p(call.at("name")))

    def _check_arguments(self, i: int, call: ToolCall, cid: str | None) -> None:
        k, args = call.position, call.arguments
        ids = [cid] if cid else []
        if not isinstance(args, str):
            self.emit("invalid-tool-arguments", i, ids, f"The arguments of tool_calls[{k}] in message {i} are "
                      f"{_type_name(args)}; they must be a string holding JSON.", fill={"n": i, "k": k,
                      "type": _type_name(args)}, param=f"messages[{i}].tool_calls[{k}].function.arguments",
                      code="invalid_type", path=self._p(call.at("arguments")))
            return
        what = self.parsed.get(args)
        if what is None:
            try:
                parsed = json.loads(args)
            except (ValueError, RecursionError):
                parsed = _INVALID
            what = self.parsed[args] = "" if isinstance(parsed, dict) else "not valid JSON" if parsed is _INVALID \
                else f"JSON {_type_name(parsed)}, not an object"
        if what:
            self.emit("invalid-tool-arguments", i, ids, f"The arguments of tool_calls[{k}] in message {i} are "
                      f"{what}.", variant="json", fallback=False, fix="Send the arguments as a JSON object string, e.g. '{}'.",
                      path=self._p(call.at("arguments")))

    def _tool(self, e: Entry, i: int) -> None:
        result = e.results[0]
        if result.content is MISSING:
            self.emit("null-content", i, [], f"The tool message at index {i} has no content key.", variant="missing",
                      fill={"n": i}, param=f"messages[{i}].content", fix="Send the tool's output as a string.",
                      path=self._p(result.at("content")))
        elif result.content is None:
            self.emit("null-content", i, [], f"The tool message at index {i} has content null.", fill={"n": i},
                      param=f"messages.[{i}].content", fix="Send the tool's output as a string (\"\" if empty).",
                      path=self._p(result.at("content")))
        cid = result.id
        if not isinstance(cid, str) or not cid:
            self.emit("missing-tool-call-id", i, [], f"The tool message at index {i} has no tool_call_id, so it "
                      "answers no call.", fill={"n": i}, param=f"messages.[{i}].tool_call_id", path=self._p(result.at("id")))
            if self.run_owner is None:
                self._orphan(e, i, None)
            return
        if self.run_owner is not None and cid in self.run_ids:
            if cid in self.run_answered:
                first = self.run_answered[cid]
                self.emit("duplicate-tool-call-id", i, [cid], f"Tool messages {first} and {i} both answer the "
                          f"call {cid!r}.", fill={"id": cid, "i": first, "j": i, "n": self._n(i)},
                          param=f"messages.[{i}].tool_call_id", path=self._p(result.at("id")),
                          fix="Keep one result per call (drop the extra, e.g. a synthetic 'aborted' message).")
            else:
                self.run_answered[cid] = i
                self.run_order.append(cid)
            return
        if cid in self.unresolved:
            owner = self.unresolved.pop(cid)
            self.late.setdefault(owner, []).append(cid)
            return
        if self.run_owner is not None:
            self.emit("unknown-tool-call-id", i, [cid], f"Tool message {i} answers {cid!r}, which is not among "
                      f"the tool_calls of the assistant message at index {self.run_owner}.",
                      fill={"id": cid, "n": self._n(i), "k": self.anth_k}, param=f"messages.[{i}].tool_call_id",
                      path=self._p(result.at("id")))
            return
        self._orphan(e, i, cid)

    def _orphan(self, e: Entry, i: int, cid: str | None) -> None:
        before = "it is the first message" if self.prev_role is None and self.count == 1 else \
            f"the message before it is a {self.prev_role or 'non-message'} message"
        self.emit("orphan-tool", i, [cid] if cid else [], f"Tool message {i} does not follow an assistant message "
                  f"with tool_calls ({before}); often a trim cut the call away.",
                  fill={"id": cid or "", "n": self._n(i), "k": self.anth_k}, param=f"messages.[{i}].role",
                  path=self._p(e.path), variant="after-user" if self.prev_role == "user" else None)

    def close_run(self, at: Entry | None, index: int | None = None, role: str | None = None) -> None:
        owner = self.run_owner
        if owner is None:
            return
        self.run_owner = None
        missing = [cid for cid in self.run_ids if cid not in self.run_answered]
        if missing:
            self.missing[owner] = missing
            self.interrupt[owner] = (at, index, role)
            for cid in missing:
                self.unresolved[cid] = owner
        expected = [cid for cid in self.run_ids if cid in self.run_answered]
        if self.run_order != expected:
            self.emit("results-out-of-order", owner, list(self.run_order), f"The results after message {owner} "
                      "come in another order than its tool_calls; servers that pair by position mis-bind them.",
                      path=self._calls_path(owner))

    def _calls_path(self, owner: int, cid: str | None = None) -> str:
        """The path of the call list of the assistant message at ``owner``, or of its call ``cid``."""
        e, i, calls = self.call_paths[owner]
        return relocate(e.at("calls") if cid is None else calls[cid].path, e, i)

    def finish(self, n: int) -> list[Finding]:
        """Close the last run and report what only the whole payload shows; findings by message index."""
        self.close_run(None)
        for owner, missing in self.missing.items():
            late = self.late.get(owner, [])
            never = [cid for cid in missing if cid not in late]
            cut, at, at_role = self.interrupt.get(owner, (None, None, None))
            where = "the payload ends" if at is None else f"a {at_role} message comes next, at index {at}"
            if never:
                self.emit("missing-tool-result", owner, never, f"The assistant message at index {owner} called "
                          f"{_short(never)}, but no tool result for it follows ({where}).",
                          fill={"ids": _short(never), "n": self._n(owner, self.owner_anth.get(owner))},
                          param=f"messages.[{owner}].role", path=self._calls_path(owner, never[0]))
            if late and cut is not None:    # a late result always follows the message that cut the run
                self.emit("interleaved-message", at, late, f"Message {at} stands between the tool call(s) at index "
                          f"{owner} and their result(s) for {_short(late)}; results must come right after the call.",
                          fill={"ids": _short(late), "n": self._n(owner, self.owner_anth.get(owner))},
                          param=f"messages.[{owner}].role", path=relocate(cut.path, cut, at))
        if self.check_tools and self.first_call_index is not None and not self.tools_given:
            self.emit("tools-missing-for-history", self.first_call_index, [], "The history holds tool calls but "
                      "the request declares no tools.", path=self.tools_path)
        if n == 0:
            self.emit("invalid-messages", None, [], "The payload has no messages.", param="messages",
                      code="empty_array", path=self.entries_path)
        return sorted(self.findings, key=lambda f: -1 if f.index is None else f.index)


def _stamp(findings: list[Finding], call: int) -> list[Finding]:
    return [f if f.call == call else replace(f, call=call) for f in findings]


def _lint_chain(chain: Chain, prof: Profile, call: int, check_tools: bool) -> list[Finding]:
    """Every finding for one derived chain, stamped with ``call``."""
    scan = _Scan(prof, chain, check_tools)
    if chain.entries is None:
        scan.emit("invalid-messages", None, [], f"messages is {_type_name(chain.entries_native)}, not a list of "
                  "messages.", param="messages", code="invalid_type", path=chain.entries_path)
        return _stamp(scan.findings, call)
    for e in chain.entries:
        scan.feed(e)
    return _stamp(scan.finish(len(chain.entries)), call)


def lint_payload(messages: list, tools: list | None = None, *, profile: str = "openai", call: int = 0,
                 check_tools: bool = True, thinking: bool = False) -> list[Finding]:
    """Every finding for one Chat Completions payload, sorted by message index. Never raises on any JSON input.

    ``check_tools=False`` skips the two tools rules, for imports that never recorded the tools.
    ``thinking=True``: the request runs a reasoning (thinking) mode, where DeepSeek wants every
    tool-call message to echo its ``reasoning_content`` (``lint_request`` detects it from the body).
    """
    body = {"messages": messages, "tools": tools}
    chain = replace(api_for_body(body).chain(body), thinking=thinking)
    return _lint_chain(chain, get_profile(profile), call, check_tools)


def lint_request(body: dict, *, profile: str = "openai", call: int = 0, check_tools: bool = True) -> list[Finding]:
    """Lint a request body as its wire API reads it (Responses: ``responses``; Anthropic, Gemini: ``native``)."""
    if is_responses_call(body):      # the Responses API's own rules (lint/responses.py)
        return lint_responses_request(body, get_profile(profile), call)
    api = api_for_body(body)
    if api.name in NATIVE_PROFILES:     # Anthropic Messages, Gemini
        return lint_native(api, body, get_profile(profile), call, lint_request, check_tools)
    return _lint_chain(api.chain(body), get_profile(profile), call, check_tools)


def lint_trace(trace: Trace, *, profile: str = "openai") -> list[Finding]:
    """Findings for every call's request, in call order. A payload that starts with the previous call's whole payload
    (same tools) resumes from that call's scan state, so full-history logs lint in linear time; for calls read from
    a trace file the check compares payload runs. Each distinct message becomes an entry once per trace, wherever it
    sits (a windowed replay shifts them all), kept in ``trace.meta["_lint_entries"]`` for later lints and replays."""
    prof = get_profile(profile)
    check_tools = trace.meta.get("tools_recorded", True) is not False
    out: list[Finding] = []
    prev_call = None
    prev_head: Chain | None = None
    prev_scan: _Scan | None = None
    # wire API -> id(message) -> its entry, which keeps the message alive (so no other object takes its id), and
    # what the scan may skip for it (facts.entry_kind)
    entries: dict[str, dict[int, tuple[Entry, int]]] = trace.meta.setdefault("_lint_entries", {})
    parsed: dict[str, str] = {}
    memo: tuple[Any, Any, Chain] | None = None     # the last head, its adapter and chain (tools, flags)
    ledger, responses = ThinkingLedger(), False      # responses: a Responses call was seen (their pass below)
    for position, c in enumerate(trace.calls):
        head = c.request_head()
        if isinstance(head, dict) and "messages" not in head and (c.purpose != "chat" or is_responses_call(head)):
            responses = responses or is_responses_call(head)
            continue
        api, number = api_of_call(c, head, trace.meta.get("_wire_api")), c.index if isinstance(c.index, int) else position
        if api.name in NATIVE_PROFILES:      # Anthropic, Gemini: one request at a time, natively or converted
            out.extend(lint_native(api, c.request, prof, number, lint_request, check_tools, ledger, c.response,
                                   c.attempts[-1].url if c.attempts else ""))
            prev_call = prev_scan = None
            continue
        if memo is None or memo[1] is not api or not same_head(head, memo[0]):
            memo = (head, api, api.chain(head))      # messages are None in the head: tools and flags only
        head_chain = memo[2]
        raw = api.items(c.request) if c.payload is None else []
        if not isinstance(raw, list):
            out.extend(_lint_chain(api.chain(c.request), prof, number, check_tools))
            prev_call = prev_scan = None
            continue
        tail = payload_tail(prev_call, c) if prev_scan is not None and prev_head is not None and (
            head_chain is prev_head or (head_chain.thinking == prev_head.thinking
                                        and head_chain.tools == prev_head.tools)) else None
        if tail is not None:
            (new, start), scan = tail, prev_scan      # only this call resumes from it: no copy
        else:
            new, start, scan = c.messages, 0, _Scan(prof, head_chain, check_tools, parsed)
        cache = entries.setdefault(api.name, {})
        get, feed = cache.get, scan.feed
        for i, m in enumerate(new, start):
            known = get(id(m))
            if known is None:
                e = api.entries([m], i)[0]
                known = cache[id(m)] = (e, entry_kind(e))
            feed(known[0], i, known[1])
        length = start + len(new)
        prev_call, prev_head, prev_scan = c, head_chain, scan
        out.extend(_stamp(scan.clone(for_finish=True).finish(length), number))
    return sorted(out + (lint_responses_trace(trace, prof) if responses else []), key=lambda f: f.call)


def api_rejection(body: dict, profile: str = "openai") -> dict | None:
    """The provider's HTTP 400 body (OpenAI's envelope) for the first error finding, else None."""
    for f in lint_request(body, profile=profile):
        if f.severity == "error":
            return {"error": {"message": f.api_error or f.message, "type": "invalid_request_error",
                              "param": f.param, "code": f.code}}
    return None
