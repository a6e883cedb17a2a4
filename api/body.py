"""Strict request bodies: decoded straight from bytes by a msgspec decoder built once per body type.

Litestar converts bodies with `strict=False` (it would take "3" for an integer) and decodes twice (JSON to
builtins, builtins to the struct). This DTO keeps Litestar's OpenAPI schema for the body but decodes strictly,
in one pass; an empty body decodes as the type's defaults (for bodies whose fields are all optional).
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

from api.schemas import BatchEnqueueBody, decode_batch

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator

T = TypeVar("T", bound=msgspec.Struct)

# msgspec decodes nested JSON recursively and raises RecursionError past Python's limit (about 1,000 levels).
_TOO_DEEP = "body is not valid JSON: nested too deeply"


@cache
def _decoder(model_type: type[Any]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(model_type)


class StrictBody(MsgspecDTO[T], Generic[T]):
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
    not one. An empty body is the type's defaults, when all its fields have them."""
    if not value.strip():
        try:
            return model_type()
        except TypeError:
            raise ValidationException("a JSON body is required") from None
    decoded: T = _refusing(_decoder(model_type).decode, value)
    return decoded


def _refusing(decode: Callable[[bytes], T], value: bytes) -> T:
    """`decode(value)`, its failures as `ValidationException`."""
    try:
        return decode(value)
    except RecursionError:
        raise ValidationException(_TOO_DEEP) from None
    except msgspec.ValidationError as exc:
        raise ValidationException(str(exc), extra=[{"message": str(exc)}]) from None
    except msgspec.DecodeError as exc:
        raise ValidationException(f"body is not valid JSON: {exc}", extra=[{"message": str(exc)}]) from None


def strict_body(body: type[msgspec.Struct]) -> dict[str, Any]:
    """Route options that decode the JSON body strictly into `body` (see StrictBody)."""
    return {"dto": StrictBody[body], "return_dto": None}  # type: ignore[valid-type]


def json_post(path: str, body: type[msgspec.Struct], **options: Any) -> post:
    """`@post` for a route whose JSON body is decoded strictly into `body` (see StrictBody)."""
    return post(path, **strict_body(body), **options)


class BatchBody(StrictBody[BatchEnqueueBody]):
    """The batch enqueue body: bad items come through as `InvalidItem`s so the handler can report them all."""

    def decode_bytes(self, value: bytes) -> Any:
        return decode_batch_body(value)


def decode_batch_body(value: bytes) -> BatchEnqueueBody:
    """The batch enqueue body (`decode_batch`), or `ValidationException` as `decode_strict`."""
    return _refusing(decode_batch, value)
