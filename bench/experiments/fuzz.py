"""Fuzzing every reader and entry point: the bar of issue 44.

Each generated input is one call of an entry point in a worker process (one import, many
calls): ``regcb-stream``'s ``main(argv)``, ``regcb-ope``'s, ``regcb-compare``'s, or a method of
the Python API. The targets, in the share of the inputs each gets:

- ``text``, ``adf``: VW text, single-line (``--cb_explore 4``) and ADF, small valid inputs
  mutated (`bench.experiments.reliability.mutate`: bytes VW gives a meaning to, bytes that
  are not UTF-8, lines duplicated, deleted, shuffled, truncation), with a few flag sets;
- ``dsjson``: lines of VW's DSJSON test files and of a generated log, mutated as text and as
  JSON (values of the wrong type, nulls, strings for numbers, nesting up to 100,000 levels
  deep, lone surrogates, bytes that are not UTF-8);
- ``gzip``: those inputs gzip-compressed, then bytes flipped, members cut, garbage after
  the magic number, members concatenated, through all three commands;
- ``model``: model files of ``-f`` damaged (bytes flipped or cut; the JSON header's values
  of the wrong type, keys removed, classes renamed, nested 100,000 deep; arrays of the
  wrong shape, type or with NaN) through ``-i``, ``regcb-ope --policy-model`` and
  ``load_model``;
- ``slots``: VW's multi-slot text (``--ccb_explore_adf``, ``--slates``), examples of
  ``make``'s example logs and hand-written ones (outcomes with every probability, included
  actions, slots without outcome), mutated as the text inputs, through a few flag sets;
- ``flags``: combinations of the commands' flags (and VW's) with values valid and not;
- ``ope``, ``compare``: mutated logs through ``regcb-ope`` and ``regcb-compare``;
- ``api``: `regcb_stream.RegCB`'s constructor and methods, one argument replaced by a value
  of the wrong type or value (None, NaN, inf, -1, strings, empty and ragged sequences, ...).

Bars: no exception escapes an entry point and no ``Traceback`` is printed; the exit status
is 0, 1 (bad data), 2 (flags, paths, model files), 130 or 141; a refusal (1 or 2) names the
line (``line N``) or a flag or path the user gave; with VW text, never more predictions than
examples, one per example before the bad line; every prediction a distribution (each
probability in [0, 1], their sum 1). The API refuses with ``ValueError`` or ``TypeError``
naming the parameter, or accepts the value and stays sound (20 rounds after it give valid
distributions). A sample of the inputs (``--processes``) runs again as real processes: the
same exit status, no traceback. Inputs are generated from ``(seed, index)``: the same
command gives the same inputs.

From the repository root (about 25 minutes on 2 cores at the defaults)::

    .venv/bin/python -m bench.experiments.fuzz [--inputs 100000] [--seed 0] [--workers 2]
        [--processes 300] [--out docs/results/fuzz.md]

Writes ``docs/results/fuzz.md`` (``--out``) and prints it.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import gzip
import inspect
import io
import json
import os
import pathlib
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
import zlib

import numpy as np

from bench.experiments.reliability import (
    FUZZ_FLAGS,
    cleaned_lines,
    example_ends,
    fuzz_seeds,
    mutate,
    printf,
)
from bench.provenance import stamp

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
VW_DSJSON = sorted((SHARED / "vw_tests" / "train-sets").glob("*.json"))
STATUSES = (0, 1, 2, 130, 141)
LIMIT = 20.0  # seconds an input may take before it counts as a hang

#: the targets and their shares of the inputs
SHARES = {"text": 0.13, "adf": 0.13, "dsjson": 0.16, "slots": 0.08, "gzip": 0.11,
          "model": 0.10, "flags": 0.12, "ope": 0.06, "compare": 0.002, "api": 0.078}
SLOT_SEEDS = [  # (hand-written: what the example logs do not show)
    b"ccb shared |User b\nccb action |Action d\nccb action |Action e\n"
    b"ccb slot 0:0:0.5,1:0.5 0,1 |Slot i\nccb slot |Slot j\n\n",
    b"ccb shared |User a:2 b\nccb action |Action d\nccb action |Action e\n"
    b"ccb action |Action f\nccb slot 2:1:0.25 1,2 'tag |Slot h\n"
    b"ccb slot 0:-1:1 |Slot k:0.5\n\n",
    b"slates shared 0.8 |User b\nslates action 0 |Action d\nslates action 1 |Action e\n"
    b"slates action 1 |Action f\nslates slot 0:0.8 |Slot h\nslates slot 1:0.5,0:0.5 |Slot i\n\n",
]
MODULES = {"regcb-stream": "regcb_stream", "regcb-ope": "regcb_stream.evaluation.ope",
           "regcb-compare": "regcb_stream.evaluation.compare"}


class Case:
    """One generated input: an entry point, its arguments and the files they name."""

    def __init__(self, target: str, entry: str, argv: list[str], files: dict[str, bytes],
                 fmt: str | None = None, call=None):
        self.target, self.entry, self.argv, self.files = target, entry, argv, files
        self.fmt = fmt  # "text", "adf": the predictions are checked against the examples
        self.call = call  # the API: a function of nothing that makes the call

    def describe(self) -> str:
        shown = {name: printf(data[:300]) + (" ..." if len(data) > 300 else "")
                 for name, data in self.files.items()}
        return f"{self.entry} {' '.join(self.argv)}  " + "  ".join(
            f"[{name}: {text}]" for name, text in shown.items())


# -- inputs ------------------------------------------------------------------------------------

def dsjson_seeds() -> list[bytes]:
    """Lines of VW's DSJSON test files and of a generated log (joined events)."""
    from bench.experiments.dsjson_speed import write_log

    lines = []
    for path in VW_DSJSON:
        lines += [line for line in path.read_bytes().splitlines(keepends=True) if line.strip()]
    with tempfile.TemporaryDirectory() as folder:
        log = pathlib.Path(folder) / "log.json"
        write_log(log, 40, varying=True, seed=3)
        lines += log.read_bytes().splitlines(keepends=True)
    return lines


