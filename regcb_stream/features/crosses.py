"""The joint class's rows with VW's hashes and crosses (``hash_bits`` with ``cross``).

A (context, action) row holds the context's features, the action's own and every cross of
the two, keyed as VW keys them: a name's hash (`name_hash`) and a cross's
``hash(s) * FNV_PRIME ^ hash(a)``. The keys of a context with its actions (the context's,
then each action's own and crosses, context-major) become columns in one pass of the
encoder's `regcb_stream.features.slot_columns.SlotColumns`, so new slots are numbered as
one row at a time would number them.
`hashed_items` gives the rows as lists; when every action has as many features,
`layout_rows` gives one round's as arrays, by a layout of its features' names (cached: a
stream's rounds repeat their names), and `joint_block` those of many contexts at once
(`hashed_rounds`: a block of rounds', whether their names repeat or not).

>>> from regcb_stream.features.slot_columns import SlotColumns
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
    return Layout(whole.keys, *(a.reshape(a.shape[0] * a.shape[1], a.shape[-1])
                                for a in whole[1:]))  # (L may be 0)


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


def joint_block(register, contexts: list[tuple], pools: list[tuple[np.ndarray, np.ndarray]]
                ) -> tuple[np.ndarray, np.ndarray]:
    """The joint rows of contexts, each ``(keys, values, pool)``, with every action of its
    pool (``pools[pool]``: the actions' key hashes and values, ``(K, m)`` each, every pool
    with as many actions), ``(contexts, K, L)``, no intercept: a row holds the context's
    entries, the action's own, then the crosses (context-major), padded with column 0 and
    value 0. Every key is numbered by one ``register(keys) -> columns`` in the order one
    context at a time numbers them (`hashed_items`' order), and the rows are built for all
    the contexts with as many features and one pool at once.

    >>> from regcb_stream.features.slot_columns import SlotColumns
    >>> slots = SlotColumns(bits=8)
    >>> pool = (np.array([[name_hash("a")], [name_hash("b")]], np.uint64), np.ones((2, 1)))
    >>> index, value = joint_block(lambda keys: slots(keys, 1)[0], [(["u"], [2.0], 0)], [pool])
    >>> index.tolist(), value.tolist()
    ([[[1, 2, 3], [1, 4, 5]]], [[[2.0, 1.0, 2.0], [2.0, 1.0, 2.0]]])
    """
    k = len(pools[0][0])
    distinct: dict[tuple, int] = {}  # (names, pool) -> its number, in order of appearance
    of = np.array([distinct.setdefault((tuple(names), pool), len(distinct))
                   for names, _, pool in contexts], np.intp)
    kinds = _numbered(register, list(distinct), pools, k)
    width = max(s + pools[pool][0].shape[1] * (1 + s) for s, pool in kinds)
    index = np.zeros((len(contexts), k, width), np.intp)
    value = np.zeros(index.shape)
    for (s, pool), (members, columns) in kinds.items():
        own_values, m = pools[pool][1], pools[pool][1].shape[1]
        at = np.full(len(distinct), -1)  # each distinct context's place among members
        at[members] = np.arange(len(members))
        rows = np.flatnonzero(at[of] >= 0)
        columns, n, end = columns[at[of[rows]]], len(rows), s + m * (1 + s)
        shared = np.array([contexts[c][1] for c in rows.tolist()], float).reshape(n, 1, s)
        index[rows, :, :end] = np.concatenate(
            [np.broadcast_to(columns[:, None, :s], (n, k, s)),
             columns[:, s:].reshape(n, k, m * (1 + s))], axis=2)
        value[rows, :, :end] = np.concatenate(
            [np.broadcast_to(shared, (n, k, s)), np.broadcast_to(own_values, (n, k, m)),
             (shared[..., None] * own_values[:, None, :]).reshape(n, k, s * m)], axis=2)
    return index, value


def _numbered(register, distinct: list[tuple], pools: list, k: int) -> dict:
    """The columns of the keys of distinct contexts ``(names, pool)``, by kind ``(number
    of names, pool)``: the kind's contexts (positions in ``distinct``) and their keys'
    columns, a row each (the context's keys, then each action's own and crosses); the
    keys numbered by one ``register`` in the order of ``distinct`` (a repeated context
    would number nothing new)."""
    kinds: dict[tuple[int, int], list[int]] = {}
    for d, (names, pool) in enumerate(distinct):
        kinds.setdefault((len(names), pool), []).append(d)
    widths = [len(names) + k * pools[pool][0].shape[1] * (1 + len(names))
              for names, pool in distinct]
    offsets = np.cumsum([0, *widths])
    keys = np.empty(offsets[-1], np.uint64)
    for (s, pool), members in kinds.items():
        own, m, n = pools[pool][0], pools[pool][0].shape[1], len(members)
        shared = np.array([_hashes(distinct[d][0]) for d in members], np.uint64).reshape(n, s)
        crosses = (shared[:, None, :, None] * _FNV ^ own[None, :, None, :]).reshape(n, k, s * m)
        keys[_places(members, offsets, widths[members[0]])] = np.concatenate([shared, (
            np.concatenate([np.broadcast_to(own, (n, k, m)), crosses], axis=2).reshape(
                n, -1))], axis=1).ravel()
    columns = register(keys)
    return {kind: (members, columns[_places(members, offsets, widths[members[0]])].reshape(
        len(members), -1)) for kind, members in kinds.items()}


@functools.lru_cache(maxsize=1 << 12)  # (a stream's contexts repeat their names)
def _hashes(names: tuple) -> tuple[int, ...]:
    """The `name_hash` of each name."""
    return tuple(map(name_hash, names))


def _places(members: list[int], offsets: np.ndarray, width: int):
    """Where the keys of contexts ``members`` (``width`` each) are among all the contexts'
    (``offsets``: where each one's start): a slice when they are consecutive."""
    if members[-1] - members[0] + 1 == len(members):
        return slice(int(offsets[members[0]]), int(offsets[members[0]]) + len(members) * width)
    return (offsets[members][:, None] + np.arange(width)).ravel()


def _pool(own: list) -> tuple[np.ndarray, np.ndarray]:
    """A pool's key hashes and values ``(K, m)`` from its actions' checked keys and values
    (as many of each)."""
    k, m = len(own), len(own[0][0])
    return (np.array([[name_hash(key) for key in keys] for keys, _ in own],
                     np.uint64).reshape(k, m),
            np.array([values for _, values in own], float).reshape(k, m))


def hashed_rounds(register, rows_of, rounds) -> tuple[np.ndarray, np.ndarray]:
    """The joint rows of rounds, each ``(contexts, actions)`` (dicts, every round with as
    many actions), without the intercept, ``(contexts of every round, K, L)``: the rounds
    whose values are all finite Python floats and whose actions have as many features
    each by `joint_block` (their keys numbered by ``register(keys) -> columns``), any
    other (every one without ``register``) by ``rows_of(contexts, actions)`` (the
    encoder's `joint_rows`, intercept first), in turn, so that keys are numbered as one
    round at a time would number them."""
    parts, run, pools, pool_of = [], [], [], {}

    def close_run() -> None:
        if run:
            parts.append(joint_block(register, run, pools))
            run.clear()

    for contexts, actions in rounds:
        pool = pool_of.get(key := tuple(map(id, actions)))  # (the dicts live while this runs)
        if pool is None:
            own = [(tuple(action), list(action.values())) for action in actions]
            fits = len({len(keys) for keys, _ in own}) == 1 and _floats(
                [v for _, values in own for v in values])
            pool_of[key] = pool = len(pools) if fits else -1
            if fits:
                pools.append(_pool(own))
        if register is None or pool < 0 or not _floats(
                [v for context in contexts for v in context.values()]):
            close_run()
            index, value = rows_of(contexts, actions)
            k = len(actions)
            parts.append((index[:, 1:].reshape(len(contexts), k, -1),
                          value[:, 1:].reshape(len(contexts), k, -1)))
            continue
        run += [(tuple(context), list(context.values()), pool) for context in contexts]
    close_run()
    if len(parts) == 1:
        return parts[0]
    width = max(index.shape[-1] for index, _ in parts)
    index = np.concatenate([np.pad(index, ((0, 0), (0, 0), (0, width - index.shape[-1])))
                            for index, _ in parts])
    value = np.concatenate([np.pad(value, ((0, 0), (0, 0), (0, width - value.shape[-1])))
                            for _, value in parts])
    return index, value


def _floats(values: list) -> bool:
    """Whether every value is a finite Python float."""
    return {type(v) for v in values} <= {float} and math.isfinite(math.fsum(values))
