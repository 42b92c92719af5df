"""What does serving the ``online`` schedule from replicas cost in progressive reward?

Issue 19: the ``online`` schedule cannot be epoch-synchronous; in parallel, replicas serve
decisions with the learner's state refreshed every N labels while one learner trains
(`regcb_stream.stream.replicas`). Measured: progressive reward against the refresh interval
N in {1, 10, 100, 1000} (N = 1: the online learner itself) on letter and two other UCI
streams.

Each run: ``RegCB()`` (the defaults) trained on every label while a replica, refreshed
every N labels from the learner's model bytes, decides (`replicas.serve`); the stream
``bandit_stream(name, noisy=False, seed=s)`` (repetition s: its own permutation), the draws
from ``default_rng(s)``; ``--seeds`` repetitions, the same for every N (paired).

From the repository root::

    .venv/bin/python -m bench.experiments.replica_refresh [--seeds 5]

Writes ``docs/results/replica_refresh.md`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import platform
import time

import numpy as np

from bench.provenance import code_version
from regcb_stream import RegCB
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.stream.replicas import serve

ROOT = pathlib.Path(__file__).resolve().parents[2]
STREAMS = ("letter", "satimage", "pendigits")
REFRESH = (1, 10, 100, 1000)
T4 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 8: 2.365, 10: 2.262}  # t, 97.5%


def run(name: str, seed: int, refresh: int) -> tuple[float, float]:
    """Progressive reward of one run, and its seconds."""
    X, R = bandit_stream(name, False, seed)
    actions = [f"c{k}" for k in range(R.shape[1])]
    start = time.perf_counter()
    rewards = serve(RegCB(seed=seed), X, actions, lambda t, i: R[t, i], refresh,
                    np.random.default_rng(seed).random(len(X)))
    return float(rewards.mean()), time.perf_counter() - start


def report(results: dict, args, seconds: float) -> str:
    t = T4.get(args.seeds, 1.96)
    lines = [
        "# Replicas refreshed every N labels: the cost in progressive reward (issue 19)",
        "",
        f"Command: `.venv/bin/python -m bench.experiments.replica_refresh --seeds {args.seeds}`",
        "",
        f"Code: {code_version()}; date: {datetime.date.today()}; machine: {os.cpu_count()} "
        f"cores, {platform.machine()}, Python {platform.python_version()}; {seconds:.0f} s "
        "in all.",
        "",
        "What parallel means for the `online` schedule: one learner trains on every label; "
        "replicas decide with its state as of the last refresh, every N labels (its model "
        "file bytes shipped and loaded: `regcb_stream.stream.replicas`). Any number of replicas "
        "makes the same decisions, so one process measures them. N = 1 is the online "
        "learner itself (`tests/test_replicas.py` checks it bit for bit).",
        "",
        f"`RegCB()` with its defaults; progressive reward over each stream's rounds, mean "
        f"of {args.seeds} repetitions (the stream's permutation and the draws seeded by the "
        f"repetition, the same for every N); `vs N = 1`: the paired difference with its 95% "
        "interval (Student's t); `s/run`: seconds per run.",
        "",
        "| stream | N | progressive reward | vs N = 1 [95%] | s/run |",
        "|---|---|---|---|---|",
    ]
    for name, by_refresh in results.items():
        base = np.array(by_refresh[1]["rewards"])
        for refresh, found in by_refresh.items():
            rewards = np.array(found["rewards"])
            diff = rewards - base
            half = t * diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else np.nan
            versus = "-" if refresh == 1 else (f"{diff.mean():+.4f} [{diff.mean() - half:+.4f}, "
                                               f"{diff.mean() + half:+.4f}]")
            lines.append(f"| {name} | {refresh} | {rewards.mean():.4f} | {versus} | "
                         f"{np.mean(found['seconds']):.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "replica_refresh.md"))
    args = parser.parse_args()
    start = time.perf_counter()
    results = {}
    for name in STREAMS:
        results[name] = {}
        for refresh in REFRESH:
            runs = [run(name, seed, refresh) for seed in range(args.seeds)]
            results[name][refresh] = {"rewards": [r for r, _ in runs],
                                      "seconds": [s for _, s in runs]}
            print(name, refresh, np.round([r for r, _ in runs], 4), flush=True)
    text = report(results, args, time.perf_counter() - start)
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
