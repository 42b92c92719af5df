"""RegCBPolicy in River's conventions, and the iter_vw stream reader."""

from __future__ import annotations

import copy
import doctest
import gzip
import io
import pickle

import numpy as np
import pytest
from river import bandit, compose, linear_model, optim, preprocessing

from regcb_stream import RegCB
from regcb_stream.integrations import river as river_integration
from regcb_stream.integrations.river import LoggedLabel, RegCBPolicy, iter_vw

ARMS = ["a", "b", "c"]


def stream(n: int, seed: int = 0):
    """Contexts with large offsets and scales (a scaler matters) and 0/1 rewards."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        z = rng.normal(size=2)
        context = {"u": 100.0 + 20.0 * z[0], "v": -5.0 + 0.1 * z[1]}
        best = 0 if z[0] > 0.5 else 1 if z[1] > 0 else 2
        yield context, [float(k == best) for k in range(3)]


def play(policy: RegCBPolicy, rounds) -> list:
    """Pull and update on each round; return the distributions seen before each pull."""
    seen = []
    for context, rewards in rounds:
        seen.append(policy.distribution(ARMS, context))
        arm = policy.pull(ARMS, context)
        policy.update(arm, context, rewards[ARMS.index(arm)])
    return seen


def make(**params) -> RegCBPolicy:
    return RegCBPolicy(preprocessor=compose.Pipeline(preprocessing.StandardScaler()), **params)


def test_doctests_run():
    result = doctest.testmod(river_integration, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 4 and result.failed == 0


def test_clone_is_fresh_with_the_same_parameters():
    policy = make(variant="optimistic", beta=0.01, seed=3)
    play(policy, stream(50))
    clone = policy.clone()
    assert clone._get_params() == policy._get_params()
    assert clone.learner.n_labels == 0 and clone._n == 0 and policy._n == 50
    assert clone.preprocessor is not policy.preprocessor
    assert play(clone, stream(80, seed=1)) == play(make(variant="optimistic", beta=0.01, seed=3),
                                                   stream(80, seed=1))


def test_the_given_preprocessor_is_not_trained():
    scaler = preprocessing.StandardScaler()
    play(RegCBPolicy(preprocessor=scaler), stream(20))
    assert scaler.counts == {}


@pytest.mark.parametrize("copier", [lambda p: pickle.loads(pickle.dumps(p)), copy.deepcopy])
def test_learning_after_a_round_trip_gives_identical_distributions(copier):
    policy = make(beta=0.01, seed=5)
    rounds = list(stream(200, seed=2))
    play(policy, rounds[:100])
    twin = copier(policy)
    assert play(twin, rounds[100:]) == play(policy, rounds[100:])
    assert twin.learner.n_labels == policy.learner.n_labels == 200


def test_the_pipeline_scaler_is_applied_as_in_a_river_pipeline():
    """Same as RegCB fed by hand a scaler learned on each update's context before
    transforming it, and only transforming at pull time."""
    policy = make(beta=0.01, seed=0)
    reference, scaler = RegCB(beta=0.01, seed=0), preprocessing.StandardScaler()
    for context, rewards in stream(150, seed=4):
        expected = reference.pmf(scaler.transform_one(context), ARMS)
        assert policy.distribution(ARMS, context) == expected
        predicted = reference.decide(scaler.transform_one(context), ARMS).prediction.tolist()
        assert policy.predict_rewards(ARMS, context) == predicted
        arm = policy.pull(ARMS, context)
        action, prob, _ = reference.predict(scaler.transform_one(context), ARMS)
        assert arm == action
        scaler.learn_one(context)
        reference.learn(scaler.transform_one(context), arm, rewards[ARMS.index(arm)], prob)
        policy.update(arm, context, rewards[ARMS.index(arm)])
    raw = RegCBPolicy(beta=0.01, seed=0)
    play(raw, stream(150, seed=4))
    last = next(stream(1, seed=9))[0]
    assert raw.predict_rewards(ARMS, last) != policy.predict_rewards(ARMS, last)


def test_update_takes_the_probability_of_the_last_pull():
    policy = RegCBPolicy(seed=0)
    arm = policy.pull(ARMS, {"x": 1.0})
    policy.update(arm, {"x": 1.0}, 1.0)
    with pytest.raises(ValueError, match="probability"):
        policy.update("b", {"x": 1.0}, 1.0, prob=0.0)


def test_river_offline_replay_and_dict_arms():
    history = [(ARMS, c, ARMS[i % 3], r[i % 3]) for i, (c, r) in enumerate(stream(150))]
    total, n_used = bandit.evaluate_offline(make(seed=0), history)
    assert 0 < n_used < 150 and total.get() >= 0
    policy = RegCBPolicy(seed=1)
    arms = [{"f": 1.0}, {"g": 1.0}]
    arm = policy.pull(arms, {"x": 1.0})
    policy.update(arm, {"x": 1.0}, 1.0)
    assert sum(policy.distribution(arms, {"x": 1.0})) == pytest.approx(1.0)
    assert policy._counts[tuple(arm.items())] == 1


# -- iter_vw ---------------------------------------------------------------------------------

CB_TEXT = "1:0.5:0.25 |s a:2 b\n|s a:1\n3:1 |s b:-1\n"
ADF_TEXT = "shared |s x:2\n|a i\n0:1:0.5 |a j\n\n|a i\n|a j\n\n"


def test_iter_vw_single_line_and_adf():
    rows = list(iter_vw(io.StringIO(CB_TEXT), n_actions=3))
    assert rows[0] == ({"s^a": 2.0, "s^b": 1.0}, [1, 2, 3], LoggedLabel(0, 0.5, 0.25))
    assert rows[1][2] is None and rows[2][2] == LoggedLabel(2, 1.0, None)
    adf = list(iter_vw(io.StringIO(ADF_TEXT), adf=True))
    assert adf[0] == ({"s^x": 2.0}, [{"a^i": 1.0}, {"a^j": 1.0}], LoggedLabel(1, 1.0, 0.5))
    assert adf[1] == ({}, [{"a^i": 1.0}, {"a^j": 1.0}], None)
    merged = next(iter_vw(io.StringIO(ADF_TEXT), adf=True, interactions=["sa"],
                          merge_shared=True))
    assert merged[0] == {} and merged[1][0] == {"s^x": 2.0, "a^i": 1.0, "s^x*a^i": 2.0}


def test_iter_vw_reads_paths_and_gzip(tmp_path):
    plain, packed = tmp_path / "log.dat", tmp_path / "log.dat.gz"
    plain.write_text(CB_TEXT)
    with gzip.open(packed, "wt") as out:
        out.write(CB_TEXT)
    expected = list(iter_vw(io.StringIO(CB_TEXT), n_actions=3))
    assert list(iter_vw(plain, n_actions=3)) == expected
    assert list(iter_vw(str(packed), n_actions=3)) == expected


def test_iter_vw_closes_a_file_it_opened_even_when_stopped_early(monkeypatch):
    opened = []

    def fake_open(path):
        opened.append(io.StringIO(CB_TEXT))
        return opened[-1]

    monkeypatch.setattr(river_integration, "_open", fake_open)
    rows = iter_vw("log.dat", n_actions=3)
    next(rows)
    rows.close()
    assert opened[0].closed
    buffer = io.StringIO(CB_TEXT)
    list(iter_vw(buffer, n_actions=3))
    assert not buffer.closed


def test_iter_vw_needs_the_number_of_actions():
    with pytest.raises(ValueError, match="n_actions"):
        next(iter_vw(io.StringIO(CB_TEXT)))


def test_a_river_regressor_is_the_oracle():
    from regcb_stream.oracles.river import RiverOracle

    regressor = linear_model.LinearRegression(
        optimizer=optim.SGD(optim.schedulers.InverseScaling(0.3, power=0.5)),
        intercept_lr=optim.schedulers.InverseScaling(0.3, power=0.5))
    policy = RegCBPolicy("optimistic", oracle=regressor, beta=1e-3, seed=2,
                         preprocessor=preprocessing.StandardScaler())
    assert isinstance(policy.learner.model.oracle, RiverOracle)
    arms = ["left", "right"]
    for t in range(400):
        context = {"x": float(t % 2), "y": 1.0}
        arm = policy.pull(arms, context)
        policy.update(arm, context, 1.0 if arm == ("left" if t % 2 else "right") else 0.0)
    assert policy.distribution(arms, {"x": 1.0, "y": 1.0})[0] > 0.5
    assert policy.distribution(arms, {"x": 0.0, "y": 1.0})[1] > 0.5
    assert pickle.loads(pickle.dumps(policy)).distribution(arms, {"x": 1.0, "y": 1.0}) == \
        policy.distribution(arms, {"x": 1.0, "y": 1.0})


def test_predict_rewards_estimate_the_arms_rewards():
    policy = make(beta=0.01, seed=0)
    means = [0.2, 0.8, 0.5]
    for context, _ in stream(300, seed=7):
        arm = policy.pull(ARMS, context)
        policy.update(arm, context, means[ARMS.index(arm)])
    predicted = policy.predict_rewards(ARMS, next(stream(1, seed=8))[0])
    assert int(np.argmax(predicted)) == 1 and predicted[1] == pytest.approx(0.8, abs=0.05)


# -- a River pipeline as the oracle -----------------------------------------------------------


def sgd_regression():
    rate = optim.schedulers.InverseScaling
    return linear_model.LinearRegression(optim.SGD(rate(0.1, power=0.5)),
                                         intercept_lr=rate(0.1, power=0.5))


def pipeline_policy(**params) -> RegCBPolicy:
    oracle = preprocessing.StandardScaler() | sgd_regression()
    return RegCBPolicy("optimistic", oracle=oracle, beta=1e-3, **params)


def mean_reward(policy: RegCBPolicy, rounds) -> float:
    total = 0.0
    for context, rewards in rounds:
        arm = policy.pull(ARMS, context)
        total += rewards[ARMS.index(arm)]
        policy.update(arm, context, rewards[ARMS.index(arm)])
    return total / len(rounds)


def test_a_river_pipeline_is_the_oracle_and_its_scaler_is_applied():
    """The contexts' offset (100) and scale defeat plain SGD; the pipeline's scaler fixes it."""
    rounds = list(stream(600, seed=3))
    policy = pipeline_policy(seed=0)
    scaled = mean_reward(policy, rounds)
    raw = mean_reward(RegCBPolicy("optimistic", oracle=sgd_regression(), beta=1e-3, seed=0),
                      rounds)
    assert scaled > 0.7 and raw < 0.45  # uniform play earns 1/3
    models = policy.learner.model.oracle.regressors  # one pipeline per arm, each with its
    # own scaler
    assert len(models) == 3 and all(model["StandardScaler"].counts for model in models)
    assert policy.oracle["StandardScaler"].counts == {}  # the template is never trained


@pytest.mark.parametrize("copier", [lambda p: pickle.loads(pickle.dumps(p)), copy.deepcopy])
def test_a_pipeline_oracle_survives_round_trips_and_clone(copier):
    rounds = list(stream(300, seed=6))
    policy = pipeline_policy(seed=4)
    play(policy, rounds[:150])
    twin = copier(policy)
    assert play(twin, rounds[150:]) == play(policy, rounds[150:])
    clone = policy.clone()
    assert clone.learner.n_labels == 0 and policy.learner.n_labels == 300
    assert play(clone, rounds[:100]) == play(pipeline_policy(seed=4), rounds[:100])


def test_bayesian_linear_regression_gives_the_papers_ridge_decisions():
    """River's BayesianLinearRegression (alpha = beta = 1) through RiverOracle is the
    paper's ridge (l2 = 1): the same distributions, round for round."""
    river_ridge = make(oracle=linear_model.BayesianLinearRegression(), beta=0.01,
                       variant="elimination", schedule="online", seed=3)
    ridge = make(oracle="ridge", beta=0.01, variant="elimination", schedule="online", seed=3)
    for context, rewards in stream(150, seed=6):
        expected = ridge.distribution(ARMS, context)
        assert np.allclose(river_ridge.distribution(ARMS, context), expected, atol=1e-9)
        arm = ridge.pull(ARMS, context)
        assert river_ridge.pull(ARMS, context) == arm
        for policy in (ridge, river_ridge):
            policy.update(arm, context, rewards[ARMS.index(arm)])
