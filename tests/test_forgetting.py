"""Forgetting (``RegCB(forget=...)``, the ridge oracles' ``forget``): the discounted ridge,
the same on every path, through resumes and delayed rewards; it follows drift."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import drifting, late_and_in_order, play_one_by_one, rounds, write_stream
from hypothesis import given, settings
from hypothesis import strategies as st

from regcb_stream import BoundedRidgeOracle, RegCB, RidgeOracle, checks
from regcb_stream.command.main import main
from regcb_stream.persist import dumps, loads

VARIANTS = ["optimistic", "elimination"]


def discounted(X, models, y, weights, forget, l2, model):
    """The discounted ridge's statistics, by brute force: label ``s`` weighs
    ``forget^(labels after it)``."""
    age = forget ** (len(y) - 1 - np.arange(len(y))) * weights * (models == model)
    return l2 * np.eye(X.shape[1]) + (X.T * age) @ X, (X.T * age) @ y


def statistics(oracle: RidgeOracle, model: int):
    """An oracle's statistics in their true scale (common factor undone)."""
    state = oracle.state()
    decay = oracle.forget ** (oracle.clock - state["stamp"])
    eye = oracle.penalty * np.eye(oracle.dim)
    return eye + decay * (state["a"][model] - eye), decay * state["b"][model]


@settings(max_examples=40, deadline=None)
@given(st.floats(0.5, 0.999), st.floats(0.1, 10.0), st.integers(1, 120),
       st.integers(0, 2**16))
def test_the_statistics_are_the_discounted_ridge(forget, l2, n, seed):
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(n, 3)), rng.random(n)
    models, weights = rng.integers(0, 2, n), rng.uniform(0.5, 2.0, n)
    oracle = RidgeOracle(l2=l2, forget=forget)
    oracle.grow(2, 3)
    for t in range(n):
        oracle.learn(X[t], int(models[t]), y[t], weights[t])
        if rng.random() < 0.7:  # rebuilds (and so steps) at irregular times
            oracle.rebuild()
    oracle.rebuild()
    assert oracle.clock == n and oracle.clock - oracle.state()["stamp"] < oracle.discount_every
    for model in range(2):
        a, b = discounted(X, models, y, weights, forget, l2, model)
        got_a, got_b = statistics(oracle, model)
        np.testing.assert_allclose(got_a, a, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got_b, b, rtol=1e-9, atol=1e-9)


def test_at_a_step_the_fit_is_the_discounted_ridge_exactly():
    oracle = RidgeOracle(l2=2.0, forget=0.98)
    n = 9 * oracle.discount_every
    X, R = drifting(n)
    oracle.grow(4, 5)
    played = np.arange(n) % 4
    for t in range(n):
        oracle.learn(X[t], int(played[t]), R[t, played[t]])
        oracle.rebuild()
    assert oracle.discount_every == 34 and oracle.clock == oracle.state()["stamp"] == n
    for model in range(4):
        a, b = discounted(X, played, R[np.arange(n), played], 1.0, 0.98, 2.0, model)
        np.testing.assert_allclose(oracle.state()["theta"][model], np.linalg.solve(a, b),
                                   atol=1e-10)


def test_forget_one_is_the_ridge_that_never_forgets():
    X, R = drifting(600)
    played = np.arange(600) % 4
    rewards = R[np.arange(600), played]
    plain = RegCB(seed=0).replay(X, list(range(4)), played, rewards)
    same = RegCB(seed=0, forget=1.0).replay(X, list(range(4)), played, rewards)
    for name in ("pmf", "prediction", "low", "high"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(same, name))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("oracle", [None, BoundedRidgeOracle(prior="optimistic", head=3)])
@pytest.mark.parametrize("budget", [{}, {"budget": "auto"}])
def test_every_path_makes_the_same_decisions(variant, oracle, budget):
    X, R = drifting(1500, seed=1)
    u = np.random.default_rng(2).random(1500)

    def make():
        return RegCB(variant, oracle=oracle, forget=0.99, random_features=0, seed=3,
                     **budget)

    stepwise, looped = make(), make()
    one_by_one = play_one_by_one(stepwise, X, R, u)
    played, _ = looped.play(X, list(range(4)), lambda rows, i: R[rows, i], u)
    np.testing.assert_array_equal(played, one_by_one)
    state = "b" if oracle is None else "head_theta"  # (the same weights, bit for bit)
    np.testing.assert_array_equal(looped.model.oracle.state()[state],
                                  stepwise.model.oracle.state()[state])
    rewards = R[np.arange(1500), played]
    replayer = make()
    replayed = replayer.replay(X, list(range(4)), played, rewards, np.full(1500, 0.5))
    by_rows = make()
    for t in range(1500):
        np.testing.assert_array_equal(by_rows.decide(X[t], list(range(4))).pmf,
                                      replayed.pmf[t])
        by_rows.learn(X[t], int(played[t]), rewards[t], 0.5)
    np.testing.assert_array_equal(replayer.model.oracle.state()[state],
                                  by_rows.model.oracle.state()[state])


