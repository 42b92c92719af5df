"""Delayed rewards: decisions kept under event ids, rewards learned in arrival order, a
window with a default reward, and the waiting decisions kept by a model file."""

from __future__ import annotations

import numpy as np
import pytest

from regcb_stream import RegCB, RidgeOracle
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.persist import load_model, save_model


def play_delayed(learner, X, R, delays):
    """Progressive reward with each round's reward arriving ``delays[t]`` rounds late."""
    actions, due, got = list(range(R.shape[1])), {}, []
    played = {}
    for t, x in enumerate(X):
        action, _ = learner.decide_event(t, x, actions)
        played[t] = action
        got.append(R[t, action])
        due.setdefault(t + int(delays[t]), []).append(t)
        for event in due.pop(t, []):
            learner.reward_event(event, float(R[event, played.pop(event)]))
    return float(np.mean(got))


def test_immediate_rewards_are_predict_and_learn():
    X, R = bandit_stream("letter", noisy=False, seed=0)
    X, R = X[:600], R[:600]
    by_event = play_delayed(RegCB(seed=1), X, R, np.zeros(len(X)))
    learner, got = RegCB(seed=1), []
    for t, x in enumerate(X):
        action, prob, info = learner.predict(x, list(range(26)))
        learner.learn(x, action, float(R[t, action]), prob, **info)
        got.append(R[t, action])
    assert by_event == float(np.mean(got))


def test_rewards_are_learned_in_arrival_order_and_runs_are_deterministic():
    X, R = bandit_stream("letter", noisy=False, seed=1)
    delays = np.random.default_rng(0).integers(0, 50, 500)
    learners = [RegCB(seed=2) for _ in range(3)]
    runs = [play_delayed(learner, X[:500], R[:500], delays) for learner in learners[:2]]
    assert runs[0] == runs[1]
    play_delayed(learners[2], X[:500], R[:500], delays[::-1])
    fits = [learner.model.oracle.state()["theta"] for learner in learners]
    np.testing.assert_array_equal(fits[0], fits[1])
    assert not np.array_equal(fits[0], fits[2])  # another arrival order, another run


def test_a_window_times_decisions_out_with_the_default_reward_or_drops_them():
    learner = RegCB(seed=0)
    learner.wait_for_rewards(window=2, default_reward=0.0)
    for t in range(5):
        learner.decide_event(t, [float(t), 1.0], ["a", "b"])
    assert learner.events == {"decided": 5, "rewarded": 0, "defaulted": 3, "dropped": 0,
                              "waiting": 2}
    assert learner.n_labels == 3
    with pytest.raises(ValueError, match="no decision is waiting under event id 0"):
        learner.reward_event(0, 1.0)
    learner.reward_event(4, 1.0)
    dropping = RegCB(seed=0)
    dropping.wait_for_rewards(window=1)
    for t in range(3):
        dropping.decide_event(t, [1.0], ["a", "b"])
    assert dropping.events["dropped"] == 2 and dropping.n_labels == 0
    with pytest.raises(ValueError, match="already waiting"):
        dropping.decide_event(2, [1.0], ["a", "b"])


def test_a_model_file_keeps_the_waiting_decisions(tmp_path):
    X, R = bandit_stream("letter", noisy=False, seed=2)
    learner, twin = RegCB(seed=3), RegCB(seed=3)
    for who in (learner, twin):
        for t in range(30):
            who.decide_event(t, X[t], list(range(26)))
    save_model(tmp_path / "m.regcb", learner, {})
    restored, _ = load_model(tmp_path / "m.regcb")
    for who in (restored, twin):
        for t in range(30):
            who.reward_event(t, float(R[t, 0]))
    assert restored.pmf(X[40], list(range(26))) == twin.pmf(X[40], list(range(26)))
    assert restored.events == twin.events


def fixed_penalty() -> RegCB:
    """``RegCB()``'s model with its penalty fixed: a penalty chosen from the labels sees the
    lies waiting at the label it is chosen at, the twin of the test below does not."""
    return RegCB(seed=4, oracle=RidgeOracle(l2=1.0, prior="optimistic"), random_features=64)


