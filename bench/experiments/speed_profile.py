"""Where each microsecond of an example goes, path by path, against a floor.

Each path runs once under Linux ``perf`` (sampling at ``--frequency`` Hz, whole process):
the command with its default flags on letter from stdin (single-line ``--cb_explore 26
--regcb``, ADF ``--cb_explore_adf -q sa --regcb``, DSJSON ``--dsjson`` on VW's
``dsjson_cb.json`` repeated, CCB ``--ccb_explore_adf`` on `slots_speed`'s stream of 3 slots
and 10 actions), and ``RegCB()``'s Python API on letter's arrays (per example:
``predict`` then ``learn``; in blocks: ``predict_many`` then ``learn_many`` per epoch of the
``sqrt2`` schedule). Every sample is put in a stage by the function it fell in (`STAGES`),
and a stage's samples over the examples give its microseconds per example. Start-up is
measured apart: the same process on an empty input (its samples are taken off the stages).

The floor beside each path: start-up, an interpreter that imports numpy (the least the
command can import; VW's start-up beside it); parsing, reading the file and finding its
lines (touching each byte once); arithmetic, the multiply-adds the model needs per example
(`multiply_adds`) at the rate of numpy's single-thread matrix product on this machine, and
at a quarter of it: our kernels give the same numbers on every machine, so they use neither
fused multiply-adds nor vectors wider than four doubles. Beside each command path, VW's
whole process with the same flags on the same file, and what its bar (twice VW's speed,
issue 46's; VW's speed for CCB, issue 47's) leaves for an example after our start-up.

From the repository root (needs ``perf``)::

    .venv/bin/python -m bench.experiments.speed_profile [--examples 20000]

Writes ``docs/results/speed_profile.md`` and prints it.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench.experiments.command_speed import VW, letter
from bench.experiments.dsjson_speed import repeat_real
from bench.experiments.slots_speed import ACTIONS, SHARED, SLOTS, write_log
from regcb_stream.datasets.logs import write_logged_stream

ROOT = pathlib.Path(__file__).resolve().parents[2]
K, D_CONTEXT, D_RANDOM = 26, 16, 64  # letter's actions and features; RegCB()'s random ones

#: stage -> patterns of the symbols (function names) whose samples it takes, in order: the
#: first stage whose pattern matches a symbol takes it
STAGES = {
    "output (-p lines, progress)": r"format_block|py_format|PyUnicode_Format|float_repr|"
                                   r"_Py_dg_dtoa|PyOS_double_to_string",
    "parsing": r"py_scan|py_adf|py_lines|line_texts|parse_number|hash_name|py_hashes|"
               r"py_labels|py_merge|py_slot|py_known|layout_fill|dsjson|json|_scan",
    "features (random features, crosses)": r"cosine|__cos|__sin|sincos|cross",
    "decisions (bounds, widths, draws)": r"moments|shared_residual|split_row|group_sums|decide|"
                                         r"decision|candidate|draw|^dot|gather_dot|weigh|"
                                         r"auto_|quadratic|predict_|block_rows",
    "learning (Gram, inverse updates)": r"gram_add|rank_one|learn|block_update|credit|"
                                        r"bounded_",
    "refits and the penalty choice (LAPACK, BLAS)": r"dgemm|dtrsm|dsyrk|dpotr|dsyev|"
                                                    r"dlasr|dsteqr|dlarf|dlaed|dgemv|"
                                                    r"ddot|daxpy|dcopy|dscal|dger|blas|lapack|"
                                                    r"kernel_",
    "numpy's glue (array calls, copies, indexing)": r"PyArray|npy|ufunc|DOUBLE_|LONG_|"
                                                    r"_aligned|_contig|mapiter|array_|"
                                                    r"strided|einsum|sort|^_Py_Array",
    "Python's interpreter (the loop's own code)": r"^_?Py|^_Py|frame|dict|tuple|list|"
                                                  r"unicode|long_|float_|object|gc_|"
                                                  r"visit_|siphash|method|vectorcall|slot_",
    "memory and the kernel (malloc, copies, I/O)": r".*",
}


def multiply_adds(path: str) -> int:
    """The multiply-adds the default model needs per example on letter.

    The random-features model (arrays, single-line numeric features): ``D = 1 + d + 64``
    columns per action; a decision is ``K`` quadratic forms (each pair of columns once) and
    predictions, a label the Gram row, ``A^-1 x`` and the rank-one update, the features
    ``d x 64``. ADF with ``-q sa``: one joint model whose rows touch ``s = 1 + d`` shared
    columns and a group of ``b = 1 + d`` (the action's feature and its crosses); a decision
    is the shared part once and each action's ``s b + b (b + 1) / 2 + s + b``, a label the
    touched Gram block and the blocks' update, ``O((s + b)^2)``. DSJSON: the same blocks
    with the file's features. CCB: each slot's rows over the pool (``c = SHARED + 2``
    context columns: the shared line, the slot's feature and its position; 2 of an action;
    their crosses) decided, and each slot's label a rank-one update of the joint model's
    inverse over its ``D`` columns (every name of the stream and their crosses)."""
    if path == "CCB":
        context, own = SHARED + 2, 2
        row = 1 + context + own + context * own
        dim = 1 + SHARED + 2 * SLOTS + ACTIONS + 3 + (SHARED + 2 * SLOTS) * (ACTIONS + 3)
        return SLOTS * ACTIONS * (row * (row + 1) // 2 + row) + SLOTS * (dim * row + dim**2)
    if path in ("single-line", "Python, per example", "Python, in blocks"):
        dim = 1 + D_CONTEXT + D_RANDOM
        decide = K * (dim * (dim + 1) // 2 + dim)
        learn = dim * dim + 2 * dim * dim
        return decide + learn + D_CONTEXT * D_RANDOM
    s = b = 1 + D_CONTEXT
    if path == "DSJSON":  # dsjson_cb.json: 2 actions, ~6 features a line
        s, b, actions = 4, 3, 2
    else:
        actions = K
    decide = s * (s + 1) // 2 + actions * (s * b + b * (b + 1) // 2 + s + b)
    learn = 3 * (s + b) ** 2
    return decide + learn


def wall(command: list[str], stdin: pathlib.Path | None, reps: int = 3) -> float:
    """Median wall seconds of ``reps`` runs of one process (not profiled; for the ratios
    to VW, each tool is timed in the same stretch of the run)."""
    runs = []
    for _ in range(reps):
        with open(stdin or os.devnull, "rb") as source:
            start = time.perf_counter()
            subprocess.run(command, stdin=source, stdout=subprocess.DEVNULL, check=True)
            runs.append(time.perf_counter() - start)
    return sorted(runs)[reps // 2]


def perf_samples(command: list[str], stdin: pathlib.Path | None, frequency: int,
                 folder: pathlib.Path) -> collections.Counter:
    """Samples per stage of one process under ``perf record``."""
    data = folder / "perf.data"
    with open(stdin or os.devnull, "rb") as source:
        subprocess.run(["perf", "record", "-q", "-F", str(frequency), "-o", str(data), "--",
                        *command], stdin=source, stdout=subprocess.DEVNULL, check=True,
                       stderr=subprocess.DEVNULL)
    report = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children",
                             "-F", "sample,sym", "--sort", "sym"],
                            capture_output=True, text=True, check=True).stdout
    stages = collections.Counter()
    patterns = [(stage, re.compile(pattern)) for stage, pattern in STAGES.items()]
    for line in report.splitlines():
        match = re.match(r"\s*(\d+)\s+\[[.k]\]\s+(\S+)", line)
        if match:
            symbol = match.group(2).split(".")[0]
            stage = next(s for s, p in patterns if p.search(symbol))
            stages[stage] += int(match.group(1))
    return stages


def python_api(kind: str, n: int) -> list[str]:
    """A process that runs ``RegCB()`` over letter's first ``n`` rounds through the API."""
    loop = {
        "per example": "run_per_example(X, R, 'elimination', None, 'online')",
        "in blocks": "run_vectorized(X, R, 'elimination', None, 'sqrt2')",
    }[kind]
    code = ("from bench.experiments.throughput import run_per_example, run_vectorized\n"
            f"from bench.experiments.command_speed import letter\nX, R = letter({n})\n{loop}")
    return [sys.executable, "-c", code]


def files(folder: pathlib.Path, n: int) -> dict[str, pathlib.Path]:
    X, R = letter(n)
    out = {}
    for fmt in ("single", "adf"):
        out[fmt] = folder / f"letter_{fmt}.dat"
        write_logged_stream(out[fmt], X, R, adf=fmt == "adf", seed=0)
    out["dsjson"] = folder / "events.json"
    repeat_real(out["dsjson"], n)
    out["ccb"] = folder / "ccb.dat"
    write_log(out["ccb"], n)
    return out


def machine_rates(data: dict[str, pathlib.Path]) -> dict:
    """The floors' rates: numpy's single-thread matrix product (multiply-adds per second),
    the time to read a file and find its lines (per byte), the start-up of an interpreter
    that imports numpy and of VW's."""
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).random((600, 600))
    with threadpool_limits(1):
        a @ a
        start = time.perf_counter()
        for _ in range(10):
            a @ a
        rate = 10 * 600**3 / (time.perf_counter() - start)
    seconds, size = [], 0
    for path in data.values():
        start = time.perf_counter()
        text = path.read_bytes()
        text.count(b"\n")
        seconds.append(time.perf_counter() - start)
        size += len(text)

    return {"multiply_adds_per_s": rate, "seconds_per_byte": sum(seconds) / size,
            "numpy_startup": wall([sys.executable, "-c", "import numpy"], None, 5),
            "vw_startup": wall([sys.executable, "-c", VW,
                                f"--cb_explore 26 --regcb -d {os.devnull} --quiet"], None, 5)}


