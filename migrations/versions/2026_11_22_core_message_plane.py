"""Core message plane: tenants, users, topic configs, messages.

Revision ID: 2026_11_22_core
Revises:
Create Date: 2026-11-22
"""

from alembic import op

revision = "2026_11_22_core"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE tenants (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        slug        text NOT NULL UNIQUE,
        name        text NOT NULL,
        status      text NOT NULL DEFAULT 'active',
        quotas      jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at  timestamptz NOT NULL DEFAULT now(),
        updated_at  timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT tenants_status_check CHECK (status IN ('active', 'suspended'))
    )""")
    op.execute("""
    CREATE TABLE users (
        id             uuid PRIMARY KEY,
        tenant_id      bigint REFERENCES tenants (id) ON DELETE CASCADE,
        username       text NOT NULL UNIQUE,
        password_hash  text NOT NULL,
        role           text NOT NULL,
        created_at     timestamptz NOT NULL DEFAULT now(),
        updated_at     timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT users_role_check CHECK (role IN ('platform_admin', 'tenant_admin', 'member')),
        CONSTRAINT users_tenant_check CHECK ((role = 'platform_admin') = (tenant_id IS NULL))
    )""")
    op.execute("CREATE INDEX users_tenant_idx ON users (tenant_id)")
    op.execute("""
    CREATE TABLE topic_configs (
        tenant_id                   bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        topic                       text NOT NULL,
        max_retries                 integer,
        message_ttl_seconds         integer,
        max_depth                   integer,
        throughput_limit            integer,
        visibility_timeout_seconds  integer,
        retry_backoff_seconds       integer[],
        dlq_enabled                 boolean,
        created_at                  timestamptz NOT NULL DEFAULT now(),
        updated_at                  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, topic)
    )""")
    op.execute("""
    CREATE TABLE messages (
        id                 uuid PRIMARY KEY,
        tenant_id          bigint NOT NULL,
        topic              text NOT NULL,
        key                text,
        payload            bytea NOT NULL,
        metadata           jsonb,
        status             text NOT NULL DEFAULT 'pending',
        priority           smallint NOT NULL DEFAULT 0,
        retry_count        integer NOT NULL DEFAULT 0,
        max_retries        integer NOT NULL,
        last_error         text,
        receipt            uuid,
        available_at       timestamptz NOT NULL DEFAULT now(),
        expires_at         timestamptz,
        first_dequeued_at  timestamptz,
        original_topic     text,
        dlq_moved_at       timestamptz,
        created_at         timestamptz NOT NULL DEFAULT now(),
        updated_at         timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT messages_status_check CHECK (status IN ('pending', 'processing', 'failed', 'expired')),
        CONSTRAINT messages_priority_check CHECK (priority BETWEEN 0 AND 9)
    )""")
    # Rows are updated on every dequeue and deleted on ack: leave room on each page for HOT-less churn and let
    # autovacuum keep up with a queue's high dead-tuple rate instead of waiting for 20% of the table.
    op.execute("""ALTER TABLE messages SET (fillfactor = 90, autovacuum_vacuum_scale_factor = 0.01,
                  autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.02)""")
    op.execute("""CREATE INDEX messages_dequeue_idx ON messages (tenant_id, topic, priority DESC, available_at)
                  WHERE status IN ('pending', 'processing')""")
    op.execute("""CREATE UNIQUE INDEX messages_pending_key_uq ON messages (tenant_id, topic, key)
                  WHERE key IS NOT NULL AND status = 'pending' AND original_topic IS NULL""")
    op.execute("""CREATE INDEX messages_done_idx ON messages (tenant_id, topic, id)
                  WHERE status IN ('failed', 'expired')""")
    op.execute("""CREATE INDEX messages_expiry_idx ON messages (expires_at)
                  WHERE expires_at IS NOT NULL AND status IN ('pending', 'processing')""")


def downgrade() -> None:
    op.execute("DROP TABLE messages")
    op.execute("DROP TABLE topic_configs")
    op.execute("DROP TABLE users")
    op.execute("DROP TABLE tenants")
