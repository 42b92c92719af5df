"""The change test's threshold (``RegCB(change_threshold=k)``, ``regcb-stream
--change_threshold K``): chosen by leave-one-dataset-out, under a false-alarm constraint.

``RegCB()`` watches its squared residuals with a Page-Hinkley test (`regcb_stream.adapt.change`)
and, when they rise past ``k ln t``, keeps 1% of every label's weight and explores anew. Where
nothing changes the test should stay silent: an alarm throws away what the learner knew. This
script runs ``RegCB(change_threshold=k)`` (the defaults otherwise; ``k = 0`` never tests, the
learner of before) for each ``k`` of :data:`THRESHOLDS` under the harness's protocol
(progressive reward, 5 repetitions):

- on the four drifting streams of ``bench/experiments/unseen_streams.py`` (10,000 rounds each, in
  their order), next to VW's explorers at their defaults and River's
  ``bandit.LinUCBDisjoint()``, and ``RegCB(forget=0.999)`` (``docs/results/forgetting.md``: a window
  of labels, at a price where nothing drifts);
- on the 32 stationary streams (the 16 UCI streams and the 16 of
  ``docs/results/unseen_streams.md``), counting the alarms: each one there is a false alarm;
- on the realizable linear problem (K = 5, d = 10, ``regcb_stream.datasets.synthetic``) over
  :data:`LONG_ROUNDS` rounds and :data:`LONG_SEEDS` seeds, longer than any public stream: the
  cumulative regret and the alarms;
- on the hashed sparse logs of ``bench/experiments/high_dim.py`` (:data:`HASHED_EXAMPLES` examples,
  single-line and ADF, 50 of 2^18 names per context), replayed through ``regcb-stream`` at
  its defaults: the alarms (there the learner's residuals creep upward as the hashed
  features fill in, though the costs do not change).

A threshold is *eligible* if it raises no alarm at all where nothing changes (an alarm there
is a false one), and neither does half of it (:data:`MARGIN`: room for the streams we do not
have): on none of the 32 stationary streams' runs, on neither long problem and on neither
hashed log. And where the
learner's own play raises its residuals (two stationary problems whose best action is the
noisy one: as the learner settles on it, the residuals rise though nothing changed), its
alarms may cost at most :data:`TOLERANCE` of mean reward against ``k = 0``.
The default is the eligible threshold with the best mean on the drifting streams; each
drifting stream is also held out in turn (the choice made on the other three) and its
held-out score reported. The time the test costs is measured too: letter's first 16,000
rounds through ``RegCB.play`` and ``RegCB.replay`` with the default and with ``k = 0``, in
interleaved pairs in this process.

From the repository root::

    .venv/bin/python -m bench.experiments.change_detection [--jobs 2] [--reps 5]   # ~40 minutes

Runs are kept in ``results/change_detection.jsonl`` (resumable); writes
``docs/results/change_detection.md``.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
import time

import numpy as np

from bench.experiments import unseen_streams as unseen  # the drifting and the unseen streams
from bench.experiments.forgetting import STATIONARY, load_problem  # the 32 stationary streams
from bench.harness import problems, protocol
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import stamp
from bench.runs import run_missing
from regcb_stream import RegCB
from regcb_stream.adapt.change import DEFAULT_THRESHOLD
from regcb_stream.datasets.synthetic import played_regret

ROOT = pathlib.Path(__file__).resolve().parents[2]
THRESHOLDS = (0.0, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0)
FORGETFUL = "RegCB(forget=0.999)"
PEERS = (*unseen.VW_DEFAULTS, unseen.LINUCB, FORGETFUL)
MARGIN = 2.0  # an eligible threshold divided by this raises no false alarm either
TOLERANCE = 0.002  # the most an eligible threshold's alarms may cost a noisy best action
LONG_ROUNDS, LONG_SEEDS = 200_000, (0, 1)
LONG_STREAMS = [f"long-{seed}" for seed in LONG_SEEDS]
HASHED_EXAMPLES = 200_000
HASHED = {"hashed-single": ("sparse.dat", "--cb_explore 10"),
          "hashed-adf": ("sparse_adf.dat", "--cb_explore_adf -q sa")}  # log, flags
HASHED_LOGS = ROOT / "results" / "change_detection_logs"
NOISY_BEST = {"noisy-best-1": (0.6, 0.4), "noisy-best-2": (0.55, 0.5)}  # (p, c) of each
NOISY_ROUNDS, NOISY_SEEDS = 20_000, (0, 1, 2)
TIMED_ROUNDS, TIMED_PAIRS = 16_000, 5


def name_of(threshold: float) -> str:
    return f"RegCB(change_threshold={threshold:g})"


TESTED = {name_of(k): k for k in THRESHOLDS}
NEVER = name_of(0.0)


def run(task: tuple) -> dict:
    """Progressive reward (and alarms) of one (learner, stream, repetition)."""
    name, stream, rep = task
    problem = load_problem(stream, rep)
    if name in TESTED or name == FORGETFUL:
        algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
        algo.learner = RegCB(seed=rep, change_threshold=TESTED[name]) if name in TESTED \
            else RegCB(seed=rep, forget=0.999, change_threshold=0)
    else:
        algo = unseen._algorithm(name, problem.n_actions, rep)
    record = protocol.run_protocol(algo, problem, rep)
    changes = getattr(getattr(algo, "learner", None), "changes_detected", None)
    return {"name": name, "stream": stream, "rep": rep, "progressive": record["progressive"],
            "seconds": record["seconds"], "alarms": changes or 0}


def long_run(task: tuple) -> dict:
    """Cumulative regret at a few checkpoints, and the alarms, on the long problem."""
    name, seed = task
    learner = RegCB(seed=seed, change_threshold=TESTED[name])
    regret = played_regret(learner, LONG_ROUNDS, seed)
    return {"name": name, "stream": f"long-{seed}", "rep": seed,
            "regret": float(regret[-1]), "alarms": learner.changes_detected or 0}


def hashed_run(task: tuple) -> dict:
    """The alarms of ``regcb-stream`` replaying a hashed sparse log at its defaults."""
    name, stream, _ = task
    log, flags = HASHED[stream]
    command = [sys.executable, "-m", "regcb_stream", *flags.split(), "--change_threshold",
               f"{TESTED[name]:g}"]
    with open(HASHED_LOGS / log) as stdin:
        done = subprocess.run(command, stdin=stdin, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, check=True)
    found = re.search(r"^changes detected = (\d+)$", done.stderr, re.MULTILINE)
    return {"name": name, "stream": stream, "rep": 0, "alarms": int(found.group(1))}


def write_hashed_logs() -> None:
    """``bench/experiments/high_dim.py``'s sparse logs of HASHED_EXAMPLES examples (seed 0),
    once."""
    from bench.experiments import high_dim

    if not all((HASHED_LOGS / log).exists() for log, _ in HASHED.values()):
        HASHED_LOGS.mkdir(parents=True, exist_ok=True)
        high_dim.write_sparse(HASHED_LOGS, HASHED_EXAMPLES)


def noisy_best_run(task: tuple) -> dict:
    """A stationary problem whose best action is the noisy one (a coin of bias ``p``, next
    to a constant ``c`` and a constant 0.2): as the learner moves to it, its residuals rise
    although nothing changed. The mean reward and the alarms."""
    name, stream, seed = task
    p, c = NOISY_BEST[stream]
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(NOISY_ROUNDS, 5))
    R = np.stack([(rng.random(NOISY_ROUNDS) < p).astype(float), np.full(NOISY_ROUNDS, c),
                  np.full(NOISY_ROUNDS, 0.2)], axis=1)
    learner = RegCB(seed=seed, change_threshold=TESTED[name])
    played, _ = learner.play(X, [0, 1, 2], lambda rows, i: R[rows, i])
    return {"name": name, "stream": stream, "rep": seed,
            "reward": float(R[np.arange(NOISY_ROUNDS), played].mean()),
            "alarms": learner.changes_detected or 0}


def timing(pairs: int = TIMED_PAIRS) -> dict[str, float]:
    """The median ratio of the default's time to ``k = 0``'s, through ``play`` and
    ``replay`` (a uniform log) on letter's first rounds, over interleaved pairs."""
    problem = problems.load_problem("letter", 0, max_train=TIMED_ROUNDS)
    X, R = problem.train.X, problem.train.R
    actions = list(range(problem.n_actions))
    logged = np.random.default_rng(0).integers(len(actions), size=len(X))
    calls = {"play": lambda learner: learner.play(X, actions, lambda rows, i: R[rows, i]),
             "replay": lambda learner: learner.replay(X, actions, logged,
                                                      R[np.arange(len(X)), logged])}

    def seconds(call, threshold) -> float:
        learner = RegCB(seed=0, change_threshold=threshold)
        start = time.perf_counter()
        call(learner)
        return time.perf_counter() - start

    out = {}
    for label, call in calls.items():
        seconds(call, 0.0)  # (warm: imports, first calls)
        times = np.array([(seconds(call, 0.0), seconds(call, None)) for _ in range(pairs)])
        out[label] = float(np.median(times[:, 1] / times[:, 0]))
    return out


