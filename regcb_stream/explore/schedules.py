"""Epoch schedules (when the frozen decision state is rebuilt) and loss budgets.

An epoch schedule is the increasing sequence of label counts at which the learner rebuilds
its decision state. Epoch ``m`` of the paper starts at round ``tau_m``; the state used in
that epoch is built from the ``tau_m - 1`` labels seen before it, so a rebuild happens once
``tau_m - 1`` labels have been learned.

>>> list(itertools.islice(rebuild_points("doubling"), 6))
[1, 3, 7, 15, 31, 63]
>>> list(itertools.islice(rebuild_points("sqrt2"), 8))
[1, 2, 4, 7, 11, 17, 25, 36]
>>> list(itertools.islice(rebuild_points("online"), 4))
[1, 2, 3, 4]

"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

SCHEDULES = ("doubling", "sqrt2", "online")
BUDGETS = ("beta", "summed", "mellowness", "theory")


def rebuild_points(schedule: str) -> Iterator[int]:
    """Label counts at which the decision state is rebuilt, in increasing order.

    ``doubling``: epoch m starts at round 2^(m-1) (the theory). ``sqrt2``: epoch lengths
    round(2^(i/2)), i = 0, 1, ... (the paper's experiments). ``online``: after every label.
    """
    if schedule == "online":
        return itertools.count(1)
    if schedule == "doubling":
        return (2**k - 1 for k in itertools.count(1))
    if schedule == "sqrt2":
        return itertools.accumulate(math.floor(2 ** (i / 2) + 0.5) for i in itertools.count())
    raise ValueError(f"unknown schedule {schedule!r}; expected one of {SCHEDULES}")


def next_rebuild(schedule: str, n_labels: int) -> int:
    """The first rebuild point after ``n_labels`` labels.

    >>> next_rebuild("doubling", 7), next_rebuild("online", 7)
    (15, 8)
    """
    if schedule == "online":
        return n_labels + 1
    return next(n for n in rebuild_points(schedule) if n > n_labels)


def epochs_until(schedule: str, horizon: int) -> int:
    """Number of epochs that start within ``horizon`` rounds (the paper's M).

    >>> epochs_until("doubling", 1000), epochs_until("online", 1000)
    (10, 1000)
    """
    if schedule == "online":  # (a rebuild after every label: no walk over them)
        return max(int(horizon), 1)
    count = 1  # the first epoch starts before any label
    for n in rebuild_points(schedule):
        if n + 1 > horizon:
            return count
        count += 1
    raise AssertionError("unreachable: schedules are infinite")


def loss_budget(
    kind: str,
    *,
    n_labels: int,
    n_actions: int,
    span: float,
    beta: float,
    mellowness: float,
    epoch: int = 1,
    n_epochs: int = 1,
    dim: int = 1,
    horizon: int | None = None,
    delta: float = 0.05,
) -> float:
    """Loss budget on the scale of summed squared loss: the version space holds every
    regressor whose summed loss exceeds the minimum by at most this much (``beta`` and
    ``mellowness`` also take an array of label counts, for a budget per count).

    ``beta``: the paper's constant beta on the normalized risk, times the ``n_labels``
    rounds the risk is averaged over, times span^2 so that beta means the same for any
    reward range. ``summed``: beta span^2, a constant slack on the summed loss, as the
    paper's experiments set it (its ``BinSearch`` compares summed losses with ``R_min +
    beta``): the version space shrinks as labels come. ``mellowness``: VW's ``c0 * ln(K n) *
    span^2`` (0 before any label).
    ``theory``: the paper's ``(M - m + 1) C`` with ``C = 16 log(2 |F| K T^2 / delta)`` and
    ``log |F|`` taken as ``dim * log T`` (an epsilon-net of a ``dim``-dimensional class).

    >>> loss_budget("beta", n_labels=100, n_actions=5, span=1.0, beta=0.01, mellowness=0.1)
    1.0
    >>> loss_budget("summed", n_labels=100, n_actions=5, span=1.0, beta=0.01, mellowness=0.1)
    0.01
    >>> round(loss_budget("mellowness", n_labels=100, n_actions=5, span=2.0, beta=0.01,
    ...                   mellowness=0.1), 6)
    2.485843
    """
    if kind == "beta":
        return beta * n_labels * span**2
    if kind == "summed" and isinstance(n_labels, np.ndarray):
        return np.where(n_labels > 0, beta * span**2, 0.0)
    if kind == "summed":
        return beta * span**2 if n_labels else 0.0
    if kind == "mellowness" and isinstance(n_labels, np.ndarray):  # a budget per count
        with np.errstate(divide="ignore"):
            log = np.log(n_actions * n_labels.astype(float))
        return np.where(n_labels > 0, mellowness * log * span**2, 0.0)
    if kind == "mellowness":
        return mellowness * math.log(n_actions * n_labels) * span**2 if n_labels else 0.0
    if kind == "theory":
        if horizon is None:
            raise ValueError("budget='theory' needs a horizon (the number of rounds T)")
        log_class = dim * math.log(horizon)
        c = 16.0 * (log_class + math.log(2.0 * n_actions * horizon**2 / delta))
        return (n_epochs - epoch + 1) * c * span**2
    raise ValueError(f"unknown budget {kind!r}; expected one of {BUDGETS}")
