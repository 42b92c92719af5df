"""The compiled ridge kernels against their numpy reference, and ``replay`` against the
per-example API: the same decisions, bounds within 1e-9."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import RULES
from hypothesis import given, settings
from hypothesis import strategies as st

from regcb_stream import RegCB, RidgeOracle
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.features.encoder import EncodedRows
from regcb_stream.rules import Rule

pytestmark = pytest.mark.skipif(not RidgeOracle().compiled, reason="the kernels are not built")


def reference_oracle(**kwargs) -> RidgeOracle:
    return RidgeOracle(kernels=False, **kwargs)


def joint_reference() -> RidgeOracle:
    """The numpy reference of ``RegCB()``'s oracle (its penalty and prior the model
    class's)."""
    return reference_oracle(l2=None, prior="auto")


def logged(n: int, k: int, seed: int):
    """A logged stream of letter (real data): contexts, uniform logged actions, rewards."""
    X, R = bandit_stream("letter", noisy=False, seed=seed)
    rng = np.random.default_rng(seed)
    played = rng.integers(0, k, n)
    return X[:n], played, R[np.arange(n), played]


def assert_same(a, b) -> None:
    np.testing.assert_array_equal(a.pmf, b.pmf)
    for name in ("prediction", "low", "high"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=1e-9)


@pytest.mark.parametrize("variant, ties", RULES)
def test_compiled_replay_matches_the_numpy_reference_on_letter(variant, ties):
    X, played, rewards = logged(1500, 26, seed=0)
    actions = list(range(26))
    fast = RegCB(variant, ties=ties, seed=0)  # the default's random features, the same map:
    slow = RegCB(variant, ties=ties, oracle=reference_oracle(l2="evidence", prior="optimistic"),
                 seed=0, random_features=64)
    assert_same(fast.replay(X, actions, played, rewards), slow.replay(X, actions, played,
                                                                      rewards))


@pytest.mark.parametrize("index", [[[[1, 2], [1, 3]]], [[[0, -1], [0, 0]]]])
def test_encoded_rows_with_columns_never_numbered_are_refused(index):
    """Not handed to the kernels, which would write outside the model."""
    rows = EncodedRows(np.array(index), np.ones((1, 2, 2)))
    with pytest.raises(ValueError, match="number them with encoder.columns"):
        RegCB(seed=0).replay([{}], rows, [0], [1.0])


def test_replay_matches_decide_and_learn_row_by_row():
    X, played, rewards = logged(800, 26, seed=1)
    actions = list(range(26))
    block = RegCB(seed=0).replay(X, actions, played, rewards)
    learner, rows = RegCB(seed=0), []
    for x, a, r in zip(X, played.tolist(), rewards.tolist()):
        rows.append(learner.decide(x, actions))
        learner.learn(x, a, r, 1 / 26)  # the logging policy's probability
    stacked = [np.array([getattr(d, name) for d in rows]) for name in
               ("pmf", "prediction", "low", "high")]
    np.testing.assert_array_equal(block.pmf, stacked[0])
    for got, want in zip((block.prediction, block.low, block.high), stacked[1:]):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_joint_rows_match_the_reference_with_refreshes():
    """The joint class (one model over sparse rows, as VW's ADF), long enough for the
    periodic fresh inverses of the compiled loop."""
    rng = np.random.default_rng(3)
    n, k, width, dim = 700, 5, 4, 12
    index = np.array([[rng.choice(np.arange(1, dim), width, replace=False) for _ in range(k)]
                      for _ in range(n)])
    value = rng.normal(size=(n, k, width)) * (rng.random((n, k, width)) < 0.8)
    rows = EncodedRows(index, value)
    played = np.where(rng.random(n) < 0.9, rng.integers(0, k, n), -1)
    rewards = rng.random(n)
    fast, slow = RegCB(seed=0), RegCB(oracle=joint_reference(), seed=0)
    for learner in (fast, slow):
        learner.encoder.columns("a", list(range(dim)))  # columns 1..dim
    decisions = [learner.replay([{}] * n, rows, played, rewards) for learner in (fast, slow)]
    assert_same(*decisions)
    assert fast.n_labels == slow.n_labels == int((played >= 0).sum())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 6), rule=st.sampled_from(RULES),
       beta=st.sampled_from([None, 1e-3, 0.1]))
