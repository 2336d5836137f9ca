"""Mutated and random traces on every page: a page may refuse a trace in one sentence, never crash."""
from __future__ import annotations

import json
import random

import pytest
from conftest import visit_every_page

from agent_core.core.errors import MalformedTraceError
from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest.detect import parse_any

SEED_FILES = ["naive_trim_orphan.jsonl", "huge_tool_result.jsonl"]


def _mutants(count: int) -> list[bytes]:
    """Seeded byte-level mutations of sample traces that still load (the others are loader fuzz cases)."""
    rng = random.Random(8)
    out: list[bytes] = []
    while len(out) < count:
        raw = bytearray((SAMPLE_TRACES / rng.choice(SEED_FILES)).read_bytes())
        lines = raw.split(b"\n")
        i = rng.randrange(1, len(lines) - 1)
        choice = rng.random()
        if choice < 0.3:
            del lines[i]                                    # a lost event
        elif choice < 0.6:
            lines.insert(i, lines[rng.randrange(1, len(lines) - 1)])   # a duplicated event
        else:
            event = json.loads(lines[i]) if lines[i].strip() else {}
            for key in list(event)[1:]:
                if rng.random() < 0.4:
                    event[key] = rng.choice([None, 0, -1, "", [], {}, "x" * 50, [[0, 99]], {"b": 0}])
            lines[i] = json.dumps(event).encode()
        data = b"\n".join(lines)
        try:
            parse_any(data, "<mutant>")
        except MalformedTraceError:
            continue
        out.append(bytes(data))
    return out


def _random_payload_logs(count: int) -> list[bytes]:
    rng = random.Random(9)
    roles = ["system", "user", "assistant", "tool", "function", "developer", None]
    out = []
    for _ in range(count):
        lines = []
        history: list[dict] = []
        for _ in range(rng.randint(1, 6)):
            for _ in range(rng.randint(1, 3)):
                m: dict = {"role": rng.choice(roles), "content": rng.choice([None, "", "hi", "<b>x</b>", [1], {"a": 1}])}
                if rng.random() < 0.3:
                    m["tool_calls"] = [{"id": rng.choice(["a", "b", None, 3]), "type": "function",
                                        "function": {"name": rng.choice(["f", "bad name", None]),
                                                     "arguments": rng.choice(["{}", "{bad", None, 5])}}]
                if rng.random() < 0.3:
                    m["tool_call_id"] = rng.choice(["a", "b", None, 7])
                history.append(m)
            lines.append(json.dumps({"model": rng.choice(["gpt-4o", 5, None]), "messages": list(history)}))
        out.append("\n".join(lines).encode())
    return out


CASES = _mutants(6) + _random_payload_logs(4)


@pytest.mark.parametrize("data", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_pages_survive_hostile_traces(open_studio, tmp_path, data):
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data)
    at = open_studio(path)
    visit_every_page(at)
