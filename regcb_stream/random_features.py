"""Random Fourier features for dense contexts (Rahimi and Recht, NIPS 2007).

``RegCB(random_features=D)`` appends ``D`` features ``0.5 cos(w_j . x + b_j)`` to every dense
context ``x`` of ``d`` values, with ``w_j ~ N(0, scale^2 I / d)`` and ``b_j ~ U[0, 2 pi)``
drawn once from a seed: a linear oracle on them approximates ridge regression with a
Gaussian kernel of bandwidth ``sqrt(d) / scale`` on top of the linear one, so rewards that
are not linear in the context (a class indicator, as in the UCI streams) fit far better
(``docs/random_features.md``). The bandwidth assumes standardized contexts (each feature of
mean 0 and variance 1). Each context is mapped on its own, one matrix-vector product per
row, so a block of contexts maps to the same numbers as its rows one at a time.

>>> features = RandomFeatures(3, seed=0)
>>> out = features(np.array([0.5, -1.0]))
>>> out.shape, out[:2].tolist()
((5,), [0.5, -1.0])
>>> bool(np.array_equal(features(np.array([[0.5, -1.0]]))[0], out))
True
"""

from __future__ import annotations

import numpy as np

AMPLITUDE = 0.5  # of each random feature: 0.5 cos(.), variance 1/8


class RandomFeatures:
    """The map ``x -> [x, 0.5 cos(W^T x + b)]`` of dense contexts (1-D) or blocks (2-D), its
    ``W`` and ``b`` drawn from ``seed`` at the first context (whose length fixes ``d``).

    Parameters
    ----------
    n_features
        How many random features (``D``).
    scale
        The frequencies' scale ``s``: ``W ~ N(0, s^2 / d)`` (a kernel bandwidth
        ``sqrt(d) / s``).
    seed
        Seed of ``W`` and ``b`` (None: fresh entropy).
    """

    def __init__(self, n_features: int, scale: float = 1.0, seed: int | None = 0):
        self.n_features = n_features
        self.scale = scale
        self.seed = seed
        self._w: np.ndarray | None = None  # (d, D), drawn at the first context
        self._b: np.ndarray | None = None

    def __call__(self, contexts: np.ndarray) -> np.ndarray:
        """``contexts`` (d,) or (n, d) with the random features appended."""
        if self._w is None:
            self._draw(contexts.shape[-1])
        if contexts.shape[-1] != len(self._w):
            raise ValueError(f"context has {contexts.shape[-1]} features, the random features "
                             f"were drawn for {len(self._w)}")
        if contexts.ndim == 1:
            return np.concatenate([contexts, AMPLITUDE * np.cos(contexts @ self._w + self._b)])
        waves = np.array([row @ self._w for row in contexts]).reshape(len(contexts), -1)
        return np.hstack([contexts, AMPLITUDE * np.cos(waves + self._b)])

    def _draw(self, d: int) -> None:
        rng = np.random.default_rng(self.seed)
        self._w = rng.normal(size=(d, self.n_features)) * (self.scale / np.sqrt(max(d, 1)))
        self._b = rng.uniform(0.0, 2.0 * np.pi, self.n_features)
