"""Ridge regression in bounded memory: exact on a head of columns, diagonal beyond it."""

from __future__ import annotations

import numpy as np

from regcb_stream.bounds import clip_bounds, ellipsoid_bounds
from regcb_stream.features.rows import SparseRows
from regcb_stream.oracles.base import Capabilities, MemoryLimitError
from regcb_stream.oracles.forgetting import top_up
from regcb_stream.oracles.loop import DENSE, kernel_row, kernel_rows
from regcb_stream.oracles.ridge import RidgeOracle
from regcb_stream.oracles.ridge_base import RidgeBase, _ridge, refresh_interval
from regcb_stream.parameters import check_oracle_arguments
from regcb_stream.state import Stateful

HEAD = 64  # columns kept exact by default (docs/results/oracle_threshold.md)


class BoundedRidgeOracle(RidgeBase, Stateful):
    """Ridge regression per model with the Gram matrix ``A = l2 I + sum w x x^T`` kept
    exactly on its first ``head`` columns and as its diagonal ``P`` on the others: memory
    ``O(head^2 + D)`` per model and work ``O(head^2 + nonzeros)`` per label, however many
    features there are (VW's ``-b 18`` allows 262,144). The tail's diagonal and solution are
    stored as float32, as VW stores its weights (8 bytes per feature and model); the
    arithmetic is in double. Columns are numbered in order of
    appearance, so the head holds the intercept and the first features seen (in a stream,
    mostly the frequent ones).

    ``A`` is approximated by the block-diagonal ``A~`` of the head's block ``A_HH`` and
    ``P``. A tail column's prior precision is ``l2`` times the mean squared norm of the
    learned rows' tails (at least 1; ``tail_prior``): the prior is worth ``l2`` observations
    of a typical row's tail, not of each of its features, so that a row of many features
    seen once (hashed names) does not start with a width that spans the whole reward range
    for every action. Learning is recursive least squares with ``A~^-1``: a label moves ``theta`` by
    ``w (y - theta.x) A~^-1 x / (1 + w x.A~^-1 x)`` (the prediction moves toward the label,
    never past it), then ``A_HH^-1`` takes its Sherman-Morrison update and ``P`` its
    ``w x^2``. The bounds are ``theta.x +- sqrt(budget x.A~^-1 x)``.

    What is exact and what is approximated:

    - With at most ``head`` columns, this is exact ridge (``RidgeOracle``'s numbers, up to
      rounding).
    - Beyond the head, the float32 storage rounds each tail weight to 7 significant
      digits.
    - Beyond the head, correlations between two tail columns, and between the tail and the
      head, are dropped. Where tail features never share a row (one-hot contexts, hashed
      names that rarely co-occur) nothing is lost. Otherwise ``x.A~^-1 x`` is not a bound
      on ``x.A^-1 x`` in either direction: it overstates the width of directions the data
      covers together (two features that always co-occur: up to twice the width) and
      understates the width of contrasts between them; ``theta`` converges to the ridge
      solution more slowly than exact recursive least squares, as a preconditioned online
      gradient method does.

    ``RidgeOracle`` hands its statistics over (``RidgeOracle.bounded``) when its D x D
    matrices outgrow ``max_exact``.

    Parameters
    ----------
    l2, prior, reward_range, kernels
        As ``RidgeOracle``'s: the penalty (None: the learner's default), the prediction it
        shrinks toward (a number, ``"optimistic"`` or ``"midpoint"``: the top or the
        middle of the reward range; ``"auto"``: the learner's default), the reward range,
        and whether the compiled kernels run.
    head
        Columns kept exact (0: a diagonal ellipsoid).
    memory
        The most bytes the statistics may take (None: no limit); growing past it raises
        ``MemoryLimitError``.
    forget
        As ``RidgeOracle``'s: each label's weight decays by this factor per label learned
        after it. A forgetting step decays the head's Gram matrix and the tail's diagonal
        and keeps the solution, as recursive least squares with forgetting does (the exact
        ridge also moves it toward the prior by the penalty's regained share).

    Examples
    --------
    Two features that always appear together: the diagonal tail's width is wider than the
    exact head's (the tail's prior precision is l2 times its rows' mean squared norm, 2):

    >>> x = SparseRows(np.array([[[0, 1]]]), np.array([[[1.0, 1.0]]]), dim=2)
    >>> for head in (2, 0):
    ...     oracle = BoundedRidgeOracle(l2=1.0, head=head)
    ...     oracle.grow(n_models=1, dim=2)
    ...     for _ in range(9):
    ...         oracle.learn((np.array([0, 1]), np.array([1.0, 1.0])), 0, 1.0)
    ...     oracle.rebuild()
    ...     prediction, low, high = oracle.bounds(x, np.array([0]), budget=1.0)
    ...     print(head, prediction[0, 0].round(3), (high - low)[0, 0].round(3))
    2 0.947 0.649
    0 0.97 0.853
    """

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "l2": "l2",
        "prior": "prior",
        "forget": "forget",
        "reward_range": "reward_range",
        "kernels": "kernels",
        "penalty": "_l2",
        "prior_mean": "_prior",
        "clock": "_clock",
        "stamp": "_stamp",
        "head": "head",
        "memory": "memory",
        "dim": "_dim",
        "head_inverse": "_hinv",
        "head_gram": "_hgram",
        "head_theta": "_htheta",
        "tail_precision": "_prec",
        "theta": "_theta",
        "tail": "_tail",
        "updates": "_updates",
        "pending": "_pending",
    }

    def __init__(self, l2: float | None = 1.0, prior: float | str = 0.0, head: int = HEAD,
                 memory: int | None = None, forget: float = 1.0, *,
                 reward_range: tuple[float, float] = (0.0, 1.0), kernels: bool = True):
        check_oracle_arguments(BoundedRidgeOracle, self, locals())
        super().__init__(l2, prior, forget, reward_range, kernels)
        self.head = int(head)
        self.memory = memory
        self._dim = 0
        self._hinv = np.zeros((0, 0, 0))  # (models, h, h): the head's inverse, Gram and
        self._hgram = np.zeros((0, 0, 0))  # solution
        self._htheta = np.zeros((0, 0))
        self._prec = np.zeros((0, 0), np.float32)  # (models, capacity): the tail's sum w x^2
        self._theta = np.zeros((0, 0), np.float32)  # and solution
        self._tail = np.zeros(2)  # learned rows' sum of their tail's squared norms, and rows
        self._updates = np.zeros(0, np.int64)  # head updates since a fresh inverse
        self._pending: list[tuple] = []  # labels since the last rebuild, in order

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(rows="sparse", ellipsoid=True, online_loop=self.compiled,
                            widths=self.compiled, change_loop=self.compiled, ridge=True)

    @property
    def n_models(self) -> int:
        return self._theta.shape[0]

    @property
    def dim(self) -> int:
        return self._dim

    def describe(self) -> str:
        return (f"bounded ridge, {self.n_models} models of {self.dim} features, exact on "
                f"{self._hinv.shape[1]}, diagonal beyond" + self._forgets())

    @property
    def tail_prior(self) -> float:
        """The prior precision of a tail column: ``l2`` times the mean squared norm of the
        learned rows' tails (at least 1)."""
        sum_sq, rows = self._tail
        return self._l2 * max(1.0, sum_sq / rows if rows else 1.0)

    @property
    def refresh_every(self) -> int:
        """Head updates of a model between two fresh inverses of its head."""
        return refresh_interval(self._hinv.shape[1])

    @property
    def nbytes(self) -> int:
        """Memory of the statistics."""
        return sum(a.nbytes for a in (self._hinv, self._hgram, self._htheta, self._prec,
                                      self._theta))

    def widens(self, dim: int) -> bool:
        """Only while the head has room: the tail's columns are each their own."""
        return min(dim, self.head) > self._hinv.shape[1]

    def grow(self, n_models: int, dim: int, max_dim: int | None = None) -> None:
        """Add empty models and unseen features (the head takes them while it has room;
        the tail's arrays grow by a quarter more than needed, up to ``max_dim``)."""
        m0, h0 = self._hinv.shape[:2]
        m, self._dim = max(n_models, m0), max(dim, self._dim)
        h, cap = min(self._dim, self.head), self._theta.shape[1]
        if self._dim > cap:  # in pages of 1024 columns
            cap = -(-max(self._dim, cap + cap // 4) // 1024) * 1024
            cap = min(cap, max(self._dim, max_dim or cap))
        if self.memory is not None:
            need = m * (24 * h * h + 8 * self._dim)
            if need > self.memory:
                raise MemoryLimitError(
                    f"the bounded ridge oracle needs {need / 2**20:.1f} MB for {m} models of "
                    f"{self._dim} features, over its memory limit of "
                    f"{self.memory / 2**20:.1f} MB")
            cap = max(self._dim, min(cap, (self.memory // m - 24 * h * h) // 8))
        if (m, h, cap) == (m0, h0, self._theta.shape[1]):
            return
        eye = np.eye(h)
        self._hinv = _grown(self._hinv, (m, h, h), eye / self._l2)
        self._hgram = _grown(self._hgram, (m, h, h), eye * self._l2)
        self._htheta = _grown(self._htheta, (m, h), 0.0)
        self._prec = _grown(self._prec, (m, cap), 0.0)
        self._theta = _grown(self._theta, (m, cap), 0.0)
        self._updates = np.r_[self._updates, np.zeros(m - m0, np.int64)]

    def learn(self, x, model: int, y: float, weight: float = 1.0, at: int | None = None
              ) -> None:
        """Queue one example (a dense row or an ``(index, value)`` pair) for ``model``; the
        rebuild learns the queued labels in order. While forgetting, ``at`` is the clock of
        a label learned before, None a new one."""
        index, value = kernel_row(x)
        self._pending.append((model, index, value, float(self._stored(weight, at)),
                              y - self.prior_mean))
        self._tick(at)

    def rebuild(self) -> None:
        """Learn the queued labels, in order (then a forgetting step, if one is due)."""
        for model, index, value, weight, residual in self._pending:
            if self._learn_row(model, index, value, weight, residual):
                self._invert(model)
        self._pending.clear()
        if self._step_due():
            self._discount()

    def _discount(self, keep: float = 1.0) -> None:
        """A forgetting step (`Forgetting`): the head's Gram matrix and the tail's diagonal
        decayed (by the decay times ``keep``), the head's inverse afresh, the solution
        kept."""
        decay = self._decay() * keep
        top_up(self._hgram, decay, self._l2)
        self._prec *= np.float32(decay)
        for model in range(self.n_models):
            self._invert(model)

    def _invert(self, model: int) -> None:
        """A fresh inverse of a model's head, against rounding drift."""
        self._hinv[model] = np.linalg.inv(self._hgram[model])
        self._updates[model] = 0

    def _learn_row(self, model: int, index, value, weight: float, residual: float) -> bool:
        """One label (see the class docstring); whether the head is due a fresh inverse."""
        h, cap = self._hinv.shape[1], self._theta.shape[1]
        if self.compiled:
            return _ridge.bounded_learn(self._hinv, self._hgram, self._htheta, self._prec,
                                        self._theta, self._updates, self._tail, float(self._l2),
                                        model, index, value, len(value), h, cap, weight,
                                        residual, self.refresh_every)
        cols = index if index.size else np.arange(len(value))
        cols, value = cols[value != 0], value[value != 0]
        prec, theta = self._prec[model], self._theta[model]
        head, tail = cols < h, cols[cols >= h]
        x_head, x_tail = np.zeros(h), value[~head]
        x_head[cols[head]] = value[head]
        spread = self._hinv[model] @ x_head
        quad = x_head @ spread
        p_tail = prec[tail].astype(float) + self.tail_prior
        fit = x_head @ self._htheta[model] + x_tail @ theta[tail].astype(float)
        step = weight * (residual - fit) / (1.0 + weight * (quad + x_tail**2 @ (1.0 / p_tail)))
        theta[tail] = theta[tail] + step * x_tail / p_tail
        prec[tail] = prec[tail].astype(float) + weight * x_tail**2
        self._tail += [x_tail @ x_tail, 1.0]
        if not head.any():
            return False
        self._htheta[model] += step * spread
        self._hinv[model] -= np.multiply.outer(spread, weight / (1.0 + weight * quad) * spread)
        self._hgram[model] += weight * np.multiply.outer(x_head, x_head)
        self._updates[model] += 1
        return bool(self._updates[model] >= self.refresh_every)

    def moments(self, phi, models):
        """Prediction and ``x.A~^-1 x`` per (context, action): ``phi`` dense ``(n, K, D)``
        or ``SparseRows``, ``models`` ids ``(K,)`` or a slice."""
        index, value = kernel_rows(phi)
        models = self._model_ids(models)
        (n, r, width), k = value.shape, len(models)
        h, cap = self._hinv.shape[1], self._theta.shape[1]
        if self.compiled:
            pred, var = np.empty((n, k)), np.empty((n, k))
            _ridge.bounded_moments(self._hinv, self._hgram, self._htheta, self._prec,
                                   self._theta, self._updates, self._tail, float(self._l2),
                                   models, index, value, n, r, k, width, h, cap,
                                   self.prior_mean, pred, var)
            return pred, var
        dense = SparseRows(None if index is DENSE else index, value, cap).dense()
        dense = np.broadcast_to(dense, (n, k, cap))
        theta = np.hstack([self._htheta, self._theta[:, h:].astype(float)])[models]
        pred = np.einsum("nkd,kd->nk", dense, theta) + self.prior_mean
        tail = np.einsum("nkd,kd->nk", dense[..., h:] ** 2,
                         1.0 / (self._prec[models, h:].astype(float) + self.tail_prior))
        head = np.einsum("nkd,kde,nke->nk", dense[..., :h], self._hinv[models], dense[..., :h])
        return pred, np.maximum(head, 0.0) + tail

    def _loop(self, index, value, models, played, rewards, weights, budgets, rule,
              reward_range, tolerance, out, change=None):
        """The online loop over the rows, up to their end or (``change``: the compiled
        loop runs the learner's change test) a label the test alarms at: the outputs of
        the rows done."""
        n = len(value)
        run = self._run_compiled if self.compiled else self._run_reference
        scaled = weights.copy() if self.forget < 1.0 else weights
        start = 0
        while start < n:
            stop = n if scaled is weights else self._until_step(played, weights, scaled, start)
            rows = slice(0, stop)  # (the kernel takes whole arrays: views of rows ..stop)
            start, learned, alarm = run(index[rows] if index.size else index, value[rows],
                                        models, played[rows], rewards[rows], scaled[rows],
                                        budgets, rule, reward_range, tolerance,
                                        out[:, rows], start, change)
            budgets = budgets[learned:]
            if scaled is not weights:
                self._clock += learned
                if self._step_due():
                    self._discount()
            if alarm:
                return tuple(out[:, :start])  # (the caller forgets before the rows after)
        return tuple(out)

    def _run_compiled(self, index, value, models, played, rewards, weights, budgets,
                      rule, reward_range, tolerance, out, start, change=None):
        """The compiled loop from example ``start`` to the end, a stale head or a change
        the test detects; returns where it stopped, the labels it learned and whether the
        test alarmed."""
        (n, r, width), k = value.shape, len(models)
        watch = None if change is None else change.loop_spec()
        stop, learned, stale, alarm = _ridge.bounded_run(
            self._hinv, self._hgram, self._htheta, self._prec, self._theta, self._updates,
            self._tail, float(self._l2), models, index, value, played, rewards, weights,
            budgets, *out[:4], start, n, r, k, width,
            self._hinv.shape[1], self._theta.shape[1], rule.code, self.refresh_every,
            self.prior_mean, *reward_range, tolerance, out[4] if len(out) > 4 else None,
            watch)
        if change is not None:
            change.loop_done(watch, alarm)
        if stale >= 0:
            self._invert(stale)
        return stop, learned, alarm

    def _run_reference(self, index, value, models, played, rewards, weights, budgets,
                       rule, reward_range, tolerance, out, start, change=None):
        """``_run_compiled`` one example at a time in numpy, to the end (no change test:
        the reference does not claim ``change_loop``)."""
        learned, k = 0, len(models)
        for i in range(start, len(value)):
            row = SparseRows(None if index is DENSE else index[i : i + 1], value[i : i + 1],
                             self.dim)
            pred, var = self.moments(row, models)
            out[1, i], budget = pred[0], budgets[learned]
            if np.isnan(budget):
                out[0, i], out[2, i], out[3, i] = 1.0 / k, reward_range[0], reward_range[1]
            else:
                low, high = clip_bounds(*ellipsoid_bounds(pred, var, budget), reward_range)
                out[0, i] = rule(low, high, tolerance, pred, reward_range)[0]
                out[2, i], out[3, i] = low[0], high[0]
            if played[i] >= 0:
                j = 0 if value.shape[1] == 1 else played[i]
                model = int(models[played[i]])
                if self._learn_row(model, DENSE if index is DENSE else index[i, j],
                                   value[i, j], weights[i], rewards[i] - self.prior_mean):
                    self._invert(model)
                learned += 1
        return len(value), learned, False

    @classmethod
    def from_ridge(cls, ridge: RidgeOracle, n_models: int) -> BoundedRidgeOracle:
        """Carry on from an exact ``RidgeOracle`` that outgrows its ``max_exact`` (its
        labels all learned first), for ``n_models`` models: its current solution, the
        diagonal of its Gram matrices, and their first columns exactly (``HEAD``, or fewer
        where ``max_exact`` says so)."""
        head = min(HEAD, int((ridge.max_exact / max(n_models, 1)) ** 0.5))
        oracle = cls(ridge.penalty, ridge.prior, head=head, memory=ridge.memory,
                     forget=ridge.forget, reward_range=ridge.reward_range,
                     kernels=ridge.kernels)
        oracle.start_from(*ridge.exact_statistics(), clock=ridge.clock)
        return oracle

    def start_from(self, a: np.ndarray, b: np.ndarray, clock: int = 0) -> None:
        """Take exact ridge statistics ``A`` ``(models, D, D)`` and ``b`` ``(models, D)``
        (``b = sum w (y - prior) x``; ``clock``: the labels learned while forgetting): the
        solution, the diagonal of ``A`` beyond the head, and ``A`` on the head."""
        self._clock = self._stamp = clock
        self.grow(*b.shape)
        d, h = b.shape[1], self._hinv.shape[1]
        theta = np.linalg.solve(a, b[..., None])[..., 0]
        self._htheta[:] = theta[:, :h]
        self._prec[:, h:d] = np.diagonal(a, axis1=1, axis2=2)[:, h:] - self._l2
        self._theta[:, h:d] = theta[:, h:]
        self._hgram[:] = a[:, :h, :h]
        self._hinv[:] = np.linalg.inv(self._hgram)


def _grown(array: np.ndarray, shape: tuple[int, ...], fill) -> np.ndarray:
    """``array`` enlarged to ``shape``; new models and features start from ``fill``."""
    out = np.empty(shape, array.dtype)
    out[...] = fill
    out[tuple(slice(0, n) for n in array.shape)] = array
    return out
