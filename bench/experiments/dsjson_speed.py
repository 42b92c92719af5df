"""Whole-process DSJSON reading speed of ``regcb-stream`` against VW's ``--dsjson`` parser.

Each measurement is a pair of processes, run one after the other in alternating order:
``python -m regcb_stream --dsjson -p OUT --quiet < FILE`` and VW
(``vowpalwabbit.Workspace("--cb_explore_adf --dsjson -d FILE -p OUT --quiet")`` in a fresh
interpreter), after one untimed warm-up run of each. Start-up counts for both; beyond the
format flags each tool runs at its defaults (its own default explorer). The ratio is VW's
wall time over ours, pair by pair; the table gives the median of ``--reps`` pairs, each
tool's median seconds and MB/s of input, and its median peak resident memory (GNU
``/usr/bin/time``). After every run the predictions are counted: one non-empty line per
event, for both tools, or the script stops.

Logs (``--events`` lines each, generated with a seeded numpy generator): joined
Personalizer-style events with shared namespaces ``User``, ``Device`` and ``Time`` and
K = 10 actions in ``_multi``, logged by an epsilon-greedy policy, reward 0/1 from a hidden
linear rule on (context, action); "fixed actions" has the same 10 actions in the same order
in every event, "varying actions" a random 10 of a catalogue of 50, in random order. A last
row repeats the lines of VW's ``train-sets/dsjson_cb.json`` to ``--events`` lines.

Bar (issue 16): DSJSON reading speed >= 1.0x VW's ``--dsjson`` on the same file (a
generated log of >= 100,000 events), judged on the fixed-actions log.

From the repository root::

    .venv/bin/python -m bench.experiments.dsjson_speed [--events 100000] [--reps 5]

Writes ``docs/results/dsjson_speed.md`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import vowpalwabbit

ROOT = pathlib.Path(__file__).resolve().parents[2]
REAL = pathlib.Path("/work/shared/vw_tests/train-sets/dsjson_cb.json")
VW = "import sys; from vowpalwabbit import Workspace; Workspace(sys.argv[1]).finish()"
GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
BAR = 1.0
K, CATALOGUE, EPSILON = 10, 50, 0.2

TIERS = ["bronze", "silver", "gold", "platinum"]
COUNTRIES = ["US", "GB", "DE", "FR", "IN", "BR", "JP", "CA"]
SYSTEMS = ["android", "ios", "windows", "macos", "linux"]
WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
DRINKS = [("Cappucino", "hot"), ("Cold brew", "cold"), ("Iced mocha", "cold"),
          ("Latte", "hot"), ("Espresso", "hot"), ("Americano", "hot"), ("Frappe", "cold"),
          ("Flat white", "hot"), ("Iced latte", "cold"), ("Cortado", "hot")]
ORIGINS = ["kenya", "brazil", "ethiopia", "colombia", "sumatra", "guatemala"]
ROASTS = ["light", "medium", "dark"]


# --- the generated logs -------------------------------------------------------------------


def catalogue(rng: np.random.Generator) -> tuple[list[str], np.ndarray]:
    """``CATALOGUE`` actions: each one's ``_multi`` JSON object, and its attribute vector
    (bias, hot, organic, roast one-hot, origin one-hot) for the hidden reward rule."""
    objects, vectors = [], []
    for index in range(CATALOGUE):
        drink, kind = DRINKS[index % len(DRINKS)]
        origin = ORIGINS[index // len(DRINKS) % len(ORIGINS)]
        organic, roast = bool(rng.random() < 0.5), int(rng.integers(len(ROASTS)))
        tag = f"{drink} {origin}"
        objects.append(json.dumps({
            "_tag": tag, "i": {"constant": 1, "id": tag},
            "j": [{"type": kind, "origin": origin, "organic": "yes" if organic else "no",
                   "roast": ROASTS[roast]}]}, separators=(",", ":")))
        vectors.append([1.0, kind == "hot", organic, *np.eye(len(ROASTS))[roast],
                        *np.eye(len(ORIGINS))[ORIGINS.index(origin)]])
    return objects, np.asarray(vectors, dtype=float)


def contexts(rng: np.random.Generator, n: int) -> tuple[list[str], np.ndarray]:
    """``n`` shared contexts: the JSON of ``c``'s shared fields (without the braces) and
    their vectors (bias, age, tier one-hot, mobile, hour, weekend) for the reward rule."""
    age = rng.integers(18, 80, n)
    tier = rng.integers(len(TIERS), size=n)
    country = rng.integers(len(COUNTRIES), size=n)
    system = rng.integers(len(SYSTEMS), size=n)
    mobile = (system < 2) | (rng.random(n) < 0.1)
    hour = rng.integers(24, size=n)
    day = rng.integers(7, size=n)
    texts = [json.dumps({
        "User": {"age": int(age[i]), "tier": TIERS[tier[i]], "country": COUNTRIES[country[i]]},
        "Device": {"os": SYSTEMS[system[i]], "mobile": bool(mobile[i])},
        "Time": [{"hour": int(hour[i]), "weekday": WEEKDAYS[day[i]]}]},
        separators=(",", ":"))[1:-1] for i in range(n)]
    vectors = np.column_stack([np.ones(n), age / 50 - 1, np.eye(len(TIERS))[tier], mobile,
                               hour / 12 - 1, day >= 5])
    return texts, vectors


def timestamps(rng: np.random.Generator, n: int) -> list[str]:
    """Increasing timestamps in the logs' format (seven fractional digits, ``Z``)."""
    start = datetime.datetime(2021, 2, 4, 16, 31, 29)
    offsets = np.cumsum(rng.integers(1, 2000, n))  # milliseconds
    return [(start + datetime.timedelta(milliseconds=int(ms))).strftime("%Y-%m-%dT%H:%M:%S.%f")
            + "0Z" for ms in offsets]


