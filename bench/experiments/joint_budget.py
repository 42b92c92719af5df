"""The joint model's default budget: actions given by their own features (ADF with ``-q sa``).

With actions given as dicts of features of their own, ``RegCB()`` learns one joint ridge
over the context, the actions' features and their products (VW's ADF examples with ``-q
sa``, the command line's ``--cb_explore_adf``). Its context's main effects are shared by
every action, so they carry the level of the rewards over to an action never played: the
optimistic prior no longer makes such an action look best, and the budget alone must bring
it back. This script chooses that class's ridge weight and mellowness as
``bench/experiments/defaults.py`` chooses the product class's:

1. **Eligible**: on the realizable linear problem (K = 5, d = 10) over
   :data:`~defaults.LONG_ROUNDS` rounds, with the actions given as their own indicator
   features, the regret growth R(T)/R(T/2) is at most :data:`~defaults.MAX_GROWTH` on each
   of :data:`~defaults.LONG_SEEDS` (the product class's rule).
2. **Chosen** among the eligible by leave-one-dataset-out on the 16 UCI streams under the
   harness's protocol (the streams, holdout split and action draws of ``docs/results/defaults.md``,
   5 repetitions), each stream's K actions given as ``{"a<k>": 1}``: the best mean on 15
   streams, scored on the 16th; the default is the best on all 16. VW's ADF explorers at
   their defaults (``bench/experiments/defaults.py``'s runs: the same protocol and ``-q sa``) are
   reported beside them.

The report checks that the defaults of actions with features of their own
(`regcb_stream.defaults.MODEL_CLASSES`) are
the choice. Rankings (actions sharing every feature, the midpoint prior) are chosen in
``bench/experiments/joint_defaults.py``.

From the repository root::

    .venv/bin/python -m bench.experiments.joint_budget [--jobs 2] [--reps 5]   # ~40 minutes

Runs are kept in ``results/joint_budget.jsonl`` (resumable); writes
``docs/results/joint_budget.md``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
from collections import defaultdict

import numpy as np

from bench.experiments.defaults import (
    LONG_ROUNDS,
    LONG_SEEDS,
    MAX_GROWTH,
    VW_DEFAULTS,
    choose,
    leave_one_out,
    long_growth,
    mean_reward,
)
from bench.experiments.feature_ridge import peer_means
from bench.harness import problems, protocol
from bench.harness.protocol import Step, sample
from bench.provenance import stamp
from bench.runs import run_missing
from regcb_stream import RegCB, RidgeOracle
from regcb_stream.datasets.synthetic import realizable_sample
from regcb_stream.defaults import MODEL_CLASSES

ROOT = pathlib.Path(__file__).resolve().parents[2]
STREAMS = problems.UCI_STREAMS
GRID = {f"l2={l2:g} mellowness={c:g}": (l2, c)
        for l2 in (1.0, 3.0) for c in (1e-3, 3e-3, 1e-2, 3e-2)}


def joint_learner(name: str, seed: int) -> RegCB:
    """``RegCB()`` with the ridge weight and mellowness of configuration ``name``."""
    l2, mellowness = GRID[name]
    return RegCB(oracle=RidgeOracle(l2=l2, prior="auto"), mellowness=mellowness, seed=seed)


def joint_regret(learner: RegCB, seed: int) -> list[float]:
    """Cumulative regret at T/2 and T of ``learner`` on the long realizable problem of
    ``seed`` with the actions given as dicts of their own indicator features, one round at
    a time."""
    X, means, rewards = realizable_sample(LONG_ROUNDS, seed)
    actions = [{f"a{k}": 1.0} for k in range(means.shape[1])]
    names = [f"x{i}" for i in range(X.shape[1])]
    played = np.empty(LONG_ROUNDS, dtype=np.intp)
    for t, x in enumerate(X.tolist()):
        context = dict(zip(names, x))
        action, prob, info = learner.predict(context, actions)
        played[t] = actions.index(action)
        learner.learn(context, action, rewards[t, played[t]], prob, **info)
    regret = np.cumsum(means.max(axis=1) - means[np.arange(LONG_ROUNDS), played])
    return [float(regret[LONG_ROUNDS // 2 - 1]), float(regret[-1])]


class JointAlgorithm:
    """A joint learner under the protocol, the actions as indicator dicts."""

    def __init__(self, learner: RegCB, n_actions: int):
        self.learner = learner
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
    """Progressive reward of one (configuration, stream, repetition), or the regret at T/2
    and T of one (configuration, seed) on the long problem (stream ``"long"``)."""
    name, stream, rep = task
    record = {"name": name, "stream": stream, "rep": rep}
    if stream == "long":
        return {**record, "regret": joint_regret(joint_learner(name, rep), rep)}
    problem = problems.load_problem(stream, rep)
    algo = JointAlgorithm(joint_learner(name, rep), problem.n_actions)
    result = protocol.run_protocol(algo, problem, rep)
    return {**record, "progressive": result["progressive"], "seconds": result["seconds"]}


def summary(rows: list[dict]) -> tuple[dict, dict, list[str]]:
    """(mean progressive reward per (configuration, stream), largest growth per
    configuration, the eligible configurations)."""
    values = defaultdict(list)
    for r in rows:
        if r["stream"] != "long":
            values[(r["name"], r["stream"])].append(r["progressive"])
    means = {key: float(np.mean(v)) for key, v in values.items()}
    growth = long_growth(rows)
    return means, growth, [g for g in GRID if growth[g] <= MAX_GROWTH]


def report(rows: list[dict], peers: dict, command: str) -> str:
    means, growth, eligible = summary(rows)
    held = {s: g for s, (g, _) in leave_one_out(means, mean_reward, eligible).items()}
    chosen = choose(means, STREAMS, mean_reward, eligible)
    default = (f"l2={MODEL_CLASSES['own features'].l2:g} "
               f"mellowness={MODEL_CLASSES['own features'].mellowness:g}")
    mean_of = {g: np.mean([means[(g, s)] for s in STREAMS]) for g in GRID}
    lines = [
        "# The joint model's default budget (actions given by their own features)",
        "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs",
        "- protocol: the harness's (`docs/results/defaults.md`), progressive reward; `RegCB(oracle="
        "RidgeOracle(l2, prior=\"auto\"), mellowness=c)` with each stream's actions as "
        "`{\"a<k>\": 1}` (the joint model: context, indicators and their products); VW at "
        "its defaults with `-q sa` (`bench/experiments/defaults.py`'s runs)",
        f"- eligible: regret growth R(T)/R(T/2) <= {MAX_GROWTH} at T = {LONG_ROUNDS:,} on "
        "the realizable linear problem with the same action dicts, seeds "
        f"{LONG_SEEDS.start}-{LONG_SEEDS.stop - 1}",
        "",
        "| stream | chosen on the other 15 | held out | " + " | ".join(GRID) + " | "
        + " | ".join(VW_DEFAULTS) + " |",
        "|---|---|---:|" + "---:|" * (len(GRID) + len(VW_DEFAULTS)),
    ]
    for s in STREAMS:
        lines.append(f"| {s} | {held[s]} | {means[(held[s], s)]:.4f} | "
                     + " | ".join(f"{means[(g, s)]:.4f}" for g in GRID) + " | "
                     + " | ".join(f"{peers[(p, s)]:.4f}" for p in VW_DEFAULTS) + " |")
    lines += [
        f"| **mean** | | **{np.mean([means[(held[s], s)] for s in STREAMS]):.4f}** | "
        + " | ".join(f"{mean_of[g]:.4f}" for g in GRID) + " | "
        + " | ".join(f"{np.mean([peers[(p, s)] for s in STREAMS]):.4f}" for p in VW_DEFAULTS)
        + " |",
        "| at or above every VW default, streams | | | " + " | ".join(
            f"{sum(all(means[(g, s)] >= peers[(p, s)] for p in VW_DEFAULTS) for s in STREAMS)}"
            "/16" for g in GRID) + " |" + " – |" * len(VW_DEFAULTS),
        "| largest regret growth at the long horizon | | | "
        + " | ".join(f"{growth[g]:.2f}" for g in GRID) + " |" + " – |" * len(VW_DEFAULTS),
        "",
        f"Eligible: {len(eligible)} of {len(GRID)}. Chosen on all 16 streams: **{chosen}**.",
        "",
        f"The cumulative regret at T = {LONG_ROUNDS:,} per seed (growth):",
        "",
        "| configuration | " + " | ".join(f"seed {s}" for s in LONG_SEEDS) + " |",
        "|---|" + "---:|" * len(LONG_SEEDS),
    ]
    regret = {(r["name"], r["rep"]): r["regret"] for r in rows if r["stream"] == "long"}
    for g in GRID:
        lines.append(f"| {g} | " + " | ".join(
            f"{regret[(g, s)][1]:,.0f} ({regret[(g, s)][1] / regret[(g, s)][0]:.2f})"
            for s in LONG_SEEDS) + " |")
    lines += ["", f"`RegCB()`'s ridge weight and budget for actions with features of their "
              f"own ({default}) are the choice: checked." if chosen == default else
              f"**`RegCB()`'s ridge weight and budget for actions with features of their own "
              f"({default}) are NOT the choice.**"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--results", default=str(ROOT / "results" / "joint_budget.jsonl"))
    parser.add_argument("--peers", default=str(ROOT / "results" / "defaults.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "joint_budget.md"))
    args = parser.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    tasks = [(g, "long", s) for g in GRID for s in LONG_SEEDS]
    tasks += [(g, s, r) for g in GRID for s in STREAMS for r in range(args.reps)]
    rows, _ = run_missing(args.results, tasks, run,
                          lambda r: (r["name"], r["stream"], r["rep"]), args.jobs)
    command = "python -m bench.experiments.joint_budget" + (" " + " ".join(argv) if argv else "")
    text = report(rows, peer_means(args.peers, args.reps), command)
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
