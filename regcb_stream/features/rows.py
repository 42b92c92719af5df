"""Feature rows, the learner's one representation of a block, and the actions behind them.

A block of decisions is ``SparseRows`` of shape ``(n, K, L)`` with a model id per action
column; a block of labels is ``(n, 1, L)`` with the model of each played action. Actions
are labels (the product class: one model per action, each label a model id of its own, in
order of first appearance) or dicts of action features (the joint class: one model, id 0).
`Rows` makes both from contexts and actions, through the learner's `FeatureEncoder` and
its `ActionRegistry`.

>>> rows = Rows(FeatureEncoder())
>>> block = rows.decisions([[0.5, 1.0]], ["a", "b"])
>>> block.rows.shape, block.models.tolist(), rows.kind
((1, 2, 3), [0, 1], 'labels')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from regcb_stream.features.encoder import EncodedRows, FeatureEncoder
from regcb_stream.state import Stateful


class SparseRows(NamedTuple):
    """Feature rows: padded ``index`` and ``value`` arrays of shape ``(n, R, L)`` (padding
    has value 0), or ``index`` None for dense rows (``L = D``, every column in order).
    ``R`` is the actions' rows (K for the joint class; the product class's K actions share
    one context row, a broadcast view of stride 0) or 1 for learned rows.

    >>> rows = SparseRows(np.array([[[2, 0]]]), np.array([[[0.5, 1.0]]]), dim=3)
    >>> rows.dense().tolist(), rows.shape
    ([[[1.0, 0.0, 0.5]]], (1, 1, 3))
    """

    index: np.ndarray | None
    value: np.ndarray
    dim: int

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.value.shape[0], self.value.shape[1], self.dim

    def __len__(self) -> int:
        return len(self.value)

    def take(self, rows) -> SparseRows:
        """The rows at ``rows`` (a slice or indices) of the first axis."""
        index = None if self.index is None else self.index[rows]
        return SparseRows(index, self.value[rows], self.dim)

    def dense(self) -> np.ndarray:
        """The rows as a dense ``(n, R, D)`` array (a broadcast view stays one)."""
        n, r, width = self.value.shape
        shared = r > 1 and self.value.strides[1] == 0
        value = self.value[:, :1] if shared else self.value
        out = np.zeros(value.shape[:2] + (self.dim,))
        if self.index is None:
            out[..., :width] = value
        else:
            index = self.index[:, :1] if shared else self.index
            np.add.at(out, (np.arange(len(out))[:, None, None],
                            np.arange(out.shape[1])[:, None], index), value)
        return np.broadcast_to(out, (n, r, self.dim)) if shared else out

    def explicit(self) -> SparseRows:
        """The rows with their columns given (dense rows: every column)."""
        if self.index is not None:
            return self
        return SparseRows(np.broadcast_to(np.arange(self.value.shape[2]), self.value.shape),
                          self.value, self.dim)

    def pairs(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The nonzero ``(index, value)`` of each row of rows ``(n, 1, L)``."""
        rows = self.explicit()
        return [(index[value != 0], value[value != 0])
                for index, value in zip(rows.index[:, 0], rows.value[:, 0])]

    def example(self):
        """The first row of rows ``(n, 1, L)`` as an oracle's ``learn`` takes it: its
        values (dense) or an ``(index, value)`` pair."""
        return self.value[0, 0] if self.index is None else (self.index[0, 0],
                                                            self.value[0, 0])


class Block(NamedTuple):
    """Rows and the model id of each column: ``(n, K, L)`` and ``(K,)`` for decisions,
    ``(n, 1, L)`` and ``(n,)`` (the played actions') for labels."""

    rows: SparseRows
    models: np.ndarray

    def take(self, rows) -> Block:
        return Block(self.rows.take(rows), self.models)


