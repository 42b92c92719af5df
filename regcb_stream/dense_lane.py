"""The per-example path of dense contexts at its cheapest: `RegCB.predict` and `RegCB.learn`
as one compiled call each, nothing looked up again that the last call settled.

A `Model` whose dense contexts (arrays, or dicts of the first context's names) take the
oracle's one-row calls keeps a `DenseLane` for them: the actions of its last draw and
their models, a buffer for a context's random features (mapped once for the draw and the
label of the same context), and the budget of the decision state in force. It answers
only while what it settled holds (the model's explorer, its oracle and its columns, a
budget of the label count); otherwise it answers None and the model takes its general
path, which makes a lane anew. The numbers are the general path's, bit for bit
(``tests/test_compiled.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_FLOAT = np.dtype(np.float64)


class DenseLane:
    """The settled parts of a model's one-row path (see the module docstring)."""

    def __init__(self, model, actions: Sequence, models: np.ndarray):
        explorer, encoder = model.explorer, model.encoder
        self.model, self.explorer, self.oracle = model, explorer, explorer.oracle
        self.dim = self.oracle.dim
        self.key, self.models = tuple(actions), models
        self.encoder, self.expand = encoder, encoder.expand
        self.shape = (encoder.vector_width,)
        self.intercept = model.spec.intercept
        self.labels = model.rows.actions.labels  # label -> model (the rows' own dict)
        self.values = None if self.expand is None else np.empty(self.dim - 1)
        self._mapped: bytes | None = None  # the context whose features `values` holds
        self._budget = self._frozen = None  # the loss budget in force was computed for
        self._loss = math.nan

    @classmethod
    def of(cls, model, actions: Sequence, models: np.ndarray) -> DenseLane | None:
        """A lane for a model that has just drawn one dense context by its one-row path."""
        if type(actions) is not list or model.explorer.budget.selector is not None:
            return None
        return cls(model, actions, models)

    def holds(self) -> bool:
        """Whether what the lane settled is still the model's."""
        explorer = self.explorer
        return (self.model.explorer is explorer and explorer.oracle is self.oracle
                and self.oracle.dim == self.dim and explorer.budget.selector is None)

    def draw(self, context, actions: Sequence, rng: np.random.Generator) -> tuple | None:
        """`Model.draw` of one dense context (the action, its probability, no kwargs), or
        None before anything is drawn: the general path then draws."""
        try:
            if tuple(actions) != self.key or not self.holds():
                return None
        except ValueError:  # (actions whose == is no truth value, arrays: the general path
            return None  # says what is wrong with them)
        values = self._values(context)
        if values is None:
            return None
        explorer = self.explorer
        budget, frozen = explorer.budget, explorer.n_frozen
        if budget is not self._budget or frozen != self._frozen:
            self._loss = budget.loss(explorer, frozen, len(self.models))
            self._budget, self._frozen = budget, frozen
        drawn = self.oracle.predict_dense(values, self.models, self.intercept, self._loss,
                                          explorer.rule, explorer.reward_range,
                                          explorer.tolerance, rng.random())
        if drawn is None:  # (a value is not finite: the general path says which)
            return None
        return actions[drawn[0]], drawn[1], {}

    def learn(self, context, action, reward: float, weight: float) -> float | None:
        """`Model.learn` of one dense context's label on the online schedule (the fit's
        prediction of it before), or None, nothing learned: the general path learns it."""
        if self.explorer.schedule != "online" or not self.holds():
            return None
        try:
            model = self.labels.get(action)
        except TypeError:  # (unhashable: the general path says what actions must be)
            return None
        values = None if model is None else self._values(context)
        if values is None:
            return None
        return self.explorer.learn_dense(values, self.intercept, model, reward, weight)

    def _values(self, context) -> np.ndarray | None:
        """A dense context's features after the intercept (its random features appended,
        mapped once for a draw and the label of the same context), or None for another
        context."""
        if type(context) is dict:
            context = self.encoder.named_vector(context)
        return self._vector_values(context)

    def _vector_values(self, context) -> np.ndarray | None:
        """`_values` of a float vector."""
        if not (type(context) is np.ndarray and context.dtype is _FLOAT
                and context.shape == self.shape and context.flags.c_contiguous):
            return None
        if self.expand is None:
            return context
        data = context.tobytes()
        if data != self._mapped:
            self.expand.into(context, self.values)
            self._mapped = data
        return self.values
