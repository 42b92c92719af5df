"""The exploration budget chosen online: exponential weights over a grid of budgets.

With ``budget="auto"`` the learner keeps ``J`` candidate loss budgets of VW's form,
``c ln(K n) span^2`` for each mellowness ``c`` of a grid, side by side on one oracle (an
ellipsoid oracle's widths scale as ``sqrt(budget)``, so a candidate costs one decision rule
on the shared bounds, no oracle call). Every round each candidate turns the bounds into its
own distribution (elimination or optimistic); the learner plays their mixture, weighted by
exponential weights on an importance-weighted estimate of each candidate's reward (EXP4:
Auer, Cesa-Bianchi, Freund and Schapire, 2002, with the candidates as experts), with a
small share spread evenly over the candidates. A label of an action played with probability
``p`` credits candidate ``j`` with ``pmf_j(a) r / p``, an unbiased estimate of the reward its
distribution would have collected that round. Only revealed rewards enter, and the played
distribution is a convex mixture of valid distributions, so it is valid too.

What it guarantees, and what not. EXP4's regret bound against the best candidate holds for
experts whose advice does not depend on the play; here the candidates share the data the
mixture collects, so each estimate is a candidate's reward *given* that data. Exploration by
one candidate benefits all of them, and the estimates do not credit it: the weights drift
toward the candidates that exploit best on the data gathered so far, which is the smallest
budget of the grid on every public stream (``docs/defaults.md``). The selection therefore
plays a randomized budget concentrated on the low end of its grid: it protects against a
grid's over-exploring candidates, not against under-exploring. Every candidate's widths
shrink as ``sqrt(ln n / n)`` per direction, so the play converges in the realizable case
whichever candidate leads (``tests/test_budget.py``: regret growth ``R(T)/R(T/2) <= 1.6``).

>>> selector = BudgetSelector((0.0, 0.01, 0.1))
>>> selector.weights().round(3)
array([0.333, 0.333, 0.333])
>>> for _ in range(200):   # candidate 0 plays the rewarded action, the others do not
...     selector.update(np.array([1.0, 0.0, 0.0]), prob=0.5, reward=1.0)
>>> selector.freeze()  # the learner does so at each rebuild
>>> int(selector.leader())
0
"""

from __future__ import annotations

import math

import numpy as np

from regcb_stream import rules
from regcb_stream.oracles.ridge import _ridge

#: mellowness values of the default candidates (VW's budget form): around the best fixed
#: values of docs/defaults.md
DEFAULT_GRID = (3e-4, 1e-3, 3e-3, 1e-2)
DEFAULT_RATE = 2.0  # learning rate per sqrt(label): eta_n = rate / sqrt(n)
DEFAULT_FLOOR = 0.02  # share of the play spread evenly over the candidates


