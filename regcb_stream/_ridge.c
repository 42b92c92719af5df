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
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Sums in four interleaved accumulators: a fixed order (the same result on every
 * machine, no -ffast-math) that keeps four additions in flight instead of one. */
static double dot(const double *a, const double *b, Py_ssize_t n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++) s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
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

/* prediction (without the prior) and x^T A^-1 x of one row: sparse (index, value) of
 * length L, or dense (index NULL, L = D); by symmetry, each pair of columns once */
static void row_moments(const double *a_inv, const double *theta, Py_ssize_t D,
                        const int64_t *index, const double *value, Py_ssize_t L,
                        double *pred, double *var) {
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

/* a += w x x^T and b += w r x for one row (sparse, or dense with index NULL) */
static void gram_add(double *a, double *b, Py_ssize_t D, const int64_t *index,
                     const double *value, Py_ssize_t L, double weight, double residual) {
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

/* Sherman-Morrison: a_inv <- (A + w x x^T)^-1 and theta <- its solution, in O(D^2);
 * spread is scratch of length D */
static void rank_one(double *a_inv, double *theta, Py_ssize_t D, const int64_t *index,
                     const double *value, Py_ssize_t L, double weight, double residual,
                     double *spread) {
    memset(spread, 0, D * sizeof(double));
    for (Py_ssize_t l = 0; l < L; l++) {  /* A^-1 x = sum of rows (A^-1 is symmetric) */
        double x = value[l];
        if (x == 0.0) continue;
        const double *row = a_inv + (index ? index[l] : l) * D;
        for (Py_ssize_t i = 0; i < D; i++) spread[i] += x * row[i];
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

/* The decision rule on clipped bounds: elimination (uniform over the actions whose high
 * reaches the best low) or optimistic (uniform over the largest highs), ties within tol */
static void decide(const double *low, const double *high, Py_ssize_t K, int optimistic,
                   double tol, double *pmf) {
    double best = optimistic ? high[0] : low[0];
    for (Py_ssize_t k = 1; k < K; k++) {
        double x = optimistic ? high[k] : low[k];
        if (x > best) best = x;
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t k = 0; k < K; k++) {
        pmf[k] = high[k] >= best - tol;
        count += pmf[k] != 0.0;
    }
    for (Py_ssize_t k = 0; k < K; k++) pmf[k] /= (double)count;
}

static int expect(Py_buffer *buffer, Py_ssize_t items, Py_ssize_t itemsize, const char *name) {
    if (buffer->len != items * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s has %zd bytes, expected %zd", name, buffer->len,
                     items * itemsize);
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

#define RELEASE(...)                                                            \
    do {                                                                        \
        Py_buffer *all_[] = {__VA_ARGS__};                                      \
        for (size_t i_ = 0; i_ < sizeof(all_) / sizeof(all_[0]); i_++)         \
            if (all_[i_]->obj) PyBuffer_Release(all_[i_]);                      \
    } while (0)

PyDoc_STRVAR(moments_doc,
"moments(a_inv, theta, models, index, value, n, R, K, L, D, prior, pred, var)\n"
"Prediction and x^T A^-1 x of every (row, action) into pred and var (n, K).");

static PyObject *py_moments(PyObject *self, PyObject *args) {
    Py_buffer a_inv = {0}, theta = {0}, models = {0}, index = {0}, value = {0}, pred = {0},
              var = {0};
    Py_ssize_t n, R, K, L, D;
    double prior;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*nnnnndw*w*", &a_inv, &theta, &models, &index,
                          &value, &n, &R, &K, &L, &D, &prior, &pred, &var))
        return NULL;
    Py_ssize_t M = theta.len / (D * (Py_ssize_t)sizeof(double));
    int ok = expect(&a_inv, M * D * D, 8, "a_inv") && expect(&models, K, 8, "models") &&
             rows_ok(&index, &value, n * R, L, D) && expect(&pred, n * K, 8, "pred") &&
             expect(&var, n * K, 8, "var");
    const int64_t *model = models.buf;
    for (Py_ssize_t k = 0; ok && k < K; k++)
        if (model[k] < 0 || model[k] >= M) {
            PyErr_Format(PyExc_ValueError, "model %lld out of range", (long long)model[k]);
            ok = 0;
        }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        const double *ai = a_inv.buf, *th = theta.buf, *val = value.buf;
        const int64_t *idx = index.len ? index.buf : NULL;
        double *p = pred.buf, *v = var.buf;
        for (Py_ssize_t i = 0; i < n; i++)
            for (Py_ssize_t k = 0; k < K; k++) {
                Py_ssize_t row = (i * R + (R == 1 ? 0 : k)) * L;
                row_moments(ai + model[k] * D * D, th + model[k] * D, D, idx ? idx + row : NULL,
                            val + row, L, p + i * K + k, v + i * K + k);
                p[i * K + k] += prior;
            }
        Py_END_ALLOW_THREADS
    }
    RELEASE(&a_inv, &theta, &models, &index, &value, &pred, &var);
    if (!ok) return NULL;
    Py_RETURN_NONE;
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

PyDoc_STRVAR(rank_one_doc,
"rank_one(a_inv, theta, model, index, value, L, D, weight, residual)\n"
"Sherman-Morrison update of one model's inverse and solution by one sparse row.");

static PyObject *py_rank_one(PyObject *self, PyObject *args) { return row_update(args, 1); }

PyDoc_STRVAR(run_online_doc,
"run_online(a, b, a_inv, theta, updates, models, index, value, played, reward, weight,\n"
"           budget, pmf, pred, low, high, start, n, R, K, L, D, optimistic, refresh,\n"
"           prior, lo, hi, tol) -> (stop, learned)\n"
"Examples start..n-1 in order: bounds with budget[labels learned so far in the call]\n"
"(uniform play while that budget is NaN: no label yet), the rule's distribution, then\n"
"the label of played[i] >= 0 learned and the decision state rebuilt (online schedule).\n"
"Stops after an example whose model has had `refresh` rank-one updates since its last\n"
"fresh inverse, its row added to the Gram matrix only; returns (examples done, labels\n"
"learned, that model or -1).");

static PyObject *py_run_online(PyObject *self, PyObject *args) {
    Py_buffer a = {0}, b = {0}, a_inv = {0}, theta = {0}, updates = {0}, models = {0},
              index = {0}, value = {0}, played = {0}, reward = {0}, weight = {0},
              budget = {0}, pmf = {0}, pred = {0}, low = {0}, high = {0};
    Py_ssize_t start, n, R, K, L, D, refresh;
    int optimistic;
    double prior, lo, hi, tol;
    if (!PyArg_ParseTuple(args, "w*w*w*w*w*y*y*y*y*y*y*y*w*w*w*w*nnnnnnpndddd", &a, &b,
                          &a_inv, &theta, &updates, &models, &index, &value, &played,
                          &reward, &weight, &budget, &pmf, &pred, &low, &high, &start, &n,
                          &R, &K, &L, &D, &optimistic, &refresh, &prior, &lo, &hi, &tol))
        return NULL;
    Py_ssize_t M = theta.len / (D * (Py_ssize_t)sizeof(double));
    int ok = expect(&a, M * D * D, 8, "a") && expect(&b, M * D, 8, "b") &&
             expect(&a_inv, M * D * D, 8, "a_inv") && expect(&updates, M, 8, "updates") &&
             expect(&models, K, 8, "models") && rows_ok(&index, &value, n * R, L, D) &&
             expect(&played, n, 8, "played") &&
             expect(&reward, n, 8, "reward") && expect(&weight, n, 8, "weight") &&
             expect(&pmf, n * K, 8, "pmf") && expect(&pred, n * K, 8, "pred") &&
             expect(&low, n * K, 8, "low") && expect(&high, n * K, 8, "high");
    const int64_t *model = models.buf, *act = played.buf;
    for (Py_ssize_t k = 0; ok && k < K; k++)
        if (model[k] < 0 || model[k] >= M) {
            PyErr_Format(PyExc_ValueError, "model %lld out of range", (long long)model[k]);
            ok = 0;
        }
    Py_ssize_t labelled = 0, n_budget = budget.len / 8;
    for (Py_ssize_t i = start; ok && i < n; i++) {
        if (act[i] >= K) {
            PyErr_Format(PyExc_ValueError, "played action %lld out of range",
                         (long long)act[i]);
            ok = 0;
        }
        labelled += act[i] >= 0;
    }
    if (ok && n_budget < labelled + 1) {
        PyErr_SetString(PyExc_ValueError, "budget is shorter than the labels + 1");
        ok = 0;
    }
    double *spread = ok ? PyMem_Malloc(D * sizeof(double)) : NULL;
    if (ok && !spread) {
        PyErr_NoMemory();
        ok = 0;
    }
    Py_ssize_t i = start, learned = 0, stale = -1;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        double *A = a.buf, *B = b.buf, *AI = a_inv.buf, *TH = theta.buf;
        int64_t *up = updates.buf;
        const int64_t *idx = index.len ? index.buf : NULL;
        const double *val = value.buf, *rw = reward.buf, *wt = weight.buf, *bud = budget.buf;
        for (; i < n; i++) {
            double *p = (double *)pred.buf + i * K, *lw = (double *)low.buf + i * K,
                   *hg = (double *)high.buf + i * K, *pm = (double *)pmf.buf + i * K;
            double beta = bud[learned];
            for (Py_ssize_t k = 0; k < K; k++) {
                Py_ssize_t row = (i * R + (R == 1 ? 0 : k)) * L;
                double v;
                row_moments(AI + model[k] * D * D, TH + model[k] * D, D, idx ? idx + row : NULL,
                            val + row, L, p + k, &v);
                p[k] += prior;
                double radius = sqrt((beta > 0.0 ? beta : 0.0) * v);
                double l0 = p[k] - radius, h0 = p[k] + radius;
                lw[k] = fmin(fmax(l0, lo), hi);
                hg[k] = fmin(fmax(h0, lo), hi);
                if (isnan(beta)) lw[k] = lo, hg[k] = hi;
            }
            if (isnan(beta))
                for (Py_ssize_t k = 0; k < K; k++) pm[k] = 1.0 / (double)K;
            else
                decide(lw, hg, K, optimistic, tol, pm);
            if (act[i] < 0) continue;
            Py_ssize_t m = model[act[i]], row = (i * R + (R == 1 ? 0 : act[i])) * L;
            double residual = rw[i] - prior;
            const int64_t *cols = idx ? idx + row : NULL;
            gram_add(A + m * D * D, B + m * D, D, cols, val + row, L, wt[i], residual);
            learned++;
            if (up[m] >= refresh) {  /* the caller inverts afresh */
                stale = m;
                i++;
                break;
            }
            rank_one(AI + m * D * D, TH + m * D, D, cols, val + row, L, wt[i], residual, spread);
            up[m]++;
        }
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(spread);
    RELEASE(&a, &b, &a_inv, &theta, &updates, &models, &index, &value, &played, &reward,
            &weight, &budget, &pmf, &pred, &low, &high);
    if (!ok) return NULL;
    return Py_BuildValue("nnn", i, learned, stale);
}

static PyMethodDef methods[] = {
    {"moments", py_moments, METH_VARARGS, moments_doc},
    {"learn", py_learn, METH_VARARGS, learn_doc},
    {"rank_one", py_rank_one, METH_VARARGS, rank_one_doc},
    {"run_online", py_run_online, METH_VARARGS, run_online_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ridge", "Compiled kernels of RidgeOracle.", -1, methods,
};

PyMODINIT_FUNC PyInit__ridge(void) { return PyModule_Create(&module); }
