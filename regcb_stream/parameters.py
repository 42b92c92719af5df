"""RegCB's and its oracles' parameters: each one's constraint and what it must be, checked
when it is set (as scikit-learn's ``_parameter_constraints``), naming the parameter at fault.

>>> from regcb_stream import RegCB
>>> RegCB(mellowness=-1)
Traceback (most recent call last):
...
ValueError: the 'mellowness' parameter of RegCB must be None or a finite number > 0; got -1
>>> from regcb_stream import RidgeOracle
>>> RidgeOracle(reward_range=(1, 0))
Traceback (most recent call last):
...
ValueError: the 'reward_range' parameter of RidgeOracle must be a pair (low, high) of finite \
numbers with low < high; got (1, 0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from regcb_stream import rules
from regcb_stream.explore import schedules
from regcb_stream.features.encoder import EncodedRows
from regcb_stream.features.random_features import RandomFeatures

PRIORS = ("optimistic", "midpoint", "auto")  # the ridge priors named after the reward range
TREE_BACKENDS = ("lightgbm", "sklearn")
LIGHTGBM_DEPTH = 17  # LightGBM's most leaves, 2^17
MAX_RANDOM_FEATURES = 1 << 20  # (each a column of every model's ridge)


def check_reward(reward, reward_range: tuple[float, float], allow_out_of_range: bool,
                 name: str = "reward") -> None:
    """A ``ValueError`` for a reward (the parameter ``name``) that is not a finite number in
    ``reward_range`` (unless ``allow_out_of_range``)."""
    if not isinstance(reward, (int, float, np.number)) or not math.isfinite(reward):
        raise ValueError(f"{name} must be a finite number, got {reward!r}")
    lo, hi = reward_range
    if not (lo <= reward <= hi or allow_out_of_range):
        raise ValueError(
            f"{name} {reward} is outside reward_range {reward_range}; pass "
            "allow_out_of_range=True to learn it as it is (VW's behaviour with costs)")


def check_labels(rewards: np.ndarray, probs, weights, reward_range,
                 allow_out_of_range: bool) -> None:
    """The error of the first bad label of a block, if any (``probs``, ``weights``: None
    for ones)."""
    n = len(rewards)
    probs = np.ones(n) if probs is None else numbers("probs", probs, n)
    weights = np.ones(n) if weights is None else numbers("weights", weights, n)
    lo, hi = reward_range
    bad = ~((probs > 0) & (probs <= 1) & np.isfinite(rewards) & (weights >= 0)
            & (weights < np.inf) & (allow_out_of_range | ((rewards >= lo) & (rewards <= hi))))
    for i in np.flatnonzero(bad)[:1].tolist():
        check_prob(float(probs[i]))
        check_reward(float(rewards[i]), reward_range, allow_out_of_range)
        check_weight(float(weights[i]))


def checked_log(played, rewards, probs, weights, reward_range, allow_out_of_range,
                n_actions: int | None = None) -> tuple:
    """A logged block's labels as arrays, or the error of its first bad label (``played``:
    indices among ``n_actions`` offered actions, -1 for none)."""
    played = indices("played", played, n_actions)
    n = len(played)
    rewards = numbers("rewards", rewards, n)
    probs = np.ones(n) if probs is None else numbers("probs", probs, n)
    weights = np.ones(n) if weights is None else numbers("weights", weights, n)
    labelled = np.flatnonzero(played >= 0)
    check_labels(rewards[labelled], probs[labelled], weights[labelled], reward_range,
                 allow_out_of_range)
    return played, rewards, probs, weights


def checked_block(contexts, actions, rewards, probs, weights, candidates, reward_range,
                  allow_out_of_range: bool) -> tuple:
    """`RegCB.learn_many`'s labels as arrays (rewards, probs, weights), or the error naming
    the first bad argument."""
    n = check_lengths(contexts=contexts, actions=actions, rewards=rewards, probs=probs,
                      weights=weights, candidates=candidates)
    rewards = numbers("rewards", rewards, n)
    probs = None if probs is None else numbers("probs", probs, n)
    weights = np.ones(n) if weights is None else numbers("weights", weights, n)
    check_labels(rewards, probs, weights, reward_range, allow_out_of_range)
    return rewards, probs, weights


def checked_play(contexts, actions, reveal, uniforms) -> tuple[int, np.ndarray | None]:
    """`RegCB.play`'s arguments checked: its number of rounds and uniform draws (None:
    none given)."""
    check_actions(actions)
    n = check_lengths(contexts=contexts, uniforms=uniforms)
    if n == 0:
        raise ValueError("contexts must hold at least one round to play")
    if not callable(reveal):
        raise TypeError(f"reveal must be a function reveal(rounds, indices) -> rewards; "
                        f"got {reveal!r:.60}")
    u = None if uniforms is None else numbers("uniforms", uniforms, n)
    if u is not None and not ((u >= 0) & (u < 1)).all():
        raise ValueError("uniforms must be numbers in [0, 1)")
    return n, u


def exploration_changes(variant, budget: dict, budget_grid) -> dict:
    """`RegCB.change_exploration`'s arguments, checked, as the parameters they set (a
    budget given resets the others)."""
    unknown = sorted(set(budget) - {"beta", "mellowness", "budget", "budget_grid"})
    if unknown:
        raise TypeError(f"change_exploration takes beta, mellowness, budget and "
                        f"budget_grid, not {', '.join(unknown)}")
    if budget:
        budget = {"beta": budget.get("beta"), "mellowness": budget.get("mellowness"),
                  "budget": budget.get("budget"),
                  "budget_grid": budget.get("budget_grid", budget_grid)}
    changes = {**({} if variant is None else {"variant": variant}), **budget}
    check_arguments("RegCB", PARAMETERS, changes)
    return changes


def n_offered(actions) -> int:
    """The number of offered actions (labels, or the rows of `EncodedRows`)."""
    return actions.index.shape[-2] if isinstance(actions, EncodedRows) else len(actions)


def numbers(name: str, values, n: int) -> np.ndarray:
    """``values`` as ``n`` floats, or an error naming ``name`` and what it holds."""
    try:
        out = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers, one per context; got {values!r:.80}"
                        ) from None
    if out.shape != (n,):
        raise ValueError(f"{name} must hold one number per context ({n}); got shape "
                         f"{out.shape}")
    return out


def indices(name: str, values, n_actions: int | None) -> np.ndarray:
    """``values`` as action indices (ints from -1, below ``n_actions``), or an error naming
    ``name``: labels where indices belong say so."""
    array = np.asarray(values) if not isinstance(values, (str, bytes)) else np.asarray(None)
    if array.ndim != 1:
        raise TypeError(f"{name} must be a sequence of action indices (-1: none); got "
                        f"{values!r:.80}")
    if array.dtype.kind not in "iuf" or array.dtype.kind == "f" and not (
            np.isfinite(array).all() and (array == np.round(array)).all()):
        bad = next((v for v in array.tolist()
                    if not (isinstance(v, (int, float)) and float(v).is_integer())), None)
        raise TypeError(f"{name} must hold indices of the offered actions (ints, -1 for "
                        f"none), not labels or fractions; got {bad!r}")
    out = array.astype(np.intp)
    if len(out) and (out.min() < -1 or n_actions is not None and out.max() >= n_actions):
        bad = int(out.min()) if out.min() < -1 else int(out.max())
        raise ValueError(f"{name} index {bad} is not among the {n_actions} offered actions "
                         f"(0 to {n_actions - 1}, -1 for none)" if n_actions is not None
                         else f"{name} index {bad} is not an action index (-1 for none)")
    return out


def check_weight(weight) -> None:
    """A ``ValueError`` for an importance weight that is not a finite number >= 0 (0: the
    label changes no regression, VW's weight 0)."""
    if type(weight) is float and 0.0 <= weight < math.inf:  # the usual case, at once
        return
    if not is_number(weight) or isinstance(weight, bool) or weight < 0:
        raise ValueError(f"weight must be a finite number >= 0, got {weight!r}")


def check_actions(actions) -> None:
    """A ``TypeError`` for offered ``actions`` that are not a sequence (a string is one
    label, not a list of them), a ``ValueError`` for none."""
    if type(actions) is list and actions:  # the usual case, at once
        return
    if isinstance(actions, (str, bytes)):
        raise TypeError(f"actions must be a list of actions, not a string: pass "
                        f"[{actions!r}] for one action or list({actions!r}) for each "
                        "character")
    if isinstance(actions, Mapping) or not isinstance(actions, (Sequence, np.ndarray,
                                                                EncodedRows)):
        raise TypeError(f"actions must be a list of action labels or of dicts of action "
                        f"features; got {type(actions).__name__} {actions!r:.60}")
    if len(actions) == 0:
        raise ValueError("no actions offered: actions must hold at least one")
    if isinstance(actions, np.ndarray) and actions.dtype.kind in "fc" and np.isnan(
            actions).any():
        raise ValueError("actions must not hold NaN, a label never equal to itself")


def position(name: str, label, actions) -> int:
    """Where the label ``name`` is among the offered ``actions``, or an error naming it."""
    check_label(name, label)
    try:  # (also: labels that do not compare with it)
        return list(actions).index(label)
    except ValueError:
        raise ValueError(f"{name} {label!r} is not among the offered actions") from None


def check_label(name: str, value) -> None:
    """A ``TypeError`` for an action label or event id (``name``) that is not hashable."""
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{name} must be a label (hashable, as the offered actions are); got "
                        f"{type(value).__name__} {value!r:.60}") from None


