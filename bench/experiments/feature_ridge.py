"""The random-features model's ridge weight and budget, chosen with its features.

``RegCB()`` on dense contexts is the ridge over the contexts and their random Fourier
features (``docs/results/random_features.md``). The features were chosen with ``l2 = 1`` and
mellowness 1e-3 (the incumbent): ``bench/experiments/defaults.py``'s choice for the contexts as
they are before its long-horizon rule. This script chooses the random-features model's own
pair: every pair of :data:`GRID` (the optimistic ridge, the default variant, with the prior
weights and the fixed budgets of the defaults' grid around the default) runs with
``RegCB()``'s features on the 16 UCI streams x 5 repetitions of the harness's protocol (the
streams, holdout split and action draws of ``docs/results/defaults.md``), on the realizable linear
problem of the defaults' bar (K = 5, d = 10, 20,000 rounds, both variants, :data:`MAP_SEEDS`
maps) and on the long realizable problem (200,000 rounds, the seeds of
``bench/experiments/defaults.py``'s long-horizon rule). A pair is eligible if its regret growth
R(T)/R(T/2) is at most 1.6 on both; among the eligible, the pair is chosen by leave one
dataset out (for each stream, the best mean progressive reward on the other 15), each of the
pair chosen on all 16 and ``RegCB()``'s next to the peers at their defaults
(``bench/experiments/defaults.py``'s runs, ``results/defaults.jsonl``: the same protocol and
seeds).

The 16 streams chose the features too, and a pair that fits them may not fit others: the
pair chosen and the incumbent (the pair the features were chosen with, ``l2 = 1`` and
mellowness 1e-3) also run on the 20 streams of ``bench/experiments/unseen_streams.py`` (16
stationary, 4 drifting), on which no default was chosen. If the incumbent is eligible, the
default becomes the chosen pair only if it is at least the incumbent's mean there, on the
stationary streams and on the drifting ones; an ineligible incumbent cannot stay, and the
chosen pair replaces it whatever the unseen streams say (they are reported). The script says
whether ``RegCB()``'s pair is the pair this rule gives.

From the repository root::

    .venv/bin/python -m bench.experiments.feature_ridge [--jobs 2] [--reps 5]   # ~40 minutes

Runs are kept in ``results/feature_ridge.jsonl`` (resumable); writes
``docs/results/feature_ridge.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
from collections import defaultdict

import numpy as np

from bench.experiments import unseen_streams as unseen  # the streams no default was chosen on
from bench.experiments.defaults import (
    LINUCB,
    LONG_SEEDS,
    MAX_GROWTH,
    VW_DEFAULTS,
    choose,
    leave_one_out,
    long_regret,
    mean_reward,
)
from bench.harness import problems, protocol
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import stamp
from bench.runs import run_missing
from regcb_stream import RegCB, RidgeOracle
from regcb_stream.datasets.synthetic import regret_growth
from regcb_stream.defaults import MODEL_CLASSES, RANDOM_FEATURES
from regcb_stream.features.random_features import RandomFeatures

ROOT = pathlib.Path(__file__).resolve().parents[2]
STREAMS = problems.UCI_STREAMS
GRID = {f"l2={l2:g} mellowness={m:g}": (l2, m) for l2 in (1.0, 3.0, 10.0)
        for m in (3e-4, 1e-3, 3e-3)}
MAP_SEEDS = range(8)
VARIANTS = ("optimistic", "elimination")
INCUMBENT = "l2=1 mellowness=0.001"  # the pair the features were chosen with


def learner(name: str, seed: int, variant: str = "optimistic") -> RegCB:
    """``RegCB()``'s random-features model with the ridge weight and budget ``name``."""
    l2, mellowness = GRID[name]
    return RegCB(variant, oracle=RidgeOracle(l2=l2, prior="auto"), mellowness=mellowness,
                 random_features=RandomFeatures(RANDOM_FEATURES, seed=seed),
                 seed=seed)


