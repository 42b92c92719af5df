"""Throughput of RegCB (per-example and vectorized) against Vowpal Wabbit driven from Python.

Runs on the first 16,000 rounds of the clean ``letter`` stream (K=26, d=16, permutation seed
0) and times the whole predict/learn loop of each configuration, best of 3 repetitions
(interleaved, so a competing process slows every configuration alike):

* ours, with RegCB's default budget and oracle: per-example API (``predict`` then ``learn``
  each round), both variants, schedules
  ``"online"`` and ``"sqrt2"``; and with ``"online"``, with model selection
  (``select_model=True``: the linear model learned beside the random-features one) and the
  linear model alone (``random_features=0``: without the default's 64 random features),
  neither barred, and with each context a dict of named numbers (River's form, barred as
  the arrays are; its actions are checked to be the arrays');
* ours, vectorized (``predict_many`` then ``learn_many`` per epoch block), both variants,
  schedules ``"sqrt2"`` and ``"doubling"``; each run is checked to play exactly the actions
  of the per-example API with the same seed and schedule;
* VW's ``--cb_explore_adf -q sa --regcb`` and ``--regcbopt`` (mellowness 1e-3, costs 1 - r)
  through :func:`bench.vw_explorers.run_vw` (its loop time), and VW's
  single-line ``--cb_explore 26`` with each explorer (:func:`run_vw_single_line`).

Bars: vectorized ≥ 10× VW ADF ``--regcb``; per-example, ``RegCB()``'s defaults (its variant
and the ``online`` schedule), arrays and dicts, ≥ 2× the faster VW explorer of each of VW's
two paths (issue 46: "RegCB() defaults"); the other variant's rows are shown beside, and the
``sqrt2`` rows, not barred (their labels wait for the epoch's end, outside the one-row
compiled path).

Writes ``docs/results/throughput.md`` and prints it.

Notes
-----
From the repository root::

    .venv/bin/python -m bench.experiments.throughput [--rounds 16000] [--reps 3] [--output PATH]

Takes about a minute.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import itertools
import os
import pathlib
import platform
import sys
import time

import numpy as np
from vowpalwabbit import Workspace

from bench.provenance import code_version, command_line
from bench.vw_explorers import run_vw
from regcb_stream import RegCB
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.defaults import VARIANT
from regcb_stream.explore.schedules import rebuild_points

ROOT = pathlib.Path(__file__).resolve().parents[2]
VARIANTS = ("elimination", "optimistic")  # each with RegCB's default budget and oracle
VW_MELLOWNESS = 1e-3
PER_EXAMPLE = [(v, s) for v in VARIANTS for s in ("online", "sqrt2")]
VECTORIZED = [(v, s) for v in VARIANTS for s in ("sqrt2", "doubling")]
VW = {"regcb": "elimination", "regcbopt": "optimistic"}


def run_per_example(X, R, variant: str, beta: float | None, schedule: str, seed: int = 0,
                    dicts: bool = False, **options) -> dict:
    """Stream ``(X, R)`` through ``predict`` and ``learn`` one round at a time (``beta``
    None: RegCB's default budget; ``dicts``: each context a dict of named numbers, as
    River's, made before the clock starts; ``options``: more of RegCB's parameters, e.g.
    ``random_features=0``).

    Returns
    -------
    dict
        ``actions`` (int array), ``progressive_reward`` and ``seconds`` (loop wall time).
    """
    actions = list(range(R.shape[1]))
    chosen = np.empty(len(X), dtype=np.int64)
    names = [f"x{j}" for j in range(X.shape[1])]
    contexts = [dict(zip(names, x)) for x in X.tolist()] if dicts else X
    start = time.perf_counter()
    learner = RegCB(variant, beta=beta, schedule=schedule, seed=seed, **options)
    for t, x in enumerate(contexts):
        action, prob, info = learner.predict(x, actions)
        chosen[t] = action
        learner.learn(x, action, R[t, action], prob, **info)
    seconds = time.perf_counter() - start
    return _result(R, chosen, seconds)


def epoch_blocks(schedule: str, n: int):
    """Slices of rounds ``0..n-1`` between consecutive rebuild points of ``schedule``."""
    points = itertools.chain([0], rebuild_points(schedule))
    start = next(points)
    while start < n:
        stop = min(next(points), n)
        yield slice(start, stop)
        start = stop


def run_vectorized(X, R, variant: str, beta: float | None, schedule: str, seed: int = 0) -> dict:
    """Stream ``(X, R)`` one epoch block at a time: ``predict_many`` then ``learn_many``.

    Returns
    -------
    dict
        As :func:`run_per_example`.
    """
    actions = list(range(R.shape[1]))
    chosen = np.empty(len(X), dtype=np.int64)
    start = time.perf_counter()
    learner = RegCB(variant, beta=beta, schedule=schedule, seed=seed)
    for block in epoch_blocks(schedule, len(X)):
        index, _ = learner.predict_many(X[block], actions)
        chosen[block] = index
        rewards = R[block][np.arange(len(index)), index]
        learner.learn_many(X[block], index.tolist(), rewards)
    seconds = time.perf_counter() - start
    return _result(R, chosen, seconds)


def run_vw_loop(X, R, explorer: str, seed: int = 0) -> dict:
    """VW's ``explorer`` with ADF examples (mellowness :data:`VW_MELLOWNESS`, costs
    ``1 - r``), as above."""
    out = run_vw(X, R, explorer, VW_MELLOWNESS, seed, "01")
    return _result(R, out["actions"], out["seconds"])


def run_vw_single_line(X, R, explorer: str, seed: int = 0) -> dict:
    """VW's single-line ``--cb_explore K`` with ``explorer`` (mellowness
    :data:`VW_MELLOWNESS`, costs ``1 - r``), per example from Python: each round's text
    (formatted before the loop) is predicted, the action drawn by inverse CDF, and the
    labelled text learned. (Labelling the parsed example in place, as ``run_vw`` does for
    ADF, leaves VW's single-line learner at uniform play: it does not take the label.)"""
    k = R.shape[1]
    flags = (f"--cb_explore {k} --{explorer} --mellowness {VW_MELLOWNESS} --quiet "
             f"--random_seed {seed}")
    lines = ["|s " + " ".join(f"f{j}:{v:.6g}" for j, v in enumerate(x)) for x in X.tolist()]
    uniforms = np.random.default_rng(seed).random(len(X)).tolist()
    chosen = np.empty(len(X), dtype=np.int64)
    ws = Workspace(flags)
    start = time.perf_counter()
    for t, (line, u) in enumerate(zip(lines, uniforms)):
        pmf = ws.predict(line)
        cdf = np.cumsum(pmf)
        action = min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), k - 1)
        ws.learn(f"{action + 1}:{1.0 - R[t, action]}:{pmf[action] / cdf[-1]} {line}")
        chosen[t] = action
    seconds = time.perf_counter() - start
    ws.finish()
    return _result(R, chosen, seconds)


