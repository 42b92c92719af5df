"""VW's default linear regressor with its closed-form sensitivity, in numpy.

A re-implementation of Vowpal Wabbit's ``gd`` (adaptive, normalized, invariant updates,
learning rate 0.5, ``power_t`` 0.5, squared loss, float32 state) and of what RegCB asks of
it in ``cb_explore_adf_regcb.cc``: the *sensitivity*, how far one unit of importance weight
on a fake example would move the prediction, and VW's 20-step bisection for the largest
weight whose loss increase stays within the budget. With this oracle ``RegCB`` makes VW's
``--cb_explore_adf --regcb`` decisions (VW's test 320: 113 of 113 lines).

It learns rewards, the negated costs VW learns: the update, the adaptive sums and the
bounds are symmetric under that negation, so the decisions are the same.

Where VW's behaviour is a defect, the default is the correct behaviour and
``vw_compat=True`` in :class:`regcb_stream.RegCB`'s caller (the CLI's ``--vw_compat``)
reproduces VW: see ``docs/vw_compatibility.md``.
"""

from __future__ import annotations

import math

import numpy as np

from regcb_stream.bounds import sensitivity_move
from regcb_stream.oracles.base import Capabilities, Oracle
from regcb_stream.oracles.loop import OnlineLoop
from regcb_stream.parameters import check_oracle_arguments
from regcb_stream.state import Stateful

try:
    from regcb_stream.oracles import _ridge
except ImportError:  # not built: the numpy reference
    _ridge = None

F32 = np.float32
X2_MIN = F32(1.084202e-19) ** 2
TOLERANCE = F32(1e-6)


