"""Pages of long lists (calls in the timeline table, messages of a payload, lineage turns)."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    """One page of a long list: show ``items[start:stop]``."""

    page: int
    """1-based page number (clamped into range)."""
    pages: int
    """How many pages there are (at least 1)."""
    start: int
    """Index of the first item on the page."""
    stop: int
    """One past the last item on the page."""
    total: int
    """How many items there are in all."""


def paginate(total: int, page: int = 1, page_size: int = 50) -> Page:
    """The slice bounds of page ``page`` of ``total`` items; out-of-range pages are clamped."""
    page_size = max(1, int(page_size))
    pages = max(1, math.ceil(total / page_size))
    page = min(max(1, int(page)), pages)
    start = (page - 1) * page_size
    return Page(page=page, pages=pages, start=start, stop=min(total, start + page_size), total=total)
