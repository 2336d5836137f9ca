"""Open anything that holds message chains: detect the format, build a ``Trace``.

Accepted (detected in this order):

- a Chain Studio trace (``trace_format.parse_trace``);
- JSON: a Chat Completions request body (a dict with ``messages`` and ``model``
  or ``tools`` or another request parameter, or exactly ``{"messages": [...]}``) = one call; ``{"request", "response"}``
  = one call; a bare array of messages = one call; an array of request bodies or
  request/response records = one call each; a conversation record, or an array
  of them, holding messages under ``messages`` / ``traj`` / ``history`` /
  ``conversation`` (tau-bench, SWE-agent ``.traj``) = one call per assistant
  message; a ToolBench answer file (``answer_generation.train_messages``) = one
  call per chain;
- JSONL: one request body, ``{"request", "response"}`` record or conversation
  record per line.

Several conversations in one file load into ONE trace: calls and stream are
concatenated in file order and ``trace.meta["conversations"]`` lists, per
conversation, ``{"name", "calls": [start, end], "messages": [start, end]}``
(half-open ranges). ``split_conversations`` cuts such a trace into one trace per
conversation. Counting follows the CLI rules: a conversation record counts one
call per assistant message.

Anything that could not be mapped is named in ``trace.warnings``; nothing is
dropped silently. Input files are only read.
"""
from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent_core.apis.gemini import GEMINI
from agent_core.core.errors import MalformedTraceError
from agent_core.core.heap import long_lived
from agent_core.core.limits import check_body, number_too_long, read_input, refuse_long_body_unparsed
from agent_core.core.msg import Msg
from agent_core.core.parents import link_stream
from agent_core.ingest import agents_sdk as import_agents_sdk
from agent_core.ingest import agentscope as import_agentscope
from agent_core.ingest import gate, line_log, snapshot
from agent_core.ingest import inspect_log as import_inspect
from agent_core.ingest import otel as import_otel
from agent_core.ingest import responses_bodies as import_responses
from agent_core.ingest.legacy_functions import convert_legacy, convert_legacy_request  # noqa: F401  (re-exported)
from agent_core.ingest.message_keys import remembered_keys
from agent_core.ingest.payload_runs import PayloadRuns
from agent_core.ingest.stream_builder import StreamBuilder
from agent_core.trace.codec import FORMAT_NAME
from agent_core.trace.model import Call, Trace
from agent_core.trace.packed import Packer, Unpacked
from agent_core.trace.reader import parse_trace

CONVERSATION_KEYS = ("messages", "traj", "history", "conversation")
_REQUEST_KEYS = {"model", "tools", "functions", "tool_choice", "temperature", "max_tokens", "max_completion_tokens",
                 "stream", "top_p", "n", "stop", "response_format", "seed", "parallel_tool_calls", "stream_options",
                 "function_call", "presence_penalty", "frequency_penalty", "user", "logprobs"}
_MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")
_SWE_EXTRA = ("agent", "message_type", "thought", "action", "tool_call_ids", "is_demo", "cache_control")


def load_any(path: str | Path, progress: line_log.Progress | None = None, keep: bool = True) -> Trace:
    """Read a file in any supported format (``MalformedTraceError`` when unreadable).

    A line-oriented payload log is streamed line by line with no size limit (``ingest/line_log.py``),
    reporting ``progress(bytes read, total, calls)``; any other file is read whole, up to the input limit.
    A big file parsed before by the same code is loaded from ``ingest/snapshot.py`` instead, and one parsed here
    is left there for the next process (unless not ``keep``: the caller keeps it later, ``snapshot.save``).
    """
    path = Path(path)
    digest = snapshot.file_digest(path) if _is_regular(path) else None
    with long_lived():      # millions of acyclic objects: the cyclic GC would re-walk them (core/heap.py)
        trace = snapshot.load(digest)
        if trace is not None:
            if progress is not None:
                size = path.stat().st_size
                progress(size, size, len(trace.calls))
            return trace
        if _is_regular(path) and line_log.is_line_log(path):       # never opened when a FIFO or a device
            with remembered_keys():
                trace = _checked(gate.guarded(lambda: _from_line_log(path, progress), str(path)), str(path))
        else:
            trace = parse_any(read_input(path), str(path))
    if keep:
        snapshot.save_detached(digest, trace)
    return trace


