"""Gradient-boosted regression trees, the paper's GB5 oracle, with closed-form leaf values.

As in Foster et al. (2018), the ensemble's structure is fixed between refits and only its
leaf values are re-optimized, a linear problem: the prediction is linear in leaf-indicator
features, one column per leaf of every tree, here scaled by ``1 / sqrt(n_trees)`` (the
learning rate, 0.1, for 100 trees) so that every row has unit norm. Leaf values are the
ridge fit over those features, regularized toward the boosted values, and the version space
of the fixed structure is a ridge ellipsoid (bounds by
:func:`regcb_stream.bounds.ellipsoid_bounds`). A model's trees are refit on all its data at
the first rebuild after its data has grown by ``refit_growth`` (2: a doubling schedule).
Before its first fit a model predicts 0, with the prior's bounds ``-+ sqrt(budget / l2)``.

Costs per model (``n`` rows, ``T`` trees, ``D <= T 2^max_depth`` leaves): a refit fits the
trees (LightGBM ~40 ms at n = 4,000), encodes all rows and inverts the ``D x D`` leaf Gram
matrix, O(n T^2 + D^3); other rebuilds fold the ``p`` new rows in by a Woodbury update,
O(D^2 p) (a fresh inverse when p > D/2). A decision costs, per model, one leaf lookup
(LightGBM's ``pred_leaf``, ~50 µs of call overhead) and a ``T x T`` gather of the inverse.
Memory: O(n (d + T)) for the rows and their leaves, 8 D^2 bytes for the inverse (82 MB at
D = 3,200). Limits: the bounds ignore the uncertainty of the structure (the paper's
heuristic), so they are narrower than the version space of all ensembles; with a constant
beta they widen as refits add leaves; features that appear after a fit are ignored until
the next one. Needs LightGBM or scikit-learn (and SciPy, which both require).
"""

from __future__ import annotations

import math

import numpy as np

from regcb_stream.oracles.base import Ellipsoid, learn_row_by_row

BACKENDS = ("lightgbm", "sklearn")


class TreesOracle(Ellipsoid):
    """Gradient-boosted trees per model; bounds from the leaf-value ridge ellipsoid.

    Parameters
    ----------
    n_estimators, max_depth, learning_rate
        The ensemble (the paper's GB5: 100 trees of depth 5; rate 0.1).
    backend
        ``"lightgbm"`` (``num_leaves = 2^max_depth``, its other defaults, one thread) or
        ``"sklearn"`` (``GradientBoostingRegressor``). ``docs/oracle_trees.md`` compares them
        on letter: LightGBM fits 2.5-25x faster as accurately and looks leaves up 25x faster.
    l2, anchor
        Ridge penalty on the leaf values' departure from the boosted values (``anchor``)
        or from 0.
    refit_growth, seed, params
        Data growth factor (> 1) that triggers a refit; seed of the fits; extra keyword
        arguments for the backend.

    Examples
    --------
    >>> oracle = TreesOracle(n_estimators=10, max_depth=2)
    >>> oracle.grow(n_models=1, dim=1)
    >>> for i in range(100):
    ...     oracle.learn(np.array([i / 100]), 0, float(i >= 50))
    >>> oracle.rebuild()
    >>> phi = np.array([[[0.2]], [[0.8]]])
    >>> prediction, low, high = oracle.bounds(phi, np.array([0]), budget=0.1)
    >>> prediction.round(2).ravel(), bool(((low < prediction) & (prediction < high)).all())
    (array([0.  , 0.99]), True)

    """

    def __init__(self, n_estimators: int = 100, max_depth: int = 5, learning_rate: float = 0.1,
                 *, backend: str = "lightgbm", l2: float = 1.0, refit_growth: float = 2.0,
                 anchor: bool = True, seed: int = 0, params: dict | None = None):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if not (l2 > 0 and refit_growth > 1 and n_estimators >= 1 and max_depth >= 1):
            raise ValueError("need l2 > 0, refit_growth > 1, n_estimators >= 1, max_depth >= 1")
        self.n_estimators, self.max_depth = n_estimators, max_depth
        self.learning_rate = learning_rate
        self.backend, self.l2, self.refit_growth = backend, l2, refit_growth
        self.anchor, self.seed, self.params = anchor, seed, dict(params or {})
        self._models: list[_LeafRidge] = []
        self._dim = 0
        self._changed: set[int] = set()

    def grow(self, n_models: int, dim: int) -> None:
        """Add empty models; a wider ``dim`` pads stored rows with zeros."""
        self._models += [_LeafRidge() for _ in range(n_models - len(self._models))]
        self._dim = max(self._dim, dim)

    def learn(self, x: np.ndarray, model: int, y: float, weight: float = 1.0) -> None:
        """Store one example of ``model`` (used at the next rebuild)."""
        state = self._models[model]
        state.rows.append(np.array(x, dtype=float))
        state.y.append(float(y))
        state.w.append(float(weight))
        self._changed.add(model)

    learn_many = learn_row_by_row

    def rebuild(self) -> None:
        """Refit the trees of the models due for it, update the others' leaf values."""
        for model in sorted(self._changed):
            self._models[model].update(self)
        self._changed.clear()

    def moments(self, phi: np.ndarray, models):
        """Prediction and ``phi^T A^-1 phi`` over leaf features per (context, action)."""
        n, k, dim = phi.shape
        if isinstance(models, slice):
            ids = np.arange(models.start or 0, models.stop, models.step or 1)
        else:
            ids = np.broadcast_to(np.asarray(models, dtype=np.intp), (k,))
        prediction, variance = np.zeros((n, k)), np.full((n, k), 1.0 / self.l2)
        shared = phi.strides[1] == 0  # product class: one context row for every action
        for model in np.unique(ids).tolist():
            state = self._models[model] if model < len(self._models) else None
            if state is None or state.trees is None:
                continue
            cols = np.flatnonzero(ids == model)
            rows = phi[:, 0, :] if shared else phi[:, cols, :].reshape(-1, dim)
            pred, var = state.moments(rows)
            prediction[:, cols] = pred.reshape(n, -1)
            variance[:, cols] = var.reshape(n, -1)
        return prediction, variance

    def _fit_trees(self, X: np.ndarray, y: np.ndarray, w: np.ndarray):
        if len(y) < 2:  # LightGBM needs two rows; one row fits a constant anyway
            return _Constant(float(y @ w / w.sum()) if w.sum() > 0 else 0.0)
        if self.backend == "lightgbm":
            return _LightGBMTrees(X, y, w, self)
        return _SklearnTrees(X, y, w, self)


