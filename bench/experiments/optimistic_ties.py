"""The optimistic rule's ties at the top of the reward range (`RegCB(ties=...)`), chosen on
the 56 public streams.

RegCB.Optimistic plays an action of the largest upper bound, and the bounds are clipped to
the reward range. Every stream of the harness pays the top of the range (1) for the right
action, and with the optimistic prior every action starts at the top; on the noisy variants
the wrong actions pay Bernoulli(mu) with mu up to 0.99. So the upper bounds of several
actions, the best one and some the learner already knows to be worse, keep reaching the top
together, and ``ties="shared"`` (``RegCB()``'s until this choice) spreads the mass evenly
over them. Breaking those ties by the fit plays the tied action of the largest prediction
(``"fit"``) or of the largest prediction clipped to the range (``"clipped"``: predictions
above the top still tie). Any maximizer of the upper bound keeps the algorithm's regret
bound; which one is a matter of measurement.

Each rule of :data:`TIE_RULES` runs ``RegCB(ties=...)``, every other parameter at its default,
on the 16 UCI streams (``bench/harness/problems.py``) and the 40 streams of
``bench/experiments/unseen_streams.py`` (20 streams and their noisy variants), 5
repetitions of the harness's protocol each; on the realizable linear problem of the
defaults' bar (K = 5, d = 10, 20,000 rounds, :data:`MAP_SEEDS`: each seed draws another map;
the optimistic variant: elimination has no such ties); and on its long form (200,000
rounds, twelve seeds: the long-horizon rule of ``bench/experiments/defaults.py``). A rule is
eligible if its regret growth R(T)/R(T/2) is at most 1.6 on every realizable run and every
long seed. Among the eligible, the rule is chosen by leaving each data set out in turn (a
stream and its noisy variant: the best mean on the other streams, scored on the two).

From the repository root::

    .venv/bin/python -m bench.experiments.optimistic_ties [--jobs 2] [--reps 5]   # ~1 h

Runs are kept in ``results/optimistic_ties.jsonl`` (resumable); writes
``docs/results/optimistic_ties.md``.
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
from bench.experiments.noisy_rewards import peers_section
from bench.experiments.radial_features import MAP_SEEDS, STREAMS, choose, stream_table
from bench.harness import problems, protocol
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import stamp
from bench.runs import run_missing
from regcb_stream import RegCB, defaults
from regcb_stream.datasets.synthetic import regret_growth
from regcb_stream.rules import TIE_RULES

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNSEEN_RUNS = ROOT / "results" / "unseen_streams.jsonl"  # the peers on the 40 streams


def run(task: tuple) -> dict:
    """One (ties, stream, repetition): progressive reward and the first rounds'; stream
    ``"realizable"`` (repetition: map seed) or ``"long"`` (repetition: seed): regret
    growth."""
    ties, stream, rep = task
    record = {"ties": ties, "stream": stream, "rep": rep}
    start = time.perf_counter()
    if stream == "realizable":
        record["growth"] = regret_growth(RegCB(ties=ties, seed=rep))
    elif stream == "long":
        half, whole = long_regret(RegCB(ties=ties, seed=rep), rep)
        record["growth"] = whole / half
    else:
        problem = (problems.load_problem if stream in problems.UCI_STREAMS
                   else unseen_streams.load_problem)(stream, rep)
        algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
        algo.learner = RegCB(ties=ties, seed=rep)
        result = protocol.run_protocol(algo, problem, rep)
        record.update(progressive=result["progressive"], early=result["early"])
    record["seconds"] = time.perf_counter() - start
    return record


def _means(rows: list[dict]) -> dict:
    """Mean progressive reward per (ties, stream), and per (ties, stream, rounds) over a
    run's first rounds."""
    values = defaultdict(list)
    for r in rows:
        if "progressive" in r:
            values[(r["ties"], r["stream"])].append(r["progressive"])
            for rounds, value in r["early"].items():
                values[(r["ties"], r["stream"], int(rounds))].append(value)
    return {key: float(np.mean(v)) for key, v in values.items()}


def growth(rows: list[dict]) -> dict:
    """Per rule: its largest regret growth on the realizable runs and on the long seeds."""
    largest = defaultdict(lambda: defaultdict(float))
    for r in rows:
        if "growth" in r:
            largest[r["ties"]][r["stream"]] = max(largest[r["ties"]][r["stream"]], r["growth"])
    return largest


def unseen_bars(means: dict) -> list[str]:
    """Issue 45's bars on the 40 unseen streams for each rule, against the peers' runs of
    ``bench/experiments/unseen_streams.py`` (if they are here)."""
    if not UNSEEN_RUNS.exists():
        return []
    peers = unseen_streams.mean_rewards(
        [json.loads(line) for line in UNSEEN_RUNS.read_text(encoding="utf-8").splitlines()], 5)
    for s in unseen_streams.EVERY:
        peers[(unseen_streams.ENVELOPE, s)] = max(
            peers[(unseen_streams.RUN_OF[n], s)] for n in unseen_streams.VW_TUNED)
    lines = ["", "## Against the peers on the 40 unseen streams", "",
             "The peers' runs of `bench/experiments/unseen_streams.py` "
             "(`results/unseen_streams.jsonl`, its first 5 repetitions: the same problems):"]
    for ties in TIE_RULES:
        ours = {(unseen_streams.DEFAULT, *key[1:]): value for key, value in means.items()
                if key[0] == ties}
        lines += ["", f"`ties={ties!r}`:", "", *unseen_streams._bars({**peers, **ours})]
    return lines


