"""Pieces: an exact ridge oracle's labels summed per piece, on the epoch schedules.

Within an epoch the decision state is frozen, so its labels' statistics are additive: a
piece's sums ``A`` and ``b``, each taken from zero over the piece's rows in order, can be
summed anywhere (another process, `regcb_stream.stream.parallel`) and added in the log's
order, with the same numbers as one process. The learner closes a piece at every
``PIECE_LABELS``-th label and at every rebuild (`regcb_stream.explore.explorer`).
"""

from __future__ import annotations

import numpy as np

from regcb_stream.features.rows import SparseRows
from regcb_stream.oracles.base import learn_row_by_row
from regcb_stream.oracles.blocks import distinct
from regcb_stream.oracles.loop import DENSE
from regcb_stream.oracles.ridge_base import _ridge


class Pieces:
    """The piece of a `RidgeOracle` with ``piecewise=True``: its labels go to the open
    piece, added to the models' statistics when it closes."""

    def learn_many(self, x, models, y, weight) -> None:
        """``learn`` row by row; a piece's rows (``SparseRows``) in one compiled call."""
        if not (self.piecewise and self.compiled and isinstance(x, SparseRows)) or not len(y):
            return learn_row_by_row(self, x, models, y, weight)
        models = np.ascontiguousarray(models, dtype=np.int64)
        for model in distinct(models).tolist():
            self._open_piece(model)
        piece_a, piece_b, _ = self._piece
        n, _, width = x.value.shape
        index = DENSE if x.index is None else np.ascontiguousarray(x.index, np.int64)
        residuals = np.asarray(y, dtype=float) - self.prior_mean
        _ridge.learn_rows(piece_a, piece_b, models, index, np.ascontiguousarray(x.value, float),
                          n, width, self.dim, np.ascontiguousarray(weight, dtype=float),
                          residuals)

    def _open_piece(self, model: int) -> tuple[np.ndarray, np.ndarray]:
        if self.forget < 1.0:
            raise ValueError("an oracle that forgets learns its labels in order: the "
                             "online schedule, without pieces")
        if self._piece is None:
            self._piece = (np.zeros_like(self._a), np.zeros_like(self._b), set())
        self._piece[2].add(model)
        return self._piece[0], self._piece[1]

    def take_piece(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The open piece's statistics ``(models, A sums, b sums)``, each sum over the
        piece's rows in order from zero, and a new piece begun (``piecewise`` learning)."""
        if self._piece is None:
            return np.zeros(0, np.intp), np.zeros((0,) + self._a.shape[1:]), np.zeros(
                (0, self.dim))
        a, b, touched = self._piece
        self._piece = None
        models = np.array(sorted(touched), dtype=np.intp)
        return models, a[models], b[models]

    def add_piece(self, models: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Add a piece's statistics (`take_piece`, here or in another process) to the
        models': the next rebuild inverts them afresh."""
        if a.shape[1:] != self._a.shape[1:]:
            raise ValueError(f"a piece over {a.shape[-1]} features does not fit models of "
                             f"{self.dim}")
        for i, model in enumerate(models.tolist()):
            self._a[model] += a[i]
            self._b[model] += b[i]
            self._pending[model] = None

    def open_piece(self, models: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Make a piece's statistics (`take_piece`) the open piece, to learn on."""
        self._piece = None
        for i, model in enumerate(models.tolist()):
            piece_a, piece_b = self._open_piece(model)
            piece_a[model], piece_b[model] = a[i], b[i]

    def close_piece(self) -> None:
        """Add the open piece to the models' statistics."""
        self.add_piece(*self.take_piece())
