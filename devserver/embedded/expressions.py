"""Condition and update expressions for the fast path, parsed once per shape instead of on
every call.

Conditions are parsed by moto's own parser, once per (expression, names, value placeholders),
with stand-in values; each call then swaps its own values into a copy of that tree. The tree
is moto's (its Op and Func classes), so a condition decides exactly as in moto. A tree with
BETWEEN is not kept: moto checks its bounds' types while parsing.

Key conditions are parsed by moto's parser too, once per shape, with stand-in values.

Update expressions are parsed here, for the forms the store writes: `SET name = :value`,
`REMOVE name` and `ADD name :number` on top-level attributes. Anything else (nested paths,
functions, arithmetic, DELETE, sets) is not parsed (None), and the caller leaves the whole
call to moto. Every update expression of a transaction is also parsed by moto's parser, once
per text (`update_tree`): its tree, which moto's validator copies before changing it, serves
each call, and updates of any other form are applied by moto's executors to one item.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from moto.dynamodb.comparisons import (
    AttributeValue,
    Func,
    FuncBetween,
    Op,
    Operand,
    create_condition_expression_parser,
)
from moto.dynamodb.parsing.ast_nodes import ExpressionAttributeName  # type: ignore[attr-defined]
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.key_condition_expression import parse_expression
from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords

_MARK = "\x00emit-placeholder\x00"


@dataclass(frozen=True)
class Condition:
    tree: Op | Func
    names: frozenset[str]
    """Expression attribute names (#x) and plain attribute names it refers to."""
    values: frozenset[str]
    """Expression attribute values (:x) it refers to."""
    rebuild: Callable[[dict[str, Any], dict[int, Any]], Any] | None
    """Builds the tree with a call's values (None: the tree has none)."""

    def bind(self, values: dict[str, Any] | None) -> Op | Func:
        """The tree with this call's values."""
        if self.rebuild is None:
            return self.tree
        bound: Op | Func = self.rebuild(values or {}, {})
        return bound


_conditions: dict[tuple[Any, ...], Condition | None] = {}


def condition(
    expression: str | None, names: dict[str, str] | None, values: dict[str, Any] | None
) -> Condition | None:
    """The parsed condition, or None when moto's parser refuses it (the caller lets moto answer,
    with moto's error) or it is of a kind not kept."""
    key = (expression, tuple(sorted((names or {}).items())), tuple(sorted(values or {})))
    if key in _conditions:
        return _conditions[key]
    stand_ins = {name: {"S": f"{_MARK}{name}"} for name in values or {}}
    parser = create_condition_expression_parser(expression, names or {}, stand_ins)
    try:
        tree = parser.parse()
    except Exception:
        found = None
    else:
        found = (
            None
            if _has(tree, FuncBetween)
            else Condition(
                tree,
                frozenset(parser.expr_attr_names_found),
                frozenset(parser.expr_attr_values_found),
                _rebuilder(tree),
            )
        )
    if len(_conditions) > 10_000:
        _conditions.clear()
    _conditions[key] = found
    return found


def _children(node: Any) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in vars(node).items() if isinstance(v, Op | Func | Operand | tuple | list)]


def _has(node: Any, kind: type) -> bool:
    if isinstance(node, kind):
        return True
    for _, child in _children(node):
        items = child if isinstance(child, tuple | list) else [child]
        if any(isinstance(c, Op | Func | Operand) and _has(c, kind) for c in items):
            return True
    return False


def _leaf_rebuilder(node: AttributeValue) -> Callable[[dict[str, Any], dict[int, Any]], Any] | None:
    """`_rebuilder` of a value: a stand-in's builds the call's value in its place."""
    if not (node.type == "S" and isinstance(node.value, str) and node.value.startswith(_MARK)):
        return None
    placeholder = node.value[len(_MARK) :]
    key = id(node)

    def leaf(values: dict[str, Any], memo: dict[int, Any]) -> Any:
        if key not in memo:
            memo[key] = AttributeValue(values[placeholder])
        return memo[key]

    return leaf


