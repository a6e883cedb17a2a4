"""What any request may carry, checked in one place for every way in (contract, "Bounds on what one tenant can make
the server do"): no string holds a NUL character or a lone surrogate (Postgres text and jsonb store neither, and
the driver fails on them with a server error), no JSON body nests deeper than `MAX_JSON_DEPTH` levels, and no time
lies where it has no UTC equivalent (year 1 with a positive offset, year 9999 with a negative one: the driver fails
converting it). Each refusal is 400 `invalid_request` with a sentence naming the field.

The ways in:
- a JSON body: `check_body`, run by the strict decoder (`api.body.decode_strict`) for the framework's routes and
  the hot routes alike; a body Litestar decodes itself, by `RequestChecks` (`check_raw_body`) before it does;
- query and path parameters of every framework route: `RequestChecks`, a middleware; the hot routes check their
  one path parameter and any query string with `check_text` and `check_query_string`;
- a gRPC request: `check_message`, at the service's two entry points (`api.queue_ti.service`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

import msgspec
from google.protobuf.message import DecodeError, Message
from litestar import Request
from litestar._parsers import parse_query_string  # what `Request.query_params` parses with: the same text
from litestar.enums import ScopeType
from litestar.params import ParameterKwarg

from mq import errors
from mq.names import MAX_JSON_DEPTH, check_text, json_depth_exceeds

if TYPE_CHECKING:
    from litestar.handlers import BaseRouteHandler
    from litestar.types import ASGIApp, Receive, Scope, Send

#: The one sentence for a route that needs a body and got none, on every path (the framework's and the hot one).
BODY_REQUIRED = "a JSON body is required"

# In valid JSON a NUL can only arrive as this escape: a raw control character in a string is malformed, and
# msgspec refuses the escape of a lone surrogate (and invalid UTF-8) while decoding. Finding it is a C-speed scan;
# the body is walked only when it is there.
_NUL_ESCAPE = b"\\u0000"

# A field's path from the body's root: None, or (the parent's path, a name or an index).
_Path = tuple[Any, str | int] | None


class BodyCheckedOnDecode:
    """Marks a DTO whose decoding runs `check_body` itself (`api.body.StrictBody`): `RequestChecks` leaves the body
    of its routes to it."""


# --- bodies ---------------------------------------------------------------------------------------------------------


def check_body(raw: bytes, decoded: object) -> None:
    """`decoded`, the JSON body `raw` decoded into its type, nests at most `MAX_JSON_DEPTH` levels, holds only times
    with a UTC equivalent and no NUL character. Only what the type leaves free (`Any`, `dict[str, Any]`: metadata
    and the like) can nest without bound: only those fields, and times, are walked."""
    model = type(decoded)
    if (_PLANS.get(model) or _plan(model)).fields and _refusable(decoded):  # a body type with no such field: no walk
        _walk(decoded)
    if _NUL_ESCAPE in raw:
        _refuse_nul(msgspec.json.decode(raw))


def check_raw_body(raw: bytes) -> None:
    """`check_body` for a body Litestar decodes afterwards, into a type not known here: all of it is walked, as
    free-form JSON. Decoding it finds, too, a nesting deep enough to break the decoder (it recurses per level, and
    unclosed brackets are still levels). Malformed JSON is Litestar's to refuse."""
    try:
        decoded = msgspec.json.decode(raw)
    except RecursionError:
        raise errors.InvalidRequest(f"the body is nested deeper than {MAX_JSON_DEPTH} levels") from None
    except msgspec.DecodeError:
        return
    if _refusable(decoded):
        _walk(decoded)
    if _NUL_ESCAPE in raw:
        _refuse_nul(decoded)


