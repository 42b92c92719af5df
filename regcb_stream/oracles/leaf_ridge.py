"""The leaf values of a fixed tree ensemble as a ridge over its leaf indicators: the GB5
oracle's version space (`regcb_stream.oracles.trees`), with its linear algebra."""

from __future__ import annotations

import numpy as np

try:
    from regcb_stream.oracles import _trees
except ImportError:  # not built: the numpy reference
    _trees = None


class LeafRidge:
    """One model: its stored rows, tree structure and ridge over leaf features."""


    def __init__(self):
        self.rows: list[np.ndarray] = []
        self.y: list[float] = []
        self.w: list[float] = []
        self.n_used = self.n_fit = self.updates = 0
        self.trees = self.cols = self.a_inv = self.theta = None
        self.gram_rows = self.stacked_rows = 0  # rows in the kept Gram matrix and stacked

    def update(self, oracle) -> None:
        """Fold the rows stored since the last update in (refitting the trees if due)."""
        n, y, w = len(self.y), np.array(self.y), np.array(self.w)
        X = self._stacked(oracle.dim)
        if self.trees is None or n >= oracle.refit_growth * self.n_fit:
            self.trees, self.n_fit = oracle.fit_ensemble(X, y, w), n
            self.cols = self.trees.columns(X, oracle.kernels)
            self.gram_rows = 0  # a new structure: no Gram matrix of it yet
            self._invert(w, oracle.l2, oracle.kernels)
        else:
            new = self.trees.columns(X[self.n_used :], oracle.kernels)
            self.cols = np.vstack([self.cols, new])
            if 2 * len(new) > len(self.a_inv) or self.updates + len(new) > len(self.a_inv):
                self._invert(w, oracle.l2, oracle.kernels)
            else:
                self._woodbury(new, w[self.n_used :], oracle.kernels)
        self.n_used = n
        scale, size = self.trees.scale, len(self.a_inv)
        prior = self.trees.values / scale if oracle.anchor else np.zeros(size)
        residual = y - self.trees.init - scale * prior[self.cols].sum(axis=1)
        moment = np.bincount(self.cols.ravel(), np.repeat(w * residual, self.cols.shape[1]), size)
        self.theta = prior + self.a_inv @ (scale * moment)

    def _stacked(self, dim: int) -> np.ndarray:
        """The stored rows as an ``(n, dim)`` array (padded with zeros), kept between
        updates: only the rows learned since the last one are copied in."""
        X, n = self.__dict__.get("_X"), len(self.rows)
        done = 0 if X is None else self.stacked_rows
        if X is None or X.shape[1] < dim or len(X) < n:
            grown = np.zeros((max(n, 2 * done), dim))
            if X is not None:
                grown[:done, : X.shape[1]] = X[:done]
            X = self._X = grown
        X[done:n] = _stack(self.rows[done:n], X.shape[1])
        self.stacked_rows = n
        return X[:n, :dim]

    def moments(self, rows: np.ndarray, kernels: bool = True):
        """Prediction and ``phi^T A^-1 phi`` of feature rows ``(N, d)``."""
        cols, scale = self.trees.columns(rows, kernels), self.trees.scale
        prediction = self.trees.init + scale * self.theta[cols].sum(axis=1)
        variance = variances(self.a_inv, cols, kernels)
        return prediction, np.maximum(scale * scale * variance, 0.0)

    def _invert(self, w: np.ndarray, l2: float, kernels: bool = True) -> None:
        """``A^-1`` from scratch (exactly symmetric), in the model's work matrix: from
        fewer rows than a third of the leaves, by Woodbury's identity from the prior (an
        ``n x n`` factorization; the faster below ~0.4), else by a Cholesky factorization
        of ``A``, whose Gram matrix is kept when an epoch's rows may outnumber half the
        leaves before the next refit (at least as many rows as leaves): a fresh inverse
        then adds only the new rows to it."""
        size, scale, n = self.trees.n_columns, self.trees.scale, len(self.cols)
        a_inv, keep = self._matrix(size), w > 0
        if 3 * np.count_nonzero(keep) < size:
            self._kept_gram = None
            _dual_inverse(a_inv, self.cols[keep], w[keep], scale, l2, kernels)
        elif self.gram_rows or n >= size:
            start, gram = self.gram_rows, self.__dict__.get("_kept_gram")
            if gram is None or gram.shape != (size, size):
                start, gram = 0, np.empty((size, size))
                self._kept_gram = gram
            add_gram(self.cols[start:], scale**2 * w[start:n], gram, kernels, clear=start == 0)
            self.gram_rows = n
            if kernels and _trees is not None:  # only the triangle the factorization reads
                _trees.lower_plus(gram, a_inv, size, l2)
            else:
                np.copyto(a_inv, gram)
                a_inv.flat[:: size + 1] += l2
            _spd_inverse(a_inv, kernels)
        else:
            self._kept_gram = None
            add_gram(self.cols, scale**2 * w, a_inv, kernels)
            a_inv.flat[:: size + 1] += l2
            _spd_inverse(a_inv, kernels)
        self.a_inv, self.updates = a_inv, 0

    def _matrix(self, size: int) -> np.ndarray:
        """A ``(size, size)`` work matrix over the model's storage (the inverse it
        replaces): a new matrix of tens of megabytes costs a page fault per 4 KB."""
        store = self.__dict__.get("_store")
        if store is None or store.size < size * size:
            self.a_inv = self._store = None  # freed before the new storage is made
            store = self._store = np.empty(size * size)
        return store[: size * size].reshape(size, size)

    def _woodbury(self, cols: np.ndarray, w: np.ndarray, kernels: bool = True) -> None:
        """``A^-1`` after adding ``scale^2 Phi^T W Phi`` of new rows (Woodbury identity):
        ``A^-1 - Z^T Z`` with ``Z = L^-1 Phi A^-1`` and ``L L^T = W^-1 / scale^2 + Phi A^-1
        Phi^T``, a symmetric rank-``p`` update."""
        from scipy.linalg import solve_triangular

        keep = w > 0
        self.updates += len(cols)
        if not keep.any():
            return
        design = _design(cols[keep], len(self.a_inv))
        spread = _spread(self.a_inv, cols[keep], kernels)  # Phi A^-1, (p, D)
        core = design @ spread.T
        core.flat[:: len(core) + 1] += 1.0 / (self.trees.scale**2 * w[keep])
        factor = np.linalg.cholesky(core)
        z = solve_triangular(factor, spread, lower=True, check_finite=False)
        _subtract_gram(self.a_inv, z, kernels)

    def __getstate__(self):
        state = {**self.__dict__, "a_inv": None if self.a_inv is None else self.a_inv.copy()}
        for work in ("_store", "_X", "_X_n", "_kept_gram", "_gram_n"):  # work arrays
            state.pop(work, None)
        return state


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