def measure(n: int, frequency: int, folder: pathlib.Path) -> dict:
    data = files(folder, n)
    out = folder / "predictions.txt"
    command = [sys.executable, "-m", "regcb_stream"]
    paths = {  # name -> (our flags or the API's loop, stdin, VW's flags (None: no VW run),
        # the bar: times VW's speed)
        "single-line": ("--cb_explore 26 --regcb", data["single"], "--cb_explore 26 --regcb",
                        2),
        "ADF": ("--cb_explore_adf -q sa --regcb", data["adf"],
                "--cb_explore_adf -q sa --regcb", 2),
        "DSJSON": ("--dsjson", data["dsjson"], "--cb_explore_adf --dsjson", 2),
        "CCB": ("--ccb_explore_adf", data["ccb"], "--ccb_explore_adf", 1),
        "Python, per example": ("per example", None, None, 2),
        "Python, in blocks": ("in blocks", None, None, 2),
    }
    rows = {}
    for name, (spec, stdin, vw_flags, bar) in paths.items():
        if stdin:  # (start-up: an empty input; the API's: one round)
            cmd = start_cmd = [*command, *spec.split(), "-p", str(out), "--quiet"]
        else:
            cmd, start_cmd = python_api(spec, n), python_api(spec, 1)
        empty = perf_samples(start_cmd, None, frequency, folder)
        full = perf_samples(cmd, stdin, frequency, folder)
        stages = {stage: max(full[stage] - empty[stage], 0) / frequency / n * 1e6
                  for stage in STAGES}
        whole, startup = wall(cmd, stdin), wall(start_cmd, None)
        vw = vw_flags and wall([sys.executable, "-c", VW,
                                f"{vw_flags} -d {stdin} -p {out} --quiet"], None)
        rows[name] = {"stages": stages, "wall": whole, "startup": startup, "bar": bar,
                      "per_example": (whole - startup) / n * 1e6, "vw": vw,
                      "bytes": stdin.stat().st_size / n if stdin else 0.0,
                      "multiply_adds": multiply_adds(name)}
        print(name, rows[name], flush=True)
    return {"rows": rows, "rates": machine_rates(data), "n": n}


