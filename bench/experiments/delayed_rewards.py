"""What late rewards cost: progressive reward on letter, immediate against late rewards.

Issue 16's bar: on letter, with rewards arriving up to 100 rounds late, progressive reward
is within 0.01 of the run with immediate rewards.

1. Python API: ``RegCB(seed=s)`` (defaults otherwise) plays the clean letter stream (K = 26,
   20,000 rounds) through ``decide_event`` and ``reward_event``. Round t's reward arrives
   after a delay drawn uniformly from 0 to the max delay (its own seeded generator) and is
   learned right after the decision of round t + delay (rewards learned in arrival order);
   the immediate variant learns every reward right after its decision. A run is one letter
   shuffle and one sampler seed, shared by its immediate and late variants, so the two
   are paired; ``--runs`` runs cycle through ``--shuffles`` shuffles. Reported: mean
   progressive reward (mean reward of the played actions) of each variant, the mean paired
   difference (late - immediate), its standard error over runs and 95% t-interval, and the
   difference by round window.
2. The command: ``regcb-stream --dsjson -q sa --reward_wait N --decision_log FILE -p -`` in a
   closed loop with this script. The script writes one DSJSON event (``EventId``, context
   ``{"s": {"f0": x0, ...}, "_multi": [{"a": {"a<k>": 1}}, ...]}``, no label) at a time to
   the command's stdin, reads its distribution from ``-p`` (flushed after each block, and
   a block is one event when input arrives one line at a time), draws the action itself
   from it (its own seeded generator, as a caller of VW's ``--cb_explore_adf`` does) and,
   when the delay is over, writes the reward line ``{"EventId", "v", "_labelIndex"}`` for
   the action it played. The command's own draw is not visible before the reward: its
   decision log writes a waiting decision once the reward is known. After each run the
   log is checked: one line per event, labelled with the played action, at the
   probability ``-p`` gave it; an immediate run's log, read back by the command as
   labelled DSJSON, must give the same distributions (immediate reward lines are the
   ordinary labelled stream). Information only: a different model (ADF, ``-q sa``).

From the repository root::

    .venv/bin/python -m bench.experiments.delayed_rewards [--runs 60] [--shuffles 3] \\
        [--max-delay 100] [--command-runs 5]

Writes ``docs/results/delayed_rewards.md`` and prints it.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy import stats

from bench.provenance import stamp
from regcb_stream import RegCB
from regcb_stream.datasets.uci import bandit_stream

ROOT = pathlib.Path(__file__).resolve().parents[2]
BAR = 0.01
WINDOWS = ((0, 1_000), (1_000, 4_000), (4_000, 10_000), (10_000, 20_000))
OTHER_DELAYS = (10, 50)


# --- the runs -----------------------------------------------------------------------------


def plan(runs: int, shuffles: int) -> list[tuple[int, int]]:
    """The (shuffle, sampler seed) of each run: run i is shuffle i % shuffles, seed
    i // shuffles, so any first few runs spread over the shuffles."""
    return [(i % shuffles, i // shuffles) for i in range(runs)]


def stream(shuffle: int) -> tuple[np.ndarray, np.ndarray]:
    """The clean letter stream of one shuffle: contexts and the full 0/1 reward matrix."""
    return bandit_stream("letter", noisy=False, seed=shuffle)


def delays(n: int, max_delay: int, shuffle: int, seed: int) -> np.ndarray:
    """Each round's delay, uniform in 0..max_delay, from a generator of its own."""
    rng = np.random.default_rng([7919, shuffle, seed, max_delay])
    return rng.integers(0, max_delay + 1, n)


def play(X: np.ndarray, R: np.ndarray, late: np.ndarray, seed: int) -> np.ndarray:
    """Each round's reward when round t's reward is learned ``late[t]`` rounds later (after
    the decision of round t + late[t]; 0: right after its own)."""
    learner, actions = RegCB(seed=seed), list(range(R.shape[1]))
    due: dict[int, list[int]] = {}
    played, got = {}, np.empty(len(X))
    for t, x in enumerate(X):
        played[t], _ = learner.decide_event(t, x, actions)
        got[t] = R[t, played[t]]
        due.setdefault(t + int(late[t]), []).append(t)
        for event in due.pop(t, []):
            learner.reward_event(event, float(R[event, played.pop(event)]))
    return got


def api_runs(runs: list[tuple[int, int]], max_delays: list[int]) -> dict:
    """Per-round rewards (runs x rounds) of the immediate variant (key 0) and of each max
    delay, through the Python API."""
    out: dict[int, list] = {d: [] for d in [0, *max_delays]}
    for shuffle, seed in runs:
        X, R = stream(shuffle)
        out[0].append(play(X, R, np.zeros(len(X), int), seed))
        for d in max_delays:
            out[d].append(play(X, R, delays(len(X), d, shuffle, seed), seed))
    return {d: np.array(rows) for d, rows in out.items()}


# --- the command in a closed loop ---------------------------------------------------------


def event_line(t: int, x: np.ndarray, multi: list) -> str:
    """Round t as a DSJSON event without a label."""
    context = {"s": {f"f{j}": float(v) for j, v in enumerate(x)}, "_multi": multi}
    return json.dumps({"EventId": str(t), "c": context}, separators=(",", ":"))


def parse_pmf(line: str, k: int) -> np.ndarray:
    """A ``-p`` line of ``--cb_explore_adf`` (``action:prob,...``, 0-based) as a vector."""
    pmf = np.zeros(k)
    for part in line.strip().split(","):
        action, prob = part.split(":")
        pmf[int(action)] = float(prob)
    return pmf


def draw(pmf: np.ndarray, u: float) -> int:
    """The action of uniform ``u`` by the inverse distribution function."""
    cdf = np.cumsum(pmf)
    return min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), len(pmf) - 1)


