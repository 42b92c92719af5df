"""The GB5 oracle: leaf-value ridge bounds, refit schedule, and the learner on it."""

from __future__ import annotations

import pickle

import lightgbm
import numpy as np
import pytest
from scipy.optimize import minimize

from regcb_stream import RegCB, RidgeOracle, checks
from regcb_stream.oracles.trees import TreesOracle

VARIANTS = ["elimination", "optimistic"]


def _data(n: int, seed: int = 0, dim: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, dim))
    y = np.clip((np.abs(X[:, 0]) > 0.5) * 0.6 + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n), 0, 1)
    return X, y, rng.uniform(0.5, 1.5, size=n)


def _fitted(oracle: TreesOracle, X, y, w, model: int = 0, n_models: int = 1):
    oracle.grow(n_models, X.shape[1])
    oracle.learn_many(X, np.full(len(y), model), y, w)
    oracle.rebuild()
    return oracle


def _leaf_design(oracle: TreesOracle, X, model: int = 0) -> np.ndarray:
    """Dense leaf-indicator matrix of the model's current LightGBM ensemble, built from the
    booster's own leaf indices and leaf counts (not through the oracle's encoding)."""
    booster = lightgbm.Booster(model_str=oracle._models[model].trees.model)
    sizes = [tree["num_leaves"] for tree in booster.dump_model()["tree_info"]]
    leaves = booster.predict(X, pred_leaf=True).reshape(len(X), -1)
    design = np.zeros((len(X), sum(sizes)))
    for t, offset in enumerate(np.r_[0, np.cumsum(sizes)[:-1]]):
        design[np.arange(len(X)), offset + leaves[:, t]] = 1.0
    return design, booster


def _ridge_reference(design, booster, X, y, w, queries, budget, l2=1.0):
    """The anchored leaf ridge through the reference RidgeOracle: features
    ``indicator / sqrt(T)``, targets the boosted ensemble's residuals."""
    scale = 1 / np.sqrt(booster.num_trees())
    reference = RidgeOracle(l2=l2)
    reference.grow(1, design.shape[1])
    reference.learn_many(scale * design[: len(y)], np.zeros(len(y), int), y - booster.predict(X), w)
    reference.rebuild()
    phi = scale * design[len(y):, None, :]
    prediction, low, high = reference.bounds(phi, np.array([0]), budget)
    boosted = booster.predict(queries)[:, None]
    return prediction + boosted, low + boosted, high + boosted


@pytest.mark.parametrize("extra", [6, 60], ids=["woodbury", "fresh-inverse"])
def test_bounds_are_the_leaf_ridge_ellipsoid_of_the_fixed_structure(extra):
    """After the fit on 100 rows, ``extra`` more rows update the leaf values only."""
    X, y, w = _data(100 + extra + 20)
    queries = X[-20:]
    oracle = _fitted(TreesOracle(), X[:100], y[:100], w[:100])
    structure = oracle._models[0].trees
    oracle.learn_many(X[100:-20], np.zeros(extra, int), y[100:-20], w[100:-20])
    oracle.rebuild()
    assert oracle._models[0].trees is structure  # no refit before the data doubles
    got = oracle.bounds(queries[:, None, :], np.array([0]), budget=0.3)
    design, booster = _leaf_design(oracle, X)
    expected = _ridge_reference(design, booster, X[:-20], y[:-20], w[:-20], queries, 0.3)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, atol=1e-8)


def test_bounds_are_the_extremes_over_the_version_space():
    """A tiny ensemble (D <= 12 leaves): the regularized loss over raw leaf values, its
    minimum and extremes found by a generic optimizer."""
    X, y, w = _data(40, seed=3, dim=2)
    oracle = _fitted(TreesOracle(n_estimators=3, max_depth=2, l2=0.5), X, y, w)
    design, booster = _leaf_design(oracle, np.r_[X, X[:1] * 0.5])
    boosted = np.concatenate([[booster.get_leaf_output(t, j) for j in range(n["num_leaves"])]
                              for t, n in enumerate(booster.dump_model()["tree_info"])])
    penalty = 0.5 * booster.num_trees()  # l2 on leaf values scaled by sqrt(T)

    def loss(v):
        return w @ (design[:-1] @ v - y) ** 2 + penalty * (v - boosted) @ (v - boosted)

    best = minimize(loss, boosted, method="BFGS", options={"gtol": 1e-12})
    budget, query = 0.2, design[-1]
    limit = {"type": "ineq", "fun": lambda v: budget - (loss(v) - best.fun)}
    extremes = [
        minimize(lambda v: -sign * (v @ query), best.x, constraints=[limit], method="SLSQP",
                 options={"ftol": 1e-14, "maxiter": 500}).x @ query
        for sign in (-1.0, 1.0)
    ]
    prediction, low, high = oracle.bounds(X[None, :1] * 0.5, np.array([0]), budget)
    assert prediction[0, 0] == pytest.approx(best.x @ query, abs=1e-6)
    assert [low[0, 0], high[0, 0]] == pytest.approx(extremes, abs=1e-5)


