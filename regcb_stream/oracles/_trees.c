/* Compiled kernels of TreesOracle (the GB5 oracle): LightGBM tree walks and the
 * leaf-indicator algebra of its ridge over leaf values (quadratic forms, Gram matrices,
 * rows of Phi A^-1).  regcb_stream/oracles/trees.py holds the numpy reference of each
 * (used when this module is not built; the tests compare the two) and documents the
 * arrays; this file only does the arithmetic, on contiguous buffers.
 *
 * A row of leaf features has exactly one nonzero (1) per tree: its leaf's column, so a
 * row is the T column indices of its leaves, increasing with the tree (the columns of
 * tree t come before those of tree t + 1).  The quadratic forms and Gram matrices take
 * rows transposed, cols (T, n) int32, so that one tree's leaves of consecutive rows are
 * contiguous, and visit the D x D matrix tree pair by tree pair: the entries of a pair
 * (t, u) lie in one small block (the leaves of t by the leaves of u, at most 2^depth
 * squared), which stays in the cache while every row of a chunk is gathered from it.
 * Row by row (all T^2 pairs of one row, then the next row) each gather is a cache miss
 * of a matrix of tens of megabytes; pair by pair the matrix is read once per chunk.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_buffers.h"

#define CHUNK 1024 /* rows per pass over the matrix: their sums stay in the L1 cache */

/* out[r] = sum_t M[c_t, c_t] + 2 sum_{t < u} M[c_t, c_u] of each row r (M symmetric):
 * phi^T M phi of a leaf-indicator row, summed in a fixed order */
WIDE static void variance(const double *M, const int32_t *cols, Py_ssize_t n, Py_ssize_t T,
                          Py_ssize_t D, double *out) {
    double diag[CHUNK], off[CHUNK];
    int64_t row[CHUNK];
    for (Py_ssize_t start = 0; start < n; start += CHUNK) {
        Py_ssize_t m = n - start < CHUNK ? n - start : CHUNK;
        for (Py_ssize_t r = 0; r < m; r++) diag[r] = off[r] = 0.0;
        for (Py_ssize_t t = 0; t < T; t++) {
            const int32_t *ct = cols + t * n + start;
            for (Py_ssize_t r = 0; r < m; r++) {
                row[r] = (int64_t)ct[r] * D;
                diag[r] += M[row[r] + ct[r]];
            }
            for (Py_ssize_t u = t + 1; u < T; u++) {
                const int32_t *cu = cols + u * n + start;
                for (Py_ssize_t r = 0; r < m; r++) off[r] += M[row[r] + cu[r]];
            }
        }
        for (Py_ssize_t r = 0; r < m; r++) out[start + r] = diag[r] + 2.0 * off[r];
    }
}

/* G[c_u, c_t] += w_r for every row r and t <= u: the lower triangle and the diagonal of
 * the weighted Gram matrix Phi^T W Phi (zeroed first if clear; the upper triangle is not
 * touched), tree pair by tree pair.  Rows of two trees often share a leaf pair, so consecutive
 * additions to one entry would wait for each other: a pair's block is summed in COPIES
 * copies (row r into copy r % COPIES), added up at the end, when the rows outnumber the
 * block twice (and copies is not NULL).  span[t] is the first leaf column of tree t and
 * span[T + t] its number of columns (at most MAX_LEAVES with copies). */
#define COPIES 4
#define MAX_LEAVES 64

