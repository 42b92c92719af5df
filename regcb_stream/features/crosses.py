"""The joint class's rows with VW's hashes and crosses (``hash_bits`` with ``cross``).

A (context, action) row holds the context's features, the action's own and every cross of
the two, keyed as VW keys them: a name's hash (`name_hash`) and a cross's
``hash(s) * FNV_PRIME ^ hash(a)``. The keys of a context with its actions (the context's,
then each action's own and crosses, context-major) become columns in one pass of the
encoder's `SlotColumns`, so new slots are numbered as one row at a time would number them.
`hashed_items` gives the rows as lists; `layout_rows` and `hashed_rounds` the same rows as
arrays, by a layout of the features' names, when every action has as many features.

>>> from regcb_stream.features.encoder import SlotColumns
>>> rows, fresh = hashed_items(SlotColumns(bits=8), 1, ["u"], [2.0], [(["a"], [1.0])])
>>> len(rows[0][0]), rows[0][1], fresh
(3, [2.0, 1.0, 2.0], 3)
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from regcb_stream.io.hashing import FNV_PRIME, feature_hash

_FNV = np.uint64(FNV_PRIME)


@functools.lru_cache(maxsize=1 << 16)  # (names repeat: murmur in Python costs ~10 us)
def name_hash(key) -> int:
    """VW's hash of a feature named ``key`` in the default namespace: a name of digits
    hashes to its number, so an int key (a slot, from ``iter_vw(hash_bits=...)``) stays
    itself."""
    if isinstance(key, (int, np.integer)) and 0 <= key < 2**32:
        return int(key)
    return feature_hash(0, str(key))


def hashed_items(slots, first: int, shared_keys: list, shared_values: list, own: list
                 ) -> tuple[list[tuple[list, list]], int]:
    """The (columns, values) of each row of a context (its keys and values) with each
    action (``own``: its checked keys and values), no intercept; new slots numbered from
    ``first``. Returns the rows and how many slots are new."""
    shared = np.array([name_hash(k) for k in shared_keys], np.uint64)
    parts, values = [shared], []
    for keys, own_values in own:
        hashes = np.array([name_hash(k) for k in keys], np.uint64)
        parts += [hashes, (shared[:, None] * _FNV ^ hashes).ravel()]
        values.append(shared_values + own_values
                      + [sv * av for sv in shared_values for av in own_values])
    columns, fresh = slots(np.concatenate(parts), first)
    columns = columns.tolist()
    head, at, rows = columns[:len(shared)], len(shared), []
    for part, value in zip(range(1, len(parts), 2), values):
        width = len(parts[part]) + len(parts[part + 1])
        rows.append((head + columns[at:at + width], value))
        at += width
    return rows, fresh


def layout_rows(register, contexts: list, own: list, intercept: float
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """One round's joint rows by its names' `layout` (its contexts' and actions' checked
    keys and values), ``(len(contexts) K, L)`` with the intercept as column 0, its new keys
    numbered by ``register(keys) -> columns``, when every action has as many features and
    every value is a Python float; else None (nothing numbered)."""
    values = [v for _, part in (*contexts, *own) for v in part]
    if not own or len({len(keys) for keys, _ in own}) > 1 or not {
            type(v) for v in values} <= {float}:
        return None
    shape = layout(tuple(tuple(keys) for keys, _ in contexts),
                   tuple(tuple(keys) for keys, _ in own))
    u = np.array([1.0, 0.0, *values])
    index = np.append(register(shape.keys), 0)[shape.where]
    lead = (len(index), 1)
    return (np.hstack([np.zeros(lead, np.intp), index]),
            np.hstack([np.full(lead, intercept), u[shape.left] * u[shape.right]]))


class Layout(NamedTuple):
    """Where the joint rows of a round (contexts, each with every action of a pool) take
    their keys and values from, given only the features' names: the round's keys in the
    order they are registered (`hashed_items`' order), and for each entry of each row
    ``(contexts K, L)``, no intercept, its key's position (``-1``: padding) and the two
    positions in the round's values ``u`` whose product it is, ``u = [1, 0, each
    context's values, each action's]`` (a single value times ``u[0]``; padding ``u[1]``)."""

    keys: np.ndarray
    where: np.ndarray
    left: np.ndarray
    right: np.ndarray


@functools.lru_cache(maxsize=1 << 8)  # (a stream's rounds repeat their names)
def layout(contexts: tuple[tuple, ...], actions: tuple[tuple, ...]) -> Layout:
    """The `Layout` of a round whose contexts and actions (as many features each) have
    these feature names."""
    k, m = len(actions), len(actions[0])
    own = np.array([[name_hash(key) for key in keys] for keys in actions],
                    np.uint64).reshape(k, m)
    widths = {len(keys) for keys in contexts}
    if len(widths) > 1:  # one layout per context, stacked
        parts = [_context_layout(keys, own, 2 + sum(map(len, contexts[:c])),
                                 2 + sum(map(len, contexts)))
                 for c, keys in enumerate(contexts)]
        offsets = np.cumsum([0] + [len(part.keys) for part in parts])
        width = max(part.where.shape[-1] for part in parts)
        out = np.full((3, len(contexts), k, width), -1, np.intp)
        out[1], out[2] = 1, 0  # (padding: u[1] * u[0] = 0)
        for c, (part, offset) in enumerate(zip(parts, offsets)):
            w = part.where.shape[-1]
            out[0, c, :, :w] = part.where + offset
            out[1, c, :, :w], out[2, c, :, :w] = part.left, part.right
        return Layout(np.concatenate([part.keys for part in parts]),
                      *out.reshape(3, len(contexts) * k, width))
    keys = np.array([[name_hash(key) for key in names] for names in contexts], np.uint64)
    whole = _context_layout(keys, own, 2 + keys.shape[1] * np.arange(len(contexts)),
                            2 + keys.size)
    return Layout(whole.keys, *(a.reshape(-1, a.shape[-1]) for a in whole[1:]))


def _context_layout(shared, own: np.ndarray, start, actions_start: int) -> Layout:
    """The `Layout` of contexts with as many features each (their hashes ``shared``, ``(C,
    s)``; or one context's names) and the actions' hashes ``own`` ``(K, m)``, the
    contexts' values from ``start`` in ``u`` (one per context), the actions' from
    ``actions_start``: arrays ``(C, K, L)`` (``(K, L)`` for one context's names)."""
    one = not isinstance(shared, np.ndarray)
    if one:
        shared = np.array([[name_hash(key) for key in shared]], np.uint64).reshape(1, -1)
    (n, s), (k, m) = shared.shape, own.shape
    block = s + k * m * (1 + s)  # each context's keys: its own, then each action's
    crosses = (shared[:, None, :, None] * _FNV ^ own[None, :, None, :]).reshape(n, k, s * m)
    keys = np.concatenate([shared, np.concatenate(
        [np.broadcast_to(own, (n, k, m)), crosses], axis=2).reshape(n, -1)], axis=1)
    first = block * np.arange(n)[:, None, None]
    where = np.concatenate([np.broadcast_to(first + np.arange(s), (n, k, s)),
                            first + s + np.arange(k * m * (1 + s)).reshape(k, -1)], axis=2)
    sv = np.broadcast_to(np.asarray(start).reshape(-1, 1, 1) + np.arange(s), (n, k, s))
    av = np.broadcast_to(actions_start + np.arange(k * m).reshape(k, m), (n, k, m))
    left = np.concatenate([sv, av, np.repeat(sv, m, axis=2)], axis=2)
    right = np.concatenate([np.zeros((n, k, s + m), np.intp), np.tile(av, (1, 1, s))],
                           axis=2)
    layout_ = Layout(keys.ravel(), where, left, right)
    return Layout(layout_.keys, *(a[0] for a in layout_[1:])) if one else layout_


def hashed_rounds(register, rows_of, rounds) -> tuple[np.ndarray, np.ndarray]:
    """The joint rows of rounds, each ``(contexts, actions)`` (dicts, every round with as
    many actions), without the intercept, ``(contexts of every round, K, L)``: a round
    whose values are all finite Python floats by its names' `layout` (its keys numbered by
    ``register(keys) -> columns``, its values one product per entry, vectorized over the
    rounds of one layout), any other (every one without ``register``) by
    ``rows_of(contexts, actions)`` (the encoder's `joint_rows`, intercept first), each in
    turn, so that keys are numbered as one round at a time would number them."""
    parts, numbered, pools = [], {}, {}
    for contexts, actions in rounds:
        pool = pools.get(key := tuple(map(id, actions)))  # (the dicts live while this runs)
        if pool is None:
            values = [v for action in actions for v in action.values()]
            pools[key] = pool = (tuple(map(tuple, actions)), values, _floats(values))
        values = [v for context in contexts for v in context.values()]
        if register is None or not (pool[2] and _floats(values)) or len(
                set(map(len, actions))) > 1:
            index, value = rows_of(contexts, actions)
            parts.append((index[:, 1:], value[:, 1:], len(contexts)))
            continue
        values += pool[1]
        names = tuple(map(tuple, contexts)), pool[0]
        if names not in numbered:  # its layout, and its keys' columns (-1: padding, 0)
            shape = layout(*names)
            numbered[names] = shape, np.append(register(shape.keys), 0)
        parts.append((names, values, len(contexts)))
    k = len(rounds[0][1])
    width = max(p[0].shape[-1] if isinstance(p[0], np.ndarray) else
                numbered[p[0]][0].where.shape[1] for p in parts)
    rows = np.cumsum([0] + [p[2] for p in parts])
    index = np.zeros((rows[-1], k, width), np.intp)
    value = np.zeros(index.shape)
    groups: dict[tuple, list[int]] = {}
    for r, part in enumerate(parts):
        if isinstance(part[0], np.ndarray):
            index[rows[r]:rows[r + 1], :, :part[0].shape[1]] = part[0].reshape(part[2], k, -1)
            value[rows[r]:rows[r + 1], :, :part[1].shape[1]] = part[1].reshape(part[2], k, -1)
        else:
            groups.setdefault(part[0], []).append(r)
    for names, members in groups.items():
        shape, columns = numbered[names]
        s, w = len(names[0]), shape.where.shape[1]
        u = np.array([[1.0, 0.0, *parts[r][1]] for r in members])
        at = (rows[members][:, None] + np.arange(s)).ravel()
        index[at, :, :w] = np.tile(columns[shape.where].reshape(s, k, w), (len(members), 1, 1))
        value[at, :, :w] = (u[:, shape.left] * u[:, shape.right]).reshape(-1, k, w)
    return index, value


def _floats(values: list) -> bool:
    """Whether every value is a finite Python float."""
    return {type(v) for v in values} <= {float} and math.isfinite(math.fsum(values))
