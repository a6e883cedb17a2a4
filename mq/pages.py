"""A page of rows read by keyset: the rows, and the cursor of the next page (None: the last page)."""

from __future__ import annotations

from typing import Any, NamedTuple


class RowPage(NamedTuple):
    rows: list[Any]
    #: Give it back as `cursor` for the next page; None on the last page.
    next_cursor: str | None