def test_compiled_and_reference_agree_on_random_streams(seed, k, rule, beta):
    (variant, ties) = rule
    rng = np.random.default_rng(seed)
    n = 60
    X = rng.normal(size=(n, 3)) * (rng.random((n, 3)) < 0.7)
    played = np.where(rng.random(n) < 0.8, rng.integers(0, k, n), -1)
    rewards = rng.random(n)
    fast = RegCB(variant, ties=ties, beta=beta, seed=0)
    slow = RegCB(variant, ties=ties, beta=beta, oracle=reference_oracle(prior="optimistic"),
                 seed=0, random_features=64)
    one, two = (learner.replay(X, list(range(k)), played, rewards) for learner in (fast, slow))
    assert_same(one, two)
    assert np.allclose(one.pmf.sum(axis=1), 1.0) and (one.pmf >= 0).all()


def arrowhead_stream(n: int, k: int, s: int, seed: int):
    """Joint rows shaped like VW's ``-q sa`` crosses: shared columns 1..s, and each action
    ``a`` its own indicator and crosses; after 60% of the stream two actions start sharing
    a feature (their groups merge) and a new action appears."""
    rng = np.random.default_rng(seed)
    pool = k + 1
    own = {a: list(range(s + 1 + a * (s + 1), s + 1 + (a + 1) * (s + 1))) for a in range(pool)}
    dim = s + 1 + pool * (s + 1) + 1
    rows_index, rows_value = [], []
    for t in range(n):
        x = rng.normal(size=s) * (rng.random(s) < 0.9)
        offered = list(range(k)) if t < 0.6 * n else list(range(1, pool))
        index, value = [], []
        for a in offered:
            cols = list(range(1, s + 1)) + own[a]
            vals = [*x, 1.0, *x]
            if t >= 0.6 * n and a in (1, 2):
                cols, vals = cols + [dim - 1], vals + [0.5]  # a feature of actions 1 and 2
            index.append(cols)
            value.append(vals)
        rows_index.append(index)
        rows_value.append(value)
    width = max(len(c) for rows in rows_index for c in rows)
    index = np.zeros((n, k, width), np.int64)
    value = np.zeros((n, k, width))
    for t in range(n):
        for a in range(k):
            index[t, a, :len(rows_index[t][a])] = rows_index[t][a]
            value[t, a, :len(rows_value[t][a])] = rows_value[t][a]
    played = np.where(rng.random(n) < 0.9, rng.integers(0, k, n), -1)
    return EncodedRows(index, value), played, rng.random(n), dim


@pytest.mark.parametrize("variant", ["optimistic", "elimination"])
def test_joint_blocks_match_the_dense_reference(variant):
    """The joint model's inverse in blocks (arrowhead rows) makes the dense path's
    decisions, through refreshes, new columns, merged groups and shared columns."""
    rows, played, rewards, dim = arrowhead_stream(900, 8, 6, seed=5)
    fast = RegCB(variant, seed=0)
    slow = RegCB(variant, oracle=joint_reference(), seed=0)
    for learner in (fast, slow):
        learner.encoder.columns("a", list(range(dim - 1)))
    decisions = [learner.replay([{}] * len(played), rows, played, rewards)
                 for learner in (fast, slow)]
    assert fast.model.oracle.state()["blocks"] is not None  # the fast path ran on blocks
    assert_same(*decisions)


