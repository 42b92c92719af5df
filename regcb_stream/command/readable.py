"""``--readable_model FILE`` and ``--invert_hash FILE``: the learned weights as text, as VW
writes them.

The weights are those of the fit the decisions use (with ``--schedule sqrt2`` or
``doubling``: as of the last rebuild), read through the oracle's predictions, so every
oracle has them. They predict a cost, VW's sign: ``cost = offset + sum of weight * value``
over an example's features (the offset is the prediction of an example without features:
the ridge oracles' prior, negated). The file is a header, then one block per model (one
for ADF input, one per action with ``--cb_explore K``)::

    regcb-stream readable model
    bits 18
    oracle exact ridge, 1 models of 30 features
    model 0 offset -0.5
    116060:-0.214
    ...

Each weight line is ``slot:weight`` (``--readable_model``, VW's ``hash:weight``, the slot
``hash & (2^bits - 1)``), or ``name:slot:weight`` with ``--invert_hash``: a line per
feature name seen in the ``-d`` files (read again at the end, as VW's ``--invert_hash``
costs a run time of its own), ``Constant`` for VW's constant; a slot whose names are not
known (input from stdin) keeps ``slot:weight``. Lines are in slot order; weights of 0 are
left out, as VW leaves them. The random features' weights, which have no slot, are not
written (the file then holds the model's linear part).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

import numpy as np

from regcb_stream.command import shell
from regcb_stream.features.rows import SparseRows
from regcb_stream.io.hashing import mask
from regcb_stream.io.vw_features import HashKeys, Namespaces, flatten, flatten_adf

CONSTANT = 11650396  # VW's constant feature's hash (vw_features.HashKeys.constant)


def write(path: str, learner, settings, data: str | None, names: bool) -> None:
    """Write the weights of ``learner`` to ``path`` (``names``: ``--invert_hash``, the
    feature names of the ``data`` files where known)."""
    bits = settings.hash_bits
    slots, columns = _slot_columns(learner.encoder.state()["slots"].state(), bits)
    known = _names(data, settings) if names and data not in (None, "-", "/dev/stdin") else {}
    if names:
        known.setdefault(CONSTANT & mask(bits), []).insert(0, "Constant")
    if settings.constant:  # (the learner's intercept, column 0: VW's constant)
        slots, columns = np.r_[CONSTANT & mask(bits), slots], np.r_[0, columns]
    order = np.argsort(slots, kind="stable")
    slots, columns = slots[order], columns[order]
    lines = ["regcb-stream readable model", f"bits {bits}",
             f"oracle {learner.oracle_in_use}"]
    for model, offset, weights in _weights(learner.model.oracle, columns):
        lines.append(f"model {model} offset {offset + 0.0:.6g}")
        for slot, weight in zip(slots.tolist(), (weights + 0.0).tolist()):
            if weight == 0:  # (as VW, which writes the weights that are not 0)
                continue
            lines += [f"{name}:{slot}:{weight:.6g}" for name in known.get(slot, ())] or [
                f"{slot}:{weight:.6g}"]
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")


def _slot_columns(state: dict, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The slots seen and their columns, from the encoder's slot table (its state)."""
    if state["table"] is not None:
        table = np.asarray(state["table"])
        slots = np.flatnonzero(table >= 0)
        return slots, table[slots]
    pairs = sorted(state["dict"].items())
    return (np.array([s for s, _ in pairs], np.int64),
            np.array([c for _, c in pairs], np.int64))


def _weights(oracle, columns: np.ndarray):
    """``(model, offset, weights)`` per model: the cost predictions of the empty row and
    of each column's unit row, the offset taken off."""
    n_models = oracle.n_models
    if not n_models or not len(columns):
        return
    n = len(columns)
    dim = int(columns.max()) + 1
    units = SparseRows(columns.reshape(n, 1, 1), np.ones((n, 1, 1)), dim)
    empty = SparseRows(np.zeros((1, 1, 1), np.intp), np.zeros((1, 1, 1)), dim)
    for model in range(n_models):
        which = np.array([model])
        offset = -float(oracle.predict(empty, which)[0, 0])
        yield model, offset, -oracle.predict(units, which)[:, 0] - offset


def _names(data: str, settings) -> dict[int, list[str]]:
    """Slot -> the feature names (VW's audit names) of the ``-d`` files that hash to it."""
    bits_mask = mask(settings.hash_bits)
    filters = settings.filters and Namespaces(*settings.filters)
    found: dict[int, list[str]] = {}
    with contextlib.ExitStack() as stack:
        for rows in _rows(shell.open_input(stack, data), settings, filters):
            for named, hashed in rows:
                if len(named) != len(hashed):  # (hashes that met in one row: unnamed)
                    continue
                for name, key in zip(named, hashed):
                    known = found.setdefault(key & bits_mask, [])
                    if name not in known:
                        known.append(name)
    return found


def _rows(lines: Iterable[str], settings, filters) -> Iterable[list[tuple[dict, dict]]]:
    """Each example's rows, keyed by names and by hashes (`flatten`'s two key schemes)."""
    def skip(error):  # (a bad example was reported by the run)
        return None

    crosses = settings.interactions
    if settings.adf:
        if settings.dsjson:
            from regcb_stream.io.dsjson import iter_dsjson_adf as examples
        else:
            from regcb_stream.io.vw_text import iter_adf as examples
        for example in examples(lines, skip):
            if hasattr(example, "actions"):
                yield list(zip(*(flatten_adf(example.shared, example.actions, crosses, False,
                                             keys, filters=filters)
                                 for keys in (None, HashKeys()))))
        return
    from regcb_stream.io.vw_text import iter_cb

    for example in iter_cb(lines, settings.n_actions, skip):
        yield [tuple(flatten(example.features, crosses, False, keys, filters=filters)
                     for keys in (None, HashKeys()))]
