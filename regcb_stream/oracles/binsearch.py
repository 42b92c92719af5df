"""BinSearch: version-space bounds from any weighted regression oracle (Foster et al. 2018).

The paper's Algorithm 3 with the special cases of its unbounded variants (Algorithms 4, 5):
one fake example past the reward range, its weight binary-searched until the loss on the
history has risen by the budget; O(log 1/alpha) fits, alpha-accurate for convex classes.

>>> from sklearn.linear_model import Ridge
>>> X, y = np.array([[1.0, 0.0], [1.0, 1.0]] * 5), np.array([1.0, 0.0] * 5)
>>> high = binsearch(Ridge(alpha=1.0, fit_intercept=False), X, y, np.array([1.0, 0.0]),
...                  kind="high", budget=1.0, alpha=1e-3, penalty=ridge_penalty(1.0))
>>> round(high.bound, 2), high.n_fits <= 2 * 10 + 5   # the closed form gives 1.114 -> 1
(1.0, True)

"""

from __future__ import annotations

import copy
import functools
from typing import Callable, NamedTuple

import numpy as np

from regcb_stream.oracles.base import Oracle
from regcb_stream.parameters import check_oracle_arguments


class SearchResult(NamedTuple):
    """A bound from :func:`binsearch` and the number of regressor fits it took."""

    bound: float
    n_fits: int


def binsearch(
    regressor, X: np.ndarray, y: np.ndarray, x: np.ndarray, *, kind: str, budget: float,
    alpha: float = 1e-2, reward_range: tuple[float, float] = (0.0, 1.0),
    sample_weight: np.ndarray | None = None, penalty: Callable | None = None, base=None,
) -> SearchResult:
    """Highest (``kind="high"``) or lowest (``"low"``) prediction at ``x`` over the version
    space, clipped to ``reward_range``, and the number of fits it took.

    The risk is the paper's summed ``R(f) = sum_i w_i (f(X_i) - y_i)^2`` plus ``penalty(f)``;
    the version space is ``{f : R(f) <= min R + budget}``, so ``budget`` is on the summed
    scale (the paper's normalized beta times the number of examples). The fits minimize
    ``R(f) + (w / 2) (f(x) - r)^2``, so ``penalty`` must be the regularizer the regressor
    minimizes (``ridge_penalty(l2)`` for ``Ridge(alpha=l2)``). The fake label ``r`` lies one
    range width past the range end (the paper's 2 and -1 on ``[0, 1]``), the search starts
    at ``w = budget / (alpha width)`` (the paper's beta / alpha) and stops when the fits
    bracket the bound within ``alpha`` or the weights within the paper's ``Delta = alpha
    budget / |r - z_0|^3``: at most ``2 + log2(|r - z_0|^3 / (width alpha^2))`` fits beyond
    the unweighted one (``5 + 2 log2(1 / alpha)`` on ``[0, 1]`` when ``z_0`` is in range).

    As in Algorithms 4 and 5, an unweighted fit past the range end returns the end, and so
    does a fit at the first weight that reaches the end within the budget. The paper's
    test for the latter, ``R(f_lo) = R(f_hi)``, would also return the end where nothing can
    move the prediction (a linear model without intercept at ``x = 0``); this returns the
    unmoved prediction there. ``budget <= 0`` returns the unweighted prediction.

    Parameters
    ----------
    regressor
        Unfitted estimator with ``fit(X, y, sample_weight)`` and ``predict``; each fit uses
        a copy (``sklearn.base.clone`` if it has ``get_params``, else a deep copy).
    X, y, x
        History ``(n, d)``, ``(n,)`` (``n = 0``: the unweighted fit is taken to be the zero
        function with zero risk) and query point ``(d,)``.
    kind, budget, alpha, reward_range
        ``"high"`` or ``"low"``; allowed rise of the risk; precision; ``(low, high)``.
    sample_weight, penalty
        Importance weights of the history (default 1); ``penalty(fitted) -> float``.
    base
        The regressor already fitted on the history (saves one fit).

    Returns
    -------
    SearchResult
    """
    if kind not in ("high", "low"):
        raise ValueError(f"kind must be 'high' or 'low', got {kind!r}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha!r}")
    lo, hi = map(float, reward_range)
    toward, end = (1.0, hi) if kind == "high" else (-1.0, lo)
    label = end + toward * (hi - lo)
    problem = _Problem(regressor, X, y, x, label, sample_weight, penalty)
    z_lo, r_min = problem.unweighted(base)
    if budget <= 0 or toward * (z_lo - end) >= 0:
        return SearchResult(float(np.clip(z_lo, lo, hi)), problem.n_fits)
    w_lo, w_hi = 0.0, budget / (alpha * (hi - lo))
    z_hi, r_hi = problem.solve(w_hi)
    if r_hi < r_min + budget and toward * (z_hi - end) >= 0:
        return SearchResult(end, problem.n_fits)
    delta = alpha * budget / abs(label - z_lo) ** 3
    while abs(z_hi - z_lo) > alpha and w_hi - w_lo > delta:
        w = (w_lo + w_hi) / 2
        z, risk = problem.solve(w)
        if risk >= r_min + budget:
            w_hi, z_hi = w, z
        else:
            w_lo, z_lo = w, z
    return SearchResult(float(np.clip(z_hi, lo, hi)), problem.n_fits)


