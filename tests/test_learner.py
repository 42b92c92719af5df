"""The RegCB learner with the exact ridge oracle: bounds, regret, validity, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from regcb_stream import RegCB, RidgeOracle, checks
from regcb_stream.datasets.synthetic import LinearProblem
from regcb_stream.defaults import MODEL_CLASSES
from regcb_stream.oracles.base import SparseRows

VARIANTS = ["elimination", "optimistic"]


# -- the closed form against an independent optimizer ------------------------------------


def _version_space_extremes(X, y, phi, budget, l2):
    """Min and max of theta . phi over {theta : L(theta) - min L <= budget}, by SLSQP."""

    def loss(theta):
        return np.sum((X @ theta - y) ** 2) + l2 * theta @ theta

    best = minimize(loss, np.zeros(X.shape[1]), method="BFGS", options={"gtol": 1e-12})
    limit = {"type": "ineq", "fun": lambda theta: budget - (loss(theta) - best.fun)}
    extremes = []
    for sign in (1.0, -1.0):
        res = minimize(lambda t: -sign * (t @ phi), best.x, constraints=[limit],
                       method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
        extremes.append(res.x @ phi)
    high, low = extremes
    return low, high


@pytest.mark.parametrize("seed", range(5))
def test_closed_form_bounds_equal_constrained_optimum(seed):
    rng = np.random.default_rng(seed)
    n, d, l2, budget = 12, 3, 0.7, rng.uniform(0.05, 2.0)
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    oracle = RidgeOracle(l2=l2)
    oracle.grow(1, d)
    for x, target in zip(X, y):
        oracle.learn(x, 0, target)
    oracle.rebuild()
    phi = rng.normal(size=d)
    _, low, high = oracle.bounds(phi[None, None, :], np.array([0]), budget)
    expected_low, expected_high = _version_space_extremes(X, y, phi, budget, l2)
    assert low[0, 0] == pytest.approx(expected_low, abs=1e-5)
    assert high[0, 0] == pytest.approx(expected_high, abs=1e-5)


@pytest.mark.parametrize("repeated", [True, False])
def test_sparse_rows_bounds_equal_the_dense_quadratic_form(repeated):
    """Sparse rows (the joint class's) gather A^-1 per column pattern, or row by row."""
    rng = np.random.default_rng(1)
    d, n, k, width = 40, 30, 4, 6
    oracle = RidgeOracle(l2=2.0, prior="optimistic")
    oracle.grow(1, d)
    for _ in range(200):
        oracle.learn(rng.normal(size=d) * (rng.random(d) < 0.2), 0, rng.random())
    oracle.rebuild()
    patterns = np.stack([rng.choice(d, width, replace=False) for _ in range(k)])
    index = (np.broadcast_to(patterns, (n, k, width)).copy() if repeated else
             np.stack([[rng.choice(d, width, replace=False) for _ in range(k)]
                       for _ in range(n)]))
    value = rng.normal(size=(n, k, width))
    value[:, :, -1] *= rng.random((n, k)) < 0.5  # padding-like zeros
    dense = np.zeros((n, k, d))
    np.put_along_axis(dense, index, value, axis=2)
    prediction, low, high = oracle.bounds(SparseRows(index, value, d), np.zeros(k, np.intp), 0.3)
    variance = np.einsum("nkd,de,nke->nk", dense, oracle.state()["a_inv"][0], dense)
    expected = dense @ oracle.state()["theta"][0] + oracle.prior_mean
    np.testing.assert_allclose(prediction, expected, atol=1e-12)
    np.testing.assert_allclose(high - prediction, np.sqrt(0.3 * variance), atol=1e-12)
    np.testing.assert_allclose(prediction - low, np.sqrt(0.3 * variance), atol=1e-12)


@pytest.mark.parametrize("patterns", [3, 400])
def test_learning_sparse_rows_equals_learning_dense_rows(patterns):
    """A block of sparse rows is added per column pattern (or densified): the statistics
    are those of the dense rows."""
    rng = np.random.default_rng(2)
    d, n, width = 60, 400, 6
    columns = [np.r_[0, rng.choice(np.arange(1, d), width - 2, replace=False), 0]
               for _ in range(patterns)]
    index = np.stack([columns[i % patterns] for i in range(n)])
    value = rng.normal(size=(n, width))
    value[:, 0], value[:, -1] = 1.0, 0.0  # the intercept, and padding at column 0
    dense = np.zeros((n, d))
    np.add.at(dense, (np.arange(n)[:, None], index), value)
    y, weight = rng.random(n), rng.random(n) + 0.5
    oracles = [RidgeOracle(prior="optimistic"), RidgeOracle(prior="optimistic")]
    for oracle, x in zip(oracles, [dense, SparseRows(index[:, None], value[:, None], d)]):
        oracle.grow(1, d)
        oracle.learn_many(x, np.zeros(n, np.intp), y, weight)
        oracle.rebuild()
    np.testing.assert_allclose(oracles[1].state()["a"], oracles[0].state()["a"], atol=1e-10)
    np.testing.assert_allclose(oracles[1].state()["theta"], oracles[0].state()["theta"], atol=1e-12)


def test_prior_shifts_the_version_space_to_ridge_around_the_prior():
    rng = np.random.default_rng(11)
    X, y, phi, prior = rng.normal(size=(15, 3)), rng.normal(size=15), rng.normal(size=3), 0.7
    oracle = RidgeOracle(l2=2.0, prior=prior)
    oracle.grow(1, 3)
    for x, target in zip(X, y):
        oracle.learn(x, 0, target)
    oracle.rebuild()
    _, low, high = oracle.bounds(phi[None, None, :], np.array([0]), 0.5)
    expected_low, expected_high = _version_space_extremes(X, y - prior, phi, 0.5, 2.0)
    assert low[0, 0] == pytest.approx(expected_low + prior, abs=1e-5)
    assert high[0, 0] == pytest.approx(expected_high + prior, abs=1e-5)


def test_optimistic_prior_starts_unplayed_actions_at_the_top_of_the_reward_range():
    learner = RegCB("optimistic", oracle=RidgeOracle(l2=10.0, prior="optimistic"), beta=0.0,
                    reward_range=(-1.0, 0.0), seed=0)
    learner.pmf([1.0], ["a", "b"])
    for _ in range(20):
        learner.learn([1.0], "a", -1.0)
    decision = learner.decide([1.0], ["a", "b"])
    assert decision.prediction[1] == 0.0
    assert -1.0 < decision.prediction[0] < -0.5
    assert decision.pmf.tolist() == [0.0, 1.0]  # greedy on the prior tries "b"


def test_midpoint_prior_starts_unplayed_actions_in_the_middle_of_the_reward_range():
    learner = RegCB(oracle=RidgeOracle(prior="midpoint"), reward_range=(-1.0, 0.0), seed=0)
    assert learner.decide([1.0], ["a", "b"]).prediction.tolist() == [-0.5, -0.5]


SHARED = [{"price": 1.0, "size": 0.5}, {"price": 0.2, "size": 2.0}]  # every feature shared
OWN = [{"id=a": 1.0, "price": 1.0}, {"id=b": 1.0, "price": 0.2}]  # each action has its own


@pytest.mark.parametrize("actions, model_class", [(SHARED, "shared features"),
                                                  (OWN, "own features")])
def test_the_first_action_feature_rows_settle_the_model_class(actions, model_class):
    """Actions sharing every feature (a ranking) shrink toward the middle of the reward
    range, with a larger l2; actions with features of their own, toward its top, as the
    product class's (`regcb_stream.defaults`)."""
    learner = RegCB(seed=0)
    assert learner.model_class is None
    learner.decide({"user": 1.0}, actions)
    row = MODEL_CLASSES[model_class]
    oracle = learner.model.oracle
    assert learner.model_class == model_class
    assert (oracle.prior, oracle.penalty) == (row.prior, row.l2)
    assert learner.budget_in_force == f"mellowness {row.mellowness:g}"
    learner.decide({"user": 1.0}, OWN if actions is SHARED else SHARED)  # settled for good
    assert learner.model_class == model_class


def test_a_label_before_any_decision_settles_the_optimistic_prior():
    learner = RegCB(seed=0)
    learner.learn({"user": 1.0}, SHARED[0], 0.5, 0.5)
    assert (learner.model_class, learner.model.oracle.prior) == ("own features", "optimistic")


def test_an_oracle_given_keeps_its_l2_and_prior_unless_left_to_the_learner():
    fixed = RegCB(oracle=RidgeOracle(l2=5.0, prior=0.0), seed=0)
    auto = RegCB(oracle=RidgeOracle(l2=5.0, prior="auto"), seed=0)
    default_l2 = RegCB(oracle=RidgeOracle(l2=None, prior="auto"), seed=0)
    for learner in (fixed, auto, default_l2):
        learner.decide({}, SHARED)
    assert (fixed.model.oracle.prior, fixed.model.oracle.penalty) == (0.0, 5.0)
    assert (auto.model.oracle.prior, auto.model.oracle.penalty) == ("midpoint", 5.0)
    assert default_l2.model.oracle.penalty == MODEL_CLASSES["shared features"].l2


def test_the_default_oracle_is_optimistic_for_actions_given_as_labels():
    learner = RegCB(seed=0, random_features=0)
    learner.decide([1.0], ["a", "b"])
    learner.learn([1.0], "a", 0.0)
    assert learner.decide([1.0], ["a", "b"]).prediction[1] == 1.0
    oracle = learner.model.oracle
    assert (oracle.prior, oracle.penalty) == ("optimistic", MODEL_CLASSES["linear"].l2)


@pytest.mark.parametrize("context, kwargs, l2", [
    ({"x": 1.0}, {}, MODEL_CLASSES["linear"].l2),  # dict contexts: the linear model
    ([1.0, 2.0], {"random_features": 0}, MODEL_CLASSES["linear"].l2),
    ([1.0, 2.0], {}, MODEL_CLASSES["random features"].l2),  # the random-features model
    ({"x": 1.0}, {"oracle": RidgeOracle(l2=5.0)}, 5.0),  # an oracle given keeps its l2
])
def test_the_linear_model_settles_its_own_l2_at_the_first_example(context, kwargs, l2):
    """The default ridge over the contexts as they are with actions as labels has its own
    weight (docs/results/defaults.md: with the random-features model's, its regret grows
    linearly at a long horizon)."""
    learner = RegCB(seed=0, **kwargs)
    learner.decide(context, ["a", "b"])
    learner.learn(context, "a", 0.5)
    learner.decide(context, ["a", "b", "c"])
    assert learner.model.oracle.l2 == l2


USER = {"user": 1.0}


@pytest.mark.parametrize("context, actions, kwargs, budget", [
    (USER, OWN, {}, MODEL_CLASSES["own features"].mellowness),  # one joint model
    (USER, OWN, {"oracle": RidgeOracle(prior="optimistic")},
     MODEL_CLASSES["own features"].mellowness),  # any oracle
    (USER, OWN, {"mellowness": 0.05}, 0.05),  # a budget given is kept
    (USER, SHARED, {}, MODEL_CLASSES["shared features"].mellowness),  # a ranking
    (USER, ["a", "b"], {}, MODEL_CLASSES["linear"].mellowness),  # labels, dict contexts
    ([1.0, 2.0], ["a", "b"], {"random_features": 0}, MODEL_CLASSES["linear"].mellowness),
    ([1.0, 2.0], ["a", "b"], {"oracle": RidgeOracle()}, MODEL_CLASSES["linear"].mellowness),
    ([1.0, 2.0], ["a", "b"], {}, MODEL_CLASSES["random features"].mellowness),
])
def test_each_model_class_settles_its_own_default_budget(context, actions, kwargs, budget,
                                                         tmp_path):
    """Each class's budget chosen with the long-horizon rule (`regcb_stream.defaults`);
    settled at the first example, kept by a model file."""
    from regcb_stream.persist import load_model, save_model

    learner = RegCB(seed=0, **kwargs)
    learner.decide(context, actions)
    learner.learn(context, actions[0], 0.5, 0.5)
    save_model(tmp_path / "m.regcb", learner, {})
    restored, _ = load_model(tmp_path / "m.regcb")
    for model in (learner, restored):
        assert model.budget_in_force == f"mellowness {budget:g}"


def test_before_its_first_example_a_learner_reports_the_provisional_class():
    learner = RegCB(seed=0)
    row = MODEL_CLASSES["random features"]
    assert learner.model_class is None and learner.n_labels == 0
    assert learner.budget_in_force == f"mellowness {row.mellowness:g}"
    assert learner.oracle_in_use == ("exact ridge, 0 models of 0 features, penalty 1 chosen "
                                     "by evidence")


def test_the_linear_model_of_model_selection_has_the_linear_l2():
    learner = RegCB(seed=0, select_model=True)
    learner.decide([1.0, 2.0], ["a", "b"])
    learner.learn([1.0, 2.0], "a", 0.5)
    assert learner.model.oracle.l2 == MODEL_CLASSES["random features"].l2
    assert learner.model_selection["labels"] == 1


@pytest.mark.parametrize("prior", [float("nan"), "pessimistic", None])
def test_bad_prior_is_refused(prior):
    with pytest.raises(ValueError, match="'prior' parameter of RidgeOracle must be"):
        RidgeOracle(prior=prior)


def test_learner_bounds_are_the_clipped_per_action_ellipsoid():
    rng = np.random.default_rng(1)
    X, rewards = rng.normal(size=(40, 2)), rng.random(40)
    learner = RegCB("elimination", oracle="ridge", beta=0.05, schedule="online",
                    random_features=0)
    for t, (x, r) in enumerate(zip(X, rewards)):
        learner.pmf(x, [0, 1])
        learner.learn(x, t % 2, float(r))
    x = np.array([0.3, -0.4])
    decision = learner.decide(x, [0, 1])
    phi = np.r_[1.0, x]  # the intercept comes first
    for a in (0, 1):
        design = np.c_[np.ones(20), X[a::2]]
        low, high = _version_space_extremes(design, rewards[a::2], phi, 0.05 * 40, 1.0)
        assert decision.low[a] == pytest.approx(np.clip(low, 0, 1), abs=1e-5)
        assert decision.high[a] == pytest.approx(np.clip(high, 0, 1), abs=1e-5)


def test_no_data_means_the_whole_reward_range():
    decision = RegCB(reward_range=(-1, 2)).decide([1.0, 2.0], ["x", "y"])
    assert decision.low.tolist() == [-1, -1] and decision.high.tolist() == [2, 2]
    assert decision.pmf.tolist() == [0.5, 0.5] and decision.plausible_size == 2


# -- regret on a realizable problem ------------------------------------------------------


def _play(learner, X, means, rewards):
    """Regret per round and whether the best action stayed plausible."""
    actions = list(range(means.shape[1]))
    regret, kept = np.empty(len(X)), np.empty(len(X), dtype=bool)
    for t, x in enumerate(X):
        decision = learner.decide(x, actions)
        best = int(means[t].argmax())
        kept[t] = decision.high[best] >= decision.low.max()
        action, prob, info = learner.predict(x, actions)
        regret[t] = means[t, best] - means[t, action]
        learner.learn(x, action, rewards[t, action], prob, **info)
    return regret, kept


@pytest.mark.parametrize("variant", VARIANTS)
def test_sublinear_regret_on_a_realizable_linear_problem(variant):
    X, means, rewards = LinearProblem.make(n_actions=5, dim=10, seed=0).sample(20_000, seed=1)
    learner = RegCB(variant, budget="mellowness", mellowness=0.1, seed=0, random_features=0)
    regret, kept = _play(learner, X, means, rewards)
    at_t, at_2t = regret[:10_000].sum(), regret.sum()
    uniform = (means.max(axis=1) - means.mean(axis=1)).sum()
    assert at_2t < 1.6 * at_t, (at_t, at_2t)
    assert at_2t < 0.4 * uniform
    assert kept.mean() > 0.99


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_defaults_regret_stops_growing_on_a_realizable_linear_problem(variant):
    """The issue's bar for the defaults: R(T) / R(T/2) <= 1.6 (2 would be linear)."""
    X, means, rewards = LinearProblem.make(n_actions=5, dim=10, seed=0).sample(20_000, seed=1)
    regret, _ = _play(RegCB(variant, seed=0), X, means, rewards)
    assert regret.sum() <= 1.6 * regret[:10_000].sum()


def test_constant_beta_keeps_the_width_constant():
    """The paper's experiments fix beta on the normalized risk: the width stops shrinking."""
    X, means, rewards = LinearProblem.make(seed=0).sample(4000, seed=1)
    learner = RegCB("optimistic", beta=1e-2, schedule="sqrt2", seed=0)
    widths = []
    for x, mean, reward in zip(X, means, rewards):
        decision = learner.decide(x, list(range(5)))
        widths.append(decision.width.mean())
        action, prob, _ = learner.predict(x, list(range(5)))
        learner.learn(x, action, reward[action], prob)
    early, late = np.mean(widths[1000:2000]), np.mean(widths[3000:])
    assert 0.7 < late / early < 1.2


# -- validity, determinism, invariants ---------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("oracle", ["ridge", RidgeOracle(l2=3.0),
                                    RidgeOracle(l2=10.0, prior="optimistic")],
                         ids=["ridge", "ridge-l2", "ridge-optimistic"])