def logging_policy(rng: np.random.Generator, scores: np.ndarray) -> tuple[np.ndarray, ...]:
    """Epsilon-greedy on noisy scores: the chosen slot, the order ``a`` (chosen first, the
    rest shuffled; slots into ``_multi``) and the probabilities ``p`` in that order."""
    n = len(scores)
    noisy = scores + rng.normal(scale=scores.std(), size=scores.shape)
    greedy = np.argmax(noisy, axis=1)
    probs = np.full((n, K), EPSILON / K)
    probs[np.arange(n), greedy] += 1 - EPSILON
    probs = np.round(probs, 6)
    chosen = np.where(rng.random(n) < EPSILON, rng.integers(K, size=n), greedy)
    keys = rng.random((n, K))
    keys[np.arange(n), chosen] = -1.0  # sorts first
    order = np.argsort(keys, axis=1)
    return chosen, order, np.take_along_axis(probs, order, axis=1)


def write_log(path: pathlib.Path, n: int, varying: bool, seed: int) -> None:
    """A joined DSJSON log of ``n`` events: fixed or varying actions (see the docstring)."""
    rng = np.random.default_rng(seed)
    objects, attributes = catalogue(np.random.default_rng(1000))
    hidden = np.random.default_rng(2000).normal(size=(9, attributes.shape[1]))
    shared, x = contexts(rng, n)
    if varying:
        slots = np.argsort(rng.random((n, CATALOGUE)), axis=1)[:, :K]
    else:
        slots = np.tile(np.sort(np.random.default_rng(3000).choice(CATALOGUE, K, False)),
                        (n, 1))
    scores = np.einsum("nd,de,nke->nk", x, hidden, attributes[slots])
    chosen, order, p = logging_policy(rng, scores)
    threshold = np.quantile(scores, 0.75)  # a quarter of (event, action) pairs rewarded
    reward = (scores[np.arange(n), chosen] > threshold).astype(float)
    ids = rng.bytes(16 * n).hex()
    times = timestamps(rng, n)
    state = {"m": f"{rng.bytes(16).hex()}/{rng.bytes(16).hex()}"}
    with open(path, "w") as out:
        for i in range(n):
            event_id = ids[32 * i:32 * i + 32]
            action = int(chosen[i]) + 1
            head = {"_label_cost": -reward[i],
                    "_label_probability": float(np.float32(p[i, 0])),
                    "_label_Action": action, "_labelIndex": action - 1,
                    "o": [{"v": reward[i], "EventId": event_id, "ActionTaken": False}],
                    "Timestamp": times[i], "Version": "1", "EventId": event_id,
                    "a": [int(a) + 1 for a in order[i]]}
            tail = {"p": [float(v) for v in p[i]], "VWState": state,
                    "_original_label_cost": -reward[i]}
            multi = ",".join(objects[s] for s in slots[i])
            out.write(f'{compact(head)[:-1]},"c":{{{shared[i]},"_multi":[{multi}]}},'
                      f"{compact(tail)[1:]}\n")


