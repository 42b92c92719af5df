"""Logged contextual-bandit data in VW text: a bandit stream played by a uniform policy.

Each round logs the context, the uniformly drawn action, its cost ``1 - reward`` and its
probability ``1/K``, in either of VW's formats: single-line ``--cb_explore K``
(``a:cost:prob |s f0:v ...``, actions 1..K) or multi-line ``--cb_explore_adf`` (a
``shared |s ...`` line, one ``|a a<k>`` line per action, the label on the logged action's
line, a blank line).

>>> X, R = np.array([[0.5, -1.0]]), np.array([[1.0, 0.0, 0.0]])
>>> print(logged_lines(X, R, adf=False, seed=0)[0])
3:1:0.333333 |s f0:0.5 f1:-1
>>> print("".join(logged_lines(X, R, adf=True, seed=0)), end="")
shared |s f0:0.5 f1:-1
|a a0
|a a1
0:1:0.333333 |a a2
<BLANKLINE>

"""

from __future__ import annotations

import numpy as np


def logged_lines(X: np.ndarray, R: np.ndarray, adf: bool, seed: int = 0) -> list[str]:
    """One VW example per round (ADF examples are several lines ending with a blank line)."""
    n, k = R.shape
    actions = np.random.default_rng(seed).integers(k, size=n)
    prob = f"{1 / k:.6f}"
    action_lines = [f"|a a{j}" for j in range(k)]
    out = []
    for x, rewards, a in zip(X.tolist(), R.tolist(), actions.tolist()):
        context = "|s " + " ".join(f"f{j}:{v:.6g}" for j, v in enumerate(x))
        label = f"{1 - rewards[a]:g}:{prob}"
        if adf:
            lines = list(action_lines)
            lines[a] = f"0:{label} {lines[a]}"
            out.append("\n".join(["shared " + context, *lines]) + "\n\n")
        else:
            out.append(f"{a + 1}:{label} {context}\n")
    return out


def write_logged_stream(path, X: np.ndarray, R: np.ndarray, adf: bool, seed: int = 0) -> None:
    """Write ``logged_lines`` to ``path``."""
    with open(path, "w") as out:
        out.writelines(logged_lines(X, R, adf, seed))
