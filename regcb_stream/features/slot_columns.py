"""The columns of VW's hashed slots: the joint class's hashed features and crosses
(`regcb_stream.features.crosses`) become the columns of a growing encoder, numbered in
order of first appearance."""

from __future__ import annotations

import numpy as np

from regcb_stream.io.hashing import mask
from regcb_stream.state import Stateful

try:
    from regcb_stream.io import _scan
except ImportError:  # not built: numpy
    _scan = None


class SlotColumns(Stateful):
    """The columns of VW's hashed slots (``hash & mask(bits)``), numbered in order of first
    appearance: a table of ``2**bits`` entries (for ``bits <= 22``; a dict above).

    >>> slots = SlotColumns(bits=4)
    >>> columns, fresh = slots(np.array([21, 3, 5, 21], np.uint64), first=1)
    >>> columns.tolist(), fresh
    ([1, 2, 1, 1], 2)
    """

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "mask": "mask",
        "table": "_table",
        "dict": "_dict",
    }

    TABLE_BITS = 22

    def __init__(self, bits: int):
        self.mask = mask(bits)
        # each slot's column + 1 (0: not seen): zeros, so the pages of slots never seen
        # are never touched (2 MiB of memory at 18 bits otherwise); saved as the columns
        self._table = np.zeros(1 << bits, np.int64) if bits <= self.TABLE_BITS else None
        self._dict: dict[int, int] = {}

    def state(self) -> dict:
        """The saved state: the table as each slot's column, -1 for a slot not seen."""
        saved = super().state()
        if self._table is not None:
            saved["table"] = self._table - 1
        return saved

    def restored(self) -> None:
        if self._table is not None:
            self._table = np.asarray(self._table, np.int64) + 1

    def __call__(self, hashes: np.ndarray, first: int) -> tuple[np.ndarray, int]:
        """Columns of ``hashes``; new slots get columns ``first, first + 1, ...``. Returns
        the columns and the number of new slots."""
        if self._table is not None and _scan is not None:  # one compiled pass, in order
            columns = np.empty(len(hashes), np.int64)
            fresh = _scan.slot_columns(np.ascontiguousarray(hashes, np.uint64), self._table,
                                       first, columns)
            return columns, fresh
        slots = (hashes & np.uint64(self.mask)).astype(np.int64)
        if self._table is None:
            unique, inverse = np.unique(slots, return_inverse=True)
            known = [self._dict.get(s, -1) for s in unique.tolist()]
            columns = np.array(known, np.int64)[inverse.reshape(-1)]
        else:
            columns = self._table[slots] - 1
        new = columns < 0
        if not new.any():
            return columns, 0
        fresh, first_seen = np.unique(slots[new], return_index=True)
        fresh = fresh[np.argsort(first_seen)]
        numbers = first + np.arange(len(fresh))
        if self._table is None:
            self._dict.update(zip(fresh.tolist(), numbers.tolist()))
            return self(hashes, first + len(fresh))[0], len(fresh)
        self._table[fresh] = numbers + 1
        return self._table[slots] - 1, len(fresh)