# -- the choice ----------------------------------------------------------------------------

def silent(name: str, alarms: dict, long: dict) -> bool:
    """Whether a threshold raises no false alarm: none on a stationary stream's runs, none
    on the long problem, none on the hashed logs."""
    return (all(long[(name, s)]["alarms"] == 0 for s in (*LONG_STREAMS, *HASHED))
            and not any(sum(alarms[(name, s)]) for s in STATIONARY))


def noisy_reward(noisy: list[dict], name: str, stream: str) -> float:
    return float(np.mean([r["reward"] for r in noisy if r["name"] == name
                          and r["stream"] == stream]))


def quiet(alarms: dict, long: dict) -> list[str]:
    """The thresholds silent where nothing changes, whose MARGIN-th part is silent too."""
    return [name for name in TESTED if name != NEVER and silent(name, alarms, long)
            and name_of(TESTED[name] / MARGIN) in TESTED
            and silent(name_of(TESTED[name] / MARGIN), alarms, long)]


def eligible(alarms: dict, long: dict, noisy: list[dict]) -> list[str]:
    """The quiet thresholds whose alarms cost a noisy best action at most TOLERANCE."""
    return [name for name in quiet(alarms, long)
            if all(noisy_reward(noisy, name, s) >= noisy_reward(noisy, NEVER, s) - TOLERANCE
                   for s in NOISY_BEST)]


