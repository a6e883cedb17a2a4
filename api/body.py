"""Strict request bodies: decoded straight from bytes by a msgspec decoder built once per body type.

Litestar converts bodies with `strict=False` (it would take "3" for an integer) and decodes twice (JSON to
builtins, builtins to the struct). This DTO keeps Litestar's OpenAPI schema for the body but decodes strictly,
in one pass; an empty body decodes as the type's defaults (for bodies whose fields are all optional). Every decoded
body then passes `api.input_checks.check_body` (NUL characters, nesting, times), on the framework's routes and the
hot routes alike.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec
from litestar import post
from litestar.dto import MsgspecDTO
from litestar.exceptions import ValidationException
from litestar.openapi.spec import Reference, Schema
from litestar.typing import FieldDefinition

from api.input_checks import BODY_REQUIRED, BodyCheckedOnDecode, check_body
from api.schemas import BatchEnqueueBody, decode_batch
from api.validation_text import readable
from mq import errors
from mq.names import MAX_JSON_DEPTH

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator

T = TypeVar("T", bound=msgspec.Struct)

# msgspec decodes nested JSON recursively and raises RecursionError past Python's limit (about 1,000 levels);
# shallower nesting past the contract's limit is `check_body`'s to refuse, in the same words.
_TOO_DEEP = f"the body is nested deeper than {MAX_JSON_DEPTH} levels"


@cache
def _decoder(model_type: type[Any]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(model_type)


class StrictBody(MsgspecDTO[T], BodyCheckedOnDecode, Generic[T]):
    @classmethod
    def create_openapi_schema(
        cls, field_definition: FieldDefinition, handler_id: str, schema_creator: SchemaCreator
    ) -> Reference | Schema:
        """The body's schema is the struct's own (the DTO's transfer model rewrites constrained optionals)."""
        return schema_creator.for_field_definition(FieldDefinition.from_annotation(cls.model_type))

    def decode_bytes(self, value: bytes) -> Any:
        return decode_strict(self.model_type, value)


def decode_strict(model_type: type[T], value: bytes) -> T:
    """`value` decoded strictly into `model_type`; `ValidationException` (a 400 in the contract's shape) if it is
    not one, `errors.InvalidRequest` if it holds what no request may (`check_body`). An empty body is the type's
    defaults, when all its fields have them."""
    if not value.strip():
        try:
            return model_type()
        except TypeError:
            raise errors.InvalidRequest(BODY_REQUIRED) from None
    decoded: T = _refusing(_decoder(model_type).decode, value)
    return decoded


def _refusing(decode: Callable[[bytes], T], value: bytes) -> T:
    """`decode(value)`, then `check_body`; a body it cannot decode refused as 400 (`ValidationException`)."""
    try:
        decoded = decode(value)
    except RecursionError:
        raise errors.InvalidRequest(_TOO_DEEP) from None
    except msgspec.ValidationError as exc:
        message = readable(str(exc))
        raise ValidationException(message, extra=[{"message": message}]) from None
    except msgspec.DecodeError as exc:
        raise ValidationException(f"body is not valid JSON: {exc}", extra=[{"message": str(exc)}]) from None
    check_body(value, decoded)
    return decoded


def strict_body(body: type[msgspec.Struct]) -> dict[str, Any]:
    """Route options that decode the JSON body strictly into `body` (see StrictBody)."""
    return {"dto": StrictBody[body], "return_dto": None}  # type: ignore[valid-type]


def json_post(path: str, body: type[msgspec.Struct], **options: Any) -> post:
    """`@post` for a route whose JSON body is decoded strictly into `body` (see StrictBody)."""
    return post(path, **strict_body(body), **options)


class BatchBody(StrictBody[BatchEnqueueBody]):
    """The batch enqueue body: bad items come through as their decoder's message (`decode_batch`), so that every
    one is reported."""

    def decode_bytes(self, value: bytes) -> Any:
        return decode_batch_body(value)


def decode_batch_body(value: bytes) -> BatchEnqueueBody:
    """The batch enqueue body (`decode_batch`), or a refusal as `decode_strict`'s."""
    if not value.strip():
        raise errors.InvalidRequest(BODY_REQUIRED)
    return _refusing(decode_batch, value)
