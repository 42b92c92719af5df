"""RegCB with each regression oracle against Vowpal Wabbit's explorers on the UCI streams.

Two measurements:

1. Throughput: rounds per second of the per-example ``predict``/``learn`` loop on the first
   8,000 rounds of clean ``letter`` for RegCB with each oracle (both variants, one budget
   each), and of :func:`bench.vw_explorers.run_vw`'s loop for each VW
   explorer, one after the other in the main process, before the sweep.
2. Progressive reward on the 10 streams of ``bench/experiments/progressive_reward.py`` (letter,
   optdigits, pendigits, satimage, vehicle; clean and noisy), seeds 0, 1, 2, with the same
   stream and sampler seed for every algorithm:

   * RegCB, oracles ``"ridge"``, ``"vw"``, River's plain-SGD ``LinearRegression``
     (learning rate ``lr / sqrt(t)`` on weights and intercept, ``lr = 0.5 / d`` for ``d``
     context features, and the issue's ``lr = 0.3`` at one budget) and GB5 (gradient-boosted
     trees, :class:`regcb_stream.oracles.trees.TreesOracle`), each over budgets of both
     families (constant ``beta`` and VW's ``mellowness``; grids below, chosen by a probe on
     short streams). Schedule ``"online"`` except GB5 (``"sqrt2"``, the paper's, run with the
     block API ``predict_many``/``learn_many``, which makes the same decisions as
     ``predict``/``learn`` row by row). GB5 sees the first 4,000 rounds of ``letter`` only.
   * VW: ``--squarecb`` (gamma scale), epsilon-greedy, ``--bag``, ``--cover``, cost encoding
     ``01``; ``--regcb``/``--regcbopt`` as in ``progressive_reward.py``.

   The ridge and VW-RegCB runs of ``progressive_reward.py`` are reused from
   ``bench/results/progressive_reward.jsonl`` when the streams are full length (they are
   deterministic); missing ones are run. The report gives, per stream, the best fixed setting
   (highest mean over seeds) of each oracle and of each VW explorer, and the bar: RegCB with
   its best oracle beats VW's best explorer of any kind on at least 8 of the 10 streams.
   GB5's truncated ``letter`` runs are compared with every algorithm's first 4,000 rounds
   (ridge and VW RegCB re-run on them) and do not enter the bar.

Writes ``docs/results/oracles.md`` and ``bench/results/oracles.jsonl`` (one record per run, a
``meta`` record first) and prints the markdown.

Notes
-----
From the repository root::

    .venv/bin/python -m bench.experiments.oracles [--seeds 3] [--jobs 2]
    .venv/bin/python -m bench.experiments.oracles --render    # rebuild the .md from the .jsonl
    .venv/bin/python -m bench.experiments.oracles --update    # run only what the .jsonl lacks
    .venv/bin/python -m bench.experiments.oracles --quick     # smoke run: vehicle, 300 rounds

The full run takes about 30 minutes on 2 busy cores. Rewards are deterministic given the
seeds; only the timings vary.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import pathlib
import sys
import time

import numpy as np
from river import linear_model, optim

from bench.experiments import progressive_reward as pr
from bench.provenance import command_line
from bench.vw_explorers import run_vw
from regcb_stream import RegCB
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.oracles.river import RiverOracle
from regcb_stream.oracles.trees import TreesOracle

ROOT = pr.ROOT
REPORT = ROOT / "docs" / "results" / "oracles.md"
DATA = ROOT / "bench" / "results" / "oracles.jsonl"
REUSED = pr.DATA
VARIANTS = pr.VARIANTS
#: oracle -> budgets, as ("beta" | "mellowness", value)
BUDGETS = {
    "vw": [("beta", b) for b in (1e-3, 1e-4, 1e-5)]
    + [("mellowness", c) for c in (1e-1, 1e-2, 1e-3)],
    "river": [("beta", b) for b in (1e-3, 1e-4, 1e-5)]
    + [("mellowness", c) for c in (1e-1, 1e-2, 1e-3)],
    "river-lr0.3": [("mellowness", 1e-2)],
    "gb5": [("beta", b) for b in (1e-4, 1e-5)] + [("mellowness", c) for c in (1e-3, 1e-4)],
}
ORACLE_NAMES = ("ridge", "ridge-optimistic", *BUDGETS)
#: explorer -> parameter values (VW flags in ``bench.vw_explorers.EXPLORERS``)
EXPLORER_GRID = {
    "squarecb": (1.0, 10.0, 100.0, 1000.0),
    "epsilon": (0.01, 0.05, 0.1, 0.2),
    "bag": (4, 8, 16),
    "cover": (4, 8, 16),
}
PARAM_NAMES = {"squarecb": "γ", "epsilon": "ε", "bag": "bag", "cover": "cover"}
EXPLORER_NAMES = ("--regcb", "--regcbopt", *(f"--{e}" for e in EXPLORER_GRID))
GB5_ROUNDS = {"letter": 4_000}  # GB5 runs on these prefixes only
PREFIX = 4_000  # every run on letter also records its reward over these first rounds
THROUGHPUT_ROUNDS = 8_000
LENGTHS = {"letter": 20_000, "optdigits": 5_620, "pendigits": 10_992, "satimage": 6_435,
           "vehicle": 846}  # stream lengths, to start the long runs first
#: throughput runs: oracle -> budget; VW explorer -> parameter
THROUGHPUT_BUDGET = {"ridge": ("mellowness", 1e-2), "vw": ("mellowness", 1e-2),
                     "river": ("mellowness", 1e-2), "gb5": ("beta", 1e-5)}
THROUGHPUT_VW = {"regcb": 1e-3, "regcbopt": 1e-3, "squarecb": 10.0, "epsilon": 0.05,
                 "bag": 8, "cover": 8}


# -- settings and tasks ---------------------------------------------------------------------


def oracle_settings() -> list[dict]:
    """RegCB settings of the new oracles: (oracle, variant, budget)."""
    return [
        {"algo": "regcb", "oracle": oracle, "variant": variant, family: value}
        for oracle, budgets in BUDGETS.items() for variant in VARIANTS
        for family, value in budgets
    ]


def explorer_settings() -> list[dict]:
    """VW explorer settings (cost encoding ``01``)."""
    return [{"algo": "vw", "explorer": e, "param": p, "encoding": "01"}
            for e, params in EXPLORER_GRID.items() for p in params]


def label(setting: dict) -> str:
    """Short name of a setting; the ridge and VW-RegCB ones as in ``progressive_reward``."""
    if setting["algo"] == "regcb":
        budget = (f"β={setting['beta']:.0e}" if "beta" in setting
                  else f"c0={setting['mellowness']:.0e}")
        return f"{setting['oracle']}: {setting['variant']} {budget}"
    if setting["algo"] == "vw" and "param" in setting:
        name = PARAM_NAMES[setting["explorer"]]
        return f"--{setting['explorer']} {name}={setting['param']:g} enc={setting['encoding']}"
    return pr.setting_label(setting)


def family(record: dict) -> str:
    """Oracle name (RegCB), ``--explorer`` (VW) or the reference's name."""
    if record["algo"] in ("ours", "regcb"):
        return "ridge-optimistic" if record.get("prior") else record.get("oracle", "ridge")
    if record["algo"] == "vw":
        return f"--{record['explorer']}"
    return record["algo"]


