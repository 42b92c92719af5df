"""What forgetting (``RegCB(forget=gamma)``, ``regcb-stream --forget``) earns where rewards
drift, and what it costs where they do not.

The ridge oracles never forget by default: every label counts as much as the newest, so a
learner that has seen a lot follows a change slowly, if at all. With ``forget=gamma`` each
label's weight decays by ``gamma`` per label learned after it (the discounted ridge of
D-LinUCB, Russac et al. 2019). This script runs ``RegCB(forget=gamma)`` (the defaults
otherwise) for each ``gamma`` of :data:`FACTORS` under the harness's protocol (progressive
reward, 5 repetitions):

- on the four drifting streams of ``bench/experiments/unseen_streams.py`` (10,000 rounds each, in
  their order; a repetition is the generators' seed), next to VW's explorers at their
  defaults (their gradient steps forget the past by themselves) and River's
  ``bandit.LinUCBDisjoint()`` (a ridge per action that never forgets either);
- on the 32 stationary streams (the 16 UCI streams of ``docs/results/defaults.md`` and the 16 of
  ``docs/results/unseen_streams.md``), where forgetting can only cost.

The public streams are short (at most 49,097 rounds): a learner that forgets keeps a window
of about ``1 / (1 - gamma)`` labels, and where nothing drifts its regret grows linearly once
the stream is much longer than that. The script measures that price on the realizable
linear problem (K = 5, d = 10, ``regcb_stream.datasets.synthetic.LinearProblem``) over
:data:`LONG_ROUNDS` rounds: the cumulative regret of each factor at a few checkpoints.

It also times the cost of forgetting: letter's first 16,000 rounds through ``RegCB.play``
with and without it, in interleaved pairs in this process, the median ratio of the times.

From the repository root::

    .venv/bin/python -m bench.experiments.forgetting [--jobs 2] [--reps 5]   # ~25 min, 2 cores

Runs are kept in ``results/forgetting.jsonl`` (resumable); writes ``docs/results/forgetting.md``.
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np

from bench.experiments import unseen_streams as unseen  # the drifting and the unseen streams
from bench.harness import problems, protocol
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import stamp
from bench.runs import run_missing
from regcb_stream import RegCB, RidgeOracle
from regcb_stream.datasets.synthetic import played_regret

ROOT = pathlib.Path(__file__).resolve().parents[2]
FACTORS = (1.0, 0.9999, 0.9995, 0.999, 0.998)
PEERS = (*unseen.VW_DEFAULTS, unseen.LINUCB)
UCI = problems.UCI_STREAMS
STATIONARY = (*UCI, *unseen.STREAMS)
TIMED_ROUNDS, TIMED_PAIRS, TIMED_FACTOR = 16_000, 5, 0.999
LONG_ROUNDS, LONG_CHECKPOINTS = 200_000, (10_000, 20_000, 50_000, 100_000, 200_000)


def name_of(forget: float) -> str:
    return "RegCB()" if forget == 1.0 else f"RegCB(forget={forget:g})"


FORGETFUL = {name_of(forget): forget for forget in FACTORS}


def load_problem(stream: str, rep: int) -> problems.Problem:
    if stream in UCI:
        return problems.load_problem(stream, rep)
    return unseen.load_problem(stream, rep)


def run(task: tuple) -> dict:
    """Progressive reward of one (learner, stream, repetition)."""
    name, stream, rep = task
    problem = load_problem(stream, rep)
    if name in FORGETFUL:
        algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
        algo.learner = RegCB(seed=rep, forget=FORGETFUL[name])
    else:
        algo = unseen._algorithm(name, problem.n_actions, rep)
    record = protocol.run_protocol(algo, problem, rep)
    return {"name": name, "stream": stream, "rep": rep, "progressive": record["progressive"],
            "seconds": record["seconds"]}


def timing(pairs: int = TIMED_PAIRS) -> tuple[float, float, float]:
    """Seconds of ``RegCB().play`` and of ``RegCB(forget=TIMED_FACTOR).play`` on letter's
    first rounds (medians over interleaved pairs), and the median of the pairs' ratios."""
    problem = problems.load_problem("letter", 0, max_train=TIMED_ROUNDS)
    X, R = problem.train.X, problem.train.R
    actions = list(range(problem.n_actions))

    def seconds(forget: float) -> float:
        learner = RegCB(seed=0, forget=forget)
        start = time.perf_counter()
        learner.play(X, actions, lambda rows, i: R[rows, i])
        return time.perf_counter() - start

    seconds(1.0)  # (warm: imports, first calls)
    times = np.array([(seconds(1.0), seconds(TIMED_FACTOR)) for _ in range(pairs)])
    return (float(np.median(times[:, 0])), float(np.median(times[:, 1])),
            float(np.median(times[:, 1] / times[:, 0])))


