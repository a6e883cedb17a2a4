"""Fixtures of the deployment tests (defined in tests/deploy/support.py)."""

from tests.deploy.support import empty_database, image

__all__ = ["empty_database", "image"]