def test_waiting_decisions_are_learned_with_a_lie_replaced_exactly_by_their_rewards():
    X, R = bandit_stream("letter", noisy=False, seed=3)
    n, actions = 400, list(range(26))
    delays = np.random.default_rng(1).integers(0, 30, n)
    learner, due, played, arrived = fixed_penalty(), {}, {}, []
    for t in range(n):
        seen = [R[e, played[e]] for e in arrived]  # the rewards before this decision
        played[t], _ = learner.decide_event(t, X[t], actions)
        due.setdefault(t + int(delays[t]), []).append(t)
        for event in due.pop(t, []):
            learner.reward_event(event, float(R[event, played[event]]))
            arrived.append(event)
    oracle, waiting = learner.model.oracle, learner.pending_rewards.pending.waiting
    lied = [event for event, decision in waiting.items() if len(decision) > 4]
    assert n - 1 in waiting and n - 1 not in lied  # the last decision waits without a lie
    assert lied[-1] == n - 2 and waiting[n - 2][4] == pytest.approx(np.mean(seen))
    for event in [e for t in sorted(due) for e in due[t]]:  # the rest arrive
        learner.reward_event(event, float(R[event, played[event]]))
        arrived.append(event)
    twin = fixed_penalty()  # the real rewards learned in their order of arrival
    twin.decide(X[0], actions)
    for event in arrived:
        twin.learn(X[event], played[event], float(R[event, played[event]]))
    assert learner.n_labels == twin.n_labels == n
    for name in ("a", "b", "a_inv", "theta"):
        np.testing.assert_allclose(oracle.state()[name], twin.model.oracle.state()[name],
                                   rtol=1e-9, atol=1e-9)


def test_a_dropped_decision_takes_its_lie_away():
    learner = RegCB(seed=0, random_features=0)  # the linear model's statistics
    learner.wait_for_rewards(window=2)
    for t in range(4):  # decision t lies about t - 1 and drops t - 2
        learner.decide_event(t, [1.0, float(t)], ["a", "b"])
    oracle = learner.model.oracle
    eye = oracle.penalty * np.eye(3)  # the prior alone
    assert learner.events["dropped"] == 2 and learner.n_labels == 0
    assert np.abs(oracle.state()["b"]).max() > 0.1  # decision 2's lie (3 waits without one)
    learner.wait_for_rewards(window=5)  # the waiting decisions dropped, and the lie
    a, b = oracle.state()["a"], oracle.state()["b"]
    np.testing.assert_allclose(a, np.broadcast_to(eye, a.shape), atol=1e-12)
    np.testing.assert_allclose(b, 0.0, atol=1e-12)


@pytest.mark.parametrize("forget", [1.0, 0.99])
@pytest.mark.parametrize("revealed", [True, False])
def test_a_change_detected_while_a_lie_waits_shrinks_the_labels_alone(forget, revealed):
    """A detected change (`shrink`) forgets what was learned, not a lie that waits: the lie
    keeps its weight, so its reward replaces it (or its drop takes it away) exactly, and
    the statistics are those of the labels shrunk, plus the reward as a label learned
    after the change; a drop after the change never leaves ``A`` below the penalty."""
    x, rows = np.array([1.0, 0.5, -0.2]), 0.3 * np.eye(3)
    oracle, twin = (RidgeOracle(l2=1.0, prior=0.5, forget=forget) for _ in range(2))
    for o in (oracle, twin):
        o.grow(1, 3)
        for row in rows:
            o.learn(row, 0, 0.7)
            o.rebuild()
    at = {"at": oracle.clock} if forget < 1.0 else {}
    oracle.learn(x, 0, 0.9, stand_in=True)  # a lie, its reward awaited
    twin.learn(x, 0, 0.9, 0.0)  # (the same tick of the forgetting clock)
    for o in (oracle, twin):
        o.rebuild()
        o.shrink(0.5)
    if revealed:
        oracle.relabel(x, 0, 0.9, 0.2, **at)
        twin.learn(x, 0, 0.2, **at)
    else:
        oracle.learn(x, 0, 0.9, -1.0, stand_in=True, **at)
    for o in (oracle, twin):
        o.rebuild()
    for name in ("a", "b", "theta"):
        np.testing.assert_allclose(oracle.state()[name], twin.state()[name], atol=1e-12)
    assert np.linalg.eigvalsh(oracle.state()["a"][0] - np.eye(3)).min() > -1e-12
