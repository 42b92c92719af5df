"""Reliability bars of ``regcb-stream``: split-and-resume, fuzzed input, ``kill -9`` mid-save.

1. Split-and-resume over the whole matrix of flags: schedules {online, sqrt2, doubling} x
   {--regcb, --regcbopt} x --oracle {ridge, bounded, vw} x {--vw_compat or not} x
   {--cb_force_legacy or not (single-line only)} x {--first_only or not} x {--auto_budget
   or not; not with --oracle vw, which is refused at the start with exit 2 by design: those
   combinations are only checked to be refused}, on a single-line ``--cb_explore 4`` stream
   and an ADF ``--cb_explore_adf -q sa`` stream (generated from
   `regcb_stream.datasets.synthetic.LinearProblem`, logged uniformly, every fifth example
   unlabelled, some tagged). Each combination is three processes fed on stdin: the whole stream
   (``-p -``), its first half with ``-f MODEL``, its second half with ``-i MODEL`` and no
   other flag; the two halves' outputs, concatenated, must equal the whole run's byte for
   byte. Two combinations run at a time.
2. Fuzzing through the command's entry point: ``regcb_stream.command.main.main(argv)`` is called in
   this process on ``--fuzz`` mutated inputs (``-d FILE -p OUT --quiet`` with
   ``--cb_explore 4`` or ``--cb_explore_adf`` and a few other flags), each a mutation of a
   small valid input of either format (characters VW gives a meaning to, BOMs, bytes that
   are not UTF-8 inserted, deleted or replaced; lines duplicated, deleted or shuffled;
   truncation). Bars: no exception escapes ``main``; the exit status is 0 or 1; with status
   1 the error names a line of the input; never more predictions than examples (and with
   status 0 exactly one per example, with status 1 one per example before the bad one).
   Exceptions are grouped by type and raising function; the first input of each is shrunk
   (lines, then bytes removed while it still raises) into a command that reproduces it.
3. ``kill -9`` during saves: a child process trains two learners and saves them in turn
   with ``regcb_stream.persist.save_model`` in an endless loop; it is killed with SIGKILL at
   a uniform random time in the first ``--window`` seconds of its saving, ``--kills``
   times. After each kill the model file must load (the previous or the new model, whole);
   then
   ``regcb_stream.persist.remove_stale_temporaries`` and a save (what the command does before
   its own save) must leave no temporary file.

From the repository root::

    .venv/bin/python -m bench.experiments.reliability [--fuzz 100000] [--kills 200] [--seed 0]
        [--skip-matrix] [--skip-fuzz] [--skip-kills] [--window 0.04] [--workers 2]
        [--out docs/results/reliability.md]

About 6 minutes on 2 cores at the defaults.

Writes ``docs/results/reliability.md`` (``--out``) and prints it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import glob
import io
import itertools
import os
import pathlib
import platform
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

from bench.provenance import stamp
from regcb_stream.datasets.synthetic import LinearProblem

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "regcb_stream"]

# -- streams ---------------------------------------------------------------------------------


def single_line_stream(n: int, seed: int = 0, k: int = 4) -> list[str]:
    """``--cb_explore K`` lines of a linear problem logged uniformly: every fifth example
    unlabelled, every seventh tagged."""
    X, _, R = LinearProblem.make(n_actions=k, dim=3, seed=seed).sample(n, seed=seed + 1)
    rng = np.random.default_rng(seed)
    lines = []
    for t, (x, r) in enumerate(zip(X, R)):
        a = int(rng.integers(k))
        label = f"{a + 1}:{1 - r[a]:g}:{1 / k:g} " if t % 5 else ""
        tag = f"'e{t} " if t % 7 == 3 else ""
        lines.append(label + tag + "|x " + " ".join(f"f{j}:{v:.4f}" for j, v in enumerate(x))
                     + "\n")
    return lines


def adf_stream(n: int, seed: int = 0) -> list[str]:
    """ADF examples (a shared line, 3 or 4 action lines, an empty line) of a linear problem
    logged uniformly: every fifth example unlabelled, every seventh tagged."""
    X, _, R = LinearProblem.make(n_actions=4, dim=3, seed=seed).sample(n, seed=seed + 1)
    rng = np.random.default_rng(seed)
    examples = []
    for t, (x, r) in enumerate(zip(X, R)):
        k = 4 if t % 7 == 0 else 3
        played = int(rng.integers(k))
        tag = f"'e{t} " if t % 7 == 3 else ""
        lines = [f"shared {tag}|s " + " ".join(f"f{j}:{v:.4f}" for j, v in enumerate(x))]
        for a in range(k):
            label = f"0:{1 - r[a]:g}:{1 / k:.4f} " if a == played and t % 5 else ""
            lines.append(f"{label}|a act{a} w:{0.5 * a + 0.1:g}")
        examples.append("\n".join(lines) + "\n\n")
    return examples


# -- 1. split-and-resume over the matrix -----------------------------------------------------

SCHEDULES = ("online", "sqrt2", "doubling")
VARIANTS = ("--regcb", "--regcbopt")
ORACLES = ("ridge", "bounded", "vw")
FORMATS = {"single": ["--cb_explore", "4"], "adf": ["--cb_explore_adf", "-q", "sa"]}
SINGLE_EXAMPLES, ADF_EXAMPLES = 1000, 400  # cut in the middle


def matrix() -> tuple[list[tuple[str, list[str]]], list[tuple[str, list[str]]]]:
    """The combinations to run, and those refused by design (``--auto_budget`` with
    ``--oracle vw``), each as (format, flags)."""
    run, refused = [], []
    for fmt, base in FORMATS.items():
        legacy = (False, True) if fmt == "single" else (False,)
        for schedule, variant, oracle, compat, force_legacy, first, auto in itertools.product(
                SCHEDULES, VARIANTS, ORACLES, (False, True), legacy, (False, True),
                (False, True)):
            flags = [*base, "--schedule", schedule, variant, "--oracle", oracle]
            flags += ["--vw_compat"] * compat + ["--cb_force_legacy"] * force_legacy
            flags += ["--first_only"] * first + ["--auto_budget"] * auto
            (refused if auto and oracle == "vw" else run).append((fmt, flags))
    return run, refused


def command(args: list[str], stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, *args], input=stdin, capture_output=True, text=True,
                          timeout=300, check=False)


def split_and_resume(fmt: str, flags: list[str], model: pathlib.Path) -> dict:
    """The whole stream in one run, then in two with a save and a resume between."""
    parts = single_line_stream(SINGLE_EXAMPLES) if fmt == "single" else adf_stream(
        ADF_EXAMPLES)
    cut = len(parts) // 2
    whole, first, second = "".join(parts), "".join(parts[:cut]), "".join(parts[cut:])
    one = command([*flags, "-p", "-", "--quiet"], whole)
    part1 = command([*flags, "-p", "-", "--quiet", "-f", str(model)], first)
    part2 = command(["-i", str(model), "-p", "-", "--quiet"], second)
    model.unlink(missing_ok=True)
    statuses = (one.returncode, part1.returncode, part2.returncode)
    joined = part1.stdout + part2.stdout
    identical = statuses == (0, 0, 0) and joined == one.stdout
    result = {"format": fmt, "flags": " ".join(flags), "statuses": statuses,
              "identical": identical, "predictions": one.stdout.count("\n"),
              "distinct": len(set(one.stdout.split("\n")) - {""}),
              "stderr": (one.stderr + part1.stderr + part2.stderr).strip()}
    if not identical and statuses == (0, 0, 0):
        split_whole, split_joined = one.stdout.split("\n"), joined.split("\n")
        result["first_difference"] = next(
            (i + 1 for i, (a, b) in enumerate(zip(split_whole, split_joined)) if a != b),
            min(len(split_whole), len(split_joined)) + 1)
    return result


def refused_at_start(fmt: str, flags: list[str]) -> dict:
    done = command([*flags, "-p", "-", "--quiet"], "")
    return {"format": fmt, "flags": " ".join(flags), "status": done.returncode,
            "stderr": done.stderr.strip()}


def run_matrix(workers: int) -> dict:
    combos, refused = matrix()
    start = time.perf_counter()
    results, checks = [], []
    with tempfile.TemporaryDirectory() as folder, \
            concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(split_and_resume, fmt, flags,
                               pathlib.Path(folder) / f"m{i}.regcb")
                   for i, (fmt, flags) in enumerate(combos)]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            results.append(future.result())
            if done % 100 == 0 or done == len(futures):
                bad = sum(not r["identical"] for r in results)
                print(f"matrix: {done}/{len(futures)} combinations, {bad} not identical "
                      f"({time.perf_counter() - start:.0f} s)", flush=True)
        checks = list(pool.map(lambda combo: refused_at_start(*combo), refused))
    results.sort(key=lambda r: (r["format"] != "single", r["flags"]))
    return {"results": results, "refused": checks, "seconds": time.perf_counter() - start,
            "workers": workers}


# -- 2. fuzzing through cli.main --------------------------------------------------------------

TOKENS = [
    b"|", b":", b" ", b"\n", b"\t", b"\r", *(bytes([c]) for c in b"0123456789"), b"-", b".",
    b"e", b"E", b"+", b"'", b"a", b"s", b"x", b"f", b"nan", b"NaN", b"inf", b"-inf",
    b"1e400", b"1e-400", b"shared", b"shared ", b"\n\n", b" |", b"|a ", b"0:", b":0.5",
    "\ufeff".encode(), b"\xff", b"\xfe", b"\x80", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\x0b",
    b"\x0c", "\x85".encode(), "\u2028".encode(),
]
FUZZ_FLAGS = {  # each input runs with its format's flag and one of these
    "single": [[], ["--regcb"], ["--oracle", "bounded"], ["--oracle", "vw"], ["--auto_budget"],
               ["--regcb", "--schedule", "doubling"], ["--cb_force_legacy"],
               ["--regcbopt", "--vw_compat", "--first_only"]],
    "adf": [[], ["-q", "sa"], ["-q", "sa", "--regcb"], ["--oracle", "vw"],
            ["-q", "sa", "--auto_budget"], ["--regcbopt", "--vw_compat"]],
}
HAND_SEEDS = {
    "single": [b"1:1:0.5 |f a b\n", b"|f a b\n2:0:0.25 |f a c\n|f b\n3:-0.5:0.5 tagx |f a\n",
               b"1:0.5 'id |a:2 x:-1.5e-3 y\n\n4 |b z:3\n2:1:1 |a x |b y:0.5\n",
               b"\xef\xbb\xbf1:0:0.5 |f a\r\n|f b\r\n"],
    "adf": [b"shared 't1 |s a\n|a b\n0:-1:0.5 |a c\n\n",
            b"|a x\n|a y\n\n0:1:0.5 |a x\n|a y:2\n\n",
            b"shared |s f0:0.5 f1:-1\n|a act0 w:0.1\n0:0:0.3333 |a act1 w:0.6\n|a act2\n\n"
            b"shared |s f2\n\n|a z\n"],
}


def fuzz_seeds() -> dict[str, list[bytes]]:
    """Small valid inputs of each format (2 to 20 lines)."""
    rng = random.Random(0)
    single = "".join(single_line_stream(400, seed=1)).encode().splitlines(keepends=True)
    adf = [e.encode() for e in adf_stream(200, seed=1)]
    seeds = {"single": list(HAND_SEEDS["single"]), "adf": list(HAND_SEEDS["adf"])}
    for _ in range(60):
        start = rng.randrange(len(single) - 12)
        seeds["single"].append(b"".join(single[start:start + rng.randint(2, 12)]))
        start = rng.randrange(len(adf) - 4)
        seeds["adf"].append(b"".join(adf[start:start + rng.randint(1, 3)]))
    return seeds


def mutate(data: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    """1 to 4 mutations: tokens inserted or replacing bytes, bytes deleted, lines duplicated,
    deleted, shuffled or taken from another input, truncation; at most 20 lines."""
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(9)
        if op <= 1:  # (twice as likely)
            at = rng.randint(0, len(data))
            data = data[:at] + rng.choice(TOKENS) + data[at:]
        elif op == 2 and data:
            at = rng.randrange(len(data))
            data = data[:at] + data[at + rng.randint(1, 3):]
        elif op == 3 and data:
            at = rng.randrange(len(data))
            data = data[:at] + rng.choice(TOKENS) + data[at + rng.randint(1, 2):]
        elif op == 7 and data:
            data = data[:rng.randint(0, len(data) - 1)]
        elif op in (4, 5, 6, 8):
            lines = data.split(b"\n")
            i = rng.randrange(len(lines))
            if op == 4:
                lines.insert(i, lines[i])
            elif op == 5 and len(lines) > 1:
                del lines[i]
            elif op == 6:
                rng.shuffle(lines)
            else:
                lines[i] = rng.choice(rng.choice(others).split(b"\n"))
            data = b"\n".join(lines)
    lines = data.split(b"\n")
    return b"\n".join(lines[:20]) + (b"\n" if len(lines) > 20 else b"")


def cleaned_lines(data: bytes) -> list[bytes]:
    """The input's lines as the command reads them: split at ``\\n`` only, a last line
    without one counts, a trailing ``\\r`` and a leading BOM removed (``clean_line``)."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    out = []
    for line in lines:
        line = line[:-1] if line.endswith(b"\r") else line
        out.append(line[3:] if line.startswith(b"\xef\xbb\xbf") else line)
    return out