@pytest.mark.parametrize("check", checks.yield_checks(), ids=lambda c: c.__name__)
def test_invariants(variant, oracle, check):
    check(RegCB(variant, oracle=oracle, beta=1e-2, seed=7))


@settings(max_examples=60, deadline=None)
@given(
    variant=st.sampled_from(VARIANTS),
    schedule=st.sampled_from(["online", "sqrt2", "doubling"]),
    beta=st.floats(0, 10),
    seed=st.integers(0, 2**32 - 1),
    data=st.lists(
        st.tuples(
            st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=3),
            st.floats(0, 1),
            st.integers(2, 6),
        ),
        min_size=1,
        max_size=30,
    ),
)
def test_every_distribution_is_valid(variant, schedule, beta, seed, data):
    learner = RegCB(variant, beta=beta, schedule=schedule, seed=seed)
    for x, reward, k in data:
        actions = list(range(k))
        pmf = np.array(learner.pmf(x, actions))
        assert (pmf >= 0).all() and abs(pmf.sum() - 1) < 1e-12
        action, prob, _ = learner.predict(x, actions)
        assert prob == pmf[action] > 0
        learner.learn(x, action, reward, prob)


def test_same_seed_same_run_different_seed_different_run():
    def trace(seed):
        return checks.run(RegCB("elimination", beta=1e-1, seed=seed), n=200)

    assert trace(3) == trace(3)
    assert trace(3) != trace(4)