def _refuse_nul(value: object) -> None:
    """Refuse the first string of a decoded JSON value (keys included) that holds a NUL, by its path."""
    pending: list[tuple[object, _Path]] = [(value, None)]
    while pending:
        item, path = pending.pop()
        if isinstance(item, str):
            check_text(item, _name(path))
        elif isinstance(item, dict):
            for key, inner in item.items():
                check_text(key, f"a key of {_name(path)}")
                pending.append((inner, (path, key)))
        elif isinstance(item, list):
            pending.extend((inner, (path, n)) for n, inner in enumerate(item))


def _refusable(decoded: object) -> bool:
    """Whether `_walk` refuses `decoded`: the same visit, a level at a time and without the paths that name a field
    (most bodies pass: this is the pass they pay for; types are compared exactly, an `isinstance` against
    `msgspec.Struct` costs several times more, and plain loops beat comprehensions on the small objects that
    metadata mostly is)."""
    level: list[Any] = [decoded]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_JSON_DEPTH and any(isinstance(value, _CONTAINERS) for value in level):
            return True
        below: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is dict or kind is list or kind is tuple:
                for child in value.values() if kind is dict else value:
                    if type(child) not in _SCALARS_DECODED:
                        below.append(child)
            elif kind is datetime or kind is msgspec.Raw:
                if _refused_leaf(value, depth):
                    return True
            else:  # a struct (any other type has no fields to visit)
                for attr, _ in (_PLANS.get(kind) or _plan(kind)).fields:
                    if type(child := getattr(value, attr)) not in _SCALARS_DECODED:
                        below.append(child)
        level = below
    return False


_CONTAINERS = (dict, list, tuple, msgspec.Struct)


def _refused_leaf(value: object, depth: int) -> bool:
    """A time without a UTC equivalent, or a raw JSON document (at `depth`) that nests past the limit."""
    if isinstance(value, datetime):
        return _no_utc(value)
    return isinstance(value, msgspec.Raw) and json_depth_exceeds(bytes(value), MAX_JSON_DEPTH - depth + 1)


# What a decoded JSON value holds that `_refusable` need not look into (a string's NUL is found from the raw text).
_SCALARS_DECODED = frozenset({str, int, float, bool, type(None), bytes})


def _walk(decoded: object) -> None:
    """Refuse the first container of `decoded` deeper than `MAX_JSON_DEPTH` (the body's root is level 1), or its
    first time without a UTC equivalent, naming its field; without recursion (depth is what is being limited)."""
    pending: list[tuple[object, int, _Path]] = [(decoded, 1, None)]
    while pending:
        value, depth, path = pending.pop()
        if isinstance(value, datetime):
            check_time(value, _name(path))
            continue
        if isinstance(value, msgspec.Raw):
            if json_depth_exceeds(bytes(value), MAX_JSON_DEPTH - depth + 1):
                raise errors.InvalidRequest(f"{_name(path)} is nested deeper than {MAX_JSON_DEPTH} levels")
            continue
        if depth > MAX_JSON_DEPTH:
            raise errors.InvalidRequest(f"{_name(path)} is nested deeper than {MAX_JSON_DEPTH} levels")
        children: Iterable[tuple[str | int, object]]
        if isinstance(value, msgspec.Struct):
            children = [(name, getattr(value, attr)) for attr, name in _plan(type(value)).fields]
        elif isinstance(value, dict):
            children = value.items()
        elif isinstance(value, list | tuple):
            children = enumerate(value)
        else:
            continue
        for key, child in children:
            if isinstance(child, _WALKED):
                # a refusal names the field that holds free-form JSON, not a path through it
                free = isinstance(value, dict | list | tuple) and isinstance(child, dict | list)
                pending.append((child, depth + 1, path if free else (path, key)))


