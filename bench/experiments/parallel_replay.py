"""Epoch-synchronous parallel replay (`regcb_stream.stream.parallel`): identical to one process
for 1, 2, 4 and 8 workers, how much faster on 2, and a cost model for more.

Issue 19's bars: state and decisions bitwise identical to one process for 1, 2, 4 and 8
workers on the ``sqrt2`` and ``doubling`` schedules; on this 2-core machine, 2 workers
learn a 1,000,000-event log at least 1.7 times as fast as one; a cost model fitted to
measured per-epoch communication and compute predicts 8, 32 and 128 workers.

The log: ``--events`` rounds of letter (its repetitions, `uci.long_stream`) played
uniformly at random, stored as ``.npy`` files (`parallel.NpyLog`, memory-mapped where a
part is read). The learner: ``RegCB(schedule=...)``, the defaults otherwise (optimistic,
ridge, mellowness 1e-3).

- Identity: for each schedule, the one-process replay (`parallel.replay` without a
  client: every epoch by ``learner.replay``) against local Dask clusters of 1, 2, 4 and 8
  worker processes: SHA-256 of the distributions' bytes and of the final model file.
- Speed (``sqrt2``, the paper's schedule, and ``doubling``): one process against a local
  cluster of 2 single-threaded workers (started once, before the timings; its start-up
  is reported apart), ``--pairs`` interleaved pairs, the order alternating; the verdict
  is the median of the pairs' ratios. Both produce the same output: every distribution,
  the final state.
- Cost model: each epoch's wall time, from runs on 1 and 2 workers with 1, 2, 4 and 8
  parts per epoch, fitted by least squares (see the report).

From the repository root::

    .venv/bin/python -m bench.experiments.parallel_replay [--events 1000000] [--pairs 5]

Writes ``docs/results/parallel_replay.md`` and prints it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import platform
import statistics
import tempfile
import time

import dask
import numpy as np

from bench.provenance import stamp
from regcb_stream import RegCB, persist
from regcb_stream.datasets import uci
from regcb_stream.stream import parallel
from regcb_stream.stream.cluster import connect

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKERS = (1, 2, 4, 8)
PREDICT = (8, 32, 128)


def run(log, n: int, schedule: str, client=None, tasks=None) -> tuple:
    """One replay: (seconds, digest of the distributions and the state, epoch trace)."""
    learner, trace = RegCB(schedule=schedule), []
    start = time.perf_counter()
    pmf = parallel.replay(learner, log, n, client=client, tasks=tasks, trace=trace)
    seconds = time.perf_counter() - start
    digest = hashlib.sha256(pmf.tobytes() + persist.dumps(learner, {})).hexdigest()[:16]
    return seconds, digest, trace


def identity(log, n: int) -> dict:
    """Digests by schedule: one process, then each number of workers."""
    found = {}
    for schedule in ("sqrt2", "doubling"):
        found[schedule] = {"one process": run(log, n, schedule)[1]}
        for workers in WORKERS:
            with connect("local", workers) as client:
                found[schedule][workers] = run(log, n, schedule, client)[1]
            print(schedule, workers, found[schedule], flush=True)
    return found


def speed(log, n: int, pairs: int) -> dict:
    """Interleaved one-process and 2-worker replays of each schedule, and the traces of
    ``sqrt2`` for the model."""
    times = {s: {"one": [], "two": []} for s in ("sqrt2", "doubling")}
    traces = []
    began = time.perf_counter()
    with connect("local", 2) as client:
        started = time.perf_counter() - began
        run(log, n, "sqrt2", client)  # (warm: the workers' imports)
        for schedule, backends in times.items():
            for pair in range(pairs):
                for backend in ("one", "two") if pair % 2 == 0 else ("two", "one"):
                    seconds, _, trace = run(log, n, schedule,
                                            client if backend == "two" else None)
                    backends[backend].append(seconds)
                    if schedule == "sqrt2":
                        traces.append((1 if backend == "one" else 2, trace))
                    print(schedule, pair, backend, round(seconds, 2), flush=True)
        for tasks in (4, 8):  # more parts than workers: the per-part cost
            traces.append((2, run(log, n, "sqrt2", client, tasks)[2]))
    with connect("local", 1) as client:
        run(log, n, "sqrt2", client)
        traces.append((1, run(log, n, "sqrt2", client)[2]))
    return {"times": times, "traces": traces, "startup": started}


def fit(traces: list) -> dict:
    """The cost model, from every epoch of the traces (runs on ``workers`` workers).

    Compute: the seconds the parts report (their state loaded, their slice read, decided
    and summed), per label. Communication: the rest of a spread epoch's wall time, its
    parts' compute taken out (the slowest part's with a part per worker, else their sum
    over the workers), fitted by least squares as ``a + b parts + d labels`` (``b``: a
    part's dispatch and result, ``d``: the driver's receiving and adding per label). The
    driver's own epochs: seconds per label.
    """
    rows, comm, labels, busy, local = [], [], 0, 0.0, []
    for workers, trace in traces:
        for n, parts, _, seconds, in_parts in trace:
            if parts:
                labels, busy = labels + n, busy + sum(in_parts)
                rows.append([1.0, parts, n])
                comm.append(seconds - (max(in_parts) if parts <= workers
                                       else sum(in_parts) / workers))
            elif workers == 1:
                local.append((n, seconds))
    if len(rows) < 3:
        raise SystemExit(f"parallel_replay: {len(rows)} epochs were spread over the workers, "
                         "the cost model needs 3 (an epoch of fewer than "
                         f"{parallel.MIN_SPREAD:,} labels is replayed by the driver): "
                         "give more --events")
    a, b, d = np.linalg.lstsq(np.array(rows), np.array(comm), rcond=None)[0]
    return {"epoch": a, "task": b, "driver": d, "compute": busy / labels,
            "local": sum(s for _, s in local) / sum(n for n, _ in local)}


def predict(model: dict, trace: list, workers: int) -> float:
    """Seconds of a replay with the epochs of ``trace`` on ``workers`` workers."""
    total = 0.0
    for labels, parts, *_ in trace:
        if parts:
            total += (model["epoch"] + model["task"] * workers
                      + model["compute"] * labels / workers + model["driver"] * labels)
        else:
            total += model["local"] * labels
    return total


def report(args, found: dict, measured: dict, model: dict, seconds: float) -> str:
    speedups = {schedule: [a / b for a, b in zip(t["one"], t["two"])]
                for schedule, t in measured["times"].items()}
    speedup = {schedule: statistics.median(r) for schedule, r in speedups.items()}
    same = all(len(set(d.values())) == 1 for d in found.values())
    trace = next(trace for workers, trace in measured["traces"] if workers == 2)
    spread = [t for t in trace if t[1]]
    lines = [
        "# Parallel replay: identical to one process, and how much faster (issue 19)",
        "",
        f"Command: `.venv/bin/python -m bench.experiments.parallel_replay --events {args.events} "
        f"--pairs {args.pairs}`",
        "",
        f"{stamp()}; machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}, dask {dask.__version__}; {seconds:.0f} s in all.",
        "",
        f"Log: {args.events:,} rounds of letter (26 actions, 16 features) played uniformly "
        "at random, `.npy` files memory-mapped by each part (`parallel.NpyLog`). Learner: "
        "`RegCB(schedule=...)`, the defaults otherwise. Epochs of fewer than "
        f"{parallel.MIN_SPREAD:,} labels are replayed by the driver; here "
        f"{len(spread)} of the {len(trace)} `sqrt2` epochs are spread, "
        f"{sum(t[0] for t in spread) / args.events:.1%} of the labels.",
        "",
        "## Identity: the distributions and the final model file, byte for byte",
        "",
        f"**{'PASS' if same else 'FAIL'}**: SHA-256 (first 16 hex digits) of every "
        "distribution's bytes followed by the final model file's bytes.",
        "",
        "| schedule | one process | " + " | ".join(f"{w} worker{'s' * (w > 1)}"
                                                   for w in WORKERS) + " |",
        "|---" * (2 + len(WORKERS)) + "|",
    ]
    for schedule, digests in found.items():
        lines.append(f"| `{schedule}` | " + " | ".join(
            f"`{digests[k]}`" for k in ("one process", *WORKERS)) + " |")
    lines += [
        "",
        "## Speed: 2 workers against one process",
        "",
        f"**{'PASS' if min(speedup.values()) >= 1.7 else 'FAIL'}** (bar 1.7): 2 workers "
        "replay the log "
        + " and ".join(f"**{speedup[s]:.2f}** times as fast as one process with `{s}`"
                       for s in speedup)
        + f" (medians of {args.pairs} interleaved pairs; each pair's ratio: "
        + "; ".join(f"`{s}` {', '.join(f'{r:.2f}' for r in speedups[s])}"
                    for s in speedup) + ").",
        "",
        "| schedule | one process (`parallel.replay`, no client), s | local cluster, 2 "
        "workers, s |",
        "|---|---|---|",
        *(f"| `{s}` | {', '.join(f'{x:.2f}' for x in t['one'])} (median "
          f"{statistics.median(t['one']):.2f}) | {', '.join(f'{x:.2f}' for x in t['two'])} "
          f"(median {statistics.median(t['two']):.2f}) |"
          for s, t in measured["times"].items()),
        "",
        f"Not in the times: starting the local cluster ({measured['startup']:.1f} s, once "
        "per session) and writing the log. Both runs give every distribution (the "
        "`(n, 26)` array) and the final state.",
        "",
        "## Cost model",
        "",
        "Fitted to every spread epoch of the runs above (1 and 2 workers, and 4 and 8 "
        "parts on 2 workers). Each part reports its own seconds (compute: its state "
        "loaded, its slice read, decided and summed); the rest of an epoch's wall time is "
        "communication and the driver's work, fitted by least squares:",
        "",
        "    epoch seconds = a + b * parts + c * labels / workers + d * labels",
        "",
        f"- a = {model['epoch'] * 1e3:.2f} ms per epoch (the model file made, the pieces "
        "added, the rebuild),",
        f"- b = {model['task'] * 1e3:.2f} ms per part (dispatch, and its result back),",
        f"- c = {model['compute'] * 1e6:.3f} µs per label in a part (measured: decide 26 "
        "actions, sum the label),",
        f"- d = {model['driver'] * 1e6:.3f} µs per label on the driver (receiving the "
        "distributions' non-zero entries),",
        f"- and {model['local'] * 1e6:.3f} µs per label for the epochs the driver replays "
        "itself.",
        "",
        "Predicted seconds for this log, one part per worker (1 and 2 workers are the "
        "fit's own points; measured medians above):",
        "",
        "| workers | " + " | ".join(str(w) for w in (1, 2, *PREDICT)) + " |",
        "|---" * (3 + len(PREDICT)) + "|",
        "| predicted s | " + " | ".join(f"{predict(model, trace, w):.2f}"
                                        for w in (1, 2, *PREDICT)) + " |",
        "",
        "What limits it: the epochs are sequential (each needs the state the one before "
        "built), so `a` and `b W` are paid once per epoch whatever the workers, and `d` "
        "and the driver's own short epochs do not shrink with workers either. Measured "
        "on loopback, with the driver and both workers sharing 2 cores: across a network "
        "`b` and `d` would have to be refitted. The 2-core machine cannot check 8 or more "
        "workers.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "parallel_replay.md"))
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        log = parallel.NpyLog.write(folder, *uci.uniform_log("letter", args.events))
        n = len(log)
        found = identity(log, n)
        measured = speed(log, n, args.pairs)
    model = fit(measured["traces"])
    text = report(args, found, measured, model, time.perf_counter() - start)
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
