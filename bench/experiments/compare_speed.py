"""Is ``regcb-compare`` (RegCB and five VW explorers over one log) as fast as running those
five with ``vw --explore_eval`` one after another?

Issue 17's bar: comparing RegCB and five VW explorers on a 100,000-event log takes no
longer than running those five with ``vw --explore_eval`` one after another.

Log: ``letter`` (K = 26, 16 features) played by a uniform logging policy, in VW's ADF
format as the harness writes it (`regcb_stream.datasets.logs.write_logged_stream`: cost
1 - reward, probability 1/26); beyond letter's 20,000 rounds, further shuffles of it follow
(seeds 0, 1, ...) up to ``--examples`` events.

Timed, whole processes (start-up included), wall clock, ``--reps`` interleaved repetitions
(the order rotates); the verdict is the median over the repetitions of the ratio
regcb-compare / five VW runs:

* ``python -m regcb_stream.evaluation.compare LOG -q sa --quiet`` (RegCB's defaults in-process, its
  five default VW explorers in processes beside it), output to /dev/null;
* the five VW explorers (``--epsilon 0.05``, ``--squarecb``, ``--regcb``, ``--regcb
  --regcbopt``, ``--cover 3``), each ``vowpalwabbit.Workspace("--cb_explore_adf -q sa FLAGS
  --explore_eval -d LOG --quiet").finish()`` in a fresh interpreter, one after another;
* ``regcb-compare --snips`` (VW's rows from VW's ``-p``, which SNIPS needs), for
  information;
* RegCB alone through regcb-compare (``compare(LOG, vw=[], interactions=["sa"])`` in a
  fresh interpreter: the command has no way to leave the VW explorers out).

From the repository root::

    .venv/bin/python -m bench.experiments.compare_speed [--examples 100000] [--reps 5]

Writes ``docs/results/compare_speed.md`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import vowpalwabbit

from bench.provenance import code_version
from regcb_stream.datasets.logs import write_logged_stream
from regcb_stream.datasets.uci import long_stream
from regcb_stream.evaluation.compare import DEFAULT_VW

ROOT = pathlib.Path(__file__).resolve().parents[2]
VW = "import sys; from vowpalwabbit import Workspace; Workspace(sys.argv[1]).finish()"
REGCB_ALONE = ("import sys; from regcb_stream.evaluation.compare import compare; "
               "compare(sys.argv[1], vw=[], interactions=['sa'])")


def letter(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rounds of letter: successive shuffles (seeds 0, 1, ...)."""
    return long_stream("letter", n)


