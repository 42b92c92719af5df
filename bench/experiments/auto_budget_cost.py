"""What the automatic budget costs in throughput, against a fixed budget on the same schedule.

On the first rounds of the clean ``letter`` stream (K = 26, d = 16, permutation seed 0), with
the default oracle and the ``online`` schedule, each of these loops runs with a fixed budget
(``mellowness=1e-3``) and with ``budget="auto"`` (the default candidates), interleaved pair by
pair so that a competing process slows both alike; the table gives the median time ratio:

* the per-example API: ``predict`` then ``learn`` every round;
* ``RegCB.play``: the simulation loop of the benchmark harness;
* ``RegCB.replay`` of a uniformly logged stream in blocks of 500 rows: the command's
  compiled loop (``regcb-stream --auto_budget``).

From the repository root::

    .venv/bin/python -m bench.experiments.auto_budget_cost [--rounds 8000] [--pairs 5]

Writes ``docs/results/auto_budget_cost.md`` and prints it.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bench.provenance import command_line, stamp  # noqa: E402
from regcb_stream import RegCB  # noqa: E402
from regcb_stream.datasets.uci import bandit_stream  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXED = {"mellowness": 1e-3}
AUTO = {"budget": "auto"}


def per_example(variant: str, budget: dict, X: np.ndarray, R: np.ndarray) -> float:
    learner, actions = RegCB(variant, seed=0, **budget), list(range(R.shape[1]))
    start = time.perf_counter()
    for t, x in enumerate(X):
        action, prob, info = learner.predict(x, actions)
        learner.learn(x, action, float(R[t, action]), prob, **info)
    return time.perf_counter() - start


def simulated(variant: str, budget: dict, X: np.ndarray, R: np.ndarray) -> float:
    learner, u = RegCB(variant, seed=0, **budget), np.random.default_rng(0).random(len(X))
    start = time.perf_counter()
    learner.play(X, list(range(R.shape[1])), lambda t, i: R[t, i], u)
    return time.perf_counter() - start


def logged(variant: str, budget: dict, X: np.ndarray, R: np.ndarray) -> float:
    rng, k = np.random.default_rng(0), R.shape[1]
    played = rng.integers(0, k, len(X))
    rewards, probs = R[np.arange(len(X)), played], np.full(len(X), 1.0 / k)
    learner, actions = RegCB(variant, seed=0, **budget), list(range(k))
    start = time.perf_counter()
    for first in range(0, len(X), 500):
        rows = slice(first, first + 500)
        learner.replay(X[rows], actions, played[rows], rewards[rows], probs[rows])
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8000)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "auto_budget_cost.md"))
    args = parser.parse_args(argv)
    X, R = bandit_stream("letter", False, 0)
    X, R = X[: args.rounds], R[: args.rounds]
    rows = []
    for loop in (per_example, simulated, logged):
        for variant in ("optimistic", "elimination"):
            ratios, fixed_times = [], []
            for _ in range(args.pairs):
                fixed = loop(variant, FIXED, X, R)
                auto = loop(variant, AUTO, X, R)
                ratios.append(auto / fixed)
                fixed_times.append(fixed)
            rows.append(f"| {loop.__name__.replace('_', '-')} | {variant} | "
                        f"{len(X) / np.median(fixed_times):,.0f} | "
                        f"{np.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f}) |")
    text = "\n".join([
        "# The automatic budget's cost in throughput",
        "",
        f"- command: `{command_line()}`",
        f"- {stamp()}; letter, first "
        f"{len(X):,} rounds, `online` schedule, default oracle; {args.pairs} interleaved pairs",
        "- ratio: time with `budget=\"auto\"` (4 candidates) over time with "
        "`mellowness=1e-3`, median (min–max); the bar is at most 1.20",
        "",
        "| loop | variant | rounds/s, fixed budget | auto / fixed time |",
        "|---|---|---:|---:|",
        *rows,
        "",
    ])
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