class ActionRegistry(Stateful):
    """The actions a learner has been offered: labels numbered as models in order of
    first appearance, or (the joint class) dicts of action features, one model.

    >>> registry = ActionRegistry()
    >>> registry.offered(["b", "a"]).tolist(), registry.offered(["a", "c"]).tolist()
    ([0, 1], [1, 2])
    >>> registry.played(["c", "b"]).tolist(), registry.n_models
    ([2, 0], 3)
    """

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "labels": "labels",
        "joint": "joint",
    }
    TRANSIENT = {"_ids_of": {}, "_types": frozenset()}

    def __init__(self):
        self.labels: dict = {}  # action label -> model id
        self.joint: bool | None = None  # whether actions are dicts (None: none seen yet)
        self._ids_of: dict[tuple, np.ndarray] = {}  # offered list -> model ids (a cache)
        self._types: frozenset = frozenset()  # types of the labels seen

    @property
    def n_models(self) -> int:
        return len(self.labels)

    def is_joint(self, actions: Sequence) -> bool:
        """Whether ``actions`` are dicts of action features (or encoded rows of them), the
        kind every later list must have too."""
        if len(actions) == 0:
            raise ValueError("no actions offered")
        if isinstance(actions, EncodedRows):
            joint = True
        else:
            types = set(map(type, actions))
            if types <= self._types:  # the usual case, checked before
                return False
            kinds = {issubclass(kind, Mapping) for kind in types}
            if not all(issubclass(kind, (Mapping, Hashable)) for kind in types):
                raise TypeError(f"actions must be hashable labels (str, int, ...) or dicts of "
                                f"action features; got {list(actions)!r:.80}")
            if len(kinds) > 1:
                raise TypeError("actions must be all labels or all dicts of action features")
            joint = kinds.pop()
        if self.joint is None:
            self.joint = joint
        elif self.joint != joint:
            kinds = ("labels", "dicts of action features")
            raise TypeError(f"actions were {kinds[self.joint]}, got {kinds[joint]}")
        if not joint and not isinstance(actions, EncodedRows):
            self._types = self._types | types
        return joint

    def known(self, actions: Sequence) -> np.ndarray | None:
        """Model ids of labels (None for dicts of action features): a list offered before
        skips the checks of `is_joint`."""
        try:
            ids = self._ids_of.get(tuple(actions))
        except TypeError:  # (unhashable: dicts of action features)
            ids = None
        if ids is not None or self.is_joint(actions):
            return ids
        return self.offered(actions)

    def offered(self, actions: Sequence) -> np.ndarray:
        """Model ids of an offered list of distinct labels (read-only, cached); new labels
        get new models."""
        key = tuple(actions)
        ids = self._ids_of.get(key)
        if ids is None:
            if len(self._ids_of) > 1024:
                self._ids_of.clear()
            ids = self._register(actions).astype(np.int64)
            ids.flags.writeable = False
            self._ids_of[key] = ids
        return ids

    def played(self, actions: Sequence, register: bool = False) -> np.ndarray:
        """Model ids of played labels, each offered before (``register``: new ones get
        models, for a learner that learns what another decided)."""
        labels = self.labels
        try:
            unknown = [a for a in actions if a not in labels]
        except TypeError:  # (unhashable)
            raise TypeError(f"played actions must be labels (or, each, a dict of action "
                            f"features); got {list(actions)!r:.80}") from None
        if unknown and register:
            self._register(list(dict.fromkeys(unknown)))
        elif unknown:
            action = unknown[0].item() if isinstance(unknown[0], np.generic) else unknown[0]
            hint = ("; learn takes the played action itself (predict_many's index i is "
                    "actions[i])" if isinstance(action, int) else "")
            raise ValueError(f"action {action!r} was never offered to this learner{hint}")
        return np.fromiter((labels[a] for a in actions), dtype=np.intp, count=len(actions))

    def _register(self, actions: Sequence) -> np.ndarray:
        labels = self.labels
        if len(set(actions)) != len(actions):
            raise ValueError(f"actions must be distinct, got {list(actions)!r}")
        for action in actions:
            labels.setdefault(action, len(labels))
        return np.fromiter((labels[a] for a in actions), dtype=np.intp, count=len(actions))


