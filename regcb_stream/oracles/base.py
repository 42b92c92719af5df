"""The oracle interface: an incremental regressor that also bounds its version space.

Inputs are feature arrays ``phi`` of shape ``(n, K, D)`` (row ``i``, action column ``k``:
the features of context ``i`` paired with the ``k``-th offered action) and ``models``, an
int array of shape ``(K,)`` naming the model that scores each column. The product class
(one model per action, the paper's Option I) passes the same context row for every
column, as a broadcast view that costs no memory (stride 0 along the action axis), and
``models = action ids`` (a ``slice`` when they are consecutive, so parameters can be taken
as views); the joint class (Option II, VW's ADF) passes per-action features and
``models = 0``.

Learning changes the live statistics only; the answers of ``predict`` and ``bounds`` come
from the decision state frozen at the last ``rebuild`` (the epoch boundary).

The learner keeps every block of rows as ``SparseRows`` (its one representation of
features, made once by the encoder) and hands them to each oracle as it takes them: as they
are to oracles with ``sparse_rows = True`` (ridge: dense rows are a fast case of its
kernels), with their columns to oracles with ``sparse_input = True`` (those whose cost grows
with the number of nonzero features, not with D; they learn from ``(index, value)`` pairs:
that is how contexts with up to millions of distinct features are learned without a dense
row ever being built), and as dense ``phi`` to the others.

Ellipsoid oracles (ridge, the trees' leaf ridge) also have ``moments(phi, models)``: the
prediction and ``phi^T A^-1 phi``, whose square root times ``sqrt(budget)`` is the bounds'
half-width. The automatic budget derives every candidate's bounds from one such call,
instead of calling ``bounds`` once per candidate.

Oracles whose bounds depend on the reward range (sensitivity rules place fake labels one
beyond each end) have a ``reward_range`` attribute; the learner sets it to its own.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from regcb_stream.bounds import ellipsoid_bounds


class MemoryLimitError(ValueError):
    """An oracle's statistics would outgrow the memory limit it was given."""


class SparseRows(NamedTuple):
    """Feature rows, the learner's one representation: padded ``index`` and ``value``
    arrays of shape ``(n, R, L)`` (padding has value 0), or ``index`` None for dense rows
    (``L = D``, every column in order). ``R`` is the actions' rows (K for the joint class;
    the product class's K actions share one context row, a broadcast view of stride 0) or
    1 for learned rows.

    >>> rows = SparseRows(np.array([[[2, 0]]]), np.array([[[0.5, 1.0]]]), dim=3)
    >>> rows.dense().tolist(), rows.shape
    ([[[1.0, 0.0, 0.5]]], (1, 1, 3))
    """

    index: np.ndarray | None
    value: np.ndarray
    dim: int

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.value.shape[0], self.value.shape[1], self.dim

    def __len__(self) -> int:
        return len(self.value)

    def take(self, rows) -> SparseRows:
        """The rows at ``rows`` (a slice or indices) of the first axis."""
        index = None if self.index is None else self.index[rows]
        return SparseRows(index, self.value[rows], self.dim)

    def dense(self) -> np.ndarray:
        """The rows as a dense ``(n, R, D)`` array (a broadcast view stays one)."""
        n, r, width = self.value.shape
        shared = r > 1 and self.value.strides[1] == 0
        value = self.value[:, :1] if shared else self.value
        if self.index is None:
            out = np.zeros(value.shape[:2] + (self.dim,))
            out[..., :width] = value
        else:
            index = self.index[:, :1] if shared else self.index
            out = np.zeros(value.shape[:2] + (self.dim,))
            np.add.at(out, (np.arange(len(out))[:, None, None],
                            np.arange(out.shape[1])[:, None], index), value)
        return np.broadcast_to(out, (n, r, self.dim)) if shared else out

    def explicit(self) -> SparseRows:
        """The rows with their columns given (dense rows: every column)."""
        if self.index is not None:
            return self
        return SparseRows(np.broadcast_to(np.arange(self.value.shape[2]), self.value.shape),
                          self.value, self.dim)

    def pairs(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The nonzero ``(index, value)`` of each row of rows ``(n, 1, L)``."""
        rows = self.explicit()
        return [(index[value != 0], value[value != 0])
                for index, value in zip(rows.index[:, 0], rows.value[:, 0])]


class Ellipsoid:
    """``predict`` and ``bounds`` of an ellipsoid oracle, from its ``moments`` (prediction
    and ``phi^T A^-1 phi``): the extremes over the version space are ``prediction -+
    sqrt(budget phi^T A^-1 phi)``."""

    def predict(self, phi, models) -> np.ndarray:
        """Frozen predictions, shape ``(n, K)``."""
        return self.moments(phi, models)[0]

    def bounds(self, phi, models, budget):
        """Prediction and ``prediction -+ sqrt(budget * phi^T A^-1 phi)``, unclipped."""
        prediction, variance = self.moments(phi, models)
        return (prediction, *ellipsoid_bounds(prediction, variance, budget))


def learn_row_by_row(oracle, x, models, y, weight) -> None:
    """``learn_many`` for oracles that learn one example at a time: ``learn`` on each row,
    in order (so a stream gives the same state however it is cut into blocks); ``x`` rows
    ``(n, D)``, ``(index, value)`` pairs, or ``SparseRows`` ``(n, 1, L)``."""
    if isinstance(x, SparseRows):
        x = x.value[:, 0] if x.index is None else zip(x.index[:, 0], x.value[:, 0])
    for row, model, target, w in zip(x, np.asarray(models).tolist(),
                                      np.asarray(y, float).tolist(),
                                      np.asarray(weight, float).tolist()):
        oracle.learn(row, model, target, w)


@runtime_checkable
class Oracle(Protocol):
    """What the learner needs from a regression oracle."""

    def grow(self, n_models: int, dim: int) -> None:
        """Make room for ``n_models`` models over ``dim`` features (new ones start empty)."""

    def learn(self, x: np.ndarray, model: int, y: float, weight: float = 1.0) -> None:
        """Learn one labelled example ``x`` (shape ``(D,)``) for ``model``."""

    def learn_many(
        self, x: np.ndarray, models: np.ndarray, y: np.ndarray, weight: np.ndarray
    ) -> None:
        """Learn a block of examples at once; same result as ``learn`` row by row."""

    def rebuild(self) -> None:
        """Epoch boundary: freeze the current fit as the decision state."""

    def predict(self, phi: np.ndarray, models: np.ndarray) -> np.ndarray:
        """Predictions of the frozen fit, shape ``(n, K)``."""

    def bounds(
        self, phi: np.ndarray, models: np.ndarray, budget: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Prediction, and lowest and highest prediction over the version space, unclipped,
        ``(n, K)`` each.

        The version space holds the regressors whose summed squared loss on the data
        seen before the last rebuild (plus the regressor's own penalty, for regularized
        oracles such as ridge) exceeds the minimum by at most ``budget``.
        """
