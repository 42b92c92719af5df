"""Decision Service JSON (VW's ``--dsjson``): one logged decision per line, read as an ADF
example (the shared features and one set of features per action), with VW's semantics.

A line's ``c`` is the context: its fields form the shared features and ``c._multi`` holds
one object per action (nulls before them skipped). An object value is a namespace (named by its
key; ``-q`` crosses its first letter), at any depth; an array is that namespace too: its
numbers positional features (``0``, ``1``, ...), its objects' fields features of it, its
nulls nothing; a number is the feature ``key:value``, a string the feature ``key`` +
``value`` (space, ``|``, ``:`` and tab made ``_``), ``true`` the feature ``key``,
``false`` and ``null`` nothing. Fields of ``c`` itself that are not objects go to the
default namespace; keys starting with ``_`` are not features, but ``_text``'s words are.
The label is VW's: ``_labelIndex`` (0-based, into ``_multi``), ``_label_cost``,
``_label_probability`` (no cost: no label); ``a`` (action ids, the chosen first) and ``p``
(their probabilities) are kept for metrics, ``pdrop`` divides the example's weight by
``1 - pdrop`` (in float32, as VW). The lines VW skips are skipped (``parse_event``
returns None) and counted: a line that does not start with ``{`` (a checkpoint line), an
event without ``a`` or ``c._multi`` (a reward line, unless rewards are read; with them,
an unlabelled event without ``a`` is a decision to make), a ``_skipLearn`` event. What VW
refuses is an error naming the line, as are a line that is not UTF-8, a lone surrogate and
nesting deeper than `MAX_DEPTH` levels (VW reads deeper).
`iter_dsjson_adf` reads through a compiled reader (``_dsjson.c``), with `parse_event` as
its reference.

>>> event = parse_event('{"_label_cost": -1, "_label_probability": 0.8, "_labelIndex": 1, '
...     '"EventId": "e01", "a": [2, 1], "p": [0.8, 0.2], "c": {"User": {"age": 31, '
...     '"tier": "gold"}, "_multi": [{"A": {"id": "sports"}}, {"A": {"id": "music"}}]}}')
>>> event.event_id, event.label, event.shared
('e01', Label(action=1, cost=-1.0, prob=0.8), (('User', (('age', 31.0), ('tiergold', 1.0))),))
>>> event.actions[1]
(('A', (('idmusic', 1.0),)),)
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from regcb_stream.io.read_ahead import taker
from regcb_stream.io.vw_features import (
    DEFAULT_NS,
    FLOAT32_MAX,
    Features,
    FieldError,
    parse_namespaces,
)
from regcb_stream.io.vw_slots import Outcome, SlotLine, SlotsExample, check
from regcb_stream.io.vw_text import ADFExample, Label, OnError, VWParseError

try:
    from regcb_stream.io import _dsjson
except ImportError:  # not built: every line through the reference parser
    _dsjson = None

BLOCK = 256  # lines read by one compiled call, at most
MAX_DEPTH = 500  # levels of nesting a line may have (VW's parser reads deeper)
_ESCAPED = str.maketrans({" ": "_", "|": "_", ":": "_", "\t": "_"})
_TEXT = str.maketrans({"|": "_", ":": "_"})
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


@dataclass(frozen=True)
class DSJSONEvent:
    """One decision of a DSJSON log."""

    event_id: str | None
    shared: Features
    actions: tuple[Features, ...]
    label: Label | None  # the logged action's index into ``actions``, cost, probability
    logged_actions: tuple[int, ...]  # ``a``: action ids, the chosen one first
    probabilities: tuple[float, ...]  # ``p``: in ``a``'s order
    weight: float = 1.0  # 1 / (1 - pdrop)


@dataclass(frozen=True)
class Reward:
    """A reward line, ``{"EventId": "e1", "v": 1.0}``: the reward of the decision made
    under ``event_id`` (``action``, from an optional ``_labelIndex``: the index of the
    action the caller played; None: the one the command chose). Its ``v`` is a reward, the
    negative of a DSJSON cost, as in the outcomes (``o``) of Decision Service logs."""

    event_id: str
    value: float
    action: int | None = None
    line_no: int = 0


def parse_event(text: str, rewards: bool = True) -> DSJSONEvent | Reward | None:
    """One DSJSON line as an event, None for a line VW skips (one that does not start with
    ``{``, an event without actions or context, a ``_skipLearn`` event), a `Reward` for a
    reward line (with ``rewards``, when an unlabelled event needs no ``a``; without, a line
    without ``c`` is an event without actions), or ``FieldError`` saying what is wrong."""
    text = text.removeprefix("\ufeff")
    if not text.startswith("{"):
        return None
    obj = _load(text)
    if rewards and "c" not in obj and "v" in obj:
        return _reward(obj)
    for key in ("EventId", "Timestamp"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise FieldError(key, f"'{key}' is {_kind(obj[key])}, not a string")
    if "_outcomes" in obj:
        raise FieldError("context", "'_outcomes' (a CCB event) is read by --ccb_explore_adf "
                         "--dsjson; --dsjson alone reads CB events")
    context = obj.get("c")
    if context is not None and not isinstance(context, dict):
        raise FieldError("context", f"the context 'c' is {_kind(context)}, not an object")
    context = context or {}
    multi = context.get("_multi")
    if multi is not None and not isinstance(multi, list):
        raise FieldError("actions", f"'c._multi' is {_kind(multi)}, not an array of objects")
    multi = list(itertools.dropwhile(lambda action: action is None, multi or ()))
    for action in multi:  # (nulls before the actions are skipped, as VW skips them)
        if not isinstance(action, dict):
            raise FieldError("actions", f"'c._multi' holds {_kind(action)} among its "
                             "actions: an action is an object (VW drops such a line)")
    label = _label(obj, len(multi) if "c" in obj else None)
    logged = _numbers(obj, "a", int)
    probabilities = _numbers(obj, "p" if "p" in obj else "_p", float)
    _numbers(obj, "_ba", int)
    _number(obj, "_original_label_cost")
    skip_learn = obj.get("_skipLearn")
    if skip_learn is not None and not isinstance(skip_learn, bool):
        raise FieldError("_skipLearn", f"_skipLearn is {_kind(skip_learn)}, not true or false")
    weight = _weight(obj)
    shared = _namespaces(context, top=True)
    actions = tuple(_namespaces(action) for action in multi)
    if skip_learn or not multi or not (logged or rewards and label is None):
        return None  # (with rewards read, an unlabelled event is a decision to make)
    return DSJSONEvent(obj.get("EventId"), shared, actions, label, tuple(logged),
                       tuple(probabilities), weight)


def iter_dsjson(lines: Iterable[str], on_error: OnError | None = None
                ) -> Iterator[tuple[int, DSJSONEvent | Reward | None]]:
    """``(line number, event)`` per non-empty line (event None: a line VW skips); a bad
    line raises its `VWParseError`, or with ``on_error`` is reported and skipped."""
    for no, raw in enumerate(lines, 1):
        text = raw.rstrip("\r\n")
        if not text.strip():
            continue
        try:
            yield no, parse_event(text)
        except FieldError as error:
            failure = VWParseError(no, text[:200], error.rule, error.detail)
            if on_error is None:
                raise failure from None
            on_error(failure)


def iter_slots_dsjson(lines: Iterable[str], on_error: OnError | None = None,
                    first_line: int = 1) -> Iterator[SlotsExample]:
    """VW's CCB DSJSON (``--ccb_explore_adf --dsjson``; slates: `parse_slots_event`), a
    `SlotsExample` per event:
    ``c``'s fields the shared features, ``c._multi`` the actions, ``c._slots`` the slots
    (their fields the slot's features, ``_inc`` the actions a slot may take), and
    ``_outcomes`` each slot's outcome in order (``_label_cost``, the actions ``_a`` with
    the logged one first and their probabilities ``_p``); ``pdrop`` weighs the event; a CB
    event (no ``_slots``) is one slot with its label, as VW reads it. A
    line VW skips (not starting with ``{``) is skipped; a bad one raises its
    `VWParseError` (with ``on_error``: reported and skipped).

    >>> line = ('{"c":{"u":{"f":1},"_multi":[{"a":{"x":1}},{"a":{"y":1}}],"_slots":[{"s":1}]},'
    ...         '"_outcomes":[{"_label_cost":-1,"_a":[1,0],"_p":[0.75,0.25]}]}')
    >>> example, = iter_slots_dsjson([line])
    >>> len(example.actions), example.slots[0].outcome
    (2, Outcome(action=1, cost=-1.0, prob=0.75, probs=((1, 0.75), (0, 0.25))))
    """
    for no, raw in enumerate(lines, first_line):
        text = raw.rstrip("\r\n").removeprefix("\ufeff")
        if not text.startswith("{"):
            continue
        try:
            example = parse_slots_event(text, no)
        except FieldError as error:
            failure = VWParseError(no, text[:200], error.rule, error.detail)
            if on_error is None:
                raise failure from None
            on_error(failure)
            continue
        except VWParseError as failure:
            if on_error is None:
                raise
            on_error(failure)
            continue
        yield example


def parse_slots_event(text: str, line_no: int = 1) -> SlotsExample:
    """One CCB DSJSON line (`iter_slots_dsjson`), or a slates one (its actions in slots by
    ``_slot_id``, the slate's ``_label_cost`` at the top, each slot's ``_a`` and ``_p`` in
    ``_outcomes``); ``FieldError`` saying what is wrong."""
    obj = _load(text)
    context = obj.get("c")
    if not isinstance(context, dict):
        raise FieldError("context", f"the context 'c' is {_kind(context)}, not an object")
    parts = {}
    for key in ("_multi", "_slots"):
        parts[key] = context.get(key) or []
        if not isinstance(parts[key], list) or not all(isinstance(v, dict)
                                                       for v in parts[key]):
            raise FieldError("context", f"'c.{key}' is not an array of objects")
    outcomes = obj.get("_outcomes") or []
    if not isinstance(outcomes, list) or not all(isinstance(o, dict) for o in outcomes):
        raise FieldError("_outcomes", "'_outcomes' is not an array of objects")
    if len(outcomes) > len(parts["_slots"]):
        raise FieldError("_outcomes", f"{len(outcomes)} outcomes for "
                         f"{len(parts['_slots'])} slots")
    shared = _namespaces({k: v for k, v in context.items() if k != "_slots"}, top=True)
    slates = any("_slot_id" in action for action in parts["_multi"])
    if slates:  # each action's slot; the slate's cost at the top, each slot's _a and _p
        action_slots = tuple(action.get("_slot_id") for action in parts["_multi"])
        if not all(_is_number(s) and s == int(s) >= 0 for s in action_slots):
            raise FieldError("_slot_id", "a slates event gives every action a '_slot_id' "
                             "(a slot, from 0)")
        action_slots = tuple(map(int, action_slots))
        cost = _number(obj, "_label_cost")
        slot_outcomes = [_outcome(o, with_cost=False) for o in outcomes]
        slot_outcomes += [None] * (len(parts["_slots"]) - len(outcomes))
    elif not parts["_slots"] and not outcomes:  # a CB event: one slot, its label (as VW)
        label = _label(obj, len(parts["_multi"]))
        parts["_slots"], slot_outcomes = [{}], [None if label is None or label.prob is None
                                                else Outcome(label.action, label.cost,
                                                             label.prob,
                                                             ((label.action, label.prob),))]
    else:
        slot_outcomes = [_outcome(o) for o in outcomes]
        slot_outcomes += [None] * (len(parts["_slots"]) - len(outcomes))
    slots = []
    for j, slot in enumerate(parts["_slots"]):
        include = slot.get("_inc")
        if include is not None and not (isinstance(include, list) and all(
                _is_number(i) and i == int(i) >= 0 for i in include)):
            raise FieldError("_inc", f"slot {j}'s '_inc' is not an array of actions (0-based)")
        slots.append(SlotLine(_namespaces({k: v for k, v in slot.items()
                                            if k not in ("_id", "_inc")}), slot_outcomes[j],
                              None if include is None else tuple(map(int, include)), None))
    example = SlotsExample("slates" if slates else "ccb", shared,
                           tuple(map(_namespaces, parts["_multi"])),
                           action_slots if slates else None, tuple(slots),
                           cost if slates else None, obj.get("EventId"), line_no,
                           _weight(obj))
    check(example, lambda j: (line_no, text[:200]))
    return example


def _outcome(obj: dict, with_cost: bool = True) -> Outcome | None:
    """A slot's ``_outcomes`` entry as an `Outcome` (None: no cost, not labelled; without
    ``with_cost``, a slate's slot: cost 0, the slate's cost is the event's)."""
    cost = _number(obj, "_label_cost") if with_cost else 0.0
    actions, probs = obj.get("_a"), obj.get("_p")
    actions = [actions] if _is_number(actions) else actions
    probs = [probs] if _is_number(probs) else probs
    if cost is None:
        return None
    if not (isinstance(actions, list) and isinstance(probs, list) and actions
            and len(actions) == len(probs) and all(map(_is_number, actions + probs))
            and all(a == int(a) >= 0 for a in actions)):
        raise FieldError("_outcomes", "an outcome's '_a' and '_p' are arrays of as many "
                         "actions (0-based) and probabilities")
    if not 0 < probs[0] <= 1 or not all(0 <= p <= 1 for p in probs):
        raise FieldError("probability", f"an outcome's probabilities {probs} are not in "
                         "(0, 1] (the logged action's) and [0, 1]")
    pairs = tuple((int(a), float(p)) for a, p in zip(actions, probs))
    return Outcome(pairs[0][0], float(cost), pairs[0][1], pairs)


def iter_dsjson_adf(lines: Iterable[str], on_error: OnError | None = None,
                    skipped: list | None = None, shared_text: bool = False,
                    first_line: int = 1, runs: bool = False, rewards: bool = True
                    ) -> Iterator[ADFExample | Reward | list[ADFExample]]:
    """The events of a DSJSON log as ADF examples (`vw_text.ADFExample`), and with
    ``rewards`` its reward lines as `Reward`: a line VW skips (see `parse_event`) is
    skipped and its number appended to ``skipped``; ``pdrop`` gives the label's weight.

    Lines are read in blocks of what is available (``lines.take``, as `ReadAhead` has it),
    each through the compiled reader (``_dsjson.events``), which writes the shared features
    as VW feature text; each distinct action object is parsed once (and with
    ``shared_text``, an event whose action objects were all met before is made into its
    example by the compiled reader itself). Lines it leaves, and
    every bad line, take `parse_event`. With ``shared_text`` the shared features of the
    compiled reader's lines stay text (as ``iter_adf(..., shared_text=True)`` has them,
    for `vw_encode.AdfEncoder.encode_block`), the others are ``Features``. Lines are
    numbered from ``first_line``. With ``runs``, a block whose every line the compiled
    reader made into an example comes as one list of them.

    >>> line = ('{"_labelIndex": 0, "_label_cost": -1, "_label_probability": 0.5, "a": [1, 2], '
    ...         '"c": {"u": {"age": 31}, "_multi": [{"x": 1}, {"x": 2}]}}')
    >>> ex, = iter_dsjson_adf([line])
    >>> ex.shared, ex.actions[1], ex.label
    ((('u', (('age', 31.0),)),), ((' ', (('x', 2.0),)),), Label(action=0, cost=-1.0, prob=0.5))
    >>> next(iter_dsjson_adf([line], shared_text=True)).shared
    'u age:31'
    """
    take = taker(lines)
    actions = _Actions()
    no = first_line - 1
    known = () if not shared_text else (  # (examples made by the compiled reader)
        actions.sets, actions.texts, actions.SETS, ADFExample, Label, actions.table)
    while chunk := take(BLOCK):
        fast = [None] * len(chunk) if _dsjson is None else _dsjson.events(
            chunk, no + 1, *known)
        if runs and set(map(type, fast)) == {ADFExample}:
            no += len(chunk)
            yield fast
            continue
        for raw, event in zip(chunk, fast):
            no += 1
            if type(event) is ADFExample:
                yield event
                continue
            try:
                if event is None:
                    example = _reference(raw, no, rewards)
                else:
                    example = _example(event, raw, no, actions, shared_text)
            except FieldError as error:
                failure = VWParseError(no, raw.rstrip("\r\n")[:200], error.rule, error.detail)
                if on_error is None:
                    raise failure from None
                on_error(failure)
                continue
            if example is None:  # a blank line, or a line VW skips
                if skipped is not None and raw.strip():
                    skipped.append(no)
                continue
            yield example


def _example(event: tuple, raw: str, no: int, actions: _Actions, shared_text: bool
             ) -> ADFExample:
    """The ADF example of a line the compiled reader took."""
    shared, texts, index, cost, prob, weight, event_id = event
    if not shared_text:
        shared = parse_namespaces(shared)
    label = Label(index, cost, prob) if index >= 0 else None
    return ADFExample(shared, actions.of(texts), label, None, no, raw, weight, event_id)


class _Actions:
    """The features of action objects, each distinct text parsed once (and the last
    distinct tuples of them looked up at once: logs repeat their action sets). Equal texts
    give the same ``Features`` object, which the ADF encoder's layouts are keyed by."""

    TEXTS = 65_536  # texts remembered, at most: then forgotten
    SETS = 1024  # tuples of texts remembered (each holds its texts: memory, if sets change)

    def __init__(self):
        self.sets: dict[tuple, tuple[Features, ...]] = {}
        self.texts: dict[str, Features] = {}
        self.table = None if _dsjson is None else _dsjson.texts_table()  # (by their bytes)

    def of(self, texts: tuple[str, ...]) -> tuple[Features, ...]:
        found = self.sets.get(texts)
        if found is None:
            if len(self.texts) > self.TEXTS:
                self.texts.clear()
            if len(self.sets) > self.SETS:
                self.sets.clear()
            known = self.texts.get
            found = tuple([known(text) or self._one(text) for text in texts])
            self.sets[texts] = found
        return found

    def _one(self, text: str) -> Features:
        found = self.texts.get(text)
        if found is None:
            found = self.texts[text] = _namespaces(_json(text))
        return found


def _reference(raw: str, no: int, rewards: bool) -> ADFExample | Reward | None:
    """The ADF example (or `Reward`) of a line by `parse_event` (None: blank, or a line VW
    skips)."""
    text = raw.rstrip("\r\n")
    if not text.strip():
        return None
    event = parse_event(text, rewards)
    if event is None or isinstance(event, Reward):
        return event and dataclasses.replace(event, line_no=no)
    return ADFExample(event.shared, event.actions, event.label, None, no, text,
                      event.weight, event.event_id)


def _load(text: str) -> dict:
    """A line's JSON object: its text UTF-8 (bytes that are not UTF-8 come as surrogate
    escapes), its strings Unicode (no lone surrogate), nested at most `MAX_DEPTH` levels."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            code = ord(text[error.start])
            what = (f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF
                    else f"a lone surrogate U+{code:04X}")
            raise FieldError("utf8", f"not UTF-8: {what} at column {error.start + 1}") from None
    obj = _json(text)
    if not isinstance(obj, dict):
        raise FieldError("json", f"not a JSON object (a line of {_kind(obj)})")
    return obj


def _json(text: str):
    """JSON text's value, its strings Unicode, nested at most `MAX_DEPTH` levels."""
    try:
        obj = json.loads(text)
        if _SURROGATE.search(text):
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise FieldError("json", f"nested deeper than {MAX_DEPTH} levels") from None
    except UnicodeEncodeError:
        raise FieldError("utf8", "a string holds a lone surrogate (a \\ud800-\\udfff escape "
                         "that is not half of a pair): not Unicode text") from None
    except ValueError as error:
        raise FieldError("json", f"not a JSON object ({error})") from None
    return obj


def _kind(value) -> str:
    """What a JSON value is, in words."""
    if isinstance(value, str):
        return f"a string ({value[:20]!r})"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        text = repr(value)
        return f"the number {text if len(text) <= 20 else text[:17] + '...'}"
    return "an array" if isinstance(value, list) else "an object"


def _namespaces(obj: dict, top: bool = False) -> Features:
    """The namespaces of an object's fields (``c`` with ``top``, or an action): objects
    and arrays are namespaces, the other fields features of the default namespace."""
    spaces: list[tuple[str, list]] = []
    try:
        default = _fields(obj, spaces, 1, top)
    except RecursionError:
        raise FieldError("json", f"nested deeper than {MAX_DEPTH} levels") from None
    if default:
        spaces.insert(0, (DEFAULT_NS, default))
    return tuple((name, tuple(feats)) for name, feats in spaces if feats)


def _fields(obj: dict, spaces: list, depth: int, top: bool = False) -> list:
    """The features of an object's plain fields (and of its ``_text``); its objects and
    arrays are appended to ``spaces`` as namespaces of their own, named by their keys,
    nested objects too (as VW, which reads every object as a namespace)."""
    if depth > MAX_DEPTH:
        raise FieldError("json", f"nested deeper than {MAX_DEPTH} levels")
    out = []
    for key, value in obj.items():
        if key.startswith("_"):
            if key == "_text" and value is not None:
                out += _text(value)
            elif key.startswith("_label"):
                raise FieldError("context", f"'{key}' inside 'c': a label is a field of the "
                                 "line itself")
            elif key == "_slots" or key == "_multi" and not top:
                raise FieldError("context", f"'{key}' out of place: --dsjson reads CB "
                                 "events, their actions in 'c._multi'")
        elif isinstance(value, dict):
            spaces.append((key, _fields(value, spaces, depth + 1)))
        elif isinstance(value, list):
            spaces.append((key, _array(value, key, spaces, depth + 1)))
        else:
            out += _feature(key, value)
    return out


def _array(values: list, key: str, spaces: list, depth: int) -> list:
    """The features of an array, VW's way: its numbers positional features ``0``, ``1``,
    ... (zeros dropped), its objects' fields in the same namespace, its nulls nothing."""
    out, index = [], 0
    for value in values:
        if value is None:
            continue
        if isinstance(value, dict):
            out += _fields(value, spaces, depth + 1)
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FieldError("feature_value", f"array {key!r} holds {_kind(value)}: an array "
                             "holds numbers, objects and null")
        else:
            if _finite(key, value):
                out.append((str(index), float(value)))
            index += 1
    return out


def _feature(key: str, value) -> list:
    if value is True:
        return [(key, 1.0)]
    if value is None or value is False:
        return []
    if isinstance(value, str):
        return [((key + value).translate(_ESCAPED), 1.0)]
    return [(key, float(value))] if _finite(key, value) else []


def _finite(key: str, value) -> bool:
    """Whether a feature's number is not zero; an error beyond float32's range."""
    if not abs(value) <= FLOAT32_MAX:
        raise FieldError("feature_value", f"feature {key!r} is {value}: not a number VW's "
                         "32-bit floats hold")
    return value != 0


def _text(value) -> list:
    """``_text``'s words as features (split at spaces and tabs; ``:`` and ``|`` made
    ``_``), as VW reads them."""
    if not isinstance(value, str):
        raise FieldError("feature_value", f"'_text' is {_kind(value)}, not a string")
    return [(word, 1.0) for word in value.translate(_TEXT).replace("\t", " ").split(" ")
            if word]


def _reward(obj: dict) -> Reward:
    event_id, value, action = obj.get("EventId"), obj["v"], obj.get("_labelIndex")
    if not isinstance(event_id, str):
        raise FieldError("reward", "a reward line needs its decision's \"EventId\" (a string)")
    if not _is_number(value):
        raise FieldError("reward", f"reward \"v\" is {_kind(value)}, not a finite number")
    if action is not None and (isinstance(action, bool) or not isinstance(action, int)
                               or action < 0):
        raise FieldError("reward", f"_labelIndex is {_kind(action)}, not an action's index")
    return Reward(event_id, float(value), action)


def _label(obj: dict, n_actions: int | None) -> Label | None:
    """The label: ``_labelIndex`` (into the ``n_actions`` of ``c``, if there is a ``c``),
    ``_label_cost`` and ``_label_probability`` (their case as loose as VW's); None without
    a cost (VW's unknown cost)."""
    if "_label" in obj:
        raise FieldError("label", "'_label' is not read by --dsjson: give _labelIndex, "
                         "_label_cost and _label_probability")
    fields = {}  # index, cost, probability, action: (key, value)
    for key, value in obj.items():
        if not key.startswith("_label") or value is None:
            continue
        name = key[6:].lower() if key[6:].lower() == "index" else key[7:].lower()
        if name == "index" or key[6:7] == "_" and name in ("cost", "probability", "action"):
            fields[name] = (key, value if name == "index" else _number(obj, key))
    if "index" not in fields:
        if fields:
            raise FieldError("label", f"{min(fields.values())[0]} without _labelIndex: a "
                             "label needs the logged action's index into 'c._multi'")
        return None
    key, index = fields["index"]
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise FieldError("label", f"{key} is {_kind(index)}, not an index into the actions")
    if n_actions is not None and index >= n_actions:
        raise FieldError("label", f"{key} {index} is not an index into the {n_actions} "
                         "actions")
    if "cost" not in fields:
        return None
    if "probability" not in fields:
        raise FieldError("label", f"{fields['cost'][0]} without _label_probability")
    key, prob = fields["probability"]
    if not 0 < prob <= 1:
        raise FieldError("label", f"{key} {prob!r} is outside (0, 1]")
    return Label(index, float(fields["cost"][1]), float(prob))


def _number(obj: dict, name: str) -> float | None:
    """A field that is a finite number (or null, or absent: None)."""
    value = obj.get(name)
    if value is not None and not _is_number(value):
        raise FieldError(name, f"{name} is {_kind(value)}, not a finite number")
    return value


def _is_number(value) -> bool:
    """Whether a JSON value is a finite number a double holds (JSON's integers need not)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and abs(
        value) <= sys.float_info.max


def _numbers(obj: dict, name: str, kind) -> list:
    """A field that is an array of finite numbers (null or absent: empty)."""
    values = obj.get(name)
    if values is None:
        return []
    if not isinstance(values, list):
        raise FieldError(name, f"'{name}' is {_kind(values)}, not an array of numbers")
    for value in values:
        if not _is_number(value):
            raise FieldError(name, f"'{name}' holds {_kind(value)}, not a finite number")
    return [kind(value) for value in values]


def _weight(obj: dict) -> float:
    """``1 / (1 - pdrop)``, in float32 as VW computes it."""
    pdrop = _number(obj, "pdrop") or 0.0
    if not 0 <= pdrop < 1:
        raise FieldError("pdrop", f"pdrop {pdrop!r} must be in [0, 1)")
    return float(np.float32(1) / (np.float32(1) - np.float32(pdrop)))
