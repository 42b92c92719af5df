"""Exact ridge regression (recursive least squares) with closed-form version-space bounds."""

from __future__ import annotations

import numpy as np

from regcb_stream.bounds import ellipsoid_bounds
from regcb_stream.oracles.base import SparseRows, learn_row_by_row


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
    drift). Sparse feature rows (``SparseRows``: VW's ADF features) gather only their
    nonzero block of ``A^-1``, once per distinct set of columns in a block of rows (a
    stream repeats its action lines, so an epoch of ADF decisions is a few matrix products).

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

    def __init__(self, l2: float = 1.0, prior: float | str = 0.0):
        if not (isinstance(l2, (int, float, np.number)) and 0 < l2 < np.inf):
            raise ValueError(f"l2 must be a finite number > 0, got {l2!r}")
        if prior != "optimistic" and not (
            isinstance(prior, (int, float, np.number)) and np.isfinite(prior)
        ):
            raise ValueError(f"prior must be a finite number or 'optimistic', got {prior!r}")
        self.l2 = l2
        self.prior = prior
        self._a = np.zeros((0, 0, 0))  # l2 I + sum w x x^T, but for the unfolded rows
        self._b = np.zeros((0, 0))  # sum w (y - prior) x
        self._a_inv = np.zeros((0, 0, 0))  # frozen decision state
        self._theta = np.zeros((0, 0))
        self._unfolded: dict[int, list] = {}  # model -> (x, w) rows not yet added to _a
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
        for model in list(self._unfolded):  # rows are shorter than the new dimension
            self._fold(model)
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

    def learn(self, x: np.ndarray, model: int, y: float, weight: float = 1.0) -> None:
        """Add one example to the sufficient statistics of ``model``."""
        residual = y - self.prior_mean
        self._b[model] += (weight * residual) * x
        self._unfolded.setdefault(model, []).append((x, weight))
        pending = self._pending.setdefault(model, [])
        if pending is not None:
            pending.append((x, weight, residual))

    def learn_many(self, x, models, y, weight) -> None:
        """Add a block of examples: one matrix product per model (the same statistics as
        ``learn`` row by row, up to rounding). ``x`` may be ``SparseRows`` of shape ``(n, 1,
        L)``: one model's rows are then added one small product per column pattern."""
        if isinstance(x, SparseRows):
            index, value = x.index[:, 0], x.value[:, 0]
            if self._learn_patterns(index, value, models, y, weight):
                return
            x = np.zeros((len(index), self.dim))
            np.add.at(x, (np.arange(len(index))[:, None], index), value)
        if len(x) < 8:
            return learn_row_by_row(self, x, models, y, weight)
        models, weight = np.asarray(models), np.asarray(weight, dtype=float)
        wx = weight[:, None] * x
        residual = np.asarray(y, dtype=float) - self.prior_mean
        for model in np.unique(models).tolist():
            pick = np.flatnonzero(models == model)
            self._fold(model)
            self._a[model] += wx[pick].T @ x[pick]
            self._b[model] += residual[pick] @ wx[pick]
            pending = self._pending.setdefault(model, [])
            if pending is not None and 4 * (len(pending) + len(pick)) <= self.dim:
                self._unfolded[model] = []  # already in _a
                pending.extend(zip(x[pick], weight[pick].tolist(), residual[pick].tolist()))
            else:  # the rebuild will invert afresh
                self._pending[model] = None

    def _learn_patterns(self, index, value, models, y, weight) -> bool:
        """Add sparse rows of one model to its Gram matrix per column pattern, when they
        share few patterns and are too many for rank-one updates; False otherwise."""
        models = np.asarray(models)
        model = int(models[0])
        pending = self._pending.get(model, [])
        if (pending is not None and 4 * (len(pending) + len(index)) <= self.dim) or not (
                models == model).all():
            return False
        patterns = _patterns(index)
        if patterns is None:
            return False
        self._fold(model)
        weight = np.asarray(weight, dtype=float)
        residual = np.asarray(y, dtype=float) - self.prior_mean
        for first, members in patterns:
            cols, rows = index[first], value[members]
            weighted = weight[members, None] * rows
            np.add.at(self._a[model], (cols[:, None], cols[None, :]), weighted.T @ rows)
            np.add.at(self._b[model], cols, residual[members] @ weighted)
        self._pending[model] = None  # the rebuild will invert afresh
        return True

    def rebuild(self) -> None:
        """Solve the ridge problems of the models that learned since the last rebuild:
        by Sherman-Morrison rank-one updates of the inverse and of the solution when few
        labels are pending, by a fresh inverse when many are (and every ``max(64, D)``
        rank-one updates, against rounding drift)."""
        d = self.dim
        for model, pending in sorted(self._pending.items()):
            a_inv, theta = self._a_inv[model], self._theta[model]
            if pending is None or 4 * len(pending) > d or self._updates[model] >= max(64, d):
                self._fold(model)
                a_inv[...] = np.linalg.inv(self._a[model])
                theta[...] = a_inv @ self._b[model]
                self._updates[model] = 0
                continue
            for x, weight, residual in pending:
                spread = a_inv @ x
                gain = weight / (1.0 + weight * float(x @ spread))
                theta += (gain * (residual - float(x @ theta))) * spread
                a_inv -= np.multiply.outer(spread, gain * spread)
            self._updates[model] += len(pending)
        self._pending.clear()

    def _fold(self, model: int) -> None:
        """Add the rows learned one at a time since the last fold to ``model``'s Gram
        matrix, in one matrix product."""
        rows = self._unfolded.pop(model, None)
        if rows:
            x = np.array([row for row, _ in rows])
            w = np.array([weight for _, weight in rows])
            self._a[model] += (x.T * w) @ x

    def predict(self, phi: np.ndarray, models: np.ndarray) -> np.ndarray:
        """Frozen ridge predictions, shape ``(n, K)``."""
        return self.moments(phi, models)[0]

    def bounds(self, phi, models, budget):
        """Prediction and ``prediction -+ sqrt(budget * phi^T A^-1 phi)``, unclipped."""
        prediction, variance = self.moments(phi, models)
        return (prediction, *ellipsoid_bounds(prediction, variance, budget))

    def moments(self, phi, models):
        """Prediction and ``phi^T A^-1 phi`` per (context, action) of the frozen fit."""
        if isinstance(phi, SparseRows):
            return self._sparse_moments(phi, models)
        if isinstance(models, np.ndarray) and models.size > 1 and (models == models[0]).all():
            rows = phi.reshape(-1, phi.shape[-1])
            pred, var = self._dense_row_moments(rows, int(models[0]))
            return pred.reshape(phi.shape[:2]), var.reshape(phi.shape[:2])
        theta, a_inv = self._theta[models], self._a_inv[models]
        if phi.strides[1] == 0:  # product class: the same context row for every action
            x = phi[:, 0, :]
            return x @ theta.T + self.prior_mean, np.maximum(_quadratic_forms(x, a_inv), 0.0)
        per_model = np.swapaxes(phi, 0, 1)  # (K, n, D)
        pred = np.matmul(per_model, theta[:, :, None])[..., 0]
        var = np.einsum("knd,knd->kn", np.matmul(per_model, a_inv), per_model)
        return pred.T + self.prior_mean, np.maximum(var.T, 0.0)

    def _sparse_moments(self, phi: SparseRows, models):
        """``moments`` of padded sparse rows ``(n, K, L)``, one model's columns at a time."""
        n, k, width = phi.index.shape
        models = np.arange(self.n_models)[models] if isinstance(models, slice) else models
        pred, var = np.empty((n, k)), np.empty((n, k))
        for model in np.unique(models).tolist():
            cols = np.flatnonzero(models == model)
            whole = len(cols) == k  # one model (the joint class): no copies
            index = (phi.index if whole else phi.index[:, cols]).reshape(-1, width)
            value = (phi.value if whole else phi.value[:, cols]).reshape(-1, width)
            p, v = self._row_moments(index, value, model)
            pred[:, cols], var[:, cols] = p.reshape(n, -1), v.reshape(n, -1)
        return pred, var

    def _dense_row_moments(self, rows: np.ndarray, model: int):
        """Moments of dense feature rows ``(N, D)`` under one model (as sparse rows when
        most of their entries are zero)."""
        nonzero = rows != 0
        width = int(nonzero.sum(axis=1).max())
        if 4 * width < rows.shape[1]:
            index = np.argsort(~nonzero, axis=1, kind="stable")[:, :width]
            return self._row_moments(index, np.take_along_axis(rows, index, axis=1), model)
        pred = rows @ self._theta[model] + self.prior_mean
        return pred, np.maximum(np.einsum("nd,nd->n", rows @ self._a_inv[model], rows), 0.0)

    def _row_moments(self, index: np.ndarray, value: np.ndarray, model: int):
        """Moments of padded sparse rows ``(N, L)`` under one model: the block of ``A^-1``
        at a row's columns is gathered once per distinct column pattern (or row by row,
        in chunks, when the rows share few patterns)."""
        a_inv = self._a_inv[model]
        pred = np.einsum("nl,nl->n", self._theta[model][index], value) + self.prior_mean
        var = np.empty(len(index))
        patterns = _patterns(index)
        if patterns is not None:
            for first, members in patterns:
                block = a_inv[np.ix_(index[first], index[first])]
                rows = value[members]
                var[members] = np.einsum("nl,nl->n", rows @ block, rows)
        else:
            step = max(1, 2_000_000 // index.shape[1] ** 2)
            for start in range(0, len(index), step):
                idx, rows = index[start : start + step], value[start : start + step]
                block = a_inv[idx[:, :, None], idx[:, None, :]]
                var[start : start + step] = np.einsum("nl,nlm,nm->n", rows, block, rows)
        return pred, np.maximum(var, 0.0)


def _patterns(index: np.ndarray) -> list[tuple[int, np.ndarray]] | None:
    """Rows of ``index`` grouped by identical content, as (first row, member rows), or
    None when there are more than ``len(index) / 8`` groups (gathering per row is then
    cheaper). Rows are grouped by a random-projection fingerprint, then checked."""
    if len(index) < 16:
        return None
    weights = np.random.default_rng(0).integers(1, 2**62, index.shape[1], dtype=np.int64)
    with np.errstate(over="ignore"):
        keys = np.asarray(index, np.int64) @ weights
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if 8 * len(first) > len(index) or not (index == index[first[inverse]]).all():
        return None
    order = np.argsort(inverse, kind="stable")
    ends = np.cumsum(np.bincount(inverse))
    return list(zip(first.tolist(), np.split(order, ends[:-1])))


def _quadratic_forms(x: np.ndarray, matrices: np.ndarray) -> np.ndarray:
    """``x[i] @ matrices[k] @ x[i]`` for every row i and matrix k, shape ``(n, K)``: for a
    few rows a batched product, else one matrix product of the rows' outer products with
    the flattened matrices (much faster than a batched matmul for many rows), in chunks
    that keep the outer products under ~32 MB."""
    n, d = x.shape
    if n == 1:
        return ((matrices @ x[0]) @ x[0])[None]
    if n <= 4:
        return np.einsum("knd,nd->nk", x @ matrices, x)
    flat = matrices.reshape(len(matrices), d * d).T
    out = np.empty((n, len(matrices)))
    step = max(1, 4_000_000 // (d * d))
    for start in range(0, n, step):
        rows = x[start : start + step]
        out[start : start + step] = (rows[:, :, None] * rows[:, None, :]).reshape(-1, d * d) @ flat
    return out


def _pad(array: np.ndarray, shape: tuple[int, ...], fill) -> np.ndarray:
    """``array`` enlarged to ``shape``, new entries (models, features) set from ``fill``."""
    out = np.zeros(shape)
    out[...] = fill
    if array.size:
        out[tuple(slice(0, n) for n in array.shape)] = array
    return out
