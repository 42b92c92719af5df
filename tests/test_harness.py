"""Tests of the benchmark harness (``python -m bench``) on slices of real data."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from bench.harness import aggregate, algorithms, baselines, problems, protocol, runner
from bench.harness.regcb_algo import RegCBAlgorithm, make_oracle
from bench.vw_explorers import run_vw
from regcb_stream.datasets import uci as ds
from regcb_stream.learner import RegCB

ROOT = pathlib.Path(__file__).resolve().parents[1]


def need(*files: str) -> None:
    for name in files:
        try:
            ds.require(name)
        except FileNotFoundError as missing:
            pytest.skip(str(missing))


@pytest.fixture(scope="module")
def vehicle() -> problems.Problem:
    need("vehicle.tsv.gz", ds.REWARD_MATRICES)
    return problems.load_problem("vehicle-noise", 1, max_train=400, max_hold=100)


@pytest.fixture(scope="module")
def yahoo() -> problems.Problem:
    need("yahoo_ltr_sample.train.svm.gz", "yahoo_ltr_sample.test.svm.gz")
    return problems.load_problem("yahoo", 0)


def test_problem_split_is_fixed_by_the_repetition(vehicle) -> None:
    again = problems.load_problem("vehicle-noise", 1)
    other = problems.load_problem("vehicle-noise", 2)
    np.testing.assert_array_equal(vehicle.train.R, again.train.R[:400])
    np.testing.assert_array_equal(vehicle.hold.X, again.hold.X[:100])
    assert len(again.train) + len(again.hold) == 846 and len(again.hold) == 169
    assert not np.array_equal(again.train.R, other.train.R)


def test_ranking_problem_shapes(yahoo) -> None:
    train, hold = yahoo.train, yahoo.hold
    assert train.adf and train.X.shape[1] == problems.LTR_ACTIONS
    assert len(train) + len(hold) == 251 and len(hold) == 50
    assert (train.R[~train.mask] == 0).all() and train.R.max() <= 1.0
    assert np.abs(train.X[train.mask].mean(axis=0)).max() < 0.2  # standardized


def test_checkpoints_include_early_points_and_end() -> None:
    points = protocol.checkpoints(19000)
    assert points[:3] == [100, 300, 1000] and points[-1] == 19000 and len(points) == 18


def per_round_reference(problem, variant: str, oracle: str, schedule: str, beta: float,
                        seed: int) -> float:
    """Progressive reward of the learner driven one round at a time."""
    learner = RegCB(variant, oracle=make_oracle(oracle), beta=beta, schedule=schedule,
                    seed=seed)
    actions = list(range(problem.n_actions))
    u = np.random.default_rng(seed).random(len(problem.train))
    total = 0.0
    for x, rewards, ui in zip(problem.train.X, problem.train.R, u):
        pmf = learner.decide(x, actions).pmf
        a = int(protocol.sample(pmf[None], np.array([ui]))[0])
        total += rewards[a]
        learner.learn(x, a, rewards[a], float(pmf[a]))
    return total / len(problem.train)


@pytest.mark.parametrize("oracle,schedule", [("ridge", "sqrt2"), ("optimistic", "online")])
@pytest.mark.parametrize("variant", ["elimination", "optimistic"])
def test_epoch_blocks_equal_round_by_round(vehicle, variant: str, oracle: str,
                                           schedule: str) -> None:
    algo = RegCBAlgorithm(variant, oracle, 1e-4, vehicle.n_actions, seed=3, schedule=schedule)
    record = protocol.run_protocol(algo, vehicle, seed=3)
    reference = per_round_reference(vehicle, variant, oracle, schedule, 1e-4, 3)
    assert record["progressive"] == reference
    assert record["t"][-1] == 400 and len(record["validation"]) == len(record["t"])
    assert "diagnostics" in record


@pytest.mark.parametrize("explorer,param", [("regcb", 1e-3), ("squarecb", 10.0),
                                            ("bag", 3), ("cover", 2)])
def test_vw_wrapper_plays_like_run_vw(vehicle, explorer: str, param) -> None:
    algo = algorithms.build(f"vw-{explorer}", param, vehicle, seed=4)
    record = protocol.run_protocol(algo, vehicle, seed=4)
    reference = run_vw(vehicle.train.X, vehicle.train.R, explorer, param, seed=4)
    assert record["progressive"] == pytest.approx(reference["progressive_reward"], abs=1e-12)
    assert all(0.0 <= v <= 1.0 for v in record["validation"])


class Frozen:
    """A fake algorithm whose holdout pmf must not depend on how often it is asked."""

    def __init__(self, k: int):
        self.k, self.calls = k, 0

    def block_size(self) -> int:
        return 7

    def decide(self, rounds, u):
        assert np.isnan(rounds.R).all()  # rewards are hidden from decisions
        return protocol.Step(np.zeros(len(u), np.intp), np.ones(len(u)))

    def learn(self, rounds, step, rewards) -> None:
        assert len(rewards) <= 7

    def holdout_pmf(self, rounds):
        self.calls += 1
        pmf = np.zeros(rounds.R.shape)
        pmf[:, 0] = 1.0
        return pmf


def test_protocol_scores_the_rule_on_the_holdout(vehicle) -> None:
    algo = Frozen(vehicle.n_actions)
    record = protocol.run_protocol(algo, vehicle, seed=0)
    assert algo.calls == len(record["t"])
    assert record["validation"][-1] == pytest.approx(vehicle.hold.R[:, 0].mean())
    assert record["progressive"] == pytest.approx(vehicle.train.R[:, 0].mean())


@pytest.mark.parametrize("family", ["egreedy", "bootstrap", "squarecb", "egreedy:gb5",
                                    "bootstrap:gb5"])
def test_baselines_give_distributions(vehicle, yahoo, family: str) -> None:
    for problem in (vehicle, yahoo):
        param = algorithms.FAMILIES[family].grid[2]
        algo = algorithms.build(family, param, problem, seed=0)
        record = protocol.run_protocol(algo, problem, seed=0)
        pmf = algo.holdout_pmf(problem.hold)
        np.testing.assert_allclose(pmf.sum(axis=1), 1.0)
        assert (pmf >= 0).all() and (pmf[~problem.hold.offered()] == 0).all()
        assert 0.0 <= record["progressive"] <= 1.0


def test_regcb_and_vw_on_ranking(yahoo) -> None:
    for family in ("regcb-elim:ridge", "vw-epsilon"):
        algo = algorithms.build(family, 1e-2, yahoo, seed=1)
        record = protocol.run_protocol(algo, yahoo, seed=1)
        assert 0.0 < record["progressive"] < 1.0


def test_squarecb_pmf_approaches_greedy() -> None:
    problem = problems.Problem("x", 0, problems.Rounds(np.zeros((1, 1)), np.zeros((1, 3))),
                               problems.Rounds(np.zeros((1, 1)), np.zeros((1, 3))))
    algo = baselines.SquareCB(1e9, 3, 1, False, seed=0)
    algo.ridge.theta[0, :, 0] = [0.2, 0.9, 0.1]
    np.testing.assert_allclose(algo.holdout_pmf(problem.hold), [[0.0, 1.0, 0.0]], atol=1e-6)


def test_relative_loss_and_slope() -> None:
    t = np.geomspace(20, 10000, 40)
    assert aggregate.width_slope({"t": t, "width": 3 * t**-0.4}) == pytest.approx(-0.4)
    records = [
        {"stream": "vehicle", "family": f, "param": p, "t": [100, 200], "validation": v,
         "progressive": v[-1], "seconds": 1.0}
        for f, p, v in [("regcb-opt:ridge", 1e-3, [0.5, 0.7]), ("regcb-opt:ridge", 1e-4,
                        [0.6, 0.6]), ("egreedy", 0.1, [0.4, 0.5]), ("egreedy", 0.01,
                        [0.5, 0.4]), ("bootstrap", 1.0, [0.3, 0.3])]]
    agg = aggregate.average(records)
    np.testing.assert_allclose(aggregate.envelope(agg, "vehicle", "egreedy"), [0.5, 0.5])
    losses = aggregate.relative_losses(agg, ["vehicle"], ["regcb-opt:ridge", "egreedy",
                                                          "bootstrap"], None)
    assert losses["regcb-opt:ridge"]["vehicle"] == 0.0
    assert losses["bootstrap"]["vehicle"] == 1.0
    assert losses["egreedy"]["vehicle"] == pytest.approx(0.5)


def test_done_ids_ignore_a_truncated_line(tmp_path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"run_id": "a"}) + "\n" + '{"run_id": "b", "vali')
    assert runner.done_ids(path) == {"a"}


def test_quick_sweep_runs_and_resumes(tmp_path) -> None:
    need("vehicle.tsv.gz", "letter.tsv.gz", ds.REWARD_MATRICES)
    command = [sys.executable, "-m", "bench", "--quick", "--no-progress", "--streams",
               "vehicle", "letter-noise",  # (--quick's yahoo, the slowest, left out)
               "--out", str(tmp_path), "--report", str(tmp_path / "results.md")]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    first = subprocess.run(command, check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    ids = {json.loads(line)["run_id"] for line in lines}
    assert len(lines) == len(ids) > 100
    report = (tmp_path / "results.md").read_text()
    assert "## The paper's claims, one by one" in report and "letter-noise" in report
    paper, later = report.split("Against the later baselines")  # the paper's own first
    assert "ILTCB" in paper.split("## The paper's claims")[1] and "| claim |" in later
    assert {p.name for p in (tmp_path / "figures").glob("*.png")} == {
        "validation.png", "cdf.png", "width.png"}
    second = subprocess.run(command, check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    assert f"ran 0 runs in 0 s ({len(ids)} already done)" in second.stdout
    assert (tmp_path / "results.jsonl").read_text().splitlines() == lines


def test_claims_without_ridge_regcb_runs_are_not_measured() -> None:
    from bench.harness import aggregate, claims

    agg = aggregate.average([])
    assert claims.within_20_percent(agg, ["egreedy", "iltcb"])[0] == "not measured"
    assert claims.elimination_vs_optimistic(agg, ["egreedy"])[0] == "not measured"


def test_the_gb5_baselines_learn_and_the_gb5_claims_use_them(vehicle) -> None:
    """ε-Greedy with GB5 learns (beats uniform play on noisy vehicle's holdout), and the GB5
    class's claims compare RegCB-GB5 with the GB5 baselines, not the ridge ones."""
    from bench.harness import aggregate, claims, runner

    algo = algorithms.build("egreedy:gb5", 0.01, vehicle, seed=0)
    record = protocol.run_protocol(algo, vehicle, seed=0)
    assert record["validation"][-1] > vehicle.hold.R.mean() + 0.04  # 0.66 against 0.59
    regcb, baselines, boot = claims.CLASSES["GB5"]
    assert set(baselines) <= set(algorithms.FAMILIES) and boot in baselines
    assert all(f.endswith(":gb5") for f in (*regcb, *baselines))
    records = [runner.run_task(t) for t in runner.make_tasks(
        ["vehicle"], [0], ["regcb-opt:gb5", "regcb-elim:gb5", "egreedy:gb5"],
        params_per_family=1, max_train=300, max_hold=100)]
    agg = aggregate.average(records)
    verdict, evidence = claims.beats_baselines_clean(agg, baselines, regcb)
    assert verdict != "not measured" and "/1 clean sets" in evidence


def test_the_theory_budget_family_runs_with_the_streams_horizon(vehicle) -> None:
    """RegCB with the paper's theoretical budget for the stream's length: its bounds span
    the reward range (the budget dwarfs the data), so its width does not shrink."""
    from bench.harness import aggregate

    algo = algorithms.build("regcb-opt:theory", None, vehicle, seed=0)
    assert algo.learner.horizon == len(vehicle.train)
    assert algo.learner.budget_in_force.startswith("theory")
    record = protocol.run_protocol(algo, vehicle, seed=0)
    diagnostics = {k: np.asarray(v) for k, v in record["diagnostics"].items()}
    assert abs(aggregate.width_slope(diagnostics)) < 0.05


def test_summed_budget_families_shrink_the_width(vehicle) -> None:
    """β on the summed loss (the paper's experiments) keeps the budget constant, so ridge
    RegCB's width falls with the data; β on the normalized risk grows the budget with the
    labels and holds the width."""
    from bench.harness import aggregate

    slopes = {}
    for family in ("regcb-opt:ridge-summed", "regcb-opt:ridge"):
        algo = algorithms.build(family, 1e-3, vehicle, seed=0)
        record = protocol.run_protocol(algo, vehicle, seed=0)
        diagnostics = {k: np.asarray(v) for k, v in record["diagnostics"].items()}
        slopes[family] = aggregate.width_slope(diagnostics)
    assert algo.learner.budget_in_force == "beta 0.001"
    assert algorithms.build("regcb-opt:gb5-summed", 1.0, vehicle, seed=0) \
        .learner.budget_in_force == "beta 1 on the summed loss"
    assert slopes["regcb-opt:ridge-summed"] < slopes["regcb-opt:ridge"] - 0.2


def test_the_oracle_table_compares_with_ridge_on_the_same_schedule(monkeypatch) -> None:
    """Each family's gap is to the better ridge variant on its own schedule, and the River
    bar takes the best River family's gap (PASS at -0.05 or above)."""
    from bench.harness import headline

    means = {"regcb-elim:ridge": 0.70, "regcb-opt:ridge": 0.72,
             "regcb-opt:ridge-online": 0.80, "regcb-opt:river": 0.60,
             "regcb-opt:river-online": 0.76, "regcb-opt:gb5": 0.65}
    monkeypatch.setattr(headline, "oracle_means", lambda agg: {
        f: [m] * len(headline.CLEAN_STREAMS) for f, m in means.items()})
    lines = headline.oracle_table({})
    gaps = {line.split(" | ")[0].strip("| "): line.rsplit(" | ", 1)[1].strip(" |")
            for line in lines if line.startswith("| RegCB")}
    assert gaps["RegCB-opt (River linear)"] == "-0.1200"  # against sqrt2 ridge, 0.72
    assert gaps["RegCB-opt (River linear, online updates)"] == "-0.0400"  # online ridge
    assert gaps["RegCB-opt (gb5)"] == "-0.0700"
    assert "(River linear, online updates), is -0.0400" in lines[-3]
    assert lines[-3].endswith("PASS**")
    means["regcb-opt:river-online"] = 0.74
    assert headline.oracle_table({})[-3].endswith("FAIL**")