_WALKED = (dict, list, tuple, msgspec.Struct, datetime, msgspec.Raw)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What of a struct type the walks visit: its fields that may hold free-form JSON or a time (attribute, JSON
    name)."""

    fields: tuple[tuple[str, str], ...]


_PLANS: dict[type[Any], _Plan] = {}  # one per type of value met (bounded by the body types)


def _plan(model: type[Any]) -> _Plan:
    plan = _PLANS.get(model)
    if plan is None:
        fields: tuple[tuple[str, str], ...] = ()
        if issubclass(model, msgspec.Struct):
            info = msgspec.inspect.type_info(model)
            assert isinstance(info, msgspec.inspect.StructType)
            fields = tuple((f.name, f.encode_name) for f in info.fields if _holds(f.type))
        plan = _PLANS[model] = _Plan(fields)
    return plan


def _holds(kind: msgspec.inspect.Type, seen: frozenset[type[Any]] = frozenset()) -> bool:
    """Whether a value of `kind` may hold free-form JSON, a raw JSON document or a time. Anything not known to be a
    scalar may."""
    inspect = msgspec.inspect
    if isinstance(kind, _SCALARS):  # a string among them: its NUL is found from the raw text
        return False
    parts: tuple[msgspec.inspect.Type, ...] | None = None
    if isinstance(kind, inspect.Metadata):
        parts = (kind.type,)
    elif isinstance(kind, inspect.UnionType):
        parts = kind.types
    elif isinstance(kind, inspect.TupleType):
        parts = kind.item_types
    elif isinstance(kind, inspect.DictType | inspect.FrozenDictType):
        parts = (kind.key_type, kind.value_type)
    elif isinstance(kind, inspect.CollectionType):
        parts = (kind.item_type,)
    elif isinstance(kind, inspect.StructType | inspect.TypedDictType | inspect.NamedTupleType) and kind.cls not in seen:
        parts, seen = tuple(f.type for f in kind.fields), seen | {kind.cls}
    if parts is None:  # free-form JSON, a time, a type not known here, or a recursive one (nesting without bound)
        return True
    return any(_holds(part, seen) for part in parts)


_SCALARS = (
    msgspec.inspect.NoneType,
    msgspec.inspect.BoolType,
    msgspec.inspect.IntType,
    msgspec.inspect.FloatType,
    msgspec.inspect.StrType,
    msgspec.inspect.BytesType,
    msgspec.inspect.ByteArrayType,
    msgspec.inspect.MemoryViewType,
    msgspec.inspect.DateType,
    msgspec.inspect.TimeType,
    msgspec.inspect.TimeDeltaType,
    msgspec.inspect.UUIDType,
    msgspec.inspect.DecimalType,
    msgspec.inspect.LiteralType,
    msgspec.inspect.EnumType,
)


def _name(path: _Path) -> str:
    """A field's path as the client wrote it: `messages[2].metadata.region`; the root is "the body"."""
    parts: list[str] = []
    while path is not None:
        path, key = path
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "".join(reversed(parts)).lstrip(".") or "the body"


# --- times ----------------------------------------------------------------------------------------------------------


def check_time(value: datetime, field: str) -> None:
    """A time with an offset must have a UTC equivalent within years 1 to 9999 (a time without one is taken as
    UTC)."""
    if _no_utc(value):
        raise errors.InvalidRequest(f"{field} is out of range: in UTC it falls outside years 1 to 9999")


def _no_utc(value: datetime) -> bool:
    if value.tzinfo is None:
        return False
    try:
        value.astimezone(UTC)
    except OverflowError:
        return True
    return False


# --- parameters -----------------------------------------------------------------------------------------------------


def check_query_string(query_string: bytes) -> None:
    """Every name and value of a query string (as Litestar parses it), as text Postgres can store."""
    for name, value in parse_query_string(query_string):
        check_text(name, "a query parameter's name")
        check_text(value, name)


@dataclass(frozen=True, slots=True)
class _RoutePlan:
    """What `RequestChecks` looks at beyond the parameters' text, for one route handler."""

    times: tuple[str, ...]  # query parameters that are times
    has_body: bool
    body_required: bool
    body_checked_on_decode: bool


