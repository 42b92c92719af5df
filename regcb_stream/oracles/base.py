"""The oracle interface: an incremental regressor that also bounds its version space.

Inputs are feature rows ``phi`` of shape ``(n, K, D)`` (row ``i``, action column ``k``:
the features of context ``i`` paired with the ``k``-th offered action) and ``models``, an
int array of shape ``(K,)`` naming the model that scores each column. The product class
(one model per action, the paper's Option I) passes the same context row for every
column, as a broadcast view that costs no memory (stride 0 along the action axis), and
``models = action ids``; the joint class (Option II, VW's ADF) passes per-action features
and ``models = 0``.

Learning changes the live statistics only; the answers of ``predict`` and ``bounds`` come
from the decision state frozen at the last ``rebuild`` (the epoch boundary).

What an oracle offers beyond that is stated once, as data: its `Capabilities`. The
learner reads them when it takes the oracle and never probes for methods. They say how
the oracle takes rows (``SparseRows`` as they are, ``(index, value)`` pairs of nonzero
features, or dense arrays), and which of these it has:

- ``ellipsoid``: ``moments(phi, models)``, the prediction and ``phi^T A^-1 phi``, whose
  square root times ``sqrt(budget)`` is the bounds' half-width (the automatic budget
  derives every candidate's bounds from one such call);
- ``online_loop``: ``decisions`` and ``replay_online``, a compiled loop that decides and
  learns a block of rows in order (`regcb_stream.oracles.loop`); with ``widths``, its
  decisions carry each row's ``phi^T A^-1 phi`` (`Decision.variance`), from which the
  bounds of another budget follow (a slot's, `regcb_stream.slots`); with ``change_loop``,
  ``replay_online(..., change=)`` runs the learner's change test in the loop and stops
  after a label it alarms at (`regcb_stream.adapt.change.ChangeDetector.loop_spec`);
- ``one_row``: ``predict_dense``, ``predict_auto`` and ``learn_dense``, one dense
  context's decision or label in one compiled call (the Python API's per-example path);
  ``auto_loop``: ``replay_auto``, the online loop with the automatic budget;
- ``pieces``: labels summed per piece (``take_piece``, ``add_piece``, ``open_piece``,
  ``close_piece``), additive statistics that other processes can sum
  (`regcb_stream.stream.parallel`);
- ``ridge``: a penalty ``l2`` and a ``prior`` the learner's defaults fill in, forgetting
  (``forget``, ``clock``), ``shrink`` (the change test's reset) and, with ``relabel``, a
  row learned with a stand-in reward (``learn(..., stand_in=True)``) given its reward in
  place (delayed rewards);
- ``hands_over``: ``fits(n_models, dim)`` and ``bounded(n_models)``: past its size, the
  learner carries on with the bounded form.

A learner takes an oracle by `Oracle.bind`: a new oracle of the same parameters (none of
the given one's data), with the learner's reward range and, for a ridge oracle, the model
class's defaults where its parameters are left to the learner.
"""

from __future__ import annotations

import copy
import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from regcb_stream.bounds import ellipsoid_bounds
from regcb_stream.features.rows import SparseRows


class MemoryLimitError(ValueError):
    """An oracle's statistics would outgrow the memory limit it was given."""


@dataclass(frozen=True)
class Capabilities:
    """What an oracle offers beyond the `Oracle` methods (see the module docstring)."""

    rows: str = "dense"  # "sparse": SparseRows as they are; "pairs": nonzero columns; "dense"
    ellipsoid: bool = False
    online_loop: bool = False
    widths: bool = False
    change_loop: bool = False
    one_row: bool = False
    auto_loop: bool = False
    pieces: bool = False
    ridge: bool = False
    relabel: bool = False
    hands_over: bool = False


@dataclass(frozen=True)
class Binding:
    """What a learner gives the oracle it takes: its reward range, and the settings of
    its model class that a ridge oracle takes where its own are left to the learner
    (``l2`` None, ``prior="auto"``), its forgetting factor (when below 1), whether it
    learns in pieces (the epoch schedules) and how many random features end its rows."""

    reward_range: tuple[float, float] = (0.0, 1.0)
    l2: float | str = 1.0
    prior: float | str = "optimistic"
    forget: float = 1.0
    piecewise: bool = False
    random_features: int = 0


