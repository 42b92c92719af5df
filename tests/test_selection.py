"""Model selection (`regcb_stream.adapt.selection`): the leader by prequential loss, the same
decisions whichever entry point plays, revealed rewards only, model files, and where it
applies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regcb_stream import RegCB
from regcb_stream.adapt.selection import Losses
from regcb_stream.datasets.synthetic import LinearProblem
from regcb_stream.persist import load_model, save_model


def selecting(seed, variant="optimistic"):
    """A learner with model selection (``select_model=True``)."""
    return RegCB(variant, seed=seed, select_model=True)


def linear_stream(n=1500, seed=1):
    """The realizable linear problem: contexts and Bernoulli rewards (K = 5, d = 10)."""
    X, _, rewards = LinearProblem.make(n_actions=5, dim=10, seed=0).sample(n, seed=seed)
    return X, rewards


def ring_stream(n=1500, seed=0):
    """Rewards no linear model fits: the best action is the context's ring (|x| bands)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    ring = np.minimum((np.linalg.norm(X, axis=1) / 0.8).astype(int), 2)
    return X, (ring[:, None] == np.arange(3)).astype(float)


def by_rounds(learner, X, rewards, uniforms):
    """``decide``, the inverse-CDF draw and ``learn``, one round at a time; the played
    indices, the distributions and the leader before each round."""
    actions = list(range(rewards.shape[1]))
    played, pmfs, leaders = [], [], []
    for t, x in enumerate(X):
        leaders.append(learner.model_selection["leader"])
        pmf = learner.decide(x, actions).pmf
        cdf = pmf.cumsum()
        i = min(int((cdf <= uniforms[t] * cdf[-1]).sum()), len(pmf) - 1)
        learner.learn(x, actions[i], rewards[t, i], pmf[i])
        played.append(i)
        pmfs.append(pmf)
    return np.array(played), np.array(pmfs), leaders


def test_the_leader_is_the_smaller_prequential_loss():
    selection = Losses()
    assert not selection.linear_leads  # a tie: the random features
    before = selection.observe_many([1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [1.0, 1.0, 1.0])
    assert before.tolist() == [False, True, False]
    assert selection.summary() == {"leader": "random features", "labels": 3,
                                 "losses": {"random features": 0.75, "linear": 2.0}}
    selection.observe_many([0.0], [1.0], [0.0], weights=[0.0])  # weighed as the regression
    assert selection.losses == [0.75, 2.0]


def test_linear_leads_on_a_linear_stream_and_features_on_a_nonlinear_one():
    learners = []
    for X, rewards in (linear_stream(), ring_stream()):
        learner = selecting(0)
        learner.play(X, list(range(rewards.shape[1])), lambda t, i, R=rewards: R[t, i])
        learners.append(learner.model_selection)
    assert learners[0]["leader"] == "linear"
    assert learners[1]["leader"] == "random features"
    losses = learners[1]["losses"]
    assert losses["random features"] < losses["linear"]


def test_play_decides_as_decide_and_learn_round_by_round():
    X, rewards = linear_stream(1200)
    u = np.random.default_rng(5).random(len(X))
    played, decision = selecting(0).play(X, list(range(5)), lambda t, i: rewards[t, i], u)
    by_round, pmfs, leaders = by_rounds(selecting(0), X, rewards, u)
    assert {"linear", "random features"} <= set(leaders)  # both decided some rounds
    assert np.array_equal(played, by_round)
    assert np.array_equal(decision.pmf, pmfs)


def test_predict_many_and_learn_many_follow_predict_and_learn():
    X, rewards = ring_stream(600)
    one, block = selecting(2), selecting(2)
    actions = list(range(3))
    for t, x in enumerate(X):
        action, prob, info = one.predict(x, actions)
        one.learn(x, action, rewards[t, action], prob, **info)
        index, probs = block.predict_many(X[t:t + 1], actions)
        block.learn_many(X[t:t + 1], index.tolist(), rewards[t, index], probs)
        assert (action, prob) == (int(index[0]), float(probs[0]))
    state, block_state = one.model_selection, block.model_selection
    assert state["leader"] == block_state["leader"] and state["labels"] == block_state["labels"]
    # the linear model's one-row and block updates agree to rounding, not bit for bit
    assert state["losses"] == pytest.approx(block_state["losses"], rel=1e-12)


def test_replay_decides_as_decide_then_learn():
    X, rewards = linear_stream(700, seed=3)
    rng = np.random.default_rng(0)
    logged = np.where(rng.random(len(X)) < 0.9, rng.integers(0, 5, len(X)), -1)
    labels = rewards[np.arange(len(X)), np.maximum(logged, 0)]
    learner, reference = selecting(0), selecting(0)
    decision = learner.replay(X, list(range(5)), logged, labels)
    leaders = []
    for t, x in enumerate(X):
        leaders.append(reference.model_selection["leader"])
        assert np.array_equal(decision.pmf[t], reference.decide(x, list(range(5))).pmf)
        if logged[t] >= 0:
            reference.learn(x, int(logged[t]), labels[t])
    assert {"linear", "random features"} <= set(leaders)
    assert learner.model_selection == reference.model_selection


def test_decisions_depend_only_on_revealed_rewards():
    """Permuting the rewards after round t changes no decision up to t."""
    X, rewards = ring_stream(400, seed=4)
    t = 250
    shuffled = rewards.copy()
    shuffled[t:] = np.random.default_rng(1).permutation(rewards[t:])
    runs = [selecting(0).play(X, list(range(3)), lambda s, i, R=R: R[s, i])
            for R in (rewards, shuffled)]
    assert np.array_equal(runs[0][1].pmf[:t + 1], runs[1][1].pmf[:t + 1])
    assert np.array_equal(runs[0][0][:t + 1], runs[1][0][:t + 1])


def test_a_model_file_resumes_the_selection(tmp_path):
    X, rewards = linear_stream(900, seed=2)
    u = np.random.default_rng(9).random(len(X))
    whole, pmfs, _ = by_rounds(selecting(0), X, rewards, u)
    first = selecting(0)
    part, part_pmfs, _ = by_rounds(first, X[:450], rewards[:450], u[:450])
    save_model(tmp_path / "m.regcb", first, {})
    resumed, _ = load_model(tmp_path / "m.regcb")
    assert resumed.model_selection == first.model_selection
    rest, rest_pmfs, _ = by_rounds(resumed, X[450:], rewards[450:], u[450:])
    assert np.array_equal(whole, np.concatenate([part, rest]))
    assert np.array_equal(pmfs, np.concatenate([part_pmfs, rest_pmfs]))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 5),
       variant=st.sampled_from(["optimistic", "elimination"]))