@pytest.mark.parametrize("blocks", [True, False])
def test_rows_carrying_the_intercept_decide_as_rows_without_it(blocks):
    """Rows whose first entry is the intercept (``EncodedRows(intercept=1.0)``, as the
    command's ADF reader writes them), their index one example's for every example (a
    broadcast view: the kernel reads it for all), make the bytes of the same rows without
    it; rows carrying another intercept than the learner's get the learner's."""
    rng = np.random.default_rng(11)
    n, (k, own) = 700, (10, 4) if blocks else (6, 3)  # (blocks that pay, or not)
    shared = np.arange(1, 5)  # every example's shared columns, then each action's own
    index = np.concatenate([np.broadcast_to(shared, (k, 4)),
                            5 + own * np.arange(k)[:, None] + np.arange(own)], axis=1)
    dim = 5 + own * k
    value = rng.normal(size=(n, k, index.shape[1]))
    value[rng.random(value.shape) < 0.1] = 0.0  # (a feature a row lacks)
    played = np.where(rng.random(n) < 0.9, rng.integers(0, k, n), -1)
    rewards = rng.random(n)
    plain = EncodedRows(np.broadcast_to(index, value.shape).copy(), value)
    lead = np.zeros((n, k, 1))
    carrying = [EncodedRows(np.broadcast_to(np.concatenate([np.zeros((k, 1), int), index],
                                                           axis=1), (n, k, index.shape[1] + 1)),
                            np.concatenate([lead + c, value], axis=2), c) for c in (1.0, 0.0)]
    learners = [RegCB(seed=0) for _ in range(3)]
    out = []
    for learner, rows in zip(learners, [plain, *carrying]):
        learner.encoder.columns("a", list(range(dim - 1)))
        decision = learner.replay([{}] * n, rows, played, rewards)
        out.append((decision.pmf.tobytes(), decision.prediction.tobytes()))
    assert (learners[0].model.oracle.state()["blocks"] is not None) == blocks
    assert out[1] == out[0] and out[2] == out[0]


def test_joint_blocks_per_example_and_epochs_match_the_reference():
    """Blocks updated one label at a time (per-example API) agree with the dense
    reference; epoch schedules (``sqrt2``) learn in pieces and invert afresh, no blocks."""
    rows, played, rewards, dim = arrowhead_stream(300, 8, 5, seed=6)
    for schedule in ("online", "sqrt2"):
        fast = RegCB(schedule=schedule, seed=0)
        slow = RegCB(schedule=schedule, oracle=joint_reference(), seed=0)
        for learner in (fast, slow):
            learner.encoder.columns("a", list(range(dim - 1)))
        for t in range(len(played)):
            one = rows[[t]]
            got = [learner.decide_many([{}], one) for learner in (fast, slow)]
            assert_same(*got)
            if played[t] >= 0:
                chosen = EncodedRows(one.index[:, played[t]], one.value[:, played[t]])
                for learner in (fast, slow):
                    learner.learn_many([{}], chosen, [rewards[t]], [0.5])
        assert (fast.model.oracle.state()["blocks"] is not None) == (schedule == "online")


def test_joint_blocks_take_features_met_after_they_are_built():
    """ADF examples through the Python API (``iter_vw``'s hashed dicts, ``-q sa``) meet
    new features after the blocks are built: the blocks grow with them (this raised
    "inconsistent block arrays" at the second example)."""
    import io

    from regcb_stream.integrations.river import iter_vw

    rng, lines = np.random.default_rng(0), []
    for _ in range(150):
        logged = rng.integers(6)
        lines.append(f"shared |s c{rng.integers(6)} d:{rng.random():.3f}")
        lines += [(f"0:{-float(rng.random() < 0.3)}:0.2 " if a == logged else "")
                  + f"|a x{a} y:{a / 10}" for a in range(6)]
        lines.append("")
    fast = RegCB(seed=0, hash_bits=18, allow_out_of_range=True)
    slow = RegCB(oracle=joint_reference(), seed=0, hash_bits=18,
                 allow_out_of_range=True)
    for t, (context, actions, label) in enumerate(iter_vw(
            io.StringIO("\n".join(lines)), adf=True, interactions=["sa"], hash_bits=18)):
        assert_same(*[learner.decide(context, actions) for learner in (fast, slow)])
        if t % 2:
            for learner in (fast, slow):
                learner.learn(context, actions[label.index], -label.cost, label.prob)
    assert fast.n_labels == 75


@pytest.mark.parametrize("variant, ties", RULES)
def test_automatic_budget_candidates_match_the_numpy_reference(variant, ties):
    """The compiled candidates of ``budget="auto"`` equal ``candidate_decisions``'s numpy
    arithmetic."""
    from regcb_stream import rules
    from regcb_stream.explore.budget import BudgetSelector, candidate_decisions

    X, played, rewards = logged(600, 26, seed=2)
    learner = RegCB(variant, ties=ties, seed=0)
    learner.replay(X[:500], list(range(26)), played[:500], rewards[:500])
    fast = learner.model.oracle
    slow = RidgeOracle.from_state({**fast.state(), "kernels": False})
    selector = BudgetSelector()
    for t in range(40):
        selector.update(np.linspace(0.1, 0.9, 4)[::(1 if t % 2 else -1)], 0.5, t % 3 / 2)
    rows, models = learner.model.decisions(X[500:], list(range(26)))
    rule = rules.Rule(variant, ties)
    got, want = (candidate_decisions(selector, oracle, rule, rows, models, 500, (0.0, 1.0),
                                     1e-12, oracle.capabilities.online_loop)
                 for oracle in (fast, slow))
    np.testing.assert_array_equal(got[4], want[4])  # every candidate's distribution
    for a, b in zip(got[:4], want[:4]):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("variant", ["optimistic", "elimination"])
