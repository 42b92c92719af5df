"""What the bounded ridge costs in quality on the public streams, against exact ridge.

``RegCB(oracle=RidgeOracle(prior="optimistic"))`` (``RegCB()``'s linear model: exact ridge,
hands over past ``max_exact``: on these streams it never does) against the same learner with
the bounded ridge from the start
(``RegCB(oracle=BoundedRidgeOracle(prior="optimistic"))``: exact on its first 64 columns,
diagonal beyond), on the 16 UCI streams and the yahoo sample x ``--reps`` repetitions of
the harness's protocol (``bench.harness``: the streams, holdout split and draws
of ``docs/results/paper_evaluation.md``), progressive reward. Where a stream has at most 64
features (with the intercept) the two are the same learner by construction; the table says
which.

From the repository root::

    .venv/bin/python -m bench.experiments.bounded_quality [--jobs 2] [--reps 5]

Runs are kept in ``results/bounded_quality.jsonl`` (resumable); writes
``docs/results/bounded_quality.md``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pathlib
import time
from collections import defaultdict

import numpy as np

from bench.harness import problems, protocol
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import stamp
from regcb_stream import BoundedRidgeOracle, RegCB, RidgeOracle
from regcb_stream.oracles.bounded import HEAD

ROOT = pathlib.Path(__file__).resolve().parents[2]
STREAMS = problems.STREAMS  # the 16 UCI streams and yahoo
NAMES = ("exact ridge: RegCB()'s linear model", f"bounded ridge (head {HEAD})")
BAR = 0.01


def run(task: tuple) -> dict:
    """Progressive reward of one (oracle, stream, repetition), and the learner's dimension."""
    name, stream, rep = task
    problem = problems.load_problem(stream, rep)
    algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
    oracle = RidgeOracle(prior="optimistic") if name == NAMES[0] else BoundedRidgeOracle(
        prior="optimistic")
    algo.learner = RegCB(oracle=oracle, seed=rep)  # an oracle given: no random features
    record = protocol.run_protocol(algo, problem, rep)
    return {"name": name, "stream": stream, "rep": rep, "progressive": record["progressive"],
            "dim": algo.learner.encoder.dim, "seconds": record["seconds"]}


def report(results: list[dict], reps: int, seconds: float) -> str:
    score, dims = defaultdict(list), {}
    for r in results:
        score[r["name"], r["stream"]].append(r["progressive"])
        dims[r["stream"]] = r["dim"]
    lines = [
        "# The bounded ridge against exact ridge on the public streams", "",
        f"- command: `.venv/bin/python -m bench.experiments.bounded_quality --reps {reps}`",
        f"- {stamp()}; {len(results)} runs, {seconds:.0f} s of runs",
        f"- protocol: the harness's (`docs/results/paper_evaluation.md`), {reps} "
        "repetitions, progressive reward; both learners are `RegCB()`'s defaults but for the "
        "oracle, given (so neither has the default's random features)", "",
        f"| stream | D (features with the intercept) | {NAMES[0]} | {NAMES[1]} | "
        f"difference | within {BAR} |",
        "|---|---:|---:|---:|---:|---|",
    ]
    gaps = {s: np.mean(score[NAMES[1], s]) - np.mean(score[NAMES[0], s]) for s in STREAMS}
    for stream in STREAMS:
        exact, bounded = (np.mean(score[n, stream]) for n in NAMES)
        same = " (the same learner: D <= head)" if dims[stream] <= HEAD else ""
        lines.append(f"| {stream} | {dims[stream]}{same} | {exact:.4f} | {bounded:.4f} | "
                     f"{gaps[stream]:+.4f} | {'yes' if abs(gaps[stream]) <= BAR else 'NO'} |")
    below = [s for s, gap in gaps.items() if gap < -BAR]
    within = sum(abs(gap) <= BAR for gap in gaps.values())
    lines += ["", f"Largest difference: {max(map(abs, gaps.values())):.4f}. Within {BAR} of "
              f"exact ridge on {within} of {len(STREAMS)} streams; more than {BAR} below it "
              f"on {len(below)}{' (' + ', '.join(below) + ')' if below else ''}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--results", default=str(ROOT / "results" / "bounded_quality.jsonl"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "bounded_quality.md"))
    args = parser.parse_args()
    tasks = [(n, s, r) for n in NAMES for s in STREAMS for r in range(args.reps)]
    path = pathlib.Path(args.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    results = [json.loads(line) for line in path.open()] if path.exists() else []
    done = {(r["name"], r["stream"], r["rep"]) for r in results}
    start = time.perf_counter()
    with path.open("a") as out, multiprocessing.get_context("spawn").Pool(
            args.jobs, initializer=_single_thread) as pool:
        for record in pool.imap_unordered(run, [t for t in tasks if t not in done]):
            out.write(json.dumps(record) + "\n")
            out.flush()
            results.append(record)
    results = [r for r in results if (r["name"], r["stream"], r["rep"]) in set(tasks)]
    text = report(results, args.reps, sum(r["seconds"] for r in results))
    pathlib.Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    print(f"{time.perf_counter() - start:.0f} s", flush=True)


def _single_thread() -> None:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"


if __name__ == "__main__":
    main()