class Oracle(ABC):
    """What the learner needs from a regression oracle: subclass it, implement the
    abstract methods, and state any `Capabilities` beyond them."""

    capabilities: ClassVar[Capabilities] = Capabilities()

    @abstractmethod
    def grow(self, n_models: int, dim: int, max_dim: int | None = None) -> None:
        """Make room for ``n_models`` models over ``dim`` features (new ones start empty;
        ``max_dim``: the most features there can be, when hashing bounds them)."""

    def widens(self, dim: int) -> bool:
        """Whether growing to ``dim`` features changes the numbers of what follows (the
        size of an inverse taken afresh, a refresh interval), so that a block's rows must
        grow it one row at a time, as one example at a time does (`stream.replay`)."""
        return True

    @abstractmethod
    def learn(self, x, model: int, y: float, weight: float = 1.0) -> None:
        """Learn one labelled example ``x`` (a dense row ``(D,)``, or an ``(index,
        value)`` pair for oracles that take pairs) for ``model``."""

    def learn_many(self, x, models, y, weight) -> None:
        """Learn a block of examples; the same result as ``learn`` row by row."""
        learn_row_by_row(self, x, models, y, weight)

    @abstractmethod
    def rebuild(self) -> None:
        """Epoch boundary: freeze the current fit as the decision state."""

    @abstractmethod
    def predict(self, phi, models) -> np.ndarray:
        """Predictions of the frozen fit, shape ``(n, K)``."""

    @abstractmethod
    def bounds(self, phi, models, budget: float):
        """Prediction, and lowest and highest prediction over the version space, unclipped,
        ``(n, K)`` each.

        The version space holds the regressors whose summed squared loss on the data
        seen before the last rebuild (plus the regressor's own penalty, for regularized
        oracles such as ridge) exceeds the minimum by at most ``budget``.
        """

    def describe(self) -> str:
        """The oracle in words, for summaries."""
        return type(self).__name__

    def bind(self, binding: Binding) -> Oracle:
        """A new oracle of this one's parameters for a learner: its reward range, where
        the constructor takes one (sensitivity bounds place fake labels beyond its ends)."""
        return self.configured(**({"reward_range": binding.reward_range}
                                   if "reward_range" in parameters(type(self)) else {}))

    def configured(self, **changes) -> Oracle:
        """A new oracle with this one's parameters but ``changes`` (none of its data: an
        oracle given to a learner is its specification, as an estimator given to
        scikit-learn's meta-estimators is cloned)."""
        given = {name: copy.deepcopy(getattr(self, name)) for name in parameters(type(self))}
        return type(self)(**(given | changes))


def parameters(cls: type) -> list[str]:
    """The names of a class's constructor parameters (each kept under its own name)."""
    return [name for name in inspect.signature(cls).parameters
            if name not in ("self", "args", "kwargs")]


class Ellipsoid(Oracle):
    """``predict`` and ``bounds`` of an ellipsoid oracle, from its ``moments`` (prediction
    and ``phi^T A^-1 phi``): the extremes over the version space are ``prediction -+
    sqrt(budget phi^T A^-1 phi)``."""

    @abstractmethod
    def moments(self, phi, models) -> tuple[np.ndarray, np.ndarray]:
        """Frozen predictions and ``phi^T A^-1 phi``, ``(n, K)`` each."""

    def predict(self, phi, models) -> np.ndarray:
        """Frozen predictions, shape ``(n, K)``."""
        return self.moments(phi, models)[0]

    def bounds(self, phi, models, budget):
        """Prediction and ``prediction -+ sqrt(budget * phi^T A^-1 phi)``, unclipped."""
        prediction, variance = self.moments(phi, models)
        return (prediction, *ellipsoid_bounds(prediction, variance, budget))


def learn_row_by_row(oracle, x, models, y, weight) -> None:
    """``learn_many`` for oracles that learn one example at a time: ``learn`` on each row,
    in order (so a stream gives the same state however it is cut into blocks); ``x`` rows
    ``(n, D)``, ``(index, value)`` pairs, or ``SparseRows`` ``(n, 1, L)``."""
    if isinstance(x, SparseRows):
        x = x.value[:, 0] if x.index is None else zip(x.index[:, 0], x.value[:, 0])
    for row, model, target, w in zip(x, np.asarray(models).tolist(),
                                      np.asarray(y, float).tolist(),
                                      np.asarray(weight, float).tolist()):
        oracle.learn(row, model, target, w)


def rows_for(oracle_rows: str, rows: SparseRows):
    """Decision rows as an oracle takes them (its ``Capabilities.rows``)."""
    if oracle_rows == "sparse":
        return rows
    return rows.explicit() if oracle_rows == "pairs" else rows.dense()


def examples_for(oracle_rows: str, rows: SparseRows):
    """Learned rows ``(n, 1, L)`` as an oracle's ``learn_many`` takes them."""
    if oracle_rows == "sparse":
        return rows
    return rows.pairs() if oracle_rows == "pairs" else rows.dense()[:, 0]


def example_for(oracle_rows: str, rows: SparseRows):
    """One learned row ``(1, 1, L)`` as an oracle's ``learn`` takes it."""
    x = examples_for(oracle_rows, rows)
    return x.example() if isinstance(x, SparseRows) else x[0]
