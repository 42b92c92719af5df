"""The command's loop over multi-slot examples (``--ccb_explore_adf``, ``--slates``).

Each example (VW text: `regcb_stream.io.vw_slots`; CCB DSJSON with ``--dsjson``:
`regcb_stream.io.dsjson.iter_slots_dsjson`) is decided slot after slot, its ``-p`` lines
written as VW writes them (a line per slot, ``action:probability,...`` with the drawn
action first, then an empty line), then its logged outcomes learned: the examples
available are one block of `regcb_stream.slots.replay_slots`, the numbers of
`predict_slots` and `learn_slots` example by example. Features are keyed
``namespace^name`` (the learner hashes them into ``-b`` bits); the learner crosses every
shared and slot feature with every action feature, and the slot's position is a feature of
its own, so that what a slot and its position do to each action is learned (VW crosses
them through ``-q`` and its slot index). Rewards are costs negated, as everywhere in the
command; a slate's cost is its shared line's, learned for every slot with an outcome. A
slot's label is learned whatever the earlier slots drew: the slot's features do not depend
on them (VW drops the label of a slot whose logged action its own earlier draws took).
With ``outcomes`` (`slot_outcomes.SlotOutcomes`: ``--decision_log``, ``--reward_wait``),
each example's decisions are logged, and DSJSON reward lines of slots (or slates) are read
and learned.
"""

from __future__ import annotations

import contextlib
import functools

from regcb_stream.command.driver import ExampleError, warn_cost_range
from regcb_stream.io.dsjson import iter_slots_dsjson
from regcb_stream.io.slot_events import SlotReward, iter_slot_events
from regcb_stream.io.vw_predictions import format_slots
from regcb_stream.io.vw_slots import FLAGS, SlotsExample, feature_dict, iter_slots
from regcb_stream.io.vw_text import OnError, VWParseError
from regcb_stream.slots import Slot, SlotRound, replay_slots

MAX_BLOCK = 64  # examples decided at once: larger blocks take memory, not time (a block's
# rows, twice: 512 examples of 3 slots and 10 actions took 30 MiB more, no faster)