def example_ends(lines: list[bytes], adf: bool) -> list[tuple[int, int]]:
    """(first line, last line) of each example, 1-based: a non-empty line (single-line), a
    run of non-empty lines (ADF)."""
    if not adf:
        return [(no, no) for no, line in enumerate(lines, 1) if line]
    spans, start = [], None
    for no, line in enumerate(lines, 1):
        if line and start is None:
            start = no
        elif not line and start is not None:
            spans.append((start, no - 1))
            start = None
    if start is not None:
        spans.append((start, len(lines)))
    return spans


def _signature(error: BaseException) -> str:
    """An exception by its type and the function that raised it."""
    where = traceback.extract_tb(error.__traceback__)[-1]
    return (f"{type(error).__name__} in {where.name} "
            f"({os.path.relpath(where.filename, ROOT)}:{where.lineno})")


def _raises(main, folder: str, data: bytes, flags: list[str]) -> str | None:
    """The signature of the exception escaping ``main`` on this input (None: none)."""
    source, sink = os.path.join(folder, "shrink.dat"), os.path.join(folder, "shrink.p")
    with open(source, "wb") as out:
        out.write(data)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            main(["-d", source, "-p", sink, "--quiet", *flags])
    except Exception as error:  # noqa: BLE001 (the point)
        return _signature(error)
    return None