class VWOracle(OnlineLoop, Oracle, Stateful):
    """VW's adaptive, normalized, invariant SGD regressor, one weight vector per model.

    VW learns a ``--cb_explore_adf`` label with importance weight ``events / actions`` (labelled
    examples over their total number of actions, so ``1/K`` for a constant K); this oracle does
    the same, taking the number of actions from its last decision. It takes sparse input (its
    rows are ``(index, value)`` pairs): costs are O(nonzero features) per label and per
    (context, action) bound whatever the number of distinct features, and its state is 3 float32
    numbers per (model, feature) seen, so contexts with up to millions of distinct features fit
    (2^18 features and 4 models: 12 MB). Labels are queued and a rebuild learns them in order
    (each update reads the state the previous one left, as in VW), so the decisions always see
    the state of the last rebuild with no second copy of it. With the ``online`` schedule a
    block of logged examples is decided and learned in one compiled loop (``online_loop``;
    ``regcb_stream/oracles/_ridge.c``, ``vw_run``), which sums in feature order as VW does.

    Parameters
    ----------
    learning_rate
        VW's ``-l`` (0.5).
    bisection
        Find the weight with VW's 20-step float32 bisection (``--vw_compat``: VW's
        decisions) instead of the exact root of the cubic it approximates (the default:
        VW's search stops at the lower end of its bracket, which can be 0 when its early
        stop fires, and is coarse when the budget is small; it is also 20 numpy passes).
    intercept_last
        Sum the intercept (column 0, first in each row) after the other features, where
        VW sums its constant (``--vw_compat``: VW's float32 sums bit for bit; the order
        changes a score's last bit now and then).
    reward_range
        The rewards' range: the fake labels of the bounds lie one beyond each end (the
        learner's, when it takes the oracle).
    kernels
        Run the compiled loop, where it is built (False: the numpy reference).

    Examples
    --------
    >>> from regcb_stream.features.rows import SparseRows
    >>> oracle = VWOracle()
    >>> oracle.grow(n_models=1, dim=2)
    >>> for _ in range(20):
    ...     oracle.learn((np.array([0, 1]), np.array([1.0, 0.5])), 0, 1.0)
    >>> oracle.rebuild()
    >>> phi = SparseRows(np.array([[[0, 1]]]), np.array([[[1.0, 0.5]]]), dim=2)
    >>> prediction, low, high = oracle.bounds(phi, np.array([0]), budget=0.01)
    >>> float(prediction[0, 0].round(3)), bool(low[0, 0] < prediction[0, 0] < high[0, 0])
    (1.0, True)

    """

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "learning_rate": "learning_rate",
        "bisection": "bisection",
        "intercept_last": "intercept_last",
        "reward_range": "reward_range",
        "kernels": "kernels",
        "state": "_state",
        "n_actions": "_n_actions",
        "events": "_events",
        "action_sum": "_action_sum",
        "pending": "_pending",
    }

    def __init__(self, learning_rate: float = 0.5, bisection: bool = False, *,
                 intercept_last: bool = False,
                 reward_range: tuple[float, float] = (0.0, 1.0), kernels: bool = True):
        check_oracle_arguments(VWOracle, self, locals())
        self.learning_rate = learning_rate
        self.bisection = bisection
        self.intercept_last = intercept_last
        self.reward_range = (float(reward_range[0]), float(reward_range[1]))
        self.kernels = kernels
        self._state = VWState.empty()
        self._n_actions = 1  # of the last decision: VW's importance-weight normaliser
        self._events = 0
        self._action_sum = 0
        self._pending: list[tuple] = []  # labels since the last rebuild, in order

    @property
    def compiled(self) -> bool:
        """Whether the compiled loop runs (False: the numpy reference)."""
        return self.kernels and _ridge is not None

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(rows="pairs", online_loop=self.compiled)

    def grow(self, n_models: int, dim: int, max_dim: int | None = None) -> None:
        self._state.grow(n_models, dim, max_dim)

    def widens(self, dim: int) -> bool:
        """Never: each weight's state is its own (a new feature's starts at zero)."""
        return False

    def learn(self, x, model: int, y: float, weight: float = 1.0) -> None:
        """VW's ``gd`` update on one example (``x``: nonzero ``(index, value)`` arrays), with
        weight ``weight * events / actions``."""
        self._events += 1
        self._action_sum += self._n_actions
        weight = F32(weight * self._events / self._action_sum)
        idx, value = self._ordered(*x)
        self._pending.append((model, idx, value.astype(F32), F32(y), weight))

    @property
    def n_models(self) -> int:
        return self._state.w.shape[0]

    def describe(self) -> str:
        return "VW's regressor"

    def rebuild(self) -> None:
        """Learn the queued labels, in order (each update reads the state the previous one
        left, as VW's)."""
        for model, idx, value, y, weight in self._pending:
            self._state.update(model, idx, value, y, weight, F32(self.learning_rate))
        self._pending.clear()

    def _loop(self, index, value, models, played, rewards, weights, budgets, rule,
              reward_range, tolerance, out):
        """``_ridge.vw_run``."""
        (n, r, width), k = value.shape, len(models)
        index, value = self._ordered(index, value)
        events = np.array([self._events, self._action_sum], np.int64)
        state = self._state
        _ridge.vw_run(state.w, state.g, state.s, state.c, models, index, value, played,
                      rewards, weights, budgets, *out, n, r, k, width, state.w.shape[1],
                      rule.code, self.learning_rate, self.bisection, *reward_range, tolerance,
                      events)
        self._events, self._action_sum = int(events[0]), int(events[1])
        self._n_actions = k
        return tuple(out)

    def _ordered(self, index, value) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``(index, value)`` in the order their features are summed: with
        ``intercept_last``, the first (the intercept's) moved to the end."""
        if not self.intercept_last:
            return index, value
        if index.size == 0 and value.size:  # (the kernels' dense rows: every column)
            index = np.broadcast_to(np.arange(value.shape[-1], dtype=np.int64), value.shape)
        return (np.ascontiguousarray(np.roll(index, -1, axis=-1)),
                np.ascontiguousarray(np.roll(value, -1, axis=-1)))

    def predict(self, phi, models) -> np.ndarray:
        self._n_actions = phi.shape[1]
        row_models, idx, values = _flat_rows(phi, models)
        idx, values = self._ordered(idx, values)
        return self._state.scores(row_models, idx, values).reshape(phi.shape[:2])

    def bounds(self, phi, models, budget: float):
        """Score and VW's sensitivity bounds: the fake labels are one beyond each end of
        the reward range (``reward_range``)."""
        low_end, high_end = self.reward_range
        self._n_actions = phi.shape[1]
        row_models, idx, values = _flat_rows(phi, models)
        idx, values = self._ordered(idx, values)
        state = self._state
        score = state.scores(row_models, idx, values)
        delta = F32(budget) if budget > 0 else F32(-np.inf)
        fake = np.array([[high_end + 1.0], [low_end - 1.0]], F32)  # both sides at once
        sign = np.array([[1.0], [-1.0]], F32)
        sens = state.sensitivity(row_models, idx, values, score, fake, self.learning_rate)
        distance = (fake - score) * sign
        if self.bisection:
            move = sens * vw_bisection(distance, delta, sens)
        else:
            move = sensitivity_move(distance.astype(float), sens.astype(float), budget)
        bound = score + sign * move
        outside = (distance < 1) | ~np.isfinite(sens)  # a score beyond the range's end
        high, low = np.where(outside, sign * np.inf, bound).astype(float)
        shape = phi.shape[:2]
        return score.astype(float).reshape(shape), low.reshape(shape), high.reshape(shape)


class VWState(Stateful):
    """Weights, adaptive sums, normalizers (float32 like VW) and VW's global counters
    ``c = [total weight, normalizer sum, least label, largest label]`` (float64)."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "w": "w",
        "g": "g",
        "s": "s",
        "c": "c",
    }

    def __init__(self, w, g, s, counters):
        self.w, self.g, self.s = w, g, s
        self.c = np.array(counters, float)

    @classmethod
    def empty(cls) -> VWState:
        return cls(*(np.zeros((0, 0), F32) for _ in range(3)), [0.0, 0.0, 0.0, 0.0])

    def grow(self, n_models: int, dim: int, limit: int | None = None) -> None:
        """Room for ``n_models`` x ``dim`` (capacity doubles, up to ``limit`` features, so
        growing one feature at a time costs O(1) amortized)."""
        m0, d0 = self.w.shape
        if n_models > m0 or dim > d0:
            m = max(n_models, 2 * m0 if n_models > m0 else m0)
            d = max(dim, min(2 * d0, limit or 2 * d0) if dim > d0 else d0)
            for name in ("w", "g", "s"):
                old = getattr(self, name)
                new = np.zeros((m, d), F32)
                new[: old.shape[0], : old.shape[1]] = old
                setattr(self, name, new)

    def scores(self, models, idx, values) -> np.ndarray:
        return np.einsum("rl,rl->r", self.w[models[:, None], idx], values, dtype=F32)

    def sensitivity(self, models, idx, values, score, fake, eta: float) -> np.ndarray:
        """Prediction change per unit weight on a fake example (VW's stateless pass)."""
        x2 = np.maximum(values * values, X2_MIN)
        grad = F32(4) * (score - fake) ** 2  # per side and row: fake has shape (sides, 1)
        g = self.g[models[:, None], idx] + grad[..., None] * x2
        s = np.maximum(self.s[models[:, None], idx], np.abs(values))
        active = values != 0  # padding has value 0 (and normalizer 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            norm_x = np.where(active, x2 / (s * s), 0).sum(axis=-1, dtype=F32)
            rate = np.where(active, x2 / np.sqrt(g) / s, 0).sum(axis=-1, dtype=F32)
            multiplier = np.sqrt((F32(self.c[0]) + F32(1)) / (F32(self.c[1]) + norm_x))
            return F32(eta) * rate * multiplier

    def update(self, model: int, idx, x, y, weight, eta) -> None:
        """One invariant update of VW's ``gd`` (``compute_update`` and ``train``)."""
        self.c[2], self.c[3] = min(self.c[2], y), max(self.c[3], y)
        w, g, s = self.w[model], self.g[model], self.s[model]
        raw = np.dot(w[idx], x)  # float32 arrays: a float32 sum
        p = F32(min(max(raw, self.c[2]), self.c[3]))  # VW's finalize_prediction
        if (p - y) ** 2 <= 0 or weight <= 0:  # VW: no (weighted) loss, no update
            return
        x2 = np.maximum(x * x, X2_MIN)
        g[idx] += weight * F32(4) * (p - y) ** 2 * x2
        ax, old = np.abs(x), s[idx]
        grown = ax > old
        rescale = grown & (old > 0)  # a new scale: rescale the weight as if it were the old
        w[idx[rescale]] *= old[rescale] / ax[rescale]
        s[idx[grown]] = ax[grown]
        rate = F32(1) / np.sqrt(g[idx]) / s[idx]
        self.c[1] += float(weight) * float(np.sum(x2 / (s[idx] * s[idx]), dtype=F32))
        self.c[0] += float(weight)
        multiplier = F32(math.sqrt(F32(self.c[0]) / F32(self.c[1])))
        per_update = np.sum(x2 * rate, dtype=F32) * multiplier
        scale = F32(eta) * weight
        if scale * per_update < 1e-6:
            step = F32(2) * (y - p) * scale
        else:
            step = (y - p) * (F32(1) - F32(math.exp(-2.0 * scale * per_update))) / per_update
        w[idx] += step * multiplier * x * rate


def _flat_rows(phi, models):
    """Model, feature indices and float32 values per (context, action) row of sparse rows."""
    n, k, _ = phi.shape
    if isinstance(models, slice):
        models = np.arange(models.start, models.stop)
    idx = phi.index.reshape(n * k, -1)
    return np.tile(models, n), idx, phi.value.reshape(n * k, -1).astype(F32)


def vw_bisection(fhat: np.ndarray, delta: F32, sens: np.ndarray) -> np.ndarray:
    """VW's search for the largest weight w <= fhat/sens with
    ``w (fhat^2 - (fhat - sens w)^2) <= delta`` (20 halvings, tolerance 1e-6), per row."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        maxw = np.minimum(fhat / sens, F32(np.finfo(F32).max))
        done = maxw * fhat * fhat <= delta
        low, high = np.zeros_like(fhat), maxw.copy()
        square = fhat * fhat
        active = ~done
        for _ in range(20):
            w = (high + low) / F32(2)
            gap = fhat - sens * w
            v = w * (square - gap * gap) - delta
            up = v > 0
            np.copyto(high, w, where=active & up)
            np.copyto(low, w, where=active & ~up)
            active &= (np.abs(v) > TOLERANCE) & (high - low > TOLERANCE)
            if not active.any():
                break
    return np.where(done, maxw, low)
