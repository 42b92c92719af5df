"""How much faster is RegCB with the GB5 oracle than at a baseline commit, in the sweep?

Issue 18: GB5 at sweep speed (at least 10x faster), the same progressive reward.

Runs: the harness's RegCB-GB5 runs (`harness.regcb_algo.RegCBAlgorithm` with the ``gb5``
oracle on the paper's ``sqrt2`` schedule, `harness.protocol.run_protocol`: the training
rounds and the holdout evaluations) on ``--streams``, repetition 0, elimination (beta 1e-3)
and optimistic (beta 1e-4). Each run is a fresh process, timed inside it (imports and data
loading left out); the code at ``--baseline`` (a temporary ``git worktree``, with this
tree's compiled extensions: the script refuses a baseline whose other C sources differ) and
this tree's alternate run by run. Reported: rounds per second (training rounds over the
run's seconds) and the ratio, and whether the progressive rewards are identical.

From the repository root::

    .venv/bin/python benchmarks/gb5_speed.py [--baseline 1d76a9b]

Writes ``docs/gb5_speed.md`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

from regcb_stream.bench.datasets import data_dir
from regcb_stream.bench.provenance import code_version

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNS = (("elimination", 1e-3), ("optimistic", 1e-4))
ONE_RUN = """
import json, sys, time
from regcb_stream.bench.harness import problems, protocol
from regcb_stream.bench.harness.regcb_algo import RegCBAlgorithm
stream, variant, beta = sys.argv[1], sys.argv[2], float(sys.argv[3])
problem = problems.load_problem(stream, 0)
algo = RegCBAlgorithm(variant, "gb5", beta, problem.n_actions, 0)
start = time.perf_counter()
record = protocol.run_protocol(algo, problem, seed=0)
print(json.dumps({"seconds": time.perf_counter() - start, "n": record["n_train"],
                  "progressive": record["progressive"]}))
"""
DATA = data_dir()  # (the baseline's checkout is elsewhere: this tree's data folder)
OTHER_C = ["regcb_stream/_ridge.c", "regcb_stream/io/_scan.c", "regcb_stream/io/_dsjson.c"]


def baseline_tree(revision: str, folder: pathlib.Path) -> pathlib.Path:
    """A checkout of ``revision`` with this tree's compiled extensions."""
    changed = subprocess.run(["git", "diff", "--quiet", revision, "--", *OTHER_C], cwd=ROOT)
    if changed.returncode:
        raise SystemExit(f"{revision}'s C sources other than _trees.c differ from this tree's")
    tree = folder / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), revision], cwd=ROOT,
                   check=True)
    for built in glob.glob(str(ROOT / "regcb_stream" / "**" / "*.so"), recursive=True):
        target = tree / pathlib.Path(built).relative_to(ROOT)
        if not target.name.startswith("_trees"):
            shutil.copy(built, target)
    return tree


def one_run(tree: pathlib.Path, stream: str, variant: str, beta: float) -> dict:
    env = {"REGCB_DATA": str(DATA), **os.environ, "PYTHONPATH": str(tree),
           "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", ONE_RUN, stream, variant, repr(beta)],
                          cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def report(rows: list, args, seconds: float) -> str:
    ratios = [new["n"] / new["seconds"] / (old["n"] / old["seconds"]) for *_, old, new in rows]
    same = all(old["progressive"] == new["progressive"] for *_, old, new in rows)
    lines = [
        "# RegCB-GB5 in the sweep: rounds per second against a baseline commit (issue 18)",
        "",
        f"Command: `.venv/bin/python benchmarks/gb5_speed.py --baseline {args.baseline} "
        f"--streams {' '.join(args.streams)}`",
        "",
        f"Code: {code_version()} against {args.baseline}; date: {datetime.date.today()}; "
        f"machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}; {seconds:.0f} s in all.",
        "",
        "Bar: GB5 at sweep speed, at least 10x faster.",
        "",
        f"**{statistics.median(ratios):.1f}x** the baseline's rounds per second (median of "
        f"{len(ratios)} runs, {min(ratios):.1f}x to {max(ratios):.1f}x); progressive reward "
        f"{'identical' if same else 'NOT identical'} in every run.",
        "",
        "Each run: the harness's RegCB-GB5 (`sqrt2` epochs, the holdout evaluations "
        "included), repetition 0, in a fresh process, one BLAS thread, the two trees "
        "alternating run by run.",
        "",
        "| stream | variant | beta | baseline rounds/s | this tree rounds/s | ratio | "
        "progressive |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for (stream, variant, beta, old, new), ratio in zip(rows, ratios):
        lines.append(f"| {stream} | {variant} | {beta:g} | {old['n'] / old['seconds']:,.0f} | "
                     f"{new['n'] / new['seconds']:,.0f} | {ratio:.1f} | "
                     f"{new['progressive']:.4f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="1d76a9b", help="the commit to compare with")
    parser.add_argument("--streams", nargs="+", default=["letter", "pendigits", "adult"])
    parser.add_argument("--output", default=str(ROOT / "docs" / "gb5_speed.md"))
    args = parser.parse_args()
    start = datetime.datetime.now()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        tree = baseline_tree(args.baseline, pathlib.Path(folder))
        try:
            for stream in args.streams:
                for variant, beta in RUNS:
                    old = one_run(tree, stream, variant, beta)
                    new = one_run(ROOT, stream, variant, beta)
                    rows.append((stream, variant, beta, old, new))
                    print(stream, variant, old, new, flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT)
    text = report(rows, args, (datetime.datetime.now() - start).total_seconds())
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
