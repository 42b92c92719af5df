"""VW's multi-slot text formats: conditional contextual bandits (``ccb``) and slates.

An example is its lines up to an empty line. CCB (VW's ``--ccb_explore_adf``)::

    ccb shared |User b
    ccb action |Action d
    ccb action |Action e
    ccb slot 1:0.5:0.25 |Slot h          (logged action 1, cost 0.5, probability 0.25)
    ccb slot 0:0:0.5,1:0.5 0,1 |Slot i   (with every probability, and the actions it may take)
    ccb slot |Slot j                     (no outcome)

Slates (VW's ``--slates``): each action belongs to one slot, the cost is the whole slate's::

    slates shared 0.8 |User b
    slates action 0 |Action d
    slates action 1 |Action e
    slates slot 0:0.8 |Slot h            (logged action 0 of the slot's own, probability 0.8)

Actions of an outcome are 0-based: CCB's index the example's actions, slates' the slot's
own. Every rule VW checks is checked, with the line and what is wrong; beyond VW's, a
logged action must exist and its probability lie in (0, 1] (VW clamps it, then divides by
it). Features are parsed as VW text's (`vw_features.parse_namespaces`).

>>> lines = ["ccb shared |User b", "ccb action |Action d", "ccb action |Action e",
...          "ccb slot 1:0.5:0.25 |Slot h", "ccb slot |Slot j", ""]
>>> example, = iter_slots(lines)
>>> example.kind, len(example.actions), example.slots[0].outcome
('ccb', 2, Outcome(action=1, cost=0.5, prob=0.25, probs=((1, 0.25),)))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from regcb_stream.io.read_ahead import taker
from regcb_stream.io.vw_features import Features, FieldError, number, parse_namespaces
from regcb_stream.io.vw_text import OnError, VWParseError, clean_line

KINDS = ("ccb", "slates")
ROLES = ("shared", "action", "slot")
CHUNK = 1024  # lines read at once (a `ReadAhead` gives what it has, at least one)
FLAGS = {"ccb": "--ccb_explore_adf", "slates": "--slates"}  # each kind's command flag
SUM_TOLERANCE = 1e-4  # the largest |sum - 1| of a full distribution (VW: are_same, float)


class Outcome(NamedTuple):
    """A slot's logged outcome: its action, cost (a slate's slots: 0, the slate's cost is
    the example's) and probability, and every ``(action, probability)`` the line gives,
    the logged first."""

    action: int
    cost: float
    prob: float
    probs: tuple[tuple[int, float], ...]


class SlotLine(NamedTuple):
    """A slot's line: its features, outcome (None: none logged), the pool's actions it may
    take (CCB; None: any) and its tag."""

    features: Features
    outcome: Outcome | None
    include: tuple[int, ...] | None
    tag: str | None


class SlotsExample(NamedTuple):
    """One multi-slot example: ``kind`` ``"ccb"`` or ``"slates"``, the shared features,
    the actions' features, each action's slot (slates; None for CCB), the slots, the
    slate's cost (slates' shared line; None if not given), its first line's number and
    its weight."""

    kind: str
    shared: Features
    actions: tuple[Features, ...]
    action_slots: tuple[int, ...] | None
    slots: tuple[SlotLine, ...]
    cost: float | None
    tag: str | None
    line_no: int
    weight: float = 1.0  # the example's importance weight (DSJSON's pdrop)

    def slot_actions(self, slot: int) -> list[int]:
        """A slate's slot's actions: their indices among the example's."""
        return [a for a, s in enumerate(self.action_slots) if s == slot]


def iter_slots(lines: Iterable[str], on_error: OnError | None = None, first_line: int = 1
               ) -> Iterator[SlotsExample]:
    """Yield each multi-slot example as its terminating empty line (or the input's end)
    is read. ``on_error`` is called with each `VWParseError`, and the example is skipped;
    without it the error is raised."""
    take, block, no = taker(lines), [], first_line - 1
    while chunk := take(CHUNK):  # (what a `ReadAhead` has: never waiting for more)
        for raw in chunk:
            no += 1
            text = clean_line(raw)
            if text.strip():
                block.append((no, text))
            elif block:
                yield from _example(block, on_error)
                block = []
    if block:
        yield from _example(block, on_error)


def _example(block: list[tuple[int, str]], on_error: OnError | None
             ) -> Iterator[SlotsExample]:
    try:
        yield parse_example(block)
    except VWParseError as error:
        if on_error is None:
            raise
        on_error(error)


