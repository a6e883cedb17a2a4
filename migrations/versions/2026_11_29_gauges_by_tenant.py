"""The leader's gauges keyed by tenant id: `topic_gauges` (messages by tenant, topic and status) and
`consumer_group_gauges` (each group's deliveries), in place of `queue_gauges` and `group_gauges`, which were keyed
by the tenant's slug. Readers join `tenants` for the slug a metric's label shows.

The gauges are recounted whole every few seconds, so the new tables start empty and are full after the first
recount of a leader of this release. The old tables stay for this release's rollout, where a leader of the release
before may still recount into them and its instances read them; the migration of the next release drops them.

Revision ID: 2026_11_29_gauges_by_tenant
Revises: 2026_11_28_unversioned_dropped
Create Date: 2026-11-29
"""

from alembic import op

revision = "2026_11_29_gauges_by_tenant"
down_revision = "2026_11_28_unversioned_dropped"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
CREATE TABLE topic_gauges (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    status text NOT NULL,
    messages bigint NOT NULL,
    oldest_pending_age_seconds double precision,
    CONSTRAINT topic_gauges_pkey PRIMARY KEY (tenant_id, topic, status)
)""")
    op.execute("""
CREATE TABLE consumer_group_gauges (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    consumer_group text NOT NULL,
    pending bigint NOT NULL,
    processing bigint NOT NULL,
    oldest_pending_age_seconds double precision,
    CONSTRAINT consumer_group_gauges_pkey PRIMARY KEY (tenant_id, topic, consumer_group)
)""")


def downgrade() -> None:
    op.execute("DROP TABLE consumer_group_gauges")
    op.execute("DROP TABLE topic_gauges")
