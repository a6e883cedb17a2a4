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

In a `Routed` function an INSERT step must be a sink: nothing after it reads it, and it has no RETURNING or ON
CONFLICT. A statement whose INSERT is read after it (an insert's: its messages' deliveries and its answer read the
rows it stored), or is the statement itself, runs as a `Stepwise` function instead: one statement per part (a run
of steps that insert nothing, or one INSERT), each part's rows that later parts read passed on as arrays. The
function's name carries a digest of the statement's text, so a changed statement is another function: `mq.db.engine.
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
#: Any INSERT step (an insert's `INSERT INTO messages AS m (...)` too).
_ANY_INSERT = re.compile(r"^\s*INSERT INTO \w+\b", re.IGNORECASE)
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


@dataclass(frozen=True, slots=True)
class Part:
    """One statement of a stepwise function: a run of steps that insert nothing, or one INSERT step; `captured`:
    the steps of it that later parts (or the answer) read, whose rows it keeps in arrays."""

    steps: tuple[Fragment, ...]
    captured: tuple[str, ...]

    @property
    def inserts(self) -> bool:
        return len(self.steps) == 1 and _ANY_INSERT.match(self.steps[0].body) is not None


@dataclass(frozen=True, slots=True)
class Stepwise:
    """A statement whose rows come from an INSERT (an insert's, read by the steps after it or by its answer), run
    on Citus as a function of one statement per part (`Part`): Citus plans an INSERT in a statement's WITH only in
    steps (a grouped insert 4.6 ms a message on the cluster, in three steps of intermediate results), a top-level
    `INSERT ... SELECT` from parameters through the coordinator (2 ms); in a function delegated to the tenant's
    worker each part is a statement of that worker's shards, and the coordinator forwards one call (1.4 ms, 2.6 for
    a grouped insert). Each step a later part reads is read once, by its own part, and passed on as arrays: a
    group created or deleted meanwhile is either in the count a message owes and in its deliveries, or in neither.
    The parts run one after another, each with a snapshot of its own, as Citus runs the steps it plans apart."""

    statement: Statement
    call: Statement
    function: str
    parts: tuple[Part, ...]
    result: str

    @property
    def captured(self) -> tuple[str, ...]:
        """The steps whose rows travel between parts, in order."""
        return tuple(name for part in self.parts for name in part.captured)

    def probe(self, step: str, arguments: Sequence[str]) -> str:
        """A statement (only prepared, never run) whose answer has the columns of `step`: their names and types."""
        steps = [s for part in self.parts for s in part.steps]
        upto = steps[: next(n for n, s in enumerate(steps) if s.name == step) + 1]
        every = ", ".join(f"${p}" for p in self.statement.parameters)
        text = numbered(
            chain(upto, f"SELECT _s.* FROM {step} AS _s, (SELECT {every}) AS _p"), self.statement.parameters
        )
        return _typed(text, arguments)

    def ddl(
        self, arguments: Sequence[str], answer: Sequence[tuple[str, str]], columns: dict[str, list[tuple[str, str]]]
    ) -> str:
        """`CREATE FUNCTION`, given the types of the statement's arguments, its answer's columns (name, type) and
        the columns (name, type) of each captured step (`probe`)."""
        for step, described in columns.items():
            names = [name for name, _ in described]
            if len(set(names)) != len(names):
                raise ValueError(f"{self.statement.name}: step {step} answers a column name twice ({names})")
            for _, kind in described:
                if kind.endswith("]"):
                    raise ValueError(f"{self.statement.name}: an array-typed value cannot travel in an array ({kind})")
        declared = [
            f"_{step}_{n} {kind}[] := '{{}}'" for step in self.captured for n, (_, kind) in enumerate(columns[step], 1)
        ]
        body: list[str] = []
        done: list[str] = []  # the steps captured by the parts so far
        last = self.parts[-1]
        for part in self.parts:
            text = self._part(part, done, columns, last_of=part is last, answers=bool(answer))
            body.append(_typed(numbered(text, self.statement.parameters), arguments))
            done += part.captured
        if not (last.inserts and self.result.strip() == f"SELECT * FROM {last.steps[0].name}"):
            answer_text = chain(self._reads(self.result, done, columns), self.result)
            body.append(_typed(numbered(f"RETURN QUERY {answer_text}", self.statement.parameters), arguments))
        signature = ", ".join(f"p{n} {kind}" for n, kind in enumerate(arguments, start=1))
        returns = f"TABLE({', '.join(f'{_quoted(name)} {kind}' for name, kind in answer)})" if answer else "void"
        statements = "\n".join(f"{text};" for text in body)
        return f"""CREATE FUNCTION {self.function}({signature}) RETURNS {returns} LANGUAGE plpgsql AS $routed$
#variable_conflict use_column
DECLARE
    _row record;
    _ignored int8;
    {"; ".join(declared) + ";" if declared else ""}
BEGIN
{statements}
END
$routed$"""

    def _part(
        self,
        part: Part,
        done: Sequence[str],
        columns: dict[str, list[tuple[str, str]]],
        *,
        last_of: bool,
        answers: bool,
    ) -> str:
        own = " ".join(s.body for s in part.steps)
        reads = self._reads(own, done, columns)
        if part.inserts:
            (step,) = part.steps
            if last_of and self.result.strip() == f"SELECT * FROM {step.name}" and answers:
                return f"RETURN QUERY {chain(reads, step.body)}"  # the INSERT's own RETURNING is the answer
            if not part.captured:
                return chain(reads, step.body)
            appends = " ".join(
                f"_{step.name}_{n} := array_append(_{step.name}_{n}, _row.{_quoted(name)});"
                for n, (name, _) in enumerate(columns[step.name], start=1)
            )
            return f"FOR _row IN {chain(reads, step.body)}\nLOOP {appends} END LOOP"
        if not part.captured:
            return chain([*reads, *part.steps], f"SELECT count(*) INTO _ignored FROM {part.steps[-1].name}")
        targets = [f"_{name}_{n}" for name in part.captured for n in range(1, len(columns[name]) + 1)]
        sources = [
            f"(SELECT {', '.join(f'array_agg(_r.{_quoted(c)})' for c, _ in columns[name])} FROM {name} AS _r) AS _c{k}"
            for k, name in enumerate(part.captured)
        ]
        return chain([*reads, *part.steps], f"SELECT *\nINTO {', '.join(targets)}\nFROM {', '.join(sources)}")

    @staticmethod
    def _reads(text: str, done: Sequence[str], columns: dict[str, list[tuple[str, str]]]) -> list[Fragment]:
        """The captured steps `text` names, each as a step that unnests its arrays."""
        fragments = []
        for name in done:
            if re.search(rf"\b{name}\b", text):
                arrays = ", ".join(f"_{name}_{n}" for n in range(1, len(columns[name]) + 1))
                names = ", ".join(_quoted(c) for c, _ in columns[name])
                fragments.append(Fragment(name, f"SELECT * FROM unnest({arrays}) AS _u({names})"))
        return fragments


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _typed(text: str, arguments: Sequence[str]) -> str:
    """Each parameter reference cast to its type (a part alone does not tell what `$3` is)."""
    if not arguments:
        return text
    return re.sub(r"\$(\d+)\b", lambda m: f"(${m.group(1)}::{arguments[int(m.group(1)) - 1]})", text)


#: Routed forms by the name of their statement.
ROUTED: dict[str, Routed | Stepwise] = {}


def routed(plain: Statement) -> Statement:
    """The statement Citus runs for `plain`: the call of its routed function when it has INSERT steps (made and
    registered once), else `plain` itself. Its INSERT steps all sinks: a `Routed` function; an INSERT whose rows
    are read (an insert's): a `Stepwise` one."""
    known = ROUTED.get(plain.name)
    if known is not None:
        return known.call
    steps, result = COMPOSED.get(plain.name, ((), ""))
    if not any(_ANY_INSERT.match(step.body) for step in steps):
        return plain
    made: Routed | Stepwise
    if all(_INSERT.match(s.body) and _is_sink(s, steps, result) for s in steps if _ANY_INSERT.match(s.body)):
        made = _route(plain, steps, result)
    else:
        made = _stepwise(plain, steps, result)
    ROUTED[plain.name] = made
    return made.call


def _later(step: Fragment, steps: Sequence[Fragment], result: str) -> str:
    n = list(steps).index(step)
    return " ".join([*(s.body for s in steps[n + 1 :]), result])


def _is_sink(step: Fragment, steps: Sequence[Fragment], result: str) -> bool:
    return re.search(rf"\b{step.name}\b", _later(step, steps, result)) is None


def _stepwise(plain: Statement, steps: Sequence[Fragment], result: str) -> Stepwise:
    groups: list[list[Fragment]] = []
    for step in steps:
        if _ANY_INSERT.match(step.body) or not groups or _ANY_INSERT.match(groups[-1][0].body):
            groups.append([step])
        else:
            groups[-1].append(step)
    parts = []
    for n, group in enumerate(groups):
        after = " ".join([*(s.body for g in groups[n + 1 :] for s in g), result])
        captured = tuple(s.name for s in group if re.search(rf"\b{s.name}\b", after))
        if n == len(groups) - 1 and result.strip() == f"SELECT * FROM {group[-1].name}":
            captured = ()  # the last INSERT answers by itself (`RETURN QUERY INSERT ... RETURNING`)
        parts.append(Part(tuple(group), captured))
    function, call = _function(plain)
    return Stepwise(plain, call, function, tuple(parts), result)


def _function(plain: Statement) -> tuple[str, Statement]:
    """The name of `plain`'s function, and the statement that calls it."""
    function = PREFIX + hashlib.sha256(f"{GENERATION}\n{plain.name}\n{plain.text}".encode()).hexdigest()[:12]
    arguments = ", ".join(f"${p}" for p in plain.parameters)
    name = plain.name.replace("]", "+routed]") if plain.name.endswith("]") else f"{plain.name}[routed]"
    call = statement(name, f"SELECT * FROM {function}({arguments})")
    assert call.parameters == plain.parameters, plain.name
    return function, call


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
    function, call = _function(plain)
    return Routed(plain, call, function, tuple(kept), result, tuple(sinks))