def parse_example(block: list[tuple[int, str]]) -> SlotsExample:
    """One example from its numbered lines; `VWParseError` naming the line at fault."""
    kind, seen_shared = None, False
    shared, cost, tag = (), None, None
    actions, action_slots, slots, slot_lines = [], [], [], []
    for no, text in block:
        try:
            first, role, item = _classified(text)
            if kind is None:
                kind = first if first in KINDS else None
            if first is None or first != kind:
                expected = kind or "'ccb' or 'slates'"
                raise FieldError("kind", f"the line must start with {expected} (one kind "
                                 "of line per example)")
            if role is None:
                raise FieldError("type", f"{kind} lines are '{kind} shared', '{kind} action' "
                                 f"or '{kind} slot'")
            if role == "shared":
                if seen_shared:
                    raise FieldError("shared", "a second shared line in one example")
                seen_shared = True
                shared, tag, cost = _shared(kind, *item)
            elif role == "action":
                features, slot_id, error = item
                if error:
                    raise FieldError(*error)
                actions.append(features)
                if kind == "slates":
                    action_slots.append(slot_id)
            else:
                if not isinstance(item, SlotLine):  # (rule, detail): a bad label
                    raise FieldError(*item)
                slots.append(item)
                slot_lines.append((no, text))
        except FieldError as error:
            raise VWParseError(no, text, error.rule, error.detail) from None
    example = SlotsExample(kind, shared, tuple(actions),
                           tuple(action_slots) if kind == "slates" else None, tuple(slots),
                           cost, tag, block[0][0])
    check(example, lambda j: block[0] if j is None else slot_lines[j])
    return example


_LINES: dict[str, tuple] = {}  # action and slot lines (a stream repeats them): each read once


def _classified(text: str) -> tuple:
    """A line's first word, its role (None: not one of the three) and what it gives: a
    shared line ``(features, tag, label words)``, an action line ``(features, slot, error)``
    (a slate's slot; error: ``(rule, detail)`` of a bad label, or None) and a slot line its
    `SlotLine` (or the ``(rule, detail)`` of its bad label), each as a line of the kind of
    its first word reads (the example's kind, where it is used). `FieldError` for a line
    without features; action and slot lines are remembered (4,096 at most)."""
    got = _LINES.get(text)
    if got is not None:
        return got
    words, tag, body = _head(text)
    features = parse_namespaces(body)
    first = words[0] if words else None
    role = words[1] if len(words) > 1 and words[1] in ROLES else None
    rest, item = tuple(words[2:]), None
    if role == "shared" or first not in KINDS:
        return first, role, (features, tag, rest)
    if role == "action":
        try:
            item = features, _slot_id(rest) if first == "slates" else None, None
            if first == "ccb" and rest:
                raise FieldError("label", "a ccb action line cannot carry a label")
        except FieldError as error:
            item = features, None, (error.rule, error.detail)
    elif role == "slot":
        try:
            item = _slot(first, rest, features, tag)
        except FieldError as error:
            item = error.rule, error.detail
    if len(_LINES) >= 1 << 12:
        _LINES.clear()
    _LINES[text] = got = first, role, item
    return got


def _shared(kind: str, features: Features, tag: str | None, rest: tuple[str, ...]
            ) -> tuple[Features, str | None, float | None]:
    """A shared line's features, tag and cost (slates' optional one)."""
    if kind == "ccb" and rest:
        raise FieldError("label", "a ccb shared line cannot carry a label")
    if kind == "slates" and len(rest) > 1:
        raise FieldError("label", "slates shared [cost]: one cost at most")
    return features, tag, number(rest[0], "cost", "cost") if rest else None


def _head(text: str) -> tuple[list[str], str | None, str]:
    """The label's words, the tag and the feature text of one line."""
    bar = text.find("|")
    if bar < 0:
        raise FieldError("no_bar", "line has no '|' before the features")
    words = [w for w in text[:bar].replace("\t", " ").split(" ") if w]
    tag = words.pop()[1:] or None if words and words[-1].startswith("'") else None
    return words, tag, text[bar + 1:]


def _slot_id(rest: list[str]) -> int:
    if len(rest) != 1 or not (rest[0].isascii() and rest[0].isdigit()):
        raise FieldError("slot_id", "slates action <slot>: the slot is a number from 0")
    return int(rest[0])


