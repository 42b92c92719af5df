"""Regret growth at a long horizon: each configuration of the defaults' grid, with and
without random features, on the realizable linear problem over 200,000 rounds.

The defaults' bar measures the regret growth R(T)/R(T/2) at T = 20,000 rounds; the streams
the defaults were chosen on have at most 48,842 rounds. A learner that stops exploring an
action it underrates shows it only later: its regret then grows linearly (growth 2). This
script runs every configuration of ``bench/experiments/defaults.py``'s grid (the linear stage of
the defaults: ``random_features=0``), the same with ``RegCB()``'s random features, and
``RegCB(select_model=True)``, on the long realizable problem of ``docs/results/change_detection.md``
(K = 5, d = 10, :data:`LONG_ROUNDS` rounds, seeds :data:`SEEDS`), and reports each one's
cumulative regret and growth; and the defaults themselves (``RegCB()`` and its linear model,
``RegCB(random_features=0)``), with the budgets they had before the long-horizon rule took
twelve seeds beside them, over the more seeds :data:`DEFAULT_SEEDS`, since a learner
that locks onto a worse action on one seed in a few dozen passes a handful of seeds. It
informs the choice; it does not make it (``bench/experiments/defaults.py`` and
``bench/experiments/feature_ridge.py`` do). Actions given as their own features (one joint
model): ``bench/experiments/joint_budget.py``.

From the repository root::

    .venv/bin/python -m bench.experiments.long_horizon [--jobs 2]   # ~15 minutes on 2 cores

Runs are kept in ``results/long_horizon.jsonl`` (resumable); writes
``docs/results/long_horizon.md``.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from bench.experiments.defaults import (
    GRID,
    LONG_ROUNDS,
    LONG_SEEDS,
    MAX_GROWTH,
    grid_learner,
    long_regret,
)
from bench.provenance import stamp
from bench.runs import run_missing
from regcb_stream import RegCB
from regcb_stream.defaults import MODEL_CLASSES

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEEDS = (0, 1)
FEATURES = {"linear": {"random_features": 0}, "random features": {"random_features": 64}}
SELECTING = "RegCB(select_model=True)"
DEFAULTS = {"RegCB()": {}, "RegCB(random_features=0)": {"random_features": 0},
            # the budgets before the rule took twelve seeds
            "RegCB(mellowness=0.001)": {"mellowness": 1e-3},
            "RegCB(random_features=0, mellowness=0.001)": {"random_features": 0,
                                                           "mellowness": 1e-3}}
DEFAULT_SEEDS = range(24)


def learner(name: str, features: str, seed: int) -> RegCB:
    """A grid configuration (``name``) with or without random features, model selection,
    or one of the :data:`DEFAULTS`."""
    if name == SELECTING:
        return RegCB(seed=seed, select_model=True)
    if features == "default":
        return RegCB(seed=seed, **DEFAULTS[name])
    return grid_learner(name, seed, **FEATURES[features])


def run(task: tuple) -> dict:
    name, features, seed = task
    half, whole = long_regret(learner(name, features, seed), seed)
    return {"name": name, "features": features, "seed": seed, "regret": [half, whole]}


def report(rows: list[dict], command: str) -> str:
    by = {(r["name"], r["features"], r["seed"]): r["regret"] for r in rows}
    lines = [
        "# Regret growth at a long horizon",
        "",
        f"- command: `{command}`",
        f"- {stamp()}; the realizable linear problem (K = 5, d = 10), {LONG_ROUNDS:,} rounds, "
        f"seeds {', '.join(map(str, SEEDS))}; cumulative regret at T and the growth "
        "R(T)/R(T/2) (1.0: regret stopped growing, 2.0: linear)",
        "- configurations: `bench/experiments/defaults.py`'s grid (the optimistic ridge with its "
        "prior weight l2, the budget's mellowness or the automatic budget), on the contexts as "
        "they are (linear) and with `RegCB()`'s random features; and model selection",
        "",
        "| configuration | " + " | ".join(f"{f}, seed {s}" for f in FEATURES for s in SEEDS)
        + " | largest growth, linear | largest growth, random features |",
        "|---|" + "---:|" * (len(FEATURES) * len(SEEDS) + 2),
    ]
    for name in GRID:
        cells, worst = [], {}
        for features in FEATURES:
            growth = []
            for seed in SEEDS:
                half, whole = by[(name, features, seed)]
                growth.append(whole / half)
                cells.append(_cell(half, whole))
            worst[features] = max(growth)
        lines.append(f"| {name} | " + " | ".join(cells) + " | "
                     + " | ".join(f"{worst[f]:.2f}" for f in FEATURES) + " |")
    selecting = [by[(SELECTING, "-", seed)] for seed in SEEDS]
    lines += ["", f"{SELECTING}: " + "; ".join(
        f"seed {s} {w:,.0f} ({w / h:.2f})" for s, (h, w) in zip(SEEDS, selecting)) + ".",
        "", "The defaults (and the budget each had before the long-horizon rule took twelve "
        f"seeds) over {len(DEFAULT_SEEDS)} seeds: cumulative regret at T (growth), and the "
        f"seeds whose growth exceeds {MAX_GROWTH},", "",
        "| seed | " + " | ".join(DEFAULTS) + " |", "|---|" + "---:|" * len(DEFAULTS),
        *(f"| {seed} | " + " | ".join(_cell(*by[(n, "default", seed)]) for n in DEFAULTS)
          + " |" for seed in DEFAULT_SEEDS),
        "| growth above the rule's | " + " | ".join(", ".join(
            f"seed {seed}" for seed in DEFAULT_SEEDS
            if _ratio(*by[(n, "default", seed)]) > MAX_GROWTH) or "none" for n in DEFAULTS)
        + " |",
        "", f"`RegCB()` is `opti l2={MODEL_CLASSES['random features'].l2:g} "
        f"mellowness={MODEL_CLASSES['random features'].mellowness:g}` with "
        "random features (`docs/results/feature_ridge.md`); without them (dict contexts, "
        f"`random_features=0`) it is the linear model `opti l2={MODEL_CLASSES['linear'].l2:g} "
        f"mellowness={MODEL_CLASSES['linear'].mellowness:g}` (`docs/results/defaults.md`), "
        "each chosen with the "
        f"long-horizon rule on seeds {LONG_SEEDS.start}-{LONG_SEEDS.stop - 1}. Actions given "
        "as their own features (one joint model): `docs/results/joint_budget.md`."]
    return "\n".join(lines) + "\n"


def _ratio(half: float, whole: float) -> float:
    return whole / half


def _cell(half: float, whole: float) -> str:
    """Regret at T (growth)."""
    return f"{whole:,.0f} ({_ratio(half, whole):.2f})"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--results", default=str(ROOT / "results" / "long_horizon.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "long_horizon.md"))
    args = parser.parse_args(argv)
    tasks = [(n, f, s) for n in GRID for f in FEATURES for s in SEEDS]
    tasks += [(SELECTING, "-", s) for s in SEEDS]
    tasks += [(n, "default", s) for n in DEFAULTS for s in DEFAULT_SEEDS]
    rows, _ = run_missing(args.results, tasks, run,
                          lambda r: (r["name"], r["features"], r["seed"]), args.jobs)
    command = "python -m bench.experiments.long_horizon" + (" " + " ".join(argv) if argv else "")
    text = report(rows, command)
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
