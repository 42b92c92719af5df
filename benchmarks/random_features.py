"""``RegCB(random_features=D, random_scale=s)``: the defaults with random Fourier features,
against ``RegCB()`` and the peers at their defaults.

A linear oracle fits the UCI streams' rewards (a class indicator, or its noisy matrix) badly:
a full-information ridge on satimage-noise plays worse than the bandit learners do. Random
Fourier features (Rahimi and Recht, NIPS 2007; `regcb_stream.random_features`) make the same
ridge a kernel ridge approximation: each context ``x`` (d standardized features) gets ``D``
more, ``0.5 cos(w_j . x + b_j)`` with ``w_j ~ N(0, s^2 I / d)`` and ``b_j ~ U[0, 2 pi)``, drawn
once from the learner's seed.

Every setting of :data:`GRID` (D, s) runs ``RegCB`` with the defaults otherwise
(`docs/defaults.md`) on the 16 UCI streams x 5 repetitions of the harness's protocol (the
same streams, holdout split and action draws as ``docs/defaults.md``). The setting is
chosen by leave one dataset out (for each stream, the best mean progressive reward on the
other 15); the held-out scores are what a user gets on a stream the setting was not chosen
on. The peers' numbers (River's
``LinUCBDisjoint()``, each VW explorer at its default, ``RegCB()`` without features) are read
from ``results/defaults.jsonl``, the runs of ``benchmarks/defaults.py`` (same protocol and
seeds): run it first.

From the repository root::

    .venv/bin/python benchmarks/random_features.py [--jobs 2] [--reps 5]   # ~20 minutes

Runs are kept in ``results/random_features.jsonl`` (resumable); writes
``docs/random_features.md``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pathlib
import sys
import time
from collections import defaultdict

import numpy as np

from regcb_stream import RegCB
from regcb_stream.bench.harness import problems, protocol
from regcb_stream.bench.harness.regcb_algo import RegCBAlgorithm
from regcb_stream.bench.provenance import stamp

ROOT = pathlib.Path(__file__).resolve().parents[1]
STREAMS = problems.UCI_STREAMS
GRID = {f"D={d} s={s:g}": (d, s) for d in (32, 64, 128) for s in (0.5, 1.0, 2.0)}
PLAIN = "RegCB()"
PEERS = ("River LinUCBDisjoint()", "VW --epsilon 0.05", "VW --squarecb", "VW --regcb",
         "VW --regcbopt", "VW --regcbopt --mellowness 0.001")


def run(task: tuple) -> dict:
    """Progressive reward of one (setting, stream, repetition)."""
    name, stream, rep = task
    problem = problems.load_problem(stream, rep)
    n_features, scale = GRID[name]
    algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
    algo.learner = RegCB(seed=rep, random_features=n_features, random_scale=scale)
    record = protocol.run_protocol(algo, problem, rep)
    return {"name": name, "stream": stream, "rep": rep, "progressive": record["progressive"],
            "seconds": record["seconds"]}


def _means(rows: list[dict]) -> dict:
    values = defaultdict(list)
    for r in rows:
        values[(r["name"], r["stream"])].append(r["progressive"])
    return {key: float(np.mean(v)) for key, v in values.items()}


def report(ours: list[dict], peers: list[dict], command: str, seconds: float) -> str:
    means = {**_means([r for r in peers if r["max_train"] is None]), **_means(ours)}
    missing = [n for n in (PLAIN, *PEERS) if (n, STREAMS[0]) not in means]
    if missing:
        raise SystemExit(f"results/defaults.jsonl lacks {missing}: run benchmarks/defaults.py")
    best_on = {held: max(GRID, key=lambda g: np.mean([means[(g, s)] for s in STREAMS
                                                     if s != held])) for held in STREAMS}
    chosen = max(GRID, key=lambda g: np.mean([means[(g, s)] for s in STREAMS]))
    held_out = {s: means[(best_on[s], s)] for s in STREAMS}
    lines = [
        "# RegCB with random Fourier features",
        "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(ours)} runs, {seconds:.0f} s of runs",
        "- protocol: the harness's (`docs/defaults.md`): 16 UCI streams x 5 repetitions, "
        "progressive reward, `RegCB(random_features=D, random_scale=s)`: the defaults with D "
        "random features `0.5 cos(w . x + b)` appended to the contexts (`w ~ N(0, s^2 I / d)`)",
        "",
        "## The setting chosen by leave one dataset out, and what the others get",
        "",
        "| stream | chosen on the other 15 | held out | `RegCB()` without | "
        + " | ".join(PEERS) + " |",
        "|---|---|---:|---:|" + "---:|" * len(PEERS),
    ]
    for s in STREAMS:
        lines.append(f"| {s} | {best_on[s]} | {held_out[s]:.4f} | {means[(PLAIN, s)]:.4f} | "
                     + " | ".join(f"{means[(p, s)]:.4f}" for p in PEERS) + " |")
    mean_of = {p: np.mean([means[(p, s)] for s in STREAMS]) for p in (PLAIN, *PEERS)}
    lines.append(f"| **mean** | | **{np.mean(list(held_out.values())):.4f}** | "
                 f"{mean_of[PLAIN]:.4f} | " + " | ".join(f"{mean_of[p]:.4f}" for p in PEERS)
                 + " |")
    at_least = {p: sum(held_out[s] >= means[(p, s)] for s in STREAMS) for p in (PLAIN, *PEERS)}
    lines.append("| held out at or above, streams | | | "
                 + " | ".join(f"{at_least[p]}/16" for p in (PLAIN, *PEERS)) + " |")
    lines += [
        "",
        f"Chosen on all 16 streams: **{chosen}**. Mean progressive reward of every setting: "
        + "; ".join(f"{g} {np.mean([means[(g, s)] for s in STREAMS]):.4f}" for g in GRID)
        + f"; without features {mean_of[PLAIN]:.4f}.",
        "",
        "The peers' columns and `RegCB()` without features are `benchmarks/defaults.py`'s runs "
        "(`docs/defaults.md`).",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--runs", default=str(ROOT / "results" / "random_features.jsonl"))
    parser.add_argument("--peers", default=str(ROOT / "results" / "defaults.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "random_features.md"))
    args = parser.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    runs = pathlib.Path(args.runs)
    runs.parent.mkdir(parents=True, exist_ok=True)
    done = [json.loads(line) for line in runs.open()] if runs.exists() else []
    have = {(r["name"], r["stream"], r["rep"]) for r in done}
    tasks = [(g, s, r) for g in GRID for s in STREAMS for r in range(args.reps)
             if (g, s, r) not in have]
    start = time.perf_counter()
    with multiprocessing.Pool(args.jobs) as pool, runs.open("a") as out:
        for row in pool.imap_unordered(run, tasks):
            out.write(json.dumps(row) + "\n")
            out.flush()
            done.append(row)
    print(f"{len(tasks)} runs in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    peers = [json.loads(line) for line in open(args.peers)]
    text = report(done, peers, "python " + " ".join(["benchmarks/random_features.py",
                                                      *(argv or sys.argv[1:])]),
                  sum(r["seconds"] for r in done))
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
