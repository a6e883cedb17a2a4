"""The process's wiring: pools, clients, repositories and services, opened and closed together."""

from __future__ import annotations

from dataclasses import dataclass

from mq import redis_client
from mq.audit.repository import AuditRepository
from mq.audit.service import AuditTrail
from mq.broadcast import Broadcast
from mq.buckets import TokenBuckets
from mq.commands import Commands
from mq.commands.messages import MessageCommands
from mq.commands.platform import PlatformCommands
from mq.commands.story import StoryCommands
from mq.commands.tenancy import AccountCommands, TenantCommands, UserCommands
from mq.commands.topic_data import HistoryCommands, ScheduleCommands, SchemaCommands
from mq.commands.topics import TopicCommands
from mq.db.engine import Engine, Pool, create_engine, create_pool, on_citus
from mq.db.listener import PostgresListener
from mq.db.repository import OperationsRepository
from mq.history.repository import HistoryRepository
from mq.history.service import History
from mq.jobs import SCHEDULE_CHANNEL, Jobs
from mq.metrics import Metrics, PoolSizes
from mq.queue.activity import Activity
from mq.queue.configs import TopicConfigs
from mq.queue.repository import MessageRepository
from mq.queue.service import QueueService
from mq.queue.types import QueueDefaults
from mq.queue.wakeups import WakeupHub
from mq.quotas import QuotaCache
from mq.redis_client import RedisClient
from mq.schedules.firer import ScheduleFirer
from mq.schedules.repository import ScheduleRepository
from mq.schedules.service import Schedules
from mq.schemas.repository import SchemaRepository
from mq.schemas.service import TopicSchemas
from mq.settings import Settings
from mq.tenancy.auth import Authenticator
from mq.tenancy.bootstrap import bootstrap, refuse_default_admin_password
from mq.tenancy.invalidation import AuthInvalidation
from mq.tenancy.limits import LoginLimiter
from mq.tenancy.passwords import PasswordChecks
from mq.tenancy.repository import TenancyRepository
from mq.tenancy.service import TenancyService
from mq.tenancy.tokens import TokenSigner, signing_key
from mq.topics.repository import TopicRepository
from mq.topics.service import TopicAdmin


