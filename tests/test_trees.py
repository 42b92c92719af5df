"""The GB5 oracle: leaf-value ridge bounds, refit schedule, and the learner on it."""

from __future__ import annotations

import pickle

import lightgbm
import numpy as np
import pytest
from scipy.optimize import minimize

from regcb_stream import RegCB, RidgeOracle, checks
from regcb_stream.oracles import leaf_ridge, trees
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
    booster = lightgbm.Booster(model_str=oracle.models[model].trees.model)
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
    structure = oracle.models[0].trees
    oracle.learn_many(X[100:-20], np.zeros(extra, int), y[100:-20], w[100:-20])
    oracle.rebuild()
    assert oracle.models[0].trees is structure  # no refit before the data doubles
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
    trees = oracle.models[0].trees
    ensemble = trees.model.predict(X) if backend == "sklearn" else trees.booster.predict(X)
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
        fits.append(oracle.models[0].n_fit)
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
        learner = RegCB(variant, oracle=oracle, beta=1e-4, schedule="sqrt2", seed=0,
                        random_features=0)  # ridge: a linear model
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


# -- the compiled kernels (regcb_stream/oracles/_trees.c) against their numpy reference ------------

built = pytest.mark.skipif(not TreesOracle.kernels, reason="the kernels are not built")


def _through_every_path(kernels: bool) -> TreesOracle:
    """Model 0: a refit (Cholesky inverse, its Gram matrix kept), a Woodbury update, then
    a fresh inverse adding only the new rows to the kept Gram matrix; model 1: a refit from
    fewer rows than a third of its leaves (the n x n dual inverse)."""
    oracle = TreesOracle(n_estimators=30, max_depth=3, params={"min_data_in_leaf": 5})
    oracle.kernels = kernels
    X, y, w = _data(800, seed=5)
    oracle.grow(2, 3)
    for rows in (slice(0, 400), slice(400, 430), slice(430, 730)):
        oracle.learn_many(X[rows], np.zeros(len(y[rows]), int), y[rows], w[rows])
        oracle.rebuild()
    oracle.learn_many(X[730:770], np.ones(40, int), y[730:770], w[730:770])
    oracle.rebuild()
    return oracle