WIDE static void gram(const int32_t *cols, const double *w, Py_ssize_t n, Py_ssize_t T,
                      Py_ssize_t D, const int32_t *span, double *G, double *copies, int clear) {
    if (clear)
        for (Py_ssize_t i = 0; i < D; i++) memset(G + i * D, 0, (i + 1) * sizeof(double));
    for (Py_ssize_t t = 0; t < T; t++) {
        const int32_t *ct = cols + t * n, first_t = span[t], size_t_ = span[T + t];
        for (Py_ssize_t u = t; u < T; u++) {
            const int32_t *cu = cols + u * n, first_u = span[u], size_u = span[T + u];
            const Py_ssize_t block = (Py_ssize_t)size_t_ * size_u;
            if (!copies || n < 2 * block) {
                for (Py_ssize_t r = 0; r < n; r++) G[(int64_t)cu[r] * D + ct[r]] += w[r];
                continue;
            }
            memset(copies, 0, COPIES * block * sizeof(double));
            Py_ssize_t r = 0;
            for (; r + COPIES <= n; r += COPIES)
                for (int k = 0; k < COPIES; k++)
                    copies[k * block + (cu[r + k] - first_u) * size_t_ + ct[r + k] - first_t] +=
                        w[r + k];
            for (; r < n; r++)
                copies[(cu[r] - first_u) * size_t_ + ct[r] - first_t] += w[r];
            for (Py_ssize_t i = 0; i < size_u; i++)
                for (Py_ssize_t j = 0; j < size_t_; j++) {
                    double sum = 0.0;
                    for (int k = 0; k < COPIES; k++) sum += copies[k * block + i * size_t_ + j];
                    G[(first_u + i) * D + first_t + j] += sum;
                }
        }
    }
}

/* out[r, :] = sum_t M[c_t(r), :] of p leaf-indicator rows, cols (p, T) int32 (rows of
 * Phi M), a panel of PANEL columns at a time: the panel's part of M (a few megabytes) stays
 * in the cache while every row gathers from it, and a row's PANEL sums in L1 */
#define PANEL 256

WIDE static void spread(const double *M, const int32_t *cols, Py_ssize_t p, Py_ssize_t T,
                        Py_ssize_t D, double *out) {
    for (Py_ssize_t j0 = 0; j0 < D; j0 += PANEL) {
        const Py_ssize_t width = D - j0 < PANEL ? D - j0 : PANEL;
        for (Py_ssize_t r = 0; r < p; r++) {
            const int32_t *c = cols + r * T;
            double sum[PANEL] = {0.0};
            if (width == PANEL) {
                for (Py_ssize_t t = 0; t < T; t++) {
                    const double *row = M + (int64_t)c[t] * D + j0;
                    for (Py_ssize_t j = 0; j < PANEL; j++) sum[j] += row[j];
                }
            } else {
                for (Py_ssize_t t = 0; t < T; t++) {
                    const double *row = M + (int64_t)c[t] * D + j0;
                    for (Py_ssize_t j = 0; j < width; j++) sum[j] += row[j];
                }
            }
            memcpy(out + r * D + j0, sum, width * sizeof(double));
        }
    }
}

/* the lower triangle and diagonal of src into out, plus add on the diagonal */
static void lower_plus(const double *src, double *out, Py_ssize_t D, double add) {
    for (Py_ssize_t i = 0; i < D; i++) {
        memcpy(out + i * D, src + i * D, (i + 1) * sizeof(double));
        out[i * D + i] += add;
    }
}

/* The leaf column of every row in every tree of a LightGBM ensemble (its pred_leaf, plus
 * the tree's first column), by LightGBM's numerical decision (tree.h NumericalDecision):
 * a NaN is 0 unless the node's missing type is NaN; a value in the node's missing class
 * (0 for type Zero, NaN for type NaN) goes to its default side, any other to the left if
 * <= the threshold; LightGBM reads the values of |x| <= 1e-35 as 0 (the caller's x).
 * Nodes: N splits, then a node per leaf column c (N + c) whose children are itself, so
 * that a walk of the tree's depth steps, without a test of where it is, ends at its leaf;
 * WALKS rows walk a tree side by side (their steps overlap), without branches. */
#define ZERO_THRESHOLD 1e-35f
#define WALKS 8

typedef struct {
    double threshold;
    int32_t feature, flags; /* flags: bit 0 default left, bits 1-2 the missing type (0
                               None, 1 Zero, 2 NaN) */
    int32_t child[2];       /* left, right */
} Node;

static inline int32_t step(const double *x, const Node *q) {
    double v = x[q->feature];
    const int nan = isnan(v), missing = q->flags >> 1;
    v = nan ? 0.0 : v;
    const int special = ((missing == 1) & (v == 0.0)) | ((missing == 2) & nan);
    const int left = special ? q->flags & 1 : v <= q->threshold;
    return q->child[!left];
}

