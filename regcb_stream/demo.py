"""``make demo``: stream bandit problems through RegCB and print its progressive reward.

Progressive reward is the mean reward of the actions the learner chose while learning.
It is shown next to uniform random play and the full-information references (ridge
regression that sees every action's reward: on the contexts, and on the contexts with the
default's random features). Problems: a synthetic realizable linear one
(K=5, d=10) and, when ``../shared/data`` is there, the UCI ``letter`` set (K=26).
"""

from __future__ import annotations

import time

import numpy as np

from regcb_stream import RegCB
from regcb_stream.datasets import uci
from regcb_stream.datasets.synthetic import LinearProblem
from regcb_stream.defaults import RANDOM_FEATURES
from regcb_stream.evaluation.reference import (
    full_information_reward,
    learner_reward,
    uniform_reward,
)
from regcb_stream.features.random_features import RandomFeatures


def report(name: str, X: np.ndarray, R: np.ndarray) -> None:
    print(f"\n{name}: {len(X)} rounds, K={R.shape[1]}, d={X.shape[1]}")
    print(f"  {'policy':<34}{'progressive reward':>20}{'rounds/s':>10}")
    for variant in ("elimination", "optimistic"):  # the defaults otherwise: no tuning
        start = time.perf_counter()
        reward = learner_reward(RegCB(variant, seed=0), X, R)
        speed = len(X) / (time.perf_counter() - start)
        name = f'RegCB("{variant}")'
        print(f"  {name:<34}{reward:>20.4f}{speed:>10.0f}")
    print(f"  {'uniform random':<34}{uniform_reward(R):>20.4f}")
    mapped = RandomFeatures(RANDOM_FEATURES, seed=0)(X)
    for name, contexts in (("linear", X), ("random features", mapped)):
        name = f"full information, {name}"
        print(f"  {name:<34}{full_information_reward(contexts, R):>20.4f}")


def main() -> None:
    X, _, R = LinearProblem.make(n_actions=5, dim=10, seed=0).sample(20_000, seed=1)
    report("synthetic realizable linear problem", X, R)
    try:
        X, R = uci.bandit_stream("letter", noisy=False, seed=0)
    except FileNotFoundError as missing:
        print(f"\nletter skipped: {missing}")
        return
    report("letter (UCI, standardized features, permutation seed 0)", X, R)


if __name__ == "__main__":
    main()
