r"""Off-policy evaluation of logged multi-slot examples (VW's CCB and slates).

A logged slot ``j`` with outcome (action ``a_j``, cost ``c_j``, probability ``p_j``) is a
logged single decision: its context is the example's with the slot's features and position
(`regcb_stream.slots.slot_context`), its actions those the logging policy offered it (a
CCB slot: the pool, less the actions the logged earlier slots took, within its included
ones; a slate's slot: its own), and ``p_j`` the logging policy's probability of ``a_j``
given the earlier slots. So each slot's estimates are `ope.evaluate`'s (IPS, SNIPS, DR) of
the target policy's decision of that slot given the logged earlier ones, and their sum
over the slots is the value of the whole ranking (VW's CCB estimates are per slot too).

A slate with one reward for the whole slate (VW's ``slates shared COST``) is scored by the
pseudo-inverse estimator (Swaminathan et al., NIPS 2017), unbiased when the logging and
target policies choose each slot's action independently and the reward is additive over
the slots: ``mean_i r_i (sum_j pi_j(a_ij) / mu_j(a_ij) - (m - 1))``.

>>> from regcb_stream.io.vw_slots import iter_slots
>>> log = ["slates shared 1 |u a", "slates action 0 |x a", "slates action 0 |x b",
...        "slates action 1 |y c", "slates action 1 |y d",
...        "slates slot 0:0.5 |s", "slates slot 1:0.5 |t", ""]
>>> estimates = evaluate_slots(UniformPolicy(), iter_slots(log))
>>> estimates["slate"].value, estimates["slot 0"]["ips"].value
(-1.0, -1.0)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from regcb_stream.evaluation.ope import UniformPolicy, evaluate, mean_estimate
from regcb_stream.io.vw_slots import SlotsExample, feature_dict
from regcb_stream.slots import Slot, slot_context

__all__ = ["UniformPolicy", "evaluate_slots", "logged_slots"]


class SlotLabel(NamedTuple):
    """A logged slot's label as `ope.evaluate` reads it: the action's position among the
    slot's offered actions, its cost and probability."""

    index: int
    cost: float
    prob: float


def logged_slots(example: SlotsExample):
    """Each logged slot of an example as ``(slot, context, offered actions, label)``, the
    offered actions those the logging policy's earlier slots left (CCB)."""
    context = feature_dict(example.shared)
    actions = [feature_dict(action) for action in example.actions]
    taken: set[int] = set()
    for j, line in enumerate(example.slots):
        slot = Slot(feature_dict(line.features))
        if example.kind == "slates":
            own = [a for a, s in zip(range(len(actions)), example.action_slots) if s == j]
            offered = list(range(len(own)))
            pool = [actions[a] for a in own]
        else:
            allowed = range(len(actions)) if line.include is None else line.include
            offered = [a for a in allowed if a < len(actions) and a not in taken]
            pool = [actions[a] for a in offered]
        outcome = line.outcome
        if outcome is not None and example.kind == "ccb":
            taken.add(outcome.action)
        cost = example.cost if example.kind == "slates" else (
            None if outcome is None else outcome.cost)
        if outcome is None or cost is None or outcome.action not in offered:
            continue
        yield j, slot_context(context, slot, j), pool, SlotLabel(
            offered.index(outcome.action), cost, outcome.prob)


def evaluate_slots(policy, examples: Iterable[SlotsExample], alpha: float = 0.05) -> dict:
    """Per-slot estimates of ``policy`` (``pmf(context, actions)``, called on each slot's
    context and offered actions): ``{"slot j": {"ips", "snips", "dr"}}`` for each slot
    position, ``"ranking"``, the sum of the slots' IPS (its interval from the per-example
    sums), and for slates with a slate cost, ``"slate"``, the pseudo-inverse estimate."""
    per_slot = defaultdict(list)
    ranking, slate = [], []
    for example in examples:
        total, weights, logged = 0.0, [], list(logged_slots(example))
        for j, context, pool, label in logged:
            per_slot[j].append((context, pool, label))
            pmf = np.asarray(policy.pmf(context, pool), dtype=float)
            weights.append(pmf[label.index] / label.prob)
            total += weights[-1] * -label.cost
        if logged:
            ranking.append(total)
        if example.kind == "slates" and example.cost is not None and logged and len(
                logged) == len(example.slots):
            slate.append(-example.cost * (sum(weights) - (len(weights) - 1)))
    if not per_slot:
        raise ValueError("the log has no slot with an outcome (and a cost)")
    z = NormalDist().inv_cdf(1.0 - alpha / 2)
    out = {f"slot {j}": evaluate(policy, per_slot[j], alpha=alpha) for j in sorted(per_slot)}
    out["ranking"] = mean_estimate(np.array(ranking), z)
    if slate:
        out["slate"] = mean_estimate(np.array(slate), z)
    return out

