"""How RegCB's defaults were chosen, and what a new user gets with them next to the peers.

1. **Choice, leave one dataset out.** Every configuration of :data:`GRID` (variant, weight
   of the optimistic ridge prior, mellowness of VW's budget form ``c ln(K n)``, online
   updates; a linear model: ``random_features=0``, whose map
   ``bench/experiments/random_features.py`` chose with ``l2 = 1`` and mellowness 1e-3, the choice
   of this script before the long-horizon rule below) runs on the 16 UCI
   streams x 5 repetitions of the harness's protocol
   (``bench.harness``: same streams, holdout split and action draws as
   ``docs/results/paper_evaluation.md``). For each stream, the configuration with the best mean
   progressive reward on the *other* 15 is scored on it: those held-out scores are what a
   default chosen this way earns on a stream it was not tuned on. "Best" is the smallest mean
   normalized relative loss (the paper's aggregate: per stream, the shortfall from the grid's best
   divided by the grid's range), so that every stream weighs alike whatever its spread; the
   report gives the plain mean's choice too. A configuration is eligible only if its regret
   does not grow linearly at a long horizon: R(T)/R(T/2) <= :data:`MAX_GROWTH` at
   T = :data:`LONG_ROUNDS` rounds of the realizable linear problem (K = 5, d = 10) for each
   of :data:`LONG_SEEDS`, ten times the bar's horizon and four times the longest stream's
   (an optimistic learner that stops exploring an action it underrates shows it late, and
   on one seed in a few dozen: twelve seeds, since budgets that pass four fail there). The
   linear model's default is the eligible configuration chosen on all 16; the report gives
   the choice without the rule too.
2. **What a new user gets.** ``RegCB()`` with no arguments (on dense contexts, the
   random-features model of ``docs/results/random_features.md``; without random features, on dict
   contexts or with ``random_features=0``, the linear model, which must be the chosen
   configuration: the script checks), next to each VW explorer at its default setting
   (``--cb_explore_adf -q sa`` plus ``--epsilon 0.05``, ``--squarecb``, ``--regcb``,
   ``--regcbopt``, and ``--regcbopt --mellowness 0.001``), River's
   ``bandit.LinUCBDisjoint()`` with its defaults, and VW's best explorer tuned per stream
   (the envelope of ``docs/results/paper_evaluation.md``, read from its table: same protocol
   and seeds).
   Letter's first 1,000 and 4,000 rounds (prefixes of the same runs: the protocol's draws do
   not depend on the length), the yahoo sample, and the regret growth R(T)/R(T/2) on the
   realizable linear problem (K = 5, d = 10, T = 20,000).
   The grid includes the automatic budget (``budget="auto"``: exponential weights over the
   mellowness candidates :data:`AUTO_GRID`, ``regcb_stream/explore/budget.py``).
3. **Where ``RegCB()`` trails a peer.** For each (stream, peer at its default) where
   ``RegCB()``'s mean over the repetitions is below the peer's, both run on
   :data:`MORE_REPS` repetitions in all (the protocol's next seeds), and the report gives
   the paired difference over them with its standard error: whether the shortfall is the
   stream's or the few repetitions' draw.

From the repository root::

    .venv/bin/python -m bench.experiments.defaults [--jobs 2] [--reps 5]   # ~55 minutes on 2 cores

Runs are kept in ``results/defaults.jsonl`` (resumable); writes ``docs/results/defaults.md``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
from collections import defaultdict

import numpy as np

from bench.harness import algorithms, problems, protocol
from bench.harness.peers import LinUCBAlgorithm
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import command_line, stamp
from bench.runs import run_missing
from regcb_stream import RegCB, RidgeOracle
from regcb_stream.datasets.synthetic import played_regret, regret_growth

ROOT = pathlib.Path(__file__).resolve().parents[2]
STREAMS = problems.UCI_STREAMS
AUTO_GRID = (3e-4, 1e-3, 3e-3, 1e-2)  # mellowness candidates of the automatic budget
BUDGETS = {**{f"mellowness={c:g}": dict(mellowness=c) for c in (3e-4, 1e-3, 3e-3, 1e-2)},
           "auto": dict(budget="auto", budget_grid=AUTO_GRID)}
GRID = {f"{variant[:4]} l2={l2:g} {name}": dict(variant=variant, l2=l2, **budget)
        for variant in ("optimistic", "elimination") for l2 in (1.0, 3.0, 10.0)
        for name, budget in BUDGETS.items()}
VW_DEFAULTS = algorithms.VW_DEFAULT_PEERS  # label -> (explorer, setting)
DEFAULT = "RegCB()"
LINUCB = "River LinUCBDisjoint()"
PREFIXES = (1000, 4000)  # letter's early rounds
MORE_REPS = 60  # repetitions in all where RegCB() trails a peer at its default
LONG_ROUNDS, LONG_SEEDS = 200_000, range(12)  # the long-horizon rule of eligibility
MAX_GROWTH = 1.6  # R(T)/R(T/2) at most this at T = LONG_ROUNDS, on every seed


# -- one run ------------------------------------------------------------------------------

def grid_learner(name: str, seed: int, random_features: int = 0) -> RegCB:
    """A configuration of :data:`GRID`: the optimistic ridge, over the contexts as they are
    (the linear stage) or with ``random_features`` of ``RegCB()``'s kind."""
    params = dict(GRID[name])
    l2 = params.pop("l2")
    return RegCB(oracle=RidgeOracle(l2=l2, prior="optimistic"), seed=seed,
                 random_features=random_features, **params)


