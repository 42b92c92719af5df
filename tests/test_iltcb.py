"""Tests of the ILTCB baseline (``harness/iltcb.py``) on slices of real data."""

from __future__ import annotations

import numpy as np
import pytest
from test_harness import need

from bench.harness import algorithms, claims, problems, protocol
from bench.harness.iltcb import ILTCB, PSI, TreePolicies
from bench.harness.linear import design
from bench.harness.protocol import Step

TOLERANCE = 1e-9  # relative, on the OP's constraints


@pytest.fixture(scope="module")
def vehicle() -> problems.Problem:
    need("vehicle.tsv.gz")
    return problems.load_problem("vehicle", 1, max_train=400, max_hold=100)


@pytest.fixture(scope="module")
def page_blocks() -> problems.Problem:
    """Enough rounds for LightGBM's trees to split (it grows none from ~150 rows)."""
    need("page_blocks.tsv.gz")
    return problems.load_problem("page_blocks", 0, max_train=1500, max_hold=100)


@pytest.fixture(scope="module")
def yahoo() -> problems.Problem:
    need("yahoo_ltr_sample.train.svm.gz", "yahoo_ltr_sample.test.svm.gz")
    return problems.load_problem("yahoo", 0)


def build(problem: problems.Problem, scale: float, family: str = "iltcb") -> ILTCB:
    algo = algorithms.build(family, scale, problem, seed=0)
    assert isinstance(algo, ILTCB)
    return algo


def op_state(algo: ILTCB) -> dict:
    """The OP's terms recomputed from the support and the stored history: ``Q(a | x_i)``,
    constraint (1)'s sum, ``b_pi`` and ``D_pi`` of every support policy and of the oracle's
    policy for the final ``Q``."""
    offered, rhat, mu, k = algo.offered, algo.rhat, algo.mu, algo.k
    history = algo.policies.history(offered)

    def actions(theta):
        scores = algo.policies.scores(history, theta)
        return np.argmax(np.where(offered, scores, -np.inf), axis=1)[:, None]

    support = [actions(theta) for theta in algo.thetas]
    q = np.zeros(rhat.shape)
    for acts, w in zip(support, algo.weights):
        q[np.arange(len(q)), acts[:, 0]] += w
    qmu = (1 - offered.sum(axis=1, keepdims=True) * mu) * q + mu * offered
    inverse = np.where(offered, 1 / np.where(offered, qmu, 1.0), 0.0)
    oracle = algo._amo(inverse + rhat / (PSI * mu))[1][:, None]
    best = np.take_along_axis(rhat, actions(algo.best), axis=1).mean()
    regret, v = np.array([(best - np.take_along_axis(rhat, acts, axis=1).mean(),
                           np.take_along_axis(inverse, acts, axis=1).mean())
                          for acts in support + [oracle]]).T
    b = regret / (PSI * mu)
    return {"q": q, "sum": float(algo.weights @ (2 * k + b[:-1])), "b": b,
            "D": v - (2 * k + b)}


def epochs_checked(algo: ILTCB, problem: problems.Problem) -> list[tuple[dict, bool]]:
    """Run the protocol, keeping the OP's terms after every epoch's descent (and whether
    that descent stopped at the cap)."""
    checks, rebuild = [], algo._rebuild

    def checked() -> None:
        hits = algo.cap_hits
        rebuild()
        checks.append((op_state(algo), algo.cap_hits > hits))
        np.testing.assert_allclose(checks[-1][0]["q"], algo.q, atol=1e-12)

    algo._rebuild = checked
    protocol.run_protocol(algo, problem, seed=0)
    return checks


def problems_of(family: str, request) -> list[problems.Problem]:
    """The test streams of a family: GB5 needs longer ones to grow trees."""
    names = ("vehicle", "yahoo") if family == "iltcb" else ("page_blocks", "yahoo")
    return [request.getfixturevalue(name) for name in names]


