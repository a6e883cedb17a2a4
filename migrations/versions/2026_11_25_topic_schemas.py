"""Topic schemas: numbered versions per (tenant, topic), the highest in force; every enqueue into the topic checks
its payload against it (`mq.schemas`).

Revision ID: 2026_11_25_topic_schemas
Revises: 2026_11_25_nack_metadata
Create Date: 2026-11-25
"""

from alembic import op

revision = "2026_11_25_topic_schemas"
down_revision = "2026_11_25_nack_metadata"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The primary key is also the lookup of a topic's current version (the config cache reads it, backwards).
    op.execute("""
    CREATE TABLE topic_schemas (
        tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        topic        text NOT NULL,
        version      integer NOT NULL,
        format       text NOT NULL,
        schema_json  text NOT NULL,
        created_at   timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT topic_schemas_pkey PRIMARY KEY (tenant_id, topic, version),
        CONSTRAINT topic_schemas_format_check CHECK (format IN ('avro', 'json_schema')),
        CONSTRAINT topic_schemas_version_check CHECK (version >= 1)
    )""")


def downgrade() -> None:
    op.execute("DROP TABLE topic_schemas")
