"""Streams and loops that several test modules share: a stream whose best action changes
halfway, a round-by-round play, a VW log of it, and rounds for `checks.play_valid`."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from regcb_stream import RegCB

#: every decision rule: the variants, and the optimistic one's ways with ties
RULES = [("optimistic", "shared"), ("optimistic", "fit"), ("optimistic", "clipped"),
         ("elimination", "shared")]


def drifting(n: int = 2000, d: int = 5, k: int = 4, seed: int = 0):
    """Contexts and every action's reward; the best action's rule changes halfway."""
    rng = np.random.default_rng(seed)
    X, W = rng.normal(size=(n, d)), rng.normal(size=(2, k, d))
    scores = np.where(np.arange(n)[:, None] < n // 2, X @ W[0].T, X @ W[1].T)
    return X, (scores == scores.max(axis=1, keepdims=True)).astype(float)


def play_one_by_one(learner: RegCB, X, R, u):
    """Decide, draw and learn round by round (the one-row compiled calls)."""
    actions, played = list(range(R.shape[1])), []
    for t in range(len(X)):
        pmf = np.asarray(learner.decide(X[t], actions).pmf)
        a = min(int(np.searchsorted(np.cumsum(pmf), u[t] * pmf.sum(), side="right")),
                len(pmf) - 1)
        learner.learn(X[t], a, R[t, a], pmf[a])
        played.append(a)
    return np.array(played)


def late_and_in_order(make, X, R, late: int = 5):
    """Two learners from ``make()`` on ``(X, R)``: one whose every reward comes ``late``
    decisions after its decision (`decide_event`, `reward_event`), and its twin that
    replays the same actions with their rewards in order."""
    actions, learner, played = list(range(R.shape[1])), make(), {}
    for t in range(len(X)):
        played[t], _ = learner.decide_event(t, X[t], actions)
        if t >= late:
            learner.reward_event(t - late, float(R[t - late, played[t - late]]))
    for t in range(len(X) - late, len(X)):
        learner.reward_event(t, float(R[t, played[t]]))
    twin = make()
    twin.replay(X, actions, [played[t] for t in range(len(X))],
                [R[t, played[t]] for t in range(len(X))])
    return learner, twin


def write_stream(path, X, R, adf: bool = False):
    """A VW log of uniformly random actions, single-line or ADF (``-q sa`` crosses)."""
    rng = np.random.default_rng(0)
    with open(path, "w") as out:
        for x, r in zip(X, R):
            a, k = int(rng.integers(len(r))), len(r)
            feats = " ".join(f"f{i}:{v:.4f}" for i, v in enumerate(x))
            label = f"{1 - r[a]:g}:{1 / k:g}"
            out.write(f"shared |s {feats}\n" + "".join(
                (f"0:{label} " if j == a else "") + f"|a a{j}\n" for j in range(k)) + "\n"
                      if adf else f"{a + 1}:{label} |s {feats}\n")


def rounds(max_size: int):
    """Hypothesis rounds of (dict context, reward, number of actions) for
    `regcb_stream.checks.play_valid`."""
    return st.lists(st.tuples(st.dictionaries(st.sampled_from("abcdefgh"),
                                              st.floats(-1e3, 1e3), max_size=5),
                              st.floats(0, 1), st.integers(2, 5)),
                    min_size=1, max_size=max_size)