JSON_VALUES = ["null", "true", "false", "0", "-1", "1e400", "\"0.5\"", "\"\"", "[]", "{}",
               "[null]", "[{\"a\":1},null]", "{\"x\":{\"y\":null}}", "\"\\ud800\"",
               "\"\\udfff\\ud800\"", "NaN", "-0.0", "[1,\"a\",null]", "{\"_text\":\"a b\"}"]
JSON_KEYS = ["_label_cost", "_label_probability", "_label_Action", "_labelIndex", "a", "c",
             "p", "o", "EventId", "_multi", "_skipLearn", "pdrop", "_text", "_slots",
             "_original_label_cost", "v", "shared"]


def mutate_json(line: bytes, rng: random.Random) -> bytes:
    """A DSJSON line with one JSON-aware change: a value after a key replaced, a key renamed,
    a value nested deep, an escape or bytes that are not UTF-8 inserted."""
    text = line.decode("utf-8", "replace")
    op = rng.randrange(6)
    if op == 0:  # a value of the wrong type after a key
        keys = [m.end() for m in re.finditer(r'"[^"\\]*"\s*:', text)]
        if keys:
            at = rng.choice(keys)
            end = _value_end(text, at)
            text = text[:at] + rng.choice(JSON_VALUES) + text[end:]
    elif op == 1:  # a key VW gives a meaning to
        keys = list(re.finditer(r'"([^"\\]*)"\s*:', text))
        if keys:
            m = rng.choice(keys)
            text = text[:m.start()] + f'"{rng.choice(JSON_KEYS)}":' + text[m.end():]
    elif op == 2:  # nested deep
        depth = rng.choice([50, 500, 1000, 5000, 100_000])
        opener, closer = rng.choice([("[", "]"), ('{"n":', "}")])
        nested = opener * depth + rng.choice(["1", "null", "{}", '"x"']) + closer * depth
        at = text.rfind("}")
        text = text[:at] + f',"deep":{nested}' + text[at:] if at > 0 else nested
    elif op == 3:  # an escape
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(["\\ud800", "\\u0000", "\\", "\\x", "\\uZZZZ"]) + text[at:]
    elif op == 4:  # bytes that are not UTF-8
        data = text.encode("utf-8", "surrogatepass")
        at = rng.randrange(len(data) + 1)
        return data[:at] + rng.choice([b"\xff", b"\xed\xa0\x80", b"\xc3", b"\x80"]) + data[at:]
    else:
        return mutate(line, rng, [line])
    return text.encode("utf-8", "surrogatepass")


def _value_end(text: str, at: int) -> int:
    """Where the JSON value starting at ``at`` ends (roughly: balanced brackets, strings)."""
    depth, i, string = 0, at, False
    while i < len(text):
        c = text[i]
        if string:
            if c == "\\":
                i += 1
            elif c == '"':
                string = False
                if depth == 0:
                    return i + 1
        elif c == '"':
            string = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            if depth == 0:
                return i
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == "," and depth == 0:
            return i
        i += 1
    return len(text)


def corrupt_gzip(data: bytes, rng: random.Random) -> bytes:
    """``data`` gzip-compressed (sometimes in two members), then damaged or not."""
    cut = rng.randint(0, len(data))
    members = [gzip.compress(data, mtime=0)] if rng.random() < 0.7 else [
        gzip.compress(data[:cut], mtime=0), gzip.compress(data[cut:], mtime=0)]
    blob = b"".join(members)
    op = rng.randrange(7)
    if op == 0:  # intact
        return blob
    if op == 1:  # bytes flipped
        blob = bytearray(blob)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(blob))
            blob[at] ^= 1 << rng.randrange(8)
        return bytes(blob)
    if op == 2:  # cut
        return blob[:rng.randint(0, len(blob))]
    if op == 3:  # the magic number, then garbage
        return b"\x1f\x8b" + bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
    if op == 4:  # garbage after the members
        return blob + bytes(rng.randrange(256) for _ in range(rng.randint(1, 20)))
    if op == 5:  # a damaged member after an intact one
        second = bytearray(gzip.compress(data[:cut] or b"|a x\n", mtime=0))
        second[rng.randrange(len(second))] ^= 0xFF
        return blob + bytes(second)
    return blob[:10] + zlib.compress(data)[2:]  # a raw zlib stream under a gzip header


