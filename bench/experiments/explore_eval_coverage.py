"""Does regcb-compare's estimate of a learner's progressive reward cover the reward the
learner gets when it runs online on the same stream?

Issue 17's bar: on logs made from 4 UCI streams by a uniform logging policy and by VW's
epsilon-greedy, the explore-eval estimate of each learner's progressive reward covers,
within its 95% interval, the on-policy value measured by running that learner online.

Streams: ``bandit_stream(name, noisy=False, seed=0)``, the first ``--rounds`` rounds, each a
VW ADF example (the harness's: ``shared |s f0:v ...``, one ``|a a<k>`` line per action)
labelled ``0:cost:prob`` on the logged action's line, cost = -reward. Logs, written here:
``uniform`` (prob 1/K) and ``egreedy`` (VW ``--cb_explore_adf -q sa --epsilon 0.2`` online
on the stream, its drawn action and probability logged).

For each (stream, log, learner) - RegCB's defaults, VW ``--epsilon 0.05``, VW ``--squarecb``:

* the verdict's estimate: ``compare(log, regcb=[""], vw=[...], interactions=["sa"],
  replays=R)`` (what ``regcb-compare -q sa --replays R`` prints): the progressive IPS reward,
  the mean of R replays (seeds 0..R-1), in its pooled interval;
* explore-eval run here on the same R seeds (`regcb_stream.evaluation.explore_eval`), recording each
  example's stage (the number of examples the learner had learned when it scored it): the
  verdict's on-policy target, and the single-replay numbers (seed 0);
* the on-policy value: the learner online on the same rounds, ``--seeds`` runs averaged
  round by round (run 0 in the logs' order, the others on shuffles of the same rounds, run
  s's draws seeded by s): VW through the harness's runner (`bench.vw_explorers.run_vw`),
  RegCB through `RegCB.decide_many` / `RegCB.learn_many` on the rows `AdfEncoder` makes of
  the stream's ADF examples (as `RegCBExplorer` encodes them).

From the repository root::

    .venv/bin/python -m bench.experiments.explore_eval_coverage [--rounds 20000] [--seeds 20]

Writes ``docs/results/explore_eval.md`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import platform
import tempfile
import time
from statistics import NormalDist

import numpy as np
import vowpalwabbit
from vowpalwabbit import Workspace

from bench.provenance import code_version
from bench.vw_explorers import adf_example_lines, run_vw
from regcb_stream.command import configure
from regcb_stream.command.main import build_parser
from regcb_stream.datasets.uci import bandit_stream
from regcb_stream.evaluation.compare import compare, replay_order
from regcb_stream.evaluation.explore_eval import (
    Explorer,
    RegCBExplorer,
    VWExplorer,
    explore_eval,
    read_log,
)
from regcb_stream.features.encoder import EncodedRows
from regcb_stream.io.adf_encode import AdfEncoder

ROOT = pathlib.Path(__file__).resolve().parents[2]
STREAMS = ("letter", "optdigits", "satimage", "pendigits")
LOGGERS = ("uniform", "egreedy")
LOGGER_EPSILON = 0.2
REGCB = "regcb (defaults)"
VW_LEARNERS = {"vw --epsilon 0.05": ("epsilon", 0.05), "vw --squarecb": ("squarecb", None)}
LEARNERS = (REGCB, *VW_LEARNERS)
Z = NormalDist().inv_cdf(0.975)


# -- the stream and its logs ---------------------------------------------------------------

def stream(name: str, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """The stream's first ``rounds`` rounds; contexts rounded to the 7 digits the harness's
    VW runner writes, so the logs and the runner give VW the same features."""
    X, R = bandit_stream(name, noisy=False, seed=0)
    X = np.array([[float(f"{v:.7g}") for v in row] for row in X[:rounds].tolist()])
    return X, R[:rounds]


def cost(reward: float) -> float:
    return 0.0 - float(reward)  # (not -0.0)


def draw(pmf: np.ndarray, u: float) -> tuple[int, float]:
    """Inverse-CDF draw from a (normalized) pmf, as the harness's runner draws."""
    cdf = np.cumsum(pmf)
    action = min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), len(pmf) - 1)
    return action, float(pmf[action] / cdf[-1])