def _rebuilt_parts(node: Any) -> list[tuple[str, Any]]:
    """The fields of `node` holding a stand-in, each with its builder (or, for a tuple or a
    list, its type and each element's builder, None for one without, beside the element)."""
    parts: list[tuple[str, Any]] = []
    for name, child in _children(node):
        if isinstance(child, tuple | list):
            builders = [_rebuilder(c) for c in child]
            if any(builders):
                parts.append((name, (type(child), list(zip(builders, child, strict=True)))))
        else:
            builder = _rebuilder(child)
            if builder is not None:
                parts.append((name, builder))
    return parts


def _rebuilder(node: Any) -> Callable[[dict[str, Any], dict[int, Any]], Any] | None:
    """A function building a copy of `node` with a call's values in place of the stand-ins,
    sharing every part without one; None when `node` has none. A node referred to twice (a
    Func keeps its operands by name and in `arguments`) is built once (`memo`)."""
    if isinstance(node, AttributeValue):
        return _leaf_rebuilder(node)
    if not isinstance(node, Op | Func):
        return None
    parts = _rebuilt_parts(node)
    if not parts:
        return None
    cls, base, key = type(node), dict(vars(node)), id(node)

    def rebuild(values: dict[str, Any], memo: dict[int, Any]) -> Any:
        if key in memo:
            return memo[key]
        fields = dict(base)
        for name, part in parts:
            if isinstance(part, tuple):
                kind, items = part
                fields[name] = kind(b(values, memo) if b is not None else c for b, c in items)
            else:
                fields[name] = part(values, memo)
        built = cls.__new__(cls)
        built.__dict__.update(fields)
        memo[key] = built
        return built

    return rebuild


# -- updates ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    kind: str
    """SET, REMOVE or ADD."""
    path: str
    """The attribute as written: `#name` or a plain name."""
    value: str | None
    """The value placeholder (`:v`) of SET and ADD."""


@dataclass(frozen=True)
class Update:
    actions: tuple[Action, ...]
    names: frozenset[str]
    """The `#name` placeholders it uses."""
    values: frozenset[str]


_NAME = r"(?:#[A-Za-z0-9_]+|[A-Za-z][A-Za-z0-9_]*)"
_VALUE = r":[A-Za-z0-9_]+"
_CLAUSE = re.compile(r"\s*(?<![#:\w])(SET|REMOVE|ADD)\s+", re.IGNORECASE)
_SET = re.compile(rf"\s*({_NAME})\s*=\s*({_VALUE})\s*")
_REMOVE = re.compile(rf"\s*({_NAME})\s*")
_ADD = re.compile(rf"\s*({_NAME})\s+({_VALUE})\s*")
_KEYWORDS = {"SET", "REMOVE", "ADD", "DELETE"}
_updates: dict[str, Update | None] = {}


def update(expression: str) -> Update | None:
    """The actions of an update expression in the forms handled here, in written order."""
    if expression in _updates:
        return _updates[expression]
    found = _parse_update(expression)
    if len(_updates) > 10_000:
        _updates.clear()
    _updates[expression] = found
    return found


def _parse_update(expression: str) -> Update | None:
    clauses = list(_CLAUSE.finditer(expression))
    if not clauses or clauses[0].start() != 0 or expression[: clauses[0].start()].strip():
        return None
    kinds = [c.group(1).upper() for c in clauses]
    if len(set(kinds)) != len(kinds):
        return None
    actions: list[Action] = []
    for i, clause in enumerate(clauses):
        end = clauses[i + 1].start() if i + 1 < len(clauses) else len(expression)
        body = expression[clause.end() : end]
        pattern = {"SET": _SET, "REMOVE": _REMOVE, "ADD": _ADD}[kinds[i]]
        for part in body.split(","):
            matched = pattern.fullmatch(part)
            if matched is None:
                return None
            path = matched.group(1)
            if not path.startswith("#") and (path.upper() in _reserved() or path.upper() in _KEYWORDS):
                return None
            actions.append(Action(kinds[i], path, matched.group(2) if matched.lastindex == 2 else None))
    return Update(
        tuple(actions),
        frozenset(a.path for a in actions if a.path.startswith("#")),
        frozenset(a.value for a in actions if a.value is not None),
    )