def _algorithm(name: str, problem, rep: int):
    k = problem.n_actions
    if name == LINUCB:
        return LinUCBAlgorithm(algorithms.LINUCB_DEFAULT, k, rep)
    if name in VW_DEFAULTS:
        from bench.harness.vw_algo import VWAlgorithm

        return VWAlgorithm(*VW_DEFAULTS[name], k, rep)
    if name == DEFAULT:
        return RegCBAlgorithm.defaults(k, rep)
    algo = RegCBAlgorithm("optimistic", "ridge", 1e-3, k, rep, "online")
    algo.learner = grid_learner(name, rep)
    return algo


def long_regret(learner: RegCB, seed: int) -> list[float]:
    """Cumulative regret at T/2 and T = :data:`LONG_ROUNDS` on the long realizable problem
    of ``seed`` (the long problem of ``docs/results/change_detection.md``)."""
    regret = played_regret(learner, LONG_ROUNDS, seed)
    return [float(regret[LONG_ROUNDS // 2 - 1]), float(regret[-1])]


def run(task: tuple) -> dict:
    """Progressive reward of one (configuration, stream, repetition, prefix), or the regret
    of one (configuration, seed) on the long realizable problem (stream ``"long"``)."""
    name, stream, rep, max_train = task
    if stream == "long":
        return {"name": name, "stream": stream, "rep": rep, "max_train": max_train,
                "regret": long_regret(grid_learner(name, rep), rep), "seconds": 0.0}
    problem = problems.load_problem(stream, rep, max_train=max_train)
    record = protocol.run_protocol(_algorithm(name, problem, rep), problem, rep)
    return {"name": name, "stream": stream, "rep": rep, "max_train": max_train,
            "progressive": record["progressive"], "seconds": record["seconds"]}


def realizable_growth(variant: str, seed: int = 0, n: int = 20_000) -> float:
    """R(T)/R(T/2) of ``RegCB(variant, seed=seed)`` (the defaults otherwise) on the
    realizable linear problem."""
    return regret_growth(RegCB(variant, seed=seed), n)


# -- tables -------------------------------------------------------------------------------

def means_by(results: list[dict], max_train=None) -> dict:
    """Mean progressive reward per (name, stream) over the repetitions."""
    values = defaultdict(list)
    for r in results:
        if r["max_train"] == max_train and r["stream"] != "long":
            values[(r["name"], r["stream"])].append(r["progressive"])
    return {key: float(np.mean(v)) for key, v in values.items()}


def relative_loss(means: dict, config: str, streams: list[str]) -> float:
    """Mean over ``streams`` of the paper's normalized relative loss within the grid."""
    losses = []
    for s in streams:
        values = [means[(g, s)] for g in GRID]
        losses.append((max(values) - means[(config, s)]) / (max(values) - min(values)))
    return float(np.mean(losses))


def mean_reward(means: dict, config: str, streams: list[str]) -> float:
    return float(np.mean([means[(config, s)] for s in streams]))


def choose(means: dict, streams: list[str], criterion=relative_loss, configs=GRID) -> str:
    """The configuration of ``configs`` that is best on ``streams``."""
    sign = -1 if criterion is mean_reward else 1
    return min(configs, key=lambda g: sign * criterion(means, g, streams))


def leave_one_out(means: dict, criterion=relative_loss, configs=GRID) -> dict:
    """Per held-out stream: the configuration best on the other streams and its score."""
    out = {}
    for held in STREAMS:
        chosen = choose(means, [s for s in STREAMS if s != held], criterion, configs)
        out[held] = (chosen, means[(chosen, held)])
    return out


def long_growth(results: list[dict]) -> dict:
    """The largest regret growth R(T)/R(T/2) over :data:`LONG_SEEDS` of each configuration
    on the long realizable problem."""
    worst = defaultdict(float)
    for r in results:
        if r["stream"] == "long":
            half, whole = r["regret"]
            worst[r["name"]] = max(worst[r["name"]], whole / half)
    return dict(worst)


def eligible(results: list[dict]) -> list[str]:
    """The configurations whose regret does not grow linearly at the long horizon."""
    worst = long_growth(results)
    return [g for g in GRID if worst[g] <= MAX_GROWTH]


def sweep_envelope(prefix: str = "VW ") -> dict:
    """The best of the sweep's families whose label starts with ``prefix`` per stream
    (best fixed setting of each family, their maximum), from the per-family table of
    ``docs/results/paper_evaluation.md``: VW's best explorer, or this package's own tuned best."""
    lines = (ROOT / "docs" / "results" / "paper_evaluation.md").read_text(
        encoding="utf-8").splitlines()
    title = lines.index("## Best fixed progressive reward per family")
    start = next(i for i in range(title, len(lines)) if lines[i].startswith("| stream |"))
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    vw = [i for i, name in enumerate(header)
          if name.startswith(prefix) and name != "RegCB (defaults)"]
    best = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        best[cells[0]] = max((float(cells[i]), header[i]) for i in vw)
    return best


def report(results: list[dict], more: list[dict], growth: dict, seconds: float,
           reps: int) -> str:
    means, worst, ok = means_by(results), long_growth(results), eligible(results)
    loo, loo_mean = leave_one_out(means, configs=ok), leave_one_out(means, mean_reward, ok)
    loo_any = leave_one_out(means)
    chosen_all = choose(means, list(STREAMS), configs=ok)
    envelope, own_tuned = sweep_envelope(), sweep_envelope("RegCB")
    peers = [DEFAULT, *VW_DEFAULTS, LINUCB]
    own_best = {s: max(means[(g, s)] for g in GRID) for s in STREAMS}
    lines = [
        "# RegCB's defaults: how they were chosen, and what a new user gets",
        "",
        f"- command: `{command_line()}`",
        f"- {stamp()}; "
        f"{len(results)} runs, {seconds:.0f} s of runs",
        f"- protocol: the harness's (`docs/results/paper_evaluation.md`), {reps} "
        "repetitions, progressive reward (mean reward of the actions played while learning), "
        "online updates",
        "",
        "## Choice by leave-one-dataset-out",
        "",
        "The grid: " + "; ".join(GRID) + ". Every configuration uses the optimistic ridge "
        "(`RidgeOracle(l2, prior=\"optimistic\")`), VW's budget form `c ln(K n)` and the "
        "contexts as they are (`random_features=0`). Eligible: regret growth R(T)/R(T/2) "
        f"<= {MAX_GROWTH} at T = {LONG_ROUNDS:,} rounds of the realizable linear problem "
        f"(K = 5, d = 10) on each of seeds {LONG_SEEDS[0]}-{LONG_SEEDS[-1]} "
        f"({len(ok)} of {len(GRID)} configurations).",
        "",
        "| held-out stream | chosen on the other 15, among the eligible | its held-out score "
        "| chosen without the rule | its held-out score | best in the grid (tuned on the "
        "stream) |",
        "|---|---|---:|---|---:|---:|",
    ]
    for s in STREAMS:
        lines.append(f"| {s} | {loo[s][0]} | {loo[s][1]:.4f} | {loo_any[s][0]} | "
                     f"{loo_any[s][1]:.4f} | {own_best[s]:.4f} |")
    lines += [
        f"| **mean** | | **{np.mean([loo[s][1] for s in STREAMS]):.4f}** | | "
        f"{np.mean([loo_any[s][1] for s in STREAMS]):.4f} | "
        f"{np.mean(list(own_best.values())):.4f} |",
        "",
        f"Chosen on all 16 streams among the eligible (the default of the linear model: "
        f"dict contexts, `random_features=0`; `RegCB()` on dense contexts is the "
        f"random-features model of `docs/results/random_features.md`): **{chosen_all}** "
        f"(mean normalized relative loss {relative_loss(means, chosen_all, STREAMS):.3f}); "
        f"without the rule: {choose(means, list(STREAMS))}. "
        "Choosing by the plain mean instead: held-out mean "
        f"{np.mean([loo_mean[s][1] for s in STREAMS]):.4f}, and on all 16 streams "
        f"{choose(means, list(STREAMS), mean_reward, ok)}.",
        "",
        "| configuration | mean progressive reward | mean normalized relative loss | "
        f"largest growth at {LONG_ROUNDS:,} rounds | eligible |",
        "|---|---:|---:|---:|:---:|",
        *(f"| {g} | {mean_reward(means, g, STREAMS):.4f} | "
          f"{relative_loss(means, g, STREAMS):.3f} | {worst[g]:.2f} | "
          f"{'yes' if g in ok else 'no'} |"
          for g in sorted(GRID, key=lambda g: -mean_reward(means, g, STREAMS))),
        "",
        "## What `RegCB()` gets, next to the peers at their defaults",
        "",
        "| stream | " + " | ".join(peers) + " | VW's best explorer, tuned per stream¹ |",
        "|---|" + "---:|" * (len(peers) + 1),
    ]
    wins = defaultdict(int)
    for s in STREAMS:
        cells = [means.get((p, s), float("nan")) for p in peers]
        for p, v in zip(peers[1:], cells[1:]):
            wins[p] += cells[0] >= v
        wins["envelope"] += cells[0] >= envelope[s][0]
        lines.append(f"| {s} | " + " | ".join(f"{v:.4f}" for v in cells)
                     + f" | {envelope[s][0]:.4f} ({envelope[s][1]}) |")
    lines.append("| mean | " + " | ".join(
        f"{np.mean([means.get((p, s), np.nan) for s in STREAMS]):.4f}" for p in peers)
        + f" | {np.mean([envelope[s][0] for s in STREAMS]):.4f} |")
    lines.append("| `RegCB()` at or above, streams | – | " + " | ".join(
        f"{wins[p]}/16" for p in peers[1:]) + f" | {wins['envelope']}/16 |")
    default_mean = np.mean([means[(DEFAULT, s)] for s in STREAMS])
    lines += ["", _below_peers(results, more, peers[1:])]
    lines += [
        "",
        f"- `RegCB()` against this package's own best, tuned per stream: the sweep's "
        f"(`docs/results/paper_evaluation.md`, every RegCB family at its best fixed β) "
        f"{np.mean([own_tuned[s][0] for s in STREAMS]):.4f}, this grid's "
        f"{np.mean(list(own_best.values())):.4f}; `RegCB()` {default_mean:.4f}.",
    ]
    yahoo = [r["progressive"] for r in results if r["stream"] == "yahoo"
             and r["name"] == DEFAULT and r["max_train"] is None]
    lines += [
        "",
        "¹ the maximum over VW's families of each family's best fixed setting, from "
        "`docs/results/paper_evaluation.md` (its sweep: same protocol, seeds and repetitions).",
        "",
        f"- yahoo (ADF, K ≤ 6): `RegCB()` {np.mean(yahoo):.4f}; VW's best explorer tuned "
        f"on it {envelope['yahoo'][0]:.4f} ({envelope['yahoo'][1]}); VW at its defaults: "
        + ", ".join(f"{p} {means.get((p, 'yahoo'), np.nan):.4f}" for p in VW_DEFAULTS) + ".",
        "- letter's first rounds (progressive reward over the prefix): " + "; ".join(
            f"{m:,} rounds: `RegCB()` {means_by(results, m).get((DEFAULT, 'letter'), np.nan):.4f}"
            f", LinUCBDisjoint() {means_by(results, m).get((LINUCB, 'letter'), np.nan):.4f}"
            for m in PREFIXES) + f"; all: `RegCB()` {means[(DEFAULT, 'letter')]:.4f}, "
        f"LinUCBDisjoint() {means[(LINUCB, 'letter')]:.4f}.",
        "- realizable linear problem (K = 5, d = 10, 20,000 rounds), regret growth "
        "R(T)/R(T/2) with the defaults: " + ", ".join(
            f"`RegCB(\"{v}\")` {g[0]:.2f} (seeds 0-{len(g) - 1}, each its own random "
            f"features' map: {min(g):.2f}-{max(g):.2f})" for v, g in growth.items())
        + " (1.0: regret stopped growing; 2.0: linear).",
        "",
    ]
    check = _defaults_match(chosen_all)
    return "\n".join(lines + [check]) + "\n"


def _paired(results: list[dict]) -> dict:
    """``{(name, stream): {rep: progressive reward}}`` of the full-length runs."""
    per_rep = defaultdict(dict)
    for r in results:
        if r["max_train"] is None and r["stream"] != "long":
            per_rep[(r["name"], r["stream"])][r["rep"]] = r["progressive"]
    return per_rep


def _difference(per_rep: dict, peer: str, stream: str) -> np.ndarray:
    """``RegCB()``'s progressive reward minus ``peer``'s, per repetition both ran."""
    ours, theirs = per_rep[(DEFAULT, stream)], per_rep.get((peer, stream), {})
    return np.array([ours[k] - theirs[k] for k in sorted(ours) if k in theirs])


def trailing(results: list[dict], peers) -> list[tuple[str, str]]:
    """The (peer, stream) pairs where ``RegCB()``'s mean is below the peer's."""
    per_rep = _paired(results)
    return [(p, s) for s in STREAMS for p in peers
            if (diff := _difference(per_rep, p, s)).size and diff.mean() < 0]


def _below_peers(results: list[dict], more: list[dict], peers: list[str]) -> str:
    """Each (stream, peer at its default) where ``RegCB()`` is below: the paired difference
    over the repetitions and its standard error, and over :data:`MORE_REPS` (``more``:
    the runs of every repetition of those pairs)."""
    per_rep, per_rep_more = _paired(results), _paired(more)
    cases = []
    for p, s in trailing(results, peers):
        diff, diff_more = _difference(per_rep, p, s), _difference(per_rep_more, p, s)
        case = (f"{s} against {p}: {diff.mean():+.4f} (standard error {_error(diff):.4f}, "
                f"{diff.size} paired repetitions)")
        if diff_more.size > diff.size:
            case += (f"; over {diff_more.size} paired repetitions (the protocol's seeds "
                     f"0-{diff_more.size - 1}): {diff_more.mean():+.4f} (standard error "
                     f"{_error(diff_more):.4f})")
        cases.append(case)
    return ("- Below a peer at its default, the paired difference: " + "; ".join(cases) + "."
            if cases else "- Below no peer at its default.")


def _error(diff: np.ndarray) -> float:
    """The standard error of a mean of paired differences."""
    return diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")


def _defaults_match(chosen: str) -> str:
    """A line saying whether ``RegCB()``'s linear model (its defaults settle at the first
    example: here a dict context) is the configuration chosen on all streams."""
    learner, params = RegCB(), GRID[chosen]
    learner.decide({"x": 1.0}, [0, 1])
    oracle = learner.model.oracle
    same = (learner.variant == params["variant"] and oracle.penalty == params["l2"]
            and oracle.prior_mean == oracle.reward_range[1]  # optimistic for action labels
            and (learner.budget_selection is not None) == (params.get("budget") == "auto")
            and (params.get("budget") == "auto"
                 or learner.budget_in_force == f"mellowness {params['mellowness']:g}"))
    return ("\n`RegCB()`'s linear model is this configuration: checked.\n" if same else
            "\n**`RegCB()`'s linear model is NOT the configuration chosen here: update "
            "the linear row of `regcb_stream/defaults.py` "
            "and rerun.**\n")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--results", default=str(ROOT / "results" / "defaults.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "defaults.md"))
    args = parser.parse_args(argv)
    names = [LINUCB, *GRID, *VW_DEFAULTS, DEFAULT]
    tasks = [(n, s, r, None) for n in names for s in STREAMS for r in range(args.reps)]
    tasks += [(n, "yahoo", r, None) for n in (DEFAULT, *VW_DEFAULTS) for r in range(args.reps)]
    tasks += [(n, "letter", r, m) for n in (DEFAULT, LINUCB) for r in range(args.reps)
              for m in PREFIXES]
    tasks += [(n, "long", seed, None) for n in GRID for seed in LONG_SEEDS]
    results, _ = run_missing(args.results, tasks, run, _task_of, args.jobs,
                             order=lambda t: names.index(t[0]), context="spawn",
                             initializer=_single_thread)
    more_tasks = [(n, s, r, None) for p, s in trailing(results, [*VW_DEFAULTS, LINUCB])
                  for n in (DEFAULT, p) for r in range(MORE_REPS)]
    more, _ = run_missing(args.results, more_tasks, run, _task_of, args.jobs, context="spawn",
                          initializer=_single_thread)
    growth = {v: [realizable_growth(v, seed) for seed in range(8)]
              for v in ("elimination", "optimistic")}
    text = report(results, more, growth, sum(r["seconds"] for r in results), args.reps)
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


def _task_of(record: dict) -> tuple:
    return record["name"], record["stream"], record["rep"], record["max_train"]


def _single_thread() -> None:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"


if __name__ == "__main__":
    main()