def format_flags(flags: list[str]) -> list[str]:
    """The flags naming an input's format, of a command's flags."""
    if "--cb_explore" in flags:
        at = flags.index("--cb_explore")
        return flags[at:at + 2]
    return [flag for flag in flags if flag in ("--cb_explore_adf", "--dsjson")]


class Seeds:
    """The valid inputs each target mutates, and model files to damage (made once)."""

    def __init__(self, folder: str):
        self.text = fuzz_seeds()
        self.dsjson = dsjson_seeds()
        self.slots = slot_seeds(folder)
        self.folder = folder
        self.models = self._models()

    def _models(self) -> dict[str, tuple[bytes, bytes, list[str]]]:
        """Per format: a model file of ``-f``, the data it continues on, its flags."""
        from regcb_stream.command.main import main

        made = {}
        runs = {"text": (b"".join(self.text["single"][4:14]), ["--cb_explore", "4"]),
                "adf": (b"".join(self.text["adf"][3:8]), ["--cb_explore_adf", "-q", "sa"]),
                "dsjson": (b"".join(self.dsjson[-20:]), ["--dsjson"]),
                "bounded": (b"".join(self.text["single"][4:14]),
                            ["--cb_explore", "4", "--oracle", "bounded", "--regcb"]),
                "auto": (b"".join(self.text["adf"][3:8]),
                         ["--cb_explore_adf", "--auto_budget"])}
        for name, (data, flags) in runs.items():
            source = os.path.join(self.folder, f"seed.{name}")
            model = os.path.join(self.folder, f"seed.{name}.model")
            with open(source, "wb") as out:
                out.write(data)
            with contextlib.redirect_stderr(io.StringIO()):
                status = main(["-d", source, "-f", model, "--quiet", *flags])
            if status != 0:
                raise RuntimeError(f"the seed model {name} did not train (status {status})")
            made[name] = (pathlib.Path(model).read_bytes(), data, flags)
        return made


def slot_seeds(folder: str) -> dict[str, list[bytes]]:
    """Per kind (``ccb``, ``slates``): runs of one to three examples of ``make``'s example
    logs, and the hand-written `SLOT_SEEDS`."""
    from regcb_stream.datasets import examples

    examples.write(folder)
    rng, seeds = random.Random(0), {}
    for kind in ("ccb", "slates"):
        text = pathlib.Path(folder, f"{kind}.dat").read_bytes()
        blocks = [block + b"\n\n" for block in text.split(b"\n\n") if block.strip()]
        seeds[kind] = [seed for seed in SLOT_SEEDS if seed.startswith(kind.encode())]
        for _ in range(30):
            start = rng.randrange(len(blocks) - 3)
            seeds[kind].append(b"".join(blocks[start:start + rng.randint(1, 3)]))
    return seeds


def damage_model(blob: bytes, rng: random.Random) -> bytes:
    """A model file with its bytes, its JSON header or its arrays damaged."""
    op = rng.randrange(10)
    if op == 0:
        blob = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(blob))
            blob[at] ^= 1 << rng.randrange(8)
        return bytes(blob)
    if op == 1:
        return blob[:rng.randint(0, len(blob))]
    with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    header = json.loads(arrays.pop("header").tobytes())
    if op <= 3:  # an array of the wrong shape, type or values
        names = sorted(arrays)
        if names:
            name = rng.choice(names)
            old = arrays[name]
            arrays[name] = rng.choice([
                np.full(old.shape, np.nan), old.reshape(-1)[:max(old.size - 1, 0)],
                np.zeros((2, 3, 4)), old.astype(np.int8), np.array(["x"] * 3),
                np.full(old.shape, 1e308), np.zeros(0)])
        text = json.dumps(header)
    else:
        nodes = list(_nodes(header))
        parent, key = rng.choice(nodes)
        value = parent[key]
        choice = rng.randrange(6)
        if choice == 0:
            parent[key] = rng.choice([None, "x", -1, 2.5, 10 ** 30, [], {}, [1, 2], True,
                                      float("nan")])
        elif choice == 1 and isinstance(parent, dict):
            del parent[key]
        elif choice == 2:
            parent[key] = {"$object": rng.choice(["RegCB", "Model", "Explorer", "os.system",
                                                  "RidgeOracle", "Nope"]), "state": value}
        elif choice == 3:
            parent[key] = {"$array": rng.choice([0, 999, -1, "a0"])}
        elif choice == 4:
            parent[key] = {"$ref": rng.choice([0, 999, -1, None])}
        else:
            parent[key] = "@DEEP@"
        text = json.dumps(header)
        if "@DEEP@" in text:
            depth = rng.choice([1000, 5000, 100_000])
            text = text.replace('"@DEEP@"', "[" * depth + "1" + "]" * depth)
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(text.encode(), np.uint8), **arrays)
    return buffer.getvalue()


