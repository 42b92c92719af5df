"""One model: contexts and actions as rows, an explorer over its oracle, and the per-context
decisions and labels of `RegCB`.

A `Model` turns what the caller gives (a context, the offered actions, a label) into feature
rows (`regcb_stream.features.rows`) and hands them to its `Explorer`. Its *model class* is
settled by its first example (`regcb_stream.defaults`): until then it runs the provisional
class's explorer; the first example builds the explorer of its class afresh, before any
label is learned. Dense contexts with actions as labels take the oracle's one-row compiled
calls where it has them (the Python API's per-example path); every other example takes
the general path through blocks of rows.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from regcb_stream import defaults
from regcb_stream.adapt.change import DEFAULT_THRESHOLD, ChangeDetector
from regcb_stream.adapt.events import snapshot
from regcb_stream.adapt.selection import ModelSelection
from regcb_stream.dense_lane import DenseLane
from regcb_stream.explore.budget import COUNTED, AutoBudget, FixedBudget
from regcb_stream.explore.decision import Decision, stacked
from regcb_stream.explore.explorer import Explorer
from regcb_stream.features.encoder import FeatureEncoder, one_if_repeated
from regcb_stream.features.random_features import RandomFeatures
from regcb_stream.features.rows import Block, Rows
from regcb_stream.oracles.base import Binding, Oracle
from regcb_stream.oracles.bounded import BoundedRidgeOracle
from regcb_stream.oracles.ridge import RidgeOracle
from regcb_stream.oracles.vw import VWOracle
from regcb_stream.state import Stateful
from regcb_stream.stream.replay import grown_parts, replay

ORACLES = {"ridge": RidgeOracle, "bounded": BoundedRidgeOracle, "vw": VWOracle}


@dataclass(frozen=True)
class Spec(Stateful):
    """A model's parameters (`RegCB`'s, but model selection's)."""

    ADDED = {"ties": "shared"}  # (model files of version 7 written before `ties`)

    variant: str
    ties: str
    oracle: str | Oracle | None
    beta: float | None
    schedule: str
    budget: str | None
    mellowness: float | None
    horizon: int | None
    budget_grid: tuple
    reward_range: tuple[float, float]
    seed: int | None
    warm_start_epochs: int
    cross: bool
    intercept: bool
    hash_bits: int | None
    random_features: int | RandomFeatures | None
    random_scale: float
    forget: float
    change_threshold: float | None

    @classmethod
    def of(cls, parameters: dict) -> Spec:
        """The spec of `RegCB`'s parameters (its reward range as floats)."""
        spec = cls(**{field.name: parameters[field.name] for field in fields(cls)})
        return replace(spec, reward_range=tuple(float(v) for v in spec.reward_range))

    def state(self) -> dict:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def from_state(cls, state: dict) -> Spec:
        return cls(**{**cls.ADDED, **state})


