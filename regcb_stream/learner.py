"""RegCB: contextual-bandit exploration with confidence bounds from a regression oracle."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from regcb_stream import defaults, rules
from regcb_stream import parameters as params
from regcb_stream.adapt.events import DelayedRewards
from regcb_stream.explore.budget import DEFAULT_GRID
from regcb_stream.explore.decision import Decision
from regcb_stream.features.encoder import FeatureEncoder
from regcb_stream.features.random_features import RandomFeatures
from regcb_stream.model import Model, Spec, make_model
from regcb_stream.oracles.base import Oracle
from regcb_stream.state import Stateful
from regcb_stream.stream.replay import play


class RegCB(Stateful):
    """RegCB.Elimination and RegCB.Optimistic (Foster et al., ICML 2018).

    For each action the learner keeps the range of rewards, ``[Low, High]``, that the
    regressors of the version space predict; the version space holds every regressor
    whose squared loss on the labels seen so far is within a budget of the best one.
    Elimination plays uniformly over the actions whose ``High`` reaches the best ``Low``;
    Optimistic plays the largest ``High`` (with a ridge oracle, this is LinUCB on an epoch
    schedule). The decision state is frozen within an epoch and rebuilt at its end.

    ``RegCB()`` runs the defaults of the model class its first example shows (contexts of
    numbers, arrays or dicts: 64 random features; dicts of indicators: the linear model;
    actions given as feature dicts: the joint model), each chosen by leave-one-dataset-out
    on the public streams: `regcb_stream.defaults` has the table and the reports behind it.

    Parameters
    ----------
    variant, ties
        ``"optimistic"`` (the default) or ``"elimination"``; the optimistic rule's ties at
        the top of the range, ``"clipped"`` (default), ``"fit"`` or ``"shared"``: `rules`.
    oracle
        None: the default ridge oracle, its penalty and prior the model class's;
        ``"ridge"``: the paper's (``l2 = 1``, toward 0); ``"bounded"``; ``"vw"``: VW's
        regressor with its sensitivity bounds; or an `Oracle` (its parameters, unfitted).
    beta
        The paper's budget on the normalized squared risk (selects ``budget="beta"``).
    schedule
        When the decision state is rebuilt: ``"online"`` (after every label),
        ``"sqrt2"`` (epoch lengths 2^(i/2), the paper's experiments) or ``"doubling"``.
    budget
        ``"mellowness"`` (VW's ``c0 ln(K n) span^2``, the default form), ``"beta"``,
        ``"summed"`` (beta on the summed loss), ``"theory"`` (the paper's, for a
        ``horizon``) or ``"auto"`` (chosen online among ``budget_grid``).
    mellowness
        VW's c0 (None: the model class's).
    horizon, budget_grid
        For ``budget="theory"`` and ``budget="auto"``.
    reward_range
        ``(low, high)`` of the rewards (maximized); bounds are clipped to it.
    seed
        Seed of the draws and of the random features.
    warm_start_epochs
        Epochs of uniform play before the bounds are used (the paper's M0).
    allow_out_of_range
        Learn rewards outside ``reward_range`` as they are (VW's way with costs).
    cross, intercept, hash_bits
        Products of context and action features (VW's ``-q sa``); a constant feature;
        VW's hashing of dict feature names into ``2^hash_bits`` slots (None: names kept).
    random_features, random_scale
        Random Fourier features appended to dense contexts (None: 64 with the default
        oracle, for actions given as labels; 0: none; or a `RandomFeatures`), and their
        frequencies' scale.
    forget
        Each label's weight decays by this factor per label after it (ridge oracles,
        ``online`` schedule; 1: never).
    change_threshold
        The change test's threshold (`regcb_stream.adapt.change`; None: 6 where it
        applies, a ridge oracle with the optimistic prior on the ``online`` schedule; 0:
        none).
    select_model
        Also learn the linear model and decide with whichever predicts the labels better
        (`regcb_stream.adapt.selection`; where the random features apply).

    Examples
    --------
    >>> learner = RegCB("elimination", beta=0.01, seed=1)
    >>> for t in range(200):
    ...     x = [t % 2, 1 - t % 2]
    ...     action, prob, info = learner.predict(x, ["a", "b", "c"])
    ...     reward = 1.0 if action == ("a" if t % 2 else "b") else 0.0
    ...     learner.learn(x, action, reward, prob, **info)
    >>> learner.pmf([1, 0], ["a", "b", "c"]), learner.pmf([0, 1], ["a", "b", "c"])
    ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    """

    SAVED = {**{name: name for name in params.PARAMETERS},  # what a model file holds
             "model": "_model", "events": "_events", "rng": "_rng"}
    ADDED = {"ties": "shared"}  # (model files of version 7 written before `ties`)

    def __init__(self, variant: str = defaults.VARIANT, *, ties: str = defaults.TIES,
                 oracle: str | Oracle | None = None, beta: float | None = None,
                 schedule: str = defaults.SCHEDULE,
                 budget: str | None = None, mellowness: float | None = None,
                 horizon: int | None = None, budget_grid: Sequence[float] = DEFAULT_GRID,
                 reward_range: tuple[float, float] = (0.0, 1.0), seed: int | None = 0,
                 warm_start_epochs: int = 0, allow_out_of_range: bool = False,
                 cross: bool = True, intercept: bool = True, hash_bits: int | None = None,
                 random_features: int | RandomFeatures | None = None,
                 random_scale: float = 1.0, forget: float = 1.0,
                 change_threshold: float | None = None, select_model: bool = False):
        self.variant, self.ties, self.oracle, self.beta = variant, ties, oracle, beta
        self.schedule, self.budget, self.mellowness = schedule, budget, mellowness
        self.horizon, self.budget_grid, self.reward_range = horizon, budget_grid, reward_range
        self.warm_start_epochs, self.allow_out_of_range = warm_start_epochs, allow_out_of_range
        self.cross, self.intercept, self.hash_bits = cross, intercept, hash_bits
        self.random_features, self.random_scale, self.forget = random_features, random_scale, forget
        self.change_threshold, self.select_model, self.seed = change_threshold, select_model, seed
        params.check_parameters(self)
        self._model = make_model(Spec.of(params.parameters(self)), select_model)
        self._events: DelayedRewards | None = None  # made at the first event
        self._rng: np.random.Generator | None = None  # made at the first draw

    # -- decisions ---------------------------------------------------------------------

    def decide(self, context, actions: Sequence) -> Decision:
        """Bounds, plausible set and distribution for one context."""
        params.check_actions(actions)
        return self._model.decide(context, actions)

    def decide_many(self, contexts, actions: Sequence) -> Decision:
        """``decide`` for a block of contexts at once."""
        params.check_actions(actions)
        params.check_lengths(contexts=contexts)
        return self._model.decide_many(contexts, actions)

    def pmf(self, context, actions: Sequence) -> list[float]:
        """Probability of each action (in the order given) for ``context``."""
        params.check_actions(actions)
        return self._model.pmf(context, actions).tolist()

    def pmf_many(self, contexts, actions: Sequence) -> np.ndarray:
        """Distributions for a block of contexts, ``(n, K)``: ``pmf`` row by row, as long as
        no label is learned in between (one epoch's decisions)."""
        return self.decide_many(contexts, actions).pmf

    def predict(self, context, actions: Sequence) -> tuple[object, float, dict]:
        """Sample an action; return it, its probability and kwargs for ``learn``."""
        params.check_actions(actions)
        return self._model.draw(context, actions, self.rng)

    def predict_many(self, contexts, actions: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """Sampled action indices and their probabilities for a block of contexts; the
        same draws as ``predict`` row by row (``learn_many`` takes the played actions,
        ``[actions[i] for i in index]``)."""
        pmf = self.pmf_many(contexts, actions)
        index = rules.sample(pmf, self.rng.random(len(pmf)))
        return index, pmf[np.arange(len(pmf)), index]

    def score(self, context, actions: Sequence, action) -> float:
        """Probability that the learner plays ``action`` among ``actions`` for ``context``."""
        return self.pmf(context, actions)[params.position("action", action, actions)]

    # -- learning ----------------------------------------------------------------------

    def learn(self, context, action, reward: float, prob: float = 1.0, *, weight: float = 1.0,
              candidates=None, **kwargs) -> None:
        """Learn the ``reward`` of ``action`` (played with probability ``prob``); ``weight``
        is its importance weight in the regression. With ``budget="auto"``, ``candidates``
        (from ``predict``'s kwargs, or the last ``decide`` of the same context) are the
        candidate budgets' probabilities of ``action``, which the label scores."""
        params.check_prob(prob)
        self.check_reward(reward)
        params.check_weight(weight)
        self._model.learn(context, action, reward, prob, weight, candidates)

    def learn_many(self, contexts, actions: Sequence, rewards, probs=None, weights=None,
                   candidates=None) -> None:
        """Learn a block of labels: the state of ``learn`` row by row (``actions``: the
        played actions, one per context; ``candidates``: ``(n, J)``, from
        ``decide_many``'s ``Decision.candidates``)."""
        rewards, probs, weights = params.checked_block(
            contexts, actions, rewards, probs, weights, candidates, self.reward_range,
            self.allow_out_of_range)
        self._model.learn_many(contexts, actions, rewards, probs, weights, candidates)

    def replay(self, contexts, actions, played, rewards, probs=None, weights=None
               ) -> Decision:
        """Progressive validation of a logged block: each context decided, then its
        logged label learned (``played[i]``: the index of the logged action among the
        offered ones, -1 for none; ``actions``: the offered actions, or the joint class's
        ``EncodedRows`` ``(n, K, L)``): ``decide`` and ``learn`` row by row, an epoch in one
        computation (`regcb_stream.stream.replay`).

        >>> learner = RegCB(seed=0)
        >>> which, logged = np.array([0, 1] * 50), np.array([0, 0, 1, 1] * 25)
        >>> decision = learner.replay(np.eye(2)[which], ["a", "b"], logged, logged == which)
        >>> decision.pmf[-2:].tolist(), learner.n_labels
        ([[1.0, 0.0], [0.0, 1.0]], 100)
        """
        params.check_actions(actions)
        params.check_lengths(contexts=contexts, played=played)
        log = self.checked_log(played, rewards, probs, weights, params.n_offered(actions))
        return self._model.replay(contexts, actions, *log)

    def play(self, contexts, actions: Sequence, reveal, uniforms=None
             ) -> tuple[np.ndarray, Decision]:
        """Simulate bandit feedback on a block of rounds: each context decided, an action
        drawn (by ``uniforms``, default the learner's), its reward revealed by
        ``reveal(rounds, indices)`` and learned; the indices played and the decisions.

        >>> rewards = np.array([[1.0, 0.0], [0.0, 1.0]] * 100)
        >>> played, decision = RegCB(beta=1e-3).play(np.eye(2)[[0, 1] * 100], ["a", "b"],
        ...                                          lambda t, i: rewards[t, i])
        >>> float(rewards[np.arange(200), played][-100:].mean())
        1.0
        """
        n, u = params.checked_play(contexts, actions, reveal, uniforms)
        u = self.rng.random(n) if u is None else u
        return play(self._model, contexts, actions, reveal, u, self.check_reward)

    # -- rewards that come later ---------------------------------------------------------

    def decide_event(self, event_id, context, actions: Sequence) -> tuple[object, float]:
        """``predict`` for a decision whose reward comes later (`reward_event`), kept under
        ``event_id``: the action and its probability (`regcb_stream.adapt.events`).

        >>> learner = RegCB(seed=0)
        >>> action, prob = learner.decide_event("e1", [1.0, 0.0], ["a", "b"])
        >>> learner.reward_event("e1", 1.0)
        >>> learner.events["rewarded"], learner.n_labels
        (1, 1)
        """
        params.check_actions(actions)
        params.check_label("event_id", event_id)
        self._model = self._model.alone()  # (one model learns with stand-ins)
        return self.pending_rewards.decide(self, event_id, context, actions)

    def reward_event(self, event_id, reward: float) -> None:
        """Learn the reward of the decision made under ``event_id`` (in arrival order)."""
        self.check_reward(reward)
        self.pending_rewards.reward(self, event_id, reward)

    def wait_for_rewards(self, window: int = 10_000, default_reward: float | None = None
                         ) -> None:
        """At most ``window`` decisions wait; one more times the oldest out, learned with
        ``default_reward`` (None: dropped). The decisions waiting so far are dropped."""
        if default_reward is not None:
            params.check_reward(default_reward, self.reward_range, self.allow_out_of_range,
                         "default_reward")
        self.pending_rewards.wait(self, window, default_reward)

    @property
    def pending_rewards(self) -> DelayedRewards:
        """The decisions waiting for their rewards and how they are learned."""
        if self._events is None:
            self._events = DelayedRewards()
        return self._events

    @property
    def events(self) -> dict:
        """Counts of the decisions made with event ids: decided, rewarded, defaulted,
        dropped (timed out), and still waiting."""
        pending = self.pending_rewards.pending
        return {**pending.counts, "waiting": len(pending.waiting)}

    # -- state ---------------------------------------------------------------------------

    def change_exploration(self, variant: str | None = None, **budget) -> None:
        """Another variant and budget (``mellowness=``, ``beta=``, or ``budget="auto"``
        with ``budget_grid=``) for a trained learner, as VW allows on load.

        >>> learner = RegCB(mellowness=1e-3)
        >>> learner.change_exploration("elimination", mellowness=0.01)
        >>> learner.variant, learner.budget_in_force
        ('elimination', 'mellowness 0.01')
        """
        changes = params.exploration_changes(variant, budget, self.budget_grid)  # (checked first)
        vars(self).update(changes)
        params.check_parameters(self)
        self._model.change_exploration(self.variant, {
            name: value for name, value in changes.items() if name != "variant"} or None)

    @property
    def model(self) -> Model:
        """The model that decides (its rows, explorer and oracle: the block API)."""
        return self._model.main

    @property
    def rng(self) -> np.random.Generator:
        """The generator of the draws, from ``seed`` (made at the first draw: importing
        numpy.random costs the command, which never draws, start-up time)."""
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng

    @property
    def encoder(self) -> FeatureEncoder:
        """The feature columns (for contexts given as ``EncodedRows``)."""
        return self.model.encoder

    n_labels = property(lambda self: self.model.explorer.n_labels,
                        doc="Number of labels learned.")
    epoch = property(lambda self: self.model.explorer.epoch,
                     doc="Current epoch (1 before the first rebuild).")
    labels_until_rebuild = property(lambda self: self.model.explorer.labels_until_rebuild,
                                    doc="Labels until the decision state is rebuilt.")
    budget_in_force = property(lambda self: self.model.explorer.budget.in_force,
                               doc="The budget in words, e.g. ``'mellowness 0.003'``.")
    budget_selection = property(lambda self: self.model.explorer.budget.summary(),
                                doc="With ``budget='auto'``: the candidates, their weights "
                                    "and estimates, the leader (else None).")
    oracle_in_use = property(lambda self: self.model.explorer.oracle.describe(),
                             doc="The oracle as it stands, e.g. ``'exact ridge, 26 models "
                                 "of 17 features'`` (exact ridge hands over to bounded).")
    model_selection = property(lambda self: self._model.selection_state(),
                               doc="With ``select_model``: the leader, each model's "
                                   "prequential loss and the labels scored (else None).")

    @property
    def changes_detected(self) -> int | None:
        """Changes the change test has detected (None: no test)."""
        change = self.model.explorer.change
        return None if change is None else change.changes

    @property
    def model_class(self) -> str | None:
        """The model class the first example showed (`regcb_stream.defaults`; None
        before it)."""
        return self.model.model_class

    def restored(self) -> None:  # (a model file's parameters: checked as at construction)
        params.check_parameters(self)

    def clone(self) -> RegCB:
        """A fresh learner with the same parameters."""
        return type(self)(**params.parameters(self))

    def check_reward(self, reward: float) -> None:
        """A ``ValueError`` for a reward that is not a finite number in ``reward_range``
        (unless ``allow_out_of_range``)."""
        params.check_reward(reward, self.reward_range, self.allow_out_of_range)

    def checked_log(self, played, rewards, probs=None, weights=None,
                    n_actions: int | None = None) -> tuple:
        """A logged block's labels as arrays (``played``, ``rewards``, ``probs``,
        ``weights``, `replay`'s; ``played`` indices among ``n_actions``), or the error of
        its first bad label."""
        return params.checked_log(played, rewards, probs, weights, self.reward_range,
                           self.allow_out_of_range, n_actions)