def _is_regular(path: Path) -> bool:
    """A regular file (a link to one included), checked without opening it."""
    try:
        return path.is_file()
    except OSError:
        return False
class _Constants:
    """``NaN``, ``Infinity`` and ``-Infinity`` seen while parsing: Python's json reads them, but they are not
    JSON, and a provider's parser rejects a body holding one."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def note(self, name: str) -> float:
        self.seen[name] = self.seen.get(name, 0) + 1
        return float(name)

    def warning(self) -> str | None:
        if not self.seen:
            return None
        found = ", ".join(f"{k} ({v}x)" for k, v in self.seen.items())
        return (f"the file holds {found}, which JSON does not allow: a provider's JSON parser rejects a body "
                "holding it (Python's json.dumps writes it by default)")


def parse_any(data: bytes | str, source: str = "<pasted>") -> Trace:
    """Detect the format of ``data`` and build the trace.

    ``trace.calls`` is what every command and studio page counts as the calls of the file. Raises
    ``MalformedTraceError`` when no call could be imported from records that were skipped (the reason
    is the importer's note), rather than handing back an empty trace that lints clean.
    """
    constants = _Constants()       # one per call: the studio parses on several threads
    try:
        with long_lived():
            trace = gate.guarded(lambda: _parse(data, source, constants), source)
    except RecursionError:
        raise MalformedTraceError(source, "JSON nested too deeply", 1, 1) from None
    note = constants.warning()
    if note:
        trace.warnings.append(note)
    return _checked(trace, source)


def _checked(trace: Trace, source: str) -> Trace:
    if not trace.calls and trace.warnings:
        raise MalformedTraceError(source, "no call could be imported: " + "; ".join(trace.warnings[:3]))
    _note_other_calls(trace)
    return trace


def _note_other_calls(trace: Trace) -> None:
    """Name the calls that are not chat completions (the proxy's GET /v1/models, embeddings ...): they count
    as calls like any other, but hold no messages for the linter or a replay."""
    other = [c for c in trace.calls if c.purpose == "other"]
    if not other:
        return
    kinds: dict[str, None] = {}
    for c in other:
        attempt = c.attempts[-1] if c.attempts else None
        path = urlsplit(attempt.url).path if attempt is not None and isinstance(attempt.url, str) else ""
        kinds[f"{attempt.method if attempt is not None else '?'} {path or '?'}"] = None
    trace.warnings.append(f"{len(other)} of {len(trace.calls)} calls are not chat completions "
                          f"({', '.join(kinds)}): they are shown as recorded; there are no messages in them "
                          "to lint or replay")


def _decode(data: bytes | str, source: str) -> str:
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        before = data[:err.start]
        line = before.count(b"\n") + 1
        column = err.start - (before.rfind(b"\n") + 1) + 1
        raise MalformedTraceError(source, "not UTF-8 text", line, column) from None


def _parse(data: bytes | str, source: str, constants: _Constants) -> Trace:
    if isinstance(data, bytes) and data[:4] == b"PK\x03\x04":
        raise MalformedTraceError(source, "a zip archive (an Inspect AI .eval log?): convert it with "
                                  "`inspect log convert --to json` and open the .json", 1, 1)
    text = _decode(data, source)
    if not text.strip():
        raise MalformedTraceError(source, "the input is empty", 1, 1)
    first = text.lstrip().split("\n", 1)[0]
    if f'"{FORMAT_NAME}"' in first:
        try:
            head = json.loads(first)
        except ValueError:
            head = None
        if isinstance(head, dict) and head.get("type") == "header":
            trace = parse_trace(text, source)
            notes = trace.meta.get("import_notes")      # what a recorder (collect) could not record, kept shown
            if isinstance(notes, list):
                trace.warnings.extend(n for n in notes if isinstance(n, str))
            return trace
    refuse_long_body_unparsed(text, source)
    try:
        value = json.loads(text, parse_constant=constants.note)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data":
            return _from_jsonl(text, source, constants)
        raise MalformedTraceError(source, f"invalid JSON: {err.msg}", err.lineno, err.colno) from None
    except ValueError:          # an integer over Python's int-string limit
        raise number_too_long(text, source) from None
    return _from_json(value, source)


# --- shape tests ------------------------------------------------------------------------------------

def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value


def _is_request_body(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("messages"), list) and \
        any(k in value for k in _REQUEST_KEYS) or GEMINI.claims(value)   # Gemini: contents[], no messages


def _conversation_key(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    for key in CONVERSATION_KEYS:
        if isinstance(value.get(key), list):
            return key
    return None


def _is_toolbench(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("answer_generation"), dict)


def _is_record(value: Any) -> bool:
    return isinstance(value, dict) and "request" in value


def _from_json(value: Any, source: str) -> Trace:
    if import_responses.looks_like(value):     # Responses API bodies (or records of them): ingest/responses_bodies.py
        return import_responses.to_trace(value if isinstance(value, list) else [value], source)
    if import_otel.looks_like(value):
        gate.check_otlp(value, source)
        return import_otel.to_trace(value, source)
    if import_agents_sdk.looks_like(value):
        return import_agents_sdk.to_trace(value, source)
    if import_inspect.looks_like(value):
        return import_inspect.to_trace(value, source)
    if import_agentscope.looks_like(value):
        warnings: list[str] = []
        trace = _from_conversations([{"messages": import_agentscope.to_messages(value, warnings)}], source,
                                    "agentscope")
        trace.warnings.extend(warnings)
        return trace
    if isinstance(value, dict):
        if _is_record(value):
            return _from_bodies([value], source, "request-response")
        if _is_request_body(value):
            return _from_bodies([value], source, "request-body")
        if set(value) == {"messages"} and isinstance(value["messages"], list):
            # a pasted {"messages": [...]}: one payload (its last messages must be linted too), tools unknown
            return _from_bodies([value], source, "request-body", tools_recorded=False)
        if _is_toolbench(value):
            return _from_toolbench([value], source)
        if _conversation_key(value):
            return _from_conversations([value], source)
        raise MalformedTraceError(source, "a JSON object, but not a request body, a conversation record or a "
                                  f"Chain Studio trace (keys: {', '.join(list(value)[:8])})", 1, 1)
    if isinstance(value, list):
        if not value or all(_is_message(v) for v in value):
            return _from_bodies([{"messages": value}], source, "messages", tools_recorded=False)
        if all(_is_record(v) for v in value):
            return _from_bodies(value, source, "request-response")
        if all(_is_request_body(v) for v in value):
            return _from_bodies(value, source, "request-bodies")
        if all(_is_toolbench(v) for v in value):
            return _from_toolbench(value, source)
        if all(_conversation_key(v) for v in value):
            return _from_conversations(value, source)
        if any(_is_message(v) for v in value):
            return _from_bodies([{"messages": value}], source, "messages", tools_recorded=False)
        raise MalformedTraceError(source, "a JSON array, but neither of messages nor of request bodies or "
                                  "conversation records", 1, 1)
    raise MalformedTraceError(source, f"a JSON {type(value).__name__}, not a trace or a messages list", 1, 1)


def _from_jsonl(text: str, source: str, constants: _Constants) -> Trace:
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line, parse_constant=constants.note)))
        except json.JSONDecodeError as err:
            raise MalformedTraceError(source, f"invalid JSON: {err.msg}", number, err.colno) from None
        except ValueError:      # an integer over Python's int-string limit
            raise number_too_long(line, source, number) from None
    return _from_rows(rows, source)


def _from_rows(rows: list[tuple[int, Any]], source: str) -> Trace:
    """A trace from the parsed lines of a JSONL file: request bodies / records, or conversations."""
    if rows and import_responses.looks_like([row for _, row in rows]):
        return import_responses.to_trace([row for _, row in rows], source, "responses-jsonl")
    for kind in (import_otel, import_agents_sdk):      # exporters that append one export per line
        if rows and kind.looks_like([row for _, row in rows]):
            return kind.to_trace([row for _, row in rows], source)
    bodies = [row for _, row in rows if _is_body_row(row)]
    conversations, warnings = _other_rows([(n, row) for n, row in rows if not _is_body_row(row)], bool(bodies))
    if bodies:
        records = all(_is_record(b) for b in bodies)
        trace = _from_bodies(bodies, source, "request-response-jsonl" if records else "request-jsonl")
    elif conversations:
        tb = [c for c in conversations if _is_toolbench(c)]
        trace = _from_toolbench(tb, source) if tb and len(tb) == len(conversations) else \
            _from_conversations([c for c in conversations if not _is_toolbench(c)], source)
        trace.format += "-jsonl"
    else:
        raise MalformedTraceError(source, "no line holds a request body or a conversation", rows[0][0] if rows else 1, 1)
    trace.warnings[:0] = warnings
    return trace


def _is_body_row(row: Any) -> bool:
    return _is_record(row) or GEMINI.claims(row) or (isinstance(row, dict) and isinstance(row.get("messages"), list)
                                                     and not _conversation_key({k: v for k, v in row.items()
                                                                                if k != "messages"}))


def _other_rows(rows: list[tuple[int, Any]], with_bodies: bool) -> tuple[list, list[str]]:
    """The conversation records among lines that are not request bodies, and the warnings about the others."""
    conversations, warnings = [], []
    for number, row in rows:
        if _conversation_key(row) or _is_toolbench(row):
            conversations.append(row)
        else:
            warnings.append(f"line {number} holds neither a request body nor a conversation and was skipped")
    if with_bodies and conversations:
        warnings.append(f"{len(conversations)} conversation line(s) were skipped: the file mixes request bodies "
                        "and conversation records; only the request bodies were loaded")
    return conversations, warnings


def _from_line_log(path: Path, progress: line_log.Progress | None) -> Trace:
    """``_from_rows`` of a payload log, each request body handed to ``_from_bodies`` as its line is read, so no
    list of every line's messages is held. A first line an exporter's format claims goes through ``_from_rows``."""
    source, rows = str(path), line_log.iter_rows(path, progress)
    first = next(rows, None)
    if first is None or not _is_body_row(first[1]) or any(
            kind.looks_like([first[1]]) for kind in (import_responses, import_otel, import_agents_sdk)):
        return _from_rows(([first] if first else []) + list(rows), source)
    others: list[tuple[int, Any]] = []
    records = [True]

    def bodies() -> Any:
        for number, row in itertools.chain([first], rows):
            if _is_body_row(row):
                records[0] = records[0] and _is_record(row)
                yield row
            else:
                others.append((number, row))
    trace = _from_bodies(bodies(), source, "request-jsonl")
    trace.format = "request-response-jsonl" if records[0] else "request-jsonl"
    trace.warnings[:0] = _other_rows(others, True)[1]
    return trace


# --- request bodies: one call each ------------------------------------------------------------------

def _from_bodies(items: Iterable, source: str, fmt: str, tools_recorded: bool = True) -> Trace:
    trace = Trace(source=source, format=fmt)
    trace.meta["tools_recorded"] = tools_recorded
    builder = StreamBuilder()
    runs = PayloadRuns()        # messages as runs over one shared array: O(1) per call beyond its new messages
    pack = Packer()
    positions_per_call: list[tuple[Call, list[int]]] = []
    unmapped: dict[str, int] = {}
    for n, item in enumerate(items):
        if _is_record(item):
            request, response = item.get("request"), item.get("response")
            for k in item:
                if k not in ("request", "response", "status", "error", "latency_ms", "started_at", "timestamp"):
                    unmapped[k] = unmapped.get(k, 0) + 1
        else:
            request, response = item, None
        if not isinstance(request, dict):
            trace.warnings.append(f"record {n}: the request is {type(request).__name__}, not a JSON object; "
                                  "kept as an empty request")
            request = {}
        messages = request.get("contents" if GEMINI.claims(request) else "messages")   # Gemini: its contents, as sent
        if not isinstance(messages, list):
            trace.warnings.append(f"record {n}: the request has no messages list")
            messages = []
        check_body(request, source, f"request {n}")
        positions, stream_index = builder.match(messages)
        if trace.calls:     # now it is known whether this request re-sends the previous reply
            _pack_response(trace.calls[-1], messages[builder.extends:], pack)
        request, payload = runs.call(request, messages, positions, builder.extends)
        extra = item if _is_record(item) else {}
        status = extra.get("status") if isinstance(extra.get("status"), int) else None
        trace.calls.append(Call(index=n, request=request, response=response if isinstance(response, dict) else None,
                                status=status, error=extra.get("error") if isinstance(extra.get("error"), str) else None,
                                latency_ms=extra.get("latency_ms") if isinstance(extra.get("latency_ms"), (int, float))
                                else None, started_at=extra.get("started_at") or extra.get("timestamp")
                                if isinstance(extra.get("started_at") or extra.get("timestamp"), str) else None,
                                stream_index=stream_index))
        if payload is not None:
            trace.calls[-1].payload = payload
        else:
            positions_per_call.append((trace.calls[-1], positions))
    if unmapped:
        trace.warnings.append("record keys not mapped to the trace: " +
                              ", ".join(f"{k} ({v}x)" for k, v in unmapped.items()))
    if trace.calls:
        _pack_response(trace.calls[-1], None, pack)
        reply = trace.calls[-1].reply
        if reply is not None:
            builder.match(trace.calls[-1].messages + [reply])
    trace.stream = link_stream(builder.msgs)
    ids = [m.id for m in trace.stream]      # ``trace.stream`` is a descriptor: read once, not per payload slot
    runs.finish(ids)
    for c, positions in positions_per_call:
        c.message_ids = [ids[p] for p in positions]
    return trace


def _pack_response(call: Call, sent_next: list | None, pack: Packer) -> None:
    """``call``'s response as deflated text (``trace/packed.py``); its reply kept as an object only when the next
    request re-sends that very object (``sent_next``: that request's new messages; None: the last call, whose reply
    joins the stream). A reply sent back changed (``null`` content sent as ``""``) is text like the rest."""
    response = Unpacked.stored(call, "response")
    if type(response) is dict:
        reply = call.reply
        call.response = pack(response, reply is not None and (sent_next is None or any(m is reply for m in sent_next)))


# --- conversation records: one call per assistant message --------------------------------------------

def _record_name(record: dict, n: int, source: str) -> str:
    if "task_id" in record:
        name = f"task {record['task_id']}"
        return name + (f" trial {record['trial']}" if "trial" in record else "")
    for key in ("name", "id", "instance_id", "conversation_id"):
        if isinstance(record.get(key), (str, int)):
            return str(record[key])
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    if isinstance(info.get("instance_id"), str):
        return info["instance_id"]
    return f"{Path(source).name} #{n}" if n else Path(source).name


def _normalise_swe(messages: list, warnings: list[str]) -> list:
    """SWE-agent history -> what SWE-agent sends: ``tool_call_ids[0]`` becomes ``tool_call_id``; its own keys go."""
    out, stripped, multi = [], {}, 0
    for m in messages:
        if not isinstance(m, dict):
            out.append(m)
            continue
        if not any(k in m for k in _SWE_EXTRA):
            out.append(m)
            continue
        new = {k: m[k] for k in m if k in _MESSAGE_KEYS}
        ids = m.get("tool_call_ids")
        if isinstance(ids, list) and ids and "tool_call_id" not in new:
            new["tool_call_id"] = ids[0]
            multi += len(ids) > 1
        for k in m:
            if k not in _MESSAGE_KEYS:
                stripped[k] = stripped.get(k, 0) + 1
        out.append(new)
    if stripped:
        warnings.append("SWE-agent keys not sent to the API were left out of the payloads: " +
                        ", ".join(f"{k} ({v}x)" for k, v in stripped.items()) +
                        "; tool_call_ids[0] became tool_call_id")
    if multi:
        warnings.append(f"{multi} tool message(s) listed several tool_call_ids; only the first was kept")
    return out


def _from_conversations(records: list, source: str, fmt: str | None = None) -> Trace:
    keys = {_conversation_key(r) for r in records}
    if fmt is None:
        fmt = "tau-bench" if keys == {"traj"} else "swe-agent" if keys == {"history"} else "conversations"
    trace = Trace(source=source, format=fmt)
    trace.meta["tools_recorded"] = False
    conversations = []
    for n, record in enumerate(records):
        key = _conversation_key(record)
        messages = record[key]
        if key == "history" or any(isinstance(m, dict) and "tool_call_ids" in m for m in messages):
            messages = _normalise_swe(messages, trace.warnings)
        tools = record.get("tools") if isinstance(record.get("tools"), list) else None
        model = record.get("model") if isinstance(record.get("model"), str) else None
        name = _record_name(record, n, source) if len(records) > 1 or n else _record_name(record, 0, source)
        conversations.append((name, messages, tools, model))
    _add_conversations(trace, conversations)
    return trace


def _add_conversations(trace: Trace, conversations: list) -> None:
    ranges = []
    for name, messages, tools, model in conversations:
        first_call, first_msg = len(trace.calls), len(trace.stream)
        kept = [m for m in messages if isinstance(m, dict)]
        if len(kept) != len(messages):
            trace.warnings.append(f"{name}: {len(messages) - len(kept)} entries that are not message objects "
                                  "were skipped")
        stream = link_stream(Msg.from_openai(m) for m in kept)
        if tools is not None:
            trace.meta["tools_recorded"] = True
        for i, m in enumerate(kept):
            if m.get("role") != "assistant":
                continue
            request: dict[str, Any] = {}
            if model:
                request["model"] = model
            request["messages"] = kept[:i]
            if tools is not None:
                request["tools"] = tools
            trace.calls.append(Call(index=len(trace.calls), request=request,
                                    response={"choices": [{"message": m}]}, stream_index=first_msg + i,
                                    message_ids=[s.id for s in stream[:i]]))
        trace.stream.extend(stream)
        ranges.append({"name": name, "calls": [first_call, len(trace.calls)],
                       "messages": [first_msg, len(trace.stream)]})
    trace.meta["conversations"] = ranges


# --- ToolBench: one call per chain ------------------------------------------------------------------

def _from_toolbench(records: list, source: str) -> Trace:
    """ToolBench answers: each ``train_messages`` chain is one model step (request + the reply it ends on)."""
    trace = Trace(source=source, format="toolbench")
    ranges = []
    for n, record in enumerate(records):
        ag = record["answer_generation"]
        chains = ag.get("train_messages") if isinstance(ag.get("train_messages"), list) else []
        functions = ag.get("function") if isinstance(ag.get("function"), list) else None
        name = str(ag.get("query") or "")[:60].strip() or f"{Path(source).name} #{n}"
        if not chains:
            trace.warnings.append(f"{name}: no train_messages (valid_data is {ag.get('valid_data')!r}); "
                                  "nothing to load")
        bodies = []
        for k, chain in enumerate(chains):
            if not isinstance(chain, list) or not chain or not _is_message(chain[-1]):
                trace.warnings.append(f"{name}: chain {k} is not a list of messages and was skipped")
                continue
            request: dict[str, Any] = {"messages": chain[:-1]}
            if functions is not None:
                request["functions"] = functions
            bodies.append({"request": request, "response": {"choices": [{"message": chain[-1]}]}})
        sub = _from_bodies(bodies, source, "toolbench")
        first_call, first_msg = len(trace.calls), len(trace.stream)
        for c in sub.calls:
            c.index = len(trace.calls)
            if c.stream_index is not None:
                c.stream_index += first_msg
            trace.calls.append(c)
        trace.stream.extend(sub.stream)
        trace.warnings.extend(sub.warnings)
        ranges.append({"name": name, "calls": [first_call, len(trace.calls)],
                       "messages": [first_msg, len(trace.stream)]})
    trace.meta["conversations"] = ranges
    trace.meta["tools_recorded"] = True
    trace.warnings.append("ToolBench uses the legacy functions API (function_call / role 'function', no ids); "
                          "importers.convert_legacy converts it to tool_calls")
    return trace


def split_conversations(trace: Trace) -> list[Trace]:
    """One trace per entry of ``meta["conversations"]`` (the trace itself when there is none)."""
    ranges = trace.meta.get("conversations")
    if not ranges or len(ranges) == 1:
        return [trace]
    out = []
    for r in ranges:
        c0, c1 = r["calls"]
        m0, m1 = r["messages"]
        calls = []
        for c in trace.calls[c0:c1]:
            c = copy.copy(c)
            c.index -= c0
            if c.stream_index is not None:
                c.stream_index -= m0
            calls.append(c)
        meta = {k: v for k, v in trace.meta.items() if k != "conversations"}
        meta["conversation"] = r["name"]
        out.append(Trace(source=f"{trace.source} [{r['name']}]", format=trace.format, calls=calls,
                         stream=trace.stream[m0:m1], meta=meta, warnings=list(trace.warnings)))
    return out
