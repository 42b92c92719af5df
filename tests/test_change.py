"""The change test (``RegCB(change_threshold=...)``, `regcb_stream.adapt.change`): silent where
nothing changes, the same on every path, through resumes and delayed rewards; it follows a
change that a ridge never forgetting does not."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import drifting, play_one_by_one, rounds, write_stream
from hypothesis import given, settings
from hypothesis import strategies as st

from regcb_stream import BoundedRidgeOracle, RegCB, RidgeOracle, checks
from regcb_stream.adapt import change
from regcb_stream.adapt.change import CHECK_EVERY, DEFAULT_THRESHOLD, WINDOW, ChangeDetector
from regcb_stream.command.main import main
from regcb_stream.datasets.synthetic import LinearProblem
from regcb_stream.features.encoder import EncodedRows
from regcb_stream.persist import dumps, loads

VARIANTS = ["optimistic", "elimination"]
ACTIONS = list(range(4))


# -- the test itself -----------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-2.0, 3.0), min_size=1, max_size=400), st.integers(0, 2**16))
def test_a_block_at_once_is_label_by_label(rewards, seed):
    rng = np.random.default_rng(seed)
    rewards, predictions = np.array(rewards), rng.normal(size=len(rewards))
    one, many = ChangeDetector(2.0, span=1.5), ChangeDetector(2.0, span=1.5)
    alarms_one = [one.observe(float(r), float(p)) for r, p in zip(rewards, predictions)]
    alarms_many, start = [], 0
    while start < len(rewards):
        stop = min(len(rewards), start + int(rng.integers(1, many.labels_until_check + 1)))
        alarms_many += [False] * (stop - start - 1) + [many.observe_many(
            rewards[start:stop], predictions[start:stop])]
        start = stop
    assert [i for i, a in enumerate(alarms_one) if a] == [i for i, a in enumerate(alarms_many)
                                                         if a]
    assert vars(one) == vars(many)


def test_it_alarms_only_at_a_blocks_end_and_then_starts_again():
    test = ChangeDetector(DEFAULT_THRESHOLD)
    quiet = [test.observe(0.5, 0.4) for _ in range(20 * CHECK_EVERY)]
    loud = [test.observe(1.0, 0.0) for _ in range(20 * CHECK_EVERY)]
    assert not any(quiet) and test.changes == 1
    alarm = loud.index(True)
    assert (alarm + 1) % CHECK_EVERY == 0 and alarm < 4 * CHECK_EVERY
    assert test.state()["n"] < 20 * CHECK_EVERY and not test.waiting


def observe_all(test: ChangeDetector, residuals: np.ndarray) -> list[int]:
    """The blocks (numbered from 0) at whose end ``test`` alarmed."""
    return [i for i, start in enumerate(range(0, len(residuals), CHECK_EVERY))
            if test.observe_many(residuals[start:start + CHECK_EVERY], 0.0)]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), max_size=200), st.integers(0, 20_000),
       st.floats(0.0, 1.0), st.floats(-5.0, 5.0), st.floats(0.0, 5.0), st.floats(0.5, 8.0),
       st.integers(1, 100))
def test_the_compiled_recurrence_is_the_reference(block, n, mean, walk, rise, threshold,
                                                  window):
    """``_ridge.page_hinkley`` against `change.page_hinkley`, number for number."""
    from regcb_stream.oracles import _ridge
    state = (n, mean, walk, walk - rise, threshold, change.DELTA, change.MIN_LABELS, window)
    assert _ridge.page_hinkley(block, *state) == change.page_hinkley(block, *state)


def creeping(n: int, seed: int = 0) -> np.ndarray:
    """Residuals whose squares' mean creeps from 0.25 to 0.28 over ``n`` labels (a
    learner's own fit, as on a hashed sparse log), then rises by 0.2 for 4,096 labels."""
    rng = np.random.default_rng(seed)
    mean = np.r_[0.25 + 0.03 * np.arange(n) / n, np.full(4096, 0.48)]
    return np.sqrt(rng.uniform(0.0, 2.0 * mean))


def test_a_slow_creep_is_not_a_change_but_a_rise_after_it_is(monkeypatch):
    residuals = creeping(200_000)
    alarms = observe_all(ChangeDetector(DEFAULT_THRESHOLD / 2), residuals)
    assert len(alarms) == 1 and 200_000 <= alarms[0] * CHECK_EVERY < 200_000 + 1024
    monkeypatch.setattr(change, "WINDOW", 10**9)  # the plain mean since the test began
    assert observe_all(ChangeDetector(DEFAULT_THRESHOLD), residuals)[0] * CHECK_EVERY < 200_000