def best_on(mean: dict, names: list[str], streams) -> str:
    return max(names, key=lambda n: (np.mean([mean[(n, s)] for s in streams]), -TESTED[n]))


# -- report -------------------------------------------------------------------------------

def report(results: list[dict], longs: list[dict], noisy: list[dict], reps: int,
           timed: dict | None, seconds: float) -> str:
    mean = unseen.mean_rewards(results, reps)
    alarms: dict[tuple[str, str], list[int]] = {}
    for r in results:
        alarms.setdefault((r["name"], r["stream"]), []).append(r.get("alarms", 0))
    long = {(r["name"], r["stream"]): r for r in longs}
    names = list(TESTED)
    ok = eligible(alarms, long, noisy)
    relaxed = not ok  # (then the choice is among the quiet thresholds: said below)
    ok = ok or quiet(alarms, long)
    chosen = best_on(mean, ok, unseen.DRIFTING)
    lines = [
        "# The change test: its threshold, what it earns where rewards change, what it costs "
        "where they do not",
        "",
        "- command: `python -m bench.experiments.change_detection --jobs 2`",
        f"- {stamp()}; {len(results)} runs, {seconds:.0f} s of runs",
        f"- protocol: the harness's (`docs/results/paper_evaluation.md`), {reps} "
        "repetitions, progressive reward; `RegCB(change_threshold=k)` is `RegCB()` with the "
        "change test at threshold `k ln t` (`regcb_stream.adapt.change`), `k = 0` never testing",
        f"- eligible: no false alarm, on any run of the 32 stationary streams nor on the long "
        f"problem ({LONG_ROUNDS:,} rounds, seeds {', '.join(map(str, LONG_SEEDS))}), at the "
        f"threshold and at 1/{MARGIN:g} of it; and on the problems whose best action is the "
        f"noisy one (below), at most {TOLERANCE} below `k = 0`'s mean reward; the hashed "
        f"logs: `bench/experiments/high_dim.py`'s sparse logs ({HASHED_EXAMPLES:,} examples, "
        "single-line and ADF), replayed by `regcb-stream` at its defaults",
        "",
        "## The choice",
        "",
        "| threshold k | drifting streams | 32 stationary | false alarms, stationary "
        "(per run) | long problem: regret, alarms | hashed logs: alarms (single-line, ADF) "
        "| eligible |",
        "|---|---:|---:|---:|---|---|:---:|",
    ]
    for name in names:
        false = np.mean([np.mean(alarms[(name, s)]) for s in STATIONARY])
        regret = ", ".join(f"{long[(name, s)]['regret']:.0f} ({long[(name, s)]['alarms']})"
                           for s in LONG_STREAMS)
        lines.append(
            f"| {TESTED[name]:g} | {np.mean([mean[(name, s)] for s in unseen.DRIFTING]):.4f} "
            f"| {np.mean([mean[(name, s)] for s in STATIONARY]):.4f} | {false:.3f} | {regret} "
            f"| {', '.join(str(long[(name, s)]['alarms']) for s in HASHED)} "
            f"| {'yes' if name in ok else ('–' if name == NEVER else 'no')} |")
    lines += [
        "",
        f"Chosen on the four drifting streams among the eligible: **k = {TESTED[chosen]:g}** "
        f"(`RegCB()`'s default: k = {DEFAULT_THRESHOLD:g}"
        f"{', the same' if TESTED[chosen] == DEFAULT_THRESHOLD else ', which differs'}).",
        *(["", f"**No threshold meets the rule for a noisy best action** (at most {TOLERANCE} "
           "below `k = 0` there: below): the choice is among the thresholds that raise no "
           "false alarm, marked eligible above."] if relaxed else []),
        "",
        "Each drifting stream held out (the threshold chosen on the other three):",
        "",
        "| held-out stream | chosen on the other 3 | held out | k = 0 (never) |",
        "|---|---|---:|---:|",
    ]
    held = {}
    for stream in unseen.DRIFTING:
        pick = best_on(mean, ok, [s for s in unseen.DRIFTING if s != stream])
        held[stream] = mean[(pick, stream)]
        lines.append(f"| {stream} | k = {TESTED[pick]:g} | {held[stream]:.4f} | "
                     f"{mean[(NEVER, stream)]:.4f} |")
    lines.append(f"| **mean** | | **{np.mean(list(held.values())):.4f}** | "
                 f"{np.mean([mean[(NEVER, s)] for s in unseen.DRIFTING]):.4f} |")
    shown = [NEVER, chosen, *PEERS]
    lines += ["", "## Drifting streams (`docs/results/unseen_streams.md`: 10,000 rounds in "
              "order)", "",
              *_table(mean, shown, unseen.DRIFTING),
              "", "## Stationary streams", "",
              "Mean progressive reward per stream (alarms per run in brackets where any):", "",
              *_table(mean, names, STATIONARY, alarms)]
    lines += ["", "## A rise of the learner's own making", "",
              f"Two stationary problems ({NOISY_ROUNDS:,} rounds, 5 context features the "
              "rewards ignore, seeds " + ", ".join(map(str, NOISY_SEEDS)) + ") whose best "
              "action is a coin of bias p, next to a constant c and a constant 0.2: as the "
              "learner settles on the coin, its squared residuals rise, though nothing "
              "changed. Mean reward (alarms per run):", "",
              "| threshold k | " + " | ".join(f"p = {p:g}, c = {c:g}"
                                              for p, c in NOISY_BEST.values()) + " |",
              "|---|" + "---:|" * len(NOISY_BEST)]
    for name in names:
        cells = []
        for stream in NOISY_BEST:
            got = [r for r in noisy if r["name"] == name and r["stream"] == stream]
            cells.append(f"{np.mean([r['reward'] for r in got]):.4f} "
                         f"({np.mean([r['alarms'] for r in got]):.1f})")
        lines.append(f"| {TESTED[name]:g} | " + " | ".join(cells) + " |")
    if timed is not None:
        lines += ["", "## Time", "",
                  f"letter's first {TIMED_ROUNDS:,} rounds, `RegCB()` against "
                  f"`RegCB(change_threshold=0)` ({TIMED_PAIRS} interleaved pairs in one "
                  "process, the median ratio of the times): "
                  + "; ".join(f"`{label}` **{ratio:.2f}x**" for label, ratio in timed.items())
                  + " (a uniform log for `replay`)."]
    return "\n".join(lines) + "\n"


