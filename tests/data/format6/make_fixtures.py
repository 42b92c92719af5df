"""Model files of format 6, written by regcb-stream at 758e790 (run it there, from the
repository's root, with ../shared beside it): the fixtures of tests/test_convert.py, and
each one's continuation's outputs, which the converted files must reproduce."""

import hashlib
import json
import pathlib
import subprocess
import sys

import numpy as np

from regcb_stream import RegCB
from regcb_stream.persist import save_model

OUT = pathlib.Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)
X = rng.normal(size=(400, 2))
R = (X @ rng.normal(size=(2, 3)) > 0).astype(float)
EXPECTED = {}


def digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(np.ascontiguousarray(part).tobytes() if not isinstance(part, bytes) else part)
    return h.hexdigest()


def loop(learner, rows):
    out = []
    for t in rows:
        action, prob, info = learner.predict(X[t], [0, 1, 2])
        learner.learn(X[t], action, R[t, action], prob, **info)
        out += [action, prob]
    return np.array(out, float)


API = {
    "features": dict(random_features=4, seed=1),
    "selection": dict(random_features=4, seed=2, select_model=True),
    "auto": dict(random_features=0, budget="auto", seed=3),
    "sqrt2": dict(random_features=0, schedule="sqrt2", variant="elimination", seed=4),
    "bounded": dict(oracle="bounded", seed=5),
    "vw": dict(oracle="vw", seed=6),
    "forget": dict(random_features=0, forget=0.99, seed=7),
}
for name, params in API.items():
    learner = RegCB(**params)
    loop(learner, range(200))
    save_model(OUT / f"{name}.regcb", learner, {"api": name})
    EXPECTED[name] = digest(loop(learner, range(200, 400)))

events = RegCB(random_features=4, seed=8)
events.wait_for_rewards(window=5, default_reward=0.0)
for t in range(100):
    action, prob = events.decide_event(f"e{t}", X[t], [0, 1, 2])
    if t % 3 == 0:
        events.reward_event(f"e{t}", float(R[t, action]))
save_model(OUT / "events.regcb", events, {"api": "events"})
later = []
for t in range(100, 200):
    action, prob = events.decide_event(f"e{t}", X[t], [0, 1, 2])
    later += [action, prob]
    if t % 2 == 0:
        events.reward_event(f"e{t}", float(R[t, action]))
EXPECTED["events"] = digest(np.array(later, float), json.dumps(events.events).encode())


def stream(adf: bool) -> list[str]:
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
    return lines


COMMAND = {
    "single": (["--cb_explore", "3", "-b", "8"], False),
    "adf": (["--cb_explore_adf", "-q", "sa", "-b", "8"], True),
    "adf_vw": (["--cb_explore_adf", "-b", "8", "--oracle", "vw", "--vw_compat"], True),
}
for name, (flags, adf) in COMMAND.items():
    lines = stream(adf)
    model = OUT / f"command_{name}.regcb"
    run = [sys.executable, "-m", "regcb_stream", "--quiet", "-p", "/dev/stdout"]
    subprocess.run([*run, *flags, "-f", str(model)], input="".join(lines[:200]), text=True,
                   check=True, capture_output=True)
    done = subprocess.run([*run, "-i", str(model)], input="".join(lines[200:]), text=True,
                          check=True, capture_output=True)
    EXPECTED[f"command_{name}"] = digest(done.stdout.encode())

(OUT / "expected.json").write_text(json.dumps(EXPECTED, indent=1, sort_keys=True) + "\n")