class BudgetSelector:
    """Exponential weights over candidate budgets from importance-weighted rewards.

    Parameters
    ----------
    grid
        Mellowness of each candidate (budget ``c ln(K n) span^2``).
    rate
        Learning rate scale: the weights are ``softmax(rate / sqrt(n) * estimates)``.
    floor
        Share of the mixture spread evenly over the candidates, so that every candidate's
        actions keep a probability of at least ``floor / J`` times its own.
    """

    _live: np.ndarray | None = None  # the weights of the estimates so far (None: not yet)
    _weights: np.ndarray | None = None  # those of the last freeze, for the decisions
    _spare: np.ndarray | None = None  # an array for update to weigh into, never _weights

    def __init__(self, grid=DEFAULT_GRID, rate: float = DEFAULT_RATE,
                 floor: float = DEFAULT_FLOOR):
        self.grid = np.asarray(grid, dtype=float)
        if self.grid.ndim != 1 or len(self.grid) == 0 or not np.all(np.isfinite(self.grid)) \
                or (self.grid < 0).any():
            raise ValueError(f"budget candidates must be finite numbers >= 0, got {grid!r}")
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"rate must be a finite number > 0, got {rate!r}")
        if not 0 <= floor < 1:
            raise ValueError(f"floor must be in [0, 1), got {floor!r}")
        self.rate = float(rate)
        self.floor = float(floor)
        self.estimates = [0.0] * len(self.grid)  # importance-weighted summed rewards
        self.n_scored = 0
        self._sqrt_grid = np.sqrt(self.grid)
        self.freeze()

    def freeze(self) -> None:
        """Take the weights and the leader of the estimates so far for the decisions, until
        the next call (the learner's rebuilds: decisions inside an epoch do not depend on how
        its labels were cut into blocks)."""
        if self._live is None:
            self._live = self._live_weights()
            self._live_leader = self.estimates.index(max(self.estimates))
        if self._live is not self._weights:  # the frozen array is `update`'s to fill next
            self._spare, self._weights = self._weights, self._live
        self._leader = self._live_leader

    def _live_weights(self) -> np.ndarray:
        """Softmax of the estimates, in plain floats (the reference of the compiled
        ``update``: the same operations in the same order)."""
        eta, top = self.rate / math.sqrt(max(self.n_scored, 1)), max(self.estimates)
        z = [math.exp(eta * (e - top)) for e in self.estimates]
        total, even = 0.0, self.floor / len(z)
        for v in z:  # in order (a loop, not sum(), which compensates from Python 3.12)
            total += v
        return np.array([(1.0 - self.floor) * v / total + even for v in z])

    def weights(self) -> np.ndarray:
        """The mixture's weight of each candidate, as of the last `freeze`."""
        return self._weights

    def leader(self) -> int:
        """Index of the candidate of largest weight as of the last `freeze` (the first among
        ties)."""
        return self._leader

    def radii(self, n_labels: int, n_actions: int, span: float) -> np.ndarray:
        """Square roots of the candidates' loss budgets after ``n_labels`` labels: the
        multipliers of an ellipsoid's half-width ``sqrt(phi^T A^-1 phi)``."""
        if n_labels == 0:
            return np.zeros(len(self.grid))
        roots, scale = self.radius_factors(n_labels, n_actions, span)
        return roots * scale

    def radius_factors(self, n_labels: int, n_actions: int, span: float
                       ) -> tuple[np.ndarray, float]:
        """``radii`` as the square roots of the grid and one scale (``n_labels`` > 0)."""
        return self._sqrt_grid, _radius_scale(n_labels, n_actions, span)

    @staticmethod
    def radius_scales(n_labels: np.ndarray, n_actions: int, span: float) -> np.ndarray:
        """`radius_factors`' scale for each count of labels (NaN for none: uniform play),
        in plain floats (numpy's logarithm differs from math's in the last bit)."""
        return np.array([_radius_scale(n, n_actions, span) if n else math.nan
                         for n in n_labels.tolist()])

    def mix(self, pmfs: np.ndarray) -> np.ndarray:
        """The played distributions ``(n, K)`` from the candidates' ``(n, J, K)``
        (capped at 1, so that rounding never lifts a probability above it)."""
        return np.minimum(np.matmul(self.weights(), pmfs), 1.0)

    def update(self, candidate_probs, prob: float, reward: float) -> None:
        """Credit each candidate with ``pmf_j(a) reward / prob`` for a label of action
        ``a`` played with probability ``prob`` (``reward`` scaled to [0, 1]), and weigh
        them anew for the next `freeze` (one compiled call: online, this runs per label)."""
        scale = reward / prob
        self.n_scored += 1
        if _ridge is None:
            self.estimates = [e + p * scale for e, p in zip(self.estimates, candidate_probs)]
            self._live = None  # weighed at the next freeze
            return
        weights = self._spare if self._spare is not None else np.empty(len(self.estimates))
        self._live_leader = _ridge.credit(self.estimates, candidate_probs, scale,
                                          self.rate / math.sqrt(self.n_scored), self.floor,
                                          weights)
        self._live = weights

    def loop_spec(self, scales: np.ndarray, probs: np.ndarray) -> tuple:
        """The selector as the compiled online loop takes it (`_ridge.run_online`, one
        rebuild per label: it credits the candidates and weighs them anew in place, label by
        label); ``scales[m]``: the radius scale after ``m`` more labels (NaN: none yet, uniform
        play), ``probs``: each example's logged probability. `loop_done` after each call."""
        self._weights = self._live = np.array(self._weights)  # its own, weighed in place
        return (self._sqrt_grid, scales, probs, self._weights, self.estimates, self.rate,
                self.floor, self.n_scored, self._leader)

    def loop_done(self, labels: int) -> None:
        """Take in the ``labels`` a call of the compiled loop scored (and froze)."""
        self.n_scored += labels
        self._leader = self._live_leader = self.estimates.index(max(self.estimates))

    def state(self) -> dict:
        """Diagnostics: the candidates, their weights and estimates, the leading budget."""
        return {"mellowness": self.grid.tolist(), "weights": self._live_weights().tolist(),
                "estimates": list(self.estimates), "n_scored": self.n_scored,
                "leader": float(self.grid[self.estimates.index(max(self.estimates))])}


