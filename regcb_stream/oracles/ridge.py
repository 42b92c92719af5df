"""Exact ridge regression (recursive least squares) with closed-form version-space bounds."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from regcb_stream.bounds import ellipsoid_bounds
from regcb_stream.oracles.base import SparseRows

try:
    from regcb_stream import _ridge
except ImportError:  # not built (a source tree without `pip install`): the numpy reference
    _ridge = None

ONE_THREAD_FROM = 128  # dimension from which an inverse is limited to one BLAS thread


class RidgeOracle:
    """Ridge regression per model, with the version space as an ellipsoid.

    The regularized squared loss of ``theta`` exceeds its minimum by exactly
    ``(theta - theta_hat)^T A (theta - theta_hat)`` with ``A = l2 I + sum w x x^T``, so
    the extreme predictions over the version space are ``theta_hat^T x +- sqrt(budget
    x^T A^-1 x)``, in closed form. The penalty shrinks every prediction toward ``prior``
    (ridge on ``y - prior``). Learning adds to the sufficient statistics ``A`` and
    ``b = sum w (y - prior) x``. A rebuild brings the inverse of ``A`` up to date for the
    models that learned since the last one: by Sherman-Morrison rank-one updates when few
    labels are pending (O(D^2) each, so rebuilding after every label is cheap), by a fresh
    inverse when many are (and every ``max(64, D)`` rank-one updates, against rounding
    drift). Rows are sparse (``SparseRows``; a dense row is the case of every column): a
    row's moments cost O(nonzeros^2), its learning O(nonzeros^2) and its rank-one update
    O(D^2), in the compiled kernels of ``regcb_stream/_ridge.c`` (``compiled``); the numpy
    code beside them is their reference.

    Parameters
    ----------
    l2
        Ridge penalty (the paper uses scikit-learn's ``Ridge(alpha=1)``): with ``prior``,
        how many observations the prior is worth.
    prior
        The prediction the penalty shrinks toward, which is also the prediction for an
        action never played: a number, or ``"optimistic"`` for the top of the learner's
        reward range (optimistic initialization, what VW does with costs in [0, 1]: it
        starts every prediction at cost 0). 0 by default, the paper's oracle.

    Examples
    --------
    >>> oracle = RidgeOracle(l2=1.0)
    >>> oracle.grow(n_models=1, dim=2)
    >>> for x, y in [([1.0, 0.0], 1.0), ([1.0, 1.0], 0.0)] * 5:
    ...     oracle.learn(np.array(x), 0, y)
    >>> oracle.rebuild()
    >>> phi = np.array([[[1.0, 0.0]]])
    >>> oracle.predict(phi, np.array([0])).round(3)
    array([[0.732]])
    >>> _, low, high = oracle.bounds(phi, np.array([0]), budget=1.0)
    >>> float(low[0, 0].round(3)), float(high[0, 0].round(3))
    (0.349, 1.114)

    An optimistic prior predicts the top of the reward range until data says otherwise:

    >>> optimist = RidgeOracle(l2=10.0, prior="optimistic")
    >>> optimist.grow(n_models=2, dim=2)
    >>> for _ in range(10):
    ...     optimist.learn(np.array([1.0, 0.0]), 0, 0.0)
    >>> optimist.rebuild()
    >>> optimist.predict(phi, np.array([0, 1])).round(3)
    array([[0.5, 1. ]])

    """

    reward_range: tuple[float, float] = (0.0, 1.0)  # replaced by the learner's
    sparse_rows = True  # ``predict`` and ``bounds`` also take ``SparseRows``
    compiled = _ridge is not None  # False: the numpy reference (tests compare the two)

    def __init__(self, l2: float = 1.0, prior: float | str = 0.0):
        if not (isinstance(l2, (int, float, np.number)) and 0 < l2 < np.inf):
            raise ValueError(f"l2 must be a finite number > 0, got {l2!r}")
        if prior != "optimistic" and not (
            isinstance(prior, (int, float, np.number)) and np.isfinite(prior)
        ):
            raise ValueError(f"prior must be a finite number or 'optimistic', got {prior!r}")
        self.l2 = l2
        self.prior = prior
        self._a = np.zeros((0, 0, 0))  # l2 I + sum w x x^T
        self._b = np.zeros((0, 0))  # sum w (y - prior) x
        self._a_inv = np.zeros((0, 0, 0))  # frozen decision state
        self._theta = np.zeros((0, 0))
        self._pending: dict[int, list | None] = {}  # model -> rank-one updates, None: many
        self._updates = np.zeros(0, dtype=np.int64)  # rank-one updates since a fresh inverse

    @property
    def n_models(self) -> int:
        return self._b.shape[0]

    @property
    def dim(self) -> int:
        return self._b.shape[1]

    def grow(self, n_models: int, dim: int) -> None:
        """Add empty models and unseen features (their data so far counts as zeros)."""
        m0, d0 = self._b.shape
        m, d = max(n_models, m0), max(dim, d0)
        if (m, d) == (m0, d0):
            return
        eye = np.eye(d)
        self._a = _pad(self._a, (m, d, d), self.l2 * eye)
        self._a_inv = _pad(self._a_inv, (m, d, d), eye / self.l2)
        self._b = _pad(self._b, (m, d), 0.0)
        self._theta = _pad(self._theta, (m, d), 0.0)
        self._updates = np.r_[self._updates, np.zeros(m - m0, dtype=np.int64)]
        for model in self._pending:
            self._pending[model] = None

    @property
    def prior_mean(self) -> float:
        """The prediction the penalty shrinks toward (``prior`` resolved)."""
        return self.reward_range[1] if self.prior == "optimistic" else float(self.prior)

    @property
    def refresh_every(self) -> int:
        """Rank-one updates of a model's inverse between two fresh inverses."""
        return max(64, self.dim)

    def learn(self, x, model: int, y: float, weight: float = 1.0) -> None:
        """Add one example to the sufficient statistics of ``model``: ``x`` a dense row
        ``(D,)`` or an ``(index, value)`` pair of 1-D arrays."""
        index, value = _sparse_row(x, self.dim)
        residual = y - self.prior_mean
        if self.compiled:
            _ridge.learn(self._a, self._b, model, index, value, len(value), self.dim,
                         weight, residual)
        elif index.size:
            self._a[model][np.ix_(index, index)] += weight * np.outer(value, value)
            np.add.at(self._b[model], index, weight * residual * value)
        else:
            self._a[model] += weight * np.outer(value, value)
            self._b[model] += weight * residual * value
        pending = self._pending.setdefault(model, [])
        if pending is not None:
            if 4 * (len(pending) + 1) <= self.dim:
                pending.append((index, value, weight, residual))
            else:  # the rebuild will invert afresh
                self._pending[model] = None

    def learn_many(self, x, models, y, weight) -> None:
        """``learn`` row by row: ``x`` dense ``(n, D)`` or ``SparseRows`` ``(n, 1, L)``."""
        if isinstance(x, SparseRows):
            rows = zip(x.index[:, 0], x.value[:, 0])
        else:
            rows = iter(x)
        for row, model, target, w in zip(rows, np.asarray(models).tolist(),
                                          np.asarray(y, float).tolist(),
                                          np.asarray(weight, float).tolist()):
            self.learn(row, model, target, w)

    def rebuild(self) -> None:
        """Solve the ridge problems of the models that learned since the last rebuild:
        by Sherman-Morrison rank-one updates of the inverse and of the solution when few
        labels are pending, by a fresh inverse when many are (and every ``max(64, D)``
        rank-one updates, against rounding drift)."""
        for model, pending in sorted(self._pending.items()):
            if pending is None or self._updates[model] >= self.refresh_every:
                self._invert(model)
                continue
            for index, value, weight, residual in pending:
                self._rank_one(model, index, value, weight, residual)
            self._updates[model] += len(pending)
        self._pending.clear()

    def _invert(self, model: int) -> None:
        """A fresh inverse and solution of one model (on one thread: BLAS threads make a
        large inverse several times slower on a small machine, and cost ~1 ms to limit)."""
        if self.dim >= ONE_THREAD_FROM:
            with threadpool_limits(1, "blas"):
                self._a_inv[model] = np.linalg.inv(self._a[model])
        else:
            self._a_inv[model] = np.linalg.inv(self._a[model])
        self._theta[model] = self._a_inv[model] @ self._b[model]
        self._updates[model] = 0

    def _rank_one(self, model: int, index, value, weight: float, residual: float) -> None:
        """Sherman-Morrison update of one model's inverse and solution by one row."""
        if self.compiled:
            return _ridge.rank_one(self._a_inv, self._theta, model, index, value, len(value),
                                   self.dim, weight, residual)
        a_inv, theta = self._a_inv[model], self._theta[model]
        spread = value @ _at(a_inv, index)
        gain = weight / (1.0 + weight * float(value @ _at(spread, index)))
        theta += (gain * (residual - float(value @ _at(theta, index)))) * spread
        a_inv -= np.multiply.outer(spread, gain * spread)

    def predict(self, phi, models) -> np.ndarray:
        """Frozen ridge predictions, shape ``(n, K)``."""
        return self.moments(phi, models)[0]

    def bounds(self, phi, models, budget):
        """Prediction and ``prediction -+ sqrt(budget * phi^T A^-1 phi)``, unclipped."""
        prediction, variance = self.moments(phi, models)
        return (prediction, *ellipsoid_bounds(prediction, variance, budget))

    def moments(self, phi, models):
        """Prediction and ``phi^T A^-1 phi`` per (context, action) of the frozen fit:
        ``phi`` dense ``(n, K, D)`` or ``SparseRows``, ``models`` ids ``(K,)`` or a slice."""
        index, value = _rows(phi)
        models = self._model_ids(models)
        (n, r, width), k = value.shape, len(models)
        if self.compiled:
            pred, var = np.empty((n, k)), np.empty((n, k))
            _ridge.moments(self._a_inv, self._theta, models, index, value, n, r, k, width,
                           self.dim, self.prior_mean, pred, var)
            return pred, var
        dense = value
        if index.size:
            dense = np.zeros((n, r, self.dim))
            np.add.at(dense, (np.arange(n)[:, None, None], np.arange(r)[:, None], index), value)
        dense = np.broadcast_to(dense, (n, k, self.dim))
        pred = np.einsum("nkd,kd->nk", dense, self._theta[models]) + self.prior_mean
        var = np.einsum("nkd,kde,nke->nk", dense, self._a_inv[models], dense)
        return pred, np.maximum(var, 0.0)

    def _model_ids(self, models) -> np.ndarray:
        """Model ids as a contiguous int64 array (from an array or a slice)."""
        if isinstance(models, slice):
            return np.arange(self.n_models, dtype=np.int64)[models]
        return np.ascontiguousarray(models, dtype=np.int64)

    def decisions(self, phi, models, budget: float, optimistic: bool,
                  reward_range: tuple[float, float], tolerance: float):
        """The decision rule's distributions (elimination, or ``optimistic``), predictions
        and clipped bounds of a block of rows under the frozen fit, ``(n, K)`` each, in
        the compiled loop (``budget`` NaN: uniform play)."""
        n = len(phi.value if isinstance(phi, SparseRows) else phi)
        unused = np.zeros(n)  # no labels: rewards and weights are not read
        return self._run(phi, models, np.full(n, -1, np.int64), unused, unused,
                         np.array([budget]), optimistic, reward_range, tolerance)

    def replay_online(self, phi, models, played, rewards, weights, budgets, optimistic: bool,
                      reward_range: tuple[float, float], tolerance: float):
        """Decide and learn a block of logged examples in order, rebuilding after every
        label (the ``online`` schedule), in the compiled loop.

        ``played[i]``: the column learned after example ``i``'s decision (-1: none),
        ``budgets[j]``: the budget after ``j`` more labels (NaN: uniform play). Returns the
        distributions, predictions and clipped bounds, ``(n, K)`` each."""
        self.rebuild()  # nothing may be pending when the loop starts
        return self._run(phi, models, np.ascontiguousarray(played, dtype=np.int64),
                         np.ascontiguousarray(rewards, dtype=float),
                         np.ascontiguousarray(weights, dtype=float),
                         np.ascontiguousarray(budgets, dtype=float), optimistic,
                         reward_range, tolerance)

    def _run(self, phi, models, played, rewards, weights, budgets, optimistic, reward_range,
             tolerance):
        index, value = _rows(phi)
        models = self._model_ids(models)
        (n, r, width), k = value.shape, len(models)
        out = [np.empty((n, k)) for _ in range(4)]
        start = 0
        while start < n:
            start, learned, stale = _ridge.run_online(
                self._a, self._b, self._a_inv, self._theta, self._updates, models, index,
                value, played, rewards, weights, budgets, *out, start, n, r, k, width,
                self.dim, optimistic, self.refresh_every, self.prior_mean, *reward_range,
                tolerance)
            budgets = budgets[learned:]
            if stale >= 0:
                self._invert(stale)
        return tuple(out)


def _rows(phi) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous ``(index, value)`` for the kernels: ``value`` of shape ``(n, R, L)``, with
    ``R = 1`` when every action shares the row (the product class's broadcast view), else
    ``R = K``; ``index`` of the same shape, or empty for dense rows (every column, in
    order)."""
    if isinstance(phi, SparseRows):
        index, value = phi.index, phi.value
        if index.shape[1] > 1 and index.strides[1] == 0 and value.strides[1] == 0:
            index, value = index[:, :1], value[:, :1]
        return np.ascontiguousarray(index, np.int64), np.ascontiguousarray(value, float)
    value = phi[:, :1] if phi.shape[1] > 1 and phi.strides[1] == 0 else phi
    return _DENSE, np.ascontiguousarray(value, float)


def _at(vector: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``vector`` at a row's columns (all of them for a dense row)."""
    return vector[index] if index.size else vector


_DENSE = np.zeros(0, dtype=np.int64)  # the index of dense rows


def _sparse_row(x, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(index, value)`` of a row given as a pair, or dense (an empty index)."""
    if isinstance(x, tuple):
        index, value = x
        return (np.ascontiguousarray(index, dtype=np.int64),
                np.ascontiguousarray(value, dtype=float))
    return _DENSE, np.ascontiguousarray(x, dtype=float)


def _pad(array: np.ndarray, shape: tuple[int, ...], fill) -> np.ndarray:
    """``array`` enlarged to ``shape``, new entries (models, features) set from ``fill``."""
    out = np.zeros(shape)
    out[...] = fill
    if array.size:
        out[tuple(slice(0, n) for n in array.shape)] = array
    return out