def test_compiled_replay_with_the_automatic_budget_is_the_general_one(variant):
    """``replay`` with ``budget="auto"`` in the compiled online loop (the command's): the
    decisions, the candidates' scores and the oracle's state of the general path, across
    blocks and unlabelled rows."""
    X, played, rewards = logged(1500, 26, seed=3)
    played[::7] = -1
    probs = np.random.default_rng(0).uniform(0.02, 1.0, len(X))
    fast, general = (RegCB(variant, seed=0, budget="auto") for _ in range(2))
    actions = list(range(26))
    for start in range(0, len(X), 400):
        block = slice(start, start + 400)
        got = fast.replay(X[block], actions, played[block], rewards[block], probs[block])
        for t in range(start, min(start + 400, len(X))):  # the general path: block by block
            want = general.decide_many(X[t:t + 1], actions)
            if played[t] >= 0:
                general.learn_many(X[t:t + 1], [played[t]], [rewards[t]], [probs[t]],
                                   candidates=want.candidates[:, :, played[t]])
            for a, b in zip((got.pmf, got.prediction, got.low, got.high),
                            (want.pmf, want.prediction, want.low, want.high)):
                np.testing.assert_array_equal(a[t - start], b[0])
    assert fast.budget_selection == general.budget_selection
    np.testing.assert_array_equal(fast.model.oracle.state()["a_inv"],
                                  general.model.oracle.state()["a_inv"])


@pytest.mark.parametrize("budget", [{}, {"budget": "auto"}])
@pytest.mark.parametrize("variant, ties", RULES)
def test_one_row_path_makes_the_general_paths_draws(variant, ties, budget):
    """``predict``, ``decide`` and ``learn`` of a float vector take the compiled one-row
    path; the same contexts as lists take the general one: the same draws, probabilities,
    bounds (bit for bit) and state (with the automatic budget, the same candidates' scores,
    whether ``learn`` is handed them or finds them from the last decision)."""
    X, _, _ = logged(1500, 26, seed=4)
    R = bandit_stream("letter", noisy=False, seed=4)[1][:1500]
    actions = list(range(26))
    fast, general = (RegCB(variant, ties=ties, seed=5, **budget) for _ in range(2))
    for t, (x, r) in enumerate(zip(X, R)):
        if t % 3 == 0:
            one, two = fast.decide(x, actions), general.decide(x.tolist(), actions)
            for name in ("pmf", "prediction", "low", "high"):
                assert getattr(one, name).tobytes() == getattr(two, name).tobytes()
        got = fast.predict(x, actions)
        want = general.predict(x.tolist(), actions)
        assert got == want
        info = got[2] if t % 2 else {}
        fast.learn(x, got[0], r[got[0]], got[1], **info)
        general.learn(x.tolist(), want[0], r[want[0]], want[1], **info)
    np.testing.assert_array_equal(fast.model.oracle.state()["a_inv"],
                                  general.model.oracle.state()["a_inv"])
    assert fast.n_labels == general.n_labels == 1500
    assert fast.budget_selection == general.budget_selection
    if budget:
        assert fast.budget_selection["n_scored"] == 1500


