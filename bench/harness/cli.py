"""Command line of the benchmark sweep: ``python -m bench [--quick]``.

The full sweep (16 UCI streams and the ranking sample, 5 repetitions, 8 parameter values
per family) appends its runs to ``results/harness/results.jsonl`` and writes
``docs/results/paper_evaluation.md`` and ``docs/results/figures/*.png``. ``--quick`` runs a
tiny subset (3 streams, 300 training rounds, 200 holdout rows, 2 repetitions, 2 parameter
values per family) into ``results/harness-quick/`` in well under a minute. Run it again and
finished runs are skipped: an interrupted sweep resumes.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import subprocess
import sys
from collections import Counter

from bench.harness import algorithms, plots, problems, report, runner

ROOT = pathlib.Path(__file__).resolve().parents[2]  # the repository
REPORT = ROOT / "docs" / "results" / "paper_evaluation.md"  # and its figures/ beside it
QUICK_STREAMS = ("vehicle", "letter-noise", "yahoo")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="tiny subset, < 60 s")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--scheduler", metavar="ADDRESS|local",
                   help="run on a Dask cluster: a scheduler's address, or local (--jobs "
                        "workers on 127.0.0.1); needs the dask extra")
    p.add_argument("--out", type=pathlib.Path, help="directory of results.jsonl")
    p.add_argument("--report", type=pathlib.Path, help="markdown report to write")
    p.add_argument("--figures", type=pathlib.Path, help="directory of the PNG figures")
    p.add_argument("--streams", nargs="+", choices=problems.STREAMS)
    p.add_argument("--families", nargs="+", choices=sorted(algorithms.FAMILIES))
    p.add_argument("--reps", type=int, help="repetitions (default 5; 2 with --quick)")
    p.add_argument("--estimate", action="store_true", help="print the plan and exit")
    p.add_argument("--report-only", action="store_true", help="only rebuild the report")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def configure(args: argparse.Namespace) -> dict:
    """Paths and the task list of a command line."""
    quick = args.quick
    out = args.out or ROOT / "results" / ("harness-quick" if quick else "harness")
    report_path = args.report or (out / "results.md" if quick else REPORT)
    figures = args.figures or report_path.parent / "figures"
    families = args.families or [
        f for f in algorithms.FAMILIES
        if f not in algorithms.DEFAULT_EXCLUDED]
    streams = args.streams or (QUICK_STREAMS if quick else problems.STREAMS)
    reps = range(args.reps or (2 if quick else 5))
    tasks = runner.make_tasks(streams, reps, families, params_per_family=2 if quick else None,
                              max_train=300 if quick else None,
                              max_hold=200 if quick else None)
    return {"results": out / "results.jsonl", "report": report_path, "figures": figures,
            "tasks": tasks}


def print_plan(tasks: list, jobs: int) -> None:
    """Runs and estimated seconds per family."""
    runs, cost = Counter(), Counter()
    for task in tasks:
        runs[task.family] += 1
        cost[task.family] += runner.estimate(task)
    for family in runs:
        print(f"{family:20s} {runs[family]:6d} runs ~{cost[family]:8.0f} s")
    total = sum(cost.values())
    print(f"{'total':20s} {sum(runs.values()):6d} runs ~{total:8.0f} s of work, "
          f"~{total / max(jobs, 1) / 60:.0f} min on {jobs} workers")


def write_report(config: dict, meta: dict) -> None:
    """Rebuild the markdown report and figures from the results file."""
    records = runner.load_records(config["results"])
    if not records:
        print("no results yet", file=sys.stderr)
        return
    agg = report.ag.average(records)
    plots.all_figures(agg, report.cdf_families(agg), config["figures"])
    text = report.render(records, meta)
    rel = os.path.relpath(config["figures"], config["report"].parent)
    config["report"].parent.mkdir(parents=True, exist_ok=True)
    config["report"].write_text(text.replace("](figures/", f"]({rel}/"), encoding="utf-8")
    print(f"wrote {config['report']} and figures in {config['figures']}")


def update_meta(path: pathlib.Path, session: dict) -> dict:
    """Append a session to the sweep's meta file; return the totals for the report."""
    meta_path = path.with_suffix(".meta.json")
    sessions = json.loads(meta_path.read_text())["sessions"] if meta_path.exists() else []
    if session["ran"]:
        sessions.append(session)
        meta_path.write_text(json.dumps({"sessions": sessions}, indent=1))
    wall = sum(s["seconds"] for s in sessions)
    return {"wall": wall, "jobs": session["jobs"], "nproc": os.cpu_count(),
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "code": _git_head(),
            "command": sessions[-1]["command"] if sessions else session["command"],
            "sessions": sessions}


def _git_head() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        return f"commit {out.stdout.strip()} (plus uncommitted changes if any)"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None) -> int:
    args = parse_args(argv)
    config = configure(args)
    if args.estimate:
        print_plan(config["tasks"], args.jobs)
        return 0
    session = {"ran": 0, "seconds": 0.0, "jobs": args.jobs,
               "command": "python -m bench " + " ".join(sys.argv[1:] or [])}
    if not args.report_only:
        done = runner.run_sweep(config["tasks"], config["results"], args.jobs,
                                progress=not args.no_progress, scheduler=args.scheduler)
        session.update(done, date=datetime.datetime.now().isoformat(timespec="seconds"))
        print(f"ran {done['ran']} runs in {done['seconds']:.0f} s "
              f"({done['skipped']} already done) -> {config['results']}")
    write_report(config, update_meta(config["results"], session))
    return 0
