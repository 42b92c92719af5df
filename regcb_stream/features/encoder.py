"""Contexts and actions -> feature arrays for the oracle.

A context is a 1-D sequence / numpy array of numbers (dense, fixed length) or a dict of
feature name -> number (sparse; names are indexed as they appear). Every encoded vector
starts with a constant 1 (the intercept, 0 with ``intercept=False``), as the paper's
dimensions count a bias column.

Actions are either labels (the product class: one model per action) or dicts of action
features (the joint class: one model over the concatenation of context features, action
features and, with ``cross=True``, their products, like VW's ``-q sa``).

With ``hash_bits``, feature names are hashed as VW hashes them (``-b hash_bits``: a name as a
feature of the default namespace, a cross as VW's ``-q`` cross), so memory stays bounded
however many names a stream has; names that share a slot share a column (their values add
up, as in VW). Columns are numbered in order of first appearance either way.

>>> encoder = FeatureEncoder()
>>> encoder.context([0.5, 2.0])
array([1. , 0.5, 2. ])
>>> encoder.context([1.0, float("nan")])
Traceback (most recent call last):
...
ValueError: context feature 1 is nan: features must be finite numbers

"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from regcb_stream.features.crosses import hashed_items, hashed_rounds, layout_rows, name_hash
from regcb_stream.features.slot_columns import SlotColumns
from regcb_stream.io.hashing import cross_hash
from regcb_stream.state import Stateful

try:
    from regcb_stream.features import _features  # (a named dense context's values)
except ImportError:  # not built: Python's
    _features = None


@dataclass(frozen=True)
class EncodedRows:
    """Feature rows already encoded as columns of a learner's encoder (``RegCB.encoder``),
    without the intercept: padded ``index`` and ``value`` arrays of shape ``(..., L)``
    (padding has column 0 and value 0; the columns of a row are distinct). Shape ``(n,
    L)``: contexts of the product class (a row per context), or the (context, action)
    rows of one context of the joint class (a row per action); shape ``(n, K, L)``: the
    joint rows of ``n`` contexts. The command line's VW reader makes them without building
    a dict per example.

    >>> rows = EncodedRows(np.array([[1, 2], [2, 0]]), np.array([[0.5, 1.0], [3.0, 0.0]]))
    >>> len(rows), rows[[1]].value.tolist()
    (2, [[3.0, 0.0]])
    """

    index: np.ndarray
    value: np.ndarray
    #: the intercept already in each row's first entry (column 0 with this value, as
    #: `FeatureEncoder.encoded_sparse` puts it: the readers write it there at no cost),
    #: None: without it
    intercept: float | None = None

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, rows) -> EncodedRows:
        return EncodedRows(self.index[rows], self.value[rows], self.intercept)

    def carries(self, intercept: float) -> bool:
        """Whether each row's first entry is ``intercept``, in column 0."""
        return (self.intercept == intercept and not one_if_repeated(self.index)[..., 0].any()
                and bool((self.value[..., 0] == intercept).all()))

    def without_intercept(self) -> EncodedRows:
        """The rows as they are without the intercept's entry (views)."""
        if self.intercept is None:
            return self
        return EncodedRows(self.index[..., 1:], self.value[..., 1:])


