"""Whole-process speed and memory of ``regcb-stream`` against VW on the same logged file.

Each measurement is a pair of processes, run one after the other in alternating order:
``python -m regcb_stream FLAGS -p OUT --quiet`` reading the file from stdin (``< FILE``) or
with ``-d FILE``, and VW (``vowpalwabbit.Workspace("FLAGS -d FILE -p OUT --quiet")`` in a
fresh interpreter) with the same flags. Start-up counts for both. The ratio is VW's wall
time over ours, pair by pair; the table gives the median of ``--reps`` pairs, and each
tool's median peak resident memory (GNU ``/usr/bin/time``).

Streams: ``letter`` (K = 26, 16 features) logged by a uniform policy, in VW's single-line
and ADF formats, at each ``--examples`` size (beyond 20,000, further shuffles of letter
follow); the scaling grid uses synthetic Gaussian contexts with linear rewards (d features,
K actions, ``--scaling-examples`` examples). Flags are the defaults of each tool beyond
those naming the format and the explorer.

From the repository root::

    .venv/bin/python -m bench.experiments.command_speed [--examples 20000 200000] [--reps 3]

Writes ``docs/results/command_speed.md`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import vowpalwabbit

from regcb_stream.datasets.logs import write_logged_stream
from regcb_stream.datasets.uci import long_stream

ROOT = pathlib.Path(__file__).resolve().parents[2]
VW = "import sys; from vowpalwabbit import Workspace; Workspace(sys.argv[1]).finish()"
LETTER = [  # (format, flags, bar): issue 46's, each row twice VW's speed
    ("single", "--cb_explore 26 --regcb", 2.0),
    ("single", "--cb_explore 26 --regcb --regcbopt", 2.0),
    ("adf", "--cb_explore_adf -q sa --regcb", 2.0),
    ("adf", "--cb_explore_adf -q sa --regcb --regcbopt", 2.0),
]
SCALING_BAR = 1.5  # issue 46's, at every point of the grid
SCALING = [(16, 2), (16, 10), (16, 50), (16, 200), (10, 10), (100, 10)]  # (d, K)


def pair(flags: str, data: pathlib.Path, via: str, out: pathlib.Path, reps: int) -> dict:
    """Medians over ``reps`` alternating pairs: ratio VW/ours, and each one's peak MiB."""
    ours = [sys.executable, "-m", "regcb_stream", *flags.split(), "-p", str(out), "--quiet"]
    stdin = data if via == "stdin" else None
    if via == "-d":
        ours += ["-d", str(data)]
    vw = [sys.executable, "-c", VW, f"{flags} -d {data} -p {out} --quiet"]
    ratios, memory = [], {"ours": [], "vw": []}
    for rep in range(reps):
        order = [("ours", ours, stdin), ("vw", vw, None)]
        times = {}
        for name, command, source in order if rep % 2 else order[::-1]:
            times[name], peak = timed(command, source)
            memory[name].append(peak)
        ratios.append(times["vw"] / times["ours"])
    return {"ratio": statistics.median(ratios), "ours_mib": statistics.median(memory["ours"]),
            "vw_mib": statistics.median(memory["vw"])}


def timed(command: list[str], stdin: pathlib.Path | None) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of one process (GNU time's ``%M``: measured
    from a small parent, so the fork of this interpreter does not count)."""
    with open(stdin or os.devnull, "rb") as source:
        start = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", *command], stdin=source,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr[-500:]}")
    return wall, int(done.stderr.split()[-1]) / 1024


def letter(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rounds of letter: successive shuffles (seeds 0, 1, ...)."""
    return long_stream("letter", n)