def write_log(path: pathlib.Path, X: np.ndarray, R: np.ndarray, logger: str) -> float:
    """Write the log of ``logger`` (uniform or VW's epsilon-greedy); its mean reward."""
    n, k = R.shape
    u = np.random.default_rng(1000).random(n)
    vw = None if logger == "uniform" else Workspace(
        f"--cb_explore_adf -q sa --epsilon {LOGGER_EPSILON} --quiet --random_seed 0")
    total = 0.0
    with open(path, "w") as out:
        for t in range(n):
            if vw is None:
                action, prob = min(int(u[t] * k), k - 1), 1.0 / k
            else:
                pmf = np.asarray(vw.predict(adf_example_lines(X[t], k)), dtype=float)
                action, prob = draw(pmf, u[t])
            lines = adf_example_lines(X[t], k, (action, cost(R[t, action]), prob))
            if vw is not None:
                vw.learn(lines)
            out.write("\n".join(lines) + "\n\n")
            total += R[t, action]
    if vw is not None:
        vw.finish()
    return total / n


# -- the learners --------------------------------------------------------------------------

def regcb_learner():
    """RegCB's defaults as ``regcb-compare`` builds them on these logs (cost range [-1, 0])
    and their stream settings."""
    args = build_parser().parse_args(["--cb_explore_adf", "-qsa"])
    args.cb_min_cost, args.cb_max_cost = -1.0, 0.0
    return configure.setup(args)


def explorer_of(name: str) -> Explorer:
    if name == REGCB:
        learner, settings = regcb_learner()
        return RegCBExplorer(learner, settings.interactions, settings.hash_bits, name=REGCB)
    return VWExplorer("-q sa " + name.removeprefix("vw "))


class Staged(Explorer):
    """An explorer, recording how many examples it had learned when each example was
    scored (its stage: the online round its distribution stands for)."""

    def __init__(self, inner: Explorer):
        self.inner, self.name, self.learned, self.stages = inner, inner.name, 0, []

    def prepare(self, examples) -> None:
        self.inner.prepare(examples)

    def pmf(self, example) -> np.ndarray:
        self.stages.append(self.learned)
        return self.inner.pmf(example)

    def learn(self, example, cost: float, prob: float, weight: float) -> None:
        self.learned += 1
        self.inner.learn(example, cost, prob, weight)


def online_regcb(X: np.ndarray, R: np.ndarray, seed: int) -> np.ndarray:
    """RegCB's defaults online on the stream's ADF examples: each epoch's rounds decided
    together (its decisions do not change within an epoch), an action drawn per round (the
    runner's draws), the drawn actions' rewards learned with their probabilities."""
    n, k = R.shape
    text = "".join("\n".join(adf_example_lines(x, k)) + "\n\n" for x in X)
    parsed = [ex.parsed for ex in read_log(text.splitlines(keepends=True), text=False)]
    learner, settings = regcb_learner()
    columns = learner.encoder.columns
    encoder = AdfEncoder(lambda keys: columns("h", keys), settings.interactions, True,
                         settings.hash_bits)
    rows = encoder.encode_block([ex.shared for ex in parsed], [ex.actions for ex in parsed]).rows
    u = np.random.default_rng(seed).random(n)
    rewards, start = np.empty(n), 0
    while start < n:
        stop = min(n, start + max(1, learner.labels_until_rebuild))
        m, index, value = stop - start, rows.index[start:stop], rows.value[start:stop]
        decision = learner.decide_many([{}] * m, EncodedRows(index, value))
        actions, probs = zip(*(draw(pmf, u[start + i]) for i, pmf in enumerate(decision.pmf)))
        at = (np.arange(m), np.array(actions))
        rewards[start:stop] = R[start:stop][at]
        candidates = None if decision.candidates is None else decision.candidates[
            at[0], :, at[1]]
        learner.learn_many([{}] * m, EncodedRows(index[at][:, None], value[at][:, None]),
                           rewards[start:stop], list(probs), None, candidates)
        start = stop
    return rewards