def _result(R: np.ndarray, chosen: np.ndarray, seconds: float) -> dict:
    reward = float(R[np.arange(len(R)), chosen].mean())
    return {"actions": chosen, "progressive_reward": reward, "seconds": seconds}


def configurations() -> list[dict]:
    """Every timed configuration: name, kind and the function running it on ``(X, R)``."""
    rows = [
        _ours("per-example", run_per_example, variant, schedule)
        for variant, schedule in PER_EXAMPLE
    ]
    rows += [  # model selection and the linear model alone (not barred); dict contexts
        _ours("per-example", run_per_example, variant, "online", **options)
        for options in ({"select_model": True}, {"random_features": 0}, {"dicts": True})
        for variant in VARIANTS
    ]
    rows += [
        _ours("vectorized", run_vectorized, variant, schedule)
        for variant, schedule in VECTORIZED
    ]
    rows += [
        {
            "name": f"VW `--{explorer}` (mellowness {VW_MELLOWNESS:g})",
            "kind": "vw",
            "explorer": explorer,
            "run": lambda X, R, e=explorer: run_vw_loop(X, R, e),
        }
        for explorer in VW
    ]
    rows += [
        {
            "name": f"VW single-line `--cb_explore K --{explorer}` (mellowness "
                    f"{VW_MELLOWNESS:g})",
            "kind": "vw-single",
            "explorer": explorer,
            "run": lambda X, R, e=explorer: run_vw_single_line(X, R, e),
        }
        for explorer in VW
    ]
    return rows


def _ours(kind: str, fn, variant: str, schedule: str, **options) -> dict:
    """A configuration of ours: the defaults, or with ``options`` (a kind of its own)."""
    given = ", ".join(f"{k}={v}" for k, v in options.items())
    return {"name": f"ours {kind}, {variant}, `{schedule}`"
                    + (f", `{given}`" if options else " (default budget)"),
            "kind": f"{kind} ({given})" if options else kind, "variant": variant,
            "schedule": schedule,
            "run": lambda X, R: fn(X, R, variant, None, schedule, **options)}


def measure(X: np.ndarray, R: np.ndarray, reps: int, log=print) -> list[dict]:
    """Time every configuration ``reps`` times (round robin); keep the best time.

    Returns
    -------
    list of dict
        The configurations with ``seconds`` (best), ``rounds_per_sec``, ``actions`` and
        ``progressive_reward`` (checked identical across repetitions).
    """
    rows = configurations()
    for rep in range(reps):
        for row in rows:
            out = row["run"](X, R)
            if rep and not np.array_equal(out["actions"], row["actions"]):
                raise AssertionError(f"{row['name']}: actions differ between repetitions")
            row.update(actions=out["actions"], progressive_reward=out["progressive_reward"])
            row["seconds"] = min(row.get("seconds", np.inf), out["seconds"])
            log(f"rep {rep + 1}/{reps} {row['name']}: {len(X) / out['seconds']:,.0f} rounds/s")
    for row in rows:
        row["rounds_per_sec"] = len(X) / row["seconds"]
    return rows