# -- the vectorized path -----------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_block_decisions_equal_one_at_a_time(variant):
    X, _, rewards = LinearProblem.make(seed=2).sample(700, seed=3)
    learner = RegCB(variant, beta=1e-3, schedule="sqrt2", seed=5)
    actions = list(range(5))
    learner.pmf(X[0], actions)
    learner.learn_many(X[:500], [int(r.argmax()) for r in rewards[:500]], rewards[:500].max(1))
    block = learner.pmf_many(X[500:], actions)
    single = np.array([learner.pmf(x, actions) for x in X[500:]])
    np.testing.assert_allclose(block, single, rtol=0, atol=1e-15)
    twin = RegCB(variant, beta=1e-3, schedule="sqrt2", seed=5)
    twin.pmf(X[0], actions)
    twin.learn_many(X[:500], [int(r.argmax()) for r in rewards[:500]], rewards[:500].max(1))
    index, probs = learner.predict_many(X[500:], actions)
    drawn = [twin.predict(x, actions) for x in X[500:]]
    assert index.tolist() == [a for a, _, _ in drawn]
    assert probs.tolist() == [p for _, p, _ in drawn]


@pytest.mark.parametrize("schedule", ["online", "sqrt2"])
@pytest.mark.parametrize("joint", [False, True])
def test_a_stream_whose_features_keep_coming_has_the_numbers_of_one_at_a_time(joint,
                                                                             schedule):
    """An id in every context: columns are added all along, and the oracle grows as one
    example at a time grows it (its inverse taken afresh at that size, its hand-over to the
    bounded ridge at that example), however the rounds are cut into blocks: replayed
    (`replay`), learned (`learn_many`), simulated (`play`) and decided (`decide_many`)."""
    rng, n = np.random.default_rng(0), 500
    contexts = [{f"id={rng.integers(10**6)}": 1.0, "x": float(rng.normal())}
                for _ in range(n)]
    actions = [{"a=0": 1.0}, {"a=1": 1.0}, {"a=2": 1.0}] if joint else ["a", "b", "c"]
    played, rewards = rng.integers(3, size=n), rng.random(n)

    def replayed(size: int) -> tuple:
        learner = RegCB(hash_bits=18, seed=0, oracle=RidgeOracle(max_exact=200_000),
                        schedule=schedule)
        parts = [learner.replay(contexts[i:i + size], actions, played[i:i + size],
                                rewards[i:i + size], np.full(len(played[i:i + size]), 1 / 3))
                 for i in range(0, n, size)]
        return learner.oracle_in_use, *(np.concatenate([getattr(d, part) for d in parts])
                                        .tobytes() for part in ("pmf", "low", "high"))

    one = replayed(1)
    assert one[0].startswith("bounded")  # (handed over on the way)
    assert replayed(7) == one and replayed(n) == one

    def learned(size: int) -> tuple:  # (labels alone, learn_many)
        learner = RegCB(hash_bits=18, seed=0, oracle=RidgeOracle(max_exact=200_000),
                        schedule=schedule)
        learner.pmf(contexts[0], actions)  # (the actions offered)
        for i in range(0, n, size):
            learner.learn_many(contexts[i:i + size], [actions[a] for a in played[i:i + size]],
                               rewards[i:i + size])
        return learner.oracle_in_use, learner.decide_many(contexts[:50], actions).high.tobytes()

    assert learned(1) == learned(7) == learned(n)

    def simulated(size: int) -> tuple:  # (bandit feedback, play)
        learner = RegCB(hash_bits=18, seed=0, oracle=RidgeOracle(max_exact=200_000),
                        schedule=schedule)
        parts = [learner.play(contexts[i:i + size], actions,
                              lambda t, a, i=i: rewards[i + t] * (a == played[i + t]))
                 for i in range(0, n, size)]
        return (learner.oracle_in_use, np.concatenate([p for p, _ in parts]).tobytes(),
                np.concatenate([d.high for _, d in parts]).tobytes())

    assert simulated(1) == simulated(7) == simulated(n)

    block, one = (RegCB(hash_bits=18, seed=0, oracle=RidgeOracle(max_exact=60_000),
                        schedule=schedule) for _ in range(2))  # (decisions alone)
    for learner in (block, one):
        if not joint:
            learner.pmf({"x": 1.0}, actions)  # (the actions offered)
        learner.learn_many([{"x": 1.0}] * 3, actions, [1.0, 0.0, 0.5])
    decided = block.decide_many(contexts, actions)
    assert decided.high.tobytes() == np.array([one.decide(c, actions).high
                                               for c in contexts]).tobytes()
    assert block.oracle_in_use == one.oracle_in_use


