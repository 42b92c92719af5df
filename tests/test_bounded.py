"""The bounded ridge oracle: exact ridge while its head holds every column, its compiled
kernels against their numpy reference, the hand-over from exact ridge, its memory limit."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import RULES
from hypothesis import given, settings
from hypothesis import strategies as st

from regcb_stream import BoundedRidgeOracle, RegCB, RidgeOracle, checks
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.oracles.base import MemoryLimitError

VARIANTS = ["optimistic", "elimination"]


def reference(**kwargs) -> BoundedRidgeOracle:
    return BoundedRidgeOracle(kernels=False, **kwargs)


def assert_same(a, b, atol=1e-9) -> None:
    np.testing.assert_array_equal(a.pmf, b.pmf)
    for name in ("prediction", "low", "high"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=atol)


def logged(n: int, seed: int):
    X, R = bandit_stream("letter", noisy=False, seed=seed)
    played = np.random.default_rng(seed).integers(0, 26, n)
    return X[:n], played, R[np.arange(n), played]


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_head_over_every_column_is_exact_ridge(variant):
    X, played, rewards = logged(1200, seed=0)
    actions = list(range(26))
    exact = RegCB(variant, oracle=RidgeOracle(prior="optimistic"), seed=0).replay(
        X, actions, played, rewards)
    bounded = RegCB(variant, oracle=BoundedRidgeOracle(prior="optimistic", head=17), seed=0)
    assert_same(bounded.replay(X, actions, played, rewards), exact, atol=1e-7)


def sparse_contexts(n: int, names: int, active: int, seed: int):
    rng = np.random.default_rng(seed)
    return [{f"f{j}": float(v) for j, v in zip(rng.choice(names, active, replace=False),
                                                rng.normal(size=active))} for _ in range(n)]


@pytest.mark.skipif(not BoundedRidgeOracle().compiled, reason="the kernels are not built")
@pytest.mark.parametrize("head", [0, 5, 40])
@pytest.mark.parametrize("schedule", ["online", "sqrt2"])
def test_compiled_kernels_match_the_numpy_reference(head, schedule):
    contexts = sparse_contexts(400, names=120, active=6, seed=head)
    rng = np.random.default_rng(1)
    played, rewards = rng.integers(0, 4, 400), rng.random(400)
    actions = ["a", "b", "c", "d"]
    fast = RegCB(oracle=BoundedRidgeOracle(head=head), schedule=schedule, seed=0)
    slow = RegCB(oracle=reference(head=head), schedule=schedule, seed=0)
    assert_same(fast.replay(contexts, actions, played, rewards),
                slow.replay(contexts, actions, played, rewards))
    for x, a, r in zip(contexts[:50], played.tolist(), rewards.tolist()):
        assert fast.predict(x, actions) == slow.predict(x, actions)
        fast.learn(x, actions[a], r, 0.25)
        slow.learn(x, actions[a], r, 0.25)


@pytest.mark.skipif(not BoundedRidgeOracle().compiled, reason="the kernels are not built")
@pytest.mark.parametrize("variant, ties", RULES)
def test_dense_rows_match_the_numpy_reference(variant, ties):
    X, played, rewards = logged(600, seed=3)
    actions = list(range(26))
    fast, slow = (RegCB(variant, ties=ties, oracle=oracle(prior="optimistic", head=5), seed=0)
                  for oracle in (BoundedRidgeOracle, reference))
    assert_same(fast.replay(X, actions, played, rewards), slow.replay(X, actions, played,
                                                                      rewards))


def test_the_head_is_refreshed_from_its_gram_matrix():
    oracle = BoundedRidgeOracle(head=3)
    oracle.grow(1, 3)
    for _ in range(oracle.refresh_every + 5):
        oracle.learn(np.array([1.0, 0.5, -0.5]), 0, 1.0)
        oracle.rebuild()
    state = oracle.state()
    np.testing.assert_allclose(state["head_inverse"][0] @ state["head_gram"][0], np.eye(3),
                               atol=1e-9)
    assert state["updates"][0] == 5


def test_exact_ridge_hands_over_when_it_outgrows_max_exact():
    contexts = sparse_contexts(300, names=2000, active=10, seed=0)
    learner = RegCB(oracle=RidgeOracle(prior="optimistic", max_exact=4 * 30**2), seed=0)
    actions = ["a", "b", "c", "d"]
    for i, x in enumerate(contexts):
        action, prob, _ = learner.predict(x, actions)
        learner.learn(x, action, float(i % 3 == 0), prob)
        if i == 1:
            assert isinstance(learner.model.oracle, RidgeOracle)
    oracle = learner.model.oracle
    assert isinstance(oracle, BoundedRidgeOracle)
    assert oracle.state()["head_inverse"].shape[1] == 30
    assert oracle.nbytes < 4 * (24 * 30**2 + 8 * (1.25 * oracle.dim + 1024))
    assert "bounded ridge" in learner.oracle_in_use


def test_the_hand_over_keeps_the_exact_solution():
    X, played, rewards = logged(300, seed=2)
    ridge = RidgeOracle(prior="optimistic")
    learner = RegCB(oracle=ridge, seed=0, random_features=0)  # 17 columns
    learner.replay(X, list(range(26)), played, rewards)
    exact = learner.model.oracle
    phi = learner.model.decisions(X[:20], list(range(26))).rows
    bounded = BoundedRidgeOracle.from_ridge(exact, n_models=1)  # (its head: all 17)
    for a, b in zip(exact.moments(phi, slice(None)), bounded.moments(phi, slice(None))):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)


def test_a_memory_limit_names_what_it_would_take():
    oracle = BoundedRidgeOracle(head=0, memory=2**20)
    oracle.grow(4, 1000)
    with pytest.raises(MemoryLimitError, match=r"needs 1\.2 MB for 4 models of 40000 feat"):
        oracle.grow(4, 40_000)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("head", [0, 2])
@pytest.mark.parametrize("check", checks.yield_checks(), ids=lambda c: c.__name__)
def test_invariants(variant, head, check):
    check(RegCB(variant, oracle=BoundedRidgeOracle(head=head), beta=1e-2, seed=7))


@settings(max_examples=40, deadline=None)
@given(variant=st.sampled_from(VARIANTS), head=st.integers(0, 4),
       schedule=st.sampled_from(["online", "sqrt2", "doubling"]),
       seed=st.integers(0, 2**32 - 1),
       data=st.lists(st.tuples(st.dictionaries(st.sampled_from("abcdefgh"),
                                               st.floats(-1e3, 1e3), max_size=5),
                               st.floats(0, 1), st.integers(2, 5)), min_size=1, max_size=30))
def test_every_distribution_is_valid(variant, head, schedule, seed, data):
    learner = RegCB(variant, oracle=BoundedRidgeOracle(head=head), schedule=schedule, seed=seed)
    checks.play_valid(learner, data)
