"""Decision logs in DSJSON: one line per decision the command makes, in the joined format
of Decision Service logs, so `regcb-ope --dsjson` and VW's ``--dsjson`` read them back.

A line holds the event id, the context ``c`` (the shared features, and ``_multi``: one
object per action), ``a`` (the action ids, 1-based, the chosen one first), ``p`` (their
probabilities under the learner's distribution, in ``a``'s order) and ``VWState.m`` (the
model version: how many labels the learner had learned when it decided). When the reward
of the chosen action is known, the label fields too: ``_labelIndex`` (0-based),
``_label_Action``, ``_label_cost`` (``-reward``) and ``_label_probability``.

VW text features become DSJSON as VW hashes both alike: a namespace ``|ns f:2 g`` becomes
``"ns": {"f": 2, "g": 1}`` (an array of such objects when a name repeats, which VW reads as
one namespace), the default namespace's features fields of their own. DSJSON drops names
starting with ``_``; a feature so named is written as a string (``{"": "_f"}`` is the
feature ``_f``) when its value is 1, and is an error otherwise. A name repeated in the
default namespace (an object's fields cannot repeat) is written once with the sum of its
values: the same linear terms, and the same crosses with other namespaces.

>>> line = event_line("e1", context_of((("u", (("age", 31.0),)),), [
...     ((" ", (("x", 1.0),)),), ((" ", (("x", 2.0),)),)]), chosen=1, pmf=[0.25, 0.75],
...     version=12, cost=-1.0)
>>> line[:95]
'{"_label_cost":-1.0,"_label_probability":0.75,"_label_Action":2,"_labelIndex":1,"EventId":"e1",'
>>> line[95:]
'"a":[2,1],"c":{"u":{"age":31.0},"_multi":[{"x":1.0},{"x":2.0}]},"p":[0.75,0.25],"VWState":{"m":"12"}}'

A multi-slot (CCB) decision is a line of VW's CCB DSJSON: ``c`` holds ``_slots`` too (each
slot's features, its ``_id`` and the actions ``_inc`` it may take, when it has them), and
``_outcomes`` one entry per slot: ``_id``, ``_a`` (the actions offered, 0-based, the drawn
one first), ``_p`` (their probabilities) and ``_label_cost`` once the slot's reward is known.

>>> c = slots_context_of((), [((" ", (("x", 1.0),)),), ((" ", (("x", 2.0),)),)],
...                      [((("s", (("h", 1.0),)),), "top", None)])
>>> line = slots_line("e2", c, [slot_outcome("top", [(1, 0.75), (0, 0.25)], -1.0)], 3)
>>> line[:92]
'{"EventId":"e2","c":{"_multi":[{"x":1.0},{"x":2.0}],"_slots":[{"s":{"h":1.0},"_id":"top"}]},'
>>> line[92:]
'"_outcomes":[{"_label_cost":-1.0,"_id":"top","_a":[1,0],"_p":[0.75,0.25]}],"VWState":{"m":"3"}}'

A slate is a line of VW's slates DSJSON: each action of ``_multi`` names its slot
(``_slot_id``), each slot's ``_outcomes`` entry holds ``_a`` (its own actions, 0-based,
the drawn one first) and ``_p``, and the slate's cost, once known, is the line's
``_label_cost``.

>>> c = slots_context_of((), [((" ", (("x", 1.0),)),), ((" ", (("x", 2.0),)),)],
...                      [((), None, None)], action_slots=(0, 0))
>>> line = slots_line("e3", c, [slot_outcome(None, [(0, 1.0), (1, 0.0)])], 5, cost=-1.0)
>>> line[:73]
'{"_label_cost":-1.0,"EventId":"e3","c":{"_multi":[{"x":1.0,"_slot_id":0},'
>>> line[73:]
'{"x":2.0,"_slot_id":0}],"_slots":[{}]},"_outcomes":[{"_a":[0,1],"_p":[1.0,0.0]}],"VWState":{"m":"5"}}'
"""

from __future__ import annotations

import json

from regcb_stream.io.vw_features import DEFAULT_NS, Features


class DecisionLogError(ValueError):
    """A feature DSJSON cannot hold."""


def context_of(shared: Features | None, actions: list[Features]) -> dict:
    """The DSJSON context ``c`` of an ADF example's (parsed) features."""
    context = object_of(shared or ())
    context["_multi"] = [object_of(action) for action in actions]
    return context


