"""Statements that Citus would plan in several steps, run there as one call of a function on the tenant's worker.

Citus routes a statement to the one worker of its tenant (one task) when it changes rows through SELECT, UPDATE
and DELETE steps only. An INSERT step in a statement's WITH (a lease recorded, ended leases counted out, an ack
kept in the message log) makes it plan the statement in several: each step a query of its own, the rows between
them sent to every node as intermediate results, the whole committed in two phases over all of them (8 ms for an
ack that one task does in 1 ms, measured on the cluster of `../shared/citus`).

On Citus such a statement runs as a database function (`Routed`): first the statement without its INSERT steps,
each of them replaced by a step that selects the rows it would insert, answering those rows and the statement's
own answer as arrays; then each INSERT, from its arrays. Called as `SELECT * FROM f(...)` with the tenant first,
outside a transaction, Citus delegates the call to the tenant's worker (a function distributed by its first
argument), where each part is a statement of one shard, run locally. One Postgres runs the statement itself.

An INSERT step must be a sink: nothing after it reads it, and it has no RETURNING or ON CONFLICT. The function's
name carries a digest of the statement's text, so a changed statement is another function: `mq.db.engine.
distribute` creates those missing (the types of their arguments and answer are read from the database by
preparing the statement), and Citus copies them to every node.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mq.db.statements import COMPOSED, Fragment, Statement, chain, numbered, statement

#: The prefix of every routed function's name.
PREFIX = "skiplock_routed_"
#: What a function made from a statement's text is, in its name's digest beside that text: a change to how a
#: function is made (`Routed.ddl`) is a new generation, so that every function it makes has a new name.
GENERATION = 1
_INSERT = re.compile(
    r"^\s*INSERT INTO (\w+) \(([^)]*)\)\s*(OVERRIDING SYSTEM VALUE\s+)?(SELECT\b.*)$", re.DOTALL | re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Sink:
    """An INSERT step: the table, its columns, and the SELECT that gives its rows."""

    name: str
    table: str
    columns: tuple[str, ...]
    select: str
    #: the rows give an identity column's values (`OVERRIDING SYSTEM VALUE`)
    overriding: bool = False


@dataclass(frozen=True, slots=True)
class Routed:
    """A statement's Citus form: `call` runs `function`, made from `statement` by `ddl`."""

    statement: Statement
    call: Statement
    function: str
    steps: tuple[Fragment, ...]
    result: str
    sinks: tuple[Sink, ...]

    def main(self, answer_width: int, arguments: Sequence[str] = ()) -> str:
        """The statement without its sinks (numbered as `statement` is), answering in one row an array per column
        of its answer (`a1`...) and of each sink's rows (`s<k>_<n>`). `arguments`: the parameters' types, each
        reference cast to its own (a sink's SELECT alone does not tell what `$3` is)."""
        parts = [
            f"(SELECT {_aggregates('a', answer_width)} FROM _answer AS _r({_names(answer_width)})) AS _a",
            *(
                f"(SELECT {_aggregates(f's{k}_', len(sink.columns))} FROM {sink.name} AS _r"
                f"({_names(len(sink.columns))})) AS _s{k}"
                for k, sink in enumerate(self.sinks, start=1)
            ),
        ]
        joined = ",\n     ".join(parts)
        text = chain([*self.steps, Fragment("_answer", self.result)], f"SELECT *\nFROM {joined}")
        text = numbered(text, self.statement.parameters)
        if arguments:
            text = re.sub(r"\$(\d+)\b", lambda m: f"(${m.group(1)}::{arguments[int(m.group(1)) - 1]})", text)
        return text

    def ddl(self, arguments: Sequence[str], answer: Sequence[tuple[str, str]], sinks: Sequence[Sequence[str]]) -> str:
        """`CREATE FUNCTION`, given the types of the statement's arguments, its answer's columns (name, type) and
        each sink's columns' types (in its column order)."""
        for kind in (*(t for _, t in answer), *(t for types in sinks for t in types)):
            if kind.endswith("]"):
                raise ValueError(f"{self.statement.name}: an array-typed value cannot travel in an array ({kind})")
        declared = [f"a{n} {kind}[]" for n, (_, kind) in enumerate(answer, start=1)]
        for k, types in enumerate(sinks, start=1):
            declared += [f"s{k}_{n} {kind}[]" for n, kind in enumerate(types, start=1)]
        into = ", ".join(
            [f"a{n}" for n in range(1, len(answer) + 1)]
            + [f"s{k}_{n}" for k, types in enumerate(sinks, start=1) for n in range(1, len(types) + 1)]
        )
        main = self.main(len(answer), arguments).replace("SELECT *\nFROM", f"SELECT *\nINTO {into}\nFROM", 1)
        inserts = [
            f"INSERT INTO {sink.table} ({', '.join(sink.columns)})"
            f"{' OVERRIDING SYSTEM VALUE' if sink.overriding else ''}\n"
            f"SELECT * FROM unnest({', '.join(f's{k}_{n}' for n in range(1, len(sink.columns) + 1))});"
            for k, sink in enumerate(self.sinks, start=1)
        ]
        signature = ", ".join(f"p{n} {kind}" for n, kind in enumerate(arguments, start=1))
        returns = ", ".join(f"{name} {kind}" for name, kind in answer)
        answered = ", ".join(f"a{n}" for n in range(1, len(answer) + 1))
        return f"""CREATE FUNCTION {self.function}({signature}) RETURNS TABLE({returns}) LANGUAGE plpgsql AS $routed$
#variable_conflict use_column
DECLARE
    {"; ".join(declared)};
BEGIN
{main};
{chr(10).join(inserts)}
RETURN QUERY SELECT * FROM unnest({answered});
END
$routed$"""


