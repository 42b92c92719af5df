/* Compiled kernels of RidgeOracle: the per-example arithmetic of ridge confidence bounds
 * (moments of sparse rows), rank-one learning (Gram matrix and Sherman-Morrison update of
 * the inverse), and the fused online loop of a logged stream (decide, then learn, example
 * after example).  regcb_stream/oracles/ridge.py holds the numpy reference of each and
 * documents the arrays; this file only does the arithmetic, on contiguous buffers whose
 * shapes the Python side has checked.
 *
 * Layout: M models over D features; a, a_inv (M, D, D), b, theta (M, D), updates (M,)
 * int64.  Rows are padded sparse rows: index (int64) and value (float64) of shape
 * (n, R, L), R = 1 (a context shared by every action: the product class) or R = K (a row
 * per action: the joint class); padding has value 0 and is skipped.  An empty index
 * buffer means dense rows (L = D), whose sums run over contiguous memory.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_buffers.h"

/* Sums in four interleaved accumulators: a fixed order (the same result on every
 * machine, no -ffast-math) that keeps four additions in flight instead of one, as one
 * vector of four lanes where the compiler has vector types. */
#if defined(__GNUC__)
typedef double lanes __attribute__((vector_size(32)));
#endif
#define CHAINS 8  /* vectors of sums kept side by side in registers (rank_one's spread,
                   * shared_residual, group_sums, gram_add_rows) */
/* CALL(NV, REST) over the entries at .. n - 1, at advanced past the whole vectors: chunks
 * of CHAINS vectors (REST 0), then the NV < CHAINS vectors and the REST = (n - at) mod 4
 * entries left, NV a constant in each call (the loops of CALL unroll into registers) */
#define BY_CHUNKS(at, n, CALL)                                                             \
    do {                                                                                   \
        for (; (at) + 4 * CHAINS <= (n); (at) += 4 * CHAINS) CALL(CHAINS, 0);              \
        int rest_ = (int)(((n) - (at)) % 4);                                               \
        (void)rest_; /* (callers with a tail of their own leave it) */                     \
        switch (((n) - (at)) / 4) {                                                        \
            case 0: CALL(0, rest_); break;                                                 \
            case 1: CALL(1, rest_); break;                                                 \
            case 2: CALL(2, rest_); break;                                                 \
            case 3: CALL(3, rest_); break;                                                 \
            case 4: CALL(4, rest_); break;                                                 \
            case 5: CALL(5, rest_); break;                                                 \
            case 6: CALL(6, rest_); break;                                                 \
            default: CALL(7, rest_); break;                                                \
        }                                                                                  \
        (at) += ((n) - (at)) / 4 * 4;                                                      \
    } while (0)

/* sum of a[i] * b[i]: four partial sums (i mod 4), then the rest into the first; inlined
 * into the functions of many targets (a call of the WIDE dot goes through the resolver:
 * costly for a short vector) */
static inline __attribute__((always_inline)) double dot_in(const double *a, const double *b,
                                                           Py_ssize_t n) {
    Py_ssize_t i = 0;
#if defined(__GNUC__)
    lanes s = {0.0, 0.0, 0.0, 0.0};
    for (; i + 4 <= n; i += 4) {
        lanes x, y;
        memcpy(&x, a + i, sizeof x);
        memcpy(&y, b + i, sizeof y);
        s += x * y;
    }
    double s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
#else
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
#endif
    for (; i < n; i++) s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

WIDE static double dot(const double *a, const double *b, Py_ssize_t n) {
    return dot_in(a, b, n);
}

/* sum of a[index[i]] * b[i] */
static double gather_dot(const double *a, const int64_t *index, const double *b,
                         Py_ssize_t n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[index[i]] * b[i];
        s1 += a[index[i + 1]] * b[i + 1];
        s2 += a[index[i + 2]] * b[i + 2];
        s3 += a[index[i + 3]] * b[i + 3];
    }
    for (; i < n; i++) s0 += a[index[i]] * b[i];
    return (s0 + s1) + (s2 + s3);
}

/* NULL (a dense row) when a sparse row's columns are 0, 1, ..., L-1: the contiguous sums
 * are faster than the gathers and give the same numbers */
static const int64_t *unless_dense(const int64_t *index, Py_ssize_t L) {
    if (!index) return NULL;
    for (Py_ssize_t l = 0; l < L; l++)
        if (index[l] != l) return index;
    return NULL;
}

/* prediction (without the prior) and x^T A^-1 x of one row: sparse (index, value) of
 * length L, or dense (index NULL, L = D); by symmetry, each pair of columns once */
WIDE static void row_moments(const double *a_inv, const double *theta, Py_ssize_t D,
                        const int64_t *index, const double *value, Py_ssize_t L,
                        double *pred, double *var) {
    index = unless_dense(index, L);
    double v = 0.0;
    for (Py_ssize_t l = 0; l < L; l++) {
        double x = value[l];
        if (x == 0.0) continue;
        Py_ssize_t col = index ? index[l] : l;
        const double *row = a_inv + col * D;
        double rest = index ? gather_dot(row, index + l + 1, value + l + 1, L - l - 1)
                            : dot(row + l + 1, value + l + 1, L - l - 1);
        v += x * (row[col] * x + 2.0 * rest);
    }
    *pred = index ? gather_dot(theta, index, value, L) : dot(theta, value, L);
    *var = v > 0.0 ? v : 0.0;
}

#define GROUP 4  /* models read side by side */
#define ROWS 16  /* rows read side by side (rows_moments; a multiple of 4) */
#if defined(__GNUC__)
/* row_moments of one dense row under GROUP models at once (a_inv[g], theta[g]): each
 * model's sums in row_moments' order exactly, the GROUP chains of additions in flight side
 * by side instead of one after the other, in registers. A row's end (the sums' tail, their
 * lanes added, the row's term of x^T A^-1 x) is done for the GROUP models at once, a
 * model per lane: the lanes transposed, each lane the operations of its model in order. */
WIDE static void group_moments(const double *const *a_inv, const double *const *theta,
                               Py_ssize_t D, const double *value, Py_ssize_t L, double *pred,
                               double *var) {
    const double *m0 = a_inv[0], *m1 = a_inv[1], *m2 = a_inv[2], *m3 = a_inv[3];
    lanes v = {0.0, 0.0, 0.0, 0.0};
    for (Py_ssize_t l = 0; l < L; l++) {
        double x = value[l];
        if (x == 0.0) continue;
        const double *b = value + l + 1;
        Py_ssize_t n = L - l - 1, i = 0, at = l * D + l;
        const double *r0 = m0 + at + 1, *r1 = m1 + at + 1, *r2 = m2 + at + 1,
                     *r3 = m3 + at + 1;
        lanes s0 = {0.0, 0.0, 0.0, 0.0}, s1 = s0, s2 = s0, s3 = s0;
        for (; i + 4 <= n; i += 4) {
            lanes y, a0, a1, a2, a3;
            memcpy(&y, b + i, sizeof y);
            memcpy(&a0, r0 + i, sizeof y);
            memcpy(&a1, r1 + i, sizeof y);
            memcpy(&a2, r2 + i, sizeof y);
            memcpy(&a3, r3 + i, sizeof y);
            s0 += a0 * y;
            s1 += a1 * y;
            s2 += a2 * y;
            s3 += a3 * y;
        }
        /* lane g of t_k: lane k of model g's sums */
        lanes t0 = {s0[0], s1[0], s2[0], s3[0]}, t1 = {s0[1], s1[1], s2[1], s3[1]},
              t2 = {s0[2], s1[2], s2[2], s3[2]}, t3 = {s0[3], s1[3], s2[3], s3[3]};
        for (; i < n; i++) {
            lanes a = {r0[i], r1[i], r2[i], r3[i]};
            t0 += a * b[i];
        }
        lanes diagonal = {m0[at], m1[at], m2[at], m3[at]};
        v += x * (diagonal * x + 2.0 * ((t0 + t1) + (t2 + t3)));
    }
    for (int g = 0; g < GROUP; g++) {
        pred[g] = dot(theta[g], value, L);
        var[g] = v[g] > 0.0 ? v[g] : 0.0;
    }
}

typedef long long lane_mask __attribute__((vector_size(32)));

/* s[k][q]: lane k of the dots of r (n entries) with the 4 Q rows of y (row g's entry i at
 * y[i * stride + g], a row per lane): the terms k mod 4 from the start, the last n mod 4
 * in lane 0, as dot sums (Q: a constant of each caller, for the loops to unroll into
 * registers) */
static inline __attribute__((always_inline)) void quads_sums(
        const double *r, const double *y, Py_ssize_t n, Py_ssize_t stride,
        lanes s[4][ROWS / 4], const int Q) {
#pragma GCC unroll 8
    for (int k = 0; k < 4; k++)
#pragma GCC unroll 8
        for (int q = 0; q < Q; q++) s[k][q] = (lanes){0.0, 0.0, 0.0, 0.0};
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4)
#pragma GCC unroll 8
        for (int k = 0; k < 4; k++)
#pragma GCC unroll 8
            for (int q = 0; q < Q; q++) {
                lanes u;
                memcpy(&u, y + (i + k) * stride + 4 * q, sizeof u);
                s[k][q] += r[i + k] * u;
            }
    for (; i < n; i++)
#pragma GCC unroll 8
        for (int q = 0; q < Q; q++) {
            lanes u;
            memcpy(&u, y + i * stride + 4 * q, sizeof u);
            s[0][q] += r[i] * u;
        }
}

/* x^T A^-1 x of 4 Q dense rows under one model (m its inverse), row_moments' sums: the
 * rows transposed in xt (row g's value c at xt[c * stride + g]), a row per lane, so that
 * the inverse is read once for the 4 Q rows. Each row's sums are in row_moments' order
 * exactly (dot's lane k: the terms k mod 4 from the sum's start, then the tail in lane 0);
 * a row's zero entry adds nothing to its sum, as row_moments skips it. Q: a constant of
 * each caller (rows_moments), for the loops to unroll into registers. */
static inline __attribute__((always_inline)) void quads_moments(
        const double *m, Py_ssize_t D, const double *xt, Py_ssize_t stride, double *var,
        const int Q, int raw) {
    lanes v[ROWS / 4];
#pragma GCC unroll 8
    for (int q = 0; q < Q; q++) v[q] = (lanes){0.0, 0.0, 0.0, 0.0};
    for (Py_ssize_t l = 0; l < D; l++) {
        lanes s[4][ROWS / 4];
        quads_sums(m + l * D + l + 1, xt + (l + 1) * stride, D - l - 1, stride, s, Q);
        double d = m[l * D + l];
#pragma GCC unroll 8
        for (int q = 0; q < Q; q++) {
            lanes x;
            memcpy(&x, xt + l * stride + 4 * q, sizeof x);
            lanes t = x * (d * x + 2.0 * ((s[0][q] + s[1][q]) + (s[2][q] + s[3][q])));
            v[q] += (lanes)((lane_mask)t & (x != 0.0));
        }
    }
    for (int g = 0; g < 4 * Q; g++)
        var[g] = raw || v[g / 4][g % 4] > 0.0 ? v[g / 4][g % 4] : 0.0;
}

/* theta . x of 4 Q dense rows transposed in xt (as quads_moments reads them), each in
 * dot's order exactly (lane k of its four sums: the terms k mod 4 from the start, the last
 * D mod 4 terms in lane 0, then (s0 + s1) + (s2 + s3)): a row per lane */
static inline __attribute__((always_inline)) void quads_dots(
        const double *theta, Py_ssize_t D, const double *xt, Py_ssize_t stride, double *pred,
        const int Q) {
    lanes s[4][ROWS / 4];
    quads_sums(theta, xt, D, stride, s, Q);
#pragma GCC unroll 8
    for (int q = 0; q < Q; q++) {
        lanes sum = (s[0][q] + s[1][q]) + (s[2][q] + s[3][q]);
        memcpy(pred + 4 * q, &sum, sizeof sum);
    }
}

/* quads_moments of the G <= ROWS rows of xt, in as few quads as hold them (the last
 * quad's spare lanes compute rows of xt beyond them: xt has room, their results unused);
 * raw: the sums as they are (x^T M x of a row, not clipped at 0); with theta, the rows'
 * theta . x into pred too (quads_dots: room for the spare lanes' as well) */
WIDE static void rows_moments(const double *m, Py_ssize_t D, const double *xt,
                              Py_ssize_t stride, Py_ssize_t G, double *var, int raw,
                              const double *theta, double *pred) {
    int Q = G > 12 ? 4 : G > 8 ? 3 : G > 4 ? 2 : 1;
    switch (Q) {
        case 4: quads_moments(m, D, xt, stride, var, 4, raw); break;
        case 3: quads_moments(m, D, xt, stride, var, 3, raw); break;
        case 2: quads_moments(m, D, xt, stride, var, 2, raw); break;
        default: quads_moments(m, D, xt, stride, var, 1, raw); break;
    }
    if (!theta) return;
    switch (Q) {
        case 4: quads_dots(theta, D, xt, stride, pred, 4); break;
        case 3: quads_dots(theta, D, xt, stride, pred, 3); break;
        case 2: quads_dots(theta, D, xt, stride, pred, 2); break;
        default: quads_dots(theta, D, xt, stride, pred, 1); break;
    }
}
#endif

/* row_moments of one row shared by K actions (the product class) under their models,
 * plus the prior: a dense row GROUP models at a time, the same numbers */
static void shared_moments(const double *a_inv, const double *theta, const int64_t *model,
                           Py_ssize_t K, Py_ssize_t D, const int64_t *index,
                           const double *value, Py_ssize_t L, double prior, double *p,
                           double *v) {
    Py_ssize_t k = 0;
#if defined(__GNUC__)
    if (!unless_dense(index, L))
        for (; k + GROUP <= K; k += GROUP) {
            const double *ai[GROUP], *th[GROUP];
            for (int g = 0; g < GROUP; g++) {
                ai[g] = a_inv + model[k + g] * D * D;
                th[g] = theta + model[k + g] * D;
            }
            group_moments(ai, th, D, value, L, p + k, v + k);
        }
#endif
    for (; k < K; k++)
        row_moments(a_inv + model[k] * D * D, theta + model[k] * D, D, index, value, L, p + k,
                    v + k);
    for (k = 0; k < K; k++) p[k] += prior;
}

/* a += w x x^T and b += w r x for one row (sparse, or dense with index NULL) */
WIDE static void gram_add(double *a, double *b, Py_ssize_t D, const int64_t *index,
                     const double *value, Py_ssize_t L, double weight, double residual) {
    index = unless_dense(index, L);
    for (Py_ssize_t l = 0; l < L; l++) {
        double wx = weight * value[l];
        if (wx == 0.0) continue;
        Py_ssize_t col = index ? index[l] : l;
        double *row = a + col * D;
        if (index)
            for (Py_ssize_t m = 0; m < L; m++) row[index[m]] += wx * value[m];
        else
            for (Py_ssize_t m = 0; m < L; m++) row[m] += wx * value[m];
        b[col] += wx * residual;
    }
}

#if defined(__GNUC__)
/* spread[k0 .. k0 + 4 NV) of rank_one's A^-1 x for a dense row: the sum of the rows of
 * a_inv times the row's entries, in their order (the zero ones skipped), held in registers
 * while the rows pass (NV: a constant of each caller) */
static inline __attribute__((always_inline)) void spread_chunk(
        double *spread, Py_ssize_t k0, const double *a_inv, Py_ssize_t D, const double *value,
        Py_ssize_t L, const int NV) {
    lanes acc[CHAINS];
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) acc[v] = (lanes){0.0, 0.0, 0.0, 0.0};
    for (Py_ssize_t l = 0; l < L; l++) {
        double x = value[l];
        if (x == 0.0) continue;
        const double *row = a_inv + l * D + k0;
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++) {
            lanes u;
            memcpy(&u, row + 4 * v, sizeof u);
            acc[v] += x * u;
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) memcpy(spread + k0 + 4 * v, &acc[v], sizeof(lanes));
}
#endif

/* Sherman-Morrison: a_inv <- (A + w x x^T)^-1 and theta <- its solution, in O(D^2);
 * spread is scratch of length D */
