/* What the compiled readers share (_scan.c: VW text, _dsjson.c: DSJSON): decimal numbers
 * read as doubles, correctly rounded (VW feature values, JSON numbers), and instances of
 * the Python side's NamedTuples made from C. */
#ifndef REGCB_READERS_H
#define REGCB_READERS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const double POWERS[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The value of a plain decimal number, [+-]? (digits [. digits?] | . digits) ([eE] [+-]?
 * digits)?, correctly rounded (as Python's float()); 0 if the text is not one.  A mantissa
 * of at most 2^53 (every digit kept) and a power of ten within 10^+-22 are exact doubles,
 * so m * 10^e or m / 10^-e is the one rounding (Clinger's fast path); other numbers go
 * through strtod. */
static int parse_number(const char *p, const char *end, double *value) {
    const char *start = p;
    int negative = p < end && *p == '-';
    if (p < end && (*p == '+' || *p == '-')) p++;
    uint64_t mantissa = 0;
    int digits = 0, significant = 0, exponent = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++, digits++)
        if (mantissa || *p != '0') {
            if (significant < 19) mantissa = mantissa * 10 + (*p - '0');
            else exponent++;
            significant++;
        }
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++, digits++)
            if (mantissa || *p != '0') {
                if (significant < 19) mantissa = mantissa * 10 + (*p - '0'), exponent--;
                significant++;
            } else
                exponent--;
    }
    if (!digits) return 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int sign = 1, power = 0, exponent_digits = 0;
        if (p < end && (*p == '+' || *p == '-')) sign = *p++ == '-' ? -1 : 1;
        for (; p < end && *p >= '0' && *p <= '9'; p++, exponent_digits++)
            if (power < 100000) power = power * 10 + (*p - '0');
        if (!exponent_digits) return 0;
        exponent += sign * power;
    }
    if (p != end) return 0;
    if (significant <= 19 && mantissa <= (1ull << 53) && exponent >= -22 && exponent <= 22) {
        double m = (double)mantissa;
        *value = exponent < 0 ? m / POWERS[-exponent] : m * POWERS[exponent];
        if (negative) *value = -*value;
        return 1;
    }
    char number[64];
    if (end - start >= (Py_ssize_t)sizeof number) return 0;
    memcpy(number, start, end - start);
    number[end - start] = '\0';
    *value = strtod(number, NULL);
    return 1;
}

/* An instance of a tuple type (a NamedTuple) from its items (a new reference, taken), as
 * tuple.__new__(type, items) makes it (the type's own __new__ is Python code). */
static PyObject *make_tuple(PyObject *type, PyObject *items) {
    if (!items) return NULL;
    PyObject *args = PyTuple_Pack(1, items);
    Py_DECREF(items);
    if (!args) return NULL;
    PyObject *out = PyTuple_Type.tp_new((PyTypeObject *)type, args, NULL);
    Py_DECREF(args);
    return out;
}

#endif