@pytest.mark.parametrize("backend", ["lightgbm", "sklearn"])
def test_a_huge_penalty_gives_the_boosted_ensemble(backend):
    X, y, w = _data(200, seed=1)
    oracle = _fitted(TreesOracle(n_estimators=30, backend=backend, l2=1e12), X, y, w)
    trees = oracle._models[0].trees
    ensemble = trees.model.predict(X) if backend == "sklearn" else trees._booster.predict(X)
    np.testing.assert_allclose(oracle.predict(X[:, None, :], np.array([0]))[:, 0], ensemble,
                               atol=1e-8)


def test_sklearn_backend_bounds_shrink_where_data_is():
    X, y, w = _data(150, seed=2)
    oracle = _fitted(TreesOracle(backend="sklearn", n_estimators=20), X, y, w)
    _, low, high = oracle.bounds(np.r_[X[:5], 9 + X[:5]][:, None, :], np.array([0]), 1.0)
    width = (high - low)[:, 0]
    assert (width > 0).all() and width[:5].mean() < 2.0  # prior width: 2
    restored = pickle.loads(pickle.dumps(oracle))
    np.testing.assert_array_equal(restored.predict(X[:, None, :], np.array([0])),
                                  oracle.predict(X[:, None, :], np.array([0])))


def test_refit_schedule_and_prior():
    oracle = TreesOracle(l2=4.0)
    oracle.grow(2, 3)
    phi = np.broadcast_to(np.ones((1, 1, 3)), (1, 2, 3))
    prediction, low, high = oracle.bounds(phi, slice(0, 2), budget=1.0)
    assert prediction.tolist() == [[0, 0]] and high.tolist() == [[0.5, 0.5]]  # sqrt(1 / 4)
    X, y, w = _data(40)
    fits = []
    for i in range(40):
        oracle.learn(X[i], 0, y[i], 1.0)
        oracle.rebuild()
        fits.append(oracle._models[0].n_fit)
    assert sorted(set(fits)) == [1, 2, 4, 8, 16, 32]
    assert oracle.bounds(phi, slice(0, 2), 1.0)[2][0, 1] == 0.5  # model 1: still the prior


def test_action_features_and_pickling():
    """The joint class (one model, per-action rows) equals scoring the rows one by one."""
    X, y, w = _data(120, seed=4)
    oracle = _fitted(TreesOracle(n_estimators=30), X, y, w)
    phi = X[:12].reshape(4, 3, 3)
    got = oracle.bounds(phi, np.zeros(3, int), 0.5)
    single = oracle.bounds(X[:12, None, :], np.array([0]), 0.5)
    for a, b in zip(got, single):
        np.testing.assert_allclose(a.ravel(), b.ravel(), atol=1e-12)
    restored = pickle.loads(pickle.dumps(oracle))
    for a, b in zip(restored.bounds(phi, np.zeros(3, int), 0.5), got):
        np.testing.assert_array_equal(a, b)


# -- the learner -------------------------------------------------------------------------


def _nonlinear_stream(n: int, seed: int):
    """Three actions; which one is best depends on |x0| > 0.5 (not linear in x)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    far = np.abs(X[:, 0]) > 0.5
    means = np.c_[np.where(far, 0.9, 0.1), np.where(far, 0.1, 0.9), np.full(n, 0.5)]
    return X, means, (rng.random(means.shape) < means).astype(float)


@pytest.mark.parametrize("variant", VARIANTS)
def test_learner_beats_uniform_and_ridge_on_a_nonlinear_problem(variant):
    X, means, rewards = _nonlinear_stream(2000, seed=0)
    totals = {}
    for name, oracle in (("trees", TreesOracle()), ("ridge", "ridge")):
        learner = RegCB(variant, oracle=oracle, beta=1e-4, schedule="sqrt2", seed=0)
        chosen = np.empty(len(X))
        for t, x in enumerate(X):
            action, prob, _ = learner.predict(x, [0, 1, 2])
            chosen[t] = means[t, action]
            learner.learn(x, action, rewards[t, action], prob)
        totals[name] = chosen[1000:].mean()
    uniform = means.mean()  # 0.5
    assert totals["trees"] > uniform + 0.25, totals
    assert totals["trees"] > totals["ridge"] + 0.1, totals


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("check", checks.yield_checks(), ids=lambda c: c.__name__)
def test_invariants(variant, check):
    check(RegCB(variant, oracle=TreesOracle(), beta=1e-2, seed=7))


def test_sparse_contexts_grow_the_feature_space():
    learner = RegCB("elimination", oracle=TreesOracle(n_estimators=20), beta=1e-3, seed=0)
    for t in range(300):
        x = {"user": 1.0, f"item{t % 3}": 1.0}
        action, prob, _ = learner.predict(x, ["p", "q"])
        learner.learn(x, action, float(action == ("p" if t % 3 == 0 else "q")), prob)
    assert learner.pmf({"user": 1.0, "item0": 1.0}, ["p", "q"]) == [1.0, 0.0]
    assert learner.pmf({"user": 1.0, "item2": 1.0}, ["p", "q"]) == [0.0, 1.0]


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="backend"):
        TreesOracle(backend="xgboost")
    with pytest.raises(ValueError, match="refit_growth"):
        TreesOracle(refit_growth=1.0)
