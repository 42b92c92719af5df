"""Tests of the ILTCB baseline (``harness/iltcb.py``) on slices of real data."""

from __future__ import annotations

import numpy as np
import pytest
from test_harness import need

from regcb_stream.bench.harness import algorithms, claims, problems, protocol
from regcb_stream.bench.harness.iltcb import ILTCB, PSI

TOLERANCE = 1e-9  # relative, on the OP's constraints


@pytest.fixture(scope="module")
def vehicle() -> problems.Problem:
    need("vehicle.tsv.gz")
    return problems.load_problem("vehicle", 1, max_train=400, max_hold=100)


@pytest.fixture(scope="module")
def yahoo() -> problems.Problem:
    need("yahoo_ltr_sample.train.svm.gz", "yahoo_ltr_sample.test.svm.gz")
    return problems.load_problem("yahoo", 0)


def build(problem: problems.Problem, scale: float) -> ILTCB:
    algo = algorithms.build("iltcb", scale, problem, seed=0)
    assert isinstance(algo, ILTCB)
    return algo


def op_state(algo: ILTCB) -> dict:
    """The OP's terms recomputed from the support and the stored history: ``Q(a | x_i)``,
    constraint (1)'s sum, ``b_pi`` and ``D_pi`` of every support policy and of the oracle's
    policy for the final ``Q``."""
    phi, offered, rhat, mu, k = algo.phi, algo.offered, algo.rhat, algo.mu, algo.k

    def actions(theta):
        return np.argmax(np.where(offered, phi @ theta, -np.inf), axis=1)[:, None]

    support = [actions(theta) for theta in algo.thetas]
    q = np.zeros(rhat.shape)
    for acts, w in zip(support, algo.weights):
        q[np.arange(len(q)), acts[:, 0]] += w
    qmu = (1 - offered.sum(axis=1, keepdims=True) * mu) * q + mu * offered
    inverse = np.where(offered, 1 / np.where(offered, qmu, 1.0), 0.0)
    oracle = actions(algo._amo(inverse + rhat / (PSI * mu)))
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


@pytest.mark.parametrize("scale", [1e-1, 1e-3])
def test_op_constraints_hold_after_every_epoch(vehicle, yahoo, scale: float) -> None:
    for problem in (vehicle, yahoo):
        checks = epochs_checked(build(problem, scale), problem)
        converged = [state for state, capped in checks if not capped]
        assert len(checks) > 10 and len(converged) >= len(checks) // 2
        for state, _ in checks:
            assert (state["b"] >= -TOLERANCE).all()  # pihat is the best policy evaluated
            assert state["sum"] <= 2 * problem.n_actions * (1 + TOLERANCE)  # constraint (1)
        for state in converged:  # constraint (2): support and the oracle's policy
            assert (state["D"] <= TOLERANCE * (2 * problem.n_actions + state["b"])).all()


@pytest.mark.parametrize("scale", [1e-1, 1e-4])
def test_distributions_are_valid(vehicle, yahoo, scale: float) -> None:
    for problem in (vehicle, yahoo):
        algo = build(problem, scale)
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
        flat = algo.phi.reshape(-1, algo.phi.shape[-1])
        rewards = np.random.default_rng(0).random(algo.rhat.shape) * algo.offered
        direct = np.linalg.solve(np.eye(flat.shape[1]) + flat.T @ flat,
                                 flat.T @ rewards.reshape(len(flat), -1))
        np.testing.assert_allclose(algo._amo(rewards), direct[:, 0] if algo.adf else direct)


def test_same_seed_same_run(vehicle) -> None:
    runs = [protocol.run_protocol(build(vehicle, 1e-2), vehicle, seed=3) for _ in range(2)]
    for run in runs:
        run.pop("seconds")
    assert runs[0] == runs[1]


def test_learns_on_a_uci_stream(vehicle) -> None:
    record = protocol.run_protocol(build(vehicle, 1e-2), vehicle, seed=0)
    uniform = vehicle.train.R.mean()
    assert record["progressive"] > uniform + 0.2
    assert record["validation"][-1] > uniform + 0.25


def test_is_one_of_the_papers_baselines() -> None:
    family = algorithms.FAMILIES["iltcb"]
    assert family.kind == "baseline" and len(family.grid) == 8
    assert "iltcb" in claims.BASELINES
