"""The audit trail's entries, a page at a time."""

from __future__ import annotations

import msgspec

from mq.pages import RowPage


class AuditEntryView(msgspec.Struct, omit_defaults=False):
    """One entry: `actor` did `action` (a stable dotted name, e.g. `topic.purge`) to `target` in `tenant` (None:
    platform-wide, e.g. a reaper run), while serving the request `request_id` (the server's id; the caller's
    `X-Request-ID`, when it sent another, is `details.client_request_id`). `actor` is None for a refused login:
    the name tried is in `details.username`."""

    id: str
    at: str
    actor: str | None
    tenant: str | None
    action: str
    target: str
    details: msgspec.Raw | None
    request_id: str | None


class AuditPageView(msgspec.Struct, omit_defaults=False):
    """Newest first; `next_cursor` fetches the older entries (None: there are none)."""

    items: list[AuditEntryView]
    next_cursor: str | None

    @classmethod
    def of(cls, page: RowPage) -> AuditPageView:
        """From a page of the trail (`mq.audit.sql.audit_page`'s rows)."""
        items = [
            AuditEntryView(
                r["id"],
                r["at"],
                r["actor"],
                r["tenant"],
                r["action"],
                r["target"],
                None if r["details"] is None else msgspec.Raw(r["details"].encode()),
                r["request_id"],
            )
            for r in page.rows
        ]
        return cls(items=items, next_cursor=page.next_cursor)