WIDE static void rank_one(double *a_inv, double *theta, Py_ssize_t D, const int64_t *index,
                     const double *value, Py_ssize_t L, double weight, double residual,
                     double *spread) {
    index = unless_dense(index, L);
    memset(spread, 0, D * sizeof(double));
    Py_ssize_t done = 0;  /* A^-1 x = sum of rows (A^-1 is symmetric) */
#if defined(__GNUC__)
    if (!index) {  /* a dense row: spread[done ..) by vectors of it in registers */
#define SPREAD(NV, REST) if (NV) spread_chunk(spread, done, a_inv, D, value, L, NV)
        BY_CHUNKS(done, D, SPREAD);
#undef SPREAD
    }
#endif
    for (Py_ssize_t l = 0; l < L; l++) {
        double x = value[l];
        if (x == 0.0) continue;
        const double *row = a_inv + (index ? index[l] : l) * D;
        for (Py_ssize_t i = done; i < D; i++) spread[i] += x * row[i];
    }
    double quad = index ? gather_dot(spread, index, value, L) : dot(spread, value, L);
    double fit = index ? gather_dot(theta, index, value, L) : dot(theta, value, L);
    double gain = weight / (1.0 + weight * quad);
    double step = gain * (residual - fit);
    for (Py_ssize_t i = 0; i < D; i++) theta[i] += step * spread[i];
    for (Py_ssize_t i = 0; i < D; i++) {
        double g = gain * spread[i];
        double *row = a_inv + i * D;
        for (Py_ssize_t j = 0; j < D; j++) row[j] -= spread[j] * g;
    }
}

/* The joint model's inverse in blocks (`_Blocks` in ridge.py): the columns are shared
 * ones S and groups, and every row touches S and at most one group (VW's -q crosses of a
 * shared line with action lines: each action's own features and crosses form a group).
 * With C_j the group's Gram block, E_j its block against S, F_j = C_j^-1 E_j and the Schur
 * complement Sigma = A_SS - sum_j E_j^T F_j, a row z = (z_S, z_G) on group j has
 *   x^T A^-1 x = z_G^T C_j^-1 z_G + w^T Sigma^-1 w,   w = z_S - F_j^T z_G,
 *   prediction = w . theta_S + z_G . h_j,             h_j = C_j^-1 b_G,
 * and a label updates Sigma^-1 = (A^-1)_SS and theta_S by the S part of the rank-one
 * update of A^-1, and C_j^-1, F_j, h_j of its own group only: O(s^2 + b^2 + s b), not
 * O(D^2). c_inv holds each C_j^-1 transposed (c_inv + c_off[j]: b x b, entry [x, y] its
 * [y, x]), so that C_j^-1 z_G is a sum of its columns read as rows (group_sums). */
typedef struct {
    Py_ssize_t s, J, bmax;
    const int64_t *kind, *pos, *g_start, *g_cols, *s_cols, *c_off;
    double *c_inv, *f, *h, *s_inv, *theta_s;
} Blocks;

#define N_BLOCK_ARRAYS 11

/* A row's shared part z_S (dense, length s) and group part (positions gp, values gv, ng
 * of them) on group *group (-1: none); 0 if a column is unassigned or two groups meet. */
static int split_row(const Blocks *B, const int64_t *index, const double *value,
                     Py_ssize_t L, double *zs, int64_t *gp, double *gv, Py_ssize_t *ng,
                     int64_t *group) {
    memset(zs, 0, B->s * sizeof(double));
    const int64_t *kind = B->kind, *pos = B->pos;
    int64_t j = -1;  /* (locals, not *group and *ng: the stores to gp and gv may alias them) */
    Py_ssize_t n = 0;
    for (Py_ssize_t l = 0; l < L; l++) {
        double x = value[l];
        if (x == 0.0) continue;
        Py_ssize_t col = index ? index[l] : l;
        int64_t k = kind[col];
        if (k == -1) {
            zs[pos[col]] += x;
            continue;
        }
        if (k < 0 || (j >= 0 && j != k)) return 0;
        j = k;
        gp[n] = pos[col];
        gv[n++] = x;
    }
    *group = j;
    *ng = n;
    return 1;
}

/* x^T M x of a symmetric n x n matrix, each pair once */
static inline __attribute__((always_inline)) double quadratic(const double *m, const double *x,
                                                               Py_ssize_t n) {
    double v = 0.0;
    for (Py_ssize_t l = 0; l < n; l++)
        if (x[l] != 0.0)
            v += x[l] * (m[l * n + l] * x[l] + 2.0 * dot_in(m + l * n + l + 1, x + l + 1,
                                                            n - l - 1));
    return v;
}

typedef struct {
    double *zs, *w, *q, *e, *v, *gv;
    int64_t *gp;
} Scratch;

static int scratch_alloc(Scratch *t, const Blocks *B, Py_ssize_t L) {
    t->zs = PyMem_Malloc((4 * B->s + B->bmax + 2 * L + 1) * sizeof(double));
    t->gp = PyMem_Malloc((L + 1) * sizeof(int64_t));
    if (!t->zs || !t->gp) {
        PyMem_Free(t->zs);
        PyMem_Free(t->gp);
        PyErr_NoMemory();
        return 0;
    }
    t->w = t->zs + B->s, t->q = t->w + B->s, t->e = t->q + B->s, t->v = t->e + B->s;
    t->gv = t->v + B->bmax + L;  /* (v: a group's b values, or a row's ng sums) */
    return 1;
}

static void scratch_free(Scratch *t) {
    PyMem_Free(t->zs);
    PyMem_Free(t->gp);
}

#if defined(__GNUC__)
/* The first n < 4 entries of a row as a vector (the others 0), read one by one: a vector
 * read would pass the row's end, and the array's at its last row. */
static inline __attribute__((always_inline)) void partial(lanes *r, const double *row,
                                                          int n) {
    *r = (lanes){row[0], n > 1 ? row[1] : 0.0, n > 2 ? row[2] : 0.0, 0.0};
}

/* w[i0 .. i0 + 4 NV + rest) of shared_residual, held in registers across the group's
 * entries e: NV vectors and a partial one of rest < 4 entries, each an independent chain
 * of subtractions in the order of e (NV: a constant of each caller, for the loops to
 * unroll into registers). */
static inline __attribute__((always_inline)) void residual_chunk(
        const double *f, Py_ssize_t s, Py_ssize_t i0, const int64_t *gp, const double *gv,
        Py_ssize_t ng, double *w, const int NV, int rest) {
    lanes acc[CHAINS + 1];
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) memcpy(&acc[v], w + i0 + 4 * v, sizeof(lanes));
    if (rest) partial(&acc[NV], w + i0 + 4 * NV, rest);
    for (Py_ssize_t e = 0; e < ng; e++) {
        const double *row = f + gp[e] * s + i0;
        double g = gv[e];
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++) {
            lanes r;
            memcpy(&r, row + 4 * v, sizeof r);
            acc[v] -= g * r;
        }
        if (rest) {
            lanes r;
            partial(&r, row + 4 * NV, rest);
            acc[NV] -= g * r;
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) memcpy(w + i0 + 4 * v, &acc[v], sizeof(lanes));
    for (int k = 0; k < rest; k++) w[i0 + 4 * NV + k] = acc[NV][k];
}
#endif

/* w = z_S - F_j^T z_G, for the split row in t: each entry's subtractions in the order of
 * the group's entries e, up to CHAINS vectors of w (and a partial one) at a time, the
 * chains side by side */
WIDE static void shared_residual(const Blocks *B, int64_t j, const int64_t *gp,
                                 const double *gv, Py_ssize_t ng, const double *zs,
                                 double *w) {
    Py_ssize_t s = B->s, i = 0;
    memcpy(w, zs, s * sizeof(double));
    if (j < 0) return;
    const double *f = B->f + B->g_start[j] * s;
#if defined(__GNUC__)
#define RESIDUAL(NV, REST) if (NV || REST) residual_chunk(f, s, i, gp, gv, ng, w, NV, REST)
    BY_CHUNKS(i, s, RESIDUAL);
#undef RESIDUAL
#else
    for (; i < s; i++) {
        double x = w[i];
        for (Py_ssize_t e = 0; e < ng; e++) x -= gv[e] * f[gp[e] * s + i];
        w[i] = x;
    }
#endif
}

#if defined(__GNUC__)
/* sums[e0 .. e0 + 4 NQ + rest) of group_sums where the positions are consecutive (gp[e] =
 * g0 + e): NQ vectors of four sums and a partial one of rest < 4, independent chains side
 * by side, each sum in the order of f from 0.0, a row of the transposed block (a column of
 * C) read as vectors at each f. NQ: a constant of each caller (the loops unroll into
 * registers). */
static inline __attribute__((always_inline)) void column_sums(
        const double *ct, Py_ssize_t b, Py_ssize_t g0, const double *gv, Py_ssize_t ng,
        Py_ssize_t e0, double *sums, const int NQ, int rest) {
    lanes s[CHAINS + 1];
#pragma GCC unroll 8
    for (int q = 0; q <= NQ; q++) s[q] = (lanes){0.0, 0.0, 0.0, 0.0};
    for (Py_ssize_t f = 0; f < ng; f++) {
        const double *row = ct + (g0 + f) * b + g0 + e0;
        double g = gv[f];
#pragma GCC unroll 8
        for (int q = 0; q < NQ; q++) {
            lanes u;
            memcpy(&u, row + 4 * q, sizeof u);
            s[q] += u * g;
        }
        if (rest) {
            lanes u;
            partial(&u, row + 4 * NQ, rest);
            s[NQ] += u * g;
        }
    }
#pragma GCC unroll 8
    for (int q = 0; q < NQ; q++) memcpy(sums + e0 + 4 * q, &s[q], sizeof(lanes));
    for (int k = 0; k < rest; k++) sums[e0 + 4 * NQ + k] = s[NQ][k];
}
#endif

/* sums[e] = sum over f of C[gp[e], gp[f]] gv[f], each in the order of f, of a group's
 * block C kept transposed (ct: ct[x b + y] = C[y, x]): consecutive positions (a row's
 * usual ones) up to CHAINS vectors of sums at a time, read by rows of ct; else four sums
 * side by side, one per lane */
WIDE static void group_sums(const double *ct, Py_ssize_t b, const int64_t *gp,
                            const double *gv, Py_ssize_t ng, double *sums) {
    Py_ssize_t e = 0;
#if defined(__GNUC__)
    int consecutive = ng > 0;
    for (Py_ssize_t k = 1; k < ng && consecutive; k++) consecutive = gp[k] == gp[0] + k;
    if (consecutive) {
        Py_ssize_t g0 = gp[0];
#define COLUMNS(NQ, REST) if (NQ || REST) column_sums(ct, b, g0, gv, ng, e, sums, NQ, REST)
        BY_CHUNKS(e, ng, COLUMNS);
#undef COLUMNS
        return;
    }
    for (; e + 4 <= ng; e += 4) {
        lanes s = {0.0, 0.0, 0.0, 0.0};
        for (Py_ssize_t f = 0; f < ng; f++) {
            const double *row = ct + gp[f] * b;
            lanes a = {row[gp[e]], row[gp[e + 1]], row[gp[e + 2]], row[gp[e + 3]]};
            s += a * gv[f];
        }
        memcpy(sums + e, &s, sizeof s);
    }
#endif
    for (; e < ng; e++) {
        double s = 0.0;
        for (Py_ssize_t f = 0; f < ng; f++) s += ct[gp[f] * b + gp[e]] * gv[f];
        sums[e] = s;
    }
}

/* Room for the moments of an example's K rows at once (block_rows) */
typedef struct {
    Py_ssize_t K, stride;
    double *xt, *gv, *sums, *quad;  /* xt (s, stride): the rows' w transposed, padded for
                                     * rows_moments' spare lanes; quad: K + ROWS */
    int64_t *gp, *j, *ng;
} RowsScratch;

static int rows_scratch_alloc(RowsScratch *r, const Blocks *B, Py_ssize_t K, Py_ssize_t L) {
    r->K = K;
    r->stride = K + ROWS;
    r->xt = PyMem_Calloc(B->s * r->stride + 2 * K * L + K + ROWS, sizeof(double));
    r->gp = PyMem_Malloc((K * L + 2 * K + 1) * sizeof(int64_t));
    if (!r->xt || !r->gp) {
        PyMem_Free(r->xt);
        PyMem_Free(r->gp);
        r->xt = NULL, r->gp = NULL;
        PyErr_NoMemory();
        return 0;
    }
    r->gv = r->xt + B->s * r->stride, r->sums = r->gv + K * L, r->quad = r->sums + K * L;
    r->j = r->gp + K * L, r->ng = r->j + K;
    return 1;
}

static void rows_scratch_free(RowsScratch *r) {
    PyMem_Free(r->xt);
    PyMem_Free(r->gp);
}

/* Predictions (without the prior) and x^T A^-1 x of the K rows of one example (row k:
 * columns cols + k step, NULL if dense, values vals + k step; step 0: one row for every
 * action): each row split, its shared residual w, its prediction w . theta_S + z_G . h_j
 * and its group's sums C_j^-1 z_G; then w^T Sigma^-1 w of the K residuals, four rows per
 * lane (rows_moments: quadratic's sums, Sigma^-1 read once for sixteen rows); then each
 * row's group terms z_G . C_j^-1 z_G added in order. 0 if a row does not fit. */
WIDE static int block_rows(const Blocks *B, const int64_t *cols, const double *vals,
                           Py_ssize_t step, Py_ssize_t L, Scratch *t, RowsScratch *r,
                           double *pred, double *var) {
    Py_ssize_t s = B->s, K = r->K, stride = r->stride;
    for (Py_ssize_t k = 0; k < K; k++) {
        int64_t *gp = r->gp + k * L;
        double *gv = r->gv + k * L;
        Py_ssize_t ng;
        if (!split_row(B, cols ? cols + k * step : NULL, vals + k * step, L, t->zs, gp, gv,
                       &ng, r->j + k))
            return 0;
        r->ng[k] = ng;
        shared_residual(B, r->j[k], gp, gv, ng, t->zs, t->w);
#if defined(__GNUC__)
        for (Py_ssize_t c = 0; c < s; c++) r->xt[c * stride + k] = t->w[c];
#else
        r->quad[k] = quadratic(B->s_inv, t->w, s);
#endif
        double p = dot_in(t->w, B->theta_s, s);
        int64_t j = r->j[k];
        if (j >= 0) {
            Py_ssize_t b = B->g_start[j + 1] - B->g_start[j];
            const double *h = B->h + B->g_start[j];
            group_sums(B->c_inv + B->c_off[j], b, gp, gv, ng, r->sums + k * L);
            for (Py_ssize_t e = 0; e < ng; e++) p += gv[e] * h[gp[e]];
        }
        pred[k] = p;
    }
#if defined(__GNUC__)
    for (Py_ssize_t k = 0; k < K; k += ROWS)
        rows_moments(B->s_inv, s, r->xt + k, stride, K - k < ROWS ? K - k : ROWS,
                     r->quad + k, 1, NULL, NULL);
#endif
    for (Py_ssize_t k = 0; k < K; k++) {
        double v = r->quad[k];
        const double *gv = r->gv + k * L, *sums = r->sums + k * L;
        if (r->j[k] >= 0)
            for (Py_ssize_t e = 0; e < r->ng[k]; e++) v += gv[e] * sums[e];
        var[k] = v > 0.0 ? v : 0.0;
    }
    return 1;
}

/* The blocks' update by one row already added to a and b (weight, residual); 0 if the
 * row does not fit */
static int block_learn(const Blocks *B, const double *a, const double *bvec, Py_ssize_t D,
                       const int64_t *index, const double *value, Py_ssize_t L,
                       double weight, double residual, Scratch *t) {
    Py_ssize_t s = B->s, ng;
    int64_t j;
    if (!split_row(B, index, value, L, t->zs, t->gp, t->gv, &ng, &j)) return 0;
    shared_residual(B, j, t->gp, t->gv, ng, t->zs, t->w);
    for (Py_ssize_t i = 0; i < s; i++) t->q[i] = dot(B->s_inv + i * s, t->w, s);
    double quad_g = 0.0, fit = dot(t->w, B->theta_s, s);
    Py_ssize_t b = 0, g0 = 0;
    double *c = NULL, *h = NULL;
    if (j >= 0) {
        g0 = B->g_start[j], b = B->g_start[j + 1] - g0;
        c = B->c_inv + B->c_off[j], h = B->h + g0;  /* (C transposed: group_sums) */
        for (Py_ssize_t p = 0; p < b; p++) t->v[p] = 0.0;
        for (Py_ssize_t e = 0; e < ng; e++) {  /* v = C z_G, each entry in the order of e */
            const double *row = c + t->gp[e] * b;
            double g = t->gv[e];
            for (Py_ssize_t p = 0; p < b; p++) t->v[p] += row[p] * g;
        }
        for (Py_ssize_t e = 0; e < ng; e++) {
            quad_g += t->gv[e] * t->v[t->gp[e]];
            fit += t->gv[e] * h[t->gp[e]];
        }
    }
    double var = quad_g + dot(t->w, t->q, s);
    double gain = weight / (1.0 + weight * var), step = gain * (residual - fit);
    for (Py_ssize_t i = 0; i < s; i++) {
        double g = gain * t->q[i];
        double *row = B->s_inv + i * s;
        for (Py_ssize_t k = 0; k < s; k++) row[k] -= t->q[k] * g;
        B->theta_s[i] += step * t->q[i];
    }
    if (j < 0) return 1;
    /* the group: C^-1, F = C^-1 E, h = C^-1 b_G, from their values before the row */
    double shrink = weight / (1.0 + weight * quad_g), vb = -weight * residual * quad_g;
    for (Py_ssize_t i = 0; i < s; i++) t->e[i] = -weight * quad_g * t->zs[i];
    for (Py_ssize_t p = 0; p < b; p++) {
        Py_ssize_t col = B->g_cols[g0 + p];
        const double *arow = a + col * D;
        for (Py_ssize_t i = 0; i < s; i++) t->e[i] += t->v[p] * arow[B->s_cols[i]];
        vb += t->v[p] * bvec[col];
    }
    double keep = 1.0 - shrink * quad_g;
    double *f = B->f + g0 * s;
    for (Py_ssize_t k = 0; k < b; k++) {  /* C[p, k] at c[k b + p] */
        double *row = c + k * b, vk = t->v[k];
        for (Py_ssize_t p = 0; p < b; p++) row[p] -= shrink * t->v[p] * vk;
    }
    for (Py_ssize_t p = 0; p < b; p++) {
        double vp = t->v[p], moved = vp * keep;
        double *frow = f + p * s;
        for (Py_ssize_t i = 0; i < s; i++)
            frow[i] += -shrink * vp * t->e[i] + weight * moved * t->zs[i];
        h[p] += -shrink * vp * vb + weight * residual * moved;
    }
    return 1;
}