def _nodes(tree, limit: int = 4000):
    """(container, key) of the values in a JSON tree, breadth first."""
    queue, out = collections.deque([tree]), []
    while queue and len(out) < limit:
        node = queue.popleft()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            out.append((node, key))
            if isinstance(value, (dict, list)):
                queue.append(value)
    return out


FLAG_VALUES = ["0", "1", "-1", "4", "2.5", "nan", "inf", "-inf", "1e400", "", "x", "sa", "a",
               "abc", "::", "online", "sqrt2", "doubling", "ridge", "bounded", "vw", "local",
               "none", "/nonexistent/file", "/dev/full", "-", "mtr", "dr", "ips", "30", "100000"]
VW_HABITS = ["--cb_type", "--epsilon", "--squarecb", "--cover", "--bag", "--first", "--l2", "-l",
             "--power_t", "--passes", "--holdout_off", "--save_resume", "--ignore", "--keep",
             "-c", "--cache", "--invert_hash", "--readable_model", "--audit", "--daemon",
             "--json", "--cb", "--explore_eval", "--interactions", "--ignore_linear",
             "--softmax", "--synthcover", "--rnd", "--cb_adf", "--cbify", "-t", "-b",
             "--noconstant", "--random_seed", "--quiet", "-P", "--progress"]


