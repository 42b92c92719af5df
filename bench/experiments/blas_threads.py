"""Why the command and the ridge oracle limit BLAS to one thread: a fresh inverse of the
joint ADF model's size (D = 459, letter with ``-q sa``) with OpenBLAS's default threads
against one thread, interleaved, median of ``--reps``; on an idle machine, and beside
one busy process per core up to all of them (a small machine is rarely idle: a
pipeline's other end, a test run).

From the repository root::

    .venv/bin/python -m bench.experiments.blas_threads [--dim 459] [--reps 20]

Writes ``docs/results/blas_threads.md`` and prints it.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits


def measure(a: np.ndarray, reps: int) -> tuple[float, float]:
    """Median milliseconds of an inverse with the default threads and with one."""
    times: dict[str, list[float]] = {"default": [], "one": []}
    for _ in range(reps):
        for name in times:
            with threadpool_limits(1 if name == "one" else None, "blas"):
                start = time.perf_counter()
                np.linalg.inv(a)
                times[name].append(time.perf_counter() - start)
    return tuple(statistics.median(times[name]) * 1e3 for name in ("default", "one"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=459)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--output", default=str(pathlib.Path(__file__).resolve().parents[2]
                                                / "docs" / "results" / "blas_threads.md"))
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2 * args.dim, args.dim))
    a = x.T @ x + np.eye(args.dim)
    threads = max(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas")
    cells = []
    for n_busy in range(os.cpu_count() + 1):
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(n_busy)]
        try:
            default, one = measure(a, args.reps)
        finally:
            for process in busy:
                process.kill()
                process.wait()
        busy_text = f"{n_busy} busy process" + ("" if n_busy == 1 else "es")
        cells.append(f"beside {busy_text}, {default:.1f} ms with OpenBLAS's {threads} threads "
                     f"and {one:.1f} ms on one")
    text = (f"# One BLAS thread or OpenBLAS's default\n\n"
            f"- {args.dim}×{args.dim} inverse on {os.cpu_count()} cores (median of {args.reps}; "
            f"`python -m bench.experiments.blas_threads --dim {args.dim} --reps {args.reps}`): "
            + "; ".join(cells) + ".\n")
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
