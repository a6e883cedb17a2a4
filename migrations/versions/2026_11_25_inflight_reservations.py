"""Concurrency limits, cheaper: a limited dequeue reserves its slots in a short transaction of its own (the counter
row's lock held only for the slot arithmetic), then leases what it reserved without the lock. A reservation is a
row until the lease statement claims it, so that the keeper's recount sees slots reserved but not yet leased
(`mq.queue.sql`, "Concurrency limits").

Revision ID: 2026_11_25_inflight_reservations
Revises: 2026_11_25_inflight
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_inflight_reservations"
down_revision = "2026_11_25_inflight"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE inflight_reservations (
        id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant_id  bigint NOT NULL,
        topic      text NOT NULL,
        group_id   bigint NOT NULL DEFAULT 0,
        n          integer NOT NULL,
        at         timestamptz NOT NULL DEFAULT now()
    )""")
    op.execute("CREATE INDEX inflight_reservations_topic_idx ON inflight_reservations (tenant_id, topic, group_id)")
    op.execute("""ALTER TABLE inflight_reservations SET (autovacuum_vacuum_scale_factor = 0,
                  autovacuum_vacuum_threshold = 1000)""")


def downgrade() -> None:
    op.execute("DROP TABLE inflight_reservations")