def _slot(kind: str, rest: tuple[str, ...], features: Features, tag: str | None
          ) -> SlotLine:
    """A slot line's label: CCB ``[a:c:p[,a:p...]] [i,j...]``, slates ``[a:p[,a:p...]]``."""
    if len(rest) > (2 if kind == "ccb" else 1):
        raise FieldError("label", "ccb slot [action:cost:probability[,action:probability"
                         "...]] [action,action...]" if kind == "ccb" else
                         "slates slot [action:probability[,action:probability...]]")
    outcome, include = None, None
    for word in rest:
        if ":" in word:
            if outcome is not None:
                raise FieldError("label", "a slot has one outcome at most")
            outcome = _outcome(word, kind == "ccb")
        elif kind == "ccb" and include is None:
            include = tuple(_index(i, "included action") for i in word.split(",") if i)
        else:
            raise FieldError("label", f"{word!r} is neither an outcome nor a list of actions")
    return SlotLine(features, outcome, include, tag)


def _outcome(word: str, with_cost: bool) -> Outcome:
    first, *others = word.split(",")
    parts = first.split(":")
    if len(parts) != (3 if with_cost else 2):
        raise FieldError("label", f"{first!r} is not " + (
            "action:cost:probability" if with_cost else "action:probability"))
    cost = number(parts[1], "cost", "cost") if with_cost else 0.0
    probs = [(_index(parts[0], "action"), _prob(parts[-1]))]
    for pair in others:
        fields = pair.split(":")
        if len(fields) != 2:
            raise FieldError("label", f"{pair!r} is not action:probability")
        probs.append((_index(fields[0], "action"), _prob(fields[1])))
    if not 0.0 < probs[0][1] <= 1.0:
        raise FieldError("probability", f"the logged action's probability {probs[0][1]:g} "
                         "is outside (0, 1]")
    if len(probs) > 1 and abs(math.fsum(p for _, p in probs) - 1.0) > SUM_TOLERANCE:
        raise FieldError("probability", "a slot's probabilities must add up to 1, not "
                         f"{math.fsum(p for _, p in probs):g}")
    return Outcome(probs[0][0], cost, probs[0][1], tuple(probs))


def _index(text: str, what: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise FieldError("label", f"{what} {text!r} is not a number from 0")
    return int(text)


def _prob(text: str) -> float:
    prob = number(text, "probability", "probability")
    if not 0.0 <= prob <= 1.0:
        raise FieldError("probability", f"probability {text} is outside [0, 1]")
    return prob


def check(example: SlotsExample, where) -> None:
    """The rules across an example's lines: slots exist (CCB: no more than actions),
    logged actions exist, slates' actions belong to slots that exist and every slot has
    actions; `VWParseError` at ``where(j)``, the ``(line number, text)`` of slot ``j`` (of
    the example for None)."""
    def fail(rule: str, detail: str, slot: int | None = None):
        raise VWParseError(*where(slot), rule, detail)

    if not example.slots:
        fail("slots", f"a {example.kind} example needs at least one slot line")
    if example.kind == "ccb" and len(example.actions) < len(example.slots):
        fail("slots", f"{len(example.slots)} slots and {len(example.actions)} actions: a ccb "
             "example needs an action for each slot (VW refuses fewer)")
    if example.kind == "slates":
        counts = [example.action_slots.count(s) for s in range(len(example.slots))]
        for at, slot in enumerate(example.action_slots):
            if slot >= len(example.slots):
                fail("slot_id", f"action {at} is in slot {slot}, but the example has "
                     f"{len(example.slots)} slot lines")
    for j, slot in enumerate(example.slots):
        size = len(example.actions) if example.kind == "ccb" else counts[j]
        if example.kind == "slates" and not size:
            fail("slot_id", f"slot {j} has no action", j)
        for action, _ in slot.outcome.probs if slot.outcome else ():
            if action >= size:
                fail("action_range", f"action {action} is outside the slot's {size} "
                     "actions (0-based)", j)


def feature_dict(features: Features) -> dict[str, float]:
    """A line's features as the learner's dict: ``namespace^name`` -> value (a feature
    named twice in a namespace: their sum, as VW's weight sees it).

    >>> feature_dict((("User", (("a", 1.0), ("a", 0.5))), (" ", (("b", 2.0),))))
    {'User^a': 1.5, ' ^b': 2.0}
    """
    out: dict[str, float] = {}
    for namespace, pairs in features:
        for name, value in pairs:
            key = f"{namespace}^{name}"
            out[key] = out.get(key, 0.0) + value
    return out
