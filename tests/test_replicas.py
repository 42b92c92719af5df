"""Replicas serving the ``online`` schedule: a replica decides as the learner did when it
was refreshed, and refreshing after every label is the online learner itself."""

from __future__ import annotations

import numpy as np
import pytest

from regcb_stream import RegCB
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.stream.replicas import replica, serve, snapshot


@pytest.fixture(scope="module")
def stream():
    X, R = bandit_stream("vehicle", False, 0)
    return X[:300], R[:300], [f"c{k}" for k in range(R.shape[1])]


def test_a_replica_decides_as_the_learner_did(stream):
    X, R, actions = stream
    learner = RegCB(seed=0)
    learner.play(X[:100], actions, lambda t, i: R[t, i])
    served = replica(snapshot(learner))
    assert np.array_equal(served.decide_many(X[100:], actions).pmf,
                          learner.decide_many(X[100:], actions).pmf)


def test_refreshing_after_every_label_is_the_online_learner(stream):
    X, R, actions = stream
    u = np.random.default_rng(1).random(len(X))
    online = RegCB(seed=0)
    played, _ = online.play(X, actions, lambda t, i: R[t, i], uniforms=u)
    trained = RegCB(seed=0)
    rewards = serve(trained, X, actions, lambda t, i: R[t, i], refresh=1, uniforms=u)
    assert np.array_equal(rewards, R[np.arange(len(X)), played])
    assert np.array_equal(trained.decide_many(X, actions).pmf,
                          online.decide_many(X, actions).pmf)


def test_a_longer_refresh_serves_staler_decisions(stream):
    X, R, actions = stream
    u = np.random.default_rng(2).random(len(X))
    stale = serve(RegCB(seed=0), X, actions, lambda t, i: R[t, i], refresh=len(X), uniforms=u)
    first = replica(snapshot(RegCB(seed=0))).decide_many(X, actions).pmf
    assert np.allclose(first, 1 / len(actions))  # one state for every round: the prior's
    assert stale.mean() < serve(RegCB(seed=0), X, actions, lambda t, i: R[t, i], refresh=1,
                                uniforms=u).mean()
    with pytest.raises(ValueError, match="refresh"):
        serve(RegCB(seed=0), X, actions, lambda t, i: R[t, i], refresh=0, uniforms=u)
