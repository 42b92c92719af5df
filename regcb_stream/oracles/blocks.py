"""The joint model's inverse kept in blocks, for rows with an arrowhead structure.

VW's ``-q`` crosses of a shared line with action lines give rows that touch the shared
columns and the columns of one action: kept that way, a label costs O(s^2 + b^2 + s b)
for s shared columns and groups of b instead of O(D^2) (``_ridge.c`` has the algebra).
"""

from __future__ import annotations

import numpy as np

from regcb_stream.state import Stateful


class ArrowheadBlocks(Stateful):
    """The joint model's columns split into shared ones and groups, such that every row
    touches the shared columns and at most one group, and its inverse kept in blocks
    (``_ridge.c`` has the algebra): VW's ``-q`` crosses of a shared line with action lines
    give this structure (each action's features and crosses are a group), and a label then
    costs O(s^2 + b^2 + s b) for s shared columns and groups of b, instead of O(D^2).

    A column becomes shared once it appears in two rows of one example; the other columns
    of a row are put in one group (merging groups when a row joins them)."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "kind": "kind",
        "arrays": "arrays",
        "transposed": "transposed",
    }
    ADDED = {"transposed": False}  # (model files of before: each group's C^-1 by rows)

    def __init__(self, dim: int):
        self.kind = np.full(dim, -2, np.int64)  # -2 unseen, -1 shared, >= 0 its group
        self.arrays: tuple = ()
        self.transposed = True  # each group's C^-1 kept transposed (the kernels read columns)

    def restored(self) -> None:
        if not self.transposed and self.arrays:
            start, c_off, c_inv = self.arrays[2], self.arrays[5], self.arrays[6].copy()
            for lo, hi, size in zip(c_off[:-1].tolist(), c_off[1:].tolist(),
                                    np.diff(start).tolist()):
                c_inv[lo:hi] = c_inv[lo:hi].reshape(size, size).T.ravel()
            self.arrays = (*self.arrays[:6], c_inv, *self.arrays[7:])
        self.transposed = True

    def grow(self, dim: int) -> ArrowheadBlocks:
        """Unseen columns added (to the built blocks too: a row with one is refitted)."""
        extra = dim - len(self.kind)
        self.kind = np.r_[self.kind, np.full(extra, -2, np.int64)]
        if self.arrays:
            kind, pos, *rest = self.arrays
            self.arrays = (np.r_[kind, np.full(extra, -2, np.int64)],
                           np.r_[pos, np.zeros(extra, np.int64)], *rest)
        return self

    def take(self, index: np.ndarray, value: np.ndarray) -> bool:
        """Take in the columns of rows ``(n, K, L)``; whether the partition changed."""
        kind, changed = self.kind, False
        present = value != 0
        cols = index[present]
        examples = np.broadcast_to(np.arange(len(index))[:, None, None], index.shape)[present]
        keys, counts = np.unique(examples * len(kind) + cols, return_counts=True)
        shared = distinct(keys[counts > 1] % len(kind))
        shared = shared[kind[shared] != -1]
        if shared.size:
            kind[shared], changed = -1, True
        groups = np.where(present, kind[index], -1)
        own = groups != -1
        low = np.where(own, groups, np.iinfo(np.int64).max).min(axis=2)
        high = np.where(own, groups, -3).max(axis=2)
        misfits = own.any(axis=2) & ((low != high) | (low < 0))
        if not misfits.any():
            return changed
        labels = kind.tolist()
        fresh = max(labels) + 1
        for row in distinct_rows(np.where(present, index, -1)[misfits]).tolist():
            columns = [c for c in row if c >= 0 and labels[c] != -1]
            ids = {labels[c] for c in columns} - {-2}
            if len(ids) == 1 and -2 not in {labels[c] for c in columns}:
                continue  # fitted by an earlier row
            target = min(ids) if ids else fresh
            fresh += not ids
            if len(ids) > 1:  # the row joins groups
                labels = [target if label in ids else label for label in labels]
            for c in columns:
                labels[c] = target
        kind[:] = labels
        return True

    def fits(self, index: np.ndarray, value: np.ndarray) -> bool:
        """Whether one row touches the shared columns and at most one group."""
        kinds = set(self.kind[index[value != 0]].tolist()) - {-1}
        return len(kinds) == 0 or (len(kinds) == 1 and kinds.pop() >= 0)

    def worth_it(self) -> bool:
        """Whether the blocks are much smaller than the dense inverse."""
        s = int((self.kind == -1).sum())
        sizes = np.bincount(self.kind[self.kind >= 0])
        return int((sizes**2).sum()) + s * s + s * int(sizes.sum()) <= len(self.kind) ** 2 / 4

    def holds(self, a: np.ndarray, b: np.ndarray) -> bool:
        """Whether the data learned so far has the structure: no Gram entry between two
        groups, and no data on an unassigned column (rows learned before the blocks)."""
        kind = self.kind
        unseen = np.flatnonzero(kind == -2)
        grouped = kind >= 0
        cross = grouped[:, None] & grouped & (kind[:, None] != kind)
        off = a[unseen]  # (a copy) the unassigned columns' rows, without the diagonal
        off[np.arange(len(unseen)), unseen] = 0.0
        return not (a[cross].any() or off.any() or b[unseen].any())

    def build(self, a: np.ndarray, b: np.ndarray) -> None:
        """The blocks afresh from the Gram matrix ``a`` and ``b`` of the model."""
        kind = self.kind
        shared = np.flatnonzero(kind == -1)
        _, kind[kind >= 0] = np.unique(kind[kind >= 0], return_inverse=True)  # 0..J-1
        grouped = np.flatnonzero(kind >= 0)
        order = grouped[np.argsort(kind[grouped], kind="stable")]
        sizes = np.bincount(kind[order], minlength=int(kind.max(initial=-1)) + 1)
        start = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        pos = np.zeros(len(kind), np.int64)
        pos[shared] = np.arange(len(shared))
        pos[order] = np.arange(len(order)) - start[kind[order]]
        c_off = np.r_[0, np.cumsum(sizes**2)].astype(np.int64)
        c_inv, f, h = np.empty(c_off[-1]), np.empty((len(order), len(shared))), np.empty(len(order))
        sigma, rhs = a[np.ix_(shared, shared)].copy(), b[shared].copy()
        for j, (lo, hi) in enumerate(zip(start[:-1].tolist(), start[1:].tolist())):
            cols = order[lo:hi]
            inverse = np.linalg.inv(a[np.ix_(cols, cols)])
            across = a[np.ix_(cols, shared)]
            c_inv[c_off[j]:c_off[j + 1]] = inverse.T.ravel()
            f[lo:hi], h[lo:hi] = inverse @ across, inverse @ b[cols]
            sigma -= across.T @ f[lo:hi]
            rhs -= across.T @ h[lo:hi]
        s_inv = np.linalg.inv(sigma)
        self.arrays = (kind.copy(), pos, start, order.astype(np.int64), shared.astype(np.int64),
                       c_off, c_inv, f.ravel(), h, s_inv, s_inv @ rhs)


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``, asked for the counts too: without any of its optional
    outputs, np.unique imports numpy.ma (~7 ms of the command's start-up)."""
    return np.unique(values, return_counts=True)[0]