def option_strings(module: str) -> list[str]:
    """The flags a command's ``--help`` lists."""
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
        _entry(module)(["--help"])
    return sorted(set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", out.getvalue())))


class Generator:
    """Case ``i`` of a seed, the same in every process."""

    def __init__(self, seeds: Seeds, folder: str, seed: int):
        self.seeds, self.folder, self.seed = seeds, folder, seed
        self.flags = {entry: option_strings(entry) for entry in MODULES}
        targets, shares = zip(*SHARES.items())
        self.bounds = list(zip(targets, np.cumsum(shares) / sum(shares)))

    def target(self, i: int) -> str:
        where = ((i * 0.6180339887498949) % 1.0)  # spread evenly, in a fixed order
        return next(name for name, bound in self.bounds if where < bound)

    def case(self, i: int) -> Case:
        rng = random.Random(self.seed * 1_000_003 + i)
        target = self.target(i)
        return getattr(self, f"_{target}")(rng)

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def _text_input(self, rng: random.Random, fmt: str) -> tuple[bytes, str, list[str]]:
        kind = "single" if fmt == "text" else "adf"
        data = mutate(rng.choice(self.seeds.text[kind]), rng, self.seeds.text[kind])
        mode = kind if rng.random() < 0.9 else {"single": "adf", "adf": "single"}[kind]
        flags = ["--cb_explore", "4"] if mode == "single" else ["--cb_explore_adf"]
        return data, ("text" if mode == "single" else "adf"), flags + rng.choice(FUZZ_FLAGS[mode])

    def _stream(self, target: str, data: bytes, flags: list[str], fmt: str | None) -> Case:
        argv = ["-d", self.path("input"), "-p", self.path("out.p"), "--quiet", *flags]
        return Case(target, "regcb-stream", argv, {"input": data}, fmt)

    def _text(self, rng):
        data, fmt, flags = self._text_input(rng, "text")
        return self._stream("text", data, flags, fmt)

    def _adf(self, rng):
        data, fmt, flags = self._text_input(rng, "adf")
        return self._stream("adf", data, flags, fmt)

    def _slots(self, rng):
        kind = rng.choice(["ccb", "slates"])
        data = mutate(rng.choice(self.seeds.slots[kind]), rng, self.seeds.slots[kind])
        if rng.random() < 0.1:  # the other kind's flag
            kind = {"ccb": "slates", "slates": "ccb"}[kind]
        flags = ["--ccb_explore_adf"] if kind == "ccb" else ["--slates"]
        flags += rng.choice([[], ["--lenient"], ["--regcb"], ["--regcb", "--regcbopt"],
                             ["--testonly"], ["-b", "4"], ["--epsilon", "0.1"]])
        return self._stream("slots", data, flags, None)

    def _dsjson_input(self, rng) -> bytes:
        lines = [rng.choice(self.seeds.dsjson) for _ in range(rng.randint(1, 6))]
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(lines))
            lines[at] = mutate_json(lines[at], rng)
        if rng.random() < 0.1:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice([
                b"[CHECKPOINT INFO LINE]\n", b'{"RewardValue":1,"EventId":"x"}\n', b"\n",
                b'{"EventId":"13118d9b4c114f8485d9dec417e3aefe","v":1}\n']))
        return b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)

    def _dsjson(self, rng):
        flags = ["--dsjson", *rng.choice([[], ["--lenient"], ["-q", "::"], ["--regcb"],
                                          ["--reward_wait", "5"], ["--oracle", "vw"]])]
        return self._stream("dsjson", self._dsjson_input(rng), flags, None)

    def _gzip(self, rng):
        kind = rng.choice(["text", "adf", "dsjson"])
        if kind == "dsjson":
            data, fmt, flags = self._dsjson_input(rng), None, ["--dsjson"]
        else:
            data, fmt, flags = self._text_input(rng, kind)
        blob = corrupt_gzip(data, rng)
        entry = rng.choices(["regcb-stream", "regcb-ope", "regcb-compare"], [0.7, 0.28, 0.02])[0]
        source = self.path("input.gz")
        if entry == "regcb-stream":
            argv = ["-d", source, "-p", self.path("out.p"), "--quiet", *flags]
        elif entry == "regcb-ope":
            argv = ["-d", source, *format_flags(flags)]
        else:
            argv = [source, "--quiet", "--vw", "--epsilon 0.1", *format_flags(flags)]
        return Case("gzip", entry, argv, {"input.gz": blob})

    def _model(self, rng):
        name = rng.choice(sorted(self.seeds.models))
        blob, data, flags = self.seeds.models[name]
        damaged = damage_model(blob, rng)
        model = self.path("model")
        entry = rng.choices(["regcb-stream", "regcb-ope", "load_model"], [0.6, 0.25, 0.15])[0]
        files = {"model": damaged, "input": data}
        if entry == "regcb-stream":
            argv = ["-i", model, "-d", self.path("input"), "-p", self.path("out.p"), "--quiet"]
            return Case("model", entry, argv, files)
        if entry == "regcb-ope":
            return Case("model", entry, ["-d", self.path("input"), "--policy-model", model,
                                         *format_flags(flags)], files)
        return Case("model", "api", ["load_model", model], files, call=lambda: _load_and_use(model))

    def _flags(self, rng):
        entry = rng.choices(list(MODULES), [0.8, 0.15, 0.05])[0]
        pool = self.flags[entry] + (VW_HABITS if entry == "regcb-stream" else [])
        pool = [flag for flag in pool if flag != "--replays"]  # (hours of VW runs, by design)
        argv = []
        for _ in range(rng.randint(1, 5)):
            argv.append(rng.choice(pool))
            if rng.random() < 0.6:
                argv.append(rng.choice(FLAG_VALUES))
        kind = rng.choice(["single", "adf"])
        data = rng.choice(self.seeds.text[kind])
        source = self.path("input")
        if entry == "regcb-stream":
            base = ["-d", source, "-p", self.path("out.p"), "--quiet"]
            if rng.random() < 0.7:
                base += ["--cb_explore", "4"] if kind == "single" else ["--cb_explore_adf"]
            argv = base + argv
        elif entry == "regcb-ope":
            argv = ["-d", source] + argv
        else:
            argv = [source, "--quiet", "--vw", "--epsilon 0.1"] + argv
        return Case("flags", entry, argv, {"input": data})

    def _ope(self, rng):
        kind = rng.choice(["text", "adf", "dsjson"])
        if kind == "dsjson":
            data, flags = self._dsjson_input(rng), ["--dsjson"]
        else:
            data, _, flags = self._text_input(rng, kind)
            flags = format_flags(flags)
        policy = rng.choice([[], ["--policy", "constant:1"], ["--policy", "constant:9"],
                             ["--alpha", "0.1"], ["-q", "sa"]])
        return Case("ope", "regcb-ope", ["-d", self.path("input"), *flags, *policy],
                    {"input": data})

    def _compare(self, rng):
        data, _, flags = self._text_input(rng, "adf")
        argv = [self.path("input"), "--quiet", "--vw", "--epsilon 0.1",
                *([] if "--cb_explore_adf" in flags else format_flags(flags))]
        return Case("compare", "regcb-compare", argv, {"input": data})

    def _api(self, rng):
        call, description = api_call(rng)
        return Case("api", "api", [description], {}, call=call)


# -- the Python API ----------------------------------------------------------------------------

BAD = [None, float("nan"), float("inf"), -float("inf"), -1, 0, 2.5, 10 ** 20, "x", "", "abc",
       b"x", [], [[]], {}, (), True, [None], ["a", "a"], complex(1, 1), np.array([np.nan]),
       np.zeros((2, 2, 2)), object(), -0.5, 1e-300, [1, 2, 3, 4, 5, 6, 7], {"a": None},
       {"a": float("nan")}, np.int64(3), np.float32("nan")]
CONTEXTS = np.random.default_rng(0).normal(size=(6, 3))
ACTIONS = ["a", "b", "c"]