def on_policy(X: np.ndarray, R: np.ndarray, seeds: int) -> dict[str, np.ndarray]:
    """Each learner's reward per round online, one row per seed: seed 0 plays the rounds
    in the logs' order, seed s > 0 a shuffle of them, its draws seeded by s."""
    out = {name: [] for name in LEARNERS}
    for seed in range(seeds):
        order = np.arange(len(R)) if seed == 0 else np.random.default_rng(seed).permutation(
            len(R))
        Xs, Rs = X[order], R[order]
        out[REGCB].append(online_regcb(Xs, Rs, seed))
        for name, (explorer, param) in VW_LEARNERS.items():
            out[name].append(run_vw(Xs, Rs, explorer, param, seed, cost_encoding="-10")[
                "rewards"])
    return {name: np.array(rows) for name, rows in out.items()}


# -- the measurement -----------------------------------------------------------------------

def measure(args, folder: pathlib.Path) -> dict:
    cells, logs = [], []
    for name in args.streams:
        X, R = stream(name, args.rounds)
        n, k = R.shape
        start = time.perf_counter()
        online = on_policy(X, R, args.seeds)
        online_seconds = time.perf_counter() - start
        for logger in LOGGERS:
            path = folder / f"{name}_{logger}.dat"
            logged = write_log(path, X, R, logger)
            start = time.perf_counter()
            rows, single = ({row.name: row for row in compare(
                str(path), regcb=[""], vw=[v.removeprefix("vw ") for v in VW_LEARNERS],
                interactions=["sa"], replays=replays, multiplier=args.multiplier)}
                for replays in (args.compare_replays, 1))
            logs.append({"stream": name, "log": logger, "n": n, "k": k, "logged": logged,
                         "uniform": rows["uniform random"].estimate,
                         "compare_seconds": time.perf_counter() - start,
                         "online_seconds": online_seconds})
            with open(path) as lines:
                examples = list(read_log(lines))
            m = None if args.multiplier is None else min(
                ex.label.prob for ex in examples if ex.label is not None)
            for learner in LEARNERS:
                cells.append(cell(name, logger, learner, examples, rows[learner],
                                  single[learner], online[learner], args.compare_replays, m))
                print({key: value for key, value in cells[-1].items()}, flush=True)
    return {"cells": cells, "logs": logs}


def cell(name: str, logger: str, learner: str, examples: list, row, single,
         online: np.ndarray, replays: int, multiplier: float | None) -> dict:
    """One (stream, log, learner): regcb-compare's pooled row against the on-policy value
    its replays stand for; explore-eval's replays run here (their stages, and seed 0's
    single-replay numbers)."""
    curve = online.mean(axis=0)  # expected reward at each online round, over the seeds
    targets, ips, kept = [], [], []
    for seed in range(replays):  # (replays after the first: the log shuffled, as compare's)
        explorer = Staged(explorer_of(learner))
        order = replay_order(len(examples), seed) if seed else range(len(examples))
        result = explore_eval([examples[i] for i in order], explorer, seed=seed,
                              multiplier=multiplier)
        terms = np.array(result.ips_rewards)
        ips.append(terms.mean())
        kept.append(result.kept)
        stages = np.minimum(np.array(explorer.stages), len(curve) - 1)
        targets.append(online[:, stages].mean(axis=1))  # per online seed
        if seed == 0:
            first, first_stages, low, high = result, stages, *result.interval()
    per_seed = np.mean(targets, axis=0)  # the pooled target, per online seed
    first_kept = online[:, :first.kept].mean(axis=1)
    return {
        "stream": name, "log": logger, "learner": learner,
        "ips": row.estimate, "low": row.low, "high": row.high, "kept": float(np.mean(kept)),
        "compare_kept": row.kept, "ips_here": float(np.mean(ips)),
        "target": float(per_seed.mean()), "target_se": se(per_seed),
        "replay_sd": float(np.std(ips, ddof=1)) if replays > 1 else float("nan"),
        "replay_se": single.se, "on_all": float(curve.mean()),
        # seed 0 alone: explore-eval's estimate (kept rewards) and its IPS estimate
        "kept0": first.kept, "estimate0": first.estimate, "low0": low, "high0": high,
        "on_kept0": float(first_kept.mean()), "on_kept0_se": se(first_kept),
        "ips0": single.estimate, "ips0_low": single.low, "ips0_high": single.high,
        "on_stages0": float(curve[first_stages].mean()),
    }


