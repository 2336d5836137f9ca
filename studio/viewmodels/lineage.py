"""The lineage page's data: the parent_id graph, turns, and which calls carried a message.

Graph labels are plain text. ``to_dot`` quotes every label, so message text
can never turn into Graphviz HTML labels or break out of the DOT source.
"""
from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field

from agent_core.core.msg import Msg
from agent_core.trace.model import Trace

ROLE_COLORS = {"system": "#6b7280", "user": "#2563eb", "assistant": "#059669", "tool": "#d97706"}
"""One color per role, used by every studio page."""
OTHER_COLOR = "#9333ea"
_BREAKS = "\x1c\x1d\x1e\x85\u2028\u2029"


@dataclass(frozen=True)
class Turn:
    """A user message and everything that followed it until the next user message."""

    number: int
    """1-based turn number (turn 0 holds what came before the first user message, e.g. system)."""
    messages: list[Msg] = field(default_factory=list)
    """The turn's messages in stream order."""

    def sequence(self) -> list[str]:
        """The flow as labels: ``user``, ``assistant(tool_calls: get_weather)``, ``tool``, ``assistant``."""
        out = []
        for m in self.messages:
            if m.role == "assistant" and m.tool_calls:
                names = ", ".join(_call_name(c) for c in m.tool_calls if isinstance(c, dict))
                out.append(f"assistant(tool_calls: {names})")
            else:
                out.append(str(m.role))
        return out


def turns(trace: Trace) -> list[Turn]:
    """Split the stream at user messages."""
    result: list[Turn] = []
    current: list[Msg] = []
    number = 0
    for m in trace.stream:
        if m.role == "user" and (current or number == 0):
            if current:
                result.append(Turn(number, current))
            number += 1
            current = []
        current.append(m)
    if current:
        result.append(Turn(number, current))
    return result


def calls_including(trace: Trace, msg_id: str) -> list[int]:
    """Indices of the calls whose payload held the message ``msg_id`` (a call read from a trace file is tested by
    its runs: ``Payload.holds``; building every call's id list took 3 s at 25,000 calls)."""
    positions: dict[int, list[int]] = {}
    return [c.index for c in trace.calls
            if (c.payload.holds(msg_id, positions) if c.payload is not None else msg_id in c.message_ids)]


def _call_name(call: dict) -> str:
    """A tool call's function name for a label; ``?`` when the call has no function object (any JSON may be there)."""
    fn = call.get("function")
    return str(fn.get("name", "?")) if isinstance(fn, dict) else "?"


def _label(m: Msg, width: int = 28) -> str:
    text = " ".join(m.text.split())
    if not text and m.tool_calls:
        text = ", ".join(_call_name(c) for c in m.tool_calls if isinstance(c, dict))
        text = f"calls {text}"
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"{m.role}\n{text}" if text else str(m.role)


def _dot_quote(text: str) -> str:
    """A DOT double-quoted string: backslashes, quotes and newlines escaped, nothing else interpreted."""
    text = "".join(" " if (ch != "\n" and (unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BREAKS))
                   else ch for ch in text)
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


@dataclass(frozen=True)
class Graph:
    """Nodes and parent -> child edges of a window of the stream."""

    nodes: list[tuple[str, str, str]]
    """(id, label, role) per message."""
    edges: list[tuple[str, str]]
    """(parent id, child id); parents outside the window are left out."""
    dropped: set[str] = field(default_factory=set)
    """Ids a trim or clear removed (drawn dashed)."""

    def to_dot(self, rankdir: str = "TB") -> str:
        rankdir = rankdir if rankdir in ("TB", "LR") else "TB"
        lines = ['digraph lineage {', f'  rankdir={rankdir}; nodesep=0.25; ranksep=0.3;',
                 '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, '
                 'fontcolor=white, margin="0.15,0.06"];']
        for node_id, label, role in self.nodes:
            color = ROLE_COLORS.get(role, OTHER_COLOR)
            style = ', style="rounded,filled,dashed", fillcolor="#e5e7eb", fontcolor="#374151"' \
                if node_id in self.dropped else f', fillcolor="{color}", color="{color}"'
            lines.append(f"  {_dot_quote(node_id)} [label={_dot_quote(label)}{style}];")
        for parent, child in self.edges:
            lines.append(f"  {_dot_quote(parent)} -> {_dot_quote(child)};")
        lines.append("}")
        return "\n".join(lines)


def lineage_graph(trace: Trace, first_turn: int = 0, max_turns: int = 5) -> Graph:
    """The parent_id graph of ``max_turns`` turns from position ``first_turn`` of ``turns(trace)``."""
    window = turns(trace)[first_turn: first_turn + max_turns]
    msgs = [m for t in window for m in t.messages]
    ids = {_node_id(m.id) for m in msgs}
    dropped = {_node_id(i) for e in trace.events for i in e.event.removed}
    return Graph(nodes=[(_node_id(m.id), _label(m), str(m.role)) for m in msgs],
                 edges=[(_node_id(m.parent_id), _node_id(m.id)) for m in msgs
                        if m.parent_id is not None and _node_id(m.parent_id) in ids],
                 dropped=dropped & ids)


def _node_id(value: object) -> str:
    """Ids are strings in our traces; a damaged file may hold anything, so compare their JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def compact_ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0–2, 5, 7–8``: a call list a person can read."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in runs)
