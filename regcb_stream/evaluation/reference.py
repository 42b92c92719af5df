"""Reference policies for a bandit stream: uniform random and full-information ridge.

The full-information (supervised) reference sees every action's reward after each round,
fits one ridge regressor per action on the same epoch schedule as the learners, and plays
the greedy action: the best a learner of the same class can hope for.

>>> X = np.array([[1.0], [-1.0]] * 50)
>>> R = np.array([[1.0, 0.0], [0.0, 1.0]] * 50)
>>> round(full_information_reward(X, R), 2)
0.99
>>> uniform_reward(R)
0.5

"""

from __future__ import annotations

import itertools

import numpy as np

from regcb_stream.explore.schedules import rebuild_points


def learner_reward(learner, X: np.ndarray, R: np.ndarray) -> float:
    """Progressive reward of a learner (``predict``/``learn``) over one pass of a stream:
    the mean reward of the actions it chose while learning."""
    actions = list(range(R.shape[1]))
    total = 0.0
    for x, rewards in zip(X, R):
        action, prob, info = learner.predict(x, actions)
        total += rewards[action]
        learner.learn(x, action, rewards[action], prob, **info)
    return float(total / len(X))


def uniform_reward(R: np.ndarray) -> float:
    """Expected progressive reward of uniform random play on rewards ``R`` (n, K)."""
    return float(R.mean())


def full_information_reward(
    X: np.ndarray, R: np.ndarray, l2: float = 1.0, schedule: str = "online"
) -> float:
    """Progressive reward of greedy ridge regression that learns every action's reward."""
    design = np.c_[np.ones(len(X)), X]
    gram = l2 * np.eye(design.shape[1])
    moments = np.zeros((design.shape[1], R.shape[1]))
    starts = itertools.chain([0], rebuild_points(schedule))
    total, start = 0.0, next(starts)
    while start < len(X):
        stop = min(next(starts), len(X))
        block = slice(start, stop)
        theta = np.linalg.solve(gram, moments)
        chosen = (design[block] @ theta).argmax(axis=1)
        total += R[block][np.arange(stop - start), chosen].sum()
        gram += design[block].T @ design[block]
        moments += design[block].T @ R[block]
        start = stop
    return float(total / len(X))
