"""ADF examples with hashed features (VW's ``-b``), a block at a time, whatever their names.

Streams with many distinct feature names (hashed bag-of-words, ids) rarely repeat a shared
line's names, so `vw_encode.AdfEncoder`'s templates, keyed by names, would be built once per
example. With hashing, a row's layout depends only on the shared line's *namespace initials*
(the first character of each feature's namespace, which is what ``-q`` matches) and on the
action lines: the layout is built once per such pair by running the reference
`vw_features.flatten_adf` on symbolic shared features, so every key of a row is a VW hash
of the shared features' hashes ``H`` (``H[i]``, ``cross(H[i], c)``, ``cross(c, H[j])``,
``cross(H[i], H[j])``, or a constant ``c`` of the action lines) and every value ``coef *
s[i] * s[j]`` of their values. The compiled tokenizer (``_scan.hashes``) gives ``H`` and
``s`` for the whole block; the compiled ``_scan.layout_fill`` then writes each layout's
rows into the block.

Columns are registered in example order (one ``columns`` call for the block), so the
numbering does not depend on how the stream is cut into blocks.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from regcb_stream.io.hashing import FNV_PRIME

try:
    from regcb_stream.io import _scan  # (the rows' values of a block in one pass)
except ImportError:  # not built: numpy's
    _scan = None
from regcb_stream.io.vw_features import DEFAULT_NS, HashKeys, Namespaces, flatten_adf

_FNV = np.uint64(FNV_PRIME)


class _Shared(NamedTuple):
    """A symbolic key: ``H[i]`` (``j`` None, ``c`` None), or the cross ``cross(x, y)`` of
    ``x = H[i]`` or ``c`` and ``y = H[j]`` or ``c``."""

    i: int | None
    j: int | None = None
    c: int | None = None
    cross: bool = False


class _SymbolicKeys(HashKeys):
    """`HashKeys` where the shared features are placeholders: their names are their
    positions ``i`` in the shared line (ints), their keys ``_Shared(i)``."""

    def features(self, namespace: str, feats: tuple) -> tuple:
        if feats and isinstance(feats[0][0], int):
            return tuple((_Shared(i), value) for i, value in feats)
        return super().features(namespace, feats)

    @staticmethod
    def cross(k1, k2):
        if not isinstance(k1, _Shared) and not isinstance(k2, _Shared):
            return HashKeys.cross(k1, k2)
        if (isinstance(k1, _Shared) and k1.cross) or (isinstance(k2, _Shared) and k2.cross):
            raise ValueError("a cross of a cross")  # -q is two namespaces: never
        i = k1.i if isinstance(k1, _Shared) else None
        j = k2.i if isinstance(k2, _Shared) else None
        constant = k2 if j is None else k1 if i is None else None
        return _Shared(i, j, constant, cross=True)


class Layout(NamedTuple):
    """The rows ``(K, L)`` of one (shared initials, action lines) pair: each entry's key is
    ``x1`` or ``cross(x1, x2)`` (``cross``) with ``x = hx[:, source]``, the shared hashes
    followed by the layout's constants; its value ``coef * s[first] * s[second]``."""

    source1: np.ndarray
    source2: np.ndarray
    cross: np.ndarray
    constants: np.ndarray
    coef: np.ndarray
    first: np.ndarray
    second: np.ndarray
    present: np.ndarray  # False: padding


def make_layout(initials: bytes, actions: tuple, interactions: tuple, slot_of,
                filters: Namespaces | None = None) -> Layout:
    """The layout of examples whose shared features have these namespace ``initials``
    (``slot_of``: the `vw_encode._Slot` type of symbolic values; ``filters``: VW's
    namespace filters, whose dropped features no entry reads)."""
    namespaces, start = [], 0
    for end in range(1, len(initials) + 1):  # runs of one initial: one namespace each
        if end == len(initials) or initials[end] != initials[start]:
            name = chr(initials[start])
            feats = tuple((i, slot_of(1.0, i + 1)) for i in range(start, end))
            namespaces.append((DEFAULT_NS if name == " " else name, feats))
            start = end
    rows = flatten_adf(tuple(namespaces), actions, interactions, False, _SymbolicKeys(),
                       filters=filters)
    width = max([len(row) for row in rows] + [1])
    constants: dict[int, int] = {}
    n = len(initials)
    shape = (len(rows), width)
    s1, s2 = np.full(shape, -1, np.intp), np.full(shape, -1, np.intp)  # padding: the last
    cross, present = np.zeros(shape, bool), np.zeros(shape, bool)
    coef, first, second = np.zeros(shape), np.zeros(shape, np.intp), np.zeros(shape, np.intp)
    for r, row in enumerate(rows):
        for c, (key, value) in enumerate(row.items()):
            value = slot_of.of(value)
            coef[r, c], first[r, c], second[r, c] = value.coef, value.first, value.second
            present[r, c] = True
            s2[r, c] = s1[r, c] = 0  # (set below)
            if not isinstance(key, _Shared):
                s1[r, c] = n + constants.setdefault(key, len(constants))
            elif not key.cross:
                s1[r, c] = key.i
            else:
                cross[r, c] = True
                s1[r, c] = key.i if key.i is not None else source_of(key.c, n, constants)
                s2[r, c] = key.j if key.j is not None else source_of(key.c, n, constants)
    return Layout(s1, s2, cross, np.array(list(constants), np.uint64), coef, first, second,
                  present)


