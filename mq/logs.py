"""Process logging: one JSON object per line (or plain text), each carrying the request id of the request being
served, if any: the server's own id (`request_id`), and the caller's `X-Request-ID` (`client_request_id`) when it
sent one.

What is never logged: passwords, Authorization headers, cookies, payloads. Nothing here reads them, and the
request line (`api.observability`) holds only the method, route template, status, duration and request id.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime

#: The server's id of the request this task is serving ("" outside requests).
REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("skiplock_request_id", default="")
#: The caller's own `X-Request-ID` for it, if it sent a sane one (kept beside the server's, never instead of it).
CLIENT_REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "skiplock_client_request_id", default=None
)

# Attributes every LogRecord has; anything else was passed in `extra=` and goes into the JSON object.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "color_message",  # uvicorn's message with terminal colours
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = REQUEST_ID.get()
        if request_id:
            entry["request_id"] = request_id
            client_id = CLIENT_REQUEST_ID.get()
            if client_id is not None and client_id != request_id:
                entry["client_request_id"] = client_id
        for name, value in record.__dict__.items():
            if name not in _STANDARD and not name.startswith("_"):
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        request_id = REQUEST_ID.get()
        return f"{line} [{request_id}]" if request_id else line


def configure_logging(level: str, fmt: str = "json") -> None:
    """Send every logger (uvicorn's too) to stderr in `fmt` at `level`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if fmt == "json" else _TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    logging.getLogger("apscheduler").setLevel(max(logging.WARNING, root.level))