def _calls(learner) -> dict:
    """The API's calls with valid arguments: name -> (method, kwargs)."""
    x, xs = CONTEXTS[0], CONTEXTS
    return {
        "predict": (learner.predict, {"context": x, "actions": ACTIONS}),
        "pmf": (learner.pmf, {"context": x, "actions": ACTIONS}),
        "decide": (learner.decide, {"context": x, "actions": ACTIONS}),
        "score": (learner.score, {"context": x, "actions": ACTIONS, "action": "a"}),
        "learn": (learner.learn, {"context": x, "action": "b", "reward": 0.5, "prob": 0.5,
                                  "weight": 1.0}),
        "predict_many": (learner.predict_many, {"contexts": xs, "actions": ACTIONS}),
        "pmf_many": (learner.pmf_many, {"contexts": xs, "actions": ACTIONS}),
        "learn_many": (learner.learn_many, {
            "contexts": xs, "actions": ["a", "b", "c", "a", "b", "c"],
            "rewards": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "probs": [0.5] * 6}),
        "replay": (learner.replay, {"contexts": xs, "actions": ACTIONS,
                                    "played": [0, 1, 2, 0, 1, 2],
                                    "rewards": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}),
        "play": (learner.play, {"contexts": xs, "actions": ACTIONS,
                                "reveal": lambda rounds, actions: np.zeros(len(rounds))}),
        "decide_event": (learner.decide_event, {"event_id": "e1", "context": x,
                                                "actions": ACTIONS}),
        "wait_for_rewards": (learner.wait_for_rewards, {"window": 10, "default_reward": 0.0}),
        "change_exploration": (learner.change_exploration, {"variant": "elimination"}),
    }


def api_call(rng: random.Random):
    """A call with one argument replaced by a bad value: (function, description)."""
    from regcb_stream import RegCB

    bad = rng.choice(BAD)
    if rng.random() < 0.3:  # the constructor
        parameter = rng.choice(list(inspect.signature(RegCB).parameters))
        description = f"RegCB({parameter}={bad!r:.40})"

        def construct():
            _expect(lambda: RegCB(**{parameter: bad}), parameter, sound=True)
        return construct, description
    name = rng.choice(sorted(_calls(RegCB(seed=0))))
    fresh = RegCB(seed=0)
    parameters = list(_calls(fresh)[name][1])
    if not parameters:
        return (lambda: None), name
    parameter = rng.choice(parameters)
    ragged = rng.random() < 0.2
    description = f"{name}({parameter}=" + ("one element short)" if ragged else f"{bad!r:.40})")

    def call():
        learner = RegCB(seed=0)
        for t, x in enumerate(CONTEXTS):
            action, prob, _ = learner.predict(x, ACTIONS)
            learner.learn(x, action, float(t % 2), prob)
        method, kwargs = _calls(learner)[name]
        value = kwargs[parameter]
        if ragged and isinstance(value, (list, np.ndarray)) and len(value) > 1:
            kwargs[parameter] = value[:-1]
        else:
            kwargs[parameter] = bad
        _expect(lambda: method(**kwargs), parameter, learner=learner)
    return call, description


class Unsound(Exception):
    """A value the API accepted that left it unable to run, or giving invalid distributions."""


def _expect(call, parameter: str, learner=None, sound: bool = False) -> None:
    """The call refuses with ValueError/TypeError naming ``parameter``, or it succeeds and
    the learner (the constructed one, with ``sound``) still gives valid distributions."""
    try:
        made = call()
    except (ValueError, TypeError) as error:
        if parameter not in str(error) and parameter.rstrip("s") not in str(error):
            raise Unsound(f"refused without naming {parameter!r}: {error}") from None
        return
    learner = made if sound else learner
    try:
        for t in range(20):
            x = CONTEXTS[t % len(CONTEXTS)]
            pmf = np.asarray(learner.pmf(x, ACTIONS), float)
            if not (np.all(np.isfinite(pmf)) and np.all(pmf >= 0)
                    and abs(pmf.sum() - 1) < 1e-6):
                raise Unsound(f"an invalid distribution after it: {pmf}")
            learner.learn(x, ACTIONS[t % 3], float(t % 2), 0.5)
    except Unsound:
        raise
    except Exception as error:  # noqa: BLE001 (accepted, then failing later: the point)
        raise Unsound(f"accepted, then {type(error).__name__}: {error}") from None


def _load_and_use(model: str) -> None:
    """``load_model`` refuses with ValueError naming the file, or the model it loads runs."""
    from regcb_stream.persist import load_model

    try:
        learner, settings = load_model(model)
    except ValueError as error:
        if model not in str(error):
            raise Unsound(f"refused without naming the file: {error}") from None
        return
    # (a model that loads is used by the command's run of the same file: checked there)


# -- running -----------------------------------------------------------------------------------

class Hang(BaseException):
    """An input that kept its entry point busy longer than the time limit."""


def _alarm(signum, frame):
    raise Hang


