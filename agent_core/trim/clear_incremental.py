"""anthropic-clear-tool-uses, one add at a time: what ``ClearToolUses.apply`` decides, in O(changes) per add.

``apply`` maps every placeholder back to its original, walks the whole history
to find the tool uses and their results, and rebuilds the list: O(history) per
add, quadratic over a replay (5,000 calls: 419 s). Nothing it decides ever
goes back within one memory, though: the history only grows, so its token
count only grows (once over ``trigger`` it stays over), the tool uses only
get older (a result outside the ``keep`` newest stays outside), and the
excluded tools are fixed. So the set of results to clear only grows, and
this trimmer keeps it, adding the results of the uses that have just left the
``keep`` newest (and a new result of an old use). Each changed message is
cleared by the policy's own ``_cleared`` (same placeholders, same ids, same
cache), and the trimmer answers with the replaced indexes (``TrimEdit``), so
replay's memory records the edits instead of copying the history.

``clear_at_least`` is the one rule that can go back: while the cleared
results free less than it, nothing is cleared, so every placeholder returns to
its original until they free enough again (that add costs the placeholders).

The first add, and the first after ``close`` (a /clear, a new conversation),
run ``apply`` and build the state from the list, once.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_core.core.msg import Msg

from .base import TrimCut, TrimEdit, TrimResult

_CLEARED_PREFIX = "cleared_"      # anthropic_context.CLEARED_PREFIX (that module imports this one)


class ClearToolUsesTrimmer:
    """anthropic-clear-tool-uses on its owner's list, which only grows (clearing replaces, never removes)."""

    def __init__(self, policy: Any) -> None:
        self._policy = policy       # an ``anthropic_context.ClearToolUses`` (that module imports this one)
        self._synced = False

    # --- the state ------------------------------------------------------------------------------------
    def _start(self) -> None:
        self._full: list[Msg] = []                  # the originals, by position
        self._total = 0                             # their token count (``apply``'s ``total``)
        self._uses: list[str | None] = []           # the tool name of each use, in order
        self._last: dict[str, int] = {}             # call id -> its newest use so far
        self._by_use: list[list[tuple[int, int | None]]] = []      # use -> its results (position, block)
        self._calls_at: dict[str, list[int]] = {}   # call id -> positions of the messages carrying that call
        self._cleared_upto = 0                      # the uses whose results are in ``_clear``: all before this
        self._clear: set[tuple[int, int | None]] = set()
        self._calls_cleared: set[str] = set()
        self._blocks_at: dict[int, list[int]] = {}
        self._desired: dict[int, Msg] = {}          # position -> its cleared form, where that is not the original
        self._freed = 0                             # sum of original minus cleared counts over ``_desired``
        self._shown: set[int] = set()               # positions whose message in the owner's list is not the original

    def _scan(self, k: int, m: Msg, touched: set[int]) -> None:
        """Register the message at position ``k`` as ``_to_clear``'s walk does (same order: calls, blocks, role)."""
        excluded = self._policy._excluded
        for c in m.tool_calls or ():
            if isinstance(c, dict):
                cid = str(c.get("id"))
                self._last[cid] = len(self._uses)
                self._uses.append(str((c.get("function") or {}).get("name")) if isinstance(c.get("function"), dict)
                                  else None)
                self._by_use.append([])
                self._carries(cid, k, touched)
        for b, block in enumerate(m.content if isinstance(m.content, list) else []):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_use":
                self._carries(str(block.get("id")), k, touched)
                if m.role == "assistant":
                    self._last[str(block.get("id"))] = len(self._uses)
                    self._uses.append(str(block.get("name")))
                    self._by_use.append([])
            elif kind == "tool_result" and m.role == "user" and str(block.get("tool_use_id")) in self._last:
                self._result((k, b), self._last[str(block.get("tool_use_id"))], excluded, touched)
        if m.role == "tool" and str(m.tool_call_id) in self._last:
            self._result((k, None), self._last[str(m.tool_call_id)], excluded, touched)

    def _carries(self, cid: str, k: int, touched: set[int]) -> None:
        at = self._calls_at.setdefault(cid, [])
        if not at or at[-1] != k:
            at.append(k)
        if cid in self._calls_cleared:
            touched.add(k)

    def _result(self, key: tuple[int, int | None], use: int, excluded: set[str], touched: set[int]) -> None:
        self._by_use[use].append(key)
        if use < self._cleared_upto and self._uses[use] not in excluded:
            self._clear_one(key, touched)

    def _clear_one(self, key: tuple[int, int | None], touched: set[int]) -> None:
        k, b = key
        self._clear.add(key)
        touched.add(k)
        m = self._full[k]
        cid = str(m.tool_call_id) if b is None else str(m.content[b].get("tool_use_id"))
        if b is not None:
            self._blocks_at.setdefault(k, []).append(b)
        if cid not in self._calls_cleared:
            self._calls_cleared.add(cid)
            touched.update(self._calls_at.get(cid, ()))

    def _advance(self, touched: set[int]) -> None:
        """Clear the results of every use that has left the ``keep`` newest, once the history is over ``trigger``."""
        if self._total <= self._policy.config.trigger:
            return
        newest = len(self._uses) - max(self._policy.config.keep, 0)
        excluded = self._policy._excluded
        for u in range(self._cleared_upto, newest):
            if self._uses[u] not in excluded:
                for key in self._by_use[u]:
                    self._clear_one(key, touched)
        self._cleared_upto = max(self._cleared_upto, newest)

    def _restyle(self, touched: set[int]) -> None:
        """The cleared form of each touched position (the policy's ``_cleared``), and what it frees."""
        policy, tok, full = self._policy, self._policy._tokens.tokens, self._full
        for k in touched:
            orig = full[k]
            form = policy._cleared(orig, k, self._clear, self._calls_cleared, self._blocks_at)
            before = self._desired.get(k, orig)
            if form is before:
                continue
            if before is not orig:
                self._freed -= tok(orig) - tok(before)
            if form is orig:
                del self._desired[k]
            else:
                self._desired[k] = form
                self._freed += tok(orig) - tok(form)

    def _applies(self) -> bool:
        """``apply`` sends the cleared forms (False: ``clear_at_least`` cannot be freed, the full history goes)."""
        least = self._policy.config.clear_at_least
        return not (self._clear and least is not None and self._freed < least)

    # --- the protocol --------------------------------------------------------------------------------
    def add(self, messages: list[Msg]) -> TrimEdit | TrimCut | TrimResult:
        m = messages[-1]
        if not self._synced or m.id.startswith(_CLEARED_PREFIX):
            return self._sync(messages)
        k = len(messages) - 1
        touched: set[int] = set()
        self._full.append(m)
        self._total += self._policy._tokens.tokens(m)
        self._scan(k, m, touched)
        self._advance(touched)
        self._restyle(touched)
        applies = self._applies()
        was = self._applied
        self._applied = applies
        candidates = touched if applies == was else touched | self._shown | set(self._desired)
        full, desired, shown = self._full, self._desired, self._shown
        edits: list[tuple[int, Msg]] = []
        for j in sorted(candidates):
            target = desired.get(j, full[j]) if applies else full[j]
            if messages[j].id != target.id:     # ``apply``'s removed: what left, by id
                edits.append((j, target))
                if target is full[j]:
                    shown.discard(j)
                else:
                    shown.add(j)
        if not edits:
            return TrimCut([])
        removed = [messages[j] for j, _ in edits]
        config = self._policy.config
        if not applies:
            return TrimEdit(edits, removed, f"clear_at_least={config.clear_at_least} cannot be freed: the full "
                                            "history is sent")
        return TrimEdit(edits, removed, f"the prompt is {self._total} tokens, over the trigger of {config.trigger}: "
                                        f"the results of {len(self._clear)} older tool uses became placeholders "
                                        f"(the {config.keep} newest kept)")

    def _sync(self, messages: list[Msg]) -> TrimResult:
        """``apply`` on the whole list, then the state built from it (the first add, or after ``close``)."""
        result = self._policy.apply(messages)
        after = result.messages if result.changed else messages
        originals = self._policy._originals
        self._start()
        touched: set[int] = set()
        for k, m in enumerate(messages):
            orig = originals.get(m.id, m) if m.id.startswith(_CLEARED_PREFIX) else m
            self._full.append(orig)
            self._total += self._policy._tokens.tokens(orig)
            self._scan(k, orig, touched)
        self._advance(touched)
        self._restyle(set(range(len(self._full))))
        self._applied = self._applies()
        self._shown = {k for k, m in enumerate(after) if m is not self._full[k]}
        self._synced = not messages[-1].id.startswith(_CLEARED_PREFIX)
        return result

    def close(self, messages: Sequence[Msg]) -> None:
        """The next add starts over from ``apply``."""
        self._synced = False
