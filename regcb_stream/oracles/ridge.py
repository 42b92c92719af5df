"""Exact ridge regression (recursive least squares) with closed-form version-space bounds."""

from __future__ import annotations

import numpy as np

from regcb_stream.oracles.base import Ellipsoid, SparseRows, learn_row_by_row
from regcb_stream.oracles.forgetting import Forgetting, check_forget, top_up

try:
    from regcb_stream.oracles import _ridge
except ImportError:  # not built (a source tree without `pip install`): the numpy reference
    _ridge = None

ONE_THREAD_FROM = 128  # dimension from which an inverse is limited to one BLAS thread


def refresh_interval(dim: int) -> int:
    """Rank-one updates of an inverse of ``dim`` columns between two fresh inverses: a
    fresh O(D^3) inverse then costs about a tenth of the O(D^2) updates before it. Rounding
    drift is far below what that guards against: on hashed 0/1 rows with importance weights
    up to 20 the updated inverse is within 1e-12 (relative) of a fresh one after 20,000
    updates (D = 16 to 100)."""
    return max(256, 4 * dim)
MAX_EXACT = 2**19  # models x D^2 kept exact by default (docs/oracle_threshold.md)


class OnlineLoop:
    """The entry points of a compiled online loop, shared by the oracles that have one
    (ridge, bounded ridge, VW's regressor): each implements ``_loop`` over its kernels, on
    rows as ``_rows`` gives them, filling ``out`` (pmf, prediction, low, high)."""

    def decisions(self, phi, models, budget: float, optimistic: bool,
                  reward_range: tuple[float, float], tolerance: float):
        """The decision rule's distributions (elimination, or ``optimistic``), predictions
        and clipped bounds of a block of rows under the frozen fit, ``(n, K)`` each, in
        the compiled loop (``budget`` NaN: uniform play)."""
        n = len(phi.value if isinstance(phi, SparseRows) else phi)
        played, unused = (_NO_LABEL, _UNUSED) if n == 1 else (np.full(n, -1, np.int64),
                                                                np.zeros(n))
        return self._run(phi, models, played, unused, unused, np.array([budget]), optimistic,
                         reward_range, tolerance)  # (no labels: rewards, weights unread)

    def replay_online(self, phi, models, played, rewards, weights, budgets, optimistic: bool,
                      reward_range: tuple[float, float], tolerance: float, **options):
        """Decide and learn a block of logged examples in order, rebuilding after every
        label (the ``online`` schedule), in the compiled loop.

        ``played[i]``: the column learned after example ``i``'s decision (-1: none),
        ``budgets[j]``: the budget after ``j`` more labels (NaN: uniform play); ``options``:
        the oracle's own (``_loop``'s). Returns the distributions, predictions and clipped
        bounds, ``(n, K)`` each."""
        self.rebuild()  # nothing may be pending when the loop starts
        return self._run(phi, models, np.ascontiguousarray(played, dtype=np.int64),
                         np.ascontiguousarray(rewards, dtype=float),
                         np.ascontiguousarray(weights, dtype=float),
                         np.ascontiguousarray(budgets, dtype=float), optimistic,
                         reward_range, tolerance, **options)

    def _run(self, phi, models, played, rewards, weights, budgets, optimistic, reward_range,
             tolerance, **options):
        index, value = _rows(phi)
        models = self._model_ids(models)
        out = np.empty((4, len(value), len(models)))
        return self._loop(index, value, models, played, rewards, weights, budgets, optimistic,
                          reward_range, tolerance, out, **options)

    def _model_ids(self, models) -> np.ndarray:
        """Model ids as a contiguous int64 array (from an array or a slice)."""
        if isinstance(models, slice):
            return np.arange(self.n_models, dtype=np.int64)[models]
        return np.ascontiguousarray(models, dtype=np.int64)


