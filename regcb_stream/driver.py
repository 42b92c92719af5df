"""The stream driver: parsed VW examples in, VW predictions out, learning from labels.

For each example the driver computes the learner's distribution (before learning from the
example: progressive validation), writes it in VW's ``-p`` format and flushes, then learns
the label if there is one. VW costs are learned as rewards ``-cost`` with the reward range
``(-cb_max_cost, -cb_min_cost)``; costs outside it are learned as they are (VW's
behaviour) and only the bounds are clipped.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from regcb_stream.io.vw_features import flatten, merge_shared
from regcb_stream.io.vw_predictions import format_legacy, format_pmf
from regcb_stream.progress import ProgressTable


@dataclass(frozen=True)
class StreamSettings:
    """How examples are read and turned into features (saved with the model)."""

    adf: bool
    n_actions: int | None = None  # K for single-line --cb_explore K
    interactions: tuple[str, ...] = ()
    constant: bool = True
    cost_range: tuple[float, float] = (0.0, 1.0)


class Driver:
    """Runs a learner over a stream of parsed examples.

    Parameters
    ----------
    learner
        A ``RegCB`` (or any learner with ``decide`` and ``learn``).
    settings
        The stream's ``StreamSettings``.
    predictions
        Where ``-p`` output goes (None: nowhere).
    progress
        The VW progress table to update.
    legacy
        Write ``--cb_force_legacy`` lines (single-line input only).
    first_only
        Put all the mass of a tie on the first tied action in the output order.
    """

    def __init__(self, learner, settings: StreamSettings, predictions: TextIO | None,
                 progress: ProgressTable, legacy: bool = False, first_only: bool = False):
        self.learner = learner
        self.settings = settings
        self.predictions = predictions
        self.progress = progress
        self.legacy = legacy
        self.first_only = first_only
        self._warned_range = False
        self._labels = list(range(settings.n_actions or 0))

    def run(self, examples) -> None:
        """Process every example of an iterable (a parser generator)."""
        for example in examples:
            self.process(example)

    def process(self, example) -> None:
        """Decide, write and learn one example."""
        context, actions, n_features = self._inputs(example)
        decision = self.learner.decide(context, actions)
        pmf = decision.pmf
        order = np.argsort(-decision.prediction, kind="stable")
        if self.first_only and pmf.max() < 1.0:
            pmf = _first_of_ties(pmf, order)
        self._write(pmf, order, example.tag)
        label, loss = self._learn(example, context, actions, pmf)
        first = int(order[0])
        self.progress.update(loss, label, (first, float(pmf[first])), n_features)

    def _inputs(self, example):
        """Context, actions and VW's feature count of one example."""
        s = self.settings
        if s.adf:
            actions = [
                flatten(merge_shared(example.shared, line), s.interactions, constant=False)
                for line in example.actions
            ]
            return {}, actions, sum(len(a) for a in actions) + s.constant * len(actions)
        context = flatten(example.features, s.interactions, constant=False)
        per_action = len(context) + s.constant
        return context, self._labels, per_action * (1 if self.legacy else len(self._labels))

    def _learn(self, example, context, actions, pmf):
        """Learn the example's label (if any); return it as (action, cost, prob) and the
        IPS loss ``cost * pmf(action) / prob``."""
        label = example.label
        if label is None or label.prob is None:
            return None, None
        action = label.action if self.settings.adf else label.action - 1
        self._check_cost(label.cost, example.line_no)
        self.learner.learn(context, actions[action], -label.cost, label.prob)
        return (action, label.cost, label.prob), label.cost * float(pmf[action]) / label.prob

    def _write(self, pmf: np.ndarray, order: np.ndarray, tag: str | None) -> None:
        if self.predictions is None:
            return
        if self.legacy:
            self.predictions.write(format_legacy(pmf.tolist(), tag))
        else:
            probs = pmf.tolist()
            self.predictions.write(format_pmf([(a, probs[a]) for a in order.tolist()], tag))
        self.predictions.flush()

    def _check_cost(self, cost: float, line_no: int) -> None:
        low, high = self.settings.cost_range
        if not low <= cost <= high and not self._warned_range:
            self._warned_range = True
            print(
                f"warning: line {line_no}: cost {cost:g} is outside [cb_min_cost, cb_max_cost]"
                f" = [{low:g}, {high:g}]; learning it as it is (as VW does), bounds stay "
                "clipped to the range",
                file=sys.stderr,
            )


def _first_of_ties(pmf: np.ndarray, order: np.ndarray) -> np.ndarray:
    """All the mass on the first action, in output order, among those of largest mass."""
    first = order[np.argmax(pmf[order] == pmf.max())]
    out = np.zeros_like(pmf)
    out[first] = 1.0
    return out
