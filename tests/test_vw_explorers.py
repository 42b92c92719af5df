"""Tests of the runner of Vowpal Wabbit's explorers, on slices of real data sets."""

from __future__ import annotations

import numpy as np
import pytest
from vowpalwabbit import Workspace

from bench.vw_explorers import EXPLORERS, adf_example_lines, run_vw, vw_args
from regcb_stream.datasets import uci as ds

PARAMS = {"regcb": 1e-3, "regcbopt": 1e-3, "squarecb": 10.0, "epsilon": 0.05, "bag": 3, "cover": 3}


def stream(name: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the first ``n`` rounds of a clean stream, or skip if the file is missing."""
    try:
        ds.require(f"{name}.tsv.gz")
    except FileNotFoundError:
        pytest.skip(f"missing benchmark data file {name}.tsv.gz in {ds.data_dir()}")
    X, R = ds.bandit_stream(name, noisy=False, seed=0)
    return X[:n], R[:n]


@pytest.mark.parametrize("explorer", sorted(EXPLORERS))
@pytest.mark.parametrize("encoding", ["01", "-10"])
def test_vw_accepts_arguments(explorer: str, encoding: str) -> None:
    ws = Workspace(vw_args(explorer, PARAMS[explorer], seed=1, cost_encoding=encoding))
    ws.finish()


def test_vw_args_text_and_errors() -> None:
    assert vw_args("regcbopt", 0.01, cost_encoding="-10").endswith(
        "--regcbopt --mellowness 0.01 --cb_min_cost -1 --cb_max_cost 0"
    )
    assert vw_args("bag", 4.0).endswith("--bag 4")
    assert vw_args("regcb", None).endswith("--random_seed 0 --regcb")
    with pytest.raises(ValueError, match="integer parameter"):
        vw_args("cover", None)
    with pytest.raises(ValueError, match="unknown explorer"):
        vw_args("greedy", None)
    with pytest.raises(ValueError, match="cost_encoding"):
        vw_args("regcb", None, cost_encoding="10")


def test_adf_lines_reject_bad_label() -> None:
    with pytest.raises(ValueError, match="outside"):
        adf_example_lines([1.0], 3, label=(3, 0.0, 1.0))


@pytest.mark.parametrize("explorer", sorted(EXPLORERS))
def test_rewards_valid_and_deterministic(explorer: str) -> None:
    X, R = stream("vehicle", 300)
    first = run_vw(X, R, explorer, PARAMS[explorer], seed=5)
    second = run_vw(X, R, explorer, PARAMS[explorer], seed=5)
    rewards = first["rewards"]
    assert rewards.shape == (300,) and np.all((rewards >= 0.0) & (rewards <= 1.0))
    np.testing.assert_array_equal(rewards, R[np.arange(300), first["actions"]])
    np.testing.assert_array_equal(first["actions"], second["actions"])
    assert first["progressive_reward"] == pytest.approx(rewards.mean())
    assert first["rounds_per_sec"] > 0


def reference_run(X: np.ndarray, R: np.ndarray, args: str, seed: int) -> np.ndarray:
    """Run the same protocol through VW's plain text API (parse twice per round)."""
    ws, rng = Workspace(args), np.random.default_rng(seed)
    actions = []
    for x, r in zip(X, R):
        pmf = np.asarray(ws.predict(adf_example_lines(x, len(r))))
        cdf = np.cumsum(pmf)
        a = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(r) - 1)
        ws.learn(adf_example_lines(x, len(r), label=(a, 1.0 - r[a], pmf[a] / cdf[-1])))
        actions.append(a)
    ws.finish()
    return np.array(actions)


@pytest.mark.parametrize("explorer", ["regcb", "regcbopt", "squarecb", "bag"])
def test_matches_plain_text_api(explorer: str) -> None:
    X, R = stream("vehicle", 300)
    out = run_vw(X, R, explorer, PARAMS[explorer], seed=2)
    expected = reference_run(X, R, vw_args(explorer, PARAMS[explorer], seed=2), seed=2)
    np.testing.assert_array_equal(out["actions"], expected)


def test_regcbopt_ties_are_normalized() -> None:
    X, R = stream("vehicle", 300)
    out = run_vw(X, R, "regcbopt", 1e-3, seed=0, cost_encoding="-10")
    assert out["unnormalized_rounds"] >= 1  # the first round ties all actions at probability 1
    assert 0.0 <= out["progressive_reward"] <= 1.0


def test_regcb_beats_uniform_on_letter() -> None:
    X, R = stream("letter", 3000)
    out = run_vw(X, R, "regcb", 1e-3, seed=0)
    uniform = R.mean()  # expected reward of a uniformly random action: 1/26
    assert out["progressive_reward"] > 3 * uniform