def check_lengths(**blocks) -> int:
    """The common length of a block's arguments (None: absent, but for ``contexts``), or an
    error naming them and their lengths."""
    lengths = {}
    for name, block in blocks.items():
        if block is None and name not in ("contexts", "actions"):
            continue
        if isinstance(block, (str, bytes, Mapping)) or not hasattr(block, "__len__") or (
                isinstance(block, np.ndarray) and block.ndim == 0):
            raise TypeError(f"{name} must be a sequence with one entry per context; got "
                            f"{type(block).__name__} {block!r:.60}")
        lengths[name] = len(block)
    if len(set(lengths.values())) > 1:
        said = ", ".join(f"{name} {n}" for name, n in lengths.items())
        raise ValueError(f"a block's arguments must have the same length; got {said}")
    return next(iter(lengths.values()), 0)


def check_prob(prob) -> None:
    """A ``ValueError`` for a probability outside (0, 1]."""
    if type(prob) is float and 0.0 < prob <= 1.0:  # the usual case, at once
        return
    if not isinstance(prob, (int, float, np.number)) or not 0.0 < prob <= 1.0:
        raise ValueError(f"probability must be in (0, 1], got {prob!r}")


def is_number(value) -> bool:
    """Whether ``value`` is a finite number."""
    return isinstance(value, (int, float, np.number)) and math.isfinite(value)


