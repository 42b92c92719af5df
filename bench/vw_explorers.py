"""Run Vowpal Wabbit's own contextual-bandit explorers on a bandit stream, for comparison.

Every round is one ADF example: a ``shared |s f0:v f1:v ...`` line with the context and one
``|a a<k>`` line per action, learned with ``-q sa`` (a linear model per action). VW returns its
exploration distribution; the action is sampled here with NumPy (one uniform per round), so the
sampling is reproducible and identical across explorers for a given seed.
"""

from __future__ import annotations

import functools
import time

import numpy as np
from vowpalwabbit import Workspace

#: explorer -> (flag, parameter flag, parameter type)
EXPLORERS = {
    "regcb": ("--regcb", "--mellowness", float),
    "regcbopt": ("--regcbopt", "--mellowness", float),
    "squarecb": ("--squarecb", "--gamma_scale", float),
    "epsilon": ("", "--epsilon", float),
    "bag": ("", "--bag", int),
    "cover": ("", "--cover", int),
}
#: cost encoding -> cost of reward 0 (the cost of reward r is this minus r)
COST_OFFSETS = {"01": 1.0, "-10": 0.0}


def vw_args(explorer: str, param: float | None, *, seed: int = 0, cost_encoding: str = "01") -> str:
    """Build the VW command line of an explorer.

    Parameters
    ----------
    explorer : {"regcb", "regcbopt", "squarecb", "epsilon", "bag", "cover"}
        VW exploration algorithm.
    param : float or None
        Mellowness (regcb, regcbopt), gamma scale (squarecb), epsilon, or the number of policies
        (bag, cover, required). None keeps VW's default.
    seed : int
        VW's ``--random_seed``.
    cost_encoding : {"01", "-10"}
        With "-10", the RegCB variants get the cost range ``[-1, 0]``.

    Returns
    -------
    str
        Arguments for :class:`vowpalwabbit.Workspace`.

    Examples
    --------
    >>> vw_args("regcb", 1e-3, seed=3)
    '--cb_explore_adf -q sa --quiet --random_seed 3 --regcb --mellowness 0.001'
    """
    if explorer not in EXPLORERS:
        raise ValueError(f"unknown explorer {explorer!r}; expected one of {sorted(EXPLORERS)}")
    if cost_encoding not in COST_OFFSETS:
        raise ValueError(f"cost_encoding must be one of {sorted(COST_OFFSETS)}")
    flag, param_flag, kind = EXPLORERS[explorer]
    if param is None and kind is int:
        raise ValueError(f"explorer {explorer!r} needs an integer parameter ({param_flag})")
    parts = ["--cb_explore_adf -q sa --quiet", f"--random_seed {seed}", flag]
    if param is not None:
        parts.append(f"{param_flag} {kind(param)}")
    if cost_encoding == "-10" and explorer in ("regcb", "regcbopt"):
        parts.append("--cb_min_cost -1 --cb_max_cost 0")
    return " ".join(part for part in parts if part)


@functools.lru_cache(maxsize=64)
def _shared_format(d: int) -> str:
    """Return the %-format string of a shared line with ``d`` features."""
    return "shared |s " + " ".join(f"f{j}:%.7g" for j in range(d))


@functools.lru_cache(maxsize=64)
def _action_lines(K: int) -> tuple[str, ...]:
    """Return the feature lines of actions ``0..K-1``."""
    return tuple(f"|a a{k}" for k in range(K))


def adf_example_lines(
    x: np.ndarray, K: int, label: tuple[int, float, float] | None = None
) -> list[str]:
    """Write one ADF example as VW text lines.

    Parameters
    ----------
    x : array_like
        Context, shape (d,).
    K : int
        Number of actions.
    label : (action, cost, probability), optional
        Labels the line of ``action`` (0-based) with ``0:cost:probability``.

    Returns
    -------
    list of str
        The shared line, then one line per action (no trailing empty line).

    Examples
    --------
    >>> adf_example_lines([0.5, -1.0], 3, label=(1, 0.0, 0.5))
    ['shared |s f0:0.5 f1:-1', '|a a0', '0:0.0:0.5 |a a1', '|a a2']
    """
    values = tuple(np.asarray(x, dtype=np.float64).tolist())
    lines = [_shared_format(len(values)) % values, *_action_lines(K)]
    if label is not None:
        action, cost, prob = label
        if not 0 <= action < K:
            raise ValueError(f"label action {action} is outside 0..{K - 1}")
        lines[action + 1] = f"0:{cost}:{prob} {lines[action + 1]}"
    return lines