class Rows(Stateful):
    """Contexts and actions as `Block` s of rows, through ``encoder`` and the actions'
    registry; ``kind`` says what the first block showed (None before it): ``"labels"``,
    or for dicts of action features ``"own features"`` (some action's row has a feature
    no other action's has: VW's ``-q sa`` crosses of an action's indicator) or ``"shared
    features"`` (every feature shared: a ranking)."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "encoder": "encoder",
        "actions": "actions",
        "register_played": "register_played",
        "kind": "kind",
    }

    def __init__(self, encoder: FeatureEncoder, register_played: bool = False):
        self.encoder = encoder
        self.actions = ActionRegistry()
        self.register_played = register_played  # new played labels get models
        self.kind: str | None = None

    def decisions(self, contexts, actions: Sequence) -> Block:
        """The rows of a block of decisions, ``(n, K, L)`` (the product class's K actions
        share their context's row, a broadcast view), and each action's model."""
        encoder, n = self.encoder, len(contexts)
        if self.actions.is_joint(actions):
            encoded = isinstance(actions, EncodedRows)
            k = actions.index.shape[-2] if encoded else len(actions)
            index, value = (a.reshape(n, k, -1) for a in (
                encoder.encoded_joint(actions) if encoded
                else encoder.joint_rows(contexts, actions)))
            if self.kind is None:
                self._first(own_features(None if index is None else index[0], value[0]))
            models = np.zeros(k, dtype=np.intp)
        else:
            index, value = encoder.context_rows(contexts)
            index = None if index is None else per_action(index, len(actions))
            self._first(None)
            value, models = per_action(value, len(actions)), self.actions.offered(actions)
        return Block(SparseRows(index, value, encoder.dim), models)

    def labels(self, contexts, actions: Sequence) -> Block:
        """The rows of a block of labels, ``(n, 1, L)``, and the played actions' models."""
        encoder = self.encoder
        if self.actions.is_joint(actions):
            index, value = encoder.joint_rows(contexts, actions, played=True)
            self._first(True)  # (a label before any decision: taken as own features)
            models = np.zeros(len(value), dtype=np.intp)
        else:
            index, value = encoder.context_rows(contexts)
            self._first(None)
            models = self.actions.played(actions, self.register_played)
        return Block(SparseRows(None if index is None else index[:, None], value[:, None],
                                encoder.dim), models)

    def _first(self, own: bool | None) -> None:
        """Note what the first block showed (``own``: for joint rows, whether some action
        has features of its own)."""
        if self.kind is None:
            self.kind = "labels" if own is None else (
                "own features" if own else "shared features")


def per_action(rows: np.ndarray, k: int) -> np.ndarray:
    """A read-only ``(n, k, D)`` view repeating each of the ``(n, D)`` rows for ``k``
    actions without copying (stride 0 along the actions)."""
    if not rows.flags.c_contiguous:
        return np.broadcast_to(rows[:, None, :], (len(rows), k, rows.shape[1]))
    view = np.ndarray((len(rows), k, rows.shape[1]), rows.dtype, rows, 0,
                      (rows.strides[0], 0, rows.strides[1]))  # 10x faster than as_strided
    view.flags.writeable = False
    return view


def own_features(index: np.ndarray | None, value: np.ndarray) -> bool:
    """Whether one of the rows ``(K, L)`` has a nonzero feature that no other row has
    (``index`` None: the columns are the positions); True for fewer than two rows.

    >>> rows = np.array([[0, 1], [0, 2]])
    >>> own_features(rows, np.array([[1.0, 1.0], [1.0, 0.0]]))
    True
    >>> own_features(rows, np.array([[1.0, 0.0], [1.0, 0.0]]))
    False
    """
    if len(value) < 2:
        return True
    rows = zip(value if index is None else index, value)
    counts = Counter(column for i, v in rows for column in set(
        (np.flatnonzero(v) if index is None else i[v != 0]).tolist()))
    return 1 in counts.values()
