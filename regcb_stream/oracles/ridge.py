"""Exact ridge regression (recursive least squares) with closed-form version-space bounds."""

from __future__ import annotations

import numpy as np

from regcb_stream.bounds import ellipsoid_bounds


class RidgeOracle:
    """Ridge regression per model, with the version space as an ellipsoid.

    The regularized squared loss of ``theta`` exceeds its minimum by exactly
    ``(theta - theta_hat)^T A (theta - theta_hat)`` with ``A = l2 I + sum w x x^T``, so
    the extreme predictions over the version space are ``theta_hat^T x +- sqrt(budget
    x^T A^-1 x)``, in closed form. Learning adds to the sufficient statistics ``A`` and
    ``b = sum w y x`` (O(D^2) per label); a rebuild inverts ``A`` of the models that
    learned since the last one, so rebuilding after every label costs one D x D inverse.

    Parameters
    ----------
    l2
        Ridge penalty (the paper uses scikit-learn's ``Ridge(alpha=1)``).

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

    """

    def __init__(self, l2: float = 1.0):
        if not l2 > 0:
            raise ValueError(f"l2 must be > 0, got {l2!r}")
        self.l2 = l2
        self._a = np.zeros((0, 0, 0))
        self._b = np.zeros((0, 0))
        self._a_inv = np.zeros((0, 0, 0))  # frozen decision state
        self._theta = np.zeros((0, 0))
        self._dirty: set[int] = set()

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

    def learn(self, x: np.ndarray, model: int, y: float, weight: float = 1.0) -> None:
        """Add one example to the sufficient statistics of ``model``."""
        wx = weight * x
        self._a[model] += np.outer(wx, x)
        self._b[model] += y * wx
        self._dirty.add(model)

    def learn_many(self, x, models, y, weight) -> None:
        """Add a block of examples (rows of ``x``) in one computation per model."""
        wx = weight[:, None] * x
        for model in np.unique(models).tolist():
            rows = models == model
            self._a[model] += wx[rows].T @ x[rows]
            self._b[model] += y[rows] @ wx[rows]
            self._dirty.add(model)

    def rebuild(self) -> None:
        """Solve the ridge problems of the models that learned since the last rebuild."""
        if not self._dirty:
            return
        idx = np.fromiter(sorted(self._dirty), dtype=np.intp)
        a_inv = np.linalg.inv(self._a[idx])
        self._a_inv[idx] = a_inv
        self._theta[idx] = np.einsum("mij,mj->mi", a_inv, self._b[idx])
        self._dirty.clear()

    def predict(self, phi: np.ndarray, models: np.ndarray) -> np.ndarray:
        """Frozen ridge predictions, shape ``(n, K)``."""
        return self._moments(phi, models)[0]

    def bounds(self, phi, models, budget):
        """Prediction and ``prediction -+ sqrt(budget * phi^T A^-1 phi)``, unclipped."""
        prediction, variance = self._moments(phi, models)
        return (prediction, *ellipsoid_bounds(prediction, variance, budget))

    def _moments(self, phi: np.ndarray, models: np.ndarray):
        """Prediction and ``phi^T A^-1 phi`` per (context, action) of the frozen fit."""
        per_model = np.swapaxes(phi, 0, 1)  # (K, n, D)
        pred = np.matmul(per_model, self._theta[models][:, :, None])[..., 0]
        spread = np.matmul(per_model, self._a_inv[models])
        var = np.einsum("knd,knd->kn", spread, per_model)
        return pred.T, np.maximum(var.T, 0.0)


def _pad(array: np.ndarray, shape: tuple[int, ...], fill) -> np.ndarray:
    """``array`` enlarged to ``shape``, new entries (models, features) set from ``fill``."""
    out = np.zeros(shape)
    out[...] = fill
    if array.size:
        out[tuple(slice(0, n) for n in array.shape)] = array
    return out