def command_play(X: np.ndarray, R: np.ndarray, late: np.ndarray, seed: int,
                 log: pathlib.Path) -> np.ndarray:
    """Each round's reward in a closed loop with the command (see the module docstring);
    rewards still due at the end are sent last, and the decision log is checked."""
    k = R.shape[1]
    multi = [{"a": {f"a{j}": 1}} for j in range(k)]
    cmd = [sys.executable, "-m", "regcb_stream", "--dsjson", "-q", "sa", "--reward_wait",
           str(int(late.max()) + 1000), "--decision_log", str(log), "-p", "-", "--quiet",
           "--random_seed", str(seed)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            bufsize=1, cwd=ROOT)
    rng, due = np.random.default_rng(seed), {}
    played, probs, got = np.empty(len(X), int), np.empty(len(X)), np.empty(len(X))
    for t, x in enumerate(X):
        proc.stdin.write(event_line(t, x, multi) + "\n")
        proc.stdin.flush()
        pmf = parse_pmf(proc.stdout.readline(), k)
        proc.stdout.readline()  # (the blank line closing an ADF prediction)
        played[t] = draw(pmf, rng.random())
        probs[t], got[t] = pmf[played[t]], R[t, played[t]]
        due.setdefault(t + int(late[t]), []).append(t)
        _send_rewards(proc, R, played, due.pop(t, []))
    _send_rewards(proc, R, played, [e for t in sorted(due) for e in due[t]])
    proc.stdin.close()
    proc.stdout.read()
    if proc.wait() != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}")
    check_log(log, played, probs)
    return got


def _send_rewards(proc: subprocess.Popen, R: np.ndarray, played: np.ndarray,
                  events: list[int]) -> None:
    """Write the reward lines of these rounds, for the actions played."""
    if events:
        proc.stdin.write("".join(json.dumps(
            {"EventId": str(e), "v": float(R[e, played[e]]), "_labelIndex": int(played[e])})
            + "\n" for e in events))
        proc.stdin.flush()


