"""A tenant a test made for itself: the product's own isolation boundary, so tests never see each other's rows."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Tenant:
    id: int
    slug: str
