"""The stream driver: VW text in, VW predictions out, learning from labels.

For each example the driver computes the learner's distribution (before learning from the
example: progressive validation), writes it in VW's ``-p`` format and flushes, then learns
the label if there is one. VW costs are learned as rewards ``-cost`` with the reward range
``(-cb_max_cost, -cb_min_cost)``; costs outside it are learned as they are (VW's
behaviour) and only the bounds are clipped.

Input is read in blocks: one example at a time (interactive use), or one epoch at a time
(``blocks``), whose examples are encoded, decided, written and learned by a handful of
numpy computations (the decision state is frozen within an epoch, so the output is the
same).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from regcb_stream.features import EncodedRows
from regcb_stream.io.vw_encode import AdfEncoder, TextEncoder
from regcb_stream.io.vw_predictions import (
    format_block,
    format_legacy,
    format_legacy_block,
    format_pmf,
)
from regcb_stream.io.vw_text import OnError, VWParseError, iter_adf, iter_cb_lines
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
    """Runs a learner over a stream of VW text.

    Parameters
    ----------
    learner
        A ``RegCB`` (or any learner with ``encoder``, ``decide``, ``decide_many`` and
        ``learn_many``).
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
        self._interactive = True
        self._labels = list(range(settings.n_actions or 0))
        columns = learner.encoder.columns
        self._text = TextEncoder(lambda keys: columns("x", keys), settings.interactions)
        self._adf = AdfEncoder(lambda keys: columns("a", keys), settings.interactions,
                               settings.constant)

    def run(self, lines, on_error: OnError | None = None, blocks: bool = False) -> None:
        """Process every example of an iterable of text lines (a file).

        ``on_error`` is called with each bad example's `VWParseError`, which is then
        skipped; without it the error is raised, once every earlier prediction has been
        written. With ``blocks``, the examples of one epoch are read ahead and decided in
        one computation, and predictions are flushed when the buffer fills instead of
        after every example; reading ahead waits for input, so interactive use needs
        ``blocks=False``.
        """
        self._interactive = not blocks
        if self.settings.adf:
            examples = iter_adf(lines, on_error, shared_text=True)
            for batch in self._batches(examples, blocks):
                self._adf_batch(batch, on_error)
            return
        records = iter_cb_lines(lines, self.settings.n_actions, on_error)
        for batch in self._batches(records, blocks):
            self._cb_batch(batch, on_error)

    def _batches(self, records, blocks: bool):
        """Lists of examples to decide together: one epoch's (at most ``MAX_BLOCK``, and
        ADF examples with as many actions), or one example each without ``blocks``. A bad
        example ends the list before it."""
        if not blocks:
            yield from ([record] for record in records)
            return
        batch, labelled, room = [], 0, self.learner.labels_until_rebuild
        iterator = iter(records)
        while True:
            try:
                record = next(iterator)
            except StopIteration:
                break
            except Exception as error:
                yield batch  # predictions before a bad example are written
                raise error
            if batch and self.settings.adf and len(record.actions) != len(batch[0].actions):
                yield batch
                batch, labelled, room = [], 0, self.learner.labels_until_rebuild
            batch.append(record)
            labelled += _learnable(record.label)
            if labelled == room or len(batch) == MAX_BLOCK:
                yield batch
                batch, labelled, room = [], 0, self.learner.labels_until_rebuild
        yield batch

    def _cb_batch(self, batch: list, on_error: OnError | None) -> None:
        """Encode, decide, write and learn single-line examples of one epoch."""
        if not batch:
            return
        encoded = self._text.encode([record.body for record in batch])
        keep, reports = _checked(batch, encoded.errors, on_error)
        if keep:
            examples, rows = _kept(batch, encoded.rows, keep)
            decision = self.learner.decide_many(rows, self._labels)
            pmfs, orders = self._shown(decision.pmf, decision.prediction)
            self._write(pmfs, orders, [record.tag for record in examples])
            per_example = (1 if self.legacy else len(self._labels))
            counts = (encoded.n_features[keep] + self.settings.constant) * per_example
            self._learn(examples, rows, pmfs, orders, counts.tolist(), action_offset=1,
                        candidates=decision.candidates)
        _report(reports, on_error)

    def _adf_batch(self, batch: list, on_error: OnError | None) -> None:
        """Encode, decide, write and learn ADF examples of one epoch with as many actions
        each (their shared lines still text)."""
        if not batch:
            return
        encoded = self._adf.encode_block([ex.shared for ex in batch],
                                         [ex.actions for ex in batch])
        keep, reports = _checked(batch, encoded.errors, on_error)
        examples, rows = _kept(batch, encoded.rows, keep)
        if examples and not examples[0].actions:  # lone shared lines: VW writes nothing
            empty = np.zeros((len(examples), 0))
            self._write(empty, empty.astype(np.intp), [ex.tag for ex in examples])
        elif examples:
            decision = self.learner.decide_many([{}] * len(examples), rows)
            pmfs, orders = self._shown(decision.pmf, decision.prediction)
            self._write(pmfs, orders, [example.tag for example in examples])
            self._learn(examples, rows, pmfs, orders, encoded.n_features[keep].tolist(),
                        action_offset=0, candidates=decision.candidates)
        _report(reports, on_error)

    def _shown(self, pmfs: np.ndarray, predictions: np.ndarray):
        """The distributions as written (``--first_only``, VW's ties) and the print order
        of the actions (ascending predicted cost, as VW)."""
        orders = np.argsort(-predictions, axis=1, kind="stable")
        if self.first_only:
            pmfs = np.array([_first_of_ties(p, o) for p, o in zip(pmfs, orders)])
        elif self.vw_compat and self.learner.variant == "optimistic":
            pmfs = (pmfs > 0).astype(float)  # VW: 1 for each tied action, not a distribution
        return pmfs, orders

    def _write(self, pmfs: np.ndarray, orders: np.ndarray, tags: list) -> None:
        if self.predictions is None:
            return
        if len(pmfs) == 1:  # one example (interactive use, ADF): no block machinery
            probs = pmfs[0].tolist()
            text = (format_legacy(probs, tags[0]) if self.legacy else
                    format_pmf([(a, probs[a]) for a in orders[0].tolist()], tags[0]))
        elif self.legacy:
            text = format_legacy_block(pmfs, tags)
        else:
            text = format_block(pmfs, orders, tags)
        self.predictions.write(text)
        if self._interactive:  # a process may be waiting for this line
            self.predictions.flush()

    def _learn(self, examples: list, rows, pmfs: np.ndarray, orders: np.ndarray,
               n_features: list[int], action_offset: int, candidates=None) -> None:
        """Learn the labelled examples (single-line: a row each; ADF: a row per action
        of each) and update the progress table with VW's IPS loss ``cost * pmf(action) /
        prob`` of each; ``candidates`` (automatic budget): each candidate budget's
        distributions ``(n, J, K)``."""
        losses, labels = [None] * len(examples), [None] * len(examples)
        learn = [i for i, example in enumerate(examples) if _learnable(example.label)]
        for i in learn:
            label = examples[i].label
            self._check_cost(label.cost, examples[i].line_no)
            action = label.action - action_offset
            losses[i] = label.cost * float(pmfs[i, action]) / label.prob
            labels[i] = (action, label.cost, label.prob)
        if learn:
            chosen = [labels[i][0] for i in learn]
            adf = action_offset == 0  # rows are (n, K, L): learn the played action's row
            self.learner.learn_many(
                [{}] * len(learn) if adf else rows[learn],
                EncodedRows(rows.index[learn, chosen], rows.value[learn, chosen]) if adf
                else chosen,
                [-labels[i][1] for i in learn],
                [labels[i][2] for i in learn],
                [self._weight(examples[i]) for i in learn],
                None if candidates is None else candidates[learn, :, chosen],
            )
        firsts = orders[:, 0].tolist()
        predictions = [(a, float(p[a])) for a, p in zip(firsts, pmfs)]
        self.progress.update_block(losses, labels, predictions, n_features)

    def _weight(self, example) -> float:
        """Importance weight of a label: 1, or VW's 1/prob on an ADF example's last line."""
        last = self.settings.adf and example.label.action == len(example.actions) - 1
        return 1.0 / example.label.prob if self.vw_compat and last else 1.0

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


