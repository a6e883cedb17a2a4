"""The admin console's build as `api.ui` serves it: caching, strict headers, client-side routes, API paths kept."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from api.ui import CONTENT_SECURITY_POLICY, ConsoleFiles
from mq import errors


@pytest.fixture
def files(tmp_path: Path) -> ConsoleFiles:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<!doctype html><title>Skiplock</title>")
    (tmp_path / "assets" / "index-abc123.js").write_text("console.log(1)")
    (tmp_path / "assets" / "app-def456.js").write_text("console.log('a fairly long line of script');\n" * 100)
    return ConsoleFiles(tmp_path)


def test_hashed_assets_are_cached_for_a_year_and_index_is_revalidated(files: ConsoleFiles) -> None:
    asset = files.answer("/assets/index-abc123.js", None)
    assert asset.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    index = files.answer("/", None)
    assert index.headers["Cache-Control"] == "no-cache"
    assert index.content == b"<!doctype html><title>Skiplock</title>"


def test_every_answer_carries_the_strict_headers(files: ConsoleFiles) -> None:
    headers = files.answer("/", None).headers
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self';" in CONTENT_SECURITY_POLICY and "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "no-referrer"
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_client_side_routes_answer_index_and_api_paths_do_not(files: ConsoleFiles) -> None:
    assert files.answer("/topics/orders", None).content == files.answer("/", None).content
    for path in ("/api/nope", "/schema", "/metrics", "/healthz", "/readyz", "/schema/x"):
        with pytest.raises(errors.NotFound):
            files.answer(path, None)


def test_a_matching_etag_answers_304(files: ConsoleFiles) -> None:
    etag = files.answer("/", None).headers["ETag"]
    assert files.answer("/", etag).status_code == 304


def test_without_a_build_it_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(errors.NotFound, match="make ui"):
        ConsoleFiles(tmp_path).answer("/", None)


def test_text_files_go_gzipped_to_browsers_that_accept_it(files: ConsoleFiles) -> None:
    plain = files.answer("/assets/app-def456.js", None)
    zipped = files.answer("/assets/app-def456.js", None, "gzip, deflate, br")
    assert "Content-Encoding" not in plain.headers and zipped.headers["Content-Encoding"] == "gzip"
    assert plain.headers["Vary"] == zipped.headers["Vary"] == "Accept-Encoding"
    assert gzip.decompress(zipped.content) == plain.content and len(zipped.content) < len(plain.content) / 5
    assert zipped.headers["ETag"] != plain.headers["ETag"]
    assert files.answer("/assets/app-def456.js", zipped.headers["ETag"], "gzip").status_code == 304
    assert "Content-Encoding" not in files.answer("/assets/index-abc123.js", None, "gzip").headers  # too small
