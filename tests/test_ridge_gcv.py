"""``RidgeOracle(l2="gcv")``: the penalty chosen by generalized cross-validation from the
sufficient statistics, the same as by brute force, on every path, through resumes and
delayed rewards; noisier labels get more shrinkage."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import drifting, late_and_in_order, play_one_by_one

from regcb_stream import RegCB, RidgeOracle
from regcb_stream.oracles.penalty_choice import GCV_FIRST, GCV_LEAST_DOF, GCV_PENALTIES
from regcb_stream.persist import dumps, loads

VARIANTS = ["optimistic", "elimination"]


def brute_force_gcv(X, y, models, penalty, prior):
    """GCV summed over the models, from each model's hat matrix."""
    total = 0.0
    for model in np.unique(models):
        x, r = X[models == model], y[models == model] - prior
        hat = x @ np.linalg.solve(x.T @ x + penalty * np.eye(X.shape[1]), x.T)
        rss = float(np.sum((r - hat @ r) ** 2))
        total += rss / max(1.0 - np.trace(hat) / len(r), GCV_LEAST_DOF) ** 2
    return total


@pytest.mark.parametrize("noise", [0.0, 0.5])
def test_the_choice_is_brute_force_gcvs(noise):
    rng = np.random.default_rng(1)
    n = GCV_FIRST
    X, models = rng.normal(size=(n, 4)), rng.integers(0, 2, n)
    y = X @ np.array([0.3, -0.2, 0.1, 0.0]) + noise * rng.normal(size=n)
    oracle = RidgeOracle(l2="gcv", prior=0.5)
    oracle.grow(2, 4)
    for t in range(n):
        oracle.learn(X[t], int(models[t]), float(y[t]))
        oracle.rebuild()
    best = min(GCV_PENALTIES, key=lambda p: brute_force_gcv(X, y, models, p, 0.5))
    assert oracle.penalty == best
    twin = RidgeOracle(l2=best, prior=0.5)
    twin.grow(2, 4)
    for t in range(n):
        twin.learn(X[t], int(models[t]), float(y[t]))
    twin.rebuild()
    np.testing.assert_allclose(oracle.predict(X[:5, None], np.array([0, 1])),
                               twin.predict(X[:5, None], np.array([0, 1])), atol=1e-12)


def test_noisier_labels_get_more_shrinkage():
    rng = np.random.default_rng(0)
    X, w = rng.normal(size=(2 * GCV_FIRST, 20)), rng.normal(size=20)
    chosen = {}
    for noise in (0.0, 5.0):
        y = X @ w + noise * rng.normal(size=len(X))
        oracle = RidgeOracle(l2="gcv")
        oracle.grow(1, 20)
        for t in range(len(X)):
            oracle.learn(X[t], 0, float(y[t]))
            oracle.rebuild()
        chosen[noise] = oracle.penalty
    assert chosen == {0.0: GCV_PENALTIES[0], 5.0: GCV_PENALTIES[-1]}


def make(variant="optimistic"):
    return RegCB(variant, oracle=RidgeOracle(l2="gcv", prior="optimistic"),
                 random_features=64, seed=3)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_path_makes_the_same_decisions(variant):
    X, R = drifting(1500, seed=1)
    R = np.where(np.random.default_rng(5).random(R.shape) < 0.3, 1.0 - R, R)  # noisy
    u = np.random.default_rng(2).random(1500)
    stepwise, looped = make(variant), make(variant)
    one_by_one = play_one_by_one(stepwise, X, R, u)
    played, _ = looped.play(X, list(range(4)), lambda rows, i: R[rows, i], u)
    np.testing.assert_array_equal(played, one_by_one)
    assert looped.model.oracle.penalty == stepwise.model.oracle.penalty
    np.testing.assert_array_equal(looped.model.oracle.state()["squares"],
                                  stepwise.model.oracle.state()["squares"])
    rewards = R[np.arange(1500), played]
    replayed = make(variant).replay(X, list(range(4)), played, rewards, np.full(1500, 0.5))
    by_rows = make(variant)
    for t in range(1500):
        np.testing.assert_array_equal(by_rows.decide(X[t], list(range(4))).pmf,
                                      replayed.pmf[t])
        by_rows.learn(X[t], int(played[t]), rewards[t], 0.5)


def test_a_saved_learner_carries_on_as_the_one_that_was_not():
    X, R = drifting(1000, seed=8)
    u = np.random.default_rng(1).random(1000)
    straight = play_one_by_one(make(), X, R, u)
    first = make()
    head = play_one_by_one(first, X[:437], R[:437], u[:437])
    resumed, _ = loads(dumps(first, {}))
    assert resumed.model.oracle.state()["labels"] == 437
    tail = play_one_by_one(resumed, X[437:], R[437:], u[437:])
    np.testing.assert_array_equal(np.r_[head, tail], straight)


def test_delayed_rewards_count_as_the_rewards_learned_in_order():
    """The label statistics of rewards that came late are those of the same rewards in
    order (without the change test, which sees each learner's own predictions when a
    reward comes, and may fire at another label in each)."""
    X, R = drifting(600, seed=7)
    learner, twin = late_and_in_order(  # (five decisions late; in order)
        lambda: RegCB(oracle=RidgeOracle(l2="gcv", prior="optimistic"), random_features=64,
                      seed=3, change_threshold=0), X, R)
    ours, theirs = learner.model.oracle.state(), twin.model.oracle.state()
    assert ours["labels"] == theirs["labels"] == 600
    np.testing.assert_allclose(ours["squares"], theirs["squares"], atol=1e-9)
    np.testing.assert_allclose(ours["b"], theirs["b"], atol=1e-9)


def test_gcv_is_refused_where_it_cannot_choose():
    with pytest.raises(ValueError, match="l2"):
        RidgeOracle(l2="gcv", piecewise=True)
    with pytest.raises(ValueError, match="l2"):
        RidgeOracle(l2="cv")
