"""Rankings and slots: RegCB's default per slot against VW's ``--ccb_explore_adf`` explorers.

Streams (each repetition ``rep`` a fresh order of the rounds, seed ``rep``):

- multi-slot streams built from UCI multiclass streams (`bandit_stream`, its first
  `MAX_ROUNDS` rounds): the context is the row, the actions are the classes, 2 slots (3 when
  there are 6 classes or more), and slot ``j`` earns ``1 / (j + 1)`` when it holds the
  true class (so the slate earns the first slot's best);
- the Yahoo learning-to-rank sample (train and test, every query with at least 2
  documents): each query a round, its documents (at most 6) the actions with their own
  features, up to 5 slots, slot ``j`` earning the document's graded relevance (``/ 4``)
  times ``1 / (j + 1)``; its 231 queries are played `LTR_PASSES` times in fresh orders.

Learners, each driven round by round as a user would (decide every slot, reveal the
slots' rewards, learn):

- ``RegCB()``: `regcb_stream.slots.predict_slots` / ``learn_slots`` with ``RegCB(seed=rep)``
  at its defaults, the context as a dict of numbers, the actions as dicts (a class's
  indicator; a document's features);
- ``regcb-stream --ccb_explore_adf`` with its default flags (``--random_seed rep``) in a
  process of its own, driven as a user drives VW over a pipe (`play_command`): the same
  text VW reads;
- VW's ``--ccb_explore_adf -q UA`` (shared namespace ``U`` crossed with the actions' ``A``;
  VW adds the slot's crosses) through ``vowpalwabbit.Workspace``: ``predict`` on the
  unlabelled example (each slot's drawn action first), then ``learn`` with each slot's
  ``action:cost:probability``, cost ``1 - reward`` (in VW's default cost range [0, 1],
  which its ``--regcbopt`` bounds use). Its default (``--epsilon 0.05``)
  and `VW_GRID` (``--epsilon``, ``--squarecb``, ``--regcbopt``, ``--cover``), whose best per
  stream is VW's tuned envelope.

The figure is progressive reward per slot (mean over rounds) and per slate (their sum), the
mean over ``--reps`` repetitions. Bars (issue 47), through the Python API and through the
command: at or above VW's default on every stream, and at or above VW's tuned envelope on
at least 80% of streams.

From the repository root::

    .venv/bin/python -m bench.experiments.slots_quality [--jobs 2] [--reps 5]

Runs are kept in ``results/slots_quality.jsonl`` (resumable); writes
``docs/results/slots_quality.md``.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys

import numpy as np

from bench.provenance import command_line, stamp
from bench.runs import run_missing
from regcb_stream.datasets.uci import bandit_stream, load_ltr

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "slots_quality.jsonl"
REPORT = ROOT / "docs" / "results" / "slots_quality.md"
UCI = ("vehicle", "yeast", "page_blocks", "satimage", "optdigits", "pendigits")
LTR = "yahoo-ltr"
STREAMS = (*UCI, LTR)
MAX_ROUNDS = 4000
LTR_PASSES, LTR_SLOTS, LTR_DOCS = 4, 5, 6
OURS = "RegCB()"
COMMAND = "regcb-stream --ccb_explore_adf, interactive"
VW_DEFAULT = "VW --epsilon 0.05"
VW_GRID = (VW_DEFAULT, "VW --epsilon 0.01", "VW --epsilon 0.1", "VW --squarecb",
           "VW --squarecb --gamma_scale 100", "VW --squarecb --gamma_scale 1000",
           "VW --regcbopt --mellowness 0.1", "VW --regcbopt --mellowness 0.01",
           "VW --regcbopt --mellowness 0.001", "VW --cover 4")


class Round:
    """One round: the context (a dict), the actions (dicts), how many slots, and the
    reward of each action in each slot (a function of the action's index and slot)."""

    def __init__(self, context: dict, actions: list[dict], n_slots: int, gains: np.ndarray):
        self.context, self.actions, self.n_slots, self.gains = context, actions, n_slots, gains

    def reward(self, action: int, slot: int) -> float:
        return float(self.gains[action]) / (slot + 1)


def rounds(stream: str, rep: int) -> list[Round]:
    """The rounds of repetition ``rep`` of a stream, in their order."""
    rng = np.random.default_rng(rep)
    if stream == LTR:
        queries = [q for q in load_ltr("train", LTR_DOCS) + load_ltr("test", LTR_DOCS)
                   if len(q[1]) >= 2]
        order = np.concatenate([rng.permutation(len(queries)) for _ in range(LTR_PASSES)])
        out = []
        for i in order:
            F, relevance = queries[i]
            actions = [{f"d{j}": float(v) for j, v in enumerate(row) if v} for row in F]
            out.append(Round({}, actions, min(LTR_SLOTS, len(actions)), relevance))
        return out
    X, R = bandit_stream(stream, noisy=False, seed=rep)
    X, R = X[:MAX_ROUNDS], R[:MAX_ROUNDS]
    k = R.shape[1]
    actions = [{f"class={a}": 1.0} for a in range(k)]
    n_slots = 3 if k >= 6 else 2
    return [Round({f"x{i}": float(v) for i, v in enumerate(x)}, actions, n_slots, r)
            for x, r in zip(X.tolist(), R)]


def play_regcb(stream: str, rep: int) -> np.ndarray:
    """Per-slot rewards ``(rounds, slots)`` of ``RegCB()`` (NaN: the round has no slot)."""
    from regcb_stream import RegCB
    from regcb_stream.slots import Slot, learn_slots, predict_slots

    learner, plays = RegCB(seed=rep), rounds(stream, rep)
    out = np.full((len(plays), max(p.n_slots for p in plays)), np.nan)
    for t, play in enumerate(plays):
        slots = [Slot()] * play.n_slots
        decisions = predict_slots(learner, play.context, play.actions, slots)
        rewards = [play.reward(d.index, j) for j, d in enumerate(decisions)]
        learn_slots(learner, play.context, play.actions, slots, decisions, rewards)
        out[t, :len(rewards)] = rewards
    return out


def _text(play: Round, labels: list[str] | None = None) -> list[str]:
    """The round as VW's ccb text (``labels``: each slot's ``action:cost:prob``)."""
    shared = " ".join(f"{k}:{v:.6g}" for k, v in play.context.items())
    lines = [f"ccb shared |U {shared}"]
    lines += ["ccb action |A " + " ".join(f"{k}:{v:.6g}" for k, v in a.items())
              for a in play.actions]
    lines += [f"ccb slot {labels[j] if labels else ''} |S s{j}" for j in range(play.n_slots)]
    return lines


def play_vw(stream: str, rep: int, flags: str) -> np.ndarray:
    """Per-slot rewards of VW's ``--ccb_explore_adf -q UA`` with ``flags``."""
    from vowpalwabbit import Workspace

    workspace = Workspace(f"--ccb_explore_adf -q UA --quiet --random_seed {rep} {flags}")
    plays = rounds(stream, rep)
    out = np.full((len(plays), max(p.n_slots for p in plays)), np.nan)
    for t, play in enumerate(plays):
        decisions = workspace.predict(_text(play))
        rewards, labels = [], []
        for j, scores in enumerate(decisions):
            action, prob = scores[0]
            rewards.append(play.reward(action, j))
            labels.append(f"{action}:{1 - rewards[-1]:.6g}:{prob:.6g}")
        workspace.learn(_text(play, labels))
        out[t, :len(rewards)] = rewards
    workspace.finish()
    return out


def play_command(stream: str, rep: int) -> np.ndarray:
    """Per-slot rewards of ``regcb-stream --ccb_explore_adf`` at its defaults, driven as a
    user drives VW: each round's unlabelled example written, its slots' lines read (each
    slot's drawn action first), then the example written with each slot's
    ``action:cost:probability`` (cost ``1 - reward``; its lines read and passed over)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "regcb_stream", "--ccb_explore_adf", "-p", "-", "--quiet",
         "--random_seed", str(rep)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, bufsize=1)
    plays = rounds(stream, rep)
    out = np.full((len(plays), max(p.n_slots for p in plays)), np.nan)
    try:
        for t, play in enumerate(plays):
            process.stdin.write("\n".join(_text(play)) + "\n\n")
            process.stdin.flush()
            lines = [process.stdout.readline() for _ in range(play.n_slots + 1)]
            rewards, labels = [], []
            for j, line in enumerate(lines[:-1]):
                action, prob = line.strip().split(",")[0].split(":")
                rewards.append(play.reward(int(action), j))
                labels.append(f"{action}:{1 - rewards[-1]:.6g}:{prob}")
            process.stdin.write("\n".join(_text(play, labels)) + "\n\n")
            process.stdin.flush()
            for _ in range(play.n_slots + 1):
                process.stdout.readline()
            out[t, :len(rewards)] = rewards
        process.stdin.close()
        if process.wait(timeout=60):
            raise RuntimeError(f"regcb-stream exited with status {process.returncode}")
    finally:
        process.kill()
    return out


def run(task: tuple) -> dict:
    stream, learner, rep = task
    played = (play_regcb(stream, rep) if learner == OURS else play_command(stream, rep)
              if learner == COMMAND else play_vw(stream, rep, learner.removeprefix("VW ")))
    per_slot = np.nanmean(played, axis=0)
    return {"stream": stream, "learner": learner, "rep": rep, "per_slot": per_slot.tolist(),
            "slate": float(np.nanmean(np.nansum(played, axis=1)))}


def report(records: list[dict], reps: int) -> str:
    def mean(stream, learner, key="slate"):
        values = [r[key] for r in records if (r["stream"], r["learner"]) == (stream, learner)]
        return statistics.fmean(values) if key == "slate" else np.mean(values, axis=0)

    lines = [
        "# Rankings and slots: RegCB's default per slot against VW's CCB explorers",
        "",
        f"- command: `{command_line()}`",
        f"- {stamp()}",
        f"- progressive reward per slate (the slots' sum) and per slot, mean of {reps} "
        "repetitions; UCI streams: their first "
        f"{MAX_ROUNDS:,} rounds, slot j earns 1/(j+1) for the true class; {LTR}: the Yahoo "
        f"sample's queries, {LTR_PASSES} passes, up to {LTR_SLOTS} slots, relevance/4 times "
        "1/(j+1); VW: `--ccb_explore_adf -q UA` and the flags named",
        "",
        "| stream | RegCB() slate | per slot | the command's slate | VW default slate | "
        "VW tuned best | its flags |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    above = {(form, bar): 0 for form in (OURS, COMMAND) for bar in ("default", "tuned")}
    for stream in STREAMS:
        default = mean(stream, VW_DEFAULT)
        best, flags = max((mean(stream, name), name) for name in VW_GRID)
        for form in (OURS, COMMAND):
            above[form, "default"] += mean(stream, form) >= default
            above[form, "tuned"] += mean(stream, form) >= best
        slots = " / ".join(f"{v:.3f}" for v in mean(stream, OURS, "per_slot"))
        lines.append(f"| {stream} | {mean(stream, OURS):.4f} | {slots} | "
                     f"{mean(stream, COMMAND):.4f} | {default:.4f} | {best:.4f} | "
                     f"`{flags.removeprefix('VW ')}` |")
    n = len(STREAMS)
    lines.append("")
    for form, name in ((OURS, "`RegCB()` (Python)"), (COMMAND, "the command, interactive")):
        lines += [f"- {name}: at or above VW's default on {above[form, 'default']} of {n} "
                  f"streams (bar: every stream), at or above VW's tuned envelope on "
                  f"{above[form, 'tuned']} of {n} (bar: at least {int(np.ceil(0.8 * n))})"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--streams", nargs="+", default=list(STREAMS))
    args = parser.parse_args()
    tasks = [(s, learner, rep) for s in args.streams for learner in (OURS, COMMAND, *VW_GRID)
             for rep in range(args.reps)]
    records, _ = run_missing(RESULTS, tasks, run, lambda r: (r["stream"], r["learner"],
                                                             r["rep"]), jobs=args.jobs)
    if set(args.streams) == set(STREAMS):
        REPORT.write_text(report(records, args.reps))
        print(REPORT.read_text())


if __name__ == "__main__":
    main()
