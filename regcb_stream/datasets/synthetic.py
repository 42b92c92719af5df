"""A realizable linear contextual-bandit problem (the setting of the paper's theory).

Contexts are uniform on the unit sphere in ``d`` dimensions; the mean reward of action
``a`` is ``0.5 + 0.5 <theta_a, x>`` with unit vectors ``theta_a``, so it lies in [0, 1] and
is linear in ``(1, x)``; observed rewards are Bernoulli draws of it.

>>> problem = LinearProblem.make(n_actions=3, dim=4, seed=0)
>>> X, means, rewards = problem.sample(5, seed=1)
>>> X.shape, means.shape, bool(((means >= 0) & (means <= 1)).all())
((5, 4), (5, 3), True)

"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LinearProblem:
    """Mean reward ``0.5 + 0.5 theta[a] . x`` for unit-norm ``x`` and ``theta[a]``."""

    theta: np.ndarray  # (K, d)

    @classmethod
    def make(cls, n_actions: int = 5, dim: int = 10, seed: int = 0) -> LinearProblem:
        """Draw a problem with ``n_actions`` random unit parameter vectors."""
        return cls(_unit_rows(np.random.default_rng(seed), n_actions, dim))

    def sample(self, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``n`` contexts, their mean rewards ``(n, K)`` and Bernoulli rewards ``(n, K)``."""
        rng = np.random.default_rng(seed)
        contexts = _unit_rows(rng, n, self.theta.shape[1])
        means = 0.5 + 0.5 * contexts @ self.theta.T
        rewards = (rng.random(means.shape) < means).astype(float)
        return contexts, means, rewards


def realizable_sample(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` rounds (contexts, mean rewards, rewards) of the realizable problem of the
    defaults' bar: K = 5, d = 10, the problem drawn with ``seed``, its sample with
    ``seed + 1``."""
    return LinearProblem.make(n_actions=5, dim=10, seed=seed).sample(n, seed=seed + 1)


def regret_growth(learner, n: int = 20_000) -> float:
    """R(T)/R(T/2) of a learner's ``predict`` and ``learn`` over ``n`` rounds of the problem
    of the defaults' bar (`realizable_sample` of seed 0): 1.0 when regret has stopped
    growing, 2.0 when it grows linearly."""
    X, means, rewards = realizable_sample(n)
    regret, actions = np.empty(n), list(range(5))
    for t, x in enumerate(X):
        action, prob, info = learner.predict(x, actions)
        regret[t] = means[t].max() - means[t, action]
        learner.learn(x, action, rewards[t, action], prob, **info)
    return float(regret.sum() / regret[: n // 2].sum())


def played_regret(learner, n: int, seed: int = 0) -> np.ndarray:
    """Cumulative regret of ``learner.play`` over ``n`` rounds of `realizable_sample`'s
    problem of ``seed``."""
    X, means, rewards = realizable_sample(n, seed)
    played, _ = learner.play(X, list(range(5)), lambda rows, i: rewards[rows, i])
    return np.cumsum(means.max(axis=1) - means[np.arange(n), played])


def _unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)