@cache
def _route_plan(handler: BaseRouteHandler) -> _RoutePlan:
    times = []
    for name, field in handler.parsed_fn_signature.parameters.items():
        if any(kind.is_subclass_of(datetime) for kind in (field, *field.inner_types)):
            alias = field.kwarg_definition.query if isinstance(field.kwarg_definition, ParameterKwarg) else None
            times.append(alias or name)
    data = handler.parsed_data_field
    dto = handler.resolve_data_dto() if data is not None else None
    return _RoutePlan(
        times=tuple(times),
        has_body=data is not None,
        body_required=data is not None and not data.has_default and not data.is_optional,
        body_checked_on_decode=dto is not None and issubclass(dto, BodyCheckedOnDecode),
    )


class RequestChecks:
    """Checks a framework route's query and path parameters, and its body unless its decoder does, before the route
    parses them. Runs after authentication, as the hot routes check after it too. A middleware rather than an
    app-level `before_request` hook, which a route (or controller) declaring its own would silently replace."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            await self._check(Request(scope, receive, send))
        await self.app(scope, receive, send)

    @staticmethod
    async def _check(request: Request[Any, Any, Any]) -> None:
        if request.scope["query_string"]:
            check_query_string(request.scope["query_string"])
        for name, value in request.path_params.items():
            if isinstance(value, str):
                check_text(value, name)
            elif isinstance(value, datetime):
                check_time(value, name)
        plan = _route_plan(request.scope["route_handler"])
        for name in plan.times:
            for value in request.query_params.getall(name, []):
                try:
                    at = msgspec.convert(value, datetime, strict=False)
                except msgspec.ValidationError:
                    continue  # not a time: the route's own parsing says so
                check_time(at, name)
        if plan.has_body:
            raw = await request.body()  # kept on the request: the route reads it from there
            if not raw.strip():
                # Litestar passes no value for an empty body (a route that needs one answers with a KeyError's text)
                if plan.body_required:
                    raise errors.InvalidRequest(BODY_REQUIRED)
            elif not plan.body_checked_on_decode:
                check_raw_body(raw)


# --- gRPC -----------------------------------------------------------------------------------------------------------


class Undecodable:
    """A gRPC request whose bytes are not a message of its type (invalid UTF-8 in a string field, a truncated
    field): what `lenient` hands the service instead of letting grpc answer UNKNOWN with the parser's text."""


def lenient(parse: Callable[[bytes], Message]) -> Callable[[bytes], Message | Undecodable]:
    """A request deserializer that answers `Undecodable` rather than raise (`check_message` refuses it)."""

    def parsed(data: bytes) -> Message | Undecodable:
        try:
            return parse(data)
        except DecodeError:
            return Undecodable()

    return parsed


def check_message(message: Message | Undecodable) -> None:
    """Every string of a protobuf message, in its fields, repeated fields, maps (keys and values) and nested
    messages, as text Postgres can store. protobuf itself refuses invalid UTF-8 (a lone surrogate cannot be sent,
    and one that is received does not decode: `Undecodable`) but not a NUL, which is valid UTF-8."""
    if isinstance(message, Undecodable):
        raise errors.InvalidRequest("the request is not a valid protobuf message of its type (a string not UTF-8?)")
    pending: list[tuple[Any, str]] = [(message, "")]
    while pending:
        item, name = pending.pop()
        if isinstance(item, str):
            check_text(item, name)
        elif isinstance(item, Message):  # its fields named from the request's root
            prefix = f"{name}." if name else ""
            pending.extend((value, prefix + field.name) for field, value in item.ListFields())
        elif isinstance(item, Mapping):  # a map field
            for key, value in item.items():
                if isinstance(key, str):
                    check_text(key, f"a key of {name}")
                pending.append((value, f"{name}[{key!r}]" if isinstance(value, Message) else name))
        elif isinstance(item, Sequence) and not isinstance(item, bytes):  # a repeated field
            pending.extend((value, name) for value in item)