@pytest.mark.parametrize("schedule", ["online", "sqrt2", "doubling"])
def test_learning_a_block_equals_learning_one_at_a_time(schedule):
    X, _, rewards = LinearProblem.make(seed=4).sample(300, seed=5)
    actions = [t % 5 for t in range(300)]
    observed = rewards[np.arange(300), actions]
    one, block = (RegCB("optimistic", beta=1e-2, schedule=schedule) for _ in range(2))
    for learner in (one, block):
        learner.pmf(X[0], list(range(5)))
    for x, a, r in zip(X, actions, observed):
        one.learn(x, a, r)
    block.learn_many(X[:137], actions[:137], observed[:137])
    block.learn_many(X[137:], actions[137:], observed[137:])
    assert one.epoch == block.epoch
    np.testing.assert_allclose(one.pmf_many(X, list(range(5))), block.pmf_many(X, list(range(5))))
    d1, d2 = one.decide_many(X, list(range(5))), block.decide_many(X, list(range(5)))
    np.testing.assert_allclose(d1.high, d2.high, atol=1e-10)


@pytest.mark.parametrize("schedule", ["online", "sqrt2"])
@pytest.mark.parametrize("sparse", [False, True])
def test_play_equals_predict_and_learn_round_by_round(schedule, sparse):
    X, _, rewards = LinearProblem.make(seed=6).sample(400, seed=7)
    contexts = [dict(enumerate(x.tolist())) for x in X] if sparse else X
    actions = ["a", "b", "c", "d", "e"]
    one, block = (RegCB("elimination", beta=1e-3, schedule=schedule, seed=2) for _ in range(2))
    played = []
    for x, r in zip(contexts, rewards):
        action, prob, _ = one.predict(x, actions)
        played.append(actions.index(action))
        one.learn(x, action, r[played[-1]], prob)
    index, decision = block.play(contexts, actions, lambda t, i: rewards[t, i])
    assert index.tolist() == played
    assert decision.pmf.shape == (400, 5) and np.allclose(decision.pmf.sum(axis=1), 1.0)
    np.testing.assert_allclose(one.pmf_many(contexts[:50], actions),
                               block.pmf_many(contexts[:50], actions))
    with pytest.raises(ValueError, match="outside reward_range"):
        block.play(contexts[:3], actions, lambda t, i: np.full(len(t), 2.0))