def test_valid_distributions_and_the_same_run_by_seed(seed, k, variant):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 3)) * rng.choice([0.01, 1.0, 100.0])
    rewards = rng.random((120, k))
    runs = [selecting(seed, variant).play(X, list(range(k)), lambda t, i: rewards[t, i])
            for _ in range(2)]
    pmf = runs[0][1].pmf
    assert np.all(pmf >= 0) and np.allclose(pmf.sum(axis=1), 1.0)
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(pmf, runs[1][1].pmf)


def test_not_the_default():
    assert RegCB().model_selection is None


@pytest.mark.parametrize("kwargs", [{"random_features": 0}, {"schedule": "sqrt2"},
                                    {"budget": "auto"}, {"oracle": "vw"}])
def test_no_selection_where_it_does_not_apply(kwargs):
    assert RegCB(select_model=True, **kwargs).model_selection is None


def test_dict_contexts_and_delayed_rewards_keep_one_model():
    learner = selecting(0)
    assert learner.model_selection is not None
    action, prob, _ = learner.predict({"a": 1.0}, ["x", "y"])  # no random features for dicts
    learner.learn({"a": 1.0}, action, 1.0, prob)
    assert learner.model_selection is None
    learner = selecting(0)
    learner.decide_event("e", np.ones(2), ["x", "y"])
    assert learner.model_selection is None


def test_a_new_budget_reaches_the_linear_model():
    learner = selecting(0)
    learner.change_exploration("elimination", mellowness=0.01)
    linear = learner.state()["model"].linear.explorer  # (the saved state: a diagnostic)
    assert (linear.variant, linear.budget.in_force) == ("elimination", "mellowness 0.01")
    learner.change_exploration(budget="auto")
    assert learner.model_selection is None


def test_the_choice_of_select_model_is_checked():
    with pytest.raises(ValueError, match="select_model"):
        RegCB(select_model="yes")
