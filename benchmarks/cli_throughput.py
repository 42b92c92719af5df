"""Throughput of the ``regcb-stream`` command against VW reading the same logged file.

The logged ``letter`` stream (20,000 examples, K=26, uniform logging policy, permutation
seed 0) is written in both of VW's formats. Each tool reads the whole file and writes its
predictions; both run in this process (``regcb_stream.cli.main`` and
``vowpalwabbit.Workspace("-d FILE ...")``), so interpreter start-up counts for neither.
Wall time, best of ``--reps`` interleaved repetitions. Bars (issue 3): ratio (examples/s of
ours over VW's) >= 1.0 on the single-line stream and >= 0.5 on ADF.

From the repository root::

    .venv/bin/python benchmarks/cli_throughput.py [--examples 20000] [--reps 3]

Writes ``docs/cli_throughput.md`` and prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import os
import pathlib
import platform
import tempfile
import time

import numpy as np
import vowpalwabbit
from vowpalwabbit import Workspace

from regcb_stream import cli
from regcb_stream.bench.datasets import bandit_stream
from regcb_stream.bench.vw_logs import write_logged_stream

ROOT = pathlib.Path(__file__).resolve().parents[1]
VW_FLAGS = {"single": "--cb_explore 26 --regcb", "adf": "--cb_explore_adf -q sa --regcb"}
OURS = [  # (format, extra flags); online is the default schedule, ridge the default oracle
    ("single", "--schedule online"),
    ("single", "--schedule sqrt2"),
    ("single", "--schedule doubling"),
    ("single", "--schedule online --oracle vw"),
    ("adf", "--schedule online"),
    ("adf", "--schedule sqrt2"),
    ("adf", "--schedule doubling"),
    ("adf", "--schedule online --oracle vw"),
    ("adf", "--schedule sqrt2 --oracle vw"),
    ("adf", "--schedule doubling --oracle vw"),
]


def time_vw(path: pathlib.Path, fmt: str, out: pathlib.Path) -> float:
    start = time.perf_counter()
    Workspace(f"{VW_FLAGS[fmt]} -d {path} -p {out} --quiet").finish()
    return time.perf_counter() - start


def time_ours(path: pathlib.Path, fmt: str, extra: str, out: pathlib.Path) -> float:
    argv = [*VW_FLAGS[fmt].split(), *extra.split(), "-d", str(path), "-p", str(out), "--quiet"]
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):  # the out-of-range-cost warning
        status = cli.main(argv)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"regcb-stream {' '.join(argv)} exited with {status}")
    return elapsed


def measure(n: int, reps: int, folder: pathlib.Path) -> dict:
    X, R = bandit_stream("letter", noisy=False, seed=0)
    files = {}
    for fmt in ("single", "adf"):
        files[fmt] = folder / f"letter_{fmt}.dat"
        write_logged_stream(files[fmt], X[:n], R[:n], adf=fmt == "adf", seed=0)
    best: dict = {}
    out = folder / "predictions.txt"
    for _ in range(reps):
        for fmt in ("single", "adf"):
            key = ("vw", fmt, VW_FLAGS[fmt])
            best[key] = min(best.get(key, np.inf), time_vw(files[fmt], fmt, out))
        for fmt, extra in OURS:
            key = ("ours", fmt, extra)
            best[key] = min(best.get(key, np.inf), time_ours(files[fmt], fmt, extra, out))
    return best


def report(best: dict, n: int, reps: int, seconds: float) -> str:
    lines = [
        "# `regcb-stream` throughput against VW on the same logged file",
        "",
        f"Command: `.venv/bin/python benchmarks/cli_throughput.py --examples {n} --reps {reps}`"
        f" ({datetime.date.today()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}, vowpalwabbit "
        f"{vowpalwabbit.__version__}; {seconds:.0f} s in all).",
        "",
        f"Logged `letter` stream, {n} examples, K=26, uniform logging. Both tools run in one "
        "process, read the file and write `-p` predictions; best wall time of "
        f"{reps} interleaved repetitions.",
        "",
        "| tool | format | flags | examples/s | ratio to VW |",
        "|---|---|---|---|---|",
    ]
    verdicts = {}
    for (tool, fmt, flags), secs in best.items():
        vw = best[("vw", fmt, VW_FLAGS[fmt])]
        ratio = vw / secs
        shown = flags if tool == "vw" else f"{VW_FLAGS[fmt]} {flags}"
        lines.append(f"| {tool} | {fmt} | `{shown}` | {n / secs:,.0f} | {ratio:.2f} |")
        if tool == "ours":
            verdicts[fmt] = max(verdicts.get(fmt, 0.0), ratio)
    bars = {"single": 1.0, "adf": 0.5}
    lines += ["", "Bars (best of our configurations per format):", ""]
    for fmt, bar in bars.items():
        verdict = "PASS" if verdicts[fmt] >= bar else "FAIL"
        lines.append(f"- {fmt}: ratio {verdicts[fmt]:.2f} against the bar {bar} -> {verdict}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--output", default=str(ROOT / "docs" / "cli_throughput.md"))
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        best = measure(args.examples, args.reps, pathlib.Path(folder))
    text = report(best, args.examples, args.reps, time.perf_counter() - start)
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