def report(results: dict, args, seconds: float) -> str:
    rates, rows, n = results["rates"], results["rows"], results["n"]
    lines = [
        "# Where each microsecond goes: the profile of every path, and its floor",
        "",
        f"Command: `.venv/bin/python -m bench.experiments.speed_profile --examples {n}` "
        f"({datetime.date.today()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}, load average "
        f"{os.getloadavg()[0]:.2f} at the end; {seconds:.0f} s in all). Letter (K = 26, "
        f"d = 16) logged by a uniform policy, {n:,} examples; DSJSON: VW's `dsjson_cb.json` "
        "repeated; CCB: `slots_speed`'s stream (3 slots, 10 actions). Default flags; "
        "`perf record` samples of the whole process, each put in the "
        "stage of the function it fell in (`STAGES` in the script), start-up's samples (the "
        "same process on an empty input) taken off. The whole-process times are medians of "
        "3 runs without the profiler: the stages' sum and them differ by the machine's "
        "drift between the runs (a shared machine); the shares are the steadier figure.",
        "",
        f"Machine rates behind the floors: numpy's single-thread matrix product "
        f"{rates['multiply_adds_per_s'] / 1e9:.1f} G multiply-adds/s (our kernels' ceiling, "
        "without fused multiply-adds and with four lanes, is a quarter of it: "
        f"{rates['multiply_adds_per_s'] / 4e9:.1f} G/s); reading a file and finding its "
        f"lines {rates['seconds_per_byte'] * 1e9:.2f} ns a byte; start-up of an interpreter "
        f"that imports numpy {rates['numpy_startup']:.3f} s, VW's (Python, `import "
        f"vowpalwabbit`, an empty run) {rates['vw_startup']:.3f} s.",
        "",
    ]
    for name, row in rows.items():
        arithmetic = row["multiply_adds"] / rates["multiply_adds_per_s"] * 1e6
        parse = row["bytes"] * rates["seconds_per_byte"] * 1e6
        lines += [
            f"## {name}",
            "",
            f"Whole process {row['wall']:.2f} s: start-up {row['startup']:.3f} s (floor "
            f"{rates['numpy_startup']:.3f} s), then {row['per_example']:.1f} µs an example "
            f"(floor {arithmetic + parse:.1f} µs: {row['multiply_adds']:,} multiply-adds "
            f"{arithmetic:.1f} µs, {4 * arithmetic:.1f} µs at our kernels' ceiling"
            + (f"; {row['bytes']:.0f} bytes parsed {parse:.2f} µs" if row["bytes"] else "")
            + ").",
            "",
        ]
        if row["vw"]:
            bar = row["bar"]
            need = (row["vw"] / bar - row["startup"]) / n * 1e6
            lines += [
                f"VW with the same flags reads the file in {row['vw']:.2f} s (median of 3): "
                f"{row['vw'] / row['wall']:.2f}× ours here. "
                f"{'Twice VW' if bar == 2 else 'VW'}'s speed needs ours in "
                f"{row['vw'] / bar:.2f} s: after our start-up, "
                + (f"{need:.1f} µs an example." if need > 0 else "less than nothing."),
                "",
            ]
        lines += [
            "| stage | µs an example | share |",
            "|---|---:|---:|",
        ]
        total = sum(row["stages"].values()) or 1.0
        for stage, micro in sorted(row["stages"].items(), key=lambda item: -item[1]):
            if micro > 0:
                lines.append(f"| {stage} | {micro:.1f} | {micro / total:.0%} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--frequency", type=int, default=2000)
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "speed_profile.md"))
    args = parser.parse_args()
    if not shutil.which("perf"):
        sys.exit("speed_profile needs Linux perf (perf record / perf report)")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        results = measure(args.examples, args.frequency, pathlib.Path(folder))
    text = report(results, args, time.perf_counter() - start)
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