def _entry(entry: str):
    if entry == "regcb-stream":
        from regcb_stream.command.main import main
    elif entry == "regcb-ope":
        from regcb_stream.evaluation.ope import main
    else:
        from regcb_stream.evaluation.compare import main
    return main


def run_case(case: Case, folder: str) -> tuple[int | None, str, str, list[str]]:
    """(exit status, stderr, what -p wrote, problems) of one case, in this process."""
    for name, data in case.files.items():
        with open(os.path.join(folder, name), "wb") as out:
            out.write(data)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(folder, "out.p"))
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    status, problems = None, []
    signal.setitimer(signal.ITIMER_REAL, LIMIT)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            if case.call is not None:
                case.call()
                status = 0
            else:
                status = _entry(case.entry)(list(case.argv))
    except Hang:
        problems.append("hangs")
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except KeyboardInterrupt:
        raise
    except Unsound as error:
        problems.append("API unsound")
        stderr.write(str(error))
    except BaseException as error:  # noqa: BLE001 (any exception escaping: the point)
        problems.append("tracebacks")
        stderr.write("".join(traceback.format_exception(error, limit=-4)))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    stderr.flush()
    text = stderr.buffer.getvalue().decode("utf-8", "replace")
    written = ""
    with contextlib.suppress(FileNotFoundError):
        written = pathlib.Path(folder, "out.p").read_bytes().decode("utf-8", "replace")
    if not problems:
        problems = check(case, status, text, written)
    return status, text, written, problems


def check(case: Case, status, stderr: str, written: str) -> list[str]:
    """The bars one run misses."""
    if "Traceback (most recent call last)" in stderr:
        return ["tracebacks"]
    if status not in STATUSES:
        return ["other status"]
    problems = []
    if status in (1, 2) and not names_what(stderr, case):
        problems.append("refusal naming no line, flag or path")
    optimistic = "--regcbopt" in case.argv or "--regcb" not in case.argv
    vw_ties = "--vw_compat" in case.argv and optimistic  # VW's 1s, documented
    legacy = "--cb_force_legacy" in case.argv
    if written and not vw_ties and not valid_predictions(written):
        problems.append("invalid distribution")
    if case.fmt in ("text", "adf") and status in (0, 1):
        lines = cleaned_lines(case.files["input"])
        examples = example_ends(lines, case.fmt == "adf")
        predictions = written.count("\n") if legacy else written.count("\n\n")
        if predictions > len(examples):
            problems.append("more predictions than examples")
        elif status == 0 and predictions != len(examples):
            problems.append("status 0: not one per example")
        elif status == 1:
            error = next((line for line in stderr.splitlines()
                          if line.startswith(("error", "regcb-stream: error"))), "")
            named = re.search(r"\bline (\d+)", error)
            earlier = named and sum(1 for first, last in examples
                                    if last < int(named.group(1))
                                    and not first <= int(named.group(1)) <= last)
            if named and predictions != earlier:
                problems.append("status 1: not one per earlier example")
    return problems


def names_what(stderr: str, case: Case) -> bool:
    """The refusal names a line, a flag (one given, or one to give), or a value or path of
    the command line."""
    if re.search(r"\bline \d+", stderr) or re.search(r"(?<![\w-])--?[A-Za-z]", stderr):
        return True
    values = [t for t in case.argv if len(t) >= 3 and not t.startswith("-")]
    names = values + [os.path.basename(t) for t in values if len(os.path.basename(t)) >= 3]
    unrecognized = re.search(r"unrecognized arguments: (.*?)( \(|$)", stderr, re.M)
    return any(name in stderr for name in names) or bool(
        unrecognized and set(unrecognized.group(1).split()) <= set(case.argv))


def valid_predictions(written: str) -> bool:
    """Every line of ``-p`` is a distribution summing to 1: VW's ``action:probability,...``
    then a tag, if any (a tag alone: an example without actions), or VW's legacy
    single-line ``p1 ... pK `` then a tag, if any (which may look like a number: ``'346``;
    a damaged model file's flags may ask for it)."""
    for line in written.split("\n"):  # (only \n ends a line: a tag may hold \x85)
        if not line.strip() or line.startswith(" "):
            continue
        try:
            if ":" not in line.split(" ")[0]:
                probabilities = [float(w) for w in line[:line.rfind(" ")].split()]
            else:
                probabilities = [float(item.split(":")[1])
                                 for item in line.split(" ")[0].split(",")]
        except (ValueError, IndexError):
            return False
        if any(not 0 <= p <= 1 for p in probabilities) or abs(sum(probabilities) - 1) > 1e-3:
            return False
    return True


def run_process(case: Case, folder: str) -> tuple[int, str]:
    """The case as a real process: (exit status, stderr)."""
    for name, data in case.files.items():
        with open(os.path.join(folder, name), "wb") as out:
            out.write(data)
    done = subprocess.run([sys.executable, "-m", MODULES[case.entry], *case.argv],
                          capture_output=True, timeout=300, check=False, cwd=folder)
    return done.returncode, done.stderr.decode("utf-8", "replace")