def check_vectorized(X: np.ndarray, R: np.ndarray, rows: list[dict]) -> None:
    """Set ``same_actions`` on the vectorized rows and those of dict contexts: equal to a
    per-example run's actions on the arrays."""
    for row in rows:
        if row["kind"] not in ("vectorized", "per-example (dicts=True)"):
            continue
        variant, schedule = row["variant"], row["schedule"]
        reference = run_per_example(X, R, variant, None, schedule)
        row["same_actions"] = bool(np.array_equal(reference["actions"], row["actions"]))


def render(rows: list[dict], meta: dict) -> str:
    """The markdown report: header, table and the two bars."""
    vw = {row["explorer"]: row["rounds_per_sec"] for row in rows if row["kind"] == "vw"}
    lines = [
        "# Throughput: RegCB vs Vowpal Wabbit driven from Python",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; code: {meta['code']}",
        f"- machine: nproc {meta['nproc']} ({meta['cpu']}), load average before the run "
        f"{meta['load']}; python {meta['python']}, numpy {meta['numpy']}, "
        f"vowpalwabbit {meta['vowpalwabbit']}",
        f"- stream: first {meta['rounds']:,} rounds of `bandit_stream(\"letter\", False, "
        "seed=0)` (K=26, d=16); seed 0 for every sampler",
        f"- time: wall time of the whole predict/learn loop, best of {meta['reps']} "
        "repetitions (interleaved); VW: `run_vw`'s loop time (its text lines are formatted "
        "before the loop)",
        "",
        "| configuration | rounds/s | × VW `--regcb` | × VW `--regcbopt` "
        "| progressive reward | same actions as per-example |",
        "|---|---:|---:|---:|---:|:---:|",
    ]
    for row in rows:
        same = {True: "yes", False: "**NO**"}.get(row.get("same_actions"), "")
        lines.append(
            f"| {row['name']} | {row['rounds_per_sec']:,.0f} "
            f"| {row['rounds_per_sec'] / vw['regcb']:.2f} "
            f"| {row['rounds_per_sec'] / vw['regcbopt']:.2f} "
            f"| {row['progressive_reward']:.4f} | {same} |"
        )
    single = max(row["rounds_per_sec"] for row in rows if row["kind"] == "vw-single")
    lines += ["", "## Bars", ""]
    lines += _bar_lines(rows, "vectorized", 10.0, vw["regcb"], "VW ADF `--regcb`")
    defaults = [row for row in rows if row.get("schedule") == "online"
                and row.get("variant") == VARIANT]  # RegCB()'s defaults
    for kind in ("per-example", "per-example (dicts=True)"):  # issue 46: 2x, both paths
        lines += _bar_lines(defaults, kind, 2.0, max(vw.values()),
                            "VW ADF (faster explorer), default schedule")
        lines += _bar_lines(defaults, kind, 2.0, single,
                            "VW single-line (faster explorer), default schedule")
    return "\n".join(lines) + "\n"


def _bar_lines(rows: list[dict], kind: str, factor: float, vw_speed: float,
               against: str) -> list[str]:
    mine = [row for row in rows if row["kind"] == kind]
    verdict = "PASS" if all(r["rounds_per_sec"] >= factor * vw_speed for r in mine) else "FAIL"
    out = [
        f"- {kind} ≥ {factor:g}× {against} ({factor * vw_speed:,.0f} rounds/s): "
        f"**{verdict}**"
    ]
    for row in mine:
        ratio = row["rounds_per_sec"] / vw_speed
        mark = "PASS" if ratio >= factor else "FAIL"
        out.append(f"  - {row['name']}: {row['rounds_per_sec']:,.0f} rounds/s = {ratio:.2f}× "
                   f"({mark})")
    return out


def machine(args: argparse.Namespace) -> dict:
    """Header facts: command, date, cores, CPU, versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if "model name" in line)
    except (OSError, StopIteration):
        pass
    return {
        "command": command_line(),
        "code": code_version(),
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "load": ", ".join(f"{v:.2f}" for v in os.getloadavg()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "vowpalwabbit": importlib.metadata.version("vowpalwabbit"),
        "rounds": args.rounds,
        "reps": args.reps,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=16_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "throughput.md"))
    args = parser.parse_args(argv)
    meta = machine(args)
    X, R = bandit_stream("letter", False, seed=0)
    X, R = X[: args.rounds], R[: args.rounds]
    rows = measure(X, R, args.reps, log=lambda msg: print(msg, file=sys.stderr))
    check_vectorized(X, R, rows)
    text = render(rows, meta)
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