def ridge_penalty(l2: float) -> Callable:
    """``f -> l2 ||coef_||^2``: the regularizer of ``Ridge(alpha=l2, fit_intercept=False)``.

    >>> from types import SimpleNamespace
    >>> ridge_penalty(2.0)(SimpleNamespace(coef_=np.array([1.0, 2.0])))
    10.0
    """
    return functools.partial(_ridge_penalty, l2)


def _ridge_penalty(l2: float, model) -> float:
    coef = np.ravel(model.coef_)
    return float(l2 * coef @ coef)


class _Problem:
    """The weighted fits of one search: history plus the fake example ``(x, label)``."""

    def __init__(self, regressor, X, y, x, label, sample_weight, penalty):
        self.regressor, self.penalty, self.label = regressor, penalty, label
        self.x = np.asarray(x, dtype=float)[None, :]
        self.X = np.asarray(X, dtype=float).reshape(-1, self.x.shape[1])
        self.y = np.asarray(y, dtype=float)
        self.weight = np.ones(len(self.y)) if sample_weight is None else np.asarray(sample_weight)
        self.n_fits = 0

    def unweighted(self, base):
        """Prediction at ``x`` and risk of the fit on the history alone."""
        if len(self.y) == 0:
            return 0.0, 0.0
        if base is None:
            base = self._fit(self.X, self.y, self.weight)
        return float(base.predict(self.x)[0]), self.risk(base)

    def solve(self, w: float):
        """Prediction at ``x`` and risk of ``argmin R(f) + (w / 2) (f(x) - label)^2``."""
        model = self._fit(
            np.vstack([self.X, self.x]),
            np.r_[self.y, self.label],
            np.r_[self.weight, w / 2],
        )
        return float(model.predict(self.x)[0]), self.risk(model)

    def risk(self, model) -> float:
        total = 0.0 if self.penalty is None else float(self.penalty(model))
        if len(self.y):
            total += float(self.weight @ (model.predict(self.X) - self.y) ** 2)
        return total

    def _fit(self, X, y, weight):
        self.n_fits += 1
        return _fresh(self.regressor).fit(X, y, sample_weight=weight)


def _fresh(regressor):
    """An unfitted copy of ``regressor`` (scikit-learn's ``clone`` when it has params)."""
    if hasattr(regressor, "get_params"):
        from sklearn.base import clone

        return clone(regressor)
    return copy.deepcopy(regressor)


