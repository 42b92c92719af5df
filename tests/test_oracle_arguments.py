"""Every public oracle's constructor refuses a bad argument at once, with an error naming the
parameter and what it must be; good arguments are kept; a learner takes each oracle."""

import inspect

import numpy as np
import pytest
from river import linear_model
from sklearn.linear_model import Ridge

from regcb_stream import RegCB
from regcb_stream.oracles import (
    BinSearchOracle,
    BoundedRidgeOracle,
    RidgeOracle,
    RiverOracle,
    TreesOracle,
    VWOracle,
)
from regcb_stream.oracles.binsearch import ridge_penalty

NAN, INF = float("nan"), float("inf")

# bad and good values of the kinds of parameters
FLAG = ([None, "x", "True", 0, 1, 2, [True], NAN], [True, False, np.bool_(True)])
RANGE = ([None, (1, 0), (0, 0), (0, NAN), (NAN, 1), (0, INF), (-INF, 0), (0,), (0, 1, 2),
          "01", 1.0, {0: 1}, ("0", "1"), (None, 1), (True, 2)],
         [(0, 1), (0.0, 1.0), [-1, 0], (np.float64(-2), np.int64(3))])
NON_FINITE = [None, NAN, INF, -INF, "1", [1.0], True, 1j]
POSITIVE = (NON_FINITE + [0, 0.0, -1, -1e-9], [1e-9, 0.5, 1, 2.0, np.float32(3)])
COUNT_FROM_0 = ([None, -1, 1.5, 1e6, NAN, INF, "3", True, [3]], [0, 3, np.int64(7)])
MEMORY = ([-1, 1.5, 1e9, NAN, INF, "1G", True, [1]], [None, 0, 2**20, np.int64(2**30)])
L2 = ([v for v in POSITIVE[0] if v is not None], [None, *POSITIVE[1]])
PRIOR = ([None, NAN, INF, -INF, "x", "pessimistic", "", True, [0.0], (0.5,)],
         [0, -1.5, 2.0, np.float32(0.5), "optimistic", "midpoint", "auto"])
FORGET = ([None, 0, 0.0, -1, 1.5, 1 + 1e-9, NAN, INF, "1", True],
          [1, 1.0, 0.99, 1e-3, np.float64(0.5)])
MAX_EXACT = ([v for v in COUNT_FROM_0[0] if v != INF] + [-INF], [*COUNT_FROM_0[1], INF])
RIDGE = {"l2": L2, "prior": PRIOR, "memory": MEMORY, "forget": FORGET, "reward_range": RANGE,
         "kernels": FLAG}

# each class: its required arguments, and each parameter's bad and good values
TABLE = {
    RidgeOracle: ({}, RIDGE | {"max_exact": MAX_EXACT, "piecewise": FLAG}),
    BoundedRidgeOracle: ({}, RIDGE | {"head": COUNT_FROM_0}),
    VWOracle: ({}, {"learning_rate": POSITIVE, "bisection": FLAG, "intercept_last": FLAG,
                    "reward_range": RANGE, "kernels": FLAG}),
    TreesOracle: ({}, {
        "n_estimators": ([None, 0, -1, 1.5, 10.0, NAN, "x", True], [1, 10, np.int64(100)]),
        "max_depth": ([None, 0, -1, 18, 2.0, NAN, "5", True], [1, 5, 17]),
        "learning_rate": POSITIVE,
        "backend": ([None, "xgboost", "LightGBM", 1, ["sklearn"]], ["lightgbm", "sklearn"]),
        "l2": POSITIVE,
        "refit_growth": (NON_FINITE + [1, 1.0, 0.5, -2], [1.01, 2, 3.5]),
        "anchor": FLAG,
        "seed": ([None, -1, 1.5, 2**32, NAN, "0", True], [0, 7, 2**32 - 1, np.int64(3)]),
        "params": (["x", 3, [1], [("a", 1)], {1: 2}], [None, {}, {"min_child_samples": 1}]),
    }),
    RiverOracle: ({"regressor": linear_model.LinearRegression()}, {
        "regressor": ([None, "x", 3, Ridge(), linear_model.LinearRegression],
                      [linear_model.LinearRegression(), linear_model.BayesianLinearRegression()]),
        "reward_range": RANGE,
        "sensitivity": ([None, "exact", "AUTO", 1, ["auto"]], ["auto", "probe"]),
        "probe_weight": POSITIVE,
        "normalize": FLAG,
    }),
    BinSearchOracle: ({"regressor": Ridge(fit_intercept=False)}, {
        "regressor": ([None, "x", 3, linear_model.LinearRegression(), Ridge],
                      [Ridge(fit_intercept=False), Ridge(alpha=2.0)]),
        "alpha": POSITIVE,
        "reward_range": RANGE,
        "penalty": (["x", 1.0, [ridge_penalty(1.0)]], [None, ridge_penalty(1.0), abs]),
    }),
}
# parameters whose bad values are objects of the wrong kind: a TypeError
TYPE_ERRORS = {(RiverOracle, "regressor"), (BinSearchOracle, "regressor"),
               (BinSearchOracle, "penalty")}