static int get_blocks(PyObject *tuple, Py_ssize_t D, Blocks *B, Py_buffer *bufs) {
    memset(bufs, 0, N_BLOCK_ARRAYS * sizeof(Py_buffer));
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != N_BLOCK_ARRAYS) {
        PyErr_SetString(PyExc_TypeError, "blocks must be a tuple of 11 arrays");
        return 0;
    }
    for (int i = 0; i < N_BLOCK_ARRAYS; i++) {
        int flags = i >= 6 ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(tuple, i), &bufs[i], flags) < 0) {
            for (int k = 0; k < i; k++) PyBuffer_Release(&bufs[k]);
            return 0;
        }
    }
    B->kind = bufs[0].buf, B->pos = bufs[1].buf, B->g_start = bufs[2].buf;
    B->g_cols = bufs[3].buf, B->s_cols = bufs[4].buf, B->c_off = bufs[5].buf;
    B->c_inv = bufs[6].buf, B->f = bufs[7].buf, B->h = bufs[8].buf;
    B->s_inv = bufs[9].buf, B->theta_s = bufs[10].buf;
    B->s = bufs[4].len / 8, B->J = bufs[2].len / 8 - 1, B->bmax = 0;
    int ok = bufs[0].len == D * 8 && bufs[1].len == D * 8 && B->J >= 0 &&
             bufs[5].len == (B->J + 1) * 8 && bufs[9].len == B->s * B->s * 8 &&
             bufs[10].len == B->s * 8;
    for (Py_ssize_t j = 0; ok && j < B->J; j++) {
        Py_ssize_t b = B->g_start[j + 1] - B->g_start[j];
        B->bmax = b > B->bmax ? b : B->bmax;
    }
    ok = ok && B->g_start[B->J] * 8 == bufs[3].len && B->g_start[B->J] * 8 == bufs[8].len &&
         B->g_start[B->J] * B->s * 8 == bufs[7].len && B->c_off[B->J] * 8 == bufs[6].len;
    if (!ok) {
        for (int k = 0; k < N_BLOCK_ARRAYS; k++) PyBuffer_Release(&bufs[k]);
        PyErr_SetString(PyExc_ValueError, "inconsistent block arrays");
    }
    return ok;
}

static void release_blocks(Py_buffer *bufs) {
    for (int k = 0; k < N_BLOCK_ARRAYS; k++)
        if (bufs[k].obj) PyBuffer_Release(&bufs[k]);
}

/* fmin(fmax(x, lo), hi) for lo <= hi (lo for a NaN x), without the library calls */
static inline double clip(double x, double lo, double hi) {
    double y = x >= lo ? x : lo;
    return y <= hi ? y : hi;
}

/* The decision rule's codes: elimination (uniform over the actions whose high reaches the
 * best low) or optimistic (uniform over the largest highs), its ties at the largest high
 * shared, or broken by the fit p or by the fit clipped to [lo, hi] (`rules.py`) */
enum { ELIMINATION, OPTIMISTIC, OPTIMISTIC_FIT, OPTIMISTIC_CLIPPED_FIT };

/* What breaks an optimistic rule's ties: the fit p, or (OPTIMISTIC_CLIPPED_FIT) clipped */
static inline double tie_fit(int rule, double p, double lo, double hi) {
    return rule == OPTIMISTIC_FIT ? p : clip(p, lo, hi);
}

/* The rule's distribution from the clipped bounds and the fit p, ties within tol */
static void decide(const double *p, const double *low, const double *high, Py_ssize_t K,
                   int rule, double lo, double hi, double tol, double *pmf) {
    int optimistic = rule != ELIMINATION;
    double best = optimistic ? high[0] : low[0];
    for (Py_ssize_t k = 1; k < K; k++) {
        double x = optimistic ? high[k] : low[k];
        if (x > best) best = x;
    }
    double top = -INFINITY;  /* the ties' best fit (-inf: ties shared) */
    if (rule >= OPTIMISTIC_FIT)
        for (Py_ssize_t k = 0; k < K; k++)
            if (high[k] >= best - tol) {
                double fit = tie_fit(rule, p[k], lo, hi);
                if (fit > top) top = fit;
            }
    Py_ssize_t count = 0;
    for (Py_ssize_t k = 0; k < K; k++) {
        pmf[k] = high[k] >= best - tol
                 && (top == -INFINITY || tie_fit(rule, p[k], lo, hi) >= top - tol);
        count += pmf[k] != 0.0;
    }
    double share = 1.0 / (double)count;  /* (NaN everywhere for NaN bounds, as 0 / 0) */
    for (Py_ssize_t k = 0; k < K; k++) pmf[k] = count == 0 ? NAN : pmf[k] * share;
}

/* One decision from each action's prediction p (prior included) and x^T A^-1 x v: the
 * clipped bounds (the whole range while the budget is NaN: no label yet) and the rule's
 * distribution (uniform while the budget is NaN) */
static void decision(const double *p, const double *v, Py_ssize_t K, double beta, double lo,
                     double hi, int rule, double tol, double *low, double *high,
                     double *pmf) {
    for (Py_ssize_t k = 0; k < K; k++) {
        double radius = sqrt((beta > 0.0 ? beta : 0.0) * v[k]);
        low[k] = isnan(beta) ? lo : clip(p[k] - radius, lo, hi);
        high[k] = isnan(beta) ? hi : clip(p[k] + radius, lo, hi);
    }
    if (isnan(beta))
        for (Py_ssize_t k = 0; k < K; k++) pmf[k] = 1.0 / (double)K;
    else
        decide(p, low, high, K, rule, lo, hi, tol, pmf);
}

/* x^T A^-1 x of `count` actions (ids k[i]) of a dense row shared by the actions, into
 * v[k[i]], four at a time as shared_moments reads them (the same sums); with best, the
 * largest of it and their clipped high bounds p + sqrt(beta v) into it */
static void some_moments(const double *a_inv, const double *theta, const int64_t *model,
                         Py_ssize_t D, const double *row, const Py_ssize_t *k,
                         Py_ssize_t count, const double *p, double beta, double lo, double hi,
                         double *best, double *v) {
    for (Py_ssize_t done = 0; done < count;) {
        Py_ssize_t G = count - done < GROUP ? count - done : GROUP;
        const double *ai[GROUP], *th[GROUP];
        double pg[GROUP], vg[GROUP];
        for (Py_ssize_t g = 0; g < G; g++) {
            ai[g] = a_inv + model[k[done + g]] * D * D;
            th[g] = theta + model[k[done + g]] * D;
        }
#if defined(__GNUC__)
        if (G == GROUP)
            group_moments(ai, th, D, row, D, pg, vg);
        else
#endif
            for (Py_ssize_t g = 0; g < G; g++)
                row_moments(ai[g], th[g], D, NULL, row, D, pg + g, vg + g);
        for (Py_ssize_t g = 0; g < G; g++) {
            Py_ssize_t a = k[done + g];
            v[a] = vg[g];
            double high = clip(p[a] + sqrt((beta > 0.0 ? beta : 0.0) * vg[g]), lo, hi);
            if (best && high > *best) *best = high;
        }
        done += G;
    }
}

/* x^T A^-1 x of the actions whose exact bounds the rule's distribution needs, for one
 * dense row shared by K actions; every model's A at least penalty I (a ridge penalty: x^T
 * A^-1 x <= |x|^2 / penalty, the bound `reach` comes from). Every other action gets that
 * bound as its variance, which puts it where its exact one would: the rule's distribution
 * (`decide`) is that of every exact variance, bit for bit, and so are the predictions; its
 * low and high bounds are loose. Optimistic: an action whose high cannot come within tol
 * of the best high known is not played (the action of the largest prediction first).
 * Elimination: the best low is among the actions whose prediction reaches the least it
 * can be; then an action is in the plausible set if its prediction reaches it, out if its
 * high at the bound cannot, and needs its variance only in between. `pending`: scratch of
 * K. */
static void decisive_moments(const double *a_inv, const double *theta, const int64_t *model,
                             Py_ssize_t K, Py_ssize_t D, const double *row, double prior,
                             double beta, double penalty, int rule, double lo, double hi,
                             double tol, double *p, double *v, Py_ssize_t *pending) {
    double n2 = 0.0;
    for (Py_ssize_t i = 0; i < D; i++) n2 += row[i] * row[i];
    double bound = n2 / penalty * (1.0 + 1e-6);  /* (rounding in the exact sums: 1e-12) */
    double reach = sqrt((beta > 0.0 ? beta : 0.0) * bound);
    Py_ssize_t top = 0;
    for (Py_ssize_t k = 0; k < K; k++) {
        p[k] = dot(theta + model[k] * D, row, D) + prior;
        v[k] = bound;
        if (p[k] > p[top]) top = k;
    }
    double best = -INFINITY;
    Py_ssize_t n = 0;
    if (rule == ELIMINATION) {
        double least = -INFINITY;  /* the best low is at least every low at the bound */
        for (Py_ssize_t k = 0; k < K; k++)
            if (clip(p[k] - reach, lo, hi) > least) least = clip(p[k] - reach, lo, hi);
        for (Py_ssize_t k = 0; k < K; k++)
            if (clip(p[k], lo, hi) >= least) pending[n++] = k;
        some_moments(a_inv, theta, model, D, row, pending, n, p, beta, lo, hi, NULL, v);
        for (Py_ssize_t k = 0; k < K; k++) {  /* the best low, exact */
            double low = clip(p[k] - sqrt((beta > 0.0 ? beta : 0.0) * v[k]), lo, hi);
            if (low > best) best = low;
        }
        n = 0;
        for (Py_ssize_t k = 0; k < K; k++)
            if (v[k] == bound && clip(p[k], lo, hi) < best - tol &&
                clip(p[k] + reach, lo, hi) >= best - tol)
                pending[n++] = k;
        some_moments(a_inv, theta, model, D, row, pending, n, p, beta, lo, hi, NULL, v);
        return;
    }
    some_moments(a_inv, theta, model, D, row, &top, 1, p, beta, lo, hi, &best, v);
    for (Py_ssize_t k = 0; k < K; k++) {
        if (k == top || clip(p[k] + reach, lo, hi) < best - tol) continue;
        pending[n++] = k;
        if (n == GROUP) {
            some_moments(a_inv, theta, model, D, row, pending, n, p, beta, lo, hi, &best, v);
            n = 0;
        }
    }
    some_moments(a_inv, theta, model, D, row, pending, n, p, beta, lo, hi, &best, v);
}

/* every model id of models in 0..M-1 */
static int models_ok(const int64_t *model, Py_ssize_t K, Py_ssize_t M) {
    for (Py_ssize_t k = 0; k < K; k++)
        if (model[k] < 0 || model[k] >= M) {
            PyErr_Format(PyExc_ValueError, "model %lld out of range", (long long)model[k]);
            return 0;
        }
    return 1;
}

/* every played action of examples start..n-1 below K (or -1: none), and a budget for
 * each label and one more */
static int labels_ok(const int64_t *act, Py_ssize_t start, Py_ssize_t n, Py_ssize_t K,
                     Py_buffer *budget) {
    Py_ssize_t labelled = 0;
    for (Py_ssize_t i = start; i < n; i++) {
        if (act[i] >= K) {
            PyErr_Format(PyExc_ValueError, "played action %lld out of range",
                         (long long)act[i]);
            return 0;
        }
        labelled += act[i] >= 0;
    }
    if (budget->len / 8 < labelled + 1) {
        PyErr_SetString(PyExc_ValueError, "budget is shorter than the labels + 1");
        return 0;
    }
    return 1;
}

/* rows: index and value of n rows of length L, or an empty index and dense rows (L = D) */
static int rows_ok(Py_buffer *index, Py_buffer *value, Py_ssize_t n, Py_ssize_t L,
                   Py_ssize_t D) {
    if (index->len == 0 && L != D) {
        PyErr_Format(PyExc_ValueError, "dense rows have length %zd, expected %zd", L, D);
        return 0;
    }
    return (index->len == 0 || expect(index, n * L, 8, "index")) &&
           expect(value, n * L, 8, "value");
}

/* rows_ok of n examples' R rows each, whose index may be one example's rows for all */
static int shared_rows_ok(Py_buffer *index, Py_buffer *value, Py_ssize_t n, Py_ssize_t R,
                          Py_ssize_t L, Py_ssize_t D) {
    if (n > 1 && index->len && index->len == R * L * 8)
        return expect(value, n * R * L, 8, "value");
    return rows_ok(index, value, n * R, L, D);
}

PyDoc_STRVAR(moments_doc,
"moments(a_inv, theta, models, index, value, n, R, K, L, D, prior, pred, var[, blocks])\n"
"Prediction and x^T A^-1 x of every (row, action) into pred and var (n, K); with the\n"
"joint model's blocks, False if a row does not fit them.");

static PyObject *py_moments(PyObject *self, PyObject *args) {
    Py_buffer a_inv = {0}, theta = {0}, models = {0}, index = {0}, value = {0}, pred = {0},
              var = {0};
    Py_ssize_t n, R, K, L, D;
    double prior;
    PyObject *blocks = Py_None;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*nnnnndw*w*|O", &a_inv, &theta, &models, &index,
                          &value, &n, &R, &K, &L, &D, &prior, &pred, &var, &blocks))
        return NULL;
    Blocks B;
    Py_buffer block_bufs[N_BLOCK_ARRAYS];
    Scratch t = {0};
    RowsScratch rs = {0};
    int blocked = blocks != Py_None;
    if (blocked && !get_blocks(blocks, D, &B, block_bufs)) {
        RELEASE(&a_inv, &theta, &models, &index, &value, &pred, &var);
        return NULL;
    }
    Py_ssize_t M = theta.len / (D * (Py_ssize_t)sizeof(double));
    int ok = expect(&a_inv, M * D * D, 8, "a_inv") && expect(&models, K, 8, "models") &&
             rows_ok(&index, &value, n * R, L, D) && expect(&pred, n * K, 8, "pred") &&
             expect(&var, n * K, 8, "var");
    const int64_t *model = models.buf;
    ok = ok && models_ok(model, K, M);
    if (ok && blocked && (M != 1 || !scratch_alloc(&t, &B, L) ||
                          !rows_scratch_alloc(&rs, &B, K, L)))
        ok = 0;
    int fits = 1;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        const double *ai = a_inv.buf, *th = theta.buf, *val = value.buf;
        const int64_t *idx = index.len ? index.buf : NULL;
        double *p = pred.buf, *v = var.buf;
        for (Py_ssize_t i = 0; i < n; i++)
            if (R == 1 && !blocked)
                shared_moments(ai, th, model, K, D, idx ? idx + i * L : NULL, val + i * L, L,
                               prior, p + i * K, v + i * K);
            else if (blocked) {
                fits &= block_rows(&B, idx ? idx + i * R * L : NULL, val + i * R * L,
                                   R == 1 ? 0 : L, L, &t, &rs, p + i * K, v + i * K);
                for (Py_ssize_t k = 0; k < K; k++) p[i * K + k] += prior;
            } else for (Py_ssize_t k = 0; k < K; k++) {
                Py_ssize_t row = (i * R + (R == 1 ? 0 : k)) * L;
                const int64_t *cols = idx ? idx + row : NULL;
                row_moments(ai + model[k] * D * D, th + model[k] * D, D, cols, val + row,
                            L, p + i * K + k, v + i * K + k);
                p[i * K + k] += prior;
            }
        Py_END_ALLOW_THREADS
    }
    if (blocked) {
        scratch_free(&t);
        rows_scratch_free(&rs);
        release_blocks(block_bufs);
    }
    RELEASE(&a_inv, &theta, &models, &index, &value, &pred, &var);
    if (!ok) return NULL;
    return PyBool_FromLong(fits);
}

