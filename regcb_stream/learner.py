"""RegCB: contextual-bandit exploration with confidence bounds from a regression oracle."""

from __future__ import annotations

import copy
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from regcb_stream import rules
from regcb_stream.adapt.change import DEFAULT_THRESHOLD, KEEP, ChangeDetector
from regcb_stream.adapt.events import PendingDecisions
from regcb_stream.adapt.selection import ModelSelection
from regcb_stream.bounds import clip_bounds
from regcb_stream.explore import schedules
from regcb_stream.explore.budget import DEFAULT_GRID, BudgetSelector, candidate_decisions
from regcb_stream.features.encoder import EncodedRows, FeatureEncoder
from regcb_stream.features.random_features import RandomFeatures
from regcb_stream.oracles.base import Oracle, SparseRows
from regcb_stream.oracles.bounded import BoundedRidgeOracle
from regcb_stream.oracles.ridge import RidgeOracle, resolve_prior
from regcb_stream.oracles.vw import VWOracle

ORACLES = {"ridge": RidgeOracle, "bounded": BoundedRidgeOracle, "vw": VWOracle}
BUDGETS = (*schedules.BUDGETS, "auto")
# the defaults per model class, each chosen by leave-one-dataset-out on the 16 UCI streams;
# a budget is the c of VW's form c ln(K n) span^2, among those that pass the long-horizon rule
# (twelve seeds of 200,000 realizable rounds) where the class can fail it
DEFAULT_VARIANT = "optimistic"
DEFAULT_L2 = 1.0  # the default oracle: RidgeOracle(l2=DEFAULT_L2, prior="auto")
DEFAULT_MELLOWNESS = 3e-3  # random-features model, dense contexts (docs/feature_ridge.md)
# the linear model: actions as labels, contexts as they are (dict contexts, random_features=0)
LINEAR_L2, LINEAR_MELLOWNESS = 10.0, 3e-4  # (docs/defaults.md)
JOINT_MELLOWNESS = 1e-2  # actions with features of their own: ADF, -q sa (docs/joint_budget.md)
# actions sharing every feature (rankings): the least l2 (docs/joint_defaults.md) and the budget
# that choice was made at
DEFAULT_SHARED_L2, SHARED_MELLOWNESS = 3.0, 1e-3
DEFAULT_BETA = 1e-3  # budget="beta" without a beta
DEFAULT_RANDOM_FEATURES = 64  # appended to dense contexts (docs/random_features.md)
FIXED_BUDGETS = ("beta", "summed", "mellowness")  # a function of the label count alone
TIE_TOLERANCE = 1e-12  # bounds closer than this (times the reward span) are ties: rounding
# noise must not decide; float32 oracles (VW's) differ by far more when they differ at all
PIECE_LABELS = 2048  # labels summed per piece in the epoch schedules (regcb_stream.stream.parallel)


@dataclass(frozen=True)
class Decision:
    """Predictions, bounds and distribution for one context (1-D arrays, one entry per
    action) or a block of contexts (2-D, a row per context)."""

    pmf: np.ndarray
    prediction: np.ndarray
    low: np.ndarray
    high: np.ndarray
    candidates: np.ndarray | None = None  # with budget="auto": each candidate's pmf (.., J, K)

    @property
    def width(self) -> np.ndarray:
        """Confidence width ``High - Low`` per action."""
        return self.high - self.low

    @property
    def plausible_size(self):
        """Size of the plausible set ``{a : High(a) >= max Low}`` (the paper's ``|A_t|``)."""
        return rules.plausible(np.atleast_2d(self.low), np.atleast_2d(self.high)).sum(
            axis=1
        ).reshape(np.shape(self.pmf)[:-1])