/* g <= WALKS rows (a constant g: the loops unrolled) down tree t from root */
static inline void walk(const double *X, Py_ssize_t d, Py_ssize_t g, int32_t root,
                        int64_t depth, const Node *nodes, int64_t *out, Py_ssize_t T) {
    int32_t at[WALKS];
    for (Py_ssize_t j = 0; j < g; j++) at[j] = root;
    for (int64_t s = 0; s < depth; s++)
        for (Py_ssize_t j = 0; j < g; j++) at[j] = step(X + j * d, nodes + at[j]);
    for (Py_ssize_t j = 0; j < g; j++) out[j * T] = at[j];
}

static void leaves(const double *X, Py_ssize_t n, Py_ssize_t d, const int32_t *root,
                   const int64_t *depth, Py_ssize_t T, const Node *nodes, int64_t *out) {
    Py_ssize_t r0 = 0;
    for (; r0 + WALKS <= n; r0 += WALKS)
        for (Py_ssize_t t = 0; t < T; t++)
            walk(X + r0 * d, d, WALKS, root[t], depth[t], nodes, out + r0 * T + t, T);
    for (Py_ssize_t t = 0; r0 < n && t < T; t++)
        walk(X + r0 * d, d, n - r0, root[t], depth[t], nodes, out + r0 * T + t, T);
}

/* the lower triangle of M (D x D) onto the upper one (from_lower) or the reverse, in
 * blocks (a transpose) */
static void mirror(double *M, Py_ssize_t D, int from_lower) {
    const Py_ssize_t B = 32;
    for (Py_ssize_t i0 = 0; i0 < D; i0 += B)
        for (Py_ssize_t j0 = i0; j0 < D; j0 += B)
            for (Py_ssize_t i = i0; i < i0 + B && i < D; i++)
                for (Py_ssize_t j = j0 > i + 1 ? j0 : i + 1; j < j0 + B && j < D; j++) {
                    if (from_lower)
                        M[i * D + j] = M[j * D + i];
                    else
                        M[j * D + i] = M[i * D + j];
                }
}

/* ILTCB's GB5 class (bench/harness/iltcb.py, TreePolicies): leaf values over
 * fixed splits.  cols (T, n, K) uint8 are the leaves of n rounds' K actions in T trees,
 * each a tree's own leaf number, the column of leaf l of tree t for action k being
 * base[t, k] + l (base (T, K) int32); NO_LEAF marks the pairs left out (value 0).  boost:
 * one boosting pass to the targets y from scores (n K,) (their start, updated in place):
 * tree by tree, each leaf's value is rate times the mean of y - scores over its pairs
 * (summed in pair order), added to its pairs' scores.  sum_leaves: out[i] += the values
 * of pair i's leaves, tree by tree. */
#define NO_LEAF 255

/* every base >= 0 (the kernels check the columns' upper end as they go) */
static int base_ok(const int32_t *base, Py_ssize_t K, Py_ssize_t T) {
    for (Py_ssize_t j = 0; j < T * K; j++)
        if (base[j] < 0) {
            PyErr_SetString(PyExc_ValueError, "base has a negative column");
            return 0;
        }
    return 1;
}

/* 0 if a leaf's column falls outside 0..D-1 (scores then partly updated), else 1 */
static int boost(const uint8_t *cols, Py_ssize_t n, Py_ssize_t K, Py_ssize_t T,
                 const int32_t *base, Py_ssize_t D, const double *y, double rate,
                 double *scores, double *values, double *sums, int64_t *counts) {
    for (Py_ssize_t c = 0; c < D; c++) {
        values[c] = sums[c] = 0.0;
        counts[c] = 0;
    }
    for (Py_ssize_t t = 0; t < T; t++) {
        const uint8_t *ct = cols + t * n * K;
        const int32_t *bt = base + t * K;
        for (Py_ssize_t r = 0, i = 0; r < n; r++)
            for (Py_ssize_t k = 0; k < K; k++, i++) {
                if (ct[i] == NO_LEAF) continue;
                const int64_t c = (int64_t)bt[k] + ct[i];
                if (c >= D) return 0;
                sums[c] += y[i] - scores[i];
                counts[c] += 1;
            }
        for (Py_ssize_t r = 0, i = 0; r < n; r++)
            for (Py_ssize_t k = 0; k < K; k++, i++) {
                if (ct[i] == NO_LEAF) continue;
                const int32_t c = bt[k] + ct[i];
                if (counts[c] > 0) { /* the leaf's first pair: its value, once */
                    values[c] = rate * sums[c] / (double)counts[c];
                    counts[c] = -counts[c];
                }
                scores[i] += values[c];
            }
    }
    return 1;
}

