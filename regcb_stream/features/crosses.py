"""The joint class's rows with VW's hashes and crosses (``hash_bits`` with ``cross``).

A (context, action) row holds the context's features, the action's own and every cross of
the two, keyed as VW keys them: a name's hash (`name_hash`) and a cross's
``hash(s) * FNV_PRIME ^ hash(a)``. The keys of a context with its actions (the context's,
then each action's own and crosses, context-major) become columns in one pass of the
encoder's `regcb_stream.features.slot_columns.SlotColumns`, so new slots are numbered as
one row at a time would number them.
`hashed_items` gives the rows as lists; `joint_block` the same rows as arrays for many
contexts at once, when every action has as many features (`layout_rows`: one round's,
`hashed_rounds`: a block of rounds').

>>> from regcb_stream.features.slot_columns import SlotColumns
>>> rows, fresh = hashed_items(SlotColumns(bits=8), 1, ["u"], [2.0], [(["a"], [1.0])])
>>> len(rows[0][0]), rows[0][1], fresh
(3, [2.0, 1.0, 2.0], 3)
"""

from __future__ import annotations

import functools
import math

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
    """One round's joint rows (its contexts' and actions' checked keys and values, by
    `joint_block`), ``(len(contexts) K, L)`` with the intercept as column 0, its new keys
    numbered by ``register(keys) -> columns``, when every action has as many features and
    every value is a Python float; else None (nothing numbered)."""
    values = [v for _, part in (*contexts, *own) for v in part]
    if not own or len({len(keys) for keys, _ in own}) > 1 or not {
            type(v) for v in values} <= {float}:
        return None
    index, value = joint_block(register, [(keys, part, 0) for keys, part in contexts],
                               [_pool(own)])
    index, value = (a.reshape(-1, a.shape[-1]) for a in (index, value))
    lead = (len(index), 1)
    return (np.hstack([np.zeros(lead, np.intp), index]),
            np.hstack([np.full(lead, intercept), value]))


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
