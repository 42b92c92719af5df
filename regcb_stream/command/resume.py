"""What a resumed run (``-i MODEL``) keeps, refuses and changes.

The model file holds every setting that changes the behaviour or the output of the command:
how examples are read (``StreamSettings``), how predictions are written (``--cb_force_legacy``,
``--first_only``, ``--vw_compat``), the flags the learner was built with and those of the
decisions waiting for rewards (``--reward_wait``, ``--default_reward``: kept when not given).
Given again with ``-i``, a flag that agrees with the model changes nothing; one that
disagrees is an error naming both values, except the exploration parameters (the variant and
the budget: VW lets a model loaded with ``-i`` take new ones), which are applied and reported.

>>> flags = {"schedule": "online", "random_seed": 0}
>>> conflicts({"schedule": "sqrt2", "random_seed": None}, flags, "m.regcb")
['--schedule sqrt2 conflicts with online in the model file m.regcb']
"""

from __future__ import annotations

import copy
import dataclasses
import json

#: learner flags a resumed run must not change (argparse dest -> flag)
FIXED = {"oracle": "--oracle", "schedule": "--schedule", "ties": "--ties",
         "random_seed": "--random_seed",
         "ridge_l2": "--ridge_l2", "ridge_prior": "--ridge_prior",
         "oracle_memory": "--oracle_memory", "bit_precision": "-b",
         "cb_min_cost": "--cb_min_cost", "cb_max_cost": "--cb_max_cost",
         "noconstant": "--noconstant", "cb_force_legacy": "--cb_force_legacy",
         "first_only": "--first_only", "vw_compat": "--vw_compat", "dsjson": "--dsjson",
         "forget": "--forget", "change_threshold": "--change_threshold",
         "reward_wait": "--reward_wait", "default_reward": "--default_reward"}
#: flags of `FIXED` the command reads beyond the learner: a resumed run takes the model's
KEPT = ("reward_wait", "default_reward")
#: exploration flags a resumed run may change (VW's behaviour on load)
EXPLORATION = ("regcb", "regcbopt", "mellowness", "beta", "auto_budget")


def saved_flags(args) -> dict:
    """The flags to keep in a model file (those of `FIXED` and `EXPLORATION`)."""
    return {name: getattr(args, name) for name in (*FIXED, *EXPLORATION)}


def keep(args, saved: dict) -> None:
    """Give the `KEPT` flags not given their values in the model (``shell.PathError``: values
    the command does not write)."""
    wait, default = saved.get("reward_wait"), saved.get("default_reward")
    if not (wait is None or type(wait) is int and wait >= 1 and saved.get("dsjson") is True
            ) or not (default is None or type(default) in (int, float) and wait):
        from regcb_stream.command.shell import PathError

        raise PathError(f"-i {args.initial_regressor} is a damaged regcb-stream model file "
                        f"(--reward_wait {wait!r}, --default_reward {default!r})")
    for name in KEPT:
        if getattr(args, name) is None:
            setattr(args, name, saved.get(name))


PROBED = 4096  # single-line actions `probe` tries at most


def probe(learner, settings) -> None:
    """Raise what a model's learner raises if it is damaged (a state that loads but does not
    work): a copy of it decides and learns an example of the stream's format (single-line:
    one for each action) through the command's `Driver` (multi-slot: its `SlotsDriver`),
    and is saved (the learner itself is left as it is)."""
    from regcb_stream.command.driver import Driver, ExampleError
    from regcb_stream.command.progress import ProgressTable
    from regcb_stream.persist import dumps

    trial = copy.deepcopy(learner)
    if settings.slots:  # (a ccb or slates example, its slot labelled)
        from regcb_stream.command.slots_driver import SlotsDriver

        kind, action = settings.slots, "action 0" if settings.slots == "slates" else "action"
        label = "0:0:0.5" if kind == "slates" else f"0:{settings.cost_range[0]!r}:0.5"
        text = [f"{kind} shared |s x", f"{kind} {action} |a y", f"{kind} slot {label} |z"]
        if settings.dsjson:  # (a slate's cost is the event's, its actions in slots)
            cost, slate = {"_label_cost": settings.cost_range[0]}, kind == "slates"
            text = [json.dumps({**(cost if slate else {}), "c": {
                "s": {"x": 1}, "_multi": [{"a": {"y": 1}, **({"_slot_id": 0} if slate else {})}],
                "_slots": [{"z": 1}]}, "_outcomes": [{"_a": [0], "_p": [0.5],
                                                      **({} if slate else cost)}]})]
        SlotsDriver(trial, kind, None, ProgressTable(None), dsjson=settings.dsjson).run(text)
        dumps(trial, dataclasses.asdict(settings))
        return
    cost = settings.cost_range[0]  # (without new features, then with: the state as it is,
    text = []  # then grown; single-line: an example of each action, each model is tried)
    for x, y, z in (("", "", ""), ("s x", "a y", "a z")):
        text += [f"shared |{x}", f"0:{cost!r}:0.5 |{y}", f"|{z}", ""] if settings.adf else [
            f"{a}:{cost!r}:0.5 |{x}" for a in range(1, min(settings.n_actions, PROBED) + 1)]
    plain = dataclasses.replace(settings, dsjson=False)  # (text examples, as ADF)
    try:
        Driver(trial, plain, None, ProgressTable(None), legacy=settings.legacy,
               vw_compat=settings.vw_compat).run(text)
    except ExampleError as error:  # (its line is the probe's own)
        raise error.__cause__ from None
    dumps(trial, dataclasses.asdict(settings))


def conflicts(given: dict, saved: dict, path) -> list[str]:
    """Each flag given (not None, not False) that differs from the model's."""
    out = []
    for name, value in given.items():
        if name in FIXED and _given(value) and value != saved.get(name):
            kept = saved.get(name)
            was = f"{kept}" if _given(kept) else "not given"
            shown = FIXED[name] if value is True else f"{FIXED[name]} {value}"
            out.append(f"{shown} conflicts with {was} in the model file {path}")
    return out


def exploration_flags(given: dict, saved: dict) -> dict:
    """The model's flags with the exploration ones given now: the variant flags
    (``--regcb``, ``--regcbopt``) together if either is given, the budget flags
    (``--mellowness``, ``--beta``, ``--auto_budget``) together if any is."""
    flags = dict(saved)
    for group in (("regcb", "regcbopt"), ("mellowness", "beta", "auto_budget")):
        if any(_given(given.get(name)) for name in group):
            flags.update({name: given.get(name) for name in group})
    return flags


def _given(value) -> bool:
    """Whether a flag's value says it was given (argparse leaves None, or False for a
    switch)."""
    return value is not None and value is not False
