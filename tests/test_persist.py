"""Model files that load no code: what they hold and what they refuse (files of the
format before: test_convert.py)."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from regcb_stream import BoundedRidgeOracle, RegCB, VWOracle, checks
from regcb_stream.oracles.blocks import ArrowheadBlocks
from regcb_stream.persist import FORMAT, VERSION, load_model, main, save_model


class Evil:
    """A pickle that runs a command when loaded."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def evil_pickle(path, marker) -> None:
    path.write_bytes(pickle.dumps({"format": FORMAT, "version": 5, "learner": Evil(marker),
                                   "settings": {}}))


def run(module: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("command", [
    ("regcb_stream", ["--cb_explore", "2", "-i"]),
    ("regcb_stream.evaluation.ope", ["-d", os.devnull, "--policy-model"]),
])
def test_a_malicious_model_file_never_runs_its_code(tmp_path, command):
    model, marker = tmp_path / "evil.model", tmp_path / "ran"
    evil_pickle(model, marker)
    module, args = command
    result = run(module, [*args, str(model)])
    assert not marker.exists()
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "a pickle, which can run code when loaded): it does not load" in result.stderr


def write_archive(path, header: dict, **arrays) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)
    path.write_bytes(buffer.getvalue())


def test_an_archive_naming_other_classes_or_pickles_is_refused(tmp_path):
    path = tmp_path / "m.regcb"
    header = {"format": FORMAT, "version": VERSION, "settings": None,
              "learner": {"$object": "Popen", "state": {"$dict": []}}}
    write_archive(path, header)
    with pytest.raises(ValueError, match="names class 'Popen', which is not one"):
        load_model(path)
    header["learner"] = {"$pickle": 0, "class": "builtins.Evil"}
    write_archive(path, header, a0=np.frombuffer(pickle.dumps(Evil(tmp_path / "x")), np.uint8))
    with pytest.raises(ValueError, match="holds a pickled builtins.Evil, which runs code"):
        load_model(path)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("data", [b"", b"PK\x03\x04garbage", b"not a model", os.urandom(300)])
def test_a_file_that_is_not_a_model_says_so(tmp_path, data):
    path = tmp_path / "m.regcb"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="not a regcb-stream model file|earlier regcb-stream"):
        load_model(path)


def damage(model, how: str):
    """A copy of a command's model file damaged as ``how`` says."""
    with np.load(model) as archive:
        arrays = {name: archive[name] for name in archive.files}
    header = json.loads(arrays.pop("header").tobytes())
    learner = dict(header["learner"]["state"]["$dict"])
    if how == "deep header":
        text = '{"a":' * 100_000 + "1" + "}" * 100_000
        buffer = io.BytesIO()
        np.savez(buffer, header=np.frombuffer(text.encode(), np.uint8))
        return buffer.getvalue()
    if how == "missing key":
        del learner["variant"]
    elif how == "wrong type":
        learner["model"] = "a model"
    elif how == "other class":
        header["learner"]["$object"] = "FixedBudget"
    elif how == "unknown class":
        header["learner"]["$object"] = "Evil"
    elif how == "settings":
        header["settings"]["$dict"][1][1] = "four"  # n_actions
    elif how == "array shape":
        arrays = {name: array[:1] if array.ndim > 1 and array.size else array
                  for name, array in arrays.items()}  # one model of four
    elif how == "huge size":
        header["settings"]["$dict"][1][1] = 10**30
    elif how == "change test":  # (a number the compiled loop reads: None)
        change = _object(header, "ChangeDetector")["state"]
        change["$dict"] = [[key, None if key == "mean" else value]
                           for key, value in change["$dict"]]
    header["learner"]["state"]["$dict"] = [list(item) for item in learner.items()]
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)
    return buffer.getvalue()


DAMAGES = ["deep header", "missing key", "wrong type", "other class", "unknown class",
           "settings", "array shape", "huge size", "change test"]