@dataclass
class Runtime:
    settings: Settings
    pool: Pool
    operations: OperationsRepository
    engine: Engine
    redis: RedisClient | None
    listener: PostgresListener
    wakeups: WakeupHub
    broadcast: Broadcast
    queue: QueueService
    #: what callers ask, checked and carried out (authorization, bounds, audit, then the services)
    commands: Commands
    tenancy: TenancyRepository
    auth: Authenticator
    invalidation: AuthInvalidation
    tenants: TenancyService
    metrics: Metrics
    jobs: Jobs
    topics: TopicAdmin
    audit: AuditTrail
    history: History
    schemas: TopicSchemas
    schedules: Schedules
    #: The schedules' firer (periodic messages); the workers run it.
    ticks: ScheduleFirer

    @classmethod
    async def open(cls, settings: Settings, *, bootstrap_users: bool = True) -> Runtime:
        """Connect everything. Needs `settings.database_url` (the embedded server is started before this).
        `bootstrap_users`: create the platform admin and the default tenant if missing (the API does; workers
        leave it to the API)."""
        if not settings.database_url:
            raise RuntimeError("Runtime.open needs a database URL")
        pool = await create_pool(
            settings.database_url,
            settings.db_pool_min_size,
            settings.db_pool_max_size,
            settings.db_statement_timeout_seconds,
        )
        engine = create_engine(settings.database_url)
        redis = (
            redis_client.connect(settings.redis_url, socket_timeout=2, socket_connect_timeout=2)
            if settings.redis_url
            else None
        )
        listener = PostgresListener(settings.database_url)
        await listener.start()
        wakeups = WakeupHub(listener)
        await wakeups.start()
        operations = OperationsRepository(pool)
        citus = await on_citus(pool)
        broadcast = Broadcast(redis, settings.redis_url, listener, operations)
        messages = MessageRepository(
            pool,
            QueueDefaults(
                max_retries=settings.max_retries,
                message_ttl_seconds=settings.message_ttl_seconds,
                dlq_enabled=settings.dlq_enabled,
                expire_to_dlq=settings.expire_to_dlq,
            ),
            citus=citus,
        )
        quotas = QuotaCache(operations)
        buckets = TokenBuckets(redis, settings.api_instances)
        configs = TopicConfigs(messages, settings, redis, broadcast)
        metrics = Metrics(settings.metrics_max_topics_per_tenant)
        metrics.count_long_polls(wakeups.waiting_by_topic)
        metrics.watch_pool(PoolSizes(pool.get_size, pool.get_idle_size, pool.get_max_size))
        activity = Activity(messages)
        activity.start()
        queue = QueueService(messages, configs, wakeups, settings, quotas, buckets, metrics, activity)
        tenancy = TenancyRepository(engine)
        limiter = LoginLimiter(
            redis,
            settings.login_failure_limit,
            settings.login_failure_limit_per_address,
            settings.login_failure_window_seconds,
            settings.login_failure_limit_per_username,
        )
        passwords = PasswordChecks(settings.password_check_concurrency, settings.password_check_queue)
        secret = settings.token_secret.get_secret_value() if settings.token_secret else None
        auth = Authenticator(
            tenancy,
            settings.auth_cache_ttl_seconds,
            settings.auth_cache_size,
            limiter,
            passwords,
            lambda: TokenSigner(
                signing_key(secret, settings.data_dir), settings.token_ttl_seconds, settings.token_max_age_seconds
            ),
        )

        def forget() -> None:  # credentials, roles, grants, tenant status or quotas changed somewhere
            auth.forget()
            quotas.forget()

        invalidation = AuthInvalidation(broadcast, forget)
        jobs = Jobs(operations, settings, broadcast.publish, metrics)
        broadcast.on(SCHEDULE_CHANNEL, jobs.schedule_changed)
        await broadcast.start()
        if bootstrap_users:
            await bootstrap(tenancy, settings)
            await refuse_default_admin_password(tenancy, settings)
        tenants = TenancyService(tenancy, invalidation, passwords)
        topics = TopicAdmin(TopicRepository(pool), queue)
        audit = AuditTrail(AuditRepository(pool))
        history = History(HistoryRepository(pool), queue)
        schemas = TopicSchemas(SchemaRepository(pool), queue.configs, queue.schemas)
        schedules = Schedules(ScheduleRepository(pool), settings, quotas)
        message_commands = MessageCommands(queue, topics.browser, audit)
        return cls(
            settings=settings,
            pool=pool,
            operations=operations,
            engine=engine,
            redis=redis,
            listener=listener,
            wakeups=wakeups,
            broadcast=broadcast,
            queue=queue,
            commands=Commands(
                messages=message_commands,
                topics=TopicCommands(topics, queue, audit),
                schedules=ScheduleCommands(schedules, audit, message_commands),
                schemas=SchemaCommands(schemas, audit),
                history=HistoryCommands(history, audit),
                tenants=TenantCommands(tenants, topics.config.usage, audit),
                users=UserCommands(tenants, audit, topics.groups.topics_with),
                account=AccountCommands(tenants, audit),
                platform=PlatformCommands(jobs, tenants, audit),
                stories=StoryCommands(queue, history, audit),
            ),
            tenancy=tenancy,
            auth=auth,
            invalidation=invalidation,
            tenants=tenants,
            metrics=metrics,
            jobs=jobs,
            topics=topics,
            audit=audit,
            history=history,
            schemas=schemas,
            schedules=schedules,
            ticks=ScheduleFirer(ScheduleRepository(pool, citus=citus), queue, metrics),
        )

    async def close(self) -> None:
        await self.topics.close()
        await self.queue.schemas.close()
        await self.queue.activity.close()
        await self.broadcast.close()
        await self.wakeups.close()
        await self.listener.close()
        await self.pool.close()
        await self.engine.dispose()
        if self.redis is not None:
            await self.redis.aclose()
