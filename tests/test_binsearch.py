"""BinSearch (the paper's Algorithms 3-5) against the closed-form ridge bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, Ridge

from regcb_stream import RegCB, RidgeOracle
from regcb_stream.datasets.synthetic import LinearProblem
from regcb_stream.oracles.binsearch import BinSearchOracle, binsearch, ridge_penalty

L2 = 0.7


class NumpyRidge:
    """A minimal weighted ridge regressor (no intercept): fast fits for the learner test."""

    def __init__(self, l2: float = 1.0):
        self.l2 = l2

    def fit(self, X, y, sample_weight):
        gram = X.T @ (sample_weight[:, None] * X) + self.l2 * np.eye(X.shape[1])
        self.coef_ = np.linalg.solve(gram, X.T @ (sample_weight * y))
        return self

    def predict(self, X):
        return X @ self.coef_


def _problem(seed: int, n: int = 15, d: int = 3):
    rng = np.random.default_rng(seed)
    X = np.c_[np.ones(n), rng.normal(size=(n, d - 1))]
    y = np.clip(0.5 + 0.3 * X[:, 1] + 0.2 * rng.normal(size=n), 0, 1)
    weight = rng.uniform(0.5, 2.0, size=n)
    x = np.r_[1.0, rng.normal(size=d - 1)]
    return X, y, weight, x


def _closed_form(X, y, weight, x, budget, l2=L2):
    oracle = RidgeOracle(l2=l2)
    oracle.grow(1, X.shape[1])
    oracle.learn_many(X, np.zeros(len(y), dtype=int), y, weight)
    oracle.rebuild()
    return oracle.bounds(x[None, None, :], np.array([0]), budget)


def _search(X, y, weight, x, kind, budget, alpha, reward_range=(0.0, 1.0)):
    return binsearch(Ridge(alpha=L2, fit_intercept=False), X, y, x, kind=kind, budget=budget,
                     alpha=alpha, reward_range=reward_range, sample_weight=weight,
                     penalty=ridge_penalty(L2))


@pytest.mark.parametrize("seed", range(4))
def test_sklearn_ridge_is_the_ridge_oracle(seed):
    X, y, weight, x = _problem(seed)
    fitted = Ridge(alpha=L2, fit_intercept=False).fit(X, y, sample_weight=weight)
    prediction, _, _ = _closed_form(X, y, weight, x, budget=1.0)
    assert fitted.predict(x[None])[0] == pytest.approx(prediction[0, 0], abs=1e-10)


@pytest.mark.parametrize("kind", ["high", "low"])
@pytest.mark.parametrize("budget", [0.02, 0.3, 3.0])
@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_the_closed_form_within_alpha(seed, budget, kind):
    X, y, weight, x = _problem(seed)
    _, low, high = _closed_form(X, y, weight, x, budget)
    expected = float(np.clip((high if kind == "high" else low)[0, 0], 0, 1))
    for alpha in (1e-2, 1e-4):
        result = _search(X, y, weight, x, kind, budget, alpha)
        assert abs(result.bound - expected) <= alpha, (alpha, result, expected)


@pytest.mark.parametrize("seed", range(3))
def test_any_reward_range(seed):
    """Scaled rewards in [-2, 3]: fake labels at 8 and -7, same relative precision."""
    X, y, weight, x = _problem(seed)
    y = -2 + 5 * y
    for budget in (0.5, 20.0):
        _, low, high = _closed_form(X, y, weight, x, budget)
        for kind, bound in (("high", high), ("low", low)):
            result = _search(X, y, weight, x, kind, budget, 1e-3, reward_range=(-2.0, 3.0))
            assert abs(result.bound - np.clip(bound[0, 0], -2, 3)) <= 1e-3


def test_number_of_fits_is_logarithmic_in_one_over_alpha():
    worst = {}
    for alpha in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
        fits = [
            _search(*_problem(seed)[:3], _problem(seed)[3], kind, budget, alpha).n_fits
            for seed in range(4) for budget in (0.02, 0.3) for kind in ("high", "low")
        ]
        worst[alpha] = max(fits)
        assert worst[alpha] <= 2 * math.log2(1 / alpha) + 6, worst
    assert worst[1e-6] <= worst[1e-3] + 2 * math.log2(1e3) + 1  # grows like 2 log2(1/alpha)


def test_unweighted_fit_past_the_range_end_returns_the_end_after_one_fit():
    X, _, weight, x = _problem(0)
    y = np.full(len(X), 1.0)
    result = _search(X, y + 0.5, weight, x, "high", 0.1, 1e-3)  # fit predicts ~1.4
    assert result == (1.0, 1)


def test_a_pinned_prediction_is_not_moved():
    """No intercept at x = 0: every linear function predicts 0 (the paper's literal
    R(f_lo) = R(f_hi) test would return the range end)."""
    X, y, weight, _ = _problem(1)
    for kind in ("high", "low"):
        result = _search(X[:, 1:], y, weight, np.zeros(2), kind, 0.5, 1e-3)
        assert result.bound == 0.0


def test_zero_budget_and_empty_history():
    X, y, weight, x = _problem(2)
    prediction, _, _ = _closed_form(X, y, weight, x, 0.0)
    assert _search(X, y, weight, x, "high", 0.0, 1e-3).bound == pytest.approx(prediction[0, 0])
    empty = np.zeros((0, 3)), np.zeros(0), np.zeros(0)
    _, low, high = _closed_form(*empty, x, 0.05)  # the ridge prior: 0 -+ sqrt(b x.x / l2)
    for kind, bound in (("high", high), ("low", low)):
        result = _search(*empty, x, kind, 0.05, 1e-4)
        assert abs(result.bound - np.clip(bound[0, 0], 0, 1)) <= 1e-4
    unregularized = binsearch(LinearRegression(fit_intercept=False), *empty[:2], x,
                              kind="high", budget=0.05)
    assert unregularized.bound == 1.0  # no data, no penalty: the whole class


def test_bad_arguments_are_named():
    X, y, weight, x = _problem(0)
    with pytest.raises(ValueError, match="kind"):
        _search(X, y, weight, x, "middle", 0.1, 1e-3)
    with pytest.raises(ValueError, match="alpha"):
        _search(X, y, weight, x, "high", 0.1, 0.0)


# -- the oracle inside the learner -------------------------------------------------------


def test_oracle_bounds_equal_the_ridge_oracle_within_alpha():
    X, y, _, _ = _problem(3, n=40)
    models = np.arange(40) % 2
    ridge = RidgeOracle(l2=1.0)
    search = BinSearchOracle(NumpyRidge(1.0), alpha=1e-4, penalty=ridge_penalty(1.0))
    for oracle in (ridge, search):
        oracle.grow(2, 3)
        oracle.learn_many(X, models, y, np.ones(40))
        oracle.rebuild()
    phi = np.broadcast_to(_problem(4, n=5)[0][:, None, :], (5, 2, 3))
    expected = ridge.bounds(phi, slice(0, 2), 0.2)
    got = search.bounds(phi, slice(0, 2), 0.2)
    np.testing.assert_allclose(got[0], expected[0], atol=1e-10)
    for bound, reference in zip(got[1:], expected[1:]):
        np.testing.assert_allclose(bound, np.clip(reference, 0, 1), atol=1e-4)


@pytest.mark.parametrize("variant", ["elimination", "optimistic"])
def test_learner_decisions_match_the_ridge_learner(variant):
    X, _, rewards = LinearProblem.make(n_actions=3, dim=2, seed=0).sample(150, seed=1)
    actions = [0, 1, 2]
    oracle = BinSearchOracle(NumpyRidge(1.0), alpha=1e-6, penalty=ridge_penalty(1.0))
    ridge, search = (RegCB(variant, oracle=o, beta=2e-3, seed=3, random_features=0)
                     for o in ("ridge", oracle))
    same = interior = 0
    for x, reward in zip(X, rewards):
        expected, got = ridge.decide(x, actions), search.decide(x, actions)
        np.testing.assert_allclose(got.low, expected.low, atol=1e-6)
        np.testing.assert_allclose(got.high, expected.high, atol=1e-6)
        same += np.array_equal(got.pmf, expected.pmf)
        interior += int(((got.low > 0) & (got.high < 1)).sum())
        action, prob, _ = ridge.predict(x, actions)
        assert search.predict(x, actions)[:2] == (action, prob)
        for learner in (ridge, search):
            learner.learn(x, action, reward[action], prob)
    assert same == len(X)
    assert interior > 100  # of 450: many bounds are not at the range ends
