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


class PendingDecisions:
    """Decisions waiting for their rewards, oldest first.

    Parameters
    ----------
    window
        The most decisions that may wait; one more times the oldest out.
    default_reward
        The reward a timed-out decision is learned with (None: it is dropped, unlearned).
    """

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
