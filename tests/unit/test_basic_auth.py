import base64

import pytest

from api.auth import _basic_credentials
from mq import errors


def enc(text: str) -> bytes:
    return b"Basic " + base64.b64encode(text.encode())


def test_parses_username_and_password_with_colons() -> None:
    assert _basic_credentials(enc("alice:pa:ss")) == ("alice", "pa:ss")
    assert _basic_credentials(enc("ünï:çødé")) == ("ünï", "çødé")


@pytest.mark.parametrize(
    "header",
    [None, b"", b"Bearer x", b"Basic", b"Basic !!!", enc("no-colon"), b"Basic " + base64.b64encode(b"\xff\xfe:x")],
)
def test_refuses_malformed(header: bytes | None) -> None:
    with pytest.raises(errors.Unauthorized):
        _basic_credentials(header)
