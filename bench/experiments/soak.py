"""Soak run: a million generated examples through ``regcb-stream`` on stdin.

Single-line ``--cb_explore 10`` examples with 8 dense features, labelled by a uniform
logging policy on a linear problem, are written to the command's stdin as they are
generated; predictions go to ``/dev/null``. Every 100,000 examples the command's resident
memory (VmRSS) and peak (VmHWM) are read from ``/proc``; after warm-up the memory must stay
flat, and the run must end with status 0.

From the repository root::

    .venv/bin/python -m bench.experiments.soak [--examples 1000000]

Writes ``docs/results/soak.md`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import pathlib
import subprocess
import sys
import time

import numpy as np

from regcb_stream.datasets.synthetic import LinearProblem

ROOT = pathlib.Path(__file__).resolve().parents[2]
K, DIM, CHUNK = 10, 8, 10_000


def chunks(n: int, seed: int = 0):
    """VW text of ``n`` logged examples, ``CHUNK`` at a time."""
    problem = LinearProblem.make(n_actions=K, dim=DIM, seed=seed)
    rng = np.random.default_rng(seed)
    for start in range(0, n, CHUNK):
        X, _, R = problem.sample(min(CHUNK, n - start), seed=seed + 1 + start)
        actions = rng.integers(K, size=len(X))
        yield "".join(
            f"{a + 1}:{1 - r[a]:g}:0.1 |x " + " ".join(f"f{j}:{v:.4f}" for j, v in enumerate(x))
            + "\n"
            for x, r, a in zip(X, R, actions)
        )


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in kB."""
    fields = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def soak(n: int) -> tuple[list, int, float]:
    command = [sys.executable, "-m", "regcb_stream", "--cb_explore", str(K), "--regcb",
               "-p", "/dev/null", "--quiet"]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, text=True)
    samples, fed, start = [], 0, time.perf_counter()
    for text in chunks(n):
        process.stdin.write(text)
        fed += CHUNK
        if fed % 100_000 == 0:
            process.stdin.flush()
            samples.append((min(fed, n), memory(process.pid)))
    process.stdin.close()
    status = process.wait()
    return samples, status, time.perf_counter() - start


def report(samples: list, status: int, seconds: float, n: int) -> str:
    lines = [
        "# Soak run: `regcb-stream` on a million examples",
        "",
        f"Command: `.venv/bin/python -m bench.experiments.soak --examples {n}` "
        f"({datetime.date.today()}; {seconds:.0f} s; exit status {status}).",
        "",
        "Memory of the command while it reads stdin (sampled as each 100,000th example is "
        "written to its pipe; the pipe holds at most a few hundred unread examples):",
        "",
        "| examples | RSS (MB) | peak RSS (MB) |",
        "|---|---|---|",
    ]
    for fed, mem in samples:
        lines.append(f"| {fed:,} | {mem['VmRSS'] / 1024:.1f} | {mem['VmHWM'] / 1024:.1f} |")
    if len(samples) >= 2:
        first, last = samples[0][1]["VmHWM"], samples[-1][1]["VmHWM"]
        lines += ["", f"Peak RSS at {samples[0][0]:,}: {first / 1024:.1f} MB; at "
                      f"{samples[-1][0]:,}: {last / 1024:.1f} MB "
                      f"(growth {100 * (last - first) / first:+.1f}%)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=1_000_000)
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "soak.md"))
    args = parser.parse_args()
    samples, status, seconds = soak(args.examples)
    text = report(samples, status, seconds, args.examples)
    pathlib.Path(args.output).write_text(text)
    print(text)
    sys.exit(status)


if __name__ == "__main__":
    main()