@pytest.mark.parametrize("l2", [0.3, 1.0, 10.0])
@pytest.mark.parametrize("variant, ties", RULES)
def test_a_draw_computes_only_the_widths_its_distribution_needs(l2, variant, ties):
    """A draw computes ``x^T A^-1 x`` only for the actions whose place in the rule's
    distribution the bound ``|x|^2 / l2`` leaves open: the same draw and probability as
    every width computed (``out`` asks for every bound), bit for bit, with many actions
    tied at the top of the range (never played: the optimistic prior), budgets small and
    large."""
    rng = np.random.default_rng(int(l2 * 10))
    d, k = 12, 40
    oracle = RidgeOracle(l2=l2, prior="optimistic")
    oracle.grow(k, d + 1)
    for _ in range(3000):
        x = np.r_[1.0, rng.normal(size=d) * rng.uniform(0.2, 2.0)]
        action = int(rng.integers(k // 2))  # half the actions never played
        oracle.learn(x, action, float(rng.random() < (action + 1) / k))
    oracle.rebuild()
    models, code = np.arange(k), Rule(variant, ties)
    for budget in (1e-4, 0.01, 0.1, 1.0, 30.0):
        for _ in range(60):
            x = rng.normal(size=d) * rng.uniform(0.1, 3.0)
            u = float(rng.random())
            out = np.empty((4, k))
            every = oracle.predict_dense(x, models, 1.0, budget, code, (0.0, 1.0), 1e-9, u,
                                         out)
            assert oracle.predict_dense(x, models, 1.0, budget, code, (0.0, 1.0), 1e-9,
                                        u) == every


@pytest.mark.parametrize("select_model", [False, True])
@pytest.mark.parametrize("variant, ties", RULES)
def test_pmf_is_decides_distribution(variant, ties, select_model):
    """``pmf`` and ``pmf_many`` compute only the widths their distributions need:
    ``decide``'s and ``decide_many``'s distributions, bit for bit, from the first round on
    (with model selection too)."""
    X, played, rewards = logged(800, 26, seed=10)
    actions = list(range(26))
    learner = RegCB(variant, ties=ties, seed=2, select_model=select_model)
    for t, (x, a, r) in enumerate(zip(X, played, rewards)):
        assert learner.pmf(x, actions) == learner.decide(x, actions).pmf.tolist()
        if t % 40 == 0:
            block = X[t:t + 30]
            assert (learner.pmf_many(block, actions).tobytes()
                    == learner.decide_many(block, actions).pmf.tobytes())
        learner.learn(x, int(a), float(r), 1 / 26)


@pytest.mark.parametrize("random_features", [0, 64])
@pytest.mark.parametrize("variant, ties", RULES)
def test_dense_rows_decided_model_by_model_are_decided_example_by_example(
        variant, ties, random_features):
    """``replay`` decides dense rows shared by the actions model by model (a model's
    inverse read once for many rows, its labels learned in between): ``decide`` and
    ``learn`` row by row, bit for bit (distributions, predictions, bounds, state), with
    zero entries, unlabelled rows and the fresh inverses the loop stops for (each model's
    324th update)."""
    rng = np.random.default_rng(7)
    n, d = 1500, 16
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    played = np.where(rng.random(n) < 0.9, rng.integers(0, 2, n), -1)
    rewards = (rng.random(n) < 0.4 + 0.2 * played + 0.1 * (X[:, 0] > 0)).astype(float)
    actions = ["a", "b"]
    block = RegCB(variant, ties=ties, seed=0, random_features=random_features).replay(
        X, actions, played, rewards, np.full(n, 0.5))
    learner, rows = RegCB(variant, ties=ties, seed=0, random_features=random_features), []
    for x, a, r in zip(X, played.tolist(), rewards.tolist()):
        rows.append(learner.decide(x, actions))
        if a >= 0:
            learner.learn(x, actions[a], r, 0.5)
    assert np.bincount(played[played >= 0]).min() > 324
    for name in ("pmf", "prediction", "low", "high"):
        want = np.array([getattr(decision, name) for decision in rows])
        assert getattr(block, name).tobytes() == want.tobytes(), name


@pytest.mark.parametrize("dicts", [False, True])
def test_what_the_one_row_path_settled_gives_way_to_every_change(dicts):
    """``predict`` and ``learn`` of float vectors (or of dicts of the first context's names)
    keep what the one-row path settled (`regcb_stream.dense_lane`) only while it holds:
    across other action lists, blocks learned in between, a change of exploration and a
    27th action that hands the exact ridge (``max_exact``: 26 models) over to the bounded
    one, the draws, the probabilities and the state stay those of the same contexts as
    lists (the general path), bit for bit."""
    X, _, _ = logged(1200, 26, seed=7)
    R = bandit_stream("letter", noisy=False, seed=7)[1][:1200]
    names = [f"x{j}" for j in range(X.shape[1])]
    fast, general = (RegCB(seed=3, oracle=RidgeOracle(max_exact=26 * 81**2), random_features=64)
                     for _ in range(2))
    every, some = list(range(26)), list(range(10))

    def form(x):
        return dict(zip(names, x.tolist())) if dicts else x

    for t, (x, r) in enumerate(zip(X, R)):
        actions = some if t % 50 < 5 else every
        got, want = fast.predict(form(x), actions), general.predict(x.tolist(), actions)
        assert got == want
        fast.learn(form(x), got[0], r[got[0]], got[1])
        general.learn(x.tolist(), want[0], r[want[0]], want[1])
        if t == 699:  # a new action, a 27th model: the exact ridge hands over
            fast.decide(form(x), every + [26])
            general.decide(x.tolist(), every + [26])
        if t % 100 == 99:  # a block in between, through the general path of both
            played = [0, 1, 26 if t == 699 else 2]
            block, rewards = slice(t - 3, t), R[t - 3:t, :3].diagonal()
            fast.learn_many([form(x) for x in X[block]], played, rewards, [0.5] * 3)
            general.learn_many(X[block].tolist(), played, rewards, [0.5] * 3)
        if t == 400:
            for learner in (fast, general):
                learner.change_exploration("elimination", mellowness=0.01)
    assert type(fast.model.oracle).__name__ == "BoundedRidgeOracle"
    for name, value in general.model.oracle.state().items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(fast.model.oracle.state()[name], value)
    assert fast.n_labels == general.n_labels


def test_a_dict_changed_between_predict_and_learn_is_learned_as_it_is_then():
    """The one-row path maps a dict context once for its draw and its label, unless the
    dict changed in between: then the label is learned with the values it has then."""
    X, _, _ = logged(300, 5, seed=9)
    names = [f"x{j}" for j in range(X.shape[1])]
    fast, general = (RegCB(seed=1) for _ in range(2))
    for t, x in enumerate(X):
        context = dict(zip(names, x.tolist()))
        got, want = fast.predict(context, list(range(5))), general.predict(x.tolist(),
                                                                          list(range(5)))
        assert got == want
        if t % 3 == 0:
            context["x0"] += 1.0
            x = np.array(list(context.values()))
        fast.learn(context, got[0], float(t % 2), got[1])
        general.learn(x.tolist(), want[0], float(t % 2), want[1])
    np.testing.assert_array_equal(fast.model.oracle.state()["a_inv"],
                                  general.model.oracle.state()["a_inv"])


@pytest.mark.parametrize("budget", [{}, {"budget": "auto"}])
def test_one_row_path_reports_bad_values_as_the_general_path(budget):
    learner = RegCB(seed=0, **budget)
    learner.learn(np.zeros(3), *learner.predict(np.zeros(3), ["a", "b"])[:1], 1.0)
    bad = np.array([0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="context feature 1 is nan"):
        learner.predict(bad, ["a", "b"])
    with pytest.raises(ValueError, match="context feature 1 is nan"):
        learner.decide(bad, ["a", "b"])
    with pytest.raises(ValueError, match="context feature 1 is nan"):
        learner.learn(bad, "a", 1.0, 0.5)


@pytest.mark.parametrize("k", [1, 3, 4, 9, 26])
def test_a_row_shared_by_the_actions_gives_the_numbers_of_a_row_each(k):
    """The product class's row is read by the K actions' models four at a time (their sums
    side by side): bit for bit what the same row copied once per action gives, each model
    alone; the decisions of every path rest on these numbers."""
    X, played, rewards = logged(600, k, seed=k)
    oracle = RidgeOracle(l2=1.0, prior="optimistic")
    oracle.grow(k, X.shape[1] + 1)
    rows = np.c_[np.ones(len(X)), X]
    rows[::5, 3] = 0.0  # zeros are skipped in the sums
    for row, action, reward in zip(rows, played, rewards):
        oracle.learn(row, int(action), float(reward))
    oracle.rebuild()
    models = np.arange(k)
    shared = np.broadcast_to(rows[:, None, :], (len(rows), k, rows.shape[1]))
    one = oracle.moments(shared, models)
    each = oracle.moments(np.ascontiguousarray(shared), models)
    for a, b in zip(one, each):
        assert a.tobytes() == b.tobytes()

