"""`make openapi`: write the OpenAPI document the server serves to `docs/openapi.json` (the reviewed snapshot)."""

from __future__ import annotations

import warnings
from pathlib import Path

from litestar.exceptions import LitestarDeprecationWarning

from api.app import create_app
from api.openapi import openapi_json
from mq.settings import Settings

SNAPSHOT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def current() -> str:
    """The document of the code as it is now (no server or database needed). Litestar 2.25 warns of parameter
    styles it will drop in 3.0 (inferred path and query parameters); the server runs without warnings as errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LitestarDeprecationWarning)
        app = create_app(Settings(database_url=None, redis_url=None))
    return openapi_json(app.openapi_schema)


if __name__ == "__main__":
    SNAPSHOT.write_text(current())
    print(f"wrote {SNAPSHOT}")
