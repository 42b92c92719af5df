"""Whole-process speed of ``regcb-stream --ccb_explore_adf`` against VW on the same file.

A logged CCB stream (issue 47's bar: ``--examples`` examples, 3 slots, 10 actions): a
shared line of 5 numbers, actions with an id and one of 3 kinds, slots with their own
feature, each slot's outcome drawn uniformly among what the earlier slots left. Each tool
runs with its default flags and ``--ccb_explore_adf``, ``-p``; ours reads the file from
stdin, VW with ``-d`` (`command_speed.pair`: alternating pairs of whole processes,
start-up included, the median ratio VW / ours and peak memory). The bar: ratio >= 1.0.

From the repository root::

    .venv/bin/python -m bench.experiments.slots_speed [--examples 20000] [--reps 3]

Writes ``docs/results/slots_speed.md`` and prints it.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import tempfile
import time

import numpy as np

from bench.experiments.command_speed import pair
from bench.provenance import command_line, stamp

ROOT = pathlib.Path(__file__).resolve().parents[2]
REPORT = ROOT / "docs" / "results" / "slots_speed.md"
FLAGS = "--ccb_explore_adf"
SLOTS, ACTIONS, SHARED = 3, 10, 5


def write_log(path: pathlib.Path, n: int, seed: int = 0) -> None:
    """``n`` logged CCB examples (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    users = rng.normal(size=(n, SHARED))
    with path.open("w") as out:
        for u in users:
            lines = ["ccb shared |User " + " ".join(f"u{i}:{v:.4f}" for i, v in enumerate(u))]
            lines += [f"ccb action |Action a{i} k{i % 3}" for i in range(ACTIONS)]
            for j, action in enumerate(rng.permutation(ACTIONS)[:SLOTS]):
                cost = float(action == int(u[0] > 0) + 2 * j)
                lines.append(f"ccb slot {action}:{cost:g}:{1 / (ACTIONS - j):.6f} "
                             f"|Slot s{j}")
            out.write("\n".join(lines) + "\n\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        data = pathlib.Path(folder) / "ccb.dat"
        write_log(data, args.examples)
        row = pair(FLAGS, data, "stdin", pathlib.Path(folder) / "p.txt", args.reps)
    verdict = "PASS" if row["ratio"] >= 1.0 else "FAIL"
    text = "\n".join([
        "# `regcb-stream --ccb_explore_adf` against VW: whole processes, same file",
        "",
        f"- command: `{command_line()}`",
        f"- {stamp()}; {os.cpu_count()} cores, Python {platform.python_version()}, load "
        f"average {os.getloadavg()[0]:.2f} at the end; {time.perf_counter() - start:.0f} s",
        f"- {args.examples:,} logged CCB examples, {SLOTS} slots, {ACTIONS} actions; default "
        f"flags and `{FLAGS}`; ours from stdin, VW with `-d`; median of {args.reps} "
        "alternating pairs of whole processes (start-up included)",
        "",
        "| ratio VW / ours | bar | ours MiB | VW MiB |",
        "|---:|---|---:|---:|",
        f"| {row['ratio']:.2f} | 1.0 {verdict} | {row['ours_mib']:.1f} | "
        f"{row['vw_mib']:.1f} |",
        "",
    ])
    REPORT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