@pytest.mark.parametrize("family", ["iltcb", "iltcb:gb5"])
@pytest.mark.parametrize("scale", [1e-1, 1e-3])
def test_op_constraints_hold_after_every_epoch(family: str, scale: float, request) -> None:
    for problem in problems_of(family, request):
        checks = epochs_checked(build(problem, scale, family), problem)
        converged = [state for state, capped in checks if not capped]
        assert len(checks) > 10 and len(converged) >= len(checks) // 2
        for state, _ in checks:
            assert (state["b"] >= -TOLERANCE).all()  # pihat is the best policy evaluated
            assert state["sum"] <= 2 * problem.n_actions * (1 + TOLERANCE)  # constraint (1)
        for state in converged:  # constraint (2): support and the oracle's policy
            assert (state["D"] <= TOLERANCE * (2 * problem.n_actions + state["b"])).all()


@pytest.mark.parametrize("family", ["iltcb", "iltcb:gb5"])
@pytest.mark.parametrize("scale", [1e-1, 1e-4])
def test_distributions_are_valid(family: str, scale: float, request) -> None:
    for problem in problems_of(family, request):
        algo = build(problem, scale, family)
        record = protocol.run_protocol(algo, problem, seed=0)
        for rounds in (problem.hold, problem.train):
            pmf = algo.holdout_pmf(rounds)
            np.testing.assert_allclose(pmf.sum(axis=1), 1.0)
            assert (pmf >= 0).all() and (pmf[~rounds.offered()] == 0).all()
            assert (pmf[rounds.offered()] >= algo.mu * (1 - 1e-12)).all()
        assert 0.0 <= record["progressive"] <= 1.0
        assert 0.0 <= algo.weights.sum() <= 1.0 + 1e-12


def test_oracle_is_the_ridge_fit_of_every_action(vehicle, yahoo) -> None:
    for problem in (vehicle, yahoo):
        algo = build(problem, 1e-2)
        protocol.run_protocol(algo, problem, seed=0)
        phi = algo.policies.phi
        flat = phi.reshape(-1, phi.shape[-1])
        rewards = np.random.default_rng(0).random(algo.rhat.shape) * algo.offered
        direct = np.linalg.solve(np.eye(flat.shape[1]) + flat.T @ flat,
                                 flat.T @ rewards.reshape(len(flat), -1))
        theta, scores = algo.policies.amo(rewards)
        np.testing.assert_allclose(theta, direct[:, 0] if algo.policies.adf else direct)
        np.testing.assert_allclose(scores, phi @ theta)


def boosting_pass(cols: np.ndarray, y: np.ndarray, rate: float) -> np.ndarray:
    """Predictions of leaf values refit to ``y`` one tree at a time (leaf columns ``(T, n)``
    of one model): the reference of ``TreePolicies.amo``, a row at a time."""
    pred = np.full(len(y), y.mean())
    for tree in cols:
        sums, counts = {}, {}
        for leaf, residual in zip(tree.tolist(), (y - pred).tolist()):
            sums[leaf] = sums.get(leaf, 0.0) + residual
            counts[leaf] = counts.get(leaf, 0) + 1
        pred = pred + rate * np.array([sums[leaf] / counts[leaf] for leaf in tree.tolist()])
    return pred


def test_gb5_oracle_refits_leaf_values_by_boosting(page_blocks) -> None:
    """On the rows and targets its trees were grown on (every round played action 0, p = 1),
    the AMO's pass gives LightGBM's own predictions; on other targets it is the boosting
    pass over the same splits."""
    train = page_blocks.train
    n, k = len(train), page_blocks.n_actions
    policies = TreePolicies(k, train.X.shape[1], adf=False, seed=0)
    leaves = policies.encode(train)
    played = np.zeros(n, np.intp)
    policies.add(train, leaves, Step(played, np.ones(n), None, None), train.R[:, 0])
    policies.refit(train.offered())
    (generation, init, values), scores = policies.amo(train.R)
    assert generation == 0 and values.shape == (policies.generations[0][2],)
    booster = policies.generations[0][0][0].booster
    np.testing.assert_allclose(scores[:, 0], booster.predict(design(train.X)), atol=1e-7)
    targets = np.random.default_rng(1).random((n, k))
    _, scores = policies.amo(targets)
    for action in range(k):
        np.testing.assert_allclose(scores[:, action], boosting_pass(
            policies.cols[:, :, action], targets[:, action], 0.1), atol=1e-12)
    np.testing.assert_allclose(policies.scores(policies.history(train.offered()),
                                               policies.amo(targets)[0]), scores)