def new_tasks(datasets, seeds, rounds: int | None) -> list[dict]:
    """Tasks of the new oracles and explorers; GB5 on its prefixes (``GB5_ROUNDS``)."""
    settings = [s for s in oracle_settings() if s["oracle"] != "gb5"] + explorer_settings()
    tasks = pr.make_tasks(datasets, seeds, settings, rounds)
    gb5 = [s for s in oracle_settings() if s["oracle"] == "gb5"]
    for d in datasets:
        cap = min(filter(None, (rounds, GB5_ROUNDS.get(d))), default=None)
        tasks += pr.make_tasks([d], seeds, gb5, cap)
    return tasks


def reference_tasks(datasets, seeds, rounds, reused: list[dict]) -> list[dict]:
    """The ``progressive_reward`` runs not among ``reused``, and its ridge and VW-RegCB
    settings on the prefixes where GB5 is truncated (for the prefix comparison)."""
    done = {(r["dataset"], r["noisy"], r["seed"], r["label"]) for r in reused}
    tasks = [t for t in pr.make_tasks(datasets, seeds, pr.all_settings(), rounds)
             if (t["dataset"], t["noisy"], t["seed"], label(t["setting"])) not in done]
    learners = [s for s in pr.all_settings() if s["algo"] in ("ours", "vw")]
    for d in datasets:
        if d in GB5_ROUNDS and (rounds is None or rounds > GB5_ROUNDS[d]):
            tasks += pr.make_tasks([d], seeds, learners, GB5_ROUNDS[d])
    return tasks