@dataclass(frozen=True)
class UpdateTree:
    """An update expression as moto's parser reads it."""

    tree: Any
    """moto's tree: not to be changed (moto's UpdateExpressionValidator works on a copy)."""
    names: tuple[str, ...]
    """The `#name` placeholders it uses, as DynamoHandler collects them."""


_trees: dict[str, UpdateTree | None] = {}


def update_tree(expression: str) -> UpdateTree | None:
    """moto's tree of an update expression, parsed once per text; None when moto's parser
    refuses it (the caller lets moto answer, with moto's error)."""
    if expression in _trees:
        return _trees[expression]
    try:
        tree = UpdateExpressionParser.make(expression)
    except Exception:
        found = None
    else:
        clauses = tree.find_clauses([ExpressionAttributeName])
        found = UpdateTree(tree, tuple(c.get_attribute_name_placeholder() for c in clauses))
    if len(_trees) > 10_000:
        _trees.clear()
    _trees[expression] = found
    return found


_reserved_words: set[str] = set()


def _reserved() -> set[str]:
    if not _reserved_words:
        _reserved_words.update(w.upper() for w in ReservedKeywords.get_reserved_keywords())
    return _reserved_words


# -- key conditions ---------------------------------------------------------------------


@dataclass(frozen=True)
class KeyCondition:
    """A KeyConditionExpression as moto's parse_expression reads it, with placeholders where
    the values go."""

    hash_conditions: tuple[tuple[str, str], ...]
    """(attribute, value placeholder)"""
    range_conditions: tuple[tuple[str, str, tuple[str, ...]], ...]
    """(attribute, comparison, value placeholders)"""
    names: tuple[str, ...]
    """The expression attribute names it uses."""

    def bind(
        self, values: dict[str, Any]
    ) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str, list[dict[str, Any]]]]] | None:
        """parse_expression's answer with this call's values; None where moto would refuse a
        value (an empty string key)."""
        hashes = [(name, values[p]) for name, p in self.hash_conditions]
        ranges = [
            (name, comparison, [values[p] for p in ps]) for name, comparison, ps in self.range_conditions
        ]
        bound = [v for _, v in hashes] + [v for _, _, vs in ranges for v in vs]
        if any(not isinstance(v, dict) or v.get("S", None) == "" for v in bound):
            return None
        return hashes, ranges


_keys: dict[tuple[Any, ...], KeyCondition | None] = {}


def key_condition(
    expression: str, names: dict[str, str], values: dict[str, Any], schema: list[dict[str, str]]
) -> KeyCondition | None:
    """The parsed key condition, or None when moto's parser refuses it (moto then answers)."""
    key = (
        expression,
        tuple(sorted(names.items())),
        tuple(sorted(values)),
        tuple((k["AttributeName"], k["KeyType"]) for k in schema),
    )
    if key in _keys:
        return _keys[key]
    stand_ins = {name: {"S": f"{_MARK}{name}"} for name in values}
    placeholders = {id(v): name for name, v in stand_ins.items()}
    found: KeyCondition | None = None
    try:
        hashes, ranges, used = parse_expression(
            key_condition_expression=expression,
            expression_attribute_values=stand_ins,
            expression_attribute_names=names,
            schema=schema,
        )
        found = KeyCondition(
            tuple((name, placeholders[id(v)]) for name, v in hashes),
            tuple(
                (name, comparison, tuple(placeholders[id(v)] for v in vs)) for name, comparison, vs in ranges
            ),
            tuple(used),
        )
    except Exception:  # refused (moto says why), or a value that is not a placeholder
        found = None
    if len(_keys) > 10_000:
        _keys.clear()
    _keys[key] = found
    return found
