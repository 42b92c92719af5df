"""The automatic exploration budget: valid mixtures, determinism, revealed rewards only,
resumes, and regret on the realizable linear problem."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regcb_stream import RegCB, RidgeOracle
from regcb_stream.datasets.synthetic import LinearProblem
from regcb_stream.explore.budget import BudgetSelector, FixedBudget

VARIANTS = ["elimination", "optimistic"]
GRID = (0.0, 1e-3, 1e-2, 1e-1)


def auto(variant="optimistic", **kwargs):
    return RegCB(variant, budget="auto", budget_grid=GRID, seed=kwargs.pop("seed", 0),
                 **kwargs)


def play(learner, X, rewards, upto=None):
    """Predict and learn round by round; the distributions played."""
    actions = list(range(rewards.shape[1]))
    pmfs = []
    for t, x in enumerate(X[:upto]):
        decision = learner.decide(x, actions)
        pmfs.append(decision.pmf)
        action, prob, info = learner.predict(x, actions)
        learner.learn(x, action, float(rewards[t, action]), prob, **info)
    return np.array(pmfs)


def test_candidates_share_the_oracle_and_mix_into_the_played_distribution():
    X, _, rewards = LinearProblem.make(n_actions=4, dim=3, seed=2).sample(300, seed=3)
    learner = auto("elimination")
    play(learner, X, rewards)
    decision = learner.decide(X[0], [0, 1, 2, 3])
    weights = np.array(learner.budget_selection["weights"])
    assert decision.pmf == pytest.approx(weights @ decision.candidates)
    block = learner.model.decisions([X[0]], [0, 1, 2, 3])
    for j, mellowness in enumerate(GRID):  # each candidate is RegCB with that budget
        if mellowness:
            fixed = FixedBudget("mellowness", None, mellowness)
            assert fixed.decide(learner.model.explorer, *block).pmf[0].tolist() == (
                decision.candidates[j].tolist())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), variant=st.sampled_from(VARIANTS),
       k=st.integers(1, 5), noise=st.booleans())
def test_every_played_distribution_is_valid(seed, variant, k, noise):
    problem = LinearProblem.make(n_actions=k, dim=3, seed=seed)
    X, means, rewards = problem.sample(120, seed=seed + 1)
    if noise:
        rewards = np.random.default_rng(seed).random(rewards.shape)
    pmfs = play(auto(variant, seed=seed), X, rewards)
    assert (pmfs >= 0).all() and np.allclose(pmfs.sum(axis=1), 1.0, atol=1e-12)


def test_same_seed_same_decisions_and_play_equals_the_loop():
    X, _, rewards = LinearProblem.make(seed=5).sample(400, seed=6)
    first, second = play(auto(seed=3), X, rewards), play(auto(seed=3), X, rewards)
    assert first.tobytes() == second.tobytes()
    learner, looped = auto(seed=3), auto(seed=3)
    u = np.random.default_rng(7).random(len(X))
    played, decision = learner.play(X, list(range(5)), lambda t, i: rewards[t, i], u)
    for t, x in enumerate(X):
        pmf = looped.decide(x, list(range(5))).pmf
        action = int(np.searchsorted(np.cumsum(pmf), u[t] * pmf.sum(), side="right"))
        action = min(action, 4)
        assert action == played[t] and pmf.tolist() == decision.pmf[t].tolist()
        looped.learn(x, action, float(rewards[t, action]), float(pmf[action]))
    assert looped.budget_selection == learner.budget_selection


def test_selection_uses_only_revealed_rewards():
    """Permuting the rewards of rounds after t leaves every decision up to t unchanged."""
    X, _, rewards = LinearProblem.make(seed=8).sample(300, seed=9)
    t = 150
    shuffled = rewards.copy()
    shuffled[t:] = np.random.default_rng(0).permutation(rewards[t:])
    original, permuted = play(auto(seed=1), X, rewards), play(auto(seed=1), X, shuffled)
    assert original[: t + 1].tobytes() == permuted[: t + 1].tobytes()
    assert original.tobytes() != permuted.tobytes()  # later rewards do count


def test_pickled_learner_resumes_exactly():
    X, _, rewards = LinearProblem.make(seed=10).sample(300, seed=11)
    whole = auto(seed=2)
    expected = play(whole, X, rewards)
    first = auto(seed=2)
    head = play(first, X[:140], rewards[:140])
    resumed = pickle.loads(pickle.dumps(first))
    tail = play(resumed, X[140:], rewards[140:])
    assert np.concatenate([head, tail]).tobytes() == expected.tobytes()
    assert resumed.budget_selection == whole.budget_selection


def test_labels_without_candidates_are_matched_to_the_last_decision():
    X, _, rewards = LinearProblem.make(seed=12).sample(200, seed=13)
    by_kwargs, by_match = auto(seed=4), auto(seed=4)
    play(by_kwargs, X, rewards)
    for t, x in enumerate(X):  # pmf, then learn without predict's kwargs (River, scripts)
        by_match.pmf(x, list(range(5)))  # the decision whose candidates learn() uses
        action, prob, _ = by_match.predict(x, list(range(5)))
        by_match.learn(x, action, float(rewards[t, action]), prob)
    assert by_match.budget_selection == by_kwargs.budget_selection
    assert by_match.budget_selection["n_scored"] == 200
    other = auto(seed=4)
    other.pmf(X[0], [0, 1])
    other.learn(X[1], 0, 1.0, 0.5)  # not the decided context: teaches the oracle only
    assert other.budget_selection["n_scored"] == 0 and other.n_labels == 1


def test_weights_follow_the_estimates_and_keep_the_floor():
    selector = BudgetSelector((0.0, 0.1), rate=2.0, floor=0.1)
    for _ in range(400):
        selector.update(np.array([0.0, 1.0]), prob=0.5, reward=1.0)
    assert selector.weights()[0] == 0.5  # decisions keep the weights until a rebuild
    selector.freeze()
    weights = selector.weights()
    assert weights[1] > 0.9 and weights[0] >= 0.05 - 1e-12
    assert selector.summary()["leader"] == 0.1


@pytest.mark.parametrize("params", [dict(grid=()), dict(grid=(-1.0,)), dict(rate=0.0),
                                    dict(floor=1.0)])
def test_bad_selector_parameters_are_refused(params):
    with pytest.raises(ValueError):
        BudgetSelector(**params)


@pytest.mark.parametrize("variant", VARIANTS)
def test_regret_growth_on_the_realizable_linear_problem(variant):
    X, means, rewards = LinearProblem.make(n_actions=5, dim=10, seed=0).sample(20_000, seed=1)
    learner = auto(variant, oracle=RidgeOracle(l2=3.0, prior="optimistic"))
    actions, regret = list(range(5)), np.empty(len(X))
    for t, x in enumerate(X):
        action, prob, info = learner.predict(x, actions)
        regret[t] = means[t].max() - means[t, action]
        learner.learn(x, action, float(rewards[t, action]), prob, **info)
    assert regret.sum() <= 1.6 * regret[:10_000].sum()


@pytest.mark.parametrize("adf", [False, True])
def test_the_command_scores_every_label(adf, tmp_path):
    """Labels read by ``regcb-stream --auto_budget`` reach the selector with the
    candidates' probabilities of the logged action, from files and from stdin alike."""
    import subprocess
    import sys

    from regcb_stream.persist import load_model

    rng = np.random.default_rng(0)
    lines = []
    for t in range(120):
        a, cost = int(rng.integers(3)), float(rng.integers(2))
        label = f"{a + 1 if not adf else 0}:{cost:g}:0.5"
        if adf:
            lines += [f"shared |s x:{t % 3}"] + [
                (f"{label} " if k == a else "") + f"|a a{k}" for k in range(3)] + [""]
        else:
            lines.append(f"{label} |s x:{t % 3}")
    data = tmp_path / "log.dat"
    data.write_text("\n".join(lines) + "\n")
    flags = ["--cb_explore_adf"] if adf else ["--cb_explore", "3"]
    for source in (["-d", str(data)], []):
        model = tmp_path / "m.regcb"
        done = subprocess.run([sys.executable, "-m", "regcb_stream", *flags, "--auto_budget",
                               *source, "-f", str(model)], input=data.read_text(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "exploration budget = automatic, leading mellowness" in done.stderr
        learner, _ = load_model(model)
        assert learner.budget_selection["n_scored"] == 120


def test_a_river_policy_scores_its_own_pulls_through_a_preprocessor():
    """The scaler learns between pull and update, so the context no longer matches the
    decided one: the pull's kwargs carry the candidates instead."""
    from river import preprocessing

    from regcb_stream.integrations.river import RegCBPolicy

    X, _, rewards = LinearProblem.make(n_actions=3, dim=2, seed=14).sample(150, seed=15)
    policy = RegCBPolicy(preprocessor=preprocessing.StandardScaler(), budget="auto", seed=0)
    for x, r in zip(X, rewards):
        context = {"u": float(x[0]), "v": float(x[1])}
        arm = policy.pull([0, 1, 2], context)
        policy.update(arm, context, float(r[arm]))
    assert policy.learner.budget_selection["n_scored"] == 150


def test_compiled_update_weighs_as_the_plain_float_reference(monkeypatch):
    """``update``'s compiled credit and softmax equal the plain-float reference (no
    compiled module) bit for bit, through any interleaving of updates and freezes."""
    from regcb_stream.explore import budget

    rng = np.random.default_rng(0)
    for _ in range(300):
        grid = rng.random(rng.integers(1, 7))
        rate, floor = float(rng.random() * 5 + 0.1), float(rng.random() * 0.5)
        labels = [(rng.random(len(grid)), float(rng.random() * 0.9 + 0.1), float(rng.random()))
                  for _ in range(rng.integers(0, 30))]
        runs = []
        for compiled in (budget._ridge, None):
            monkeypatch.setattr(budget, "_ridge", compiled)
            selector, frozen = budget.BudgetSelector(grid, rate=rate, floor=floor), []
            for i, (probs, prob, reward) in enumerate(labels):
                selector.update(tuple(probs.tolist()) if i % 2 else probs, prob, reward)
                if i % 3 == 0:
                    selector.freeze()
                    frozen.append((selector.weights().tolist(), selector.leader()))
            selector.freeze()
            runs.append((list(selector.estimates), frozen, selector.weights().tolist(),
                         selector.summary()))
        assert runs[0] == runs[1]
