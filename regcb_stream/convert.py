"""Model files of format 6 (regcb-stream before its state was stated by names of its own)
converted to the current format: ``python -m regcb_stream.persist convert OLD NEW``.

Format 6 held each object's attributes as they were named inside the class that held
them; the converter reads that tree as plain data (it builds no object of the file's and
runs none of its code), maps each object's attributes to the state its class now states
(`regcb_stream.state`), and builds the learner from those states. The learner converted
decides and learns as the one saved would have (``tests/test_convert.py``: the files of
format 6 in ``tests/data/format6`` continue as their writers' runs did). Objects stored as
pickles (River or trees oracles) are not converted.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace

import numpy as np

from regcb_stream import defaults
from regcb_stream.adapt.change import ChangeDetector
from regcb_stream.adapt.events import DelayedRewards, PendingDecisions
from regcb_stream.adapt.selection import Losses, ModelSelection
from regcb_stream.explore.budget import DEFAULT_BETA, AutoBudget, BudgetSelector, FixedBudget
from regcb_stream.explore.explorer import TIE_TOLERANCE, Explorer
from regcb_stream.features.encoder import FeatureEncoder
from regcb_stream.features.random_features import RandomFeatures
from regcb_stream.features.rows import ActionRegistry, Rows
from regcb_stream.features.slot_columns import SlotColumns
from regcb_stream.learner import RegCB
from regcb_stream.model import Model
from regcb_stream.oracles.blocks import ArrowheadBlocks
from regcb_stream.oracles.bounded import BoundedRidgeOracle
from regcb_stream.oracles.ridge import RidgeOracle
from regcb_stream.oracles.ridge_base import resolve_prior
from regcb_stream.oracles.vw import VWOracle, VWState
from regcb_stream.parameters import PARAMETERS

FORMAT6 = 6


class Old(dict):
    """An object of a format-6 file: its class's name and its attributes."""

    def __init__(self, name: str, attributes: dict):
        super().__init__(attributes)
        self.name = name


