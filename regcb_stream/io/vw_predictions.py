"""Prediction lines in the format of VW 9's ``-p`` file for CB exploration.

``--cb_explore_adf`` and ``--cb_explore K`` write one line per example, ``a:p,a:p,...`` with
0-based actions in the explorer's order, then `` tag`` when the example has a tag, then an empty
line. VW 9 prints each probability with ``fmt::format("{:.6f}")`` and strips trailing zeros and
a trailing dot (``0.016667``, ``0.00001``, ``1``, ``0``); older VW (and some files in VW's test
suite) used ``%g``, e.g. ``0.0166667``. ``--cb_explore K --cb_force_legacy`` writes the K
probabilities in action order, each as ``%.6f`` followed by a space, then `` tag``, then a
newline, with no empty line. Empty input lines produce no output in either mode; an ADF example
with no action lines (a lone ``shared`` line) gives an empty line plus the separator.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

import numpy as np

try:
    from regcb_stream.io import _scan
except ImportError:  # not built: formatted by numpy
    _scan = None


@functools.lru_cache(maxsize=4096)  # a stream's distributions repeat a few values (0, 1/k)
def format_prob(p: float) -> str:
    """One probability as VW 9 prints it: 6 decimals, trailing zeros and dot removed.

    Examples
    --------
    >>> [format_prob(p) for p in (1.0, 0.5, 1 / 70, 1e-05, 4e-07, 0.0)]
    ['1', '0.5', '0.014286', '0.00001', '0', '0']
    """
    text = f"{p:.6f}"
    if text[-1] == "0":
        text = text.rstrip("0")
        if text[-1] == ".":
            text = text[:-1]
    return text


def format_pmf(pairs: Iterable[tuple[int, float]], tag: str | None = None) -> str:
    """The ``-p`` text for one example: ``a:p,...``, optional `` tag``, newline, empty line.

    Parameters
    ----------
    pairs : iterable of (int, float)
        0-based action and probability, in the order to print (the explorer's order).
    tag : str, optional
        The example's tag; None or ``""`` prints none.

    Examples
    --------
    >>> format_pmf([(1, 0.95), (0, 0.05)], tag="id7")
    '1:0.95,0:0.05 id7\\n\\n'
    >>> format_pmf([(0, 1 / 3), (1, 1 / 3), (2, 1 / 3)])
    '0:0.333333,1:0.333333,2:0.333333\\n\\n'
    """
    body = ",".join([f"{a}:{format_prob(p)}" for a, p in pairs])
    return f"{body} {tag}\n\n" if tag else body + "\n\n"


def format_legacy(probs: Iterable[float], tag: str | None = None) -> str:
    """The ``--cb_explore K --cb_force_legacy`` ``-p`` line: probabilities in action order.

    Examples
    --------
    >>> format_legacy([0.9666666, 1 / 60, 1 / 60], tag="t1")
    '0.966667 0.016667 0.016667  t1\\n'
    """
    body = "".join([f"{p:.6f} " for p in probs])
    return f"{body} {tag}\n" if tag else body + "\n"


def format_block(pmfs: np.ndarray, orders: np.ndarray, tags: Sequence[str | None]) -> str:
    """`format_pmf` for a block of examples: ``pmfs`` ``(n, K)`` in action order, ``orders``
    ``(n, K)`` the print order of each row (compiled: ``_scan.format_block``).

    Examples
    --------
    >>> pmfs = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    >>> format_block(pmfs, np.array([[1, 0, 2], [2, 0, 1]]), [None, "t"])
    '1:0.5,0:0.5,2:0\\n\\n2:1,0:0,1:0 t\\n\\n'
    """
    k = pmfs.shape[1]
    if k == 0:  # examples without actions (lone shared lines): as format_pmf([])
        return "".join(f" {tag}\n\n" if tag else "\n\n" for tag in tags)
    if _scan is not None:  # compiled (None: a tag that is not UTF-8)
        text = _scan.format_block(np.ascontiguousarray(pmfs, float),
                                  np.ascontiguousarray(orders, np.int64), k, list(tags))
        if text is not None:
            return text
    return format_block_reference(pmfs, orders, tags)


def format_block_reference(pmfs: np.ndarray, orders: np.ndarray, tags: Sequence[str | None]) -> str:
    """`format_block` by numpy (the compiled one's reference), each distinct probability
    formatted once."""
    k = pmfs.shape[1]
    values, inverse = _distinct(pmfs)
    cells = np.array([[f"{a}:{format_prob(p)}" for p in values.tolist()] for a in range(k)],
                     dtype=object)
    picked = cells[orders, np.take_along_axis(inverse, orders, axis=1)]
    return "".join([",".join(row) + (f" {tag}\n\n" if tag else "\n\n")
                    for row, tag in zip(picked.tolist(), tags)])


def format_slots(examples: Sequence[Sequence]) -> str:
    """The ``-p`` text of multi-slot examples (``--ccb_explore_adf``, ``--slates``): a line
    per slot, ``a:p,...`` over the actions it was offered with the drawn one first, then
    the others in order (an empty line for a slot no action was left for, None), then an
    empty line after each example. A slot's decision is ``(index, prob, pmf, offered,
    ...)``, as `regcb_stream.slots.SlotDecision` (compiled: ``_scan.format_slots``).

    >>> format_slots([[(2, 0.5, np.array([0.5, 0.5]), (0, 2)), None]])
    '2:0.5,0:0.5\\n\\n\\n'
    """
    if _scan is not None:
        return _scan.format_slots(examples if isinstance(examples, list) else list(examples))
    return format_slots_reference(examples)


def format_slots_reference(examples: Sequence[Sequence]) -> str:
    """`format_slots` in Python (the compiled one's reference)."""
    def line(slot) -> str:
        if slot is None:
            return "\n"
        index, _, pmf, offered = slot[:4]
        pairs = list(zip(offered, np.asarray(pmf, float).tolist()))
        at = offered.index(index)
        pairs = [pairs[at], *pairs[:at], *pairs[at + 1:]]
        return ",".join([f"{a}:{format_prob(p)}" for a, p in pairs]) + "\n"

    return "".join("".join(map(line, slots)) + "\n" for slots in examples)


def format_legacy_block(pmfs: np.ndarray, tags: Sequence[str | None]) -> str:
    """`format_legacy` for a block of examples (rows of ``pmfs``).

    >>> format_legacy_block(np.array([[0.25, 0.75]]), ["t"])
    '0.250000 0.750000  t\\n'
    """
    values, inverse = _distinct(pmfs)
    cells = np.array([f"{p:.6f} " for p in values.tolist()], dtype=object)
    rows = cells[inverse].tolist()
    return "".join(["".join(row) + (f" {tag}\n" if tag else "\n") for row, tag in zip(rows, tags)])


def _distinct(pmfs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``pmfs`` (sorted) and each entry's index among them, of
    ``pmfs``' shape: ``np.unique(pmfs, return_inverse=True)``, but a search into the few
    distinct values instead of an argsort of all of them (~20x faster on a 500 x 26 block),
    and without ``np.unique``, whose first call imports ``numpy.ma`` (the command's start-up).

    >>> _distinct(np.array([[0.5, 0.0], [0.5, 1.0]]))
    (array([0. , 0.5, 1. ]), array([[1, 0],
           [1, 2]]))
    """
    ordered = np.sort(pmfs, axis=None)
    first = np.ones(ordered.size, bool)  # (none for an empty block)
    first[1:] = ordered[1:] != ordered[:-1]
    values = ordered[first]
    return values, np.searchsorted(values, pmfs)
