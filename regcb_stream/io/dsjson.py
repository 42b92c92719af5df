"""Decision Service JSON (VW's ``--dsjson``): one logged decision per line, read as an ADF
example (the shared features and one set of features per action), with VW's semantics.

A line's ``c`` is the context: its fields form the shared features and ``c._multi`` holds
one object per action. An object value is a namespace (named by its key; ``-q`` crosses its
first letter), an array of objects repeats that namespace, an array of numbers gives
positional features (``0``, ``1``, ...) in it; a number is the feature ``key:value``, a
string the feature ``key`` + ``value`` (space, ``|``, ``:`` and tab made ``_``), ``true``
the feature ``key``, ``false`` and ``null`` nothing. Fields of ``c`` itself that are not
objects go to the default namespace; keys starting with ``_`` are not features. The label
is VW's: ``_labelIndex`` (0-based, into ``_multi``), ``_label_cost``, ``_label_probability``;
``a`` (action ids, the chosen first) and ``p`` (their probabilities) are kept for metrics,
``pdrop`` divides the example's weight by ``1 - pdrop`` (in float32, as VW), ``_skipLearn``
marks an event not to learn. A line without actions is skipped (``parse_event`` returns
None) and counted. `iter_dsjson_adf` reads through a compiled reader (``_dsjson.c``),
with `parse_event` as its reference.

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
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from regcb_stream.io.read_ahead import taker
from regcb_stream.io.vw_features import DEFAULT_NS, Features, FieldError, parse_namespaces
from regcb_stream.io.vw_text import ADFExample, Label, OnError, VWParseError

try:
    from regcb_stream.io import _dsjson
except ImportError:  # not built: every line through the reference parser
    _dsjson = None

BLOCK = 256  # lines read by one compiled call, at most
_ESCAPED = str.maketrans({" ": "_", "|": "_", ":": "_", "\t": "_"})


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
    skip_learn: bool = False


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


def parse_event(text: str) -> DSJSONEvent | Reward | None:
    """One DSJSON line as an event (or a `Reward` line), None for an event without actions
    (VW skips it), or ``FieldError`` saying what is wrong."""
    try:
        obj = json.loads(text)
    except ValueError as error:
        raise FieldError("json", f"not a JSON object ({error})") from None
    if not isinstance(obj, dict):
        raise FieldError("json", "not a JSON object")
    if "c" not in obj and "v" in obj:
        return _reward(obj)
    context = obj.get("c")
    if not isinstance(context, dict):
        raise FieldError("context", "no context object 'c'")
    multi = context.get("_multi") or []
    if not isinstance(multi, list) or not all(isinstance(a, dict) for a in multi):
        raise FieldError("actions", "'c._multi' must be an array of objects")
    if not multi or not obj.get("a", [None]):
        return None
    return DSJSONEvent(
        event_id=_text(obj.get("EventId")),
        shared=_namespaces(context),
        actions=tuple(_namespaces(action) for action in multi),
        label=_label(obj, len(multi)),
        logged_actions=tuple(_numbers(obj.get("a", []), "a", int)),
        probabilities=tuple(_numbers(obj.get("p", obj.get("_p", [])), "p", float)),
        weight=_weight(obj.get("pdrop", 0.0)),
        skip_learn=obj.get("_skipLearn") is True,
    )


def iter_dsjson(lines: Iterable[str], on_error: OnError | None = None
                ) -> Iterator[tuple[int, DSJSONEvent | Reward | None]]:
    """``(line number, event)`` per non-empty line (event None: no actions, skipped); a bad
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


def iter_dsjson_adf(lines: Iterable[str], on_error: OnError | None = None,
                    skipped: list | None = None, shared_text: bool = False,
                    first_line: int = 1, runs: bool = False
                    ) -> Iterator[ADFExample | Reward | list[ADFExample]]:
    """The events of a DSJSON log as ADF examples (`vw_text.ADFExample`), and its reward
    lines as `Reward`: an event without actions is skipped and its line appended to
    ``skipped``; ``_skipLearn`` events are decided without a label; ``pdrop`` gives the
    label's weight.

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

    >>> line = ('{"_labelIndex": 0, "_label_cost": -1, "_label_probability": 0.5, '
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
    known = (actions.sets, actions.texts, actions.SETS, ADFExample, Label) if shared_text \
        else ()  # (with shared_text, examples made by the compiled reader)
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
                    example = _reference(raw, no)
                else:
                    example = _example(event, raw, no, actions, shared_text)
            except FieldError as error:
                failure = VWParseError(no, raw.rstrip("\r\n")[:200], error.rule, error.detail)
                if on_error is None:
                    raise failure from None
                on_error(failure)
                continue
            if example is None:  # a blank line, or an event without actions
                if skipped is not None and raw.strip():
                    skipped.append(no)
                continue
            yield example


def _example(event: tuple, raw: str, no: int, actions: _Actions, shared_text: bool
             ) -> ADFExample:
    """The ADF example of a line the compiled reader took."""
    shared, texts, index, cost, prob, weight, skip_learn, event_id = event
    if not shared_text:
        shared = parse_namespaces(shared)
    label = Label(index, cost, prob) if index >= 0 and not skip_learn else None
    return ADFExample(shared, actions.of(texts), label, None, no, raw, weight, event_id,
                      skip_learn)


class _Actions:
    """The features of action objects, each distinct text parsed once (and the last
    distinct tuples of them looked up at once: logs repeat their action sets). Equal texts
    give the same ``Features`` object, which the ADF encoder's layouts are keyed by."""

    TEXTS = 65_536  # texts remembered, at most: then forgotten
    SETS = 1024  # tuples of texts remembered (each holds its texts: the memory of a log
    # whose action sets change)

    def __init__(self):
        self.sets: dict[tuple, tuple[Features, ...]] = {}
        self.texts: dict[str, Features] = {}

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
            found = self.texts[text] = _namespaces(json.loads(text))
        return found