def shrink(main, data: bytes, flags: list[str], signature: str, budget: int = 3000) -> bytes:
    """A smaller input raising the same exception: whole lines, then single bytes removed
    as long as it still does (greedy, at most ``budget`` runs)."""
    tries = 0
    with tempfile.TemporaryDirectory() as folder:
        for joiner in (b"\n", b""):
            changed = True
            while changed and tries < budget:
                changed = False
                parts = data.split(b"\n") if joiner else [bytes([b]) for b in data]
                i = 0
                while i < len(parts) and tries < budget:
                    candidate = joiner.join(parts[:i] + parts[i + 1:])
                    tries += 1
                    if _raises(main, folder, candidate, flags) == signature:
                        parts, data, changed = parts[:i] + parts[i + 1:], candidate, True
                    else:
                        i += 1
    return data


def printf(data: bytes) -> str:
    """A shell ``printf`` command writing these bytes."""
    escapes = {ord("\\"): "\\\\", ord("%"): "%%", ord("'"): "'\\''", ord("\n"): "\\n",
               ord("`"): "\\x60"}
    text = "".join(escapes.get(b) or (chr(b) if 32 <= b < 127 else f"\\x{b:02x}")
                   for b in data)
    return f"printf '{text}'"


class Hang(BaseException):
    """An input that kept ``main`` busy longer than the time limit."""