class FeatureEncoder(Stateful):
    """Maps contexts (and action feature dicts) to float vectors of a growing dimension."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "cross": "cross",
        "intercept": "intercept",
        "hash_bits": "hash_bits",
        "expand": "expand",
        "slots": "_slots",
        "columns": "_index",
        "named": "_n_named",
        "dense_dim": "_dense_dim",
        "input_width": "_input_width",
        "sparse": "_sparse",
        "wave_columns": "_wave_columns",
        "waves_at": "_waves_at",
    }
    TRANSIENT = {"_expanded": None, "_wave_position": None, "_names": None}
    ADDED = {"wave_columns": None, "waves_at": None}  # (model files of before them)


    def __init__(self, cross: bool = True, intercept: bool = True, hash_bits: int | None = None,
                 expand=None):
        self.cross = cross
        self.intercept = intercept
        self.hash_bits = hash_bits
        self.expand = expand  # dense contexts -> their features (`RandomFeatures`), or None
        self._slots = None if hash_bits is None else SlotColumns(hash_bits)
        # feature key -> column, one table per kind of feature: context ("x"), action ("a"),
        # context x action ("xa"); column 0 is the intercept
        self._index: dict[str, dict] = {"x": {}, "a": {}, "xa": {}}
        self._n_named = 0
        self._dense_dim: int | None = None  # columns of the dense contexts' features
        self._input_width: int | None = None  # and the contexts' own length
        self._sparse: bool | None = None
        self._expanded = None  # (map, shape, bytes, features) of the last contexts mapped
        # named contexts with random features: the columns of the first context's names
        # (the map's input, in that order) and the first of the features' columns
        self._wave_columns: np.ndarray | None = None
        self._waves_at: int | None = None
        self._wave_position: np.ndarray | None = None  # column -> its place in the input
        self._names: tuple | None = None  # (n_named, the dense names), `vector_names`

    @property
    def dim(self) -> int:
        return 1 + (self._dense_dim or 0) + self._n_named

    @property
    def max_dim(self) -> int | None:
        """The most columns there can be (with ``hash_bits``: the intercept, every slot
        and the random features), or None."""
        if self.hash_bits is None:
            return None
        waves = 0 if self._waves_at is None else self.expand.n_features
        return 1 + (self._dense_dim or 0) + (1 << self.hash_bits) + waves

    @property
    def dense_dim(self) -> int | None:
        """The length of dense contexts, while the features are those alone (else None)."""
        return None if self._n_named else self._input_width

    @property
    def vector_width(self) -> int | None:
        """The length of the float vectors the one-row compiled calls take: the dense
        contexts', or the count of `vector_names` (else None)."""
        if self._n_named:
            names = self.vector_names()
            return None if names is None else len(names)
        return self._input_width

    def vector_names(self) -> tuple | None:
        """The names of a named context that is a dense one: while the only named columns
        are the first context's (columns 1..d, in its order) and its random features after
        them, a dict of exactly these names, in this order, is the dense vector of its
        values (`named_vector`); else None."""
        if self._names is None or self._names[0] != self._n_named:
            names = None
            columns, d = self._wave_columns, 0 if self._wave_columns is None else len(
                self._wave_columns)
            if (d and self.expand is not None and self.hash_bits is None
                    and self._dense_dim is None and self._waves_at == 1 + d
                    and self._n_named == d + self.expand.n_features
                    and (columns == np.arange(1, d + 1)).all()):
                at = {column: key for key, column in self._index["x"].items()}
                names = tuple(at[c] for c in range(1, d + 1)) if len(at) == d else None
            self._names = (self._n_named, names)
        return self._names[1]

    def named_vector(self, context: dict) -> np.ndarray | None:
        """A dict of exactly `vector_names` (in their order, every value a finite number)
        as the float vector of its values: the dense context it encodes as (the same
        row); else None (the general path, which names what is wrong)."""
        names = self.vector_names()
        return None if names is None else named_values(context, names)

    def context(self, context) -> np.ndarray:
        """Encode one context as a vector of the current dimension."""
        if type(context) is np.ndarray and context.size == self._input_width and (
                context.ndim == 1 and context.dtype == np.float64 and not self._n_named):
            out = np.empty(self.dim)  # the fast case: a float vector of the known length
            out[0] = self.intercept
            out[1:] = self.dense_values(context)
            return out
        if isinstance(context, Mapping):
            index, value = self.context_rows([context])
            out = np.zeros(self.dim)
            out[index[0, 1:]] += value[0, 1:]  # (padding: column 0, value 0)
            out[0] = self.intercept
            return out
        values = self._dense_context(context)
        out = np.empty(self.dim)
        out[0] = self.intercept
        out[1 : 1 + values.size] = values
        out[1 + values.size :] = 0.0
        return out

    def dense_values(self, context: np.ndarray) -> np.ndarray:
        """A float vector of the dense contexts' length as the columns after the intercept
        (its random features appended); a value that is not finite is named (before the
        map, whose features of it would not be finite either)."""
        if not math.isfinite(context.sum()):  # rare: find the culprit
            _check_finite(context)
        return context if self.expand is None else self.expand(context)

    def context_items(self, context) -> tuple[list[int], list[float]]:
        """One context as (columns, values) of its nonzero-able features, no intercept."""
        if isinstance(context, Mapping):
            self._set_kind(sparse=True)
            keys, values = _checked_items(context)
            return self._columns("x", keys), values
        values = self._dense_context(context)
        return list(range(1, values.size + 1)), values.tolist()

    def sparse(self, rows: list[tuple[list[int], list[float]]]) -> tuple[np.ndarray, np.ndarray]:
        """Padded ``(index, value)`` arrays of shape ``(len(rows), L)`` for (columns,
        values) rows, with the intercept as column 0."""
        width = 1 + max(len(columns) for columns, _ in rows)
        index = np.zeros((len(rows), width), dtype=np.intp)
        value = np.zeros((len(rows), width))
        value[:, 0] = self.intercept
        for i, (columns, values) in enumerate(rows):
            index[i, 1 : 1 + len(columns)] = columns
            value[i, 1 : 1 + len(values)] = values
        return index, value

    def columns(self, kind: str, keys: list) -> list[int] | np.ndarray:
        """Columns of feature keys, registering new ones: ``kind`` is ``"x"`` for context
        features, ``"a"`` for the features of (context, action) rows, and with
        ``hash_bits``, ``"h"`` for VW's hashes of either (an array or a list of ints)."""
        if kind in "xh":
            self._set_kind(sparse=True)
        return self._columns(kind, keys)

    def encoded_sparse(self, rows: EncodedRows) -> tuple[np.ndarray, np.ndarray]:
        """Padded ``(index, value)`` of encoded rows with the intercept as column 0 (a
        column this encoder has not numbered: a ``ValueError``); rows that hold it already
        as they are."""
        index = one_if_repeated(rows.index)
        if index.size and not 0 <= index.min() <= index.max() < self.dim:
            raise ValueError(f"encoded rows name columns {index.min()}.."
                             f"{index.max()}, but the encoder has numbered 0.."
                             f"{self.dim - 1}: number them with encoder.columns")
        if rows.carries(float(self.intercept)):
            return rows.index, rows.value
        rows = rows.without_intercept()  # (none, or another learner's: its own put in)
        lead = rows.index.shape[:-1] + (1,)
        index = np.concatenate([np.zeros(lead, np.intp), rows.index], axis=-1)
        value = np.concatenate([np.full(lead, float(self.intercept)), rows.value], axis=-1)
        return index, value

    def dense_contexts(self, contexts) -> np.ndarray:
        """Encode a block of dense contexts (rows of an array, or sequences), ``(n, D)``."""
        if (isinstance(contexts, np.ndarray) and contexts.ndim == 2 and not self._sparse
                and contexts.dtype.kind in "fiub"):
            self._dense_width(contexts.shape[1])
            _check_finite(contexts)
            if self.expand is not None:
                contexts = self.expanded(contexts.astype(float))
            out = np.zeros((len(contexts), self.dim))
            out[:, 0] = self.intercept
            out[:, 1 : 1 + contexts.shape[1]] = contexts
            return out
        return np.stack([self.context(c) for c in contexts])

    def expanded(self, contexts: np.ndarray) -> np.ndarray:
        """``expand`` of a float context or block, mapped once for the decision and the
        label of the same contexts (``predict`` then ``learn``, ``predict_many`` then
        ``learn_many``): the last one mapped is kept."""
        data, last = contexts.tobytes(), self._expanded
        if (last is None or last[0] is not self.expand or last[1] != contexts.shape
                or last[2] != data):
            self._expanded = last = (self.expand, contexts.shape, data,
                                     self.expand(contexts))
        return last[3]

    def context_rows(self, contexts) -> tuple[np.ndarray | None, np.ndarray]:
        """A block of contexts as rows ``(index, value)`` of shape ``(n, L)``, intercept
        included: dense contexts as ``(None, (n, D))``, dicts and ``EncodedRows`` sparse."""
        if type(contexts) is list and len(contexts) == 1 and type(contexts[0]) is np.ndarray:
            return None, self.context(contexts[0])[None]  # one dense context: the fast case
        if isinstance(contexts, EncodedRows):
            self._set_kind(sparse=True)
            return self.waves(*self.encoded_sparse(contexts))
        if not len(contexts):
            return None, np.zeros((0, self.dim))
        if (isinstance(contexts, np.ndarray) and contexts.ndim == 2) or not isinstance(
                contexts[0], Mapping):
            return None, self.dense_contexts(contexts)
        return self.waves(*self.sparse([self.context_items(c) for c in contexts]))

    def waves(self, index: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Named context rows ``(index, value)`` with the random features of ``expand``
        appended, as a dense context of the same numbers gets them (see `named_dense`): the
        map's input is the values of the first context's names, in its order (0 for a name
        a context lacks); names first seen later are linear features alone."""
        if self.expand is None:
            return index, value
        if self._waves_at is None:
            self._start_waves(index[0], value[0])
            if self.expand is None:
                return index, value
        return with_waves(index, value, self._wave_position, len(self._wave_columns),
                          self.expand, self._waves_at)

    def _start_waves(self, index: np.ndarray, value: np.ndarray) -> None:
        """At the first named context (a row, intercept included): random features over
        its names if it looks like a dense context (`named_dense`), else none."""
        named = index > 0
        columns, values = index[named], value[named]
        if not (self.expand.required or named_dense(values)):
            self._without_expansion("named features")
            return
        self._wave_columns = columns.astype(np.intp)
        self._waves_at = 1 + (self._dense_dim or 0) + self._n_named
        self._n_named += self.expand.n_features
        self.restored()

    def restored(self) -> None:
        if self._wave_columns is not None:
            columns, at = self._wave_columns, self._waves_at
            if not (isinstance(columns, np.ndarray) and columns.dtype.kind == "i"
                    and columns.ndim == 1 and (columns > 0).all() and type(at) is int
                    and 0 < at and self.expand is not None):
                raise ValueError("the random features of named contexts are damaged")
            position = np.full(int(self._wave_columns.max(initial=0)) + 1, -1, np.intp)
            position[self._wave_columns] = np.arange(len(self._wave_columns))
            self._wave_position = position

    def encoded_joint(self, actions: EncodedRows) -> tuple[np.ndarray, np.ndarray]:
        """The joint class's rows of ``EncodedRows`` actions in their shape (views kept)."""
        self._without_expansion("actions given as encoded rows (the joint class)")
        return self.encoded_sparse(actions)

    def joint_rows(self, contexts, actions, played: bool = False
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The joint class's (context, action) rows ``(index, value)``, shape ``(n K, L)``:
        of each context with every action, or (``played``) of each context with its
        action. ``actions``: dicts of action features, or ``EncodedRows``."""
        if isinstance(actions, EncodedRows):
            index, value = self.encoded_joint(actions)
            return index.reshape(-1, index.shape[-1]), value.reshape(-1, value.shape[-1])
        if self._slots is not None and self.cross and (len(contexts) == 1 or not played):
            shared = [self._shared_items(context) for context in contexts]  # (at once)
            own = [_checked_items(action) for action in actions]
            rows = layout_rows(self._register, shared, own, float(self.intercept))
            return rows if rows is not None else self.sparse([
                row for keys, values in shared
                for row in self._hashed(hashed_items, keys, values, own)])
        if played:
            items = [self.joint_items(c, [a])[0] for c, a in zip(contexts, actions)]
        else:
            items = [row for c in contexts for row in self.joint_items(c, actions)]
        return self.sparse(items)

    def joint_rounds(self, rounds) -> EncodedRows:
        """The joint rows of rounds, each ``(contexts, actions)`` (dicts; every round with
        as many actions), ``(contexts of every round, K, L)``, as `joint_rows` of each
        round in turn gives them (the same columns, numbered in the same order, the same
        values), without the intercept: with hashed crosses, many rounds at once
        (`crosses.hashed_rounds`)."""
        register = None
        if self._slots is not None and self.cross:
            self._without_expansion("actions given as feature dicts (the joint class)")
            register = self._register
        return EncodedRows(*hashed_rounds(register, self.joint_rows, rounds))

    def _register(self, keys: np.ndarray) -> np.ndarray:
        """The columns of hashed keys, new ones numbered after this encoder's."""
        return self._hashed(lambda slots, first: slots(keys, first))

    def _shared_items(self, context) -> tuple[list, list]:
        """The keys and values of a context of the joint class (a dict, or a dense
        vector's positions)."""
        self._without_expansion("actions given as feature dicts (the joint class)")
        if isinstance(context, Mapping):
            return _checked_items(context)
        shared_values = _dense_values(context).tolist()
        return list(range(len(shared_values))), shared_values

    def joint_items(self, context, actions: Sequence[Mapping]) -> list[tuple[list, list]]:
        """(columns, values) of each (context, action) pair, no intercept."""
        shared_keys, shared_values = self._shared_items(context)
        if self._slots is not None and self.cross:
            return self._hashed(hashed_items, shared_keys, shared_values,
                                [_checked_items(action) for action in actions])
        shared_columns = self._columns("x", shared_keys)
        rows = []
        for action in actions:
            keys, own = _checked_items(action)
            columns = shared_columns + self._columns("a", keys)
            values = shared_values + own
            if self.cross:
                columns += self._columns("xa", [(s, a) for s in shared_keys for a in keys])
                values += [sv * av for sv in shared_values for av in own]
            rows.append((columns, values))
        return rows

    def _hashed(self, crossing, *args):
        """``crossing(slots, first, *args)`` (`crosses.hashed_items`, or a `SlotColumns`
        call), its new slots numbered after this encoder's columns."""
        out, fresh = crossing(self._slots, self.dim, *args)
        self._n_named += fresh
        return out

    def _columns(self, kind: str, keys: list) -> list[int]:
        """Columns of feature keys of one kind, registering new keys."""
        if self._slots is not None:  # (VW's hashes: an array, for the VW readers)
            columns = self._hashed_columns(kind, keys)
            return columns if kind == "h" else columns.tolist()
        table = self._index[kind]
        try:
            return [table[key] for key in keys]
        except KeyError:
            for key in keys:
                if key not in table:
                    self._n_named += 1
                    table[key] = (self._dense_dim or 0) + self._n_named
            return [table[key] for key in keys]

    def _hashed_columns(self, kind: str, keys) -> np.ndarray:
        """Columns of keys by their VW hashes (``kind`` "h": the hashes themselves)."""
        if kind == "xa":
            hashes = [cross_hash(name_hash(s), name_hash(a)) for s, a in keys]
        elif kind != "h":
            hashes = [name_hash(key) for key in keys]
        else:
            hashes = keys
        columns, fresh = self._slots(np.asarray(hashes, dtype=np.uint64),
                                     1 + (self._dense_dim or 0) + self._n_named)
        self._n_named += fresh
        return columns

    def _dense_context(self, context) -> np.ndarray:
        self._set_kind(sparse=False)
        values = _dense_values(context)
        self._dense_width(values.size)
        return values if self.expand is None else self.expand(values)

    def _dense_width(self, width: int) -> None:
        """Check (or, first, set) the length of dense contexts."""
        self._set_kind(sparse=False)
        if self._input_width is None:
            self._input_width = width
            self._dense_dim = width + (0 if self.expand is None else self.expand.n_features)
        elif width != self._input_width:
            raise ValueError(
                f"context has {width} features, expected {self._input_width} "
                "(the length of the first context)"
            )

    def _without_expansion(self, what: str) -> None:
        """Drop the default random features, or refuse ``what`` if they were asked for."""
        if self.expand is not None:
            if (self.expand.required or self._dense_dim is not None
                    or self._waves_at is not None):
                raise ValueError(f"random features apply to dense contexts (sequences of "
                                 f"numbers) and actions given as labels, not to {what}")
            self.expand = None

    def _set_kind(self, sparse: bool) -> None:
        if self._sparse is not None and self._sparse != sparse:
            kinds = ("dense sequences", "dicts")
            raise TypeError(
                f"contexts were {kinds[self._sparse]}, got one of {kinds[sparse]}: "
                "use one kind of context per learner"
            )
        self._sparse = sparse


MAX_DENSE_NAMES = 1000  # a first context of more names is not a dense one


def with_waves(index: np.ndarray, value: np.ndarray, position: np.ndarray, d: int,
               expand, waves_at: int) -> tuple[np.ndarray, np.ndarray]:
    """Named rows ``(index, value)`` with the random features of ``expand`` appended at
    columns ``waves_at`` on: the map's input ``x`` (n, d) holds each row's values of the
    columns ``position`` places (-1: none), and those values are replaced by the map's
    (a wide context's shrink). Rows that all share the first row's columns (a stream's
    usual block, whose index may then be a broadcast view) are mapped by column."""
    columns = waves_at + np.arange(expand.n_features)
    x = np.zeros((len(index), d))
    if len(index) and (index.strides[0] == 0 or (index == index[0]).all()):
        first = index[0]
        inside = first < len(position)
        where = np.where(inside, position[np.where(inside, first, 0)], -1)
        slots = np.flatnonzero(where >= 0)
        x[:, where[slots]] = value[:, slots]
        mapped = expand(x)
        value = value.copy()
        value[:, slots] = mapped[:, where[slots]]
        index = np.broadcast_to(np.concatenate([first, columns]),
                                (len(index), len(first) + len(columns)))
        return index, np.concatenate([value, mapped[:, d:]], axis=1)
    inside = index < len(position)
    where = np.where(inside, position[np.where(inside, index, 0)], -1)
    rows, slots = np.nonzero(where >= 0)
    x[rows, where[rows, slots]] = value[rows, slots]
    mapped = expand(x)
    value = value.copy()
    value[rows, slots] = mapped[rows, where[rows, slots]]
    return (np.concatenate([index, np.broadcast_to(columns, (len(index), len(columns)))],
                           axis=1),
            np.concatenate([value, mapped[:, d:]], axis=1))


def named_dense(values: np.ndarray) -> bool:
    """Whether a first named context whose values are ``values`` is taken for a dense
    context (a vector whose coordinates have names), whose random features apply: at most
    `MAX_DENSE_NAMES` names, and some value other than 1 (names whose values are all 1 are
    indicators: words, one-hot categories, which keep the linear model).

    >>> named_dense(np.array([0.25, -1.5, 1.0])), named_dense(np.array([1.0, 1.0]))
    (True, False)
    """
    return 0 < len(values) <= MAX_DENSE_NAMES and bool((values != 1).any())


def named_values(context: dict, names: tuple) -> np.ndarray | None:
    """The float vector of a dict whose keys are ``names``, in their order, and whose
    values are finite numbers; else None (`FeatureEncoder.named_vector`).

    >>> named_values({"a": 1, "b": 0.5}, ("a", "b")).tolist(), named_values({"b": 1}, ("a",))
    ([1.0, 0.5], None)
    """
    if len(context) != len(names):
        return None
    if _features is not None:  # (str names; floats, ints, bools: at once)
        vector = np.empty(len(names))
        if (taken := _features.dict_values(context, names, vector)) is not None:
            return vector if taken else None
    if tuple(context) != names:
        return None
    values = list(context.values())
    try:
        if not math.isfinite(math.fsum(values)):
            return None
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None


def _dense_values(context) -> np.ndarray:
    try:
        values = np.asarray(context, dtype=float)
    except (TypeError, ValueError) as error:
        raise TypeError(f"context must be numbers or a dict of numbers: {error}") from None
    if values.ndim != 1:
        raise ValueError(f"a dense context must be 1-D, got shape {values.shape}")
    _check_finite(values)
    return values


def one_if_repeated(array: np.ndarray) -> np.ndarray:
    """``array`` without its first axis' repeats: the first entry alone when the axis is
    a broadcast (stride 0) of it."""
    return array[:1] if array.ndim and len(array) > 1 and array.strides[0] == 0 else array


def _check_finite(values: np.ndarray) -> None:
    if not np.isfinite(values).all():
        where = np.argwhere(~np.isfinite(values))[0]
        name = int(where[-1])
        raise ValueError(
            f"context feature {name} is {values[tuple(where)]}: features must be finite numbers"
        )


def _checked_items(features: Mapping) -> tuple[list, list[float]]:
    """Keys and values of a feature dict, or an error naming the first bad value."""
    values = list(features.values())
    try:
        if math.isfinite(math.fsum(values)):  # fast path: every value a finite number
            return list(features), values
    except (TypeError, ValueError, OverflowError):
        pass
    for name, value in features.items():
        if not isinstance(value, (int, float, np.number)):
            raise TypeError(f"feature {name!r} has value {value!r}: features must be numbers")
        if not math.isfinite(value):
            raise ValueError(f"feature {name!r} is {value}: features must be finite numbers")
    return list(features), [float(v) for v in values]
