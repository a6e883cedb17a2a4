"""What a PromQL expression asks of the metrics it reads, so that a test can hold it against a real scrape.

`check(expr, exposed)` parses the expression (promql-parser, the Rust parser of GreptimeDB, as Prometheus'
grammar) and returns every problem: a metric the scrape does not have, a label matched or grouped on that its
series do not carry. `exposed` maps each sample name of the scrape to the label names its samples carry.
Grafana's variables are replaced first: `$__rate_interval` by a duration, `$tenant` inside a matcher stays a
regular expression.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import promql_parser as p

#: Functions whose result keeps no label of their arguments, or drops `le`.
_NO_LABELS = {"time", "vector", "scalar", "pi"}
_GRAFANA_INTERVALS = re.compile(r"\$__(rate_interval|interval|range)")


def expand(expr: str) -> str:
    """The expression as Grafana sends it, with its interval variables at a typical value."""
    return _GRAFANA_INTERVALS.sub("5m", expr)


def check(expr: str, exposed: Mapping[str, frozenset[str]]) -> tuple[list[str], frozenset[str]]:
    """The problems of `expr` against the scrape, and the labels its result carries."""
    problems: list[str] = []
    labels = _labels(p.parse(expand(expr)), exposed, problems)
    return problems, labels


def _labels(node: object, exposed: Mapping[str, frozenset[str]], problems: list[str]) -> frozenset[str]:
    if isinstance(node, p.MatrixSelector):
        return _labels(node.vector_selector, exposed, problems)
    if isinstance(node, p.VectorSelector):
        name = node.name
        if name is None:
            problems.append(f"a selector without a metric name: {node}")
            return frozenset()
        if name not in exposed:
            problems.append(f"{name}: not exposed")
            return frozenset()
        have = exposed[name]
        for matcher in node.matchers.matchers:
            if matcher.name != "__name__" and matcher.name not in have:
                problems.append(f"{name}: no label {matcher.name!r} (it has {sorted(have)})")
        return have
    if isinstance(node, p.ParenExpr | p.UnaryExpr):
        return _labels(node.expr, exposed, problems)
    if isinstance(node, p.SubqueryExpr):
        return _labels(node.expr, exposed, problems)
    if isinstance(node, p.NumberLiteral | p.StringLiteral):
        return frozenset()
    if isinstance(node, p.Call):
        inner: frozenset[str] = frozenset()
        for arg in node.args:
            inner |= _labels(arg, exposed, problems)
        name = node.func.name
        if name in _NO_LABELS:
            return frozenset()
        if name == "histogram_quantile":
            if "le" not in inner:
                problems.append(f"histogram_quantile over series without `le`: {node}")
            return inner - {"le"}
        return inner
    if isinstance(node, p.AggregateExpr):
        inner = _labels(node.expr, exposed, problems)
        if node.param is not None:
            _labels(node.param, exposed, problems)
        modifier = node.modifier
        if modifier is None:
            return frozenset()
        grouped = frozenset(modifier.labels)
        missing = grouped - inner
        if missing and modifier.type == p.AggModifierType.By:
            problems.append(f"{node.op} by {sorted(missing)}: not a label of {sorted(inner)}")
        return grouped if modifier.type == p.AggModifierType.By else inner - grouped
    if isinstance(node, p.BinaryExpr):
        left = _labels(node.lhs, exposed, problems)
        right = _labels(node.rhs, exposed, problems)
        modifier = node.modifier
        matching = modifier.matching if modifier is not None else None
        if matching is not None and matching.type == p.LabelModifierType.Include:
            on = frozenset(matching.labels)
            for side, have in (("left", left), ("right", right)):
                if have and not on <= have:
                    problems.append(f"on {sorted(on - have)}: not a label of the {side} side {sorted(have)}")
        return left or right
    problems.append(f"an expression this check does not know: {type(node).__name__}")
    return frozenset()
