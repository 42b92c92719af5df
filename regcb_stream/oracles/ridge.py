"""Exact ridge regression (recursive least squares) with closed-form version-space bounds."""

from __future__ import annotations

import numpy as np

from regcb_stream.oracles.base import Capabilities
from regcb_stream.oracles.blas import one_blas_thread
from regcb_stream.oracles.blocks import ArrowheadBlocks, BlockedInverse
from regcb_stream.oracles.dense_row import DenseRowCalls
from regcb_stream.oracles.forgetting import top_up
from regcb_stream.oracles.loop import kernel_row, kernel_rows
from regcb_stream.oracles.penalty_choice import CHOOSERS, PenaltyChoice
from regcb_stream.oracles.pieces import Pieces
from regcb_stream.oracles.ridge_base import RidgeBase, _ridge, refresh_interval
from regcb_stream.parameters import check_oracle_arguments
from regcb_stream.state import Stateful

ONE_THREAD_FROM = 128  # dimension from which an inverse is limited to one BLAS thread
MAX_EXACT = 2**19  # models x D^2 kept exact by default (docs/results/oracle_threshold.md)


class RidgeOracle(Pieces, DenseRowCalls, BlockedInverse, PenaltyChoice, RidgeBase,
                  Stateful):
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
        how many observations the prior is worth. None: the learner's default for its
        model class (`regcb_stream.defaults`). ``"gcv"``: chosen from the labels by
        generalized cross-validation; ``"evidence"``: by their marginal likelihood, with a
        further factor on a learner's random features
        (`regcb_stream.oracles.penalty_choice`: noisier rewards get more shrinkage; the
        ``online`` schedule, no pieces).
    prior
        The prediction the penalty shrinks toward, which is also the prediction for an
        action never played: a number, ``"optimistic"`` for the top of the reward range
        (optimistic initialization, what VW does with costs in [0, 1]: it starts every
        prediction at cost 0), ``"midpoint"`` for its middle, or ``"auto"``: the learner's
        default for its model class (`RegCB`'s default oracle has ``l2=None,
        prior="auto"``). 0 by default, the paper's oracle.
    max_exact
        The largest ``n_models * D^2`` kept exact: memory and the work of a label grow
        with it. Past it (``fits``), the learner hands the statistics over to a
        ``BoundedRidgeOracle`` (``bounded``): exact on its head of columns, diagonal
        beyond them (``math.inf``: never).
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
    piecewise
        Sum the labels per piece, each piece added at its end (`close_piece`): the epoch
        schedules' additive statistics (`regcb_stream.stream.parallel`); the learner sets
        it for them.
    reward_range
        The rewards' range, which ``"optimistic"`` and ``"midpoint"`` refer to (the
        learner's, when it takes the oracle).
    kernels
        Run the compiled kernels, where they are built (False: their numpy reference).

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
        "max_exact": "max_exact",
        "memory": "memory",
        "piecewise": "piecewise",
        "piece": "_piece",
        **PenaltyChoice.LABEL_STATISTICS,
        "a": "_a",
        "b": "_b",
        "a_inv": "_a_inv",
        "theta": "_theta",
        "pending": "_pending",
        "updates": "_updates",
        "blocks": "_blocks",
        "tried_blocks": "_tried_blocks",
    }
    ADDED = PenaltyChoice.LABEL_STATISTICS_ADDED

    def __init__(self, l2: float | None = 1.0, prior: float | str = 0.0,
                 max_exact: int = MAX_EXACT, memory: int | None = None, forget: float = 1.0,
                 *, piecewise: bool = False, reward_range: tuple[float, float] = (0.0, 1.0),
                 kernels: bool = True):
        check_oracle_arguments(RidgeOracle, self, locals())
        if piecewise and l2 in CHOOSERS:
            raise ValueError(f"l2={l2!r} chooses the penalty on the 'online' schedule, not in "
                             "pieces (the epoch schedules): give l2 a number")
        super().__init__(l2, prior, forget, reward_range, kernels)
        self.max_exact = max_exact
        self.memory = memory
        self.piecewise = piecewise
        self._piece: tuple | None = None  # the open piece: (A sums, b sums, models touched)
        self._start_label_statistics()
        self._a = np.zeros((0, 0, 0))  # l2 I + sum w x x^T
        self._b = np.zeros((0, 0))  # sum w (y - prior) x
        self._a_inv = np.zeros((0, 0, 0))  # frozen decision state
        self._theta = np.zeros((0, 0))
        self._pending: dict[int, list | None] = {}  # model -> rank-one updates, None: many
        self._updates = np.zeros(0, dtype=np.int64)  # rank-one updates since a fresh inverse
        self._blocks: ArrowheadBlocks | None = None  # one model over arrowhead rows
        self._tried_blocks = False

    @property
    def capabilities(self) -> Capabilities:
        compiled = self.compiled
        return Capabilities(rows="sparse", ellipsoid=True, online_loop=compiled,
                            widths=compiled, change_loop=compiled, one_row=compiled,
                            auto_loop=compiled,
                            pieces=True, ridge=True, relabel=True, hands_over=True)

    @property
    def n_models(self) -> int:
        return self._b.shape[0]

    @property
    def dim(self) -> int:
        return self._b.shape[1]

    def grow(self, n_models: int, dim: int, max_dim: int | None = None) -> None:
        """Add empty models and unseen features (their data so far counts as zeros)."""
        m0, d0 = self._b.shape
        m, d = max(n_models, m0), max(dim, d0)
        if (m, d) == (m0, d0):
            return
        if d0 == 0:
            self._mark_random_features(d)
        penalties = self._penalties(d)
        self._a = _pad(self._a, (m, d, d), np.diag(penalties))
        self._a_inv = _pad(self._a_inv, (m, d, d), np.diag(1.0 / penalties))
        self._b = _pad(self._b, (m, d), 0.0)
        self._theta = _pad(self._theta, (m, d), 0.0)
        self._updates = np.r_[self._updates, np.zeros(m - m0, dtype=np.int64)]
        self._grow_label_statistics(m, d)
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

    def exact_statistics(self) -> tuple[np.ndarray, np.ndarray]:
        """Every label learned and the statistics ``A`` and ``b`` brought to their own
        scale (a forgetting step taken if one is pending), for an oracle that carries on
        from them (`BoundedRidgeOracle.from_ridge`)."""
        self.rebuild()
        if self.clock > self._stamp:  # (the statistics exact, their scale 1)
            self._discount()
            self.rebuild()
        return self._a, self._b

    def restored(self) -> None:
        super().restored()
        self._check_label_statistics()

    def describe(self) -> str:
        return (f"exact ridge, {self.n_models} models of {self.dim} features"
                + self._chosen() + self._forgets())

    @property
    def refresh_every(self) -> int:
        """Rank-one updates of a model's inverse between two fresh inverses."""
        return refresh_interval(self.dim)

    def _discount(self, keep: float = 1.0) -> None:
        """A forgetting step (`Forgetting`): ``A = L + c (A - L)`` (``L``: the penalties),
        ``b = c b``, every model to be inverted afresh (``c``: the decay, times ``keep``;
        the rows learned with stand-in rewards: the decay alone)."""
        aging = self._decay()
        top_up(self._a, aging * keep, self._penalties(self.dim))
        self._b *= aging * keep
        self._decay_label_statistics(aging, keep)
        self._pending.update(dict.fromkeys(range(self.n_models)))

    def learn(self, x, model: int, y: float, weight: float = 1.0, at: int | None = None,
              stand_in: bool = False) -> None:
        """Add one example to the sufficient statistics of ``model``: ``x`` a dense row
        ``(D,)`` or an ``(index, value)`` pair of 1-D arrays. While forgetting, ``at`` is
        the clock of a label learned before (its weight aged since), None a new one.
        ``stand_in``: ``y`` stands in for a reward to come (`relabel`), not a label."""
        index, value = kernel_row(x)
        residual = y - self.prior_mean
        weight = self._stored(weight, at)
        self._tick(at)
        self._observe(model, weight, residual, at is None, (index, value) if stand_in else None)
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

    def relabel(self, x, model: int, old: float, new: float, at: int | None = None) -> None:
        """Change the label of a row learned with the stand-in reward ``old`` and weight 1
        (at clock ``at`` while forgetting) to its reward ``new`` (``b += (new - old) x``,
        ``A`` unchanged): the solution moves by ``(new - old) A^-1 x`` at once, exactly,
        when the model's inverse is up to date, else at the next rebuild (a fresh
        inverse)."""
        index, value = kernel_row(x)
        weight = self._stored(1.0, self._clock - 1 if at is None else at)
        self._reveal(model, weight, old - self.prior_mean, index, value)
        shift = weight * (new - old)
        self._squares[model] += weight * ((new - self.prior_mean) ** 2
                                          - (old - self.prior_mean) ** 2)
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
        self._choose_when_due()

    def _invert(self, model: int) -> None:
        """A fresh inverse and solution of one model (on one thread: BLAS threads make a
        large inverse several times slower on a small machine, and cost ~1 ms to limit),
        or of its blocks."""
        if self._blocks is not None:
            self._blocks.build(self._a[0], self._b[0])
            self._updates[model] = 0
        elif self.dim >= ONE_THREAD_FROM:
            with one_blas_thread():
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
        index, value = kernel_rows(phi)
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

    one_example_index = True  # (the kernel reads it for every example)

    def _loop(self, index, value, models, played, rewards, weights, budgets, rule,
              reward_range, tolerance, out, scoring=None, change=None):
        """The compiled online loop over the rows, up to their end or (``change``: the
        learner's `ChangeDetector`, its test run in the loop) a label the test alarms at:
        the outputs of the rows done."""
        (n, r, width), k = value.shape, len(models)
        rows_index = np.broadcast_to(index, value.shape) if 0 < len(index) < n else index
        self._block_arrays(rows_index, value)
        scaled = weights.copy() if self.forget < 1.0 else weights
        start = 0
        while start < n:
            stop = n if scaled is weights else self._until_step(played, weights, scaled, start)
            if self.chooses:
                stop = min(stop, self._until_choice(played, weights, start))
            first = start
            rows = slice(0, stop)  # (the kernel takes whole arrays: views of rows ..stop)
            blocks = self._blocks and self._blocks.arrays  # new ones after each refresh
            spec = None if scoring is None else scoring[0].loop_spec(budgets,
                                                                     scoring[1][rows])
            watch = None if change is None else change.loop_spec()
            start, learned, stale, alarm = _ridge.run_online(
                self._a, self._b, self._a_inv, self._theta, self._updates, models,
                index[rows] if index.size else index, value[rows], played[rows],
                rewards[rows], scaled[rows], budgets, *out[:4, rows],
                start, stop, r, k, width, self.dim, rule.code, self.refresh_every,
                self.prior_mean, *reward_range, tolerance, blocks, spec, out[4, rows], watch)
            if change is not None:
                change.loop_done(watch, alarm)
            if scoring is not None:
                scoring[0].loop_done(learned)
            budgets = budgets[learned:]
            if self.chooses:
                self._count_labels(models, played, rewards, scaled, first, start)
            if stale >= 0:
                self._invert(stale)
            elif stale == -2:  # a row outside the blocks
                self._fit_blocks(rows_index[start:], value[start:])
            if scaled is not weights:
                self._clock += learned
                self.rebuild()  # (a forgetting step when one is due)
            else:
                self._choose_when_due()
            if change is not None and alarm:
                return tuple(out[:, :start])  # (the caller forgets before the rows after)
        return tuple(out)



def _at(vector: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``vector`` at a row's columns (all of them for a dense row)."""
    return vector[index] if index.size else vector


def _pad(array: np.ndarray, shape: tuple[int, ...], fill) -> np.ndarray:
    """``array`` enlarged to ``shape``, new entries (models, features) set from ``fill``."""
    out = np.zeros(shape)
    out[...] = fill
    if array.size:
        out[tuple(slice(0, n) for n in array.shape)] = array
    return out
