"""Alembic scripts: the schema's history. Installed as `mq.db.migrations` (`mq.db.engine.migrate`)."""
