"""What a decision is: each action's prediction, bounds and probability."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from regcb_stream import rules


@dataclass(frozen=True)
class Decision:
    """Predictions, bounds and distribution for one context (1-D arrays, one entry per
    action) or a block of contexts (2-D, a row per context).

    >>> decision = Decision(np.array([0.5, 0.5, 0.0]), np.zeros(3), np.array([0.1, 0.5, 0.2]),
    ...                     np.array([0.6, 0.9, 0.4]))
    >>> decision.width.tolist(), int(decision.plausible_size)
    ([0.5, 0.4, 0.2], 2)
    """

    pmf: np.ndarray
    prediction: np.ndarray
    low: np.ndarray
    high: np.ndarray
    candidates: np.ndarray | None = None  # with budget="auto": each candidate's pmf (.., J, K)
    variance: np.ndarray | None = None  # x^T A^-1 x of each row: the width before the budget
    # (the ridge oracles' compiled loops; None elsewhere)

    @property
    def width(self) -> np.ndarray:
        """Confidence width ``High - Low`` per action."""
        return self.high - self.low

    @property
    def plausible_size(self):
        """Size of the plausible set ``{a : High(a) >= max Low}`` (the paper's ``|A_t|``)."""
        return rules.plausible(np.atleast_2d(self.low), np.atleast_2d(self.high)).sum(
            axis=1
        ).reshape(np.shape(self.pmf)[:-1])

    def row(self, i: int) -> Decision:
        """The decision of row ``i`` of a block."""
        return self.take(i)

    def take(self, rows) -> Decision:
        """The decisions of rows ``rows`` of a block."""
        return Decision(self.pmf[rows], self.prediction[rows], self.low[rows],
                        self.high[rows], *(None if part is None else part[rows]
                                           for part in (self.candidates, self.variance)))


def stacked(decisions: list[Decision]) -> Decision:
    """Blocks of decisions one after another (without the candidates' distributions; the
    variances when each block has them)."""
    variances = [d.variance for d in decisions]
    return Decision(*(np.concatenate(parts) for parts in zip(
        *((d.pmf, d.prediction, d.low, d.high) for d in decisions))),
        variance=None if any(v is None for v in variances) else np.concatenate(variances))
