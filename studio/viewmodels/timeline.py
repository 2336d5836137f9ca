"""The Timeline screen's rows (one per API call) and the links between a payload's tool calls and results."""
from __future__ import annotations

from dataclasses import dataclass

from agent_core.apis.base import api_for_body
from agent_core.apis.responses import RESPONSES, input_items
from agent_core.trace.model import Call, Trace
from agent_core.trace.tokens import counter_for

from .drops import Dropped
from .findings import findings_by_call, problems
from .tokens import CallTokens

FILTERS = ("findings", "failed", "dropped")
"""The Timeline's row filters: calls with findings, failed calls, calls where something was dropped."""
DROP_MARK = "✂"
"""The marker in the dropped column (a fixed symbol of ours, never trace data)."""


def tools_count(trace: Trace, tools: list | None) -> int | None:
    """How many tools a call declared; None (not 0) when the source did not record tools at all."""
    if not tools and trace.meta.get("tools_recorded", True) is False:
        return None
    return len(tools or [])


ITEM_NOUNS = {"chat-completions": "messages", "anthropic-messages": "messages", "responses": "input items",
              "gemini": "contents"}
"""What each wire API calls the elements of the conversation it sends (its body key's items)."""


def conversation_size(call) -> tuple[int | None, str]:  # noqa: ANN001
    """How many conversation elements a call sent, and their name in its wire API (``ITEM_NOUNS``): a Responses
    call sends input items and a Gemini call contents, not ``messages`` (counting those gave 0). None when the
    body holds no list there."""
    if call.payload is not None:        # a call read from a trace file: Chat Completions runs, no list built
        return len(call.payload), "messages"
    head = call.request_head()
    if RESPONSES.claims(head):
        return len(input_items(head)), ITEM_NOUNS[RESPONSES.name]
    api = api_for_body(call.request)
    items = api.items(call.request)
    return (len(items) if isinstance(items, list) else None), ITEM_NOUNS.get(api.name, "messages")


def timeline_rows(trace: Trace, series: list[CallTokens] | None, findings: list[dict],
                  drops: dict[int, list[Dropped]] | None = None) -> list[dict]:
    """One row per API call, for the timeline table; ``dropped`` counts the messages a trim removed
    just before the call (``✂ 2``, ``✂ 2 inferred`` when read from the payloads). With no ``series`` the rows'
    ``estimated`` is None: the screen counts the rows it shows (``page_estimates``), not all 25,000."""
    # Info notes stay in the call's detail, out of the problems column.
    by_call = findings_by_call(problems(findings))
    drops = drops or {}
    rows = []
    for call, t in zip(trace.calls, series if series is not None else [None] * len(trace.calls)):
        rules = sorted({f.get("rule", "?") for f in by_call.get(call.index, [])})
        gone = drops.get(call.index, [])
        mark = ""
        if gone:
            mark = f"{DROP_MARK} {len(gone)}" + (" inferred" if all(d.inferred for d in gone) else "")
        rows.append({
            "call": call.index,
            "time": call.started_at[11:23] if isinstance(call.started_at, str) else "",   # a file may hold any JSON
            "latency_ms": call.latency_ms,
            "model": call.model or "",
            "messages": conversation_size(call)[0],
            "tools": tools_count(trace, call.tools),
            "estimated": t.estimated if t is not None else None,
            "reported": call.reported_prompt_tokens,     # what the series reports too
            "finish": call.finish_reason or ("error" if call.failed else ""),
            "status": call.status,
            "findings": ", ".join(rules),
            "dropped": mark,
            "failed": bool(call.failed),
            "purpose": call.purpose,
        })
    return rows


def with_findings(rows: list[dict], findings: list[dict]) -> list[dict]:
    """``rows`` made by ``timeline_rows`` without findings, with the problems among ``findings`` in their
    ``findings`` column (the same rows ``timeline_rows`` gives with them): the rows can be built while the trace
    is still being linted. Rows without a problem are the same objects."""
    by_call = findings_by_call(problems(findings))
    if not by_call:
        return rows
    at = {r["call"]: i for i, r in enumerate(rows)}
    out = list(rows)
    for call, found in by_call.items():
        if call in at:
            out[at[call]] = {**rows[at[call]], "findings": ", ".join(sorted({f.get("rule", "?") for f in found}))}
    return out


def needs_whole_series(trace: Trace, calls: list[int]) -> bool:
    """Whether the estimates of ``calls`` need the whole trace's token series: a Responses API call is counted
    on its effective input, which its chain of earlier calls makes (``responses_token_series``)."""
    return any(trace.calls[i].payload is None and RESPONSES.claims(trace.calls[i].request_head()) for i in calls)


