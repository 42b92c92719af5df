"""Noisy rewards and the random-features model's ridge weight: a fixed penalty, or one chosen
from the labels by generalized cross-validation (``RidgeOracle(l2="gcv")``).

``docs/results/feature_ridge.md`` shows the trade a fixed penalty makes: on the UCI streams
with Bernoulli reward noise a larger ridge weight earns more (optdigits-noise: 0.8805 at
``l2=1``, 0.9168 at ``l2=3``), on the clean ones it costs (letter 0.7106 against 0.6685,
pendigits 0.9503 against 0.9346). Noise in the labels asks for more shrinkage; how much
the stream can only tell from its labels. ``l2="gcv"`` chooses the penalty among
``GCV_PENALTIES`` after 64 labels and at every doubling of their number, by the GCV score
of each penalty computed from the sufficient statistics (`regcb_stream.oracles.ridge`).

The learners, each with ``RegCB()``'s random features, optimistic prior and budget:
``RegCB()`` (``l2=1``), ``l2=3`` fixed, and ``l2="gcv"``; on the 16 UCI
streams (the harness's, `bench.harness.problems`) and the 20 streams of
``bench/experiments/unseen_streams.py`` with their noisy variants (40), 5 repetitions,
progressive reward; and the long-horizon rule of the defaults (R(T)/R(T/2) <= 1.6 at T =
200,000 on the realizable problem, seeds 0-11: run for ``l2="gcv"``, the fixed penalties'
from ``docs/results/feature_ridge.md``). The report chooses among them by leaving
each of the 56 streams out (the mean on the other 55, among the eligible), and sets
``RegCB()`` and the choice beside VW's tuned envelope of the UCI streams
(``docs/results/defaults.md``).

From the repository root::

    .venv/bin/python -m bench.experiments.noisy_rewards [--jobs 2] [--reps 5]   # ~25 min

Runs are kept in ``results/noisy_rewards.jsonl`` (resumable); writes
``docs/results/noisy_rewards.md``.
"""

from __future__ import annotations

import argparse
import functools
import os
import pathlib
import time
from collections import defaultdict

import numpy as np

from bench.experiments import throughput, unseen_streams
from bench.experiments.defaults import LONG_SEEDS, MAX_GROWTH, long_regret
from bench.harness import problems, protocol
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import command_line, stamp
from bench.runs import run_missing
from regcb_stream import RegCB
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.oracles.ridge import RidgeOracle

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "noisy_rewards.jsonl"
REPORT = ROOT / "docs" / "results" / "noisy_rewards.md"
PENALTIES = {"RegCB() (l2=1)": 1.0, "l2=3": 3.0, 'l2="gcv"': "gcv"}
GCV = 'l2="gcv"'
#: the fixed penalties' largest growth over the 12 seeds, `docs/results/feature_ridge.md`
KNOWN_GROWTH = {"RegCB() (l2=1)": 1.29, "l2=3": 1.32}
DEFAULT = "RegCB() (l2=1)"
STREAMS = problems.UCI_STREAMS + unseen_streams.EVERY
ENVELOPE_COLUMN = "VW's best explorer, tuned per stream"
SPEED_ROUNDS = 16_000  # letter's rounds timed (`bench/experiments/throughput.py`'s)


def learner(name: str, seed: int, penalties: dict | None = None) -> RegCB:
    """``RegCB()``'s random-features model with the named penalty (of ``penalties``,
    this script's `PENALTIES` by default)."""
    oracle = RidgeOracle(l2=(penalties or PENALTIES)[name], prior="optimistic")
    return RegCB(seed=seed, oracle=oracle, random_features=64)


def run(task: tuple, penalties: dict | None = None) -> dict:
    """Progressive reward of one (learner, stream, repetition), or the regret at T/2 and T
    of one (learner, seed) on the long realizable problem (stream ``"long"``); the
    learners' penalties ``penalties`` (`learner`)."""
    name, stream, rep = task
    if stream == "long":
        return {"name": name, "stream": stream, "rep": rep,
                "regret": long_regret(learner(name, rep, penalties), rep)}
    load = (problems.load_problem if stream in problems.UCI_STREAMS
            else unseen_streams.load_problem)
    problem = load(stream, rep)
    algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
    algo.learner = learner(name, rep, penalties)
    record = protocol.run_protocol(algo, problem, rep)
    return {"name": name, "stream": stream, "rep": rep, "progressive": record["progressive"],
            "seconds": record["seconds"]}


