"""Invariants every learner configuration must satisfy, in the style of River's checks.

Each ``check_*`` takes a fresh learner and raises ``AssertionError`` naming the broken
invariant. ``yield_checks`` lists them; the test suite runs every check over every
(variant x oracle) pair.

>>> from regcb_stream import RegCB
>>> for check in yield_checks():
...     check(RegCB("optimistic", seed=3))

"""

from __future__ import annotations

import pickle

import numpy as np

ACTIONS = ["a", "b", "c", "d"]


def stream(n: int = 60, dim: int = 3, seed: int = 0):
    """A small deterministic stream of (context, reward per action) for the checks."""
    rng = np.random.default_rng(seed)
    contexts = rng.normal(size=(n, dim))
    rewards = (rng.random((n, len(ACTIONS))) < 0.3 + 0.4 * (contexts[:, :1] > 0)).astype(float)
    return contexts, rewards


def run(learner, n: int = 60) -> list[tuple]:
    """Play ``n`` rounds; return the (action, probability) trace."""
    trace = []
    contexts, rewards = stream(n)
    for x, r in zip(contexts, rewards):
        action, prob, info = learner.predict(x, ACTIONS)
        learner.learn(x, action, float(r[ACTIONS.index(action)]), prob, **info)
        trace.append((action, prob))
    return trace


def play_valid(learner, rounds) -> None:
    """Play ``rounds`` of (context, reward, number of actions) through ``predict`` and
    ``learn``, asserting that each distribution is valid before its draw."""
    for x, reward, k in rounds:
        actions = list(range(k))
        _assert_distribution(learner.pmf(x, actions))
        action, prob, info = learner.predict(x, actions)
        learner.learn(x, action, reward, prob, **info)


def check_pmf_is_distribution(learner) -> None:
    """Every distribution is non-negative and sums to 1, before and while learning."""
    contexts, _ = stream()
    for x in contexts[:5]:
        _assert_distribution(learner.pmf(x, ACTIONS))
    run(learner)
    for x in contexts:
        _assert_distribution(learner.pmf(x, ACTIONS))


def check_prob_matches_pmf(learner) -> None:
    """``predict`` returns an action with positive mass and exactly its pmf entry."""
    contexts, rewards = stream()
    for x, r in zip(contexts, rewards):
        pmf = learner.pmf(x, ACTIONS)
        action, prob, info = learner.predict(x, ACTIONS)
        assert prob > 0 and prob == pmf[ACTIONS.index(action)], (action, prob, pmf)
        learner.learn(x, action, float(r[ACTIONS.index(action)]), prob, **info)


def check_same_seed_same_run(learner) -> None:
    """Two clones with the same seed play the same actions with the same probabilities."""
    assert run(learner.clone()) == run(learner.clone())


def check_decisions_are_pure(learner) -> None:
    """Asking for a distribution does not change the learner's later decisions."""
    twin = pickle.loads(pickle.dumps(learner))
    contexts, _ = stream()
    for x in contexts:
        learner.pmf(x, ACTIONS)
        learner.decide(x, ACTIONS)
    assert run(learner) == run(twin)


def check_clone_is_independent(learner) -> None:
    """Learning with a clone leaves the original untouched."""
    before = pickle.dumps(learner)
    run(learner.clone())
    assert pickle.dumps(learner) == before


def check_pickle_round_trip(learner) -> None:
    """A pickled and restored learner continues exactly like the original."""
    run(learner, n=20)
    restored = pickle.loads(pickle.dumps(learner))
    assert run(restored) == run(learner)


def yield_checks():
    """All checks, in a fixed order."""
    return [
        check_pmf_is_distribution,
        check_prob_matches_pmf,
        check_same_seed_same_run,
        check_decisions_are_pure,
        check_clone_is_independent,
        check_pickle_round_trip,
    ]


def _assert_distribution(pmf) -> None:
    pmf = np.asarray(pmf)
    assert np.all(pmf >= 0) and abs(pmf.sum() - 1.0) < 1e-12, pmf