/* 0 if a leaf's column falls outside 0..D-1 (out then partly updated), else 1 */
static int sum_leaves(const uint8_t *cols, Py_ssize_t n, Py_ssize_t K, Py_ssize_t T,
                      const int32_t *base, Py_ssize_t D, const double *values, double *out) {
    for (Py_ssize_t t = 0; t < T; t++) {
        const uint8_t *ct = cols + t * n * K;
        const int32_t *bt = base + t * K;
        for (Py_ssize_t r = 0, i = 0; r < n; r++)
            for (Py_ssize_t k = 0; k < K; k++, i++) {
                if (ct[i] == NO_LEAF) continue;
                const int64_t c = (int64_t)bt[k] + ct[i];
                if (c >= D) return 0;
                out[i] += values[c];
            }
    }
    return 1;
}

/* every column in 0..D-1 and increasing with the tree within a row */
static int cols_ok(const int32_t *cols, Py_ssize_t n, Py_ssize_t T, Py_ssize_t D) {
    for (Py_ssize_t t = 0; t < T; t++)
        for (Py_ssize_t r = 0; r < n; r++) {
            int32_t c = cols[t * n + r];
            if (c < 0 || c >= D || (t > 0 && c <= cols[(t - 1) * n + r])) {
                PyErr_Format(PyExc_ValueError, "leaf column %lld of tree %zd out of order",
                             (long long)c, t);
                return 0;
            }
        }
    return 1;
}

PyDoc_STRVAR(variance_doc,
"variance(a_inv, cols, n, T, D, out)\n"
"phi^T A^-1 phi of n leaf-indicator rows, given as their leaf columns cols (T, n) int32,\n"
"into out (n,); a_inv (D, D) symmetric.");

