"""What the Replay page shows of its replays, as plain JSON values: built from the replay results on the page, or
read back from the view store where the replay worker (``studio/replay_worker.py``) left it for a big trace.

The page renders only from these values, whichever side built them, so a first visit served from the store
shows exactly what a page that replayed the trace itself shows. A stored view is checked value by value against
``SCHEMA`` (``parse``): anything of another shape is refused (None: the page replays), never trusted.

- ``columns``: per replayed policy its legend label, name, price label and the four totals the page's metrics show;
- ``chart``: the prompt-token lines at screen resolution (``binned``: at most ``points`` means of consecutive
  calls), the recorded line first, and per policy the calls it would get rejected (markers);
- ``indexes``: the replayed calls' indexes (the call picker's range);
- ``heatmap`` and ``stories``: the retention heatmap and "why did it forget?" (stories per language);
- ``detail``: one call of every policy (the call picker's default, the last one): counts, the first ``LISTED``
  messages only in the replay / only in the recorded payload as one line each, the errors the policy introduces
  and the other findings (exported dicts). The page's lazy expanders (dropped messages, payload) read the replay
  itself when opened.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from studio.viewmodels.forgetting import FactStory, Outcome

LISTED = 20
"""Messages listed per side of a call's diff (only in the replay, only in the recorded payload)."""


