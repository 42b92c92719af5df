"""Model selection in ``RegCB()``: the random-features model or the linear one, by
prequential loss, against each alone.

``RegCB()`` appends random Fourier features to dense contexts (``docs/random_features.md``)
and also learns the linear model from every label, deciding with whichever has predicted the
labels so far better (`regcb_stream.selection`). Three learners run on the 16 UCI streams x 5
repetitions of the harness's protocol (the streams, holdout split and action draws of
``docs/defaults.md``): ``RegCB()`` (model selection), ``RegCB(select_model=False)`` (the
random-features model alone) and ``RegCB(random_features=0)`` (the linear model alone);
and the same on the 16 streams with every context multiplied by each of :data:`SCALES`
(repetition 0: contexts that are not standardized), and the regret growth R(T)/R(T/2) of
``RegCB()`` on the realizable linear problem of the defaults' bar (K = 5, d = 10, 20,000
rounds, both variants, :data:`MAP_SEEDS` seeds: each draws another map). Whether to select
is itself chosen by leave one dataset out among the three: for each stream, the learner with
the best mean progressive reward on the other 15, scored on it. The peers at their defaults
are read from ``results/defaults.jsonl`` (``benchmarks/defaults.py``'s runs: same protocol
and seeds).

From the repository root::

    .venv/bin/python benchmarks/model_selection.py [--jobs 2] [--reps 5]   # ~20 minutes

Runs are kept in ``results/model_selection.jsonl`` (resumable); writes
``docs/model_selection.md``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections import defaultdict

import numpy as np

from regcb_stream import RegCB
from regcb_stream.bench.harness import problems, protocol
from regcb_stream.bench.harness.regcb_algo import RegCBAlgorithm
from regcb_stream.bench.provenance import stamp
from regcb_stream.bench.runs import run_missing
from regcb_stream.synthetic import regret_growth

ROOT = pathlib.Path(__file__).resolve().parents[1]
STREAMS = problems.UCI_STREAMS
LEARNERS = {"RegCB()": {}, "RegCB(select_model=False)": {"select_model": False},
            "RegCB(random_features=0)": {"random_features": 0}}
SELECTING = "RegCB()"
SCALES = (10.0, 0.1)  # contexts not standardized: the streams' contexts times these
MAP_SEEDS = range(8)
PEERS = ("River LinUCBDisjoint()", "VW --epsilon 0.05", "VW --squarecb", "VW --regcb",
         "VW --regcbopt", "VW --regcbopt --mellowness 0.001")


def run(task: tuple) -> dict:
    """Progressive reward of one (learner, stream, repetition, factor of the contexts) and
    the selection's state at the end, or the regret growth of ``RegCB()`` for one (variant,
    map seed) (stream ``"realizable"``)."""
    name, stream, rep, factor = task
    if stream == "realizable":
        variant, seed = rep
        return {"name": name, "stream": stream, "rep": rep, "factor": factor,
                "seconds": 0.0, "growth": regret_growth(RegCB(variant, seed=seed))}
    problem = problems.load_problem(stream, rep)
    if factor != 1.0:
        problem = problem.scaled(factor)
    algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
    algo.learner = RegCB(seed=rep, **LEARNERS[name])
    record = protocol.run_protocol(algo, problem, rep)
    return {"name": name, "stream": stream, "rep": rep, "factor": factor,
            "progressive": record["progressive"], "seconds": record["seconds"],
            "selection": algo.learner.model_selection}


def _means(rows: list[dict], factor: float = 1.0) -> dict:
    values = defaultdict(list)
    for r in rows:
        if r["stream"] != "realizable" and r.get("factor", 1.0) == factor \
                and r.get("max_train") is None:
            values[(r["name"], r["stream"])].append(r["progressive"])
    return {key: float(np.mean(v)) for key, v in values.items()}


def report(ours: list[dict], peers: list[dict], command: str, seconds: float) -> str:
    means = {**_means(peers), **_means(ours)}
    mean_of = {p: float(np.mean([means[(p, s)] for s in STREAMS]))
               for p in (*LEARNERS, *PEERS)}
    best_on = {held: max(LEARNERS, key=lambda g: np.mean([means[(g, s)] for s in STREAMS
                                                          if s != held])) for held in STREAMS}
    held_out = {s: means[(best_on[s], s)] for s in STREAMS}
    linear_leads = defaultdict(list)
    for r in ours:
        if r["name"] == SELECTING and r["stream"] != "realizable" and r["factor"] == 1.0:
            linear_leads[r["stream"]].append(r["selection"]["leader"] == "linear")
    columns = (*LEARNERS, *PEERS)
    lines = [
        "# Model selection in `RegCB()`: the random-features model or the linear one",
        "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(ours)} runs, {seconds:.0f} s of runs",
        "- protocol: the harness's (`docs/defaults.md`): 16 UCI streams x 5 repetitions, "
        "progressive reward (the mean reward of the actions played while learning)",
        "- `RegCB()`: both models learn every label; each round is decided by the one with "
        "the smaller prequential squared loss so far (`regcb_stream/selection.py`); "
        "`select_model=False`: the random-features model alone (the default before); "
        "`random_features=0`: the linear model alone",
        "",
        "## Per stream, and the choice by leave one dataset out",
        "",
        "| stream | chosen on the other 15 | held out | " + " | ".join(columns)
        + " | linear leads at the end |",
        "|---|---|---:|" + "---:|" * len(columns) + "---:|",
    ]
    for s in STREAMS:
        lines.append(f"| {s} | {best_on[s]} | {held_out[s]:.4f} | "
                     + " | ".join(f"{means[(p, s)]:.4f}" for p in columns)
                     + f" | {sum(linear_leads[s])}/{len(linear_leads[s])} |")
    lines.append(f"| **mean** | | **{np.mean(list(held_out.values())):.4f}** | "
                 + " | ".join(f"{mean_of[p]:.4f}" for p in columns) + " | |")
    at_least = {p: sum(means[(SELECTING, s)] >= means[(p, s)] for s in STREAMS)
                for p in columns}
    lines.append("| `RegCB()` at or above, streams | | | "
                 + " | ".join(f"{at_least[p]}/16" for p in columns) + " | |")
    chosen = max(LEARNERS, key=lambda g: mean_of[g])
    lines += ["", f"Chosen on all 16 streams: **{chosen}**.", "",
              "## Contexts not standardized (repetition 0)", "",
              "| contexts x | " + " | ".join(LEARNERS) + " |",
              "|---:|" + "---:|" * len(LEARNERS)]
    for factor in SCALES:
        scaled = _means(ours, factor)
        lines.append(f"| {factor:g} | " + " | ".join(
            f"{np.mean([scaled[(g, s)] for s in STREAMS]):.4f}" for g in LEARNERS) + " |")
    worst = defaultdict(list)
    for r in ours:
        if r["stream"] == "realizable":
            worst[r["rep"][0]].append(r["growth"])
    lines += ["", "## The realizable linear problem", "",
              "Regret growth R(T)/R(T/2) of `RegCB()` (K = 5, d = 10, T = 20,000; 1.0: regret "
              "stopped growing, 2.0: linear), over map seeds "
              f"{MAP_SEEDS.start}-{MAP_SEEDS.stop - 1}: " + "; ".join(
                  f"{v} {min(g):.2f}-{max(g):.2f}" for v, g in sorted(worst.items())) + ".",
              "", "The peers' columns are `benchmarks/defaults.py`'s runs (`docs/defaults.md`)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--results", default=str(ROOT / "results" / "model_selection.jsonl"))
    parser.add_argument("--peers", default=str(ROOT / "results" / "defaults.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "model_selection.md"))
    args = parser.parse_args(argv)
    tasks = [(n, s, r, 1.0) for n in LEARNERS for s in STREAMS for r in range(args.reps)]
    tasks += [(n, s, 0, f) for f in SCALES for n in LEARNERS for s in STREAMS]
    tasks += [(SELECTING, "realizable", (v, seed), 1.0)
              for v in ("optimistic", "elimination") for seed in MAP_SEEDS]
    ours, _ = run_missing(args.results, tasks, run, _task_of, args.jobs)
    peers = [r for r in map(json.loads, pathlib.Path(args.peers).read_text().splitlines())
             if r["name"] in PEERS and r["rep"] < args.reps]
    command = "python benchmarks/model_selection.py" + (" " + " ".join(argv) if argv else "")
    text = report(ours, peers, command, sum(r["seconds"] for r in ours))
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


def _task_of(record: dict) -> tuple:
    rep = record["rep"]
    return record["name"], record["stream"], tuple(rep) if isinstance(rep, list) else rep, \
        record["factor"]


if __name__ == "__main__":
    main(sys.argv[1:])
