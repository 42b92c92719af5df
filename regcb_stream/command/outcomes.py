"""What becomes of the command's decisions beyond ``-p``: the DSJSON decision log
(``--decision_log``) and the decisions that wait for rewards arriving later
(``--reward_wait``).

For each decision an action is drawn from the learner's distribution (its seeded sampler,
saved with the model; ``-p`` output does not depend on it). A DSJSON event without a label
then waits, under its ``EventId``, for a reward line ``{"EventId": ..., "v": reward}``
(``"_labelIndex"`` may name the action the caller played instead of the drawn one). The
reward is learned when its line is read, with the probability the action had at decision
time, and scores the automatic budget's candidates as they stood then (an action the
learner gave probability 0 is learned, but scores nothing and is not written to the log).
Rewards are learned in the order they arrive, so a run is determined by its seed and its
input. At most ``--reward_wait`` decisions wait: one more times the oldest out, learned
with ``--default_reward`` (or, without one, dropped). A reward for an event not waiting
(never decided, rewarded already, timed out) is counted and ignored. Waiting decisions are
saved with ``-f`` and waited for again after ``-i``.

The log holds one line per decision, written when its outcome is known: at once when the
input's label is for the drawn action (that label is written) or when no reward will come;
when its reward arrives or it times out (with the reward learned, if any) for a waiting one.
Multi-slot decisions (``--ccb_explore_adf``) have theirs in `slot_outcomes`.
"""

from __future__ import annotations

import json
from typing import TextIO

import numpy as np

from regcb_stream import rules
from regcb_stream.adapt.events import PendingDecisions
from regcb_stream.features.encoder import EncodedRows
from regcb_stream.io.decision_log import context_of, event_line
from regcb_stream.io.vw_features import parse_namespaces


class OutcomeLog:
    """The decision log and the decisions waiting for rewards of one run (what single and
    multi-slot decisions share: `Outcomes`, `slot_outcomes.SlotOutcomes`).

    Parameters
    ----------
    learner
        The command's ``RegCB``.
    log
        Where the DSJSON decision log goes (None: no log).
    wait
        The most decisions waiting for rewards (None: no decision waits).
    default_reward
        The reward a timed-out decision is learned with (None: dropped).
    dsjson
        The input is DSJSON (the log copies each event's context).
    """

    def __init__(self, learner, log: TextIO | None = None, wait: int | None = None,
                 default_reward: float | None = None, dsjson: bool = False):
        self.learner = learner
        self.log = log
        self.dsjson = dsjson
        self.unmatched = 0  # rewards of no waiting decision
        if wait is not None:
            pending = learner.pending_rewards.pending  # (those of a resumed model)
            pending.window, pending.default_reward = wait, default_reward
            self.pending: PendingDecisions | None = pending
        else:
            self.pending = None

    def summary(self) -> list[str]:
        """Lines for the closing summary."""
        if self.pending is None:
            return []
        counts = {**self.pending.counts, "waiting": len(self.pending.waiting),
                  "unmatched rewards": self.unmatched}
        return ["decisions with delayed rewards: " + ", ".join(
            f"{name} {count}" for name, count in counts.items())]

    def _write(self, lines: list) -> None:
        lines = [line for line in lines if line is not None]
        if self.log is not None and lines:
            self.log.write("\n".join(lines) + "\n")
            self.log.flush()


class Outcomes(OutcomeLog):
    """The log and the waiting decisions of single decisions (ADF, DSJSON and single-line
    examples)."""

    def decided(self, examples: list, pmf: np.ndarray, candidates, rows: EncodedRows | None,
                versions: list[int]) -> None:
        """A block's ADF decisions (``examples``: their `ADFExample`; ``rows``: their
        encoded rows; ``versions``: how many labels the learner had for each)."""
        chosen = rules.sample(pmf, self.learner.rng.random(len(pmf))).tolist()
        lines = []
        for i, ex in enumerate(examples):
            event_id = ex.event_id or ex.tag or self._new_id()
            a = chosen[i]
            if self.pending is not None and ex.label is None and ex.event_id is not None:
                if event_id in self.pending.waiting:
                    raise ValueError(f"line {ex.line_no}: event id {event_id!r} is already "
                                     "waiting for its reward")
                plain = rows[i].without_intercept()  # (the intercept is the learner's)
                record = (plain.index.copy(), plain.value.copy(), pmf[i].copy(),
                          None if candidates is None else candidates[i].copy(), a,
                          self._context(ex) if self.log else None, versions[i])
                for event, reward in self.pending.add(event_id, (event_id, record)):
                    lines.append(self._learn(event, None, reward))  # (timed out)
                continue
            if self.log is not None:
                label = ex.label
                cost = label.cost if label is not None and label.action == a else None
                lines.append(event_line(event_id, self._context(ex), a, pmf[i], versions[i],
                                        cost))
        self._write(lines)

    def decided_single(self, bodies: list[str], labels, pmf: np.ndarray, tags: list,
                       versions: list[int]) -> None:
        """A block's single-line decisions, for the log: each context is the shared
        features, each action an object with the feature ``action<k>``."""
        if self.log is None:
            return
        chosen = rules.sample(pmf, self.learner.rng.random(len(pmf))).tolist()
        played, costs = labels
        actions = [{"action": str(k + 1)} for k in range(pmf.shape[1])]
        lines = []
        for i, body in enumerate(bodies):
            context = {**context_of(parse_namespaces(body), []), "_multi": actions}
            cost = float(costs[i]) if played[i] == chosen[i] else None
            lines.append(event_line(tags[i] or self._new_id(), context, chosen[i], pmf[i],
                                    versions[i], cost))
        self._write(lines)

    def reward(self, reward) -> None:
        """Learn a reward line's reward (a `dsjson.Reward`)."""
        if self.pending is None or reward.event_id not in self.pending.waiting:
            self.unmatched += 1
            return
        event = self.pending.take(reward.event_id)
        n_actions = len(event[1][2])
        if reward.action is not None and reward.action >= n_actions:
            raise ValueError(f"line {reward.line_no}: _labelIndex {reward.action} is not an "
                             f"index into the {n_actions} actions of {reward.event_id!r}")
        self._write([self._learn(event, reward.action, reward.value)])

    def _learn(self, event: tuple, action: int | None, reward: float | None) -> str | None:
        """Learn a waiting decision's reward (None: none came, nothing to learn); its log
        line."""
        event_id, (index, value, pmf, candidates, chosen, context, version) = event
        a = chosen if action is None else action
        prob = float(pmf[a])
        if reward is not None:  # (an action of probability 0: nothing to score budgets with)
            rows = EncodedRows(np.asarray(index)[None, [a]], np.asarray(value)[None, [a]])
            scored = prob > 0 and candidates is not None
            self.learner.learn_many([{}], rows, [reward], [prob if prob > 0 else 1.0],
                                    candidates=np.asarray(candidates)[None, :, a] if scored
                                    else None)
        if self.log is None:
            return None
        known = reward is not None and prob > 0  # (else the log keeps the drawn action)
        return event_line(event_id, context, a if known else chosen, pmf, version,
                          -reward if known else None)

    def _context(self, ex) -> dict | str:
        """The DSJSON context of an example: a DSJSON event's own ``c``, or its features."""
        if self.dsjson:
            return json.dumps(json.loads(ex.text)["c"], separators=(",", ":"))
        shared = parse_namespaces(ex.shared) if isinstance(ex.shared, str) else ex.shared
        return context_of(shared, list(ex.actions))

    def _new_id(self) -> str:
        return self.learner.rng.bytes(16).hex()