def binned(x: list[int], y: list[float], points: int) -> tuple[list, list]:
    """A line of many calls as at most ``points`` (middle call, mean) pairs; unchanged when it fits."""
    n = len(x)
    if n <= points:
        return list(x), list(y)
    size = -(-n // points)
    xs, ys = [], []
    for a in range(0, n, size):
        b = min(n, a + size)
        xs.append((x[a] + x[b - 1]) / 2)
        ys.append(sum(y[a:b]) / (b - a))
    return xs, ys


def column(result, totals: dict) -> dict:
    """One policy's header: label, name, price label and the totals the metrics show."""
    return {"label": result.label, "policy": result.policy, "price": result.pricing.label,
            **{k: totals[k] for k in ("tokens", "recorded_tokens", "cost_usd", "recorded_cost_usd", "rejected")}}


def chart(results: list, points: int) -> dict:
    """The prompt-token lines: recorded (the first policy's recorded counts), then per policy its line and the
    calls it would get rejected (None when none)."""
    base = results[0].calls
    lines = []
    for r in results:
        bad = [c for c in r.calls if c.rejected]
        lines.append({"label": r.label, "policy": r.policy,
                      "line": list(binned([c.call for c in r.calls], [c.tokens for c in r.calls], points)),
                      "rejected": list(binned([c.call for c in bad], [c.tokens for c in bad], points)) if bad else None})
    return {"calls": len(base), "recorded": list(binned([c.call for c in base], [c.recorded_tokens for c in base], points)),
            "lines": lines}


def call_detail(rc, by_id: dict, short: Callable[[dict], str]) -> dict:
    """One replayed call (``ReplayedCall``) as the page's column shows it with its expanders closed."""
    out = {"messages": len(rc.messages), "tokens": rc.tokens, "recorded_tokens": rc.recorded_tokens,
           "same": bool(rc.same), "kept": 0, "added": [], "added_n": 0, "dropped": [], "dropped_n": 0,
           "introduced": [], "others": [], "gone": len(rc.dropped)}
    if not rc.same:
        d = rc.diff

        def line(mid: str) -> str:
            m = by_id.get(mid)
            return f"{m.role}: {short(m.to_openai())}" if m is not None else mid
        out.update(kept=len(d.kept), added=[line(i) for i in d.added[:LISTED]], added_n=len(d.added),
                   dropped=[line(i) for i in d.dropped[:LISTED]], dropped_n=len(d.dropped))
    introduced = rc.introduced
    out["introduced"] = [f.export() for f in introduced]
    out["others"] = [f.export() for f in rc.findings if f not in introduced]
    return out


PREPARING, COUNTING, REPLAYING, VIEW, PROBING = range(5)
"""The stages a forked child reports while it computes the first view (``replay_worker.Progress``), in the order
PREPARING (linting), COUNTING, PROBING, REPLAYING, VIEW."""
_SHARES = {PREPARING: (0.0, 0.05), COUNTING: (0.05, 0.4), PROBING: (0.4, 0.5), REPLAYING: (0.5, 0.9),
           VIEW: (0.9, 1.0)}
"""Where each stage starts and ends on the bar: about its share of the wait at 25,000 calls (the phase log: the
count 2.5 s, the probes 0.6 s, two replays 2.7 s, the view 0.8 s)."""


def progress(stage: int, done: int, total: int, calls: int, policies: list[str]) -> tuple[float, str, str]:
    """The Replay page's bar while a forked child computes its first view: the share done (0 to 1) and its text in
    English and in Chinese, from the child's (``stage``, ``done``, ``total``) for a trace of ``calls`` calls
    replayed under ``policies``."""
    start, end = _SHARES.get(stage, (0.0, 0.05))
    part = min(1.0, max(0.0, done / total)) if total > 0 else 0.0
    share = start + (end - start) * part
    if stage == COUNTING:
        return (share, f"Counting the tokens of {total:,} messages for the replays: {part:.0%} …",
                f"正在为重放计数 {total:,} 条消息的 token：{part:.0%} …")
    if stage == REPLAYING and 0 <= done < len(policies):
        name = policies[done]
        return (share, f"Replaying {calls:,} calls under {name} ({done + 1} of {len(policies)}) …",
                f"正在按 {name} 重放 {calls:,} 次调用（{done + 1} / {len(policies)}）…")
    if stage == PROBING:
        return (share, "Finding the facts to follow and what the recorded payloads kept of them …",
                "正在找出要跟踪的事实，以及录制的请求保留了哪些 …")
    if stage == VIEW:
        return (share, "Building the view: totals, retention heatmap, why each fact was forgotten …",
                "正在生成视图：合计、保留热图、每个事实为何被遗忘 …")
    return (share, f"Preparing the replay of {calls:,} calls in a background process …",
            f"正在后台进程中准备重放 {calls:,} 次调用 …")


def stories_json(stories: list[FactStory]) -> list:
    return [[s.fact, [[list(o.sources), o.text, list(o.calls), o.forgotten] for o in s.outcomes]] for s in stories]


RECORDED = "recorded · "
"""How a heatmap row of the recorded payloads starts (``replay_services.heatmap_rows``: source · probe)."""
RECORDED_ZH = "实际记录 · "


def heatmap_json(hm) -> dict:
    return {"labels": list(hm.labels), "x": list(hm.x), "z": [list(r) for r in hm.z],
            "hover": [[list(h) for h in r] for r in hm.hover], "binned": bool(hm.binned)}


def view(results: list, totals: list[dict], points: int, heatmap, stories: dict[str, list[FactStory]] | None,
         call: int, by_id: dict, short: Callable[[dict], str]) -> dict:
    """The whole first-visit view (``heatmap`` None and ``stories`` None when there are no probes)."""
    return {"columns": [column(r, t) for r, t in zip(results, totals)], "chart": chart(results, points),
            "indexes": [c.call for c in results[0].calls],
            "heatmap": heatmap_json(heatmap) if heatmap is not None else None,
            "stories": {lang: stories_json(s) for lang, s in stories.items()} if stories is not None else None,
            "call": call, "detail": [call_detail(r.call(call), by_id, short) for r in results]}


# --- reading a stored view back -------------------------------------------------

NUM = "num"
SCALAR = "scalar"
SCHEMA = {
    "columns": [{"label": str, "policy": str, "price": str, "tokens": int, "recorded_tokens": int,
                 "cost_usd": NUM, "recorded_cost_usd": NUM, "rejected": int}],
    "chart": {"calls": int, "recorded": [[NUM]],
              "lines": [{"label": str, "policy": str, "line": [[NUM]], "rejected": ("opt", [[NUM]])}]},
    "indexes": [int],
    "heatmap": ("opt", {"labels": [str], "x": [NUM], "z": [[NUM]], "hover": [[[int]]], "binned": bool}),
    "stories": ("opt", ("map", [[SCALAR]])),
    "call": int,
    "detail": [{"messages": int, "tokens": int, "recorded_tokens": int, "same": bool, "kept": int, "added": [str],
                "added_n": int, "dropped": [str], "dropped_n": int, "introduced": [("map", SCALAR)],
                "others": [("map", SCALAR)], "gone": int}],
}
"""The shape of a view: a type, a list of one shape, a dict of fixed keys, ("opt", shape) for a shape or None,
("map", shape) for a dict of string keys, NUM an int or float, SCALAR any JSON value but a dict."""


def _fits(value: object, shape: object) -> bool:
    if shape is NUM:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if shape is SCALAR:
        return not isinstance(value, dict)
    if isinstance(shape, type):
        return isinstance(value, shape) and (shape is bool or not isinstance(value, bool))
    if isinstance(shape, list):
        return isinstance(value, list) and all(_fits(v, shape[0]) for v in value)
    if isinstance(shape, tuple):
        if shape[0] == "opt":
            return value is None or _fits(value, shape[1])
        return isinstance(value, dict) and all(isinstance(k, str) and _fits(v, shape[1]) for k, v in value.items())
    return isinstance(value, dict) and value.keys() == shape.keys() and all(_fits(value[k], s) for k, s in shape.items())


@dataclass(frozen=True)
class FirstView:
    """A checked view (see the module's docstring): the page reads its fields as the values above."""

    columns: list[dict]
    chart: dict
    indexes: list[int]
    heatmap: dict | None
    stories: dict[str, list] | None
    call: int
    detail: list[dict]

    def heatmap_labels(self, lang: str) -> list[str]:
        """The heatmap's row labels in ``lang``: under 中文 the recorded rows say so in Chinese (a policy keeps the
        name the user picked it by; the probe is trace data, shown as given)."""
        labels = list(self.heatmap["labels"]) if self.heatmap else []
        if lang != "zh":
            return labels
        return [RECORDED_ZH + label[len(RECORDED):] if label.startswith(RECORDED) else label for label in labels]

    def story_list(self, lang: str) -> list[FactStory] | None:
        """The stories in ``lang`` (None when not stored in it)."""
        raw = (self.stories or {}).get(lang)
        if raw is None:
            return None
        return [FactStory(fact, [Outcome(tuple(src), text, tuple(calls), forgotten)
                                 for src, text, calls, forgotten in outs]) for fact, outs in raw]


def _stories_fit(stories: dict | None) -> bool:
    def outcome(o: object) -> bool:
        return (isinstance(o, list) and len(o) == 4 and _fits(o[0], [str]) and isinstance(o[1], str)
                and _fits(o[2], [int]) and isinstance(o[3], bool))
    return stories is None or all(
        isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) and isinstance(s[1], list)
        and all(outcome(o) for o in s[1]) for v in stories.values() for s in v)


def parse(stored: object, policies: int) -> FirstView | None:
    """The view ``stored`` of ``policies`` columns, or None unless every value has its shape (and the columns,
    lines and details agree in number, the heatmap's rows with its hovers, the chart with the indexes)."""
    if not _fits(stored, SCHEMA) or not _stories_fit(stored["stories"]):
        return None
    v = FirstView(**stored)
    if not (len(v.columns) == len(v.chart["lines"]) == len(v.detail) == policies and v.indexes
            and v.chart["calls"] == len(v.indexes) and v.call in v.indexes
            and all(len(line) == 2 and len(line[0]) == len(line[1]) for line in
                    [v.chart["recorded"]] + [x["line"] for x in v.chart["lines"]]
                    + [x["rejected"] for x in v.chart["lines"] if x["rejected"] is not None])):
        return None
    hm = v.heatmap
    if hm is not None and not (len(hm["labels"]) == len(hm["z"]) == len(hm["hover"])
                               and all(len(r) == len(hm["x"]) for r in hm["z"] + hm["hover"])
                               and all(len(h) == 4 for r in hm["hover"] for h in r)):
        return None
    return v
