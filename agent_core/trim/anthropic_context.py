"""Anthropic's server-side context editing, emulated as replay policies.

``anthropic-clear-tool-uses`` emulates ``clear_tool_uses_20250919`` and
``anthropic-clear-thinking`` emulates ``clear_thinking_20251015`` (Anthropic docs,
"Context editing"; parameters and defaults as documented there and in the SDKs'
``BetaClearToolUses20250919Edit``): when the prompt's input tokens exceed
``trigger``, the oldest tool results are replaced by a placeholder, except the
``keep`` most recent tool uses and the tools named in ``exclude_tools``; with
``clear_at_least`` set, nothing is cleared unless that many tokens are freed;
``clear_tool_inputs`` also clears the calls' arguments.

The editing happens on the server, on every request, over the client's full
history: the client never loses anything. So these policies keep every original
(placeholders carry the id ``cleared_<original id>`` and are mapped back before
each decision) and decide afresh from the full history on each add; what they
return is what the model would have seen. Token counts are the cookbook count of
the messages (tool definitions and the system prompt's wire form aside); the
server's own count can differ. Anthropic does not publish the placeholder's
text: ``placeholder`` is this emulation's wording, shown as such.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_core.core.msg import Msg

from .base import TrimCut, TrimResult
from .clear_incremental import ClearToolUsesTrimmer
from .config import FROM_TRACE, Configured
from .message_tokens import MessageTokens

CLEARED_PREFIX = "cleared_"
PLACEHOLDER = "[tool result cleared by context editing (emulated; Anthropic does not publish its placeholder text)]"
_THINKING = ("thinking", "redacted_thinking")


@dataclass(frozen=True)
class ClearToolUsesConfig:
    """Parameters of anthropic-clear-tool-uses (``clear_tool_uses_20250919``)."""

    trigger: int = 100_000
    """Input tokens above which clearing runs (Anthropic's default trigger: 100,000 input tokens)."""
    keep: int = 3
    """How many of the most recent tool uses keep their results (Anthropic's default: 3 tool uses)."""
    clear_at_least: int | None = None
    """Tokens one clearing must free, else nothing is cleared; None: no minimum (Anthropic's default)."""
    exclude_tools: str = ""
    """Comma-separated tool names whose results are never cleared."""
    clear_tool_inputs: bool = False
    """Also clear the arguments of the calls whose results are cleared (Anthropic's default: false)."""
    placeholder: str = PLACEHOLDER
    """The text a cleared result shows (Anthropic's own wording is not published)."""
    model: str | None = field(default=None, metadata={FROM_TRACE: True})
    """The model whose tokenizer counts (the trace's own when replaying)."""


@dataclass(frozen=True)
class ClearThinkingConfig:
    """Parameters of anthropic-clear-thinking (``clear_thinking_20251015``)."""

    keep: int | None = 1
    """How many of the most recent assistant turns keep their thinking blocks; None keeps all ("all")."""


def _original(m: Msg, originals: dict[str, Msg]) -> Msg:
    return originals.get(m.id, m) if m.id.startswith(CLEARED_PREFIX) else m


def _replaced(before: Sequence[Msg], after: list[Msg]) -> list[Msg]:
    """What left memory: every message of ``before`` whose id is not in ``after`` (an original that became a
    placeholder, or a placeholder that went back to its original)."""
    kept = {m.id for m in after}
    return [m for m in before if m.id not in kept]


class ClearToolUses(Configured):
    """Old tool results become placeholders once the prompt passes ``trigger`` tokens (server-side semantics)."""

    name = "anthropic-clear-tool-uses"
    Config = ClearToolUsesConfig

    def __init__(self, trigger: int = 100_000, keep: int = 3, clear_at_least: int | None = None,
                 exclude_tools: str = "", clear_tool_inputs: bool = False, placeholder: str = PLACEHOLDER,
                 model: str | None = None):
        self.config = ClearToolUsesConfig(int(trigger), int(keep), clear_at_least, exclude_tools,
                                          bool(clear_tool_inputs), placeholder, model)
        self._tokens = MessageTokens(model)
        self._originals: dict[str, Msg] = {}
        self._made: dict[str, tuple[Msg, Msg]] = {}
        self._excluded = {t.strip() for t in exclude_tools.split(",") if t.strip()}

    def incremental(self) -> ClearToolUsesTrimmer | None:
        """Replay's trimmer (``trim/clear_incremental.py``): the same decisions in O(changes) per add, where
        ``apply`` on every add walks the whole history (quadratic: 5,000 calls took 419 s). A subclass gets
        ``apply`` on every add, since it may change the rule."""
        return ClearToolUsesTrimmer(self) if type(self) is ClearToolUses else None

    def _placeholder(self, m: Msg, tag: str, **changes: Any) -> Msg:
        """The cleared form of ``m`` (``tag`` names what was cleared), made once so its token count is cached."""
        key = (m.id, tag)
        made = self._made.get(key)
        if made is None or made[0] is not m:
            cleared = dataclasses.replace(m, id=CLEARED_PREFIX + m.id + tag, **changes)
            self._originals[cleared.id] = m
            made = self._made[key] = (m, cleared)
        return made[1]

    def _to_clear(self, full: list[Msg]) -> set[tuple[int, int | None]]:
        """The results to clear, as (message position, block position or None for a whole ``tool`` message).

        All but those of the ``keep`` newest tool uses and of excluded tools. Chat Completions results are
        ``tool`` messages answering ``tool_calls``; Anthropic ones are ``tool_result`` blocks answering
        ``tool_use`` blocks. A result belongs to the nearest use before it with its id (by position, so an id
        reused in a later turn does not keep an old result)."""
        uses: list[str | None] = []                 # the tool name of each use, in order
        owner: dict[tuple[int, int | None], int] = {}
        last: dict[str, int] = {}
        for k, m in enumerate(full):
            for c in m.tool_calls or ():
                if isinstance(c, dict):
                    last[str(c.get("id"))] = len(uses)
                    uses.append(str((c.get("function") or {}).get("name")) if isinstance(c.get("function"), dict)
                                else None)
            for b, block in enumerate(m.content if isinstance(m.content, list) else []):
                kind = block.get("type") if isinstance(block, dict) else None
                if kind == "tool_use" and m.role == "assistant":
                    last[str(block.get("id"))] = len(uses)
                    uses.append(str(block.get("name")))
                elif kind == "tool_result" and m.role == "user" and str(block.get("tool_use_id")) in last:
                    owner[(k, b)] = last[str(block.get("tool_use_id"))]
            if m.role == "tool" and str(m.tool_call_id) in last:
                owner[(k, None)] = last[str(m.tool_call_id)]
        newest = len(uses) - max(self.config.keep, 0)
        return {at for at, u in owner.items() if u < newest and uses[u] not in self._excluded}

    def _cleared(self, m: Msg, k: int, clear: set, calls_cleared: set[str], blocks_at: dict[int, list[int]]) -> Msg:
        """``m`` with what ``clear`` names at position ``k`` cleared (``m`` itself when nothing is);
        ``blocks_at``: the block positions ``clear`` names, per message position."""
        if (k, None) in clear:
            return self._placeholder(m, "", content=self.config.placeholder)
        blocks = blocks_at.get(k, [])
        inputs = self.config.clear_tool_inputs
        if isinstance(m.content, list) and (blocks or (inputs and any(
                isinstance(b, dict) and b.get("type") == "tool_use" and str(b.get("id")) in calls_cleared
                for b in m.content))):
            content = [{**b, "content": self.config.placeholder} if n in blocks else
                       {**b, "input": {}} if inputs and isinstance(b, dict) and b.get("type") == "tool_use"
                       and str(b.get("id")) in calls_cleared else b for n, b in enumerate(m.content)]
            return self._placeholder(m, "~" + ".".join(map(str, sorted(blocks))), content=content)
        if inputs and m.tool_calls and any(isinstance(c, dict) and str(c.get("id")) in calls_cleared
                                           for c in m.tool_calls):
            calls = tuple({**c, "function": {**c["function"], "arguments": "{}"}} if isinstance(c, dict) and str(
                c.get("id")) in calls_cleared and isinstance(c.get("function"), dict) else c for c in m.tool_calls)
            return self._placeholder(m, "", tool_calls=calls)
        return m

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        full = [_original(m, self._originals) for m in messages]
        tok = self._tokens.tokens
        total = sum(tok(m) for m in full)
        clear: set[tuple[int, int | None]] = set()
        if total > self.config.trigger:
            clear = self._to_clear(full)
        calls_cleared = {str(full[k].tool_call_id) if b is None else str(full[k].content[b].get("tool_use_id"))
                         for k, b in clear}
        blocks_at: dict[int, list[int]] = {}       # one pass over ``clear``, not one per message (O(n²) per add)
        for j, b in clear:
            if b is not None:
                blocks_at.setdefault(j, []).append(b)
        out = [self._cleared(m, k, clear, calls_cleared, blocks_at) for k, m in enumerate(full)]
        freed = sum(tok(m) - tok(o) for m, o in zip(full, out) if o is not m)
        if clear and self.config.clear_at_least is not None and freed < self.config.clear_at_least:
            out = full          # "if it cannot clear at least that much, the strategy is not applied"
        removed = _replaced(messages, out)
        if not removed:
            return TrimResult(out, [], "")
        if out is full:
            return TrimResult(out, removed, f"clear_at_least={self.config.clear_at_least} cannot be freed: the "
                                            "full history is sent")
        return TrimResult(out, removed, f"the prompt is {total} tokens, over the trigger of {self.config.trigger}: "
                                        f"the results of {len(clear)} older tool uses became placeholders (the "
                                        f"{self.config.keep} newest kept)")


class ClearThinking(Configured):
    """Thinking blocks of all but the ``keep`` most recent assistant turns are cleared (server-side semantics)."""

    name = "anthropic-clear-thinking"
    Config = ClearThinkingConfig

    def __init__(self, keep: int | None = 1):
        self.config = ClearThinkingConfig(None if keep is None else int(keep))
        self._originals: dict[str, Msg] = {}

    def incremental(self) -> _ThinkingTrimmer:
        """Replay's trimmer: ``apply`` only on an add after which an uncleared thinking turn is no longer among
        the ``keep`` newest (``apply`` on every add walks the whole history: quadratic at 25,000 calls)."""
        return _ThinkingTrimmer(self)

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        full = [_original(m, self._originals) for m in messages]
        thinking = [k for k, m in enumerate(full) if _thinks(m)]
        assistants = [k for k, m in enumerate(full) if m.role == "assistant"]
        keep = self.config.keep
        recent = set(assistants[-keep:]) if keep else set()
        out = list(full)
        if keep is not None:
            for k in thinking:
                if k in recent:
                    continue
                m = full[k]
                blocks = [b for b in m.content if not (isinstance(b, dict) and b.get("type") in _THINKING)]
                out[k] = dataclasses.replace(m, id=CLEARED_PREFIX + m.id, content=blocks)
                self._originals[out[k].id] = m
        removed = _replaced(messages, out)
        return TrimResult(out, removed, f"thinking blocks of {len(removed)} assistant turns older than the "
                                        f"{keep} newest cleared") if removed else TrimResult(out, [], "")



def _thinks(m: Msg) -> bool:
    """An assistant message with a thinking (or redacted thinking) block."""
    return m.role == "assistant" and isinstance(m.content, list) and any(
        isinstance(b, dict) and b.get("type") in _THINKING for b in m.content)


class _ThinkingTrimmer:
    """anthropic-clear-thinking on its owner's list, which only grows (clearing replaces, never removes).

    Keeps the positions of the assistant messages and of those whose thinking is still there; an add after
    which none of the latter is older than the ``keep`` newest assistants changes nothing (``apply`` would map
    every placeholder back and make it again, with the same id), so only the other adds run ``apply``."""

    def __init__(self, policy: ClearThinking) -> None:
        self._policy = policy
        self._synced = False
        self._assistants: list[int] = []
        self._thinking: list[int] = []         # positions whose thinking blocks are not cleared, ascending

    def add(self, messages: list[Msg]) -> TrimResult | TrimCut:
        keep = self._policy.config.keep
        m = messages[-1]
        if not self._synced or m.id.startswith(CLEARED_PREFIX):
            return self._apply(messages)
        k = len(messages) - 1
        if m.role == "assistant":
            self._assistants.append(k)
            if _thinks(m):
                self._thinking.append(k)
        if keep is None or not self._thinking:
            return TrimCut([])
        recent_from = self._assistants[-keep] if keep and len(self._assistants) >= keep else (
            -1 if keep else len(messages))
        if recent_from < 0 or self._thinking[0] >= recent_from:
            return TrimCut([])
        return self._apply(messages)

    def _apply(self, messages: list[Msg]) -> TrimResult:
        result = self._policy.apply(messages)
        out = result.messages if result.changed else messages
        self._assistants = [k for k, m in enumerate(out) if m.role == "assistant"]
        self._thinking = [k for k in self._assistants if _thinks(out[k])]
        self._synced = True
        return result

    def close(self, messages: Sequence[Msg]) -> None:
        """The next add starts over from ``apply``."""
        self._synced = False