def synthetic(n: int, d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian contexts, rewards linear in them (clipped to [0, 1]) per action."""
    rng = np.random.default_rng(d * 1000 + k)
    X = rng.normal(size=(n, d))
    R = np.clip(0.5 + 0.2 * X @ rng.normal(size=(d, k)) / np.sqrt(d), 0.0, 1.0)
    return X, R


def startup(folder: pathlib.Path, reps: int) -> dict:
    """Median wall seconds of each tool on an empty input."""
    empty = folder / "empty.dat"
    empty.write_text("")
    out = folder / "empty.p"
    ours = [sys.executable, "-m", "regcb_stream", "--cb_explore", "26", "-p", str(out),
            "--quiet"]
    vw = [sys.executable, "-c", VW, f"--cb_explore 26 --regcb -d {empty} -p {out} --quiet"]
    return {name: statistics.median(timed(command, empty)[0] for _ in range(reps))
            for name, command in (("ours", ours), ("vw", vw))}


def measure(sizes: list[int], scaling_n: int, reps: int, folder: pathlib.Path) -> dict:
    out = folder / "predictions.txt"
    results = {"letter": [], "scaling": [], "startup": startup(folder, max(reps, 5))}
    for n in sizes:
        X, R = letter(n)
        files = {}
        for fmt in ("single", "adf"):
            files[fmt] = folder / f"letter_{fmt}_{n}.dat"
            write_logged_stream(files[fmt], X, R, adf=fmt == "adf", seed=0)
        for fmt, flags, bar in LETTER:
            for via in ("stdin", "-d"):
                row = pair(flags, files[fmt], via, out, reps)
                results["letter"].append({"n": n, "format": fmt, "flags": flags, "via": via,
                                          "bar": bar, **row})
                print(results["letter"][-1], flush=True)
    for d, k in SCALING:
        data = folder / f"synthetic_{d}_{k}.dat"
        write_logged_stream(data, *synthetic(scaling_n, d, k), adf=False, seed=0)
        row = pair(f"--cb_explore {k} --regcb", data, "stdin", out, reps)
        results["scaling"].append({"d": d, "k": k, **row})
        print(results["scaling"][-1], flush=True)
    return results


def report(results: dict, args, seconds: float) -> str:
    sizes = " ".join(map(str, args.examples))
    lines = [
        "# `regcb-stream` against VW: whole processes, same file, same flags",
        "",
        f"Command: `.venv/bin/python -m bench.experiments.command_speed --examples {sizes} --reps "
        f"{args.reps} --scaling-examples {args.scaling_examples}` ({datetime.date.today()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
        f"vowpalwabbit {vowpalwabbit.__version__}; {seconds:.0f} s in all).",
        "",
        "Ratio = VW's wall time / ours, median of "
        f"{args.reps} alternating pairs of whole processes (start-up included). VW reads "
        "the file with `-d`; we read it from stdin (`< FILE`) or with `-d`. Peak memory: "
        "median resident maximum of each process.",
        "",
        "## Logged letter (K = 26), default flags",
        "",
        "| examples | format | flags | our input | ratio | bar | ours MiB | VW MiB | "
        "memory ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["letter"]:
        verdict = "PASS" if row["ratio"] >= row["bar"] else "FAIL"
        lines.append(
            f"| {row['n']:,} | {row['format']} | `{row['flags']}` | {row['via']} | "
            f"{row['ratio']:.2f} | {row['bar']} {verdict} | {row['ours_mib']:.1f} | "
            f"{row['vw_mib']:.1f} | {row['ours_mib'] / row['vw_mib']:.2f} |")
    lines += [
        "",
        f"## Scaling: `--cb_explore K --regcb`, {args.scaling_examples:,} synthetic "
        "examples from stdin",
        "",
        "| d | K | ratio | bar | ours MiB | VW MiB |",
        "|---|---|---|---|---|---|",
    ]
    for row in results["scaling"]:
        verdict = "PASS" if row["ratio"] >= SCALING_BAR else "FAIL"
        lines.append(f"| {row['d']} | {row['k']} | {row['ratio']:.2f} | {SCALING_BAR} "
                     f"{verdict} | {row['ours_mib']:.1f} | {row['vw_mib']:.1f} |")
    start = results["startup"]
    verdict = "PASS" if start["ours"] <= start["vw"] else "FAIL"
    lines += ["", "## Start-up", "",
              f"Empty input, median wall time: ours {start['ours']:.3f} s, VW "
              f"{start['vw']:.3f} s (bar: ours <= VW's, {verdict})."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--scaling-examples", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "command_speed.md"))
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        results = measure(args.examples, args.scaling_examples, args.reps,
                          pathlib.Path(folder))
    text = report(results, args, time.perf_counter() - start)
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