def _alarm(signum, frame):
    raise Hang


def run_fuzz(n: int, seed: int, limit: float = 10.0) -> dict:
    from regcb_stream.command.main import main  # imported once; each input is one call

    rng = random.Random(seed)
    seeds = fuzz_seeds()
    counts = {key: 0 for key in (
        "inputs", "single", "adf", "other format", "status 0", "status 1", "other status",
        "tracebacks", "SystemExit", "hangs", "error without a line", "first line without a line",
        "line out of range", "more predictions than examples", "status 0: not one per example",
        "status 1: not one per earlier example", "python warnings")}
    failures: dict[str, list] = {}
    warned: dict[str, int] = {}
    raised: dict[str, int] = {}  # tracebacks by exception and the function raising it
    first: dict[str, tuple] = {}  # the first input of each
    previous = signal.signal(signal.SIGALRM, _alarm)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        source, sink = os.path.join(folder, "input.dat"), os.path.join(folder, "out.p")
        for i in range(n):
            fmt = "single" if i % 2 == 0 else "adf"
            data = mutate(rng.choice(seeds[fmt]), rng, seeds[fmt])
            mode = fmt if rng.random() < 0.9 else {"single": "adf", "adf": "single"}[fmt]
            flags = (["--cb_explore", "4"] if mode == "single" else ["--cb_explore_adf"])
            flags += rng.choice(FUZZ_FLAGS[mode])
            argv = ["-d", source, "-p", sink, "--quiet", *flags]
            with open(source, "wb") as out:
                out.write(data)
            counts["inputs"] += 1
            counts[fmt] += 1
            counts["other format"] += mode != fmt
            seen = len(caught)
            stderr = io.StringIO()
            problem = status = None
            signal.setitimer(signal.ITIMER_REAL, limit)
            try:
                with contextlib.redirect_stderr(stderr):
                    status = main(argv)
            except Hang:
                problem = "hangs"
            except SystemExit as exit_:
                problem, status = "SystemExit", exit_.code
            except KeyboardInterrupt:
                raise
            except BaseException as error:  # noqa: BLE001 (any exception escaping main)
                problem = "tracebacks"
                signature = _signature(error)
                raised[signature] = raised.get(signature, 0) + 1
                first.setdefault(signature, (data, flags))
                if raised[signature] <= 3:
                    kept = failures.setdefault(f"traceback: {signature}", [])
                    kept.append({"input": data, "flags": " ".join(flags), "status": None,
                                 "stderr": "".join(traceback.format_exception(
                                     error, limit=-4)).strip()})
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            for warning in caught[seen:]:
                counts["python warnings"] += 1
                text = f"{warning.category.__name__}: {warning.message} ({warning.filename}:" \
                       f"{warning.lineno})"
                warned[text] = warned.get(text, 0) + 1
                if warned[text] == 1:
                    _note(failures, "python warnings", data, flags, status,
                          stderr.getvalue())
            problems = [problem] if problem else []
            if not problem:
                with open(sink, encoding="utf-8") as predictions:
                    written = predictions.read()
                problems = _check(data, mode, flags, status, stderr.getvalue(), written,
                                  counts)
            for name in problems:
                counts[name] += 1
                if name != "tracebacks":
                    _note(failures, name, data, flags, status, stderr.getvalue())
            if (i + 1) % 10_000 == 0:
                bad = sum(counts[k] for k in ("tracebacks", "SystemExit", "hangs",
                                              "other status", "error without a line"))
                print(f"fuzz: {i + 1:,}/{n:,} inputs, {bad} failing the bars "
                      f"({time.perf_counter() - start:.0f} s)", flush=True)
    signal.signal(signal.SIGALRM, previous)
    seconds = time.perf_counter() - start
    smallest = {signature: (shrink(main, data, flags, signature), flags)
                for signature, (data, flags) in first.items()}
    return {"counts": counts, "failures": failures, "warnings": warned, "raised": raised,
            "smallest": smallest, "seconds": seconds, "seed": seed, "limit": limit}


