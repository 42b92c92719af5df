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

The optimistic rule's ties at the largest upper bound (with bounds clipped to the reward
range, every action whose bound reaches the top) share the mass, or go to those of the
largest fit (any maximizer of the upper bound keeps RegCB.Optimistic's regret bound):

>>> low, high, fit = np.array([[0.2, 0.4, 0.1]]), np.ones((1, 3)), np.array([[1.1, 1.3, 0.9]])
>>> Rule("optimistic", "shared")(low, high, 0.0, fit, (0.0, 1.0)).round(3)
array([[0.333, 0.333, 0.333]])
>>> Rule("optimistic", "clipped")(low, high, 0.0, fit, (0.0, 1.0))
array([[0.5, 0.5, 0. ]])
>>> Rule("optimistic", "fit")(low, high, 0.0, fit, (0.0, 1.0))
array([[0., 1., 0.]])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VARIANTS = ("elimination", "optimistic")
TIE_RULES = ("shared", "fit", "clipped")  # the optimistic rule's ties: shared, or broken by
# the fit (the prediction) or by the fit clipped to the reward range (`RegCB`'s ``ties``)


def plausible(low: np.ndarray, high: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """Mask of the actions that may be best: ``High(a) >= max_a' Low(a')``.

    The action with the largest lower bound is always in the set, so no row is empty.
    """
    return high >= low.max(axis=1, keepdims=True) - tolerance


def elimination(low: np.ndarray, high: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """RegCB.Elimination: uniform over the plausible actions (Algorithm 1)."""
    return _uniform_over(plausible(low, high, tolerance))


def optimistic(low: np.ndarray, high: np.ndarray, tolerance: float = 0.0,
               fit: np.ndarray | None = None) -> np.ndarray:
    """RegCB.Optimistic: the action(s) with the largest upper bound (Algorithm 2).

    Ties share the mass evenly (with ``fit``: those of the ties with the largest fit), so
    the result is always a distribution (VW's ``--regcbopt`` gives probability 1 to every
    tied action instead).
    """
    top = high >= high.max(axis=1, keepdims=True) - tolerance
    if fit is not None:
        top &= fit >= np.where(top, fit, -np.inf).max(axis=1, keepdims=True) - tolerance
    return _uniform_over(top)


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


@dataclass(frozen=True)
class Rule:
    """The decision rule of ``variant`` (:data:`VARIANTS`), the optimistic one's ties as
    ``ties`` says (:data:`TIE_RULES`)."""

    variant: str
    ties: str = "shared"

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown variant {self.variant!r}; expected one of {VARIANTS}")
        if self.ties not in TIE_RULES:
            raise ValueError(f"unknown ties {self.ties!r}; expected one of {TIE_RULES}")

    @property
    def optimistic(self) -> bool:
        return self.variant == "optimistic"

    @property
    def code(self) -> int:
        """The rule's code in the compiled loops (``_ridge.c``): 0 for elimination."""
        return 1 + TIE_RULES.index(self.ties) if self.optimistic else 0

    def __call__(self, low: np.ndarray | None, high: np.ndarray, tolerance: float,
                 prediction: np.ndarray, reward_range: tuple[float, float]) -> np.ndarray:
        """The distributions of ``(n, K)`` clipped bounds and predictions (``low`` may
        be None for the optimistic rule)."""
        if not self.optimistic:
            return elimination(low, high, tolerance)
        fit = (None if self.ties == "shared" else prediction if self.ties == "fit" else
               np.clip(prediction, *reward_range))
        return optimistic(low, high, tolerance, fit)


def _uniform_over(mask: np.ndarray) -> np.ndarray:
    return mask / mask.sum(axis=1, keepdims=True)