def compact(obj: dict) -> str:
    """JSON without spaces, as the logs write it."""
    return json.dumps(obj, separators=(",", ":"))


def repeat_real(path: pathlib.Path, n: int) -> None:
    """VW's ``dsjson_cb.json`` lines repeated to ``n`` lines."""
    lines = [line for line in REAL.read_text().splitlines() if line.strip()]
    path.write_text("".join(lines[i % len(lines)] + "\n" for i in range(n)))


# --- the measurements ---------------------------------------------------------------------


def pair(data: pathlib.Path, events: int, out: pathlib.Path, reps: int) -> dict:
    """Medians over ``reps`` alternating pairs: ratio VW/ours, each one's seconds, CPU
    seconds and peak MiB, and what each one wrote to stderr (warnings) in an untimed warm-up
    run first."""
    ours = [sys.executable, "-m", "regcb_stream", "--dsjson", "-p", str(out), "--quiet"]
    vw = [sys.executable, "-c", VW, f"--cb_explore_adf --dsjson -d {data} -p {out} --quiet"]
    runs = {"ours": (ours, data), "vw": (vw, None)}
    ratios, seconds, memory = [], {"ours": [], "vw": []}, {"ours": [], "vw": []}
    cpu = {"ours": [], "vw": []}
    notes = {name: timed(*runs[name])[3] for name in runs}  # untimed warm-up runs
    for rep in range(reps):
        times = {}
        for name in ("ours", "vw") if rep % 2 else ("vw", "ours"):
            out.unlink(missing_ok=True)
            times[name], peak, used, _ = timed(*runs[name])
            check_predictions(name, out, events)
            seconds[name].append(times[name])
            memory[name].append(peak)
            cpu[name].append(used)
        ratios.append(times["vw"] / times["ours"])
    return {"ratio": statistics.median(ratios),
            **{f"{name}_s": statistics.median(seconds[name]) for name in seconds},
            **{f"{name}_mib": median_or_none(memory[name]) for name in memory},
            **{f"{name}_cpu": median_or_none(cpu[name]) for name in cpu},
            "notes": notes}


def timed(command: list[str], stdin: pathlib.Path | None
          ) -> tuple[float, float | None, float | None, str]:
    """Wall seconds, peak resident MiB and CPU seconds (GNU time's ``%M``, ``%U + %S``,
    measured from a small parent so the fork of this interpreter does not count; None
    without GNU time) and the process's own stderr (GNU time's line removed)."""
    prefix = [GNU_TIME, "-f", "%M %U %S"] if GNU_TIME else []
    with open(stdin or os.devnull, "rb") as source:
        start = time.perf_counter()
        done = subprocess.run([*prefix, *command], stdin=source, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: "
                           f"{done.stderr[-500:]}")
    lines = done.stderr.splitlines()
    peak = used = None
    if GNU_TIME:
        kib, user, system = lines.pop().split()
        peak, used = int(kib) / 1024, float(user) + float(system)
    return wall, peak, used, "\n".join(lines)


def check_predictions(name: str, out: pathlib.Path, events: int) -> None:
    """One non-empty prediction line per event (ADF blocks end with a blank line)."""
    if not out.exists():
        raise RuntimeError(f"{name} wrote no predictions file")
    with open(out, "rb") as lines:
        count = sum(1 for line in lines if line.strip())
    if count != events:
        raise RuntimeError(f"{name} wrote {count} prediction lines for {events} events")


def median_or_none(values: list) -> float | None:
    return None if None in values else statistics.median(values)


def measure(events: int, reps: int, folder: pathlib.Path) -> list[dict]:
    """The three logs, written to ``folder``, each timed in ``reps`` pairs."""
    logs = [("fixed actions", "fixed.json", lambda p: write_log(p, events, False, seed=0)),
            ("varying actions", "varying.json", lambda p: write_log(p, events, True, seed=1)),
            ("dsjson_cb.json repeated (K = 4)", "real.json", lambda p: repeat_real(p, events))]
    rows = []
    for label, name, write in logs:
        data = folder / name
        write(data)
        row = {"log": label, "events": events, "mb": data.stat().st_size / 1e6,
               "reward": mean_reward(data),
               **pair(data, events, folder / "predictions.txt", reps)}
        rows.append(row)
        print({k: v for k, v in row.items() if k != "notes"}, flush=True)
    return rows