# -- sparse contexts and action features -------------------------------------------------


def test_sparse_contexts_grow_the_feature_space():
    learner = RegCB("elimination", beta=1e-3, seed=0)
    for t in range(300):
        x = {"user": 1.0, f"item{t % 3}": 1.0}
        action, prob, _ = learner.predict(x, ["p", "q"])
        best = "p" if t % 3 == 0 else "q"
        learner.learn(x, action, float(action == best), prob)
    assert learner.pmf({"user": 1.0, "item0": 1.0}, ["p", "q"]) == [1.0, 0.0]
    assert learner.pmf({"user": 1.0, "item2": 1.0}, ["p", "q"]) == [0.0, 1.0]
    assert learner.pmf({"new": 2.0}, ["p", "q"]) == [0.5, 0.5]


@pytest.mark.parametrize("variant", VARIANTS)
def test_action_features_learn_a_joint_model(variant):
    """Learning to rank: one model over (context x action) features."""
    rng = np.random.default_rng(0)
    learner = RegCB(variant, beta=1e-3, seed=0)
    total = 0.0
    for t in range(1500):
        docs = [{"quality": float(q), "len": float(n)}
                for q, n in zip(rng.random(4), rng.random(4))]
        action, prob, _ = learner.predict({"q": 1.0}, docs)
        reward = action["quality"]
        total += reward if t >= 1000 else 0.0
        learner.learn({"q": 1.0}, action, reward, prob)
    assert total / 500 > 0.75  # the best of 4 uniform qualities averages 0.8; random 0.5


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda l: l.pmf([1.0, 2.0, 3.0], ["a", "b"]), "context has 3 features, expected 2"),
        (lambda l: l.pmf([1.0, float("nan")], ["a", "b"]), "context feature 1 is nan"),
        (lambda l: l.pmf([1.0, float("inf")], ["a", "b"]), "context feature 1 is inf"),
        (lambda l: l.pmf({"u": float("nan")}, ["a"]), "contexts were dense sequences"),
        (lambda l: l.pmf([1.0, 2.0], []), "no actions offered"),
        (lambda l: l.pmf([1.0, 2.0], ["a", "a"]), "actions must be distinct"),
        (lambda l: l.learn([1.0, 2.0], "a", 0.5, 0.0), r"probability must be in \(0, 1\]"),
        (lambda l: l.learn([1.0, 2.0], "a", 0.5, 1.5), r"probability must be in \(0, 1\]"),
        (lambda l: l.learn([1.0, 2.0], "z", 0.5, 0.5), "action 'z' was never offered"),
        (lambda l: l.learn([1.0, 2.0], "a", 1.5, 0.5), r"reward 1.5 is outside reward_range"),
        (lambda l: l.learn([1.0, 2.0], "a", float("nan")), "reward must be a finite number"),
        (lambda l: l.score([1.0, 2.0], ["a", "b"], "c"), "not among the offered actions"),
    ],
)
def test_bad_input_is_named(call, message):
    learner = RegCB()
    learner.pmf([0.0, 0.0], ["a", "b"])
    with pytest.raises((ValueError, TypeError), match=message):
        call(learner)


