"""Golden outputs: the command's ``-p`` output and progress table, and the Python API's
distributions, pinned as SHA-256 hashes, through the public surface only (the commands and
the names the README documents).

They pin behaviour while the code moves: a change to any hash is a change of decisions, and
must be named and explained where it is made. ``REGCB_GOLDEN=write pytest
tests/test_golden.py`` rewrites ``tests/golden.json`` (only for such a named change).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATA, TRAIN = SHARED / "data", SHARED / "vw_tests" / "train-sets"
GOLDEN = pathlib.Path(__file__).with_name("golden.json")
WRITE = os.environ.get("REGCB_GOLDEN") == "write"
BIN = pathlib.Path(sys.executable).parent
_found: dict[str, str] = {}


def needs(path: pathlib.Path) -> pathlib.Path:
    if not path.exists():
        pytest.skip(f"{path} is missing (it comes with ../shared)")
    return path


def digest(*parts) -> str:
    """One hash of texts, bytes and float arrays (their exact bits)."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            part = part.encode()
        elif not isinstance(part, bytes):
            array = np.asarray(part)
            part = (array.astype(np.float64) if array.dtype.kind == "f" else
                    array.astype(np.int64)).tobytes()
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def check(name: str, value: str) -> None:
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if WRITE:
        golden[name] = value
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        return
    assert name in golden, f"no golden hash for {name}: REGCB_GOLDEN=write to record one"
    assert value == golden[name], f"{name}: the output changed"


