"""Password hashing with argon2id. Hashing and verifying take tens of milliseconds: run them off the event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from mq import errors

_hasher = PasswordHasher()  # argon2id, the library's current defaults (RFC 9106 low-memory profile)
#: Verified against when a username does not exist, so that a miss takes as long as a wrong password.
_DUMMY_HASH = _hasher.hash("skiplock-dummy-password")

MIN_PASSWORD_LENGTH = 12


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    try:
        return _hasher.verify(password_hash or _DUMMY_HASH, password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


async def hash_password_async(password: str) -> str:
    return await asyncio.to_thread(hash_password, password)


async def verify_password_async(password_hash: str | None, password: str) -> bool:
    return await asyncio.to_thread(verify_password, password_hash, password)


class PasswordChecks:
    """Bounds the argon2 work a process does at once: each verification or hash takes ~64 MiB and ~170 ms of a
    core, so a burst of logins with wrong or unknown credentials must not take every core and all the memory.
    At most `concurrency` run at once and `queue` more wait; beyond that the caller gets `Unavailable` (503 with
    Retry-After) at once, and clients whose credentials were verified before never come here."""

    def __init__(self, concurrency: int = 2, queue: int = 32) -> None:
        self._running = asyncio.Semaphore(concurrency)
        self._admitted = 0
        self._limit = concurrency + queue

    async def verify(self, password_hash: str | None, password: str) -> bool:
        async with self._slot():
            return await verify_password_async(password_hash, password)

    async def hash(self, password: str) -> str:
        async with self._slot():
            return await hash_password_async(password)

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        if self._admitted >= self._limit:
            raise errors.Unavailable("too many password checks at once; retry shortly", retry_after=1)
        self._admitted += 1
        try:
            async with self._running:
                yield
        finally:
            self._admitted -= 1