def run(task: tuple) -> dict:
    """Progressive reward of one (pair, stream, repetition); the regret growth of one (pair,
    (variant, map seed)) on the realizable problem; or the regret at T/2 and T of one (pair,
    seed) on the long one."""
    name, stream, rep = task
    row = {"name": name, "stream": stream, "rep": rep, "seconds": 0.0}
    if stream == "realizable":
        variant, seed = rep
        return row | {"growth": regret_growth(learner(name, seed, variant))}
    if stream == "long":
        return row | {"regret": long_regret(learner(name, rep), rep)}
    load = unseen.load_problem if stream in unseen.UNSEEN else problems.load_problem
    problem = load(stream, rep)
    algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
    algo.learner = learner(name, rep)
    record = protocol.run_protocol(algo, problem, rep)
    return row | {"progressive": record["progressive"], "seconds": record["seconds"]}


def peer_means(path: str, reps: int) -> dict:
    """Mean progressive reward per (peer at its default, stream) over the first ``reps``
    repetitions of ``bench/experiments/defaults.py``'s runs."""
    values = defaultdict(list)
    for r in map(json.loads, open(path, encoding="utf-8")):
        if r["name"] in (*VW_DEFAULTS, LINUCB) and r["stream"] in STREAMS \
                and r["max_train"] is None and r["rep"] < reps:
            values[(r["name"], r["stream"])].append(r["progressive"])
    return {key: float(np.mean(v)) for key, v in values.items()}


def choice(rows: list[dict]) -> str:
    """The eligible pair with the best mean progressive reward on the 16 streams."""
    return _summary(rows)[3]


def _summary(rows: list[dict]) -> tuple:
    """(means, growth, eligible pairs, the pair chosen on the 16 streams)."""
    values, growth = defaultdict(list), defaultdict(float)
    for r in rows:
        if "progressive" in r:
            values[(r["name"], r["stream"])].append(r["progressive"])
        elif r["stream"] == "realizable":
            growth[(r["name"], "20,000")] = max(growth[(r["name"], "20,000")], r["growth"])
        else:
            half, whole = r["regret"]
            growth[(r["name"], "200,000")] = max(growth[(r["name"], "200,000")], whole / half)
    means = {key: float(np.mean(v)) for key, v in values.items()}
    eligible = [g for g in GRID
                if max(growth[(g, "20,000")], growth[(g, "200,000")]) <= MAX_GROWTH]
    chosen = choose(means, STREAMS, mean_reward, eligible)
    return means, growth, eligible, chosen