def _radius_scale(n_labels: int, n_actions: int, span: float) -> float:
    """The candidates' radii over the square roots of their mellowness: ``sqrt(ln(K n))``
    times the reward span (VW's budget form, `schedules.loss_budget`)."""
    return math.sqrt(math.log(n_actions * n_labels)) * span


def candidate_decisions(selector: BudgetSelector, oracle, rule, phi, models, n_labels: int,
                        reward_range: tuple[float, float], tolerance: float):
    """``(pmf, prediction, low, high, candidates)`` for a block of contexts: the mixture,
    the oracle's predictions, the leading candidate's clipped bounds and every candidate's
    distribution ``(n, J, K)``. An ellipsoid oracle (with ``moments``) is asked once, others
    once per candidate; numpy calls are kept few, as this runs for every online round."""
    k, (lo, hi) = phi.shape[1], reward_range
    radii = selector.radii(n_labels, k, hi - lo)
    if getattr(oracle, "compiled", False):  # the same arithmetic in one compiled call
        prediction, variance = oracle.moments(phi, models)
        n, j = len(prediction), len(radii)
        (mix, low, high), pmfs = np.empty((3, n, k)), np.empty((n, j, k))
        _ridge.candidates(prediction, variance, radii, selector.weights(), n, k, j,
                          rule is rules.optimistic, lo, hi, tolerance, selector.leader(),
                          mix, pmfs, low, high)
        return mix, prediction, low, high, pmfs
    moments = getattr(oracle, "moments", None)
    if moments is not None:
        prediction, variance = moments(phi, models)
        radius = np.sqrt(variance)[:, None, :] * radii[:, None]  # (n, J, K)
        high = prediction[:, None, :] + radius
        low = None if rule is rules.optimistic else prediction[:, None, :] - radius
    else:
        parts = [oracle.bounds(phi, models, float(r * r)) for r in radii.tolist()]
        prediction = parts[0][0]
        low, high = (np.stack([part[i] for part in parts], axis=1) for i in (1, 2))
    for bound in (low, high):  # clipped in place (np.clip costs several times more)
        if bound is not None:
            np.minimum(np.maximum(bound, lo, out=bound), hi, out=bound)
    rows = (-1, k)
    pmfs = rule(None if low is None else low.reshape(rows), high.reshape(rows),
                tolerance).reshape(high.shape)
    lead = selector.leader()
    lead_low = (low[:, lead] if low is not None else
                np.minimum(np.maximum(prediction - radius[:, lead], lo), hi))
    return selector.mix(pmfs), prediction, lead_low, high[:, lead], pmfs