def _object(node, name: str):
    """The first object of class ``name`` in a model file's header."""
    if isinstance(node, dict):
        if node.get("$object") == name:
            return node
        node = list(node.values())
    for item in node if isinstance(node, list) else ():
        found = _object(item, name)
        if found is not None:
            return found
    return None


@pytest.fixture(scope="module")
def command_model(tmp_path_factory):
    from test_cli import cb_stream

    folder = tmp_path_factory.mktemp("model")
    (folder / "cb.dat").write_text(cb_stream(300))
    result = run("regcb_stream", ["--cb_explore", "4", "-d", str(folder / "cb.dat"), "-f",
                                  str(folder / "m.regcb"), "--quiet"])
    assert result.returncode == 0, result.stderr
    return folder


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_model_file_is_one_line_and_status_2_everywhere(command_model, tmp_path,
                                                                   how):
    path = tmp_path / "damaged.regcb"
    path.write_bytes(damage(command_model / "m.regcb", how))
    data = command_model / "cb.dat"
    if how not in ("wrong type", "settings", "array shape", "huge size"):  # (those load)
        with pytest.raises(ValueError, match="model"):
            load_model(path)
    for module, args in (("regcb_stream", ["-i", str(path), "-d", str(data), "--quiet"]),
                         ("regcb_stream.evaluation.ope", ["-d", str(data), "--policy-model",
                                                          str(path)])):
        result = run(module, args)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.splitlines()) == 1 and str(path) in result.stderr
        assert "model" in result.stderr and "usage:" not in result.stderr


LEARNERS = {
    "default": lambda: RegCB(seed=1),
    "auto budget, sqrt2": lambda: RegCB(budget="auto", schedule="sqrt2", seed=2),
    "bounded": lambda: RegCB(oracle=BoundedRidgeOracle(head=2), seed=3),
    "vw": lambda: RegCB("elimination", oracle="vw", mellowness=0.01, seed=4),
    "vw, doubling": lambda: RegCB(oracle=VWOracle(bisection=True), schedule="doubling", seed=4),
    "hashed": lambda: RegCB(hash_bits=12, seed=5),
    "dicts, linear": lambda: RegCB(hash_bits=12, seed=6, random_features=0),
    "ties by the clipped fit": lambda: RegCB(ties="clipped", seed=8),
}


@pytest.mark.parametrize("make", LEARNERS.values(), ids=LEARNERS)
def test_a_saved_learner_continues_exactly(tmp_path, make):
    learner, twin = make(), make()
    contexts, rewards = checks.stream(120)
    hashed = learner.hash_bits is not None

    def play(who, rows):
        trace = []
        for x, r in rows:
            x = {f"f{j}": float(v) for j, v in enumerate(x)} if hashed else x
            action, prob, info = who.predict(x, checks.ACTIONS)
            who.learn(x, action, float(r[checks.ACTIONS.index(action)]), prob, **info)
            trace.append((action, prob))
        return trace

    rows = list(zip(contexts, rewards))
    play(learner, rows[:60])
    play(twin, rows[:60])
    save_model(tmp_path / "m.regcb", learner, {"adf": False, "interactions": ("ab",)})
    restored, settings = load_model(tmp_path / "m.regcb")
    assert settings == {"adf": False, "interactions": ("ab",)}
    assert play(restored, rows[60:]) == play(twin, rows[60:])


