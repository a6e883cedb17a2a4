"""What a caller may do: its role, its grants on topics, and the consumer groups its grants pin.

Pure functions of the caller's `Principal`: the application's commands (`mq.commands`) and the routes that are not
commands yet call them before they act; a refusal is `Forbidden` (403), a platform admin naming no tenant
`InvalidRequest` (400).
"""

from __future__ import annotations

from mq import errors
from mq.tenancy import grants
from mq.tenancy.auth import Principal


def tenant_for(
    principal: Principal, *, admin_only: bool = False, action: str | None = None, topic: str | None = None
) -> int:
    """The tenant id a request works on, after the role check. Admin requests refuse members; a member needs a grant
    for `action` (on `topic` when the request names one; requests that find the topic later call `require_grant`)."""
    if principal.tenant_id is None:
        raise errors.InvalidRequest("a platform admin must name a tenant with the X-Tenant header")
    if principal.is_member:
        if admin_only or action is None:
            raise errors.Forbidden("tenant admins only")
        if topic is not None:
            require_grant(principal, action, topic)
    elif admin_only and principal.role not in ("tenant_admin", "platform_admin"):
        raise errors.Forbidden("tenant admins only")
    return principal.tenant_id


def require_grant(principal: Principal, action: str, topic: str) -> None:
    """Members only do what their grants allow; the admin roles need none."""
    if principal.is_member and not grants.allowed(principal.grants, action, topic):
        raise errors.Forbidden(f"no {action} grant for topic {topic!r}")


def require_consumer_group(principal: Principal, topic: str, consumer_group: str | None) -> None:
    """A member whose consume grants on `topic` all pin consumer groups consumes it only as one of them."""
    if not principal.is_member:
        return
    pinned = grants.consumer_groups(principal.grants, topic)
    if pinned is not None and consumer_group not in pinned:
        names = ", ".join(sorted(pinned))
        raise errors.Forbidden(f"your consume grant on topic {topic!r} is for consumer group {names} only")


def pinned_groups(principal: Principal, topic: str) -> frozenset[str] | None:
    """The consumer groups a member consumes `topic` as, when its consume grants pin them; None: any."""
    if not principal.is_member:
        return None
    return grants.consumer_groups(principal.grants, topic)


def require_platform_admin(principal: Principal) -> None:
    if not principal.is_platform_admin:
        raise errors.Forbidden("platform admins only")