def _check(data: bytes, mode: str, flags: list[str], status, stderr: str, written: str,
           counts: dict) -> list[str]:
    """The bars one run must meet (the names of those it misses)."""
    problems = []
    lines = cleaned_lines(data)
    examples = example_ends(lines, mode == "adf")
    legacy = "--cb_force_legacy" in flags
    predictions = written.count("\n") if legacy else written.count("\n\n")
    if status not in (0, 1):
        return ["other status"]
    counts[f"status {status}"] += 1
    if predictions > len(examples):
        problems.append("more predictions than examples")
    if status == 0 and predictions != len(examples):
        problems.append("status 0: not one per example")
    if status == 1:
        stderr_lines = stderr.splitlines() or [""]
        error = next((line for line in stderr_lines
                      if re.match(r"(regcb-stream: )?error\b", line)), stderr_lines[0])
        named = re.search(r"\bline (\d+)", error)
        if not re.search(r"\bline \d+", stderr_lines[0]):
            problems.append("first line without a line")
        if named is None:
            problems.append("error without a line")
        else:
            no = int(named.group(1))
            if not 1 <= no <= max(len(lines), 1):
                problems.append("line out of range")
            # every example that ends before the bad line's example starts is written
            earlier = sum(1 for first, last in examples if last < no and not first <= no <= last)
            if predictions != earlier:
                problems.append("status 1: not one per earlier example")
    return problems


def _note(failures: dict, name: str, data: bytes, flags: list[str], status, stderr: str
          ) -> None:
    """Keep the first few inputs of each kind of failure."""
    kept = failures.setdefault(name, [])
    if len(kept) < 5:
        kept.append({"input": data, "flags": " ".join(flags), "status": status,
                     "stderr": stderr.strip()[-1500:]})


# -- 3. kill -9 during saves -------------------------------------------------------------------

CHILD = """
import sys
from regcb_stream import RegCB
from regcb_stream.persist import save_model
from regcb_stream.datasets.synthetic import LinearProblem

path, child, k, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
X, _, R = LinearProblem.make(n_actions=k, dim=dim, seed=0).sample(3000, seed=1)
learners = []
for n in (3000, 2000):
    learner = RegCB(seed=0)
    learner.play(X[:n], list(range(k)), lambda rounds, actions: R[rounds, actions])
    learners.append(learner)
print("saving", flush=True)
i = 0
while True:
    save_model(path, learners[i % 2], {"child": child, "save": i})
    i += 1
"""
KILL_K, KILL_DIM = 10, 150  # 10 exact ridge models of 151 features: a 3.7 MB file
LABELS = {0: 3000, 1: 2000}  # n_labels of the learner saved with an even, odd "save"


def run_kills(kills: int, seed: int, window: float) -> dict:
    from regcb_stream import RegCB
    from regcb_stream.persist import load_model, remove_stale_temporaries, save_model

    rng = random.Random(seed)
    counts = {"kills": 0, "loads failed": 0, "wrong model": 0, "kills leaving a temporary": 0,
              "temporaries left after the next save": 0, "new model loaded": 0,
              "previous model loaded": 0}
    sizes, failures, delays, saves = [], [], [], []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.regcb")
        pattern = os.path.join(glob.escape(folder), "model.regcb.*.tmp")
        save_model(path, RegCB(seed=0), {"child": -1, "save": -1})  # before the first kill
        for kill in range(kills):
            child = subprocess.Popen([*COMMAND[:1], "-c", CHILD, path, str(kill), str(KILL_K),
                                      str(KILL_DIM)], stdout=subprocess.PIPE, text=True)
            if child.stdout.readline().strip() != "saving":
                raise RuntimeError(f"the saving child failed (status {child.wait()})")
            delay = rng.uniform(0, window)
            time.sleep(delay)
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            child.stdout.close()
            delays.append(delay)
            counts["kills"] += 1
            stray = glob.glob(pattern)
            if stray:
                counts["kills leaving a temporary"] += 1
                sizes += [os.path.getsize(name) for name in stray]
            try:
                learner, settings = load_model(path)
                number = settings["save"]
                expected = 0 if number == -1 else LABELS[number % 2]
            except Exception as error:  # noqa: BLE001 (any failure to load counts)
                counts["loads failed"] += 1
                failures.append(f"kill {kill + 1}: {type(error).__name__}: {error}")
                learner, settings = RegCB(seed=0), {"child": -1, "save": -1}
            else:
                if learner.n_labels != expected:
                    counts["wrong model"] += 1
                    failures.append(f"kill {kill + 1}: save {number} holds {learner.n_labels}"
                                    f" labels, not {expected}")
                new = settings["child"] == kill
                counts["new model loaded" if new else "previous model loaded"] += 1
                saves.append(number + 1 if new else 0)
            remove_stale_temporaries(path)  # what the command does before its save
            save_model(path, learner, settings)
            if glob.glob(pattern):
                counts["temporaries left after the next save"] += 1
        model_size = os.path.getsize(path)
    return {"counts": counts, "failures": failures, "sizes": sizes, "delays": delays,
            "saves": saves, "model_size": model_size, "seconds": time.perf_counter() - start,
            "window": window}