def test_a_model_file_from_before_the_names_added_to_its_format_loads(tmp_path):
    """A file of format 7 written before the encoder saved the random features of named
    contexts (whose dict contexts had none) and before the rule's ties were a parameter
    (they were shared) continues as it would have."""
    learner, twin = (RegCB(seed=7, random_features=0, ties="shared") for _ in range(2))
    contexts, rewards = checks.stream(80)
    rows = [({f"f{j}": float(v) for j, v in enumerate(x)}, r) for x, r in zip(contexts, rewards)]
    for who in (learner, twin):
        for x, r in rows[:40]:
            action, prob, _ = who.predict(x, checks.ACTIONS)
            who.learn(x, action, float(r[checks.ACTIONS.index(action)]), prob)
    save_model(tmp_path / "m.regcb", learner, {})
    with np.load(tmp_path / "m.regcb") as archive:
        arrays = {name: archive[name] for name in archive.files}
    header = arrays.pop("header").tobytes().decode()
    older = header.replace(', ["wave_columns", null], ["waves_at", null]', "")
    assert older != header and header.count('["ties", "shared"]') == 3
    older = older.replace('["ties", "shared"], ', "")
    assert '"ties"' not in older
    np.savez(tmp_path / "older.npz", header=np.frombuffer(older.encode(), np.uint8), **arrays)
    restored, _ = load_model(tmp_path / "older.npz")
    assert [restored.pmf(x, checks.ACTIONS) for x, _ in rows[40:]] == [
        twin.pmf(x, checks.ACTIONS) for x, _ in rows[40:]]


def test_blocks_from_before_their_transposed_layout_load_transposed():
    """The joint model's blocks of a file written before each group's C^-1 was kept
    transposed (no ``transposed`` in their state: C^-1 by rows) load transposed, as the
    kernels read them."""
    rng = np.random.default_rng(0)
    blocks = ArrowheadBlocks(7)
    blocks.kind[:] = [-1, -1, 0, 0, 0, 1, 1]  # two shared columns, groups of 3 and 2
    x = rng.normal(size=(50, 7))
    x[:25, 5:], x[25:, 2:5] = 0.0, 0.0  # each row on one group
    blocks.build(x.T @ x + np.eye(7), x.T @ rng.normal(size=50))
    state = blocks.state()
    start, c_off, c_inv = state["arrays"][2], state["arrays"][5], state["arrays"][6]
    by_rows = np.concatenate([c_inv[lo:hi].reshape(n, n).T.ravel() for lo, hi, n in zip(
        c_off[:-1], c_off[1:], np.diff(start))])
    assert not np.array_equal(by_rows, c_inv)
    restored = ArrowheadBlocks.from_state(
        {"kind": state["kind"], "arrays": (*state["arrays"][:6], by_rows, *state["arrays"][7:])})
    assert restored.transposed and np.array_equal(restored.arrays[6], c_inv)
    assert ArrowheadBlocks.from_state(state).arrays[6] is c_inv


def test_objects_of_other_libraries_need_allow_pickle(tmp_path):
    from river import linear_model

    from regcb_stream import RiverOracle

    learner = RegCB(oracle=RiverOracle(linear_model.LinearRegression()), seed=0)
    action, prob, _ = learner.predict([0.5, 1.0], ["a", "b"])
    learner.learn([0.5, 1.0], action, 1.0, prob)
    path = tmp_path / "river.regcb"
    with pytest.raises(ValueError, match="cannot be stored without pickle: pass allow_pickle"):
        save_model(path, learner, {})
    with pytest.warns(UserWarning, match="stored as a pickle; loading it runs its code"):
        save_model(path, learner, {}, allow_pickle=True)
    with pytest.raises(ValueError, match="which runs code when loaded"):
        load_model(path)
    restored, _ = load_model(path, allow_pickle=True)
    assert restored.pmf([0.5, 1.0], ["a", "b"]) == learner.pmf([0.5, 1.0], ["a", "b"])


def test_a_pickle_of_an_earlier_format_is_neither_loaded_nor_converted(tmp_path, capsys):
    old, marker = tmp_path / "old.model", tmp_path / "ran"
    evil_pickle(old, marker)
    with pytest.raises(ValueError, match="it does not load"):
        load_model(old)
    assert main(["convert", str(old), str(tmp_path / "new.model")]) == 1
    assert "a pickle): not converted" in capsys.readouterr().err and not marker.exists()


def test_the_model_file_follows_the_umask(tmp_path):
    umask = os.umask(0o027)
    try:
        save_model(tmp_path / "m.regcb", RegCB(), {})
    finally:
        os.umask(umask)
    assert (tmp_path / "m.regcb").stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["m.regcb"]  # no temporary file left