/* learn and rank_one: (matrices, vectors, model, index, value, L, D, weight, residual) */
static PyObject *row_update(PyObject *args, int sherman_morrison) {
    Py_buffer mat = {0}, vec = {0}, index = {0}, value = {0};
    Py_ssize_t model, L, D;
    double weight, residual;
    if (!PyArg_ParseTuple(args, "w*w*ny*y*nndd", &mat, &vec, &model, &index, &value, &L, &D,
                          &weight, &residual))
        return NULL;
    Py_ssize_t M = vec.len / (D * (Py_ssize_t)sizeof(double));
    int ok = expect(&mat, M * D * D, 8, "matrices") && rows_ok(&index, &value, 1, L, D);
    if (ok && (model < 0 || model >= M)) {
        PyErr_Format(PyExc_ValueError, "model %zd out of range", model);
        ok = 0;
    }
    double *spread = ok && sherman_morrison ? PyMem_Malloc(D * sizeof(double)) : NULL;
    if (ok && sherman_morrison && !spread) {
        PyErr_NoMemory();
        ok = 0;
    }
    double *m = (double *)mat.buf + model * D * D, *v = (double *)vec.buf + model * D;
    const int64_t *idx = index.len ? index.buf : NULL;
    if (ok && sherman_morrison)
        rank_one(m, v, D, idx, value.buf, L, weight, residual, spread);
    else if (ok)
        gram_add(m, v, D, idx, value.buf, L, weight, residual);
    PyMem_Free(spread);
    RELEASE(&mat, &vec, &index, &value);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(learn_doc,
"learn(a, b, model, index, value, L, D, weight, residual)\n"
"Add one sparse row to the Gram matrix and b of one model.");

static PyObject *py_learn(PyObject *self, PyObject *args) { return row_update(args, 0); }

PyDoc_STRVAR(learn_rows_doc,
"learn_rows(a, b, models, index, value, n, L, D, weights, residuals)\n"
"learn() of n sparse rows in order (row i to model models[i]): the same sums.");

static PyObject *py_learn_rows(PyObject *self, PyObject *args) {
    Py_buffer mat = {0}, vec = {0}, models = {0}, index = {0}, value = {0}, weights = {0},
              residuals = {0};
    Py_ssize_t n, L, D;
    if (!PyArg_ParseTuple(args, "w*w*y*y*y*nnny*y*", &mat, &vec, &models, &index, &value, &n,
                          &L, &D, &weights, &residuals))
        return NULL;
    Py_ssize_t M = vec.len / (D * (Py_ssize_t)sizeof(double));
    int ok = expect(&mat, M * D * D, 8, "matrices") && rows_ok(&index, &value, n, L, D) &&
             expect(&models, n, 8, "models") && expect(&weights, n, 8, "weights") &&
             expect(&residuals, n, 8, "residuals") && models_ok(models.buf, n, M);
    if (ok) {
        const int64_t *model = models.buf, *idx = index.len ? index.buf : NULL;
        const double *val = value.buf, *w = weights.buf, *r = residuals.buf;
        double *a = mat.buf, *b = vec.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            gram_add(a + model[i] * D * D, b + model[i] * D, D, idx ? idx + i * L : NULL,
                     val + i * L, L, w[i], r[i]);
        Py_END_ALLOW_THREADS
    }
    RELEASE(&mat, &vec, &models, &index, &value, &weights, &residuals);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(rank_one_doc,
"rank_one(a_inv, theta, model, index, value, L, D, weight, residual)\n"
"Sherman-Morrison update of one model's inverse and solution by one sparse row.");

static PyObject *py_rank_one(PyObject *self, PyObject *args) { return row_update(args, 1); }

PyDoc_STRVAR(block_update_doc,
"block_update(a, b, blocks, index, value, L, D, weight, residual)\n"
"The joint model's blocks updated by one row already added to a and b.");

static PyObject *py_block_update(PyObject *self, PyObject *args) {
    Py_buffer a = {0}, b = {0}, index = {0}, value = {0};
    PyObject *blocks;
    Py_ssize_t L, D;
    double weight, residual;
    if (!PyArg_ParseTuple(args, "y*y*Oy*y*nndd", &a, &b, &blocks, &index, &value, &L, &D,
                          &weight, &residual))
        return NULL;
    Blocks blk;
    Py_buffer block_bufs[N_BLOCK_ARRAYS];
    Scratch t = {0};
    int ok = expect(&a, D * D, 8, "a") && expect(&b, D, 8, "b") &&
             rows_ok(&index, &value, 1, L, D) && get_blocks(blocks, D, &blk, block_bufs);
    if (ok && !scratch_alloc(&t, &blk, L)) {
        release_blocks(block_bufs);
        ok = 0;
    }
    if (ok) {
        if (!block_learn(&blk, a.buf, b.buf, D, index.len ? index.buf : NULL, value.buf, L,
                         weight, residual, &t)) {
            PyErr_SetString(PyExc_ValueError, "the row does not fit the blocks");
            ok = 0;
        }
        scratch_free(&t);
        release_blocks(block_bufs);
    }
    RELEASE(&a, &b, &index, &value);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* One row of the automatic budget: candidate j's clipped bounds p -+ sqrt(v) radii[j] and
 * its rule's distribution into pmfs (J, K), their mixture by weights (capped at 1) into
 * mix, and candidate lead's bounds into low and high (lead -1: none). scratch: 3 K. */
static void candidate_mix(const double *p, const double *v, Py_ssize_t K, const double *r,
                          const double *w, Py_ssize_t J, int rule, double lo, double hi,
                          double tol, double *scratch, double *pmfs, double *mix,
                          Py_ssize_t lead, double *low, double *high) {
    double *l = scratch, *h = scratch + K, *root = scratch + 2 * K;
    for (Py_ssize_t k = 0; k < K; k++) mix[k] = 0.0, root[k] = sqrt(v[k]);
    for (Py_ssize_t j = 0; j < J; j++) {
        double *out = pmfs + j * K;
        if (rule != ELIMINATION && j != lead)  /* the rule needs the upper bounds only */
            for (Py_ssize_t k = 0; k < K; k++) h[k] = clip(p[k] + root[k] * r[j], lo, hi);
        else
            for (Py_ssize_t k = 0; k < K; k++) {
                double radius = root[k] * r[j];
                l[k] = clip(p[k] - radius, lo, hi);
                h[k] = clip(p[k] + radius, lo, hi);
            }
        decide(p, l, h, K, rule, lo, hi, tol, out);
        for (Py_ssize_t k = 0; k < K; k++) mix[k] += w[j] * out[k];
        if (j == lead)
            for (Py_ssize_t k = 0; k < K; k++) low[k] = l[k], high[k] = h[k];
    }
    for (Py_ssize_t k = 0; k < K; k++) mix[k] = mix[k] <= 1.0 ? mix[k] : 1.0;
}

/* The inverse-CDF draw of u from pmf, as the learner's draw for one row (cdf: K scratch) */
static Py_ssize_t draw(const double *pmf, Py_ssize_t K, double u, double *cdf) {
    double total = 0.0;
    for (Py_ssize_t k = 0; k < K; k++) cdf[k] = total += pmf[k];
    double target = u * cdf[K - 1];
    Py_ssize_t index = 0;
    for (Py_ssize_t k = 0; k < K; k++) index += cdf[k] <= target;
    return index < K - 1 ? index : K - 1;
}

PyDoc_STRVAR(candidates_doc,
"candidates(prediction, variance, radii, weights, n, K, J, rule, lo, hi, tol, lead,\n"
"           mix, pmfs, low, high)\n"
"The automatic budget's decisions (budget.candidate_decisions): candidate j's clipped\n"
"bounds prediction -+ sqrt(variance) radii[j] and its rule's distribution into pmfs\n"
"(n, J, K), their mixture by weights (capped at 1) into mix (n, K), and candidate lead's\n"
"bounds into low and high (n, K).");

static PyObject *py_candidates(PyObject *self, PyObject *args) {
    Py_buffer prediction = {0}, variance = {0}, radii = {0}, weights = {0}, mix = {0},
              pmfs = {0}, low = {0}, high = {0};
    Py_ssize_t n, K, J, lead;
    int rule;
    double lo, hi, tol;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nnnidddnw*w*w*w*", &prediction, &variance, &radii,
                          &weights, &n, &K, &J, &rule, &lo, &hi, &tol, &lead, &mix,
                          &pmfs, &low, &high))
        return NULL;
    int ok = expect(&prediction, n * K, 8, "prediction") &&
             expect(&variance, n * K, 8, "variance") && expect(&radii, J, 8, "radii") &&
             expect(&weights, J, 8, "weights") && expect(&mix, n * K, 8, "mix") &&
             expect(&pmfs, n * J * K, 8, "pmfs") && expect(&low, n * K, 8, "low") &&
             expect(&high, n * K, 8, "high");
    if (ok && (lead < 0 || lead >= J)) {
        PyErr_SetString(PyExc_ValueError, "lead out of range");
        ok = 0;
    }
    double *scratch = ok ? PyMem_Malloc(3 * K * sizeof(double)) : NULL;
    if (ok && !scratch) {
        PyErr_NoMemory();
        ok = 0;
    }
    if (ok) {
        const double *pred = prediction.buf, *var = variance.buf;
        double *mx = mix.buf, *pm = pmfs.buf, *lw = low.buf, *hg = high.buf;
        for (Py_ssize_t i = 0; i < n; i++)
            candidate_mix(pred + i * K, var + i * K, K, radii.buf, weights.buf, J, rule,
                          lo, hi, tol, scratch, pm + i * J * K, mx + i * K, lead, lw + i * K,
                          hg + i * K);
    }
    PyMem_Free(scratch);
    RELEASE(&prediction, &variance, &radii, &weights, &mix, &pmfs, &low, &high);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* One label of model m: into the Gram matrix, then the decision state's rank-one update
 * (the blocks' with blk, else the dense inverse's). Returns 1 when the model is due a fresh
 * inverse instead (the caller inverts), 0 after the update, -1 for a row outside the
 * blocks. */
static int learn_row(double *A, double *B, double *AI, double *TH, int64_t *up, Py_ssize_t m,
                     Py_ssize_t D, const int64_t *cols, const double *val, Py_ssize_t L,
                     double weight, double residual, Py_ssize_t refresh, const Blocks *blk,
                     Scratch *t, double *spread) {
    gram_add(A + m * D * D, B + m * D, D, cols, val, L, weight, residual);
    if (up[m] >= refresh) return 1;
    if (blk) {
        if (!block_learn(blk, A, B, D, cols, val, L, weight, residual, t)) return -1;
    } else {
        rank_one(AI + m * D * D, TH + m * D, D, cols, val, L, weight, residual, spread);
    }
    up[m]++;
    return 0;
}

/* A dense context's row: the intercept, then the context's d values; 0 if one is not
 * finite (the caller reports it) */
static int dense_row(double *row, double intercept, const double *x, Py_ssize_t d) {
    row[0] = intercept;
    for (Py_ssize_t i = 0; i < d; i++) {
        if (!isfinite(x[i])) return 0;
        row[i + 1] = x[i];
    }
    return 1;
}

PyDoc_STRVAR(predict_dense_doc,
"predict_dense(a_inv, theta, models, context, intercept, D, prior, budget, rule,\n"
"              lo, hi, tol, u, penalty[, out]) -> (index, prob) or None\n"
"One decision for a dense context of D - 1 values (the product class): each action's\n"
"bounds, the rule's distribution (uniform for a NaN budget) and the inverse-CDF draw of\n"
"u, as run_online and the learner's draw make them, and with out (4, K) the distribution,\n"
"predictions, low and high bounds in it (out (K,): the distribution); None if a value is\n"
"not finite. Unless out asks for the bounds, with a penalty > 0 (every A at least penalty\n"
"I), only the widths the rule's distribution needs are computed (decisive_moments: the\n"
"same distribution and draw).");

static PyObject *py_predict_dense(PyObject *self, PyObject *args) {
    Py_buffer a_inv = {0}, theta = {0}, models = {0}, context = {0}, out = {0};
    Py_ssize_t D;
    int rule;
    double intercept, prior, beta, lo, hi, tol, u, penalty;
    if (!PyArg_ParseTuple(args, "y*y*y*y*dnddiddddd|w*", &a_inv, &theta, &models, &context,
                          &intercept, &D, &prior, &beta, &rule, &lo, &hi, &tol, &u,
                          &penalty, &out))
        return NULL;
    Py_ssize_t M = theta.len / (D * (Py_ssize_t)sizeof(double)), K = models.len / 8;
    int ok = expect(&a_inv, M * D * D, 8, "a_inv") && expect(&context, D - 1, 8, "context") &&
             (!out.buf || out.len == K * 8 || expect(&out, 4 * K, 8, "out"));
    int bounds = out.buf && out.len == 4 * K * 8;  /* (else at most the distribution) */
    const int64_t *model = models.buf;
    ok = ok && models_ok(model, K, M);
    double *work = ok ? PyMem_Malloc((D + 7 * K) * sizeof(double)) : NULL;
    if (ok && !work) {
        PyErr_NoMemory();
        ok = 0;
    }
    PyObject *result = NULL;
    if (ok) {
        double *row = work, *p = row + D, *v = p + K, *lw = v + K, *hg = lw + K, *pm = hg + K,
               *cdf = v;  /* the variances are spent once the decision is made */
        Py_ssize_t *pending = (Py_ssize_t *)(pm + K);
        if (!dense_row(row, intercept, context.buf, D - 1)) {
            result = Py_None;
            Py_INCREF(result);
        } else {
            if (!bounds && penalty > 0.0 && !isnan(beta))
                decisive_moments(a_inv.buf, theta.buf, model, K, D, row, prior, beta, penalty,
                                 rule, lo, hi, tol, p, v, pending);
            else
                shared_moments(a_inv.buf, theta.buf, model, K, D, NULL, row, D, prior, p, v);
            decision(p, v, K, beta, lo, hi, rule, tol, lw, hg, pm);
            if (out.buf) {
                double *o = out.buf;
                memcpy(o, pm, K * sizeof(double));
                if (bounds) {
                    memcpy(o + K, p, K * sizeof(double));
                    memcpy(o + 2 * K, lw, K * sizeof(double));
                    memcpy(o + 3 * K, hg, K * sizeof(double));
                }
            }
            Py_ssize_t index = draw(pm, K, u, cdf);
            result = Py_BuildValue("nd", index, pm[index]);
        }
    }
    PyMem_Free(work);
    RELEASE(&a_inv, &theta, &models, &context, &out);
    return result;
}

PyDoc_STRVAR(predict_auto_doc,
"predict_auto(a_inv, theta, models, context, intercept, D, prior, sqrt_grid, scale,\n"
"             weights, rule, lo, hi, tol, u, pmfs) -> (index, prob, candidates) or None\n"
"predict_dense with the automatic budget: candidate j's radius is sqrt_grid[j] * scale,\n"
"the played distribution their mixture by weights (as `candidates` makes it), drawn by u;\n"
"every candidate's distribution into pmfs (J, K), and its probability of the drawn action\n"
"in candidates (a tuple); None if a value is not finite.");

static PyObject *py_predict_auto(PyObject *self, PyObject *args) {
    Py_buffer a_inv = {0}, theta = {0}, models = {0}, context = {0}, sqrt_grid = {0},
              weights = {0}, pmfs = {0};
    Py_ssize_t D;
    int rule;
    double intercept, prior, scale, lo, hi, tol, u;
    if (!PyArg_ParseTuple(args, "y*y*y*y*dndy*dy*iddddw*", &a_inv, &theta, &models, &context,
                          &intercept, &D, &prior, &sqrt_grid, &scale, &weights, &rule,
                          &lo, &hi, &tol, &u, &pmfs))
        return NULL;
    Py_ssize_t M = theta.len / (D * (Py_ssize_t)sizeof(double)), K = models.len / 8,
               J = sqrt_grid.len / 8;
    int ok = expect(&a_inv, M * D * D, 8, "a_inv") && expect(&context, D - 1, 8, "context") &&
             expect(&weights, J, 8, "weights") && expect(&pmfs, J * K, 8, "pmfs");
    const int64_t *model = models.buf;
    ok = ok && models_ok(model, K, M);
    double *work = ok ? PyMem_Malloc((D + 6 * K + J) * sizeof(double)) : NULL;
    if (ok && !work) {
        PyErr_NoMemory();
        ok = 0;
    }
    PyObject *result = NULL;
    if (ok) {
        double *row = work, *p = row + D, *v = p + K, *mix = v + K, *scratch = mix + K,
               *radii = scratch + 3 * K, *pm = pmfs.buf;
        if (!dense_row(row, intercept, context.buf, D - 1)) {
            result = Py_None;
            Py_INCREF(result);
        } else {
            const double *sq = sqrt_grid.buf;
            for (Py_ssize_t j = 0; j < J; j++) radii[j] = sq[j] * scale;
            shared_moments(a_inv.buf, theta.buf, model, K, D, NULL, row, D, prior, p, v);
            candidate_mix(p, v, K, radii, weights.buf, J, rule, lo, hi, tol, scratch, pm,
                          mix, -1, NULL, NULL);
            Py_ssize_t index = draw(mix, K, u, scratch);
            PyObject *chosen = PyTuple_New(J);
            for (Py_ssize_t j = 0; chosen && j < J; j++) {
                PyObject *prob = PyFloat_FromDouble(pm[j * K + index]);
                if (!prob) Py_CLEAR(chosen);
                else PyTuple_SET_ITEM(chosen, j, prob);
            }
            if (chosen) result = Py_BuildValue("ndN", index, mix[index], chosen);
        }
    }
    PyMem_Free(work);
    RELEASE(&a_inv, &theta, &models, &context, &sqrt_grid, &weights, &pmfs);
    return result;
}

/* The automatic budget's weights from the estimates in w (their largest: top), in place:
 * (1 - floor) softmax(eta * estimates) + floor / J, the sum in order */
static void weigh(double *w, Py_ssize_t J, double top, double eta, double floor_) {
    double total = 0.0;
    for (Py_ssize_t j = 0; j < J; j++) total += w[j] = exp(eta * (w[j] - top));
    for (Py_ssize_t j = 0; j < J; j++) w[j] = (1.0 - floor_) * w[j] / total + floor_ / (double)J;
}

PyDoc_STRVAR(credit_doc,
"credit(estimates, probs, scale, eta, floor, weights) -> leader\n"
"A label's credit to the automatic budget's candidates (budget.BudgetSelector.update):\n"
"estimates[j] += probs[j] * scale in the list, then (1 - floor) softmax(eta * estimates)\n"
"+ floor / J into weights (exponents from the largest estimate, the sum in order); returns\n"
"the index of the first largest estimate.");

static PyObject *py_credit(PyObject *self, PyObject *args) {
    PyObject *estimates, *probs;
    Py_buffer weights = {0};
    double scale, eta, floor_;
    if (!PyArg_ParseTuple(args, "O!Odddw*", &PyList_Type, &estimates, &probs, &scale, &eta,
                          &floor_, &weights))
        return NULL;
    Py_ssize_t J = PyList_GET_SIZE(estimates);
    PyObject *seq = PySequence_Fast(probs, "probs must be a sequence");
    int ok = seq && expect(&weights, J, 8, "weights");
    if (ok && (J == 0 || PySequence_Fast_GET_SIZE(seq) != J)) {
        PyErr_Format(PyExc_ValueError, "need %zd candidate probabilities", J);
        ok = 0;
    }
    Py_ssize_t leader = 0;
    double *w = weights.buf, top = 0.0;
    for (Py_ssize_t j = 0; ok && j < J; j++) {  /* the new estimates, the list untouched */
        double e = PyFloat_AsDouble(PyList_GET_ITEM(estimates, j)),
               q = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, j));
        if (PyErr_Occurred()) ok = 0;
        w[j] = e + q * scale;
        if (j == 0 || w[j] > top) top = w[j], leader = j;
    }
    for (Py_ssize_t j = 0; ok && j < J; j++) {
        PyObject *sum = PyFloat_FromDouble(w[j]);
        if (!sum) ok = 0;
        else PyList_SetItem(estimates, j, sum);  /* steals the new float, drops the old */
    }
    if (ok) weigh(w, J, top, eta, floor_);
    Py_XDECREF(seq);
    RELEASE(&weights);
    if (!ok) return NULL;
    return PyLong_FromSsize_t(leader);
}