def se(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


# -- the report ----------------------------------------------------------------------------

def inside(value: float, low: float, high: float) -> bool:
    return bool(low <= value <= high)


def miss(value: float, low: float, high: float) -> str:
    if inside(value, low, high):
        return "yes"
    return f"no ({value - high:+.3f})" if value > high else f"no ({value - low:+.3f})"


def zscore(c: dict) -> float:
    """(estimate - target) over both standard errors (the pooled interval's, the seeds')."""
    return (c["ips"] - c["target"]) / np.hypot((c["high"] - c["low"]) / (2 * Z), c["target_se"])


def report(results: dict, args, seconds: float) -> str:
    cells, logs, total = results["cells"], results["logs"], len(results["cells"])
    r = args.compare_replays
    covered = sum(inside(c["target"], c["low"], c["high"]) for c in cells)
    by_log = {log: sum(inside(c["target"], c["low"], c["high"]) for c in cells
                       if c["log"] == log) for log in LOGGERS}
    single = sum(inside(c["on_kept0"], c["low0"], c["high0"]) for c in cells)
    single_ips = sum(inside(c["on_stages0"], c["ips0_low"], c["ips0_high"]) for c in cells)
    on_all = sum(inside(c["on_all"], c["low"], c["high"]) for c in cells)
    zs = [zscore(c) for c in cells]
    ratios = [c["replay_sd"] / c["replay_se"] for c in cells]
    runs = [c["replay_sd"] / (c["target_se"] * np.sqrt(args.seeds)) for c in cells]
    agree = max(abs(c["ips"] - c["ips_here"]) for c in cells)
    kept_agree = max(abs(c["compare_kept"] - c["kept"]) for c in cells)
    verdict = "PASS" if covered == total else "FAIL"
    lines = [
        "# Explore-eval against the on-policy value (issue 17)",
        "",
        "Command: `.venv/bin/python -m bench.experiments.explore_eval_coverage "
        f"--rounds {args.rounds}"
        f" --seeds {args.seeds} --streams {' '.join(args.streams)} --compare-replays {r}"
        + (f" --multiplier {args.multiplier}`" if args.multiplier else "`"),
        "",
        f"Code: {code_version()}; date: {datetime.date.today()}; machine: {os.cpu_count()} "
        f"cores, {platform.machine()}, Python {platform.python_version()}, numpy "
        f"{np.__version__}, vowpalwabbit {vowpalwabbit.__version__}; {seconds:.0f} s in all.",
        "",
        "Bar: on logs made from 4 UCI streams by a uniform logging policy and by VW's "
        "epsilon-greedy (this script writes them), the explore-eval estimate of each "
        "learner's progressive reward covers, within its 95% interval, the on-policy value "
        "measured by running that learner online.",
        "",
        f"**Verdict: {verdict}** - regcb-compare's estimate with `--replays {r}` (the mean "
        f"of {r} replays, in its pooled 95% interval) covers the on-policy value in "
        f"**{covered}/{total}** cells (uniform logs {by_log['uniform']}/{total // 2}, "
        f"epsilon-greedy logs {by_log['egreedy']}/{total // 2}); about {0.05 * total:.1f} "
        f"misses are expected by chance. A single replay's interval covers it in "
        f"{single}/{total} (explore-eval's estimate) and {single_ips}/{total} (its IPS "
        "estimate).",
        "",
        "## Setup",
        "",
        f"Streams: `bandit_stream(name, noisy=False, seed=0)`, the first {args.rounds:,} "
        "rounds at most (reward 1 for the true class, else 0), each round a VW ADF example "
        "(`shared |s f0:v ...`, one `|a a<k>` line per action), cost = -reward. Logs: "
        "`uniform` (prob 1/K) and `egreedy` (VW `--cb_explore_adf -q sa --epsilon "
        f"{LOGGER_EPSILON}` learning online on the stream, its drawn action and probability "
        "logged). Learners: RegCB's defaults as regcb-compare builds them (`--cb_explore_adf "
        "-q sa`, the log's cost range [-1, 0]), VW `--epsilon 0.05` and VW `--squarecb` "
        "(`--cb_explore_adf -q sa`).",
        "",
        f"Estimate: `compare(log, regcb=[\"\"], vw=[\"--epsilon 0.05\", \"--squarecb\"], "
        f"interactions=[\"sa\"], replays={r}"
        + (f", multiplier=\"{args.multiplier}\")`, i.e. `regcb-compare LOG -q sa --replays "
           f"{r} --multiplier {args.multiplier}` (a fixed multiplier, the log's least logged "
           "probability, no target rate)" if args.multiplier else
           f")`, i.e. `regcb-compare LOG -q sa --replays {r}` (no target rate: VW's adaptive "
           "multiplier)")
        + ": per replay (seed s = 0..R-1) the "
        "progressive IPS reward pi_t(a) r / p over every example of the log, pi_t the "
        "learner's distribution after the examples kept before t; the row is their mean, "
        "within t sqrt(mean se^2 + var(replays) / R) (Student's t, Welch-Satterthwaite).",
        "",
        f"On-policy: the learner online on the same rounds, {args.seeds} runs averaged round "
        "by round (run s: its draws seeded by s; run 0 in the logs' order, the others on "
        "shuffles of the same rounds, so that the value is the learner's expected "
        "progressive reward and not that of one order of the contexts); VW through the "
        "harness's runner (`bench.vw_explorers.run_vw`, cost -reward), RegCB through "
        "`RegCB.decide_many` / `learn_many` on the stream's ADF rows (encoded as "
        "explore-eval's `RegCBExplorer` encodes them; each epoch decided at once, an action "
        "drawn per round, its reward learned with its probability).",
        "",
        "## Which on-policy value",
        "",
        "Explore-eval's learner learns only the examples it keeps, so at example t of the "
        "log it stands where an online run stands after as many rounds as were kept before "
        "t (the example's *stage*). The IPS estimate averages the learner's distribution "
        "over every example of the log, so it estimates the online reward at each example's "
        "stage, averaged over the log's examples: not the reward over all n online rounds "
        "(the online learner learns from n examples, explore-eval's from `kept`; covered "
        f"{on_all}/{total}), and not the reward over the first `kept` online rounds either "
        "(which explore-eval's own estimate, the mean reward of the kept examples, targets): "
        "the adaptive multiplier only decreases, so the keep rate falls along the log and "
        "later stages weigh more. The stages differ from replay to replay, so the pooled "
        "estimate's target is the mean over the R replays of each replay's stage-averaged "
        "online reward (**on-policy, IPS stages**): the stages are recorded by running "
        "explore-eval here on the same seeds (it keeps the examples regcb-compare keeps; "
        "see Checks). `se`: the target's standard error over the online runs.",
        "",
        "## Coverage",
        "",
        f"The estimates lie {sum(z > 0 for z in zs)} above the target and "
        f"{sum(z < 0 for z in zs)} below it (z from {min(zs):+.1f} to {max(zs):+.1f}, median "
        f"{np.median(zs):+.1f}; z counts the target's se as well as the interval's). Across "
        f"the {r} replays of a cell the IPS estimate varies a median "
        f"{np.nanmedian(ratios):.1f} times the standard error one replay's interval states "
        f"(from {np.nanmin(ratios):.1f} to {np.nanmax(ratios):.1f}): one replay is one path of "
        "the learner, and which examples it learns first (the log's order) moves its whole "
        "progressive reward, which the single-replay interval (batch means over the log) only "
        "partly counts and the pooled interval adds. Replays after the first play the log's "
        "examples in shuffled orders (as the online runs after the first do), sharing its "
        "contexts and logged actions; their estimates vary a "
        f"median {np.nanmedian(runs):.1f} times as much as one online run's stage-averaged "
        "reward varies across runs (column `one run's sd`); with R = "
        f"{r} the spread is estimated on {r - 1} degrees of freedom (Student's t).",
        "",
        f"`IPS, {r} replays`: regcb-compare's row [95%]; `kept`: examples kept, mean over the "
        "replays; `replays' sd`: the replays' IPS estimates' standard deviation; `one "
        "replay's se`: the standard error a single replay's interval states (seed 0); `one "
        "run's sd`: that of one online run's reward at the stages (the target's se times "
        f"sqrt({args.seeds})); `all "
        "n`: the online reward over all the stream's rounds (not the target). `covered`: "
        "no (+x) when the target lies x above the interval, no (-x) below.",
        "",
        f"| stream | log | learner | kept | IPS, {r} replays [95%] | on-policy, IPS stages "
        "(se) | covered | z | replays' sd | one replay's se | one run's sd | all n |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        lines.append(
            f"| {c['stream']} | {c['log']} | `{c['learner']}` | {c['kept']:.0f} | "
            f"{c['ips']:.3f} [{c['low']:.3f}, {c['high']:.3f}] | {c['target']:.3f} "
            f"({c['target_se']:.3f}) | {miss(c['target'], c['low'], c['high'])} | "
            f"{zscore(c):+.1f} | {c['replay_sd']:.3f} | {c['replay_se']:.3f} | "
            f"{c['target_se'] * np.sqrt(args.seeds):.3f} | {c['on_all']:.3f} |")
    lines += [
        "",
        "## A single replay (seed 0)",
        "",
        "For information: explore-eval's own estimate (`explore_eval(...).estimate`, the "
        "mean reward of the kept examples, with `.interval()`) against the online reward "
        "over the first `kept` rounds, which it targets; and the same replay's IPS estimate "
        "(regcb-compare without `--replays`) against its stages' online reward. Coverage: "
        f"{single}/{total} and {single_ips}/{total}.",
        "",
        "| stream | log | learner | kept | estimate [95%] | on-policy, kept rounds (se) | "
        "covered | IPS [95%] | on-policy, IPS stages | covered |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        lines.append(
            f"| {c['stream']} | {c['log']} | `{c['learner']}` | {c['kept0']} | "
            f"{c['estimate0']:.3f} [{c['low0']:.3f}, {c['high0']:.3f}] | {c['on_kept0']:.3f} "
            f"({c['on_kept0_se']:.3f}) | {miss(c['on_kept0'], c['low0'], c['high0'])} | "
            f"{c['ips0']:.3f} [{c['ips0_low']:.3f}, {c['ips0_high']:.3f}] | "
            f"{c['on_stages0']:.3f} | {miss(c['on_stages0'], c['ips0_low'], c['ips0_high'])} |")
    lines += [
        "",
        "## Logs",
        "",
        "| stream | log | rounds | K | logging policy's reward | uniform random (IPS) | "
        "regcb-compare s | on-policy runs s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for log in logs:
        lines.append(
            f"| {log['stream']} | {log['log']} | {log['n']:,} | {log['k']} | "
            f"{log['logged']:.3f} | {log['uniform']:.3f} | {log['compare_seconds']:.1f} | "
            f"{log['online_seconds']:.1f} |")
    lines += [
        "",
        "## Checks",
        "",
        f"regcb-compare's rows against the {r} replays run here: largest difference of the "
        f"mean examples kept {kept_agree:.2g}, of the IPS estimate {agree:.2g} (VW's own "
        "`--explore_eval` in a process against VW's Python module driven by `explore_eval`).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", nargs="+", default=list(STREAMS))
    parser.add_argument("--rounds", type=int, default=20_000, help="rounds per stream, at most")
    parser.add_argument("--seeds", type=int, default=20, help="seeds of the on-policy runs")
    parser.add_argument("--compare-replays", type=int, default=5,
                        help="replays per candidate (regcb-compare --replays)")
    parser.add_argument("--multiplier", choices=["min"],
                        help="min: a fixed multiplier, the log's least logged probability "
                             "(default: VW's adaptive multiplier)")
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "explore_eval.md"))
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        results = measure(args, pathlib.Path(folder))
    text = report(results, args, time.perf_counter() - start)
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
