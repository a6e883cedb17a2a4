"""The `config` part of the chart's values.schema.json, made from the server's settings, so that every setting a
release may set is checked for its type and range, and a misspelt one is refused by `helm install`.

`python -m tests.deploy.values_schema` rewrites it after a setting was added or changed; a test compares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mq.settings import Settings

SCHEMA = Path(__file__).resolve().parents[2] / "helm" / "skiplock" / "values.schema.json"

#: Settings the chart sets itself (from other values) or takes from its Secrets: not in `config` (grpc_port from
#: `grpc`, token_secret from `auth.tokenSecret`: never a plain value).
CHART_MANAGED = frozenset(
    {
        "host",
        "port",
        "grpc_port",
        "database_url",
        "redis_url",
        "admin_password",
        "metrics_token",
        "token_secret",
        "migrate_on_start",
        "run_workers",
        "api_instances",
        "data_dir",
        "admin_ui_dir",
    }
)


def config_schema() -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name, setting in sorted(Settings.model_json_schema()["properties"].items()):
        if name in CHART_MANAGED:
            continue
        prop = {k: v for k, v in setting.items() if k not in ("title", "default")}
        variants = [v for v in prop.pop("anyOf", []) if v.get("type") != "null"]
        if variants:
            [only] = variants
            prop = {**only, **prop}
        properties[name] = {"description": " ".join(prop.pop("description").split()), **prop}
    return {
        "type": "object",
        "description": "Settings of docs/configuration.md without the SKIPLOCK_ prefix, in lower case.",
        "additionalProperties": False,
        "properties": properties,
    }


def main() -> None:
    schema = json.loads(SCHEMA.read_text())
    schema["properties"]["config"] = config_schema()
    SCHEMA.write_text(json.dumps(schema, indent=2) + "\n")


if __name__ == "__main__":
    main()