def letter(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n`` letter rows, standardized, and every action's reward (the class)."""
    table = np.loadtxt(gzip.open(needs(DATA / "letter.tsv.gz"), "rt"), delimiter="\t",
                       skiprows=1, max_rows=n)
    X, y = table[:, :-1], table[:, -1].astype(int) - 1
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, np.eye(26)[y]


def logged_text(X, R, adf: bool, shared_features: bool = False, seed: int = 0) -> str:
    """A uniformly logged VW stream (every fifth single-line example unlabelled)."""
    n, k = R.shape
    actions = np.random.default_rng(seed).integers(k, size=n)
    out = []
    for t, (x, r, a) in enumerate(zip(X.tolist(), R.tolist(), actions.tolist())):
        context = "|s " + " ".join(f"f{j}:{v:.4f}" for j, v in enumerate(x))
        label = f"{1 - r[a]:g}:{1 / k:.6f}"
        if adf:
            lines = [f"|a v:{(j + 1) / k:.4f} w:{(j % 3) / 2:g}" if shared_features
                     else f"|a a{j}" for j in range(k)]
            lines[a] = f"0:{label} {lines[a]}"
            out.append("\n".join(["shared " + context, *lines]) + "\n\n")
        else:
            out.append((f"{a + 1}:{label} " if t % 5 else "") + context + "\n")
    return "".join(out)


def dsjson_text(X, R, rewards_later: bool, seed: int = 0) -> str:
    """Letter as DSJSON events; with ``rewards_later``, every other event's reward comes
    as a reward line some events later."""
    n, k = R.shape
    rng = np.random.default_rng(seed)
    actions, delays = rng.integers(k, size=n), rng.integers(1, 40, size=n)
    lines, due = [], {}
    for t, (x, r, a) in enumerate(zip(X.tolist(), R.tolist(), actions.tolist())):
        context = {"s": {f"f{j}": round(v, 4) for j, v in enumerate(x)},
                   "_multi": [{"a": {f"a{j}": 1}} for j in range(k)]}
        event = {"EventId": f"e{t}", "a": list(range(1, k + 1)), "c": context,
                 "p": [1 / k] * k}
        if rewards_later and t % 2:
            due.setdefault(t + int(delays[t]), []).append((f"e{t}", r[a]))
        else:
            event = {"_label_cost": -r[a], "_label_probability": 1 / k,
                     "_label_Action": a + 1, "_labelIndex": a, **event}
        lines.append(json.dumps(event))
        for event_id, value in due.pop(t, []):
            lines.append(json.dumps({"EventId": event_id, "v": value}))
    return "\n".join(lines) + "\n"


def bag_of_words(n: int, k: int, adf: bool, seed: int = 0) -> str:
    """A hashed sparse stream: each example a few words of a 5,000-word vocabulary, the
    best action set by the first word; logged uniformly."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = rng.integers(5000, size=6)
        a, best = int(rng.integers(k)), int(words[0]) % k
        cost = 0 if a == best else 1
        context = "|w " + " ".join(f"w{w}" for w in words.tolist())
        if adf:
            lines = [f"|a a{j}" for j in range(k)]
            lines[a] = f"0:{cost}:{1 / k:g} {lines[a]}"
            out.append("\n".join(["shared " + context, *lines]) + "\n\n")
        else:
            out.append(f"{a + 1}:{cost}:{1 / k:g} {context}\n")
    return "".join(out)


def slot_stream(n: int, kind: str = "ccb", ids: bool = False, seed: int = 0) -> str:
    """Logged multi-slot examples: 5 numbers (and with ``ids`` a hashed user id) on the
    shared line, 8 actions, 3 slots; the cost of a slot's logged action set by the first
    number and the slot. CCB: every other slot line without an outcome, one in seven
    naming the actions it may take; slates: each slot its own actions, a slate cost."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        u = rng.normal(size=5)
        user = f"id{rng.integers(2000)} " if ids else ""
        shared = f"|User {user}" + " ".join(f"u{i}:{v:.4f}" for i, v in enumerate(u))
        if kind == "slates":
            lines = [f"slates shared {float(u[0] > 0):g} {shared}"]
            lines += [f"slates action {i % 3} |Action a{i} k{i % 2}" for i in range(8)]
            lines += [f"slates slot {rng.integers(len(range(j, 8, 3)))}:"
                      f"{1 / len(range(j, 8, 3)):.6f} |Slot s{j}" for j in range(3)]
        else:
            lines = [f"ccb shared {shared}"]
            lines += [f"ccb action |Action a{i} k{i % 3}" for i in range(8)]
            for j, action in enumerate(rng.permutation(8)[:3]):
                cost = float(action == int(u[0] > 0) + 2 * j)
                label = f"{action}:{cost:g}:{1 / (8 - j):.6f} " if (t + j) % 2 else ""
                include = "0,2,4,6 " if t % 7 == 3 and j == 0 else ""
                lines.append(f"ccb slot {label}{include}|Slot s{j}")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def command(args: list[str], stdin: str = "", program: str = "regcb-stream"
            ) -> subprocess.CompletedProcess:
    done = subprocess.run([str(BIN / program), *args], input=stdin, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    """The streams of the command's cases, written once."""
    folder = tmp_path_factory.mktemp("golden")
    X, R = letter(3000)
    files = {
        "letter.dat": logged_text(X, R, adf=False),
        "letter_adf.dat": logged_text(X[:1200], R[:1200], adf=True),
        "letter_rank.dat": logged_text(X[:800], R[:800], adf=True, shared_features=True),
        "letter.json": dsjson_text(X[:1500], R[:1500], rewards_later=False),
        "letter_late.json": dsjson_text(X[:1500], R[:1500], rewards_later=True),
        "words.dat": bag_of_words(3000, 4, adf=False),
        "words_adf.dat": bag_of_words(1500, 4, adf=True),
        "ccb.dat": slot_stream(1500),
        "ccb_ids.dat": slot_stream(1500, ids=True),
        "slates.dat": slot_stream(600, kind="slates"),
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


SINGLE = ["--cb_explore", "26"]
ADF = ["--cb_explore_adf", "-q", "sa"]
COMMAND_CASES = {
    "single default": ("letter.dat", SINGLE),
    "single elimination": ("letter.dat", [*SINGLE, "--regcb"]),
    "single optimistic": ("letter.dat", [*SINGLE, "--regcb", "--regcbopt"]),
    "single shared ties": ("letter.dat", [*SINGLE, "--ties", "shared"]),  # (the default's
    # decisions before ties="clipped": its hash is theirs)
    "single sqrt2": ("letter.dat", [*SINGLE, "--schedule", "sqrt2"]),
    "single doubling elimination": ("letter.dat", [*SINGLE, "--schedule", "doubling",
                                                   "--regcb"]),
    "single vw oracle": ("letter.dat", [*SINGLE, "--oracle", "vw"]),
    "single vw_compat": ("letter.dat", [*SINGLE, "--oracle", "vw", "--vw_compat", "--regcb",
                                        "--regcbopt"]),
    "single bounded": ("letter.dat", [*SINGLE, "--oracle", "bounded"]),
    "single auto budget": ("letter.dat", [*SINGLE, "--auto_budget"]),
    "single forget": ("letter.dat", [*SINGLE, "--forget", "0.999"]),
    "single beta": ("letter.dat", [*SINGLE, "--beta", "0.01", "--ridge_prior", "zero"]),
    "single legacy": ("letter.dat", [*SINGLE, "--cb_force_legacy"]),
    "single first_only": ("letter.dat", [*SINGLE, "--regcbopt", "--first_only"]),
    "single change test": ("letter.dat", [*SINGLE, "--change_threshold", "0.5"]),
    "adf default": ("letter_adf.dat", ADF),
    "adf elimination": ("letter_adf.dat", [*ADF, "--regcb"]),
    "adf optimistic": ("letter_adf.dat", [*ADF, "--regcbopt"]),
    "adf shared ties": ("letter_adf.dat", [*ADF, "--ties", "shared"]),
    "adf sqrt2": ("letter_adf.dat", [*ADF, "--schedule", "sqrt2"]),
    "adf vw oracle": ("letter_adf.dat", [*ADF, "--oracle", "vw"]),
    "adf vw_compat": ("letter_adf.dat", [*ADF, "--oracle", "vw", "--vw_compat", "--regcb"]),
    "adf auto budget": ("letter_adf.dat", [*ADF, "--auto_budget"]),
    "adf ranking": ("letter_rank.dat", ["--cb_explore_adf"]),
    "adf ranking crossed": ("letter_rank.dat", ADF),
    "dsjson": ("letter.json", ["--dsjson"]),
    "dsjson vw_compat": ("letter.json", ["--dsjson", "--oracle", "vw", "--vw_compat",
                                         "--regcb"]),
    "hashed words": ("words.dat", ["--cb_explore", "4"]),
    "hashed words 12 bits": ("words.dat", ["--cb_explore", "4", "-b", "12", "--regcb"]),
    "hashed words adf": ("words_adf.dat", ["--cb_explore_adf", "-q", "wa"]),
    "hashed words adf bounded": ("words_adf.dat", ["--cb_explore_adf", "-q", "wa",
                                                   "--oracle", "bounded"]),
    "ccb default": ("ccb.dat", ["--ccb_explore_adf"]),
    "ccb elimination": ("ccb.dat", ["--ccb_explore_adf", "--regcb"]),
    "ccb optimistic": ("ccb.dat", ["--ccb_explore_adf", "--regcb", "--regcbopt"]),
    "ccb hashed ids": ("ccb_ids.dat", ["--ccb_explore_adf"]),
    "slates default": ("slates.dat", ["--slates"]),
}
VW_CASES = {  # VW's own test files
    "vw test 320": ("cb_load.dat", ["--cb_explore_adf", "-q", "UA", "--regcb",
                                    "--mellowness", ".001", "--oracle", "vw", "--vw_compat"]),
    "vw cb_load": ("cb_load.dat", ["--cb_explore_adf", "-q", "UA", "--regcb"]),
    "vw cb_test.ldf": ("cb_test.ldf", ["--cb_explore_adf", "--regcb", "--noconstant"]),
    "vw explore_eval_egreedy": ("explore_eval_egreedy.dat", ["--cb_explore_adf", "-q", "UA"]),
    "vw decisionservice": ("decisionservice.json", ["--dsjson"]),
    "vw dsjson_cb": ("dsjson_cb.json", ["--dsjson", "--regcbopt"]),
    "vw cb_simple": ("cb_simple.json", ["--dsjson", "--oracle", "vw", "--vw_compat",
                                        "--regcb"]),
}


@pytest.mark.parametrize("name", sorted(COMMAND_CASES))
def test_command_predictions(name, streams):
    """``-p`` output and the progress table on stderr, as a user runs the command."""
    data, flags = COMMAND_CASES[name]
    done = command([*flags, "-d", str(streams / data), "-p", "/dev/stdout"])
    check(f"command {name}", digest(done.stdout, done.stderr))


@pytest.mark.parametrize("name", sorted(VW_CASES))
def test_command_on_vw_test_files(name):
    data, flags = VW_CASES[name]
    done = command([*flags, "-d", str(needs(TRAIN / data)), "-p", "/dev/stdout"])
    check(f"command {name}", digest(done.stdout, done.stderr))


def test_command_delayed_rewards_and_decision_log(streams, tmp_path):
    log = tmp_path / "decisions.json"
    done = command(["--dsjson", "--reward_wait", "25", "--default_reward", "0",
                    "--decision_log", str(log), "-d", str(streams / "letter_late.json"),
                    "-p", "/dev/stdout"])
    check("command delayed rewards", digest(done.stdout, done.stderr, log.read_text()))


def test_command_lenient_skips_bad_lines(streams):
    lines = (streams / "letter.dat").read_text().splitlines(keepends=True)[:600]
    lines[100], lines[300] = "1:0.5:2 |s f0:1\n", "x:y |s\n"
    done = command([*SINGLE, "--lenient", "-p", "/dev/stdout"], "".join(lines))
    check("command lenient", digest(done.stdout, done.stderr))


@pytest.mark.parametrize("data, flags, cut", [
    ("letter.dat", SINGLE, 1700),
    ("letter.dat", [*SINGLE, "--schedule", "sqrt2", "--regcb"], 1000),
    ("letter_adf.dat", ADF, 500 * 28),
    ("letter_late.json", ["--dsjson", "--reward_wait", "25"], 800),
    ("words.dat", ["--cb_explore", "4"], 2000),
])
def test_command_resume_split(data, flags, cut, streams, tmp_path):
    """A stream split in two with ``-f``/``-i`` between: its outputs, and the second half
    tested (``-t``) after."""
    lines = (streams / data).read_text().splitlines(keepends=True)
    model = tmp_path / "model.regcb"
    first = command([*flags, "-p", "/dev/stdout", "-f", str(model), "--quiet"],
                    "".join(lines[:cut]))
    resumed = ["-i", str(model), "-p", "/dev/stdout", "--quiet"]
    if "--reward_wait" in flags:
        resumed += ["--reward_wait", "25"]
    second = command([*resumed, "-f", str(model)], "".join(lines[cut:]))
    tested = command(["-i", str(model), "-t", "-p", "/dev/stdout", "--quiet"],
                     "".join(lines[cut:])) if "--reward_wait" not in flags else first
    check(f"resume {data} {' '.join(flags)}", digest(first.stdout, second.stdout,
                                                     tested.stdout))


def test_ope_and_compare_commands(streams, tmp_path):
    model = tmp_path / "model.regcb"
    text = (streams / "letter.dat").read_text()
    command([*SINGLE, "-f", str(model), "--quiet"], text[:len(text) // 2])
    ope = command(["-d", str(streams / "letter.dat"), "--policy-model", str(model)],
                  program="regcb-ope")
    uniform = command(["-d", str(streams / "letter_adf.dat"), "--cb_explore_adf",
                       "--policy", "constant:3"], program="regcb-ope")
    compare = command([str(needs(TRAIN / "explore_eval_egreedy.dat")), "-q", "UA",
                       "--quiet", "--json", "-"], program="regcb-compare")
    check("commands ope and compare", digest(ope.stdout, uniform.stdout, compare.stdout))


def test_python_api():
    """``RegCB`` and its companions through their public names (`golden_api.py`), in a
    process of their own with BLAS on one thread."""
    needs(DATA / "letter.tsv.gz")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(pathlib.Path(__file__).with_name(
        "golden_api.py"))], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for name, value in json.loads(done.stdout).items():
        check(name, value)
