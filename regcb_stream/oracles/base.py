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

Oracles that set ``sparse_input = True`` (those whose cost grows with the number of nonzero
features, not with D) receive ``SparseRows`` instead of ``phi`` and learn from an
``(index, value)`` pair of 1-D arrays instead of a dense ``x``: that is how contexts with
up to millions of distinct features are learned without a dense row ever being built.
Oracles that set ``sparse_rows = True`` take dense input but also accept ``SparseRows`` in
``predict`` and ``bounds``: the learner passes the joint class's rows that way.

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


class SparseRows(NamedTuple):
    """(context, action) feature rows as padded arrays: ``index`` and ``value`` of shape
    ``(n, K, L)`` (padding has value 0), for oracles with ``sparse_input`` or
    ``sparse_rows``."""

    index: np.ndarray
    value: np.ndarray
    dim: int

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.index.shape[0], self.index.shape[1], self.dim


def learn_row_by_row(oracle, x, models, y, weight) -> None:
    """``learn_many`` for oracles that learn one example at a time: ``learn`` on each row,
    in order (so a stream gives the same state however it is cut into blocks)."""
    for row, model, target, w in zip(x, np.asarray(models).tolist(), np.asarray(y).tolist(),
                                      np.asarray(weight).tolist()):
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
