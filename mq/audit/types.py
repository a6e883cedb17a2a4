"""How a page of the audit trail is filtered, and how long it may be (the API renders its entries:
`api.views.audit`)."""

from __future__ import annotations

from datetime import datetime

import msgspec

#: Largest page of entries.
MAX_AUDIT_PAGE = 200
#: The `tenant_id` of a platform-wide entry (tenant ids start at 1): every entry has a tenant id, first in the key
#: the trail is to have, (tenant_id, id). Entries of the release before have NULL there; the next release's migration
#: sets those to this and makes that key.
PLATFORM_TENANT_ID = 0


class AuditFilter(msgspec.Struct, omit_defaults=True):
    """`action`: exact (`topic.purge`) or a prefix ending in `.` (`topic.`); `topic`: entries about that topic."""

    action: str | None = None
    actor: str | None = None
    topic: str | None = None
    from_time: datetime | None = None
    to_time: datetime | None = None
