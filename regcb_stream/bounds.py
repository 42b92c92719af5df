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


def sensitivity_bounds(
    prediction: np.ndarray,
    sens_up: np.ndarray,
    sens_down: np.ndarray,
    budget: float,
    reward_range: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds by VW's sensitivity rule (``--regcb``), solved in closed form.

    For the upper bound the learner is asked to learn a fake label ``top = high + 1`` at the
    point, ``f = top - prediction`` away; ``sens_up`` is how far the prediction moves toward
    it per unit importance weight. With weight ``w`` the prediction moves by ``u = s w``
    (capped at the label, ``u <= f``) and the weighted loss on the fake example drops by
    ``w (f^2 - (f - u)^2)``: for a loss minimizer, that bounds the rise of its loss on the
    past data, so the moved regressor stays in the version space while the drop is at most
    ``budget``. VW bisects for the largest such ``w``; substituting ``w = u / s`` gives the
    cubic condition ``u^2 (2 f - u) <= budget s``, increasing in ``u`` on ``[0, f]``. So
    ``u = f`` if ``f^3 <= budget s``, else the middle root of ``u^3 - 2 f u^2 + budget s``;
    with ``r = budget s / f^3`` and ``theta = 2 arcsin(sqrt(27 r / 32))`` (the trigonometric
    formula for three real roots, written without cancellation for small ``r``)::

        u = (2 f / 3) (2 sin(theta / 6)^2 + sqrt(3) sin(theta / 3))

    The lower bound is the mirror image, with ``bottom = low - 1`` and ``sens_down``.
    Results are unclipped. Where VW returns the range end they agree after clipping: a
    NaN or infinite sensitivity gives an infinite bound, and a prediction past a fake label
    a zero-width side (the prediction itself). VW's 20-step bisection approximates ``u``
    from below, to within its final bracket (about ``f 2^-20`` in ``u``), except that its
    early stop on ``|v| <= 1e-6`` returns the bracket's lower end, which can be 0.

    Parameters
    ----------
    prediction, sens_up, sens_down
        Arrays of one shape: the prediction and its sensitivities (``>= 0``) toward the
        upper and lower fake labels.
    budget
        Allowed rise of the summed squared loss (``<= 0``: zero width).
    reward_range
        ``(low, high)`` of the rewards, which places the fake labels.

    Returns
    -------
    tuple of np.ndarray
        ``(low, high)``, shaped like ``prediction``.

    Examples
    --------
    >>> low, high = sensitivity_bounds(
    ...     np.array([0.5]), np.array([0.4]), np.array([0.4]), budget=0.1,
    ...     reward_range=(0.0, 1.0))
    >>> float(low[0].round(6)), float(high[0].round(6))
    (0.382194, 0.617806)
    >>> u = high[0] - 0.5   # the cubic condition holds with equality
    >>> round(float(u**2 * (2 * 1.5 - u)), 9) == round(0.1 * 0.4, 9)
    True
    """
    prediction = np.asarray(prediction, dtype=float)
    lo, hi = reward_range
    distance = np.stack([hi + 1.0 - prediction, prediction - (lo - 1.0)])
    up, down = sensitivity_move(distance, np.stack([sens_up, sens_down]), budget)
    return prediction - down, prediction + up


def sensitivity_move(distance: np.ndarray, sens: np.ndarray, budget: float) -> np.ndarray:
    """How far the prediction may move toward a fake label ``distance`` away (see
    :func:`sensitivity_bounds`): the largest ``u <= f`` with ``u^2 (2 f - u) <= budget s``."""
    f = np.maximum(distance, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(sens > 0, sens, 0.0) * max(budget, 0.0) / f**3  # NaN: f = 0
        theta = 2.0 * np.arcsin(np.sqrt(27.0 / 32.0 * np.minimum(ratio, 1.0)))
        root = (2.0 * f / 3.0) * (2.0 * np.sin(theta / 6.0) ** 2 + 3**0.5 * np.sin(theta / 3.0))
    move = np.where(f > 0, np.where(ratio >= 1.0, f, root), 0.0)
    return np.where(np.isfinite(sens), move, np.inf)