def test_sparse_feature_values_must_be_finite_numbers():
    learner = RegCB()
    with pytest.raises(ValueError, match="feature 'u' is nan"):
        learner.pmf({"u": float("nan")}, ["a"])
    with pytest.raises(TypeError, match="feature 'u' has value 'x'"):
        learner.pmf({"u": "x"}, ["a"])


def test_out_of_range_rewards_are_learned_when_allowed():
    learner = RegCB(oracle="ridge", allow_out_of_range=True, reward_range=(0, 1))
    learner.pmf([1.0], ["a", "b"])
    for _ in range(50):
        learner.learn([1.0], "a", 5.0)
    decision = learner.decide([1.0], ["a", "b"])
    assert decision.low[0] == decision.high[0] == 1.0  # bounds stay clipped
    assert learner.pmf([1.0], ["a", "b"]) == [1.0, 0.0]


@pytest.mark.parametrize(
    "params, name",
    [
        ({"variant": "greedy"}, "variant"),
        ({"schedule": "weekly"}, "schedule"),
        ({"beta": -1.0}, "beta"),
        ({"mellowness": 0.0}, "mellowness"),
        ({"reward_range": (1, 0)}, "reward_range"),
        ({"warm_start_epochs": -1}, "warm_start_epochs"),
        ({"budget": "theory"}, "horizon"),
    ],
)
def test_bad_parameters_are_named(params, name):
    with pytest.raises(ValueError, match=name):
        RegCB(**params)


def test_warm_start_plays_uniformly_for_m0_epochs():
    learner = RegCB("optimistic", oracle="ridge", schedule="doubling", warm_start_epochs=3,
                    beta=0.0)
    for t in range(7):
        assert learner.pmf([1.0], ["a", "b", "c"]) == pytest.approx([1 / 3] * 3)
        learner.learn([1.0], "a", 1.0)
    assert learner.epoch == 4
    assert learner.pmf([1.0], ["a", "b", "c"]) == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("answer, error", [
    (lambda rounds, index: np.zeros(len(rounds) + 1), "returned shape"),
    (lambda rounds, index: 1.0, "returned shape"),
    (lambda rounds, index: ["a"] * len(rounds), "must return numbers"),
])
def test_play_refuses_a_reveal_with_the_wrong_answer(answer, error):
    learner = RegCB(seed=0)
    with pytest.raises((ValueError, TypeError), match=error):
        learner.play(np.eye(3)[[0, 1, 2] * 5], ["a", "b", "c"], answer)
    assert learner.n_labels == 0
