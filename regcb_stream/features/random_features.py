"""Random Fourier features for dense contexts (Rahimi and Recht, NIPS 2007).

``RegCB()`` appends ``D = 64`` features ``a (cos(w_j . u + r v_j l + b_j) - cos b_j)`` to
every dense context ``x`` of ``d`` values, where ``u = sqrt(d) x / |x|`` is the context's
direction at the length of a standardized context's and ``l = log(|x| / sqrt(d))`` its
log-length, with ``w_j ~ N(0, scale^2 I / d)``, ``v_j ~ N(0, 1)`` and ``b_j ~ U[0, 2 pi)``
drawn once from the learner's seed: a linear oracle on them approximates ridge regression
with a Gaussian kernel on the contexts' directions and log-lengths on top of the linear one,
so rewards that are not linear in the context (a class indicator, as in the UCI streams)
fit far better (``docs/results/random_features.md``). Scaling every context shifts the
waves' phases alone, so the features are as good whatever the contexts' scale; what a
context's length says is kept (``r = 1``, `RADIUS`: ``docs/results/radial_features.md``).
Subtracting ``cos b_j`` takes away most of each feature's constant part, so the features do
not stand in for the intercept: the optimistic prior on the intercept keeps its weight, and
a few low rewards do not pull an action down everywhere. A context wider than ``width``
features is scaled by ``sqrt(width / d)`` in the linear part, so the ridge penalty weighs
the linear part of a wide context as it weighs a ``width``-feature one's. A block of
contexts is mapped in one compiled call (``_features.c``), each context on its own and each
product's terms in the order of the context's entries, so a block maps to the same numbers
as its rows one at a time, on every machine and BLAS.

>>> features = RandomFeatures(3, seed=0)
>>> out = features(np.array([0.5, -1.0]))
>>> out.shape, out[:2].tolist()
((5,), [0.5, -1.0])
>>> features(np.zeros(2)).tolist()
[0.0, 0.0, 0.0, 0.0, 0.0]
>>> bool(np.array_equal(features(np.array([[0.5, -1.0]]))[0], out))
True
"""

from __future__ import annotations

import math

import numpy as np

from regcb_stream.features import _features
from regcb_stream.state import Stateful

# Chosen by leave-one-dataset-out: docs/results/random_features.md.
AMPLITUDE = 0.25  # of each feature
WIDTH = 8  # contexts wider than this are scaled down in the linear part (chosen likewise)
RADIUS = 1.0  # the waves' scale on a context's log-length (docs/results/radial_features.md)


class RandomFeatures(Stateful):
    """The map ``x -> [k x, a (cos(sqrt(d) W^T x / |x| + r v log(|x| / sqrt(d)) + b) - cos b)]``
    of dense contexts (1-D) or blocks (2-D), ``k = min(1, sqrt(width / d))``, its ``W``,
    ``b`` and ``v`` drawn from ``seed`` at the first context (whose length fixes ``d``).

    Parameters
    ----------
    n_features
        How many random features (``D``).
    scale
        The frequencies' scale ``s``: ``W ~ N(0, s^2 / d)`` (a kernel bandwidth
        ``sqrt(d) / s`` on the mapped contexts).
    seed
        Seed of ``W`` and ``b`` (None: fresh entropy).
    amplitude
        ``a``, each feature's amplitude (a larger one is a smaller ridge penalty on them).
    width
        Contexts of more features have their linear part scaled by ``sqrt(width / d)``
        (None: never).
    normalize
        Map each context's direction ``sqrt(d) x / |x|`` (a Gaussian kernel on directions,
        whatever the contexts' scale; the features of ``x = 0`` are 0) instead of ``x``.
    required
        False for the learner's default: contexts that are dicts, or actions given as
        feature dicts, are then learned without random features instead of refused.
    radius
        With ``normalize``: ``r``, the scale of frequencies ``v ~ N(0, r^2)`` on the log of
        the context's length, ``log(|x| / sqrt(d))``, added to its direction's waves (a
        Gaussian kernel on direction and log-length: what a context's length says is kept,
        and scaling every context shifts the waves' phases alone); 0: the direction alone.
    """

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "n_features": "n_features",
        "scale": "scale",
        "seed": "seed",
        "amplitude": "amplitude",
        "width": "width",
        "normalize": "normalize",
        "required": "required",
        "w": "_w",
        "b": "_b",
        "offset": "_offset",
        "shrink": "_shrink",
        "radius": "radius",
        "v": "_v",
    }
    ADDED = {"radius": 0.0, "v": None}  # (files from before: their contexts' direction alone)

    def __init__(self, n_features: int, scale: float = 1.0, seed: int | None = 0, *,
                 amplitude: float = AMPLITUDE, width: int | None = WIDTH,
                 normalize: bool = True, required: bool = True, radius: float = RADIUS):
        self.n_features = n_features
        self.scale = scale
        self.seed = seed
        self.amplitude = amplitude
        self.width = width
        self.normalize = normalize
        self.required = required
        self.radius = radius
        self._w: np.ndarray | None = None  # (d, D), drawn at the first context
        self._b: np.ndarray | None = None
        self._v: np.ndarray | None = None  # (D,): the frequencies on the log-length
        self._offset: np.ndarray | None = None  # cos b
        self._shrink = 1.0

    def __call__(self, contexts: np.ndarray) -> np.ndarray:
        """``contexts`` (d,) or (n, d) with the random features appended."""
        if self._w is None:
            self._draw(contexts.shape[-1])
        if contexts.shape[-1] != len(self._w):
            raise ValueError(f"context has {contexts.shape[-1]} features, the random features "
                             f"were drawn for {len(self._w)}")
        contexts = np.ascontiguousarray(contexts, dtype=float)
        out = np.empty(contexts.shape[:-1] + (contexts.shape[-1] + self.n_features,))
        self.into(contexts, out)
        return out

    def into(self, contexts: np.ndarray, out: np.ndarray) -> None:
        """The map of contexts already checked (float, contiguous, of the width the map was
        drawn for) written into ``out``: the per-example path's, without an allocation."""
        radial = (self.radius, self._v) if self.normalize and self.radius else ()
        _features.cosine_rows(contexts, np.ascontiguousarray(self._w), self._b, self._offset,
                              self.amplitude, self._shrink, self.normalize,
                              contexts.shape[-1], out, *radial)

    def _draw(self, d: int) -> None:
        rng = np.random.default_rng(self.seed)
        self._w = rng.normal(size=(d, self.n_features)) * (self.scale / np.sqrt(max(d, 1)))
        self._b = rng.uniform(0.0, 2.0 * np.pi, self.n_features)
        self._offset = np.cos(self._b)
        self._v = rng.normal(size=self.n_features)
        self._shrink = 1.0 if self.width is None or d <= self.width else math.sqrt(
            self.width / d)
