"""The example logs of the README and the guides, made by ``make demo`` (or ``python -m
regcb_stream.datasets.examples DIR``): a realizable problem (`synthetic.LinearProblem`, 4
actions, 5 context features) logged by a uniform policy, in VW's three formats.

- ``cb.dat``: 2,000 single-line examples (``regcb-stream --cb_explore 4``);
- ``adf.dat``: 500 ADF examples, each action a line with a feature of its own
  (``--cb_explore_adf -q sa``);
- ``events.json``: 500 DSJSON events; the rewards of every other one come later, as reward
  lines (``--dsjson --reward_wait N``);
- ``ccb.dat``: 500 conditional contextual bandit examples of two slots (``--ccb_explore_adf``),
  the second slot drawn among the actions the first left, each slot's cost the
  ADF log's;
- ``slates.dat``: 500 slates (``--slates``) of two slots, the first choosing between
  actions 0 and 1, the second between 2 and 3, the slate's cost one minus the mean of
  its two actions' rewards.

>>> import tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> sorted(path.name for path in write(folder))
['adf.dat', 'cb.dat', 'ccb.dat', 'events.json', 'slates.dat']
>>> (folder / "cb.dat").read_text().splitlines()[0]
'2:0:0.25 |s f0:-0.4990 f1:-0.3837 f2:-0.3908 f3:-0.1009 f4:-0.6639'
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np

from regcb_stream.datasets.synthetic import LinearProblem

K, DIM = 4, 5


def write(folder: str | pathlib.Path) -> list[pathlib.Path]:
    """Write the five logs into ``folder`` (made if missing); their paths."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    X, _, R = LinearProblem.make(n_actions=K, dim=DIM, seed=7).sample(2000, seed=8)
    played = np.random.default_rng(9).integers(K, size=len(X))
    texts = {"cb.dat": "".join(_single(x, r, a) for x, r, a in zip(X, R, played)),
             "adf.dat": "".join(_adf(x, r, a) for x, r, a in zip(X[:500], R, played)),
             "events.json": _events(X[:500], R, played),
             "ccb.dat": "".join(_ccb(x, r, order) for x, r, order in zip(
                 X[:500], R, np.random.default_rng(10).permuted(
                     np.tile(np.arange(K), (500, 1)), axis=1))),
             "slates.dat": "".join(_slate(x, r, pair) for x, r, pair in zip(
                 X[:500], R, np.random.default_rng(11).integers(2, size=(500, 2))))}
    for name, text in texts.items():
        (folder / name).write_text(text)
    return [folder / name for name in texts]


def _features(x) -> str:
    return " ".join(f"f{j}:{v:.4f}" for j, v in enumerate(x.tolist()))


def _single(x, r, a: int) -> str:
    return f"{a + 1}:{1 - r[a]:g}:{1 / K:g} |s {_features(x)}\n"


def _adf(x, r, a: int) -> str:
    lines = [f"|a a{j}" for j in range(K)]
    lines[a] = f"0:{1 - r[a]:g}:{1 / K:g} {lines[a]}"
    return "\n".join([f"shared |s {_features(x)}", *lines]) + "\n\n"


def _ccb(x, r, order) -> str:
    lines = [f"ccb shared |s {_features(x)}", *(f"ccb action |a a{j}" for j in range(K))]
    lines += [f"ccb slot {a}:{1 - r[a]:g}:{1 / (K - j):.6g} |p p{j}"
              for j, a in enumerate(order[:2].tolist())]
    return "\n".join(lines) + "\n\n"


def _slate(x, r, pair) -> str:
    first, second = int(pair[0]), 2 + int(pair[1])
    lines = [f"slates shared {1 - (r[first] + r[second]) / 2:g} |s {_features(x)}"]
    lines += [f"slates action {j // 2} |a a{j}" for j in range(K)]
    lines += [f"slates slot {first}:0.5 |p p0", f"slates slot {second - 2}:0.5 |p p1"]
    return "\n".join(lines) + "\n\n"


def _events(X, R, played) -> str:
    """DSJSON events (a reward of 1 is a cost of -1); every other event's reward comes as a
    reward line three events later."""
    lines, due = [], {}
    for t, (x, r, a) in enumerate(zip(X, R, played.tolist())):
        event = {"EventId": f"e{t}", "a": list(range(1, K + 1)),
                 "c": {"s": {f"f{j}": round(v, 4) for j, v in enumerate(x.tolist())},
                       "_multi": [{"a": {f"a{j}": 1}} for j in range(K)]},
                 "p": [1 / K] * K}
        if t % 2:
            due.setdefault(t + 3, []).append({"EventId": f"e{t}", "v": float(r[a])})
        else:
            event = {"_label_cost": -float(r[a]), "_label_probability": 1 / K,
                     "_label_Action": a + 1, "_labelIndex": a, **event}
        lines.append(json.dumps(event))
        lines += [json.dumps(reward) for reward in due.pop(t, [])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    for path in write(sys.argv[1] if len(sys.argv) > 1 else "examples/data"):
        print(path)
