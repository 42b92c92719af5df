"""Benchmark problems: one repetition of a stream, split into training rounds and a holdout.

A stream is a UCI set (``"letter"``), its noisy variant (``"letter-noise"``, rewards drawn
from the paper's mean matrix) or the learning-to-rank sample (``"yahoo"``). Repetition
``rep`` seeds everything random about the data: the permutation, the holdout split (the last
rows of the permuted stream) and the noisy draws, so every algorithm sees the same rounds.

UCI contexts are ``(n, d)`` arrays and the K classes are the actions (product class). The
ranking sample is an ADF problem: each query is a round, its documents (at most 6) the
actions, each with its own ``(D,)`` features, so contexts are ``(n, K, D)`` with a mask of
the documents offered; the reward is the relevance / 4.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from regcb_stream.datasets import uci

HOLDOUT_FRACTION = 0.2
HOLDOUT_CAP = 300  # holdout rows at most: the validation reward is computed 18 times a run,
# and VW's explorers predict the holdout one example at a time (on the smaller streams that
# costs more than learning them); over 5 repetitions its standard error is ~0.012
LTR_ACTIONS = 6
UCI_STREAMS = tuple(uci.UCI_SETS) + tuple(f"{name}-noise" for name in uci.UCI_SETS)
CLEAN_STREAMS = tuple(uci.UCI_SETS)  # the UCI streams without their noisy variants
STREAMS = UCI_STREAMS + ("yahoo",)


@dataclass(frozen=True)
class Rounds:
    """A block of rounds with every action's reward (the learner sees only one of them).

    Attributes
    ----------
    X : np.ndarray
        Contexts ``(n, d)`` (UCI) or per-action features ``(n, K, D)`` (ranking).
    R : np.ndarray
        Rewards ``(n, K)`` in [0, 1] (0 for actions not offered).
    mask : np.ndarray or None
        ``(n, K)`` booleans, the actions offered (ranking only; None: all of them).
    """

    X: np.ndarray
    R: np.ndarray
    mask: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.R)

    @property
    def adf(self) -> bool:
        """Whether actions carry their own features (the ranking problem)."""
        return self.X.ndim == 3

    def rows(self, start: int, stop: int) -> Rounds:
        """Rounds ``start`` to ``stop`` (views)."""
        mask = None if self.mask is None else self.mask[start:stop]
        return Rounds(self.X[start:stop], self.R[start:stop], mask)

    def offered(self) -> np.ndarray:
        """The mask of offered actions, all True for UCI."""
        return np.ones(self.R.shape, bool) if self.mask is None else self.mask


@dataclass(frozen=True)
class Problem:
    """One repetition of a stream: training rounds, holdout rounds and their origin."""

    stream: str
    rep: int
    train: Rounds
    hold: Rounds

    @property
    def n_actions(self) -> int:
        return self.train.R.shape[1]

    def scaled(self, factor: float) -> Problem:
        """The problem with every context multiplied by ``factor`` (contexts that are not
        standardized)."""
        return Problem(self.stream, self.rep, *(
            Rounds(part.X * factor, part.R, part.mask) for part in (self.train, self.hold)))


def stream_parts(stream: str) -> tuple[str, bool]:
    """``(data set, noisy)`` of a stream name.

    >>> stream_parts("page_blocks-noise")
    ('page_blocks', True)
    """
    if stream not in STREAMS:
        raise ValueError(f"unknown stream {stream!r}; expected one of {STREAMS}")
    return stream.removesuffix("-noise"), stream.endswith("-noise")


def holdout_size(n: int) -> int:
    """Holdout rows of a stream of ``n`` rounds: 20 %, at most :data:`HOLDOUT_CAP`.

    >>> holdout_size(846), holdout_size(20000)
    (169, 300)
    """
    return min(round(HOLDOUT_FRACTION * n), HOLDOUT_CAP)


def load_problem(stream: str, rep: int, max_train: int | None = None,
                 max_hold: int | None = None) -> Problem:
    """Load repetition ``rep`` (its seed) of a stream, optionally truncating both parts.

    Parameters
    ----------
    stream : str
        One of :data:`STREAMS`.
    rep : int
        Repetition index, the seed of the permutation, split and noisy draws.
    max_train, max_hold : int, optional
        Keep only the first training / holdout rounds (the ``--quick`` mode); the split
        itself does not change.

    Returns
    -------
    Problem
    """
    if stream == "yahoo":
        X, R, mask = _ltr_stream(rep)
    else:
        name, noisy = stream_parts(stream)
        X, R = uci.bandit_stream(name, noisy, rep)
        mask = None
    n_hold = holdout_size(len(R))
    cut = len(R) - n_hold
    everything = Rounds(X, R, mask)
    train = everything.rows(0, min(cut, max_train) if max_train else cut)
    hold = everything.rows(cut, min(len(R), cut + max_hold) if max_hold else len(R))
    return Problem(stream, rep, train, hold)


@functools.lru_cache(maxsize=1)
def _ltr_pool() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All queries of the ranking sample (both files), padded to ``LTR_ACTIONS`` documents,
    features standardized over the documents (all-zero columns dropped)."""
    queries = uci.load_ltr("train", LTR_ACTIONS) + uci.load_ltr("test", LTR_ACTIONS)
    docs = np.vstack([F for F, _ in queries])
    keep = (docs != 0).any(axis=0)
    mean, std = docs[:, keep].mean(axis=0), docs[:, keep].std(axis=0)
    X = np.zeros((len(queries), LTR_ACTIONS, int(keep.sum())))
    R = np.zeros((len(queries), LTR_ACTIONS))
    mask = np.zeros((len(queries), LTR_ACTIONS), bool)
    for i, (F, rel) in enumerate(queries):
        X[i, : len(rel)] = (F[:, keep] - mean) / np.where(std > 0, std, 1.0)
        R[i, : len(rel)], mask[i, : len(rel)] = rel, True
    for array in (X, R, mask):
        array.flags.writeable = False
    return X, R, mask


def _ltr_stream(rep: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ranking queries in the order of repetition ``rep``."""
    X, R, mask = _ltr_pool()
    order = np.random.default_rng(rep).permutation(len(R))
    return X[order], R[order], mask[order]