def page_estimates(calls: list[Call]) -> dict[int, int]:
    """Call index -> its whole-request estimate (the token series' count: messages, tool definitions, reply
    priming), for the calls of one table page: the first counted whole, each next one by what it adds."""
    out: dict[int, int] = {}
    start = 0
    while start < len(calls):
        counter = counter_for(calls[start].model)
        end = start
        while end < len(calls) and counter_for(calls[end].model) is counter:
            end += 1
        for call, parts in zip(calls[start:end], counter.count_calls_by_role(calls[start:end])):
            out[call.index] = sum(parts.values())
        start = end
    return out


def page_rows(rows: list[dict], estimates: dict[int, int], selected: int) -> list[dict]:
    """The table page's rows with their estimates and the ▶ marker on the selected call."""
    return [{**r, "estimated": estimates.get(r["call"], r["estimated"]), "at": "▶" if r["call"] == selected else ""}
            for r in rows]


def filter_rows(rows: list[dict], wanted: list[str] | tuple[str, ...]) -> list[dict]:
    """The rows matching every filter in ``wanted`` (names from ``FILTERS``); all rows when none."""
    test = {"findings": lambda r: bool(r["findings"]), "failed": lambda r: bool(r["failed"]),
            "dropped": lambda r: bool(r["dropped"])}
    checks = [test[w] for w in wanted if w in test]
    return [r for r in rows if all(check(r) for check in checks)]


TABLE_COLUMNS = ["at", "call", "dropped", "findings", "time", "latency_ms", "messages", "tools", "estimated",
                 "reported", "finish", "status"]
"""The call table's columns, in order (``model`` goes before ``latency_ms`` when the trace has several models)."""
ALWAYS_SHOWN = ("at", "call", "findings", "dropped", "estimated")


@dataclass(frozen=True)
class TableView:
    """What the call table shows of a trace's rows under some filters: built once per trace, profile and filters,
    not on each step (at 25,000 calls each of these walks the rows: 25 ms a step together)."""

    shown: list[dict]
    """The rows matching the filters, in call order."""
    positions: dict[int, int]
    """Call index -> its position among ``shown``."""
    columns: list[str]
    """The columns to show: ``TABLE_COLUMNS``, with ``model`` when there are several, without those empty in every
    row (imported payload logs often record no time, latency, usage or status)."""
    failed: int
    """How many calls of the whole trace failed."""


def table_view(rows: list[dict], filters: list[str] | tuple[str, ...]) -> TableView:
    """The call table's view of ``rows`` (``timeline_rows``) under ``filters`` (names from ``FILTERS``)."""
    shown = filter_rows(rows, filters) if filters else rows
    columns = list(TABLE_COLUMNS)
    if len({r["model"] for r in rows}) > 1:
        columns.insert(5, "model")
    columns = [c for c in columns if c in ALWAYS_SHOWN or any(r[c] not in (None, "") for r in rows)]
    return TableView(shown, {r["call"]: i for i, r in enumerate(shown)}, columns, sum(1 for r in rows if r["failed"]))


def page_of(position: int, page_size: int) -> int:
    """The 1-based table page showing row ``position`` (0-based)."""
    return max(0, position) // page_size + 1


def tool_links(messages: list[dict], upto: int | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """(call id -> index of the assistant message that made it, call id -> index of its tool result), each the
    first such message of ``messages``. With ``upto``, complete only for the ids the messages before ``upto`` name
    (the ones on screen): past it the walk stops once each of those has both ends, so a step to a 25,000-message
    payload reads its first page's neighbours, not the whole list (an id never answered still reads to the end)."""
    made, answered = {}, {}
    open_ids: set[str] = set()        # named before ``upto``, one end not found yet
    for i, m in enumerate(messages):
        if upto is not None and i >= upto and not open_ids:
            break
        if not isinstance(m, dict):
            continue
        for c in m.get("tool_calls") if isinstance(m.get("tool_calls"), list) else []:
            if isinstance(c, dict) and c.get("id"):
                made.setdefault(str(c["id"]), i)
                _settle(open_ids, str(c["id"]), answered, upto is not None and i < upto)
        if m.get("role") == "tool" and m.get("tool_call_id"):
            answered.setdefault(str(m["tool_call_id"]), i)
            _settle(open_ids, str(m["tool_call_id"]), made, upto is not None and i < upto)
    return made, answered


def _settle(open_ids: set[str], call_id: str, other_end: dict[str, int], named: bool) -> None:
    """``call_id`` has one end now: it stays open while named on screen and the other end is still missing."""
    if call_id in other_end:
        open_ids.discard(call_id)
    elif named:
        open_ids.add(call_id)
