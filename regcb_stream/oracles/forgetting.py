"""Forgetting for the ridge oracles: labels whose weight decays with the labels after them.

The statistics are kept in a scale that only changes at a *forgetting step*: a label learned
``j`` labels after the last step weighs ``forget^-(j + 1)``, and a step multiplies every
model's statistics by ``forget`` per label since the last one (the penalty topped up to
``l2``), so that each label then weighs ``forget^(labels learned after it)``, exactly. The
oracle says what a step does to its own statistics (``_discount``).
"""

from __future__ import annotations

import math

import numpy as np

LEAST_PENALTY_SHARE = 0.5  # the share of the penalty's weight kept between two steps


class Forgetting:
    """The clock and the scale of the labels of an oracle that forgets (``forget`` < 1).

    >>> from regcb_stream.oracles.ridge import RidgeOracle
    >>> oracle = RidgeOracle(forget=0.99)
    >>> oracle.discount_every
    68
    """

    forget: float
    _clock: int  # labels learned, while forgetting
    _stamp: int  # the clock at the last forgetting step

    @property
    def clock(self) -> int:
        """Labels learned so far while forgetting (the time a label is learned at)."""
        return self._clock

    @property
    def discount_every(self) -> int:
        """Labels between two forgetting steps. A step inverts every model afresh; in
        between, the statistics are exact up to a common factor of at most
        ``forget^-discount_every``: the penalty keeps at least half its weight (``l2``
        at worst halved) until a step restores it."""
        return max(1, math.floor(math.log(LEAST_PENALTY_SHARE) / math.log(self.forget)))

    def _forgets(self) -> str:
        """What `describe` adds: the factor, if the oracle forgets."""
        return f", forgetting {self.forget:g} per label" if self.forget < 1.0 else ""

    def _stored(self, weight: float, at: int | None) -> float:
        """The weight of a label learned at clock ``at`` (None: now) in the statistics'
        scale, ``forget^(stamp - at - 1)`` times its own."""
        if self.forget == 1.0:
            return weight
        return weight * self.forget ** (self._stamp - (self._clock if at is None else at) - 1)

    def _tick(self, at: int | None) -> None:
        """Count a new label (``at`` None) while forgetting."""
        if self.forget < 1.0 and at is None:
            self._clock += 1

    def _step_due(self) -> bool:
        return self.forget < 1.0 and self._clock - self._stamp >= self.discount_every

    def _decay(self) -> float:
        """Begin a forgetting step: the factor of the statistics, the clock stamped."""
        decay = self.forget ** (self._clock - self._stamp)
        self._stamp = self._clock
        return decay

    def shrink(self, keep: float) -> None:
        """Keep ``keep`` of every label's weight at once, the penalty whole (a change
        detected: `regcb_stream.adapt.change`): a forgetting step, by ``keep`` besides the
        factor's decay. The next ``rebuild`` solves the models anew."""
        self._discount(keep)

    def _until_step(self, played: np.ndarray, weights: np.ndarray, scaled: np.ndarray,
                    start: int) -> int:
        """For a compiled loop over logged rows: the end of the rows from ``start`` whose
        labels (``played`` >= 0) come before the next forgetting step, with those labels'
        ``weights`` in the statistics' scale written into ``scaled``."""
        labelled = start + np.flatnonzero(played[start:] >= 0)
        due = max(1, self._stamp + self.discount_every - self._clock)
        rows = labelled[:due]
        scaled[rows] = weights[rows] * np.array(  # (Python's powers, as `_stored`'s)
            [self.forget ** (self._stamp - self._clock - 1 - j) for j in range(len(rows))])
        return int(rows[-1]) + 1 if len(labelled) >= due else len(played)


def top_up(gram: np.ndarray, decay: float, l2) -> None:
    """``gram = L + decay (gram - L)`` in place, for a stack of square matrices, ``L`` the
    diagonal of penalties ``l2`` (one for every column, or one per column)."""
    gram *= decay
    diagonal = np.arange(gram.shape[-1])
    gram[..., diagonal, diagonal] += (1.0 - decay) * l2
