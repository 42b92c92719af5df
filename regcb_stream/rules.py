"""Decision rules: confidence bounds per action -> a probability distribution, and the
draw from it.

Each rule is a pure function of ``(low, high)`` arrays of shape ``(n, K)`` (one row per
context, one column per action) returning an ``(n, K)`` array whose rows are distributions.
Bounds closer than ``tolerance`` count as equal, so that rounding noise (e.g. between a
block computation and a one-context one) cannot change a decision.

>>> low = np.array([[0.1, 0.5, 0.2]])
>>> high = np.array([[0.6, 0.9, 0.4]])
>>> elimination(low, high)
array([[0.5, 0.5, 0. ]])
>>> optimistic(low, high)
array([[0., 1., 0.]])

"""

from __future__ import annotations

import numpy as np

VARIANTS = ("elimination", "optimistic")


def plausible(low: np.ndarray, high: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """Mask of the actions that may be best: ``High(a) >= max_a' Low(a')``.

    The action with the largest lower bound is always in the set, so no row is empty.
    """
    return high >= low.max(axis=1, keepdims=True) - tolerance


def elimination(low: np.ndarray, high: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """RegCB.Elimination: uniform over the plausible actions (Algorithm 1)."""
    return _uniform_over(plausible(low, high, tolerance))


def optimistic(low: np.ndarray, high: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """RegCB.Optimistic: the action(s) with the largest upper bound (Algorithm 2).

    Ties share the mass evenly, so the result is always a distribution (VW's
    ``--regcbopt`` gives probability 1 to every tied action instead).
    """
    return _uniform_over(high >= high.max(axis=1, keepdims=True) - tolerance)


def uniform(n: int, k: int) -> np.ndarray:
    """Uniform distributions over ``k`` actions for ``n`` contexts (warm start)."""
    return np.full((n, k), 1.0 / k)


def sample(pmf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw per row of ``pmf`` from uniforms ``u``; never an action of mass 0.

    >>> sample(np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]), np.array([0.7, 0.1])).tolist()
    [1, 2]
    """
    cdf = pmf.cumsum(axis=1)
    index = (cdf <= (u * cdf[:, -1])[:, None]).sum(axis=1)
    return np.minimum(index, pmf.shape[1] - 1)


def decision_rule(variant: str):
    """The rule named ``variant``: ``"elimination"`` or ``"optimistic"``."""
    if variant == "elimination":
        return elimination
    if variant == "optimistic":
        return optimistic
    raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")


def _uniform_over(mask: np.ndarray) -> np.ndarray:
    return mask / mask.sum(axis=1, keepdims=True)
