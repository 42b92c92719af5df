"""RegCBLearner and the environments under coba's own evaluation (skipped without coba)."""

from __future__ import annotations

import collections
import copy
import pickle

import numpy as np
import pytest

from regcb_stream.datasets.logs import logged_lines
from regcb_stream.integrations.coba import MulticlassEnvironment, RegCBLearner, VWLogEnvironment

coba = pytest.importorskip(
    "coba", reason="coba is not installed (pip install 'regcb-stream[coba]' or 'coba>=8')"
)


def rewards_by_learner(result) -> dict:
    rewards = collections.defaultdict(list)
    for row in result.interactions.to_dicts():
        rewards[row["learner_id"]].append(row["reward"])
    return rewards


def run(environments, learners, evaluator=None):
    evaluator = evaluator or coba.SequentialCB()
    return coba.Experiment(environments, learners, evaluator).run(quiet=True, processes=1)


def small_problem(n: int = 300, seed: int = 0):
    """A supervised problem without the data folder: 3 classes, linear boundaries."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] > 0.3, "left", np.where(X[:, 1] > 0, "right", "up"))
    return X.tolist(), y.tolist()


def test_regcb_and_a_vw_learner_run_end_to_end():
    X, y = small_problem()
    # coba's supervised source over (X, y) is a one-shot zip that coba reads more than once:
    # without materialize() the experiment records no interaction at all
    environments = coba.Environments.from_supervised(X, y, label_type="c").materialize()
    learners = [RegCBLearner("optimistic", beta=1e-3), coba.VowpalSquarecbLearner()]
    rewards = rewards_by_learner(run(environments, learners))
    assert sorted(rewards) == [0, 1]
    assert all(len(values) == 300 for values in rewards.values())
    assert np.mean(rewards[0][150:]) > 0.6  # RegCB learns the boundaries


def test_multiclass_environment_with_vw_learners():
    environment = MulticlassEnvironment("vehicle", seed=0, take=150)
    try:
        first = next(iter(environment.read()))
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    assert first["actions"] == ["0", "1", "2", "3"] and len(first["context"]) == 18
    learners = [RegCBLearner(), coba.VowpalRegcbLearner(cb_min_cost=-1, cb_max_cost=0)]
    result = run(coba.Environments.from_custom(environment), learners)
    rewards = rewards_by_learner(result)
    assert [len(rewards[i]) for i in (0, 1)] == [150, 150]
    assert {row["family"] for row in result.learners.to_dicts()} == {"RegCB", "vw"}


def test_logged_vw_environment_off_policy(tmp_path):
    """A VW log's costs become coba's rewards in [0, 1]: RegCBLearner() with its defaults
    and a VW learner configured as for any coba environment both record every example."""
    X, y = small_problem(200, seed=1)
    labels = sorted(set(y))
    R = np.array([[float(label == c) for c in labels] for label in y])
    log = tmp_path / "log.dat"
    log.write_text("".join(logged_lines(np.array(X), R, adf=False, seed=2)))
    environment = VWLogEnvironment(log, n_actions=3)
    served = list(environment.read())
    first = served[0]
    assert first["actions"] == ["1", "2", "3"] and first["probability"] == pytest.approx(1 / 3)
    logged = np.random.default_rng(2).integers(3, size=200)  # (logged_lines' draws)
    assert [i["reward"] for i in served] == R[np.arange(200), logged].tolist()  # 1 - cost
    learners = [RegCBLearner(), coba.VowpalRegcbLearner(cb_min_cost=-1, cb_max_cost=0)]
    evaluator = coba.SequentialCB(learn="off", eval="ips")
    rewards = rewards_by_learner(run(coba.Environments.from_custom(environment), learners,
                                     evaluator))
    assert [len(rewards[i]) for i in (0, 1)] == [200, 200]


def test_logged_vw_environment_cost_range(tmp_path):
    log = tmp_path / "log.dat"
    log.write_text("1:-1:0.5 |s x:1\n2:0:0.5 |s x:2\n")
    rewards = [i["reward"] for i in VWLogEnvironment(log, n_actions=2,
                                                     cost_range=(-1, 0)).read()]
    assert rewards == [1.0, 0.0]
    with pytest.raises(ValueError, match=r"example 1 has cost -1, outside cost_range"):
        list(VWLogEnvironment(log, n_actions=2).read())
    with pytest.raises(ValueError, match="'cost_range' parameter of VWLogEnvironment"):
        VWLogEnvironment(log, n_actions=2, cost_range=(1, 0))
    with pytest.raises(ValueError, match="'n_actions' parameter of VWLogEnvironment"):
        VWLogEnvironment(log)


def test_learner_is_lazy_and_survives_deepcopy_and_pickle():
    learner = RegCBLearner(beta=0.01, seed=4)
    fresh = len(pickle.dumps(learner))  # no RegCB yet: its parameters alone
    assert fresh < 1000 and len(pickle.dumps(pickle.loads(pickle.dumps(learner)))) == fresh
    for t in range(60):
        context = [np.sin(t), np.cos(t)]
        action, prob, info = learner.predict(context, ["x", "y"])
        learner.learn(context, action, float(action == "xy"[t % 2]), prob, **info)
    twins = [copy.deepcopy(learner), pickle.loads(pickle.dumps(learner))]
    for t in range(60, 90):
        context = [np.sin(t), np.cos(t)]
        picks = [one.predict(context, ["x", "y"]) for one in (learner, *twins)]
        assert picks[0] == picks[1] == picks[2]
        for one in (learner, *twins):
            one.learn(context, picks[0][0], 1.0, picks[0][1])


def test_coba_shapes_of_contexts_and_actions():
    learner = RegCBLearner(seed=0)
    actions = [[1, 0], [0, 1]]  # one-hot lists are unhashable: used as tuples
    action, prob, _ = learner.predict({"color": "red", "size": 2.0}, actions)
    assert action in actions and prob == 0.5
    learner.learn({"color": "red", "size": 2.0}, action, 1.0, prob)
    assert learner.score({"color": "blue", "size": 1.0}, actions, [0, 1]) >= 0.0
    assert RegCBLearner().predict(None, ["a", "b"])[0] in ("a", "b")
    assert coba.SafeLearner(RegCBLearner()).full_name.startswith("RegCB(")