@pytest.mark.parametrize("family", ["iltcb", "iltcb:gb5"])
def test_same_seed_same_run(vehicle, family: str) -> None:
    runs = [protocol.run_protocol(build(vehicle, 1e-2, family), vehicle, seed=3)
            for _ in range(2)]
    for run in runs:
        run.pop("seconds")
    assert runs[0] == runs[1]


def test_gb5_keeps_earlier_generations_in_the_support(page_blocks) -> None:
    """Warm start across the trees' growths: the support holds policies of several
    generations, each played on its own trees."""
    algo = build(page_blocks, 1e-2, "iltcb:gb5")
    record = protocol.run_protocol(algo, page_blocks, seed=0)
    generations = {theta[0] for theta in algo.thetas}
    assert len(algo.policies.generations) > 5 and len(generations) > 1
    assert record["progressive"] > page_blocks.train.R.mean() + 0.1


def test_learns_on_a_uci_stream(vehicle) -> None:
    record = protocol.run_protocol(build(vehicle, 1e-2), vehicle, seed=0)
    uniform = vehicle.train.R.mean()
    assert record["progressive"] > uniform + 0.2
    assert record["validation"][-1] > uniform + 0.25


def test_is_one_of_the_papers_baselines() -> None:
    for name in ("iltcb", "iltcb:gb5"):
        family = algorithms.FAMILIES[name]
        assert family.kind == "baseline" and len(family.grid) == 8
    assert "iltcb" in claims.BASELINES
    assert "iltcb:gb5" in claims.CLASSES["GB5"][1]


def test_gb5_kernels_equal_the_numpy_reference(page_blocks, yahoo, monkeypatch) -> None:
    """The compiled boosting pass and leaf sums (``_trees.boost``, ``sum_leaves``) give the
    numpy reference's runs exactly."""
    if not TreePolicies.kernels:
        pytest.skip("the compiled kernels are not built")
    for problem in (page_blocks, yahoo):
        runs = []
        for kernels in (True, False):
            monkeypatch.setattr(TreePolicies, "kernels", kernels)
            run = protocol.run_protocol(build(problem, 1e-2, "iltcb:gb5"), problem, seed=0)
            run.pop("seconds")
            runs.append(run)
        assert runs[0] == runs[1]


def test_gb5_kernels_refuse_columns_out_of_range() -> None:
    """A leaf whose column falls past the values is an error, not a read out of bounds."""
    _trees = pytest.importorskip("regcb_stream.oracles._trees")

    cols = np.array([[[0, 3]]], np.uint8)  # (T=1, n=1, K=2)
    base, scores, values = np.array([[0, 2]], np.int32), np.zeros(2), np.zeros(4)
    with pytest.raises(ValueError, match="out of range"):
        _trees.boost(cols, 1, 2, 1, base, 4, np.ones(2), 0.1, scores, values)
    with pytest.raises(ValueError, match="out of range"):
        _trees.sum_leaves(cols, 1, 2, 1, base, values, 4, np.zeros(2))
    with pytest.raises(ValueError, match="negative"):
        _trees.sum_leaves(cols, 1, 2, 1, -base, values, 4, np.zeros(2))
    cols[0, 0, 1] = 1  # column 3: in range
    _trees.sum_leaves(cols, 1, 2, 1, base, np.arange(4.0), 4, out := np.zeros(2))
    assert out.tolist() == [0.0, 3.0]
