"""ADF examples' VW text to a learner's feature rows, a block of examples at a time: the
shared lines by the templates of `vw_encode` (`vw_blocks`), each (shared names, action
lines) layout built once and filled by a vectorized product (`AdfEncoder.encode_block`)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable

import numpy as np

from regcb_stream.features.encoder import EncodedRows
from regcb_stream.io.hashed_adf import Catalogue, Layout, layout_rows, make_layout
from regcb_stream.io.vw_features import (
    HashKeys,
    Namespaces,
    flatten_adf,
    parse_namespaces,
)

try:
    from regcb_stream.io import _scan
except ImportError:  # not built (a source tree without `pip install`): the reference parser
    _scan = None
from regcb_stream.io.vw_blocks import (
    Columns,
    EncodedBlock,
    Fill,
    Tokens,
    groups_of,
    keyed_rows,
    layout_of,
    lone_examples,
    memo,
    merge_repeats,
    pad_rows,
    parsed,
    scan_groups,
    width_of,
)


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
                 constant: bool = True, hash_bits: int | None = None,
                 filters: Namespaces | None = None):
        self._columns = columns
        self.interactions = tuple(interactions)
        self.filters = filters  # VW's --ignore, --keep, --ignore_linear (None: none)
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
        groups, slow = scan_groups(bodies)
        parts, errors, counts = [], {}, {}
        for lines, names, values in groups:
            names = layout_of(names)
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
        for i, features in parsed(bodies, shared, slow, errors).items():
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
        tokens = Tokens(offsets, hashes, values)
        examples = np.flatnonzero(~slow).tolist()
        lone = lone_examples(initials, offsets, actions, examples) if actions[0] else None
        groups = {} if lone is not None else groups_of(initials, offsets, actions, examples)
        parts, errors, counts, lone = [], {}, {}, {} if lone is None else lone
        for (starts, *_), members in groups.items():
            acts = actions[members[0]]
            if len(members) == 1 and acts:
                lone.setdefault(starts, []).append(members[0])
                continue
            layout = self._layout(starts, acts)
            if layout is None:  # features summed into one key: the reference path
                slow[members] = True
                continue
            parts.append(Fill.whole(members, layout, len(starts)))
        parts += self._rows_by_action(lone, actions, slow)
        for i, features in parsed(bodies, shared, slow, errors).items():
            rows = flatten_adf(features, actions[i], self.interactions, False, self._keys,
                               filters=self.filters)
            counts[i] = sum(map(len, rows)) + self.constant * len(rows)
            parts.append(([i], slice(None), *keyed_rows(rows)))
        return self._columns_in_order(len(actions), len(actions[0]), parts, tokens, errors,
                                      counts)

    def _layout(self, starts: bytes, acts: tuple) -> Layout | None:
        return memo(self._templates, ("hashed", starts, acts), lambda: _or_none(
            make_layout, starts, acts, self.interactions, Slot, self.filters))

    def _rows_by_action(self, lone: dict, actions: list[tuple], slow) -> list[Fill]:
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
            fills.append(Fill(np.repeat(examples, k), np.tile(np.arange(k), len(examples)),
                               np.array(rows, np.int64), catalogue.stacked, len(starts)))
        return fills

    def _parsed_block(self, shared: list, actions: list[tuple]) -> EncodedBlock:
        """``encode_block`` of examples some of whose shared features are parsed
        (``Features``; the others text, parsed here: a DSJSON block of lines of both
        readers): each through `encode` (its layout's template)."""
        parts = [self.encode(parse_namespaces(features) if isinstance(features, str)
                             else features, acts) for features, acts in zip(shared, actions)]
        width = max([rows.index.shape[-1] for rows, _ in parts] + [1])
        index = np.zeros((len(parts), len(actions[0]), width), np.intp)
        value = np.zeros(index.shape)
        for i, (rows, _) in enumerate(parts):
            index[i, :, : rows.index.shape[-1]], value[i, :, : rows.index.shape[-1]] = (
                rows.index, rows.value)
        return EncodedBlock(EncodedRows(index, value), np.array([n for _, n in parts]), {})

    def _columns_in_order(self, n: int, k: int, parts: list, tokens: Tokens, errors: dict,
                          counts: dict) -> EncodedBlock:
        """Padded rows ``(n, K, L)`` from the parts: a `Fill` of layout rows, or a keyed
        part (examples, rows, keys, values, present) with ``rows`` a slice of all rows
        (keys ``(m, K, L)``); the keys' columns registered in example order."""
        if (len(parts) == 1 and isinstance(parts[0], Fill) and parts[0].whole_block(n)
                and parts[0].layout.present.all()):
            return self._one_layout(parts[0], tokens, errors, counts)  # the usual case
        width = max([width_of(part) for part in parts] + [1])
        keys, value = np.zeros((n, k, width), np.uint64), np.zeros((n, k, width))
        present = np.zeros((n, k, width), bool)
        for part in parts:
            if isinstance(part, Fill):
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

    def _one_layout(self, fill: Fill, tokens: Tokens, errors: dict, counts: dict
                    ) -> EncodedBlock:
        """The rows of a block of one layout without padding: when every example has the
        same shared hashes, their columns are found (and checked for repeats) once."""
        members = fill.members
        at = tokens.offsets[members][:, None] + np.arange(fill.n_tokens)
        names = tokens.hashes[at]
        if len(members) > 1 and (names == names[0]).all():  # the same names each time
            names = names[:1]  # (keys of one example, shared by all)
        intercept = float(self.constant)  # (the learner's: VW's constant, column 0)
        keys, value = layout_rows(fill.layout, names, tokens.values[at], lead=intercept)
        index = np.asarray(self._columns(keys.reshape(-1)), np.intp).reshape(keys.shape)
        index = np.concatenate([np.zeros(index.shape[:-1] + (1,), np.intp), index], axis=-1)
        merged = False
        if len(index) == 1 < len(members):  # every example has the same keys
            merged = not merge_repeats(EncodedRows(index.copy(), np.ones(index.shape)))
            index = np.broadcast_to(index, value.shape)  # (merged: none repeats a column)
        return self._finish_rows(index, value, errors, counts, merged, intercept)

    def _finish_rows(self, index, value, errors: dict, counts: dict, merged: bool = False,
                     intercept: float | None = None) -> EncodedBlock:
        """The block of hashed rows: VW's feature counts (``counts``: those of the
        reference path's examples), then the repeated columns merged (unless ``merged``:
        known to have none); ``intercept``: the rows hold it first (its value: counted as
        VW counts the constant)."""
        n_features = (value != 0).sum(axis=(1, 2))
        if intercept is None:
            n_features += self.constant * index.shape[1]
        n_features[list(counts)] = list(counts.values())
        rows = EncodedRows(index if merged else np.ascontiguousarray(index),
                           np.ascontiguousarray(value),  # (merged: a read-only broadcast)
                           intercept)
        if not merged:
            merge_repeats(rows)
        return EncodedBlock(rows, n_features, errors)

    def _reference(self, shared, actions) -> tuple[EncodedRows, int]:
        rows = flatten_adf(shared, actions, self.interactions, False, self._keys,
                           filters=self.filters)
        n_features = sum(map(len, rows)) + self.constant * len(rows)
        encoded = {i: (self._columns(list(row)), list(row.values())) for i, row in enumerate(rows)}
        encoded = pad_rows(encoded, len(rows))
        if self._keys is not None:
            merge_repeats(encoded)
        return encoded, n_features

    def _template(self, names: tuple, actions: tuple) -> tuple | None:
        """Columns and ``(coef, i, j)`` per entry of the rows of examples whose shared line
        has the namespaces and feature ``names`` given (``((namespace, (name, ...)),
        ...)``), or None (the reference path)."""
        return memo(self._templates, (names, actions), lambda: self._make(names, actions))

    def _make(self, names: tuple, actions: tuple) -> tuple | None:
        slots, count = [], 0
        for name, feats in names:
            slots.append((name, tuple((f, Slot(1.0, count + k + 1)) for k, f in
                                      enumerate(feats))))
            count += len(feats)
        try:
            rows = flatten_adf(tuple(slots), actions, self.interactions, False, self._keys,
                               filters=self.filters)
            terms = [[Slot.of(v) for v in row.values()] for row in rows]
        except NotAMonomial:
            return None
        encoded = pad_rows({i: (self._columns(list(row)), [1.0] * len(row))
                        for i, row in enumerate(rows)}, len(rows))
        if self._keys is not None and merge_repeats(encoded):
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
    except NotAMonomial:
        return None


class NotAMonomial(Exception):
    """A symbolic value left the form ``coef * s[i] * s[j]``."""


class Slot:
    """A symbolic feature value ``coef * s[first] * s[second]`` (``s[0] = 1``): the
    reference flattening only adds a value to 0.0 and multiplies two values."""

    __slots__ = ("coef", "first", "second")

    def __init__(self, coef: float, first: int, second: int = 0):
        self.coef, self.first, self.second = coef, first, second

    @staticmethod
    def of(value) -> Slot:
        return value if isinstance(value, Slot) else Slot(float(value), 0)

    def __mul__(self, other) -> Slot:
        if not isinstance(other, Slot):
            return Slot(self.coef * other, self.first, self.second)
        if self.second or other.second:
            raise NotAMonomial
        return Slot(self.coef * other.coef, self.first, other.first)

    __rmul__ = __mul__

    def __radd__(self, other) -> Slot:
        if other != 0.0:
            raise NotAMonomial  # two features summed into one key
        return self

    __add__ = __radd__