def mean_reward(data: pathlib.Path) -> float:
    """The fraction of events with reward 1 (``_label_cost`` -1), a check that the hidden
    rule is not degenerate."""
    with open(data) as lines:
        costs = [json.loads(line)["_label_cost"] for line in lines]
    return -float(np.mean(costs))


# --- the report ---------------------------------------------------------------------------


def git_commit() -> str:
    """HEAD's short hash, marked when the package has uncommitted changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    dirty = git("status", "--porcelain", "--", "regcb_stream")
    return git("rev-parse", "--short", "HEAD") + (" (regcb_stream/ modified)" if dirty else "")


def machine() -> str:
    """CPU model, cores, OS, and the versions that matter."""
    model = platform.processor() or "unknown CPU"
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, numpy {np.__version__}, "
            f"vowpalwabbit {vowpalwabbit.__version__}")


def cpu(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def mib(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def report(rows: list[dict], args, seconds: float) -> str:
    """The markdown report: command, commit, date, machine, the table and the bar."""
    lines = [
        "# DSJSON reading: `regcb-stream --dsjson` against VW's `--dsjson`",
        "",
        f"Command: `.venv/bin/python -m bench.experiments.dsjson_speed --events {args.events} "
        f"--reps {args.reps}` (commit {git_commit()}, {datetime.date.today()}; "
        f"{machine()}; {seconds:.0f} s in all).",
        "",
        "Whole processes, start-up included: ours reads the file from stdin "
        "(`python -m regcb_stream --dsjson -p OUT --quiet < FILE`), VW with "
        "`Workspace(\"--cb_explore_adf --dsjson -d FILE -p OUT --quiet\")` in a fresh "
        "interpreter; each tool's default explorer. Ratio = VW's wall time / ours, median of "
        f"{args.reps} alternating pairs after a warm-up run of each; seconds, MB/s (input "
        "MB over the median seconds), CPU seconds (user + system: VW parses in a thread of "
        "its own, so its CPU time exceeds its wall time) and peak resident MiB are medians "
        "too. Both tools wrote one prediction line per event in every run (checked).",
        "",
        "| log | events | MB | reward rate | ours s | VW s | ours MB/s | VW MB/s | ratio | "
        "ours CPU s | VW CPU s | ours MiB | VW MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['log']} | {row['events']:,} | {row['mb']:.1f} | {row['reward']:.2f} | "
            f"{row['ours_s']:.2f} | {row['vw_s']:.2f} | {row['mb'] / row['ours_s']:.1f} | "
            f"{row['mb'] / row['vw_s']:.1f} | {row['ratio']:.2f} | {cpu(row['ours_cpu'])} | "
            f"{cpu(row['vw_cpu'])} | {mib(row['ours_mib'])} | {mib(row['vw_mib'])} |")
    fixed = rows[0]
    verdict = "PASS" if fixed["ratio"] >= BAR else "FAIL"
    size = ("" if args.events >= 100_000 else
            f" (this run has {args.events:,} events, fewer than the bar's 100,000: "
            "indicative only)")
    lines += ["", f"**Bar** (issue 16): DSJSON reading speed >= {BAR}x VW's `--dsjson` on "
              "the same file, a generated log of >= 100,000 events. Fixed-actions log: "
              f"ratio {fixed['ratio']:.2f}, **{verdict}**{size}. The other rows are "
              "information."]
    notes = [f"- {row['log']}, {name}: `{text.splitlines()[0][:200]}`"
             + (f" (+{len(text.splitlines()) - 1} more lines)" if text.count("\n") else "")
             for row in rows for name, text in row["notes"].items() if text]
    if notes:
        lines += ["", "Stderr (first line, warm-up run):", "", *notes]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "dsjson_speed.md"))
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        rows = measure(args.events, args.reps, pathlib.Path(folder))
    text = report(rows, args, time.perf_counter() - start)
    pathlib.Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