def speeds(rounds: int = SPEED_ROUNDS, reps: int = 5) -> tuple[dict[str, float], list[float]]:
    """Rounds per second of the per-example API (``predict`` then ``learn``) with each
    penalty, on the first ``rounds`` of clean letter (`throughput`'s stream), best of
    ``reps`` interleaved runs; and the seconds ``l2="gcv"``'s choices took in each of its
    runs (the one cost it adds: the labels' sums are a few additions per label)."""
    X, R = bandit_stream("letter", False, seed=0)
    X, R = X[:rounds], R[:rounds]
    best, chosen = defaultdict(lambda: np.inf), []
    choose = RidgeOracle._choose_penalty

    def timed(oracle):
        start = time.perf_counter()
        choose(oracle)
        chosen[-1] += time.perf_counter() - start

    RidgeOracle._choose_penalty = timed
    try:
        for _ in range(reps):
            for name, penalty in PENALTIES.items():
                chosen.append(0.0)
                run = throughput.run_per_example(
                    X, R, "optimistic", None, "online", random_features=64,
                    oracle=RidgeOracle(l2=penalty, prior="optimistic"))
                best[name] = min(best[name], run["seconds"])
                if penalty != "gcv":
                    chosen.pop()
    finally:
        RidgeOracle._choose_penalty = choose
    return {name: rounds / seconds for name, seconds in best.items()}, chosen