PyDoc_STRVAR(learn_dense_doc,
"learn_dense(a, b, a_inv, theta, updates, model, context, intercept, D, weight, residual,\n"
"            refresh[, squares, weights]) -> (stale, fit) or None\n"
"Learn a dense context's row for one model and rebuild it at once (the online schedule):\n"
"the Gram matrix, then a rank-one update of the inverse, or stale True when the model is\n"
"due a fresh inverse (the caller inverts); with squares and weights (M,), the label's\n"
"weight * residual^2 and weight added to the model's (the penalty choice's statistics);\n"
"fit: theta . row before the label (moments' prediction less the prior, the same sum);\n"
"None if a value is not finite (nothing learned).");

static PyObject *py_learn_dense(PyObject *self, PyObject *args) {
    Py_buffer a = {0}, b = {0}, a_inv = {0}, theta = {0}, updates = {0}, context = {0},
              squares = {0}, weights = {0};
    Py_ssize_t model, D, refresh;
    double intercept, weight, residual;
    if (!PyArg_ParseTuple(args, "w*w*w*w*w*ny*dnddn|w*w*", &a, &b, &a_inv, &theta, &updates,
                          &model, &context, &intercept, &D, &weight, &residual, &refresh,
                          &squares, &weights))
        return NULL;
    Py_ssize_t M = theta.len / (D * (Py_ssize_t)sizeof(double));
    int ok = expect(&a, M * D * D, 8, "a") && expect(&b, M * D, 8, "b") &&
             expect(&a_inv, M * D * D, 8, "a_inv") && expect(&updates, M, 8, "updates") &&
             expect(&context, D - 1, 8, "context") &&
             (!squares.buf || (expect(&squares, M, 8, "squares") &&
                               expect(&weights, M, 8, "weights")));
    if (ok && (model < 0 || model >= M)) {
        PyErr_Format(PyExc_ValueError, "model %zd out of range", model);
        ok = 0;
    }
    double *work = ok ? PyMem_Malloc(2 * D * sizeof(double)) : NULL;
    if (ok && !work) {
        PyErr_NoMemory();
        ok = 0;
    }
    PyObject *result = NULL;
    if (ok) {
        double *row = work, *spread = work + D;
        int64_t *up = updates.buf;
        if (!dense_row(row, intercept, context.buf, D - 1)) {
            result = Py_None;
            Py_INCREF(result);
        } else {
            double fit = dot((const double *)theta.buf + model * D, row, D);
            int stale = learn_row(a.buf, b.buf, a_inv.buf, theta.buf, up, model, D, NULL, row,
                                  D, weight, residual, refresh, NULL, NULL, spread);
            if (squares.buf) {
                ((double *)squares.buf)[model] += weight * residual * residual;
                ((double *)weights.buf)[model] += weight;
            }
            result = Py_BuildValue("(Od)", stale ? Py_True : Py_False, fit);
        }
    }
    PyMem_Free(work);
    RELEASE(&a, &b, &a_inv, &theta, &updates, &context, &squares, &weights);
    return result;
}

/* The end of run_online's examples from start: n, or one past the label that finds its
 * model due a fresh inverse (learn_row's test), whose model goes in *due (else -1); counts:
 * scratch (M). */
static Py_ssize_t online_end(const int64_t *act, const int64_t *model, const int64_t *up,
                             Py_ssize_t M, Py_ssize_t start, Py_ssize_t n,
                             Py_ssize_t refresh, int64_t *counts, Py_ssize_t *due) {
    memcpy(counts, up, M * sizeof(int64_t));
    *due = -1;
    for (Py_ssize_t i = start; i < n; i++) {
        if (act[i] < 0) continue;
        Py_ssize_t m = model[act[i]];
        if (counts[m]++ >= refresh) {
            *due = m;
            return i + 1;
        }
    }
    return n;
}

#if defined(__GNUC__)
/* row[k0 .. k0 + 4 NV) of gram_add_rows' row l, held in registers while the rows pass (NV:
 * a constant of each caller, for the loop to unroll into registers) */
static inline __attribute__((always_inline)) void gram_chunk(
        double *row, Py_ssize_t k0, Py_ssize_t l, Py_ssize_t D, const double *val,
        const int64_t *labels, Py_ssize_t count, const double *wt, const int NV) {
    lanes acc[CHAINS];
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) memcpy(&acc[v], row + k0 + 4 * v, sizeof(lanes));
    for (Py_ssize_t c = 0; c < count; c++) {
        const double *x = val + labels[c] * D;
        double wx = wt[labels[c]] * x[l];
        if (wx == 0.0) continue;
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++) {
            lanes u;
            memcpy(&u, x + k0 + 4 * v, sizeof u);
            acc[v] += wx * u;
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) memcpy(row + k0 + 4 * v, &acc[v], sizeof(lanes));
}
#endif

/* gram_add of the dense rows labels[0..count) of val (D wide), weights wt and residuals
 * rw - prior, in their order: each entry's additions in the order of the calls, a row of a
 * at a time for all the rows, up to CHAINS vectors of it in registers while they pass */
WIDE static void gram_add_rows(double *a, double *b, Py_ssize_t D, const double *val,
                               const int64_t *labels, Py_ssize_t count, const double *wt,
                               const double *rw, double prior) {
    for (Py_ssize_t l = 0; l < D; l++) {
        double *row = a + l * D;
        Py_ssize_t k = 0;
#if defined(__GNUC__)
#define GRAM(NV, REST) if (NV) gram_chunk(row, k, l, D, val, labels, count, wt, NV)
        BY_CHUNKS(k, D, GRAM);
#undef GRAM
#endif
        for (Py_ssize_t c = 0; c < count; c++) {
            const double *x = val + labels[c] * D;
            double wx = wt[labels[c]] * x[l];
            if (wx == 0.0) continue;
            for (Py_ssize_t t = k; t < D; t++) row[t] += wx * x[t];
            b[l] += wx * (rw[labels[c]] - prior);
        }
    }
}

/* run_online's moments (predictions with the prior into p (n, K), widths into var from
 * example start on) and labels for examples start..end-1 of dense rows (every column in
 * order: no index) shared by the K actions, model by model: a model's inverse changes with
 * its own labels alone, so its rows are read in groups while it stays in cache, its labels
 * learned in between (their Gram additions, read only by a refresh, after its pass), and
 * each example meets the state it meets example by example (shared_moments' sums, each
 * model's updates in their order). labels: scratch of end - start. */
static void model_major(double *A, double *B, double *AI, double *TH, int64_t *up,
                        const int64_t *model, Py_ssize_t K, Py_ssize_t M, Py_ssize_t D,
                        const double *val, const int64_t *act,
                        const double *rw, const double *wt, double prior, Py_ssize_t refresh,
                        Py_ssize_t start, Py_ssize_t end, double *p, double *var,
                        double *spread, double *xt, int64_t *labels) {
    Py_ssize_t stride = end - start + ROWS;  /* xt (D, stride): the rows transposed, padded */
    for (Py_ssize_t c = 0; c < D; c++) {
        for (Py_ssize_t i = start; i < end; i++) xt[c * stride + i - start] = val[i * D + c];
        for (Py_ssize_t i = end; i < start + stride; i++) xt[c * stride + i - start] = 0.0;
    }
    for (Py_ssize_t m = 0; m < M; m++) {
        Py_ssize_t count = 0;  /* the model's labels: their Gram additions after its pass */
        for (Py_ssize_t i = start; i < end;) {
            Py_ssize_t j = i;  /* the model's next label */
            while (j < end && (act[j] < 0 || model[act[j]] != m)) j++;
            Py_ssize_t stop = j < end ? j + 1 : end;
            for (Py_ssize_t r = i; r < stop;) {
                double pg[ROWS], vg[ROWS];
                Py_ssize_t G = stop - r < ROWS ? stop - r : ROWS;
#if defined(__GNUC__)
                rows_moments(AI + m * D * D, D, xt + (r - start), stride, G, vg, 0, TH + m * D,
                             pg);
#else
                for (Py_ssize_t g = 0; g < G; g++)
                    row_moments(AI + m * D * D, TH + m * D, D, NULL, val + (r + g) * D, D,
                                pg + g, vg + g);
#endif
                for (Py_ssize_t k = 0; k < K; k++)
                    if (model[k] == m)
                        for (Py_ssize_t g = 0; g < G; g++) {
                            p[(r + g) * K + k] = pg[g] + prior;
                            var[(r + g - start) * K + k] = vg[g];
                        }
                r += G;
            }
            if (j < end) {  /* learn_row's update of the inverse (none when it is due) */
                labels[count++] = j;
                if (up[m] < refresh) {
                    rank_one(AI + m * D * D, TH + m * D, D, NULL, val + j * D, D, wt[j],
                             rw[j] - prior, spread);
                    up[m]++;
                }
            }
            i = stop;
        }
        gram_add_rows(A + m * D * D, B + m * D, D, val, labels, count, wt, rw, prior);
    }
}

/* The change test's recurrence (regcb_stream/adapt/change.py): one squared residual x of
 * the n-th label; 1 when the walk rises more than threshold * ln n above its minimum. */
static int hinkley_step(double x, Py_ssize_t *n, double *mean, double *walk, double *low,
                        double threshold, double delta, Py_ssize_t min_labels,
                        Py_ssize_t window) {
    *n += 1;
    *mean += (x - *mean) / (double)(*n < window ? *n : window);
    *walk += x - *mean - delta;
    if (*walk < *low)
        *low = *walk;
    else if (*n >= min_labels && *walk - *low > threshold * log((double)*n))
        return 1;
    return 0;
}

/* The change test in the online loop (ChangeDetector.loop_spec): each label's squared
 * residual into the block, the test at the block's end; an alarm stops the loop after
 * that label (the caller restarts the test and forgets). state: n, mean, walk, low and
 * the residuals in the block so far; waiting: the block's residuals (`every` of them). */
typedef struct {
    Py_buffer state, waiting;
    double threshold, delta, span;
    Py_ssize_t min_labels, window, every;
} Watch;

static int watch_open(PyObject *spec, Watch *w) {
    memset(w, 0, sizeof(*w));
    if (!PyArg_ParseTuple(spec, "w*w*dddnn", &w->state, &w->waiting, &w->threshold,
                          &w->delta, &w->span, &w->min_labels, &w->window))
        return 0;
    w->every = w->waiting.len / 8;
    const double *st = w->state.buf;
    if (!expect(&w->state, 5, 8, "change state") || w->every < 1 || !(w->span > 0.0) ||
        !(st[4] >= 0.0 && st[4] < (double)w->every && st[0] >= 0.0)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the change test's state");
        return 0;
    }
    return 1;
}

static void watch_close(Watch *w) { RELEASE(&w->state, &w->waiting); }

/* A label's reward and the prediction it was decided with; 1 if the test alarms */
static int watch_label(Watch *w, double reward, double prediction) {
    double *st = w->state.buf, *x = w->waiting.buf;
    double s = fabs(reward - prediction) / w->span;
    if (s > 1.0) s = 1.0;  /* (min(s, 1): NaN stays NaN) */
    Py_ssize_t count = (Py_ssize_t)st[4];
    x[count++] = s * s;
    st[4] = count < w->every ? (double)count : 0.0;
    if (count < w->every) return 0;
    Py_ssize_t n = (Py_ssize_t)st[0];
    double mean = st[1], walk = st[2], low = st[3];
    for (Py_ssize_t j = 0; j < w->every; j++)
        if (hinkley_step(x[j], &n, &mean, &walk, &low, w->threshold, w->delta,
                         w->min_labels, w->window))
            return 1;  /* (the state is restarted by the caller) */
    st[0] = (double)n, st[1] = mean, st[2] = walk, st[3] = low;
    return 0;
}

/* The row after the label that ends the test's block, from row i (n if none in i..n-1) */
static Py_ssize_t watch_end(const Watch *w, const int64_t *act, Py_ssize_t i, Py_ssize_t n) {
    Py_ssize_t left = w->every - (Py_ssize_t)((const double *)w->state.buf)[4];
    for (; i < n; i++)
        if (act[i] >= 0 && --left == 0) return i + 1;
    return n;
}

PyDoc_STRVAR(run_online_doc,
"run_online(a, b, a_inv, theta, updates, models, index, value, played, reward, weight,\n"
"           budget, pmf, pred, low, high, start, n, R, K, L, D, rule, refresh,\n"
"           prior, lo, hi, tol[, blocks, selector, var, change])\n"
"    -> (stop, learned, stale, alarm)\n"
"Examples start..n-1 in order: bounds with budget[labels learned so far in the call]\n"
"(uniform play while that budget is NaN: no label yet), the rule's distribution, then\n"
"the label of played[i] >= 0 learned and the decision state rebuilt (online schedule).\n"
"Stops after an example whose model has had `refresh` rank-one updates since its last\n"
"fresh inverse, its row added to the Gram matrix only, or (with the joint model's\n"
"blocks) before an example with a row outside them; returns (examples done, labels\n"
"learned, that model, or -2 for a row outside the blocks, or -1). var (n, K), if\n"
"given: each decision's x^T A^-1 x, the width before the budget. Dense rows shared by the\n"
"actions are decided model by model (model_major: the same numbers). index may hold one\n"
"example's rows (R, L), the columns of every example's (their values differ). change: the\n"
"change test's (Watch), each label's residual tested in the loop, which stops after a\n"
"label that alarms (alarm 1).");