@pytest.mark.parametrize("head", [0, 3])
def test_the_bounded_kernels_forget_as_the_numpy_reference(head):
    X, R = drifting(800, seed=4)
    played = np.random.default_rng(0).integers(0, 4, 800)
    slow_oracle = BoundedRidgeOracle(head=head, forget=0.995, kernels=False)
    fast = RegCB(oracle=BoundedRidgeOracle(head=head, forget=0.995), seed=0)
    slow = RegCB(oracle=slow_oracle, seed=0)
    a = fast.replay(X, list(range(4)), played, R[np.arange(800), played])
    b = slow.replay(X, list(range(4)), played, R[np.arange(800), played])
    np.testing.assert_array_equal(a.pmf, b.pmf)
    np.testing.assert_allclose(a.high, b.high, rtol=0, atol=1e-9)


@pytest.mark.parametrize("oracle", [RidgeOracle(prior="optimistic"),
                                    BoundedRidgeOracle(prior="optimistic")])
def test_it_follows_drift_that_the_ridge_never_forgetting_does_not(oracle):
    X, R = drifting(4000, seed=5)
    second_half = {}
    for forget in (1.0, 0.995):
        learner = RegCB(oracle=oracle, forget=forget, random_features=0, seed=0,
                        change_threshold=0)  # (forgetting alone)
        played, _ = learner.play(X, list(range(4)), lambda rows, i: R[rows, i])
        second_half[forget] = R[np.arange(2000, 4000), played[2000:]].mean()
    assert second_half[0.995] > second_half[1.0] + 0.15


def test_an_action_left_unplayed_regains_its_width():
    x, phi = np.array([1.0, 0.5]), np.array([[[1.0, 0.5]]])
    for forget, growth in ((0.99, 10.0), (1.0, 1.0)):
        oracle = RidgeOracle(forget=forget)
        oracle.grow(2, 2)
        widths = []
        for model in (0, 1):  # 200 labels of action 0, then 300 of action 1 only
            for _ in range(200 + 100 * model):
                oracle.learn(x, model, 1.0)
                oracle.rebuild()
            widths.append(oracle.moments(phi, np.array([0]))[1][0, 0])
        if forget < 1:
            assert widths[1] > growth * widths[0]
        else:  # the ridge that never forgets keeps it narrow
            assert widths[1] == pytest.approx(widths[0], rel=1e-9)


def test_a_label_changed_later_is_changed_at_its_own_time():
    X, R = drifting(100, seed=6)
    lied, truth = RidgeOracle(forget=0.95), RidgeOracle(forget=0.95)
    for oracle in (lied, truth):
        oracle.grow(2, 5)
    for t in range(100):
        lied.learn(X[t], t % 2, 0.5 if t == 30 else R[t, 0])
        truth.learn(X[t], t % 2, R[t, 0])
        for oracle in (lied, truth):
            oracle.rebuild()
    lied.relabel(X[30], 0, 0.5, R[30, 0], at=30)
    lied.rebuild()
    np.testing.assert_allclose(lied.state()["b"], truth.state()["b"], atol=1e-12)
    np.testing.assert_allclose(lied.state()["theta"], truth.state()["theta"], atol=1e-10)


def test_delayed_rewards_are_learned_at_their_decisions_times():
    X, R = drifting(600, seed=7)
    learner, twin = late_and_in_order(  # every reward five decisions late; the twin's in order
        lambda: RegCB(forget=0.99, random_features=0, seed=0), X, R)
    assert learner.model.oracle.clock == 600
    for model in range(4):
        for ours, theirs in zip(statistics(learner.model.oracle, model),
                                statistics(twin.model.oracle, model)):
            np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)


def test_a_saved_learner_carries_on_as_the_one_that_was_not():
    X, R = drifting(1000, seed=8)
    u = np.random.default_rng(0).random(1000)
    whole = RegCB(forget=0.995, seed=0)
    straight = play_one_by_one(whole, X, R, u)
    first = RegCB(forget=0.995, seed=0)
    head = play_one_by_one(first, X[:437], R[:437], u[:437])
    resumed, _ = loads(dumps(first, {}))
    assert resumed.forget == 0.995 and resumed.model.oracle.clock == 437
    tail = play_one_by_one(resumed, X[437:], R[437:], u[437:])
    np.testing.assert_array_equal(np.r_[head, tail], straight)


def test_the_hand_over_to_the_bounded_oracle_keeps_forgetting():
    rng = np.random.default_rng(0)
    contexts = [{f"f{j}": float(v) for j, v in zip(rng.choice(500, 8, replace=False),
                                                    rng.normal(size=8))} for _ in range(300)]
    learner = RegCB(oracle=RidgeOracle(prior="optimistic", max_exact=3 * 25**2),
                    forget=0.99, seed=0)
    for i, x in enumerate(contexts):
        action, prob, _ = learner.predict(x, ["a", "b", "c"])
        learner.learn(x, action, float(i % 2), prob)
    oracle = learner.model.oracle
    assert isinstance(oracle, BoundedRidgeOracle)
    assert oracle.forget == 0.99 and oracle.clock == 300


