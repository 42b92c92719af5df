"""The ridge penalty chosen from the labels (``RidgeOracle(l2="gcv")`` or ``"evidence"``).

Noise in the rewards asks for more shrinkage, and only a stream's labels say how much. After
`GCV_FIRST` labels, and each time their number grows `GCV_GROWTH`-fold, the penalty of
`GCV_PENALTIES` with the best score, summed over the `GCV_MODELS` models with the most
labels, takes the place of the one in force, and every model is solved afresh if it changed:

- ``"gcv"``: the least generalized cross-validation score (Golub, Heath and Wahba, 1979);
- ``"evidence"``: the largest marginal likelihood of the labels (the evidence of Bayesian
  linear regression, the noise variance at its maximum: MacKay, 1992), over the penalty and,
  on a learner's random features, a further factor of `FEATURE_SCALES`: the random
  features' weights get less prior room than the context's own where the labels do not
  pay for it (a nearly linear reward, noise).

Each score comes from the sufficient statistics: the eigenvalues of ``sum w x x^T`` (its
random features' rows and columns scaled by ``1 / sqrt(factor)``), ``b``, and the labels'
sum of squares and weight per model, which the oracle keeps beside them; no second fit. The
choice falls at the same label on every path (the compiled loop stops there), so a stream
gives the same state however it is cut into blocks (``docs/results/noisy_rewards.md``,
``docs/results/penalty_evidence.md``). It uses only revealed rewards: a row learned with a
stand-in reward while its own is awaited (delayed rewards, ``learn(..., stand_in=True)``)
is in the fit, and its share of the statistics is kept apart (``_standing``, for any
penalty: a change detected shrinks the labels, not the stand-ins) and taken off what the
choice scores, until its reward comes (``relabel``) and it counts as a label.
"""

from __future__ import annotations

import numpy as np

from regcb_stream.oracles.blas import one_blas_thread

CHOOSERS = ("gcv", "evidence")  # the l2 values that choose the penalty from the labels
GCV_PENALTIES = (1.0, 3.0, 10.0)  # the penalties chosen among, from the first
FEATURE_SCALES = (1.0, 4.0)  # "evidence": the random features' penalty factor (16 or more,
# down to the linear model, breaks the long-horizon rule: docs/results/penalty_evidence.md)
GCV_FIRST, GCV_GROWTH = 256, 4  # labels before the first choice; their growth to the next
GCV_MODELS = 8  # the models (most labels' weight) that score: an eigendecomposition each
GCV_LEAST_DOF = 1e-3  # the least 1 - dof/n of a model's score (fewer labels than dof)


