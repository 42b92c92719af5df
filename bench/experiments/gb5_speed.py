"""How much faster is RegCB with the GB5 oracle than at a baseline commit?

Issue 18: GB5 at sweep speed (at least 10x faster). Two workloads (``--workload``):

- ``sweep``: the harness's RegCB-GB5 runs (`harness.regcb_algo.RegCBAlgorithm` with the
  ``gb5`` oracle on the paper's ``sqrt2`` schedule, `harness.protocol.run_protocol`: the
  training rounds and the holdout evaluations) on ``--streams``, repetition 0, elimination
  (beta 1e-3) and optimistic (beta 1e-4); the progressive rewards must be identical.
- ``issue``: the measurement the issue quotes (300-450 rounds/s, ``docs/results/oracle_trees.md`` as
  of c4f73be): the per-example ``predict``/``learn`` loop of ``RegCB(variant,
  oracle=TreesOracle(), beta=beta, schedule="sqrt2")`` on the first 4,000 rounds of clean
  letter, both variants, beta 1e-3 and 1e-5 (the code in between changed the leaf-value
  updates, so the rewards may differ: both are reported).

Each run is a fresh process, timed inside it (imports and data loading left out); the code
at ``--baseline`` (a temporary ``git worktree``, given this tree's compiled extensions where
its C sources are the same, and none where it has none: the script refuses a baseline whose
C sources other than ``_trees.c`` differ) and this tree's alternate run by run, ``--pairs``
times. Reported: rounds per second (training rounds over the run's seconds), the ratios and
their median.

From the repository root::

    .venv/bin/python -m bench.experiments.gb5_speed [--baseline 1d76a9b]
    .venv/bin/python -m bench.experiments.gb5_speed --workload issue --baseline c4f73be \
        --output docs/results/gb5_speed_issue.md

Writes ``docs/results/gb5_speed.md`` (or ``--output``) and prints it.
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

from bench.provenance import code_version
from regcb_stream.datasets.uci import data_dir

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNS = {"sweep": (("elimination", 1e-3), ("optimistic", 1e-4)),
        "issue": tuple((v, b) for b in (1e-3, 1e-5) for v in ("elimination", "optimistic"))}
ISSUE_ROUNDS = 4000
ONE_RUN = {"sweep": """
import json, sys, time
from bench.harness import problems
from bench.harness import protocol
from bench.harness.regcb_algo import RegCBAlgorithm
stream, variant, beta = sys.argv[1], sys.argv[2], float(sys.argv[3])
problem = problems.load_problem(stream, 0)
algo = RegCBAlgorithm(variant, "gb5", beta, problem.n_actions, 0)
start = time.perf_counter()
record = protocol.run_protocol(algo, problem, seed=0)
print(json.dumps({"seconds": time.perf_counter() - start, "n": record["n_train"],
                  "progressive": record["progressive"]}))
""", "issue": """
import json, sys, time
from regcb_stream import RegCB
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.oracles.trees import TreesOracle
stream, variant, beta = sys.argv[1], sys.argv[2], float(sys.argv[3])
X, R = bandit_stream(stream, False, 0)
X, R = X[:%d], R[:%d]
learner = RegCB(variant, oracle=TreesOracle(), beta=beta, schedule="sqrt2", seed=0)
actions, total = list(range(R.shape[1])), 0.0
start = time.perf_counter()
for x, rewards in zip(X, R):
    action, prob, _ = learner.predict(x, actions)
    total += rewards[action]
    learner.learn(x, action, rewards[action], prob)
print(json.dumps({"seconds": time.perf_counter() - start, "n": len(X),
                  "progressive": total / len(X)}))
""" % (ISSUE_ROUNDS, ISSUE_ROUNDS)}
DATA = data_dir()  # (the baseline's checkout is elsewhere: this tree's data folder)
OTHER_C = ["regcb_stream/oracles/_ridge.c", "regcb_stream/io/_scan.c", "regcb_stream/io/_dsjson.c"]


def baseline_tree(revision: str, folder: pathlib.Path) -> pathlib.Path:
    """A checkout of ``revision`` with this tree's compiled extensions where its C sources
    are this tree's (none where it has none)."""
    tree = folder / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), revision], cwd=ROOT,
                   check=True)
    for source in OTHER_C:
        if not (tree / source).exists():
            continue
        changed = subprocess.run(["git", "diff", "--quiet", revision, "--", source], cwd=ROOT)
        if changed.returncode:
            raise SystemExit(f"{revision}'s {source} differs from this tree's")
        for built in glob.glob(str(ROOT / source).removesuffix(".c") + ".*.so"):
            shutil.copy(built, tree / pathlib.Path(built).relative_to(ROOT))
    return tree