@pytest.mark.parametrize("kwargs, message", [
    ({"forget": 0.0}, r"'forget' parameter of RegCB must be a number in \(0, 1\]"),
    ({"forget": 1.5}, r"'forget' parameter"),
    ({"forget": 0.99, "schedule": "sqrt2"}, "forgetting needs the online schedule"),
    ({"forget": 0.99, "oracle": "vw"}, "forget applies to the ridge oracles, not VWOracle"),
])
def test_bad_settings_say_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RegCB(**kwargs)


def test_an_oracle_checks_its_factor():
    with pytest.raises(ValueError,
                       match=r"'forget' parameter of RidgeOracle must be a number in \(0, 1\]"):
        RidgeOracle(forget=-1)


@pytest.mark.parametrize("oracle, adf", [("ridge", False), ("bounded", False),
                                         ("ridge", True)])
def test_the_command_forgets_and_resumes_byte_for_byte(tmp_path, oracle, adf, capsys):
    X, R = drifting(1200, seed=9)
    write_stream(tmp_path / "all.vw", X, R, adf)
    examples = (tmp_path / "all.vw").read_text().split("\n\n" if adf else "\n")
    cut = ("\n\n" if adf else "\n").join(examples[:500]) + ("\n\n" if adf else "\n")
    (tmp_path / "a.vw").write_text(cut)
    (tmp_path / "b.vw").write_text((tmp_path / "all.vw").read_text()[len(cut):])
    stream = ["--cb_explore_adf", "-q", "sa"] if adf else ["--cb_explore", "4"]
    flags = [*stream, "--forget", "0.995", "--oracle", oracle, "--quiet"]
    assert main([*flags, "-d", str(tmp_path / "all.vw"), "-p", str(tmp_path / "w.txt")]) == 0
    assert main([*flags, "-d", str(tmp_path / "a.vw"), "-p", str(tmp_path / "1.txt"),
                 "-f", str(tmp_path / "m")]) == 0
    assert main(["-i", str(tmp_path / "m"), "-d", str(tmp_path / "b.vw"), "--quiet",
                 "-p", str(tmp_path / "2.txt")]) == 0
    whole = (tmp_path / "w.txt").read_text()
    assert (tmp_path / "1.txt").read_text() + (tmp_path / "2.txt").read_text() == whole
    plain = [*stream, "--oracle", oracle, "--quiet", "-d", str(tmp_path / "all.vw")]
    assert main([*plain, "-p", str(tmp_path / "never.txt")]) == 0
    assert (tmp_path / "never.txt").read_text() != whole
    with pytest.raises(SystemExit):
        main(["-i", str(tmp_path / "m"), "--forget", "0.9", "-d", str(tmp_path / "b.vw")])
    assert "--forget 0.9 conflicts with 0.995 in the model file" in capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [
    (["--forget", "0"], "--forget must be in (0, 1], got 0"),
    (["--forget", "0.99", "--oracle", "vw"], "--forget and --change_threshold apply to the "
                                             "ridge oracles only"),
    (["--forget", "0.99", "--schedule", "sqrt2"], "forgetting needs the online schedule"),
])
def test_the_command_refuses_bad_forgetting_flags(tmp_path, flags, message, capsys):
    X, R = drifting(20)
    write_stream(tmp_path / "s.vw", X, R)
    with pytest.raises(SystemExit):
        main(["--cb_explore", "4", *flags, "-d", str(tmp_path / "s.vw")])
    assert message in capsys.readouterr().err


def test_the_river_policy_forgets_and_its_clone_too():
    from regcb_stream.integrations.river import RegCBPolicy

    X, R = drifting(3000, seed=10)
    arms = ["a", "b", "c", "d"]
    late = {}
    for forget in (1.0, 0.995):
        policy = RegCBPolicy(forget=forget, seed=0, change_threshold=0)
        assert policy.clone().learner.model.oracle.forget == forget
        got = []
        for t, x in enumerate(X):
            context = {f"x{i}": float(v) for i, v in enumerate(x)}
            arm = policy.pull(arms, context)
            reward = float(R[t, arms.index(arm)])
            policy.update(arm, context, reward)
            got.append(reward)
        late[forget] = np.mean(got[1500:])
    assert late[0.995] > late[1.0] + 0.2


def test_the_coba_learner_hands_forget_to_regcb():
    from regcb_stream.integrations.coba import RegCBLearner

    learner = RegCBLearner(forget=0.99)
    assert learner.params["forget"] == 0.99 and learner.learner.model.oracle.forget == 0.99


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("oracle", [None, BoundedRidgeOracle(head=2)])
@pytest.mark.parametrize("check", checks.yield_checks(), ids=lambda c: c.__name__)
def test_invariants(variant, oracle, check):
    check(RegCB(variant, oracle=oracle, forget=0.9, seed=7))


@settings(max_examples=40, deadline=None)
@given(variant=st.sampled_from(VARIANTS), forget=st.floats(0.01, 1.0),
       seed=st.integers(0, 2**32 - 1), data=rounds(40))
def test_every_distribution_is_valid(variant, forget, seed, data):
    learner = RegCB(variant, forget=forget, seed=seed)
    checks.play_valid(learner, data)