static PyObject *py_variance(PyObject *self, PyObject *args) {
    Py_buffer a_inv = {0}, cols = {0}, out = {0};
    Py_ssize_t n, T, D;
    if (!PyArg_ParseTuple(args, "y*y*nnnw*", &a_inv, &cols, &n, &T, &D, &out)) return NULL;
    int ok = n >= 0 && T >= 1 && D >= 1;
    if (!ok) PyErr_SetString(PyExc_ValueError, "need n >= 0, T >= 1, D >= 1");
    ok = ok && expect(&a_inv, D * D, 8, "a_inv") && expect(&cols, T * n, 4, "cols") &&
         expect(&out, n, 8, "out") && cols_ok(cols.buf, n, T, D);
    if (ok) variance(a_inv.buf, cols.buf, n, T, D, out.buf);
    RELEASE(&a_inv, &cols, &out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(gram_doc,
"gram(cols, weight, n, T, D, out, clear)\n"
"The lower triangle (and diagonal) of Phi^T W Phi of n leaf-indicator rows, given as their\n"
"leaf columns cols (T, n) int32, with weights (n,), into out (D, D) (added to it unless\n"
"clear); its upper triangle is left as it was.");

static PyObject *py_gram(PyObject *self, PyObject *args) {
    Py_buffer cols = {0}, weight = {0}, out = {0};
    Py_ssize_t n, T, D;
    int clear;
    if (!PyArg_ParseTuple(args, "y*y*nnnw*p", &cols, &weight, &n, &T, &D, &out, &clear))
        return NULL;
    int ok = n >= 0 && T >= 1 && D >= 1;
    if (!ok) PyErr_SetString(PyExc_ValueError, "need n >= 0, T >= 1, D >= 1");
    ok = ok && expect(&cols, T * n, 4, "cols") && expect(&weight, n, 8, "weight") &&
         expect(&out, D * D, 8, "out") && cols_ok(cols.buf, n, T, D);
    /* each tree's columns: from its first to its last leaf seen */
    int32_t *span = ok ? PyMem_Malloc(2 * T * sizeof(int32_t)) : NULL;
    double *copies = ok ? PyMem_Malloc(COPIES * MAX_LEAVES * MAX_LEAVES * sizeof(double)) : NULL;
    if (ok && !(span && copies)) {
        PyErr_NoMemory();
        ok = 0;
    }
    int wide = 0;
    for (Py_ssize_t t = 0; ok && t < T; t++) {
        const int32_t *ct = (const int32_t *)cols.buf + t * n;
        int32_t lo = INT32_MAX, hi = -1;
        for (Py_ssize_t r = 0; r < n; r++) {
            lo = ct[r] < lo ? ct[r] : lo;
            hi = ct[r] > hi ? ct[r] : hi;
        }
        span[t] = lo;
        span[T + t] = hi - lo + 1;
        wide |= hi - lo + 1 > MAX_LEAVES;
    }
    if (ok) /* a tree of more leaves than the copies hold: the plain sum */
        gram(cols.buf, weight.buf, n, T, D, span, out.buf, wide ? NULL : copies, clear);
    PyMem_Free(span);
    PyMem_Free(copies);
    RELEASE(&cols, &weight, &out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(mirror_doc,
"mirror(mat, D, from_lower)\n"
"Makes mat (D, D) symmetric: its upper triangle the mirror of the lower one\n"
"(from_lower) or the reverse.");

static PyObject *py_mirror(PyObject *self, PyObject *args) {
    Py_buffer mat = {0};
    Py_ssize_t D;
    int from_lower;
    if (!PyArg_ParseTuple(args, "w*np", &mat, &D, &from_lower)) return NULL;
    int ok = expect(&mat, D * D, 8, "mat");
    if (ok) mirror(mat.buf, D, from_lower);
    RELEASE(&mat);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(spread_doc,
"spread(a_inv, cols, p, T, D, out)\n"
"Phi A^-1 of p leaf-indicator rows, given as their leaf columns cols (p, T) int32, into\n"
"out (p, D); a_inv (D, D).");

static PyObject *py_spread(PyObject *self, PyObject *args) {
    Py_buffer a_inv = {0}, cols = {0}, out = {0};
    Py_ssize_t p, T, D;
    if (!PyArg_ParseTuple(args, "y*y*nnnw*", &a_inv, &cols, &p, &T, &D, &out)) return NULL;
    int ok = p >= 0 && T >= 1 && D >= 1;
    if (!ok) PyErr_SetString(PyExc_ValueError, "need p >= 0, T >= 1, D >= 1");
    ok = ok && expect(&a_inv, D * D, 8, "a_inv") && expect(&cols, p * T, 4, "cols") &&
         expect(&out, p * D, 8, "out");
    for (Py_ssize_t i = 0; ok && i < p * T; i++) {
        ok = ((int32_t *)cols.buf)[i] >= 0 && ((int32_t *)cols.buf)[i] < D;
        if (!ok) PyErr_SetString(PyExc_ValueError, "leaf column out of range");
    }
    if (ok) spread(a_inv.buf, cols.buf, p, T, D, out.buf);
    RELEASE(&a_inv, &cols, &out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lower_plus_doc,
"lower_plus(src, out, D, add)\n"
"The lower triangle and diagonal of src (D, D) into out (D, D), add added to the diagonal\n"
"(the upper triangle of out is left as it was).");

static PyObject *py_lower_plus(PyObject *self, PyObject *args) {
    Py_buffer src = {0}, out = {0};
    Py_ssize_t D;
    double add;
    if (!PyArg_ParseTuple(args, "y*w*nd", &src, &out, &D, &add)) return NULL;
    int ok = expect(&src, D * D, 8, "src") && expect(&out, D * D, 8, "out");
    if (ok) lower_plus(src.buf, out.buf, D, add);
    RELEASE(&src, &out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(leaves_doc,
"leaves(X, n, d, root, depth, T, feature, threshold, flags, left, right, N, D, out)\n"
"The leaf column of each of n rows X (n, d) in each of T trees into out (n, T) int64;\n"
"per tree its root and depth, per split node (N) its feature, flags, left and right\n"
"(int64) and threshold (float64); a child or root c < 0 is the leaf column -c - 1 in\n"
"0..D-1, else a later split node.");

static PyObject *py_leaves(PyObject *self, PyObject *args) {
    Py_buffer X = {0}, root = {0}, depth = {0}, feature = {0}, threshold = {0}, flags = {0},
              left = {0}, right = {0}, out = {0};
    Py_ssize_t n, d, T, N, D;
    if (!PyArg_ParseTuple(args, "y*nny*y*ny*y*y*y*y*nnw*", &X, &n, &d, &root, &depth, &T,
                          &feature, &threshold, &flags, &left, &right, &N, &D, &out))
        return NULL;
    int ok = expect(&X, n * d, 8, "X") && expect(&root, T, 8, "root") &&
             expect(&depth, T, 8, "depth") && expect(&feature, N, 8, "feature") &&
             expect(&threshold, N, 8, "threshold") && expect(&flags, N, 8, "flags") &&
             expect(&left, N, 8, "left") && expect(&right, N, 8, "right") &&
             expect(&out, n * T, 8, "out");
    if (ok && (N + D >= INT32_MAX || d < 1)) {
        PyErr_SetString(PyExc_ValueError, "need d >= 1 and fewer than 2^31 nodes");
        ok = 0;
    }
    Node *nodes = ok ? PyMem_Malloc((N + D) * sizeof(Node)) : NULL;
    int32_t *start = ok ? PyMem_Malloc((T > 0 ? T : 1) * sizeof(int32_t)) : NULL;
    double *x = ok ? PyMem_Malloc((n > 0 ? n * d : 1) * sizeof(double)) : NULL;
    if (ok && !(nodes && start && x)) {
        PyErr_NoMemory();
        ok = 0;
    }
    /* a node's children: later split nodes, or leaf columns in 0..D-1 (node N + c) */
#define LINK(c, i) ((c) >= 0 ? ((c) > (i) && (c) < N ? (int32_t)(c) : -1) \
                             : (-(c) - 1 < D ? (int32_t)(N - (c) - 1) : -1))
    for (Py_ssize_t i = 0; ok && i < N; i++) {
        const int64_t f = ((int64_t *)feature.buf)[i];
        const int32_t l = LINK(((int64_t *)left.buf)[i], i),
                      r = LINK(((int64_t *)right.buf)[i], i);
        ok = f >= 0 && f < d && l >= 0 && r >= 0;
        if (!ok) PyErr_Format(PyExc_ValueError, "node %zd is malformed", i);
        nodes[i] = (Node){((double *)threshold.buf)[i], (int32_t)f,
                          (int32_t)(((int64_t *)flags.buf)[i] & 7), {l, r}};
    }
    for (Py_ssize_t c = 0; ok && c < D; c++)
        nodes[N + c] = (Node){0.0, 0, 0, {(int32_t)(N + c), (int32_t)(N + c)}};
    for (Py_ssize_t t = 0; ok && t < T; t++) {
        start[t] = LINK(((int64_t *)root.buf)[t], -1);
        const int64_t steps = ((int64_t *)depth.buf)[t];
        ok = start[t] >= 0 && steps >= 0 && steps <= 64;
        if (!ok) PyErr_Format(PyExc_ValueError, "tree %zd is malformed", t);
    }
#undef LINK
    if (ok) {
        const double *src = X.buf;
        for (Py_ssize_t i = 0; i < n * d; i++)  /* LightGBM's zeros */
            x[i] = fabs(src[i]) <= ZERO_THRESHOLD ? 0.0 : src[i];
        int64_t *o = out.buf;
        leaves(x, n, d, start, depth.buf, T, nodes, o);
        for (Py_ssize_t i = 0; ok && i < n * T; i++) {
            ok = o[i] >= N;  /* else a tree deeper than its depth */
            o[i] -= N;
        }
        if (!ok) PyErr_SetString(PyExc_ValueError, "a tree is deeper than its depth");
    }
    PyMem_Free(nodes);
    PyMem_Free(start);
    PyMem_Free(x);
    RELEASE(&X, &root, &depth, &feature, &threshold, &flags, &left, &right, &out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(boost_doc,
"boost(cols, n, K, T, base, D, y, rate, scores, values)\n"
"One boosting pass over fixed splits: leaves cols (T, n, K) uint8 (255: a pair left out),\n"
"leaf l of tree t for action k the column base[t, k] + l in 0..D-1 (base (T, K) int32),\n"
"targets y (n K,), scores (n K,) updated in place, the leaf values into values (D,).");

static PyObject *py_boost(PyObject *self, PyObject *args) {
    Py_buffer cols = {0}, base = {0}, y = {0}, scores = {0}, values = {0};
    Py_ssize_t n, K, T, D;
    double rate;
    if (!PyArg_ParseTuple(args, "y*nnny*ny*dw*w*", &cols, &n, &K, &T, &base, &D, &y, &rate,
                          &scores, &values))
        return NULL;
    int ok = n >= 0 && K >= 1 && T >= 0 && D >= 1;
    if (!ok) PyErr_SetString(PyExc_ValueError, "need n >= 0, K >= 1, T >= 0, D >= 1");
    ok = ok && expect(&cols, T * n * K, 1, "cols") && expect(&base, T * K, 4, "base") &&
         expect(&y, n * K, 8, "y") && expect(&scores, n * K, 8, "scores") &&
         expect(&values, D, 8, "values") && base_ok(base.buf, K, T);
    double *sums = ok ? PyMem_Malloc(D * sizeof(double)) : NULL;
    int64_t *counts = ok ? PyMem_Malloc(D * sizeof(int64_t)) : NULL;
    if (ok && !(sums && counts)) {
        PyErr_NoMemory();
        ok = 0;
    }
    if (ok && !boost(cols.buf, n, K, T, base.buf, D, y.buf, rate, scores.buf, values.buf,
                     sums, counts)) {
        PyErr_SetString(PyExc_ValueError, "a leaf's column is out of range");
        ok = 0;
    }
    PyMem_Free(sums);
    PyMem_Free(counts);
    RELEASE(&cols, &base, &y, &scores, &values);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(sum_leaves_doc,
"sum_leaves(cols, n, K, T, base, values, D, out)\n"
"out[i] += the values (D,) of pair i's leaves: cols (T, n, K) uint8 and base (T, K) int32\n"
"as for boost.");

static PyObject *py_sum_leaves(PyObject *self, PyObject *args) {
    Py_buffer cols = {0}, base = {0}, values = {0}, out = {0};
    Py_ssize_t n, K, T, D;
    if (!PyArg_ParseTuple(args, "y*nnny*y*nw*", &cols, &n, &K, &T, &base, &values, &D, &out))
        return NULL;
    int ok = n >= 0 && K >= 1 && T >= 0 && D >= 1;
    if (!ok) PyErr_SetString(PyExc_ValueError, "need n >= 0, K >= 1, T >= 0, D >= 1");
    ok = ok && expect(&cols, T * n * K, 1, "cols") && expect(&base, T * K, 4, "base") &&
         expect(&values, D, 8, "values") && expect(&out, n * K, 8, "out") &&
         base_ok(base.buf, K, T);
    if (ok && !sum_leaves(cols.buf, n, K, T, base.buf, D, values.buf, out.buf)) {
        PyErr_SetString(PyExc_ValueError, "a leaf's column is out of range");
        ok = 0;
    }
    RELEASE(&cols, &base, &values, &out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"leaves", py_leaves, METH_VARARGS, leaves_doc},
    {"variance", py_variance, METH_VARARGS, variance_doc},
    {"gram", py_gram, METH_VARARGS, gram_doc},
    {"mirror", py_mirror, METH_VARARGS, mirror_doc},
    {"spread", py_spread, METH_VARARGS, spread_doc},
    {"lower_plus", py_lower_plus, METH_VARARGS, lower_plus_doc},
    {"boost", py_boost, METH_VARARGS, boost_doc},
    {"sum_leaves", py_sum_leaves, METH_VARARGS, sum_leaves_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_trees", "Compiled kernels of TreesOracle (and of ILTCB's GB5 class).", -1, methods,
};

PyMODINIT_FUNC PyInit__trees(void) { return PyModule_Create(&module); }
