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
trees (LightGBM ~40 ms at n = 4,000), encodes all rows and inverts ``A``, the leaf Gram
matrix plus the penalty: O(n T^2) for the Gram matrix and D^3 / 2 multiply-adds for its
Cholesky inverse (LAPACK ``potrf``, ``potri``), or, from fewer rows than D / 3, O(n^2 D +
n D^2) by Woodbury's identity from the prior; other rebuilds fold the ``p`` new rows in by
a Woodbury update, O(D^2 p), or by a fresh inverse when p > D/2 (the Gram matrix is kept
for it, so only the new rows are added). A block of decisions costs, per model, a walk of
each tree per row (``_trees.c``, no call overhead) and a ``T x T`` gather of the inverse
per row, tree pair by tree pair so that the inverse is read once per 1,024 rows (~1.5 µs
per row at T = 100); a block seen again before the next rebuild (a holdout) is answered
from the last two. The compiled kernels (``_trees.c``: tree walks, Gram matrices, the
gathers) have a numpy reference here (``kernels = False``: LightGBM's ``pred_leaf``).
Memory: O(n (d + T)) for the rows and their leaves, 8 D^2 bytes for the inverse (82 MB at
D = 3,200) and as much for a kept Gram matrix. Limits: the bounds ignore the uncertainty
of the structure (the paper's heuristic), so they are narrower than the version space of
all ensembles; with a constant beta they widen as refits add leaves; features that appear
after a fit are ignored until the next one. Needs LightGBM or scikit-learn (and SciPy,
which both require).
"""

from __future__ import annotations

import math

import numpy as np

from regcb_stream.oracles.base import Capabilities, Ellipsoid
from regcb_stream.oracles.leaf_ridge import LeafRidge
from regcb_stream.parameters import check_oracle_arguments

try:
    from regcb_stream.oracles import _trees
except ImportError:  # not built (a source tree without `pip install`): the numpy reference
    _trees = None

FOREST_ROWS = 64  # moments of at most this many shared rows walk every model's trees at once


class TreesOracle(Ellipsoid):
    """Gradient-boosted trees per model; bounds from the leaf-value ridge ellipsoid.

    Parameters
    ----------
    n_estimators, max_depth, learning_rate
        The ensemble (the paper's GB5: 100 trees of depth 5, at most 17: LightGBM's 2^17
        leaves; rate 0.1).
    backend
        ``"lightgbm"`` (``num_leaves = 2^max_depth``, its other defaults, one thread) or
        ``"sklearn"`` (``GradientBoostingRegressor``). ``docs/results/oracle_trees.md``
        compares them on letter: LightGBM fits 2.5-25x faster as accurately and looks
        leaves up 25x faster.
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

    capabilities = Capabilities(ellipsoid=True)
    kernels = _trees is not None  # False: the numpy reference and LightGBM's pred_leaf
    _last = None  # [(key, rows, prediction, variance)] of the last two moments calls
    _forest_cache = None  # every fitted model's trees in one forest, until the next rebuild

    def __init__(self, n_estimators: int = 100, max_depth: int = 5, learning_rate: float = 0.1,
                 *, backend: str = "lightgbm", l2: float = 1.0, refit_growth: float = 2.0,
                 anchor: bool = True, seed: int = 0, params: dict | None = None):
        check_oracle_arguments(TreesOracle, self, locals())
        if backend == "sklearn" and params:
            _check_sklearn_params(params)
        self.n_estimators, self.max_depth = n_estimators, max_depth
        self.learning_rate = learning_rate
        self.backend, self.l2, self.refit_growth = backend, l2, refit_growth
        self.anchor, self.seed, self.params = anchor, seed, dict(params or {})
        self._leaf_ridges: list[LeafRidge] = []
        self._dim = 0
        self._changed: set[int] = set()

    @property
    def dim(self) -> int:
        """The features of the rows so far."""
        return self._dim

    @property
    def models(self) -> list[LeafRidge]:
        """Each model's trees and leaf ridge."""
        return list(self._leaf_ridges)

    def forget_answers(self) -> None:
        """Drop the answers kept for a repeated block (kept until the next rebuild)."""
        self._last = None

    def grow(self, n_models: int, dim: int, max_dim: int | None = None) -> None:
        """Add empty models; a wider ``dim`` pads stored rows with zeros."""
        if n_models > len(self._leaf_ridges) or dim > self._dim:
            self._last = self._forest_cache = None
        self._leaf_ridges += [LeafRidge() for _ in range(n_models - len(self._leaf_ridges))]
        self._dim = max(self._dim, dim)

    def learn(self, x: np.ndarray, model: int, y: float, weight: float = 1.0) -> None:
        """Store one example of ``model`` (used at the next rebuild)."""
        state = self._leaf_ridges[model]
        state.rows.append(np.array(x, dtype=float))
        state.y.append(float(y))
        state.w.append(float(weight))
        self._changed.add(model)

    def rebuild(self) -> None:
        """Refit the trees of the models due for it, update the others' leaf values."""
        for model in sorted(self._changed):
            self._leaf_ridges[model].update(self)
        self._changed.clear()
        self._last = self._forest_cache = None

    def moments(self, phi: np.ndarray, models):
        """Prediction and ``phi^T A^-1 phi`` over leaf features per (context, action).

        The answer for the same rows and models as one of the last two calls since the
        last rebuild is that call's (a holdout scored again within an epoch, between
        blocks of decisions)."""
        n, k, dim = phi.shape
        if isinstance(models, slice):
            ids = np.arange(models.start or 0, models.stop, models.step or 1)
        else:
            ids = np.broadcast_to(np.asarray(models, dtype=np.intp), (k,))
        shared = phi.strides[1] == 0  # product class: one context row for every action
        rows = phi[:, 0, :] if shared else phi
        key = (shared, len(self._leaf_ridges), ids.tolist())
        for last in self._last or ():
            if last[0] == key and last[1].shape == rows.shape and np.array_equal(last[1], rows):
                return last[2].copy(), last[3].copy()
        prediction, variance = np.zeros((n, k)), np.full((n, k), 1.0 / self.l2)
        forest = self.forest() if shared and n <= FOREST_ROWS else None
        if forest is not None:  # a few rows: every fitted model's trees in one call
            pred, var = forest.moments(rows)
            column = forest.column[np.minimum(ids, len(forest.column) - 1)]
            fitted = (ids < len(forest.column)) & (column >= 0)  # the others: the prior's
            prediction[:, fitted], variance[:, fitted] = (pred[:, column[fitted]],
                                                          var[:, column[fitted]])
        else:
            for model in np.unique(ids).tolist():
                state = self._leaf_ridges[model] if model < len(self._leaf_ridges) else None
                if state is None or state.trees is None:
                    continue
                cols = np.flatnonzero(ids == model)
                block = rows if shared else phi[:, cols, :].reshape(-1, dim)
                pred, var = state.moments(block, self.kernels)
                prediction[:, cols] = pred.reshape(n, -1)
                variance[:, cols] = var.reshape(n, -1)
        self._last = [(key, np.array(rows), prediction.copy(), variance.copy()),
                      *(self._last or ())[:1]]
        return prediction, variance

    def __getstate__(self):
        return {**self.__dict__, "_last": None, "_forest_cache": None}

    def forest(self) -> _Forest | None:
        """Every fitted model's trees as one forest (None if a model's trees cannot be
        walked by ``_trees.leaves``: the kernels are not built, or they have categorical
        splits or come from scikit-learn); kept until the next rebuild."""
        if self._forest_cache is None and self.kernels:
            fitted = [(m, state) for m, state in enumerate(self._leaf_ridges)
                      if state.trees is not None]
            if fitted and all(state.trees.__dict__.get("nodes") is not None
                              for _, state in fitted):
                self._forest_cache = _Forest(fitted, len(self._leaf_ridges), self._dim)
        return self._forest_cache

    def fit_ensemble(self, X: np.ndarray, y: np.ndarray, w: np.ndarray):
        """This oracle's ensemble fit to rows ``X``, labels ``y`` and weights ``w``: an object
        with ``columns(X)`` (each row's leaf column in every tree, ``(n, T)``), ``n_columns``,
        each tree's first column (``offsets``), the boosted leaf ``values``, ``init`` and
        ``scale``."""
        if len(y) < 2:  # LightGBM needs two rows; one row fits a constant anyway
            return ConstantTrees(float(y @ w / w.sum()) if w.sum() > 0 else 0.0)
        if self.backend == "lightgbm":
            return LightGBMTrees(X, y, w, self)
        return SklearnTrees(X, y, w, self)


class _Forest:
    """The trees of several models as one forest, so that a few rows walk all of them in one
    ``_trees.leaves`` call (a call per model costs more than its walks for one row): node
    and leaf numbers are offset model after model. ``moments`` gives what each model's
    ``LeafRidge.moments`` gives, computed alike."""

    def __init__(self, fitted: list, n_models: int, dim: int):
        self.column = np.full(n_models, -1, np.intp)  # each model's column of the answers
        self.column[[model for model, _ in fitted]] = np.arange(len(fitted))
        self.states = [state for _, state in fitted]
        parts, bases, node_base, col_base, trees = [], [], 0, 0, [0]
        for state in self.states:
            root, depth, feature, threshold, flags, left, right = state.trees.nodes
            root, left, right = (_renumber(c, node_base, col_base) for c in (root, left, right))
            parts.append((root, depth, feature, threshold, flags, left, right))
            bases.append(col_base)
            node_base += len(feature)
            col_base += state.trees.n_columns
            trees.append(trees[-1] + len(root))
        self.nodes = tuple(np.concatenate(arrays) for arrays in zip(*parts))
        self.trees = np.array(trees)  # model j's trees: trees[j] to trees[j + 1]
        self.n_columns, self.dim = col_base, dim
        counts = np.diff(self.trees)
        #: models of as many trees together: (their columns of the answers, their trees)
        self.groups = [(np.flatnonzero(counts == t), np.concatenate(
            [np.arange(self.trees[j], self.trees[j + 1]) for j in np.flatnonzero(counts == t)]))
            for t in np.unique(counts)]
        self.theta = np.concatenate([s.theta for s in self.states])
        self.init = np.array([s.trees.init for s in self.states])
        self.scale = np.array([s.trees.scale for s in self.states])
        self.tree_base = np.repeat(bases, counts)  # each tree's model's first column

    def moments(self, X: np.ndarray):
        """Prediction and ``phi^T A^-1 phi`` of rows ``X`` ``(n, d)`` for every model,
        ``(n, models)`` each."""
        n, models = len(X), len(self.states)
        X = np.ascontiguousarray(X[:, : self.dim], dtype=float)
        cols = np.empty((n, self.trees[-1]), dtype=np.int64)
        root, depth, feature, threshold, flags, left, right = self.nodes
        _trees.leaves(X, n, X.shape[1], root, depth, len(root), feature, threshold, flags,
                      left, right, len(feature), self.n_columns, cols)
        values, sums = self.theta[cols], np.empty((n, models))
        for group, trees in self.groups:  # each model's sum over its trees, as it sums it
            picked = np.ascontiguousarray(values[:, trees])  # rows of contiguous sums
            sums[:, group] = picked.reshape(n, len(group), -1).sum(axis=2)
        prediction = self.init + self.scale * sums
        local = np.ascontiguousarray((cols - self.tree_base).T, dtype=np.int32)
        variance = np.empty((models, n))
        for j, state in enumerate(self.states):
            a, b = self.trees[j], self.trees[j + 1]
            _trees.variance(state.a_inv, local[a:b], n, b - a, len(state.a_inv), variance[j])
        return prediction, np.maximum(self.scale * self.scale * variance.T, 0.0)


def _renumber(children: np.ndarray, node_base: int, col_base: int) -> np.ndarray:
    """One model's node references in a forest: a split node ``c >= 0`` moves by
    ``node_base`` nodes, a leaf ``c < 0`` (column ``-c - 1``) by ``col_base`` columns."""
    return np.where(children >= 0, children + node_base, children - col_base)


SKLEARN_SET = ("n_estimators", "max_depth", "learning_rate", "random_state")  # by the oracle


def _check_sklearn_params(params) -> None:
    """A ``ValueError`` for ``params`` that scikit-learn's ``GradientBoostingRegressor``
    would refuse at the first fit: keys it does not take, or that the oracle sets."""
    from sklearn.ensemble import GradientBoostingRegressor

    known = set(GradientBoostingRegressor().get_params()) - set(SKLEARN_SET)
    if bad := sorted(set(params) - known):
        raise ValueError(f"the 'params' parameter of TreesOracle must hold keyword arguments "
                         f"of scikit-learn's GradientBoostingRegressor but {SKLEARN_SET} "
                         f"(backend='sklearn'); got {bad}")


class LightGBMTrees:
    """A LightGBM ensemble as leaf columns (``init`` 0: LightGBM folds the mean into the
    first tree). Pickles as its model string."""

    def __init__(self, X, y, w, oracle: TreesOracle):
        import lightgbm

        params = {"objective": "regression", "max_depth": oracle.max_depth,
                  "num_leaves": 2**oracle.max_depth, "learning_rate": oracle.learning_rate,
                  "seed": oracle.seed, "num_threads": 1, "deterministic": True,
                  "force_col_wise": True, "verbose": -1, **oracle.params}
        data = lightgbm.Dataset(X, y, weight=w, params={"verbose": -1})
        self.booster = lightgbm.train(params, data, num_boost_round=oracle.n_estimators)
        self.model = self.booster.model_to_string()
        trees = _parse_lightgbm(self.model)
        sizes = [int(tree["num_leaves"]) for tree in trees]
        self.offsets = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.intp)
        self.values = _field(trees, "leaf_value", float)
        self.n_columns, self.init, self.width = int(sum(sizes)), 0.0, X.shape[1]
        self.scale = 1 / math.sqrt(len(sizes))
        self.nodes = _node_arrays(trees, self.offsets)

    def columns(self, X: np.ndarray, kernels: bool = True) -> np.ndarray:
        """The leaf columns ``(n, T)`` of rows ``X``: LightGBM's ``pred_leaf`` plus each
        tree's first column (``_trees.leaves`` walks the trees as LightGBM does, without
        its ~50 µs per call)."""
        nodes = self.__dict__.get("nodes")
        if kernels and _trees is not None and nodes is not None:
            X = np.ascontiguousarray(X[:, : self.width], dtype=float)
            out = np.empty((len(X), len(self.offsets)), dtype=np.int64)
            root, depth, feature, threshold, flags, left, right = nodes
            _trees.leaves(X, len(X), self.width, root, depth, len(root), feature, threshold,
                          flags, left, right, len(feature), self.n_columns, out)
            return out
        if self.booster is None:
            import lightgbm

            self.booster = lightgbm.Booster(model_str=self.model)
        leaves = self.booster.predict(X[:, : self.width], pred_leaf=True, num_threads=1)
        return leaves.reshape(len(X), -1).astype(np.intp) + self.offsets

    def __getstate__(self):
        return {**self.__dict__, "booster": None}


class SklearnTrees:
    """A scikit-learn ``GradientBoostingRegressor`` as leaf columns."""

    def __init__(self, X, y, w, oracle: TreesOracle):
        from sklearn.ensemble import GradientBoostingRegressor

        self.model = GradientBoostingRegressor(
            n_estimators=oracle.n_estimators, max_depth=oracle.max_depth,
            learning_rate=oracle.learning_rate, random_state=oracle.seed, **oracle.params,
        ).fit(X, y, sample_weight=w)
        trees = [estimator.tree_ for estimator in self.model.estimators_[:, 0]]
        self.lookup = np.zeros((len(trees), max(t.node_count for t in trees)), dtype=np.intp)
        values, start, self.offsets = [], 0, np.zeros(len(trees), np.intp)
        for t, tree in enumerate(trees):
            leaves = np.flatnonzero(tree.children_left == -1)
            self.lookup[t, leaves] = start + np.arange(len(leaves))
            values.append(oracle.learning_rate * tree.value[leaves, 0, 0])
            self.offsets[t] = start
            start += len(leaves)
        self.values, self.n_columns, self.width = np.concatenate(values), start, X.shape[1]
        self.scale = 1 / math.sqrt(len(trees))
        self.init = float(self.model.predict(X[:1])[0] - self.values[self.columns(X[:1])].sum())

    def columns(self, X: np.ndarray, kernels: bool = True) -> np.ndarray:
        nodes = self.model.apply(X[:, : self.width]).astype(np.intp)
        return self.lookup[np.arange(self.lookup.shape[0]), nodes]


class ConstantTrees:
    """A single leaf (fewer than two rows)."""

    offsets = np.zeros(1, np.intp)

    def __init__(self, value: float):
        self.values, self.n_columns, self.scale, self.init = np.array([value]), 1, 1.0, 0.0

    def columns(self, X: np.ndarray, kernels: bool = True) -> np.ndarray:
        return np.zeros((len(X), 1), dtype=np.intp)


def _parse_lightgbm(model: str) -> list[dict[str, str]]:
    """The fields (``num_leaves``, ``threshold``, ...) of every tree of a LightGBM model
    string (its thresholds and leaf values in 17 digits: the doubles themselves)."""
    body = model[model.index("\nTree=") : model.index("\nend of trees")]
    return [dict(line.split("=", 1) for line in tree.splitlines()[1:] if "=" in line)
            for tree in body.split("\nTree=")[1:]]


def _field(trees: list[dict[str, str]], name: str, dtype) -> np.ndarray:
    """A field of every tree, end to end."""
    return np.array(" ".join(tree[name] for tree in trees).split(), dtype=dtype)


def _node_arrays(trees: list[dict[str, str]], offsets: np.ndarray):
    """The split nodes of every tree in one array each, as ``_trees.leaves`` takes them:
    ``(root, depth, feature, threshold, flags, left, right)``; None if a tree is not made of
    numerical splits alone (categorical or linear: then LightGBM's ``pred_leaf``)."""
    if any(int(tree.get("num_cat", "0")) or int(tree.get("is_linear", "0")) for tree in trees):
        return None
    kind = _field(trees, "decision_type", np.int64)
    if (kind & 1).any():  # a categorical split
        return None
    n_nodes = np.array([int(tree["num_leaves"]) - 1 for tree in trees])
    starts = np.r_[0, np.cumsum(n_nodes)[:-1]].astype(np.int64)
    tree_of = np.repeat(np.arange(len(trees)), n_nodes)
    start, offset = starts[tree_of], offsets[tree_of]
    # a child >= 0 is a node of its tree, < 0 its leaf ~child: column offset + ~child
    left, right = (np.where(c >= 0, start + c, -(offset + ~c) - 1)
                   for c in (_field(trees, side, np.int64) for side in ("left_child",
                                                                       "right_child")))
    flags = ((kind >> 1) & 1) | (((kind >> 2) & 3) << 1)  # default left; missing type
    root = np.where(n_nodes > 0, starts, -offsets - 1).astype(np.int64)
    level, frontier, step = np.zeros(len(kind), np.int64), root[root >= 0], 0
    while frontier.size:  # the splits' levels, a level at a time (children come later)
        step += 1
        frontier = np.r_[left[frontier], right[frontier]]
        frontier = frontier[frontier >= 0]
        level[frontier] = step
    depth = np.zeros(len(trees), np.int64)  # the walk to the deepest leaf
    np.maximum.at(depth, tree_of, level + 1)
    return (root, depth, _field(trees, "split_feature", np.int64),
            _field(trees, "threshold", float), flags, left.astype(np.int64),
            right.astype(np.int64))
