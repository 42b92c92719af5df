"""The evaluation protocol of Foster et al. (2018), for any algorithm with a small interface.

The algorithm learns online on the training rounds, seeing only the chosen action's reward.
At checkpoints (every ``T/15`` rounds, plus 100, 300 and 1,000) its current decision rule is
scored on the holdout without learning: the validation reward is the mean over holdout rows
of ``sum_a pmf(a) r(a)``. The progressive reward is the mean reward of the actions played.
Every algorithm draws its actions by inverse CDF from the same uniforms (one per round,
``np.random.default_rng(seed)``), so algorithms with equal distributions play equal actions.

An algorithm is decided and taught in blocks of at most ``block_size()`` rounds (an epoch's
remainder for the epoch-based learners): ``decide`` sees the contexts (the rewards
are hidden from it), ``learn`` the rewards of the actions played. An algorithm may instead
``play`` the rounds between two checkpoints itself, asking ``reveal`` for the reward of each
action it plays (:func:`play_in_blocks` is that loop for ``decide`` and ``learn``).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from bench.harness.problems import Problem, Rounds

EARLY_CHECKPOINTS = (100, 300, 1000)
N_REGULAR = 15
EARLY_ROUNDS = (500, 2000)  # progressive reward over the first rounds, reported apart
WINDOW = 20  # sliding window of the width and plausible-set diagnostics
DIAGNOSTIC_POINTS = 60  # log-spaced rounds at which the smoothed diagnostics are kept


@dataclass
class Step:
    """Decisions for a block: actions, their probabilities and optional diagnostics
    (confidence width of the optimistic action, plausible-set size) per round."""

    actions: np.ndarray
    probs: np.ndarray
    width: np.ndarray | None = None
    plausible: np.ndarray | None = None


class Algorithm(Protocol):
    """What the protocol needs from an algorithm (one with its own ``play(rounds, u,
    reveal) -> Step`` needs only ``holdout_pmf``)."""

    def block_size(self) -> int:
        """Rounds that may be decided before the next ``learn``."""

    def decide(self, rounds: Rounds, u: np.ndarray) -> Step:
        """Decide a block (rewards hidden), drawing actions from the uniforms ``u``."""

    def learn(self, rounds: Rounds, step: Step, rewards: np.ndarray) -> None:
        """Learn the rewards of the actions played in a block."""

    def holdout_pmf(self, rounds: Rounds) -> np.ndarray:
        """Distributions ``(n, K)`` of the current decision rule, without learning."""


def checkpoints(n: int) -> list[int]:
    """Rounds after which the validation reward is computed.

    >>> checkpoints(30)
    [2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
    >>> checkpoints(1500)[:5]
    [100, 200, 300, 400, 500]
    """
    regular = {max(1, round(n * j / N_REGULAR)) for j in range(1, N_REGULAR + 1)}
    return sorted(regular | {c for c in EARLY_CHECKPOINTS if c < n})


def sample(pmf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws, one per row of ``pmf`` (VW's sampler in ``run_vw`` too).

    >>> sample(np.array([[0.5, 0.5], [0.5, 0.5], [0.0, 1.0]]), np.array([0.2, 0.7, 0.0]))
    array([0, 1, 1])
    """
    cdf = np.cumsum(pmf, axis=1)
    index = (cdf <= (u * cdf[:, -1])[:, None]).sum(axis=1)
    return np.minimum(index, pmf.shape[1] - 1)


def hide(rounds: Rounds) -> Rounds:
    """The rounds with their rewards replaced by NaN (what an algorithm may see)."""
    return Rounds(rounds.X, np.full(rounds.R.shape, np.nan), rounds.mask)


def expected_reward(pmf: np.ndarray, R: np.ndarray) -> float:
    """Mean over rows of ``sum_a pmf(a) R(a)``."""
    return float(np.einsum("nk,nk->n", pmf, R).mean())


def run_protocol(algo: Algorithm, problem: Problem, seed: int) -> dict:
    """Run one algorithm on one problem; return the curves and summary of the run."""
    train, hold = problem.train, problem.hold
    n, hidden_train, hidden_hold = len(train), hide(train), hide(problem.hold)
    u = np.random.default_rng(seed).random(n)
    rewards = np.empty(n)
    width, plausible = np.full(n, np.nan), np.full(n, np.nan)
    points, validation, t = checkpoints(n), [], 0
    play = getattr(algo, "play", None) or functools.partial(play_in_blocks, algo)
    start = time.perf_counter()
    for point in points:
        step = play(hidden_train.rows(t, point), u[t:point],
                    functools.partial(_reveal, train.R[t:point]))
        rewards[t:point] = train.R[np.arange(t, point), step.actions]
        if step.width is not None:
            width[t:point], plausible[t:point] = step.width, step.plausible
        t = point
        validation.append(expected_reward(algo.holdout_pmf(hidden_hold), hold.R))
    getattr(algo, "close", lambda: None)()
    cumulative = np.cumsum(rewards)
    record = {
        "n_train": n, "n_hold": len(hold), "t": points, "validation": validation,
        "progressive_curve": [float(cumulative[p - 1] / p) for p in points],
        "progressive": float(cumulative[-1] / n),
        "early": {str(m): float(cumulative[m - 1] / m) for m in EARLY_ROUNDS if m <= n},
        "seconds": round(time.perf_counter() - start, 3),
    }
    if not np.isnan(width).all():
        record["diagnostics"] = smoothed_diagnostics(width, plausible)
    return record


def play_in_blocks(algo: Algorithm, rounds: Rounds, u: np.ndarray, reveal) -> Step:
    """Play ``rounds`` (rewards hidden) with ``decide`` and ``learn``, in blocks of at
    most ``algo.block_size()`` rounds; ``reveal(rows, actions)`` gives the rewards."""
    n = len(rounds)
    actions, probs = np.empty(n, np.intp), np.empty(n)
    width, plausible = np.full(n, np.nan), np.full(n, np.nan)
    t, diagnosed = 0, False
    while t < n:
        stop = min(n, t + max(1, algo.block_size()))
        block = rounds.rows(t, stop)
        step = algo.decide(block, u[t:stop])
        algo.learn(block, step, reveal(np.arange(t, stop), step.actions))
        actions[t:stop], probs[t:stop] = step.actions, step.probs
        if step.width is not None:
            width[t:stop], plausible[t:stop], diagnosed = step.width, step.plausible, True
        t = stop
    return Step(actions, probs, *((width, plausible) if diagnosed else ()))


def _reveal(R: np.ndarray, rows: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """The rewards of ``actions`` in ``rows`` (the only rewards an algorithm sees)."""
    return R[rows, actions]


def smoothed_diagnostics(width: np.ndarray, plausible: np.ndarray) -> dict:
    """Sliding-window (:data:`WINDOW`) means of the diagnostics, kept at log-spaced rounds."""
    n = len(width)
    if n < WINDOW:
        return {"t": [], "width": [], "plausible": []}
    kernel = np.ones(WINDOW) / WINDOW
    rounds = np.unique(np.geomspace(WINDOW, n, DIAGNOSTIC_POINTS).astype(int))
    pick = rounds - WINDOW  # window ending at round t (1-based) starts at index t - WINDOW
    return {
        "t": rounds.tolist(),
        "width": np.convolve(width, kernel, "valid")[pick].tolist(),
        "plausible": np.convolve(plausible, kernel, "valid")[pick].tolist(),
    }
