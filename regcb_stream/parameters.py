"""RegCB's parameters: each one's constraint and what it must be, checked when it is set
(as scikit-learn's ``_parameter_constraints``), naming the parameter at fault.

>>> from regcb_stream import RegCB
>>> RegCB(mellowness=-1)
Traceback (most recent call last):
...
ValueError: the 'mellowness' parameter of RegCB must be None or a finite number > 0; got -1
"""

from __future__ import annotations

import math

import numpy as np

from regcb_stream import rules
from regcb_stream.explore import schedules
from regcb_stream.features.random_features import RandomFeatures


def check_reward(reward, reward_range: tuple[float, float], allow_out_of_range: bool) -> None:
    """A ``ValueError`` for a reward that is not a finite number in ``reward_range``
    (unless ``allow_out_of_range``)."""
    if not isinstance(reward, (int, float, np.number)) or not math.isfinite(reward):
        raise ValueError(f"reward must be a finite number, got {reward!r}")
    lo, hi = reward_range
    if not (lo <= reward <= hi or allow_out_of_range):
        raise ValueError(
            f"reward {reward} is outside reward_range {reward_range}; pass "
            "allow_out_of_range=True to learn it as it is (VW's behaviour with costs)")


def check_labels(rewards: np.ndarray, probs, reward_range, allow_out_of_range: bool) -> None:
    """The error of the first bad label of a block, if any."""
    if np.asarray(probs).dtype.kind not in "fiub":  # (the error names the value)
        for prob in probs:
            check_prob(prob)
    probs = np.asarray(probs, dtype=float)
    lo, hi = reward_range
    bad = ~((probs > 0) & (probs <= 1) & np.isfinite(rewards)
            & (allow_out_of_range | ((rewards >= lo) & (rewards <= hi))))
    for i in np.flatnonzero(bad)[:1].tolist():
        check_prob(float(probs[i]))
        check_reward(float(rewards[i]), reward_range, allow_out_of_range)


def checked_log(played, rewards, probs, weights, reward_range, allow_out_of_range) -> tuple:
    """A logged block's labels as arrays, or the error of its first bad label."""
    n = len(played)
    played = np.asarray(played, dtype=np.intp).reshape(n)
    rewards = np.asarray(rewards, dtype=float).reshape(n)
    probs = np.ones(n) if probs is None else np.asarray(probs, dtype=float).reshape(n)
    weights = np.ones(n) if weights is None else np.asarray(weights, float).reshape(n)
    labelled = np.flatnonzero(played >= 0)
    check_labels(rewards[labelled], probs[labelled], reward_range, allow_out_of_range)
    return played, rewards, probs, weights


def check_prob(prob) -> None:
    """A ``ValueError`` for a probability outside (0, 1]."""
    if type(prob) is float and 0.0 < prob <= 1.0:  # the usual case, at once
        return
    if not isinstance(prob, (int, float, np.number)) or not 0.0 < prob <= 1.0:
        raise ValueError(f"probability must be in (0, 1], got {prob!r}")


def _number(value) -> bool:
    return isinstance(value, (int, float, np.number)) and math.isfinite(value)


def _range(value) -> bool:
    try:
        lo, hi = value
    except (TypeError, ValueError):
        return False
    return _number(lo) and _number(hi) and lo < hi


def _int(low: int, high: float = math.inf):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


#: each parameter's constraint and what it must be (checked when it is set)
PARAMETERS = {
    "variant": (lambda v: v in rules.VARIANTS, f"one of {rules.VARIANTS}"),
    "oracle": (lambda v: True, "a name or an Oracle"),  # (checked by its model)
    "beta": (lambda v: v is None or _number(v) and v >= 0, "None or a finite number >= 0"),
    "schedule": (lambda v: v in schedules.SCHEDULES, f"one of {schedules.SCHEDULES}"),
    "budget": (lambda v: v is None or v in (*schedules.BUDGETS, "auto"),
               f"None or one of {(*schedules.BUDGETS, 'auto')}"),
    "mellowness": (lambda v: v is None or _number(v) and v > 0, "None or a finite number > 0"),
    "horizon": (lambda v: v is None or _int(1)(v), "None or an int >= 1"),
    "budget_grid": (lambda v: True, "mellowness values"),  # (checked by the selector)
    "reward_range": (_range, "a pair (low, high) of finite numbers with low < high"),
    "seed": (lambda v: True, "a seed of numpy's default_rng"),
    "warm_start_epochs": (_int(0), "an int >= 0"),
    "allow_out_of_range": (lambda v: True, "True or False"),
    "cross": (lambda v: True, "True or False"),
    "intercept": (lambda v: True, "True or False"),
    "hash_bits": (lambda v: v is None or _int(1, 32)(v), "None or an int from 1 to 32"),
    "random_features": (lambda v: v is None or isinstance(v, RandomFeatures) or _int(0)(v),
                        "None, an int >= 0 or a RandomFeatures"),
    "random_scale": (lambda v: _number(v) and v > 0, "a finite number > 0"),
    "forget": (lambda v: _number(v) and 0 < v <= 1, "a number in (0, 1]"),
    "change_threshold": (lambda v: v is None or _number(v) and v >= 0,
                         "None or a finite number >= 0"),
    "select_model": (lambda v: isinstance(v, bool), "True or False"),
}


def parameters(learner) -> dict:
    """A learner's parameters, as given."""
    return {name: vars(learner)[name] for name in PARAMETERS}


def check_parameters(learner) -> None:
    """A ``ValueError`` naming the first parameter that breaks its constraint."""
    for name, (ok, expected) in PARAMETERS.items():
        if not ok(vars(learner)[name]):
            raise ValueError(f"the {name!r} parameter of RegCB must be {expected}; "
                             f"got {vars(learner)[name]!r}")
    if learner.budget == "theory" and learner.horizon is None:
        raise ValueError("budget='theory' needs a horizon (the number of rounds T)")
