"""Decisions over several slots at once: rankings, pages with slots, slates.

One learner decides every slot, each slot a RegCB decision of its own. In a conditional
contextual bandit (VW's ``--ccb_explore_adf``) the slots share one pool of actions and
each chooses among those the earlier slots left (and among the ones it names, if it names
some). In a slate (VW's ``--slates``) each slot has its own actions. Either way, slot
``j`` is decided on its own context: the example's, its own features and its position
(``slot_index``), so the learner's crosses of context and action features (the joint
class: actions as feature dicts) learn what each position and each slot's features do to
each action's reward. The probability of each slot's action is its own decision's, given
the earlier slots' (what VW logs per slot), and each slot's reward is learned as a label of
its own; a slot whose reward is not known (``None``) is left out. The functions take the
learner and use only its public ``decide``, ``rng`` and ``learn``.

>>> from regcb_stream import RegCB
>>> learner = RegCB(seed=0)
>>> actions = [{"item=a": 1.0}, {"item=b": 1.0}, {"item=c": 1.0}]
>>> first, second = predict_slots(learner, {"user": 1.0}, actions, [Slot(), Slot()])
>>> first.index != second.index, len(second.pmf)
(True, 2)
>>> learn_slots(learner, {"user": 1.0}, actions, [Slot(), Slot()], [first, second], [1.0, 0.0])
>>> learner.n_labels
2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from regcb_stream import rules

SLOT_INDEX = "slot_index"  # the feature of a slot's position (VW: _ccb_slot_index)


class Slot(NamedTuple):
    """A slot: its own features (a dict), its own actions (a slate's slot; None: the
    example's pool, less what the earlier slots took) and the positions in the pool it
    may choose among (None: any)."""

    features: Mapping | None = None
    actions: Sequence | None = None
    include: Sequence[int] | None = None


class SlotDecision(NamedTuple):
    """A slot's decision: the index of its action (in its slot's actions, or in the
    pool), its probability, the slot's distribution over ``offered`` (indices, in the
    same order) and the keyword arguments of its label (``learn``)."""

    index: int
    prob: float
    pmf: np.ndarray
    offered: tuple[int, ...]
    info: dict

    def drawn_first(self) -> list[tuple[int, float]]:
        """``(action, probability)`` over ``offered``: the drawn action first, then the
        others in order (VW's order, in ``-p`` and in logs)."""
        pairs = list(zip(self.offered, self.pmf.tolist()))
        at = self.offered.index(self.index)
        return [pairs[at], *pairs[:at], *pairs[at + 1:]]


def slot_context(context, slot: Slot, position: int) -> dict:
    """The context slot ``position`` is decided on: the example's features (a dict, or
    an array's values by position), the slot's own under ``slot^name`` and its position
    under `SLOT_INDEX` (names a model file keeps).

    >>> slot_context({"u": 1.0}, Slot({"h": 2.0}), 1)
    {'u': 1.0, 'slot^h': 2.0, 'slot_index=1': 1.0}
    """
    if isinstance(context, Mapping):
        merged = dict(context)
    else:
        merged = dict(enumerate(np.asarray(context, dtype=float).ravel().tolist()))
    for name, value in (slot.features or {}).items():
        merged[f"slot^{name}"] = value
    merged[f"{SLOT_INDEX}={position}"] = 1.0
    return merged


def _as_slots(slots: Sequence) -> list[Slot]:
    """Each slot as a `Slot` (a dict: its features)."""
    return [slot if isinstance(slot, Slot) else Slot(slot) for slot in slots]


def offered(actions: Sequence, slots: Sequence[Slot], position: int, taken: set[int]
            ) -> tuple[Sequence, tuple[int, ...]]:
    """Slot ``position``'s actions and their indices: its own (a slate), or the pool's
    it includes that no earlier slot ``taken``."""
    slot = slots[position]
    if slot.actions is not None:
        return slot.actions, tuple(range(len(slot.actions)))
    allowed = range(len(actions)) if slot.include is None else sorted(
        {i for i in slot.include if 0 <= i < len(actions)})
    return actions, tuple(i for i in allowed if i not in taken)


def predict_slots(learner, context, actions: Sequence, slots: Sequence[Slot]
                  ) -> list[SlotDecision | None]:
    """Decide each slot in order: a `SlotDecision` per slot (None for a slot no action is
    left for). ``slots``: `Slot` (or a dict of the slot's features)."""
    slots = _as_slots(slots)
    decisions, taken = [], set()
    for position, slot in enumerate(slots):
        pool, indices = offered(actions, slots, position, taken)
        if not indices:
            decisions.append(None)
            continue
        decision = learner.decide(slot_context(context, slot, position),
                                  [pool[i] for i in indices])
        at = int(rules.sample(decision.pmf[None], learner.rng.random(1))[0])
        info = {} if decision.candidates is None else {
            "candidates": tuple(decision.candidates[:, at].tolist())}
        decisions.append(SlotDecision(indices[at], float(decision.pmf[at]), decision.pmf,
                                      indices, info))
        if slot.actions is None:
            taken.add(indices[at])
    return decisions


def learn_slots(learner, context, actions: Sequence, slots: Sequence[Slot],
                decisions: Sequence, rewards: Sequence, weight: float = 1.0) -> None:
    """Learn each slot's reward: slot ``j`` played
    ``decisions[j]`` (a `SlotDecision`, or ``(index, prob)``) with reward ``rewards[j]``
    (None: not observed, the slot is left out)."""
    slots = _as_slots(slots)
    if not len(decisions) == len(rewards) == len(slots):
        raise ValueError(f"{len(slots)} slots, {len(decisions)} decisions and "
                         f"{len(rewards)} rewards: give one of each per slot")
    for position, (slot, decision, reward) in enumerate(zip(slots, decisions, rewards)):
        if decision is None or reward is None:
            continue
        index, prob = decision[0], decision[1]
        info = decision.info if isinstance(decision, SlotDecision) else {}
        pool = actions if slot.actions is None else slot.actions
        learner.learn(slot_context(context, slot, position), pool[index], reward, prob,
                      weight=weight, **info)