class SlotsDriver:
    """Decide, write and learn multi-slot examples of one kind (``"ccb"`` or
    ``"slates"``) with ``learner``; ``sink`` takes the ``-p`` text, ``progress`` the rows
    of the progress table (the first slot's, as VW's), ``outcomes`` the decisions (None:
    no log, no delayed rewards)."""

    def __init__(self, learner, kind: str, sink, progress, learn: bool = True,
                 guard=contextlib.nullcontext, dsjson: bool = False, outcomes=None):
        self.learner, self.kind, self.sink, self.progress = learner, kind, sink, progress
        self.learn, self.guard, self.dsjson, self.outcomes = learn, guard, dsjson, outcomes
        self._warned_range = False

    def run(self, lines, on_error: OnError | None = None, first_line: int = 1) -> None:
        """Every example of the lines, in order (``on_error``: as the other drivers'),
        decided in blocks of what is available, as the ADF driver's (`Driver.run`); with
        `outcomes`, one at a time."""
        ready = getattr(lines, "ready", lambda: True)
        items, batch = self._read(lines, on_error, first_line), []
        while True:
            try:
                item = next(items)
            except StopIteration:
                break
            except Exception:
                self._batch(batch)  # predictions before a bad example are written
                raise
            if isinstance(item, SlotReward):
                self._batch(batch)
                batch = []
                with self.guard():
                    self.outcomes.reward(item)
                continue
            example = item[0]
            if example.kind != self.kind:
                self._batch(batch)
                batch = []
                error = VWParseError(example.line_no, example.kind, "kind",
                                     f"a {example.kind} example, but the command reads "
                                     f"{self.kind} examples ({FLAGS[self.kind]})")
                if on_error is None:
                    raise error
                on_error(error)
                continue
            batch.append(item)
            if self.outcomes is not None or len(batch) == MAX_BLOCK or not ready():
                self._batch(batch)
                batch = []
        self._batch(batch)

    def _read(self, lines, on_error: OnError | None, first_line: int):
        """Each example with its DSJSON context (None: text, or no outcomes to write them
        to), and (waiting decisions) the reward lines, as `SlotReward`."""
        if self.dsjson and self.outcomes is not None:
            return iter_slot_events(lines, on_error, first_line,
                                    rewards=self.outcomes.pending is not None, kind=self.kind)
        read = iter_slots_dsjson if self.dsjson else iter_slots
        return ((example, None) for example in read(lines, on_error, first_line))

    def _batch(self, items: list) -> None:
        """Decide, write and learn examples (with their DSJSON contexts), as one block
        (`slots.replay_slots`); if the learner refuses one, those before it are written
        and its line named."""
        if not items:
            return
        with self.guard():
            before = self.learner.n_labels
            rounds = [self._round(example) for example, _ in items]
            try:
                decisions = replay_slots(self.learner, rounds, self.learn)
            except (ValueError, TypeError, MemoryError) as error:
                if len(items) == 1 or self.learner.n_labels != before:
                    raise ExampleError(items[0][0].line_no, error) from error
                decisions = None
            if decisions is not None:
                self._write(items, rounds, decisions, before)
                return
        for item in items:  # one at a time: the examples before the refused one written
            self._batch([item])

    def _round(self, example: SlotsExample) -> SlotRound:
        """An example as the learner takes it (costs negated: rewards; a slate's cost
        learned for every slot with an outcome)."""
        context = feature_dict(example.shared)
        actions = [_repeated(action) for action in example.actions]
        slots = [Slot(_repeated(line.features), None if example.kind == "ccb" else [
            actions[a] for a in example.slot_actions(j)], line.include)
            for j, line in enumerate(example.slots)]
        costs = self._costs(example)
        if self.learn:
            self._check_costs(costs, example.line_no)
        return SlotRound(context, actions, slots, [
            None if c is None else (line.outcome.action, line.outcome.prob, -c)
            for line, c in zip(example.slots, costs)], example.weight)

    @staticmethod
    def _costs(example: SlotsExample) -> list:
        """Each slot's logged cost (None: no outcome)."""
        return [None if line.outcome is None else example.cost if example.kind == "slates"
                else line.outcome.cost for line in example.slots]

    def _write(self, items: list, rounds: list, decisions: list, version: int) -> None:
        """The ``-p`` lines of a block's examples, then their outcomes and progress rows
        (``version``: the labels learned before the block)."""
        if self.sink is not None:
            self.sink.write(format_slots(decisions))
            self.sink.flush()  # a process may be waiting for these lines
        for (example, event_context), round_, slots in zip(items, rounds, decisions):
            if self.outcomes is not None:
                self.outcomes.decided(example, event_context, round_[:3], slots, version)
            costs = self._costs(example)
            if self.learn:
                version += sum(c is not None for c in costs)
            first, outcome = slots[0], example.slots[0].outcome
            label = None if outcome is None or costs[0] is None else (
                outcome.action, costs[0], outcome.prob)
            loss = None if label is None else (
                costs[0] / outcome.prob * first.prob if first and first.index == outcome.action
                else 0.0)
            shown = (first.index, first.prob) if first else (0, 0.0)  # (none drawn)
            self.progress.update(loss, label, shown,
                                 sum(map(len, (round_.context, *round_.actions))))

    def _check_costs(self, costs: list, line_no: int) -> None:
        """Warn, once per run, about a learned cost outside the cost range (as the
        other driver: learned as it is, the bounds clipped)."""
        low, high = -self.learner.reward_range[1], -self.learner.reward_range[0]
        outside = [c for c in costs if c is not None and not low <= c <= high]
        if outside and not self._warned_range:
            self._warned_range = True
            warn_cost_range(f"the example of line {line_no}", outside[0], low, high)


# the features of the lines a stream repeats (actions, slots), as one dict each (read,
# never changed, by the learner), each made once
_repeated = functools.lru_cache(maxsize=1 << 12)(feature_dict)