def _reference(raw: str, no: int) -> ADFExample | Reward | None:
    """The ADF example (or `Reward`) of a line by `parse_event` (None: blank, or no
    actions)."""
    text = raw.rstrip("\r\n")
    if not text.strip():
        return None
    event = parse_event(text)
    if event is None or isinstance(event, Reward):
        return event and dataclasses.replace(event, line_no=no)
    return ADFExample(event.shared, event.actions,
                      None if event.skip_learn else event.label, None, no, text,
                      event.weight, event.event_id, event.skip_learn)


def _namespaces(obj: dict) -> Features:
    """The namespaces of an object's fields: objects and arrays of them are namespaces, the
    other fields features of the default namespace."""
    spaces: list[tuple[str, list]] = []
    default = _fields(obj, spaces)
    if default:
        spaces.insert(0, (DEFAULT_NS, default))
    return tuple((name, tuple(feats)) for name, feats in spaces if feats)


def _fields(obj: dict, spaces: list) -> list:
    """The features of an object's plain fields; its objects (and arrays of objects or of
    numbers) are appended to ``spaces`` as namespaces of their own, named by their keys."""
    out = []
    for key, value in obj.items():
        if key.startswith("_"):
            continue
        if isinstance(value, dict):
            spaces.append((key, _fields(value, spaces)))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            spaces.append((key, [f for v in value for f in _fields(v, spaces)]))
        elif isinstance(value, list):
            spaces.append((key, _positional(value, key)))
        else:
            out += _feature(key, value)
    return out


def _feature(key: str, value) -> list:
    if value is True:
        return [(key, 1.0)]
    if value is None or value is False:
        return []
    if isinstance(value, str):
        return [((key + value).translate(_ESCAPED), 1.0)]
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise FieldError("feature_value", f"feature {key!r} is {value}")
        return [(key, float(value))] if value else []
    raise FieldError("feature_value", f"feature {key!r} has a value of type "
                     f"{type(value).__name__}")


def _positional(values: list, key: str) -> list:
    """An array of numbers: features 0, 1, ... of its namespace (zeros dropped)."""
    out = []
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FieldError("feature_value", f"array {key!r} mixes numbers and other values")
        if value:
            out.append((str(i), float(value)))
    return out


def _reward(obj: dict) -> Reward:
    event_id, value, action = obj.get("EventId"), obj["v"], obj.get("_labelIndex")
    if not isinstance(event_id, str):
        raise FieldError("reward", "a reward line needs its decision's \"EventId\" (a string)")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value):
        raise FieldError("reward", f"reward \"v\" {value!r} is not a finite number")
    if action is not None and (isinstance(action, bool) or not isinstance(action, int)
                               or action < 0):
        raise FieldError("reward", f"_labelIndex {action!r} is not an action's index")
    return Reward(event_id, float(value), action)


def _label(obj: dict, n_actions: int) -> Label | None:
    if "_labelIndex" not in obj:
        return None
    index, cost, prob = (obj.get(k) for k in ("_labelIndex", "_label_cost",
                                                 "_label_probability"))
    if not isinstance(index, int) or not 0 <= index < n_actions:
        raise FieldError("label", f"_labelIndex {index!r} is not an index into the "
                         f"{n_actions} actions")
    if not isinstance(cost, (int, float)) or not math.isfinite(cost):
        raise FieldError("label", f"_label_cost {cost!r} is not a number")
    if not isinstance(prob, (int, float)) or not 0 < prob <= 1:
        raise FieldError("label", f"_label_probability {prob!r} is outside (0, 1]")
    return Label(index, float(cost), float(prob))


def _numbers(values, name: str, kind) -> list:
    if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in values):
        raise FieldError(name, f"'{name}' must be an array of numbers")
    return [kind(v) for v in values]


def _weight(pdrop) -> float:
    """``1 / (1 - pdrop)``, in float32 as VW computes it."""
    if not isinstance(pdrop, (int, float)) or not 0 <= pdrop < 1:
        raise FieldError("pdrop", f"pdrop {pdrop!r} must be in [0, 1)")
    return float(np.float32(1) / (np.float32(1) - np.float32(pdrop)))


def _text(value) -> str | None:
    return None if value is None else str(value)