def report(rows: list[dict], command: str, peers: dict) -> str:
    means, growth, eligible, chosen = _summary(rows)
    mean_of = {g: float(np.mean([means[(g, s)] for s in STREAMS])) for g in GRID}
    best_on = {held: g for held, (g, _) in leave_one_out(means, mean_reward, eligible).items()}
    default = (f"l2={MODEL_CLASSES['random features'].l2:g} "
               f"mellowness={MODEL_CLASSES['random features'].mellowness:g}")
    unseen_mean = {(g, part): float(np.mean([means[(g, s)] for s in streams]))
                   for g in dict.fromkeys((chosen, INCUMBENT))
                   for part, streams in (("stationary", unseen.STREAMS),
                                         ("drifting", unseen.DRIFTING))}
    validated = all(unseen_mean[(chosen, part)] >= unseen_mean[(INCUMBENT, part)]
                    for part in ("stationary", "drifting"))
    incumbent_stays = INCUMBENT in eligible and not validated
    rule = INCUMBENT if incumbent_stays else chosen
    lines = [
        "# The random-features model's ridge weight and budget",
        "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs, {sum(r['seconds'] for r in rows):.0f} s of runs",
        "- protocol: the harness's (`docs/results/defaults.md`): 16 UCI streams x 5 repetitions, "
        "progressive reward; `RegCB()`'s random features (`docs/results/random_features.md`) "
        "with the optimistic ridge of prior weight l2 and VW's budget form with this mellowness",
        f"- eligible: regret growth R(T)/R(T/2) <= {MAX_GROWTH} on the realizable linear problem "
        f"(K = 5, d = 10) at T = 20,000 (both variants, maps {MAP_SEEDS.start}-"
        f"{MAP_SEEDS.stop - 1}) and at T = 200,000 (seeds {LONG_SEEDS[0]}-{LONG_SEEDS[-1]})",
        "",
        "| stream | chosen on the other 15 | held out | " + " | ".join(GRID) + " |",
        "|---|---|---:|" + "---:|" * len(GRID),
    ]
    for s in STREAMS:
        lines.append(f"| {s} | {best_on[s]} | {means[(best_on[s], s)]:.4f} | "
                     + " | ".join(f"{means[(g, s)]:.4f}" for g in GRID) + " |")
    lines += [
        f"| **mean** | | **{np.mean([means[(best_on[s], s)] for s in STREAMS]):.4f}** | "
        + " | ".join(f"{mean_of[g]:.4f}" for g in GRID) + " |",
        "| largest growth at 20,000 | | | "
        + " | ".join(f"{growth[(g, '20,000')]:.2f}" for g in GRID) + " |",
        "| largest growth at 200,000 | | | "
        + " | ".join(f"{growth[(g, '200,000')]:.2f}" for g in GRID) + " |",
        "",
        f"Chosen on all 16 streams among the eligible ({len(eligible)} of {len(GRID)}): "
        f"**{chosen}**; `RegCB()`'s: {default} (mean {mean_of[default]:.4f}).",
        "",
        "At or above each peer at its default (streams of 16): " + "; ".join(
            f"{g}: " + ", ".join(
                f"{p} {sum(means[(g, s)] >= peers[(p, s)] for s in STREAMS)}"
                for p in (*VW_DEFAULTS, LINUCB)) for g in dict.fromkeys((chosen, default)))
        + ".",
        "",
        "On the 20 streams no default was chosen on (`bench/experiments/unseen_streams.py`, 5 "
        "repetitions), mean progressive reward: " + "; ".join(
            f"{g}: {len(unseen.STREAMS)} stationary {unseen_mean[(g, 'stationary')]:.4f}, "
            f"{len(unseen.DRIFTING)} drifting {unseen_mean[(g, 'drifting')]:.4f}"
            for g in dict.fromkeys((chosen, INCUMBENT))) + ". Per stream, the chosen pair "
        "against the incumbent: " + ", ".join(
            f"{s} {means[(chosen, s)] - means[(INCUMBENT, s)]:+.4f}" for s in unseen.UNSEEN)
        + ".",
        "",
        f"The pair the rule gives: **{rule}** ("
        + ("the chosen pair holds on the streams it was not chosen on" if validated else
           "the chosen pair does not hold on the streams it was not chosen on: the "
           "incumbent stays" if incumbent_stays else
           "the incumbent is not eligible: the chosen pair replaces it although it does "
           "not hold on the streams it was not chosen on") + ").",
        "",
        "`RegCB()`'s ridge weight and budget are this pair: checked." if rule == default
        else "**`RegCB()`'s ridge weight and budget are NOT this pair.**",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--results", default=str(ROOT / "results" / "feature_ridge.jsonl"))
    parser.add_argument("--peers", default=str(ROOT / "results" / "defaults.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "feature_ridge.md"))
    args = parser.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    tasks = [(g, s, r) for g in GRID for s in STREAMS for r in range(args.reps)]
    tasks += [(g, "realizable", [v, m]) for g in GRID for v in VARIANTS for m in MAP_SEEDS]
    tasks += [(g, "long", seed) for g in GRID for seed in LONG_SEEDS]
    key = lambda r: (r["name"], r["stream"], r["rep"])  # noqa: E731
    rows, _ = run_missing(args.results, tasks, run, key, args.jobs)
    tasks += [(g, s, r) for g in dict.fromkeys((choice(rows), INCUMBENT))
              for s in unseen.UNSEEN for r in range(args.reps)]
    rows, _ = run_missing(args.results, tasks, run, key, args.jobs)
    command = "python -m bench.experiments.feature_ridge" + (" " + " ".join(argv) if argv else "")
    text = report(rows, command, peer_means(args.peers, args.reps))
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