def _names(n: int) -> str:
    return ", ".join(f"c{i}" for i in range(1, n + 1))


def _aggregates(prefix: str, n: int) -> str:
    return ", ".join(f"array_agg(_r.c{i}) AS {prefix}{i}" for i in range(1, n + 1))


#: Routed forms by the name of their statement.
ROUTED: dict[str, Routed] = {}


def routed(plain: Statement) -> Statement:
    """The statement Citus runs for `plain`: the call of its routed function when it has INSERT steps (made and
    registered once), else `plain` itself."""
    known = ROUTED.get(plain.name)
    if known is not None:
        return known.call
    steps, result = COMPOSED.get(plain.name, ((), ""))
    if not any(_INSERT.match(step.body) for step in steps):
        return plain
    made = _route(plain, steps, result)
    ROUTED[plain.name] = made
    return made.call


def _route(plain: Statement, steps: Sequence[Fragment], result: str) -> Routed:
    kept: list[Fragment] = []
    sinks: list[Sink] = []
    for n, step in enumerate(steps):
        found = _INSERT.match(step.body)
        if found is None:
            kept.append(step)
            continue
        later = " ".join([*(s.body for s in steps[n + 1 :]), result])
        table, columns, overriding, select = found.groups()
        if re.search(rf"\b{step.name}\b", later) or re.search(r"\b(RETURNING|ON CONFLICT)\b", select, re.I):
            raise ValueError(f"{plain.name}: its INSERT step {step.name!r} is not a sink")
        names = tuple(c.strip() for c in columns.split(","))
        sinks.append(Sink(step.name, table, names, select, overriding=bool(overriding)))
        kept.append(Fragment(step.name, select, materialized=True))
    function = PREFIX + hashlib.sha256(f"{GENERATION}\n{plain.name}\n{plain.text}".encode()).hexdigest()[:12]
    arguments = ", ".join(f"${p}" for p in plain.parameters)
    name = plain.name.replace("]", "+routed]") if plain.name.endswith("]") else f"{plain.name}[routed]"
    call = statement(name, f"SELECT * FROM {function}({arguments})")
    assert call.parameters == plain.parameters, plain.name
    return Routed(plain, call, function, tuple(kept), result, tuple(sinks))