# -- report ------------------------------------------------------------------------------------


def machine() -> str:
    cpu = "unknown CPU"
    with contextlib.suppress(OSError, StopIteration), open("/proc/cpuinfo",
                                                           encoding="utf-8") as fh:
        cpu = next(line.split(":", 1)[1].strip() for line in fh if "model name" in line)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} cores ({cpu}), {platform.platform()}, Python "
            f"{platform.python_version()}, numpy {np.__version__}; load average at the start "
            f"{load}")


def verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**FAIL**"


def report(args, facts: str, matrix_: dict | None, fuzz: dict | None, kills: dict | None,
           seconds: float) -> str:
    command_ = " ".join(["`.venv/bin/python -m bench.experiments.reliability",
                         f"--fuzz {args.fuzz}",
                         f"--kills {args.kills}", f"--seed {args.seed}",
                         *(["--skip-matrix"] if args.skip_matrix else []),
                         *(["--skip-fuzz"] if args.skip_fuzz else []),
                         *(["--skip-kills"] if args.skip_kills else [])]) + "`"
    lines = [
        "# Reliability of `regcb-stream`: split-and-resume, fuzzed input, `kill -9` mid-save",
        "",
        f"Command: {command_} ({seconds:.0f} s in all).",
        "",
        f"- {stamp()}",
        f"- Machine: {facts}",
        "",
        "| bar | verdict |",
        "|---|---|",
    ]
    sections = []
    if matrix_ is not None:
        text, ok = matrix_section(matrix_)
        lines.append(f"| split-and-resume: every combination of the matrix byte-identical to "
                     f"one run | {verdict(ok)} |")
        sections += text
    if fuzz is not None:
        text, ok = fuzz_section(fuzz)
        lines.append(f"| fuzz: no traceback, exit status 0 or 1, every error names its line | "
                     f"{verdict(ok)} |")
        sections += text
    if kills is not None:
        text, ok = kills_section(kills)
        lines.append(f"| `kill -9` mid-save: the model always loads, no temporary file "
                     f"survives the next save | {verdict(ok)} |")
        sections += text
    return "\n".join(lines + sections) + "\n"


