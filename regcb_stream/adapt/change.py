"""Change detection: a Page-Hinkley test on the learner's squared residuals.

A ridge oracle weighs every label alike forever: after the rewards change, a learner that has
seen many labels follows slowly, and an action it stopped playing is never tried again. The
learner therefore watches each label's squared residual, ``((reward - prediction) / span)^2``
with the prediction of the fit the label's action was chosen by (clipped to 1), and tests
whether their mean has risen: the one-sided Page-Hinkley test (Page, "Continuous inspection
schemes", Biometrika 1954; River's ``drift.PageHinkley``, its ``delta`` and ``min_instances``),
``m_t = sum_{s <= t} (x_s - mean_s - delta)``, a change when ``m_t - min_{s <= t} m_s``
exceeds ``threshold * ln t`` (``t`` labels since the test began). The threshold growing with
``ln t`` keeps the false alarms of a long stationary stream rare
(``docs/results/change_detection.md``).

``mean_s`` is the mean of the last ``WINDOW`` labels' residuals, about (the plain mean up to
``WINDOW`` labels, then an exponentially weighted one): the residuals of a stationary stream
may still creep upward as the learner's own fit changes (hashed sparse features filling in:
their mean rose by 0.016 over the first 100,000 labels of ``bench/experiments/high_dim.py``'s ADF
log, and the plain mean's test alarmed there at k = 6). A rise slower than ``delta`` per
``WINDOW`` labels is taken as such a creep, not as a change.

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

from regcb_stream.state import Stateful

try:
    from regcb_stream.oracles import _ridge
except ImportError:  # not built: the reference recurrence
    _ridge = None

CHECK_EVERY = 64  # labels per block of the test
DELTA = 0.005  # the tolerated rise of the mean squared residual (River's default)
MIN_LABELS = 30  # labels before the test may alarm (River's min_instances)
WINDOW = 8192  # labels the reference mean remembers, about
KEEP = 0.01  # the share of every label's weight kept when a change is detected
DEFAULT_THRESHOLD = 6.0  # times ln t (bench/experiments/change_detection.py chose it)


class ChangeDetector(Stateful):
    """The test's state: ``observe`` a label's reward and prediction; True at the end of a
    block in which the statistic crossed the threshold (the test then begins again)."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "threshold": "threshold",
        "span": "span",
        "changes": "changes",
        "waiting": "waiting",
        "n": "_n",
        "mean": "_mean",
        "walk": "_walk",
        "low": "_low",
    }

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, span: float = 1.0):
        self.threshold = float(threshold)
        self.span = float(span)
        self.changes = 0  # changes detected
        self.waiting: list[float] = []  # this block's scaled residuals
        self._restart()

    def restored(self) -> None:
        """A state built back from a model file, checked (the compiled loop reads it as
        numbers: a damaged one is refused here)."""
        numbers = (self.threshold, self.span, self._mean, self._walk, self._low)
        if not (all(type(x) is float for x in numbers) and type(self._n) is int
                and type(self.changes) is int and isinstance(self.waiting, list)
                and len(self.waiting) < CHECK_EVERY
                and all(type(x) is float for x in self.waiting)
                and self._n >= 0 and self.threshold > 0 and self.span > 0):
            raise ValueError("the change test's state is damaged")

    def _restart(self) -> None:
        self._n = 0  # labels since the test began
        self._mean = 0.0  # of their squared residuals (the last WINDOW's, about)
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

    def loop_spec(self) -> tuple:
        """The test's state for a compiled loop that runs it (``_ridge.run_online``'s
        ``change``), taken back by `loop_done`."""
        state = np.array([self._n, self._mean, self._walk, self._low, len(self.waiting)],
                         float)
        waiting = np.zeros(CHECK_EVERY)
        waiting[:len(self.waiting)] = self.waiting
        return state, waiting, self.threshold, DELTA, self.span, MIN_LABELS, WINDOW

    def loop_done(self, spec: tuple, alarm: bool) -> None:
        """The state a compiled loop left in ``spec`` (`loop_spec`); ``alarm``: a change
        detected at its last label (the test begins again)."""
        state, waiting = spec[:2]
        self.waiting = waiting[:int(state[4])].tolist()
        if alarm:
            self.changes += 1
            self._restart()
            return
        self._n, self._mean, self._walk, self._low = int(state[0]), *state[1:4].tolist()

    def _check(self) -> bool:
        """The test over the block's residuals, in order; the block emptied."""
        mean = self._mean
        block, self.waiting = self.waiting, []
        state = (self._n, mean, self._walk, self._low, self.threshold, DELTA, MIN_LABELS,
                 WINDOW)
        alarm, *state = (page_hinkley if _ridge is None else _ridge.page_hinkley)(
            block, *state)
        if alarm:
            self.changes += 1
            self._restart()
            return True
        self._n, self._mean, self._walk, self._low = state
        return False


def page_hinkley(block: list[float], n: int, mean: float, walk: float, low: float,
                  threshold: float, delta: float, min_labels: int, window: int) -> tuple:
    """The test's recurrence over a block (``_ridge.page_hinkley``'s reference): whether it
    alarmed (it stops there), and ``n``, ``mean``, ``walk`` and ``low`` after it."""
    for x in block:
        n += 1
        mean += (x - mean) / min(n, window)
        walk += x - mean - delta
        if walk < low:
            low = walk
        elif n >= min_labels and walk - low > threshold * math.log(n):
            return True, n, mean, walk, low
    return False, n, mean, walk, low
