"""Decisions whose rewards arrive later, joined by event id (delayed rewards).

A decision made with an event id is kept until its reward is reported (`RegCB.reward_event`);
rewards are learned in the order they arrive, so a run is determined by its seed and by the
order of the decisions and rewards it is given. At most ``window`` decisions wait: when one
more is made, the oldest waiting decision times out (Personalizer's "reward wait time",
counted in decisions) and is learned with ``default_reward``, or, without one, dropped.
Every outcome is counted (``counts``).

>>> pending = PendingDecisions(window=2, default_reward=0.0)
>>> pending.add("e1", ("x1", "a", 0.5, {})), pending.add("e2", ("x2", "b", 0.5, {}))
([], [])
>>> pending.add("e3", ("x3", "a", 0.5, {}))  # e1 times out: its default reward is due
[(('x1', 'a', 0.5, {}), 0.0)]
>>> pending.take("e2"), pending.counts
(('x2', 'b', 0.5, {}), {'decided': 3, 'rewarded': 1, 'defaulted': 1, 'dropped': 0})
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from regcb_stream.state import Stateful


class PendingDecisions(Stateful):
    """Decisions waiting for their rewards, oldest first.

    Parameters
    ----------
    window
        The most decisions that may wait; one more times the oldest out.
    default_reward
        The reward a timed-out decision is learned with (None: it is dropped, unlearned).
    """

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "window": "window",
        "default_reward": "default_reward",
        "waiting": "waiting",
        "counts": "counts",
    }

    def __init__(self, window: int = 10_000, default_reward: float | None = None):
        if not (isinstance(window, int) and window >= 1):
            raise ValueError(f"window must be an int >= 1, got {window!r}")
        self.window = window
        self.default_reward = default_reward
        self.waiting: dict = {}  # event id -> decision, in the order they were made
        self.counts = {"decided": 0, "rewarded": 0, "defaulted": 0, "dropped": 0}

    def add(self, event_id, decision: tuple) -> list[tuple]:
        """Keep a decision; return the ``(decision, reward)`` pairs that timed out: to be
        learned with the default reward now, or dropped (reward None)."""
        if event_id in self.waiting:
            raise ValueError(f"event id {event_id!r} is already waiting for its reward")
        self.waiting[event_id] = decision
        self.counts["decided"] += 1
        due = []
        while len(self.waiting) > self.window:
            oldest = next(iter(self.waiting))
            expired = self.waiting.pop(oldest)
            self.counts["dropped" if self.default_reward is None else "defaulted"] += 1
            due.append((expired, self.default_reward))
        return due

    def take(self, event_id) -> tuple:
        """The decision waiting under ``event_id`` (its reward has come)."""
        try:
            decision = self.waiting.pop(event_id)
        except KeyError:
            raise ValueError(f"no decision is waiting under event id {event_id!r} (never "
                             "made, rewarded already, or timed out)") from None
        self.counts["rewarded"] += 1
        return decision


class DelayedRewards(Stateful):
    """A learner's decisions whose rewards come later (`RegCB.decide_event`,
    `RegCB.reward_event`): the decisions waiting (`PendingDecisions`), and the stand-in
    each is learned with until its reward comes.

    A decision still waiting when the next one is made is learned at once with a lie: the
    mean reward of the rewards so far (the middle of the reward range before the first).
    That is the constant liar of batch Bayesian optimization (Ginsbourger, Le Riche and
    Carraro, "Kriging is well-suited to parallelize optimization", 2010): with the
    optimistic prior, an action not yet rewarded in a region predicts the top of the reward
    range there, and without the lie it would be played again and again until its first
    rewards come; a typical reward pulls it down as the real one most likely will. The real
    reward replaces the lie exactly (ridge: ``b += (reward - lie) x``), so once every
    reward has come the state is that of the real rewards (a change detected meanwhile
    shrinks what was learned before it, not the lies: their rewards count as labels
    learned after it). Only an oracle that relabels
    on the ``online`` schedule lies (`Explorer.can_stand_in`); lies are not labels
    (``n_labels``) and score no budget; a reward that comes before the next decision is
    learned as ``learn`` learns it."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "pending": "pending",
        "unlied": "unlied",
        "rewarded": "rewarded",
    }

    def __init__(self):
        self.pending = PendingDecisions()
        self.unlied = None  # the event id of the last decision, not learned yet
        self.rewarded = (0.0, 0)  # sum and number of the rewards so far

    def decide(self, learner, event_id, context, actions) -> tuple[object, float]:
        """Sample an action with ``learner`` (its last decision learned with a lie
        first), keep the decision under ``event_id``; the action and its probability."""
        self._lie(learner)
        action, prob, info = learner.predict(context, actions)
        for decision, reward in self.pending.add(event_id, (snapshot(context), action, prob,
                                                            info)):
            self._settle(learner, decision, reward)  # (timed out: the default, or dropped)
        self.unlied = event_id
        return action, prob

    def reward(self, learner, event_id, reward: float) -> None:
        """Learn the reward of the decision made under ``event_id``."""
        decision = self.pending.take(event_id)
        total, count = self.rewarded
        self.rewarded = (total + float(reward), count + 1)
        self._settle(learner, decision, reward)

    def wait(self, learner, window: int, default_reward: float | None) -> None:
        """A new window of waiting decisions; those waiting so far are dropped."""
        for decision in self.pending.waiting.values():
            if len(decision) > 4:  # (its lie unlearned)
                self._settle(learner, decision, None)
        self.pending = PendingDecisions(window, default_reward)

    def _lie(self, learner) -> None:
        """Learn the last decision, if it still waits for its reward, with a lie."""
        event_id, self.unlied = self.unlied, None
        model = learner.model
        decision = self.pending.waiting.get(event_id)
        if decision is None or len(decision) != 4 or not model.explorer.can_stand_in:
            return
        total, count = self.rewarded
        lie = total / count if count else sum(learner.reward_range) / 2
        block = model.labels([decision[0]], [decision[1]])
        stand_in = model.explorer.learn_stand_in(block.rows, int(block.models[0]), lie)
        self.pending.waiting[event_id] = (*decision, lie, *stand_in)

    def _settle(self, learner, decision: tuple, reward: float | None) -> None:
        """Learn a waiting decision's reward (None: drop it), in place of the lie it was
        learned with, if any."""
        context, action, prob, info, *lied = decision
        if not lied:
            if reward is not None:
                learner.learn(context, action, reward, prob, **info)
            return
        model = learner.model
        block = model.labels([context], [action])
        if reward is not None:
            learner.check_reward(reward)
        candidates = info.get("candidates")
        model.explorer.replace_stand_in(block.rows, int(block.models[0]), *lied, reward,
                                        None if candidates is None else (candidates, prob))


def snapshot(context):
    """A copy of a context, safe from later changes to the caller's buffer."""
    if isinstance(context, Mapping):
        return dict(context)
    return np.array(context, dtype=float, copy=True)
