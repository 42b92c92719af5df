"""Model files of format 6 (written before the redesign, by 758e790: data/format6 and its
make_fixtures.py) converted to the current format continue as their writers' runs did."""

from __future__ import annotations

import hashlib
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from regcb_stream.persist import load_model, main

DATA = pathlib.Path(__file__).parent / "data" / "format6"
EXPECTED = json.loads((DATA / "expected.json").read_text())
rng = np.random.default_rng(0)
X = rng.normal(size=(400, 2))
R = (X @ rng.normal(size=(2, 3)) > 0).astype(float)


def digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(np.ascontiguousarray(part).tobytes() if not isinstance(part, bytes) else part)
    return h.hexdigest()


def converted(name: str, tmp_path) -> pathlib.Path:
    new = tmp_path / f"{name}.regcb"
    assert main(["convert", str(DATA / f"{name}.regcb"), str(new)]) == 0
    return new


@pytest.mark.parametrize("name", ["features", "selection", "auto", "sqrt2", "bounded", "vw",
                                  "forget"])
def test_a_converted_learner_decides_and_learns_as_the_saved_one(name, tmp_path):
    learner, settings = load_model(converted(name, tmp_path))
    out = []
    for t in range(200, 400):
        action, prob, info = learner.predict(X[t], [0, 1, 2])
        learner.learn(X[t], action, R[t, action], prob, **info)
        out += [action, prob]
    assert settings == {"api": name}
    assert digest(np.array(out, float)) == EXPECTED[name]


def test_converted_waiting_decisions_keep_their_stand_ins(tmp_path):
    learner, _ = load_model(converted("events", tmp_path))
    later = []
    for t in range(100, 200):
        action, prob = learner.decide_event(f"e{t}", X[t], [0, 1, 2])
        later += [action, prob]
        if t % 2 == 0:
            learner.reward_event(f"e{t}", float(R[t, action]))
    assert digest(np.array(later, float), json.dumps(learner.events).encode()) == (
        EXPECTED["events"])


def stream(adf: bool) -> str:
    lines = []
    for t, (x, r) in enumerate(zip(X, R)):
        a = t % 3
        feats = " ".join(f"f{j}:{v:.4f}" for j, v in enumerate(x))
        if adf:
            acts = [f"|a a{j}" for j in range(3)]
            acts[a] = f"0:{1 - r[a]:g}:0.333333 " + acts[a]
            lines.append("\n".join([f"shared |s {feats}", *acts]) + "\n\n")
        else:
            lines.append(f"{a + 1}:{1 - r[a]:g}:0.333333 |s {feats}\n")
    return "".join(lines[200:])


@pytest.mark.parametrize("name, adf", [("single", False), ("adf", True), ("adf_vw", True)])
def test_a_converted_command_model_resumes_its_run(name, adf, tmp_path):
    done = subprocess.run([sys.executable, "-m", "regcb_stream", "--quiet", "-p", "/dev/stdout",
                           "-i", str(converted(f"command_{name}", tmp_path))],
                          input=stream(adf), capture_output=True, text=True, check=True)
    assert digest(done.stdout.encode()) == EXPECTED[f"command_{name}"]


def test_a_file_of_format_6_names_the_conversion_and_one_not_of_6_is_refused(tmp_path,
                                                                            capsys):
    with pytest.raises(ValueError, match="persist convert"):
        load_model(DATA / "features.regcb")
    assert main(["convert", str(DATA / "expected.json"), str(tmp_path / "x")]) == 1
    assert "not a regcb-stream model file" in capsys.readouterr().err
