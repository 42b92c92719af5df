/* Compiled arithmetic of RandomFeatures (regcb_stream/features/random_features.py): one call
 * writes each context's row [shrink x, amplitude (cos(factor (w . x) + shift v + b) -
 * offset)], factor = sqrt(d) / |x| (1 without normalize; 0 for the zero context), shift =
 * -radius log(factor) (0 without a radius or for the zero context). Each product w_j . x
 * and |x|^2 sums its terms in the order of x's entries (the products of all the waves side
 * by side, one entry of x at a time: vector lanes across waves, never within a sum), without
 * FMA contraction (setup.py): the same numbers on every machine and BLAS, for a block or its
 * rows one at a time. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#include "_buffers.h"

/* wave = x W for W (d, D) row-major, each wave's terms in the order of x's entries */
WIDE static void products(const double *x, Py_ssize_t d, const double *w, Py_ssize_t D,
                          double *wave) {
    for (Py_ssize_t j = 0; j < D; j++) wave[j] = 0.0;
    for (Py_ssize_t i = 0; i < d; i++) {
        const double xi = x[i], *row = w + i * D;
        for (Py_ssize_t j = 0; j < D; j++) wave[j] += xi * row[j];
    }
}

/* row = [shrink x, amplitude (cos(factor wave + shift v + b) - offset)] for one context;
 * v NULL: no shift */
static void cosine_row(double *row, const double *x, Py_ssize_t d, const double *w,
                       Py_ssize_t D, int normalize, double *wave, const double *b,
                       const double *offset, double amplitude, double shrink, double radius,
                       const double *v) {
    for (Py_ssize_t j = 0; j < d; j++) row[j] = x[j] * shrink;
    products(x, d, w, D, wave);
    double factor = 1.0;
    if (normalize) {
        double square = 0.0;
        for (Py_ssize_t j = 0; j < d; j++) square += x[j] * x[j];
        factor = square > 0.0 ? sqrt((double)d) / sqrt(square) : 0.0;
    }
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
"cosine_rows(contexts, w, b, offset, amplitude, shrink, normalize, d, out, radius=0.0,\n"
"            v=None)\n"
"For n contexts (n, d) and the frequencies w (d, D), out (n, d + D) gets, row i:\n"
"contexts[i] * shrink, then amplitude * (cos(f_i (contexts[i] w) + s_i v + b) - offset),\n"
"f_i = sqrt(d) / |contexts[i]| with normalize (0 for the zero context), else 1, and\n"
"s_i = -radius log(f_i) (0 where f_i is 0; no term without v). Arrays float64 and\n"
"C-contiguous; b, offset and v of length D.");

static PyObject *py_cosine_rows(PyObject *self, PyObject *args) {
    Py_buffer contexts = {0}, w = {0}, b = {0}, offset = {0}, out = {0}, v = {0};
    PyObject *v_arg = Py_None;
    double amplitude, shrink, radius = 0.0;
    int normalize;
    Py_ssize_t d;
    if (!PyArg_ParseTuple(args, "y*y*y*y*ddpnw*|dO", &contexts, &w, &b, &offset, &amplitude,
                          &shrink, &normalize, &d, &out, &radius, &v_arg))
        return NULL;
    int shifted = v_arg != Py_None;
    int ok = !shifted || PyObject_GetBuffer(v_arg, &v, PyBUF_SIMPLE) == 0;
    Py_ssize_t D = b.len / (Py_ssize_t)sizeof(double), width = d + D;
    Py_ssize_t n = d >= 0 && width > 0 ? out.len / (width * (Py_ssize_t)sizeof(double)) : 0;
    ok = ok && expect(&w, d * D, 8, "w") && expect(&contexts, n * d, 8, "contexts") &&
         expect(&offset, D, 8, "offset") && expect(&out, n * (d + D), 8, "out") &&
         (!shifted || expect(&v, D, 8, "v"));
    double *wave = ok ? PyMem_Malloc((D ? D : 1) * sizeof(double)) : NULL;
    if (ok && !wave) {
        PyErr_NoMemory();
        ok = 0;
    }
    if (ok) {
        const double *x = contexts.buf;
        double *row = out.buf;
        for (Py_ssize_t i = 0; i < n; i++, x += d, row += d + D)
            cosine_row(row, x, d, w.buf, D, normalize, wave, b.buf, offset.buf, amplitude,
                       shrink, radius, shifted ? (const double *)v.buf : NULL);
    }
    PyMem_Free(wave);
    RELEASE(&contexts, &w, &b, &offset, &out, &v);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(dict_values_doc,
"dict_values(context, names, out) -> True, False or None\n"
"A dict context's values into out (float64, len(names)) when its keys are names, in\n"
"their order, and every value is a float, an int or a bool (True); False when the keys\n"
"differ or a value is not finite (too large an int); None for values of other types\n"
"(the caller converts them). FeatureEncoder.named_vector's fast case.");

static PyObject *py_dict_values(PyObject *self, PyObject *args) {
    PyObject *context, *names, *key, *value;
    Py_buffer out = {0};
    if (!PyArg_ParseTuple(args, "O!O!w*", &PyDict_Type, &context, &PyTuple_Type, &names,
                          &out))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(names), pos = 0, i = 0;
    double *o = out.buf;
    PyObject *result = out.len == n * (Py_ssize_t)sizeof(double) &&
                       PyDict_GET_SIZE(context) == n ? Py_True : Py_False;
    while (result == Py_True && PyDict_Next(context, &pos, &key, &value)) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        int same = key == name || (PyUnicode_CheckExact(key) && PyUnicode_CheckExact(name) &&
                                   PyUnicode_Compare(key, name) == 0);
        if (!same && !(PyUnicode_CheckExact(key) && PyUnicode_CheckExact(name)))
            result = Py_None;  /* (keys of other types: the caller compares them) */
        else if (!same)
            result = Py_False;
        else if (PyFloat_CheckExact(value))
            o[i++] = PyFloat_AS_DOUBLE(value);
        else if (PyLong_CheckExact(value) || PyBool_Check(value)) {
            o[i++] = PyLong_AsDouble(value);
            if (PyErr_Occurred()) {  /* (an int too large for a float) */
                PyErr_Clear();
                result = Py_False;
            }
        } else
            result = Py_None;
        if (result == Py_True && !isfinite(o[i - 1])) result = Py_False;
    }
    PyBuffer_Release(&out);
    Py_INCREF(result);
    return result;
}

static PyMethodDef methods[] = {
    {"cosine_rows", py_cosine_rows, METH_VARARGS, cosine_rows_doc},
    {"dict_values", py_dict_values, METH_VARARGS, dict_values_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_features", "Compiled arithmetic of RandomFeatures.", -1, methods,
};

PyMODINIT_FUNC PyInit__features(void) { return PyModule_Create(&module); }
