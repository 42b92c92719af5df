"""Pure confidence-bound math shared by the oracles.

>>> low, high = ellipsoid_bounds(np.array([[0.5]]), np.array([[0.04]]), budget=4.0)
>>> float(low[0, 0]), float(high[0, 0])
(0.1, 0.9)

"""

from __future__ import annotations

import numpy as np


def ellipsoid_bounds(
    prediction: np.ndarray, variance: np.ndarray, budget: float
) -> tuple[np.ndarray, np.ndarray]:
    """Extremes of ``theta^T phi`` over ``{theta : (theta - theta_hat)^T A (theta -
    theta_hat) <= budget}``, given ``prediction = theta_hat^T phi`` and ``variance =
    phi^T A^-1 phi``: ``prediction -+ sqrt(budget * variance)``.
    """
    radius = np.sqrt(max(budget, 0.0) * variance)
    return prediction - radius, prediction + radius


def clip_bounds(
    low: np.ndarray, high: np.ndarray, reward_range: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds clipped to the reward range (rewards outside it are impossible)."""
    lo, hi = reward_range
    return np.minimum(np.maximum(low, lo), hi), np.minimum(np.maximum(high, lo), hi)
