"""Smoke tests of ``bench.experiments.oracles`` on a short slice of ``vehicle`` (a few
seconds)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from regcb_stream.datasets import uci as ds

ROUNDS = 150


@pytest.fixture(scope="module")
def bench():
    """The benchmark's module (needs the vehicle data and LightGBM)."""
    pytest.importorskip("lightgbm")
    try:
        ds.require("vehicle.tsv.gz")
        ds.require(ds.REWARD_MATRICES)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    return importlib.import_module("bench.experiments.oracles")


def one_per_family(settings: list[dict], bench) -> list[dict]:
    """The first setting of each oracle or explorer."""
    seen: dict[str, dict] = {}
    for setting in settings:
        seen.setdefault(bench.family(setting), setting)
    return list(seen.values())


@pytest.mark.parametrize("variant", ["elimination", "optimistic"])
def test_gb5_block_loop_makes_the_per_example_decisions(bench, variant: str) -> None:
    X, R = ds.bandit_stream("vehicle", noisy=True, seed=1)
    setting = {"algo": "regcb", "oracle": "gb5", "variant": variant, "beta": 1e-4}
    per_example = bench.example_rewards(bench.make_learner(setting, X.shape[1], 1), X[:ROUNDS],
                                        R[:ROUNDS])
    block = bench.block_rewards(bench.make_learner(setting, X.shape[1], 1), X[:ROUNDS],
                                R[:ROUNDS])
    np.testing.assert_array_equal(block, per_example)


def test_sweep_records_and_report(bench) -> None:
    settings = one_per_family(bench.oracle_settings() + bench.explorer_settings(), bench)
    settings += one_per_family(bench.pr.all_settings(), bench)
    tasks = bench.pr.make_tasks(["vehicle"], [0], settings, ROUNDS)
    records = bench.run_all(tasks, jobs=1)
    assert {bench.family(r) for r in records} >= {*bench.ORACLE_NAMES, *bench.EXPLORER_NAMES}
    assert all(r["rounds"] == ROUNDS and 0 <= r["progressive_reward"] <= 1 for r in records)
    meta = {"command": "test", "code": "test", "date": "today", "runtime": 1.0,
            "tasks": len(tasks), "jobs": 1, "datasets": ["vehicle"], "rounds": ROUNDS,
            "seeds": [0], "reused": 0, "load_before": "0", "load_after": "0"}
    text = bench.render(records, meta)
    assert "vehicle (clean)" in text and "vehicle (noisy)" in text
    assert "→ PASS**" in text or "→ FAIL**" in text


def test_prefix_records_use_the_first_rounds(bench) -> None:
    full = {"algo": "vw", "explorer": "bag", "dataset": "letter", "noisy": False,
            "rounds": 20_000, "progressive_reward": 0.5, "prefix_reward": 0.3}
    gb5 = {"algo": "regcb", "oracle": "gb5", "dataset": "letter", "noisy": False,
           "rounds": bench.PREFIX, "progressive_reward": 0.2}
    assert bench.full_length([full, gb5]) == [full]
    prefix = bench.prefix_records([full, gb5], bench.PREFIX)
    assert [r["progressive_reward"] for r in prefix] == [0.3, 0.2]