def distinct_rows(rows: np.ndarray) -> np.ndarray:
    """The distinct rows of an integer array ``(n, w)``, in lexicographic order, as
    ``np.unique(rows, axis=0)`` gives them (by integer sorts: its sort of rows as records
    took ~7 ms for the 1,664 rows of a first block of 64 examples of 26 actions).

    >>> distinct_rows(np.array([[2, 1], [0, 5], [2, 1]])).tolist()
    [[0, 5], [2, 1]]
    """
    ordered = rows[np.lexsort(rows.T[::-1])]
    return ordered[np.r_[True, (ordered[1:] != ordered[:-1]).any(axis=1)]]


FIRST_ROWS = 64  # the examples whose rows decide the blocks (a later row outside them refits)


class BlockedInverse:
    """A `RidgeOracle`'s use of `ArrowheadBlocks`: one joint model's inverse kept in
    blocks while its rows have the structure (``_blocks``; ``_tried_blocks`` once the
    first joint rows decided it)."""

    def _block_arrays(self, index: np.ndarray, value: np.ndarray) -> None:
        """Keep one model's inverse in blocks when its rows ``(n, K, L)`` have the
        arrowhead structure (see ``_Blocks``): the first joint rows decide it. The kernels
        say when a later row does not fit (``_fit_blocks``)."""
        if (self._blocks is None and self.compiled and self.n_models == 1 and index.size
                and not self.piecewise and not self._pending and self.dim > 16
                and not self._tried_blocks):
            self._tried_blocks = True
            self._blocks = ArrowheadBlocks(self.dim)
            self._fit_blocks(index, value)

    def _fit_blocks(self, index: np.ndarray, value: np.ndarray) -> None:
        """Take in the columns of joint rows (the first `FIRST_ROWS` examples': the time
        and memory of a whole block's would grow with it); rebuild the blocks of the frozen
        fit, or fall back to the dense inverse for good if they no longer pay."""
        self._blocks.take(index[:FIRST_ROWS], value[:FIRST_ROWS])
        a, b = self._a[0], self._b[0]
        pending = self._pending.get(0) or []
        if pending:  # the statistics of the frozen fit: without the labels of this epoch
            a, b = a.copy(), b.copy()
            for cols, vals, weight, residual in pending:
                cols = cols if cols.size else np.arange(len(vals))
                np.add.at(a, (cols[:, None], cols), -weight * np.outer(vals, vals))
                np.add.at(b, cols, -weight * residual * vals)
        if self._blocks.worth_it() and self._blocks.holds(a, b):
            self._blocks.build(a, b)
        else:
            self._blocks = None
            self._a_inv[0] = np.linalg.inv(a)
            self._theta[0] = self._a_inv[0] @ b
            if pending:
                self._pending[0] = None
        self._updates[0] = 0
