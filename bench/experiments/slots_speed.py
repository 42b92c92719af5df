"""Whole-process speed of ``regcb-stream --ccb_explore_adf`` against VW on the same file.

A logged CCB stream (issue 47's bar: ``--examples`` examples, 3 slots, 10 actions): a
shared line of 5 numbers, actions with an id and one of 3 kinds, slots with their own
feature, each slot's outcome drawn uniformly among what the earlier slots left; and the
same with a user id among 100,000 on each shared line (feature names that rarely repeat,
as with real users: no row layout is reused). Each tool
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


def write_log(path: pathlib.Path, n: int, seed: int = 0, ids: bool = False) -> None:
    """``n`` logged CCB examples (see the module's docstring; ``ids``: with user ids)."""
    rng = np.random.default_rng(seed)
    users = rng.normal(size=(n, SHARED))
    with path.open("w") as out:
        for u in users:
            user = f"id{rng.integers(100_000)} " if ids else ""
            lines = ["ccb shared |User " + user
                     + " ".join(f"u{i}:{v:.4f}" for i, v in enumerate(u))]
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
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        for ids in (False, True):
            data = pathlib.Path(folder) / "ccb.dat"
            write_log(data, args.examples, ids=ids)
            rows[ids] = pair(FLAGS, data, "stdin", pathlib.Path(folder) / "p.txt", args.reps)
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
        "| shared line | ratio VW / ours | bar | ours MiB | VW MiB |",
        "|---|---:|---|---:|---:|",
        *(f"| {'a user id and 5 numbers' if ids else '5 numbers'} | {row['ratio']:.2f} | "
          f"{'' if ids else '1.0 ' + ('PASS' if row['ratio'] >= 1.0 else 'FAIL')} | "
          f"{row['ours_mib']:.1f} | {row['vw_mib']:.1f} |" for ids, row in rows.items()),
        "",
    ])
    REPORT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