/* The automatic budget in the online loop (budget.BudgetSelector, one rebuild per label):
 * candidate j's radius is sqrt_grid[j] * scale[labels learned] (NaN: uniform play), the
 * played distribution their mixture by the frozen weights, and each label credits every
 * candidate with its probability of the logged action times the unit reward over the
 * logged probability, then weighs them anew (as `credit`) and takes the leader's bounds. */
typedef struct {
    Py_buffer sqrt_grid, scale, prob, weights;
    PyObject *estimates;  /* the selector's list, read before the loop, written after */
    double rate, floor_, *est, *radii, *pmfs, *scratch;
    Py_ssize_t J, scored, lead;
} Auto;

static int auto_open(PyObject *spec, Py_ssize_t n, Py_ssize_t K, Auto *au) {
    memset(au, 0, sizeof(*au));
    if (!PyArg_ParseTuple(spec, "y*y*y*w*O!ddnn", &au->sqrt_grid, &au->scale, &au->prob,
                          &au->weights, &PyList_Type, &au->estimates, &au->rate, &au->floor_,
                          &au->scored, &au->lead))
        return 0;
    au->J = au->sqrt_grid.len / 8;
    if (!expect(&au->prob, n, 8, "probs") || !expect(&au->weights, au->J, 8, "weights"))
        return 0;
    if (PyList_GET_SIZE(au->estimates) != au->J || au->lead < 0 || au->lead >= au->J) {
        PyErr_SetString(PyExc_ValueError, "the selector's estimates or leader do not fit");
        return 0;
    }
    au->est = PyMem_Malloc((2 * au->J + au->J * K + 3 * K) * sizeof(double));
    if (!au->est) {
        PyErr_NoMemory();
        return 0;
    }
    au->radii = au->est + au->J;
    au->pmfs = au->radii + au->J;
    au->scratch = au->pmfs + au->J * K;
    for (Py_ssize_t j = 0; j < au->J; j++) {
        au->est[j] = PyFloat_AsDouble(PyList_GET_ITEM(au->estimates, j));
        if (au->est[j] == -1.0 && PyErr_Occurred()) return 0;
    }
    return 1;
}

/* One decision of the automatic budget after `learned` labels of the call */
static void auto_decide(Auto *au, const double *p, const double *var, Py_ssize_t K,
                        Py_ssize_t learned, int rule, double lo, double hi, double tol,
                        double *low, double *high, double *pmf) {
    double scale = ((const double *)au->scale.buf)[learned];
    if (isnan(scale)) {  /* no label yet: uniform play, every candidate alike */
        for (Py_ssize_t k = 0; k < K; k++) pmf[k] = 1.0 / (double)K, low[k] = lo, high[k] = hi;
        for (Py_ssize_t jk = 0; jk < au->J * K; jk++) au->pmfs[jk] = 1.0 / (double)K;
        return;
    }
    const double *sq = au->sqrt_grid.buf;
    for (Py_ssize_t j = 0; j < au->J; j++) au->radii[j] = sq[j] * scale;
    candidate_mix(p, var, K, au->radii, au->weights.buf, au->J, rule, lo, hi, tol,
                  au->scratch, au->pmfs, pmf, au->lead, low, high);
}

/* A label's credit to the candidates (action a, reward r, probability prob), then their
 * new weights and leader: the operations of `credit` */
static void auto_credit(Auto *au, Py_ssize_t a, Py_ssize_t K, double r, double prob,
                        double lo, double hi) {
    double unit = clip((r - lo) / (hi - lo), 0.0, 1.0), scale = unit / prob, top = 0.0;
    double *w = au->weights.buf;
    for (Py_ssize_t j = 0; j < au->J; j++) {
        w[j] = au->est[j] = au->est[j] + au->pmfs[j * K + a] * scale;
        if (j == 0 || w[j] > top) top = w[j], au->lead = j;
    }
    au->scored++;
    weigh(w, au->J, top, au->rate / sqrt((double)au->scored), au->floor_);
}

/* Write the estimates back to the selector's list; release the buffers */
static int auto_close(Auto *au, int ok) {
    for (Py_ssize_t j = 0; ok && au->est && j < au->J; j++) {
        PyObject *value = PyFloat_FromDouble(au->est[j]);
        if (!value) ok = 0;
        else PyList_SetItem(au->estimates, j, value);
    }
    PyMem_Free(au->est);
    RELEASE(&au->sqrt_grid, &au->scale, &au->prob, &au->weights);
    return ok;
}

static PyObject *py_run_online(PyObject *self, PyObject *args) {
    Py_buffer a = {0}, b = {0}, a_inv = {0}, theta = {0}, updates = {0}, models = {0},
              index = {0}, value = {0}, played = {0}, reward = {0}, weight = {0},
              budget = {0}, pmf = {0}, pred = {0}, low = {0}, high = {0};
    Py_ssize_t start, n, R, K, L, D, refresh;
    int rule;
    double prior, lo, hi, tol;
    PyObject *blocks = Py_None, *selector = Py_None, *var_out = Py_None, *change = Py_None;
    if (!PyArg_ParseTuple(args, "w*w*w*w*w*y*y*y*y*y*y*y*w*w*w*w*nnnnnnindddd|OOOO", &a, &b,
                          &a_inv, &theta, &updates, &models, &index, &value, &played,
                          &reward, &weight, &budget, &pmf, &pred, &low, &high, &start, &n,
                          &R, &K, &L, &D, &rule, &refresh, &prior, &lo, &hi, &tol,
                          &blocks, &selector, &var_out, &change))
        return NULL;
    Py_buffer widths = {0};  /* var_out's: each decision's x^T A^-1 x */
    if (var_out != Py_None && PyObject_GetBuffer(var_out, &widths, PyBUF_WRITABLE) < 0) {
        RELEASE(&a, &b, &a_inv, &theta, &updates, &models, &index, &value, &played, &reward,
                &weight, &budget, &pmf, &pred, &low, &high);
        return NULL;
    }
    Auto au_, *au = selector == Py_None ? NULL : &au_;
    if (au && !auto_open(selector, n, K, au)) {
        auto_close(au, 0);
        RELEASE(&a, &b, &a_inv, &theta, &updates, &models, &index, &value, &played, &reward,
                &weight, &budget, &pmf, &pred, &low, &high, &widths);
        return NULL;
    }
    Blocks blk;
    Py_buffer block_bufs[N_BLOCK_ARRAYS];
    Scratch t = {0};
    RowsScratch rs = {0};
    int blocked = blocks != Py_None, fits = 1;
    if (blocked && !get_blocks(blocks, D, &blk, block_bufs)) {
        if (au) auto_close(au, 0);
        RELEASE(&a, &b, &a_inv, &theta, &updates, &models, &index, &value, &played, &reward,
                &weight, &budget, &pmf, &pred, &low, &high, &widths);
        return NULL;
    }
    Py_ssize_t M = theta.len / (D * (Py_ssize_t)sizeof(double));
    int ok = expect(&a, M * D * D, 8, "a") && expect(&b, M * D, 8, "b") &&
             expect(&a_inv, M * D * D, 8, "a_inv") && expect(&updates, M, 8, "updates") &&
             expect(&models, K, 8, "models") && shared_rows_ok(&index, &value, n, R, L, D) &&
             expect(&played, n, 8, "played") &&
             expect(&reward, n, 8, "reward") && expect(&weight, n, 8, "weight") &&
             expect(&pmf, n * K, 8, "pmf") && expect(&pred, n * K, 8, "pred") &&
             expect(&low, n * K, 8, "low") && expect(&high, n * K, 8, "high") &&
             (!widths.obj || expect(&widths, n * K, 8, "var"));
    const int64_t *model = models.buf, *act = played.buf;
    ok = ok && models_ok(model, K, M) && labels_ok(act, start, n, K, au ? &au->scale : &budget);
    if (ok && blocked && (M != 1 || !scratch_alloc(&t, &blk, L) ||
                          !rows_scratch_alloc(&rs, &blk, K, L))) {
        if (M != 1) PyErr_SetString(PyExc_ValueError, "blocks are for one model");
        ok = 0;
    }
    double *spread = ok ? PyMem_Malloc((D + K) * sizeof(double)) : NULL;  /* and var */
    if (ok && !spread) {
        PyErr_NoMemory();
        ok = 0;
    }
    double *var = ok ? spread + D : NULL;
    Watch watch_, *watch = NULL;
    if (ok && change != Py_None) {
        ok = watch_open(change, &watch_);
        watch = &watch_;
    }
    /* dense rows shared by the actions: decided model by model, into wide: the widths
     * (n - start, K), online_end's counts (M), model_major's rows transposed and its
     * labels (n - start) */
    const int64_t *idx = index.len ? index.buf : NULL;
    /* index entries from one example to the next: none when one example's rows serve all
     * (the readers' rows of a block whose examples share their features' columns) */
    Py_ssize_t istep = n > 1 && index.len == R * L * 8 ? 0 : R * L;
    int by_model = ok && R == 1 && !blocked && L == D && start < n;
    for (Py_ssize_t i = start; by_model && idx && i < (istep ? n : start + 1); i++)
        by_model = !unless_dense(idx + i * istep, L);
    double *wide = by_model ? PyMem_Malloc(
        ((n - start) * (K + 1) + M + D * (n - start + ROWS)) * sizeof(double)) : NULL;
    if (by_model && !wide) {
        PyErr_NoMemory();
        ok = 0;
    }
    Py_ssize_t i = start, learned = 0, stale = -1;
    int alarm = 0;
    if (ok && wide) {
        Py_BEGIN_ALLOW_THREADS
        const double *rw = reward.buf, *bud = budget.buf;
        /* parts of rows up to a model's refresh or the end of the change test's block:
         * model_major learns a part's labels before its decisions are read */
        while (i < n && stale < 0 && !alarm) {
            Py_ssize_t due = -1, end = online_end(act, model, updates.buf, M, i, n, refresh,
                                                  (int64_t *)(wide + (n - start) * K), &due);
            if (watch && watch_end(watch, act, i, end) < end) {
                end = watch_end(watch, act, i, end);
                due = -1;
            }
            model_major(a.buf, b.buf, a_inv.buf, theta.buf, updates.buf, model, K, M, D,
                        value.buf, act, rw, weight.buf, prior, refresh, i, end, pred.buf,
                        wide + (i - start) * K, spread, wide + (n - start) * K + M,
                        (int64_t *)(wide + (n - start) * K + M + D * (n - start + ROWS)));
            for (; i < end; i++) {
                double *p = (double *)pred.buf + i * K, *lw = (double *)low.buf + i * K,
                       *hg = (double *)high.buf + i * K, *pm = (double *)pmf.buf + i * K,
                       *v = wide + (i - start) * K;
                if (widths.obj) memcpy((double *)widths.buf + i * K, v, K * sizeof(double));
                if (au)
                    auto_decide(au, p, v, K, learned, rule, lo, hi, tol, lw, hg, pm);
                else
                    decision(p, v, K, bud[learned], lo, hi, rule, tol, lw, hg, pm);
                if (act[i] < 0) continue;
                if (au)
                    auto_credit(au, act[i], K, rw[i], ((const double *)au->prob.buf)[i], lo, hi);
                learned++;
                alarm = watch && watch_label(watch, rw[i], p[act[i]]);
            }
            stale = due;
        }
        Py_END_ALLOW_THREADS
    } else if (ok) {
        Py_BEGIN_ALLOW_THREADS
        double *A = a.buf, *B = b.buf, *AI = a_inv.buf, *TH = theta.buf;
        int64_t *up = updates.buf;
        const double *val = value.buf, *rw = reward.buf, *wt = weight.buf, *bud = budget.buf;
        for (; i < n; i++) {
            double *p = (double *)pred.buf + i * K, *lw = (double *)low.buf + i * K,
                   *hg = (double *)high.buf + i * K, *pm = (double *)pmf.buf + i * K;
            double beta = bud[learned];
            if (R == 1 && !blocked)
                shared_moments(AI, TH, model, K, D, idx ? idx + i * istep : NULL, val + i * L,
                               L, prior, p, var);
            else if (blocked) {
                fits = block_rows(&blk, idx ? idx + i * istep : NULL, val + i * R * L,
                                  R == 1 ? 0 : L, L, &t, &rs, p, var);
                for (Py_ssize_t k = 0; k < K; k++) p[k] += prior;
            } else for (Py_ssize_t k = 0; k < K; k++) {
                Py_ssize_t row = (i * R + (R == 1 ? 0 : k)) * L;
                const int64_t *cols = idx ? idx + i * istep + (R == 1 ? 0 : k) * L : NULL;
                row_moments(AI + model[k] * D * D, TH + model[k] * D, D, cols, val + row, L,
                            p + k, var + k);
                p[k] += prior;
            }
            if (!fits) {  /* a row outside the blocks: the caller refits them */
                stale = -2;
                break;
            }
            if (widths.obj) memcpy((double *)widths.buf + i * K, var, K * sizeof(double));
            if (au)
                auto_decide(au, p, var, K, learned, rule, lo, hi, tol, lw, hg, pm);
            else
                decision(p, var, K, beta, lo, hi, rule, tol, lw, hg, pm);
            if (act[i] < 0) continue;
            Py_ssize_t m = model[act[i]], row = (i * R + (R == 1 ? 0 : act[i])) * L,
                       irow = i * istep + (R == 1 ? 0 : act[i]) * L;
            if (au) auto_credit(au, act[i], K, rw[i], ((const double *)au->prob.buf)[i], lo, hi);
            learned++;
            int due = learn_row(A, B, AI, TH, up, m, D, idx ? idx + irow : NULL, val + row, L,
                                wt[i], rw[i] - prior, refresh, blocked ? &blk : NULL, &t,
                                spread);
            alarm = watch && watch_label(watch, rw[i], p[act[i]]);
            if (due > 0 || alarm) {  /* the caller inverts afresh, or forgets */
                stale = due > 0 ? m : -1;
                i++;
                break;
            }
            fits = due == 0;
        }
        Py_END_ALLOW_THREADS
    }
    if (blocked) {
        scratch_free(&t);
        rows_scratch_free(&rs);
        release_blocks(block_bufs);
    }
    PyMem_Free(spread);
    PyMem_Free(wide);
    if (au) ok = auto_close(au, ok);
    if (watch) watch_close(watch);
    RELEASE(&a, &b, &a_inv, &theta, &updates, &models, &index, &value, &played, &reward,
            &weight, &budget, &pmf, &pred, &low, &high, &widths);
    if (!ok) return NULL;
    return Py_BuildValue("nnni", i, learned, stale, alarm);
}

/* -- the bounded ridge (BoundedRidgeOracle) ------------------------------------------
 * A kept exact on its first h columns (the head: inverse hinv and Gram hgram, (M, h, h),
 * solution htheta (M, h)) and as its diagonal beyond them (prec), so that A is approximated
 * by the block-diagonal matrix of the two.  The tail's data precision prec (sum of w x^2)
 * and theta are float32 (M, S) (their first h entries unused), S >= D their row stride
 * (capacity); dense rows have L <= S; the arithmetic is in double.  A tail column's
 * precision is prec + l2 * scale, scale = max(1, the mean over learned rows of their tail's
 * sum of x^2), from tail = [that sum, the rows] (so a row's tail, however many features
 * it has, starts with the prior of l2 observations of a typical tail).  A row's moments cost O(head nonzeros^2 + L), a
 * label O(h^2) when it touches the head, else O(L). */
typedef struct {
    Py_ssize_t h, S;
    double *hinv, *hgram, *htheta, *tail, l2;
    float *prec, *theta;
    int64_t *up;
    int64_t *hcol;  /* scratch: a row's head entries (L), and A_HH^-1 x_H (h) */
    double *hval, *spread;
} Bounded;

/* the prior precision of a tail column */
static double bounded_prior(const Bounded *B) {
    double mean = B->tail[1] > 0.0 ? B->tail[0] / B->tail[1] : 1.0;
    return B->l2 * (mean > 1.0 ? mean : 1.0);
}

/* a row's prediction (without the prior), its tail's sum x^2 / prec, and its head entries
 * into hcol and hval (returns their count) */
