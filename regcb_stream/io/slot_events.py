"""CCB and slates DSJSON for the production loop (``--ccb_explore_adf --dsjson`` or
``--slates --dsjson`` with ``--decision_log`` or ``--reward_wait``): each event with its
context ``c``, and the reward lines of slots or slates.

A slot's reward line names its event and its slot: ``{"EventId": "e1", "_slot": 0, "v":
1.0}``, where ``_slot`` is the slot's index (from 0) or its ``_id`` (a string: the
event's ``c._slots[j]._id``, or the ``_id`` the decision log's ``_outcomes`` give it), as
Personalizer's multi-slot rewards name a slot by its id. Its ``v`` is the reward of the
action the slot drew (``-cost``); ``_labelIndex`` is refused (a slot's reward is for its
drawn action). A slate's reward is the whole slate's, ``{"EventId": "e1", "v": 1.0}``,
without ``_slot``. Events are read as `dsjson.iter_slots_dsjson` reads them.

>>> lines = ['{"EventId":"e1","c":{"_multi":[{"a":1},{"b":1}],"_slots":[{"_id":"top"}]}}',
...          '{"EventId":"e1","_slot":"top","v":1}']
>>> (example, context), reward = iter_slot_events(lines)
>>> example.tag, context["_slots"], reward
('e1', [{'_id': 'top'}], SlotReward(event_id='e1', value=1.0, slot='top', line_no=2))
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from regcb_stream.io.dsjson import Reward, parse_event, parse_slots_event
from regcb_stream.io.vw_features import FieldError
from regcb_stream.io.vw_slots import SlotsExample
from regcb_stream.io.vw_text import OnError, VWParseError


class SlotReward(NamedTuple):
    """A slot's reward line: the event, the reward, the slot (its index, or its ``_id``)
    and the line's number."""

    event_id: str
    value: float
    slot: int | str | None  # (None: a slate's, the whole slate's reward)
    line_no: int


def iter_slot_events(lines: Iterable[str], on_error: OnError | None = None,
                     first_line: int = 1, rewards: bool = True, kind: str = "ccb"
                     ) -> Iterator[tuple[SlotsExample, dict] | SlotReward]:
    """``(example, c)`` per event, and with ``rewards`` a `SlotReward` per reward line of
    a ``kind`` (``"ccb"``: a slot's, ``"slates"``: a slate's) event (without: a reward
    line is an event without a context, an error); a bad line raises its `VWParseError`
    (with ``on_error``: reported and skipped)."""
    for no, raw in enumerate(lines, first_line):
        text = raw.rstrip("\r\n").removeprefix("\ufeff")
        if not text.startswith("{"):
            continue
        try:
            item = parse_slot_line(text, no, rewards, kind)
        except FieldError as error:
            failure = VWParseError(no, text[:200], error.rule, error.detail)
        except VWParseError as error:
            failure = error
        else:
            yield item
            continue
        if on_error is None:
            raise failure
        on_error(failure)


def parse_slot_line(text: str, line_no: int, rewards: bool = True, kind: str = "ccb"
                    ) -> tuple[SlotsExample, dict] | SlotReward:
    """One line: an event and its context, or (``rewards``) a reward line of a ``kind``
    event, one without ``c`` that has ``v``; ``FieldError`` saying what is wrong."""
    try:
        example = parse_slots_event(text, line_no)
    except FieldError as error:
        obj = json.loads(text) if rewards and error.rule == "context" else {}
        if "c" in obj or "v" not in obj:
            raise
        return slot_reward(parse_event(text), obj.get("_slot"), line_no, kind)
    if not isinstance(example.tag, (str, type(None))):
        raise FieldError("EventId", f"'EventId' is {json.dumps(example.tag)}, not a string")
    return example, json.loads(text)["c"]


def slot_reward(reward: Reward, slot, line_no: int, kind: str = "ccb") -> SlotReward:
    """A reward line's `SlotReward`, its ``_slot`` checked (a ``kind`` event's: a CCB
    slot's names it, a slate's has none)."""
    if kind == "slates":
        if reward.action is not None or slot is not None:
            raise FieldError("reward", "a slate's reward is for the whole slate it drew: "
                             'no "_slot" or "_labelIndex"')
        return SlotReward(reward.event_id, reward.value, None, line_no)
    if reward.action is not None:
        raise FieldError("reward", "_labelIndex: a slot's reward is for the action it drew "
                         '(name the slot with "_slot")')
    if slot is None:
        raise FieldError("reward", 'a slot\'s reward line names its slot: "_slot", its index '
                         '(from 0) or its "_id"')
    if isinstance(slot, bool) or not (isinstance(slot, str) or isinstance(slot, int)
                                      and slot >= 0):
        raise FieldError("reward", f'"_slot" is {json.dumps(slot)[:20]}, not a slot\'s index '
                         '(from 0) or its "_id" (a string)')
    return SlotReward(reward.event_id, reward.value, slot, line_no)
