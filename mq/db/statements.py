"""Statements composed from named fragments, with named parameters, kept in one registry.

A data-plane statement is a chain of steps (pick the rows, lease them, record the leases, count them, log them):
each step is a `Fragment`, a common table expression with a name, and a variant of a statement is a different
choice of fragments, never a copy of its text nor a `.replace()` on it. `compose` writes the chain as one statement,
`WITH a AS (...), b AS (...) <result>`; when the result is only the last step's rows, that step is the statement
itself (an `UPDATE ... RETURNING` answered directly costs nothing over the step).

Fragments name their parameters (`$tenant`, `$topic`, `$count`): `Statement` numbers them in order (`$tenant`
always `$1`, the promise every tenant-scoped statement keeps) and binds arguments by name (`args`), so a variant
that adds a parameter moves nobody else's. Every statement is registered under its name (`REGISTRY`): `make
explain` prints each one's plan, and a test checks that each tenant-scoped one takes the tenant first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

# A named parameter: `$` and a lower-case name. Positional parameters (`$1`) and dollar quotes (`$$`, `$body$`,
# which no statement here holds) do not match.
_PARAMETER = re.compile(r"\$([a-z][a-z_]*)\b(?!\$)")
#: The parameter a tenant-scoped statement takes first.
TENANT = "tenant"


@dataclass(frozen=True, slots=True)
class Fragment:
    """One step of a statement: `name AS [MATERIALIZED] (body)`."""

    name: str
    body: str
    #: evaluated once, before the steps that read it (a step whose rows others test with EXISTS or read twice)
    materialized: bool = False

    def cte(self) -> str:
        keyword = " MATERIALIZED" if self.materialized else ""
        return f"{self.name} AS{keyword} (\n{self.body.strip()}\n)"


@dataclass(frozen=True, slots=True)
class Statement:
    """A statement's text with positional parameters, and the names they stand for, in order."""

    name: str
    text: str
    parameters: tuple[str, ...]
    _pick: Callable[[Mapping[str, Any]], tuple[Any, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        getter = itemgetter(*self.parameters) if self.parameters else (lambda _: ())
        pick = (lambda values: (getter(values),)) if len(self.parameters) == 1 else getter
        object.__setattr__(self, "_pick", pick)

    def args(self, **values: Any) -> tuple[Any, ...]:
        """The arguments in the statement's order, from their names (a missing one raises KeyError)."""
        return self._pick(values)

    def bind(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """`args` from a mapping the caller built (the hot paths: no keyword arguments to pack again)."""
        return self._pick(values)

    @property
    def tenant_scoped(self) -> bool:
        return TENANT in self.parameters


#: Every statement made by `statement` or `compose`, by name.
REGISTRY: dict[str, Statement] = {}
#: A composed statement's steps and result, by name (`mq.db.routed` recomposes them for Citus).
COMPOSED: dict[str, tuple[tuple[Fragment, ...], str]] = {}


def statement(name: str, text: str) -> Statement:
    """A statement from text with named parameters, numbered in order of first use with `$tenant` first, and
    registered under `name` (a name is registered once)."""
    used = list(dict.fromkeys(_PARAMETER.findall(text)))
    if TENANT in used:
        used.remove(TENANT)
        used.insert(0, TENANT)
    made = Statement(name, numbered(text, used), tuple(used))
    if REGISTRY.setdefault(name, made) != made:
        raise ValueError(f"two statements are named {name!r}")
    return made


def numbered(text: str, parameters: Sequence[str]) -> str:
    """`text` with its named parameters replaced by their positions in `parameters`."""
    numbers = {parameter: n for n, parameter in enumerate(parameters, start=1)}
    return _PARAMETER.sub(lambda m: f"${numbers[m.group(1)]}", text)


def chain(fragments: Sequence[Fragment], result: str) -> str:
    """`WITH <fragments> <result>` (`result` alone without fragments)."""
    return f"WITH {', '.join(f.cte() for f in fragments)}\n{result.strip()}" if fragments else result.strip()


def compose(name: str, fragments: Sequence[Fragment], result: str) -> Statement:
    """`WITH <fragments> <result>`, registered as `name`. A result of `SELECT * FROM <the last fragment>` makes that
    fragment the statement itself."""
    COMPOSED[name] = (tuple(fragments), result)
    steps = list(fragments)
    if steps and result.strip() == f"SELECT * FROM {steps[-1].name}":
        result = steps.pop().body.strip()
    names = [f.name for f in steps]
    if len(set(names)) != len(names):
        raise ValueError(f"{name}: a fragment is used twice in {names}")
    return statement(name, chain(steps, result))
