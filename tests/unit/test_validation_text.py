"""A body's validation errors read as plain words, each still placed at its field (`- at `$.field``)."""

from __future__ import annotations

import msgspec
import pytest

from api.schemas import DequeueBody, EnqueueBody, decode_batch
from api.validation_text import readable


def refusal(body: bytes, model: type[msgspec.Struct]) -> str:
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.json.decode(body, type=model)
    return readable(str(caught.value))


@pytest.mark.parametrize(
    ("body", "model", "said"),
    [
        (b'{"topic": "a b"}', DequeueBody, "must be a topic name (or <topic>.dlq): 1 to 200 letters"),
        (b'{"topic": "a", "count": 0}', DequeueBody, "must be a whole number, at least 1 - at `$.count`"),
        (b'{"topic": "a", "count": "x"}', DequeueBody, "must be a whole number, not text (a JSON string)"),
        (b'{"count": 1}', DequeueBody, "`topic` is required"),
        (b'{"topic": "a", "zz": 1}', DequeueBody, "`zz` is not a field of this request"),
        (b'{"topic": "a", "payload": "!!"}', EnqueueBody, "must be base64 text - at `$.payload`"),
        (b'{"topic": "a", "payload": "eA==", "key": "' + b"k" * 600 + b'"}', EnqueueBody, "at most 512 characters"),
        (b'{"topic": "a", "payload": "eA==", "metadata": []}', EnqueueBody, "a JSON object or null, not a JSON array"),
    ],
)
def test_msgspecs_messages_in_plain_words(body: bytes, model: type[msgspec.Struct], said: str) -> None:
    message = refusal(body, model)
    assert said in message
    assert "Expected `" not in message and "regex" not in message


def test_a_batchs_bad_items_read_the_same() -> None:
    batch = decode_batch(b'{"topic": "a", "messages": [{"payload": "eA=="}, {"payload": "eA==", "priority": 10}]}')
    assert batch.messages[1] == "must be a whole number, at most 9 - at `$.priority`"


def test_a_message_it_does_not_know_passes_as_it_is() -> None:
    assert readable("Expected `MessageLogEntry`, something new - at `$.x`") == (
        "Expected `MessageLogEntry`, something new - at `$.x`"
    )
