/* What the compiled kernels (_ridge.c, _trees.c, _features.c; _scan.c the last) share: the
 * AVX-512 and AVX2 clones of their hot loops, the size check of a buffer a call was given, and the
 * release of the buffers a call took. */
#ifndef REGCB_BUFFERS_H
#define REGCB_BUFFERS_H

#include <Python.h>

/* The hot loops are also compiled for AVX-512 (x86-64-v4, GCC 12 on: 32 vector registers)
 * and AVX2, the widest the machine has chosen at load time; without FMA contraction
 * (setup.py), so every machine computes the same numbers. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && __GNUC__ >= 12
#define WIDE __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#elif defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define WIDE __attribute__((target_clones("avx2", "default")))
#else
#define WIDE
#endif

/* 1 if the buffer holds items of itemsize bytes, else 0 with a ValueError naming it */
static inline int expect(Py_buffer *buffer, Py_ssize_t items, Py_ssize_t itemsize, const char *name) {
    if (buffer->len != items * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s has %zd bytes, expected %zd", name, buffer->len,
                     items * itemsize);
        return 0;
    }
    return 1;
}

/* PyBuffer_Release of each buffer that was taken (those never filled are skipped) */
#define RELEASE(...)                                                            \
    do {                                                                        \
        Py_buffer *all_[] = {__VA_ARGS__};                                      \
        for (size_t i_ = 0; i_ < sizeof(all_) / sizeof(all_[0]); i_++)         \
            if (all_[i_]->obj) PyBuffer_Release(all_[i_]);                      \
    } while (0)

#endif
