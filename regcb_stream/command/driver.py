"""The stream driver: VW text in, VW predictions out, learning from labels.

For each example the driver computes the learner's distribution (before learning from the
example: progressive validation), writes it in VW's ``-p`` format and flushes, then learns
the label if there is one. VW costs are learned as rewards ``-cost`` with the reward range
``(-cb_max_cost, -cb_min_cost)``; costs outside it are learned as they are (VW's
behaviour) and only the bounds are clipped.

Input is read in blocks of the examples already available (`ReadAhead`): a file is read a
block at a time, a process that waits for each prediction gets it at once. A block is
encoded in a few numpy computations and run through ``learner.replay``, which decides each
example before learning its label, so the output does not depend on how the input was cut.
"""

from __future__ import annotations

import bisect
import contextlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from regcb_stream.command.progress import ProgressTable
from regcb_stream.io.adf_encode import AdfEncoder
from regcb_stream.io.hashing import DEFAULT_BITS
from regcb_stream.io.read_ahead import taker
from regcb_stream.io.vw_encode import TextEncoder
from regcb_stream.io.vw_features import Namespaces
from regcb_stream.io.vw_predictions import (
    format_block,
    format_legacy,
    format_legacy_block,
    format_pmf,
)
from regcb_stream.io.vw_text import (
    ADFExample,
    OnError,
    VWParseError,
    clean_line,
    iter_adf,
    read_cb_block,
)
from regcb_stream.model import ORACLES

MAX_BLOCK = 1024  # examples read ahead at most (a block costs ~0.7 ms besides its examples,
# which hold ~3.5 KB each at 26 actions while it is decided: 2,048 took 1.5x VW's memory)
MAX_TEXT = 1 << 19  # characters of single-line text per block, about (long lines: fewer)
MAX_DECISIONS = 1 << 16  # (example, action) pairs of a single-line block (many actions: fewer)
MAX_ROWS = 8192  # ADF action lines read ahead at most (a block's numpy calls amortized)


@dataclass(frozen=True)
class StreamSettings:
    """How examples are read and turned into features (saved with the model)."""

    adf: bool
    n_actions: int | None = None  # K for single-line --cb_explore K
    interactions: tuple[str, ...] = ()
    constant: bool = True
    cost_range: tuple[float, float] = (0.0, 1.0)
    hash_bits: int = DEFAULT_BITS  # VW's -b: features are keyed by VW's hashes
    legacy: bool = False  # --cb_force_legacy: K probabilities in action order
    first_only: bool = False  # --first_only: a tie's mass on its first action
    vw_compat: bool = False  # --vw_compat: VW's defects, bit for bit
    flags: dict | None = None  # the command's flags the learner was built with (`resume`)
    dsjson: bool = False  # --dsjson: VW's Decision Service JSON (ADF examples)
    filters: tuple | None = None  # --ignore, --keep, --ignore_linear (`vw_features.Namespaces`)
    slots: str | None = None  # "ccb" (--ccb_explore_adf) or "slates" (--slates)

    @classmethod
    def of_model(cls, saved: dict) -> StreamSettings:
        """The settings a model file holds, each checked to be of its type (``TypeError``,
        ``ValueError``: not settings this command writes)."""
        settings = cls(**saved)
        number = (int, float)
        for name, ok in (("adf", _is(bool)), ("legacy", _is(bool)), ("first_only", _is(bool)),
                         ("vw_compat", _is(bool)), ("constant", _is(bool)),
                         ("dsjson", _is(bool)), ("flags", lambda v: v is None or (
                             _is(dict)(v) and all(map(_is_flag_value, v.values()))
                             and v.get("oracle") in (None, *ORACLES))),
                         ("n_actions", lambda v: v is None or _is(int)(v) and v >= 1),
                         ("slots", lambda v: v in (None, "ccb", "slates")),
                         ("hash_bits", lambda v: v is None or _is(int)(v) and 0 <= v <= 32),
                         ("interactions", lambda v: isinstance(v, (tuple, list)) and all(
                             isinstance(x, str) for x in v)),
                         ("cost_range", lambda v: isinstance(v, (tuple, list)) and len(v) == 2
                          and all(_is(*number)(x) for x in v))):
            if not ok(getattr(settings, name)):
                raise ValueError(f"the stream setting {name} = {getattr(settings, name)!r} "
                                 "is not one regcb-stream writes")
        return settings


