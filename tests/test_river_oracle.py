"""RiverOracle: River regressors with VW's sensitivity bounds (closed form and probe)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import (
    dummy,
    ensemble,
    facto,
    forest,
    linear_model,
    neighbors,
    optim,
    preprocessing,
    rules,
    stats,
    tree,
)

from regcb_stream import RegCB, checks
from regcb_stream.bounds import sensitivity_bounds
from regcb_stream.datasets.synthetic import LinearProblem
from regcb_stream.oracles.river import RiverOracle

FLT_MAX = float(np.finfo(np.float32).max)
VARIANTS = ["elimination", "optimistic"]


def sqrt_decay(lr: float) -> linear_model.LinearRegression:
    """Plain SGD with lr / sqrt(t) on weights and intercept (closed-form sensitivity)."""
    rate = optim.schedulers.InverseScaling
    return linear_model.LinearRegression(
        optim.SGD(rate(lr, power=0.5)), intercept_lr=rate(lr, power=0.5)
    )


def scaled(lr: float):
    return preprocessing.StandardScaler() | sqrt_decay(lr)


# -- the closed form against VW's bisection ----------------------------------------------


def vw_binary_search(fhat, delta, sens, tol=1e-6, max_iter=20):
    """VW's ``binary_search`` (cb_explore_adf_regcb.cc), step for step, in double precision.
    Returns VW's answer ``l``, the final bracket's upper end, and whether the loop stopped on
    ``|v| <= tol``."""
    maxw = min(fhat / sens if sens > 0 else np.inf, FLT_MAX)
    if maxw * fhat * fhat <= delta:
        return maxw, maxw, False
    low, high = 0.0, maxw
    for _ in range(max_iter):
        w = (high + low) / 2.0
        v = w * (fhat * fhat - (fhat - sens * w) * (fhat - sens * w)) - delta
        if v > 0:
            high = w
        else:
            low = w
        if abs(v) <= tol or high - low <= tol:
            return low, high, abs(v) <= tol
    return low, high, False


def upper_move(prediction, sens, budget):
    """How far the closed form moves the upper bound above ``prediction`` (range [0, 1])."""
    _, high = sensitivity_bounds(np.array([prediction]), np.array([sens]), np.array([0.0]),
                                 budget, (0.0, 1.0))
    return high[0] - prediction


CASES = dict(
    prediction=st.floats(-0.5, 1.5), sens=st.floats(1e-3, 10.0), budget=st.floats(0.0, 10.0)
)


@settings(max_examples=300, deadline=None)
@given(**CASES)
def test_closed_form_equals_the_converged_bisection(prediction, sens, budget):
    fhat = 2.0 - prediction
    w, _, _ = vw_binary_search(fhat, budget, sens, tol=0.0, max_iter=200)
    assert upper_move(prediction, sens, budget) == pytest.approx(sens * w, abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(**CASES)
def test_closed_form_lies_in_the_bracket_of_vws_20_step_bisection(prediction, sens, budget):
    fhat = 2.0 - prediction
    low, high, stopped_on_v = vw_binary_search(fhat, budget, sens)
    move = upper_move(prediction, sens, budget)
    assert sens * low - 1e-12 <= move <= sens * high + 1e-12
    if not stopped_on_v:  # then VW is within its resolution: tol in w, or 20 halvings
        assert move - sens * low <= max(sens * 1e-6, fhat * 2**-20) + 1e-12


def test_vws_early_stop_can_return_zero_width():
    """The documented defect: |v| <= tol on a midpoint with v > 0 returns the old lower end."""
    fhat, budget, sens = 0.8355586539743411, 0.08427982496335883, 0.7570445886338083
    low, _, stopped_on_v = vw_binary_search(fhat, budget, sens)
    assert stopped_on_v and low == 0.0
    assert upper_move(2.0 - fhat, sens, budget) == pytest.approx(0.2088887, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(
    prediction=st.floats(-3.0, 4.0), up=st.floats(0.0, 100.0), down=st.floats(0.0, 100.0),
    budget=st.floats(0.0, 50.0), extra=st.floats(0.0, 5.0),
)
def test_sensitivity_bounds_are_sound(prediction, up, down, budget, extra):
    args = np.array([prediction]), np.array([up]), np.array([down])
    low, high = sensitivity_bounds(*args, budget, (0.0, 1.0))
    assert low[0] <= prediction <= high[0]
    assert high[0] <= max(prediction, 2.0) + 1e-12  # never past the fake labels
    assert low[0] >= min(prediction, -1.0) - 1e-12
    wider_low, wider_high = sensitivity_bounds(*args, budget + extra, (0.0, 1.0))
    assert wider_low[0] <= low[0] + 1e-12 and wider_high[0] >= high[0] - 1e-12
    none_low, none_high = sensitivity_bounds(*args, 0.0, (0.0, 1.0))
    assert none_low[0] == none_high[0] == prediction


def test_unusable_sensitivity_gives_an_open_side():
    low, high = sensitivity_bounds(np.array([0.5, 0.5]), np.array([np.nan, np.inf]),
                                   np.array([0.0, 1.0]), 1.0, (0.0, 1.0))
    assert np.isinf(high).all() and low[0] == 0.5 and low[1] < 0.5


# -- the closed form against a probe learn on a copy ---------------------------------------


def test_one_sgd_step_moves_the_prediction_linearly_in_the_weight():
    model = sqrt_decay(0.3)
    for i in range(30):
        model.learn_one({0: 1.0, 1: i % 3 - 1.0}, float(i % 2))
    x, label = {0: 1.0, 1: 0.5, 3: -2.0}, 2.0
    moves = []
    for weight in (0.5, 2.0, 7.0):
        twin = copy.deepcopy(model)
        twin.learn_one(x, label, w=weight)
        moves.append((twin.predict_one(x) - model.predict_one(x)) / weight)
    t = model.optimizer.n_iterations
    rate, rate_b = model.optimizer.lr.get(t), model.intercept_lr.get(t)
    expected = 2 * (label - model.predict_one(x)) * (rate * 5.25 + rate_b)
    assert moves == pytest.approx([expected] * 3, rel=1e-12)


def _trained_pair(regressor, joint: bool, seed: int = 0):
    """The same data learned by the closed form and by the probe; phi and model ids."""
    rng = np.random.default_rng(seed)
    k, d = 3, 5
    pair = [RiverOracle(regressor), RiverOracle(regressor, sensitivity="probe")]
    assert [o.uses_closed_form for o in pair] == [True, False]
    for oracle in pair:
        oracle.grow(1 if joint else k, d)
    data = rng.normal(size=(60, d)) * (rng.random((60, d)) < 0.6)
    labels = (rng.random(len(data)) < 0.5).astype(float)
    for t, (x, label) in enumerate(zip(data, labels)):
        for oracle in pair:
            oracle.learn(x, 0 if joint else t % k, label)
    for oracle in pair:
        oracle.rebuild()
    if joint:
        return pair, rng.normal(size=(4, k, d)), np.zeros(k, dtype=np.intp)
    x = rng.normal(size=(4, d))
    return pair, np.broadcast_to(x[:, None, :], (4, k, d)), slice(0, k)


@pytest.mark.parametrize("joint", [False, True], ids=["product", "joint"])
@pytest.mark.parametrize(
    "regressor",
    [sqrt_decay(0.3), linear_model.LinearRegression(optim.SGD(0.05), intercept_lr=0.02),
     linear_model.LinearRegression(optim.AdaGrad(0.3), intercept_lr=0.05)],
    ids=["sqrt-decay", "constant", "adagrad"],
)
def test_closed_form_bounds_equal_probe_bounds(regressor, joint):
    (closed, probe), phi, models = _trained_pair(regressor, joint)
    assert np.allclose(closed.predict(phi, models), probe.predict(phi, models), atol=1e-12)
    for budget in (0.0, 0.01, 0.5, 20.0):
        for a, b in zip(closed.bounds(phi, models, budget), probe.bounds(phi, models, budget)):
            assert np.allclose(a, b, atol=1e-10)


def test_regularized_models_fall_back_to_the_probe():
    oracle = RiverOracle(linear_model.LinearRegression(l2=0.1))
    assert not oracle.uses_closed_form
    oracle.grow(1, 2)
    for _ in range(20):
        oracle.learn(np.array([1.0, 0.5]), 0, 1.0)
    oracle.rebuild()
    prediction, low, high = oracle.bounds(np.ones((1, 1, 2)), np.array([0]), 0.3)
    assert low[0, 0] < prediction[0, 0] < high[0, 0]


@pytest.mark.parametrize("sensitivity", ["auto", "probe"])
def test_decisions_use_the_state_frozen_at_the_last_rebuild(sensitivity):
    oracle = RiverOracle(sqrt_decay(0.3), sensitivity=sensitivity)
    oracle.grow(2, 3)
    phi, models = np.ones((1, 2, 3)), np.array([0, 1])
    oracle.learn(np.ones(3), 0, 1.0)
    oracle.rebuild()
    before = oracle.bounds(phi, models, 0.2)
    oracle.learn(np.ones(3), 1, 1.0)
    oracle.learn(np.ones(3), 0, 0.0)
    assert all(np.array_equal(a, b) for a, b in zip(oracle.bounds(phi, models, 0.2), before))
    oracle.rebuild()
    assert not np.array_equal(oracle.predict(phi, models), before[0])


def _learn_both(oracles, k: int, d: int, rows: int, seed: int = 0):
    """The same random rows learned by every oracle (with weights), then rebuilt."""
    rng = np.random.default_rng(seed)
    for oracle in oracles:
        oracle.grow(k, d)
    data = rng.normal(size=(rows, d)) * (rng.random((rows, d)) < 0.7)
    data[:, 0] = 1.0
    labels, weights = rng.random(rows), rng.choice([0.5, 1.0, 3.0], rows)
    for t in range(rows):
        for oracle in oracles:
            oracle.learn(data[t], t % k, labels[t], weights[t])
    for oracle in oracles:
        oracle.rebuild()
    x = rng.normal(size=(5, d))
    return np.broadcast_to(x[:, None, :], (5, k, d)), slice(0, k)


@pytest.mark.parametrize("alpha, beta", [(1.0, 1.0), (3.0, 0.5)])
def test_bayesian_regression_gives_the_ridge_oracles_bounds(alpha, beta):
    from regcb_stream.oracles.ridge import RidgeOracle

    bayes = RiverOracle(linear_model.BayesianLinearRegression(alpha=alpha, beta=beta))
    ridge = RidgeOracle(l2=alpha / beta)
    assert bayes.uses_closed_form
    phi, models = _learn_both([bayes, ridge], k=3, d=4, rows=90)
    assert np.allclose(bayes.predict(phi, models), ridge.predict(phi, models), atol=1e-9)
    for budget in (0.0, 0.01, 0.5):
        for a, b in zip(bayes.bounds(phi, models, budget), ridge.bounds(phi, models, budget)):
            assert np.allclose(a, b, atol=1e-9)


def test_bayesian_regression_probe_moves_toward_the_fake_label():
    oracle = RiverOracle(linear_model.BayesianLinearRegression(), sensitivity="probe")
    assert not oracle.uses_closed_form
    phi, models = _learn_both([oracle], k=2, d=3, rows=40)
    prediction, low, high = oracle.bounds(phi, models, 0.2)
    assert np.all(low <= prediction) and np.all(prediction <= high)
    assert (low < prediction).mean() > 0.5 and (prediction < high).mean() > 0.5


def test_normalized_steps_divide_the_weight_by_the_squared_norm():
    x = np.array([1.0, 2.0, 0.0, -1.0])  # ||x||^2 = 6
    plain, normal = sqrt_decay(0.3).clone(), RiverOracle(sqrt_decay(0.3), normalize=True)
    normal.grow(1, 4)
    for _ in range(3):
        plain.learn_one({0: 1.0, 1: 2.0, 3: -1.0}, 0.7, w=1.5 / 6)
        normal.learn(x, 0, 0.7, 1.5)
    assert normal.regressors[0].weights == plain.weights
    assert normal.regressors[0].intercept == plain.intercept


@pytest.mark.parametrize("joint", [False, True], ids=["product", "joint"])
@pytest.mark.parametrize("regressor", [sqrt_decay(0.8), linear_model.LinearRegression(
    optim.AdaGrad(0.5), intercept_lr=0.0)], ids=["sgd", "adagrad"])
def test_normalized_closed_form_equals_normalized_probe(joint, regressor):
    pair = [RiverOracle(regressor, normalize=True),
            RiverOracle(regressor, normalize=True, sensitivity="probe")]
    phi, models = _learn_both(pair, k=1 if joint else 3, d=5, rows=60, seed=3)
    if joint:
        phi, models = np.random.default_rng(4).normal(size=(4, 3, 5)), np.zeros(3, np.intp)
    for budget in (0.0, 0.05, 2.0):
        for a, b in zip(pair[0].bounds(phi, models, budget), pair[1].bounds(phi, models, budget)):
            assert np.allclose(a, b, atol=1e-10)


def test_normalize_is_refused_for_the_bayesian_regression():
    with pytest.raises(ValueError, match="normalize is for gradient learners"):
        RiverOracle(linear_model.BayesianLinearRegression(), normalize=True)


# -- in the learner --------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("make", [sqrt_decay, scaled], ids=["linear", "scaler-pipeline"])
@pytest.mark.parametrize("check", checks.yield_checks(), ids=lambda c: c.__name__)
def test_invariants(variant, make, check):
    oracle = RiverOracle(make(0.1))
    check(RegCB(variant, oracle=oracle, budget="mellowness", mellowness=0.01, seed=7))


def _regret_ratio(learner, rounds):
    """Regret of ``learner`` over that of uniform play on the realizable linear problem."""
    X, means, rewards = LinearProblem.make(n_actions=5, dim=10, seed=0).sample(rounds, seed=1)
    regret = 0.0
    for x, mean, reward in zip(X, means, rewards):
        action, prob, _ = learner.predict(x, list(range(5)))
        learner.learn(x, action, float(reward[action]), prob)
        regret += mean.max() - mean[action]
    return regret / (means.max(axis=1) - means.mean(axis=1)).sum()


@pytest.mark.parametrize("variant, mellowness", [("elimination", 0.01), ("optimistic", 0.1)])
def test_beats_uniform_on_a_realizable_linear_problem(variant, mellowness):
    learner = RegCB(variant, oracle=RiverOracle(sqrt_decay(0.3)), budget="mellowness",
                    mellowness=mellowness, seed=0)
    assert _regret_ratio(learner, 3000) < 0.55  # observed 0.39 and 0.37


def test_a_scaler_pipeline_learns_through_the_probe():
    oracle = RiverOracle(scaled(0.05))
    assert not oracle.uses_closed_form
    learner = RegCB("optimistic", oracle=oracle, budget="mellowness", mellowness=0.01, seed=0)
    assert _regret_ratio(learner, 1500) < 0.75  # observed 0.43


# -- refusals --------------------------------------------------------------------------

# Every River 0.26 regressor, by what the weight check finds (BayesianLinearRegression takes
# none but is weighted through its rows, tested above). learn_one has no `w`: PARegressor;
# forest.AMFRegressor, OXTRegressor; ensemble.EWARegressor; neighbors.KNNRegressor;
# dummy.StatisticRegressor; preprocessing.TargetStandardScaler, TargetMinMaxScaler;
# compat.SKL2RiverRegressor; model_selection.BanditRegressor, GreedyRegressor,
# SuccessiveHalvingRegressor.
# `w` accepted through **kwargs but ignored (the trial): forest.ARFRegressor and
# ensemble.SRPRegressor (each tree learns with its own Poisson weight);
# imblearn.HardSamplingRegressor drops it on its (1 - p) branch, so it is refused or not
# depending on the draw. Fail on integer feature keys: facto.FFMRegressor, FwFMRegressor
# (they need "field_feature" names). Accepted: linear_model.LinearRegression,
# tree.HoeffdingTreeRegressor, HoeffdingAdaptiveTreeRegressor, SGTRegressor (its trial is
# inconclusive: no prediction moves before a split), facto.FMRegressor, HOFMRegressor,
# rules.AMRules, ensemble.BaggingRegressor, preprocessing.PredClipper, conf.RegressionJackknife,
# imblearn.ChebyshevOverSampler, ChebyshevUnderSampler, and pipelines ending in any of them.
NO_W = [
    linear_model.PARegressor(),
    forest.AMFRegressor(seed=1), forest.OXTRegressor(seed=1),
    ensemble.EWARegressor([linear_model.LinearRegression()] * 2), neighbors.KNNRegressor(),
    dummy.StatisticRegressor(stats.Mean()),
    preprocessing.TargetStandardScaler(linear_model.LinearRegression()),
]
IGNORES_W = [forest.ARFRegressor(seed=1), ensemble.SRPRegressor(seed=1)]
ACCEPTED = [
    linear_model.LinearRegression(), tree.HoeffdingTreeRegressor(),
    tree.HoeffdingAdaptiveTreeRegressor(seed=1), tree.SGTRegressor(),
    facto.FMRegressor(seed=1), rules.AMRules(),
    ensemble.BaggingRegressor(linear_model.LinearRegression(), seed=1),
    preprocessing.PredClipper(linear_model.LinearRegression(), 0.0, 1.0), scaled(0.1),
]


def _name(regressor):
    return type(regressor).__name__


@pytest.mark.parametrize(
    "regressor, reason",
    [(r, "has no 'w' parameter in learn_one") for r in NO_W]
    + [(r, "ignores it: learning an example with w=1 or w=10") for r in IGNORES_W]
    + [(preprocessing.StandardScaler() | linear_model.PARegressor(),
        "drops it: its last step, PARegressor, has no 'w'")]
    + [(facto.FFMRegressor(seed=1), "failed on integer-keyed feature dicts")],
    ids=lambda value: _name(value) if not isinstance(value, str) else "",
)
def test_regressors_that_drop_the_weight_are_refused(regressor, reason):
    with pytest.raises(ValueError, match="honours sample weights") as error:
        RiverOracle(regressor)
    assert f"{_name(regressor)} {reason}" in str(error.value)


@pytest.mark.parametrize("regressor", ACCEPTED, ids=_name)
def test_regressors_that_honour_the_weight_are_accepted(regressor):
    RiverOracle(regressor)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"sensitivity": "exact"}, "sensitivity"), ({"probe_weight": 0.0}, "probe_weight"),
     ({"reward_range": (1.0, 0.0)}, "reward_range")],
)
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RiverOracle(linear_model.LinearRegression(), **kwargs)
