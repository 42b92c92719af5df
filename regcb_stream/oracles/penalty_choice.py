"""The ridge penalty chosen from the labels (``RidgeOracle(l2="gcv")``).

Noise in the rewards asks for more shrinkage, and only a stream's labels say how much. After
`GCV_FIRST` labels, and each time their number grows `GCV_GROWTH`-fold, the penalty of
`GCV_PENALTIES` with the least generalized cross-validation score (Golub, Heath and Wahba,
1979), summed over the `GCV_MODELS` models with the most labels, takes the place of the one
in force, and every model is solved afresh if it changed. Each score comes from the
sufficient statistics: the eigenvalues of ``sum w x x^T``, ``b``, and the labels' sum of
squares and weight per model, which the oracle keeps beside them; no second fit. The choice
falls at the same label on every path (the compiled loop stops there), so a stream gives the
same state however it is cut into blocks (``docs/results/noisy_rewards.md``).
"""

from __future__ import annotations

import numpy as np

GCV_PENALTIES = (1.0, 3.0, 10.0)  # the penalties chosen among, from the first
GCV_FIRST, GCV_GROWTH = 256, 4  # labels before the first choice; their growth to the next
GCV_MODELS = 8  # the models (most labels' weight) that score: an eigendecomposition each
GCV_LEAST_DOF = 1e-3  # the least 1 - dof/n of a model's score (fewer labels than dof)


class PenaltyChoice:
    """The label statistics and the choice of a `RidgeOracle` whose ``l2`` is ``"gcv"``
    (``_labels``, ``_next_choice``, ``_squares``, ``_weights``)."""

    chooses_penalty = True  # it takes l2="gcv" (`RidgeBase.bind`)

    def _observe(self, model: int, weight: float, residual: float, new: bool) -> None:
        """Count a label learned (``new``: not one learned before) for ``l2="gcv"``."""
        if self.l2 == "gcv":
            self._squares[model] += weight * residual * residual
            self._weights[model] += weight
            self._labels += new and weight > 0

    def _choose_when_due(self) -> None:
        """Choose the penalty if the labels reached the next choice."""
        if self.l2 == "gcv" and self._labels >= self._next_choice:
            self._choose_penalty()

    def _choose_penalty(self) -> None:
        """``l2="gcv"``: the penalty of `GCV_PENALTIES` whose generalized cross-validation
        score, summed over the `GCV_MODELS` models with the most labels, is least; every
        model solved afresh if it changes. A model's score for penalty ``l``: ``RSS(l) / (1
        - dof(l) / n)^2``, with ``RSS`` and ``dof = sum e / (e + l)`` from the eigenvalues
        ``e`` of its ``sum w x x^T``, its ``b`` and its sum of squares, ``n`` its labels'
        weight."""
        while self._next_choice <= self._labels:
            self._next_choice *= GCV_GROWTH
        models = np.argsort(-self._weights, kind="stable")[:GCV_MODELS]
        models = models[self._weights[models] > 0]
        diagonal = np.arange(self.dim)
        gram = self._a[models]
        gram[:, diagonal, diagonal] -= self._l2
        from threadpoolctl import threadpool_limits  # (as `RidgeOracle._invert`)

        with threadpool_limits(1, "blas"):
            eigenvalues, vectors = np.linalg.eigh(gram)
        e = np.maximum(eigenvalues, 0.0)[:, None]  # (models, 1, D)
        z2 = np.einsum("mdk,md->mk", vectors, self._b[models])[:, None] ** 2
        penalties = np.array(GCV_PENALTIES)[:, None]  # (penalties, 1)
        rss = (self._squares[models, None] - 2.0 * (z2 / (e + penalties)).sum(axis=2)
               + (e * z2 / (e + penalties) ** 2).sum(axis=2))
        dof = (e / (e + penalties)).sum(axis=2)
        share = np.maximum(1.0 - dof / self._weights[models, None], GCV_LEAST_DOF)
        scores = (rss / share**2).sum(axis=0)
        penalty = GCV_PENALTIES[int(np.argmin(scores))]
        if penalty != self._l2:
            self._a[:, diagonal, diagonal] += penalty - self._l2
            self._l2 = penalty
            for model in range(self.n_models):
                self._invert(model)

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
                and self._next_choice > 0 and (self.l2 != "gcv" or self._l2 in GCV_PENALTIES)):
            raise ValueError("the ridge oracle's label statistics are damaged")
