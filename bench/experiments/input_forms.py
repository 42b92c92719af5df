"""One product whatever the input form: ``RegCB()`` on arrays, ``RegCBPolicy()`` on River's
dicts in River's own loop, and ``regcb-stream`` with its default flags on VW text driven
interactively, next to River's ``bandit.LinUCBDisjoint()``.

The streams are those of ``bench/experiments/unseen_streams.py`` (none chose a default) and
a noisy variant of each, built as the paper builds its noisy UCI streams: the reward of
action ``a`` when the class is ``y`` is drawn Bernoulli(``mu[a, y]``)
(``unseen_streams.noisy_means``). Repetition ``rep`` is the harness's
(``unseen_streams.load_problem``; the noisy rewards drawn from seed ``rep``), and every form
plays the same rounds:

- ``RegCB() on arrays``: the harness's protocol, its blocks and draws
  (``bench.harness.regcb_algo``);
- ``RegCBPolicy() in River's loop``: ``policy.pull(arms, context)`` then
  ``policy.update(arm, context, reward)`` per round, contexts as River gives them
  (``{"f0": ..., ...}``), the policy's own sampler seeded ``rep``;
- ``regcb-stream, interactive``: one ``regcb-stream --cb_explore K -p /dev/stdout --quiet
  --random_seed rep`` process per run; each round writes the unlabelled line ``|x f0:v
  f1:v ...``, reads its distribution, samples it with the protocol's uniform, then writes the
  labelled line ``a:cost:p |x ...`` (cost ``1 - reward``), as a VW user drives VW;
- River's ``bandit.LinUCBDisjoint()`` (`bench.harness.peers`).

The holdout's validation curve is not scored for the River and command forms (their
holdout distribution is reported as uniform); the figure is progressive reward.

From the repository root::

    .venv/bin/python -m bench.experiments.input_forms [--jobs 2] [--reps 5]   # ~80 min

(``--without shuttle shuttle-noisy``: ~45 min; the interactive command on shuttle's 48,797
rounds takes ~2 min a run.)

Runs are kept in ``results/input_forms.jsonl`` (resumable); writes
``docs/results/input_forms.md``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys

import numpy as np

from bench.experiments import unseen_streams
from bench.harness import algorithms, problems, protocol
from bench.harness.peers import LinUCBAlgorithm
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import command_line, stamp
from bench.runs import run_missing

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "input_forms.jsonl"
REPORT = ROOT / "docs" / "results" / "input_forms.md"

ARRAYS = "RegCB() on arrays"
RIVER = "RegCBPolicy() in River's loop"
COMMAND = "regcb-stream, interactive"
LINUCB = "River LinUCBDisjoint()"
NAMES = (ARRAYS, RIVER, COMMAND, LINUCB)
NOISY = unseen_streams.NOISY
LONGEST = "shuttle"  # (48,797 rounds: run last)
STREAMS = tuple(s + variant for variant in ("", NOISY) for s in unseen_streams.UNSEEN
                if s != LONGEST) + (LONGEST, LONGEST + NOISY)


class RiverPolicy:
    """``RegCBPolicy()`` pulled and updated one round at a time, as River's policies run."""

    def __init__(self, n_actions: int, seed: int):
        from regcb_stream.integrations.river import RegCBPolicy

        self.policy = RegCBPolicy(seed=seed)
        self.arms = list(range(n_actions))

    def play(self, rounds: problems.Rounds, u: np.ndarray, reveal) -> protocol.Step:
        actions = np.empty(len(rounds), np.intp)
        for i, x in enumerate(rounds.X):
            context = {f"f{j}": v for j, v in enumerate(x.tolist())}
            actions[i] = self.policy.pull(self.arms, context)
            self.policy.update(int(actions[i]), context, float(reveal(i, int(actions[i]))))
        return protocol.Step(actions, np.ones(len(rounds)))

    def holdout_pmf(self, rounds: problems.Rounds) -> np.ndarray:
        return np.full(rounds.R.shape, 1.0 / rounds.R.shape[1])