class _LeafRidge:
    """One model: its stored rows, tree structure and ridge over leaf features."""

    def __init__(self):
        self.rows: list[np.ndarray] = []
        self.y: list[float] = []
        self.w: list[float] = []
        self.n_used = self.n_fit = self.updates = 0
        self.trees = self.cols = self.a_inv = self.theta = None

    def update(self, oracle: TreesOracle) -> None:
        """Fold the rows stored since the last update in (refitting the trees if due)."""
        n, y, w = len(self.y), np.array(self.y), np.array(self.w)
        if self.trees is None or n >= oracle.refit_growth * self.n_fit:
            X = _stack(self.rows, oracle._dim)
            self.trees, self.n_fit = oracle._fit_trees(X, y, w), n
            self.cols = self.trees.columns(X)
            self._invert(w, oracle.l2)
        else:
            new = self.trees.columns(_stack(self.rows[self.n_used :], oracle._dim))
            self.cols = np.vstack([self.cols, new])
            if 2 * len(new) > len(self.a_inv) or self.updates + len(new) > len(self.a_inv):
                self._invert(w, oracle.l2)
            else:
                self._woodbury(new, w[self.n_used :])
        self.n_used = n
        scale, size = self.trees.scale, len(self.a_inv)
        prior = self.trees.values / scale if oracle.anchor else np.zeros(size)
        residual = y - self.trees.init - scale * prior[self.cols].sum(axis=1)
        moment = np.bincount(self.cols.ravel(), np.repeat(w * residual, self.cols.shape[1]), size)
        self.theta = prior + self.a_inv @ (scale * moment)

    def moments(self, rows: np.ndarray):
        """Prediction and ``phi^T A^-1 phi`` of feature rows ``(N, d)``."""
        cols, scale = self.trees.columns(rows), self.trees.scale
        prediction = self.trees.init + scale * self.theta[cols].sum(axis=1)
        variance = np.empty(len(cols))
        for start in range(0, len(cols), 64):  # (64, T, T) blocks of the inverse at a time
            block = cols[start : start + 64]
            gathered = self.a_inv[block[:, :, None], block[:, None, :]]
            variance[start : start + 64] = gathered.sum(axis=(1, 2))
        return prediction, np.maximum(scale * scale * variance, 0.0)

    def _invert(self, w: np.ndarray, l2: float) -> None:
        size = self.trees.n_columns
        gram = (_design(self.cols, size).T @ _design(self.cols, size, w)).toarray()
        self.a_inv = np.linalg.inv(l2 * np.eye(size) + self.trees.scale**2 * gram)
        self.updates = 0

    def _woodbury(self, cols: np.ndarray, w: np.ndarray) -> None:
        """``A^-1`` after adding ``scale^2 Phi^T W Phi`` of new rows (Woodbury identity)."""
        keep = w > 0
        design = _design(cols[keep], len(self.a_inv))
        spread = design @ self.a_inv  # Phi A^-1, (p, D)
        core = np.diag(1.0 / (self.trees.scale**2 * w[keep])) + design @ spread.T
        self.a_inv -= spread.T @ np.linalg.solve(core, spread)
        self.updates += len(cols)