def one_run(tree: pathlib.Path, workload: str, stream: str, variant: str, beta: float) -> dict:
    env = {"REGCB_DATA": str(DATA), **os.environ, "PYTHONPATH": str(tree),
           "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", ONE_RUN[workload], stream, variant,
                           repr(beta)],
                          cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def report(rows: list, args, seconds: float) -> str:
    ratios = [new["n"] / new["seconds"] / (old["n"] / old["seconds"]) for *_, old, new in rows]
    same = all(old["progressive"] == new["progressive"] for *_, old, new in rows)
    issue = args.workload == "issue"
    what = ("the per-example loop on clean letter's first 4,000 rounds (the issue's "
            "measurement)" if issue else "the harness's RegCB-GB5 runs (the sweep)")
    lines = [
        f"# RegCB-GB5: rounds per second against a baseline commit (issue 18), {what}",
        "",
        f"Command: `.venv/bin/python -m bench.experiments.gb5_speed --workload {args.workload} "
        f"--baseline {args.baseline} --streams {' '.join(args.streams)} --pairs {args.pairs}`",
        "",
        f"Code: {code_version()} against {args.baseline}; date: {datetime.date.today()}; "
        f"machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}; {seconds:.0f} s in all.",
        "",
        "Bar: GB5 at sweep speed, at least 10x faster.",
        "",
        f"**{statistics.median(ratios):.1f}x** the baseline's rounds per second (median of "
        f"{len(ratios)} runs, {min(ratios):.1f}x to {max(ratios):.1f}x); progressive reward "
        + ("identical in every run." if same else
           "not identical (the leaf-value updates changed in between: both listed)."),
        "",
        ("Each run: `RegCB(variant, oracle=TreesOracle(), beta=beta, schedule=\"sqrt2\")`, "
         "`predict` and `learn` per round" if issue else
         "Each run: the harness's RegCB-GB5 (`sqrt2` epochs, the holdout evaluations "
         "included), repetition 0") + ", in a fresh process, one BLAS thread, the two trees "
        "alternating run by run.",
        "",
        "| stream | variant | beta | baseline rounds/s | this tree rounds/s | ratio | "
        "progressive (baseline) | progressive |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for (stream, variant, beta, old, new), ratio in zip(rows, ratios):
        lines.append(f"| {stream} | {variant} | {beta:g} | {old['n'] / old['seconds']:,.0f} | "
                     f"{new['n'] / new['seconds']:,.0f} | {ratio:.1f} | "
                     f"{old['progressive']:.4f} | {new['progressive']:.4f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", choices=sorted(RUNS), default="sweep")
    parser.add_argument("--baseline", default="1d76a9b", help="the commit to compare with")
    parser.add_argument("--streams", nargs="+", default=None,
                        help="default: letter pendigits adult (sweep), letter (issue)")
    parser.add_argument("--pairs", type=int, default=1, help="runs of each configuration")
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "gb5_speed.md"))
    args = parser.parse_args()
    args.streams = args.streams or (["letter"] if args.workload == "issue"
                                    else ["letter", "pendigits", "adult"])
    start = datetime.datetime.now()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        tree = baseline_tree(args.baseline, pathlib.Path(folder))
        try:
            for _ in range(args.pairs):
                for stream in args.streams:
                    for variant, beta in RUNS[args.workload]:
                        old = one_run(tree, args.workload, stream, variant, beta)
                        new = one_run(ROOT, args.workload, stream, variant, beta)
                        rows.append((stream, variant, beta, old, new))
                        print(stream, variant, old, new, flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT)
    text = report(rows, args, (datetime.datetime.now() - start).total_seconds())
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
