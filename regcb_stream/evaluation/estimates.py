"""The rows of a comparison of policies on a log: each policy's IPS and SNIPS estimates with
intervals by batch means, its replays combined; and how a VW candidate runs (VW's own
command line, in a Python process of its own).

>>> value, se, dof = batch_mean(np.array([1.0, 3.0]), np.array([2.0, 2.0]))
>>> value, dof
(1.0, 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

VW_RUN = ("import sys; from vowpalwabbit import Workspace; "
          "Workspace(sys.argv[1]).finish()")
Z = NormalDist().inv_cdf(0.975)


@dataclass
class Row:
    """One line of the comparison: a candidate or a baseline."""

    name: str
    estimate: float  # expected reward, IPS (the negative of VW's average loss)
    low: float
    high: float
    snips: float | None  # the self-normalized estimate (None: VW's rows without snips=True)
    snips_low: float | None
    snips_high: float | None
    examples: int  # labelled examples scored
    kept: float | None = None  # explore-eval's (weighted) update count
    trace: list | None = None  # (labelled examples, running IPS estimate) along the log
    se: float = math.nan  # the IPS estimate's standard error (batch means)
    snips_se: float | None = None


def student_quantile(dof: float) -> float:
    """Student's t quantile of 97.5% for ``dof`` degrees of freedom: below 3, the exact
    value at the integer below (wider: conservative); from 3, the Cornish-Fisher expansion
    around the normal's (within 0.8% of the exact value at 3, 0.3% at 4, 0.1% at 5)."""
    if math.isinf(dof):
        return Z
    if dof < 3:
        return 12.7062 if dof < 2 else 4.3027
    z = Z
    return (z + (z ** 3 + z) / (4 * dof) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * dof ** 3))


class Batches:
    """The log's examples in batches of ``size`` by position (the examples after the last
    whole batch join it), for batch-means standard errors."""

    def __init__(self, size: int, examples: int):
        self.size, self.count = size, max(1, examples // size)

    def of(self, positions: np.ndarray) -> np.ndarray:
        return np.minimum(positions // self.size, self.count - 1)


def batch_mean(sums: np.ndarray, counts: np.ndarray) -> tuple[float, float, int]:
    """The ratio ``sum(sums) / sum(counts)`` of per-batch sums, its standard error by batch
    means (the batches' residuals ``sums - value * counts``, which counts the dependence of
    nearby examples: a learner's estimate is not a mean of independent terms), and its
    degrees of freedom (the batches with examples, less one)."""
    total = counts.sum()
    if total == 0:
        return math.nan, math.nan, 0
    value = float(sums.sum() / total)
    used = counts != 0
    b = int(used.sum())
    if b < 2:
        return value, math.nan, 0
    spread = float(np.sum((sums[used] - value * counts[used]) ** 2))
    return value, math.sqrt(b / (b - 1) * spread) / total, b - 1


def running_estimate(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.cumsum(sums) / np.cumsum(counts)


def estimate_row(name: str, weights: np.ndarray, rewards: np.ndarray, positions: np.ndarray,
                 batches: Batches) -> Row:
    """A row from each labelled example's weight ``pi(a) / p``, logged reward and position
    in the log: IPS and SNIPS with their batch-means intervals (Student's t), and the IPS
    estimate at the end of each batch."""
    n = len(weights)
    if n == 0:
        nan = math.nan
        return Row(name, nan, nan, nan, nan, nan, nan, 0, trace=[])
    batch = batches.of(positions)
    sums = np.bincount(batch, weights * rewards, batches.count)
    counts = np.bincount(batch, minlength=batches.count).astype(float)
    value, se, dof = batch_mean(sums, counts)
    snips, snips_se, snips_dof = batch_mean(sums, np.bincount(batch, weights, batches.count))
    half, snips_half = student_quantile(dof) * se, student_quantile(snips_dof) * snips_se
    trace = [(int(c), float(v)) for c, v, k in zip(
        np.cumsum(counts), running_estimate(sums, counts), counts) if k]
    return Row(name, value, value - half, value + half, snips, snips - snips_half,
               snips + snips_half, n, trace=trace, se=se, snips_se=snips_se)


def combined(replays: list[Row]) -> Row:
    """One row of R replays of a candidate: the mean of their estimates, within
    ``t sqrt(se^2 + s^2 / R)``, ``se^2`` the mean of their squared standard errors (the
    log's sampling error, which the replays share) and ``s^2`` the variance of their
    estimates (the learner's path and the examples' order, which a single replay's
    interval leaves out); ``t`` is
    Student's quantile for Welch-Satterthwaite's degrees of freedom, ``s^2`` being known
    from R - 1 only."""
    if len(replays) == 1:
        return replays[0]
    first, n = replays[0], len(replays)

    def pooled(values: list, errors: list) -> tuple:
        if values[0] is None:
            return None, None, None, None
        se2 = float(np.mean(np.square(errors)))
        path = float(np.var(values, ddof=1)) / n
        value = float(np.mean(values))
        dof = (se2 + path) ** 2 / (path ** 2 / (n - 1)) if path > 0 else math.inf
        se = math.sqrt(se2 + path)
        return value, value - student_quantile(dof) * se, value + student_quantile(dof) * se, se

    (*ips, se) = pooled([r.estimate for r in replays], [r.se for r in replays])
    (*snips, snips_se) = pooled([r.snips for r in replays], [r.snips_se for r in replays])
    kept = [r.kept for r in replays if r.kept is not None]
    trace = [(point[0], float(np.mean([r.trace[i][1] for r in replays])))
             for i, point in enumerate(first.trace or [])]
    return Row(first.name, *ips, *snips, first.examples,
               float(np.mean(kept)) if kept else None, trace, se, snips_se)
