"""An exact ridge oracle's one-row compiled calls: one dense context's decision, its draw,
or its label and the rebuild after it, in one call each (the Python API's per-example path:
``predict`` then ``learn``, without a block's machinery)."""

from __future__ import annotations

import numpy as np

from regcb_stream.oracles.ridge_base import _ridge
from regcb_stream.rules import Rule


class DenseRowCalls:
    """``predict_dense``, ``predict_auto``, ``replay_auto`` and ``learn_dense`` of a
    `RidgeOracle` (its ``one_row`` and ``auto_loop`` capabilities)."""

    def predict_dense(self, context: np.ndarray, models: np.ndarray, intercept: float,
                      budget: float, rule: Rule, reward_range: tuple[float, float],
                      tolerance: float, uniform: float, out: np.ndarray | None = None
                      ) -> tuple[int, float] | None:
        """One decision for a dense context (the product class's rows: the intercept, then
        the context) under the frozen fit, and its draw by ``uniform``, in one compiled
        call: ``(index, probability)``, or None if a value is not finite or the model is
        kept in blocks (the general path then decides); with ``out`` ``(4, K)``, the
        distribution, predictions and clipped bounds written into it (``(K,)``: the
        distribution, of the widths it needs alone)."""
        if self._blocks is not None:
            return None
        extra = () if out is None else (out,)
        return _ridge.predict_dense(self._a_inv, self._theta, models, context, intercept,
                                    self.dim, self.prior_mean, budget, rule.code,
                                    *reward_range, tolerance, uniform,
                                    self._l2, *extra)  # (every A is at least l2 I)

    def predict_auto(self, context: np.ndarray, models: np.ndarray, intercept: float,
                     sqrt_grid: np.ndarray, scale: float, weights: np.ndarray,
                     rule: Rule, reward_range: tuple[float, float], tolerance: float,
                     uniform: float, pmfs: np.ndarray) -> tuple[int, float, tuple] | None:
        """``predict_dense`` with the automatic budget's candidates (radii ``sqrt_grid *
        scale``, mixed by ``weights``: `regcb_stream.explore.budget`): ``(index, probability, each
        candidate's probability of it)``, every candidate's distribution into ``pmfs`` (J,
        K), or None if a value is not finite or the model is kept in blocks."""
        if self._blocks is not None:
            return None
        return _ridge.predict_auto(self._a_inv, self._theta, models, context, intercept,
                                   self.dim, self.prior_mean, sqrt_grid, scale, weights,
                                   rule.code, *reward_range, tolerance, uniform, pmfs)

    def replay_auto(self, phi, models, played, rewards, weights, probs, scales, selector,
                    rule: Rule, reward_range: tuple[float, float], tolerance: float):
        """``replay_online`` with the automatic budget's ``selector`` (`BudgetSelector`):
        ``scales[j]`` the candidates' radius scale after ``j`` more labels (NaN: uniform play),
        each label scoring the candidates with its logged probability ``probs[i]``."""
        return self.replay_online(phi, models, played, rewards, weights, scales, rule,
                                  reward_range, tolerance,
                                  scoring=(selector, np.ascontiguousarray(probs, dtype=float)))

    def learn_dense(self, context: np.ndarray, intercept: float, model: int, y: float,
                    weight: float) -> float | None:
        """``learn`` then ``rebuild`` of a dense context's row in one compiled call: the
        fit's prediction of the row before the label (``moments``'s, bit for bit), or None,
        nothing learned, if a value is not finite, labels are pending or the model is kept
        in blocks (the general path then learns it)."""
        if self._pending or self._blocks is not None:
            return None
        forgets, chooses = self.forget < 1.0, self.chooses
        prior, residual = self._prior, y - self._prior
        stored = self._stored(weight, None) if forgets else weight
        statistics = (self._squares, self._weights) if chooses else ()  # (`_observe`'s)
        learned = _ridge.learn_dense(self._a, self._b, self._a_inv, self._theta, self._updates,
                                     model, context, intercept, self.dim, stored, residual,
                                     self.refresh_every, *statistics)
        if learned is None:
            return None
        stale, fit = learned
        if chooses:  # (`_observe`: the call added the label's square and weight)
            self._labels += stored > 0
        if forgets:
            self._tick(None)
            if self._step_due():
                self.rebuild()
                return fit + prior
        if stale:
            self._invert(model)
        self._choose_when_due()
        return fit + prior