def variances(a_inv: np.ndarray, cols: np.ndarray, kernels: bool = True) -> np.ndarray:
    """``phi^T A^-1 phi`` of the leaf-indicator rows of leaf columns ``(n, T)`` (``A^-1``
    exactly symmetric): a ``T x T`` gather per row, in ``_trees.c`` tree pair by tree
    pair (``kernels``) or in numpy, 64 rows at a time."""
    n, t = cols.shape
    out = np.empty(n)
    if kernels and _trees is not None:
        _trees.variance(a_inv, np.ascontiguousarray(cols.T, dtype=np.int32), n, t,
                        len(a_inv), out)
        return out
    for start in range(0, n, 64):  # (64, T, T) blocks of the inverse at a time
        block = cols[start : start + 64]
        out[start : start + 64] = a_inv[block[:, :, None], block[:, None, :]].sum(axis=(1, 2))
    return out


def _spread(a_inv: np.ndarray, cols: np.ndarray, kernels: bool = True) -> np.ndarray:
    """``Phi A^-1`` ``(p, D)`` of the leaf-indicator rows of leaf columns ``(p, T)``."""
    if kernels and _trees is not None:
        out = np.empty((len(cols), len(a_inv)))
        _trees.spread(a_inv, np.ascontiguousarray(cols, dtype=np.int32), len(cols),
                      cols.shape[1], len(a_inv), out)
        return out
    return _design(cols, len(a_inv)) @ a_inv


