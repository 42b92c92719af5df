"""The decision log and the delayed rewards of multi-slot decisions (``--ccb_explore_adf``
or ``--slates`` with ``--decision_log``, ``--reward_wait`` and ``--default_reward``), as
`outcomes` has them for single decisions.

With ``--reward_wait`` (and ``--dsjson``), an event whose slots have no outcome waits under
its ``EventId``; each slot's reward comes on a reward line of its own, ``{"EventId": "e1",
"_slot": 0, "v": 1.0}`` (`regcb_stream.io.slot_events`: ``_slot`` is the slot's index from
0 or its ``_id``), and is learned when its line is read, with the probability the slot's
drawn action had at decision time and the features it was decided on. The decision waits
until every slot that drew an action has its reward; at most ``--reward_wait`` decisions
wait, and one more times the oldest out: its slots without a reward are learned with
``--default_reward`` (or, without one, dropped). A reward for an event not waiting, a slot
it does not have, a slot that drew no action or one rewarded already is counted and
ignored. Waiting decisions are saved with ``-f`` and waited for again after ``-i``; the
summary counts decisions (examples), not slots. A slate's reward is the whole slate's
(``{"EventId": "e1", "v": 1.0}``, no ``_slot``): each slot learns it, with its drawn
action's probability.

The log holds one CCB DSJSON line per example (`decision_log.slots_line`), written when
its outcome is known: at once when no reward will come (its slots' outcomes in the input:
a slot's cost is written when its outcome is for the action it drew), when the last of a
waiting decision's slots is rewarded, or when it times out. An example without an
``EventId`` (or a text example without a tag) is given one that draws nothing from the
learner's sampler, so the log changes none of the draws (``-p`` is the same with it or
without it); a slot without an ``_id`` is named ``EVENTID-j`` in ``_outcomes``. A slate's
line is VW's slates DSJSON (`decision_log`): its slots' ``_outcomes`` without ids, and the
slate's cost at the top once it is known (in the input, when every slot's outcome is the
action it drew).
"""

from __future__ import annotations

import hashlib
import json
from typing import NamedTuple

from regcb_stream.command.outcomes import OutcomeLog
from regcb_stream.io.decision_log import (
    DecisionLogError,
    slot_outcome,
    slots_context_of,
    slots_line,
)
from regcb_stream.io.slot_events import SlotReward
from regcb_stream.io.vw_slots import SlotsExample
from regcb_stream.slots import Slot, SlotDecision, learn_slots


class Decided(NamedTuple):
    """A multi-slot decision, as it waits: its parts plain tuples, lists and dicts (a
    model file keeps it as a tuple)."""

    event_id: str
    c: str | dict | None  # the log's ``c`` (None: no log)
    slot_ids: list  # each slot's ``_id``
    features: tuple  # (context, actions, slots: each a `Slot`'s fields): `learn_slots`'s
    decisions: list  # each slot's `SlotDecision` fields (None: no action left for it)
    costs: list  # each slot's cost once known (None: not yet)
    weight: float
    version: int  # the labels the learner had when it decided
    kind: str  # "ccb", or "slates": one reward, the whole slate's