@built
def test_kernels_match_the_numpy_reference_on_every_path():
    fast, slow = _through_every_path(True), _through_every_path(False)
    first, second = fast.models
    assert first.n_fit == 400 and first.gram_rows == 730 and first.trees.n_columns <= 400
    assert second.n_fit == 40 and 3 * 40 < second.trees.n_columns
    for a, b in zip(fast.models, slow.models):
        np.testing.assert_array_equal(a.cols, b.cols)
        np.testing.assert_allclose(a.a_inv, b.a_inv, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(a.a_inv, a.a_inv.T)  # exactly symmetric
    queries = np.random.default_rng(6).uniform(-1.2, 1.2, size=(1100, 3))  # > a chunk
    phi = np.broadcast_to(queries[:, None, :], (1100, 2, 3))
    for got, want in zip(fast.bounds(phi, slice(0, 2), 0.3), slow.bounds(phi, slice(0, 2), 0.3)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_a_block_of_contexts_equals_one_context_at_a_time():
    oracle = _through_every_path(TreesOracle.kernels)
    queries = np.random.default_rng(7).uniform(-1.2, 1.2, size=(1030, 3))
    phi = np.broadcast_to(queries[:, None, :], (1030, 2, 3))
    block = oracle.bounds(phi, slice(0, 2), 0.3)
    for i in range(0, 1030, 97):
        one = oracle.bounds(phi[i : i + 1], slice(0, 2), 0.3)
        for a, b in zip(block, one):
            np.testing.assert_allclose(a[i], b[0], rtol=0, atol=1e-12)


def test_the_answers_of_a_repeated_block_last_until_the_rebuild():
    X, y, w = _data(300, seed=8)
    oracle, fresh = (_fitted(TreesOracle(n_estimators=20), X[:200], y[:200], w[:200])
                     for _ in range(2))
    holdout, block = X[200:250, None, :], X[250:, None, :]
    first = oracle.bounds(holdout, np.array([0]), 0.5)
    oracle.bounds(block, np.array([0]), 0.5)  # a block of decisions in between
    for a, b in zip(oracle.bounds(holdout, np.array([0]), 0.5), first):
        np.testing.assert_array_equal(a, b)
    for model in (oracle, fresh):
        model.learn_many(X[200:], np.zeros(100, int), y[200:], w[200:])
        model.rebuild()
    for a, b, c in zip(oracle.bounds(holdout, np.array([0]), 0.5), first,
                       fresh.bounds(holdout, np.array([0]), 0.5)):
        np.testing.assert_array_equal(a, c)
        assert not np.array_equal(a, b)


@built
@pytest.mark.parametrize("params", [{}, {"zero_as_missing": True}, {"use_missing": False}],
                         ids=["nan-missing", "zero-missing", "no-missing"])
def test_tree_walks_are_lightgbms_leaves(params):
    rng = np.random.default_rng(9)
    X = rng.standard_normal((600, 4))
    X[rng.random(X.shape) < 0.1], X[:60, 1] = np.nan, 0.0
    y = np.nan_to_num(X[:, 0]) ** 2 + 0.1 * rng.standard_normal(600)
    model = trees.LightGBMTrees(X, y, np.ones(600), TreesOracle(params=params))
    queries = np.r_[X, rng.standard_normal((200, 4)), np.zeros((2, 4)), np.full((2, 4), np.nan),
                    np.full((2, 4), 1e-36)]
    np.testing.assert_array_equal(model.columns(queries), model.columns(queries, kernels=False))
    booster = lightgbm.Booster(model_str=model.model)
    values = [booster.get_leaf_output(t, leaf) for t in range(booster.num_trees())
              for leaf in range(booster.dump_model()["tree_info"][t]["num_leaves"])]
    np.testing.assert_array_equal(model.values, values)


@built
def test_gram_and_variance_kernels():
    rng = np.random.default_rng(10)
    n, t, leaves = 3000, 12, 6
    cols = rng.integers(0, leaves, size=(n, t)) + leaves * np.arange(t)
    cols[::3, 1] = cols[::3, 0] + leaves  # correlated trees: repeated leaf pairs
    w, size = rng.uniform(0.5, 1.5, n), t * leaves
    for kernels in (True, False):  # the rows in two parts: the second added to the first
        got = np.full((size, size), np.nan) if kernels else np.zeros((size, size))
        leaf_ridge.add_gram(cols[:100], w[:100], got, kernels)
        leaf_ridge.add_gram(cols[100:], w[100:], got, kernels, clear=False)
        if kernels:
            fast = np.tril(got)
        else:
            slow = np.tril(got)
    np.testing.assert_allclose(fast, slow, rtol=1e-13, atol=0)
    a_inv = np.linalg.inv(np.eye(size) + slow + np.tril(slow, -1).T)
    np.testing.assert_allclose(leaf_ridge.variances(a_inv, cols),
                               leaf_ridge.variances(a_inv, cols, False),
                               rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="out of order"):
        leaf_ridge.variances(a_inv, cols[:, ::-1])


@built
@pytest.mark.parametrize("sizes", [(150, 400, 600), (30, 400, 600)], ids=["even", "uneven"])
def test_one_walk_over_every_model_equals_a_walk_per_model(sizes, monkeypatch):
    """A few shared rows walk every model's trees in one call (`_Forest`): the predictions
    and variances are a call per model's, bit for bit; a model not yet fitted keeps the
    prior's; with few rows a model's ensemble stops early (fewer trees than the others)."""
    X, y, w = _data(600, seed=11)
    oracle = TreesOracle(n_estimators=30)
    oracle.grow(4, 3)  # model 3 never learns
    for model, n in enumerate(sizes):
        oracle.learn_many(X[:n], np.full(n, model), y[:n] * (model + 1) / 3, w[:n])
    oracle.rebuild()
    forest = oracle.forest()
    assert forest is not None and (len(forest.groups) == 1) == (sizes[0] > 30)
    queries = np.random.default_rng(12).uniform(-1.2, 1.2, size=(5, 3))
    phi = np.broadcast_to(queries[:, None, :], (5, 4, 3))
    for models in (slice(0, 4), np.array([2, 0, 3, 2])):
        oracle.forget_answers()
        fast = oracle.moments(phi, models)
        monkeypatch.setattr(trees, "FOREST_ROWS", 0)
        oracle.forget_answers()
        slow = oracle.moments(phi, models)
        monkeypatch.undo()
        for a, b in zip(fast, slow):
            np.testing.assert_array_equal(a, b)
    assert (fast[1][:, 2] == 1.0 / oracle.l2).all()  # model 3, in column 2: the prior