def source_of(constant: int, n: int, constants: dict) -> int:
    """The column of ``hx`` holding a layout's constant."""
    return n + constants.setdefault(constant, len(constants))


def layout_rows(layout: Layout, hashes: np.ndarray, values: np.ndarray,
                lead: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Keys (unmasked, uint64) and values ``(m, K, L)`` of ``m`` examples of one layout from
    their shared hashes and values ``(m, n)`` (hashes ``(1, n)``: the same for all, keys
    ``(1, K, L)``); with ``lead``, the values ``(m, K, L + 1)``: each row's first entry
    ``lead``, then its own. ``_scan.layout_fill`` computes the same rows in place, row by
    row; ``_scan.layout_values`` the values, the products in numpy's order."""
    m = len(hashes)
    hx = np.hstack([hashes.astype(np.uint64), np.broadcast_to(layout.constants, (
        m, len(layout.constants))), np.zeros((m, 1), np.uint64)])  # (a column for padding)
    x1, x2 = hx[:, layout.source1], hx[:, layout.source2]
    keys = np.where(layout.cross, (x1 * _FNV) ^ x2, x1)
    k, width = layout.coef.shape
    if _scan is None:
        s = np.hstack([np.ones((len(values), 1)), values])
        value = layout.coef * s[:, layout.first] * s[:, layout.second]
        return keys, value if lead is None else np.concatenate(
            [np.full((len(values), k, 1), lead), value], axis=-1)
    out = np.empty((len(values), k, width + (lead is not None)))
    _scan.layout_values(*(np.ascontiguousarray(a, dtype) for a, dtype in (
        (layout.coef, float), (layout.first, np.int64), (layout.second, np.int64),
        (values, float))), *values.shape, out, *(() if lead is None else (width, lead)))
    return keys, out


def stack_layouts(layouts: list[Layout], n: int) -> Layout:
    """One-row layouts of shared lines with ``n`` tokens as the rows of one layout (each
    one's constants renumbered after those of the layouts before it)."""
    width = max(layout.source1.shape[1] for layout in layouts)
    shape = (len(layouts), width)
    out = {name: np.full(shape, -1 if name.startswith("source") else 0,
                         getattr(layouts[0], name).dtype)
           for name in Layout._fields if name != "constants"}
    offset = 0
    for r, layout in enumerate(layouts):
        w = layout.source1.shape[1]
        for name, column in out.items():
            row = getattr(layout, name)[0]
            if name.startswith("source"):
                row = np.where(row >= n, row + offset, row)  # (-1: padding)
            column[r, :w] = row
        offset += len(layout.constants)
    constants = np.concatenate([layout.constants for layout in layouts]).astype(np.uint64)
    return Layout(constants=constants, **out)


class Catalogue:
    """The one-row layouts of the actions met with shared lines of ``n`` tokens of one set
    of namespace initials, stacked as the rows of one layout (stacked again when actions
    are added): rows of changing action sets then cost one vectorized pass per block."""

    def __init__(self, n: int):
        self.n = n
        self.rows: dict[int, int] = {}  # id of an action (kept in .actions) -> its row
        self.actions: list[tuple] = []
        self.layouts: list[Layout] = []
        self._stacked: Layout | None = None

    def row(self, action: tuple, make) -> int | None:
        """The action's row (its layout from ``make()`` the first time; None: no layout).
        Actions are known by identity (readers give a repeated action line the same
        object; an equal one read again takes a row of its own, with the same layout)."""
        r = self.rows.get(id(action))
        if r is None:
            layout = make()
            if layout is None:
                return None
            r = self.rows[id(action)] = len(self.layouts)
            self.actions.append(action)  # (its id stays its own)
            self.layouts.append(layout)
            self._stacked = None
        return r

    @property
    def stacked(self) -> Layout:
        if self._stacked is None:
            self._stacked = stack_layouts(self.layouts, self.n)
        return self._stacked
