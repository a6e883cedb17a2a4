"""The admin console's production build (`admin-ui/dist`), served at `/` by the API process.

Files are read once at startup into memory (the build is a few hundred KiB), text files also gzipped once (the
script shrinks to a third), and served gzipped to browsers that accept it. Hashed assets (`/assets/*`) are
cached for a year; everything else, `index.html` first, is revalidated on every load so a new build is picked up
at once. Any other GET outside the API's own prefixes is a client-side route and answers `index.html`. Every
answer carries a strict Content-Security-Policy (no inline script or style, no framing, same-origin connections
only) and the headers that go with it.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litestar import Request, Response, route
from litestar.exceptions import MethodNotAllowedException
from litestar.status_codes import HTTP_200_OK, HTTP_304_NOT_MODIFIED

from mq import errors

#: Prefixes that belong to the API: never answered with the console's index.html.
API_PREFIXES = ("/api/", "/schema", "/metrics", "/healthz", "/readyz")

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}
_IMMUTABLE = "public, max-age=31536000, immutable"
_REVALIDATE = "no-cache"


#: Compressed once at startup when larger than this and of a text type; browsers all accept gzip.
_GZIP_MIN_BYTES = 1024
_COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")


@dataclass(frozen=True)
class _File:
    body: bytes
    media_type: str
    etag: str
    cache_control: str
    gzipped: bytes | None = None


class ConsoleFiles:
    """The build's files by URL path; empty when the console was not built."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.files: dict[str, _File] = {}
        if (directory / "index.html").is_file():
            for path in sorted(p for p in directory.rglob("*") if p.is_file()):
                url = "/" + path.relative_to(directory).as_posix()
                body = path.read_bytes()
                media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                cache = _IMMUTABLE if url.startswith("/assets/") else _REVALIDATE
                etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
                gzipped = None
                if len(body) > _GZIP_MIN_BYTES and media_type.startswith(_COMPRESSIBLE):
                    gzipped = gzip.compress(body, compresslevel=9, mtime=0)
                self.files[url] = _File(body, media_type, etag, cache, gzipped)

    @property
    def built(self) -> bool:
        return "/index.html" in self.files

    def answer(self, path: str, if_none_match: str | None, accept_encoding: str = "") -> Response[bytes]:
        if not self.built:
            raise errors.NotFound(
                f"the admin console is not built ({self.directory} has no index.html): run `make ui` or `make run`"
            )
        if path.startswith(API_PREFIXES) or path in ("/schema", "/metrics", "/healthz", "/readyz"):
            raise errors.NotFound(f"no route {path}")
        file = self.files.get(path) or self.files["/index.html"]
        body, etag = file.body, file.etag
        headers = {**SECURITY_HEADERS, "Cache-Control": file.cache_control}
        if file.gzipped is not None:
            headers["Vary"] = "Accept-Encoding"
            if "gzip" in accept_encoding.lower():
                body, etag = file.gzipped, etag[:-1] + '-gz"'  # each encoding its own validator
                headers["Content-Encoding"] = "gzip"
        headers["ETag"] = etag
        if if_none_match == etag:
            return Response(b"", status_code=HTTP_304_NOT_MODIFIED, headers=headers)
        return Response(body, status_code=HTTP_200_OK, media_type=file.media_type, headers=headers)


def console_routes(files: ConsoleFiles) -> list[Any]:
    """`/` and every other path the API does not own, answered from the build."""

    @route(
        ["/", "/{path:path}"],
        http_method=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
        include_in_schema=False,
        sync_to_thread=False,
        name="admin-console",
    )
    def console(request: Request[Any, Any, Any]) -> Response[bytes]:
        """Unknown API paths keep answering 404 in the contract's shape, whatever their method."""
        path = request.url.path
        if request.method not in ("GET", "HEAD") and not path.startswith(API_PREFIXES):
            raise MethodNotAllowedException()
        return files.answer(path, request.headers.get("if-none-match"), request.headers.get("accept-encoding", ""))

    return [console]
