"""The credential cache's rules (pure logic; the users table is a stub): argon2 runs once per credential and
password, a stale entry is renewed from the stored hash, a changed password is verified from scratch."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from typing import Any

import pytest

from mq import errors
from mq.tenancy import passwords as passwords_module
from mq.tenancy.auth import Authenticator
from mq.tenancy.passwords import hash_password
from mq.tenancy.repository import UserRecord


class StubUsers:
    def __init__(self, user: UserRecord) -> None:
        self.user: UserRecord | None = user
        self.lookups = 0

    async def user_by_username(self, username: str) -> UserRecord | None:
        self.lookups += 1
        return self.user if self.user is not None and self.user.username == username else None

    async def grants_of(self, user_id: uuid.UUID) -> tuple[tuple[str, str], ...]:
        return ()


@pytest.fixture
def verifications(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = passwords_module.verify_password_async

    async def counting(password_hash: str | None, password: str) -> bool:
        calls.append(password)
        return await real(password_hash, password)

    monkeypatch.setattr(passwords_module, "verify_password_async", counting)
    return calls


def make(password: str = "correct horse battery") -> tuple[Authenticator, StubUsers]:
    user = UserRecord(uuid.uuid4(), "alice", hash_password(password), "tenant_admin", 1, "acme", "active")
    users = StubUsers(user)
    return Authenticator(users, ttl_seconds=60, max_entries=100), users  # type: ignore[arg-type]


async def test_a_cached_credential_needs_no_lookup_and_no_hash(verifications: list[str]) -> None:
    authenticator, users = make()
    for _ in range(3):
        assert (await authenticator.authenticate("alice", "correct horse battery")).role == "tenant_admin"
    assert verifications == ["correct horse battery"] and users.lookups == 1


async def test_after_an_invalidation_the_entry_is_renewed_without_argon2(verifications: list[str]) -> None:
    authenticator, users = make()
    await authenticator.authenticate("alice", "correct horse battery")
    assert users.user is not None
    users.user = replace(users.user, role="member")  # a role change somewhere, then the invalidation
    authenticator.forget()
    assert (await authenticator.authenticate("alice", "correct horse battery")).role == "member"
    assert len(verifications) == 1 and users.lookups == 2


async def test_a_changed_password_is_verified_again_and_the_old_one_refused(verifications: list[str]) -> None:
    authenticator, users = make()
    await authenticator.authenticate("alice", "correct horse battery")
    assert users.user is not None
    users.user = replace(users.user, password_hash=hash_password("a brand new password"))
    authenticator.forget()
    with pytest.raises(errors.Unauthorized):
        await authenticator.authenticate("alice", "correct horse battery")
    assert (await authenticator.authenticate("alice", "a brand new password")).username == "alice"
    assert len(verifications) == 3


async def test_a_deleted_user_is_refused_after_the_invalidation(verifications: Any) -> None:
    authenticator, users = make()
    await authenticator.authenticate("alice", "correct horse battery")
    users.user = None
    authenticator.forget()
    with pytest.raises(errors.Unauthorized):
        await authenticator.authenticate("alice", "correct horse battery")


async def test_a_burst_with_a_new_credential_verifies_it_once(verifications: list[str]) -> None:
    authenticator, users = make()
    principals = await asyncio.gather(*(authenticator.authenticate("alice", "correct horse battery") for _ in range(8)))
    assert {p.username for p in principals} == {"alice"}
    assert len(verifications) == 1 and users.lookups == 1


async def test_a_burst_with_a_wrong_password_fails_every_request(verifications: list[str]) -> None:
    authenticator, _ = make()
    results = await asyncio.gather(
        *(authenticator.authenticate("alice", "wrong password!!") for _ in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, errors.Unauthorized) for r in results)
