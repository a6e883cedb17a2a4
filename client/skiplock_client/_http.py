"""The one place requests are sent: JSON bodies in and out (msgspec), errors raised as their class, retries by policy.

aiohttp pools the connections (keep-alive, HTTP/1.1) and parses responses in C: on the machines this is measured
on, it costs about a third of httpx's client CPU per request (bench/RESULTS.md), which matters to a consumer
sharing its cores with the work it does. The session is opened on first use, inside the event loop it then
belongs to.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import ssl
import time
from collections.abc import Mapping
from typing import Any, TypeVar

import aiohttp
import msgspec

from skiplock_client import errors
from skiplock_client.retry import NO_RETRY, RetryPolicy, retryable

T = TypeVar("T")
log = logging.getLogger("skiplock_client")

_CSRF_COOKIE = "skiplock_csrf"
_JSON = "application/json"


def tls_context(verify: bool | str = True, client_cert: str | tuple[str, str] | None = None) -> ssl.SSLContext | bool:
    """`verify`: True (the system's CAs), False (no verification: tests only), or a CA bundle's path;
    `client_cert`: a PEM file holding certificate and key, or (certificate file, key file)."""
    if verify is True and client_cert is None:
        return True
    if verify is False and client_cert is None:
        return False
    context = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
    if verify is False:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if client_cert is not None:
        certfile, keyfile = (client_cert, None) if isinstance(client_cert, str) else client_cert
        context.load_cert_chain(certfile, keyfile)
    return context


def basic_auth(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


class Transport:
    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        auth: tuple[str, str] | None,
        timeout: float,
        tls: ssl.SSLContext | bool,
        max_connections: int,
        retry: RetryPolicy,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry
        self._headers = headers
        self._authorization = basic_auth(*auth) if auth else None
        self._timeout = aiohttp.ClientTimeout(total=None, connect=min(timeout, 10.0), sock_read=max(timeout, 25.0))
        self._tls = tls
        self._max_connections = max_connections
        self._session = session
        self._own_session = session is None
        # Our own session sends the common headers by default; a session of the caller's gets them per request.
        self._per_request = {} if session is None else dict(headers)
        self.retries = 0  # requests tried again, for reports
        self.session_cookie = False  # authenticated by the session cookie (`login`): unsafe requests carry the CSRF

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            # The read timeout must outlast a long poll (at most 20 s) by a margin. unsafe=True: the cookie jar
            # keeps cookies of servers addressed by IP (127.0.0.1), as a session needs.
            self._session = aiohttp.ClientSession(
                headers=self._headers,
                timeout=self._timeout,
                connector=aiohttp.TCPConnector(limit=self._max_connections, ssl=self._tls),
                cookie_jar=aiohttp.CookieJar(unsafe=True),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None and self._own_session:
            await self._session.close()

    def use_session_cookie(self, on: bool) -> None:
        self.session_cookie = on

    async def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str | int] | None = None,
        decode: type[T] | None = None,
        retry: RetryPolicy = NO_RETRY,
    ) -> T | None:
        """Send, retrying what `retry` allows; the answer decoded as `decode` (None: no body expected)."""
        session = self._open()
        content = body if isinstance(body, bytes) else (msgspec.json.encode(body) if body is not None else None)
        headers = dict(self._per_request)
        if content is not None:
            headers["Content-Type"] = _JSON
        if self.session_cookie:
            if method not in ("GET", "HEAD"):
                headers["X-CSRF-Token"] = self._csrf(session)
        elif self._authorization is not None:
            headers["Authorization"] = self._authorization
        url = self.base_url + path
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            try:
                async with session.request(method, url, data=content, params=params, headers=headers) as response:
                    answer = await response.read()
                    if response.status < 400:
                        return self._decode(method, path, response, answer, decode)
                    error = errors.error_for(response.status, answer, response.headers, response.reason)
            except (aiohttp.ClientSSLError, aiohttp.ClientConnectorCertificateError) as exc:
                raise errors.TlsError(f"{method} {path}: {exc}") from exc  # will not change by retrying
            except (aiohttp.ClientError, TimeoutError) as exc:
                error = errors.TransportError(f"{method} {path}: {type(exc).__name__} {exc}")
            if attempt >= retry.attempts or not retryable(error, retry):
                raise error
            delay = retry.backoff(attempt, error.retry_after)
            if time.monotonic() - started + delay > retry.budget_seconds:
                raise error
            self.retries += 1
            log.debug("%s %s: %s; retry %d in %.2f s", method, path, error, attempt, delay)
            await asyncio.sleep(delay)

    def _csrf(self, session: aiohttp.ClientSession) -> str:
        for cookie in session.cookie_jar:
            if cookie.key == _CSRF_COOKIE:
                return cookie.value
        return ""

    @staticmethod
    def _decode(
        method: str, path: str, response: aiohttp.ClientResponse, answer: bytes, decode: type[T] | None
    ) -> T | None:
        if decode is None:
            return None
        try:
            return msgspec.json.decode(answer, type=decode)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise errors.SkiplockError(
                f"unexpected answer to {method} {path}: {exc}",
                status=response.status,
                request_id=response.headers.get("X-Request-Id"),
            ) from exc
