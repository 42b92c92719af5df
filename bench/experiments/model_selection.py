"""Model selection (``RegCB(select_model=True)``): the random-features model or the linear
one, by prequential loss, against each alone; and whether it should be the default.

``RegCB()`` appends random Fourier features to dense contexts (``docs/results/random_features.md``).
With ``select_model=True`` it also learns the linear model from every label and decides with
whichever has predicted the labels so far better (`regcb_stream.adapt.selection`). Three learners
run on the 16 UCI streams x 5 repetitions of the harness's protocol (the streams, holdout
split and action draws of ``docs/results/defaults.md``): ``RegCB()`` (the random-features model
alone), ``RegCB(select_model=True)`` and ``RegCB(random_features=0)`` (the linear model
alone); the same on the 16 streams with every context multiplied by each of :data:`SCALES`
(repetition 0: contexts that are not standardized); the regret growth R(T)/R(T/2) of
model selection on the realizable linear problem of the defaults' bar (K = 5, d = 10, 20,000
rounds, both variants, :data:`MAP_SEEDS` seeds: each draws another map); and each learner's
regret on the realizable problem over :data:`LONG_ROUNDS` rounds (seeds :data:`LONG_SEEDS`,
the long problem of ``docs/results/change_detection.md``), ten times the bar's horizon. A learner is
eligible as the default if its regret growth there, R(T)/R(T/2) at T = LONG_ROUNDS, is at
most 1.6 on every seed (the defaults' bar, at a horizon where an under-exploring learner's
regret shows its linear growth). Among the eligible, the default is chosen by leave one
dataset out: for each stream, the learner with the best mean progressive reward on the other
15, scored on it (the report gives the choice without the rule too). The peers at their
defaults are read from ``results/defaults.jsonl`` (``bench/experiments/defaults.py``'s runs: same
protocol and seeds).

From the repository root::

    .venv/bin/python -m bench.experiments.model_selection [--jobs 2] [--reps 5]   # ~20 minutes

Runs are kept in ``results/model_selection.jsonl`` (resumable); writes
``docs/results/model_selection.md``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections import defaultdict

import numpy as np

from bench.experiments.defaults import LONG_ROUNDS, LONG_SEEDS, MAX_GROWTH, long_regret
from bench.harness import problems, protocol
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import stamp
from bench.runs import run_missing
from regcb_stream import RegCB
from regcb_stream.datasets.synthetic import regret_growth

ROOT = pathlib.Path(__file__).resolve().parents[2]
STREAMS = problems.UCI_STREAMS
LEARNERS = {"RegCB()": {}, "RegCB(select_model=True)": {"select_model": True},
            "RegCB(random_features=0)": {"random_features": 0}}
SELECTING = "RegCB(select_model=True)"
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
        return {"name": name, "stream": stream, "rep": rep, "factor": factor, "seconds": 0.0,
                "growth": regret_growth(RegCB(variant, seed=seed, **LEARNERS[name]))}
    if stream == "long":
        return {"name": name, "stream": stream, "rep": rep, "factor": factor, "seconds": 0.0,
                "regret": long_regret(RegCB(seed=rep, **LEARNERS[name]), rep)}
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
        if r["stream"] not in ("realizable", "long") and r.get("factor", 1.0) == factor \
                and r.get("max_train") is None:
            values[(r["name"], r["stream"])].append(r["progressive"])
    return {key: float(np.mean(v)) for key, v in values.items()}


def _choose(means: dict, names, held=None) -> str:
    """The learner with the best mean progressive reward on the streams but ``held``."""
    return max(names, key=lambda g: np.mean([means[(g, s)] for s in STREAMS if s != held]))


def report(ours: list[dict], peers: list[dict], command: str, seconds: float) -> str:
    means = {**_means(peers), **_means(ours)}
    mean_of = {p: float(np.mean([means[(p, s)] for s in STREAMS]))
               for p in (*LEARNERS, *PEERS)}
    long = defaultdict(dict)  # learner -> seed -> (regret at T/2, at T)
    for r in ours:
        if r["stream"] == "long":
            long[r["name"]][r["rep"]] = r["regret"]
    eligible = [g for g in LEARNERS
                if all(t / half <= MAX_GROWTH for half, t in long[g].values())]
    held_out = {s: means[(_choose(means, eligible, s), s)] for s in STREAMS}
    free = {s: _choose(means, LEARNERS, s) for s in STREAMS}
    linear_leads = defaultdict(list)
    for r in ours:
        if r["name"] == SELECTING and r["stream"] not in ("realizable", "long") \
                and r["factor"] == 1.0:
            linear_leads[r["stream"]].append(r["selection"]["leader"] == "linear")
    columns = (*LEARNERS, *PEERS)
    lines = [
        "# Model selection (`select_model=True`): the random-features model or the linear one",
        "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(ours)} runs, {seconds:.0f} s of runs",
        "- protocol: the harness's (`docs/results/defaults.md`): 16 UCI streams x 5 repetitions, "
        "progressive reward (the mean reward of the actions played while learning)",
        "- `RegCB(select_model=True)`: both models learn every label; each round is decided "
        "by the one with the smaller prequential squared loss so far "
        "(`regcb_stream/adapt/selection.py`); `RegCB()`: the random-features model alone (the "
        "default); `random_features=0`: the linear model alone",
        f"- eligible as the default: regret growth R(T)/R(T/2) <= {MAX_GROWTH} on the realizable "
        f"linear problem at T = {LONG_ROUNDS:,} (seeds "
        + ", ".join(map(str, LONG_SEEDS)) + ")",
        "",
        "## The long realizable problem",
        "",
        f"Cumulative regret at T/2 and T = {LONG_ROUNDS:,} (K = 5, d = 10; the long problem of "
        "`docs/results/change_detection.md`), and the growth R(T)/R(T/2):",
        "",
        "| learner | " + " | ".join(f"seed {seed}" for seed in LONG_SEEDS) + " | eligible |",
        "|---|" + "---|" * len(LONG_SEEDS) + ":---:|",
    ]
    for g in LEARNERS:
        lines.append(f"| {g} | " + " | ".join(
            f"{long[g][seed][0]:,.0f}, {long[g][seed][1]:,.0f} "
            f"({long[g][seed][1] / long[g][seed][0]:.2f})" for seed in LONG_SEEDS)
            + f" | {'yes' if g in eligible else 'no'} |")
    lines += [
        "",
        "A growth near 2 is a regret that grows linearly: the learner keeps playing a worse "
        "action at a steady rate. Model selection follows the linear model wherever it "
        "predicts the labels better, and inherits its regret.",
        "",
        "## Per stream, and the choice by leave one dataset out",
        "",
        "| stream | chosen on the other 15, among the eligible | held out | chosen on the other "
        "15, without the rule | " + " | ".join(columns) + " | linear leads at the end |",
        "|---|---|---:|---|" + "---:|" * len(columns) + "---:|",
    ]
    for s in STREAMS:
        lines.append(f"| {s} | {_choose(means, eligible, s)} | {held_out[s]:.4f} | {free[s]} | "
                     + " | ".join(f"{means[(p, s)]:.4f}" for p in columns)
                     + f" | {sum(linear_leads[s])}/{len(linear_leads[s])} |")
    lines.append(f"| **mean** | | **{np.mean(list(held_out.values())):.4f}** | | "
                 + " | ".join(f"{mean_of[p]:.4f}" for p in columns) + " | |")
    at_least = {p: sum(means[(SELECTING, s)] >= means[(p, s)] for s in STREAMS)
                for p in columns}
    lines.append("| `select_model=True` at or above, streams | | | | "
                 + " | ".join(f"{at_least[p]}/16" for p in columns) + " | |")
    lines += ["", f"Chosen on all 16 streams among the eligible: **{_choose(means, eligible)}**"
              f" (without the rule: {_choose(means, LEARNERS)}).", "",
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
    lines += ["", "## The realizable linear problem of the defaults' bar", "",
              f"Regret growth R(T)/R(T/2) of `{SELECTING}` (K = 5, d = 10, T = 20,000; 1.0: "
              "regret stopped growing, 2.0: linear), over map seeds "
              f"{MAP_SEEDS.start}-{MAP_SEEDS.stop - 1}: " + "; ".join(
                  f"{v} {min(g):.2f}-{max(g):.2f}" for v, g in sorted(worst.items())) + ".",
              "", "The peers' columns are `bench/experiments/defaults.py`'s runs "
              "(`docs/results/defaults.md`)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--results", default=str(ROOT / "results" / "model_selection.jsonl"))
    parser.add_argument("--peers", default=str(ROOT / "results" / "defaults.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "model_selection.md"))
    args = parser.parse_args(argv)
    tasks = [(n, s, r, 1.0) for n in LEARNERS for s in STREAMS for r in range(args.reps)]
    tasks += [(n, s, 0, f) for f in SCALES for n in LEARNERS for s in STREAMS]
    tasks += [(SELECTING, "realizable", (v, seed), 1.0)
              for v in ("optimistic", "elimination") for seed in MAP_SEEDS]
    tasks += [(n, "long", seed, 1.0) for n in LEARNERS for seed in LONG_SEEDS]
    ours, _ = run_missing(args.results, tasks, run, _task_of, args.jobs)
    peers = [r for r in map(json.loads, pathlib.Path(args.peers).read_text().splitlines())
             if r["name"] in PEERS and r["rep"] < args.reps]
    command = "python -m bench.experiments.model_selection" + (" " + " ".join(argv) if argv else "")
    text = report(ours, peers, command, sum(r["seconds"] for r in ours))
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


def _task_of(record: dict) -> tuple:
    rep = record["rep"]
    return record["name"], record["stream"], tuple(rep) if isinstance(rep, list) else rep, \
        record["factor"]


if __name__ == "__main__":
    main(sys.argv[1:])