def timed(command: list[str]) -> tuple[float, float]:
    """Wall seconds of one process, and the CPU seconds (user + system) of it and its
    children (its output discarded; an error raised)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def commands(log: pathlib.Path) -> dict:
    """What is timed: a list of processes run one after another, by name."""
    return {
        "regcb-compare": [[sys.executable, "-m", "regcb_stream.evaluation.compare", str(log),
                           "-q", "sa", "--quiet"]],
        "five vw --explore_eval": [
            [sys.executable, "-c", VW,
             f"--cb_explore_adf -q sa {flags} --explore_eval -d {log} --quiet"]
            for flags in DEFAULT_VW],
        "regcb alone": [[sys.executable, "-c", REGCB_ALONE, str(log)]],
        "regcb-compare --snips": [[sys.executable, "-m", "regcb_stream.evaluation.compare",
                                   str(log), "-q", "sa", "--quiet", "--snips"]],
    }


def measure(examples: int, reps: int, folder: pathlib.Path) -> dict:
    log = folder / "letter_adf.dat"
    write_logged_stream(log, *letter(examples), adf=True, seed=0)
    runs = commands(log)
    names = list(runs)
    times = {name: [] for name in names}
    cpu = {name: [] for name in names}
    parts = {flags: [] for flags in DEFAULT_VW}
    load = [os.getloadavg()[0]]
    for rep in range(reps):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            walls, cpus = zip(*(timed(command) for command in runs[name]))
            times[name].append(sum(walls))
            cpu[name].append(sum(cpus))
            if name == "five vw --explore_eval":
                for flags, wall in zip(DEFAULT_VW, walls):
                    parts[flags].append(wall)
            print(rep, name, [round(w, 2) for w in walls], round(sum(cpus), 2), flush=True)
            load.append(os.getloadavg()[0])
    return {"times": times, "cpu": cpu, "parts": parts, "bytes": log.stat().st_size,
            "load": load}


def report(results: dict, args, seconds: float) -> str:
    times = {name: statistics.median(walls) for name, walls in results["times"].items()}
    ours, theirs = times["regcb-compare"], times["five vw --explore_eval"]
    pairs = [a / b for a, b in zip(results["times"]["regcb-compare"],
                                   results["times"]["five vw --explore_eval"])]
    ratio = statistics.median(pairs)
    verdict = "PASS" if ratio <= 1 else "FAIL"
    load = f"{min(results['load']):.2f} to {max(results['load']):.2f}"
    lines = [
        "# `regcb-compare` against five `vw --explore_eval` runs (issue 17)",
        "",
        f"Command: `.venv/bin/python -m bench.experiments.compare_speed --examples {args.examples} "
        f"--reps {args.reps}`",
        "",
        f"Code: {code_version()}; date: {datetime.date.today()}; machine: {os.cpu_count()} "
        f"cores, {platform.machine()}, Python {platform.python_version()}, numpy "
        f"{np.__version__}, vowpalwabbit {vowpalwabbit.__version__}; one-minute load "
        f"average between the runs {load}; {seconds:.0f} s in all.",
        "",
        "Bar: comparing RegCB and five VW explorers on a 100,000-event log takes no longer "
        "than running those five with `vw --explore_eval` one after another.",
        "",
        f"**Verdict: {verdict}** - regcb-compare takes {ratio:.2f} times as long as the five "
        "VW runs one after another (the median of the repetitions' ratios, each repetition "
        f"running both; bar: <= 1). Ratios: {', '.join(f'{r:.2f}' for r in pairs)}; median "
        f"times {ours:.1f} s and {theirs:.1f} s.",
        "",
        f"Log: letter (K = 26, 16 features), uniform logging policy, VW ADF text as the "
        f"harness writes it (`write_logged_stream`), {args.examples:,} events (successive "
        f"shuffles of letter's 20,000 rounds), {results['bytes'] / 2**20:.0f} MiB. Wall "
        f"clock of whole processes (start-up included), {args.reps} interleaved "
        "repetitions (the order rotates).",
        "",
        "| run | median wall s | all runs wall s | median CPU s (user + system) |",
        "|---|---|---|---|",
    ]
    for name, walls in results["times"].items():
        lines.append(f"| {name} | {times[name]:.1f} | "
                     f"{', '.join(f'{w:.1f}' for w in walls)} | "
                     f"{statistics.median(results['cpu'][name]):.1f} |")
    lines += [
        "",
        "- regcb-compare: `python -m regcb_stream.evaluation.compare LOG -q sa --quiet` (RegCB's "
        "defaults in this process, the five default VW explorers each running VW's own "
        "`--explore_eval` in a process of its own, beside it; their rows from VW's progress "
        "lines, `-P`).",
        "- regcb-compare --snips: the same, VW's rows from each example's distribution "
        "(VW's `-p`), which SNIPS needs (for information).",
        "- five vw --explore_eval: `Workspace(\"--cb_explore_adf -q sa FLAGS --explore_eval "
        "-d LOG --quiet\").finish()` in a fresh interpreter per explorer, one after another "
        "(no `-p`: the least a user would run).",
        "- regcb alone: `compare(LOG, vw=[], interactions=['sa'])` in a fresh interpreter "
        "(the RegCB row and the baselines; `regcb-compare` itself always runs VW "
        "explorers: `--vw` given replaces the defaults, none keeps them).",
        "",
        "The five VW runs, each (median s):",
        "",
        "| flags | median s |",
        "|---|---|",
    ]
    for flags, walls in results["parts"].items():
        lines.append(f"| `{flags}` | {statistics.median(walls):.1f} |")
    vw_cpu = statistics.median(results["cpu"]["five vw --explore_eval"])
    regcb_cpu = statistics.median(results["cpu"]["regcb alone"])
    lines += [
        "",
        f"Where regcb-compare's time goes: with the five VW runs' {vw_cpu:.1f} CPU s and RegCB's "
        f"{regcb_cpu:.1f}, regcb-compare needs at least "
        f"{(vw_cpu + regcb_cpu) / (os.cpu_count() or 1):.1f} s of wall on "
        f"{os.cpu_count()} cores even when perfectly parallel, and at least "
        f"{times['regcb alone']:.1f} s (its in-process RegCB row) on any number.",
        "",
        f"On this {os.cpu_count()}-core machine regcb-compare's six candidates share "
        f"{os.cpu_count()} cores; VW runs its parser and learner in two threads, so its "
        "runs one after another use both cores too (CPU above wall).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "compare_speed.md"))
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        results = measure(args.examples, args.reps, pathlib.Path(folder))
    text = report(results, args, time.perf_counter() - start)
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