class RidgeOracle(Forgetting, OnlineLoop, Ellipsoid):
    """Ridge regression per model, with the version space as an ellipsoid.

    The regularized squared loss of ``theta`` exceeds its minimum by exactly
    ``(theta - theta_hat)^T A (theta - theta_hat)`` with ``A = l2 I + sum w x x^T``, so
    the extreme predictions over the version space are ``theta_hat^T x +- sqrt(budget
    x^T A^-1 x)``, in closed form. The penalty shrinks every prediction toward ``prior``
    (ridge on ``y - prior``). Learning adds to the sufficient statistics ``A`` and
    ``b = sum w (y - prior) x``. A rebuild brings the inverse of ``A`` up to date for the
    models that learned since the last one: by Sherman-Morrison rank-one updates when few
    labels are pending (O(D^2) each, so rebuilding after every label is cheap), by a fresh
    inverse when many are (and every `refresh_interval` rank-one updates, against rounding
    drift). Rows are sparse (``SparseRows``; a dense row is the case of every column): a
    row's moments cost O(nonzeros^2), its learning O(nonzeros^2) and its rank-one update
    O(D^2), in the compiled kernels of ``regcb_stream/oracles/_ridge.c`` (``compiled``); the numpy
    code beside them is their reference.

    Parameters
    ----------
    l2
        Ridge penalty (the paper uses scikit-learn's ``Ridge(alpha=1)``): with ``prior``,
        how many observations the prior is worth.
    prior
        The prediction the penalty shrinks toward, which is also the prediction for an
        action never played: a number, ``"optimistic"`` for the top of the learner's
        reward range (optimistic initialization, what VW does with costs in [0, 1]: it
        starts every prediction at cost 0), ``"midpoint"`` for its middle, or ``"auto"``
        (`RegCB`'s default oracle): optimistic, unless the learner finds at its first
        decision that the actions' feature rows share every feature, then midpoint with
        ``l2`` at least 3. 0 by default, the paper's oracle.
    max_exact
        The largest ``n_models * D^2`` kept exact: memory and the work of a label grow
        with it. Past it (``fits``), the learner hands the statistics over to a
        ``BoundedRidgeOracle`` (``bounded``): exact on its head of columns, diagonal
        beyond them.
    memory
        The most bytes the statistics may take (None: no limit): exact ridge while its
        ``16 n_models D^2`` bytes fit, then the bounded oracle's.
    forget
        The factor ``gamma`` in (0, 1] by which every label's weight decays per label
        learned after it, by any model (1: never; `discount_every` says how often the
        decay is applied). For streams whose rewards drift: the fit is the discounted
        ridge of D-LinUCB (Russac, Vernade and Cappe, "Weighted linear bandits for
        non-stationary environments", NeurIPS 2019), ``A = l2 I + sum gamma^age w x x^T``,
        so it follows a change within about ``1 / (1 - gamma)`` labels, and an action
        left unplayed regains its width as its labels age. Labels are learned in order
        (the ``online`` schedule, no pieces).

    Examples
    --------
    >>> oracle = RidgeOracle(l2=1.0)
    >>> oracle.grow(n_models=1, dim=2)
    >>> for x, y in [([1.0, 0.0], 1.0), ([1.0, 1.0], 0.0)] * 5:
    ...     oracle.learn(np.array(x), 0, y)
    >>> oracle.rebuild()
    >>> phi = np.array([[[1.0, 0.0]]])
    >>> oracle.predict(phi, np.array([0])).round(3)
    array([[0.732]])
    >>> _, low, high = oracle.bounds(phi, np.array([0]), budget=1.0)
    >>> float(low[0, 0].round(3)), float(high[0, 0].round(3))
    (0.349, 1.114)

    An optimistic prior predicts the top of the reward range until data says otherwise:

    >>> optimist = RidgeOracle(l2=10.0, prior="optimistic")
    >>> optimist.grow(n_models=2, dim=2)
    >>> for _ in range(10):
    ...     optimist.learn(np.array([1.0, 0.0]), 0, 0.0)
    >>> optimist.rebuild()
    >>> optimist.predict(phi, np.array([0, 1])).round(3)
    array([[0.5, 1. ]])

    """

    reward_range: tuple[float, float] = (0.0, 1.0)  # replaced by the learner's
    sparse_rows = True  # ``predict`` and ``bounds`` also take ``SparseRows``
    compiled = _ridge is not None  # False: the numpy reference (tests compare the two)
    piecewise = False  # True: labels are summed per piece, added at its end (`close_piece`)
    _piece: tuple | None = None  # the open piece: (A sums, b sums, models touched)

    def __init__(self, l2: float = 1.0, prior: float | str = 0.0, max_exact: int = MAX_EXACT,
                 memory: int | None = None, forget: float = 1.0):
        check_penalty(l2, prior)
        check_forget(forget)
        self.l2 = l2
        self.prior = prior
        self.max_exact = max_exact
        self.memory = memory
        self.forget = forget
        self._a = np.zeros((0, 0, 0))  # l2 I + sum w x x^T
        self._b = np.zeros((0, 0))  # sum w (y - prior) x
        self._a_inv = np.zeros((0, 0, 0))  # frozen decision state
        self._theta = np.zeros((0, 0))
        self._pending: dict[int, list | None] = {}  # model -> rank-one updates, None: many
        self._updates = np.zeros(0, dtype=np.int64)  # rank-one updates since a fresh inverse
        self._blocks: _Blocks | None = None  # one model over arrowhead rows: its blocks
        self._tried_blocks = False

    @property
    def n_models(self) -> int:
        return self._b.shape[0]

    @property
    def dim(self) -> int:
        return self._b.shape[1]

    def grow(self, n_models: int, dim: int) -> None:
        """Add empty models and unseen features (their data so far counts as zeros)."""
        m0, d0 = self._b.shape
        m, d = max(n_models, m0), max(dim, d0)
        if (m, d) == (m0, d0):
            return
        eye = np.eye(d)
        self._a = _pad(self._a, (m, d, d), self.l2 * eye)
        self._a_inv = _pad(self._a_inv, (m, d, d), eye / self.l2)
        self._b = _pad(self._b, (m, d), 0.0)
        self._theta = _pad(self._theta, (m, d), 0.0)
        self._updates = np.r_[self._updates, np.zeros(m - m0, dtype=np.int64)]
        if self._piece is not None:
            a, b, touched = self._piece
            self._piece = (_pad(a, (m, d, d), 0.0), _pad(b, (m, d), 0.0), touched)
        if self._blocks is not None and m == 1:  # pending rows stay valid (sparse)
            self._blocks.grow(d)
            return
        if self._blocks is not None:  # a second model: no more blocks
            self._blocks = None
            self._invert(0)
        for model in self._pending:
            self._pending[model] = None

    def fits(self, n_models: int, dim: int) -> bool:
        """Whether ``n_models`` exact models of ``dim`` features stay within ``max_exact``
        and ``memory``."""
        size = max(n_models, self.n_models) * max(dim, self.dim) ** 2
        return size <= self.max_exact and (self.memory is None or 16 * size <= self.memory)

    def bounded(self, n_models: int):
        """A ``BoundedRidgeOracle`` carrying on from this one's statistics, for
        ``n_models`` models (its default head, or less where ``max_exact`` says so)."""
        from regcb_stream.oracles.bounded import HEAD, BoundedRidgeOracle

        head = min(HEAD, int((self.max_exact / max(n_models, 1)) ** 0.5))
        return BoundedRidgeOracle.from_ridge(self, head)

    def describe(self) -> str:
        return f"exact ridge, {self.n_models} models of {self.dim} features" + self._forgets()

    @property
    def prior_mean(self) -> float:
        """The prediction the penalty shrinks toward (``prior`` resolved)."""
        return resolve_prior(self.prior, self.reward_range)

    @property
    def refresh_every(self) -> int:
        """Rank-one updates of a model's inverse between two fresh inverses."""
        return refresh_interval(self.dim)

    def _discount(self, keep: float = 1.0) -> None:
        """A forgetting step (`Forgetting`): ``A = l2 I + c (A - l2 I)`` and ``b = c b``,
        every model to be inverted afresh (``c``: the decay, times ``keep``)."""
        decay = self._decay() * keep
        top_up(self._a, decay, self.l2)
        self._b *= decay
        self._pending.update(dict.fromkeys(range(self.n_models)))

    def learn(self, x, model: int, y: float, weight: float = 1.0, at: int | None = None
              ) -> None:
        """Add one example to the sufficient statistics of ``model``: ``x`` a dense row
        ``(D,)`` or an ``(index, value)`` pair of 1-D arrays. While forgetting, ``at`` is
        the clock of a label learned before (its weight aged since), None a new one."""
        index, value = _sparse_row(x, self.dim)
        residual = y - self.prior_mean
        weight = self._stored(weight, at)
        self._tick(at)
        if self.piecewise:
            return self._learn_into(*self._open_piece(model), model, index, value, weight,
                                    residual)
        if self._blocks is not None:
            columns = index if index.size else np.arange(self.dim)
            if not self._blocks.fits(columns, value):
                self._fit_blocks(columns[None, None], value[None, None])
        self._learn_into(self._a, self._b, model, index, value, weight, residual)
        pending = self._pending.setdefault(model, [])
        if pending is not None:  # (the blocks need them to restore the frozen statistics)
            if 4 * (len(pending) + 1) <= self.dim or self._blocks is not None:
                pending.append((index, value, weight, residual))
            else:  # the rebuild will invert afresh
                self._pending[model] = None

    def learn_many(self, x, models, y, weight) -> None:
        """``learn`` row by row; a piece's rows (``SparseRows``) in one compiled call."""
        if not (self.piecewise and self.compiled and isinstance(x, SparseRows)) or not len(y):
            return learn_row_by_row(self, x, models, y, weight)
        models = np.ascontiguousarray(models, dtype=np.int64)
        for model in _distinct(models).tolist():
            self._open_piece(model)
        piece_a, piece_b, _ = self._piece
        n, _, width = x.value.shape
        index = _DENSE if x.index is None else np.ascontiguousarray(x.index, np.int64)
        residuals = np.asarray(y, dtype=float) - self.prior_mean
        _ridge.learn_rows(piece_a, piece_b, models, index, np.ascontiguousarray(x.value, float),
                          n, width, self.dim, np.ascontiguousarray(weight, dtype=float),
                          residuals)

    def _learn_into(self, a, b, model: int, index, value, weight: float, residual: float
                    ) -> None:
        """Add one row to statistics ``a`` and ``b`` (the model's, or a piece's)."""
        if self.compiled:
            _ridge.learn(a, b, model, index, value, len(value), self.dim, weight, residual)
        elif index.size:  # add.at: padding repeats column 0
            np.add.at(a[model], (index[:, None], index), weight * np.outer(value, value))
            np.add.at(b[model], index, weight * residual * value)
        else:
            a[model] += weight * np.outer(value, value)
            b[model] += weight * residual * value

    # -- pieces: the epoch schedules' additive statistics (`regcb_stream.stream.parallel`) -----

    def _open_piece(self, model: int) -> tuple[np.ndarray, np.ndarray]:
        if self.forget < 1.0:
            raise ValueError("an oracle that forgets learns its labels in order: the "
                             "online schedule, without pieces")
        if self._piece is None:
            self._piece = (np.zeros_like(self._a), np.zeros_like(self._b), set())
        self._piece[2].add(model)
        return self._piece[0], self._piece[1]

    def take_piece(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The open piece's statistics ``(models, A sums, b sums)``, each sum over the
        piece's rows in order from zero, and a new piece begun (``piecewise`` learning)."""
        if self._piece is None:
            return np.zeros(0, np.intp), np.zeros((0,) + self._a.shape[1:]), np.zeros(
                (0, self.dim))
        a, b, touched = self._piece
        self._piece = None
        models = np.array(sorted(touched), dtype=np.intp)
        return models, a[models], b[models]

    def add_piece(self, models: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Add a piece's statistics (`take_piece`, here or in another process) to the
        models': the next rebuild inverts them afresh."""
        if a.shape[1:] != self._a.shape[1:]:
            raise ValueError(f"a piece over {a.shape[-1]} features does not fit models of "
                             f"{self.dim}")
        for i, model in enumerate(models.tolist()):
            self._a[model] += a[i]
            self._b[model] += b[i]
            self._pending[model] = None

    def open_piece(self, models: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Make a piece's statistics (`take_piece`) the open piece, to learn on."""
        self._piece = None
        for i, model in enumerate(models.tolist()):
            piece_a, piece_b = self._open_piece(model)
            piece_a[model], piece_b[model] = a[i], b[i]

    def close_piece(self) -> None:
        """Add the open piece to the models' statistics."""
        self.add_piece(*self.take_piece())

    def relabel(self, x, model: int, shift: float, at: int | None = None) -> None:
        """Change the label of a row learned before (at clock ``at`` while forgetting) by
        ``shift`` (``b += shift x``, ``A`` unchanged): the solution moves by ``shift A^-1
        x`` at once, exactly, when the model's inverse is up to date, else at the next
        rebuild (a fresh inverse)."""
        index, value = _sparse_row(x, self.dim)
        shift = self._stored(shift, self._clock - 1 if at is None else at)
        if index.size:
            np.add.at(self._b[model], index, shift * value)
        else:
            self._b[model] += shift * value
        if model in self._pending or self._blocks is not None:
            self._pending[model] = None
        elif index.size:
            self._theta[model] += shift * (value @ self._a_inv[model][index])
        else:
            self._theta[model] += shift * (self._a_inv[model] @ value)

    def rebuild(self) -> None:
        """Solve the ridge problems of the models that learned since the last rebuild:
        by Sherman-Morrison rank-one updates of the inverse and of the solution when few
        labels are pending, by a fresh inverse when many are (and every `refresh_interval`
        rank-one updates, against rounding drift); while forgetting, every model afresh
        after a forgetting step (`discount_every`)."""
        if self._step_due():
            self._discount()
        for model, pending in sorted(self._pending.items()):
            if pending is None or self._updates[model] >= self.refresh_every or (
                    self._blocks is not None and len(pending) > 1):
                self._invert(model)
                continue
            for index, value, weight, residual in pending:
                self._rank_one(model, index, value, weight, residual)
            self._updates[model] += len(pending)
        self._pending.clear()

    def _invert(self, model: int) -> None:
        """A fresh inverse and solution of one model (on one thread: BLAS threads make a
        large inverse several times slower on a small machine, and cost ~1 ms to limit),
        or of its blocks."""
        if self._blocks is not None:
            self._blocks.build(self._a[0], self._b[0])
            self._updates[model] = 0
        elif self.dim >= ONE_THREAD_FROM:
            from threadpoolctl import threadpool_limits  # here: ~2 ms of the command's start

            with threadpool_limits(1, "blas"):
                self._a_inv[model] = np.linalg.inv(self._a[model])
        else:
            self._a_inv[model] = np.linalg.inv(self._a[model])
        self._theta[model] = self._a_inv[model] @ self._b[model]
        self._updates[model] = 0

    def _rank_one(self, model: int, index, value, weight: float, residual: float) -> None:
        """Sherman-Morrison update of one model's inverse and solution by one row."""
        if self._blocks is not None:  # the row is in the Gram matrix already
            return _ridge.block_update(self._a[0], self._b[0], self._blocks.arrays, index,
                                       value, len(value), self.dim, weight, residual)
        if self.compiled:
            return _ridge.rank_one(self._a_inv, self._theta, model, index, value, len(value),
                                   self.dim, weight, residual)
        a_inv, theta = self._a_inv[model], self._theta[model]
        spread = value @ _at(a_inv, index)
        gain = weight / (1.0 + weight * float(value @ _at(spread, index)))
        theta += (gain * (residual - float(value @ _at(theta, index)))) * spread
        a_inv -= np.multiply.outer(spread, gain * spread)

    def moments(self, phi, models):
        """Prediction and ``phi^T A^-1 phi`` per (context, action) of the frozen fit:
        ``phi`` dense ``(n, K, D)`` or ``SparseRows``, ``models`` ids ``(K,)`` or a slice."""
        index, value = _rows(phi)
        models = self._model_ids(models)
        (n, r, width), k = value.shape, len(models)
        if self.compiled:
            pred, var = np.empty((n, k)), np.empty((n, k))
            self._block_arrays(index, value)
            while not _ridge.moments(self._a_inv, self._theta, models, index, value, n, r, k,
                                     width, self.dim, self.prior_mean, pred, var,
                                     self._blocks and self._blocks.arrays):
                self._fit_blocks(index, value)
            return pred, var
        dense = value
        if index.size:
            dense = np.zeros((n, r, self.dim))
            np.add.at(dense, (np.arange(n)[:, None, None], np.arange(r)[:, None], index), value)
        dense = np.broadcast_to(dense, (n, k, self.dim))
        pred = np.einsum("nkd,kd->nk", dense, self._theta[models]) + self.prior_mean
        var = np.einsum("nkd,kde,nke->nk", dense, self._a_inv[models], dense)
        return pred, np.maximum(var, 0.0)

    def _block_arrays(self, index: np.ndarray, value: np.ndarray) -> None:
        """Keep one model's inverse in blocks when its rows ``(n, K, L)`` have the
        arrowhead structure (see ``_Blocks``): the first joint rows decide it. The kernels
        say when a later row does not fit (``_fit_blocks``)."""
        if (self._blocks is None and self.compiled and self.n_models == 1 and index.size
                and not self.piecewise and not self._pending and self.dim > 16
                and not self._tried_blocks):
            self._tried_blocks = True
            self._blocks = _Blocks(self.dim)
            self._fit_blocks(index, value)

    def _fit_blocks(self, index: np.ndarray, value: np.ndarray) -> None:
        """Take in the columns of joint rows; rebuild the blocks of the frozen fit, or fall
        back to the dense inverse for good if they no longer pay."""
        self._blocks.take(index, value)
        a, b = self._a[0], self._b[0]
        pending = self._pending.get(0) or []
        if pending:  # the statistics of the frozen fit: without the labels of this epoch
            a, b = a.copy(), b.copy()
            for cols, vals, weight, residual in pending:
                cols = cols if cols.size else np.arange(len(vals))
                np.add.at(a, (cols[:, None], cols), -weight * np.outer(vals, vals))
                np.add.at(b, cols, -weight * residual * vals)
        if self._blocks.worth_it() and self._blocks.holds(a, b):
            self._blocks.build(a, b)
        else:
            self._blocks = None
            self._a_inv[0] = np.linalg.inv(a)
            self._theta[0] = self._a_inv[0] @ b
            if pending:
                self._pending[0] = None
        self._updates[0] = 0

    def predict_dense(self, context: np.ndarray, models: np.ndarray, intercept: float,
                      budget: float, optimistic: bool, reward_range: tuple[float, float],
                      tolerance: float, uniform: float, out: np.ndarray | None = None
                      ) -> tuple[int, float] | None:
        """One decision for a dense context (the product class's rows: the intercept, then
        the context) under the frozen fit, and its draw by ``uniform``, in one compiled
        call: ``(index, probability)``, or None if a value is not finite; with ``out``
        ``(4, K)``, the distribution, predictions and clipped bounds written into it."""
        extra = () if out is None else (out,)
        return _ridge.predict_dense(self._a_inv, self._theta, models, context, intercept,
                                    self.dim, self.prior_mean, budget, optimistic,
                                    *reward_range, tolerance, uniform, *extra)

    def predict_auto(self, context: np.ndarray, models: np.ndarray, intercept: float,
                     sqrt_grid: np.ndarray, scale: float, weights: np.ndarray,
                     optimistic: bool, reward_range: tuple[float, float], tolerance: float,
                     uniform: float, pmfs: np.ndarray) -> tuple[int, float, tuple] | None:
        """``predict_dense`` with the automatic budget's candidates (radii ``sqrt_grid *
        scale``, mixed by ``weights``: `regcb_stream.explore.budget`): ``(index, probability, each
        candidate's probability of it)``, every candidate's distribution into ``pmfs`` (J,
        K), or None if a value is not finite."""
        return _ridge.predict_auto(self._a_inv, self._theta, models, context, intercept,
                                   self.dim, self.prior_mean, sqrt_grid, scale, weights,
                                   optimistic, *reward_range, tolerance, uniform, pmfs)

    def replay_auto(self, phi, models, played, rewards, weights, probs, scales, selector,
                    optimistic: bool, reward_range: tuple[float, float], tolerance: float):
        """``replay_online`` with the automatic budget's ``selector`` (`budget.BudgetSelector`):
        ``scales[j]`` the candidates' radius scale after ``j`` more labels (NaN: uniform play),
        each label scoring the candidates with its logged probability ``probs[i]``."""
        return self.replay_online(phi, models, played, rewards, weights, scales, optimistic,
                                  reward_range, tolerance,
                                  scoring=(selector, np.ascontiguousarray(probs, dtype=float)))

    def learn_dense(self, context: np.ndarray, intercept: float, model: int, y: float,
                    weight: float) -> float | None:
        """``learn`` then ``rebuild`` of a dense context's row in one compiled call (nothing
        may be pending): the fit's prediction of the row before the label (``moments``'s,
        bit for bit), or None if a value is not finite (nothing learned)."""
        prior = self.prior_mean
        learned = _ridge.learn_dense(self._a, self._b, self._a_inv, self._theta, self._updates,
                                     model, context, intercept, self.dim,
                                     self._stored(weight, None), y - prior,
                                     self.refresh_every)
        if learned is None:
            return None
        stale, fit = learned
        self._tick(None)
        if self._step_due():
            self.rebuild()
        elif stale:
            self._invert(model)
        return fit + prior

    def _loop(self, index, value, models, played, rewards, weights, budgets, optimistic,
              reward_range, tolerance, out, scoring=None):
        (n, r, width), k = value.shape, len(models)
        self._block_arrays(index, value)
        scaled = weights.copy() if self.forget < 1.0 else weights
        start = 0
        while start < n:
            stop = n if scaled is weights else self._until_step(played, weights, scaled, start)
            rows = slice(0, stop)  # (the kernel takes whole arrays: views of rows ..stop)
            blocks = self._blocks and self._blocks.arrays  # new ones after each refresh
            spec = None if scoring is None else scoring[0].loop_spec(budgets,
                                                                     scoring[1][rows])
            start, learned, stale = _ridge.run_online(
                self._a, self._b, self._a_inv, self._theta, self._updates, models,
                index[rows] if index.size else index, value[rows], played[rows],
                rewards[rows], scaled[rows], budgets, *out[:, rows],
                start, stop, r, k, width, self.dim, optimistic, self.refresh_every,
                self.prior_mean, *reward_range, tolerance, blocks, spec)
            if scoring is not None:
                scoring[0].loop_done(learned)
            budgets = budgets[learned:]
            if stale >= 0:
                self._invert(stale)
            elif stale == -2:  # a row outside the blocks
                self._fit_blocks(index[start:], value[start:])
            if scaled is not weights:
                self._clock += learned
                self.rebuild()  # (a forgetting step when one is due)
        return tuple(out)


class _Blocks:
    """The joint model's columns split into shared ones and groups, such that every row
    touches the shared columns and at most one group, and its inverse kept in blocks
    (``_ridge.c`` has the algebra): VW's ``-q`` crosses of a shared line with action lines
    give this structure (each action's features and crosses are a group), and a label then
    costs O(s^2 + b^2 + s b) for s shared columns and groups of b, instead of O(D^2).

    A column becomes shared once it appears in two rows of one example; the other columns
    of a row are put in one group (merging groups when a row joins them)."""

    def __init__(self, dim: int):
        self.kind = np.full(dim, -2, np.int64)  # -2 unseen, -1 shared, >= 0 its group
        self.arrays: tuple = ()

    def grow(self, dim: int) -> _Blocks:
        """Unseen columns added (to the built blocks too: a row with one is refitted)."""
        extra = dim - len(self.kind)
        self.kind = np.r_[self.kind, np.full(extra, -2, np.int64)]
        if self.arrays:
            kind, pos, *rest = self.arrays
            self.arrays = (np.r_[kind, np.full(extra, -2, np.int64)],
                           np.r_[pos, np.zeros(extra, np.int64)], *rest)
        return self

    def take(self, index: np.ndarray, value: np.ndarray) -> bool:
        """Take in the columns of rows ``(n, K, L)``; whether the partition changed."""
        kind, changed = self.kind, False
        present = value != 0
        cols = index[present]
        examples = np.broadcast_to(np.arange(len(index))[:, None, None], index.shape)[present]
        keys, counts = np.unique(examples * len(kind) + cols, return_counts=True)
        shared = _distinct(keys[counts > 1] % len(kind))
        shared = shared[kind[shared] != -1]
        if shared.size:
            kind[shared], changed = -1, True
        groups = np.where(present, kind[index], -1)
        own = groups != -1
        low = np.where(own, groups, np.iinfo(np.int64).max).min(axis=2)
        high = np.where(own, groups, -3).max(axis=2)
        misfits = own.any(axis=2) & ((low != high) | (low < 0))
        if not misfits.any():
            return changed
        labels = kind.tolist()
        fresh = max(labels) + 1
        for row in _distinct(np.where(present, index, -1)[misfits], axis=0).tolist():
            columns = [c for c in row if c >= 0 and labels[c] != -1]
            ids = {labels[c] for c in columns} - {-2}
            if len(ids) == 1 and -2 not in {labels[c] for c in columns}:
                continue  # fitted by an earlier row
            target = min(ids) if ids else fresh
            fresh += not ids
            if len(ids) > 1:  # the row joins groups
                labels = [target if label in ids else label for label in labels]
            for c in columns:
                labels[c] = target
        kind[:] = labels
        return True

    def fits(self, index: np.ndarray, value: np.ndarray) -> bool:
        """Whether one row touches the shared columns and at most one group."""
        kinds = set(self.kind[index[value != 0]].tolist()) - {-1}
        return len(kinds) == 0 or (len(kinds) == 1 and kinds.pop() >= 0)

    def worth_it(self) -> bool:
        """Whether the blocks are much smaller than the dense inverse."""
        s = int((self.kind == -1).sum())
        sizes = np.bincount(self.kind[self.kind >= 0])
        return int((sizes**2).sum()) + s * s + s * int(sizes.sum()) <= len(self.kind) ** 2 / 4

    def holds(self, a: np.ndarray, b: np.ndarray) -> bool:
        """Whether the data learned so far has the structure: no Gram entry between two
        groups, and no data on an unassigned column (rows learned before the blocks)."""
        kind = self.kind
        unseen = np.flatnonzero(kind == -2)
        grouped = kind >= 0
        cross = grouped[:, None] & grouped & (kind[:, None] != kind)
        off = a[unseen]  # (a copy) the unassigned columns' rows, without the diagonal
        off[np.arange(len(unseen)), unseen] = 0.0
        return not (a[cross].any() or off.any() or b[unseen].any())

    def build(self, a: np.ndarray, b: np.ndarray) -> None:
        """The blocks afresh from the Gram matrix ``a`` and ``b`` of the model."""
        kind = self.kind
        shared = np.flatnonzero(kind == -1)
        _, kind[kind >= 0] = np.unique(kind[kind >= 0], return_inverse=True)  # 0..J-1
        grouped = np.flatnonzero(kind >= 0)
        order = grouped[np.argsort(kind[grouped], kind="stable")]
        sizes = np.bincount(kind[order], minlength=int(kind.max(initial=-1)) + 1)
        start = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        pos = np.zeros(len(kind), np.int64)
        pos[shared] = np.arange(len(shared))
        pos[order] = np.arange(len(order)) - start[kind[order]]
        c_off = np.r_[0, np.cumsum(sizes**2)].astype(np.int64)
        c_inv, f, h = np.empty(c_off[-1]), np.empty((len(order), len(shared))), np.empty(len(order))
        sigma, rhs = a[np.ix_(shared, shared)].copy(), b[shared].copy()
        for j, (lo, hi) in enumerate(zip(start[:-1].tolist(), start[1:].tolist())):
            cols = order[lo:hi]
            inverse = np.linalg.inv(a[np.ix_(cols, cols)])
            across = a[np.ix_(cols, shared)]
            c_inv[c_off[j]:c_off[j + 1]] = inverse.ravel()
            f[lo:hi], h[lo:hi] = inverse @ across, inverse @ b[cols]
            sigma -= across.T @ f[lo:hi]
            rhs -= across.T @ h[lo:hi]
        s_inv = np.linalg.inv(sigma)
        self.arrays = (kind.copy(), pos, start, order.astype(np.int64), shared.astype(np.int64),
                       c_off, c_inv, f.ravel(), h, s_inv, s_inv @ rhs)


PRIORS = ("optimistic", "midpoint", "auto")  # the priors named after the reward range


def check_penalty(l2, prior) -> None:
    """A ridge penalty ``l2`` > 0 and a ``prior`` (a number or one of :data:`PRIORS`), or
    a ``ValueError`` naming the one at fault."""
    if not (isinstance(l2, (int, float, np.number)) and 0 < l2 < np.inf):
        raise ValueError(f"l2 must be a finite number > 0, got {l2!r}")
    if prior not in PRIORS and not (
        isinstance(prior, (int, float, np.number)) and np.isfinite(prior)
    ):
        raise ValueError(f"prior must be a finite number or one of {PRIORS}, got {prior!r}")


def resolve_prior(prior, reward_range: tuple[float, float]) -> float:
    """The number a ``prior`` stands for in ``reward_range`` (``"auto"``, until the
    learner settles it: the optimistic one).

    >>> resolve_prior("optimistic", (0.0, 1.0)), resolve_prior("midpoint", (-1.0, 0.0))
    (1.0, -0.5)
    """
    if prior in ("optimistic", "auto"):
        return float(reward_range[1])
    if prior == "midpoint":
        return 0.5 * (reward_range[0] + reward_range[1])
    return float(prior)


def _rows(phi) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous ``(index, value)`` for the kernels: ``value`` of shape ``(n, R, L)``, with
    ``R = 1`` when every action shares the row (the product class's broadcast view), else
    ``R = K``; ``index`` of the same shape, or empty for dense rows (every column, in
    order)."""
    index, value = (phi.index, phi.value) if isinstance(phi, SparseRows) else (None, phi)
    if value.shape[1] > 1 and value.strides[1] == 0 and (index is None or index.strides[1] == 0):
        index, value = None if index is None else index[:, :1], value[:, :1]
    index = _DENSE if index is None else np.ascontiguousarray(index, np.int64)
    return index, np.ascontiguousarray(value, float)


def _at(vector: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``vector`` at a row's columns (all of them for a dense row)."""
    return vector[index] if index.size else vector


_DENSE = np.zeros(0, dtype=np.int64)  # the index of dense rows
_NO_LABEL, _UNUSED = np.full(1, -1, np.int64), np.zeros(1)  # one decision, no label


def _sparse_row(x, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(index, value)`` of a row given as a pair, or dense (an empty index)."""
    if isinstance(x, tuple):
        index, value = x
        return (np.ascontiguousarray(index, dtype=np.int64),
                np.ascontiguousarray(value, dtype=float))
    return _DENSE, np.ascontiguousarray(x, dtype=float)


def _pad(array: np.ndarray, shape: tuple[int, ...], fill) -> np.ndarray:
    """``array`` enlarged to ``shape``, new entries (models, features) set from ``fill``."""
    out = np.zeros(shape)
    out[...] = fill
    if array.size:
        out[tuple(slice(0, n) for n in array.shape)] = array
    return out


def _distinct(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    """``np.unique(values, axis=axis)``, asked for the counts too: without any of its
    optional outputs, np.unique imports numpy.ma (~7 ms of the command's start-up)."""
    return np.unique(values, return_counts=True, axis=axis)[0]
