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
learner and use only its public ``decide``, ``rng`` and ``learn``, or, where the learner
has a compiled loop whose decisions carry each row's ``x^T A^-1 x`` (a ridge oracle, a
fixed budget), its ``replay``: every slot's rows over the whole pool in one call, each
slot's bounds then those of the actions it is offered, with the budget for as many; so
the decisions of many examples are one block (`replay_slots`, the command's), with the
numbers of one example at a time.

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
    return _with_part(context, _slot_part(slot.features, position))


def _with_part(context, part: dict) -> dict:
    """The example's features (a dict, or an array's values by position) with a slot's
    part (`_slot_part`) added."""
    if not isinstance(context, Mapping):
        context = dict(enumerate(np.asarray(context, dtype=float).ravel().tolist()))
    return {**context, **part}


def _slot_part(features: Mapping | None, position: int) -> dict:
    """What `slot_context` adds to the example's features: the slot's own under
    ``slot^name``, then its position."""
    part = {f"slot^{name}": value for name, value in (features or {}).items()}
    part[f"{SLOT_INDEX}={position}"] = 1.0
    return part


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
    round_ = SlotRound(context, actions, slots, [None] * len(slots))
    if _in_block(round_) and _compiled(learner):
        return _block(learner, [round_], learn=False)[0]
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
    learned = [(position, slot, actions if slot.actions is None else slot.actions, decision)
               for position, (slot, decision, reward) in enumerate(zip(slots, decisions, rewards))
               if decision is not None and reward is not None]  # (each checked, then learned)
    played = [_played(decision[0], pool, position) for position, _, pool, decision in learned]
    for (position, slot, pool, decision), index in zip(learned, played):
        info = decision.info if isinstance(decision, SlotDecision) else {}
        learner.learn(slot_context(context, slot, position), pool[index], rewards[position],
                      decision[1], weight=weight, **info)


def _played(index, pool: Sequence, position: int) -> int:
    """A slot's logged action: an index among its ``pool`` (else a ``ValueError``)."""
    if not (isinstance(index, (int, np.integer)) and 0 <= index < len(pool)):
        raise ValueError(f"slot {position}: the logged action {index!r} is not an index "
                         f"among its {len(pool)} actions")
    return int(index)


class SlotRound(NamedTuple):
    """One multi-slot example of a log: as `predict_slots` and `learn_slots` take it,
    ``labels`` a ``(index, probability, reward)`` per slot (None: nothing to learn)."""

    context: object
    actions: Sequence
    slots: Sequence[Slot]
    labels: Sequence[tuple | None]
    weight: float = 1.0


def replay_slots(learner, rounds: Sequence[SlotRound], learn: bool = True
                 ) -> list[list[SlotDecision | None]]:
    """Each round decided as `predict_slots` decides it, then (``learn``) its labels
    learned as `learn_slots` learns them, in order; the decisions of each. Runs of
    conditional rounds (slots that choose in the pool, none naming the actions it
    includes) with pools of one size are one block in the learner's compiled loop where it
    has one (`RegCB.replay`: each slot's rows over the whole pool, the labels after them,
    and from each row's ``x^T A^-1 x`` the bounds of the actions the slot is offered, with
    its own budget); any other round goes alone.

    >>> from regcb_stream import RegCB
    >>> actions = [{"item=a": 1.0}, {"item=b": 1.0}, {"item=c": 1.0}]
    >>> rounds = [SlotRound({"user": 1.0}, actions, [Slot(), Slot()], [(0, 0.5, 1.0), None])
    ...           for _ in range(3)]
    >>> decisions = replay_slots(RegCB(seed=0), rounds)
    >>> [len(d.pmf) for d in decisions[-1]], len(decisions)
    ([3, 2], 3)
    """
    out, start = [], 0
    while start < len(rounds):
        stop = start + 1
        if _in_block(rounds[start]) and _compiled(learner):
            pool = len(rounds[start].actions)
            while stop < len(rounds) and _in_block(rounds[stop]) and len(
                    rounds[stop].actions) == pool:
                stop += 1
            out += _block(learner, rounds[start:stop], learn)
        else:
            context, actions, slots, labels, weight = rounds[start]
            decisions = predict_slots(learner, context, actions, slots)
            if learn:
                learn_slots(learner, context, actions, slots, [
                    None if label is None else label[:2] for label in labels],
                    [None if label is None else label[2] for label in labels], weight)
            out.append(decisions)
        start = stop
    return out


def _in_block(round_: SlotRound) -> bool:
    """Whether a round's slots all choose in the pool, none naming what it includes."""
    return bool(round_.actions) and all(
        isinstance(slot, Mapping) or slot is None or slot.actions is None
        and slot.include is None for slot in round_.slots)


def _compiled(learner) -> bool:
    """Whether the learner decides and learns blocks in a compiled loop whose decisions
    carry ``x^T A^-1 x`` (a fixed budget; the model class settled by a first example)."""
    explorer = learner.model.explorer
    return (learner.model_class is not None and explorer.compiled_replay
            and explorer.capabilities.widths and explorer.budget.selector is None)


def _block(learner, rounds: Sequence[SlotRound], learn: bool
           ) -> list[list[SlotDecision | None]]:
    """Rounds with pools of one size in one `RegCB.replay`: each round's slot rows (no
    label), then its labelled slots' rows again (their labels); then each slot's decision
    from its rows' fit and ``x^T A^-1 x``, slot by slot across the rounds."""
    slots = [_as_slots(r.slots) for r in rounds]
    parts: dict[tuple[int, int], dict] = {}  # (a slot's features, position): its part

    def context(r: SlotRound, slot: Slot, j: int) -> dict:  # (slot_context, each part once)
        part = parts.get(key := (id(slot.features), j))  # (the dicts live while this runs)
        if part is None:
            part = parts[key] = _slot_part(slot.features, j)
        return _with_part(r.context, part)

    encoded = learner.encoder.joint_rounds([
        ([context(r, slot, j) for j, slot in enumerate(own)], r.actions)
        for r, own in zip(rounds, slots)])
    order, played, rewards, probs, weights, decided = [], [], [], [], [], []
    first = 0  # each round's first slot row in encoded
    for r, own in zip(rounds, slots):
        decided.append(len(order))
        labelled = [j for j, label in enumerate(r.labels) if label is not None and learn]
        order += [*range(first, first + len(own)), *(first + j for j in labelled)]
        played += [-1] * len(own) + [_played(r.labels[j][0], r.actions, j) for j in labelled]
        probs += [1.0] * len(own) + [r.labels[j][1] for j in labelled]
        rewards += [0.0] * len(own) + [r.labels[j][2] for j in labelled]
        weights += [1.0] * len(own) + [r.weight] * len(labelled)
        first += len(own)
    before, played = learner.n_labels, np.array(played)
    rows = encoded[np.array(order)]
    # a label's row is learned, its decision never read: only its played action's entries
    # are kept (the loop's sums skip zero entries)
    labels = played >= 0
    rows.value[labels] *= (np.arange(rows.value.shape[1]) == played[labels, None])[..., None]
    decision = learner.replay(np.empty((len(order), 0)), rows, played, np.array(rewards),
                              np.array(probs), np.array(weights))
    counts = before + np.cumsum([0] + [sum(label is not None for label in r.labels)
                                       if learn else 0 for r in rounds[:-1]])
    return _slot_decisions(learner, rounds, decision, np.array(decided), counts)


def _slot_decisions(learner, rounds, decision, decided: np.ndarray, counts: np.ndarray
                    ) -> list[list[SlotDecision | None]]:
    """Each round's slot decisions from its slots' rows (``decided[r] + j``: slot ``j`` of
    round ``r``), the labels learned before each round ``counts``: slot by slot across
    the rounds, each slot's bounds over the actions the earlier slots left, its budget
    for as many, the rule's distribution and the draw (`predict_slots`'s numbers)."""
    explorer, (lo, hi) = learner.model.explorer, learner.reward_range
    n, k = len(rounds), len(rounds[0].actions)
    n_slots = np.array([min(len(r.slots), k) for r in rounds])
    order = np.zeros((n, int(n_slots.max())), np.intp)  # each decided slot's uniform
    order[np.arange(n_slots.max()) < n_slots[:, None]] = np.arange(n_slots.sum())
    uniforms = learner.rng.random(int(n_slots.sum()))
    taken = np.zeros((n, k), bool)
    out = [[None] * len(r.slots) for r in rounds]
    for j in range(order.shape[1]):
        live = np.flatnonzero(n_slots > j)
        at = decided[live] + j
        offered = ~taken[live]
        prediction = decision.prediction[at][offered].reshape(len(live), k - j)
        variance = decision.variance[at][offered].reshape(len(live), k - j)
        budget = explorer.budget.loss(explorer, counts[live], k - j)[:, None]
        radius = np.sqrt(np.where(budget > 0.0, budget, 0.0) * variance)
        low, high = (_clip(prediction + sign * radius, lo, hi) for sign in (-1.0, 1.0))
        pmf = explorer.rule(low, high, explorer.tolerance, prediction, (lo, hi))
        pmf[np.isnan(budget[:, 0])] = 1.0 / (k - j)
        drawn = rules.sample(pmf, uniforms[order[live, j]])
        indices = np.flatnonzero(offered.ravel()).reshape(len(live), k - j) % k
        rows = np.arange(len(live))
        chosen = indices[rows, drawn]
        taken[live, chosen] = True
        for r, index, prob, row, offer in zip(live.tolist(), chosen.tolist(),
                                               pmf[rows, drawn].tolist(), pmf, indices.tolist()):
            out[r][j] = SlotDecision(index, prob, row, tuple(offer), {})
    return out


def _clip(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``x`` clipped to ``[lo, hi]`` as the compiled loop clips (NaN: ``lo``)."""
    x = np.where(x >= lo, x, lo)
    return np.where(x <= hi, x, hi)
