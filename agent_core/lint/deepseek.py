"""DeepSeek's two contracts for ``reasoning_content`` in the input, keyed by model version.

The same model name has meant opposite things:

- **Thinking mode** (``deepseek-reasoner`` since V3.2, ``thinking: {"type": "enabled"}``, V4): an assistant
  message of a tool loop must send its ``reasoning_content`` back (rule ``missing-reasoning-content``,
  profile ``deepseek``).
- **DeepSeek-R1** (``deepseek-reasoner`` in 2025, before thinking-mode tool calls): including
  ``reasoning_content`` in the input messages is a 400 (rule ``reasoning-content-in-input``, profile
  ``deepseek-r1``).

For R1, DeepSeek documents *that* the request fails with a 400, not the error body. So the finding carries no
``api_error`` (an error text is never invented); the documented sentence is its reason, quoted and labelled as
documentation (``DOCUMENTED``). The check runs from the scan through ``Profile.reasoning_check``: the scan calls it
only for a message that carries reasoning, and only when the profile sets it.
"""
from __future__ import annotations

from typing import Any

RULE = "reasoning-content-in-input"

R1_DOC_SENTENCE = ("Please note that if the reasoning_content field is included in the sequence of input messages, "
                   "the API will return a 400 error. Therefore, you should remove the reasoning_content field from "
                   "the API response before making the API request, as demonstrated in the API example.")
"""DeepSeek's Reasoning Model (deepseek-reasoner) guide, section Multi-round Conversation, quoted verbatim."""

R1_DOC_SOURCE = ("api-docs.deepseek.com/guides/reasoning_model (2025 edition, archived at web.archive.org/web/"
                 "20250728201007/https://api-docs.deepseek.com/guides/reasoning_model): HTTP 400 documented, the "
                 "error body is not")
"""Where the sentence is published, and what it does not say."""

DOCUMENTED: dict[tuple[str, str], tuple[str, str]] = {("deepseek-r1", RULE): (R1_DOC_SENTENCE, R1_DOC_SOURCE)}
"""(profile, rule) -> (the provider's documented sentence, its source), for rejections whose error body is not
documented: reports show the sentence as documentation, never as the provider's error text."""


def documented_reason(profile: str, rule: str | None) -> str | None:
    """The documentation sentence that stands for an undocumented error body, labelled; None when there is none."""
    hit = DOCUMENTED.get((profile, rule or ""))
    return None if hit is None else f'no error body is documented; the provider\'s docs say: "{hit[0]}" ({hit[1]})'


def reject_reasoning_input(scan: Any, e: Any, i: int) -> None:
    """Report message ``i`` (entry ``e``, which carries ``reasoning_content``) to the scan, for a provider that
    returns 400 on reasoning in the input (DeepSeek-R1). ``scan`` is the linter's state (``scan._Scan``)."""
    scan.emit(RULE, i, [], f"Message {i} sends reasoning_content back in the input; DeepSeek-R1 "
              f"(deepseek-reasoner before thinking-mode tool calls) answers that with HTTP 400. DeepSeek documents "
              f'it (no error body): "{R1_DOC_SENTENCE}"', fill={"i": i}, path=scan._p(e.at("reasoning")))