class BinSearchOracle(Oracle):
    """The Oracle protocol over any weighted batch regressor, with bounds by BinSearch.

    Product class: one dataset and one fitted regressor per model. ``rebuild`` freezes the
    changed models' datasets and fits each once (the predictions; a model without data
    predicts 0). ``bounds`` runs :func:`binsearch` for low and high per (context, action),
    each up to ``5 + 2 log2(1 / alpha)`` refits on the whole history (on ``[0, 1]``): slow,
    for small problems and for testing other oracles against the paper's algorithm. Bounds
    are memoized per (model, context, budget) until the next rebuild, and come clipped to
    ``reward_range``, which must be the learner's (a learner that sets its oracle's
    ``reward_range`` attribute overwrites it). Parameters are those of :func:`binsearch`.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> oracle = BinSearchOracle(Ridge(fit_intercept=False), alpha=1e-3,
    ...                          penalty=ridge_penalty(1.0))
    >>> oracle.grow(n_models=1, dim=2)
    >>> for x, y in [([1.0, 0.0], 1.0), ([1.0, 1.0], 0.0)] * 5:
    ...     oracle.learn(np.array(x), 0, y)
    >>> oracle.rebuild()
    >>> phi = np.array([[[1.0, 0.0]]])
    >>> prediction, low, high = oracle.bounds(phi, np.array([0]), budget=1.0)
    >>> float(prediction[0, 0].round(3)), float(low[0, 0].round(2)), float(high[0, 0])
    (0.732, 0.35, 1.0)

    """

    def __init__(self, regressor, *, alpha: float = 1e-3,
                 reward_range: tuple[float, float] = (0.0, 1.0), penalty: Callable | None = None):
        check_oracle_arguments(BinSearchOracle, self, locals())
        self.regressor, self.alpha, self.penalty = regressor, alpha, penalty
        self.reward_range = (float(reward_range[0]), float(reward_range[1]))
        self.n_fits = 0  # regressor fits so far (rebuilds and searches)
        self._dim = 0
        self._live: list[list[tuple[np.ndarray, float, float]]] = []
        self._frozen: list[tuple | None] = []  # (X, y, weight, fitted regressor)
        self._changed: set[int] = set()
        self._memo: dict = {}

    def grow(self, n_models: int, dim: int, max_dim: int | None = None) -> None:
        """Add empty models; a wider ``dim`` pads old examples with zeros."""
        while len(self._live) < n_models:
            self._live.append([])
            self._frozen.append(None)
        self._dim = max(self._dim, dim)

    def learn(self, x: np.ndarray, model: int, y: float, weight: float = 1.0) -> None:
        """Store one example of ``model``."""
        self._live[model].append((np.array(x, dtype=float), float(y), float(weight)))
        self._changed.add(model)

    def rebuild(self) -> None:
        """Freeze the datasets of the models that learned and fit each once."""
        for model in sorted(self._changed):
            rows = self._live[model]
            X = np.zeros((len(rows), self._dim))
            for i, (x, _, _) in enumerate(rows):
                X[i, : len(x)] = x
            y, weight = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
            fitted = _fresh(self.regressor).fit(X, y, sample_weight=weight)
            self.n_fits += 1
            self._frozen[model] = (X, y, weight, fitted)
        self._changed.clear()
        self._memo.clear()

    def predict(self, phi: np.ndarray, models) -> np.ndarray:
        """Predictions of the frozen fits, shape ``(n, K)`` (0 for models without data)."""
        ids = _model_ids(models, phi.shape[1])
        out = np.zeros(phi.shape[:2])
        for k, model in enumerate(ids.tolist()):
            frozen = self._frozen[model] if model < len(self._frozen) else None
            if frozen is not None:
                out[:, k] = frozen[3].predict(phi[:, k, : frozen[0].shape[1]])
        return out

    def bounds(self, phi: np.ndarray, models, budget: float):
        """Prediction and BinSearch's low and high per (context, action), clipped."""
        ids = _model_ids(models, phi.shape[1])
        low, high = np.empty(phi.shape[:2]), np.empty(phi.shape[:2])
        for i in range(phi.shape[0]):
            for k, model in enumerate(ids.tolist()):
                low[i, k], high[i, k] = self._search(phi[i, k], model, budget)
        return self.predict(phi, models), low, high

    def _search(self, x: np.ndarray, model: int, budget: float) -> tuple[float, float]:
        key = (model, float(budget), x.tobytes())
        if key not in self._memo:
            frozen = self._frozen[model] if model < len(self._frozen) else None
            X, y, weight, base = frozen or (np.zeros((0, len(x))), np.zeros(0), np.zeros(0), None)
            if X.shape[1] < len(x):  # features new since the rebuild: zeros in the history
                X, base = np.pad(X, [(0, 0), (0, len(x) - X.shape[1])]), None
            result = [
                binsearch(self.regressor, X, y, x, kind=kind,
                          budget=budget, alpha=self.alpha, reward_range=self.reward_range,
                          sample_weight=weight, penalty=self.penalty, base=base)
                for kind in ("low", "high")
            ]
            self.n_fits += sum(r.n_fits for r in result)
            self._memo[key] = (result[0].bound, result[1].bound)
        return self._memo[key]


def _model_ids(models, n_columns: int) -> np.ndarray:
    """Model ids of the columns, from an int array or a slice of consecutive ids."""
    if isinstance(models, slice):
        return np.arange(models.start or 0, models.stop, models.step or 1)
    return np.broadcast_to(np.asarray(models, dtype=np.intp), (n_columns,))

