"""What the VW text encoders (`vw_encode.TextEncoder`, `adf_encode.AdfEncoder`) share: a
block's lines grouped by their sequence of feature names, each group's template, and the
encoded block they give."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from regcb_stream.features.encoder import EncodedRows
from regcb_stream.io.hashed_adf import Layout
from regcb_stream.io.vw_features import (
    DEFAULT_NS,
    FieldError,
    parse_namespaces,
)

try:
    from regcb_stream.io import _scan
except ImportError:  # not built (a source tree without `pip install`): the reference parser
    _scan = None

Columns = Callable[[list[str]], list[int]]


@dataclass(frozen=True)
class EncodedBlock:
    """Encoded lines (or ADF examples): feature rows, VW's feature count of each, and the
    lines that are not valid VW features (line index -> the error; their rows are
    empty)."""

    rows: EncodedRows
    n_features: np.ndarray
    errors: dict[int, FieldError]


def scan_groups(bodies: list[str]) -> tuple[list, np.ndarray]:
    """Group a block's feature texts by their sequence of names, in the compiled tokenizer:
    ``(lines, names of the first line's tokens, values (lines, features))`` per group, and
    a mask of the lines left to the reference parser."""
    if _scan is None:
        return [], np.ones(len(bodies), bool)
    group, firsts, count, values, slow = _scan.scan(list(bodies))
    group, count = np.frombuffer(group, np.int64), np.frombuffer(count, np.int64)
    values, slow = np.frombuffer(values, float), np.frombuffer(slow, bool).copy()
    starts = np.cumsum(count) - count
    order = np.argsort(group, kind="stable")[np.count_nonzero(slow):]
    bounds = np.cumsum(np.bincount(group[~slow], minlength=len(firsts)))
    groups = []
    for first, lines in zip(firsts, np.split(order, bounds[:-1])):
        names = tuple(name for name, _, _ in (token.partition(":") for token in (
            "|" + bodies[first].replace("|", " |")).split(" ")))
        width = int(count[first])
        groups.append((lines, names, values[starts[lines, None] + np.arange(width)]))
    return groups, slow


def parsed(bodies: list[str], shared: list, slow: np.ndarray, errors: dict) -> dict:
    """The slow lines' shared features by the reference parser (None: no shared line), by
    line; a line that is not valid VW features goes into ``errors``."""
    out = {}
    for i in np.flatnonzero(slow).tolist():
        try:
            out[i] = parse_namespaces(bodies[i]) if shared[i] is not None else None
        except FieldError as error:
            errors[i] = error
    return out


def keyed_rows(rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hashed rows (dicts) as padded keys, values and presence, ``(1, K, L)`` each."""
    width = max([len(row) for row in rows] + [1])
    keys, values = np.zeros((1, len(rows), width), np.uint64), np.zeros((1, len(rows), width))
    for r, row in enumerate(rows):
        keys[0, r, : len(row)], values[0, r, : len(row)] = list(row), list(row.values())
    lengths = np.array([len(row) for row in rows], np.intp)[None, :, None]
    return keys, values, np.arange(width) < lengths  # (no rows: (1, 0, L) too)


def merge_repeats(rows: EncodedRows) -> int:
    """Merge, in place, the columns a row repeats (features whose hashes share a slot): the
    first entry takes the sum of the values, the others become padding (column 0, value 0,
    which every kernel skips). Returns the number of rows changed."""
    index, value = rows.index, rows.value
    if _scan is not None:
        return _scan.merge_repeats(index, value, max(index.shape[-1], 1))
    changed = 0
    for at in np.ndindex(index.shape[:-1]):
        first: dict[int, int] = {}
        for position, column in enumerate(index[at].tolist()):
            if column and column in first:
                value[at][first[column]] += value[at][position]
                index[at][position], value[at][position] = 0, 0.0
                changed += 1
            elif column:
                first[column] = position
    return changed


def layout_of(names: tuple[str, ...]) -> tuple:
    """The namespaces of a tokenized line as ``(name, feature names)`` (as
    `vw_features.parse_namespaces` names them, empty ones omitted)."""
    namespaces, feats = [], []
    for name in names:
        if name.startswith("|"):
            feats = []
            namespaces.append((name[1:] or DEFAULT_NS, feats))
        elif name:
            feats.append(name)
    return tuple((namespace, tuple(feats)) for namespace, feats in namespaces if feats)


def groups_of(initials: bytes, offsets, actions: list[tuple], examples: list[int]) -> dict:
    """The examples by (shared namespace initials, action set), in example order. Action
    sets are compared by their actions' identity: the readers give a repeated action line
    or object the same features, so equal sets match without hashing their features (equal
    actions that are not the same object go apart, which costs speed, not rows)."""
    if examples and _one_group(initials, offsets, actions, examples):
        first, start = examples[0], int(offsets[examples[0]])
        return {(initials[start:int(offsets[first + 1])], *map(id, actions[first])): examples}
    by_object: dict[tuple, list[int]] = {}  # (the same tuple: the same set, at once)
    bounds = offsets.tolist()
    for i in examples:
        by_object.setdefault((initials[bounds[i]:bounds[i + 1]], id(actions[i])),
                             []).append(i)
    groups: dict[tuple, list[int]] = {}
    for (starts, _), members in by_object.items():
        groups.setdefault((starts, *map(id, actions[members[0]])), []).extend(members)
    for members in groups.values():
        members.sort()
    return groups


def _one_group(initials: bytes, offsets, actions: list[tuple], examples: list[int]) -> bool:
    """Whether the examples share their action tuple and shared namespace initials (a
    stream's usual block: one group, found without a key per example)."""
    first = actions[examples[0]]
    if not all(actions[i] is first for i in examples):
        return False
    at = np.asarray(examples)
    starts, sizes = offsets[at], offsets[at + 1] - offsets[at]
    if (sizes != sizes[0]).any():
        return False
    letters = np.frombuffer(initials, np.uint8)[starts[:, None] + np.arange(sizes[0])]
    return bool((letters == letters[0]).all())


def lone_examples(initials: bytes, offsets, actions: list[tuple], examples: list[int]
                  ) -> dict | None:
    """The examples by shared namespace initials, in example order, when no two of them
    share their action tuple (a block of a stream whose action sets change at every event:
    each example a group of its own, found without keying its actions), else None. Two
    tuples of the same actions go apart here (as two equal actions do in `groups_of`):
    their rows are the same either way."""
    if not examples or len(set(map(id, map(actions.__getitem__, examples)))) < len(examples):
        return None
    bounds, lone = offsets.tolist(), {}
    for i in examples:
        lone.setdefault(initials[bounds[i]:bounds[i + 1]], []).append(i)
    return lone


def memo(cache: dict, key, make):
    """``cache[key]``, made by ``make()`` if missing (the cache is cleared when full)."""
    if key in cache:
        return cache[key]
    if len(cache) >= 4096:
        cache.clear()
    value = cache[key] = make()
    return value


class Tokens(NamedTuple):
    """The shared lines' tokens of a block (``_scan.hashes``): where each line's tokens start,
    their hashes and values."""

    offsets: np.ndarray  # int64, one per line
    hashes: np.ndarray  # uint32
    values: np.ndarray  # float64


class Fill(NamedTuple):
    """Rows of a block from a layout: row ``rows[t]`` of example ``examples[t]`` is row
    ``from_rows[t]`` of ``layout``, for shared lines of ``n_tokens`` tokens."""

    examples: np.ndarray
    rows: np.ndarray
    from_rows: np.ndarray
    layout: Layout
    n_tokens: int
    members: list | None = None  # the examples, once each, when every row is filled

    @classmethod
    def whole(cls, members: list[int], layout: Layout, n_tokens: int) -> Fill:
        """Every row of each member by the same row of the layout."""
        k = len(layout.source1)
        rows = np.tile(np.arange(k), len(members))
        return cls(np.repeat(members, k), rows, rows, layout, n_tokens, members)

    def whole_block(self, n: int) -> bool:
        return self.members is not None and len(self.members) == n


def width_of(part) -> int:
    return part.layout.source1.shape[1] if isinstance(part, Fill) else part[2].shape[-1]


def pad_rows(rows: dict[int, tuple[list[int], list[float]]], n: int, width: int = 1) -> EncodedRows:
    """``n`` padded rows, at least ``width`` wide, filled from (columns, values) by row."""
    width = max([len(columns) for columns, _ in rows.values()] + [width])
    index, value = np.zeros((n, width), np.intp), np.zeros((n, width))
    for i, (columns, values) in rows.items():
        index[i, : len(columns)], value[i, : len(values)] = columns, values
    return EncodedRows(index, value)
