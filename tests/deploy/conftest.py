"""Fixtures of the deployment tests (defined in tests/deploy/support.py)."""

from tests.deploy.support import image

__all__ = ["image"]
