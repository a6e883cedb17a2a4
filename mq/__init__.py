"""Skiplock's domain core: settings, errors, storage, queue semantics, tenancy and auth.

Nothing in here knows about HTTP or the scheduler; `api` and `workers` build on it.
"""

__version__ = "0.1.0"