def test_the_reference_is_the_plain_mean_up_to_its_window():
    residuals = creeping(WINDOW)[:WINDOW]
    test = ChangeDetector(DEFAULT_THRESHOLD)
    observe_all(test, residuals)
    assert test.state()["mean"] == pytest.approx(np.mean(residuals ** 2), rel=1e-9)


def test_a_residual_counts_at_most_the_reward_range():
    test = ChangeDetector(DEFAULT_THRESHOLD, span=2.0)
    test.observe(1e9, 0.0)
    test.observe(-1.0, 0.0)
    assert test.waiting == [1.0, 0.25]


def test_a_block_too_long_is_refused():
    with pytest.raises(ValueError, match="at most the rest of a block"):
        ChangeDetector().observe_many(np.zeros(CHECK_EVERY + 1), np.zeros(CHECK_EVERY + 1))


# -- the learner ----------------------------------------------------------------------------

@pytest.mark.parametrize("oracle", [None, BoundedRidgeOracle(prior="optimistic", head=3)])
def test_it_follows_a_change_that_the_ridge_never_forgetting_does_not(oracle):
    X, R = drifting(6000, seed=1)
    rewards = {}
    for threshold in (None, 0):
        learner = RegCB(oracle=oracle, seed=0, change_threshold=threshold)
        played, _ = learner.play(X, ACTIONS, lambda rows, i: R[rows, i])
        rewards[threshold] = R[np.arange(3000, 6000), played[3000:]].mean()
        assert learner.changes_detected == (None if threshold == 0 else 1)
    assert rewards[None] > rewards[0] + 0.15, rewards


def test_where_nothing_changes_it_stays_silent():
    X, mean, rewards = LinearProblem.make(n_actions=5, dim=10, seed=0).sample(30_000, seed=1)
    tested, never = RegCB(seed=0), RegCB(seed=0, change_threshold=0)
    played, _ = tested.play(X, list(range(5)), lambda rows, i: rewards[rows, i])
    unchanged, _ = never.play(X, list(range(5)), lambda rows, i: rewards[rows, i])
    assert tested.changes_detected == 0
    np.testing.assert_array_equal(played, unchanged)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("oracle", [None, BoundedRidgeOracle(prior="optimistic", head=3)])
@pytest.mark.parametrize("budget", [{}, {"budget": "auto"}])
def test_every_path_makes_the_same_decisions(variant, oracle, budget):
    X, R = drifting(2500, seed=2)
    u = np.random.default_rng(2).random(2500)

    def make():
        return RegCB(variant, oracle=oracle, change_threshold=3.0, seed=3, **budget)

    stepwise, looped = make(), make()
    one_by_one = play_one_by_one(stepwise, X, R, u)
    played, _ = looped.play(X, ACTIONS, lambda rows, i: R[rows, i], u)
    np.testing.assert_array_equal(played, one_by_one)
    assert looped.changes_detected == stepwise.changes_detected >= 1
    state = "b" if oracle is None else "head_theta"  # (the same weights, bit for bit)
    np.testing.assert_array_equal(looped.model.oracle.state()[state],
                                  stepwise.model.oracle.state()[state])
    rewards = R[np.arange(2500), played]
    replayer = make()
    replayed = replayer.replay(X, ACTIONS, played, rewards, np.full(2500, 0.5))
    by_rows = make()
    for t in range(2500):
        np.testing.assert_array_equal(by_rows.decide(X[t], ACTIONS).pmf, replayed.pmf[t])
        by_rows.learn(X[t], int(played[t]), rewards[t], 0.5)
    assert replayer.model.explorer.change.state() == by_rows.model.explorer.change.state()
    assert replayer.changes_detected >= 1
    np.testing.assert_array_equal(replayer.model.oracle.state()[state],
                                  by_rows.model.oracle.state()[state])


def test_a_saved_learner_carries_on_as_the_one_that_was_not():
    X, R = drifting(3000, seed=4)
    u = np.random.default_rng(0).random(3000)
    whole = RegCB(seed=0, change_threshold=4.0)
    straight = play_one_by_one(whole, X, R, u)
    first = RegCB(seed=0, change_threshold=4.0)
    head = play_one_by_one(first, X[:1537], R[:1537], u[:1537])
    resumed, _ = loads(dumps(first, {}))
    assert resumed.model.explorer.change.waiting == first.model.explorer.change.waiting != []
    tail = play_one_by_one(resumed, X[1537:], R[1537:], u[1537:])
    np.testing.assert_array_equal(np.r_[head, tail], straight)
    assert resumed.changes_detected == whole.changes_detected >= 1