def add_gram(cols: np.ndarray, w: np.ndarray, out: np.ndarray, kernels: bool = True,
          clear: bool = True) -> None:
    """``Phi^T W Phi`` ``(D, D)`` of the leaf-indicator rows of leaf columns ``(n, T)``
    into ``out`` (added to it unless ``clear``): its lower triangle and diagonal
    (``_trees.gram``; what the Cholesky factorization reads) or all of it (the numpy
    reference)."""
    if kernels and _trees is not None:
        _trees.gram(np.ascontiguousarray(cols.T, dtype=np.int32),
                    np.ascontiguousarray(w, dtype=float), len(cols), cols.shape[1], len(out),
                    out, clear)
        return
    gram = (_design(cols, len(out)).T @ _design(cols, len(out), w)).toarray()
    if clear:
        out[...] = gram
    else:
        out += gram


def _spd_inverse(a: np.ndarray, kernels: bool = True) -> None:
    """Inverts a symmetric positive definite matrix ``a`` (C order; only its lower
    triangle and diagonal are read) in place by its Cholesky factorization (LAPACK
    ``potrf``, ``potri``: half the work of a general inverse), exactly symmetric."""
    from scipy.linalg import lapack

    # a.T is the matrix in Fortran order, whose upper triangle is a's lower one
    factor, info = lapack.dpotrf(a.T, lower=0, overwrite_a=1, clean=0)
    if info == 0:
        factor, info = lapack.dpotri(factor, lower=0, overwrite_c=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"leaf Gram matrix not positive definite (info {info})")
    if not np.shares_memory(factor, a):
        a[...] = factor.T
    _mirror(a, kernels)  # Fortran's upper triangle of a.T is a's lower one


def _dual_inverse(out: np.ndarray, cols: np.ndarray, w: np.ndarray, scale: float, l2: float,
                  kernels: bool = True) -> None:
    """``(l2 I + scale^2 Phi^T W Phi)^-1`` of ``n`` rows (weights > 0) into ``out``
    ``(D, D)`` by Woodbury's identity from ``(l2 I)^-1``: ``(I - Z^T Z) / l2`` with ``Z =
    L^-1 Phi`` and ``L L^T = Phi Phi^T + l2 W^-1 / scale^2`` (``n x n``), O(n^2 D + n D^2)
    instead of O(D^3)."""
    from scipy.linalg import blas, solve_triangular

    size = len(out)
    if len(cols) == 0:
        out[...] = 0.0
        out.flat[:: size + 1] = 1.0 / l2
        return
    design = _design(cols, size)
    core = (design @ design.T).toarray()  # leaves shared by two rows
    core.flat[:: len(core) + 1] += l2 / (scale**2 * w)
    z = solve_triangular(np.linalg.cholesky(core), design.toarray(), lower=True,
                         check_finite=False)
    result = blas.dsyrk(-1.0 / l2, z.T, beta=0.0, c=out.T, trans=0, lower=0, overwrite_c=1)
    if not np.shares_memory(result, out):
        out[...] = result.T
    out.flat[:: size + 1] += 1.0 / l2
    _mirror(out, kernels)  # the lower triangle (Fortran's upper of out.T) is set


def _subtract_gram(a_inv: np.ndarray, z: np.ndarray, kernels: bool = True) -> None:
    """``a_inv -= z^T z`` in place (BLAS ``syrk`` on one triangle, then its mirror)."""
    from scipy.linalg import blas

    out = blas.dsyrk(-1.0, z.T, beta=1.0, c=a_inv.T, trans=0, lower=0, overwrite_c=1)
    if not np.shares_memory(out, a_inv):
        a_inv[...] = out.T
    _mirror(a_inv, kernels)


def _mirror(a: np.ndarray, kernels: bool = True) -> np.ndarray:
    """``a`` (C order) made symmetric in place: its upper triangle the mirror of the lower
    one."""
    if kernels and _trees is not None:
        _trees.mirror(a, len(a), True)
        return a
    upper = np.triu_indices(len(a), 1)
    a[upper] = a.T[upper]
    return a
