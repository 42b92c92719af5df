/* Compiled arithmetic of RandomFeatures (regcb_stream/features/random_features.py): after numpy's
 * products w . x (BLAS, as before), one call writes each context's row
 * [shrink x, amplitude (cos(factor (w . x) + shift v + b) - offset)], shift = -radius
 * log(factor) (0 without a radius or for the zero context), in the order numpy's
 * expressions take, without FMA contraction (setup.py): the same numbers as the numpy
 * expressions wherever numpy's cosine is the C library's. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#include "_buffers.h"

/* row = [shrink x, amplitude (cos(factor wave + shift v + b) - offset)] for one context;
 * v NULL: no shift */
static void cosine_row(double *row, const double *x, Py_ssize_t d, const double *wave,
                       Py_ssize_t D, double factor, const double *b, const double *offset,
                       double amplitude, double shrink, double radius, const double *v) {
    for (Py_ssize_t j = 0; j < d; j++) row[j] = x[j] * shrink;
    double shift = factor > 0.0 ? -radius * log(factor) : 0.0;
    for (Py_ssize_t j = 0; j < D; j++) {
        double angle = wave[j] * factor;
        if (v) {
            double turn = shift * v[j];
            angle = angle + turn;
        }
        angle = angle + b[j];
        double centred = cos(angle) - offset[j];
        row[d + j] = amplitude * centred;
    }
}

PyDoc_STRVAR(cosine_rows_doc,
"cosine_rows(contexts, waves, factors, b, offset, amplitude, shrink, out, radius=0.0, v=None)\n"
"For n contexts (n, d) and their products with the frequencies waves (n, D), out (n, d + D)\n"
"gets, row i: contexts[i] * shrink, then amplitude * (cos(waves[i] * factors[i] + s_i v + b)\n"
"- offset), s_i = -radius log(factors[i]) (0 where factors[i] is 0; no term without v).\n"
"factors: a float for one context (every array then 1-D), else (n,). Arrays float64 and\n"
"C-contiguous; b, offset and v of length D.");

static PyObject *py_cosine_rows(PyObject *self, PyObject *args) {
    Py_buffer contexts = {0}, waves = {0}, factors = {0}, b = {0}, offset = {0}, out = {0},
              v = {0};
    PyObject *factor_arg, *v_arg = Py_None;
    double amplitude, shrink, factor = 0.0, radius = 0.0;
    if (!PyArg_ParseTuple(args, "y*y*Oy*y*ddw*|dO", &contexts, &waves, &factor_arg, &b,
                          &offset, &amplitude, &shrink, &out, &radius, &v_arg))
        return NULL;
    int one = PyFloat_Check(factor_arg), ok = 1, shifted = v_arg != Py_None;
    if (one)
        factor = PyFloat_AS_DOUBLE(factor_arg);
    else
        ok = PyObject_GetBuffer(factor_arg, &factors, PyBUF_SIMPLE) == 0;
    if (ok && shifted)
        ok = PyObject_GetBuffer(v_arg, &v, PyBUF_SIMPLE) == 0;
    Py_ssize_t n = one ? 1 : factors.len / (Py_ssize_t)sizeof(double);
    Py_ssize_t D = b.len / (Py_ssize_t)sizeof(double);
    Py_ssize_t d = n ? contexts.len / (n * (Py_ssize_t)sizeof(double)) : 0;
    ok = ok && expect(&contexts, n * d, 8, "contexts") && expect(&waves, n * D, 8, "waves") &&
         expect(&offset, D, 8, "offset") && expect(&out, n * (d + D), 8, "out") &&
         (!shifted || expect(&v, D, 8, "v"));
    if (ok) {
        const double *x = contexts.buf, *wave = waves.buf;
        double *row = out.buf;
        for (Py_ssize_t i = 0; i < n; i++, x += d, wave += D, row += d + D)
            cosine_row(row, x, d, wave, D, one ? factor : ((const double *)factors.buf)[i],
                       b.buf, offset.buf, amplitude, shrink, radius,
                       shifted ? (const double *)v.buf : NULL);
    }
    RELEASE(&contexts, &waves, &factors, &b, &offset, &out, &v);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"cosine_rows", py_cosine_rows, METH_VARARGS, cosine_rows_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_features", "Compiled arithmetic of RandomFeatures.", -1, methods,
};

PyMODINIT_FUNC PyInit__features(void) { return PyModule_Create(&module); }