class _LightGBMTrees:
    """A LightGBM ensemble as leaf columns (``init`` 0: LightGBM folds the mean into the
    first tree). Pickles as its model string."""

    def __init__(self, X, y, w, oracle: TreesOracle):
        import lightgbm

        params = {"objective": "regression", "max_depth": oracle.max_depth,
                  "num_leaves": 2**oracle.max_depth, "learning_rate": oracle.learning_rate,
                  "seed": oracle.seed, "num_threads": 1, "deterministic": True,
                  "force_col_wise": True, "verbose": -1, **oracle.params}
        data = lightgbm.Dataset(X, y, weight=w, params={"verbose": -1})
        self._booster = lightgbm.train(params, data, num_boost_round=oracle.n_estimators)
        self.model = self._booster.model_to_string()
        sizes = [tree["num_leaves"] for tree in self._booster.dump_model()["tree_info"]]
        self.offsets = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.intp)
        self.values = np.array([self._booster.get_leaf_output(t, leaf)
                                for t, size in enumerate(sizes) for leaf in range(size)])
        self.n_columns, self.init, self.width = int(sum(sizes)), 0.0, X.shape[1]
        self.scale = 1 / math.sqrt(len(sizes))

    def columns(self, X: np.ndarray) -> np.ndarray:
        if self._booster is None:
            import lightgbm

            self._booster = lightgbm.Booster(model_str=self.model)
        leaves = self._booster.predict(X[:, : self.width], pred_leaf=True, num_threads=1)
        return leaves.reshape(len(X), -1).astype(np.intp) + self.offsets

    def __getstate__(self):
        return {**self.__dict__, "_booster": None}


class _SklearnTrees:
    """A scikit-learn ``GradientBoostingRegressor`` as leaf columns."""

    def __init__(self, X, y, w, oracle: TreesOracle):
        from sklearn.ensemble import GradientBoostingRegressor

        self.model = GradientBoostingRegressor(
            n_estimators=oracle.n_estimators, max_depth=oracle.max_depth,
            learning_rate=oracle.learning_rate, random_state=oracle.seed, **oracle.params,
        ).fit(X, y, sample_weight=w)
        trees = [estimator.tree_ for estimator in self.model.estimators_[:, 0]]
        self.lookup = np.zeros((len(trees), max(t.node_count for t in trees)), dtype=np.intp)
        values, start = [], 0
        for t, tree in enumerate(trees):
            leaves = np.flatnonzero(tree.children_left == -1)
            self.lookup[t, leaves] = start + np.arange(len(leaves))
            values.append(oracle.learning_rate * tree.value[leaves, 0, 0])
            start += len(leaves)
        self.values, self.n_columns, self.width = np.concatenate(values), start, X.shape[1]
        self.scale = 1 / math.sqrt(len(trees))
        self.init = float(self.model.predict(X[:1])[0] - self.values[self.columns(X[:1])].sum())

    def columns(self, X: np.ndarray) -> np.ndarray:
        nodes = self.model.apply(X[:, : self.width]).astype(np.intp)
        return self.lookup[np.arange(self.lookup.shape[0]), nodes]


class _Constant:
    """A single leaf (fewer than two rows)."""

    def __init__(self, value: float):
        self.values, self.n_columns, self.scale, self.init = np.array([value]), 1, 1.0, 0.0

    def columns(self, X: np.ndarray) -> np.ndarray:
        return np.zeros((len(X), 1), dtype=np.intp)


def _stack(rows: list[np.ndarray], dim: int) -> np.ndarray:
    """Rows of various widths as an ``(n, dim)`` array, padded with zeros."""
    out = np.zeros((len(rows), dim))
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def _design(cols: np.ndarray, size: int, weight: np.ndarray | None = None):
    """Sparse leaf-indicator matrix ``(n, size)`` of leaf columns ``(n, T)``, rows scaled
    by ``weight``."""
    from scipy import sparse

    n, t = cols.shape
    data = np.ones(n * t) if weight is None else np.repeat(weight, t)
    return sparse.csr_matrix((data, cols.ravel(), np.arange(0, n * t + 1, t)), shape=(n, size))
