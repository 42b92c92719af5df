"""The joint model's budget: actions given by their own indicator features (ADF with ``-q sa``).

With actions given as dicts of their own features, ``RegCB()`` learns one joint ridge over
the context, the actions' features and their products (VW's ADF examples with ``-q sa``,
the command line's ``--cb_explore_adf`` default). On the realizable linear problem over
200,000 rounds its regret grows linearly on 3 of 4 seeds at mellowness 1e-3, and stays
down at 1e-2 and 0.1 (``docs/long_horizon.md``). This script measures what those budgets
cost or earn where it matters to users: the 16 UCI streams under the harness's protocol (the
streams, holdout split and action draws of ``docs/defaults.md``, 5 repetitions), each
stream's K actions given as ``{"a<k>": 1}``, next to VW's ADF explorers at their defaults
(``benchmarks/defaults.py``'s runs: the same protocol, seeds and ``-q sa``). It informs the
choice of the joint model's default; it does not make it.

From the repository root::

    .venv/bin/python benchmarks/joint_budget.py [--jobs 2] [--reps 5]   # ~15 minutes

Runs are kept in ``results/joint_budget.jsonl`` (resumable); writes
``docs/joint_budget.md``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from feature_ridge import peer_means  # noqa: E402
from defaults import VW_DEFAULTS  # noqa: E402

from regcb_stream import RegCB  # noqa: E402
from regcb_stream.bench.harness import problems, protocol  # noqa: E402
from regcb_stream.bench.harness.protocol import Step, sample  # noqa: E402
from regcb_stream.bench.provenance import stamp  # noqa: E402
from regcb_stream.bench.runs import run_missing  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
STREAMS = problems.UCI_STREAMS
BUDGETS = (1e-3, 1e-2, 1e-1)  # mellowness: the default, and two that pass the long horizon


class JointAlgorithm:
    """``RegCB(mellowness=c)`` under the protocol, the actions as indicator dicts."""

    def __init__(self, n_actions: int, seed: int, mellowness: float):
        self.learner = RegCB(seed=seed, mellowness=mellowness)
        self.actions = [{f"a{k}": 1.0} for k in range(n_actions)]

    def block_size(self) -> int:
        return self.learner.labels_until_rebuild

    def decide(self, rounds, u: np.ndarray) -> Step:
        pmf = self.learner.decide_many(rounds.X, self.actions).pmf
        actions = sample(pmf, u)
        nan = np.full(len(u), np.nan)
        return Step(actions, pmf[np.arange(len(u)), actions], nan, nan)

    def learn(self, rounds, step: Step, rewards: np.ndarray) -> None:
        chosen = [self.actions[a] for a in step.actions.tolist()]
        self.learner.learn_many(rounds.X, chosen, rewards, step.probs)

    def holdout_pmf(self, rounds) -> np.ndarray:
        return self.learner.pmf_many(rounds.X, self.actions)


def run(task: tuple) -> dict:
    """Progressive reward of one (mellowness, stream, repetition)."""
    mellowness, stream, rep = task
    problem = problems.load_problem(stream, rep)
    algo = JointAlgorithm(problem.n_actions, rep, mellowness)
    record = protocol.run_protocol(algo, problem, rep)
    return {"mellowness": mellowness, "stream": stream, "rep": rep,
            "progressive": record["progressive"], "seconds": record["seconds"]}


def report(rows: list[dict], peers: dict, command: str) -> str:
    values = defaultdict(list)
    for r in rows:
        values[(r["mellowness"], r["stream"])].append(r["progressive"])
    means = {key: float(np.mean(v)) for key, v in values.items()}
    names = [f"mellowness {c:g}" for c in BUDGETS]
    lines = [
        "# The joint model's budget (actions given by their own indicator features)",
        "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs, {sum(r['seconds'] for r in rows):.0f} s of runs",
        "- protocol: the harness's (`docs/defaults.md`), progressive reward; `RegCB("
        "mellowness=c)` with each stream's actions as `{\"a<k>\": 1}` (the joint model: "
        "context, indicators and their products); VW at its defaults with `-q sa` "
        "(`benchmarks/defaults.py`'s runs)",
        "",
        "| stream | " + " | ".join(names) + " | " + " | ".join(VW_DEFAULTS) + " |",
        "|---|" + "---:|" * (len(names) + len(VW_DEFAULTS)),
    ]
    for s in STREAMS:
        lines.append(f"| {s} | " + " | ".join(f"{means[(c, s)]:.4f}" for c in BUDGETS)
                     + " | " + " | ".join(f"{peers[(p, s)]:.4f}" for p in VW_DEFAULTS) + " |")
    lines.append("| **mean** | " + " | ".join(
        f"{np.mean([means[(c, s)] for s in STREAMS]):.4f}" for c in BUDGETS) + " | "
        + " | ".join(f"{np.mean([peers[(p, s)] for s in STREAMS]):.4f}" for p in VW_DEFAULTS)
        + " |")
    lines.append("| at or above every VW default, streams | " + " | ".join(
        f"{sum(all(means[(c, s)] >= peers[(p, s)] for p in VW_DEFAULTS) for s in STREAMS)}/16"
        for c in BUDGETS) + " |" + " – |" * len(VW_DEFAULTS))
    lines += ["", "The regret growth of the same budgets on the long realizable problem: "
              "`docs/long_horizon.md` (its last table)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--results", default=str(ROOT / "results" / "joint_budget.jsonl"))
    parser.add_argument("--peers", default=str(ROOT / "results" / "defaults.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "joint_budget.md"))
    args = parser.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    tasks = [(c, s, r) for c in BUDGETS for s in STREAMS for r in range(args.reps)]
    rows, _ = run_missing(args.results, tasks, run,
                          lambda r: (r["mellowness"], r["stream"], r["rep"]), args.jobs)
    command = "python benchmarks/joint_budget.py" + (" " + " ".join(argv) if argv else "")
    text = report(rows, peer_means(args.peers, args.reps), command)
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