class InteractiveCommand:
    """``regcb-stream --cb_explore K`` with its defaults, fed one line at a time through a
    pipe: the unlabelled example, its distribution read back, then the label."""

    def __init__(self, n_actions: int, seed: int):
        self.k = n_actions
        self.process = subprocess.Popen(
            [sys.executable, "-m", "regcb_stream", "--cb_explore", str(n_actions), "-p",
             "/dev/stdout", "--quiet", "--random_seed", str(seed)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def _distribution(self, line: str) -> np.ndarray:
        self.process.stdin.write(line + "\n")
        answer = self.process.stdout.readline()
        self.process.stdout.readline()  # (the blank line after each prediction)
        pmf = np.zeros(self.k)
        for item in answer.split()[0].split(","):
            action, prob = item.split(":")
            pmf[int(action)] = float(prob)
        return pmf

    def play(self, rounds: problems.Rounds, u: np.ndarray, reveal) -> protocol.Step:
        actions, probs = np.empty(len(rounds), np.intp), np.empty(len(rounds))
        for i, x in enumerate(rounds.X):
            features = "|x " + " ".join(f"f{j}:{v!r}" for j, v in enumerate(x.tolist()))
            pmf = self._distribution(features)
            action = int(protocol.sample(pmf[None], u[i:i + 1])[0])
            actions[i], probs[i] = action, pmf[action]
            cost = 1.0 - float(reveal(i, action))
            self._distribution(f"{action + 1}:{cost!r}:{float(pmf[action])!r} {features}")
        return protocol.Step(actions, probs)

    def holdout_pmf(self, rounds: problems.Rounds) -> np.ndarray:
        return np.full(rounds.R.shape, 1.0 / rounds.R.shape[1])

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _algorithm(name: str, n_actions: int, rep: int):
    if name == ARRAYS:
        return RegCBAlgorithm.defaults(n_actions, rep)
    if name == RIVER:
        return RiverPolicy(n_actions, rep)
    if name == COMMAND:
        return InteractiveCommand(n_actions, rep)
    return LinUCBAlgorithm(algorithms.LINUCB_DEFAULT, n_actions, rep)


def run(task: tuple) -> dict:
    """Progressive reward of one (form, stream, repetition)."""
    return unseen_streams.run(task, algorithm=_algorithm)


def report(results: list[dict], reps: int) -> str:
    values: dict[tuple[str, str], dict[int, float]] = {}
    for r in results:
        if r["rep"] < reps:
            values.setdefault((r["name"], r["stream"]), {})[r["rep"]] = r["progressive"]
    means = {key: float(np.mean(list(v.values()))) for key, v in values.items()}
    streams = [s for s in STREAMS if all(len(values.get((n, s), ())) == reps for n in NAMES)]
    left = [s for s in STREAMS if s not in streams]
    same = sum(values[(ARRAYS, s)] == values[(RIVER, s)] == values[(COMMAND, s)]
               for s in streams)
    lines = [
        "# One product whatever the input form: arrays, River's dicts, the command's VW text",
        "",
        f"- command: `{command_line()}`",
        f"- {stamp()}; {len(results)} runs, {sum(r['seconds'] for r in results):.0f} s of runs",
        f"- protocol: the harness's, {reps} repetitions, progressive reward; streams and "
        "forms: the docstring of `bench/experiments/input_forms.py`",
        "",
        *([f"- not in this run (`--streams`, `--without`): {', '.join(left)}", ""]
          if left else []),
        "| stream | " + " | ".join(NAMES) + " |",
        "|---|" + "---:|" * len(NAMES),
    ]
    for s in streams:
        lines.append(f"| {s} | " + " | ".join(f"{means[(n, s)]:.4f}" for n in NAMES) + " |")
    lines.append("| mean | " + " | ".join(
        f"{np.mean([means[(n, s)] for s in streams]):.4f}" for n in NAMES) + " |")
    lines.append("| at or above LinUCBDisjoint(), streams | " + " | ".join(
        f"{sum(means[(n, s)] >= means[(LINUCB, s)] for s in streams)}/{len(streams)}"
        for n in NAMES[:-1]) + " | – |")
    base = np.mean([means[(ARRAYS, s)] for s in streams])
    lines += ["", "Mean difference from `RegCB()` on arrays (the bar: within 0.005): " + ", ".join(
        f"{n} {np.mean([means[(n, s)] for s in streams]) - base:+.4f}" for n in NAMES[1:3])
        + f". The three forms' rewards are equal, repetition by repetition, on {same} of "
        f"{len(streams)} streams."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--streams", nargs="*", default=list(STREAMS))
    parser.add_argument("--without", nargs="*", default=[], help="streams left out")
    args = parser.parse_args(argv)
    tasks = [(n, s, rep) for s in args.streams if s not in args.without
             for rep in range(args.reps) for n in NAMES]
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    results, _ = run_missing(RESULTS, tasks, run, lambda r: (r["name"], r["stream"], r["rep"]),
                             jobs=args.jobs)
    REPORT.write_text(report(results, args.reps), encoding="utf-8")
    print(REPORT.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