CASES = [(cls, name, value) for cls, (_, params) in TABLE.items()
         for name, (bad, _) in params.items() for value in bad]
GOOD = [(cls, name, value) for cls, (_, params) in TABLE.items()
        for name, (_, good) in params.items() for value in good]


def _id(value) -> str:
    return repr(value)[:30]


def test_every_constructor_parameter_is_in_the_table():
    for cls, (_, params) in TABLE.items():
        assert set(params) == set(inspect.signature(cls).parameters), cls.__name__


@pytest.mark.parametrize("cls, name, value", CASES, ids=_id)
def test_a_bad_argument_is_refused_naming_the_parameter(cls, name, value):
    required, _ = TABLE[cls]
    error = TypeError if (cls, name) in TYPE_ERRORS else ValueError
    with pytest.raises(error, match=rf"^the '{name}' parameter of {cls.__name__} must be "
                                    rf"[^;]+; got "):
        cls(**(required | {name: value}))


@pytest.mark.parametrize("cls, name, value", GOOD, ids=_id)
def test_a_good_argument_is_kept(cls, name, value):
    required, _ = TABLE[cls]
    oracle = cls(**(required | {name: value}))
    kept = getattr(oracle, name)
    if name == "reward_range":
        assert kept == (float(value[0]), float(value[1]))
    elif name == "params":
        assert kept == dict(value or {})
    else:
        assert kept is value or kept == value


def test_the_message_says_what_was_expected_and_what_came():
    with pytest.raises(ValueError) as error:
        RidgeOracle(max_exact=-1)
    assert str(error.value) == ("the 'max_exact' parameter of RidgeOracle must be an int >= 0 "
                                "(models x features^2 kept exact) or math.inf; got -1")
    with pytest.raises(TypeError) as error:
        BinSearchOracle(None)
    assert str(error.value).startswith("the 'regressor' parameter of BinSearchOracle must be "
                                       "a regressor with fit(X, y, sample_weight) and predict(X)")
    with pytest.raises(ValueError, match=r"'params' .* got \{1: 2\}"):
        TreesOracle(params={1: 2})


def test_sklearn_trees_refuse_keywords_their_regressor_does_not_take():
    for params in ({"min_data_in_leaf": 5}, {"max_depth": 3}, {"random_state": 1}):
        with pytest.raises(ValueError, match=r"^the 'params' parameter of TreesOracle must "
                                             r"hold keyword arguments of scikit-learn's"):
            TreesOracle(backend="sklearn", params=params)
    assert TreesOracle(backend="sklearn", params={"subsample": 0.5}).params == {"subsample": 0.5}
    assert TreesOracle(params={"min_data_in_leaf": 5}).params == {"min_data_in_leaf": 5}


def test_a_river_regressor_that_drops_the_weight_is_refused_by_name():
    with pytest.raises(ValueError, match="^the 'regressor' parameter of RiverOracle must be a "
                                         "regressor that honours sample weights; PARegressor"):
        RiverOracle(linear_model.PARegressor())


def test_a_long_argument_is_cut_short():
    with pytest.raises(ValueError) as error:
        RidgeOracle(prior="x" * 1000)
    assert len(str(error.value)) < 200


@pytest.mark.parametrize("oracle", [5, "x" * 3, object(), RidgeOracle, Ridge(), [RidgeOracle()]],
                         ids=_id)
def test_a_learner_refuses_what_is_not_an_oracle(oracle):
    error = ValueError if isinstance(oracle, str) else TypeError
    with pytest.raises(error, match="oracle"):
        RegCB(oracle=oracle)


@pytest.mark.parametrize("oracle", [
    RidgeOracle(), BoundedRidgeOracle(), VWOracle(), TreesOracle(n_estimators=5),
    RiverOracle(linear_model.LinearRegression()), BinSearchOracle(Ridge(fit_intercept=False)),
], ids=lambda oracle: type(oracle).__name__)
def test_a_learner_takes_each_oracle_at_its_defaults(oracle):
    learner = RegCB(oracle=oracle, seed=0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        x = rng.random(2).tolist()
        action, prob, kwargs = learner.predict(x, ["a", "b", "c"])
        learner.learn(x, action, float(action == "b"), prob, **kwargs)
    pmf = learner.pmf([0.5, 0.5], ["a", "b", "c"])
    assert len(pmf) == 3 and abs(sum(pmf) - 1) < 1e-9 and min(pmf) >= 0
