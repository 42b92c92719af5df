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

from regcb_stream.io.vw_features import flatten, flatten_adf
from regcb_stream.io.vw_predictions import format_legacy, format_pmf
from regcb_stream.progress import ProgressTable


MAX_BLOCK = 4096  # examples read ahead at most (unlabelled ones do not end an epoch)


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
    vw_compat
        Reproduce VW's defects: a label on an ADF example's last action line is learned
        with importance weight 1/prob (VW's "no importance weighting" loop skips that
        line), and the optimistic variant gives probability 1 to every tied action.
    """

    def __init__(self, learner, settings: StreamSettings, predictions: TextIO | None,
                 progress: ProgressTable, legacy: bool = False, first_only: bool = False,
                 vw_compat: bool = False):
        self.learner = learner
        self.settings = settings
        self.predictions = predictions
        self.progress = progress
        self.legacy = legacy
        self.first_only = first_only
        self.vw_compat = vw_compat
        self._warned_range = False
        self._labels = list(range(settings.n_actions or 0))

    def run(self, examples, blocks: bool = False) -> None:
        """Process every example of an iterable (a parser generator).

        With ``blocks`` (single-line input only), the examples of one epoch are read
        ahead and decided in one computation: the decision state is frozen within an
        epoch, so the output is the same as example by example. Reading ahead waits for
        input, so interactive use needs ``blocks=False``.
        """
        if not blocks or self.settings.adf:
            for example in examples:
                self.process([example])
            return
        block, labelled, room = [], 0, self.learner.labels_until_rebuild
        iterator = iter(examples)
        while True:
            try:
                example = next(iterator)
            except StopIteration:
                break
            except Exception:
                self.process(block)  # predictions before a bad example are written
                raise
            block.append(example)
            labelled += _learnable(example)
            if labelled == room or len(block) == MAX_BLOCK:
                self.process(block)
                block, labelled, room = [], 0, self.learner.labels_until_rebuild
        self.process(block)

    def process(self, block: list) -> None:
        """Decide, write and learn a block of examples from within one epoch."""
        if not block:
            return
        inputs = [self._inputs(example) for example in block]
        if len(block) == 1:
            context, actions, _ = inputs[0]
            decision = self.learner.decide(context, actions)
            pmfs, predictions = decision.pmf[None, :], decision.prediction[None, :]
        else:
            decision = self.learner.decide_many([i[0] for i in inputs], self._labels)
            pmfs, predictions = decision.pmf, decision.prediction
        orders = np.argsort(-predictions, axis=1, kind="stable")
        if self.first_only:
            pmfs = np.array([_first_of_ties(p, o) for p, o in zip(pmfs, orders)])
        elif self.vw_compat and self.learner.variant == "optimistic":
            pmfs = (pmfs > 0).astype(float)  # VW: 1 for each tied action, not a distribution
        for example, pmf, order in zip(block, pmfs, orders):
            self._write(pmf, order, example.tag)
        if self.predictions is not None:
            self.predictions.flush()
        losses = self._learn(block, inputs, pmfs)
        for example, (_, _, n_features), pmf, order, loss in zip(
            block, inputs, pmfs, orders, losses
        ):
            label = None if loss is None else (self._action(example), *example.label[1:])
            first = int(order[0])
            self.progress.update(loss, label, (first, float(pmf[first])), n_features)

    def _learn(self, block, inputs, pmfs) -> list:
        """Learn the labelled examples of a block; return each example's IPS loss
        ``cost * pmf(action) / prob`` (None when unlabelled)."""
        rows = self._learnable(block)
        losses: list = [None] * len(block)
        if not rows:
            return losses
        for i in rows:
            label = block[i].label
            self._check_cost(label.cost, block[i].line_no)
            losses[i] = label.cost * float(pmfs[i][self._action(block[i])]) / label.prob
        self.learner.learn_many(
            [inputs[i][0] for i in rows],
            [inputs[i][1][self._action(block[i])] for i in rows],
            [-block[i].label.cost for i in rows],
            [block[i].label.prob for i in rows],
            [self._weight(block[i]) for i in rows],
        )
        return losses

    def _weight(self, example) -> float:
        """Importance weight of a label: 1, or VW's 1/prob on an ADF example's last line."""
        last = self.settings.adf and example.label.action == len(example.actions) - 1
        return 1.0 / example.label.prob if self.vw_compat and last else 1.0

    @staticmethod
    def _learnable(block) -> list[int]:
        return [i for i, example in enumerate(block) if _learnable(example)]

    def _action(self, example) -> int:
        """0-based index of the labelled action."""
        return example.label.action - (0 if self.settings.adf else 1)

    def _inputs(self, example):
        """Context, actions and VW's feature count of one example."""
        s = self.settings
        if s.adf:
            actions = flatten_adf(example.shared, example.actions, s.interactions, constant=False)
            return {}, actions, sum(len(a) for a in actions) + s.constant * len(actions)
        context = flatten(example.features, s.interactions, constant=False)
        per_action = len(context) + s.constant
        return context, self._labels, per_action * (1 if self.legacy else len(self._labels))

    def _write(self, pmf: np.ndarray, order: np.ndarray, tag: str | None) -> None:
        if self.predictions is None:
            return
        if self.legacy:
            self.predictions.write(format_legacy(pmf.tolist(), tag))
        else:
            probs = pmf.tolist()
            self.predictions.write(format_pmf([(a, probs[a]) for a in order.tolist()], tag))

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


def _learnable(example) -> bool:
    """Whether an example carries a label to learn (VW's test labels have no probability)."""
    return example.label is not None and example.label.prob is not None


def _first_of_ties(pmf: np.ndarray, order: np.ndarray) -> np.ndarray:
    """All the mass on the first action, in output order, among those of largest mass."""
    first = order[np.argmax(pmf[order] == pmf.max())]
    out = np.zeros_like(pmf)
    out[first] = 1.0
    return out