def check_log(log: pathlib.Path, played: np.ndarray, probs: np.ndarray) -> None:
    """The decision log holds one labelled line per event, for the action played, at the
    probability (to ``-p``'s six digits) it was played with; else raise."""
    seen = np.zeros(len(played), bool)
    with open(log, encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            t = int(event["EventId"])
            if seen[t] or event.get("_labelIndex") != played[t] or event["a"][0] != (
                    played[t] + 1) or abs(event["p"][0] - probs[t]) > 1e-6:
                raise RuntimeError(f"decision log {log}: event {t} is not as played: {line}")
            seen[t] = True
    if not seen.all():
        raise RuntimeError(f"decision log {log}: {int((~seen).sum())} events missing")


def check_replay(log: pathlib.Path, k: int) -> None:
    """An immediate run's decision log, read back by the command as labelled DSJSON (each
    event decided, then its label learned), gives the distributions the closed loop was
    given: immediate reward lines are the ordinary labelled stream; else raise."""
    cmd = [sys.executable, "-m", "regcb_stream", "--dsjson", "-q", "sa", "-p", "-", "--quiet"]
    with open(log, encoding="utf-8") as lines:
        out = subprocess.run(cmd, stdin=lines, capture_output=True, text=True, check=True,
                             cwd=ROOT).stdout
    with open(log, encoding="utf-8") as lines:
        for line, shown in zip(lines, (row for row in out.split("\n") if row.strip()),
                               strict=True):
            event, logged = json.loads(line), np.zeros(k)
            logged[np.array(event["a"]) - 1] = event["p"]
            if np.abs(parse_pmf(shown, k) - logged).max() > 1e-6:
                raise RuntimeError(f"replay of {log}: event {event['EventId']} differs")


def command_runs(runs: list[tuple[int, int]], max_delay: int) -> list[tuple]:
    """(shuffle, seed, immediate, late progressive reward) of each run through the
    command."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        log = pathlib.Path(tmp) / "decisions.json"
        for shuffle, seed in runs:
            X, R = stream(shuffle)
            now = command_play(X, R, np.zeros(len(X), int), seed, log).mean()
            check_replay(log, R.shape[1])
            late = command_play(X, R, delays(len(X), max_delay, shuffle, seed), seed,
                                log).mean()
            rows.append((shuffle, seed, float(now), float(late)))
    return rows


# --- the report ---------------------------------------------------------------------------


def paired(diff: np.ndarray) -> tuple[float, float, float, float]:
    """Mean of paired differences, its standard error and 95% t-interval."""
    mean, se = float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(len(diff)))
    half = float(stats.t.ppf(0.975, len(diff) - 1)) * se
    return mean, se, mean - half, mean + half


def delay_table(rewards: dict, max_delays: list[int]) -> list[str]:
    """One row per max delay: the means of each variant and their paired difference."""
    now = rewards[0].mean(axis=1)
    rows = ["| max delay | runs | immediate | late | difference | SE | 95% CI |",
            "|---:|---:|---:|---:|---:|---:|---|"]
    for d in max_delays:
        late = rewards[d].mean(axis=1)
        mean, se, lo, hi = paired(late - now)
        rows.append(f"| {d} | {len(now)} | {now.mean():.4f} | {late.mean():.4f} | "
                    f"{mean:+.4f} | {se:.4f} | [{lo:+.4f}, {hi:+.4f}] |")
    return rows


def window_table(rewards: dict, max_delays: list[int]) -> list[str]:
    """The paired difference (± SE) by round window for each max delay, and each window's
    share of the whole run's difference (its difference times its share of the rounds)."""
    n = rewards[0].shape[1]
    head = " | ".join(f"max delay {d}: difference ± SE | share" for d in max_delays)
    rows = [f"| rounds | {head} |", "|---|" + "---:|---:|" * len(max_delays)]
    for lo, hi in WINDOWS:
        cells = []
        for d in max_delays:
            diff = (rewards[d][:, lo:hi] - rewards[0][:, lo:hi]).mean(axis=1)
            mean, se, _, _ = paired(diff)
            cells.append(f"{mean:+.4f} ± {se:.4f} | {mean * (hi - lo) / n:+.4f}")
        rows.append(f"| {lo:,}–{hi:,} | " + " | ".join(cells) + " |")
    return rows


def shuffle_table(rewards: dict, runs: list[tuple[int, int]], max_delay: int) -> list[str]:
    """The paired difference at ``max_delay`` by letter shuffle (does the shuffle matter?),
    with a one-way ANOVA p-value."""
    diff = rewards[max_delay].mean(axis=1) - rewards[0].mean(axis=1)
    shuffles = np.array([s for s, _ in runs])
    groups = [diff[shuffles == s] for s in np.unique(shuffles)]
    rows = ["| shuffle | runs | difference | SE |", "|---:|---:|---:|---:|"]
    rows += [f"| {s} | {len(g)} | {g.mean():+.4f} | {g.std(ddof=1) / np.sqrt(len(g)):.4f} |"
             for s, g in zip(np.unique(shuffles), groups)]
    testable = len(groups) > 1 and min(map(len, groups)) > 1
    p = stats.f_oneway(*groups).pvalue if testable else None
    note = "" if p is None else f"One-way ANOVA of the differences by shuffle: p = {p:.2f}."
    return rows + ["", note]


def verdict(rewards: dict, max_delay: int) -> str:
    """The bar on the Python API's mean paired difference at ``max_delay``, and what its
    95% interval says."""
    mean, _, lo, hi = paired(rewards[max_delay].mean(axis=1) - rewards[0].mean(axis=1))
    if lo >= -BAR:
        ci = ("lies above −0.01: at 95% confidence late rewards cost less than 0.01."
              + ("" if hi <= BAR else " (Its top above +0.01: late may do better.)"))
    elif hi < -BAR:
        ci = "lies below −0.01: the bar fails at 95% confidence."
    else:
        ci = ("holds −0.01: at 95% confidence these runs cannot tell whether the cost is "
              "below or above 0.01.")
    return (f"**Bar (issue 16), max delay {max_delay}: {'pass' if mean >= -BAR else 'fail'}** "
            f"on the mean paired difference, {mean:+.4f} (late − immediate; pass if "
            f"≥ −{BAR}). Its 95% CI [{lo:+.4f}, {hi:+.4f}] {ci}")


def command_table(rows: list[tuple]) -> list[str]:
    """One row per command run, and their mean."""
    out = ["| shuffle | seed | immediate | late | difference |", "|---:|---:|---:|---:|---:|"]
    out += [f"| {s} | {seed} | {a:.4f} | {b:.4f} | {b - a:+.4f} |" for s, seed, a, b in rows]
    if rows:
        a, b = np.mean([r[2] for r in rows]), np.mean([r[3] for r in rows])
        diff = np.array([r[3] - r[2] for r in rows])
        se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        out.append(f"| mean | | {a:.4f} | {b:.4f} | {b - a:+.4f} (SE {se:.4f}) |")
    return out


def report(args, runs, rewards, max_delays, command, seconds) -> str:
    """The markdown report."""
    n = rewards[0].shape[1]
    flags = (f"--runs {args.runs} --shuffles {args.shuffles} --max-delay {args.max_delay} "
             f"--command-runs {args.command_runs}")
    lines = [
        "# Delayed rewards: progressive reward with rewards that arrive late", "",
        f"- command: `.venv/bin/python -m bench.experiments.delayed_rewards {flags}`",
        f"- {stamp()}; {seconds['total']:.0f} s (Python API {seconds['api']:.0f} s, "
        f"command {seconds['command']:.0f} s)",
        f"- data: the clean letter stream (K = 26, {n:,} rounds), shuffles "
        f"0..{args.shuffles - 1}; a run is a (shuffle, sampler seed) pair shared by its "
        "immediate and late variants; a round's reward arrives after a delay uniform in "
        "0..max delay rounds (its own seeded generator), learned in arrival order", "",
        "## Python API: `RegCB(seed=s)`, `decide_event` / `reward_event`", "",
        f"{len(runs)} runs each (shuffle i mod {args.shuffles}, sampler seed i div "
        f"{args.shuffles}); difference = late − immediate, paired by run; SE over runs.", "",
        *delay_table(rewards, max_delays), "",
        "By round window (difference in the window's mean reward; share = its contribution "
        "to the whole run's difference):", "",
        *window_table(rewards, max_delays), "",
        f"By shuffle, max delay {args.max_delay}:", "",
        *shuffle_table(rewards, runs, args.max_delay), "",
        verdict(rewards, args.max_delay), "",
        f"## The command (information): max delay {args.max_delay}", "",
    ]
    if command:
        lines += [
            f"`python -m regcb_stream --dsjson -q sa --reward_wait {args.max_delay + 1000} "
            "--decision_log FILE -p - --quiet --random_seed s` in a closed loop: one event "
            "written at a time, the action drawn by this script from `-p` (generator seed s), "
            "reward lines `{\"EventId\", \"v\", \"_labelIndex\"}` for the played action "
            "written when due; each run's decision log checked (one labelled line per "
            "event, the played action at its `-p` probability); each immediate run's log read "
            "back by the command as labelled DSJSON gives the same distributions (within "
            "1e-6), so immediate reward lines are the ordinary labelled stream. A different "
            "model from the Python API's (ADF, `-q sa`), so compare within this table only.",
            "",
            *command_table(command)]
    else:
        lines.append("Not run (`--command-runs 0`).")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="Python API runs per max delay")
    parser.add_argument("--shuffles", type=int, default=3, help="letter shuffles cycled")
    parser.add_argument("--max-delay", type=int, default=100, help="the bar's max delay")
    parser.add_argument("--command-runs", type=int, default=5, help="closed-loop command runs")
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "delayed_rewards.md"))
    args = parser.parse_args()
    start = time.perf_counter()
    runs = plan(args.runs, args.shuffles)
    max_delays = sorted({*OTHER_DELAYS, args.max_delay})
    rewards = api_runs(runs, max_delays)
    api = time.perf_counter() - start
    command = command_runs(runs[:args.command_runs], args.max_delay)
    total = time.perf_counter() - start
    text = report(args, runs, rewards, max_delays, command,
                  {"api": api, "command": total - api, "total": total})
    pathlib.Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