def long_regret(rounds: int = LONG_ROUNDS, checkpoints=LONG_CHECKPOINTS
                ) -> dict[str, dict[int, float]]:
    """Each factor's cumulative regret at ``checkpoints`` on the realizable linear problem
    (``RegCB(seed=0, forget=gamma).play``, the same draws)."""
    out = {}
    for name, forget in FORGETFUL.items():
        regret = played_regret(RegCB(seed=0, forget=forget), rounds)
        out[name] = {t: float(regret[t - 1]) for t in checkpoints if t <= rounds}
    return out


# -- report -------------------------------------------------------------------------------

def table(mean: dict, names, streams, label: str) -> list[str]:
    lines = [f"| {label} | " + " | ".join(names) + " |",
             "|---|" + "---:|" * len(names)]
    for stream in streams:
        best = max(mean[(n, stream)] for n in names)
        cells = [f"**{mean[(n, stream)]:.4f}**" if mean[(n, stream)] == best
                 else f"{mean[(n, stream)]:.4f}" for n in names]
        lines.append(f"| {stream} | " + " | ".join(cells) + " |")
    lines.append("| **mean** | " + " | ".join(
        f"{np.mean([mean[(n, s)] for s in streams]):.4f}" for n in names) + " |")
    return lines


def report(results: list[dict], reps: int, timed: tuple[float, float, float] | None,
           seconds: float, regret: dict[str, dict[int, float]] | None = None) -> str:
    mean = unseen.mean_rewards(results, reps)
    names = list(FORGETFUL)
    lines = [
        "# Forgetting: what it earns where rewards drift, what it costs where they do not",
        "",
        "- command: `python -m bench.experiments.forgetting --jobs 2`",
        f"- {stamp()}; {len(results)} runs, {seconds:.0f} s of runs",
        f"- protocol: the harness's (`docs/results/paper_evaluation.md`), {reps} "
        "repetitions, progressive reward; `RegCB(forget=gamma)` is `RegCB()` with each "
        "label's weight decayed by gamma per label learned after it (`RegCB()` itself never "
        "forgets)",
        "",
        "## Drifting streams (`docs/results/unseen_streams.md`: 10,000 rounds in order)",
        "",
        *table(mean, names + list(PEERS), unseen.DRIFTING, "stream"),
        "",
        "## Stationary streams: the cost",
        "",
        "Mean progressive reward, and the largest loss on one stream against `RegCB()`:",
        "",
        "| learner | 16 UCI streams | 16 unseen streams | all 32 | largest loss (stream) |",
        "|---|---:|---:|---:|---|",
    ]
    for name in names:
        losses = {s: mean[("RegCB()", s)] - mean[(name, s)] for s in STATIONARY}
        worst = max(losses, key=losses.get)
        lines.append(
            f"| {name} | {np.mean([mean[(name, s)] for s in UCI]):.4f} | "
            f"{np.mean([mean[(name, s)] for s in unseen.STREAMS]):.4f} | "
            f"{np.mean([mean[(name, s)] for s in STATIONARY]):.4f} | "
            f"{losses[worst]:+.4f} ({worst}) |")
    lines += ["", "Per stream:", "", *table(mean, names, STATIONARY, "stream")]
    if regret is not None:
        points = list(next(iter(regret.values())))
        lines += [
            "", "## A long stationary stream: the price of a fixed window",
            "",
            f"Cumulative regret on the realizable linear problem (K = 5, d = 10, "
            f"{points[-1]:,} rounds, seed 0), at each checkpoint:",
            "",
            "| learner | " + " | ".join(f"{t:,}" for t in points) + " |",
            "|---|" + "---:|" * len(points),
            *(f"| {name} | " + " | ".join(f"{r:.0f}" for r in values.values()) + " |"
              for name, values in regret.items()),
        ]
    if timed is not None:
        plain, forgetful, ratio = timed
        lines += [
            "", "## Time",
            "",
            f"letter's first {TIMED_ROUNDS:,} rounds through `RegCB.play` (one process, "
            f"{TIMED_PAIRS} interleaved pairs, medians): `RegCB()` {plain:.2f} s, "
            f"`RegCB(forget={TIMED_FACTOR:g})` {forgetful:.2f} s: **{ratio:.2f}x** the time "
            "(a forgetting step inverts every model afresh, every "
            f"{RidgeOracle(forget=TIMED_FACTOR).discount_every} labels at "
            f"{TIMED_FACTOR:g}).",
        ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-timing", dest="timing", action="store_false")
    parser.add_argument("--results", default=str(ROOT / "results" / "forgetting.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "forgetting.md"))
    args = parser.parse_args(argv)
    tasks = [(n, s, r) for n in FORGETFUL for s in (*unseen.DRIFTING, *STATIONARY)
             for r in range(args.reps)]
    tasks += [(n, s, r) for n in PEERS for s in unseen.DRIFTING for r in range(args.reps)]
    results, _ = run_missing(args.results, tasks, run, unseen._task_of, args.jobs, context="spawn",
                             initializer=unseen._single_thread)
    timed = timing() if args.timing else None
    text = report(results, args.reps, timed, sum(r["seconds"] for r in results),
                  long_regret())
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
