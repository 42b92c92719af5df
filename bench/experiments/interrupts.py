"""Nothing lost when a run is interrupted, or when two runs save one model at once.

(a) Ctrl-C: a logged ``letter`` stream of ``--examples`` lines (single-line ``--cb_explore
26``, logged by a uniform policy, as `command_speed` makes it) is run once uninterrupted with
``-p`` and ``-f``: the reference predictions and model. Then ``--sigints`` runs of it, each
sent SIGINT at a time drawn uniformly over the run: from when its ``-p`` file appears (the
command's handler is in place by then; before, the interpreter is still loading modules) to
1.1 times the reference run's time from that moment (so that some land in the summary, the
save and the exit). Each must exit 130 (0 if the run ended first) without a traceback, leave
a model that loads, and that model resumed with ``-i`` on the lines after the last prediction
written must give the reference predictions and model, byte for byte.

(b) Concurrent saves: ``--pairs`` pairs of runs of the first ``--pair-examples`` lines, with
``--random_seed`` 1 and 2, started together and saving to one ``-f``: both must exit 0 and
the file must be, byte for byte, the model one of them saves alone, with no temporary file
left. (The runs of a pair take the same time, so their saves overlap.)

From the repository root (28 minutes on 2 cores shared with other jobs)::

    .venv/bin/python -m bench.experiments.interrupts [--examples 100000] [--sigints 200]
        [--pairs 200] [--pair-examples 2000] [--workers 2] [--seed 0]

Writes ``docs/results/interrupts.md`` and prints it.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from regcb_stream.datasets.logs import write_logged_stream
from regcb_stream.datasets.uci import long_stream
from regcb_stream.persist import load_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "regcb_stream", "--cb_explore", "26", "--quiet"]


def reference(data: pathlib.Path, folder: pathlib.Path) -> tuple[bytes, bytes, float]:
    """The uninterrupted run's predictions and model, and its seconds from its -p file's
    appearance to its end."""
    predictions = folder / "p"
    process = subprocess.Popen([*COMMAND, "-d", str(data), "-p", str(predictions), "-f",
                                str(folder / "m")])
    while not predictions.exists():
        time.sleep(0.001)
    start = time.perf_counter()
    if process.wait() != 0:
        raise RuntimeError("the uninterrupted run failed")
    return predictions.read_bytes(), (folder / "m").read_bytes(), time.perf_counter() - start


def interrupted(data: pathlib.Path, folder: pathlib.Path, delay: float, want) -> dict:
    """One run sent SIGINT ``delay`` seconds after its -p file appears, then resumed."""
    predictions, model = folder / "p", folder / "m"
    process = subprocess.Popen([*COMMAND, "-d", str(data), "-p", str(predictions), "-f",
                                str(model)], stderr=subprocess.PIPE, text=True)
    while not predictions.exists() and process.poll() is None:
        time.sleep(0.001)
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    err = process.communicate()[1]
    out = {"status": process.returncode, "traceback": "Traceback" in err, "loads": True,
           "equal": False, "written": 0}
    try:
        load_model(model)
    except (OSError, ValueError):
        out["loads"] = False
        return out
    first = predictions.read_bytes()
    out["written"] = done = sum(1 for line in first.split(b"\n") if line)
    rest = folder / "rest.dat"
    with open(data, "rb") as source:
        rest.write_bytes(b"".join(source.readlines()[done:]))
    resumed = subprocess.run([*COMMAND, "-i", str(model), "-d", str(rest), "-p",
                              str(folder / "p2"), "-f", str(folder / "m2")],
                             capture_output=True, text=True)
    out["traceback"] |= "Traceback" in resumed.stderr
    out["equal"] = resumed.returncode == 0 and (
        first + (folder / "p2").read_bytes(), (folder / "m2").read_bytes()) == want
    return out


def pair(data: pathlib.Path, folder: pathlib.Path, models: dict) -> dict:
    """Two runs saving to one -f at once."""
    shared = folder / "m"
    runs = [subprocess.Popen([*COMMAND, "--random_seed", str(seed), "-d", str(data), "-f",
                              str(shared)], stderr=subprocess.PIPE, text=True)
            for seed in models]
    errors = [run.communicate()[1] for run in runs]
    body = shared.read_bytes() if shared.exists() else b""
    return {"failed": any(run.returncode for run in runs) or any(errors),
            "whole": body in models.values(), "seed": next(
                (seed for seed, model in models.items() if model == body), None),
            "left": sorted(p.name for p in folder.iterdir() if p.name != "m")}


def run_sigints(data, n: int, workers: int, seed: int, folder: pathlib.Path) -> dict:
    want_p, want_m, seconds = reference(data, folder)
    rng = random.Random(seed)
    delays = [rng.uniform(0, 1.1 * seconds) for _ in range(n)]

    def trial(i: int) -> dict:
        trial_folder = folder / f"t{i}"
        trial_folder.mkdir()
        return interrupted(data, trial_folder, delays[i], (want_p, want_m))

    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(trial, range(n)))
    examples = sum(1 for line in want_p.split(b"\n") if line)
    return {"results": results, "delays": delays, "seconds": seconds, "examples": examples}


def run_pairs(data, n: int, folder: pathlib.Path) -> dict:
    models = {}
    for seed in (1, 2):
        path = folder / f"alone{seed}"
        subprocess.run([*COMMAND, "--random_seed", str(seed), "-d", str(data), "-f",
                        str(path)], check=True)
        models[seed] = path.read_bytes()
    results = []
    for i in range(n):
        pair_folder = folder / f"pair{i}"
        pair_folder.mkdir()
        results.append(pair(data, pair_folder, models))
    return {"results": results}


def report(args, sigints: dict, pairs: dict, seconds: float, command: str) -> str:
    results = sigints["results"]
    statuses = collections.Counter(r["status"] for r in results)
    total = sigints["examples"]
    phases = collections.Counter(
        "before the first prediction" if r["written"] == 0 else
        "during the run" if r["written"] < total else
        "after the last prediction (summary, save, exit)" for r in results)
    pair_results = pairs["results"]
    winners = collections.Counter(r["seed"] for r in pair_results)
    lines = [
        "# Interrupts and concurrent saves: nothing lost",
        "",
        f"Command: `{command}` ({datetime.date.today()}; {seconds:.0f} s; "
        f"{os.cpu_count()} cores, shared).",
        "",
        f"## Ctrl-C: {len(results)} SIGINTs over a run of {args.examples:,} lines",
        "",
        f"The logged letter stream (`--cb_explore 26`, uniform logging), {total:,} "
        f"examples; the uninterrupted run takes {sigints['seconds']:.2f} s from its -p "
        f"file's appearance to its end. Each SIGINT at a uniform time in [0, "
        f"{1.1 * sigints['seconds']:.2f}] s after that moment; then the model loaded and "
        "resumed with `-i` on the lines after the last prediction written.",
        "",
        "| count | runs |",
        "|---|---|",
        *(f"| exit status {status} | {count} |" for status, count in sorted(
            statuses.items())),
        *(f"| SIGINT {phase} | {count} |" for phase, count in sorted(phases.items())),
        f"| tracebacks | {sum(r['traceback'] for r in results)} |",
        f"| models that do not load | {sum(not r['loads'] for r in results)} |",
        f"| resumed runs whose predictions and model differ from the uninterrupted run's "
        f"(byte for byte) | {sum(not r['equal'] for r in results)} |",
        "",
        "Exit status 0: the SIGINT came once the run had written every prediction and saved "
        "its model (the command ignores SIGINT from then on), or after the process had ended.",
        "",
        f"## Concurrent saves: {len(pair_results)} pairs saving to one -f",
        "",
        f"Two runs of the first {args.pair_examples:,} lines (`--random_seed` 1 and 2) "
        "started together, saving to one `-f`.",
        "",
        "| count | pairs |",
        "|---|---|",
        f"| a run failed (status or message) | {sum(r['failed'] for r in pair_results)} |",
        f"| the file is not one whole model of the two | "
        f"{sum(not r['whole'] for r in pair_results)} |",
        f"| temporary files left | {sum(bool(r['left']) for r in pair_results)} |",
        f"| the file is seed 1's | {winners.get(1, 0)} |",
        f"| the file is seed 2's | {winners.get(2, 0)} |",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--sigints", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--pair-examples", type=int, default=2_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=str(ROOT / "docs/results/interrupts.md"))
    args = parser.parse_args()
    command = "python -m bench.experiments.interrupts " + " ".join(sys.argv[1:])
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as name:
        folder = pathlib.Path(name)
        X, R = long_stream("letter", args.examples)
        data = folder / "letter.dat"
        write_logged_stream(data, X, R, adf=False, seed=0)
        with open(data, "rb") as source:
            (folder / "head.dat").write_bytes(
                b"".join(source.readlines()[:args.pair_examples]))
        (folder / "sigints").mkdir()
        (folder / "pairs").mkdir()
        sigints = run_sigints(data, args.sigints, args.workers, args.seed,
                              folder / "sigints")
        pairs = run_pairs(folder / "head.dat", args.pairs, folder / "pairs")
    text = report(args, sigints, pairs, time.perf_counter() - start, command.strip())
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
