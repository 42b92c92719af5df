"""VW feature text to a learner's feature columns, a block of lines at a time.

The reference parser (`vw_features.parse_namespaces`, then `flatten`) builds a tuple and a
dict key per feature: ~25 us for a line of 16 features, more than the learner spends on it.
Streams repeat their feature names line after line with new values, so the compiled
tokenizer (``_scan.c``) groups a block's lines by their sequence of names and parses every
value; each group's names are resolved to columns once (a *template*). A line it does not
handle this way (namespace scales, anonymous features, tabs or non-ASCII text, a value that
is not a plain decimal number, a feature repeated in the line) goes through the reference
parser, so the result is always the reference's (the tests compare the two on fuzzed
input); zero-valued features only differ in that a template registers their column.
`AdfEncoder.encode_block` does the same for the shared lines of a block of ADF examples.

With ``hash_bits`` (VW's ``-b``), features are keyed by VW's hashes (`vw_features.HashKeys`)
and ``columns`` maps hashes to columns; `TextEncoder` then reads lines without crosses in one
compiled pass (``_scan.hashes``), whatever their names, with no templates to build. Features
whose hashes share a slot share a column: their values add up, as in VW.

>>> keys = {}
>>> encoder = TextEncoder(lambda names: [keys.setdefault(k, len(keys) + 1) for k in names])
>>> block = encoder.encode(["s a:2 b:0.5", "s a:1 b:4 |t c", "s :3"])
>>> block.rows.index.tolist()
[[1, 2, 0], [1, 2, 3], [4, 0, 0]]
>>> block.rows.value.tolist()
[[2.0, 0.5, 0.0], [1.0, 4.0, 1.0], [3.0, 0.0, 0.0]]
>>> sorted(keys), block.n_features.tolist(), block.errors
(['s^0', 's^a', 's^b', 't^c'], [2, 3, 1], {})
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from regcb_stream.features.encoder import EncodedRows
from regcb_stream.io.hashed_adf import Catalogue, Layout, layout_rows, make_layout
from regcb_stream.io.vw_features import (
    DEFAULT_NS,
    FieldError,
    HashKeys,
    flatten,
    flatten_adf,
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


class TextEncoder:
    """Feature text of VW lines (the text after the first ``|``) to ``EncodedRows``.

    Parameters
    ----------
    columns
        Maps flat feature keys (``"ns^name"``, ``"name"`` in the default namespace, as
        `vw_features.flatten` makes them) to columns, registering new keys.
    interactions
        VW's ``-q`` crosses: lines with crosses take the reference path.
    hash_bits
        Key features by VW's hashes (``columns`` then maps hashes), read ``-b`` bits.
    """

    def __init__(self, columns: Columns, interactions: Iterable[str] = (),
                 hash_bits: int | None = None):
        self._columns = columns
        self.interactions = tuple(interactions)
        self.hash_bits = hash_bits
        self._keys = None if hash_bits is None else HashKeys()
        self._templates: dict[tuple[str, ...], tuple | None] = {}

    def encode(self, bodies: list[str]) -> EncodedBlock:
        """Encode the feature text of a block of lines."""
        if self.interactions or (self._keys and _scan is None):
            return self._finish(len(bodies), [], np.ones(len(bodies), bool), bodies)
        if self._keys:
            return self._encode_hashed(bodies)
        groups, slow = _scan_groups(bodies)
        parts = []
        for lines, names, values in groups:
            template = self._template(names)
            if template is None:
                slow[lines] = True
            else:
                parts.append((lines, template, values))
        return self._finish(len(bodies), parts, slow, bodies)

    def _template(self, names: tuple[str, ...]) -> np.ndarray | None:
        """The columns of a line's features, from its tokens' names, or None when a
        feature repeats (the reference path sums it)."""
        def make():
            keys = [name if namespace == DEFAULT_NS else f"{namespace}^{name}"
                    for namespace, feats in _layout(names) for name in feats]
            if len(set(keys)) < len(keys):
                return None
            return np.array(self._columns(keys), np.intp)
        return _memo(self._templates, names, make)

    def _encode_hashed(self, bodies: list[str]) -> EncodedBlock:
        """Every line's hashes in one compiled pass; the slow lines by the reference."""
        offsets, _, hashes, values, slow = _scan.hashes(list(bodies))
        offsets, values = np.frombuffer(offsets, np.int64), np.frombuffer(values, float)
        slow = np.frombuffer(slow, bool).copy()
        columns = np.asarray(self._columns(np.frombuffer(hashes, np.uint32)), np.intp)
        counts = np.diff(offsets)
        line = np.repeat(np.arange(len(bodies)), counts)
        position = np.arange(len(line)) - offsets[line]
        return self._finish(len(bodies), [(line, position, columns, values)], slow, bodies)

    def _finish(self, n: int, groups: list, slow: np.ndarray, bodies=None) -> EncodedBlock:
        """Padded rows from the template groups (or the hashed lines' entries), plus the
        slow lines by the reference."""
        reference, errors = {}, {}
        for i in np.flatnonzero(slow).tolist():
            try:
                features = flatten(parse_namespaces(bodies[i]), self.interactions, False,
                                   self._keys)
            except FieldError as error:
                errors[i] = error
                continue
            reference[i] = (self._columns(list(features)), list(features.values()))
        widths = [int(g[1].max(initial=-1)) + 1 if len(g) == 4 else g[1].size for g in groups]
        width = max(widths + [len(c) for c, _ in reference.values()] + [1])
        rows = _pad(reference, n, width)
        for group in groups:
            if len(group) == 4:  # hashed entries: (line, position, column, value)
                line, position, columns, values = group
                rows.index[line, position], rows.value[line, position] = columns, values
            else:
                lines, columns, values = group
                rows.index[lines, : columns.size] = columns
                rows.value[lines, : columns.size] = values
        n_features = (rows.value != 0).sum(axis=1)  # (VW counts features sharing a slot)
        if self._keys is not None:
            _merge_repeats(rows)
        return EncodedBlock(rows, n_features, errors)


