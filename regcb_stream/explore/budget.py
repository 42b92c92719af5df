"""Loss budgets, one interface: a fixed form, or the budget chosen online among candidates.

A budget turns the oracle's version space into bounds and the decision rule's
distributions. `FixedBudget` has one loss budget of a fixed form
(`regcb_stream.explore.schedules.loss_budget`); `AutoBudget` (``budget="auto"``) chooses
among candidate budgets online (`BudgetSelector`). Both answer the explorer alike:
``decide`` a block, ``draw_dense`` one dense context, ``replay`` a block in the compiled
online loop, ``score`` labels, ``freeze`` at a rebuild, reading the explorer's state (its
oracle, rule, reward range and epochs).

The automatic budget:

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
budget of the grid on every public stream (``docs/results/defaults.md``). The selection therefore
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

from regcb_stream.bounds import clip_bounds
from regcb_stream.explore import schedules
from regcb_stream.explore.decision import Decision
from regcb_stream.state import Stateful

try:
    from regcb_stream.oracles import _ridge  # (the selector's compiled credit and mixture)
except ImportError:  # not built: the reference arithmetic
    _ridge = None

#: mellowness values of the default candidates (VW's budget form): around the best fixed
#: values of docs/results/defaults.md
DEFAULT_GRID = (3e-4, 1e-3, 3e-3, 1e-2)
DEFAULT_RATE = 2.0  # learning rate per sqrt(label): eta_n = rate / sqrt(n)
DEFAULT_FLOOR = 0.02  # share of the play spread evenly over the candidates
DEFAULT_BETA = 1e-3  # budget="beta" without a beta
COUNTED = ("beta", "summed", "mellowness")  # the fixed forms that are a function of the
# label count alone (the compiled loops take a budget per count; "theory" is not)


class FixedBudget(Stateful):
    """A loss budget of one form: ``"mellowness"`` (VW's ``c ln(K n) span^2``), ``"beta"``
    (beta on the normalized risk), ``"summed"`` (beta on the summed loss) or ``"theory"``
    (the paper's schedule for a ``horizon``)."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "kind": "kind",
        "beta": "beta",
        "mellowness": "mellowness",
        "horizon": "horizon",
    }

    selector = None

    def __init__(self, kind: str, beta: float | None, mellowness: float,
                 horizon: int | None = None):
        self.kind = kind
        self.beta = DEFAULT_BETA if beta is None else beta
        self.mellowness = mellowness
        self.horizon = horizon

    @property
    def counted(self) -> bool:
        """Whether the budget is a function of the label count alone (the compiled loops
        and one-row calls take it)."""
        return self.kind in COUNTED

    def compiled(self, capabilities) -> bool:
        """Whether an oracle of these capabilities replays with it in its compiled loop."""
        return self.counted

    @property
    def in_force(self) -> str:
        """The budget in words (for summaries)."""
        if self.kind == "beta":
            return f"beta {self.beta:g}"
        if self.kind == "summed":
            return f"beta {self.beta:g} on the summed loss"
        if self.kind == "mellowness":
            return f"mellowness {self.mellowness:g}"
        return f"theory (horizon {self.horizon})"

    def summary(self) -> None:
        """(A fixed budget has no selection to show.)"""
        return None

    def loss(self, explorer, n_labels, n_actions: int):
        """The budget of a decision state built from ``n_labels`` labels (NaN: none, the
        uniform play of the first epoch); an array of counts gives an array of budgets."""
        lo, hi = explorer.reward_range
        budget = schedules.loss_budget(
            self.kind, n_labels=n_labels, n_actions=n_actions, span=hi - lo, beta=self.beta,
            mellowness=self.mellowness, epoch=explorer.epoch, n_epochs=explorer.n_epochs,
            dim=explorer.dim, horizon=self.horizon)
        if isinstance(n_labels, np.ndarray):
            return np.where(n_labels > 0, budget, np.nan)
        return budget if n_labels else math.nan

    def uniform(self, pmf: np.ndarray) -> None:
        """The candidates' distributions in uniform play (none)."""
        return None

    def decide(self, explorer, phi, models) -> Decision:
        """Bounds and distributions of a block under the frozen fit."""
        oracle, k = explorer.oracle, phi.shape[1]
        budget = self.loss(explorer, explorer.n_frozen, k)
        if explorer.capabilities.online_loop:
            return oracle.decisions(phi, models, budget, explorer.rule,
                                    explorer.reward_range, explorer.tolerance)
        prediction, low, high = oracle.bounds(phi, models, budget)
        low, high = clip_bounds(low, high, explorer.reward_range)
        return Decision(explorer.rule(low, high, explorer.tolerance, prediction,
                                      explorer.reward_range), prediction, low, high)

    def ready(self, explorer) -> bool:
        """Whether ``draw_dense`` may decide now."""
        return True

    def draw_dense(self, explorer, values, models, intercept: float, uniform: float,
                   out=None):
        """One dense context's decision and its draw by ``uniform`` in one compiled call
        (`RidgeOracle.predict_dense`): ``(index, probability, info)``, or None."""
        drawn = explorer.oracle.predict_dense(
            values, models, intercept, self.loss(explorer, explorer.n_frozen, len(models)),
            explorer.rule, explorer.reward_range, explorer.tolerance, uniform, out)
        return None if drawn is None else (*drawn, {})

    def replay(self, explorer, rows, models, played, rewards, probs, weights, counts,
               change=None):
        """A block in the oracle's compiled online loop (``counts``: the labels before each
        rebuild; ``change``: the change test, run in the loop, which it stops)."""
        return explorer.oracle.replay_online(
            rows, models, played, rewards, weights,
            self.loss(explorer, counts, rows.shape[1]), explorer.rule,
            explorer.reward_range, explorer.tolerance,
            **({} if change is None else {"change": change}))

    def score(self, candidates, probs, rewards, reward_range) -> None:
        """Labels score nothing."""

    def freeze(self) -> None:
        """Nothing to freeze at a rebuild."""


class AutoBudget(Stateful):
    """The budget chosen online among the mellowness values of ``grid`` (`BudgetSelector`),
    on an ellipsoid oracle."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "selector": "selector",
    }

    counted = True

    def __init__(self, grid=DEFAULT_GRID):
        self.selector = BudgetSelector(grid)

    def compiled(self, capabilities) -> bool:
        return capabilities.auto_loop

    @property
    def in_force(self) -> str:
        return f"automatic, leading mellowness {self.selector.summary()['leader']:g}"

    def summary(self) -> dict:
        return self.selector.summary()

    def uniform(self, pmf: np.ndarray) -> np.ndarray:
        """Every candidate plays uniformly too."""
        n, k = pmf.shape
        return np.broadcast_to(pmf[:, None, :], (n, len(self.selector.grid), k))

    def decide(self, explorer, phi, models) -> Decision:
        """Every candidate budget's distribution and the selector's mixture of them, with
        the leading candidate's bounds."""
        return Decision(*candidate_decisions(
            self.selector, explorer.oracle, explorer.rule, phi, models, explorer.n_frozen,
            explorer.reward_range, explorer.tolerance, explorer.capabilities.online_loop))

    def ready(self, explorer) -> bool:
        return explorer.n_frozen > 0

    def draw_dense(self, explorer, values, models, intercept: float, uniform: float):
        """``FixedBudget.draw_dense`` with the candidates (`RidgeOracle.predict_auto`):
        ``(index, probability, info)`` with each candidate's probability of it in
        ``info``, and every candidate's distribution as its fourth item, or None."""
        lo, hi = explorer.reward_range
        roots, scale = self.selector.radius_factors(explorer.n_frozen, len(models), hi - lo)
        pmfs = np.empty((len(roots), len(models)))
        drawn = explorer.oracle.predict_auto(
            values, models, intercept, roots, scale, self.selector.weights(),
            explorer.rule, explorer.reward_range, explorer.tolerance, uniform, pmfs)
        return None if drawn is None else (drawn[0], drawn[1], {"candidates": drawn[2]}, pmfs)

    def replay(self, explorer, rows, models, played, rewards, probs, weights, counts,
               change=None):
        lo, hi = explorer.reward_range
        scales = self.selector.radius_scales(counts, rows.shape[1], hi - lo)
        return explorer.oracle.replay_auto(
            rows, models, played, rewards, weights, probs, scales, self.selector,
            explorer.rule, explorer.reward_range, explorer.tolerance)

    def score(self, candidates, probs, rewards, reward_range) -> None:
        """Score the candidates with labels: ``candidates`` ``(n, J)`` are their
        probabilities of the played actions, ``probs`` the played probabilities."""
        for row, prob, reward in zip(np.asarray(candidates, float).reshape(
                len(rewards), -1).tolist(), np.asarray(probs, float).ravel().tolist(),
                np.asarray(rewards, float).tolist()):
            self.selector.update(row, prob, unit_reward(reward, reward_range))

    def freeze(self) -> None:
        self.selector.freeze()


def unit_reward(reward: float, reward_range: tuple[float, float]) -> float:
    """A reward scaled to [0, 1] by the reward range (clipped, for out-of-range ones)."""
    lo, hi = reward_range
    return min(max((float(reward) - lo) / (hi - lo), 0.0), 1.0)


class BudgetSelector(Stateful):
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

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "grid": "grid",
        "rate": "rate",
        "floor": "floor",
        "estimates": "estimates",
        "n_scored": "n_scored",
        "sqrt_grid": "_sqrt_grid",
        "live": "_live",
        "weights": "_weights",
        "spare": "_spare",
        "live_leader": "_live_leader",
        "leader": "_leader",
    }

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
        self._live: np.ndarray | None = None  # the weights of the estimates (None: not yet)
        self._weights: np.ndarray | None = None  # those of the last freeze, for the decisions
        self._spare: np.ndarray | None = None  # an array for update to weigh into
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

    def summary(self) -> dict:
        """Diagnostics: the candidates, their weights and estimates, the leading budget."""
        return {"mellowness": self.grid.tolist(), "weights": self._live_weights().tolist(),
                "estimates": list(self.estimates), "n_scored": self.n_scored,
                "leader": float(self.grid[self.estimates.index(max(self.estimates))])}


