"""TLS options against a real TLS server that requires a client certificate: a CA bundle verifies the server, a
client certificate is presented, and a server the CA did not sign is refused. Certificates come from openssl."""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from skiplock_client import AsyncClient, RetryPolicy, TlsError, TransportError

from tests.support.servers import free_port

EC_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ca.pem signs server.pem (for 127.0.0.1) and client.pem; other-ca.pem signs nothing here."""
    folder = tmp_path_factory.mktemp("tls")
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", *EC_KEY, "-nodes", "-days", "2", "-subj", f"/CN={ca}",
                 "-keyout", f"{ca}.key", "-out", f"{ca}.pem", cwd=folder)  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, extra in (("server", ["-extfile", "san.ext"]), ("client", [])):
        _openssl("req", *EC_KEY, "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
                 "-out", f"{name}.csr", cwd=folder)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", "2", "-out", f"{name}.pem", *extra, cwd=folder)  # fmt: skip
    return folder


@pytest.fixture
async def tls_server(certificates: Path) -> AsyncIterator[tuple[str, list[str]]]:
    """An HTTPS server answering /api/version, requiring a client certificate signed by ca.pem; it records the
    common names of the clients it served."""
    served: list[str] = []

    async def version(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        served.append(dict(item[0] for item in peer["subject"])["commonName"] if peer else "")
        return web.json_response({"version": "tls-test"})

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(certificates / "ca.pem"))
    context.load_cert_chain(certificates / "server.pem", certificates / "server.key")
    context.verify_mode = ssl.CERT_REQUIRED
    app = web.Application()
    app.router.add_get("/api/version", version)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
    yield f"https://127.0.0.1:{port}", served
    await runner.cleanup()


async def test_a_ca_bundle_and_a_client_certificate(certificates: Path, tls_server: tuple[str, list[str]]) -> None:
    url, served = tls_server
    client_cert = (str(certificates / "client.pem"), str(certificates / "client.key"))
    async with AsyncClient(url, verify=str(certificates / "ca.pem"), client_cert=client_cert) as sk:
        assert await sk.version() == "tls-test"
    assert served == ["client"]


async def test_a_server_the_bundle_does_not_vouch_for_is_refused(
    certificates: Path, tls_server: tuple[str, list[str]]
) -> None:
    url, served = tls_server
    client_cert = (str(certificates / "client.pem"), str(certificates / "client.key"))
    async with AsyncClient(url, verify=str(certificates / "other-ca.pem"), client_cert=client_cert) as sk:
        with pytest.raises(TlsError, match="certificate"):
            await sk.version()
    # Without a client certificate the server hangs up after the handshake: to the client, a connection lost like
    # any other (retried as such), hence a short policy here.
    async with AsyncClient(url, verify=str(certificates / "ca.pem"), retry=RetryPolicy(attempts=2)) as sk:
        with pytest.raises(TransportError):
            await sk.version()
    assert served == []