def _explore(ws: Workspace, lines: list[str], u: float, kinds: tuple) -> tuple:
    """Parse and predict one example, then sample an action from VW's (normalized) pmf."""
    examples = ws.parse(lines, kinds[0])
    pmf = np.asarray(ws.predict(examples, prediction_type=kinds[1]))
    cdf = np.cumsum(pmf)
    action = min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), len(pmf) - 1)
    return examples, action, float(pmf[action] / cdf[-1]), float(cdf[-1])


def _learn(ws: Workspace, examples: list, action: int, cost: float, prob: float) -> None:
    """Label the chosen action's line of an already parsed example, learn, and release it."""
    examples[action + 1].set_label_string(f"0:{cost}:{prob}")
    ws.learn(examples)
    ws.finish_example(examples)


def run_vw(
    X: np.ndarray,
    R: np.ndarray,
    explorer: str,
    param: float | None,
    seed: int,
    cost_encoding: str = "01",
) -> dict:
    """Stream a bandit problem through one of VW's explorers (progressive validation).

    Each round: VW's distribution over the K actions is computed on the unlabelled example,
    normalized (``--regcbopt`` gives probability 1 to every tied action), an action is drawn
    by inverse CDF from ``np.random.default_rng(seed)``, and VW learns the example with the
    chosen action's cost and probability. The example is parsed once and labelled in place,
    which gives the same results as re-parsing a labelled text example, but faster.

    Parameters
    ----------
    X : np.ndarray
        Contexts, shape (n, d).
    R : np.ndarray
        Rewards in [0, 1] of every action at every round, shape (n, K).
    explorer, param :
        See :func:`vw_args`.
    seed : int
        Seeds VW and the action sampler.
    cost_encoding : {"01", "-10"}
        Cost given to VW: ``1 - r`` or ``-r``.

    Returns
    -------
    dict
        ``progressive_reward`` (mean reward), ``rewards`` and ``actions`` (per round),
        ``unnormalized_rounds`` (rounds whose VW pmf did not sum to 1 within 1e-4),
        ``seconds`` (wall time of the loop) and ``rounds_per_sec``.
    """
    X, R = np.asarray(X, dtype=np.float64), np.asarray(R, dtype=np.float64)
    if X.ndim != 2 or R.ndim != 2 or len(X) != len(R):
        raise ValueError(f"need X (n, d) and R (n, K); got {X.shape} and {R.shape}")
    shared_format, actions = _shared_format(X.shape[1]), _action_lines(R.shape[1])
    shared = [shared_format % tuple(row) for row in X.tolist()]
    uniforms = np.random.default_rng(seed).random(len(X))
    offset = COST_OFFSETS[cost_encoding]
    rewards, chosen, unnormalized = np.empty(len(X)), np.empty(len(X), dtype=np.int64), 0
    ws = Workspace(vw_args(explorer, param, seed=seed, cost_encoding=cost_encoding))
    kinds = (ws.get_label_type(), ws.get_prediction_type())
    start = time.perf_counter()
    try:
        for t, u in enumerate(uniforms.tolist()):
            examples, action, prob, total = _explore(ws, [shared[t], *actions], u, kinds)
            rewards[t], chosen[t] = R[t, action], action
            unnormalized += abs(total - 1.0) > 1e-4
            _learn(ws, examples, action, offset - rewards[t], prob)
    finally:
        ws.finish()
    seconds = time.perf_counter() - start
    return {
        "progressive_reward": float(rewards.mean()) if len(X) else float("nan"),
        "rewards": rewards,
        "actions": chosen,
        "unnormalized_rounds": int(unnormalized),
        "seconds": seconds,
        "rounds_per_sec": len(X) / seconds if seconds > 0 else float("inf"),
    }
