"""VW's tuned envelope on fresh repetitions: how much of ``RegCB()``'s distance to it is the
envelope's own selection.

``docs/results/unseen_streams.md`` scores VW's best explorer tuned per stream on the
repetitions it was chosen on: the best of 49 settings' means over repetitions 0-4, each an
estimate with its own noise, so the maximum is biased upward (the winner's curse), most
where the settings are close (streams near their ceiling, noisy rewards). A tuner who picks
that setting gets its true reward, not its best draw. Here each stream's winning setting (as
that report names it) and ``RegCB()`` run on :data:`FRESH` repetitions the choice never saw
(other shuffles, other draws of the noisy rewards), the harness's protocol; the comparison
there is unbiased.

From the repository root::

    .venv/bin/python -m bench.experiments.fresh_envelope [--jobs 2]   # ~15 min

Runs are kept in ``results/fresh_envelope.jsonl`` (resumable); writes
``docs/results/fresh_envelope.md``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
from collections import defaultdict

import numpy as np

from bench import setting_study
from bench.experiments import unseen_streams
from bench.provenance import stamp
from bench.runs import run_missing

ROOT = pathlib.Path(__file__).resolve().parents[2]
FRESH = range(5, 15)  # repetitions the tuned choice (repetitions 0-4) never saw
OURS = unseen_streams.DEFAULT


def winners() -> dict[str, tuple[str, float]]:
    """Per unseen stream, VW's winning setting and its mean on repetitions 0-4, as
    ``docs/results/unseen_streams.md`` reports them."""
    found = {}
    for line in setting_study.UNSEEN_REPORT.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        stream = cells[0].split(" ")[0]
        if line.startswith("|") and stream in unseen_streams.EVERY and "(VW " in cells[-1]:
            value, name = cells[-1].split(" ", 1)
            found[stream] = (name.strip("()"), float(value))
    return found


def run(task: tuple) -> dict:
    """One (learner, stream, repetition): `unseen_streams.run`."""
    return unseen_streams.run(task)


def _task_of(record: dict) -> tuple:
    return record["name"], record["stream"], record["rep"]


def report(rows: list[dict], command: str) -> str:
    chosen = winners()
    runs = defaultdict(dict)
    for r in rows:
        runs[(r["name"], r["stream"])][r["rep"]] = r["progressive"]
    lines = [
        "# VW's tuned envelope on fresh repetitions", "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs, {sum(r['seconds'] for r in rows):.0f} s of runs",
        "- protocol: the docstring of `bench/experiments/fresh_envelope.py`; repetitions "
        f"{FRESH.start}-{FRESH.stop - 1} of `bench/experiments/unseen_streams.py`'s streams "
        "(the harness's protocol)", "",
        "| stream | VW's winner (chosen on repetitions 0-4) | its mean there | its mean on "
        f"fresh repetitions | {OURS} on fresh repetitions | {OURS} minus the winner (standard "
        "error) |", "|---|---|---:|---:|---:|---:|"]
    counts = {"chosen": 0, "fresh": 0, "ahead": 0, "behind": 0}
    shrink = []
    for s in unseen_streams.EVERY:
        name, there = chosen[s]
        vw, ours = runs[(name, s)], runs[(OURS, s)]
        common = sorted(set(vw) & set(ours))
        d = np.array([ours[r] - vw[r] for r in common])
        fresh_vw, fresh_ours = np.mean([vw[r] for r in common]), np.mean([ours[r] for r in common])
        se = d.std(ddof=1) / np.sqrt(len(d))
        shrink.append(there - fresh_vw)
        counts["fresh"] += fresh_ours >= fresh_vw
        counts["ahead"] += d.mean() > 1.96 * se
        counts["behind"] += d.mean() < -1.96 * se
        lines.append(f"| {s} | {name} | {there:.4f} | {fresh_vw:.4f} | {fresh_ours:.4f} | "
                     f"{d.mean():+.4f} ({se:.4f}) |")
    n = len(unseen_streams.EVERY)
    lines += [
        "",
        f"- the winners' mean on the repetitions they were chosen on, minus their mean on fresh "
        f"ones: {np.mean(shrink):+.4f} over the {n} streams (the selection's upward bias)",
        f"- `{OURS}` at or above the winner on fresh repetitions: {counts['fresh']}/{n} streams "
        f"({counts['fresh'] / n:.0%}; issue 45's bar: 85 %)",
        f"- significantly ahead of the winner (z-test at 0.05, paired repetitions): "
        f"{counts['ahead']}/{n}; significantly behind: {counts['behind']}/{n}"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", default=str(ROOT / "results" / "fresh_envelope.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "fresh_envelope.md"))
    args = parser.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    chosen = winners()
    tasks = [(learner, s, rep) for rep in FRESH for s in unseen_streams.EVERY
             for learner in (chosen[s][0], OURS)]
    rows, ran = run_missing(args.runs, tasks, run, _task_of, args.jobs, context="spawn")
    print(f"{ran} runs", file=sys.stderr)
    text = report(rows, " ".join(["python -m bench.experiments.fresh_envelope",
                                  *(argv or sys.argv[1:])]))
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
