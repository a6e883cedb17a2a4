"""The schema as the first 25 migrations left it (`2026_11_22_core` to `2026_11_28_versioned_functions`, in the
history before the commit that folded them), made in one step: the tables, keys, indexes and constraints as
`pg_dump --schema-only` printed them from a database those migrations made (Postgres 15), then the database
functions of that revision from their one source (`mq.queue.sql.functions`), then the trigger that calls one. The
unversioned functions those migrations also left are not made: no release that called them runs on a schema this
new (a database migrated through them loses them in `2026_11_28_unversioned_dropped`).

The revision keeps the last folded migration's id, so that a database at it goes on from here; a database at an
earlier one (`FOLDED`) is refused with what to do (`mq.db.engine.migrate`: migrate it with a release from before the
fold first; docs/deploy.md, "Upgrade stops").

Revision ID: 2026_11_28_versioned_functions
Revises:
Create Date: 2026-11-28
"""

from alembic import op

revision = "2026_11_28_versioned_functions"
down_revision = None
branch_labels = None
depends_on = None

#: The revisions folded into this one, oldest first (this one's id is the last's).
FOLDED = (
    "2026_11_22_core",
    "2026_11_22_grants",
    "2026_11_22_sessions",
    "2026_11_22_admission",
    "2026_11_22_admission_copy",
    "2026_11_22_workers",
    "2026_11_23_truthful_caps",
    "2026_11_23_tenant_tombstones",
    "2026_11_24_console",
    "2026_11_25_audit_attempts",
    "2026_11_25_rollups",
    "2026_11_25_consumer_groups",
    "2026_11_25_group_grants",
    "2026_11_25_group_gauges",
    "2026_11_25_group_settle",
    "2026_11_25_deleted_groups",
    "2026_11_25_message_log",
    "2026_11_25_nack_metadata",
    "2026_11_25_topic_schemas",
    "2026_11_25_schedules",
    "2026_11_25_inflight",
    "2026_11_25_inflight_reservations",
    "2026_11_28_fair_schedules",
    "2026_11_28_audit_refusals",
)
#: The database functions of this revision, each after those it calls.
FUNCTIONS = (
    "skiplock_topic_exists_v1",
    "skiplock_topic_count_v1",
    "skiplock_admit_v1",
    "skiplock_admit_one_v1",
    "skiplock_admit_copy_v1",
    "skiplock_admit_copy_all_v1",
    "skiplock_group_done_v1",
    "skiplock_group_ack_v1",
    "skiplock_group_nack_v1",
    "skiplock_group_release_v1",
    "skiplock_group_tombstone_v1",
)

