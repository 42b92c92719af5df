"""What the studies of one setting of ``RegCB()`` share: the runs on the 56 public streams
and the two realizable problems, their means, the long-horizon rule, the choice by leaving
each data set out, and issue 45's bars on the 40 unseen streams.

A study (``optimistic_ties``, ``feature_budget``) names its setting (a keyword of `RegCB`)
and the values it compares; each value runs ``RegCB(**{setting: value})``, every other
parameter at its default, on the 16 UCI streams (``bench/harness/problems.py``) and the 40
streams of ``bench/experiments/unseen_streams.py`` (20 streams and their noisy variants), 5
repetitions of the harness's protocol each; on the realizable linear problem of the
defaults' bar (K = 5, d = 10, 20,000 rounds, :data:`MAP_SEEDS`: each seed draws another
map); and on its long form (200,000 rounds, twelve seeds: the long-horizon rule of
``bench/experiments/defaults.py``). A value is eligible if its regret growth R(T)/R(T/2) is
at most 1.6 on every realizable run and every long seed; among the eligible, the value is
chosen by leaving each data set out in turn (a stream and its noisy variant: the best mean
on the other streams, scored on the two).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time
from collections import defaultdict

import numpy as np

from bench.experiments import unseen_streams
from bench.experiments.defaults import LONG_SEEDS, MAX_GROWTH, long_regret
from bench.experiments.radial_features import MAP_SEEDS, STREAMS, choose
from bench.harness import problems, protocol
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.runs import run_missing
from regcb_stream import RegCB
from regcb_stream.datasets.synthetic import regret_growth

ROOT = pathlib.Path(__file__).resolve().parents[1]
UNSEEN_RUNS = ROOT / "results" / "unseen_streams.jsonl"  # the peers on the 40 streams
UNSEEN_REPORT = ROOT / "docs" / "results" / "unseen_streams.md"


def tasks(values, reps: int) -> list[tuple]:
    """Every (value, stream, repetition) of a study: the long seeds and the realizable
    maps first, then the streams."""
    return ([(v, "long", seed) for v in values for seed in LONG_SEEDS]
            + [(v, "realizable", m) for v in values for m in MAP_SEEDS]
            + [(v, s, rep) for rep in range(reps) for s in STREAMS for v in values])


def run(setting: str, task: tuple) -> dict:
    """One (value, stream, repetition) of ``RegCB(**{setting: value})``: progressive
    reward and the first rounds'; stream ``"realizable"`` (repetition: map seed) or
    ``"long"`` (repetition: seed): regret growth."""
    value, stream, rep = task
    record = {setting: value, "stream": stream, "rep": rep}
    start = time.perf_counter()
    learner = RegCB(seed=rep, **{setting: value})
    if stream == "realizable":
        record["growth"] = regret_growth(learner)
    elif stream == "long":
        half, whole = long_regret(learner, rep)
        record["growth"] = whole / half
    else:
        problem = (problems.load_problem if stream in problems.UCI_STREAMS
                   else unseen_streams.load_problem)(stream, rep)
        algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
        algo.learner = learner
        result = protocol.run_protocol(algo, problem, rep)
        record.update(progressive=result["progressive"], early=result["early"])
    record["seconds"] = time.perf_counter() - start
    return record


def means(rows: list[dict], setting: str) -> dict:
    """Mean progressive reward per (value, stream), and per (value, stream, rounds) over a
    run's first rounds."""
    values = defaultdict(list)
    for r in rows:
        if "progressive" in r:
            values[(r[setting], r["stream"])].append(r["progressive"])
            for rounds, value in r["early"].items():
                values[(r[setting], r["stream"], int(rounds))].append(value)
    return {key: float(np.mean(v)) for key, v in values.items()}


def growth(rows: list[dict], setting: str) -> dict:
    """Per value: its largest regret growth on the realizable runs and on the long
    seeds."""
    largest = defaultdict(lambda: defaultdict(float))
    for r in rows:
        if "growth" in r:
            largest[r[setting]][r["stream"]] = max(largest[r[setting]][r["stream"]],
                                                   r["growth"])
    return largest


def eligible(largest: dict, values) -> list:
    """The values whose regret growth stays within the long-horizon rule everywhere."""
    return [v for v in values if max(largest[v].values()) <= MAX_GROWTH]


def eligibility_table(largest: dict, values, setting: str, name=str) -> list[str]:
    """The report's table of each value's largest growth and eligibility."""
    lines = ["", "## Eligibility", "",
             f"| {setting} | largest growth, realizable (20,000 rounds, 8 maps) | largest growth, "
             "long (200,000 rounds, 12 seeds) | eligible |", "|---|---:|---:|:---:|"]
    ok = eligible(largest, values)
    for v in values:
        lines.append(f"| {name(v)} | {largest[v]['realizable']:.2f} | {largest[v]['long']:.2f} "
                     f"| {'yes' if v in ok else 'no'} |")
    return lines


def held_out(means_: dict, values) -> tuple[dict, object]:
    """The value chosen without each stream's data set, and on all 56 streams."""
    return {s: choose(means_, values, s) for s in STREAMS}, choose(means_, values)