def is_range(value) -> bool:
    """Whether ``value`` is a pair ``(low, high)`` of finite numbers, low < high."""
    try:
        lo, hi = value
    except (TypeError, ValueError):
        return False
    return is_real(lo) and is_real(hi) and lo < hi


def is_real(value) -> bool:
    """Whether ``value`` is a finite number, not True or False."""
    return is_number(value) and not is_bool(value)


def _int(low: int, high: float = math.inf):
    return lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool) and (
        low <= v <= high)


def _real(low: float, high: float = math.inf):
    return lambda v: is_real(v) and low < v <= high


def _choice(choices: tuple):
    return lambda v: isinstance(v, str) and v in choices


def _methods(*names: str):
    return lambda v: not isinstance(v, type) and all(
        callable(getattr(v, name, None)) for name in names)


def is_bool(value) -> bool:
    """Whether ``value`` is True or False."""
    return isinstance(value, (bool, np.bool_))


def _grid(value) -> bool:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        return False
    return len(value) > 0 and all(is_number(v) and v >= 0 for v in value)


#: each parameter's constraint and what it must be (checked when it is set)
PARAMETERS = {
    "variant": (_choice(rules.VARIANTS), f"one of {rules.VARIANTS}"),
    "ties": (_choice(rules.TIE_RULES), f"one of {rules.TIE_RULES}"),
    "oracle": (lambda v: True, "a name or an Oracle"),  # (checked by its model)
    "beta": (lambda v: v is None or is_number(v) and v >= 0, "None or a finite number >= 0"),
    "schedule": (_choice(schedules.SCHEDULES), f"one of {schedules.SCHEDULES}"),
    "budget": (lambda v: v is None or _choice((*schedules.BUDGETS, "auto"))(v),
               f"None or one of {(*schedules.BUDGETS, 'auto')}"),
    "mellowness": (lambda v: v is None or is_number(v) and v > 0, "None or a finite number > 0"),
    "horizon": (lambda v: v is None or _int(1)(v), "None or an int >= 1"),
    "budget_grid": (_grid, "a non-empty sequence of finite numbers >= 0"),
    "reward_range": (is_range, "a pair (low, high) of finite numbers with low < high"),
    "seed": (lambda v: v is None or _int(0)(v), "None or an int >= 0"),
    "warm_start_epochs": (_int(0), "an int >= 0"),
    "allow_out_of_range": (is_bool, "True or False"),
    "cross": (is_bool, "True or False"),
    "intercept": (is_bool, "True or False"),
    "hash_bits": (lambda v: v is None or _int(1, 32)(v), "None or an int from 1 to 32"),
    "random_features": (lambda v: v is None or isinstance(v, RandomFeatures)
                        or _int(0, MAX_RANDOM_FEATURES)(v),
                        f"None, an int in [0, {MAX_RANDOM_FEATURES}] or a RandomFeatures"),
    "random_scale": (lambda v: is_number(v) and v > 0, "a finite number > 0"),
    "forget": (lambda v: is_number(v) and 0 < v <= 1, "a number in (0, 1]"),
    "change_threshold": (lambda v: v is None or is_number(v) and v >= 0,
                         "None or a finite number >= 0"),
    "select_model": (is_bool, "True or False"),
}