class PenaltyChoice:
    """The label statistics and the choice of a `RidgeOracle` whose ``l2`` is one of
    `CHOOSERS` (``_labels``, ``_next_choice``, ``_squares``, ``_weights``; with
    ``"evidence"``, the random features' columns ``_scaled`` and their factor ``_scale``;
    the stand-ins' share ``_standing``)."""

    chooses_penalty = True  # it takes l2="gcv" or "evidence" (`RidgeBase.bind`)
    #: what a model file holds of them (`regcb_stream.state`), and the value of each in a
    #: file from before it
    LABEL_STATISTICS = {"labels": "_labels", "next_choice": "_next_choice",
                        "squares": "_squares", "weights": "_weights",
                        "random_columns": "_random_columns", "scaled": "_scaled",
                        "scale": "_scale", "standing": "_standing"}
    LABEL_STATISTICS_ADDED = {"labels": 0, "next_choice": GCV_FIRST, "squares": None,
                              "weights": None, "random_columns": 0, "scaled": None,
                              "scale": 1.0, "standing": None}

    def _start_label_statistics(self) -> None:
        self._labels = 0  # labels learned (weight > 0), and the next choice of the penalty
        self._next_choice = GCV_FIRST
        self._squares = np.zeros(0)  # per model: sum w (y - prior)^2 (a chosen penalty)
        self._weights = np.zeros(0)  # per model: sum w
        self._random_columns = 0  # a learner's random features: its first rows' last columns
        self._scaled: tuple[int, int] | None = None  # their columns, at the first growth
        self._scale = 1.0  # their penalty, times l2 (l2="evidence")
        #: the stand-ins' share of the statistics, None before the first: [sum w x x^T
        #: (models, D, D), sum w (y - prior) x, sum w (y - prior)^2, sum w]
        self._standing: list | None = None

    def _grow_label_statistics(self, m: int, d: int) -> None:
        """Room for ``m`` models of ``d`` columns (new ones empty)."""
        grown = m - len(self._squares)
        self._squares = np.r_[self._squares, np.zeros(grown)]
        self._weights = np.r_[self._weights, np.zeros(grown)]
        if self._standing is not None:
            gram, b, squares, weights = self._standing
            pad = [(0, m - len(gram)), (0, d - gram.shape[1])]
            self._standing = [np.pad(gram, pad + pad[1:]), np.pad(b, pad),
                              np.r_[squares, np.zeros(grown)], np.r_[weights, np.zeros(grown)]]

    def _decay_label_statistics(self, aging: float, keep: float) -> None:
        """A forgetting step's decay of the label statistics, by ``aging`` times ``keep``
        (a change detected); the rows learned with stand-in rewards by ``aging`` alone
        (their share in ``A`` and ``b``, scaled with the rest, put back): what a change
        forgets is what was learned, not what is awaited, and a stand-in is taken off
        (or its reward put in) at the weight it has."""
        self._squares *= aging * keep
        self._weights *= aging * keep
        for total, part in zip((self._a, self._b, self._squares, self._weights),
                               self._standing or ()):
            if keep != 1.0:
                total += (aging - aging * keep) * part
            part *= aging

    @property
    def chooses(self) -> bool:
        """Whether the penalty is chosen from the labels."""
        return self.l2 in CHOOSERS

    def _chosen(self) -> str:
        """What `describe` says of a chosen penalty ("" for a fixed one)."""
        if not self.chooses:
            return ""
        factor = f", {self._scale:g}x on the random features" if self._scaled else ""
        return (f", penalty {self._l2:g} chosen by "
                + ("GCV" if self.l2 == "gcv" else "evidence") + factor)

    def _observe(self, model: int, weight: float, residual: float, new: bool,
                 stand_in: tuple | None = None) -> None:
        """Count a label learned (``new``: not one learned before) for a chosen penalty; a
        row ``stand_in`` (``(index, value)``) learned with a stand-in reward (``weight``
        < 0: unlearned) goes to the stand-ins' share (any penalty), not a label."""
        if stand_in is not None:
            self._stand(model, weight, residual, *stand_in)
        if self.chooses:
            self._squares[model] += weight * residual * residual
            self._weights[model] += weight
            self._labels += stand_in is None and new and weight > 0

    def _stand(self, model: int, weight: float, residual: float, index: np.ndarray,
               value: np.ndarray) -> None:
        """Add a row's share (``weight`` < 0: take it off) to the stand-ins'."""
        if self._standing is None:
            self._standing = [np.zeros_like(self._a), np.zeros_like(self._b),
                              np.zeros(self.n_models), np.zeros(self.n_models)]
        gram, b, squares, weights = self._standing
        self._learn_into(gram, b, model, index, value, weight, residual)
        squares[model] += weight * residual * residual
        weights[model] += weight

    def _reveal(self, model: int, weight: float, residual: float, index, value) -> None:
        """A row learned with a stand-in reward (``residual`` its stand-in's) got its own:
        its share leaves the stand-ins', and it counts as a label."""
        self._stand(model, -weight, residual, index, value)
        self._labels += self.chooses

    def _choose_when_due(self) -> None:
        """Choose the penalty if the labels reached the next choice."""
        if self.chooses and self._labels >= self._next_choice:
            self._choose_penalty()

    def _penalties(self, dim: int) -> np.ndarray:
        """Each of ``dim`` columns' penalty: ``l2``, times the factor in force on the random
        features' columns."""
        out = np.full(dim, self._l2)
        if self._scaled is not None:
            out[self._scaled[0]:self._scaled[1]] *= self._scale
        return out

    def _mark_random_features(self, dim: int) -> None:
        """At the first growth to ``dim`` columns: the last ``_random_columns`` of them
        are the random features whose factor ``"evidence"`` chooses."""
        if self._scaled is None and self.l2 == "evidence" and 0 < self._random_columns < dim:
            self._scaled = (dim - self._random_columns, dim)

    def _choose_penalty(self) -> None:
        """The penalty (and factor) whose score, summed over the `GCV_MODELS` models with
        the most labels, is best; every model solved afresh if it changes. A model's
        scores for penalty ``l`` from the eigenvalues ``e`` of its ``sum w x x^T`` (scaled),
        ``z = V^T b``, its sum of squares ``s`` and its labels' weight ``n``: GCV ``RSS(l) /
        (1 - dof(l) / n)^2``, with ``RSS`` and ``dof = sum e / (e + l)``; the evidence's
        negated log, up to constants, ``n/2 log((s - sum z^2 / (e + l)) / n) + 1/2 sum
        log(1 + e / l)``."""
        while self._next_choice <= self._labels:
            self._next_choice *= GCV_GROWTH
        b, squares, weights = self._b, self._squares, self._weights
        if self._standing is not None:  # (revealed rewards alone)
            b, squares, weights = (x - y for x, y in zip((b, squares, weights),
                                                         self._standing[1:]))
        models = np.argsort(-weights, kind="stable")[:GCV_MODELS]
        models = models[weights[models] > 0]
        diagonal = np.arange(self.dim)
        before = self._penalties(self.dim)
        labels = (b[models], squares[models, None], weights[models, None])
        scales = FEATURE_SCALES if self._scaled is not None else (1.0,)
        scores = np.array([self._score(models, before, labels, scale) for scale in scales])
        best = int(np.argmin(scores))  # (the first of equals: scales, then penalties)
        self._scale = scales[best // len(GCV_PENALTIES)]
        self._l2 = GCV_PENALTIES[best % len(GCV_PENALTIES)]
        after = self._penalties(self.dim)
        if not np.array_equal(after, before):
            self._a[:, diagonal, diagonal] += after - before
            for model in range(self.n_models):
                self._invert(model)

    def _score(self, models: np.ndarray, penalties: np.ndarray, labels: tuple,
               scale: float) -> np.ndarray:
        """The score of each of `GCV_PENALTIES` (`_scores`), summed over ``models`` whose
        ``labels`` are ``(b, squares, weights)``, the random features' penalty ``scale``
        times the rest's: the evidence by the compiled Cholesky factors of each ``G + l
        I`` (`_evidence_terms`), else from the eigenvalues (`_spectra`)."""
        b, squares, weights = labels
        if self.l2 == "evidence" and self.compiled:
            terms = self._evidence_terms(models, penalties, b, scale)
            if terms is not None:
                return _evidence(*terms, squares, weights)
        return self._scores(*self._spectra(models, penalties, b, scale), squares, weights)

    def _gram(self, model: int, penalties: np.ndarray, shrink: np.ndarray | None
              ) -> np.ndarray:
        """A model's ``sum w x x^T``: its Gram matrix less ``penalties`` and any standing
        statistics, its rows and columns times ``shrink`` (None: as they are)."""
        gram = self._a[model].copy()
        gram[np.arange(self.dim), np.arange(self.dim)] -= penalties
        if self._standing is not None:
            gram -= self._standing[0][model]
        return gram if shrink is None else gram * shrink[:, None] * shrink

    def _shrink(self, scale: float) -> np.ndarray | None:
        """The columns' factor ``1 / sqrt(scale)`` on the random features (None: 1)."""
        if scale == 1.0:
            return None
        shrink = np.ones(self.dim)
        shrink[self._scaled[0]:self._scaled[1]] = scale ** -0.5
        return shrink

    def _evidence_terms(self, models: np.ndarray, penalties: np.ndarray, b: np.ndarray,
                        scale: float) -> tuple[np.ndarray, np.ndarray] | None:
        """The evidence's ``sum z^2 / (e + l)`` and ``sum log(1 + e / l)`` per model and
        penalty (``(models, penalties)`` each) by the compiled Cholesky factors of ``G +
        l I`` (`_spectra`'s ``G``): ``b^T (G + l I)^-1 b`` and ``log det(G + l I) - D log
        l``; None if a factor fails (a matrix not positive definite: the eigenvalues)."""
        from regcb_stream.oracles import _ridge  # (built: the oracle is `compiled`)

        shrink, grid = self._shrink(scale), np.array(GCV_PENALTIES)
        out = np.empty((len(models), 2, len(grid)))
        for at, model in enumerate(models.tolist()):
            gram = self._gram(model, penalties, shrink)
            rows = b[at] if shrink is None else b[at] * shrink
            if not _ridge.evidence(gram, np.ascontiguousarray(rows), grid, out[at]):
                return None
        return out[:, 0], out[:, 1] - self.dim * np.log(grid)

    def _spectra(self, models: np.ndarray, penalties: np.ndarray, b: np.ndarray,
                 scale: float) -> tuple[np.ndarray, np.ndarray]:
        """The eigenvalues ``e`` of each model's ``sum w x x^T`` (`_gram`), with the random
        features' penalty ``scale`` times the rest's, and the squares of ``z = V^T b``:
        ``(models, 1, D)`` each, one model at a time (a stack would hold several copies of
        every model's matrix: the command's peak memory)."""
        shrink = self._shrink(scale)
        if shrink is not None:
            b = b * shrink
        e, z2 = np.empty((2, len(models), 1, self.dim))
        with one_blas_thread():  # (as `RidgeOracle._invert`)
            for at, model in enumerate(models.tolist()):
                eigenvalues, vectors = np.linalg.eigh(self._gram(model, penalties, shrink))
                e[at, 0] = np.maximum(eigenvalues, 0.0)
                z2[at, 0] = np.einsum("dk,d->k", vectors, b[at]) ** 2
        return e, z2

    def _scores(self, e: np.ndarray, z2: np.ndarray, squares: np.ndarray,
                weights: np.ndarray) -> np.ndarray:
        """The score of each of `GCV_PENALTIES`, summed over the models of the spectra
        ``e`` and ``z2`` (`_spectra`) and the statistics ``squares`` and ``weights``
        (``(models, 1)``)."""
        penalties = np.array(GCV_PENALTIES)[:, None]  # (penalties, 1)
        if self.l2 == "evidence":
            return _evidence((z2 / (e + penalties)).sum(axis=2),
                             np.log1p(e / penalties).sum(axis=2), squares, weights)
        rss = (squares - 2.0 * (z2 / (e + penalties)).sum(axis=2)
               + (e * z2 / (e + penalties) ** 2).sum(axis=2))
        dof = (e / (e + penalties)).sum(axis=2)
        share = np.maximum(1.0 - dof / weights, GCV_LEAST_DOF)
        return (rss / share**2).sum(axis=0)

    def _until_choice(self, played: np.ndarray, weights: np.ndarray, start: int) -> int:
        """For a compiled loop: the end of the rows from ``start`` up to the label that
        brings the labels to the next choice of the penalty (``l2="gcv"``)."""
        labelled = start + np.flatnonzero((played[start:] >= 0) & (weights[start:] > 0))
        due = self._next_choice - self._labels
        return int(labelled[due - 1]) + 1 if len(labelled) >= due else len(played)

    def _count_labels(self, models, played, rewards, weights, start: int, stop: int) -> None:
        """What `learn` counts, for the labels of rows ``start..stop`` the loop learned."""
        rows = start + np.flatnonzero(played[start:stop] >= 0)
        model, weight = models[played[rows]], weights[rows]
        residual = rewards[rows] - self.prior_mean
        np.add.at(self._squares, model, weight * residual * residual)
        np.add.at(self._weights, model, weight)
        self._labels += int(np.count_nonzero(weight > 0))

    def _check_label_statistics(self) -> None:
        """In an oracle built back from a model file: sums for a file from before them,
        and damaged ones refused."""
        if self._squares is None:  # (a file from before l2="gcv")
            self._squares, self._weights = np.zeros(self.n_models), np.zeros(self.n_models)
        shape = (self.n_models,)
        if not (getattr(self._squares, "shape", None) == getattr(self._weights, "shape", None)
                == shape and type(self._labels) is int and type(self._next_choice) is int
                and self._next_choice > 0 and (not self.chooses or self._l2 in GCV_PENALTIES)
                and self._scale in FEATURE_SCALES and type(self._random_columns) is int
                and (self._scaled is None or _columns(self._scaled, self.dim))
                and (self._standing is None or _standing_ok(self._standing, self._a.shape))):
            raise ValueError("the ridge oracle's label statistics are damaged")


def _evidence(fitted: np.ndarray, log_ratio: np.ndarray, squares: np.ndarray,
              weights: np.ndarray) -> np.ndarray:
    """The evidence's negated log per penalty, summed over the models, from each model's
    ``sum z^2 / (e + l)`` (``fitted``) and ``sum log(1 + e / l)`` (``log_ratio``),
    ``(models, penalties)`` each, and its ``squares`` and ``weights`` ``(models, 1)``."""
    residual = np.maximum(squares - fitted, 1e-300)
    return (0.5 * weights * np.log(residual / weights) + 0.5 * log_ratio).sum(axis=0)


def _columns(scaled, dim: int) -> bool:
    """Whether ``scaled`` is a ``(start, stop)`` of columns within ``dim``."""
    return (isinstance(scaled, tuple) and len(scaled) == 2
            and all(type(i) is int for i in scaled) and 0 <= scaled[0] < scaled[1] <= dim)


def _standing_ok(standing, shape: tuple) -> bool:
    """Whether ``standing`` is the stand-ins' share of statistics of ``A``'s ``shape``."""
    m, d = shape[0], shape[1]
    shapes = [(m, d, d), (m, d), (m,), (m,)]
    return (isinstance(standing, list) and len(standing) == 4
            and all(isinstance(x, np.ndarray) and x.dtype == float and x.shape == want
                    and np.isfinite(x).all() for x, want in zip(standing, shapes)))
