"""Long texts on a page (a request body as JSON, a curl command): highlighted when small, paged plain text when big.

Syntax highlighting a few megabytes costs the browser seconds per rerun, and
sending a whole 15 MB body costs the network as much; above ``HIGHLIGHT_CHARS``
a screen shows one page of plain text at a time (``PAGE_CHARS``, cut at line
breaks) and offers the whole text as a download generated on click.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

HIGHLIGHT_CHARS = 100_000
"""Texts up to this many characters are shown whole, syntax-highlighted."""
PAGE_CHARS = 100_000
"""Above ``HIGHLIGHT_CHARS``, the text is shown this many characters (about) a page."""


@dataclass(frozen=True)
class TextPages:
    """A long text cut into pages at line breaks."""

    text: str
    """The whole text."""
    starts: tuple[int, ...]
    """Offset of the first character of each page (the first is 0)."""

    @property
    def pages(self) -> int:
        """How many pages (at least 1)."""
        return len(self.starts)

    @property
    def highlight(self) -> bool:
        """Small enough to show whole and syntax-highlighted."""
        return len(self.text) <= HIGHLIGHT_CHARS

    def page(self, number: int) -> str:
        """The text of page ``number`` (1-based, clamped)."""
        i = min(max(1, int(number)), self.pages) - 1
        stop = self.starts[i + 1] if i + 1 < self.pages else len(self.text)
        return self.text[self.starts[i]:stop]

    def page_of(self, offset: int) -> int:
        """The 1-based page holding character ``offset``."""
        return max(1, bisect.bisect_right(self.starts, offset))


def text_pages(text: str, page_chars: int = PAGE_CHARS) -> TextPages:
    """Cut ``text`` into pages of about ``page_chars`` characters, each ending at a line break when there is one
    within the page (a single line longer than a page is cut where the page ends)."""
    page_chars = max(1, int(page_chars))
    starts = [0]
    n = len(text)
    while starts[-1] + page_chars < n:
        start = starts[-1]
        cut = text.rfind("\n", start + 1, start + page_chars)
        starts.append(cut + 1 if cut > start else start + page_chars)
    return TextPages(text=text, starts=tuple(starts))