def matrix_section(m: dict) -> tuple[list[str], bool]:
    results = m["results"]
    identical = sum(r["identical"] for r in results)
    by_format = {fmt: [r for r in results if r["format"] == fmt] for fmt in FORMATS}
    refused_ok = sum(r["status"] == 2 and "budget='auto' needs an ellipsoid oracle" in
                     r["stderr"] for r in m["refused"])
    noisy = sum(bool(r["stderr"]) for r in results)
    ok = identical == len(results) and refused_ok == len(m["refused"])
    lines = [
        "",
        "## 1. Split-and-resume over the matrix of flags",
        "",
        f"Flags: `--schedule` {{{', '.join(SCHEDULES)}}} x {{`--regcb`, `--regcbopt`}} x "
        f"`--oracle` {{{', '.join(ORACLES)}}} x {{`--vw_compat` or not}} x "
        "{`--cb_force_legacy` or not (single-line only)} x {`--first_only` or not} x "
        "{`--auto_budget` or not}, on a single-line `--cb_explore 4` stream of "
        f"{SINGLE_EXAMPLES} examples and an ADF `--cb_explore_adf -q sa` stream of "
        f"{ADF_EXAMPLES} examples (3 or 4 actions). Each combination: the whole stream in one "
        "run (`-p -`, stdin), its first half with `-f MODEL`, its second half with `-i MODEL` "
        f"and no other flag; {m['workers']} combinations at a time; "
        f"{m['seconds']:.0f} s.",
        "",
        "| stream | combinations run | byte-identical | not identical | median distinct "
        "predictions per run |",
        "|---|---|---|---|---|",
    ]
    for fmt, rows in by_format.items():
        same = sum(r["identical"] for r in rows)
        distinct = int(np.median([r["distinct"] for r in rows])) if rows else 0
        lines.append(f"| {fmt} | {len(rows)} | {same} | {len(rows) - same} | {distinct} |")
    lines += [
        f"| all | {len(results)} | {identical} | {len(results) - identical} | |",
        "",
        f"`--auto_budget` with `--oracle vw` is refused at the start by design (exit 2, "
        f"\"budget='auto' needs an ellipsoid oracle\"): those {len(m['refused'])} "
        f"combinations were not run through the stream; {refused_ok} of them were checked to "
        "be refused so.",
        f"Runs that wrote anything on stderr (with `--quiet`): {noisy} combinations.",
    ]
    failed = [r for r in results if not r["identical"]]
    if failed:
        lines += ["", "Combinations whose split run differs from the whole run:", "",
                  "| stream | flags | statuses (whole, first half, second half) | first "
                  "differing output line | stderr |", "|---|---|---|---|---|"]
        for r in failed:
            lines.append(f"| {r['format']} | `{r['flags']}` | {r['statuses']} | "
                         f"{r.get('first_difference', '')} | {_cell(r['stderr'])} |")
    bad_refusals = [r for r in m["refused"] if r["status"] != 2]
    if bad_refusals:
        lines += ["", "Combinations expected to be refused with exit 2 that were not:", ""]
        lines += [f"- `{r['flags']}`: status {r['status']}" for r in bad_refusals]
    lines += ["", f"Verdict: {verdict(ok)} (bar: every combination identical)."]
    return lines, ok


def fuzz_section(f: dict) -> tuple[list[str], bool]:
    c = f["counts"]
    bars = ("tracebacks", "SystemExit", "hangs", "other status", "error without a line")
    ok = all(c[name] == 0 for name in bars) and c["more predictions than examples"] == 0
    per_input = f["seconds"] / max(c["inputs"], 1) * 1000
    lines = [
        "",
        "## 2. Fuzzing through the command's entry point",
        "",
        f"{c['inputs']:,} mutated inputs (seed {f['seed']}), each run by "
        "`regcb_stream.command.main.main([-d FILE, -p OUT, --quiet, FLAGS])` in one process, "
        "stderr "
        f"captured: {c['single']:,} mutations of single-line inputs, {c['adf']:,} of ADF "
        f"inputs ({c['other format']:,} run with the other format's flag); flags "
        "`--cb_explore 4` or `--cb_explore_adf` with one of: "
        + "; ".join(f"{fmt}: " + ", ".join(f"`{' '.join(x)}`" if x else "none" for x in sets)
                    for fmt, sets in FUZZ_FLAGS.items())
        + ". Mutations (1 to 4 per input): VW's significant characters (`|`, `:`, space, "
        "`\\n`, `\\t`, `\\r`, digits, `-`, `.`, `e`, letters, `nan`, `inf`, `shared`, the "
        "BOM, bytes that are not UTF-8, NUL, `\\x0b`, `\\x0c`, U+0085, U+2028) inserted or "
        "replacing bytes; bytes deleted; lines duplicated, deleted, shuffled or taken from "
        "another input; truncation; at most 20 lines. "
        f"{f['seconds']:.0f} s, {per_input:.2f} ms per input (time limit "
        f"{f['limit']:g} s per input).",
        "",
        "| count | inputs |",
        "|---|---|",
    ]
    for name in ("status 0", "status 1", "other status", "tracebacks", "SystemExit", "hangs",
                 "error without a line", "first line without a line", "line out of range",
                 "more predictions than examples", "status 0: not one per example",
                 "status 1: not one per earlier example", "python warnings"):
        lines.append(f"| {name} | {c[name]:,} |")
    lines += [
        "",
        "Bars: no traceback, no SystemExit, no hang, exit status 0 or 1, every status-1 error "
        "naming a line, never more predictions than examples. Also counted: the first stderr "
        "line naming a line (a warning before the error names its own line), the line named "
        "within the input, one prediction per example with status 0 and one per example "
        "before the bad one with status 1 (examples counted from the input's bytes: non-empty "
        "lines, or runs of them for ADF, after removing a trailing `\\r` and a BOM), and "
        "Python warnings reaching the user.",
    ]
    if f["warnings"]:
        lines += ["", "Python warnings (the first input of each is listed below):", ""]
        lines += [f"- {count:,} x {_one_line(text)}" for text, count in f["warnings"].items()]
    if f["raised"]:
        lines += ["", "Tracebacks, by exception and the function raising it:", "",
                  "| exception | inputs |", "|---|---|"]
        lines += [f"| {_cell(name)} | {count:,} |" for name, count in sorted(
            f["raised"].items(), key=lambda item: -item[1])]
        lines += ["", "The smallest input found for each (the first failing input, shrunk by "
                  "removing lines, then bytes, while the same exception escapes), as a command "
                  "to reproduce it:", ""]
        for name, (data, flags) in f["smallest"].items():
            lines.append(f"- {name}: `{printf(data)} | .venv/bin/python -m regcb_stream "
                         f"{' '.join(flags)} -p /dev/null --quiet`")
    for name, kept in f["failures"].items():
        lines += ["", f"First inputs counted as \"{name}\" (run with `-d FILE -p OUT "
                  "--quiet`, FILE holding the input's bytes):", ""]
        for item in kept:
            lines.append(f"- flags `{item['flags']}`, status {item['status']}, input "
                         f"`{_one_line(repr(item['input']))}`")
            if name.startswith("traceback"):
                lines += ["", "  ```", *("  " + x for x in item["stderr"].splitlines()),
                          "  ```", ""]
            else:
                lines[-1] += f"; stderr: {_one_line(item['stderr'])}"
    lines += ["", f"Verdict: {verdict(ok)} (bars: 0 tracebacks, every error naming its line)."]
    return lines, ok


