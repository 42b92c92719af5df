"""Contexts and actions -> feature arrays for the oracle.

A context is a 1-D sequence / numpy array of numbers (dense, fixed length) or a dict of
feature name -> number (sparse; names are indexed as they appear). Every encoded vector
starts with a constant 1 (the intercept, 0 with ``intercept=False``), as the paper's
dimensions count a bias column.

Actions are either labels (the product class: one model per action) or dicts of action
features (the joint class: one model over the concatenation of context features, action
features and, with ``cross=True``, their products, like VW's ``-q sa``).

>>> encoder = FeatureEncoder()
>>> encoder.context([0.5, 2.0])
array([1. , 0.5, 2. ])
>>> encoder.context([1.0, float("nan")])
Traceback (most recent call last):
...
ValueError: context feature 1 is nan: features must be finite numbers

"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np


class FeatureEncoder:
    """Maps contexts (and action feature dicts) to float vectors of a growing dimension."""

    def __init__(self, cross: bool = True, intercept: bool = True):
        self.cross = cross
        self.intercept = intercept
        self._index: dict = {}  # feature key -> column (column 0 is the intercept)
        self._dense_dim: int | None = None
        self._sparse: bool | None = None

    @property
    def dim(self) -> int:
        return 1 + (self._dense_dim or 0) + len(self._index)

    def context(self, context) -> np.ndarray:
        """Encode one context as a vector of the current dimension."""
        if isinstance(context, Mapping):
            self._set_kind(sparse=True)
            return self._vector(_checked_items(context))
        self._set_kind(sparse=False)
        values = _dense_values(context)
        if self._dense_dim is None:
            self._dense_dim = values.size
        elif values.size != self._dense_dim:
            raise ValueError(
                f"context has {values.size} features, expected {self._dense_dim} "
                "(the length of the first context)"
            )
        out = np.empty(self.dim)
        out[0] = self.intercept
        out[1 : 1 + values.size] = values
        out[1 + values.size :] = 0.0
        return out

    def contexts(self, contexts) -> np.ndarray:
        """Encode a block of contexts, shape ``(n, D)``."""
        if isinstance(contexts, np.ndarray) and contexts.ndim == 2 and not self._sparse:
            first = self.context(contexts[0])
            _check_finite(contexts)
            out = np.zeros((len(contexts), first.size))
            out[:, 0] = self.intercept
            out[:, 1 : 1 + contexts.shape[1]] = contexts
            return out
        rows = [self.context(c) for c in contexts]
        return _stack(rows, self.dim)

    def joint(self, context, actions: Sequence[Mapping]) -> np.ndarray:
        """Encode (context, action) pairs for the joint class, shape ``(K, D)``."""
        if isinstance(context, Mapping):
            shared = [(("x", k), v) for k, v in _checked_items(context)]
        else:
            shared = [(("x", i), float(v)) for i, v in enumerate(_dense_values(context))]
        rows = []
        for action in actions:
            own = [(("a", k), v) for k, v in _checked_items(action)]
            items = shared + own
            if self.cross:
                items += [(("xa", s[1], a[1]), sv * av) for s, sv in shared for a, av in own]
            rows.append(self._vector(items))
        return _stack(rows, self.dim)

    def _vector(self, items) -> np.ndarray:
        index = self._index
        for key, _ in items:
            if key not in index:
                index[key] = len(index) + 1
        out = np.zeros(self.dim)
        out[0] = self.intercept
        for key, value in items:
            out[index[key]] += value
        return out

    def _set_kind(self, sparse: bool) -> None:
        if self._sparse is None:
            self._sparse = sparse
        elif self._sparse != sparse:
            kinds = ("dense sequences", "dicts")
            raise TypeError(
                f"contexts were {kinds[self._sparse]}, got one of {kinds[sparse]}: "
                "use one kind of context per learner"
            )


def _dense_values(context) -> np.ndarray:
    try:
        values = np.asarray(context, dtype=float)
    except (TypeError, ValueError) as error:
        raise TypeError(f"context must be numbers or a dict of numbers: {error}") from None
    if values.ndim != 1:
        raise ValueError(f"a dense context must be 1-D, got shape {values.shape}")
    _check_finite(values)
    return values


def _check_finite(values: np.ndarray) -> None:
    if not np.isfinite(values).all():
        where = np.argwhere(~np.isfinite(values))[0]
        name = int(where[-1])
        raise ValueError(
            f"context feature {name} is {values[tuple(where)]}: features must be finite numbers"
        )


def _checked_items(features: Mapping) -> list[tuple]:
    items = []
    for name, value in features.items():
        if not isinstance(value, (int, float, np.number)):
            raise TypeError(f"feature {name!r} has value {value!r}: features must be numbers")
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"feature {name!r} is {value}: features must be finite numbers")
        items.append((name, value))
    return items


def _stack(rows: list[np.ndarray], dim: int) -> np.ndarray:
    """Stack vectors encoded at different times (earlier ones may be shorter)."""
    out = np.zeros((len(rows), dim))
    for i, row in enumerate(rows):
        out[i, : row.size] = row
    return out