def test_delayed_rewards_are_tested_against_the_fit_before_their_stand_in():
    X, R = drifting(6000, seed=5)
    learner = RegCB(seed=0)
    played, total = {}, 0.0
    for t in range(6000):
        played[t], _ = learner.decide_event(t, X[t], ACTIONS)
        if t >= 5:  # every reward comes five decisions late
            learner.reward_event(t - 5, float(R[t - 5, played[t - 5]]))
            total += R[t - 5, played[t - 5]] * (t - 5 >= 3000)
    change = learner.model.explorer.change
    assert learner.changes_detected == 1 and change.state()["n"] + len(change.waiting) < 3000
    assert total / 2995 > 0.7


@pytest.mark.parametrize("kwargs, message", [
    ({"change_threshold": -1}, r"'change_threshold' parameter of RegCB must be None or a"),
    ({"change_threshold": float("nan")}, r"'change_threshold' parameter"),
    ({"change_threshold": 8, "schedule": "sqrt2"},
     "change_threshold applies to the ridge oracles with the online schedule, not "
     "RidgeOracle with 'sqrt2'"),
    ({"change_threshold": 8, "oracle": "vw"}, "not VWOracle"),
])
def test_bad_settings_say_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RegCB(**kwargs)


@pytest.mark.parametrize("kwargs", [{"oracle": "vw"}, {"schedule": "sqrt2"},
                                    {"change_threshold": 0}, {"forget": 0.99}])
def test_where_it_does_not_apply_the_default_does_not_test(kwargs):
    learner = RegCB(**kwargs)
    assert learner.changes_detected is None
    checks.run(learner)


@pytest.mark.parametrize("prior", [0.0, "midpoint", 0.9])
def test_the_default_tests_only_under_the_optimistic_prior(prior):
    """Under a prior below the top of the rewards, a learner's own progress raises its
    residuals (better actions: more rewards above their prediction)."""
    assert RegCB(oracle=RidgeOracle(prior=prior)).changes_detected is None
    assert RegCB(oracle=RidgeOracle(prior=prior), change_threshold=6).changes_detected == 0
    assert RegCB(oracle=RidgeOracle(prior=1.0)).changes_detected == 0
    assert RegCB(oracle=BoundedRidgeOracle(prior=prior)).changes_detected is None


@pytest.mark.parametrize("actions, default", [
    ([{"x": 1.0}, {"x": 2.0}], None),  # a ranking: every feature shared, the midpoint prior
    ([{"a": 1.0}, {"b": 1.0}], 0),  # each action its own feature: optimistic
])
def test_a_prior_that_settles_on_the_midpoint_drops_the_default_test(actions, default):
    for threshold, tested in ((None, default), (4.0, 0)):
        learner = RegCB(change_threshold=threshold, seed=0)
        learner.pmf({"u": 1.0}, actions)
        assert learner.changes_detected == tested


def test_a_threshold_given_tests_a_learner_that_forgets_too():
    X, R = drifting(3000, seed=3)
    learner = RegCB(forget=0.999, change_threshold=3.0, seed=0)
    learner.play(X, ACTIONS, lambda rows, i: R[rows, i])
    assert learner.changes_detected >= 1 and learner.model.oracle.forget == 0.999


def test_the_river_policy_tests_for_change_and_its_clone_too():
    from regcb_stream.integrations.river import RegCBPolicy

    X, R = drifting(3000, seed=7)
    arms = ["a", "b", "c", "d"]
    policy = RegCBPolicy(change_threshold=3.0, seed=0)
    assert policy.clone().learner.model.explorer.change.threshold == 3.0
    assert RegCBPolicy().learner.model.explorer.change.threshold == DEFAULT_THRESHOLD
    for t, x in enumerate(X):
        context = {f"x{i}": float(v) for i, v in enumerate(x)}
        arm = policy.pull(arms, context)
        policy.update(arm, context, float(R[t, arms.index(arm)]))
    assert policy.learner.changes_detected >= 1


def test_the_coba_learner_hands_the_threshold_to_regcb():
    from regcb_stream.integrations.coba import RegCBLearner

    learner = RegCBLearner(change_threshold=0)
    assert learner.params["change_threshold"] == 0 and learner.learner.changes_detected is None
    assert RegCBLearner().learner.changes_detected == 0


# -- the command ----------------------------------------------------------------------------

@pytest.mark.parametrize("oracle, adf", [("ridge", False), ("bounded", False),
                                         ("ridge", True)])