def _is_flag_value(value) -> bool:
    """A value the command's parser gives a flag (a number, a string, a switch, a list)."""
    plain = (type(None), bool, int, float, str)
    return type(value) in plain or type(value) in (tuple, list) and all(
        type(x) in plain for x in value)


def _is(*types):
    """Whether a value is of one of ``types`` (a bool is not an int here)."""
    return lambda value: type(value) in types or (
        int in types and type(value) is not bool and isinstance(value, int))


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
        Reproduce VW's defects: a label on an ADF example's last action line (single-line:
        of action K, the last line of the ADF example VW makes of it) is learned with
        importance weight 1/prob (VW's "no importance weighting" loop skips that line), and
        the optimistic variant gives probability 1 to every tied action.
    learn
        Learn the labels (False: VW's ``-t``, predictions and the progressive loss only).
    guard
        Context manager each block of work runs in (``shell.Interrupts.block``: Ctrl-C
        waits for the block's predictions and learning to finish).
    outcomes
        The decision log and the decisions waiting for rewards (`outcomes.Outcomes`).
    """

    def __init__(self, learner, settings: StreamSettings, predictions: TextIO | None,
                 progress: ProgressTable, legacy: bool = False, first_only: bool = False,
                 vw_compat: bool = False, learn: bool = True, guard=contextlib.nullcontext,
                 outcomes=None):
        self.learner = learner
        self.outcomes = outcomes
        self.settings = settings
        self.predictions = predictions
        self.progress = progress
        self.legacy = legacy
        self.first_only = first_only
        self.vw_compat = vw_compat
        self.learn = learn
        self.guard = guard
        self._warned_range = False
        self._oracle_kind: str | None = None
        self._labels = list(range(settings.n_actions or 0))
        columns, bits = learner.encoder.columns, settings.hash_bits
        if learner.encoder.hash_bits != bits:
            raise ValueError(f"the learner hashes {learner.encoder.hash_bits} bits, the "
                             f"stream's settings say {bits}")
        text, adf = ("h", "h") if bits else ("x", "a")  # hashes, or names
        filters = settings.filters and Namespaces(*settings.filters)
        self._text = TextEncoder(lambda keys: columns(text, keys), settings.interactions, bits,
                                 filters)
        self._adf = AdfEncoder(lambda keys: columns(adf, keys), settings.interactions,
                               settings.constant, bits, filters)

    def run(self, lines, on_error: OnError | None = None, first_line: int = 1) -> None:
        """Process every example of an iterable of text lines (a file, or a part of one
        whose first line is number ``first_line``).

        ``on_error`` is called with each bad example's `VWParseError`, which is then
        skipped; without it the error is raised, once every earlier prediction has been
        written. Examples are decided in blocks of what is available: with a `ReadAhead`,
        what it has read without waiting; with any other iterable, ``MAX_BLOCK`` lines or
        examples at a time. The predictions of each block are flushed.
        """
        if self.settings.dsjson:
            from regcb_stream.io.dsjson import iter_dsjson_adf  # (json costs start-up)

            rewards = self.outcomes is not None and self.outcomes.pending is not None
            examples = iter_dsjson_adf(lines, on_error, self.progress.events_without_actions,
                                       shared_text=True, first_line=first_line, runs=True,
                                       rewards=rewards)  # (else skipped, as VW)
        elif self.settings.adf:
            examples = iter_adf(lines, on_error, shared_text=True, first_line=first_line,
                                runs=True)
        if self.settings.adf:
            ready = getattr(lines, "ready", lambda: True)
            for batch in self._batches(examples, ready):
                with self.guard():
                    if isinstance(batch, list):
                        self._adf_batch(batch, on_error)
                    else:
                        self.outcomes.reward(batch)
            return
        take = taker(lines)
        count, limit = first_line - 1, 64  # a first block short enough whatever the lines
        while chunk := take(limit):
            texts, line_nos = _numbered(chunk, count + 1)
            count += len(chunk)
            for part in _narrow(texts, line_nos):
                with self.guard():
                    self._cb_batch(*part, on_error)
            width = sum(map(len, chunk)) // len(chunk) + 1
            limit = max(16, min(MAX_BLOCK, MAX_TEXT // width,
                                MAX_DECISIONS // max(1, len(self._labels))))

    def _batches(self, records, ready):
        """Lists of the ADF examples available (at most ``MAX_BLOCK``, or ``MAX_ROWS``
        action lines, with as many actions each). A bad example ends the list before it;
        a reward line (DSJSON) is yielded alone, after the list before it. ``records`` may
        hold lists of examples read at once (the readers' ``runs``)."""
        batch, rows, k, iterator = [], 0, -1, iter(records)
        while True:
            try:
                record = next(iterator)
            except StopIteration:
                break
            except Exception as error:
                yield batch  # predictions before a bad example are written
                raise error
            run = record if type(record) is list else [record]
            at = 0
            while at < len(run):
                if not isinstance(run[at], ADFExample):  # a reward line
                    yield batch
                    yield run[at]
                    batch, rows, at = [], 0, at + 1
                    continue
                if len(run[at].actions) != k:
                    if batch:
                        yield batch
                    batch, rows, k = [], 0, len(run[at].actions)
                room = min(MAX_BLOCK - len(batch), -(-(MAX_ROWS - rows) // max(k, 1)))
                stop, end = at + 1, min(len(run), at + room)
                while stop < end and len(run[stop].actions) == k:
                    stop += 1
                batch += run[at:stop]
                rows += k * (stop - at)
                at = stop
                if len(batch) == MAX_BLOCK or rows >= MAX_ROWS or (
                        at == len(run) and not ready()):
                    yield batch
                    batch, rows = [], 0
        yield batch

    def _cb_batch(self, texts: list[str], line_nos: Sequence[int],
                  on_error: OnError | None) -> None:
        """Read, encode, decide, write and learn a block of single-line examples (their
        lines' texts and numbers)."""
        if not texts:
            return
        block = read_cb_block(texts, self.settings.n_actions)
        encoded = self._text.encode(block.bodies)
        keep, reports = _checked(len(texts), {**encoded.errors, **block.errors}, on_error,
                                 lambda i: (line_nos[i], texts[i]))

        def replay(part: list[int]) -> None:
            whole = len(part) == len(texts)
            rows = encoded.rows if whole else encoded.rows[part]
            per_example = (1 if self.legacy else len(self._labels))
            counts = (encoded.n_features[part] + self.settings.constant) * per_example
            played, probs = block.action[part] - 1, block.prob[part]
            labels = (played, block.cost[part], probs, self._single_weights(played, probs))
            pick = (lambda values: values) if whole else (
                lambda values: [values[i] for i in part])
            self._replay(pick(block.tags), pick(line_nos), rows, self._labels, labels,
                         counts.tolist(), pick(block.bodies))
        _in_stream_order(keep, reports, replay, on_error)

    def _adf_batch(self, batch: list, on_error: OnError | None) -> None:
        """Encode, decide, write and learn a block of ADF examples with as many actions
        each (their shared lines still text)."""
        if not batch:
            return
        encoded = self._adf.encode_block([ex.shared for ex in batch],
                                         [ex.actions for ex in batch])
        keep, reports = _checked(len(batch), encoded.errors, on_error,
                                 lambda i: (batch[i].line_no, batch[i].text))

        def replay(part: list[int]) -> None:
            whole = len(part) == len(batch)
            examples = batch if whole else [batch[i] for i in part]
            tags = [ex.tag for ex in examples]
            if not examples[0].actions:  # lone shared lines: VW writes nothing
                empty = np.zeros((len(examples), 0))
                self._write(empty, empty.astype(np.intp), tags)
            else:
                self._replay(tags, [ex.line_no for ex in examples], [{}] * len(examples),
                             encoded.rows if whole else encoded.rows[part],
                             self._adf_labels(examples), encoded.n_features[part].tolist(),
                             examples)
        _in_stream_order(keep, reports, replay, on_error)

    def _adf_labels(self, examples: list) -> tuple:
        """The played indices (-1: nothing to learn, as a label without probability: VW's
        test label), costs, probabilities and importance weights of ADF examples, as
        arrays."""
        flat: list = []
        weight = self._weight if self.vw_compat else None
        for ex in examples:
            label = ex.label
            flat += _NO_LABEL if label is None or label.prob is None else (
                label.action, label.cost, label.prob, weight(ex) if weight else ex.weight)
        table = np.array(flat, float).reshape(-1, 4).T
        return (table[0].astype(np.intp), *table[1:])

    def _replay(self, tags: list, line_nos: list[int], contexts, actions, labels,
                n_features: list[int], examples: list) -> None:
        """Decide and learn a block (single-line: contexts and the action labels; ADF:
        empty contexts and the rows of each action), write the predictions and update
        the progress table with VW's IPS loss ``cost * pmf(action) / prob`` of each label.
        ``labels``: the played actions' indices (-1: nothing to learn), costs, probabilities
        and importance weights; ``examples``: the `ADFExample` (single-line: the feature
        text) of each, for the `outcomes`."""
        played, costs, probs, weights = labels
        learned = played >= 0
        self._check_costs(costs, learned, line_nos)
        before = self.learner.n_labels
        try:
            decision = self.learner.replay(contexts, actions, played if self.learn else
                                           np.full_like(played, -1), -costs, probs, weights)
        except (ValueError, TypeError, MemoryError) as error:
            if len(played) == 1 or self.learner.n_labels != before:
                raise ExampleError(line_nos[0], error) from error
            for i in range(len(played)):  # one at a time: the examples before it are written
                self._replay(tags[i:i + 1], line_nos[i:i + 1], contexts[i:i + 1],
                             actions if isinstance(actions, list) else actions[i:i + 1],
                             tuple(x[i:i + 1] for x in labels), n_features[i:i + 1],
                             examples[i:i + 1])
            raise
        valid = valid_rows(decision.pmf)
        if not valid.all():  # (features beyond float64, or a damaged model file's state)
            bad = int(np.argmin(valid))  # the examples before it are written
            self._write(*self._shown(decision.pmf[:bad], decision.prediction[:bad]),
                        tags[:bad])
            error = ValueError("the learner's distribution is not valid (not finite, "
                               "negative or not summing to 1): a feature value too large, "
                               "or a damaged model file?")
            raise ExampleError(line_nos[bad], error) from error
        self._note_oracle(line_nos[-1])
        pmfs, orders = self._shown(decision.pmf, decision.prediction)
        self._write(pmfs, orders, tags)
        n = len(played)
        chosen = pmfs[np.arange(n), np.where(learned, played, 0)]
        firsts = orders[:, :1]
        self.progress.update_block(
            costs * chosen / probs, learned, n_features, (played, costs, probs),
            (firsts[:, 0], np.take_along_axis(pmfs, firsts, axis=1)[:, 0]))
        if self.outcomes is not None:
            self._outcomes(examples, decision, actions, (played, costs), before, tags)

    def _outcomes(self, examples: list, decision, actions, labels, before: int, tags: list
                  ) -> None:
        """Hand a block's decisions to the `outcomes` (log, waiting decisions), each with
        the number of labels the learner had when it decided (the model version)."""
        learned = (labels[0] >= 0) if self.learn else np.zeros(len(labels[0]), bool)
        versions = (before + np.cumsum(learned) - learned).tolist()
        if self.settings.adf:
            self.outcomes.decided(examples, decision.pmf, decision.candidates, actions,
                                  versions)
        else:
            self.outcomes.decided_single(examples, labels, decision.pmf, tags, versions)

    def _note_oracle(self, line_no: int) -> None:
        """Say when the learner's oracle changes kind (exact ridge hands over to bounded
        ridge as the features grow), by the last line of the block it changed in."""
        kind = self.learner.oracle_in_use.split(",")[0]
        if self._oracle_kind not in (None, kind):
            self.progress.note(f"by line {line_no}: the oracle is now "
                               f"{self.learner.oracle_in_use}")
        self._oracle_kind = kind

    def _shown(self, pmfs: np.ndarray, predictions: np.ndarray):
        """The distributions as written (``--first_only``, VW's ties) and the print order
        of the actions (ascending predicted cost, as VW; without predictions to write, only
        its first action, which the progress table shows)."""
        if self.predictions is None and not self.first_only:
            orders = predictions.argmax(axis=1)[:, None]  # (the first of ties, as argsort)
        else:
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
        self.predictions.flush()  # a process may be waiting for these lines

    def _single_weights(self, played: np.ndarray, probs: np.ndarray) -> np.ndarray:
        """Importance weights of single-line labels: 1, or with ``vw_compat`` VW's 1/prob for
        action K, the last line of the ADF example VW makes of a single-line one."""
        weights = np.ones(len(played))
        if self.vw_compat and not self.legacy:
            last = played == len(self._labels) - 1
            weights[last] = 1.0 / probs[last]
        return weights

    def _weight(self, example) -> float:
        """Importance weight of a label: the example's (DSJSON's pdrop), times VW's 1/prob on
        an ADF example's last line with ``vw_compat``."""
        last = self.settings.adf and example.label.action == len(example.actions) - 1
        return example.weight / example.label.prob if self.vw_compat and last else (
            example.weight)

    def _check_costs(self, costs: np.ndarray, learned: np.ndarray, line_nos: list[int]):
        """Warn, once per run, about a learned cost outside the cost range."""
        low, high = self.settings.cost_range
        outside = np.flatnonzero(learned & ((costs < low) | (costs > high)))
        if outside.size and not self._warned_range:
            self._warned_range = True
            first = int(outside[0])
            warn_cost_range(f"line {line_nos[first]}", costs[first], low, high)


def warn_cost_range(where: str, cost: float, low: float, high: float) -> None:
    """The warning, once a run, of a learned cost outside the cost range."""
    print(f"warning: {where}: cost {cost:g} is outside [cb_min_cost, cb_max_cost] = "
          f"[{low:g}, {high:g}]; learning it as it is (as VW does), bounds stay clipped to "
          "the range", file=sys.stderr)


def _numbered(chunk: list[str], first: int) -> tuple[list[str], Sequence[int]]:
    """The non-empty lines of a chunk, cleaned (`clean_line`), and their numbers (the
    chunk's first is number ``first``): a chunk with nothing to clean as it is."""
    joined = "".join(chunk)
    if "" not in chunk and not any(c in joined for c in "\n\r\ufeff"):
        return chunk, range(first, first + len(chunk))
    numbered = [(no, text) for no, raw in enumerate(chunk, first) if (text := clean_line(raw))]
    return [text for _, text in numbered], [no for no, _ in numbered]


def _narrow(texts: list[str], line_nos: Sequence[int]) -> list[tuple[list, Sequence[int]]]:
    """A block's lines and numbers cut where its lines would pad to more than
    ``MAX_TEXT`` characters (a block is encoded as rows as wide as its longest line: one
    very long line goes alone)."""
    if not texts or len(texts) * max(map(len, texts)) <= MAX_TEXT:
        return [(texts, line_nos)]
    parts, start, widest = [], 0, 0
    for i, text in enumerate(texts):
        widest = max(widest, len(text))
        if i > start and (i + 1 - start) * widest > MAX_TEXT:
            parts.append((texts[start:i], line_nos[start:i]))
            start, widest = i, len(text)
    parts.append((texts[start:], line_nos[start:]))
    return parts


class ExampleError(ValueError):
    """An example the learner refuses (not a parse error), named by its line."""

    def __init__(self, line_no: int, error: Exception):
        super().__init__(f"line {line_no}: {error}")
        self.line_no = line_no


def _checked(n: int, errors: dict, on_error: OnError | None, locate):
    """The examples of a block of ``n`` to decide (every good one when bad ones are
    skipped, else those before the first bad one, where the run stops) and the errors to
    report, each with its example's place in the block; ``locate(i)``: example i's line
    number and text."""
    if not errors:
        return list(range(n)), []
    reports = [(i, VWParseError(*locate(i), error.rule, error.detail))
               for i, error in sorted(errors.items())]
    last = min(errors) if on_error is None else n
    return [i for i in range(last) if i not in errors], reports


def _in_stream_order(keep: list[int], reports: list, replay, on_error: OnError | None) -> None:
    """Decide the kept examples (``replay`` of their places in the block) and report the
    bad ones in the stream's order: a --lenient warning falls between the progress rows
    of the examples around it however the input was cut into blocks (as VW prints it),
    and without --lenient the run stops after the examples before the first bad one."""
    done = 0
    for at, error in reports:
        upto = bisect.bisect_left(keep, at)
        if upto > done:
            replay(keep[done:upto])
            done = upto
        _report([error], on_error)
    if done < len(keep):
        replay(keep[done:])


def _report(reports: list[VWParseError], on_error: OnError | None) -> None:
    for error in reports:
        if on_error is None:
            raise error
        on_error(error)


_NO_LABEL = (-1, 0.0, 1.0, 1.0)  # (played, cost, probability, weight) without a label


def _first_of_ties(pmf: np.ndarray, order: np.ndarray) -> np.ndarray:
    """All the mass on the first action, in output order, among those of largest mass."""
    first = order[np.argmax(pmf[order] == pmf.max())]
    out = np.zeros_like(pmf)
    out[first] = 1.0
    return out


def valid_rows(pmfs: np.ndarray) -> np.ndarray:
    """Which rows of ``pmfs`` are distributions: finite, not negative, summing to 1 (or
    empty: an example without actions).

    >>> valid_rows(np.array([[0.5, 0.5], [1.0, 1.0], [np.nan, 1.0], [0.0, 0.0]])).tolist()
    [True, False, False, True]
    """
    total = pmfs.sum(axis=1)
    return (np.isfinite(total) & (pmfs >= 0).all(axis=1)
            & ((np.abs(total - 1) <= 1e-6) | ~pmfs.any(axis=1)))