/* sum theta x and sum x^2 / (prec + prior) over n contiguous tail entries, in four lanes */
WIDE static void tail_sums(const float *theta, const float *prec, const double *x,
                           Py_ssize_t n, double prior, double *p, double *v) {
    Py_ssize_t i = 0;
    double p0 = 0.0, v0 = 0.0;
#if defined(__GNUC__)
    typedef float floats __attribute__((vector_size(16)));
    lanes sp = {0.0, 0.0, 0.0, 0.0}, sv = {0.0, 0.0, 0.0, 0.0};
    lanes pr = {prior, prior, prior, prior};
    for (; i + 4 <= n; i += 4) {
        floats t4, q4;
        lanes xv;
        memcpy(&t4, theta + i, sizeof t4);
        memcpy(&q4, prec + i, sizeof q4);
        memcpy(&xv, x + i, sizeof xv);
        sp += __builtin_convertvector(t4, lanes) * xv;
        sv += xv * xv / (__builtin_convertvector(q4, lanes) + pr);
    }
    p0 = (sp[0] + sp[1]) + (sp[2] + sp[3]);
    v0 = (sv[0] + sv[1]) + (sv[2] + sv[3]);
#endif
    for (; i < n; i++) {
        p0 += (double)theta[i] * x[i];
        v0 += x[i] * x[i] / ((double)prec[i] + prior);
    }
    *p += p0;
    *v += v0;
}

static Py_ssize_t bounded_split(const Bounded *B, Py_ssize_t m, const int64_t *index,
                                const double *value, Py_ssize_t L, double *fit,
                                double *tail) {
    const float *prec = B->prec + m * B->S, *theta = B->theta + m * B->S;
    const double *htheta = B->htheta + m * B->h;
    double p = 0.0, v = 0.0, prior = bounded_prior(B);
    Py_ssize_t nh = 0;
    index = unless_dense(index, L);
    if (!index && L > B->h) {  /* a dense row: its tail in contiguous sums */
        tail_sums(theta + B->h, prec + B->h, value + B->h, L - B->h, prior, &p, &v);
        L = B->h;
    }
    for (Py_ssize_t l = 0; l < L; l++) {
        double x = value[l];
        if (x == 0.0) continue;
        Py_ssize_t col = index ? index[l] : l;
        if (col < B->h) {
            p += htheta[col] * x;
            B->hcol[nh] = col;
            B->hval[nh++] = x;
        } else {
            p += (double)theta[col] * x;
            v += x * x / ((double)prec[col] + prior);
        }
    }
    *fit = p;
    *tail = v;
    return nh;
}

/* prediction (without the prior) and x^T A~^-1 x of one row under model m */
static void bounded_moments_row(const Bounded *B, Py_ssize_t m, const int64_t *index,
                                const double *value, Py_ssize_t L, double *pred, double *var) {
    Py_ssize_t nh = bounded_split(B, m, index, value, L, pred, var);
    if (nh) {
        double unused, head;
        row_moments(B->hinv + m * B->h * B->h, B->htheta + m * B->h, B->h, B->hcol, B->hval,
                    nh, &unused, &head);
        *var += head;
    }
}

/* One label of model m: recursive least squares with A~^-1 (theta moves by A~^-1 x w (r -
 * fit) / (1 + w x^T A~^-1 x)), then the head's inverse by Sherman-Morrison and its Gram,
 * and the tail's diagonal by w x^2.  Returns 1 when the head is due a fresh inverse. */
static int bounded_learn_row(const Bounded *B, Py_ssize_t m, const int64_t *index,
                             const double *value, Py_ssize_t L, double weight,
                             double residual, Py_ssize_t refresh) {
    Py_ssize_t h = B->h, S = B->S;
    float *prec = B->prec + m * S, *theta = B->theta + m * S;
    double *hinv = B->hinv + m * h * h, *hgram = B->hgram + m * h * h, *spread = B->spread;
    double *htheta = B->htheta + m * h;
    double fit, tail, quad = 0.0;
    Py_ssize_t nh = bounded_split(B, m, index, value, L, &fit, &tail);
    if (nh) {
        memset(spread, 0, h * sizeof(double));
        for (Py_ssize_t j = 0; j < nh; j++) {
            const double *row = hinv + B->hcol[j] * h;
            for (Py_ssize_t i = 0; i < h; i++) spread[i] += B->hval[j] * row[i];
        }
        for (Py_ssize_t j = 0; j < nh; j++) quad += B->hval[j] * spread[B->hcol[j]];
    }
    double step = weight * (residual - fit) / (1.0 + weight * (quad + tail));
    double prior = bounded_prior(B), norm = 0.0;
    for (Py_ssize_t l = 0; l < L; l++) {
        double x = value[l];
        Py_ssize_t col = index ? index[l] : l;
        if (x == 0.0 || col < h) continue;
        theta[col] = (float)((double)theta[col] + step * x / ((double)prec[col] + prior));
        prec[col] = (float)((double)prec[col] + weight * x * x);
        norm += x * x;
    }
    B->tail[0] += norm;
    B->tail[1] += 1.0;
    if (!nh) return 0;
    for (Py_ssize_t i = 0; i < h; i++) htheta[i] += step * spread[i];
    double gain = weight / (1.0 + weight * quad);
    for (Py_ssize_t i = 0; i < h; i++) {
        double g = gain * spread[i];
        double *row = hinv + i * h;
        for (Py_ssize_t j = 0; j < h; j++) row[j] -= spread[j] * g;
    }
    for (Py_ssize_t j = 0; j < nh; j++)
        for (Py_ssize_t k = 0; k < nh; k++)
            hgram[B->hcol[j] * h + B->hcol[k]] += weight * B->hval[j] * B->hval[k];
    return ++B->up[m] >= refresh;
}

/* the columns of n rows of length L are all below S (or dense rows, L <= S) */
static int bounded_rows_ok(Py_buffer *index, Py_buffer *value, Py_ssize_t n, Py_ssize_t L,
                           Py_ssize_t S) {
    if (index->len == 0 && L > S) {
        PyErr_Format(PyExc_ValueError, "dense rows of length %zd exceed %zd", L, S);
        return 0;
    }
    if (!((index->len == 0 || expect(index, n * L, 8, "index")) &&
          expect(value, n * L, 8, "value")))
        return 0;
    const int64_t *idx = index->buf;
    for (Py_ssize_t i = 0; i < index->len / 8; i++)
        if (idx[i] < 0 || idx[i] >= S) {
            PyErr_Format(PyExc_ValueError, "column %lld out of range", (long long)idx[i]);
            return 0;
        }
    return 1;
}

/* the state's buffers checked against M models, h and S; scratch for rows of length L */
static int bounded_open(Bounded *B, Py_buffer *hinv, Py_buffer *hgram, Py_buffer *htheta,
                        Py_buffer *prec, Py_buffer *theta, Py_buffer *up, Py_buffer *tail,
                        double l2, Py_ssize_t h, Py_ssize_t S, Py_ssize_t L, Py_ssize_t *M) {
    *M = theta->len / (S * (Py_ssize_t)sizeof(float));
    if (!(expect(hinv, *M * h * h, 8, "hinv") && expect(hgram, *M * h * h, 8, "hgram") &&
          expect(htheta, *M * h, 8, "htheta") && expect(prec, *M * S, 4, "prec") &&
          expect(up, *M, 8, "updates") && expect(tail, 2, 8, "tail")))
        return 0;
    B->h = h, B->S = S, B->tail = tail->buf, B->l2 = l2;
    B->hinv = hinv->buf, B->hgram = hgram->buf, B->htheta = htheta->buf;
    B->prec = prec->buf, B->theta = theta->buf;
    B->up = up->buf;
    B->hcol = PyMem_Malloc((L + 1) * sizeof(int64_t));
    B->hval = PyMem_Malloc((L + h + 1) * sizeof(double));
    B->spread = B->hval ? B->hval + L : NULL;
    if (!B->hcol || !B->hval) {
        PyMem_Free(B->hcol);
        PyMem_Free(B->hval);
        PyErr_NoMemory();
        return 0;
    }
    return 1;
}

static void bounded_close(Bounded *B) {
    PyMem_Free(B->hcol);
    PyMem_Free(B->hval);
}

PyDoc_STRVAR(bounded_moments_doc,
"bounded_moments(hinv, hgram, htheta, prec, theta, updates, tail, l2, models, index, value,\n"
"                n, R, K, L, h, S, prior, pred, var)\n"
"Prediction and x^T A~^-1 x of every (row, action) into pred and var (n, K).");

static PyObject *py_bounded_moments(PyObject *self, PyObject *args) {
    Py_buffer hinv = {0}, hgram = {0}, htheta = {0}, prec = {0}, theta = {0}, up = {0},
              tail = {0}, models = {0}, index = {0}, value = {0}, pred = {0}, var = {0};
    Py_ssize_t n, R, K, L, h, S, M;
    double prior, l2;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*dy*y*y*nnnnnndw*w*", &hinv, &hgram, &htheta,
                          &prec, &theta, &up, &tail, &l2, &models, &index, &value, &n, &R, &K,
                          &L, &h, &S, &prior, &pred, &var))
        return NULL;
    Bounded B;
    int ok = bounded_rows_ok(&index, &value, n * R, L, S) &&
             bounded_open(&B, &hinv, &hgram, &htheta, &prec, &theta, &up, &tail, l2, h, S, L,
                          &M);
    if (ok) {
        ok = expect(&models, K, 8, "models") && expect(&pred, n * K, 8, "pred") &&
             expect(&var, n * K, 8, "var") && models_ok(models.buf, K, M);
        const int64_t *model = models.buf, *idx = index.len ? index.buf : NULL;
        double *p = pred.buf, *v = var.buf;
        for (Py_ssize_t i = 0; ok && i < n; i++)
            for (Py_ssize_t k = 0; k < K; k++) {
                Py_ssize_t row = (i * R + (R == 1 ? 0 : k)) * L;
                bounded_moments_row(&B, model[k], idx ? idx + row : NULL,
                                    (const double *)value.buf + row, L, p + i * K + k,
                                    v + i * K + k);
                p[i * K + k] += prior;
            }
        bounded_close(&B);
    }
    RELEASE(&hinv, &hgram, &htheta, &prec, &theta, &up, &tail, &models, &index, &value, &pred,
            &var);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(bounded_learn_doc,
"bounded_learn(hinv, hgram, htheta, prec, theta, updates, tail, l2, model, index, value, L,\n"
"              h, S, weight, residual, refresh) -> whether the head is due a fresh inverse\n"
"One label of one model (an empty index: a dense row).");

static PyObject *py_bounded_learn(PyObject *self, PyObject *args) {
    Py_buffer hinv = {0}, hgram = {0}, htheta = {0}, prec = {0}, theta = {0}, up = {0},
              tail = {0}, index = {0}, value = {0};
    Py_ssize_t model, L, h, S, refresh, M;
    double l2, weight, residual;
    if (!PyArg_ParseTuple(args, "w*w*w*w*w*w*w*dny*y*nnnddn", &hinv, &hgram, &htheta, &prec,
                          &theta, &up, &tail, &l2, &model, &index, &value, &L, &h, &S, &weight,
                          &residual, &refresh))
        return NULL;
    Bounded B;
    int due = 0, ok = bounded_rows_ok(&index, &value, 1, L, S) &&
                      bounded_open(&B, &hinv, &hgram, &htheta, &prec, &theta, &up, &tail, l2,
                                   h, S, L, &M);
    if (ok) {
        if (model < 0 || model >= M) {
            PyErr_Format(PyExc_ValueError, "model %zd out of range", model);
            ok = 0;
        } else {
            due = bounded_learn_row(&B, model, index.len ? index.buf : NULL, value.buf, L,
                                    weight, residual, refresh);
        }
        bounded_close(&B);
    }
    RELEASE(&hinv, &hgram, &htheta, &prec, &theta, &up, &tail, &index, &value);
    if (!ok) return NULL;
    return PyBool_FromLong(due);
}

PyDoc_STRVAR(bounded_run_doc,
"bounded_run(hinv, hgram, htheta, prec, theta, updates, tail, l2, models, index, value,\n"
"            played, reward, weight, budget, pmf, pred, low, high, start, n, R, K, L, h, S,\n"
"            rule, refresh, prior, lo, hi, tol[, var, change])\n"
"    -> (stop, learned, stale, alarm)\n"
"run_online for the bounded ridge: examples start..n-1 in order, bounds with\n"
"budget[labels so far] (uniform play while it is NaN), the rule's distribution, then the\n"
"label of played[i] >= 0 learned at once; stops after a label that makes its model's\n"
"head due a fresh inverse (stale: that model, else -1) or (change: run_online's) that\n"
"the change test alarms at; var (n, K), if given: each decision's x^T A^-1 x.");

static PyObject *py_bounded_run(PyObject *self, PyObject *args) {
    Py_buffer hinv = {0}, hgram = {0}, htheta = {0}, prec = {0}, theta = {0}, up = {0},
              tail = {0}, models = {0}, index = {0}, value = {0}, played = {0}, reward = {0},
              weight = {0}, budget = {0}, pmf = {0}, pred = {0}, low = {0}, high = {0};
    Py_ssize_t start, n, R, K, L, h, S, refresh, M;
    int rule;
    double l2, prior, lo, hi, tol;
    PyObject *var_out = Py_None, *change = Py_None;
    if (!PyArg_ParseTuple(args, "w*w*w*w*w*w*w*dy*y*y*y*y*y*y*w*w*w*w*nnnnnnnindddd|OO", &hinv,
                          &hgram, &htheta, &prec, &theta, &up, &tail, &l2, &models, &index,
                          &value, &played, &reward, &weight, &budget, &pmf, &pred, &low, &high,
                          &start, &n, &R, &K, &L, &h, &S, &rule, &refresh, &prior, &lo,
                          &hi, &tol, &var_out, &change))
        return NULL;
    Py_buffer widths = {0};  /* var_out's: each decision's x^T A^-1 x */
    if (var_out != Py_None && PyObject_GetBuffer(var_out, &widths, PyBUF_WRITABLE) < 0) {
        RELEASE(&hinv, &hgram, &htheta, &prec, &theta, &up, &tail, &models, &index, &value,
                &played, &reward, &weight, &budget, &pmf, &pred, &low, &high);
        return NULL;
    }
    Bounded B;
    int ok = bounded_rows_ok(&index, &value, n * R, L, S) &&
             bounded_open(&B, &hinv, &hgram, &htheta, &prec, &theta, &up, &tail, l2, h, S, L,
                          &M);
    int opened = ok;
    ok = ok && expect(&models, K, 8, "models") && expect(&played, n, 8, "played") &&
         expect(&reward, n, 8, "reward") && expect(&weight, n, 8, "weight") &&
         expect(&pmf, n * K, 8, "pmf") && expect(&pred, n * K, 8, "pred") &&
         expect(&low, n * K, 8, "low") && expect(&high, n * K, 8, "high") &&
         (!widths.obj || expect(&widths, n * K, 8, "var")) && models_ok(models.buf, K, M);
    const int64_t *model = models.buf, *act = played.buf;
    ok = ok && labels_ok(act, start, n, K, &budget);
    double *var = ok ? PyMem_Malloc(K * sizeof(double)) : NULL;
    if (ok && !var) {
        PyErr_NoMemory();
        ok = 0;
    }
    Watch watch_, *watch = NULL;
    if (ok && change != Py_None) {
        ok = watch_open(change, &watch_);
        watch = &watch_;
    }
    Py_ssize_t i = start, learned = 0, stale = -1;
    int alarm = 0;
    if (ok) {
        const int64_t *idx = index.len ? index.buf : NULL;
        const double *val = value.buf, *rw = reward.buf, *wt = weight.buf, *bud = budget.buf;
        for (; i < n; i++) {
            double *p = (double *)pred.buf + i * K;
            for (Py_ssize_t k = 0; k < K; k++) {
                Py_ssize_t row = (i * R + (R == 1 ? 0 : k)) * L;
                bounded_moments_row(&B, model[k], idx ? idx + row : NULL, val + row, L, p + k,
                                    var + k);
                p[k] += prior;
            }
            if (widths.obj) memcpy((double *)widths.buf + i * K, var, K * sizeof(double));
            decision(p, var, K, bud[learned], lo, hi, rule, tol,
                     (double *)low.buf + i * K, (double *)high.buf + i * K,
                     (double *)pmf.buf + i * K);
            if (act[i] < 0) continue;
            Py_ssize_t row = (i * R + (R == 1 ? 0 : act[i])) * L;
            learned++;
            int due = bounded_learn_row(&B, model[act[i]], idx ? idx + row : NULL, val + row,
                                        L, wt[i], rw[i] - prior, refresh);
            alarm = watch && watch_label(watch, rw[i], p[act[i]]);
            if (due || alarm) {  /* the caller inverts the head afresh, or forgets */
                stale = due ? model[act[i]] : -1;
                i++;
                break;
            }
        }
    }
    if (opened) bounded_close(&B);
    PyMem_Free(var);
    if (watch) watch_close(watch);
    RELEASE(&hinv, &hgram, &htheta, &prec, &theta, &up, &tail, &models, &index, &value,
            &played, &reward, &weight, &budget, &pmf, &pred, &low, &high, &widths);
    if (!ok) return NULL;
    return Py_BuildValue("nnni", i, learned, stale, alarm);
}