class Model(Stateful):
    """One model of `RegCB` (see the module docstring). ``fits``: learning returns the
    fit's prediction of each label before it (model selection scores them); ``companion``:
    the model learns actions another model decided (model selection's linear model)."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "spec": "spec",
        "fits": "fits",
        "rows": "rows",
        "model_class": "model_class",
        "explorer": "explorer",
        "last_decision": "_last",
    }

    _lane: DenseLane | None = None  # the one-row path's settled parts (`dense_lane`)

    def __init__(self, spec: Spec, *, fits: bool = False, companion: bool = False):
        self.spec = spec
        self.fits = fits or companion
        self.rows = Rows(FeatureEncoder(cross=spec.cross, intercept=spec.intercept,
                                        hash_bits=spec.hash_bits,
                                        expand=random_features(spec)),
                         register_played=companion)
        self.model_class: str | None = None  # settled by the first example
        self.explorer = self._explorer(defaults.PROVISIONAL)
        self._last: tuple | None = None  # (context, actions, candidates) of the last decide

    @property
    def encoder(self) -> FeatureEncoder:
        return self.rows.encoder

    @property
    def oracle(self) -> Oracle:
        """The oracle in use (the explorer's)."""
        return self.explorer.oracle

    # -- the explorer of a model class -------------------------------------------------

    def _explorer(self, model_class: str) -> Explorer:
        """The explorer the class's settings (`defaults.resolve`) and the parameters give."""
        spec = self.spec
        settings = defaults.resolve(model_class, mellowness=spec.mellowness)
        expand = self.encoder.expand
        oracle = make_oracle(spec.oracle, spec.forget).bind(Binding(
            spec.reward_range, settings.l2, settings.prior, spec.forget,
            piecewise=spec.schedule != "online",
            random_features=expand.n_features if expand is not None else 0))
        capabilities = oracle.capabilities
        if capabilities.ridge and oracle.forget < 1.0 and spec.schedule != "online":
            raise ValueError("forgetting needs the online schedule: an oracle that forgets "
                             "learns its labels in order")
        return Explorer(oracle, variant=spec.variant, ties=spec.ties, schedule=spec.schedule,
                        budget=self.budget(settings.mellowness, oracle),
                        reward_range=spec.reward_range,
                        warm_start_epochs=spec.warm_start_epochs, horizon=spec.horizon,
                        change=change_test(spec.change_threshold, oracle, spec.schedule,
                                           spec.reward_range), fits=self.fits)

    def budget(self, mellowness: float, oracle: Oracle):
        """The budget the parameters name: fixed, or chosen online among candidates."""
        spec = self.spec
        kind = spec.budget or ("beta" if spec.beta is not None else "mellowness")
        if kind != "auto":
            return FixedBudget(kind, spec.beta, mellowness, spec.horizon)
        if not oracle.capabilities.ellipsoid:
            raise ValueError(f"budget='auto' needs an ellipsoid oracle (ridge, bounded ridge, "
                             f"trees), not {type(oracle).__name__}")
        return AutoBudget(spec.budget_grid)

    def _settle(self) -> None:
        """At the first example: the explorer of the model class it shows."""
        if self.model_class is None and self.rows.kind is not None:
            self.model_class = defaults.model_class(self.rows.kind,
                                                    self.encoder.expand is not None)
            if self.model_class != defaults.PROVISIONAL:
                self.explorer = self._explorer(self.model_class)

    def change_exploration(self, variant: str, budget: dict | None) -> None:
        """Another variant and, with ``budget`` (`RegCB`'s budget parameters), budget."""
        self.spec = replace(self.spec, variant=variant, **(budget or {}))
        mellowness = defaults.resolve(self.model_class or defaults.PROVISIONAL,
                                      mellowness=self.spec.mellowness).mellowness
        explorer = self.explorer
        explorer.change_exploration(variant, self.budget(mellowness, explorer.oracle)
                                    if budget else explorer.budget)

    # -- rows --------------------------------------------------------------------------

    def decisions(self, contexts, actions: Sequence, grow: bool = True) -> Block:
        """The rows of a block of decisions, the oracle grown to hold them (``grow``
        False: not yet, `grow_to` grows it row by row)."""
        block = self.rows.decisions(contexts, actions)
        self._settle()
        if grow:
            self._grow(max(self.rows.actions.n_models, 1))
        return block

    def labels(self, contexts, actions: Sequence, grow: bool = True) -> Block:
        """The rows of a block of labels, the oracle grown to hold them (to the columns in
        force at the last of them: rows decided before were grown to theirs; ``grow``
        False: not yet)."""
        block = self.rows.labels(contexts, actions)
        self._settle()
        if grow and len(block.models):
            self.grow_to(int(self.dims_in_force(block)[-1]))
        return block

    def _grow(self, n_models: int, dim: int | None = None) -> None:
        encoder = self.encoder
        self.explorer.grow(n_models, encoder.dim if dim is None else dim, encoder.max_dim)

    def grow_to(self, dim: int) -> None:
        """The oracle grown to ``dim`` columns: those of a block's rows up to one of them
        (`dims_in_force`), as one example at a time grows it."""
        self._grow(max(self.rows.actions.n_models, 1), dim)

    def dims_in_force(self, block: Block) -> np.ndarray:
        """The columns each row of a block was decided with, one example at a time: those
        numbered up to its own (columns are numbered in the rows' order), at least the
        oracle's before the block."""
        rows, dim = block.rows, self.explorer.dim
        if rows.index is None:  # (dense rows: every column, from the first)
            return np.full(len(rows.value), max(dim, self.encoder.dim))
        index = rows.index[:, :1] if rows.index.strides[1] == 0 else rows.index  # (shared)
        if len(one_if_repeated(index)) < len(index):  # (the same rows for every example)
            return np.full(len(index), max(int(index[0].max(initial=0)) + 1, dim))
        last = index.max(axis=tuple(range(1, index.ndim)), initial=0) + 1
        return np.maximum(np.maximum.accumulate(last), dim)

    def _one_row(self, context) -> bool:
        """Whether one context takes the one-row compiled calls: a float vector of the
        dense contexts' length (`_vector`), actions that are labels, an oracle that has
        them."""
        return (self.explorer.one_row and type(context) is np.ndarray and context.ndim == 1
                and context.dtype == np.float64 and context.flags.c_contiguous
                and context.size == self.encoder.vector_width
                and self.rows.actions.joint is False)

    def _vector(self, context):
        """A dict that is a dense context (`FeatureEncoder.named_vector`) as its vector,
        for the one-row calls (the same rows, so the same numbers); any other context as
        it is."""
        if type(context) is dict and self.explorer.one_row and (
                vector := self.encoder.named_vector(context)) is not None:
            return vector
        return context

    def _values(self, context: np.ndarray) -> np.ndarray | None:
        """A dense context's features after the intercept (its random features appended,
        mapped once for a decision and the label of the same context), the oracle grown
        first; None if growing handed it over to an oracle without the one-row calls. A
        value that is not finite maps to values that are not either: the compiled calls
        refuse them, and the general path they hand over to names it."""
        self._grow(self.rows.actions.n_models)
        if not self.explorer.one_row:
            return None
        encoder = self.encoder
        return context if encoder.expand is None else encoder.expanded(context)

    # -- decisions ---------------------------------------------------------------------

    def decide(self, context, actions: Sequence) -> Decision:
        """Bounds, plausible set and distribution for one context."""
        if (out := self._one_row_decision(context, actions, 4)) is not None:
            return Decision(*out)
        block = self.decisions([context], actions)
        decision = self.explorer.decide(*block).row(0)
        if decision.candidates is not None:
            self._last = (snapshot(context), list(actions), decision.candidates)
        return decision

    def pmf(self, context, actions: Sequence) -> np.ndarray:
        """``decide``'s distribution alone (the one-row path computes only the widths it
        needs)."""
        if (out := self._one_row_decision(context, actions, 1)) is not None:
            return out[0]
        return self.decide(context, actions).pmf

    def _one_row_decision(self, context, actions: Sequence, parts: int) -> np.ndarray | None:
        """The one-row compiled decision of a dense context under the frozen fit: its
        distribution, then with ``parts`` 4 its predictions and bounds, ``(parts, K)``; or
        None (the general path decides)."""
        explorer, vector = self.explorer, self._vector(context)
        if explorer.n_frozen and explorer.budget.selector is None and self._one_row(
                vector) and (models := self.rows.actions.known(actions)) is not None:
            out = np.empty((parts, len(models)))
            if (values := self._values(vector)) is not None and explorer.budget.draw_dense(
                    explorer, values, models, self.spec.intercept, 0.0,
                    out if parts == 4 else out[0]) is not None:
                return out
        return None

    def decide_many(self, contexts, actions: Sequence) -> Decision:
        """``decide`` for a block of contexts in one computation (rows of the arrays; in
        parts where a row's new columns widen the oracle, as one at a time grows it)."""
        block = self.decisions(contexts, actions, grow=False)
        dims = self.dims_in_force(block)
        if not len(dims):
            return self.explorer.decide(*block)
        parts = [self.explorer.decide(*block.take(part))
                 for part in grown_parts(self, dims)]
        if len(parts) == 1:
            return parts[0]
        candidates = [part.candidates for part in parts]
        return replace(stacked(parts), candidates=None if any(
            c is None for c in candidates) else np.concatenate(candidates))

    def draw(self, context, actions: Sequence, rng: np.random.Generator
             ) -> tuple[object, float, dict]:
        """Sample an action with a uniform of ``rng``: the action, its probability and
        the keyword arguments of ``learn``."""
        if self._lane is not None and (drawn := self._lane.draw(context, actions, rng)):
            return drawn
        explorer, vector = self.explorer, self._vector(context)
        if self._one_row(vector) and (models := self.rows.actions.known(actions)) is not None \
                and explorer.budget.ready(explorer) and (
                    values := self._values(vector)) is not None:
            drawn = explorer.budget.draw_dense(explorer, values, models, self.spec.intercept,
                                               rng.random())
            if drawn is not None:  # (None: a value is not finite; decide says which)
                if len(drawn) > 3:  # (the candidates' distributions, as decide keeps them)
                    self._last = (snapshot(context), list(actions), drawn[3])
                self._lane = DenseLane.of(self, actions, models)
                return actions[drawn[0]], drawn[1], drawn[2]
        decision = self.decide(context, actions)
        cdf = decision.pmf.cumsum()  # `rules.sample`'s draw, for one row
        index = min(int(cdf.searchsorted(rng.random() * cdf[-1], "right")), len(cdf) - 1)
        info = {} if decision.candidates is None else {
            "candidates": tuple(decision.candidates[:, index].tolist())}
        return actions[index], float(decision.pmf[index]), info

    # -- learning ----------------------------------------------------------------------

    def learn(self, context, action, reward: float, prob: float, weight: float,
              candidates=None) -> float | None:
        """Learn one checked label; the fit's prediction of it before, when asked for."""
        explorer, reward, weight = self.explorer, float(reward), float(weight)
        if self._lane is not None and candidates is None and (
                fitted := self._lane.learn(context, action, reward, weight)) is not None:
            return fitted
        scored = self._scored(context, action, candidates, prob)
        labels = self.rows.actions.labels
        try:
            known = action in labels
        except TypeError:  # (unhashable: the general path says what actions must be)
            known = False
        if known and self._one_row(vector := self._vector(context)) and (
                explorer.schedule == "online"):
            values = vector if self.encoder.expand is None else self.encoder.expanded(vector)
            fitted = explorer.learn_dense(values, self.spec.intercept, labels[action],
                                          reward, weight, scored)
            if fitted is not None:  # learned and rebuilt at once
                return fitted
        block = self.labels([context], [action])
        explorer = self.explorer  # (the first example settles it)
        if scored is not None:
            explorer.score([scored[0]], [scored[1]], [reward])
        fitted = explorer.learn_one(block.rows, int(block.models[0]), reward, weight)
        return None if fitted is None else float(fitted[0])

    def learn_many(self, contexts, actions: Sequence, rewards: np.ndarray, probs,
                   weights: np.ndarray, candidates=None) -> np.ndarray | None:
        """Learn a block of checked labels (``candidates``: each candidate budget's
        probability of the played action, ``(n, J)``); the fits before, when asked for."""
        block = self.labels(contexts, actions, grow=False)
        if candidates is not None and probs is not None:
            self.explorer.score(np.asarray(candidates, float), probs, rewards)
        dims = self.dims_in_force(block)
        if not len(dims):
            return self.explorer.learn(block, rewards, weights)
        rewards, weights = np.asarray(rewards, float), np.asarray(weights, float)
        fits = [self.explorer.learn(Block(block.rows.take(part), block.models[part]),
                                    rewards[part], weights[part])
                for part in grown_parts(self, dims)]  # (grown as one label at a time)
        return None if fits[0] is None else np.concatenate(fits)

    def _scored(self, context, action, candidates, prob) -> tuple | None:
        """With the automatic budget: the candidates' probabilities of ``action`` (given,
        or those of the last decision of ``context``) and its probability, to score them."""
        if self.explorer.budget.selector is None:
            return None
        if candidates is None:
            candidates = self._candidates_of(context, action)
        return None if candidates is None else (candidates, float(prob))

    def _candidates_of(self, context, action):
        """The candidates' probabilities of ``action`` at the last decision, if it was
        for ``context`` and offered ``action`` (else None)."""
        if self._last is None:
            return None
        last_context, actions, candidates = self._last
        if not same_context(last_context, context):
            return None
        for i, offered in enumerate(actions):
            if offered == action:
                return candidates[:, i].tolist()
        return None

    # -- a learner of one model (`RegCB`'s view, shared with model selection) -----------

    @property
    def main(self) -> Model:
        return self

    @property
    def models(self) -> list[Model]:
        return [self]

    def leader(self) -> int:
        return 0

    def observe(self, rewards, *fits) -> None:
        """(Model selection scores the models' fits; one model has none to score.)"""

    def alone(self) -> Model:
        return self

    def selection_state(self) -> None:
        return None

    def replay(self, contexts, actions, played, rewards, probs, weights) -> Decision:
        """``RegCB.replay`` of a checked log (`regcb_stream.stream.replay.replay`)."""
        return replay(self, contexts, actions, played, rewards, probs, weights)

    def want_fits(self, fits: bool) -> None:
        """Whether learning returns the fits before each label (model selection's)."""
        self.fits = self.explorer.fits = fits


def make_model(spec: Spec, select_model: bool = False):
    """A learner's model: one, or with ``select_model`` (where the random features apply,
    on the ``online`` schedule with a fixed budget) a selection over the random-features
    model and the linear one (`regcb_stream.adapt.selection`)."""
    kind = spec.budget or ("beta" if spec.beta is not None else "mellowness")
    if not (select_model and random_features(spec) is not None
            and spec.schedule == "online" and kind in COUNTED):
        return Model(spec)
    return ModelSelection(Model(spec, fits=True),
                          Model(replace(spec, random_features=0), companion=True))


def random_features(spec: Spec) -> RandomFeatures | None:
    """The encoder's map of dense contexts: ``random_features`` as `RegCB` takes it (None:
    the default's where they apply, with the default oracle or a `RidgeOracle` whose
    penalty is left to the model class, as the command's)."""
    features = spec.random_features
    if features is None:
        oracle = spec.oracle
        left = oracle is None or type(oracle) is RidgeOracle and oracle.l2 is None
        return RandomFeatures(defaults.RANDOM_FEATURES, spec.random_scale, spec.seed,
                              required=False) if left else None
    if isinstance(features, RandomFeatures):
        return copy.deepcopy(features)
    return RandomFeatures(features, spec.random_scale, spec.seed) if features else None


def make_oracle(oracle, forget: float = 1.0) -> Oracle:
    """The oracle a learner takes: by name, the default (None: `RidgeOracle` with its
    penalty and prior left to the model class), or the one given (its parameters)."""
    if oracle is None:
        oracle = RidgeOracle(l2=None, prior="auto")
    elif isinstance(oracle, str):
        if oracle not in ORACLES:
            raise ValueError(f"unknown oracle {oracle!r}; expected one of {sorted(ORACLES)} "
                             "or an oracle object")
        oracle = ORACLES[oracle]()
    elif not isinstance(oracle, Oracle):
        raise TypeError(f"oracle must be a name or an Oracle (regcb_stream.Oracle): "
                        f"{oracle!r}")
    if forget < 1.0 and not oracle.capabilities.ridge:
        raise ValueError(f"forget applies to the ridge oracles, not {type(oracle).__name__}")
    return oracle


def change_test(threshold: float | None, oracle: Oracle, schedule: str,
                reward_range: tuple[float, float]) -> ChangeDetector | None:
    """The change test of ``change_threshold`` (None: the default where it applies, a ridge
    oracle with the ``online`` schedule and the optimistic prior that does not forget
    already; 0: none)."""
    applies = oracle.capabilities.ridge and schedule == "online"
    if threshold == 0 or threshold is None and (
            not applies or oracle.forget < 1.0 or oracle.prior_mean < reward_range[1]):
        return None
    if not applies:
        raise ValueError(f"change_threshold applies to the ridge oracles with the online "
                         f"schedule, not {type(oracle).__name__} with {schedule!r}")
    return ChangeDetector(DEFAULT_THRESHOLD if threshold is None else threshold,
                          reward_range[1] - reward_range[0])


def same_context(kept, context) -> bool:
    """Whether ``context`` equals a snapshot taken by :func:`snapshot`."""
    if isinstance(kept, dict) or isinstance(context, Mapping):
        return isinstance(kept, dict) and kept == context
    try:
        return np.array_equal(kept, np.asarray(context, dtype=float))
    except (TypeError, ValueError):
        return False
