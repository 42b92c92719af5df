"""``RidgeOracle(l2="gcv")`` and ``l2="evidence"``: the penalty chosen by generalized
cross-validation or by the labels' marginal likelihood (with a further factor on the random
features) from the sufficient statistics, the same as by brute force, on every path,
through resumes and delayed rewards; noisier labels get more shrinkage, a linear reward
leaves the random features out."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import drifting, late_and_in_order, play_one_by_one

from regcb_stream import RegCB, RidgeOracle
from regcb_stream.oracles.base import Binding
from regcb_stream.oracles.penalty_choice import (
    FEATURE_SCALES,
    GCV_FIRST,
    GCV_GROWTH,
    GCV_LEAST_DOF,
    GCV_PENALTIES,
)
from regcb_stream.persist import dumps, loads

VARIANTS = ["optimistic", "elimination"]
CHOOSERS = ["gcv", "evidence"]


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


def brute_force_evidence(X, y, models, penalty, scale, random, prior):
    """The negated log evidence (up to constants), summed over the models: the last
    ``random`` columns' penalty ``scale`` times the others'."""
    p = np.full(X.shape[1], penalty)
    p[X.shape[1] - random:] *= scale
    total = 0.0
    for model in np.unique(models):
        x, r = X[models == model], y[models == model] - prior
        a = x.T @ x + np.diag(p)
        residual = float(r @ r - r @ x @ np.linalg.solve(a, x.T @ r))
        total += 0.5 * len(r) * np.log(residual / len(r)) + 0.5 * (
            np.linalg.slogdet(a)[1] - np.sum(np.log(p)))
    return total


def evidence_oracle(random: int) -> RidgeOracle:
    """An oracle choosing by evidence, its rows ending with ``random`` random features."""
    return RidgeOracle(l2="evidence", prior=0.5).bind(Binding(random_features=random))


@pytest.mark.parametrize("linear", [True, False])
def test_the_evidences_choice_is_brute_forces(linear):
    """On a linear reward with noise the random features' factor grows; on a reward of
    the random features' columns it stays 1; either way the choice is brute force's."""
    rng = np.random.default_rng(4)
    n = GCV_FIRST
    X, models = rng.normal(size=(n, 6)), rng.integers(0, 2, n)
    w = np.array([0.3, -0.2, 0.1, 0.0, 0.0, 0.0] if linear else [0, 0, 0, 0, 1.0, -1.0])
    y = X @ w + (0.5 if linear else 0.05) * rng.normal(size=n)
    oracle = evidence_oracle(2)
    oracle.grow(2, 6)
    for t in range(n):
        oracle.learn(X[t], int(models[t]), float(y[t]))
        oracle.rebuild()
    scores = {(p, s): brute_force_evidence(X, y, models, p, s, 2, 0.5)
              for s in FEATURE_SCALES for p in GCV_PENALTIES}
    best = min(scores, key=scores.get)
    assert (oracle.penalty, oracle.state()["scale"]) == best
    assert (best[1] > 1.0) == linear
    assert oracle.describe().endswith(f"chosen by evidence, {best[1]:g}x on the random "
                                      "features")
    a = oracle.state()["a"]
    gram = sum(np.outer(x, x) for x, m in zip(X, models) if m == 0)
    penalties = np.array([best[0]] * 4 + [best[0] * best[1]] * 2)
    np.testing.assert_allclose(np.diag(a[0] - gram), penalties, rtol=1e-9)


@pytest.mark.parametrize("noise", [0.05, 0.5, 3.0])
def test_the_compiled_evidence_chooses_as_the_eigenvalues_do(noise):
    """The compiled oracle scores the evidence by Cholesky factors, the numpy reference by
    eigenvalues: the same choice at every point (four, the first ones), with stand-ins."""
    rng = np.random.default_rng(7)
    n = GCV_FIRST * GCV_GROWTH**3
    X, models = rng.normal(size=(n, 7)), rng.integers(0, 3, n)
    y = X @ rng.normal(size=7) * 0.3 + np.sin(X[:, 5]) + noise * rng.normal(size=n)
    oracles = [RidgeOracle(l2="evidence", prior=0.5, kernels=kernels).bind(
        Binding(random_features=3)) for kernels in (True, False)]
    for oracle in oracles:
        oracle.grow(3, 7)
    choices = [[], []]
    for t in range(n):
        for oracle, seen in zip(oracles, choices):
            oracle.learn(X[t], int(models[t]), float(y[t]), stand_in=t % 97 == 0)
            oracle.rebuild()
            state = oracle.state()
            if not seen or seen[-1] != (oracle.penalty, state["scale"]):
                seen.append((oracle.penalty, state["scale"]))
    assert choices[0] == choices[1]


def test_the_evidence_kernel_refuses_a_matrix_not_positive_definite():
    from regcb_stream.oracles import _ridge

    rng = np.random.default_rng(8)
    x = rng.normal(size=(40, 6))
    gram, b, grid, out = x.T @ x, rng.normal(size=6), np.array(GCV_PENALTIES), np.empty((2, 3))
    assert _ridge.evidence(gram, b, grid, out)
    for at, penalty in enumerate(GCV_PENALTIES):
        a = gram + penalty * np.eye(6)
        assert out[0, at] == pytest.approx(b @ np.linalg.solve(a, b), rel=1e-12)
        assert out[1, at] == pytest.approx(np.linalg.slogdet(a)[1], rel=1e-12)
    assert not _ridge.evidence(-gram, b, grid, out)


def test_without_random_features_the_evidence_chooses_the_penalty_alone():
    rng = np.random.default_rng(6)
    X, w = rng.normal(size=(GCV_FIRST, 5)), rng.normal(size=5)
    y = X @ w + 3.0 * rng.normal(size=GCV_FIRST)
    oracle = evidence_oracle(0)
    oracle.grow(1, 5)
    for t in range(GCV_FIRST):
        oracle.learn(X[t], 0, float(y[t]))
        oracle.rebuild()
    models = np.zeros(GCV_FIRST, int)
    best = min(GCV_PENALTIES, key=lambda p: brute_force_evidence(X, y, models, p, 1.0, 0, 0.5))
    assert oracle.penalty == best and oracle.state()["scaled"] is None


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


def make(variant="optimistic", l2="gcv"):
    return RegCB(variant, oracle=RidgeOracle(l2=l2, prior="optimistic"),
                 random_features=64, seed=3)


@pytest.mark.parametrize("l2", CHOOSERS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_path_makes_the_same_decisions(variant, l2):
    X, R = drifting(1500, seed=1)
    R = np.where(np.random.default_rng(5).random(R.shape) < 0.3, 1.0 - R, R)  # noisy
    u = np.random.default_rng(2).random(1500)
    stepwise, looped = make(variant, l2), make(variant, l2)
    one_by_one = play_one_by_one(stepwise, X, R, u)
    played, _ = looped.play(X, list(range(4)), lambda rows, i: R[rows, i], u)
    np.testing.assert_array_equal(played, one_by_one)
    assert looped.model.oracle.penalty == stepwise.model.oracle.penalty
    assert looped.model.oracle.state()["scale"] == stepwise.model.oracle.state()["scale"]
    np.testing.assert_array_equal(looped.model.oracle.state()["squares"],
                                  stepwise.model.oracle.state()["squares"])
    rewards = R[np.arange(1500), played]
    replayed = make(variant, l2).replay(X, list(range(4)), played, rewards,
                                        np.full(1500, 0.5))
    by_rows = make(variant, l2)
    for t in range(1500):
        np.testing.assert_array_equal(by_rows.decide(X[t], list(range(4))).pmf,
                                      replayed.pmf[t])
        by_rows.learn(X[t], int(played[t]), rewards[t], 0.5)


@pytest.mark.parametrize("l2", CHOOSERS)
def test_a_saved_learner_carries_on_as_the_one_that_was_not(l2):
    X, R = drifting(1000, seed=8)
    u = np.random.default_rng(1).random(1000)
    straight = play_one_by_one(make(l2=l2), X, R, u)
    first = make(l2=l2)
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


@pytest.mark.parametrize("forget", [1.0, 0.999])
def test_a_choice_scores_only_revealed_rewards(forget):
    """Rows learned with stand-in rewards while theirs are awaited are in the fit, not in
    what the choice scores: with 40 stand-ins waiting (each far from its reward), the
    choice at the 256th revealed label is the brute force's over the revealed labels
    alone (with them, it would be a larger penalty), and their share is back to nothing
    once each stand-in is revealed or dropped."""
    rng = np.random.default_rng(9)
    n, waiting = GCV_FIRST, 40
    X, models = rng.normal(size=(n + waiting, 6)), rng.integers(0, 2, n + waiting)
    y = X @ np.array([0.0, 0.0, 0.0, 0.0, 1.0, -1.0]) + 0.05 * rng.normal(size=n + waiting)
    oracle = RidgeOracle(l2="evidence", prior=0.5, forget=forget).bind(
        Binding(random_features=2))
    oracle.grow(2, 6)
    clocks = {}
    for t in rng.permutation(n + waiting):
        clocks[t] = oracle.clock if forget < 1.0 else None
        oracle.learn(X[t], int(models[t]), 3.0 if t >= n else float(y[t]),
                     stand_in=bool(t >= n))
        oracle.rebuild()
    assert oracle.state()["labels"] == n
    if forget == 1.0:
        scores = {(p, s): brute_force_evidence(X[:n], y[:n], models[:n], p, s, 2, 0.5)
                  for s in FEATURE_SCALES for p in GCV_PENALTIES}
        assert (oracle.penalty, oracle.state()["scale"]) == min(scores, key=scores.get)
        assert oracle.penalty == GCV_PENALTIES[0]  # (the stand-ins' noise would ask for 3)
    for t in range(n, n + waiting):
        when = {} if clocks[t] is None else {"at": clocks[t]}
        if t % 2:
            oracle.relabel(X[t], int(models[t]), 3.0, float(y[t]), **when)
        else:
            oracle.learn(X[t], int(models[t]), 3.0, -1.0, stand_in=True, **when)
        oracle.rebuild()
    assert oracle.state()["labels"] == n + waiting // 2
    for part in oracle.state()["standing"]:
        np.testing.assert_allclose(part, 0.0, atol=1e-9)


@pytest.mark.parametrize("l2", CHOOSERS)
def test_a_choice_is_refused_where_it_cannot_choose(l2):
    with pytest.raises(ValueError, match="l2"):
        RidgeOracle(l2=l2, piecewise=True)
    with pytest.raises(ValueError, match="l2"):
        RidgeOracle(l2="cv")