/* -- VW's regressor (VWOracle): gd with adaptive, normalized, invariant updates ---------
 * A float32 re-implementation of VW's gd and of the sensitivity RegCB asks of it
 * (oracles/vw.py holds the numpy reference and the derivation).  State per model: w, g, s
 * float32 (M, S); counters double [total, norm_sum, label_min, label_max]; sums in feature
 * order, in float32, as VW's. */
typedef struct {
    Py_ssize_t S;
    float *w, *g, *s;
    double *c;
} VWState;

#define VW_X2_MIN (1.084202e-19f * 1.084202e-19f)

/* the raw score of a row under model m */
static float vw_score(const VWState *V, Py_ssize_t m, const int64_t *idx, const double *val,
                      Py_ssize_t L) {
    const float *w = V->w + m * V->S;
    float sc = 0.0f;
    for (Py_ssize_t l = 0; l < L; l++) {
        float x = (float)val[l];
        if (x != 0.0f) sc += w[idx ? idx[l] : l] * x;
    }
    return sc;
}

/* the prediction change per unit of importance weight on a fake label (VW's stateless
 * pass of the invariant update) */
static float vw_sensitivity(const VWState *V, Py_ssize_t m, const int64_t *idx,
                            const double *val, Py_ssize_t L, float score, float fake,
                            float eta) {
    const float *g = V->g + m * V->S, *s = V->s + m * V->S;
    float d = score - fake, grad = 4.0f * (d * d), norm_x = 0.0f, rate = 0.0f;
    for (Py_ssize_t l = 0; l < L; l++) {
        float x = (float)val[l];
        if (x == 0.0f) continue;
        Py_ssize_t col = idx ? idx[l] : l;
        float x2 = x * x > VW_X2_MIN ? x * x : VW_X2_MIN;
        float gg = g[col] + grad * x2, ss = s[col] > fabsf(x) ? s[col] : fabsf(x);
        norm_x += x2 / (ss * ss);
        rate += x2 / sqrtf(gg) / ss;
    }
    float multiplier = sqrtf(((float)V->c[0] + 1.0f) / ((float)V->c[1] + norm_x));
    return eta * rate * multiplier;
}

/* VW's gd update (compute_update and train) of model m by one row, label y, weight */
static void vw_update(VWState *V, Py_ssize_t m, const int64_t *idx, const double *val,
                      Py_ssize_t L, float y, float weight, float eta) {
    float *w = V->w + m * V->S, *g = V->g + m * V->S, *s = V->s + m * V->S;
    double *c = V->c;
    if (y < c[2]) c[2] = y;
    if (y > c[3]) c[3] = y;
    float raw = vw_score(V, m, idx, val, L);
    float p = (float)fmin(fmax((double)raw, c[2]), c[3]);
    float d = p - y;
    if (d * d <= 0.0f || weight <= 0.0f) return; /* VW: no loss, no update */
    float norm = 0.0f, per = 0.0f;
    for (Py_ssize_t l = 0; l < L; l++) {
        float x = (float)val[l];
        if (x == 0.0f) continue;
        Py_ssize_t col = idx ? idx[l] : l;
        float x2 = x * x > VW_X2_MIN ? x * x : VW_X2_MIN, ax = fabsf(x);
        g[col] += weight * 4.0f * (d * d) * x2;
        if (ax > s[col]) {
            if (s[col] > 0.0f) w[col] *= s[col] / ax;
            s[col] = ax;
        }
        norm += x2 / (s[col] * s[col]);
    }
    c[1] += (double)weight * (double)norm;
    c[0] += (double)weight;
    float multiplier = (float)sqrt((double)((float)c[0] / (float)c[1]));
    for (Py_ssize_t l = 0; l < L; l++) {
        float x = (float)val[l];
        if (x == 0.0f) continue;
        Py_ssize_t col = idx ? idx[l] : l;
        float x2 = x * x > VW_X2_MIN ? x * x : VW_X2_MIN;
        per += x2 * (1.0f / sqrtf(g[col]) / s[col]);
    }
    per *= multiplier;
    float scale = eta * weight, step;
    if (scale * per < 1e-6f)
        step = 2.0f * (y - p) * scale;
    else
        step = (y - p) * (1.0f - (float)exp(-2.0 * (double)(scale * per))) / per;
    for (Py_ssize_t l = 0; l < L; l++) {
        float x = (float)val[l];
        if (x == 0.0f) continue;
        Py_ssize_t col = idx ? idx[l] : l;
        w[col] += step * multiplier * x * (1.0f / sqrtf(g[col]) / s[col]);
    }
}

/* VW's search for the largest weight u <= f / sens with u (f^2 - (f - sens u)^2) <= delta
 * (20 halvings, tolerance 1e-6), in float32 */
static float vw_bisection(float f, float delta, float sens) {
    float maxw = f / sens;
    if (!(maxw < FLT_MAX)) maxw = FLT_MAX;
    if (maxw * f * f <= delta) return maxw;
    float low = 0.0f, high = maxw, square = f * f;
    for (int i = 0; i < 20; i++) {
        float u = (high + low) / 2.0f, gap = f - sens * u, v = u * (square - gap * gap) - delta;
        if (v > 0.0f) high = u;
        else low = u;
        if (!(fabsf(v) > 1e-6f && high - low > 1e-6f)) break;
    }
    return low;
}

/* bounds.sensitivity_move: the largest u <= f with u^2 (2 f - u) <= budget sens */
static double vw_move(double f, double sens, double budget) {
    if (!isfinite(sens)) return INFINITY;
    if (f <= 0.0) return 0.0;
    double ratio = (sens > 0.0 ? sens : 0.0) * (budget > 0.0 ? budget : 0.0) / (f * f * f);
    if (ratio >= 1.0) return f;
    double theta = 2.0 * asin(sqrt(27.0 / 32.0 * ratio));
    double s6 = sin(theta / 6.0);
    return (2.0 * f / 3.0) * (2.0 * s6 * s6 + sqrt(3.0) * sin(theta / 3.0));
}

/* a row's score and its bounds toward the fake labels hi + 1 and lo - 1 (unclipped) */
static void vw_bounds(const VWState *V, Py_ssize_t m, const int64_t *idx, const double *val,
                      Py_ssize_t L, double budget, double lo, double hi, float eta,
                      int bisection, double *pred, double *low, double *high) {
    float score = vw_score(V, m, idx, val, L);
    float delta = budget > 0.0 ? (float)budget : -INFINITY;
    for (int side = 0; side < 2; side++) {
        float fake = side == 0 ? (float)(hi + 1.0) : (float)(lo - 1.0);
        float sign = side == 0 ? 1.0f : -1.0f;
        float sens = vw_sensitivity(V, m, idx, val, L, score, fake, eta);
        float distance = (fake - score) * sign;
        double bound = bisection  /* (float32 with VW's search, double with the root) */
            ? (double)(score + sign * (sens * vw_bisection(distance, delta, sens)))
            : (double)score + (double)sign * vw_move((double)distance, (double)sens, budget);
        double out = distance < 1.0f || !isfinite(sens) ? sign * INFINITY : bound;
        if (side == 0) *high = out;
        else *low = out;
    }
    *pred = (double)score;
}

PyDoc_STRVAR(vw_run_doc,
"vw_run(w, g, s, counters, models, index, value, played, reward, weight, budget, pmf,\n"
"       pred, low, high, n, R, K, L, S, rule, eta, bisection, lo, hi, tol, events)\n"
"       -> labels learned\n"
"RegCB over VW's regressor, examples in order (the online schedule): each action's score\n"
"and bounds with budget[labels so far] (uniform play and the whole range while it is\n"
"NaN), the rule's distribution on the clipped bounds, then the label of played[i] >= 0\n"
"learned at once with weight weight[i] * events / actions (events: int64 [labels,\n"
"actions decided], updated).  Without labels (played all -1) it only decides.");

static PyObject *py_vw_run(PyObject *self, PyObject *args) {
    Py_buffer w = {0}, g = {0}, s = {0}, c = {0}, models = {0}, index = {0}, value = {0},
              played = {0}, reward = {0}, weight = {0}, budget = {0}, pmf = {0}, pred = {0},
              low = {0}, high = {0}, events = {0};
    Py_ssize_t n, R, K, L, S;
    int rule, bisection;
    double eta, lo, hi, tol;
    if (!PyArg_ParseTuple(args, "w*w*w*w*y*y*y*y*y*y*y*w*w*w*w*nnnnnidpdddw*", &w, &g, &s,
                          &c, &models, &index, &value, &played, &reward, &weight, &budget,
                          &pmf, &pred, &low, &high, &n, &R, &K, &L, &S, &rule, &eta,
                          &bisection, &lo, &hi, &tol, &events))
        return NULL;
    Py_ssize_t M = S > 0 ? w.len / (S * 4) : 0;
    int ok = S > 0 && expect(&w, M * S, 4, "w") && expect(&g, M * S, 4, "g") &&
             expect(&s, M * S, 4, "s") && expect(&c, 4, 8, "counters") &&
             expect(&models, K, 8, "models") && bounded_rows_ok(&index, &value, n * R, L, S) &&
             expect(&played, n, 8, "played") && expect(&reward, n, 8, "reward") &&
             expect(&weight, n, 8, "weight") && expect(&pmf, n * K, 8, "pmf") &&
             expect(&pred, n * K, 8, "pred") && expect(&low, n * K, 8, "low") &&
             expect(&high, n * K, 8, "high") && expect(&events, 2, 8, "events") &&
             models_ok(models.buf, K, M);
    const int64_t *model = models.buf, *act = played.buf;
    ok = ok && labels_ok(act, 0, n, K, &budget);
    Py_ssize_t learned = 0;
    if (ok) {
        VWState state = {S, w.buf, g.buf, s.buf, c.buf};
        const int64_t *idx = index.len ? index.buf : NULL;
        const double *val = value.buf, *rw = reward.buf, *wt = weight.buf, *bud = budget.buf;
        int64_t *ev = events.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            double *p = (double *)pred.buf + i * K, *lw = (double *)low.buf + i * K,
                   *hg = (double *)high.buf + i * K, *pm = (double *)pmf.buf + i * K;
            double beta = bud[learned];
            for (Py_ssize_t k = 0; k < K; k++) {
                Py_ssize_t row = (i * R + (R == 1 ? 0 : k)) * L;
                const int64_t *cols = idx ? idx + row : NULL;
                if (isnan(beta)) {
                    p[k] = (double)vw_score(&state, model[k], cols, val + row, L);
                    lw[k] = lo;
                    hg[k] = hi;
                } else {
                    vw_bounds(&state, model[k], cols, val + row, L, beta, lo, hi, (float)eta,
                              bisection, p + k, lw + k, hg + k);
                    lw[k] = clip(lw[k], lo, hi);
                    hg[k] = clip(hg[k], lo, hi);
                }
            }
            if (isnan(beta))
                for (Py_ssize_t k = 0; k < K; k++) pm[k] = 1.0 / (double)K;
            else
                decide(p, lw, hg, K, rule, lo, hi, tol, pm);
            if (act[i] < 0) continue;
            Py_ssize_t m = model[act[i]], row = (i * R + (R == 1 ? 0 : act[i])) * L;
            const int64_t *cols = idx ? idx + row : NULL;
            ev[0] += 1;
            ev[1] += K;
            float wgt = (float)(wt[i] * (double)ev[0] / (double)ev[1]);
            vw_update(&state, m, cols, val + row, L, (float)rw[i], wgt, (float)eta);
            learned++;
        }
    }
    RELEASE(&w, &g, &s, &c, &models, &index, &value, &played, &reward, &weight, &budget,
            &pmf, &pred, &low, &high, &events);
    if (!ok) return NULL;
    return PyLong_FromSsize_t(learned);
}

PyDoc_STRVAR(page_hinkley_doc,
"page_hinkley(block, n, mean, walk, low, threshold, delta, min_labels, window)\n"
"    -> (alarm, n, mean, walk, low)\n\n"
"The change test's recurrence (regcb_stream/adapt/change.py, ChangeDetector._check) over a list\n"
"of squared residuals in order: n labels, the reference mean (1 / min(n, window)\n"
"weights), the walk m_t and its minimum; stops at the first label whose walk rises more\n"
"than threshold * ln n above its minimum (n >= min_labels): alarm True.");

static PyObject *py_page_hinkley(PyObject *self, PyObject *args) {
    PyObject *block;
    Py_ssize_t n, min_labels, window;
    double mean, walk, low, threshold, delta;
    if (!PyArg_ParseTuple(args, "O!ndddddnn", &PyList_Type, &block, &n, &mean, &walk, &low,
                          &threshold, &delta, &min_labels, &window))
        return NULL;
    int alarm = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(block) && !alarm; i++) {
        double x = PyFloat_AsDouble(PyList_GET_ITEM(block, i));
        if (x == -1.0 && PyErr_Occurred()) return NULL;
        alarm = hinkley_step(x, &n, &mean, &walk, &low, threshold, delta, min_labels, window);
    }
    return Py_BuildValue("Nnddd", PyBool_FromLong(alarm), n, mean, walk, low);
}

PyDoc_STRVAR(evidence_doc,
"evidence(gram, b, penalties, out)\n"
"The evidence's two terms (regcb_stream/oracles/penalty_choice.py) for each penalty l of\n"
"penalties (P,), from a model's Gram matrix gram (D, D, symmetric: its lower triangle is\n"
"read) and b (D,): out[0, p] = b^T (G + l I)^-1 b and out[1, p] = log det(G + l I), by the\n"
"Cholesky factor of G + l I.  False (out unfinished) if one is not positive definite.");

static PyObject *py_evidence(PyObject *self, PyObject *args) {
    Py_buffer gram = {0}, b = {0}, penalties = {0}, out = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &gram, &b, &penalties, &out)) return NULL;
    Py_ssize_t D = b.len / (Py_ssize_t)sizeof(double), P = penalties.len / (Py_ssize_t)sizeof(double);
    int ok = expect(&gram, D * D, 8, "gram") && expect(&out, 2 * P, 8, "out");
    double *l = ok ? PyMem_Malloc((D * D + D + 1) * sizeof(double)) : NULL;
    if (ok && !l) {
        PyErr_NoMemory();
        ok = 0;
    }
    int definite = 1;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        const double *g = gram.buf, *rhs = b.buf, *pen = penalties.buf;
        double *y = l + D * D, *res = out.buf;
        for (Py_ssize_t p = 0; p < P && definite; p++) {
            double logdet = 0.0, quad = 0.0;
            for (Py_ssize_t i = 0; i < D && definite; i++) {  /* row i of L, then y[i] */
                for (Py_ssize_t j = 0; j <= i; j++) {
                    double x = g[i * D + j] + (i == j ? pen[p] : 0.0) -
                               dot(l + i * D, l + j * D, j);
                    if (j < i) {
                        l[i * D + j] = x / l[j * D + j];
                    } else if (x > 0.0 && isfinite(x)) {
                        l[i * D + i] = sqrt(x);
                        logdet += log(x);
                    } else {
                        definite = 0;
                    }
                }
                if (definite) {
                    y[i] = (rhs[i] - dot(l + i * D, y, i)) / l[i * D + i];
                    quad += y[i] * y[i];
                }
            }
            res[p] = quad;
            res[P + p] = logdet;
        }
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(l);
    RELEASE(&gram, &b, &penalties, &out);
    if (!ok) return NULL;
    return PyBool_FromLong(definite);
}

static PyMethodDef methods[] = {
    {"moments", py_moments, METH_VARARGS, moments_doc},
    {"learn", py_learn, METH_VARARGS, learn_doc},
    {"learn_rows", py_learn_rows, METH_VARARGS, learn_rows_doc},
    {"rank_one", py_rank_one, METH_VARARGS, rank_one_doc},
    {"run_online", py_run_online, METH_VARARGS, run_online_doc},
    {"block_update", py_block_update, METH_VARARGS, block_update_doc},
    {"candidates", py_candidates, METH_VARARGS, candidates_doc},
    {"predict_dense", py_predict_dense, METH_VARARGS, predict_dense_doc},
    {"predict_auto", py_predict_auto, METH_VARARGS, predict_auto_doc},
    {"credit", py_credit, METH_VARARGS, credit_doc},
    {"learn_dense", py_learn_dense, METH_VARARGS, learn_dense_doc},
    {"bounded_moments", py_bounded_moments, METH_VARARGS, bounded_moments_doc},
    {"bounded_learn", py_bounded_learn, METH_VARARGS, bounded_learn_doc},
    {"bounded_run", py_bounded_run, METH_VARARGS, bounded_run_doc},
    {"vw_run", py_vw_run, METH_VARARGS, vw_run_doc},
    {"page_hinkley", py_page_hinkley, METH_VARARGS, page_hinkley_doc},
    {"evidence", py_evidence, METH_VARARGS, evidence_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ridge", "Compiled kernels of RidgeOracle.", -1, methods,
};

PyMODINIT_FUNC PyInit__ridge(void) { return PyModule_Create(&module); }