class SlotOutcomes(OutcomeLog):
    """The log and the waiting decisions of multi-slot (CCB or slates) examples."""

    def decided(self, example: SlotsExample, c: dict | None, features: tuple,
                decisions: list, version: int) -> None:
        """An example's decisions (``c``: a DSJSON event's context, None for text;
        ``features``: the ``(context, actions, slots)`` they were decided on; ``version``:
        the labels the learner had)."""
        waits = self.pending is not None and example.tag is not None and all(
            line.outcome is None for line in example.slots) and example.cost is None
        if not waits and self.log is None:
            return
        event_id = example.tag or self._made_id(example.line_no)
        drawn = [bool(line.outcome and decision and line.outcome.action == decision.index)
                 for line, decision in zip(example.slots, decisions)]
        if example.kind == "slates":  # (the slate's cost, if its outcomes are the draws)
            costs = [example.cost if all(drawn) else None] * len(drawn)
        else:
            costs = [line.outcome.cost if is_drawn else None
                     for line, is_drawn in zip(example.slots, drawn)]
        context, actions, slots = features
        record = Decided(event_id, self._context(example, c) if self.log else None,
                         _slot_ids(example, c, event_id),
                         (context, actions, [tuple(slot) for slot in slots]),
                         [decision and tuple(decision) for decision in decisions], costs,
                         example.weight, version, example.kind)
        if not waits:
            self._write([self._line(record)])
            return
        if event_id in self.pending.waiting:
            raise ValueError(f"line {example.line_no}: event id {event_id!r} is already "
                             "waiting for its reward")
        self._write([self._settle(Decided(*due), default)
                     for due, default in self.pending.add(event_id, tuple(record))])

    def reward(self, reward: SlotReward) -> None:
        """Learn a slot's reward (a `SlotReward`; a slate's: every slot's); the decision's
        log line once every slot that drew an action has its reward."""
        waiting = self.pending.waiting.get(reward.event_id)
        record = None if waiting is None else Decided(*waiting)
        slots = [] if record is None else _rewarded(record, reward.slot)
        if not slots:
            self.unmatched += 1
            return
        self._learn(record, dict.fromkeys(slots, reward.value))
        if all(cost is not None for cost, decision in zip(record.costs, record.decisions)
               if decision is not None):
            self.pending.take(reward.event_id)
            self._write([self._line(record)])

    def _settle(self, record: Decided, default: float | None) -> str | None:
        """A timed-out decision: its slots without a reward learned with ``default`` (None:
        dropped); its log line."""
        if default is not None:
            self._learn(record, {j: default for j, (cost, decision) in enumerate(
                zip(record.costs, record.decisions)) if decision and cost is None})
        return self._line(record)

    def _learn(self, record: Decided, rewards: dict) -> None:
        """Learn slot ``j``'s reward for each ``j: reward``, in slot order (its cost noted
        for the log)."""
        context, actions, slots = record.features
        n = len(slots)
        learn_slots(self.learner, context, actions, [Slot(*slot) for slot in slots],
                    [SlotDecision(*record.decisions[j]) if j in rewards else None
                     for j in range(n)], [rewards.get(j) for j in range(n)], record.weight)
        for j, reward in rewards.items():
            record.costs[j] = -reward

    def _line(self, record: Decided) -> str | None:
        """A decision's log line (None: no log)."""
        if self.log is None:
            return None
        slate = record.kind == "slates"  # (its cost the line's, its slots without ids)
        outcomes = [slot_outcome(None if slate else slot_id,
                                 decision and SlotDecision(*decision).drawn_first(),
                                 None if slate else cost)
                    for slot_id, decision, cost in zip(record.slot_ids, record.decisions,
                                                       record.costs)]
        known = slate and None not in record.costs
        return slots_line(record.event_id, record.c, outcomes, record.version,
                          record.costs[0] if known else None)

    def _context(self, example: SlotsExample, c: dict | None) -> str | dict:
        """The log's ``c``: a DSJSON event's own (a CB event's with its one slot), or the
        text example's features."""
        if c is not None:
            return json.dumps({**c, "_slots": c.get("_slots") or [{}]}, separators=(",", ":"))
        try:
            return slots_context_of(example.shared, list(example.actions), [
                (line.features, line.tag, line.include) for line in example.slots],
                example.action_slots)
        except DecisionLogError as error:
            raise DecisionLogError(f"line {example.line_no}: {error}") from None

    def _made_id(self, line_no: int) -> str:
        """An event id from the learner's sampler state (saved with the model) and the
        example's line, drawing nothing from the sampler."""
        state = json.dumps(self.learner.rng.bit_generator.state, sort_keys=True)
        return hashlib.blake2b(f"{state} {line_no}".encode(), digest_size=16).hexdigest()


def _slot_ids(example: SlotsExample, c: dict | None, event_id: str) -> list[str]:
    """Each slot's ``_id``: a DSJSON slot's own (text: its line's tag), else
    ``EVENTID-j``."""
    given = ([slot.get("_id") for slot in c.get("_slots") or [{}]] if c is not None
             else [line.tag for line in example.slots])
    return [slot_id if isinstance(slot_id, str) else f"{event_id}-{j}"
            for j, slot_id in enumerate(given)]


def _rewarded(record: Decided, slot: int | str | None) -> list[int]:
    """The slots a reward is for: a slate's (``slot`` None) every slot that drew, or the
    slot it names (its index, or its ``_id``) if it drew and waits for its reward."""
    if slot is None:
        return [j for j, decision in enumerate(record.decisions) if decision is not None]
    if isinstance(slot, int):
        j = slot if slot < len(record.slot_ids) else None
    else:
        j = record.slot_ids.index(slot) if slot in record.slot_ids else None
    if j is None or record.decisions[j] is None or record.costs[j] is not None:
        return []
    return [j]
