"""The random-features model's budget (``RegCB(mellowness=...)``) under its ridge penalty
chosen by GCV, chosen on the 56 public streams.

The random-features class's mellowness (3e-3, ``docs/results/feature_ridge.md``) was chosen
with the penalty fixed at 1, where a smaller budget let the regret grow almost linearly on
the long realizable problem (1.67 to 1.79 at 200,000 rounds for 1e-3 and 3e-4). The penalty
is now chosen by each learner from its labels (``l2="gcv"``, ``docs/results/noisy_rewards.md``),
and the streams where ``RegCB()`` trails VW's tuned envelope are all noisy ones where VW's
winner explores little (mellowness 1e-7 or 1e-8, or epsilon 1e-8). Each value of
:data:`MELLOWNESS` runs ``RegCB(mellowness=...)`` as ``bench/setting_study.py``
runs a setting's values (the 56 public streams, the realizable problem and its long form)
and is chosen as it chooses them.

From the repository root::

    .venv/bin/python -m bench.experiments.feature_budget [--jobs 2] [--reps 5]   # ~1 h

Runs are kept in ``results/feature_budget.jsonl`` (resumable); writes
``docs/results/feature_budget.md``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

import numpy as np

from bench import setting_study
from bench.experiments.noisy_rewards import peers_section
from bench.experiments.radial_features import STREAMS, stream_table
from bench.provenance import stamp
from bench.runs import run_missing
from regcb_stream import defaults

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLASS = "random features"
MELLOWNESS = (3e-3, 1e-3, 6e-4)  # the first: the class's default before this study
BEFORE = MELLOWNESS[0]


def run(task: tuple) -> dict:
    """One (mellowness, stream, repetition): `setting_study.run`."""
    return setting_study.run("mellowness", task)


def label(m: float) -> str:
    return f"`mellowness={m:g}`"


def report(rows: list[dict], command: str) -> str:
    means = setting_study.means(rows, "mellowness")
    largest = setting_study.growth(rows, "mellowness")
    ok = setting_study.eligible(largest, MELLOWNESS)
    held, chosen = setting_study.held_out(means, ok)
    lines = [
        "# The random-features model's budget under its GCV penalty "
        "(`RegCB(mellowness=...)`)", "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs, {sum(r['seconds'] for r in rows):.0f} s of runs",
        "- protocol, streams and rule: the docstrings of `bench/experiments/feature_budget.py`"
        " and `bench/setting_study.py`; `RegCB(mellowness=...)` with every other "
        f"default; the class's mellowness now: {defaults.MODEL_CLASSES[CLASS].mellowness:g}"]
    lines += setting_study.eligibility_table(largest, MELLOWNESS, "mellowness",
                                              lambda m: f"{m:g}")
    lines += stream_table(means, MELLOWNESS, held, label, lambda m: f"{m:g}")
    lines.append("")
    for m in MELLOWNESS[1:]:
        lines.append(f"- {label(m)} minus {label(BEFORE)}, mean over the 56 streams (its "
                     "standard error): " + ", ".join(
                         f"{what} {setting_study.difference(means, m, BEFORE, rounds)}"
                         for what, rounds in (("whole runs", None), ("first 500 rounds", 500),
                                              ("first 2,000 rounds", 2000))))
    lines += ["", f"Chosen on all 56 streams among the eligible: **{label(chosen)}**; leaving "
              f"each stream's data set out, it is chosen on "
              f"{sum(h == chosen for h in held.values())} of 56 (held-out mean "
              f"{np.mean([means[(held[s], s)] for s in STREAMS]):.4f}, against "
              f"{np.mean([means[(BEFORE, s)] for s in STREAMS]):.4f} for {label(BEFORE)})."]
    if chosen != BEFORE:
        gains = sorted(STREAMS, key=lambda s: means[(chosen, s)] - means[(BEFORE, s)])
        lines += ["", f"{label(chosen)} against {label(BEFORE)}, per stream: the largest "
                  "gains " + ", ".join(f"{s} {means[(chosen, s)] - means[(BEFORE, s)]:+.4f}"
                                       for s in gains[:-4:-1])
                  + "; the largest losses " + ", ".join(
                      f"{s} {means[(chosen, s)] - means[(BEFORE, s)]:+.4f}" for s in gains[:3])
                  + "."]
    lines += peers_section(means, MELLOWNESS, label)
    lines += setting_study.unseen_bars(means, MELLOWNESS, label)
    if chosen != defaults.MODEL_CLASSES[CLASS].mellowness:
        lines += ["", f"The class's mellowness ({defaults.MODEL_CLASSES[CLASS].mellowness:g}) is "
                  "not the value chosen: set it in `regcb_stream/defaults.py`."]
    return "\n".join(lines) + "\n"


def _task_of(record: dict) -> tuple:
    return record["mellowness"], record["stream"], record["rep"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--runs", default=str(ROOT / "results" / "feature_budget.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "feature_budget.md"))
    args = parser.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    rows, ran = run_missing(args.runs, setting_study.tasks(MELLOWNESS, args.reps), run,
                            _task_of, args.jobs)
    print(f"{ran} runs", file=sys.stderr)
    text = report(rows, " ".join(["python -m bench.experiments.feature_budget",
                                  *(argv or sys.argv[1:])]))
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