def _radius_scale(n_labels: int, n_actions: int, span: float) -> float:
    """The candidates' radii over the square roots of their mellowness: ``sqrt(ln(K n))``
    times the reward span (VW's budget form, `schedules.loss_budget`)."""
    return math.sqrt(math.log(n_actions * n_labels)) * span


def candidate_decisions(selector: BudgetSelector, oracle, rule, phi, models, n_labels: int,
                        reward_range: tuple[float, float], tolerance: float,
                        compiled: bool = False):
    """``(pmf, prediction, low, high, candidates)`` for a block of contexts: the mixture,
    the ellipsoid oracle's predictions, the leading candidate's clipped bounds and every
    candidate's distribution ``(n, J, K)``, from one ``moments`` call (``compiled``: the
    arithmetic in one compiled call; numpy calls are kept few otherwise, as this runs for
    every online round)."""
    k, (lo, hi) = phi.shape[1], reward_range
    radii = selector.radii(n_labels, k, hi - lo)
    prediction, variance = oracle.moments(phi, models)
    if compiled:
        n, j = len(prediction), len(radii)
        (mix, low, high), pmfs = np.empty((3, n, k)), np.empty((n, j, k))
        _ridge.candidates(prediction, variance, radii, selector.weights(), n, k, j,
                          rule.code, lo, hi, tolerance, selector.leader(),
                          mix, pmfs, low, high)
        return mix, prediction, low, high, pmfs
    radius = np.sqrt(variance)[:, None, :] * radii[:, None]  # (n, J, K)
    high = prediction[:, None, :] + radius
    low = None if rule.optimistic else prediction[:, None, :] - radius
    for bound in (low, high):  # clipped in place (np.clip costs several times more)
        if bound is not None:
            np.minimum(np.maximum(bound, lo, out=bound), hi, out=bound)
    rows = (-1, k)
    fit = np.broadcast_to(prediction[:, None, :], high.shape).reshape(rows)
    pmfs = rule(None if low is None else low.reshape(rows), high.reshape(rows), tolerance,
                fit, reward_range).reshape(high.shape)
    lead = selector.leader()
    lead_low = (low[:, lead] if low is not None else
                np.minimum(np.maximum(prediction - radius[:, lead], lo), hi))
    return selector.mix(pmfs), prediction, lead_low, high[:, lead], pmfs
