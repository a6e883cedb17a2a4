"""`TopicSchemas`: a tenant's topic schemas, by version (contract, "Topic schemas"). A replacement is checked
(it must parse and compile; with `backward`, accept what the version in force accepts) and stored as the next
version; the topic's config cache entry is then dropped on every instance (`TopicConfigs.changed`: a broadcast),
so enqueues check the new version within the broadcast's delay, and at worst the cache's 5 s.

Raises only `mq.errors`. Who may do what is the API's business (`api.routes.schemas`).
"""

from __future__ import annotations

from typing import Literal

from mq import errors
from mq.queue.configs import TopicConfigs
from mq.queue.validation import check_topic
from mq.schemas.checks import CHECK_TOO_COSTLY, SchemaChecks, TooCostly
from mq.schemas.formats import SchemaFormat
from mq.schemas.repository import Record, SchemaRepository

Compatibility = Literal["none", "backward"]
#: Versions a topic keeps at most; one more is refused (403 `quota_exceeded`): delete the schema to start again.
MAX_SCHEMA_VERSIONS = 100


class TopicSchemas:
    def __init__(self, repository: SchemaRepository, configs: TopicConfigs, checks: SchemaChecks) -> None:
        self.repository = repository
        self.configs = configs
        self.checks = checks

    async def list(self, tenant_id: int) -> list[Record]:
        """Each topic's schema in force (`sql.LIST`'s rows)."""
        return await self.repository.list(tenant_id)

    async def get(self, tenant_id: int, topic: str, version: int | None = None) -> Record:
        check_topic(topic, for_enqueue=True)
        row = await self.repository.get(tenant_id, topic, version)
        if row is None:
            which = "a schema" if version is None else f"a schema version {version}"
            raise errors.NotFound(f"topic {topic!r} has no {which}")
        return row

    async def put(
        self, tenant_id: int, topic: str, schema_json: str, schema_format: SchemaFormat, compatibility: Compatibility
    ) -> Record:
        """Store the next version (1 for a topic without one). Compiling it and checking its compatibility run in
        the schema-check processes, within their budget (`mq.schemas.checks`)."""
        check_topic(topic, for_enqueue=True)
        await self.checks.compile(schema_format, schema_json)

        async def compatible(current: Record | None) -> None:
            if current is not None and current["version"] >= MAX_SCHEMA_VERSIONS:
                raise errors.QuotaExceeded(
                    f"topic {topic!r} keeps at most {MAX_SCHEMA_VERSIONS} schema versions: delete its schema to "
                    "start again from version 1",
                    details={"limit": MAX_SCHEMA_VERSIONS, "version": current["version"]},
                )
            if compatibility != "backward" or current is None:
                return
            if current["format"] != schema_format:
                raise errors.IncompatibleSchema(
                    f"version {current['version']} is {current['format']}, the new one {schema_format}: a change of "
                    "format cannot be checked for compatibility (replace without compatibility to make it)",
                    details={"version": current["version"]},
                )
            try:
                problem = await self.checks.first_break(schema_format, current["schema_json"], schema_json)
            except TooCostly:
                raise errors.IncompatibleSchema(
                    f"checking the new version against version {current['version']} took longer than its budget: "
                    f"{CHECK_TOO_COSTLY} (replace without compatibility to make it)",
                    details={"version": current["version"], "reason": CHECK_TOO_COSTLY},
                ) from None
            if problem is not None:
                raise errors.IncompatibleSchema(
                    f"the new version would refuse messages version {current['version']} accepts: {problem}",
                    details={"version": current["version"], "break": problem},
                )

        row = await self.repository.add_version(tenant_id, topic, schema_format, schema_json, compatible)
        await self.configs.changed(tenant_id, topic)
        return row

    async def delete(self, tenant_id: int, topic: str) -> None:
        """Every version goes; enqueues into the topic are no longer checked."""
        check_topic(topic, for_enqueue=True)
        if not await self.repository.delete(tenant_id, topic):
            raise errors.NotFound(f"topic {topic!r} has no schema")
        await self.configs.changed(tenant_id, topic)
