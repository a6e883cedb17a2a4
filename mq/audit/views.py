"""What the audit trail answers with, and how a page of it is filtered."""

from __future__ import annotations

from datetime import datetime

import msgspec

#: Largest page of entries.
MAX_AUDIT_PAGE = 200


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


class AuditFilter(msgspec.Struct, omit_defaults=True):
    """`action`: exact (`topic.purge`) or a prefix ending in `.` (`topic.`); `topic`: entries about that topic."""

    action: str | None = None
    actor: str | None = None
    topic: str | None = None
    from_time: datetime | None = None
    to_time: datetime | None = None
