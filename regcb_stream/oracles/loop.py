"""The compiled online loop's entry points, shared by the oracles that have one (ridge,
bounded ridge, VW's regressor), and rows as their kernels take them.

Each such oracle implements ``_loop`` over its kernels: for each row of a block, in order,
the decision under the frozen fit (distribution, prediction, clipped bounds), then the
row's label, if it has one, learned and the fit rebuilt (the ``online`` schedule).
"""

from __future__ import annotations

import numpy as np

from regcb_stream.explore.decision import Decision
from regcb_stream.features.encoder import one_if_repeated
from regcb_stream.features.rows import SparseRows
from regcb_stream.rules import Rule

DENSE = np.zeros(0, dtype=np.int64)  # the index of dense rows, as the kernels take it
_NO_LABEL, _UNUSED = np.full(1, -1, np.int64), np.zeros(1)  # one decision, no label


class OnlineLoop:
    """``decisions`` and ``replay_online`` over an oracle's ``_loop``."""

    one_example_index = False  # whether ``_loop`` takes one example's index for all

    def decisions(self, phi, models, budget: float, rule: Rule,
                  reward_range: tuple[float, float], tolerance: float):
        """The decision ``rule``'s distributions (`regcb_stream.rules.Rule`), predictions
        and clipped bounds of a block of rows under the frozen fit, ``(n, K)`` each (a
        `Decision`), in the compiled loop (``budget`` NaN: uniform play)."""
        n = len(phi.value if isinstance(phi, SparseRows) else phi)
        played, unused = (_NO_LABEL, _UNUSED) if n == 1 else (np.full(n, -1, np.int64),
                                                                np.zeros(n))
        return self._run(phi, models, played, unused, unused, np.array([budget]), rule,
                         reward_range, tolerance)  # (no labels: rewards, weights unread)

    def replay_online(self, phi, models, played, rewards, weights, budgets, rule: Rule,
                      reward_range: tuple[float, float], tolerance: float, **options):
        """Decide and learn a block of logged examples in order, rebuilding after every
        label (the ``online`` schedule), in the compiled loop.

        ``played[i]``: the column learned after example ``i``'s decision (-1: none),
        ``budgets[j]``: the budget after ``j`` more labels (NaN: uniform play); ``options``:
        the oracle's own (``_loop``'s). Returns the distributions, predictions and clipped
        bounds, ``(n, K)`` each (a `Decision`)."""
        self.rebuild()  # nothing may be pending when the loop starts
        return self._run(phi, models, np.ascontiguousarray(played, dtype=np.int64),
                         np.ascontiguousarray(rewards, dtype=float),
                         np.ascontiguousarray(weights, dtype=float),
                         np.ascontiguousarray(budgets, dtype=float), rule,
                         reward_range, tolerance, **options)

    def _run(self, phi, models, played, rewards, weights, budgets, rule, reward_range,
             tolerance, **options):
        index, value = kernel_rows(phi, self.one_example_index)
        models = self._model_ids(models)
        out = np.empty((5 if self.capabilities.widths else 4, len(value), len(models)))
        pmf, prediction, low, high, *variance = self._loop(
            index, value, models, played, rewards, weights, budgets, rule, reward_range,
            tolerance, out, **options)
        return Decision(pmf, prediction, low, high, variance=variance[0] if variance else None)

    def _model_ids(self, models) -> np.ndarray:
        """Model ids as a contiguous int64 array (from an array or a slice)."""
        if isinstance(models, slice):
            return np.arange(self.n_models, dtype=np.int64)[models]
        return np.ascontiguousarray(models, dtype=np.int64)


def kernel_rows(phi, one_example: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous ``(index, value)`` for the kernels: ``value`` of shape ``(n, R, L)``, with
    ``R = 1`` when every action shares the row (the product class's broadcast view), else
    ``R = K``; ``index`` of the same shape, or `DENSE` for dense rows (every column, in
    order); with ``one_example``, ``(1, R, L)`` where every example's is the same (a
    broadcast view)."""
    index, value = (phi.index, phi.value) if isinstance(phi, SparseRows) else (None, phi)
    if value.shape[1] > 1 and value.strides[1] == 0 and (index is None or index.strides[1] == 0):
        index, value = None if index is None else index[:, :1], value[:, :1]
    if one_example and index is not None:
        index = one_if_repeated(index)
    index = DENSE if index is None else np.ascontiguousarray(index, np.int64)
    return index, np.ascontiguousarray(value, float)


def kernel_row(x) -> tuple[np.ndarray, np.ndarray]:
    """``(index, value)`` of one row given as a pair, or dense (index `DENSE`)."""
    if isinstance(x, tuple):
        index, value = x
        return (np.ascontiguousarray(index, dtype=np.int64),
                np.ascontiguousarray(value, dtype=float))
    return DENSE, np.ascontiguousarray(x, dtype=float)
