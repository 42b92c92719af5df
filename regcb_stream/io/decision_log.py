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
