"""Is the sweep on a local 2-worker Dask cluster as fast as the 2-process runner, with the
same results?

Issue 19's bar: the sweep on a local 2-worker cluster is no slower than today's 2-process
runner and gives the same results.

Tasks: every ``--stride``-th run of the full sweep's repetition 0 (the task list of
``python -m bench``, its default families and streams, in its order), so that
the mix of families and streams is the sweep's. Each backend runs them all into a fresh
results file: ``runner.run_sweep(tasks, path, jobs=2)`` (a ``multiprocessing`` pool of 2
processes) and ``runner.run_sweep(tasks, path, jobs=2, scheduler="local")`` (a Dask
``LocalCluster`` of 2 single-threaded worker processes on 127.0.0.1, started and stopped
by the call). Timed: the whole call, wall clock (cluster start-up included), ``--pairs``
pairs, the order alternating; the verdict is the median of the pairs' ratios. Results:
every record of every run equal apart from its timings.

From the repository root::

    .venv/bin/python -m bench.experiments.dask_sweep [--pairs 2] [--stride 16]

Writes ``docs/results/dask_sweep.md`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import tempfile
import time

import dask

from bench.harness import runner
from bench.harness.cli import configure, parse_args
from bench.provenance import code_version

ROOT = pathlib.Path(__file__).resolve().parents[2]


def sweep_sample(stride: int) -> list:
    """Every ``stride``-th run of the full sweep's repetition 0."""
    tasks = configure(parse_args(["--reps", "1"]))["tasks"]
    return tasks[::stride]


def records(path: pathlib.Path) -> dict:
    """The records by run id, without their timings."""
    out = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        record.pop("seconds"), record.pop("cpu_seconds")
        out[record["run_id"]] = record
    return out


def measure(tasks: list, pairs: int, folder: pathlib.Path) -> dict:
    times = {"pool": [], "dask": []}
    same, count = True, 0
    for pair in range(pairs):
        order = ("pool", "dask") if pair % 2 == 0 else ("dask", "pool")
        found = {}
        for backend in order:
            path = folder / f"{backend}{pair}.jsonl"
            start = time.perf_counter()
            runner.run_sweep(tasks, path, jobs=2, progress=False,
                             scheduler="local" if backend == "dask" else None)
            times[backend].append(time.perf_counter() - start)
            found[backend] = records(path)
            print(pair, backend, round(times[backend][-1], 1), flush=True)
        same &= found["pool"] == found["dask"]
        count = len(found["pool"])
    return {"times": times, "same": same, "records": count}


def report(results: dict, args, tasks: list, seconds: float) -> str:
    pool, cluster = results["times"]["pool"], results["times"]["dask"]
    ratios = [d / p for d, p in zip(cluster, pool)]
    ratio = statistics.median(ratios)
    verdict = "PASS" if ratio <= 1 and results["same"] else "FAIL"
    return "\n".join([
        "# The sweep on a local Dask cluster against the 2-process runner (issue 19)",
        "",
        f"Command: `.venv/bin/python -m bench.experiments.dask_sweep --pairs {args.pairs} "
        f"--stride {args.stride}`",
        "",
        f"Code: {code_version()}; date: {datetime.date.today()}; machine: {os.cpu_count()} "
        f"cores, {platform.machine()}, Python {platform.python_version()}, dask "
        f"{dask.__version__}; {seconds:.0f} s in all.",
        "",
        "Bar: the sweep on a local 2-worker cluster is no slower than today's 2-process "
        "runner and gives the same results.",
        "",
        f"**Verdict: {verdict}** - the local Dask cluster takes {ratio:.2f} times as long as "
        f"the 2-process runner (median of {args.pairs} pairs: "
        f"{', '.join(f'{r:.2f}' for r in ratios)}); its {results['records']} records are "
        f"{'identical' if results['same'] else 'NOT identical'} to the runner's apart from "
        "their timings.",
        "",
        f"Tasks: {len(tasks)} runs, every {args.stride}th run of the full sweep's "
        "repetition 0 (`python -m bench`'s task list: its families and streams "
        f"in its proportions; {len({t.family for t in tasks})} families, "
        f"{len({t.stream for t in tasks})} streams). Each backend runs them into a fresh "
        "results file; the whole call is timed, cluster start-up included; the order "
        "alternates between pairs.",
        "",
        "| backend | wall s (each pair) | median s |",
        "|---|---|---|",
        f"| 2-process runner (`--jobs 2`) | {', '.join(f'{t:.1f}' for t in pool)} | "
        f"{statistics.median(pool):.1f} |",
        f"| local Dask cluster (`--jobs 2 --scheduler local`) | "
        f"{', '.join(f'{t:.1f}' for t in cluster)} | {statistics.median(cluster):.1f} |",
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--stride", type=int, default=16, help="run every stride-th task")
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "dask_sweep.md"))
    args = parser.parse_args()
    tasks = sweep_sample(args.stride)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        results = measure(tasks, args.pairs, pathlib.Path(folder))
    text = report(results, args, tasks, time.perf_counter() - start)
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
