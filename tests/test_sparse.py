"""High-dimensional sparse contexts: the sparse path of the learner with VW's oracle."""

from __future__ import annotations

import numpy as np

from regcb_stream import RegCB

VOCABULARY = 2**18


def sparse_stream(n: int, k: int = 4, active: int = 20, seed: int = 0):
    """Contexts of ``active`` features named from a 2^18-word vocabulary; the best action's
    signal feature is one of them, and only it predicts the reward."""
    rng = np.random.default_rng(seed)
    best = rng.integers(k, size=n)
    words = rng.integers(VOCABULARY, size=(n, active - 1))
    contexts = [
        {**{f"w{w}": 1.0 for w in row}, f"signal{b}": 1.0} for row, b in zip(words, best)
    ]
    return contexts, best


def test_dict_and_array_contexts_give_the_same_decisions_with_the_sparse_oracle():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 5))
    actions = ["a", "b", "c"]
    traces = []
    rewards = {"a": 0.5 + 0.5 * (X[:, 0] > 0), "b": 0.5 + 0.0 * X[:, 0], "c": 0.25 + X[:, 0] * 0}
    for contexts in (X, [{f"f{j}": v for j, v in enumerate(x)} for x in X]):
        learner = RegCB("optimistic", oracle="vw", budget="mellowness", mellowness=0.01)
        trace = []
        for t, x in enumerate(contexts):
            action, prob, _ = learner.predict(x, actions)
            learner.learn(x, action, float(rewards[action][t]), prob)
            trace.append((action, prob))
        traces.append(trace)
    assert traces[0] == traces[1]


def test_learns_from_a_2_to_the_18_feature_vocabulary_with_state_for_seen_features_only():
    contexts, best = sparse_stream(4000)
    actions = list(range(4))
    learner = RegCB("elimination", oracle="vw", budget="mellowness", mellowness=0.01, seed=0)
    rewards = []
    for x, b in zip(contexts, best):
        action, prob, _ = learner.predict(x, actions)
        rewards.append(float(action == b))
        learner.learn(x, action, rewards[-1], prob)
    assert np.mean(rewards[-1000:]) > 0.8  # uniform play gets 0.25
    seen = len({key for x in contexts for key in x})
    state = learner.model.oracle.state()["state"].w  # 4 models x room for the features seen
    assert seen > 50_000 and state.shape[0] == 4
    assert state.shape[1] <= 2 * (seen + 1) and state.nbytes < 4 * 4 * 2 * (seen + 1)