def uci_peers() -> tuple[dict[str, float], dict[str, float]]:
    """Per UCI stream, VW's tuned envelope and the best of the peers at their defaults
    (VW's explorers, River's LinUCBDisjoint()), as ``docs/results/defaults.md`` reports
    them."""
    lines = (ROOT / "docs" / "results" / "defaults.md").read_text(encoding="utf-8").splitlines()
    header = next(i for i, line in enumerate(lines) if ENVELOPE_COLUMN in line)
    names = [c.strip() for c in lines[header].strip("|").split("|")]
    envelope, peers = {}, {}
    for line in lines[header + 2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not line.startswith("|") or cells[0] not in problems.UCI_STREAMS:
            break
        envelope[cells[0]] = float(cells[-1].split(" ", 1)[0])
        peers[cells[0]] = max(float(c) for n, c in zip(names, cells)
                              if n.startswith(("VW --", "River")))
    return envelope, peers


def peers_section(means: dict, names, label=str) -> list[str]:
    """The report's lines on the UCI streams at or above VW's tuned envelope and the
    peers' defaults (`uci_peers`), for each of ``names`` (``means[(name, stream)]``; each
    named ``label(name)``)."""
    envelope, peers = uci_peers()
    lines = ["", "## Against the peers on the UCI streams", "",
             "From `docs/results/defaults.md` (same protocol, seeds and repetitions): VW's "
             "best explorer tuned per stream (a ceiling no user gets), and the best of VW's "
             "explorers at their defaults and River's `LinUCBDisjoint()`; streams at or "
             "above each:", ""]
    for n in names:
        for title, bar in (("VW's tuned envelope", envelope), ("every peer at its default",
                                                                peers)):
            below = [f"{s} ({means[(n, s)] - bar[s]:+.4f})" for s in problems.UCI_STREAMS
                     if means[(n, s)] < bar[s]]
            lines.append(f"- {label(n)}, {title}: {16 - len(below)}/16" + (
                f"; below: {', '.join(below)}" if below else ""))
    return lines


def summarize(results: list[dict], reps: int) -> tuple[dict, dict]:
    """Mean progressive reward per (learner, stream) over the first ``reps`` repetitions,
    and each learner's R(T)/R(T/2) on the long problem, one per seed run."""
    values, growth = defaultdict(list), defaultdict(list)
    for r in results:
        if r["stream"] == "long":
            growth[r["name"]].append(r["regret"][1] / r["regret"][0])
        elif r["rep"] < reps:
            values[(r["name"], r["stream"])].append(r["progressive"])
    return {key: float(np.mean(v)) for key, v in values.items()}, growth


def mean_over(means: dict, name: str, streams) -> float:
    """A learner's mean over ``streams``."""
    return float(np.mean([means[(name, s)] for s in streams]))


def leave_one_out(means: dict, eligible: list[str]) -> dict[str, str]:
    """Per stream, the eligible learner of the best mean on the other streams."""
    return {s: max(eligible, key=lambda n: mean_over(means, n, [t for t in STREAMS if t != s]))
            for s in STREAMS}


def collect(path: pathlib.Path, penalties: dict, long_name: str, argv=None,
            description: str | None = None) -> tuple:
    """The runs of a script over `PENALTIES`' kind of learners (its ``--jobs``, ``--reps``):
    every (learner, stream, repetition), and ``long_name`` on the long problem's seeds,
    kept in ``path``; the runs and the repetitions."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    tasks = [(n, s, rep) for s in STREAMS for n in penalties for rep in range(args.reps)]
    tasks += [(long_name, "long", seed) for seed in LONG_SEEDS]
    results, _ = run_missing(path, tasks, functools.partial(run, penalties=penalties),
                             lambda r: (r["name"], r["stream"], r["rep"]), jobs=args.jobs)
    return results, args.reps


def report(results: list[dict], reps: int, speed: tuple[dict[str, float], list[float]]
           ) -> str:
    means, growth = summarize(results, reps)
    names = list(PENALTIES)
    largest = KNOWN_GROWTH | {n: max(g) for n, g in growth.items()
                              if len(g) == len(LONG_SEEDS)}
    eligible = [n for n in names if largest.get(n, np.inf) <= MAX_GROWTH]

    def mean(name, streams):
        return mean_over(means, name, streams)

    chosen = leave_one_out(means, eligible)
    lines = [
        "# Noisy rewards: the random-features model's ridge weight, fixed or chosen by GCV",
        "",
        f"- command: `{command_line()}`",
        f"- {stamp()}; {len(results)} runs",
        f"- protocol: the harness's, {reps} repetitions, progressive reward; learners and "
        "streams: the docstring of `bench/experiments/noisy_rewards.py`",
        "",
        "| stream | " + " | ".join(names) + " | chosen on the other 55 |",
        "|---|" + "---:|" * len(names) + "---|",
    ]
    groups = (("16 UCI streams", problems.UCI_STREAMS),
              ("20 unseen streams", unseen_streams.UNSEEN),
              ("their noisy variants", unseen_streams.NOISY_STREAMS))
    for s in STREAMS:
        best = max(means[(n, s)] for n in names)
        cells = [f"**{means[(n, s)]:.4f}**" if means[(n, s)] == best else f"{means[(n, s)]:.4f}"
                 for n in names]
        lines.append(f"| {s} | " + " | ".join(cells) + f" | {chosen[s]} |")
    for title, group in groups:
        lines.append(f"| mean, {title} | " + " | ".join(f"{mean(n, group):.4f}" for n in names)
                     + " | |")
    held_out = np.mean([means[(chosen[s], s)] for s in STREAMS])
    lines += [
        f"| **mean, all {len(STREAMS)}** | " + " | ".join(f"{mean(n, STREAMS):.4f}"
                                                      for n in names) + " | |",
        "", "## The long-horizon rule", "",
        "R(T)/R(T/2) at T = 200,000 on the realizable problem (K = 5, d = 10), seeds "
        f"{LONG_SEEDS[0]}-{LONG_SEEDS[-1]}, the largest: " + "; ".join(
            f"{n} {largest[n]:.2f}" for n in names if n in largest)
        + f" (the fixed penalties' from `docs/results/feature_ridge.md`; {GCV}'s seeds: "
        + ", ".join(f"{g:.2f}" for g in growth[GCV]) + f"). Eligible (every seed <= "
        f"{MAX_GROWTH}): {', '.join(eligible)}.",
        "", "## The choice by leaving one stream out", "",
        "Chosen on the other 55 streams, among the eligible: "
        + ", ".join(f"{n} on {list(chosen.values()).count(n)}" for n in eligible
                    if n in chosen.values())
        + f"; held-out mean {held_out:.4f} (`RegCB()`: {mean(DEFAULT, STREAMS):.4f}).",
    ]
    lines += peers_section(means, names)
    rates, chosen = speed
    lines += ["", "## Throughput", "",
              "The per-example API (`predict` then `learn`), the optimistic variant, on the "
              "first 16,000 rounds of clean letter (K = 26, `bench/experiments/throughput.py`'s"
              " stream), best of 5 interleaved runs: " + "; ".join(
                  f"{n} {v:,.0f} rounds/s ({v / rates[DEFAULT] - 1:+.1%})"
                  for n, v in rates.items()) + ". The spread between the fixed penalties, "
              "whose work is the same, is the machine's noise. What `l2=\"gcv\"` adds is its "
              f"choices (3 in 16,000 labels): {1000 * min(chosen):.1f}-"
              f"{1000 * max(chosen):.1f} ms a run, "
              f"{min(chosen) * rates[GCV] / SPEED_ROUNDS:.2%}-"
              f"{max(chosen) * rates[GCV] / SPEED_ROUNDS:.2%} of its loop's time."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    results, reps = collect(RESULTS, PENALTIES, GCV, argv, __doc__.split("\n\n")[0])
    REPORT.write_text(report(results, reps, speeds()), encoding="utf-8")
    print(REPORT.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
