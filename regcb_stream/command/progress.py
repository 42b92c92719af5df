"""VW's progress table and final summary, so runs compare with ``vw`` line by line.

The loss is VW's IPS estimate of the exploration policy's cost: for a labelled example
whose logged action ``a`` had probability ``p`` and cost ``c``, ``c * pmf(a) / p`` with
``pmf`` the distribution computed before learning; averages are over labelled examples.
Rows are printed at examples 1, 2, 4, 8, ...

>>> import io
>>> out = io.StringIO()
>>> table = ProgressTable(out)
>>> table.update(loss=None, label=None, prediction=(0, 0.25), n_features=12)
>>> table.update(loss=0.5, label=(1, 0.0, 0.25), prediction=(0, 0.25), n_features=12)
>>> print(out.getvalue(), end="")
average  since         example        example        current        current  current
loss     last          counter         weight          label        predict features
n.a.     n.a.                1            1.0        unknown         0:0.25       12
0.500000 0.500000            2            2.0       1:0:0.25         0:0.25       12

"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TextIO

import numpy as np

HEADER = (
    "average  since         example        example        current        current  current\n"
    "loss     last          counter         weight          label        predict features\n"
)


class ProgressTable:
    """Accumulates VW's counters and prints its progress rows to ``out``."""

    def __init__(self, out: TextIO | None, preamble: tuple[str, ...] = ()):
        self.out = out
        self.preamble = preamble  # lines before the table (VW: the settings in force)
        self.examples = 0
        self.labelled = 0
        self.loss = 0.0
        self.features = 0
        self.skipped = 0
        self.events_without_actions: list[int] = []  # DSJSON lines skipped, as VW skips them
        # (events without actions or context, _skipLearn events, lines not starting '{')
        self._since = [0.0, 0]  # loss and labelled examples since the last row
        self._next_row = 1

    def update(self, loss: float | None, label, prediction, n_features: int) -> None:
        """Count one example; ``label`` is ``(action, cost, prob)`` or None (unlabelled),
        ``prediction`` the ``(action, prob)`` listed first in the output."""
        self._add(1, n_features, () if loss is None else (loss,))
        self._row_if_due(label, prediction, n_features)

    def update_block(self, losses: np.ndarray, labelled: np.ndarray, n_features,
                     labels: tuple, predictions: tuple) -> None:
        """`update` for a block of examples, as arrays: each one's loss (read where it is
        ``labelled``) and feature count, the ``labels`` ``(actions, costs, probs)`` and
        ``predictions`` ``(actions, probs)`` its row would show. The counters advance in
        bulk between the rows that fall inside the block.

        >>> import io
        >>> table = ProgressTable(io.StringIO())
        >>> table.update_block(np.array([0.0, 0.5, 1.0]), np.array([False, True, True]),
        ...                    [3, 3, 3], ([0, 1, 2], [0.0, 0.5, 1.0], [1.0, 0.5, 0.5]),
        ...                    ([0] * 3, [0.5] * 3))
        >>> table.examples, table.labelled, table.loss, table.features
        (3, 2, 1.5, 9)
        """
        start, n = 0, len(losses)
        while start < n:
            stop = min(n, start + self._next_row - self.examples)  # the next row, or the end
            self._add(stop - start, int(np.sum(n_features[start:stop])),
                      losses[start:stop][labelled[start:stop]])
            i = stop - 1
            self._row_if_due(None if not labelled[i] else (
                int(labels[0][i]), float(labels[1][i]), float(labels[2][i])),
                (int(predictions[0][i]), float(predictions[1][i])), n_features[i])
            start = stop

    def _add(self, examples: int, features: int, losses) -> None:
        """Count examples, their features and the losses of those labelled."""
        self.examples += examples
        self.features += features
        if len(losses):
            self.labelled += len(losses)
            self.loss = _added(self.loss, losses)
            self._since = [_added(self._since[0], losses), self._since[1] + len(losses)]

    def _row_if_due(self, label, prediction, n_features: int) -> None:
        """The row of the last example counted, if one is due there."""
        if self.examples == self._next_row:
            self._print_row(label, prediction, n_features)
            self._next_row *= 2

    def _print_row(self, label, prediction, n_features: int) -> None:
        if self.out is None:
            return
        if self.examples == 1:
            self.out.write("".join(line + "\n" for line in self.preamble) + HEADER)
        average = _loss(self.loss, self.labelled)
        since = _loss(*self._since)
        label_text = "unknown" if label is None else "{}:{}:{}".format(*map(_short, label))
        predict_text = "{}:{}".format(*map(_short, prediction))
        self.out.write(
            f"{average:<8} {since:<8} {self.examples:>12} {float(self.examples):>14.1f} "
            f"{label_text:>14} {predict_text:>14} {n_features:>8}\n"
        )
        self._since = [0.0, 0]

    def note(self, text: str) -> None:
        """A line of its own between the rows."""
        if self.out is not None:
            self.out.write(text + "\n")

    def summary(self, budget: str | None = None, oracle: str | None = None,
                more: Iterable[str] = ()) -> str:
        """VW's closing block (plus the count of skipped examples in lenient mode, the
        exploration ``budget`` and the ``oracle`` in force, in words, and ``more`` lines)."""
        lines = [
            "",
            "finished run",
            f"number of examples = {self.examples}",
            f"weighted example sum = {self.examples:.6f}",
            "weighted label sum = 0.000000",
            f"average loss = {_loss(self.loss, self.labelled, width=None)}",
            f"total feature number = {self.features}",
        ]
        if self.skipped:
            lines.append(f"skipped examples = {self.skipped}")
        if self.events_without_actions:
            lines.append(f"DSJSON lines skipped as VW skips them = "
                         f"{len(self.events_without_actions)}")
        if budget:
            lines.append(f"exploration budget = {budget}")
        if oracle:
            lines.append(f"oracle = {oracle}")
        lines += more
        return "\n".join(lines) + "\n"


def _loss(total: float, count: int, width: int | None = 8) -> str:
    """An average as VW prints it: 6 decimals, in table rows narrowed to ``width``
    characters; n.a. without labelled examples."""
    if not count:
        return "n.a."
    value = total / count
    for decimals in range(6, -1, -1):
        text = f"{value:.{decimals}f}"
        if width is None or len(text) <= width:
            return text
    return text


def _added(total: float, values) -> float:
    """``total + values[0] + values[1] + ...``, one by one in order (VW's sums exactly, as
    ``np.add.accumulate`` adds)."""
    if len(values) == 1:
        return total + float(values[0])
    return float(np.add.accumulate(np.r_[total, values])[-1])


def _short(value) -> str:
    """A number with 2 significant digits, as VW prints labels and predictions."""
    return f"{value:.2g}" if isinstance(value, float) else str(value)