SCHEMA = """
CREATE TABLE admission_gates (
    tenant_id bigint NOT NULL,
    scope text NOT NULL,
    stripe smallint NOT NULL,
    bound bigint NOT NULL,
    alloc bigint NOT NULL
);

CREATE TABLE audit_log (
    id uuid NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id bigint,
    tenant text,
    actor text,
    action text NOT NULL,
    target text NOT NULL,
    details jsonb,
    request_id text
);

CREATE TABLE bulk_jobs (
    id uuid NOT NULL,
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    action text NOT NULL,
    filter jsonb NOT NULL,
    state text DEFAULT 'running'::text NOT NULL,
    matched bigint DEFAULT 0 NOT NULL,
    done bigint DEFAULT 0 NOT NULL,
    skipped bigint DEFAULT 0 NOT NULL,
    error text,
    created_by text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT bulk_jobs_action_check CHECK ((action = ANY (ARRAY['delete'::text, 'retry'::text, 'requeue'::text]))),
    CONSTRAINT bulk_jobs_state_check CHECK ((state = ANY (ARRAY['running'::text, 'done'::text, 'failed'::text,
        'cancelled'::text])))
);

CREATE TABLE consumer_groups (
    id bigint NOT NULL,
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    name text NOT NULL,
    start text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    settled_at timestamp with time zone,
    CONSTRAINT consumer_groups_start_check CHECK ((start = ANY (ARRAY['latest'::text, 'earliest'::text])))
);

ALTER TABLE consumer_groups ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME consumer_groups_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE deleted_groups (
    id bigint NOT NULL,
    deleted_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE deleted_tenants (
    tenant_id bigint NOT NULL,
    deleted_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE deliveries (
    group_id bigint NOT NULL,
    message_id uuid NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    priority smallint NOT NULL,
    available_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone,
    retry_count integer DEFAULT 0 NOT NULL,
    receipt uuid,
    leased_at timestamp with time zone,
    leased_by text,
    last_error text,
    attempts jsonb,
    metadata jsonb,
    CONSTRAINT deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'processing'::text])))
);

CREATE TABLE grants (
    id uuid NOT NULL,
    tenant_id bigint NOT NULL,
    user_id uuid NOT NULL,
    action text NOT NULL,
    topic_pattern text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    consumer_group text,
    CONSTRAINT grants_action_check CHECK ((action = ANY (ARRAY['produce'::text, 'consume'::text, 'read'::text]))),
    CONSTRAINT grants_consumer_group_check CHECK (((consumer_group IS NULL) OR (action = 'consume'::text)))
);

CREATE TABLE group_gauges (
    tenant text NOT NULL,
    topic text NOT NULL,
    consumer_group text NOT NULL,
    pending bigint NOT NULL,
    processing bigint NOT NULL,
    oldest_pending_age_seconds double precision
);

CREATE TABLE inflight_counts (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    group_id bigint DEFAULT 0 NOT NULL,
    leased integer DEFAULT 0 NOT NULL
);

CREATE TABLE inflight_ended (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    group_id bigint DEFAULT 0 NOT NULL,
    n integer NOT NULL
)
WITH (autovacuum_vacuum_scale_factor='0', autovacuum_vacuum_threshold='1000');

CREATE TABLE inflight_leases (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    group_id bigint DEFAULT 0 NOT NULL,
    receipt uuid NOT NULL,
    message_id uuid NOT NULL,
    deadline timestamp with time zone NOT NULL
)
WITH (autovacuum_vacuum_scale_factor='0', autovacuum_vacuum_threshold='1000', fillfactor='70');

CREATE TABLE inflight_reservations (
    id bigint NOT NULL,
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    group_id bigint DEFAULT 0 NOT NULL,
    n integer NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_vacuum_scale_factor='0', autovacuum_vacuum_threshold='1000');

ALTER TABLE inflight_reservations ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME inflight_reservations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE job_runs (
    job text NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    duration_seconds double precision NOT NULL,
    rows bigint NOT NULL
);

CREATE TABLE message_log (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    acked_at timestamp with time zone NOT NULL,
    id uuid NOT NULL,
    key text,
    payload bytea NOT NULL,
    metadata jsonb,
    priority smallint NOT NULL,
    retry_count integer NOT NULL,
    created_at timestamp with time zone NOT NULL
)
PARTITION BY RANGE (acked_at);

CREATE TABLE message_log_p_default PARTITION OF message_log DEFAULT;

CREATE TABLE message_log_trims (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    before timestamp with time zone NOT NULL
);

CREATE TABLE messages (
    id uuid NOT NULL,
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    key text,
    payload bytea NOT NULL,
    metadata jsonb,
    status text DEFAULT 'pending'::text NOT NULL,
    priority smallint DEFAULT 0 NOT NULL,
    retry_count integer DEFAULT 0 NOT NULL,
    max_retries integer NOT NULL,
    last_error text,
    receipt uuid,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    first_dequeued_at timestamp with time zone,
    original_topic text,
    dlq_moved_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    leased_at timestamp with time zone,
    leased_by text,
    attempts jsonb,
    owed smallint,
    consumer_group text,
    CONSTRAINT messages_priority_check CHECK (((priority >= 0) AND (priority <= 9))),
    CONSTRAINT messages_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'processing'::text, 'failed'::text,
        'expired'::text])))
)
WITH (fillfactor='90', autovacuum_vacuum_scale_factor='0.01', autovacuum_vacuum_insert_scale_factor='0.05',
    autovacuum_analyze_scale_factor='0.02');

CREATE TABLE queue_gauges (
    tenant text NOT NULL,
    topic text NOT NULL,
    status text NOT NULL,
    messages bigint NOT NULL,
    oldest_pending_age_seconds double precision
);

CREATE TABLE queue_samples (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    at timestamp with time zone NOT NULL,
    pending bigint NOT NULL,
    processing bigint NOT NULL,
    failed bigint NOT NULL,
    expired bigint NOT NULL,
    oldest_pending_age_seconds double precision
);

CREATE TABLE schedules (
    tenant_id bigint NOT NULL,
    name text NOT NULL,
    topic text NOT NULL,
    cron text NOT NULL,
    timezone text NOT NULL,
    payload bytea NOT NULL,
    key text,
    metadata jsonb,
    priority smallint DEFAULT 0 NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    next_run_at timestamp with time zone NOT NULL,
    last_run_at timestamp with time zone,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE sessions (
    token_hash bytea NOT NULL,
    user_id uuid NOT NULL,
    csrf_token text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE tenants (
    id bigint NOT NULL,
    slug text NOT NULL,
    name text NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    quotas jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT tenants_status_check CHECK ((status = ANY (ARRAY['active'::text, 'suspended'::text])))
);

ALTER TABLE tenants ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tenants_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE topic_activity (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    at timestamp with time zone NOT NULL,
    enqueued bigint NOT NULL,
    acked bigint NOT NULL,
    dead_lettered bigint DEFAULT 0 NOT NULL
);

CREATE TABLE topic_configs (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    max_retries integer,
    message_ttl_seconds integer,
    max_depth integer,
    throughput_limit integer,
    visibility_timeout_seconds integer,
    retry_backoff_seconds integer[],
    dlq_enabled boolean,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    expire_to_dlq boolean,
    replayable boolean,
    replay_window_seconds integer,
    max_inflight integer
);

CREATE TABLE topic_pauses (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    paused_at timestamp with time zone DEFAULT now() NOT NULL,
    paused_by text NOT NULL
);

CREATE TABLE topic_rollups (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    bucket timestamp with time zone NOT NULL,
    pending bigint NOT NULL,
    processing bigint NOT NULL,
    failed bigint NOT NULL,
    expired bigint NOT NULL,
    oldest_pending_age_seconds double precision,
    enqueued bigint NOT NULL,
    acked bigint NOT NULL,
    dead_lettered bigint NOT NULL
);

CREATE TABLE topic_schemas (
    tenant_id bigint NOT NULL,
    topic text NOT NULL,
    version integer NOT NULL,
    format text NOT NULL,
    schema_json text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT topic_schemas_format_check CHECK ((format = ANY (ARRAY['avro'::text, 'json_schema'::text]))),
    CONSTRAINT topic_schemas_version_check CHECK ((version >= 1))
);

CREATE TABLE users (
    id uuid NOT NULL,
    tenant_id bigint,
    username text NOT NULL,
    password_hash text NOT NULL,
    role text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT users_role_check CHECK ((role = ANY (ARRAY['platform_admin'::text, 'tenant_admin'::text,
        'member'::text]))),
    CONSTRAINT users_tenant_check CHECK (((role = 'platform_admin'::text) = (tenant_id IS NULL)))
);

CREATE TABLE worker_settings (
    name text NOT NULL,
    value text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY admission_gates
    ADD CONSTRAINT admission_gates_pkey PRIMARY KEY (tenant_id, scope, stripe);

ALTER TABLE ONLY audit_log
    ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY bulk_jobs
    ADD CONSTRAINT bulk_jobs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY consumer_groups
    ADD CONSTRAINT consumer_groups_name_uq UNIQUE (tenant_id, topic, name);

ALTER TABLE ONLY consumer_groups
    ADD CONSTRAINT consumer_groups_pkey PRIMARY KEY (id);

ALTER TABLE ONLY deleted_groups
    ADD CONSTRAINT deleted_groups_pkey PRIMARY KEY (id);

ALTER TABLE ONLY deleted_tenants
    ADD CONSTRAINT deleted_tenants_pkey PRIMARY KEY (tenant_id);

ALTER TABLE ONLY deliveries
    ADD CONSTRAINT deliveries_pkey PRIMARY KEY (group_id, message_id);

ALTER TABLE ONLY grants
    ADD CONSTRAINT grants_pkey PRIMARY KEY (id);

ALTER TABLE ONLY grants
    ADD CONSTRAINT grants_unique UNIQUE NULLS NOT DISTINCT (user_id, action, topic_pattern, consumer_group);

ALTER TABLE ONLY group_gauges
    ADD CONSTRAINT group_gauges_pkey PRIMARY KEY (tenant, topic, consumer_group);

ALTER TABLE ONLY inflight_counts
    ADD CONSTRAINT inflight_counts_pkey PRIMARY KEY (tenant_id, topic, group_id);

ALTER TABLE ONLY inflight_leases
    ADD CONSTRAINT inflight_leases_pkey PRIMARY KEY (tenant_id, topic, group_id, deadline, receipt);

ALTER TABLE ONLY inflight_reservations
    ADD CONSTRAINT inflight_reservations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY job_runs
    ADD CONSTRAINT job_runs_pkey PRIMARY KEY (job);

ALTER TABLE ONLY message_log_trims
    ADD CONSTRAINT message_log_trims_pkey PRIMARY KEY (tenant_id, topic);

ALTER TABLE ONLY messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);

ALTER TABLE ONLY queue_gauges
    ADD CONSTRAINT queue_gauges_pkey PRIMARY KEY (tenant, topic, status);

ALTER TABLE ONLY queue_samples
    ADD CONSTRAINT queue_samples_pkey PRIMARY KEY (tenant_id, topic, at);

ALTER TABLE ONLY schedules
    ADD CONSTRAINT schedules_pkey PRIMARY KEY (tenant_id, name);

ALTER TABLE ONLY sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (token_hash);

ALTER TABLE ONLY tenants
    ADD CONSTRAINT tenants_pkey PRIMARY KEY (id);

ALTER TABLE ONLY tenants
    ADD CONSTRAINT tenants_slug_key UNIQUE (slug);

ALTER TABLE ONLY topic_activity
    ADD CONSTRAINT topic_activity_pkey PRIMARY KEY (tenant_id, topic, at);

ALTER TABLE ONLY topic_configs
    ADD CONSTRAINT topic_configs_pkey PRIMARY KEY (tenant_id, topic);

ALTER TABLE ONLY topic_pauses
    ADD CONSTRAINT topic_pauses_pkey PRIMARY KEY (tenant_id, topic);

ALTER TABLE ONLY topic_rollups
    ADD CONSTRAINT topic_rollups_pkey PRIMARY KEY (tenant_id, topic, bucket);

ALTER TABLE ONLY topic_schemas
    ADD CONSTRAINT topic_schemas_pkey PRIMARY KEY (tenant_id, topic, version);

ALTER TABLE ONLY users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

ALTER TABLE ONLY users
    ADD CONSTRAINT users_username_key UNIQUE (username);

ALTER TABLE ONLY worker_settings
    ADD CONSTRAINT worker_settings_pkey PRIMARY KEY (name);

CREATE INDEX audit_log_at_idx ON audit_log USING btree (at);

CREATE INDEX audit_log_tenant_idx ON audit_log USING btree (tenant_id, id);

CREATE INDEX bulk_jobs_tenant_idx ON bulk_jobs USING btree (tenant_id, created_at);

CREATE INDEX deliveries_dequeue_idx ON deliveries USING btree (group_id, priority DESC, available_at);

CREATE INDEX inflight_ended_topic_idx ON inflight_ended USING btree (tenant_id, topic, group_id);

CREATE INDEX inflight_reservations_topic_idx ON inflight_reservations USING btree (tenant_id, topic, group_id);

CREATE INDEX message_log_page_idx ON ONLY message_log USING btree (tenant_id, topic, acked_at, id);

CREATE INDEX message_log_p_default_tenant_id_topic_acked_at_id_idx ON message_log_p_default USING btree (tenant_id,
    topic, acked_at, id);

CREATE INDEX messages_dequeue_idx ON messages USING btree (tenant_id, topic, priority DESC, available_at)
    WHERE (status = ANY (ARRAY['pending'::text, 'processing'::text]));

CREATE INDEX messages_done_idx ON messages USING btree (tenant_id, topic, id)
    WHERE (status = ANY (ARRAY['failed'::text, 'expired'::text]));

CREATE INDEX messages_expiry_idx ON messages USING btree (expires_at)
    WHERE ((expires_at IS NOT NULL) AND (status = ANY (ARRAY['pending'::text, 'processing'::text])));

CREATE UNIQUE INDEX messages_pending_key_uq ON messages USING btree (tenant_id, topic, key)
    WHERE ((key IS NOT NULL) AND (status = 'pending'::text) AND (original_topic IS NULL));

CREATE INDEX queue_samples_at_idx ON queue_samples USING btree (at);

CREATE INDEX schedules_tenant_due_idx ON schedules USING btree (tenant_id, next_run_at) WHERE enabled;

CREATE INDEX sessions_user_idx ON sessions USING btree (user_id);

CREATE INDEX topic_activity_at_idx ON topic_activity USING btree (at);

CREATE INDEX topic_rollups_bucket_idx ON topic_rollups USING btree (bucket);

CREATE INDEX users_tenant_idx ON users USING btree (tenant_id);

ALTER INDEX message_log_page_idx ATTACH PARTITION message_log_p_default_tenant_id_topic_acked_at_id_idx;

ALTER TABLE ONLY bulk_jobs
    ADD CONSTRAINT bulk_jobs_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY consumer_groups
    ADD CONSTRAINT consumer_groups_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY grants
    ADD CONSTRAINT grants_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY grants
    ADD CONSTRAINT grants_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE ONLY message_log_trims
    ADD CONSTRAINT message_log_trims_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY schedules
    ADD CONSTRAINT schedules_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY sessions
    ADD CONSTRAINT sessions_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE ONLY topic_configs
    ADD CONSTRAINT topic_configs_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY topic_pauses
    ADD CONSTRAINT topic_pauses_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY topic_schemas
    ADD CONSTRAINT topic_schemas_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY users
    ADD CONSTRAINT users_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;
"""


def _released():  # type: ignore[no-untyped-def]
    """The functions' sources, imported when run: loading the revision (`alembic history`, a server checking the
    schema) imports nothing of the code."""
    from mq.queue.sql.functions import RELEASED  # noqa: PLC0415  (see the docstring)

    return RELEASED


def upgrade() -> None:
    for statement in SCHEMA.split(";\n"):  # one at a time: the driver prepares each
        if statement.strip():
            op.execute(statement)
    released = _released()
    for name in FUNCTIONS:
        op.execute(released[name].create())
    op.execute("""
    CREATE TRIGGER consumer_groups_tombstone AFTER DELETE ON consumer_groups
    FOR EACH ROW EXECUTE FUNCTION skiplock_group_tombstone_v1()""")


def downgrade() -> None:
    op.execute("DROP TABLE " + ", ".join(_tables()) + " CASCADE")
    released = _released()
    for name in reversed(FUNCTIONS):
        op.execute(released[name].drop())


def _tables() -> list[str]:
    return [line.split()[2] for line in SCHEMA.splitlines() if line.startswith("CREATE TABLE ")]