def read(data: bytes, label) -> tuple[Old, dict]:
    """The learner and settings of a format-6 file, as plain data."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        header = json.loads(arrays.pop("header").tobytes())
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise ValueError(f"{label} is not a regcb-stream model file ({error})") from None
    if not isinstance(header, dict) or header.get("version") != FORMAT6:
        raise ValueError(f"{label} is not a model file of format {FORMAT6}")
    refs: list = []

    def value(tree):
        if isinstance(tree, list):
            return [value(v) for v in tree]
        if not isinstance(tree, dict):
            return tree
        (key, *_), get = tree, tree.get
        if key == "$ref":
            return refs[get("$ref")]
        if key == "$array":
            refs.append(arrays[f"a{get('$array')}"])
            return refs[-1]
        if key == "$scalar":
            return np.dtype(get("$scalar")).type(get("value"))
        if key in ("$tuple", "$set", "$frozenset"):
            return {"$tuple": tuple, "$set": set, "$frozenset": frozenset}[key](
                value(v) for v in tree[key])
        if key == "$dict":
            return {value(k): value(v) for k, v in tree[key]}
        if key == "$generator":
            generator = np.random.Generator(np.random.PCG64())
            generator.bit_generator.state = value(get("$generator"))
            return generator
        if key in ("$function", "$type"):
            return get(key)
        if key == "$object":
            obj = Old(get("$object"), {})
            refs.append(obj)
            obj.update(value(get("state")))
            return obj
        raise ValueError(f"{label} holds {key[1:]} {get('class', '')}: not converted "
                         "(a model with an oracle of another library: train it anew)")

    return value(header["learner"]), value(header["settings"])


def learner(old: Old) -> RegCB:
    """The learner a format-6 ``RegCB`` was."""
    params = {name: RegCB.ADDED[name] if name in RegCB.ADDED else old[name]
              for name in PARAMETERS}  # (format 6 came before the names added since)
    params["oracle"] = oracle_spec(params["oracle"])
    params["random_features"] = (random_features(params["random_features"])
                                 if isinstance(params["random_features"], Old)
                                 else params["random_features"])
    new = RegCB(**params)
    features = model(old, new)
    if old.get("_selection") is not None:
        linear = model(old["_linear"], new)
        features = ModelSelection.from_state({"features": features, "linear": linear,
                                              "losses": Losses.from_state(old["_selection"])})
    events = None if old["_pending_events"] is None else DelayedRewards.from_state({
        "pending": PendingDecisions.from_state(old["_pending_events"]),
        "unlied": old["_unlied"], "rewarded": old["_rewarded"]})
    return RegCB.from_state({**params, "model": features, "events": events,
                             "rng": old["_sampler"]})


def model(old: Old, new: RegCB) -> Model:
    """The model a format-6 ``RegCB`` (or its linear model) held."""
    encoder = FeatureEncoder.from_state(encoder_state(old["_encoder"]))
    joint = old["_joint"]
    kind = (None if joint is None or joint is False and not old["_labels"] else "labels"
            if joint is False else "own features" if old["_own_features"] else
            "shared features")
    model_class = None if kind is None else defaults.model_class(kind,
                                                                 encoder.expand is not None)
    fits = old.get("_selection") is not None or old.get("_is_linear", False)
    rows = Rows.from_state({"encoder": encoder, "register_played": old.get("_is_linear", False),
                            "kind": kind, "actions": ActionRegistry.from_state(
                                {"labels": old["_labels"], "joint": joint})})
    spec = replace(new.model.spec, random_features=0) if old.get("_is_linear") else (
        new.model.spec)
    explorer = Explorer.from_state({
        "variant": old["variant"], "schedule": old["schedule"], "budget": budget(old),
        "reward_range": old["_range"], "warm_start_epochs": old["warm_start_epochs"],
        "tolerance": TIE_TOLERANCE * (old["_range"][1] - old["_range"][0]),
        "n_epochs": old["_n_epochs"], "fits": fits, "n_labels": old["_n_labels"],
        "n_frozen": old["_n_frozen"], "epoch": old["_epoch"], "dim": encoder.dim,
        "next_rebuild": old["_next_rebuild"], "oracle": oracle(old["_oracle"], model_class),
        "change": None if old["_change"] is None else ChangeDetector.from_state(
            {name.lstrip("_"): v for name, v in old["_change"].items()})})
    return Model.from_state({"spec": spec, "fits": fits, "rows": rows,
                             "model_class": model_class, "explorer": explorer,
                             "last_decision": old["_last"]})


def budget(old: Old):
    if old["_budget_kind"] == "auto":
        state = {name.lstrip("_"): v for name, v in old["_selector"].items()}
        return AutoBudget.from_state({"selector": BudgetSelector.from_state(state)})
    return FixedBudget.from_state({
        "kind": old["_budget_kind"], "horizon": old["horizon"],
        "beta": DEFAULT_BETA if old["beta"] is None else old["beta"],
        "mellowness": old["_class_mellowness"] if old["mellowness"] is None
        else old["mellowness"]})


def encoder_state(old: Old) -> dict:
    slots = old["_slots"]
    return {"cross": old["cross"], "intercept": old["intercept"],
            "hash_bits": old["hash_bits"], "named": old["_n_named"],
            "expand": None if old["expand"] is None else random_features(old["expand"]),
            "slots": None if slots is None else SlotColumns.from_state(
                {"mask": slots["mask"], "table": slots["_table"], "dict": slots["_dict"]}),
            "columns": old["_index"], "dense_dim": old["_dense_dim"],
            "input_width": old.get("_input_width"), "sparse": old["_sparse"]}


def random_features(old: Old) -> RandomFeatures:
    return RandomFeatures.from_state({name.lstrip("_"): v for name, v in old.items()})


def oracle(old: Old, model_class: str | None):
    """A format-6 oracle as the current class (its prior ``"auto"``, left to the learner,
    as the model class's)."""
    prior = old["prior"] if "prior" in old else None
    if prior == "auto":
        prior = defaults.MODEL_CLASSES[model_class or defaults.PROVISIONAL].prior
    common = {"reward_range": tuple(old["reward_range"]), "kernels": True}
    if old.name == "VWOracle":
        state = old["_state"]
        return VWOracle.from_state({
            **common, "learning_rate": old["learning_rate"], "bisection": old["bisection"],
            "intercept_last": False, "state": VWState.from_state({k: state[k] for k in "wgsc"}),
            "n_actions": old["_n_actions"], "events": old["_events"],
            "action_sum": old["_action_sum"], "pending": old["_pending"]})
    ridge = {**common, "l2": old["l2"], "prior": prior, "forget": old.get("forget", 1.0),
             "penalty": float(old["l2"]), "prior_mean": resolve_prior(prior, common[
                 "reward_range"]), "clock": old.get("_clock", 0), "stamp": old.get("_stamp", 0),
             "memory": old["memory"], "updates": old["_updates"], "pending": old["_pending"]}
    if old.name == "BoundedRidgeOracle":
        return BoundedRidgeOracle.from_state({
            **ridge, "head": old["head"], "dim": old["_dim"], "head_inverse": old["_hinv"],
            "head_gram": old["_hgram"], "head_theta": old["_htheta"],
            "tail_precision": old["_prec"], "theta": old["_theta"], "tail": old["_tail"]})
    blocks = old["_blocks"]
    return RidgeOracle.from_state({
        **ridge, "max_exact": old["max_exact"], "piecewise": old.get("piecewise", False),
        "piece": old.get("_piece"), "a": old["_a"], "b": old["_b"], "a_inv": old["_a_inv"],
        "theta": old["_theta"], "tried_blocks": old["_tried_blocks"],
        "blocks": None if blocks is None else ArrowheadBlocks.from_state(dict(blocks))})


def oracle_spec(old):
    """The ``oracle`` parameter of a format-6 learner: a name, None, or an oracle of its
    parameters."""
    if not isinstance(old, Old):
        return old
    params = {"RidgeOracle": ("l2", "prior", "max_exact", "memory", "forget"),
              "BoundedRidgeOracle": ("l2", "prior", "head", "memory", "forget"),
              "VWOracle": ("learning_rate", "bisection")}[old.name]
    cls = {"RidgeOracle": RidgeOracle, "BoundedRidgeOracle": BoundedRidgeOracle,
           "VWOracle": VWOracle}[old.name]
    return cls(**{name: old[name] for name in params if name in old})
