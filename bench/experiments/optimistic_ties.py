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

Each rule of :data:`TIE_RULES` runs ``RegCB(ties=...)`` as
``bench/setting_study.py`` runs a setting's values (the 56 public streams, the
realizable problem and its long form; the optimistic variant: elimination has no such
ties), and is chosen as it chooses them.

From the repository root::

    .venv/bin/python -m bench.experiments.optimistic_ties [--jobs 2] [--reps 5]   # ~1 h

Runs are kept in ``results/optimistic_ties.jsonl`` (resumable); writes
``docs/results/optimistic_ties.md``.
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
from regcb_stream.rules import TIE_RULES

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(task: tuple) -> dict:
    """One (ties, stream, repetition): `setting_study.run`."""
    return setting_study.run("ties", task)


def report(rows: list[dict], command: str) -> str:
    means = setting_study.means(rows, "ties")
    largest = setting_study.growth(rows, "ties")
    held, chosen = setting_study.held_out(means, setting_study.eligible(largest, TIE_RULES))
    lines = [
        "# The optimistic rule's ties at the top of the reward range (`RegCB(ties=...)`)", "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs, {sum(r['seconds'] for r in rows):.0f} s of runs",
        "- protocol, streams and rule: the docstring of "
        "`bench/experiments/optimistic_ties.py`; `RegCB(ties=...)` with every other "
        f"default; `RegCB()`'s ties now: `{defaults.TIES!r}`"]
    lines += setting_study.eligibility_table(largest, TIE_RULES, "ties")
    lines += stream_table(means, TIE_RULES, held)
    lines += ["", "At or above `ties='shared'`: " + "; ".join(
        f"`{t}` on {sum(means[(t, s)] >= means[('shared', s)] for s in STREAMS)}/56 streams, "
        f"the first 500 rounds on "
        f"{sum(means[(t, s, 500)] >= means[('shared', s, 500)] for s in STREAMS)}/56"
        for t in TIE_RULES[1:]) + "."]
    lines.append("")
    for t in TIE_RULES[1:]:
        lines.append(f"- `{t}` minus `shared`, mean over the 56 streams (its standard error): "
                     + ", ".join(f"{label} {setting_study.difference(means, t, 'shared', rounds)}"
                                 for label, rounds in (("whole runs", None),
                                                       ("first 500 rounds", 500))))
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
    lines += setting_study.unseen_bars(means, TIE_RULES, lambda ties: f"`ties={ties!r}`")
    if chosen != defaults.TIES:
        lines += ["", f"`RegCB()`'s ties (`{defaults.TIES}`) are not the rule chosen: set "
                  "`TIES` in `regcb_stream/defaults.py`."]
    return "\n".join(lines) + "\n"


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
    rows, ran = run_missing(args.runs, setting_study.tasks(TIE_RULES, args.reps), run,
                            _task_of, args.jobs)
    print(f"{ran} runs", file=sys.stderr)
    text = report(rows, " ".join(["python -m bench.experiments.optimistic_ties",
                                  *(argv or sys.argv[1:])]))
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
