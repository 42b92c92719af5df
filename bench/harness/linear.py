"""Ridge regression for the baselines, updated by blocks of rounds (one epoch at a time).

Features are ``[1, x]`` (the intercept the learner's encoder adds too). UCI problems get one
model per action on the context (the product class); ranking problems one model on the
document features (the joint class). ``copies`` independent fits share the data with their
own example weights (the bootstrap replicates); the penalty is ``l2 = 1`` as in the paper's
``Ridge(alpha=1)``.
"""

from __future__ import annotations

import numpy as np


def design(X: np.ndarray) -> np.ndarray:
    """Prepend the intercept column to contexts ``(n, d)`` or features ``(n, K, D)``."""
    return np.concatenate([np.ones(X.shape[:-1] + (1,)), X], axis=-1)


class BlockRidge:
    """Weighted ridge regressions (``copies`` x models) from sufficient statistics.

    Parameters
    ----------
    n_models : int
        Models per copy: K (product class) or 1 (joint class).
    dim : int
        Features including the intercept.
    copies : int
        Independent fits (different example weights, same data).
    l2 : float
        Ridge penalty.

    Examples
    --------
    >>> ridge = BlockRidge(n_models=2, dim=2)
    >>> x = design(np.array([[0.0], [1.0], [0.0], [1.0]]))
    >>> ridge.add(x, np.array([0, 0, 1, 1]), np.array([1.0, 1.0, 0.0, 1.0]))
    >>> ridge.solve()
    >>> ridge.predict(x[:2]).round(3)
    array([[[0.6, 0.2],
            [0.8, 0.6]]])
    """

    def __init__(self, n_models: int, dim: int, copies: int = 1, l2: float = 1.0):
        self.a = np.broadcast_to(l2 * np.eye(dim), (copies, n_models, dim, dim)).copy()
        self.b = np.zeros((copies, n_models, dim))
        self.theta = np.zeros((copies, n_models, dim))

    def add(self, rows: np.ndarray, models: np.ndarray, y: np.ndarray, weights=None) -> None:
        """Add examples ``rows`` (n, D) of ``models`` (n,) with labels ``y`` and weights
        ``(n,)`` or ``(copies, n)`` (default 1)."""
        copies = self.b.shape[0]
        w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
        w = np.broadcast_to(w, (copies, len(y)))
        for model in np.unique(models).tolist():
            pick = models == model
            x, wm = rows[pick], w[:, pick]
            for copy in range(copies):
                self.a[copy, model] += (x.T * wm[copy]) @ x
            self.b[:, model] += (wm * y[pick]) @ x

    def solve(self) -> None:
        """Refit every model (the epoch boundary)."""
        self.theta = np.linalg.solve(self.a, self.b[..., None])[..., 0]

    def predict(self, phi: np.ndarray) -> np.ndarray:
        """Predictions ``(copies, n, K)`` for contexts ``(n, D)`` (one column per model) or
        per-action features ``(n, K, D)`` (the joint model)."""
        if phi.ndim == 2:
            return np.einsum("nd,ckd->cnk", phi, self.theta)
        return np.einsum("nkd,cd->cnk", phi, self.theta[:, 0])