def kills_section(k: dict) -> tuple[list[str], bool]:
    c = k["counts"]
    ok = (c["loads failed"] == 0 and c["wrong model"] == 0
          and c["temporaries left after the next save"] == 0)
    sizes = k["sizes"]
    lines = [
        "",
        "## 3. `kill -9` during saves",
        "",
        f"A child process trains two `RegCB(seed=0)` learners ({KILL_K} actions, "
        f"{KILL_DIM}-dimensional contexts, 3,000 and 2,000 rounds: {KILL_K} exact ridge "
        "models) and saves them in turn to the same path with "
        "`save_model(path, learner, {\"child\": n, \"save\": i})` in an endless loop; the "
        "parent sends SIGKILL at a uniform random time in the first "
        f"{k['window'] * 1000:.0f} ms after it starts saving. After each kill: "
        "`load_model(path)` (the learner must be the one its `save` number names; \"new\": "
        "saved by the child just killed), the temporary files `model.regcb.*.tmp` counted, "
        "then `remove_stale_temporaries(path)` and `save_model(path, ...)` (what the command "
        "does before its save with `-f`) and the temporary files counted again. "
        f"{k['seconds']:.0f} s.",
        "",
        "| count | kills |",
        "|---|---|",
    ]
    for name in ("kills", "loads failed", "wrong model", "new model loaded",
                 "previous model loaded", "kills leaving a temporary",
                 "temporaries left after the next save"):
        lines.append(f"| {name} | {c[name]} |")
    if sizes:
        lines += ["", f"Temporary files left by the kills: {len(sizes)}, of "
                  f"{min(sizes):,} to {max(sizes):,} bytes (the model files: "
                  f"{k['model_size']:,} bytes); none was ever renamed over the model."]
    if k["saves"]:
        done = [s for s in k["saves"] if s]
        if done:
            lines.append(f"Saves completed by a child before its kill: median "
                         f"{int(np.median(done))}, at most {max(done)}.")
    if k["failures"]:
        lines += ["", "Failures:", ""] + [f"- {_one_line(text)}" for text in k["failures"][:20]]
    lines += ["", f"Verdict: {verdict(ok)} (bars: 0 failed loads; no temporary file after the "
              "next save; kills leaving a temporary file are expected: that is the point)."]
    return lines, ok


def _one_line(text: str, width: int = 400) -> str:
    """Text for a list item: one line, backticks made quotes, cut."""
    text = text if len(text) <= width else text[:width - 3] + "..."
    return text.replace("`", "'").replace("\n", " / ").replace("\r", "\\r")


def _cell(text: str, width: int = 400) -> str:
    """Text for a Markdown table cell: `_one_line`, its bars escaped."""
    return _one_line(text, width).replace("|", "\\|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fuzz", type=int, default=100_000, help="mutated inputs")
    parser.add_argument("--kills", type=int, default=200, help="kill -9 during saves")
    parser.add_argument("--window", type=float, default=0.04,
                        help="seconds after the child starts saving in which it is killed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="matrix runs at a time")
    parser.add_argument("--skip-matrix", action="store_true")
    parser.add_argument("--skip-fuzz", action="store_true")
    parser.add_argument("--skip-kills", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "reliability.md"))
    args = parser.parse_args()
    facts = machine()
    start = time.perf_counter()
    matrix_ = None if args.skip_matrix else run_matrix(args.workers)
    fuzz = None if args.skip_fuzz else run_fuzz(args.fuzz, args.seed)
    kills = None if args.skip_kills else run_kills(args.kills, args.seed, args.window)
    text = report(args, facts, matrix_, fuzz, kills, time.perf_counter() - start)
    pathlib.Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