def _table(mean: dict, names, streams, alarms: dict | None = None) -> list[str]:
    lines = ["| stream | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for stream in streams:
        top = max(mean[(n, stream)] for n in names)
        cells = []
        for n in names:
            cell = f"{mean[(n, stream)]:.4f}"
            cell = f"**{cell}**" if mean[(n, stream)] == top else cell
            count = np.mean(alarms[(n, stream)]) if alarms else 0
            cells.append(cell + (f" ({count:.1f})" if count else ""))
        lines.append(f"| {stream} | " + " | ".join(cells) + " |")
    lines.append("| **mean** | " + " | ".join(
        f"{np.mean([mean[(n, s)] for s in streams]):.4f}" for n in names) + " |")
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-timing", dest="timing", action="store_false")
    parser.add_argument("--results", default=str(ROOT / "results" / "change_detection.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "change_detection.md"))
    args = parser.parse_args(argv)
    tasks = [(n, s, r) for s in (*unseen.DRIFTING, *STATIONARY) for n in TESTED
             for r in range(args.reps)]
    tasks += [(n, s, r) for n in PEERS for s in unseen.DRIFTING for r in range(args.reps)]
    tasks += [(n, f"long-{seed}", seed) for n in TESTED if n != NEVER for seed in LONG_SEEDS]
    tasks += [(n, s, seed) for n in TESTED for s in NOISY_BEST for seed in NOISY_SEEDS]
    tasks += [(n, s, 0) for n in TESTED if n != NEVER for s in HASHED]
    write_hashed_logs()
    results, _ = run_missing(args.results, tasks, _run_any, unseen._task_of, args.jobs,
                             context="spawn", initializer=unseen._single_thread)
    longs = [r for r in results if r["stream"].startswith("long-") or r["stream"] in HASHED]
    noisy = [r for r in results if r["stream"] in NOISY_BEST]
    runs = [r for r in results if "progressive" in r]
    longs += [{"name": NEVER, "stream": f"long-{seed}", "rep": seed, "alarms": 0,
               "regret": _never_regret(seed, results)} for seed in LONG_SEEDS]
    longs += [{"name": NEVER, "stream": s, "rep": 0, "alarms": 0} for s in HASHED]
    timed = timing() if args.timing else None
    text = report(runs, longs, noisy, args.reps, timed, sum(r.get("seconds", 0) for r in runs))
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


def _run_any(task: tuple) -> dict:
    if task[1].startswith("long-"):
        return long_run((task[0], task[2]))
    if task[1] in HASHED:
        return hashed_run(task)
    return noisy_best_run(task) if task[1] in NOISY_BEST else run(task)


def _never_regret(seed: int, results: list[dict]) -> float:
    """``k = 0``'s regret on the long problem: any threshold's that raised no alarm there
    (the same run, bit for bit), else run it."""
    for r in results:
        if r["stream"] == f"long-{seed}" and r["alarms"] == 0:
            return r["regret"]
    return long_run((NEVER, seed))["regret"]


if __name__ == "__main__":
    main()