FLAG = (is_bool, "True or False")
RANGE = (is_range, "a pair (low, high) of finite numbers with low < high")
MEMORY = (lambda v: v is None or _int(0)(v), "None (no limit) or an int >= 0 (bytes)")


#: the oracles' parameters, as `PARAMETERS` (a ``TypeError`` for objects without what is used)
RIDGE_PARAMETERS = {
    "l2": (lambda v: v is None or isinstance(v, str) and v in ("gcv", "evidence")
           or _real(0)(v), "None, 'gcv', 'evidence' or a finite number > 0"),
    "prior": (lambda v: _choice(PRIORS)(v) or is_real(v), f"a finite number or one of {PRIORS}"),
    "forget": (_real(0, 1), "a number in (0, 1]"),
    "reward_range": RANGE,
    "kernels": FLAG,
    "memory": MEMORY,
}
ORACLE_PARAMETERS = {
    "RidgeOracle": RIDGE_PARAMETERS | {
        "max_exact": (lambda v: _int(0)(v) or v == math.inf,
                      "an int >= 0 (models x features^2 kept exact) or math.inf"),
        "piecewise": FLAG,
    },
    "BoundedRidgeOracle": RIDGE_PARAMETERS | {"head": (_int(0), "an int >= 0")},
    "VWOracle": {
        "learning_rate": (_real(0), "a finite number > 0"),
        "bisection": FLAG,
        "intercept_last": FLAG,
        "reward_range": RANGE,
        "kernels": FLAG,
    },
    "TreesOracle": {
        "n_estimators": (_int(1), "an int >= 1"),
        "max_depth": (_int(1, LIGHTGBM_DEPTH), f"an int from 1 to {LIGHTGBM_DEPTH}"),
        "learning_rate": (_real(0), "a finite number > 0"),
        "backend": (_choice(TREE_BACKENDS), f"one of {TREE_BACKENDS}"),
        "l2": (_real(0), "a finite number > 0"),
        "refit_growth": (_real(1), "a finite number > 1"),
        "anchor": FLAG,
        "seed": (_int(0, 2**32 - 1), "an int from 0 to 2**32 - 1"),
        "params": (lambda v: v is None or isinstance(v, Mapping) and all(
            isinstance(key, str) for key in v), "None or a dict of the backend's keyword "
            "arguments"),
    },
    "RiverOracle": {
        "regressor": (_methods("learn_one", "predict_one", "clone"),
                      "a River regressor (with learn_one, predict_one and clone)", TypeError),
        "reward_range": RANGE,
        "sensitivity": (_choice(("auto", "probe")), "'auto' or 'probe'"),
        "probe_weight": (_real(0), "a finite number > 0"),
        "normalize": FLAG,
    },
    "BinSearchOracle": {
        "regressor": (_methods("fit", "predict"), "a regressor with fit(X, y, "
                      "sample_weight) and predict(X), as scikit-learn's", TypeError),
        "alpha": (_real(0), "a finite number > 0"),
        "reward_range": RANGE,
        "penalty": (lambda v: v is None or callable(v),
                    "None or a function of the fitted regressor", TypeError),
    },
}


def check_arguments(owner: str, constraints: Mapping, arguments: Mapping) -> None:
    """A ``ValueError`` (or the constraint's error) naming the first of ``arguments`` (a
    constructor's ``locals()``: ``self`` and ``super``'s ``__class__`` are skipped) that
    breaks its constraint, as ``owner``'s parameter; every argument must have one."""
    for name, value in arguments.items():
        if name in ("self", "__class__"):
            continue
        ok, expected, *error = constraints[name]
        if not ok(value):
            raise (error or [ValueError])[0](
                f"the {name!r} parameter of {owner} must be {expected}; got {value!r:.80}")


def check_oracle_arguments(cls: type, oracle, arguments: Mapping) -> None:
    """`check_arguments` for the constructor of the oracle class ``cls`` (``oracle``'s
    own class, or one it derives from), by ``oracle``'s class's name."""
    check_arguments(type(oracle).__name__, ORACLE_PARAMETERS[cls.__name__], arguments)


def parameters(learner) -> dict:
    """A learner's parameters, as given."""
    return {name: vars(learner)[name] for name in PARAMETERS}


def check_parameters(learner) -> None:
    """A ``ValueError`` naming the first parameter that breaks its constraint."""
    check_arguments("RegCB", PARAMETERS, parameters(learner))
    if learner.budget == "theory" and learner.horizon is None:
        raise ValueError("budget='theory' needs a horizon (the number of rounds T)")