def _checked(batch: list, errors: dict, on_error: OnError | None):
    """The examples of a block to decide (every good one when bad ones are skipped, else
    those before the first bad one, where the run stops) and the errors to report after
    their predictions are written."""
    reports = [VWParseError(batch[i].line_no, batch[i].text, error.rule, error.detail)
               for i, error in sorted(errors.items())]
    last = min(errors) if errors and on_error is None else len(batch)
    return [i for i in range(last) if i not in errors], reports


def _kept(batch: list, rows: EncodedRows, keep: list[int]) -> tuple[list, EncodedRows]:
    """The examples and rows at ``keep`` (the whole block, uncopied, when it is all)."""
    if len(keep) == len(batch):
        return batch, rows
    return [batch[i] for i in keep], rows[keep]


def _report(reports: list[VWParseError], on_error: OnError | None) -> None:
    for error in reports:
        if on_error is None:
            raise error
        on_error(error)


def _learnable(label) -> bool:
    """Whether a label is one to learn (VW's test labels have no probability)."""
    return label is not None and label.prob is not None


def _first_of_ties(pmf: np.ndarray, order: np.ndarray) -> np.ndarray:
    """All the mass on the first action, in output order, among those of largest mass."""
    first = order[np.argmax(pmf[order] == pmf.max())]
    out = np.zeros_like(pmf)
    out[first] = 1.0
    return out