def work(seed: int, indices: range, every: int) -> dict:
    """A worker's share: counts per target, the first failures of each kind, timings."""
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures: dict[str, list] = {}
    previous = signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder), \
            warnings.catch_warnings():  # (files that flags name land in the folder)
        warnings.simplefilter("ignore")
        seeds = Seeds(folder)
        generator = Generator(seeds, folder, seed)
        for i in indices:
            case = generator.case(i)
            status, stderr, _, problems = run_case(case, folder)
            tally = counts[case.target]
            tally["inputs"] += 1
            tally[f"status {status}"] += 1
            for name in problems:
                tally[name] += 1
                kept = failures.setdefault(f"{case.target}: {name}", [])
                if len(kept) < 4:
                    kept.append({"case": case.describe()[:1500], "status": status,
                                 "stderr": stderr.strip()[-800:]})
            if every and i % every == 0 and case.call is None:
                tally["processes"] += 1
                code, text = run_process(case, folder)
                if code != status or "Traceback" in text:
                    tally["process differs"] += 1
                    kept = failures.setdefault(f"{case.target}: process differs", [])
                    if len(kept) < 4:
                        kept.append({"case": case.describe()[:1500], "status": f"{status} "
                                     f"in process, {code} as a process",
                                     "stderr": text.strip()[-800:]})
    signal.signal(signal.SIGALRM, previous)
    return {"counts": {k: dict(v) for k, v in counts.items()}, "failures": failures}


def run(inputs: int, seed: int, workers: int, processes: int, chunk: int = 2000) -> dict:
    every = max(inputs // processes, 1) if processes else 0
    start = time.perf_counter()
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures: dict[str, list] = {}
    chunks = [range(a, min(a + chunk, inputs)) for a in range(0, inputs, chunk)]
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        futures = [pool.submit(work, seed, part, every) for part in chunks]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            result = future.result()
            for target, tally in result["counts"].items():
                counts[target].update(tally)
            for name, kept in result["failures"].items():
                failures.setdefault(name, []).extend(kept[:4 - len(failures.get(name, []))])
            print(f"fuzz: {done}/{len(chunks)} chunks ({time.perf_counter() - start:.0f} s)",
                  flush=True)
    return {"counts": counts, "failures": failures, "seconds": time.perf_counter() - start}


# -- the report --------------------------------------------------------------------------------

FAILING = ("tracebacks", "hangs", "other status", "refusal naming no line, flag or path",
           "invalid distribution", "more predictions than examples",
           "status 0: not one per example", "status 1: not one per earlier example",
           "API unsound", "process differs")


def report(args, result: dict) -> str:
    counts = result["counts"]
    total = collections.Counter()
    for tally in counts.values():
        total.update(tally)
    failing = sum(total[name] for name in FAILING)
    lines = [
        "# Fuzzing every reader and entry point (issue 44)", "",
        f"`.venv/bin/python -m bench.experiments.fuzz --inputs {args.inputs} --seed {args.seed} "
        f"--workers {args.workers} --processes {args.processes}`", "",
        stamp(), "",
        f"**{total['inputs']:,} generated inputs, {total['tracebacks']} tracebacks, "
        f"{failing} failing a bar** ({result['seconds']:.0f} s; "
        f"{total['processes']} of them run again as processes). "
        "See the module's docstring for the targets and the bars.", "",
        "| target | inputs | status 0 | 1 | 2 | " + " | ".join(FAILING) + " |",
        "|---|" + "---:|" * (4 + len(FAILING)),
    ]
    for target in SHARES:
        tally = counts.get(target, collections.Counter())
        lines.append(f"| {target} | {tally['inputs']:,} | {tally['status 0']:,} | "
                     f"{tally['status 1']:,} | {tally['status 2']:,} | "
                     + " | ".join(str(tally[name]) for name in FAILING) + " |")
    lines.append(f"| all | {total['inputs']:,} | {total['status 0']:,} | {total['status 1']:,} "
                 f"| {total['status 2']:,} | " + " | ".join(str(total[n]) for n in FAILING)
                 + " |")
    lines += ["", "(API inputs count a refusal naming the parameter, or a value accepted "
              "that leaves the learner sound, as status 0.)", ""]
    if result["failures"]:
        lines += ["## Failures (the first few of each kind)", ""]
        for name, kept in sorted(result["failures"].items()):
            lines += [f"### {name}", ""]
            for item in kept:
                lines += ["```", item["case"], f"status {item['status']}", item["stderr"],
                          "```", ""]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--processes", type=int, default=300,
                        help="inputs run again as real processes (spread evenly)")
    parser.add_argument("--out", default="docs/results/fuzz.md")
    args = parser.parse_args()
    result = run(args.inputs, args.seed, args.workers, args.processes)
    text = report(args, result)
    if args.out:
        pathlib.Path(ROOT, args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