def _scan_groups(bodies: list[str]) -> tuple[list, np.ndarray]:
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


def _parsed(bodies: list[str], shared: list, slow: np.ndarray, errors: dict) -> dict:
    """The slow lines' shared features by the reference parser (None: no shared line), by
    line; a line that is not valid VW features goes into ``errors``."""
    out = {}
    for i in np.flatnonzero(slow).tolist():
        try:
            out[i] = parse_namespaces(bodies[i]) if shared[i] is not None else None
        except FieldError as error:
            errors[i] = error
    return out


def _keyed_rows(rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hashed rows (dicts) as padded keys, values and presence, ``(1, K, L)`` each."""
    width = max([len(row) for row in rows] + [1])
    keys, values = np.zeros((1, len(rows), width), np.uint64), np.zeros((1, len(rows), width))
    for r, row in enumerate(rows):
        keys[0, r, : len(row)], values[0, r, : len(row)] = list(row), list(row.values())
    lengths = np.array([len(row) for row in rows], np.intp)[None, :, None]
    return keys, values, np.arange(width) < lengths  # (no rows: (1, 0, L) too)


def _merge_repeats(rows: EncodedRows) -> int:
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


def _layout(names: tuple[str, ...]) -> tuple:
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


def _groups(initials: bytes, offsets, actions: list[tuple], examples: list[int]) -> dict:
    """The examples by (shared namespace initials, action set), in example order. Action
    sets are compared by their actions' identity: the readers give a repeated action line
    or object the same features, so equal sets match without hashing their features (equal
    actions that are not the same object go apart, which costs speed, not rows)."""
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


def _memo(cache: dict, key, make):
    """``cache[key]``, made by ``make()`` if missing (the cache is cleared when full)."""
    if key in cache:
        return cache[key]
    if len(cache) >= 4096:
        cache.clear()
    value = cache[key] = make()
    return value


class _Tokens(NamedTuple):
    """The shared lines' tokens of a block (``_scan.hashes``): where each line's tokens start,
    their hashes and values."""

    offsets: np.ndarray  # int64, one per line
    hashes: np.ndarray  # uint32
    values: np.ndarray  # float64


class _Fill(NamedTuple):
    """Rows of a block from a layout: row ``rows[t]`` of example ``examples[t]`` is row
    ``from_rows[t]`` of ``layout``, for shared lines of ``n_tokens`` tokens."""

    examples: np.ndarray
    rows: np.ndarray
    from_rows: np.ndarray
    layout: Layout
    n_tokens: int
    members: list | None = None  # the examples, once each, when every row is filled

    @classmethod
    def whole(cls, members: list[int], layout: Layout, n_tokens: int) -> _Fill:
        """Every row of each member by the same row of the layout."""
        k = len(layout.source1)
        rows = np.tile(np.arange(k), len(members))
        return cls(np.repeat(members, k), rows, rows, layout, n_tokens, members)

    def whole_block(self, n: int) -> bool:
        return self.members is not None and len(self.members) == n


def _width(part) -> int:
    return part.layout.source1.shape[1] if isinstance(part, _Fill) else part[2].shape[-1]


class AdfEncoder:
    """The action lines of an ADF example, merged with its shared line and crossed as VW's
    ``-q`` says, to ``EncodedRows`` (one row per action).

    An example's row layout depends only on its shared feature *names* and its action
    lines, which a stream repeats: the layout is built once per such pair (a template) by
    running the reference `flatten_adf` on symbolic shared values, so each value of the
    rows is ``coef * s[i] * s[j]`` of the shared values ``s`` (``s[0] = 1``), and later
    examples cost one vectorized product. Examples whose flattening sums two features into
    one key take the reference path.

    >>> keys = {}
    >>> encoder = AdfEncoder(lambda names: [keys.setdefault(k, len(keys) + 1) for k in names],
    ...                      ["sa"])
    >>> rows, n_features = encoder.encode((("s", (("x", 2.0),)),), [(("a", (("i", 3.0),)),)])
    >>> rows.index.tolist(), rows.value.tolist(), n_features, sorted(keys)
    ([[1, 2, 3]], [[2.0, 3.0, 6.0]], 4, ['a^i', 's^x', 's^x*a^i'])
    """

    def __init__(self, columns: Columns, interactions: Iterable[str] = (),
                 constant: bool = True, hash_bits: int | None = None):
        self._columns = columns
        self.interactions = tuple(interactions)
        self.constant = constant
        self._keys = None if hash_bits is None else HashKeys()
        self._templates: dict[tuple, tuple | None] = {}
        self._catalogues: dict[bytes, Catalogue] = {}  # shared initials -> action rows

    def encode(self, shared, actions) -> tuple[EncodedRows, int]:
        """Rows of the (shared, action) features and VW's feature count of the example."""
        shared, actions = shared or (), tuple(actions)
        names = tuple((name, tuple([f for f, _ in feats])) for name, feats in shared)
        template = self._template(names, actions)
        if template is None:
            return self._reference(shared, actions)
        index, coef, first, second, n_features = template
        s = np.array([1.0, *[v for _, feats in shared for _, v in feats]])
        return EncodedRows(index, coef * s[first] * s[second]), n_features

    def encode_block(self, shared: list, actions: list[tuple]) -> EncodedBlock:
        """Rows ``(n, K, L)`` of a block of examples with K action lines each, whose shared
        lines are feature text (``iter_adf(..., shared_text=True)``; None: no shared
        line). The shared lines are tokenized together (as `TextEncoder` does); then each
        (shared names, action lines) layout costs one vectorized product. Examples whose
        shared text is not valid VW features are in ``errors``.

        >>> keys = {}
        >>> encoder = AdfEncoder(lambda names: [keys.setdefault(k, len(keys) + 1)
        ...                                     for k in names], ["sa"])
        >>> actions = ((("a", (("i", 1.0),)),), (("a", (("j", 1.0),)),))
        >>> block = encoder.encode_block(["s x:2", "s x:3 |t y", "s :1"], [actions] * 3)
        >>> block.rows.value[1].tolist(), block.n_features.tolist()
        ([[3.0, 1.0, 1.0, 3.0], [3.0, 1.0, 1.0, 3.0]], [8, 10, 8])
        """
        n, k = len(actions), len(actions[0])
        kinds = set(map(type, shared))
        if tuple in kinds:  # parsed already (DSJSON's reference path)
            return self._parsed_block(shared, actions)
        bodies = shared if type(None) not in kinds else [
            "" if body is None else body for body in shared]
        if self._keys is not None and _scan is not None:
            return self._hashed_block(bodies, shared, actions)
        groups, slow = _scan_groups(bodies)
        parts, errors, counts = [], {}, {}
        for lines, names, values in groups:
            names = _layout(names)
            by_actions: dict[tuple, list[int]] = {}
            for position, line in enumerate(lines.tolist()):
                by_actions.setdefault(actions[line], []).append(position)
            for acts, positions in by_actions.items():
                members = lines[positions]
                template = self._template(names, acts)
                if template is None:
                    slow[members] = True
                    continue
                index, coef, first, second, _ = template
                s = np.hstack([np.ones((len(members), 1)), values[positions]])
                parts.append((members, index, coef * s[:, first] * s[:, second]))
        for i, features in _parsed(bodies, shared, slow, errors).items():
            rows, counts[i] = self.encode(features, actions[i])
            parts.append(([i], rows.index, rows.value[None]))
        width = max([index.shape[-1] for _, index, _ in parts] + [1])
        index, value = np.zeros((n, k, width), np.intp), np.zeros((n, k, width))
        for members, columns, values in parts:
            index[members, :, : columns.shape[-1]] = columns
            value[members, :, : columns.shape[-1]] = values
        n_features = (value != 0).sum(axis=(1, 2)) + self.constant * k
        n_features[list(counts)] = list(counts.values())
        return EncodedBlock(EncodedRows(index, value), n_features, errors)

    def _hashed_block(self, bodies: list[str], shared: list, actions: list[tuple]
                      ) -> EncodedBlock:
        """``encode_block`` with hashing: the shared lines hashed in one compiled pass,
        the rows of each (namespace initials, action lines) layout filled by a compiled
        kernel (`hashed_adf`), the slow lines by the reference; then every key's column, in
        example order. An action set met once in the block is not worth a layout of its
        own (streams whose action sets change would build one per example): its rows go
        by the layouts of (initials, one action), which such streams repeat."""
        offsets, initials, hashes, values, slow = _scan.hashes(bodies)
        offsets, values = np.frombuffer(offsets, np.int64), np.frombuffer(values, float)
        hashes, slow = np.frombuffer(hashes, np.uint32), np.frombuffer(slow, bool).copy()
        tokens = _Tokens(offsets, hashes, values)
        groups = _groups(initials, offsets, actions, np.flatnonzero(~slow).tolist())
        parts, errors, counts, lone = [], {}, {}, {}
        for (starts, *_), members in groups.items():
            acts = actions[members[0]]
            if len(members) == 1 and acts:
                lone.setdefault(starts, []).append(members[0])
                continue
            layout = self._layout(starts, acts)
            if layout is None:  # features summed into one key: the reference path
                slow[members] = True
                continue
            parts.append(_Fill.whole(members, layout, len(starts)))
        parts += self._rows_by_action(lone, actions, slow)
        for i, features in _parsed(bodies, shared, slow, errors).items():
            rows = flatten_adf(features, actions[i], self.interactions, False, self._keys)
            counts[i] = sum(map(len, rows)) + self.constant * len(rows)
            parts.append(([i], slice(None), *_keyed_rows(rows)))
        return self._columns_in_order(len(actions), len(actions[0]), parts, tokens, errors,
                                      counts)

    def _layout(self, starts: bytes, acts: tuple) -> Layout | None:
        return _memo(self._templates, ("hashed", starts, acts), lambda: _or_none(
            make_layout, starts, acts, self.interactions, _Slot))

    def _rows_by_action(self, lone: dict, actions: list[tuple], slow) -> list[_Fill]:
        """The fills of the rows of examples ``{initials: [example, ...]}``: each row by the
        layout of its one action (an ADF row depends on the shared line and its own action
        only), kept in a `Catalogue` per initials; an example with a row the layouts cannot
        give is marked ``slow``."""
        if len(self._catalogues) > 256 or any(
                len(c.layouts) > 4096 for c in self._catalogues.values()):
            self._catalogues.clear()  # (bounded memory)
        fills = []
        for starts, examples in lone.items():
            catalogue = self._catalogues.get(starts) or self._catalogues.setdefault(
                starts, Catalogue(len(starts)))
            k = len(actions[examples[0]])
            flat = list(itertools.chain.from_iterable([actions[i] for i in examples]))
            rows = list(map(catalogue.rows.get, map(id, flat)))
            if None in rows:  # (actions met for the first time)
                rows = [catalogue.row(action, functools.partial(self._layout, starts, (action,)))
                        for action in flat]
            if None in rows:  # (rows without a layout: those examples take the reference)
                bad = {j // k for j, row in enumerate(rows) if row is None}
                slow[[examples[j] for j in sorted(bad)]] = True
                rows = [row for j, row in enumerate(rows) if j // k not in bad]
                examples = [i for j, i in enumerate(examples) if j not in bad]
                if not examples:
                    continue
            fills.append(_Fill(np.repeat(examples, k), np.tile(np.arange(k), len(examples)),
                               np.array(rows, np.int64), catalogue.stacked, len(starts)))
        return fills

    def _parsed_block(self, shared: list, actions: list[tuple]) -> EncodedBlock:
        """``encode_block`` of examples whose shared features are parsed (``Features``):
        each through `encode` (its layout's template)."""
        parts = [self.encode(features, acts) for features, acts in zip(shared, actions)]
        width = max([rows.index.shape[-1] for rows, _ in parts] + [1])
        index = np.zeros((len(parts), len(actions[0]), width), np.intp)
        value = np.zeros(index.shape)
        for i, (rows, _) in enumerate(parts):
            index[i, :, : rows.index.shape[-1]], value[i, :, : rows.index.shape[-1]] = (
                rows.index, rows.value)
        return EncodedBlock(EncodedRows(index, value), np.array([n for _, n in parts]), {})

    def _columns_in_order(self, n: int, k: int, parts: list, tokens: _Tokens, errors: dict,
                          counts: dict) -> EncodedBlock:
        """Padded rows ``(n, K, L)`` from the parts: a `_Fill` of layout rows, or a keyed
        part (examples, rows, keys, values, present) with ``rows`` a slice of all rows
        (keys ``(m, K, L)``); the keys' columns registered in example order."""
        if (len(parts) == 1 and isinstance(parts[0], _Fill) and parts[0].whole_block(n)
                and parts[0].layout.present.all()):
            return self._one_layout(parts[0], tokens, errors, counts)  # the usual case
        width = max([_width(part) for part in parts] + [1])
        keys, value = np.zeros((n, k, width), np.uint64), np.zeros((n, k, width))
        present = np.zeros((n, k, width), bool)
        for part in parts:
            if isinstance(part, _Fill):
                layout = part.layout
                _scan.layout_fill(keys, value, present, k, width, part.examples, part.rows,
                                  part.from_rows, layout, *layout.source1.shape,
                                  part.n_tokens, *tokens)
                continue
            members, rows, part_keys, part_values, part_present = part
            w = part_keys.shape[-1]
            keys[members, rows, :w], value[members, rows, :w] = part_keys, part_values
            present[members, rows, :w] = part_present
        index = np.zeros((n, k, width), np.intp)
        index[present] = self._columns(keys[present])
        return self._finish_rows(index, value, errors, counts)

    def _one_layout(self, fill: _Fill, tokens: _Tokens, errors: dict, counts: dict
                    ) -> EncodedBlock:
        """The rows of a block of one layout without padding: when every example has the
        same shared hashes, their columns are found (and checked for repeats) once."""
        members = fill.members
        at = tokens.offsets[members][:, None] + np.arange(fill.n_tokens)
        names = tokens.hashes[at]
        if len(members) > 1 and (names == names[0]).all():  # the same names each time
            names = names[:1]  # (keys of one example, shared by all)
        keys, value = layout_rows(fill.layout, names, tokens.values[at])
        index = np.asarray(self._columns(keys.reshape(-1)), np.intp).reshape(keys.shape)
        if len(index) == 1 < len(members):  # every example has the same keys
            merged = EncodedRows(index.copy(), np.ones(index.shape))
            if not _merge_repeats(merged):  # (then none of them repeats a column)
                index = np.broadcast_to(index, value.shape)
                return self._finish_rows(index, value, errors, counts, merged=True)
            index = np.broadcast_to(index, value.shape)
        return self._finish_rows(index, value, errors, counts)

    def _finish_rows(self, index, value, errors: dict, counts: dict, merged: bool = False
                     ) -> EncodedBlock:
        """The block of hashed rows: VW's feature counts (``counts``: those of the
        reference path's examples), then the repeated columns merged (unless ``merged``:
        known to have none)."""
        n_features = (value != 0).sum(axis=(1, 2)) + self.constant * index.shape[1]
        n_features[list(counts)] = list(counts.values())
        rows = EncodedRows(index if merged else np.ascontiguousarray(index),
                           np.ascontiguousarray(value))  # (merged: a read-only broadcast)
        if not merged:
            _merge_repeats(rows)
        return EncodedBlock(rows, n_features, errors)

    def _reference(self, shared, actions) -> tuple[EncodedRows, int]:
        rows = flatten_adf(shared, actions, self.interactions, False, self._keys)
        n_features = sum(map(len, rows)) + self.constant * len(rows)
        encoded = {i: (self._columns(list(row)), list(row.values())) for i, row in enumerate(rows)}
        encoded = _pad(encoded, len(rows))
        if self._keys is not None:
            _merge_repeats(encoded)
        return encoded, n_features

    def _template(self, names: tuple, actions: tuple) -> tuple | None:
        """Columns and ``(coef, i, j)`` per entry of the rows of examples whose shared line
        has the namespaces and feature ``names`` given (``((namespace, (name, ...)),
        ...)``), or None (the reference path)."""
        return _memo(self._templates, (names, actions), lambda: self._make(names, actions))

    def _make(self, names: tuple, actions: tuple) -> tuple | None:
        slots, count = [], 0
        for name, feats in names:
            slots.append((name, tuple((f, _Slot(1.0, count + k + 1)) for k, f in
                                      enumerate(feats))))
            count += len(feats)
        try:
            rows = flatten_adf(tuple(slots), actions, self.interactions, False, self._keys)
            terms = [[_Slot.of(v) for v in row.values()] for row in rows]
        except _NotAMonomial:
            return None
        encoded = _pad({i: (self._columns(list(row)), [1.0] * len(row))
                        for i, row in enumerate(rows)}, len(rows))
        if self._keys is not None and _merge_repeats(encoded):
            return None  # hashes that share a slot: the reference path sums them
        coef, first, second = (np.zeros(encoded.index.shape, t) for t in (float, np.intp, np.intp))
        for r, row in enumerate(terms):
            for c, term in enumerate(row):
                coef[r, c], first[r, c], second[r, c] = term.coef, term.first, term.second
        n_features = sum(map(len, rows)) + self.constant * len(rows)
        return encoded.index, coef, first, second, n_features


def _or_none(make, *args):
    """``make(*args)``, or None when a symbolic value stops being a monomial."""
    try:
        return make(*args)
    except _NotAMonomial:
        return None


class _NotAMonomial(Exception):
    """A symbolic value left the form ``coef * s[i] * s[j]``."""


class _Slot:
    """A symbolic feature value ``coef * s[first] * s[second]`` (``s[0] = 1``): the
    reference flattening only adds a value to 0.0 and multiplies two values."""

    __slots__ = ("coef", "first", "second")

    def __init__(self, coef: float, first: int, second: int = 0):
        self.coef, self.first, self.second = coef, first, second

    @staticmethod
    def of(value) -> _Slot:
        return value if isinstance(value, _Slot) else _Slot(float(value), 0)

    def __mul__(self, other) -> _Slot:
        if not isinstance(other, _Slot):
            return _Slot(self.coef * other, self.first, self.second)
        if self.second or other.second:
            raise _NotAMonomial
        return _Slot(self.coef * other.coef, self.first, other.first)

    __rmul__ = __mul__

    def __radd__(self, other) -> _Slot:
        if other != 0.0:
            raise _NotAMonomial  # two features summed into one key
        return self

    __add__ = __radd__


def _pad(rows: dict[int, tuple[list[int], list[float]]], n: int, width: int = 1) -> EncodedRows:
    """``n`` padded rows, at least ``width`` wide, filled from (columns, values) by row."""
    width = max([len(columns) for columns, _ in rows.values()] + [width])
    index, value = np.zeros((n, width), np.intp), np.zeros((n, width))
    for i, (columns, values) in rows.items():
        index[i, : len(columns)], value[i, : len(values)] = columns, values
    return EncodedRows(index, value)
