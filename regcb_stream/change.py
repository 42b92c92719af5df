"""Change detection: a Page-Hinkley test on the learner's squared residuals.

A ridge oracle weighs every label alike forever: after the rewards change, a learner that has
seen many labels follows slowly, and an action it stopped playing is never tried again. The
learner therefore watches each label's squared residual, ``((reward - prediction) / span)^2``
with the prediction of the fit the label's action was chosen by (clipped to 1), and tests
whether their mean has risen: the one-sided Page-Hinkley test (Page, "Continuous inspection
schemes", Biometrika 1954; River's ``drift.PageHinkley``, its ``delta`` and ``min_instances``),
``m_t = sum_{s <= t} (x_s - mean_s - delta)``, a change when ``m_t - min_{s <= t} m_s``
exceeds ``threshold * ln t`` (``t`` labels since the test began). The threshold growing with
``ln t`` keeps the false alarms of a long stationary stream rare (``docs/change_detection.md``).

The test runs over blocks of ``CHECK_EVERY`` labels, so that a label learned alone and one in a
compiled loop meet the same arithmetic: at the end of a block, if the statistic crossed the
threshold at any of its labels, the learner keeps ``KEEP`` of every label's weight (its
penalty whole: `regcb_stream.oracles.forgetting`) and the test begins again. Its widths grow
back and it explores again, as at the stream's start, with what it knew as a prior.

>>> test = ChangeDetector(threshold=12.0, span=1.0)
>>> before = [test.observe(0.0, 0.1) for _ in range(1000)]   # small residuals
>>> after = [test.observe(1.0, 0.1) for _ in range(1000)]    # the rewards change
>>> any(before), after.index(True) < 256, test.changes
(False, True, 1)
"""

from __future__ import annotations

import math

import numpy as np

CHECK_EVERY = 64  # labels per block of the test
DELTA = 0.005  # the tolerated rise of the mean squared residual (River's default)
MIN_LABELS = 30  # labels before the test may alarm (River's min_instances)
KEEP = 0.01  # the share of every label's weight kept when a change is detected
DEFAULT_THRESHOLD = 6.0  # times ln t (benchmarks/change_detection.py chose it)


class ChangeDetector:
    """The test's state: ``observe`` a label's reward and prediction; True at the end of a
    block in which the statistic crossed the threshold (the test then begins again)."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, span: float = 1.0):
        self.threshold = float(threshold)
        self.span = float(span)
        self.changes = 0  # changes detected
        self.waiting: list[float] = []  # this block's scaled residuals
        self._restart()

    def _restart(self) -> None:
        self._n = 0  # labels since the test began
        self._sum = 0.0  # of their squared residuals
        self._walk = 0.0  # m_t
        self._low = math.inf  # min m_s

    @property
    def labels_until_check(self) -> int:
        """Labels until the end of the block."""
        return CHECK_EVERY - len(self.waiting)

    def observe(self, reward: float, prediction: float) -> bool:
        """Take one label; whether a change is detected (at a block's end only)."""
        scaled = min(abs(reward - prediction) / self.span, 1.0)
        self.waiting.append(scaled * scaled)
        return len(self.waiting) == CHECK_EVERY and self._check()

    def observe_many(self, rewards: np.ndarray, predictions: np.ndarray) -> bool:
        """``observe`` in order (the same numbers), at most the rest of a block (a compiled
        loop's labels)."""
        if len(rewards) > self.labels_until_check:
            raise ValueError("observe_many takes at most the rest of a block")
        scaled = np.minimum(np.abs(rewards - predictions) / self.span, 1.0)
        self.waiting.extend((scaled * scaled).tolist())
        return len(self.waiting) == CHECK_EVERY and self._check()

    def _check(self) -> bool:
        """The test over the block's residuals, in order; the block emptied."""
        n, total, walk, low = self._n, self._sum, self._walk, self._low
        block, self.waiting, threshold = self.waiting, [], self.threshold
        for x in block:
            n += 1
            total += x
            walk += x - total / n - DELTA
            if walk < low:
                low = walk
            elif n >= MIN_LABELS and walk - low > threshold * math.log(n):
                self.changes += 1
                self._restart()
                return True
        self._n, self._sum, self._walk, self._low = n, total, walk, low
        return False
