"""The Python API refuses a bad argument at once, naming the parameter and what it must be;
nothing bad is stored to fail later: after a refused call the learner continues as if it
had not been made."""

import pickle

import numpy as np
import pytest

from regcb_stream import RegCB, VWOracle

X = np.random.default_rng(0).normal(size=(5, 2))
x = X[0]
AB = ["a", "b"]
ONES = np.ones(5)


def reveal(rounds, index):
    return np.ones(len(rounds))


@pytest.mark.parametrize("kwargs, message", [
    ({"seed": "x"}, r"'seed' parameter of RegCB must be None or an int >= 0; got 'x'"),
    ({"seed": -1}, r"'seed' .* got -1"),
    ({"seed": 2.5}, r"'seed' .* got 2.5"),
    ({"seed": True}, r"'seed' .* got True"),
    ({"cross": None}, r"'cross' parameter of RegCB must be True or False"),
    ({"intercept": "yes"}, r"'intercept' parameter"),
    ({"allow_out_of_range": 1}, r"'allow_out_of_range' parameter"),
    ({"budget": "auto", "budget_grid": "x"}, r"'budget_grid' parameter .* non-empty sequence"),
    ({"budget": "auto", "budget_grid": []}, r"'budget_grid' parameter"),
    ({"budget_grid": [1e-3, float("nan")]}, r"'budget_grid' parameter"),
    ({"oracle": 5}, r"oracle must be a name or an Oracle"),
    ({"schedule": np.zeros((2, 2))}, r"'schedule' parameter of RegCB must be one of"),
])
def test_constructor_names_the_parameter(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        RegCB(**kwargs)


def test_seed_of_numpy_ints_and_none_are_seeds():
    assert RegCB(seed=np.int64(3)).predict(x, AB) == RegCB(seed=3).predict(x, AB)
    assert RegCB(seed=None).predict(x, AB)[0] in AB


@pytest.mark.parametrize("kwargs, message", [
    ({"learning_rate": -1}, r"'learning_rate' parameter of VWOracle must be a finite number"),
    ({"learning_rate": "x"}, r"'learning_rate'"),
    ({"bisection": None}, r"'bisection' parameter of VWOracle must be True or False"),
    ({"reward_range": (1, 0)}, r"'reward_range' parameter of VWOracle"),
    ({"kernels": 2}, r"'kernels' parameter"),
])
def test_vw_oracle_constructor_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        VWOracle(**kwargs)


CALLS = [
    (lambda l: l.learn(x, "a", 1.0, 0.5, weight=float("nan")),
     ValueError, r"weight must be a finite number >= 0, got nan"),
    (lambda l: l.learn(x, "a", 1.0, 0.5, weight=float("inf")), ValueError, r"weight .* inf"),
    (lambda l: l.learn(x, "a", 1.0, 0.5, weight=-1), ValueError, r"weight .* got -1"),
    (lambda l: l.learn(x, ["a"], 1.0), TypeError, r"hashable labels"),
    (lambda l: l.learn_many(X, ["a"] * 4, ONES), ValueError,
     r"same length; got contexts 5, actions 4, rewards 5"),
    (lambda l: l.learn_many(X, ["a"] * 5, ONES, probs=[1] * 4), ValueError, r"probs 4"),
    (lambda l: l.learn_many(X, None, ONES), TypeError, r"actions must be a sequence"),
    (lambda l: l.learn_many(X, ["a"] * 5, ONES, weights=[1, 1, 1, 1, np.nan]), ValueError,
     r"weight must be a finite number >= 0, got nan"),
    (lambda l: l.learn_many(X, ["a"] * 5, "abcde"), TypeError, r"rewards must be a sequence"),
    (lambda l: l.learn_many(X, ["a"] * 5, ["1"] * 4 + ["x"]), TypeError,
     r"rewards must be numbers"),
    (lambda l: l.learn_many(X[:3], "abc", np.ones(3)), TypeError,
     r"actions must be a sequence"),
    (lambda l: l.learn_many(X, np.array([0, 1, 0, 1, 0]), ONES), ValueError,
     r"action 0 was never offered .*predict_many's index i is actions\[i\]"),
    (lambda l: l.predict(x, None), TypeError, r"actions must be a list .* got NoneType"),
    (lambda l: l.predict(x, "abc"), TypeError,
     r"actions must be a list of actions, not a string: pass \['abc'\]"),
    (lambda l: l.predict(x, {"a": 1}), TypeError, r"actions must be a list"),
    (lambda l: l.predict(x, [["a"], ["b"]]), TypeError, r"hashable labels"),
    (lambda l: l.predict_many(X, "ab"), TypeError, r"not a string"),
    (lambda l: l.pmf(x, "ab"), TypeError, r"not a string"),
    (lambda l: l.decide_event("e", x, "ab"), TypeError, r"not a string"),
    (lambda l: l.score(x, "ab", "a"), TypeError, r"not a string"),
    (lambda l: l.replay(X, AB, ["a"] * 5, ONES), TypeError,
     r"played must hold indices of the offered actions \(ints, -1 for none\), not labels "
     r"or fractions; got 'a'"),
    (lambda l: l.replay(X, AB, [0.5] * 5, ONES), TypeError, r"got 0.5"),
    (lambda l: l.replay(X, AB, [2] * 5, ONES), ValueError,
     r"played index 2 is not among the 2 offered actions"),
    (lambda l: l.replay(X, AB, [-2] * 5, ONES), ValueError, r"played index -2"),
    (lambda l: l.replay(X, AB, [0] * 4, ONES), ValueError, r"contexts 5, played 4"),
    (lambda l: l.replay(X, AB, [0] * 5, ONES[:4]), ValueError,
     r"rewards must hold one number per context \(5\)"),
    (lambda l: l.replay(X, AB, [0] * 5, ONES, weights=[-1] * 5), ValueError, r"weight"),
    (lambda l: l.play(X, AB, 5), TypeError, r"reveal must be a function"),
    (lambda l: l.play(X, AB, reveal, uniforms=[0.5] * 4), ValueError, r"uniforms 4"),
    (lambda l: l.play(X, AB, reveal, uniforms=[1.5] * 5), ValueError,
     r"uniforms must be numbers in \[0, 1\)"),
    (lambda l: l.wait_for_rewards(10, default_reward=float("nan")), ValueError, r"reward"),
    (lambda l: l.change_exploration(melowness=0.1), TypeError, r"not melowness"),
]


@pytest.mark.parametrize("call, error, message", CALLS)
def test_a_bad_argument_is_refused_and_changes_nothing(call, error, message):
    learner = RegCB(seed=1)
    for context in X:
        action, prob, info = learner.predict(context, AB)
        learner.learn(context, action, 1.0, prob, **info)
    twin = pickle.loads(pickle.dumps(learner))
    with pytest.raises(error, match=message):
        call(learner)
    assert trace(learner) == trace(twin)


def trace(learner) -> list:
    """The actions, probabilities and bounds of 30 more rounds."""
    out = []
    for context in np.random.default_rng(3).normal(size=(30, 2)):
        action, prob, info = learner.predict(context, AB)
        learner.learn(context, action, float(context[0] > 0), prob, **info)
        out.append((action, prob, learner.decide(context, AB).high.tolist()))
    return out


@pytest.mark.parametrize("oracle", [None, "vw", "bounded"])
def test_weight_zero_changes_no_regression(oracle):
    """Importance weight 0 is VW's: the label is counted and moves no regressor."""
    contexts = np.random.default_rng(2).normal(size=(40, 3))
    learners = [RegCB(oracle=oracle), RegCB(oracle=oracle)]
    for context in contexts[:30]:
        for learner in learners:
            action, prob, info = learner.predict(context, AB)
            learner.learn(context, action, float(context[0] > 0), prob, **info)
    weighted, plain = learners
    weighted.learn(contexts[30], "a", 1.0, 0.5, weight=0.0)
    weighted.replay(contexts[31:36], AB, [0] * 5, np.ones(5), weights=np.zeros(5))
    assert weighted.n_labels == plain.n_labels + 6
    assert np.allclose(weighted.decide(contexts[39], AB).prediction,
                       plain.decide(contexts[39], AB).prediction)


def test_refused_weights_leave_the_bounds_sound():
    """The issue's case: a NaN weight once, then 100 normal labels; the bounds are not
    stuck at [0, 0]."""
    learner = RegCB(seed=0)
    with pytest.raises(ValueError, match="weight"):
        learner.learn(x, "b", 1.0, 0.5, weight=float("nan"))
    for _ in range(100):
        action, prob, info = learner.predict(x, AB)
        learner.learn(x, action, 1.0, prob, **info)
    decision = learner.decide(x, AB)
    assert np.isfinite(decision.prediction).all() and (decision.high > 0.5).all()


def test_predict_many_and_learn_many_compose():
    """``predict_many`` gives indices (to index rewards); ``learn_many`` the actions."""
    learner = RegCB(seed=0)
    rewards = np.stack([X[:, 0] > 0, X[:, 0] <= 0], axis=1).astype(float)
    index, probs = learner.predict_many(X, AB)
    learner.learn_many(X, [AB[i] for i in index], rewards[np.arange(5), index], probs)
    assert learner.n_labels == 5


@pytest.mark.parametrize("actions", [np.zeros((2, 2, 2)), [np.zeros(2), np.zeros(2)]])
def test_arrays_as_actions_after_dense_draws_are_refused_by_name(actions):
    """Once dense contexts have been drawn for (the per-example lane settled), actions that
    are arrays are refused naming ``actions``, as before any draw (the lane's check of its
    actions compared them with ``==``, whose array answer has no truth value)."""
    learner = RegCB(seed=0)
    rng = np.random.default_rng(0)
    for t in range(6):
        x = rng.normal(size=3)
        action, prob, _ = learner.predict(x, ["a", "b", "c"])
        learner.learn(x, action, float(t % 2), prob)
    with pytest.raises(TypeError, match="actions"):
        learner.predict(rng.normal(size=3), actions)


def test_a_horizon_of_any_size_is_taken_at_once():
    """The online schedule's epochs within a horizon are counted without a walk over them
    (``RegCB(horizon=10**20)`` took hours before)."""
    from regcb_stream.explore.schedules import epochs_until

    assert epochs_until("online", 10**20) == 10**20
    learner = RegCB(horizon=10**20, budget="theory")
    action, prob, _ = learner.predict([0.5, -1.0], ["a", "b"])
    learner.learn([0.5, -1.0], action, 1.0, prob)
