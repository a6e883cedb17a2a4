"""Rules on tenant names, shared by the services that create tenants and the code that looks them up."""

from __future__ import annotations

import re

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"
_SLUG_RE = re.compile(SLUG_PATTERN)


def is_slug(value: str) -> bool:
    """Whether `value` can be a tenant's slug (fullmatch: in Python `$` also matches before a final newline).
    Lookups of anything else answer "no such tenant" without asking the database."""
    return _SLUG_RE.fullmatch(value) is not None
