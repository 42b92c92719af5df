"""What rewards that arrive late cost: progressive reward on letter, immediate against late.

``RegCB()`` plays the clean letter stream (K = 26, 20,000 rounds, the permutation of each
seed) through ``decide_event`` and ``reward_event``: round t's reward arrives after a delay
drawn uniformly from 0 to ``--max-delay`` rounds (learned in arrival order), against the
same learner with every reward arriving at once. Progressive reward = mean reward of the
played actions, per seed and on average.

From the repository root::

    .venv/bin/python benchmarks/delayed_rewards.py [--max-delay 100] [--seeds 3]

Writes ``docs/delayed_rewards.md`` and prints it.
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np

from regcb_stream import RegCB
from regcb_stream.bench.datasets import bandit_stream
from regcb_stream.bench.provenance import stamp

ROOT = pathlib.Path(__file__).resolve().parents[1]
BAR = 0.01


def play(X: np.ndarray, R: np.ndarray, delays: np.ndarray, seed: int) -> float:
    """Progressive reward with round t's reward reported ``delays[t]`` rounds late."""
    learner, actions = RegCB(seed=seed), list(range(R.shape[1]))
    due: dict[int, list[int]] = {}
    played, got = {}, np.empty(len(X))
    for t, x in enumerate(X):
        played[t], _ = learner.decide_event(t, x, actions)
        got[t] = R[t, played[t]]
        due.setdefault(t + int(delays[t]), []).append(t)
        for event in due.pop(t, []):
            learner.reward_event(event, float(R[event, played.pop(event)]))
    return float(got.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-delay", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "docs" / "delayed_rewards.md"))
    args = parser.parse_args()
    start, rows = time.perf_counter(), []
    for seed in range(args.seeds):
        X, R = bandit_stream("letter", noisy=False, seed=seed)
        delays = np.random.default_rng(1000 + seed).integers(0, args.max_delay + 1, len(X))
        rows.append((seed, play(X, R, np.zeros(len(X), int), seed), play(X, R, delays, seed)))
    immediate, late = (float(np.mean([row[i] for row in rows])) for i in (1, 2))
    lines = [
        "# Delayed rewards: progressive reward with rewards that arrive late", "",
        f"- command: `.venv/bin/python benchmarks/delayed_rewards.py --max-delay "
        f"{args.max_delay} --seeds {args.seeds}`",
        f"- {stamp()}; {time.perf_counter() - start:.0f} s",
        f"- `RegCB()` on the clean letter stream (K = 26, {len(X):,} rounds per seed), "
        "through `decide_event` and `reward_event`; a round's reward arrives after a delay "
        f"uniform in 0..{args.max_delay} rounds, learned in arrival order", "",
        "| seed | immediate | late | difference |", "|---:|---:|---:|---:|",
        *[f"| {s} | {a:.4f} | {b:.4f} | {b - a:+.4f} |" for s, a, b in rows],
        f"| mean | {immediate:.4f} | {late:.4f} | {late - immediate:+.4f} |", "",
        f"Bar: within {BAR} of the immediate run: "
        f"{'pass' if abs(late - immediate) <= BAR else 'fail'}.",
    ]
    text = "\n".join(lines) + "\n"
    pathlib.Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