def report(rows: list[dict], command: str) -> str:
    means = _means(rows)
    largest = growth(rows)
    eligible = [t for t in TIE_RULES if max(largest[t].values()) <= MAX_GROWTH]
    held = {s: choose(means, eligible, s) for s in STREAMS}
    chosen = choose(means, eligible)
    lines = [
        "# The optimistic rule's ties at the top of the reward range (`RegCB(ties=...)`)", "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs, {sum(r['seconds'] for r in rows):.0f} s of runs",
        "- protocol, streams and rule: the docstring of "
        "`bench/experiments/optimistic_ties.py`; `RegCB(ties=...)` with every other "
        f"default; `RegCB()`'s ties now: `{defaults.TIES!r}`", "",
        "## Eligibility", "",
        "| ties | largest growth, realizable (20,000 rounds, 8 maps) | largest growth, long "
        "(200,000 rounds, 12 seeds) | eligible |", "|---|---:|---:|:---:|"]
    for ties in TIE_RULES:
        grown = largest[ties]
        lines.append(f"| {ties} | {grown['realizable']:.2f} | {grown['long']:.2f} | "
                     f"{'yes' if ties in eligible else 'no'} |")
    lines += stream_table(means, TIE_RULES, held)
    lines += ["", "At or above `ties='shared'`: " + "; ".join(
        f"`{t}` on {sum(means[(t, s)] >= means[('shared', s)] for s in STREAMS)}/56 streams, "
        f"the first 500 rounds on "
        f"{sum(means[(t, s, 500)] >= means[('shared', s, 500)] for s in STREAMS)}/56"
        for t in TIE_RULES[1:]) + "."]
    lines.append("")
    for t in TIE_RULES[1:]:
        lines.append(f"- `{t}` minus `shared`, mean over the 56 streams (its standard error): "
                     + ", ".join(f"{label} {_difference(means, t, rounds)}" for label, rounds
                                 in (("whole runs", None), ("first 500 rounds", 500))))
    lines += ["", f"Chosen on all 56 streams among the eligible: **`{chosen}`**; leaving each "
              f"stream's data set out, `{chosen}` is chosen on "
              f"{sum(h == chosen for h in held.values())} of 56 (held-out mean "
              f"{np.mean([means[(held[s], s)] for s in STREAMS]):.4f}, against "
              f"{np.mean([means[('shared', s)] for s in STREAMS]):.4f} for `shared`)."]
    gains = sorted(STREAMS, key=lambda s: means[(chosen, s)] - means[("shared", s)])
    lines += ["", f"`{chosen}` against `shared`, per stream: the largest gains " + ", ".join(
        f"{s} {means[(chosen, s)] - means[('shared', s)]:+.4f}" for s in gains[:-4:-1])
        + "; the largest losses " + ", ".join(
        f"{s} {means[(chosen, s)] - means[('shared', s)]:+.4f}" for s in gains[:3]) + "."]
    lines += peers_section(means, TIE_RULES, lambda ties: f"`ties={ties!r}`")
    lines += unseen_bars(means)
    if chosen != defaults.TIES:
        lines += ["", f"`RegCB()`'s ties (`{defaults.TIES}`) are not the rule chosen: set "
                  "`TIES` in `regcb_stream/defaults.py`."]
    return "\n".join(lines) + "\n"


def _difference(means: dict, ties: str, rounds: int | None) -> str:
    """The mean over the streams of ``ties``' mean minus ``shared``'s, and its standard
    error (over whole runs, or their first ``rounds``)."""
    tail = () if rounds is None else (rounds,)
    d = np.array([means[(ties, s, *tail)] - means[("shared", s, *tail)] for s in STREAMS])
    return f"{d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(len(d)):.4f})"


def _task_of(record: dict) -> tuple:
    return record["ties"], record["stream"], record["rep"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--runs", default=str(ROOT / "results" / "optimistic_ties.jsonl"))
    parser.add_argument("--output",
                        default=str(ROOT / "docs" / "results" / "optimistic_ties.md"))
    args = parser.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    tasks = [(t, "long", seed) for t in TIE_RULES for seed in LONG_SEEDS]
    tasks += [(t, "realizable", m) for t in TIE_RULES for m in MAP_SEEDS]
    tasks += [(t, s, rep) for rep in range(args.reps) for s in STREAMS for t in TIE_RULES]
    rows, ran = run_missing(args.runs, tasks, run, _task_of, args.jobs)
    print(f"{ran} runs", file=sys.stderr)
    text = report(rows, " ".join(["python -m bench.experiments.optimistic_ties",
                                  *(argv or sys.argv[1:])]))
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