def difference(means_: dict, value, base, rounds: int | None = None) -> str:
    """The mean over the streams of ``value``'s mean minus ``base``'s, and its standard
    error (over whole runs, or their first ``rounds``: the streams that long)."""
    tail = () if rounds is None else (rounds,)
    d = np.array([means_[(value, s, *tail)] - means_[(base, s, *tail)] for s in STREAMS
                  if (base, s, *tail) in means_])
    return f"{d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(len(d)):.4f}, {len(d)} streams)"


def choice_lines(means_: dict, held: dict, chosen, base, label) -> list[str]:
    """The report's lines on the value chosen on all 56 streams and by leaving each data
    set out, against ``base`` (each value named by ``label``), and the streams it moves
    most."""
    lines = ["", f"Chosen on all 56 streams among the eligible: **{label(chosen)}**; leaving "
             f"each stream's data set out, {label(chosen)} is chosen on "
             f"{sum(h == chosen for h in held.values())} of 56 (held-out mean "
             f"{np.mean([means_[(held[s], s)] for s in STREAMS]):.4f}, against "
             f"{np.mean([means_[(base, s)] for s in STREAMS]):.4f} for {label(base)})."]
    if chosen != base:
        gains = sorted(STREAMS, key=lambda s: means_[(chosen, s)] - means_[(base, s)])
        lines += ["", f"{label(chosen)} against {label(base)}, per stream: the largest gains "
                  + ", ".join(f"{s} {means_[(chosen, s)] - means_[(base, s)]:+.4f}"
                              for s in gains[:-4:-1])
                  + "; the largest losses " + ", ".join(
                      f"{s} {means_[(chosen, s)] - means_[(base, s)]:+.4f}" for s in gains[:3])
                  + "."]
    return lines


def main(module: str, description: str, setting: str, values, report, argv=None) -> None:
    """A study's command: run the missing (value, stream, repetition) tasks of ``setting``
    (``results/<name>.jsonl``, resumable), then write its ``report(rows, command)`` to
    ``docs/results/<name>.md`` and print it."""
    name = module.rsplit(".", 1)[-1]
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--runs", default=str(ROOT / "results" / f"{name}.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / f"{name}.md"))
    args = parser.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    rows, ran = run_missing(args.runs, tasks(values, args.reps), _Run(setting),
                            lambda r: (r[setting], r["stream"], r["rep"]), args.jobs)
    print(f"{ran} runs", file=sys.stderr)
    text = report(rows, " ".join([f"python -m {module}", *(argv or sys.argv[1:])]))
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


class _Run:
    """`run` of one setting, as the pool's processes take it (a picklable callable)."""

    def __init__(self, setting: str):
        self.setting = setting

    def __call__(self, task: tuple) -> dict:
        return run(self.setting, task)


def unseen_peers() -> tuple[dict, str]:
    """The peers' means on the 40 unseen streams (``means[(name, stream[, rounds])]``, the
    tuned envelope under ``unseen_streams.ENVELOPE``) and where they come from: the runs of
    ``bench/experiments/unseen_streams.py`` if they are here (their first 5 repetitions),
    else its report's tables (whole runs only)."""
    if UNSEEN_RUNS.exists():
        peers = unseen_streams.mean_rewards(
            [json.loads(line) for line in UNSEEN_RUNS.read_text(encoding="utf-8").splitlines()],
            5)
        for s in unseen_streams.EVERY:
            peers[(unseen_streams.ENVELOPE, s)] = max(
                peers[(unseen_streams.RUN_OF[n], s)] for n in unseen_streams.VW_TUNED)
        return peers, ("the runs of `bench/experiments/unseen_streams.py` "
                       "(`results/unseen_streams.jsonl`, its first 5 repetitions)")
    peers, names = {}, None
    for line in UNSEEN_REPORT.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            names = None  # (a table ends)
        elif line.startswith("| stream ("):
            names = cells
        elif names and cells[0].split(" ")[0] in unseen_streams.EVERY:
            for name, cell in zip(names[1:], cells[1:]):
                peers[(name, cells[0].split(" ")[0])] = float(cell.split(" ")[0])
    return peers, ("the tables of `docs/results/unseen_streams.md` (whole runs: "
                   "`results/unseen_streams.jsonl` is not here)")


def unseen_bars(means_: dict, values, label) -> list[str]:
    """Issue 45's bars on the 40 unseen streams for each value (named ``label(value)``),
    against the peers of `unseen_peers`."""
    peers, source = unseen_peers()
    lines = ["", "## Against the peers on the 40 unseen streams", "",
             f"The peers' means: {source}, the same problems."]
    for v in values:
        ours = {(unseen_streams.DEFAULT, *key[1:]): m for key, m in means_.items()
                if key[0] == v and (len(key) == 2 or (unseen_streams.LINUCB, *key[1:]) in peers)}
        lines += ["", f"{label(v)}:", "", *unseen_streams._bars({**peers, **ours})]
    return lines