class RegCB:
    """RegCB.Elimination and RegCB.Optimistic (Foster et al., ICML 2018).

    For each action the learner keeps the range of rewards, ``[Low, High]``, that the
    regressors of the version space predict; the version space holds every regressor
    whose squared loss on the labels seen so far is within a budget of the best one.
    Elimination plays uniformly over the actions whose ``High`` reaches the best ``Low``;
    Optimistic plays the largest ``High`` (with a ridge oracle, this is LinUCB on an epoch
    schedule). The decision state is frozen within an epoch and rebuilt at its end.

    The defaults (``RegCB()``) were chosen by leave-one-dataset-out on 16 public streams,
    each budget among those whose regret does not grow linearly over 200,000 rounds of a
    realizable problem on any of twelve seeds (``docs/defaults.md``,
    ``docs/random_features.md``, ``docs/feature_ridge.md``): the optimistic variant, the
    optimistic ridge oracle with ``l2 = 1``, VW's budget form with mellowness 3e-3, online
    updates, and 64 random Fourier features appended to dense contexts. Without random
    features (dict contexts, ``random_features=0``) the linear model has ``l2 = 10`` and
    mellowness 3e-4. For actions given as dicts of features that every action shares (a
    ranking), the ridge shrinks toward the middle of the reward range with ``l2 = 3`` and
    mellowness 1e-3 (``docs/joint_defaults.md``); for actions with features of their own
    (VW's ADF with ``-q sa``: one joint model) the mellowness is 1e-2
    (``docs/joint_budget.md``).

    Parameters
    ----------
    variant
        ``"optimistic"`` (the default) or ``"elimination"``.
    oracle
        None: ``RidgeOracle(l2=1, prior="auto")``, exact ridge regression shrinking
        toward the best reward (``l2 = 10`` without random features, actions given as
        labels: the linear model); for action feature dicts that share every feature,
        ``RidgeOracle(l2=3, prior="midpoint")``, toward the middle of the reward range;
        ``"ridge"``: the paper's ridge (``l2 = 1``, toward 0);
        ``"vw"``: VW's default linear regressor with its sensitivity bounds; or an oracle
        object (copied).
    beta
        The paper's budget on the normalized squared risk (giving it selects
        ``budget="beta"``).
    schedule
        When the decision state is rebuilt: ``"online"`` (after every label),
        ``"sqrt2"`` (epoch lengths 2^(i/2), the paper's experiments) or ``"doubling"``.
    budget
        ``"mellowness"``: VW's c0 ln(K n) span^2 (the default form); ``"beta"``: beta x
        labels x span^2; ``"summed"``: beta x span^2 (beta on the summed loss, as the
        paper's experiments: the version space shrinks as labels come); ``"theory"``: the
        paper's theoretical schedule for a ``horizon``;
        ``"auto"``: chosen online among the mellowness values of ``budget_grid``
        (`regcb_stream.explore.budget`). None: ``"beta"`` if ``beta`` is given, else
        ``"mellowness"``.
    mellowness
        VW's c0. None: the model class's, settled at the first example: 3e-3 with random
        features, 3e-4 for the linear model, 1e-2 for actions with features of their own,
        1e-3 for actions sharing every feature (VW's own default is 0.1).
    horizon
        Number of rounds, for ``budget="theory"``.
    budget_grid
        The candidate mellowness values of ``budget="auto"``.
    reward_range
        ``(low, high)`` of the rewards; bounds are clipped to it. Rewards are maximized.
    seed
        Seed of the sampler (the only randomness).
    warm_start_epochs
        Epochs of uniform play before the bounds are used (the paper's M0).
    allow_out_of_range
        Learn rewards outside ``reward_range`` as they are (as VW does with costs) instead
        of raising.
    cross
        With action feature dicts: add products of context and action features (VW's
        ``-q sa``).
    intercept
        Add a constant feature (VW's constant; False for ``--noconstant``).
    hash_bits
        Hash the names of dict features as VW does with ``-b hash_bits`` (None: keep every
        name): memory stays bounded however many names a stream has (names sharing a slot
        share a weight, as in VW).
    random_features
        Append this many random Fourier features to every dense context
        (`regcb_stream.features.random_features`): the linear oracle then fits rewards that are not
        linear in the context (0: none), for actions given as labels. None (the
        default): 64 with the default oracle where they apply; none for dict contexts
        (River's, the command line's), action feature dicts, or an oracle given. A
        `RandomFeatures` object: that map (copied).
    random_scale
        Their frequencies' scale (a Gaussian kernel of bandwidth ``1 / random_scale`` on
        the contexts' directions at length ``sqrt(d)``, for ``d`` context features).
    forget
        The factor by which each label's weight decays per label learned after it, for
        rewards that drift (1, the default: never; `RidgeOracle`'s ``forget``, for the
        ridge oracles, with the ``online`` schedule). 0.999 follows a change within about a
        thousand labels; where nothing drifts, a window of labels costs (docs/forgetting.md).
    change_threshold
        The change test's threshold (`regcb_stream.adapt.change`): when the squared residuals
        rise past ``change_threshold * ln t``, the learner keeps 1% of every label's weight
        and explores anew. None (the default): 6, where it applies (a ridge oracle with
        the optimistic prior that never forgets, with the ``online`` schedule; with
        ``forget`` < 1, or another prior, a number asks for the test); 0: never. Where
        nothing changes it hardly ever fires (docs/change_detection.md). Under a prior
        below the top of the reward range, the learner's own progress raises its residuals
        (better actions, more rewards above their prediction): hence not by default.
    select_model
        True: where random features apply, with the ``online`` schedule and a fixed budget,
        also learn the linear model (the same oracle on the contexts as they are) from
        every label, and decide with whichever of the two has predicted the labels so far
        better (`regcb_stream.adapt.selection`; ``model_selection`` shows the losses). Not the
        default (False: the random-features model alone), which leave-one-dataset-out on
        the 16 UCI streams prefers (``docs/model_selection.md``).
        Delayed rewards (``decide_event``) keep the random-features model alone.

    Examples
    --------
    >>> learner = RegCB("elimination", beta=0.01, seed=1)
    >>> for t in range(200):
    ...     x = [t % 2, 1 - t % 2]
    ...     action, prob, info = learner.predict(x, ["a", "b", "c"])
    ...     reward = 1.0 if action == ("a" if t % 2 else "b") else 0.0
    ...     learner.learn(x, action, reward, prob, **info)
    >>> learner.pmf([1, 0], ["a", "b", "c"])
    [1.0, 0.0, 0.0]
    >>> learner.pmf([0, 1], ["a", "b", "c"])
    [0.0, 1.0, 0.0]

    """

    random_features: int | RandomFeatures | None = 0  # (a learner saved before: none)
    forget = 1.0  # (a learner saved before forgetting: none)
    change_threshold = 0.0  # (a learner saved before the change test: none)
    _change: ChangeDetector | None = None
    _room = None  # (oracle, models, features) it was last grown to hold (`_grow`)
    _transient = ("_room",)  # not saved (`regcb_stream.persist`)
    random_scale = 1.0
    select_model = False  # (a learner saved before model selection: none)
    _linear: RegCB | None = None  # the linear model beside, for model selection
    _selection: ModelSelection | None = None
    _is_linear = False  # whether this learner is another's linear model
    _class_mellowness = 1e-3  # (a learner saved before the budget was settled per class)
    _own_features: bool | None = False  # (a learner saved before the joint budget: none)

    def __init__(
        self,
        variant: str = DEFAULT_VARIANT,
        *,
        oracle: str | Oracle | None = None,
        beta: float | None = None,
        schedule: str = "online",
        budget: str | None = None,
        mellowness: float | None = None,
        horizon: int | None = None,
        budget_grid: Sequence[float] = DEFAULT_GRID,
        reward_range: tuple[float, float] = (0.0, 1.0),
        seed: int | None = 0,
        warm_start_epochs: int = 0,
        allow_out_of_range: bool = False,
        cross: bool = True,
        intercept: bool = True,
        hash_bits: int | None = None,
        random_features: int | RandomFeatures | None = None,
        random_scale: float = 1.0,
        forget: float = 1.0,
        change_threshold: float | None = None,
        select_model: bool = False,
    ):
        self.variant = variant
        self.oracle = oracle
        self.beta = beta
        self.schedule = schedule
        self.budget = budget
        self.mellowness = mellowness
        self.horizon = horizon
        self.budget_grid = budget_grid
        self.reward_range = reward_range
        self.seed = seed
        self.warm_start_epochs = warm_start_epochs
        self.allow_out_of_range = allow_out_of_range
        self.cross = cross
        self.intercept = intercept
        self.hash_bits = hash_bits
        self.random_features = random_features
        self.random_scale = random_scale
        self.forget = forget
        self.change_threshold = change_threshold
        self.select_model = select_model
        _check_params(self)

        self._rule = rules.decision_rule(variant)
        self._range = (float(reward_range[0]), float(reward_range[1]))
        self._oracle = _make_oracle(oracle, self._range, forget)
        if getattr(self._oracle, "forget", 1.0) < 1.0 and schedule != "online":
            raise ValueError("forgetting needs the online schedule: an oracle that forgets "
                             "learns its labels in order")
        if schedule != "online" and hasattr(self._oracle, "take_piece"):
            self._oracle.piecewise = True  # additive per piece: `regcb_stream.stream.parallel`
        self._sparse_input = getattr(self._oracle, "sparse_input", False)
        self._encoder = FeatureEncoder(cross=cross, intercept=intercept, hash_bits=hash_bits,
                                       expand=_make_features(random_features, random_scale, seed,
                                                             oracle))
        self._sampler = None  # the generator of the draws, made at the first draw
        self._budget_kind = budget or ("beta" if beta is not None else "mellowness")
        self._selector = BudgetSelector(budget_grid) if self._budget_kind == "auto" else None
        if self._selector is not None and not hasattr(self._oracle, "moments"):
            raise ValueError(f"budget='auto' needs an ellipsoid oracle (ridge, bounded ridge, "
                             f"trees), not {type(self._oracle).__name__}")
        self._one_row_ready = self._one_row_oracle()
        self._last: tuple | None = None  # (context, actions, candidates) of the last decide
        self._pending_events: PendingDecisions | None = None  # decide_event's, made lazily
        self._unlied = None  # the event id of the last decide_event, not yet learned (a lie)
        self._rewarded = (0.0, 0)  # sum and number of the rewards of reward_event
        self._labels: dict = {}  # action label -> model id (product class)
        self._ids_of: dict[tuple, np.ndarray] = {}  # offered action list -> model ids
        self._joint: bool | None = None
        self._own_features: bool | None = None  # joint rows: settled at the first example
        self._class_mellowness = DEFAULT_MELLOWNESS  # the default budget: settled likewise
        self._label_types: frozenset = frozenset()  # types of action labels seen
        self._n_labels = 0  # labels learned
        self._n_frozen = 0  # labels behind the frozen decision state
        self._epoch = 1
        self._next_rebuild = schedules.next_rebuild(schedule, 0)
        self._n_epochs = schedules.epochs_until(schedule, horizon) if horizon else 1
        self._change = _make_change_test(change_threshold, self._oracle, schedule, self._range)
        if (select_model and self._encoder.expand is not None and schedule == "online"
                and self._budget_kind in FIXED_BUDGETS):
            self._linear = self._companion()
            self._selection = ModelSelection()

    # -- decisions ---------------------------------------------------------------------

    def decide(self, context, actions: Sequence) -> Decision:
        """Bounds, plausible set and distribution for one context."""
        if self._linear_leads():
            return self._linear.decide(context, actions)
        if self._selector is None and self._n_frozen and self._one_row(context) \
                and (models := self._known_labels(actions)) is not None:
            out = np.empty((4, len(models)))
            if self._predict_dense(context, models, 0.0, out) is not None:
                return Decision(*out)
        d = self._decide(*self._rows([context], actions))
        if d.candidates is None:
            return Decision(d.pmf[0], d.prediction[0], d.low[0], d.high[0])
        self._last = (_snapshot(context), list(actions), d.candidates[0])
        return Decision(d.pmf[0], d.prediction[0], d.low[0], d.high[0], d.candidates[0])

    def decide_many(self, contexts, actions: Sequence) -> Decision:
        """``decide`` for a block of contexts in one computation (rows of the arrays)."""
        if self._linear_leads():
            return self._linear.decide_many(contexts, actions)
        return self._decide(*self._rows(contexts, actions))

    def pmf(self, context, actions: Sequence) -> list[float]:
        """Probability of each action (in the order given) for ``context``."""
        return self.decide(context, actions).pmf.tolist()

    def pmf_many(self, contexts, actions: Sequence) -> np.ndarray:
        """Distributions for a block of contexts, shape ``(n, K)``: equal to ``pmf`` row by
        row, as long as no label is learned in between (one epoch's decisions)."""
        return self.decide_many(contexts, actions).pmf

    def predict(self, context, actions: Sequence) -> tuple[object, float, dict]:
        """Sample an action; return it, its probability and kwargs for ``learn``."""
        leader = self._linear if self._linear_leads() else self
        return leader._predict(context, actions, self._rng())

    def _predict(self, context, actions: Sequence, rng: np.random.Generator
                 ) -> tuple[object, float, dict]:
        """``predict`` by this model, drawing from ``rng``."""
        if self._one_row(context) and (models := self._known_labels(actions)) is not None:
            if self._selector is None:
                drawn = self._predict_dense(context, models, rng.random())
                if drawn is not None:  # (None: a value is not finite; decide says which)
                    return actions[drawn[0]], drawn[1], {}
            elif self._n_frozen:
                values, optimistic, tolerance = self._one_row_arguments(context)
                selector = self._selector
                roots, scale = selector.radius_factors(self._n_frozen, len(actions),
                                                       self._range[1] - self._range[0])
                pmfs = np.empty((len(roots), len(models)))
                drawn = self._oracle.predict_auto(
                    values, models, self.intercept, roots, scale, selector.weights(),
                    optimistic, self._range, tolerance, rng.random(), pmfs)
                if drawn is not None:
                    self._last = (context.copy(), list(actions), pmfs)  # as decide keeps it
                    return actions[drawn[0]], drawn[1], {"candidates": drawn[2]}
        decision = self.decide(context, actions)
        cdf = decision.pmf.cumsum()  # _sample's draw, for one row
        index = min(int(cdf.searchsorted(rng.random() * cdf[-1], "right")), len(cdf) - 1)
        info = {} if decision.candidates is None else {
            "candidates": tuple(decision.candidates[:, index].tolist())}
        return actions[index], float(decision.pmf[index]), info

    def _predict_dense(self, context: np.ndarray, models: np.ndarray, uniform: float,
                       out: np.ndarray | None = None) -> tuple[int, float] | None:
        """The one-row path's decision under a fixed budget (`RidgeOracle.predict_dense`)."""
        values, optimistic, tolerance = self._one_row_arguments(context)
        return self._oracle.predict_dense(values, models, self.intercept,
                                          self._budget(len(models)), optimistic, self._range,
                                          tolerance, uniform, out)

    def _one_row_arguments(self, context: np.ndarray) -> tuple[np.ndarray, bool, float]:
        """The one-row calls' row values, rule and tie tolerance (the oracle grown first)."""
        self._grow(len(self._labels), self._encoder.dim)
        lo, hi = self._range
        return self._row_values(context), self.variant == "optimistic", TIE_TOLERANCE * (hi - lo)

    def predict_many(self, contexts, actions: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """Sampled action indices and their probabilities for a block of contexts; the
        same draws as ``predict`` called row by row."""
        pmf = self.pmf_many(contexts, actions)
        index = _sample(pmf, self._rng().random(len(pmf)))
        return index, pmf[np.arange(len(pmf)), index]

    def score(self, context, actions: Sequence, action) -> float:
        """Probability that the learner plays ``action`` among ``actions`` for ``context``."""
        for i, offered in enumerate(actions):
            if offered == action:
                return self.pmf(context, actions)[i]
        raise ValueError(f"action {action!r} is not among the offered actions")

    # -- learning ----------------------------------------------------------------------

    def learn(
        self, context, action, reward: float, prob: float = 1.0, *, weight: float = 1.0,
        candidates=None, **kwargs
    ) -> None:
        """Learn the ``reward`` of ``action`` (played with probability ``prob``); ``weight``
        is the label's importance weight in the regression (RegCB's is 1).

        With ``budget="auto"``, the label also scores the candidate budgets: ``candidates``
        (from ``predict``'s kwargs) are their probabilities of ``action``; without them,
        those of the last ``decide`` of the same context are used, and a label of any other
        decision teaches the oracle only."""
        _check_prob(prob)
        self._check_reward(reward)
        fitted = self._learn_label(context, action, reward, prob, weight, candidates)
        if self._selecting():
            self._selection.observe(float(reward), fitted, self._linear._learn_label(
                context, action, reward, prob, weight, None), float(weight))

    def _learn_label(self, context, action, reward: float, prob: float, weight: float,
                     candidates) -> float | None:
        """``learn`` one checked label; return the fit's prediction of it before."""
        if (self._one_row(context) and self.schedule == "online" and action in self._labels
                and not self._oracle._pending):
            fitted = self._oracle.learn_dense(self._row_values(context), self.intercept,
                                              self._labels[action], float(reward),
                                              float(weight))
            if fitted is not None:  # learned and rebuilt at once
                if self._selector is not None:
                    self._score_one(context, action, candidates, prob, reward)
                self._n_labels += 1
                self._rebuilt()
                if self._change is not None and self._change.observe(float(reward), fitted):
                    self._changed()
                return fitted
        rows, models = self._played_rows([context], [action])
        if self._selector is not None:
            self._score_one(context, action, candidates, prob, reward)
        fitted = self._learn_one(rows, int(models[0]), float(reward), float(weight))
        return None if fitted is None else float(fitted[0])

    def learn_many(self, contexts, actions: Sequence, rewards, probs=None, weights=None,
                   candidates=None) -> None:
        """Learn a block of labels; same state as calling ``learn`` row by row
        (``candidates``: ``(n, J)``, each candidate budget's probability of the played
        action, from ``decide_many``'s ``Decision.candidates``)."""
        rewards = np.asarray(rewards, dtype=float)
        weights = np.ones(len(rewards)) if weights is None else np.asarray(weights, float)
        self._check_labels(rewards, np.ones(len(rewards)) if probs is None else probs)
        fitted = self._learn_block(contexts, actions, rewards, probs, weights, candidates)
        if self._selecting():
            self._selection.observe_many(rewards, fitted, self._linear._learn_block(
                contexts, actions, rewards, probs, weights, None), weights)

    def _learn_block(self, contexts, actions: Sequence, rewards: np.ndarray, probs,
                     weights: np.ndarray, candidates) -> np.ndarray | None:
        """``learn_many`` of checked labels by this model alone (`_learn_rows`' fits)."""
        rows, models = self._played_rows(contexts, actions)
        if self._selector is not None and candidates is not None and probs is not None:
            self._score(np.asarray(candidates, float), probs, rewards)
        return self._learn_rows(rows, models, rewards, weights)

    def replay(self, contexts, actions: Sequence, played, rewards, probs=None, weights=None
               ) -> Decision:
        """Progressive validation of a logged stream: for each context in turn, decide,
        then learn its logged label (``played[i]``: the index into the offered actions of
        the logged action, -1 for a context without a label).

        The same decisions and state as ``decide`` and ``learn`` called row by row, but
        each epoch's rows are decided in one computation, and with the ridge oracle, the
        ``online`` schedule and a fixed budget the whole block runs in one compiled loop.

        Parameters
        ----------
        contexts
            A block of contexts (``[{}] * n`` when the joint class's rows carry all the
            features).
        actions
            The actions offered in every round, or the joint class's encoded rows
            ``EncodedRows`` of shape ``(n, K, L)``.
        played, rewards, probs, weights
            Per row: the logged action's index (-1: no label), its reward, the probability
            it was played with and its importance weight in the regression (default 1).

        Returns
        -------
        Decision
            Each row's decision, made before its own label was learned.

        Examples
        --------
        >>> learner = RegCB(seed=0)
        >>> which, logged = np.array([0, 1] * 50), np.array([0, 0, 1, 1] * 25)
        >>> decision = learner.replay(np.eye(2)[which], ["a", "b"], logged, logged == which)
        >>> decision.pmf[-2:].tolist(), learner.n_labels
        ([[1.0, 0.0], [0.0, 1.0]], 100)
        """
        played, rewards, probs, weights = self._checked_log(played, rewards, probs, weights)
        decision = self._replay(contexts, actions, played, rewards, probs, weights)
        if not self._selecting():
            return decision
        linear = self._linear._replay(contexts, actions, played, rewards, probs, weights)
        rows = np.flatnonzero(played >= 0)  # each row decided by the leader before it
        before = self._selection.observe_many(rewards[rows], *(
            d.prediction[rows, played[rows]] for d in (decision, linear)), weights[rows])
        leads = np.append(before, self._selection.linear_leads)[
            np.searchsorted(rows, np.arange(len(played)))][:, None]
        return Decision(*(np.where(leads, getattr(linear, part), getattr(decision, part))
                          for part in ("pmf", "prediction", "low", "high")))

    def _replay(self, contexts, actions: Sequence, played, rewards, probs, weights
                ) -> Decision:
        """``replay`` of a checked log by this model alone."""
        n, labelled = len(played), np.flatnonzero(played >= 0)
        encoded = isinstance(actions, EncodedRows)  # the joint class's rows, per context
        decisions, start, first = [], 0, 0  # labelled[first]: the first label from start
        encoded_rows = None  # (the compiled loop's: the whole block's, encoded once)
        while start < n:
            compiled = self._compiled_replay()  # (then blocks end at the change test's checks)
            room = (self.labels_until_rebuild if not compiled else n if self._change is None
                    else self._change.labels_until_check)
            rows = labelled[first:first + room]
            stop = int(rows[-1]) + 1 if len(rows) == room else n
            block = slice(start, stop)
            offered = actions[block] if encoded else actions
            first += len(rows)
            if compiled:
                if encoded_rows is None:
                    encoded_rows = self._rows(contexts[start:], actions[start:] if encoded
                                              else actions), start
                (whole, models), at = encoded_rows
                decision = self._replay_compiled(whole.take(slice(start - at, stop - at)),
                                                 models, played[block], rewards[block],
                                                 probs[block], weights[block])
                if self._change is not None and len(rows):
                    self._test_change(rewards[rows], decision.prediction[rows - start,
                                                                         played[rows]])
            else:
                decision = self._decide(*self._rows(contexts[block], offered))
                if len(rows):
                    self._learn_block(
                        _take(contexts, rows), _played_actions(actions, rows, played[rows]),
                        rewards[rows], probs[rows], weights[rows],
                        None if decision.candidates is None
                        else decision.candidates[rows - start, :, played[rows]])
            decisions.append(decision)
            start = stop
        return Decision(*(np.concatenate(parts) for parts in zip(
            *((d.pmf, d.prediction, d.low, d.high) for d in decisions))))

    def _checked_log(self, played, rewards, probs, weights) -> tuple[np.ndarray, ...]:
        """A logged block's labels as arrays, or the error of its first bad label."""
        n = len(played)
        played = np.asarray(played, dtype=np.intp).reshape(n)
        rewards = np.asarray(rewards, dtype=float).reshape(n)
        probs = np.ones(n) if probs is None else np.asarray(probs, dtype=float).reshape(n)
        weights = np.ones(n) if weights is None else np.asarray(weights, float).reshape(n)
        labelled = np.flatnonzero(played >= 0)
        self._check_labels(rewards[labelled], probs[labelled])
        return played, rewards, probs, weights

    def _check_labels(self, rewards: np.ndarray, probs) -> None:
        """The error of the first bad label of a block, if any."""
        if np.asarray(probs).dtype.kind not in "fiub":  # (the error names the value)
            for prob in probs:
                _check_prob(prob)
        probs = np.asarray(probs, dtype=float)
        lo, hi = self._range
        bad = ~((probs > 0) & (probs <= 1) & np.isfinite(rewards)
                & (self.allow_out_of_range | ((rewards >= lo) & (rewards <= hi))))
        for i in np.flatnonzero(bad)[:1].tolist():
            _check_prob(float(probs[i]))
            self._check_reward(float(rewards[i]))

    def _replay_part(self, contexts, actions, played, rewards, probs, weights, first: int,
                     pieces: list) -> Decision:
        """Part of one epoch of a logged block, every context labelled, its first label
        the ``first``-th: the decisions of the frozen state, and the statistics of the
        labels appended to ``pieces`` at each piece's end (`RidgeOracle.take_piece`);
        those after the last stay open. The learner itself learns nothing
        (`regcb_stream.stream.parallel`'s parts)."""
        played, rewards, probs, weights = self._checked_log(played, rewards, probs, weights)
        if (played < 0).any():
            raise ValueError("no label: a parallel replay needs every example labelled")
        decision = self.decide_many(contexts, actions)
        rows = np.arange(len(played))
        x, models = self._played_rows(contexts, _played_actions(actions, rows, played))
        x = self._oracle_examples(x)
        start = 0
        while start < len(rows):
            room = self._labels_until_piece_end(first + start)
            stop = min(len(rows), start + room)
            block = slice(start, stop)
            self._oracle.learn_many(_part_of(x, block), models[block], rewards[block],
                                    weights[block])
            if stop - start == room:
                pieces.append(self._oracle.take_piece())
            start = stop
        return decision

    def _absorb(self, pieces: list, n: int) -> None:
        """Learn ``n`` labels by their pieces' statistics, in order (`_replay_part`); the
        last stays open unless it ends at a piece's end."""
        *whole, last = pieces
        for piece in whole:
            self._oracle.add_piece(*piece)
        self._n_labels += n
        if self._labels_until_piece_end() == PIECE_LABELS or (
                self._n_labels == self._next_rebuild):
            self._oracle.add_piece(*last)
        else:
            self._oracle.open_piece(*last)
        if self._n_labels == self._next_rebuild:
            self._rebuild()

    def _compiled_replay(self) -> bool:
        """Whether ``replay`` can run in the oracle's compiled online loop."""
        return (getattr(self._oracle, "compiled", False) and self.schedule == "online"
                and (self._budget_kind in FIXED_BUDGETS or self._selector is not None
                     and hasattr(self._oracle, "replay_auto"))
                and self._epoch > self.warm_start_epochs)

    def _replay_compiled(self, rows: SparseRows, models: np.ndarray, played, rewards, probs,
                         weights) -> Decision:
        """A block of encoded rows (`_rows`) through the oracle's compiled online loop."""
        k = rows.shape[1]
        if (played >= k).any():
            raise ValueError(f"played action index {int(played.max())} is not among the "
                             f"{k} offered actions")
        counts = self._n_labels + np.arange(np.count_nonzero(played >= 0) + 1)
        lo, hi = self._range
        optimistic, tolerance = self.variant == "optimistic", TIE_TOLERANCE * (hi - lo)
        if self._selector is None:
            pmf, prediction, low, high = self._oracle.replay_online(
                rows, models, played, rewards, weights, self._budget_after(counts, k),
                optimistic, self._range, tolerance)
        else:
            scales = self._selector.radius_scales(counts, k, hi - lo)
            pmf, prediction, low, high = self._oracle.replay_auto(
                rows, models, played, rewards, weights, probs, scales, self._selector,
                optimistic, self._range, tolerance)
        self._n_labels += len(counts) - 1
        self._rebuilt(epochs=len(counts) - 1)  # one per label
        return Decision(pmf, prediction, low, high)

    def play(self, contexts, actions: Sequence, reveal, uniforms=None
             ) -> tuple[np.ndarray, Decision]:
        """Simulate bandit feedback on a block of rounds: for each context in turn, decide,
        draw an action, ``reveal`` its reward and learn it (probability as played).

        The same as that loop written with ``predict``-style draws, ``decide`` and
        ``learn``, but each epoch's rounds are decided in one computation and, for dense
        contexts with labelled actions, the contexts are checked and encoded once for the
        whole block: the per-round cost of the ``online`` schedule drops severalfold.

        Parameters
        ----------
        contexts
            A block of contexts (rows of an array, or a sequence).
        actions
            The actions offered in every round.
        reveal
            ``reveal(rounds, indices)``: rewards of the actions ``actions[indices[i]]`` in
            rounds ``rounds[i]`` (positions in ``contexts``), one array.
        uniforms
            One uniform in [0, 1) per round for the inverse-CDF draws (default: from the
            learner's generator).

        Returns
        -------
        (indices, decision)
            The indices into ``actions`` played, and the ``Decision`` of each round
            (arrays with a row per round; without the candidates' distributions).

        Examples
        --------
        >>> rewards = np.array([[1.0, 0.0], [0.0, 1.0]] * 100)
        >>> learner = RegCB("optimistic", beta=1e-3, seed=0)
        >>> played, decision = learner.play(np.eye(2)[[0, 1] * 100], ["a", "b"],
        ...                                 lambda t, i: rewards[t, i])
        >>> float(rewards[np.arange(200), played][-100:].mean())
        1.0
        """
        n = len(contexts)
        u = self._rng().random(n) if uniforms is None else np.asarray(uniforms, dtype=float)
        encoded = None  # checked and encoded once; rows are learned by model id
        if not self._is_joint(actions):  # (by each model: model selection's two)
            encoded = [self._rows(contexts, actions)]
            if self._selecting():
                encoded.append(self._linear._rows(contexts, actions))
            learners = (self, self._linear)[:len(encoded)]
            ids = [np.arange(len(learner._labels))[models]  # of the played rows
                   for learner, (_, models) in zip(learners, encoded)]
        decisions, played, start = [], np.empty(n, dtype=np.intp), 0
        while start < n:
            stop = min(n, start + self._next_rebuild - self._n_labels)
            block = slice(start, stop)
            if encoded is not None:
                options = [learner._decide(x.take(block), models)
                           for learner, (x, models) in zip(learners, encoded)]
                decision = options[self._linear_leads()]
            else:
                decision = self.decide_many(contexts[block], actions)
            index = _sample(decision.pmf, u[block])
            rewards = _revealed(reveal(np.arange(start, stop), index), stop - start, start)
            rows = np.arange(stop - start)
            probs = decision.pmf[rows, index]
            if decision.candidates is not None:
                self._score(decision.candidates[rows, :, index], probs, rewards)
            if encoded is None:
                self.learn_many(contexts[block], [actions[i] for i in index.tolist()],
                                rewards, probs)
            else:
                for reward in rewards.tolist():
                    self._check_reward(reward)
                fits = [option.prediction[rows, index] for option in options]  # (online)
                for learner, (x, _), own, fitted in zip(learners, encoded, ids, fits):
                    learner._learn_rows(x.take((block, slice(0, 1))), own[index], rewards,
                                        np.ones(stop - start), fitted)
                if len(fits) > 1:
                    self._selection.observe_many(rewards, *fits)
            decisions.append(decision)
            played[start:stop] = index
            start = stop
        return played, Decision(*(np.concatenate(parts) for parts in zip(
            *((d.pmf, d.prediction, d.low, d.high) for d in decisions))))

    def _learn_rows(self, rows: SparseRows, models: np.ndarray, rewards: np.ndarray,
                    weights: np.ndarray, fitted: np.ndarray | None = None
                    ) -> np.ndarray | None:
        """Teach the oracle rows ``(n, 1, L)``, rebuilding at the schedule's points (one
        row, the ``online`` schedule's case, by ``learn``: oracles learn a block as row by
        row); ``fitted``: the fit's predictions of one row, if known (`_fitted`). Returns
        the fit's prediction of each row before its epoch learned it, if the change test or
        model selection asks for them (else None)."""
        if len(rewards) == 1:
            return self._learn_one(rows, int(models[0]), float(rewards[0]), float(weights[0]),
                                   fitted)
        x, fits = self._oracle_examples(rows), []
        start = 0
        while start < len(rewards):
            stop = min(len(rewards), start + self._next_rebuild - self._n_labels,
                       start + self._labels_until_piece_end())
            block = slice(start, stop)
            fitted = None if not self._fits_needed() else self._fitted(rows.take(block),
                                                                       models[block])
            self._oracle.learn_many(_part_of(x, block), models[block], rewards[block],
                                    weights[block])
            self._learned(stop - start)
            if fitted is not None and self._change is not None:
                self._test_change(rewards[block], fitted)
            fits.append(fitted)
            start = stop
        return np.concatenate(fits) if self._fits_needed() else None

    def _learn_one(self, rows: SparseRows, model: int, reward: float, weight: float,
                   fitted: np.ndarray | None = None) -> np.ndarray | None:
        """Teach the oracle one row ``(1, 1, L)`` (``learn``), rebuilding at the schedule's
        points; then the change test (``fitted``: the fit's prediction, if known). Returns
        the prediction before, if the change test or model selection asks for it."""
        if fitted is None and self._fits_needed():
            fitted = self._fitted(rows, np.array([model]))
        self._oracle.learn(self._example(rows), model, reward, weight)
        self._learned(1)
        if self._change is not None:
            self._test_change(np.array([reward]), fitted)
        return fitted

    def _fits_needed(self) -> bool:
        """Whether learning needs the fit's predictions before (the change test's, and
        model selection's: this learner's and its linear model's)."""
        return self._change is not None or self._selection is not None or self._is_linear

    def _fitted(self, rows: SparseRows, models: np.ndarray) -> np.ndarray:
        """The current fit's predictions of labelled rows ``(n, 1, L)``, each under its own
        model (the numbers a decision's ``prediction`` has)."""
        return np.array([self._oracle.predict(self._oracle_rows(rows.take(slice(i, i + 1))),
                                              models[i:i + 1])[0, 0]
                         for i in range(len(models))])

    def _test_change(self, rewards: np.ndarray, fitted: np.ndarray) -> None:
        """Show the change test labels just learned and their predictions before; keep
        ``KEEP`` of every label's weight when it detects a change (`regcb_stream.adapt.change`)."""
        change = self._change
        if (change.observe(float(rewards[0]), float(fitted[0])) if len(rewards) == 1
                else change.observe_many(rewards, fitted)):
            self._changed()

    def _changed(self) -> None:
        """A change detected: keep ``KEEP`` of every label's weight."""
        self._oracle.shrink(KEEP)
        self._oracle.rebuild()

    def _learned(self, n: int) -> None:
        """Count ``n`` labels just learned: close the oracle's piece at a piece's end,
        rebuild at an epoch's."""
        self._n_labels += n
        if self._n_labels == self._next_rebuild:
            self._rebuild()
        elif self._labels_until_piece_end() == PIECE_LABELS:
            self._oracle.close_piece()

    def _labels_until_piece_end(self, n_labels: int | None = None) -> int:
        """Labels until the open piece closes, after ``n_labels`` (default: those learned):
        epoch schedules with a ridge oracle learn in pieces (`regcb_stream.stream.parallel`),
        closed at every ``PIECE_LABELS``-th label and at every rebuild."""
        if not getattr(self._oracle, "piecewise", False):
            return 2**62
        return PIECE_LABELS - (self._n_labels if n_labels is None else n_labels) % PIECE_LABELS

    def _example(self, rows: SparseRows):
        """One learned row ``(1, 1, L)`` as the oracle's ``learn`` takes it."""
        x = self._oracle_examples(rows)
        if not isinstance(x, SparseRows):
            return x[0]
        return x.value[0, 0] if x.index is None else (x.index[0, 0], x.value[0, 0])

    # -- state -------------------------------------------------------------------------

    def _companion(self) -> RegCB:
        """The linear model of model selection: this learner without random features."""
        linear = self._fresh(random_features=0, select_model=False)
        linear._is_linear = True
        return linear

    def _selecting(self) -> bool:
        """Whether the linear model learns beside this one: dropped once the contexts
        turn out to be dicts or the actions rows of features (no random features: the two
        models are one)."""
        if self._linear is not None and (self._encoder.expand is None or self._joint):
            self._linear = self._selection = None
        return self._linear is not None

    def _linear_leads(self) -> bool:
        """Whether the linear model decides (model selection, `regcb_stream.adapt.selection`)."""
        return self._selection is not None and self._selection.linear_leads

    @property
    def model_selection(self) -> dict | None:
        """With model selection (``select_model``): the leading model, each model's
        prequential squared loss and the labels scored (None without)."""
        return None if self._selection is None else self._selection.state()

    def _rng(self) -> np.random.Generator:
        """The generator of the draws (made at the first: importing numpy.random costs the
        command, which never draws, start-up time)."""
        if self._sampler is None:
            self._sampler = np.random.default_rng(self.seed)
        return self._sampler

    @property
    def n_labels(self) -> int:
        """Number of labels learned."""
        return self._n_labels

    @property
    def labels_until_rebuild(self) -> int:
        """Labels still to learn before the decision state is rebuilt (the epoch's end)."""
        return self._next_rebuild - self._n_labels

    @property
    def epoch(self) -> int:
        """Current epoch (1 before the first rebuild)."""
        return self._epoch

    @property
    def changes_detected(self) -> int | None:
        """Changes the change test has detected (None: no test, `change_threshold`)."""
        return None if self._change is None else self._change.changes

    @property
    def budget_selection(self) -> dict | None:
        """With ``budget="auto"``: the candidate budgets (mellowness), their weights in the
        played mixture, their importance-weighted reward estimates, the labels that scored
        them and the leading budget (``None`` with a fixed budget)."""
        return None if self._selector is None else self._selector.state()

    @property
    def budget_in_force(self) -> str:
        """The budget, in words (for summaries): fixed, or the automatic choice's leader."""
        if self._selector is not None:
            return f"automatic, leading mellowness {self._selector.state()['leader']:g}"
        if self._budget_kind == "beta":
            return f"beta {self._beta:g}"
        if self._budget_kind == "summed":
            return f"beta {self._beta:g} on the summed loss"
        if self._budget_kind == "mellowness":
            return f"mellowness {self._mellowness:g}"
        return f"theory (horizon {self.horizon})"

    def decide_event(self, event_id, context, actions: Sequence) -> tuple[object, float]:
        """``predict`` for a decision whose reward comes later (`reward_event`): sample an
        action, keep the decision under ``event_id``, return the action and its
        probability. See `regcb_stream.adapt.events` for the window of waiting decisions.

        A decision still waiting for its reward when the next one is made is learned with
        a lie until its reward comes (`_lie`).

        >>> learner = RegCB(seed=0)
        >>> action, prob = learner.decide_event("e1", [1.0, 0.0], ["a", "b"])
        >>> learner.reward_event("e1", 1.0)
        >>> learner.events["rewarded"], learner.n_labels
        (1, 1)
        """
        self._linear = self._selection = None  # (the random-features model alone: `_lie`)
        self._lie()
        action, prob, info = self.predict(context, actions)
        for decision, reward in self._waiting().add(
                event_id, (_snapshot(context), action, prob, info)):
            self._settle(decision, reward)  # (timed out: the default reward, or dropped)
        self._unlied = event_id
        return action, prob

    def reward_event(self, event_id, reward: float) -> None:
        """Learn the reward of the decision made under ``event_id`` (rewards are learned in
        the order they arrive)."""
        self._check_reward(reward)
        decision = self._waiting().take(event_id)
        total, count = getattr(self, "_rewarded", (0.0, 0))
        self._rewarded = (total + float(reward), count + 1)
        self._settle(decision, reward)

    def _lie(self) -> None:
        """Learn the last `decide_event`'s decision, if it still waits for its reward, with
        a lie: the mean reward of `reward_event` so far (the middle of the reward range
        before the first).

        The constant liar of batch Bayesian optimization (Ginsbourger, Le Riche and
        Carraro, "Kriging is well-suited to parallelize optimization", 2010): pending
        evaluations are learned at once with a constant. With the optimistic prior, an
        action not yet rewarded in a region predicts the top of the reward range there,
        and without the lie it is played again and again until its first rewards come; a
        typical reward pulls it down as the real one will, most likely. The real reward
        replaces the lie exactly (`_settle`; ridge: ``b += (reward - lie) x``), so once
        every reward has come, the state is that of the real rewards. Only exact ridge (an
        oracle that can ``relabel``) with the ``online`` schedule lies; lies are not
        labels (``n_labels``), nor do they score budgets; a reward that comes before the
        next decision (no delay) is learned as ``learn`` does."""
        event_id, self._unlied = getattr(self, "_unlied", None), None
        pending = self._waiting().waiting
        decision = pending.get(event_id)
        if (decision is None or len(decision) != 4 or self.schedule != "online"
                or not hasattr(self._oracle, "relabel")):
            return
        total, count = getattr(self, "_rewarded", (0.0, 0))
        lie = total / count if count else sum(self._range) / 2
        forgets = getattr(self._oracle, "forget", 1.0) < 1.0  # (then the lie's time, too)
        rows, models = self._played_rows(*([part] for part in decision[:2]))
        fitted = None if self._change is None else float(self._fitted(rows, models)[0])
        pending[event_id] = (*decision, lie, self._oracle.clock if forgets else None, fitted)
        self._oracle.learn(self._example(rows), int(models[0]), lie)
        self._oracle.rebuild()

    def _settle(self, decision: tuple, reward: float | None) -> None:
        """Learn a waiting decision's reward (None: drop it), replacing the lie it was
        learned with, if any (`_lie`)."""
        context, action, prob, info, *lied = decision
        if not lied:
            if reward is not None:
                self.learn(context, action, reward, prob, **info)
            return
        lie, at, fitted = (*lied, None, None)[:3]  # (a model file's of before: the lie alone)
        at = {} if at is None else {"at": at}
        x, model = self._event_row(context, action)
        if reward is None:  # dropped: the lie is unlearned
            self._oracle.learn(x, model, lie, -1.0, **at)
            self._oracle.rebuild()
            return
        self._check_reward(reward)
        if hasattr(self._oracle, "relabel"):
            self._oracle.relabel(x, model, float(reward) - lie, **at)
        else:  # (handed over to the bounded oracle since)
            self._oracle.learn(x, model, lie, -1.0, **at)
            self._oracle.learn(x, model, float(reward), **at)
        if self._selector is not None and info.get("candidates") is not None:
            self._selector.update(info["candidates"], float(prob), self._unit_reward(reward))
        self._n_labels += 1
        self._rebuild()
        if fitted is not None and self._change is not None:
            self._test_change(np.array([float(reward)]), np.array([fitted]))

    def _event_row(self, context, action) -> tuple[object, int]:
        """A decision's row as the oracle's ``learn`` takes it, and its model."""
        rows, models = self._played_rows([context], [action])
        return self._example(rows), int(models[0])

    def wait_for_rewards(self, window: int = 10_000, default_reward: float | None = None
                         ) -> None:
        """Set the window of decisions waiting for their rewards, and the reward a decision
        that times out is learned with (None: dropped); see `regcb_stream.adapt.events`. The
        decisions waiting so far are dropped."""
        for decision in self._waiting().waiting.values():
            if len(decision) > 4:  # (its lie unlearned)
                self._settle(decision, None)
        self._pending_events = PendingDecisions(window, default_reward)

    @property
    def events(self) -> dict:
        """Counts of the decisions made with event ids: decided, rewarded, defaulted (timed
        out, learned with the default reward), dropped (timed out), and still waiting."""
        pending = self._waiting()
        return {**pending.counts, "waiting": len(pending.waiting)}

    def _waiting(self) -> PendingDecisions:
        if getattr(self, "_pending_events", None) is None:
            self._pending_events = PendingDecisions()
        return self._pending_events

    def change_exploration(self, variant: str | None = None, **budget) -> None:
        """Change a trained learner's variant and exploration budget, as VW allows on load:
        ``budget`` as the constructor's (``mellowness=``, ``beta=``, or ``budget="auto"``
        with ``budget_grid=``); what it has learned stays.

        >>> learner = RegCB(mellowness=1e-3)
        >>> learner.change_exploration("elimination", mellowness=0.01)
        >>> learner.variant, learner.budget_in_force
        ('elimination', 'mellowness 0.01')
        """
        if variant is not None:
            self._rule = rules.decision_rule(variant)
            self.variant = variant
        if budget:
            self.beta, self.mellowness = budget.get("beta"), budget.get("mellowness")
            self.budget = budget.get("budget")
            self.budget_grid = budget.get("budget_grid", self.budget_grid)
            _check_params(self)
            self._budget_kind = self.budget or ("beta" if self.beta is not None
                                                else "mellowness")
            self._selector = (BudgetSelector(self.budget_grid) if self._budget_kind == "auto"
                              else None)
        self._one_row_ready = self._one_row_oracle()
        if self._linear is not None:  # (model selection needs a fixed budget)
            if self._budget_kind in FIXED_BUDGETS:
                self._linear.change_exploration(variant, **budget)
            else:
                self._linear = self._selection = None

    @property
    def oracle_in_use(self) -> str:
        """The oracle as it stands (exact ridge hands over to bounded ridge as the
        features grow), e.g. ``"exact ridge, 26 models of 17 features"``."""
        describe = getattr(self._oracle, "describe", None)
        return describe() if describe else type(self._oracle).__name__

    @property
    def encoder(self) -> FeatureEncoder:
        """The learner's feature columns (for contexts given as ``EncodedRows``)."""
        return self._encoder

    def clone(self) -> RegCB:
        """A fresh learner with the same parameters."""
        return self._fresh()

    def _fresh(self, **changes) -> RegCB:
        """A fresh learner with the same parameters but ``changes``."""
        import inspect  # here: it costs the command's start-up a few milliseconds

        params = inspect.signature(type(self)).parameters
        return type(self)(**{name: getattr(self, name) for name in params} | changes)

    # -- internals ---------------------------------------------------------------------

    def _decide(self, rows: SparseRows, models: np.ndarray) -> Decision:
        n, k = rows.shape[:2]
        phi = self._oracle_rows(rows)
        if self._n_frozen == 0 or self._epoch <= self.warm_start_epochs:  # F_1 = F
            lo, hi = self._range
            prediction = self._oracle.predict(phi, models)
            pmf = rules.uniform(n, k)
            candidates = None if self._selector is None else np.broadcast_to(
                pmf[:, None, :], (n, len(self._selector.grid), k))
            return Decision(pmf, prediction, np.full((n, k), lo), np.full((n, k), hi),
                            candidates)
        if self._selector is not None:
            return self._decide_auto(phi, models)
        if getattr(self._oracle, "compiled", False):
            lo, hi = self._range
            pmf, prediction, low, high = self._oracle.decisions(
                phi, models, self._budget(k), self.variant == "optimistic", self._range,
                TIE_TOLERANCE * (hi - lo))
            return Decision(pmf, prediction, low, high)
        prediction, low, high = self._oracle.bounds(phi, models, self._budget(k))
        low, high = clip_bounds(low, high, self._range)
        tolerance = TIE_TOLERANCE * (self._range[1] - self._range[0])
        return Decision(self._rule(low, high, tolerance), prediction, low, high)

    def _decide_auto(self, phi, models) -> Decision:
        """Every candidate budget's distribution and the selector's mixture of them, with
        the leading candidate's bounds."""
        tolerance = TIE_TOLERANCE * (self._range[1] - self._range[0])
        return Decision(*candidate_decisions(self._selector, self._oracle, self._rule, phi,
                                             models, self._n_frozen, self._range, tolerance))

    def _score(self, candidates: np.ndarray, probs, rewards) -> None:
        """Score the candidate budgets with labels: ``candidates`` ``(n, J)`` are their
        probabilities of the played actions, ``probs`` the played probabilities."""
        for row, prob, reward in zip(np.asarray(candidates, float).reshape(
                len(rewards), -1).tolist(), np.asarray(probs, float).ravel().tolist(),
                np.asarray(rewards, float).tolist()):
            self._selector.update(row, prob, self._unit_reward(reward))

    def _score_one(self, context, action, candidates, prob, reward) -> None:
        """Score the candidate budgets with one label: ``candidates`` are their
        probabilities of ``action`` (None: those of the last decision of ``context``)."""
        if candidates is None:
            candidates = self._candidates_of(context, action)
        if candidates is not None:
            self._selector.update(candidates, float(prob), self._unit_reward(reward))

    def _unit_reward(self, reward: float) -> float:
        """A reward scaled to [0, 1] by the reward range (clipped, for out-of-range ones)."""
        lo, hi = self._range
        return min(max((float(reward) - lo) / (hi - lo), 0.0), 1.0)

    def _candidates_of(self, context, action):
        """The candidates' probabilities of ``action`` at the last decision, if it was
        for ``context`` and offered ``action`` (else None)."""
        if self._last is None:
            return None
        last_context, actions, candidates = self._last
        if not _same_context(last_context, context):
            return None
        for i, offered in enumerate(actions):
            if offered == action:
                return candidates[:, i].tolist()
        return None

    @property
    def _beta(self) -> float:
        return DEFAULT_BETA if self.beta is None else self.beta

    @property
    def _mellowness(self) -> float:
        return self._class_mellowness if self.mellowness is None else self.mellowness

    def _budget(self, n_actions: int) -> float:
        return self._budget_after(self._n_frozen, n_actions)

    def _budget_after(self, n_labels, n_actions: int):
        """The budget of a decision state built from ``n_labels`` labels (NaN: none, the
        uniform play of the first epoch); an array of counts gives an array of budgets."""
        budget = schedules.loss_budget(
            self._budget_kind,
            n_labels=n_labels,
            n_actions=n_actions,
            span=self._range[1] - self._range[0],
            beta=self._beta,
            mellowness=self._mellowness,
            epoch=self._epoch,
            n_epochs=self._n_epochs,
            dim=self._encoder.dim,
            horizon=self.horizon,
        )
        if isinstance(n_labels, np.ndarray):
            return np.where(n_labels > 0, budget, np.nan)
        return budget if n_labels else math.nan

    def _one_row(self, context) -> bool:
        """Whether one context's decision or label takes the compiled one-row path: a
        float vector of the dense contexts' length, the compiled ridge oracle over dense
        rows, actions that are labels, past the warm start."""
        return (self._one_row_ready and type(context) is np.ndarray and context.ndim == 1
                and context.dtype == np.float64 and context.flags.c_contiguous
                and context.size == self._encoder.dense_dim and self._joint is False
                and self._oracle._blocks is None and self._epoch > self.warm_start_epochs)

    def _row_values(self, context: np.ndarray) -> np.ndarray:
        """A dense context's features after the intercept (the compiled one-row calls'):
        with random features, mapped once for a decision and the label of the same
        context. A value that is not finite maps to values that are not either: the
        compiled calls refuse them, and the general path they hand over to names it."""
        return context if self._encoder.expand is None else self._encoder.expanded(context)

    def _one_row_oracle(self) -> bool:
        """The compiled loops' case: a compiled ellipsoid oracle with one-row calls (exact
        ridge) and a fixed budget or the automatic one."""
        return (getattr(self._oracle, "compiled", False) and hasattr(self._oracle, "learn_dense")
                and (self._budget_kind in FIXED_BUDGETS or self._selector is not None))

    def _grow(self, n_models: int, dim: int) -> None:
        """Make room in the oracle for ``n_models`` models of ``dim`` features; an oracle
        that would outgrow itself (exact ridge past ``max_exact``) hands over to its
        bounded form first."""
        room = self._room
        if room is not None and room[0] is self._oracle and n_models <= room[1] \
                and dim <= room[2]:
            return
        if not getattr(self._oracle, "fits", lambda *_: True)(n_models, dim):
            if getattr(self._oracle, "piecewise", False):
                self._oracle.close_piece()
            self._oracle = self._oracle.bounded(n_models)
            self._one_row_ready = self._one_row_oracle()
        if hasattr(self._oracle, "dim_limit"):  # room for every hashed slot at most
            self._oracle.dim_limit = self._encoder.max_dim
        self._oracle.grow(n_models, dim)
        self._room = (self._oracle, n_models, dim)

    def _rebuild(self) -> None:
        if getattr(self._oracle, "piecewise", False):
            self._oracle.close_piece()
        self._oracle.rebuild()
        self._rebuilt()

    def _rebuilt(self, epochs: int = 1) -> None:
        """Bookkeeping of ``epochs`` rebuilds of the oracle's decision state, the last
        after the labels learned so far."""
        self._n_frozen = self._n_labels
        self._epoch += epochs
        if self._selector is not None:
            self._selector.freeze()
        self._next_rebuild = schedules.next_rebuild(self.schedule, self._n_labels)

    def _rows(self, contexts, actions: Sequence) -> tuple[SparseRows, np.ndarray]:
        """The feature rows of a block of decisions, ``(n, K, L)`` (the product class's K
        actions share their context's row, a broadcast view), and each action's model."""
        encoder, n = self._encoder, len(contexts)
        if self._is_joint(actions):
            k = actions.index.shape[-2] if isinstance(actions, EncodedRows) else len(actions)
            index, value = (a.reshape(n, k, -1) for a in encoder.joint_rows(contexts, actions))
            models = np.zeros(k, dtype=np.intp)
            self._settle_joint(index[0] if index is not None else None, value[0])
        else:
            index, value = encoder.context_rows(contexts)
            index = None if index is None else _per_action(index, len(actions))
            self._settle_model()
            value, models = _per_action(value, len(actions)), self._model_ids(actions)
        self._grow(max(len(self._labels), 1), encoder.dim)
        return SparseRows(index, value, encoder.dim), models

    def _played_rows(self, contexts, actions: Sequence) -> tuple[SparseRows, np.ndarray]:
        """The feature rows of a block of labels, ``(n, 1, L)``, and the played actions'
        models."""
        encoder = self._encoder
        if self._is_joint(actions):
            index, value = encoder.joint_rows(contexts, actions, played=True)
            models = np.zeros(len(value), dtype=np.intp)
            self._settle_joint(None, value[:0])  # a label before any decision
        else:
            index, value = encoder.context_rows(contexts)
            self._settle_model()
            models = self._played_ids(actions)
        self._grow(max(len(self._labels), 1), encoder.dim)
        return SparseRows(None if index is None else index[:, None], value[:, None],
                          encoder.dim), models

    def _settle_model(self) -> None:
        """At the first example with actions as labels: over the contexts as they are (no
        random features: dict contexts, ``random_features=0``), the linear model's default
        budget is ``LINEAR_MELLOWNESS`` and the default oracle takes ``l2 = LINEAR_L2``,
        both chosen with the long-horizon rule (``docs/defaults.md``): with the
        random-features model's its regret grows linearly over 200,000 rounds of some
        realizable problems."""
        if not self._labels and self._encoder.expand is None:
            self._class_mellowness = LINEAR_MELLOWNESS
            if self.oracle is None:
                self._oracle.l2 = LINEAR_L2

    def _settle_joint(self, index: np.ndarray | None, value: np.ndarray) -> None:
        """At the first example with action feature rows (``index``, ``value``: each offered
        action's row; dense columns if ``index`` is None), settle what depends on whether
        some action's row has a feature no other action's has (`own_features`).

        With features of their own (VW's ``-q sa`` crosses of an action's indicator) the
        default budget is ``JOINT_MELLOWNESS``: the context's main effects, shared by every
        action, carry the level of the rewards over to an action never played, so optimism
        alone does not bring it back (``docs/joint_budget.md``). An oracle's
        ``prior="auto"`` becomes optimistic: an action not yet tried looks best, as in the
        product class. If the actions share every feature (a ranking: optimism would favour
        rare feature values, not untried actions), it becomes the middle of the reward
        range with ``l2`` at least ``DEFAULT_SHARED_L2``, chosen by leave-one-dataset-out
        on rankings made of the UCI sets (``docs/joint_defaults.md``), and the default
        budget is ``SHARED_MELLOWNESS``, the one that choice was made at."""
        settle_prior = getattr(self._oracle, "prior", None) == "auto"
        if self._own_features is not None and not settle_prior:
            return
        own = own_features(index, value)
        if self._own_features is None:
            self._own_features = own
            self._class_mellowness = JOINT_MELLOWNESS if own else SHARED_MELLOWNESS
        if not settle_prior:
            return
        if own:
            self._oracle.prior = "optimistic"
        else:
            self._oracle.prior = "midpoint"
            self._oracle.l2 = max(self._oracle.l2, DEFAULT_SHARED_L2)
        if self.change_threshold is None and not _optimistic(self._oracle, self._range):
            self._change = None  # the default test: optimistic priors only

    def _oracle_rows(self, rows: SparseRows):
        """Rows as the oracle takes them: as they are for the ridge oracle
        (``sparse_rows``), with their columns for sparse oracles (``sparse_input``), dense
        ``(n, R, D)`` for the others."""
        if getattr(self._oracle, "sparse_rows", False):
            return rows
        return rows.explicit() if self._sparse_input else rows.dense()

    def _oracle_examples(self, rows: SparseRows):
        """Learned rows ``(n, 1, L)`` as the oracle learns them (``learn_many``'s ``x``)."""
        if getattr(self._oracle, "sparse_rows", False):
            return rows
        return rows.pairs() if self._sparse_input else rows.dense()[:, 0]

    def _is_joint(self, actions: Sequence) -> bool:
        if len(actions) == 0:
            raise ValueError("no actions offered")
        if isinstance(actions, EncodedRows):
            joint = True
        else:
            types = set(map(type, actions))
            if types <= self._label_types:  # the usual case, checked before
                return False
            kinds = {issubclass(kind, Mapping) for kind in types}
            if len(kinds) > 1:
                raise TypeError("actions must be all labels or all dicts of action features")
            joint = kinds.pop()
        if self._joint is None:
            self._joint = joint
        elif self._joint != joint:
            kinds = ("labels", "dicts of action features")
            raise TypeError(f"actions were {kinds[self._joint]}, got {kinds[joint]}")
        if not joint and not isinstance(actions, EncodedRows):
            self._label_types = self._label_types | types
        return joint

    def _known_labels(self, actions: Sequence) -> np.ndarray | None:
        """`_model_ids` of actions that are labels (None for the joint class's): a list
        offered before skips the checks of `_is_joint`."""
        try:
            ids = self._ids_of.get(tuple(actions))
        except TypeError:  # (unhashable: dicts of action features)
            ids = None
        if ids is not None or self._is_joint(actions):
            return ids
        return self._model_ids(actions)

    def _model_ids(self, actions: Sequence) -> np.ndarray:
        """Model ids of offered actions (read-only, cached), registering new ones."""
        key = tuple(actions)
        ids = self._ids_of.get(key)
        if ids is None:
            if len(self._ids_of) > 1024:
                self._ids_of.clear()
            ids = self._register(actions).astype(np.int64)
            ids.flags.writeable = False
            self._ids_of[key] = ids
        return ids

    def _register(self, actions: Sequence) -> np.ndarray:
        """Model ids of an offered list of distinct actions; new labels get new models."""
        labels = self._labels
        if len(set(actions)) != len(actions):
            raise ValueError(f"actions must be distinct, got {list(actions)!r}")
        for action in actions:
            labels.setdefault(action, len(labels))
        return np.fromiter((labels[a] for a in actions), dtype=np.intp, count=len(actions))

    def _played_ids(self, actions: Sequence) -> np.ndarray:
        """Model ids of played actions, each of which must have been offered before (to
        the learner whose linear model this is, if it is one: then new ones register)."""
        labels = self._labels
        unknown = [a for a in actions if a not in labels]
        if unknown and self._is_linear:
            self._register(list(dict.fromkeys(unknown)))
        elif unknown:
            raise ValueError(f"action {unknown[0]!r} was never offered to this learner")
        return np.fromiter((labels[a] for a in actions), dtype=np.intp, count=len(actions))

    def _check_reward(self, reward: float) -> None:
        if not isinstance(reward, (int, float, np.number)) or not math.isfinite(reward):
            raise ValueError(f"reward must be a finite number, got {reward!r}")
        lo, hi = self._range
        if not (lo <= reward <= hi or self.allow_out_of_range):
            raise ValueError(
                f"reward {reward} is outside reward_range {self.reward_range}; pass "
                "allow_out_of_range=True to learn it as it is (VW's behaviour with costs)"
            )


def _take(contexts, rows: np.ndarray):
    """The contexts at ``rows`` of a block (an array, ``EncodedRows`` or a sequence)."""
    if isinstance(contexts, (np.ndarray, EncodedRows)):
        return contexts[rows]
    return [contexts[i] for i in rows.tolist()]


def _snapshot(context):
    """A copy of a context, safe from later changes to the caller's buffer."""
    if isinstance(context, Mapping):
        return dict(context)
    return np.array(context, dtype=float, copy=True)


def _same_context(kept, context) -> bool:
    """Whether ``context`` equals a snapshot taken by :func:`_snapshot`."""
    if isinstance(kept, dict) or isinstance(context, Mapping):
        return isinstance(kept, dict) and kept == context
    try:
        return np.array_equal(kept, np.asarray(context, dtype=float))
    except (TypeError, ValueError):
        return False


def _per_action(rows: np.ndarray, k: int) -> np.ndarray:
    """A read-only ``(n, k, D)`` view repeating each of the ``(n, D)`` rows for ``k``
    actions without copying (stride 0 along the actions)."""
    if not rows.flags.c_contiguous:
        return np.broadcast_to(rows[:, None, :], (len(rows), k, rows.shape[1]))
    view = np.ndarray((len(rows), k, rows.shape[1]), rows.dtype, rows, 0,
                      (rows.strides[0], 0, rows.strides[1]))  # 10x faster than as_strided
    view.flags.writeable = False
    return view


def _revealed(rewards, n: int, start: int) -> np.ndarray:
    """``play``'s ``reveal`` answer: one number per round asked, or an error saying what
    came back instead."""
    try:
        out = np.asarray(rewards, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"reveal must return numbers, got {rewards!r:.80}") from None
    if out.shape != (n,):
        raise ValueError(f"reveal was asked for the rewards of rounds {start}..{start + n - 1} "
                         f"({n} rounds) and returned shape {out.shape}")
    return out


def _part_of(x, block: slice):
    """Rows ``block`` of the oracle's examples (``SparseRows`` or an array)."""
    return x.take(block) if isinstance(x, SparseRows) else x[block]


def _played_actions(actions, rows: np.ndarray, chosen: np.ndarray):
    """The actions played in ``rows``: labels from the offered list, or the joint class's
    encoded rows."""
    if isinstance(actions, EncodedRows):
        return EncodedRows(actions.index[rows, chosen], actions.value[rows, chosen])
    return [actions[i] for i in chosen.tolist()]


def _sample(pmf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw per row of ``pmf`` from uniforms ``u``; never an action of mass 0."""
    cdf = pmf.cumsum(axis=1)
    index = (cdf <= (u * cdf[:, -1])[:, None]).sum(axis=1)
    return np.minimum(index, pmf.shape[1] - 1)


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


def _check_prob(prob) -> None:
    if type(prob) is float and 0.0 < prob <= 1.0:  # the usual case, at once
        return
    if not isinstance(prob, (int, float, np.number)) or not 0.0 < prob <= 1.0:
        raise ValueError(f"probability must be in (0, 1], got {prob!r}")


def _make_features(features, scale: float, seed, oracle) -> RandomFeatures | None:
    """The encoder's map of dense contexts: ``random_features`` as `RegCB` takes it."""
    if features is None:  # the default model's: with the default oracle, where it applies
        return None if oracle is not None else RandomFeatures(
            DEFAULT_RANDOM_FEATURES, scale, seed, required=False)
    if isinstance(features, RandomFeatures):
        return copy.deepcopy(features)
    return RandomFeatures(features, scale, seed) if features else None


def _make_oracle(oracle, reward_range: tuple[float, float], forget: float = 1.0) -> Oracle:
    """A private oracle for the learner: a new one by name, or a copy of the one given;
    oracles whose bounds depend on the reward range (``reward_range`` attribute) get the
    learner's, and ``forget`` < 1 is handed to an oracle that can forget."""
    if oracle is None:
        oracle = RidgeOracle(l2=DEFAULT_L2, prior="auto")
    elif isinstance(oracle, str):
        if oracle not in ORACLES:
            raise ValueError(f"unknown oracle {oracle!r}; expected one of {sorted(ORACLES)} "
                             "or an oracle object")
        oracle = ORACLES[oracle]()
    elif not isinstance(oracle, Oracle):
        raise TypeError(f"oracle must be a name or implement the Oracle protocol: {oracle!r}")
    oracle = copy.deepcopy(oracle)
    if hasattr(oracle, "reward_range"):
        oracle.reward_range = reward_range
    if forget < 1.0:
        if not hasattr(oracle, "forget"):
            raise ValueError(f"forget applies to the ridge oracles, not "
                             f"{type(oracle).__name__}")
        oracle.forget = forget
    return oracle


def _make_change_test(threshold: float | None, oracle, schedule: str,
                      reward_range: tuple[float, float]) -> ChangeDetector | None:
    """The change test of ``change_threshold`` (None: the default where it applies, a ridge
    oracle with the ``online`` schedule and the optimistic prior that does not forget
    already; 0: none). A prior of ``"auto"`` that settles on the midpoint drops the default
    test (`RegCB._settle_joint`)."""
    applies = hasattr(oracle, "shrink") and schedule == "online"
    if threshold == 0 or threshold is None and (not applies or oracle.forget < 1.0
                                                or not _optimistic(oracle, reward_range)):
        return None
    if not applies:
        raise ValueError(f"change_threshold applies to the ridge oracles with the online "
                         f"schedule, not {type(oracle).__name__} with {schedule!r}")
    return ChangeDetector(DEFAULT_THRESHOLD if threshold is None else threshold,
                          reward_range[1] - reward_range[0])


def _optimistic(oracle, reward_range: tuple[float, float]) -> bool:
    """Whether a ridge oracle's prior is the top of the reward range (``"auto"``: until it
    settles)."""
    return resolve_prior(oracle.prior, reward_range) >= reward_range[1]


def _check_params(learner: RegCB) -> None:
    """Validate the constructor's parameters, naming the one at fault."""
    checks = {
        "variant": learner.variant in rules.VARIANTS,
        "schedule": learner.schedule in schedules.SCHEDULES,
        "budget": learner.budget is None or learner.budget in BUDGETS,
        "beta": learner.beta is None or _is_number(learner.beta) and learner.beta >= 0,
        "mellowness": learner.mellowness is None or (
            _is_number(learner.mellowness) and learner.mellowness > 0),
        "horizon": learner.horizon is None or (
            isinstance(learner.horizon, int) and learner.horizon >= 1
        ),
        "reward_range": _is_range(learner.reward_range),
        "warm_start_epochs": isinstance(learner.warm_start_epochs, int)
        and learner.warm_start_epochs >= 0,
        "hash_bits": learner.hash_bits is None or (
            isinstance(learner.hash_bits, int) and 1 <= learner.hash_bits <= 32),
        "random_features": learner.random_features is None
        or isinstance(learner.random_features, RandomFeatures)
        or (isinstance(learner.random_features, int) and learner.random_features >= 0),
        "random_scale": _is_number(learner.random_scale) and learner.random_scale > 0,
        "forget": _is_number(learner.forget) and 0 < learner.forget <= 1,
        "change_threshold": learner.change_threshold is None or (
            _is_number(learner.change_threshold) and learner.change_threshold >= 0),
        "select_model": isinstance(learner.select_model, bool),
    }
    expected = {
        "variant": f"one of {rules.VARIANTS}",
        "schedule": f"one of {schedules.SCHEDULES}",
        "budget": f"None or one of {BUDGETS}",
        "beta": "None or a finite number >= 0",
        "mellowness": "None or a finite number > 0",
        "horizon": "None or an int >= 1",
        "reward_range": "a pair (low, high) of finite numbers with low < high",
        "warm_start_epochs": "an int >= 0",
        "hash_bits": "None or an int from 1 to 32",
        "random_features": "None, an int >= 0 or a RandomFeatures",
        "random_scale": "a finite number > 0",
        "forget": "a number in (0, 1]",
        "change_threshold": "None or a finite number >= 0",
        "select_model": "True or False",
    }
    for name, ok in checks.items():
        if not ok:
            raise ValueError(
                f"the {name!r} parameter of RegCB must be {expected[name]}; "
                f"got {getattr(learner, name)!r}"
            )
    if learner.budget == "theory" and learner.horizon is None:
        raise ValueError("budget='theory' needs a horizon (the number of rounds T)")


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.number)) and math.isfinite(value)


def _is_range(value) -> bool:
    try:
        lo, hi = value
    except (TypeError, ValueError):
        return False
    return _is_number(lo) and _is_number(hi) and lo < hi