def test_the_command_tests_for_change_and_resumes_byte_for_byte(tmp_path, oracle, adf,
                                                                 capsys):
    X, R = drifting(3000, seed=6)
    write_stream(tmp_path / "all.vw", X, R, adf)
    sep = "\n\n" if adf else "\n"
    examples = (tmp_path / "all.vw").read_text().split(sep)
    cut = sep.join(examples[:1700]) + sep
    (tmp_path / "a.vw").write_text(cut)
    (tmp_path / "b.vw").write_text((tmp_path / "all.vw").read_text()[len(cut):])
    stream = ["--cb_explore_adf", "-q", "sa"] if adf else ["--cb_explore", "4"]
    flags = [*stream, "--change_threshold", "3", "--oracle", oracle]
    assert main([*flags, "-d", str(tmp_path / "all.vw"), "-p", str(tmp_path / "w.txt")]) == 0
    summary = capsys.readouterr().err
    assert "changes detected = " in summary and "changes detected = 0" not in summary
    assert main([*flags, "--quiet", "-d", str(tmp_path / "a.vw"), "-p",
                 str(tmp_path / "1.txt"), "-f", str(tmp_path / "m")]) == 0
    assert main(["-i", str(tmp_path / "m"), "-d", str(tmp_path / "b.vw"), "--quiet",
                 "-p", str(tmp_path / "2.txt")]) == 0
    whole = (tmp_path / "w.txt").read_text()
    assert (tmp_path / "1.txt").read_text() + (tmp_path / "2.txt").read_text() == whole
    never = [*stream, "--oracle", oracle, "--change_threshold", "0", "--quiet"]
    assert main([*never, "-d", str(tmp_path / "all.vw"), "-p", str(tmp_path / "n.txt")]) == 0
    assert (tmp_path / "n.txt").read_text() != whole
    with pytest.raises(SystemExit):
        main(["-i", str(tmp_path / "m"), "--change_threshold", "5", "-d",
              str(tmp_path / "b.vw")])
    assert "--change_threshold 5.0 conflicts with 3.0 in the model file" in \
        capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [
    (["--change_threshold", "-2"], "--change_threshold must be a number >= 0, got -2"),
    (["--change_threshold", "8", "--oracle", "vw"],
     "--change_threshold apply to the ridge oracles only"),
    (["--change_threshold", "8", "--schedule", "sqrt2"],
     "--change_threshold needs --schedule online, not sqrt2"),
])
def test_the_command_refuses_bad_change_flags(tmp_path, flags, message, capsys):
    X, R = drifting(20)
    write_stream(tmp_path / "s.vw", X, R)
    with pytest.raises(SystemExit):
        main(["--cb_explore", "4", *flags, "-d", str(tmp_path / "s.vw")])
    assert message in capsys.readouterr().err


# -- invariants -----------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("oracle", [None, BoundedRidgeOracle(head=2), RidgeOracle(forget=0.99)])
@pytest.mark.parametrize("check", checks.yield_checks(), ids=lambda c: c.__name__)
def test_invariants(variant, oracle, check):
    check(RegCB(variant, oracle=oracle, change_threshold=0.5, seed=7))


@settings(max_examples=40, deadline=None)
@given(variant=st.sampled_from(VARIANTS), threshold=st.floats(0.0, 2.0),
       seed=st.integers(0, 2**32 - 1), data=rounds(300))
def test_every_distribution_is_valid(variant, threshold, seed, data):
    learner = RegCB(variant, change_threshold=threshold, seed=seed)
    checks.play_valid(learner, data)


def test_the_loop_tests_joint_rows_as_label_by_label():
    """Joint rows (each action its own columns, VW's ``-q sa``): the change test run in
    the compiled loop alarms where it alarms label by label, and the loop goes on after."""
    X, R = drifting(2500, seed=6)
    n, d = X.shape
    k = R.shape[1]
    index = np.broadcast_to(1 + np.arange(k)[:, None] * d + np.arange(d), (n, k, d))
    rows = EncodedRows(index, np.broadcast_to(X[:, None, :], (n, k, d)).copy())
    played = np.random.default_rng(6).integers(0, k, n)
    rewards = R[np.arange(n), played]

    def make():
        learner = RegCB(change_threshold=3.0, seed=3)
        learner.encoder.columns("a", list(range(k * d)))
        return learner

    replayer, by_rows = make(), make()
    replayed = replayer.replay([{}] * n, rows, played, rewards, np.full(n, 0.5))
    for t in range(n):
        np.testing.assert_array_equal(by_rows.decide_many([{}], rows[[t]]).pmf[0],
                                      replayed.pmf[t])
        by_rows.learn_many([{}], rows[[t], [played[t]]], [rewards[t]], [0.5])
    assert replayer.changes_detected == by_rows.changes_detected >= 1
    assert replayer.model.explorer.change.state() == by_rows.model.explorer.change.state()