def load_reused(datasets, seeds, rounds: int | None) -> list[dict]:
    """Full-length records of ``progressive_reward.jsonl`` for these streams and seeds."""
    if rounds is not None or not REUSED.is_file():
        return []
    with open(REUSED, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    return [{**r, "reused": True} for r in records
            if r["dataset"] in datasets and r["seed"] in seeds]


# -- runs -----------------------------------------------------------------------------------


def river_linear(lr: float) -> RiverOracle:
    """River's plain-SGD linear regression, rate ``lr / sqrt(t)`` (closed-form bounds)."""
    rate = optim.schedulers.InverseScaling(lr, power=0.5)
    return RiverOracle(linear_model.LinearRegression(optimizer=optim.SGD(rate),
                                                     intercept_lr=rate))


def make_oracle(name: str, dim: int, seed: int):
    """The oracle argument of ``RegCB`` for ``name``, on contexts with ``dim`` features."""
    if name == "river":
        return river_linear(0.5 / dim)
    if name == "river-lr0.3":
        return river_linear(0.3)
    if name == "gb5":
        return TreesOracle(seed=seed)
    return name


def make_learner(setting: dict, dim: int, seed: int) -> RegCB:
    """RegCB for a setting: schedule ``"sqrt2"`` for GB5, ``"online"`` otherwise."""
    budget = ({"beta": setting["beta"]} if "beta" in setting
              else {"budget": "mellowness", "mellowness": setting["mellowness"]})
    schedule = "sqrt2" if setting["oracle"] == "gb5" else "online"
    oracle = make_oracle(setting["oracle"], dim, seed)
    return RegCB(setting["variant"], oracle=oracle, schedule=schedule, seed=seed, **budget)


def example_rewards(learner: RegCB, X: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Rewards of the per-example ``predict``/``learn`` loop."""
    actions = list(range(R.shape[1]))
    rewards = np.empty(len(X))
    for t, (x, row) in enumerate(zip(X, R)):
        action, prob, info = learner.predict(x, actions)
        rewards[t] = row[action]
        learner.learn(x, action, rewards[t], prob, **info)
    return rewards


def block_rewards(learner: RegCB, X: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Rewards of the block loop: one ``predict_many``/``learn_many`` per epoch (the same
    decisions and draws as :func:`example_rewards`)."""
    actions = list(range(R.shape[1]))
    rewards = np.empty(len(X))
    start = 0
    while start < len(X):
        stop = min(len(X), start + learner.labels_until_rebuild)
        index, prob = learner.predict_many(X[start:stop], actions)
        rewards[start:stop] = R[np.arange(start, stop), index]
        learner.learn_many(X[start:stop], index.tolist(), rewards[start:stop], prob)
        start = stop
    return rewards


def regcb_rewards(X: np.ndarray, R: np.ndarray, setting: dict, seed: int) -> np.ndarray:
    """Per-round rewards of RegCB with a setting's oracle (block loop for GB5)."""
    learner = make_learner(setting, X.shape[1], seed)
    loop = block_rewards if setting["oracle"] == "gb5" else example_rewards
    return loop(learner, X, R)


def run_task(task: dict) -> dict:
    """Run one (stream, seed, setting); ``progressive_reward``'s own settings go to its
    ``run_task``."""
    s = task["setting"]
    if s["algo"] != "regcb" and "param" not in s:
        return {**pr.run_task(task), "kind": "progressive"}
    X, R = pr._stream(task["dataset"], task["noisy"], task["seed"], task["rounds"])
    start = time.perf_counter()
    if s["algo"] == "regcb":
        rewards = regcb_rewards(X, R, s, task["seed"])
    else:
        rewards = run_vw(X, R, s["explorer"], s["param"], task["seed"], s["encoding"])["rewards"]
    record = {"kind": "progressive", "dataset": task["dataset"], "noisy": task["noisy"],
              "seed": task["seed"], **s, "label": label(s), "rounds": len(X),
              "progressive_reward": float(rewards.mean()),
              "seconds": round(time.perf_counter() - start, 3)}
    if len(X) > PREFIX:
        record["prefix_reward"] = float(rewards[:PREFIX].mean())
    return record


def _init_worker() -> None:
    """One BLAS thread per worker (GB5's leaf inverses would oversubscribe the cores)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1)


def _run_indexed(item: tuple[int, dict]) -> tuple[int, dict]:
    return item[0], run_task(item[1])


def run_all(tasks: list[dict], jobs: int, log=None) -> list[dict]:
    """Run the tasks, longest first, in a pool of ``jobs`` processes (``jobs > 1``);
    records in task order (``progressive_reward``'s progress log)."""
    records: list[dict | None] = [None] * len(tasks)
    order = sorted(enumerate(tasks), key=_cost, reverse=True)
    if jobs > 1:
        with multiprocessing.Pool(jobs, initializer=_init_worker) as pool:
            pr._collect(pool.imap_unordered(_run_indexed, order), records, log)
    else:
        pr._collect(map(_run_indexed, order), records, log)
    return records


def _cost(item: tuple[int, dict]) -> float:
    """A rough relative run time, to start the long tasks first."""
    task = item[1]
    rounds = task["rounds"] or LENGTHS.get(task["dataset"], 5_000)
    return rounds * (10.0 if task["setting"].get("oracle") == "gb5" else 1.0)


# -- throughput -----------------------------------------------------------------------------


def throughput(rounds: int) -> list[dict]:
    """Rounds/s on the first ``rounds`` rounds of clean letter (seed 0), one run each."""
    X, R = bandit_stream("letter", False, 0)
    X, R = X[:rounds], R[:rounds]
    rows = []
    for oracle, (kind, value) in THROUGHPUT_BUDGET.items():
        for variant in VARIANTS:
            setting = {"algo": "regcb", "oracle": oracle, "variant": variant, kind: value}
            rows.append(_time_regcb(X, R, setting, example_rewards, "per-example"))
            if oracle == "gb5":
                rows.append(_time_regcb(X, R, setting, block_rewards, "block"))
    for explorer, param in THROUGHPUT_VW.items():
        out = run_vw(X, R, explorer, param, 0)
        rows.append({"kind": "throughput", "algo": "vw", "explorer": explorer, "param": param,
                     "loop": "per-example", "rounds": rounds,
                     "progressive_reward": out["progressive_reward"],
                     "seconds": out["seconds"], "rounds_per_sec": out["rounds_per_sec"]})
    return rows


def _time_regcb(X, R, setting: dict, loop, loop_name: str) -> dict:
    learner = make_learner(setting, X.shape[1], 0)
    start = time.perf_counter()
    rewards = loop(learner, X, R)
    seconds = time.perf_counter() - start
    return {"kind": "throughput", **setting, "schedule": learner.schedule, "loop": loop_name,
            "rounds": len(X), "progressive_reward": float(rewards.mean()),
            "seconds": seconds, "rounds_per_sec": len(X) / seconds}


# -- summaries ------------------------------------------------------------------------------


def full_length(records: list[dict]) -> list[dict]:
    """Records that cover their stream's longest run (drops GB5's and others' prefixes)."""
    longest: dict[tuple, int] = {}
    for r in records:
        key = (r["dataset"], r["noisy"])
        longest[key] = max(longest.get(key, 0), r["rounds"])
    return [r for r in records if r["rounds"] == longest[(r["dataset"], r["noisy"])]]


def best_by_family(records: list[dict]) -> dict[str, dict[str, tuple]]:
    """stream -> family -> (label, mean, std) of its best setting (mean over seeds)."""
    by_label = pr.mean_by_setting([{**r, "algo": family(r)} for r in records])
    out: dict[str, dict[str, tuple]] = {}
    for stream, labels in by_label.items():
        for fam in {v["algo"] for v in labels.values()}:
            out.setdefault(stream, {})[fam] = pr._best(labels, fam)
    return out


def head_to_head(best: dict[str, dict[str, tuple]]) -> list[dict]:
    """Per stream: RegCB's best oracle, VW's best explorer, the difference and the winner."""
    rows = []
    for stream, fams in best.items():
        ours = max(((f, *fams[f]) for f in ORACLE_NAMES if f in fams), key=lambda v: v[2])
        vw = max(((f, *fams[f]) for f in EXPLORER_NAMES if f in fams), key=lambda v: v[2])
        overall = ours if ours[2] >= vw[2] else vw
        rows.append({"stream": stream, "ours": ours, "vw": vw, "diff": ours[2] - vw[2],
                     "win": ours[2] > vw[2], "overall": overall,
                     "uniform": fams.get("uniform"), "supervised": fams.get("supervised")})
    return rows


def prefix_records(records: list[dict], prefix: int) -> list[dict]:
    """Records of streams where GB5 is truncated, as rewards over their first ``prefix``
    rounds (runs of exactly ``prefix`` rounds, or the prefix of longer runs)."""
    truncated = {r["dataset"] for r in records if family(r) == "gb5" and r["rounds"] == prefix}
    out = []
    for r in records:
        if r["dataset"] not in truncated:
            continue
        if r["rounds"] == prefix:
            out.append(r)
        elif "prefix_reward" in r:
            out.append({**r, "rounds": prefix, "progressive_reward": r["prefix_reward"]})
    return out


# -- report ---------------------------------------------------------------------------------


def render(records: list[dict], meta: dict) -> str:
    """The markdown report."""
    runs = [r for r in records if r.get("kind", "progressive") == "progressive"]
    best = best_by_family(full_length(runs))
    rows = head_to_head(best)
    lines = _header(meta) + _throughput_table([r for r in records if r.get("kind") ==
                                               "throughput"])
    lines += _bar_table(rows) + _family_tables(best)
    prefix = prefix_records(runs, PREFIX)
    if prefix:
        lines += _prefix_table(best_by_family(prefix))
    return "\n".join(lines) + "\n"


def _header(meta: dict) -> list[str]:
    length = "full length" if meta["rounds"] is None else f"first {meta['rounds']:,} rounds"
    gb5 = [f"{d} first {n:,} rounds" for d, n in GB5_ROUNDS.items()
           if d in meta["datasets"] and (meta["rounds"] or n + 1) > n]
    gb5 = ", ".join(gb5) + ", other streams as above" if gb5 else "streams as above"
    return [
        "# RegCB with each oracle vs VW's explorers",
        "",
        f"- command: `{meta['command']}`",
        f"- code: {meta['code']}",
        f"- date: {meta['date']}; total runtime {meta['runtime']:.0f} s ({meta['tasks']} new "
        f"runs, {meta['jobs']} worker processes; load average before / after: "
        f"{meta['load_before']} / {meta['load_after']}; another benchmark shared the cores)",
        f"- streams: {', '.join(meta['datasets'])}, clean and noisy; {length}; seeds "
        f"{meta['seeds']} (same stream and sampler seed for every algorithm)",
        f"- reused: {meta['reused']} ridge-RegCB, VW `--regcb`/`--regcbopt`, uniform and "
        "supervised runs from `bench/results/progressive_reward.jsonl` (same code path, "
        "deterministic; a sample of 256 re-ran bit for bit)"
        + (f"; {meta['kept']} runs kept from the previous `bench/results/oracles.jsonl` "
           "(`--update`: "
           "the oracles they ran have not changed, and runs are deterministic)"
           if meta.get("kept") else ""),
        "- RegCB oracles (both variants; schedule `online` except GB5):",
        "  - ridge: β ∈ {1e-1, …, 1e-8}, c0 ∈ {1e-4, …, 1e-1} (`progressive_reward.py`)",
        "  - ridge-optimistic (`RidgeOracle(l2=10, prior=\"optimistic\")`): the same grid "
        "(`progressive_reward.py`)",
        "  - vw (VW's regressor, exact weight condition): " + _grid("vw"),
        "  - river (River `LinearRegression`, SGD rate 0.5/d / √t on weights and intercept, "
        "d = context features): " + _grid("river"),
        "  - river-lr0.3 (the same with rate 0.3 / √t, as in the issue): " + _grid("river-lr0.3"),
        "  - gb5 (`TreesOracle()`: LightGBM, 100 trees of depth 5; schedule `sqrt2`, block API "
        f"`predict_many`/`learn_many`): {_grid('gb5')}; {gb5}",
        "- VW explorers (`--cb_explore_adf -q sa`, cost 1 − r): "
        + "; ".join(f"`--{e}` {PARAM_NAMES[e]} ∈ {{{', '.join(f'{p:g}' for p in ps)}}}"
                    for e, ps in EXPLORER_GRID.items())
        + "; `--regcb`/`--regcbopt` c0 ∈ {1e-4, …, 1e-1}, encodings `01` and `-10`",
        "- best setting: highest mean over seeds, chosen on the runs it is reported on; "
        "± is the std over seeds",
        "",
    ]


def _grid(oracle: str) -> str:
    betas = [f"{v:.0e}" for k, v in BUDGETS[oracle] if k == "beta"]
    mells = [f"{v:.0e}" for k, v in BUDGETS[oracle] if k == "mellowness"]
    parts = [f"β ∈ {{{', '.join(betas)}}}"] if betas else []
    return ", ".join(parts + ([f"c0 ∈ {{{', '.join(mells)}}}"] if mells else []))


def _throughput_table(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    lines = [
        f"## 1. Rounds per second, clean letter, first {rows[0]['rounds']:,} rounds (seed 0)",
        "",
        "One run each, in the main process before the sweep (timings indicative on a shared "
        "machine). RegCB: `predict`/`learn` per round (GB5 also with the block API); VW: "
        "`run_vw`'s parse/predict/learn loop.",
        "",
        "| algorithm | setting | loop | rounds/s | seconds | progressive reward |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in rows:
        name = (f"RegCB {r['oracle']} ({r['schedule']})" if r["algo"] == "regcb"
                else f"VW `--{r['explorer']}`")
        setting = (label(r).split(": ", 1)[1] if r["algo"] == "regcb"
                   else f"{_vw_param(r['explorer'])}={r['param']:g}")
        lines.append(f"| {name} | {setting} | {r['loop']} | {r['rounds_per_sec']:,.0f} "
                     f"| {r['seconds']:.2f} | {r['progressive_reward']:.4f} |")
    return lines + [""]


def _vw_param(explorer: str) -> str:
    return PARAM_NAMES.get(explorer, "c0")


def _bar_table(rows: list[dict]) -> list[str]:
    wins = sum(r["win"] for r in rows)
    need = pr.BAR if len(rows) == 10 else int(np.ceil(0.8 * len(rows)))
    lines = [
        "## 2. RegCB's best oracle vs VW's best explorer (mean progressive reward over seeds)",
        "",
        "| stream | RegCB best | oracle: setting | VW best | explorer setting | RegCB − VW "
        "| RegCB wins | best overall | uniform | supervised |",
        "|---|---:|---|---:|---|---:|:---:|---|---:|---:|",
    ]
    for r in rows:
        ours, vw = r["ours"], r["vw"]
        ref = [f"{r[k][1]:.4f}" if r[k] else "—" for k in ("uniform", "supervised")]
        lines.append(
            f"| {r['stream']} | {ours[2]:.4f} ± {ours[3]:.4f} | {_with_family(ours)} "
            f"| {vw[2]:.4f} ± {vw[3]:.4f} | {vw[1]} | {r['diff']:+.4f} "
            f"| {'yes' if r['win'] else 'no'} | {_with_family(r['overall'])} "
            f"| {ref[0]} | {ref[1]} |")
    verdict = "PASS" if wins >= need else "FAIL"
    return lines + [
        "",
        f"**Bar: RegCB with its best oracle beats VW's best explorer of any kind on at least "
        f"{need} of {len(rows)} streams: {wins}/{len(rows)} → {verdict}**",
        "",
    ]


def _with_family(best: tuple) -> str:
    """``family: setting`` of a (family, label, mean, std) tuple."""
    fam, lab = best[0], best[1]
    return lab if lab.startswith("--") else f"{fam}: {lab.split(': ', 1)[-1]}"


def _family_tables(best: dict[str, dict[str, tuple]]) -> list[str]:
    return (
        _cells_table("## 3. Best fixed setting of each RegCB oracle (mean over seeds)",
                     best, ORACLE_NAMES)
        + _cells_table("## 4. Best fixed setting of each VW explorer (mean over seeds)",
                       best, EXPLORER_NAMES)
    )


def _cells_table(title: str, best: dict, families) -> list[str]:
    present = [f for f in families if any(f in fams for fams in best.values())]
    lines = [title, "", "| stream | " + " | ".join(f"`{f}`" for f in present) + " |",
             "|---|" + "---|" * len(present)]
    for stream, fams in best.items():
        top = max(fams[f][1] for f in present if f in fams)
        cells = [_cell(fams.get(f), top) for f in present]
        lines.append(f"| {stream} | " + " | ".join(cells) + " |")
    return lines + ["", "Bold: the best of the row. Cells: mean (setting).", ""]


def _cell(best: tuple | None, top: float) -> str:
    if best is None:
        return "—"
    value = f"{best[1]:.4f}"
    value = f"**{value}**" if best[1] == top else value
    return f"{value} ({_setting_part(best[0])})"


def _setting_part(lab: str) -> str:
    """The parameters of a label, without the oracle or explorer name."""
    lab = lab.split(": ", 1)[-1]
    return lab.split(" ", 1)[1] if lab.startswith("--") else lab


def _prefix_table(best: dict[str, dict[str, tuple]]) -> list[str]:
    names = (*ORACLE_NAMES, *EXPLORER_NAMES)
    return _cells_table(
        f"## 5. First {PREFIX:,} rounds of the streams where GB5 is truncated "
        "(mean over seeds; not in the bar)", best, names)


# -- main -----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--rounds", type=int, default=None, help="truncate every stream")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: vehicle, 300 rounds, 1 seed, no files")
    parser.add_argument("--render", action="store_true",
                        help="only rebuild the markdown from the .jsonl")
    parser.add_argument("--update", action="store_true",
                        help="keep the runs of the existing .jsonl (deterministic) and run "
                             "only the missing ones; throughput is measured again")
    parser.add_argument("--output", default=None,
                        help="path prefix of the .md and .jsonl (default "
                             "docs/results/oracles.md and bench/results/oracles.jsonl; "
                             "none with --quick)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.rounds = 1, args.rounds or 300
    if args.output:  # the prefix of both files
        args.report, args.data = f"{args.output}.md", f"{args.output}.jsonl"
    else:  # the committed report and data (none with --quick)
        args.report, args.data = (None, None) if args.quick else (str(REPORT), str(DATA))
    return args


def sweep(args: argparse.Namespace) -> tuple[list[dict], dict]:
    """Throughput, then every progressive-reward run; returns the records and the meta."""
    datasets = ("vehicle",) if args.quick else pr.DATASETS
    seeds = list(range(args.seeds))
    load_before = _load()
    start = time.perf_counter()
    speed = throughput(args.rounds or THROUGHPUT_ROUNDS)
    reused = load_reused(datasets, seeds, args.rounds)
    tasks = new_tasks(datasets, seeds, args.rounds)
    tasks += reference_tasks(datasets, seeds, args.rounds, reused)
    kept = _kept_runs(args) if args.update else []
    done = {_run_key(r) for r in kept}
    tasks = [t for t in tasks if _task_key(t) not in done]
    log = (lambda msg: print(msg, file=sys.stderr))
    runs = kept + run_all(tasks, args.jobs, log=log)
    meta = {
        "kind": "meta", "command": command_line(), "code": pr.code_version(),
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "runtime": time.perf_counter() - start, "tasks": len(tasks) + len(speed),
        "jobs": args.jobs, "datasets": list(datasets), "rounds": args.rounds, "seeds": seeds,
        "reused": len(reused), "kept": len(kept), "load_before": load_before,
        "load_after": _load(),
    }
    return [meta, *speed, *runs], meta


def _kept_runs(args: argparse.Namespace) -> list[dict]:
    """The progressive-reward runs of the existing ``.jsonl``."""
    path = pathlib.Path(args.data)
    if not path.is_file():
        return []
    with open(path, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    return [r for r in records if r.get("kind") == "progressive"]


def _run_key(record: dict) -> tuple:
    return record["dataset"], record["noisy"], record["seed"], record["label"], record["rounds"]


def _task_key(task: dict) -> tuple:
    X, _ = pr._stream(task["dataset"], task["noisy"], task["seed"], task["rounds"])
    return task["dataset"], task["noisy"], task["seed"], label(task["setting"]), len(X)


def _load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> str:
    args = parse_args(argv)
    if args.render:
        with open(args.data, encoding="utf-8") as fh:
            records = [json.loads(line) for line in fh]
        meta = records[0]
        reused = load_reused(meta["datasets"], meta["seeds"], meta["rounds"])
    else:
        records, meta = sweep(args)
        reused = load_reused(meta["datasets"], meta["seeds"], meta["rounds"])
        if args.report:
            with open(args.data, "w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(record) + "\n" for record in records)
    text = render(records[1:] + reused, meta)
    if args.report:
        pathlib.Path(args.report).write_text(text, encoding="utf-8")
    print(text)
    return text


if __name__ == "__main__":
    main()