def object_of(features: Features) -> dict:
    """A JSON object whose fields VW's DSJSON reader reads as these namespaces."""
    out: dict = {}
    for namespace, feats in features:
        if namespace == DEFAULT_NS:
            for name, value in feats:
                if name in out and not isinstance(out[name], (list, dict)):
                    out[name] += value  # (a repeated name: one feature of their sum)
                else:
                    _put(out, name, value)
            continue
        if namespace.startswith("_"):
            raise DecisionLogError(f"namespace {namespace!r}: DSJSON drops names starting "
                                   "with '_'")
        parts = out.setdefault(namespace, [])
        if not isinstance(parts, list):
            raise DecisionLogError(f"namespace {namespace!r} is also a feature's name")
        fields: dict = {}
        for name, value in feats:
            if name in fields or (name.startswith("_") and "" in fields):
                parts.append(fields)
                fields = {}
            _put(fields, name, value)
        parts.append(fields)
    return {key: (value[0] if isinstance(value, list) and len(value) == 1 else value)
            for key, value in out.items()}


def _put(fields: dict, name: str, value: float) -> None:
    if name.startswith("_"):
        if value != 1.0:
            raise DecisionLogError(f"feature {name}:{value:g}: DSJSON drops names starting "
                                   "with '_' (only a feature of value 1 is written, as a "
                                   "string)")
        name, value = "", name
    if name in fields:
        raise DecisionLogError(f"feature {name!r} is also a namespace's name")
    fields[name] = value


def event_line(event_id: str, context: dict | str, chosen: int, pmf, version: int,
               cost: float | None = None) -> str:
    """One decision as a DSJSON line (``context``: ``c`` as a dict, or its JSON text;
    ``cost``: the chosen action's cost when its reward is known)."""
    pmf = [float(p) for p in pmf]
    order = [chosen] + [i for i in range(len(pmf)) if i != chosen]
    head = {} if cost is None else {
        "_label_cost": float(cost), "_label_probability": pmf[chosen],
        "_label_Action": chosen + 1, "_labelIndex": chosen}
    head["EventId"] = event_id
    head["a"] = [i + 1 for i in order]
    text = json.dumps(head, separators=(",", ":"))[:-1]
    c = context if isinstance(context, str) else json.dumps(context, separators=(",", ":"))
    tail = json.dumps({"p": [pmf[i] for i in order], "VWState": {"m": str(version)}},
                      separators=(",", ":"))
    return f'{text},"c":{c},{tail[1:]}'


def slots_context_of(shared: Features | None, actions: list[Features], slots,
                     action_slots: tuple[int, ...] | None = None) -> dict:
    """The DSJSON context ``c`` of a multi-slot example's (parsed) features: ``slots``
    holds each slot's ``(features, id or None, included actions or None)``;
    ``action_slots``: a slate's slot of each action (None: CCB)."""
    context = context_of(shared, actions)
    for fields, slot in zip(context["_multi"], action_slots or ()):
        fields["_slot_id"] = slot
    context["_slots"] = []
    for features, slot_id, include in slots:
        fields = object_of(features)
        if slot_id is not None:
            fields["_id"] = slot_id
        if include is not None:
            fields["_inc"] = list(include)
        context["_slots"].append(fields)
    return context


def slot_outcome(slot_id: str | None, drawn_first: list | None, cost: float | None = None
                 ) -> dict:
    """A slot's ``_outcomes`` entry: its ``_id`` (None: a slate's slot, which has none),
    its ``(action, probability)`` pairs, the drawn action first (None: no action was left
    for it), and its cost once its reward is known (a CCB slot's)."""
    entry: dict = {} if cost is None else {"_label_cost": float(cost)}
    if slot_id is not None:
        entry["_id"] = slot_id
    if drawn_first:
        entry["_a"] = [int(a) for a, _ in drawn_first]
        entry["_p"] = [float(p) for _, p in drawn_first]
    return entry


def slots_line(event_id: str, context: dict | str, outcomes: list[dict], version: int,
               cost: float | None = None) -> str:
    """One multi-slot decision as a CCB (or slates) DSJSON line (``context``: ``c`` as a
    dict, or its JSON text; ``outcomes``: each slot's `slot_outcome`; ``cost``: a slate's
    cost, once known)."""
    c = context if isinstance(context, str) else json.dumps(context, separators=(",", ":"))
    tail = json.dumps({"_outcomes": outcomes, "VWState": {"m": str(version)}},
                      separators=(",", ":"))
    head = "" if cost is None else f'"_label_cost":{json.dumps(float(cost))},'
    return f'{{{head}"EventId":{json.dumps(event_id)},"c":{c},{tail[1:]}'
