/* Compiled tokenizer of VW feature text: the fast path of vw_encode.TextEncoder.
 *
 * scan(lines) reads a list of feature texts (the text after a line's first '|') and
 * returns, for each line, its group (lines with the same sequence of namespace and
 * feature names share one), whether it must go to the reference parser instead ("slow"),
 * and the values of its feature tokens, in order.  The Python side resolves each group's
 * names to columns once (from the group's first line) and leaves the slow lines to the
 * reference parser, so the result is always the reference's.
 *
 * A token is a run of characters between spaces; '|' starts a namespace token, and so does
 * the start of the text (which follows the line's first '|').  A feature
 * token is "name" (value 1) or "name:value".  A line is slow when it has a character
 * outside printable ASCII, a namespace scale ("|ns:2"), an anonymous feature (":3"), or a
 * value that is not a plain decimal number ([+-]digits[.digits][e[+-]digits]), that has
 * magnitude outside float32's normal range, or that is not finite.
 *
 * hashes(lines) reads the same texts and returns, for each feature token of each fast
 * line, VW's unmasked hash of it (--hash strings, hash seed 0), the first character of its
 * namespace (what -q matches) and its value: the compiled form of
 * regcb_stream.io.hashing.feature_hash, with scan's slow lines and its values (zero values
 * kept: VW drops such features).
 *
 * layout_fill writes hashed ADF rows from their layouts (io/hashed_adf.py); slot_columns
 * and merge_repeats number hashed slots as columns and merge the columns a row repeats
 * (features whose hashes share a slot), for vw_encode's hashed rows.
 *
 * lines splits the input's bytes into decoded lines, for io.read_ahead; format_block
 * and format_slots write a block's -p lines, for io.vw_predictions.
 *
 * keep_freed_memory tunes glibc's malloc for the command's process (see its docstring).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "_buffers.h"
#include "_readers.h"

/* The end of a token starting at p: the first space, '|', or character outside printable
 * ASCII after it (a token that starts with '|' may not end at its own '|'). */
static const char *token_end(const char *p, const char *end) {
    const char *q = p + (p < end && *p == '|');
    while (q < end && *q > ' ' && *q <= '~' && *q != '|') q++;
    return q;
}

/* the end of a line's first token: its first namespace, whose '|' was the line's first */
static const char *first_namespace(const char *p, const char *end) {
    while (p < end && *p > ' ' && *p <= '~' && *p != '|') p++;
    return p;
}

/* whether a token ended at a separator (not at a character outside printable ASCII) */
static int separated(const char *stop, const char *end) {
    return stop == end || *stop == ' ' || *stop == '|';
}

/* the length of a token's name (up to its ':') */
static Py_ssize_t name_length(const char *p, const char *stop) {
    const char *colon = memchr(p, ':', stop - p);
    return (colon ? colon : stop) - p;
}

static uint32_t rotl32(uint32_t x, int r) { return x << r | x >> (32 - r); }

static uint32_t murmur_mix(uint32_t k) { return rotl32(k * 0xcc9e2d51u, 15) * 0x1b873593u; }

/* MurmurHash3 x86_32 (VW's uniform_hash): blocks read little-endian, as VW's get_block. */
static uint32_t murmurhash3_32(const char *p, Py_ssize_t length, uint32_t h) {
    const unsigned char *u = (const unsigned char *)p;
    Py_ssize_t i = 0;
    for (; i + 4 <= length; i += 4) {
        uint32_t k = u[i] | (uint32_t)u[i + 1] << 8 | (uint32_t)u[i + 2] << 16 |
                     (uint32_t)u[i + 3] << 24;
        h = rotl32(h ^ murmur_mix(k), 13) * 5 + 0xe6546b64u;
    }
    uint32_t k = 0;
    for (Py_ssize_t j = length - 1; j >= i; j--) k = k << 8 | u[j];
    if (i < length) h ^= murmur_mix(k);
    h ^= (uint32_t)length;
    h = (h ^ h >> 16) * 0x85ebca6bu;
    h = (h ^ h >> 13) * 0xc2b2ae35u;
    return h ^ h >> 16;
}

/* VW's hashstring of a token's name (printable ASCII: nothing to trim): a name of digits,
 * or an empty one, is its number plus seed mod 2^32 (VW wraps in size_t, then truncates:
 * the same); another name its MurmurHash3. */
static uint32_t hash_name(const char *p, Py_ssize_t length, uint32_t seed) {
    uint32_t value = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        if (p[i] < '0' || p[i] > '9') return murmurhash3_32(p, length, seed);
        value = value * 10 + (uint32_t)(p[i] - '0');
    }
    return value + seed;
}

/* A hash of a line's sequence of names. */
static uint64_t names_hash(const char *p, const char *end) {
    uint64_t h = 1469598103934665603ULL;
    const char *stop = first_namespace(p, end);
    for (int first = 1; p < end || first; first = 0) {
        if (!first) {
            if (*p == ' ') {
                p++;
                continue;
            }
            stop = token_end(p, end);
        }
        Py_ssize_t length = name_length(p, stop);
        for (Py_ssize_t i = 0; i < length; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
        h = (h ^ 0x100) * 1099511628211ULL;  /* the end of a name */
        p = stop;
    }
    return h;
}

/* Scan one line: its number of feature tokens and their values (written to values), and
 * whether its names are those of the line model..model_end (NULL: no model); with hashes
 * (not NULL), also the tokens' VW hashes.  Returns 0 for a slow line. */
static int scan_line(const char *p, const char *end, const char *model, const char *model_end,
                     int *same, Py_ssize_t *count, double *values, uint32_t *hashes,
                     char *initials) {
    Py_ssize_t n = 0;
    const char *stop = first_namespace(p, end);
    if (!separated(stop, end) || memchr(p, ':', stop - p)) return 0;  /* namespace scale */
    uint32_t space = hashes ? hash_name(p, stop - p, 0) : 0;  /* the namespace's hash */
    char initial = stop > p ? *p : ' ';  /* its first character (' ': the default one) */
    const char *m = model;
    *same = 0;
    if (model) {
        const char *m_stop = first_namespace(model, model_end);
        *same = m_stop - model == stop - p && memcmp(model, p, stop - p) == 0;
        m = m_stop;
    }
    p = stop;
    while (p < end) {
        if (*p == ' ') {
            p++;
            continue;
        }
        stop = token_end(p, end);
        if (!separated(stop, end)) return 0;
        Py_ssize_t length = name_length(p, stop);
        const char *colon = p + length < stop ? p + length : NULL;
        if (*p == '|') {
            if (colon) return 0;  /* namespace scale */
            if (hashes) space = hash_name(p + 1, length - 1, 0);
            initial = length > 1 ? p[1] : ' ';
        } else {
            if (colon == p) return 0;  /* anonymous feature */
            double value = 1.0;
            if (colon) {
                if (!parse_number(colon + 1, stop, &value)) return 0;
                double size = fabs(value);
                if (!isfinite(value) || (value != 0.0 && (size < FLT_MIN || size > FLT_MAX)))
                    return 0;
            }
            if (hashes) hashes[n] = hash_name(p, length, space);
            if (initials) initials[n] = initial;
            values[n++] = value;
        }
        if (*same) {  /* the model's next name */
            while (m < model_end && *m == ' ') m++;
            const char *m_stop = token_end(m, model_end);
            *same = m < model_end && name_length(m, m_stop) == length &&
                    memcmp(m, p, length) == 0;
            m = m_stop;
        }
        p = stop;
    }
    if (*same) {
        while (m < model_end && *m == ' ') m++;
        *same = m == model_end;
    }
    *count = n;
    return 1;
}

/* whether two lines have the same sequence of names */
static int same_names(const char *a, const char *a_end, const char *b, const char *b_end) {
    const char *as = first_namespace(a, a_end), *bs = first_namespace(b, b_end);
    if (as - a != bs - b || memcmp(a, b, as - a) != 0) return 0;
    a = as;
    b = bs;
    for (;;) {
        while (a < a_end && *a == ' ') a++;
        while (b < b_end && *b == ' ') b++;
        if (a == a_end || b == b_end) return a == a_end && b == b_end;
        as = token_end(a, a_end), bs = token_end(b, b_end);
        Py_ssize_t al = name_length(a, as), bl = name_length(b, bs);
        if (al != bl || memcmp(a, b, al) != 0) return 0;
        a = as;
        b = bs;
    }
}

/* The text of each str of a list (NULL for one that is not ASCII: a slow line); 0 and an
 * exception if the list holds something else. */
static int line_texts(PyObject *list, const char **starts, const char **ends) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *line = PyList_GET_ITEM(list, i);
        if (!PyUnicode_Check(line)) {
            PyErr_SetString(PyExc_TypeError, "lines must be str");
            return 0;
        }
        starts[i] = ends[i] = NULL;
        if (PyUnicode_IS_ASCII(line)) {
            starts[i] = (const char *)PyUnicode_DATA(line);
            ends[i] = starts[i] + PyUnicode_GET_LENGTH(line);
        }
    }
    return 1;
}

PyDoc_STRVAR(scan_doc,
"scan(lines) -> (group, first, count, values, slow)\n"
"For a list of n feature texts: group (n,) int64: each line's group (-1: slow); first:\n"
"the first line of each group; count (n,) int64: feature tokens per line; values: their\n"
"values, line after line; slow (n,) bool.");

static PyObject *py_scan(PyObject *self, PyObject *args) {
    PyObject *lines;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &lines)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(lines), length = 0;
    int64_t *group = PyMem_Malloc((n + 1) * sizeof(int64_t));
    int64_t *count = PyMem_Malloc((n + 1) * sizeof(int64_t));
    char *slow = PyMem_Malloc(n + 1);
    const char **starts = PyMem_Malloc((n + 1) * sizeof(char *));
    const char **ends = PyMem_Malloc((n + 1) * sizeof(char *));
    uint64_t *hashes = PyMem_Malloc((n + 1) * sizeof(uint64_t));
    Py_ssize_t *firsts = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    PyObject *result = NULL;
    double *values = NULL;
    if (!group || !count || !slow || !starts || !ends || !hashes || !firsts) {
        PyErr_NoMemory();
        goto done;
    }
    if (!line_texts(lines, starts, ends)) goto done;
    for (Py_ssize_t i = 0; i < n; i++) length += ends[i] - starts[i];
    /* each line's values and hash of names, then its group: that of an earlier line
     * with the same names, or a new one */
    values = PyMem_Malloc((length / 2 + n + 1) * sizeof(double));  /* >= the tokens */
    if (!values) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n_groups = 0, total = 0, last = -1;  /* the group of the last fast line */
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *stop = ends[i];
        Py_ssize_t c = 0, f = last >= 0 ? firsts[last] : -1;
        int same = 0;
        group[i] = -1;
        slow[i] = !starts[i] ||
                  !scan_line(starts[i], stop, f >= 0 ? starts[f] : NULL, f >= 0 ? ends[f] : NULL,
                             &same, &c, values + total, NULL, NULL);
        count[i] = slow[i] ? 0 : c;
        if (slow[i]) continue;
        total += c;
        if (same) {  /* the names of the line before: most lines */
            group[i] = last;
            continue;
        }
        hashes[i] = names_hash(starts[i], stop);
        for (Py_ssize_t g = n_groups - 1; g >= 0 && n_groups - g <= 64; g--) {
            f = firsts[g];
            if (hashes[f] == hashes[i] && count[f] == c &&
                same_names(starts[f], ends[f], starts[i], stop)) {
                group[i] = g;
                break;
            }
        }
        if (group[i] < 0) {
            group[i] = n_groups;
            firsts[n_groups++] = i;
        }
        last = group[i];
    }
    PyObject *g = PyBytes_FromStringAndSize((char *)group, n * sizeof(int64_t));
    PyObject *f = PyList_New(n_groups);
    PyObject *c = PyBytes_FromStringAndSize((char *)count, n * sizeof(int64_t));
    PyObject *v = PyBytes_FromStringAndSize((char *)values, total * sizeof(double));
    PyObject *s = PyBytes_FromStringAndSize(slow, n);
    if (g && f && c && v && s) {
        for (Py_ssize_t k = 0; k < n_groups; k++)
            PyList_SET_ITEM(f, k, PyLong_FromSsize_t(firsts[k]));
        result = PyTuple_Pack(5, g, f, c, v, s);
    }
    Py_XDECREF(g);
    Py_XDECREF(f);
    Py_XDECREF(c);
    Py_XDECREF(v);
    Py_XDECREF(s);
done:
    PyMem_Free(group);
    PyMem_Free(count);
    PyMem_Free(slow);
    PyMem_Free(starts);
    PyMem_Free(ends);
    PyMem_Free(hashes);
    PyMem_Free(firsts);
    PyMem_Free(values);
    return result;
}

PyDoc_STRVAR(hashes_doc,
"hashes(lines) -> (offsets, initials, hashes, values, slow)\n"
"For a list of n feature texts (as scan's), the feature tokens of line i are\n"
"[offsets[i], offsets[i + 1]) of: initials (bytes), the first character of the token's\n"
"namespace (' ' for the default one, as -q matches them); hashes (uint32), VW's unmasked\n"
"hashes (hashing.feature_hash of the namespace's hash);\n"
"values (float64), as scan's (zero values kept). offsets (n + 1,) int64; slow (n,) bool,\n"
"as scan's: a slow line has no tokens here.");

static PyObject *py_hashes(PyObject *self, PyObject *args) {
    PyObject *lines;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &lines)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(lines), length = 0;
    const char **starts = PyMem_Malloc((n + 1) * sizeof(char *));
    const char **ends = PyMem_Malloc((n + 1) * sizeof(char *));
    int64_t *offsets = PyMem_Malloc((n + 1) * sizeof(int64_t));
    char *slow = PyMem_Malloc(n + 1);
    PyObject *result = NULL;
    uint32_t *hashes = NULL;
    double *values = NULL;
    char *initials = NULL;
    if (!starts || !ends || !offsets || !slow) {
        PyErr_NoMemory();
        goto done;
    }
    if (!line_texts(lines, starts, ends)) goto done;
    for (Py_ssize_t i = 0; i < n; i++) length += ends[i] - starts[i];
    Py_ssize_t bound = length / 2 + n + 1, total = 0;  /* >= the tokens */
    hashes = PyMem_Malloc(bound * sizeof(uint32_t));
    values = PyMem_Malloc(bound * sizeof(double));
    initials = PyMem_Malloc(bound);
    if (!hashes || !values || !initials) {
        PyErr_NoMemory();
        goto done;
    }
    offsets[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t c = 0;
        int same;
        slow[i] = !starts[i] || !scan_line(starts[i], ends[i], NULL, NULL, &same, &c,
                                           values + total, hashes + total, initials + total);
        total += slow[i] ? 0 : c;
        offsets[i + 1] = total;
    }
    PyObject *o = PyBytes_FromStringAndSize((char *)offsets, (n + 1) * sizeof(int64_t));
    PyObject *s = PyBytes_FromStringAndSize(initials, total);
    PyObject *h = PyBytes_FromStringAndSize((char *)hashes, total * sizeof(uint32_t));
    PyObject *v = PyBytes_FromStringAndSize((char *)values, total * sizeof(double));
    PyObject *f = PyBytes_FromStringAndSize(slow, n);
    if (o && s && h && v && f) result = PyTuple_Pack(5, o, s, h, v, f);
    Py_XDECREF(o);
    Py_XDECREF(s);
    Py_XDECREF(h);
    Py_XDECREF(v);
    Py_XDECREF(f);
done:
    PyMem_Free(starts);
    PyMem_Free(ends);
    PyMem_Free(offsets);
    PyMem_Free(slow);
    PyMem_Free(hashes);
    PyMem_Free(values);
    PyMem_Free(initials);
    return result;
}

/* A single-line example's label, when it is plain: "[spaces][A[:C[:P]] spaces]|...",
 * A in 1..K, C and P plain decimal numbers VW's floats hold, 0 < P <= 1, the whole line
 * printable ASCII.  Returns the kind (1: A:C:P, 2: A:C, a test label, 3: no label) and
 * the offset of the first '|', or 0 for a line the Python parser must read. */
static int plain_label(const char *p, const char *end, Py_ssize_t n_actions, int64_t *action,
                       double *cost, double *prob, Py_ssize_t *bar) {
    const char *start = p;
    for (const char *c = p; c < end; c++)
        if (*c < 0x20 || *c > 0x7e) return 0;
    while (p < end && *p == ' ') p++;
    if (p < end && *p == '|') {
        *bar = p - start;
        return 3;
    }
    const char *stop = p;
    while (stop < end && *stop != ' ' && *stop != '|') stop++;
    const char *after = stop;
    while (after < end && *after == ' ') after++;
    if (after == stop || after == end || *after != '|') return 0;  /* a tag, or no '|' */
    const char *colon = memchr(p, ':', stop - p);
    const char *a_end = colon ? colon : stop;
    int64_t a = 0;
    if (a_end == p || a_end - p > 9) return 0;
    for (const char *c = p; c < a_end; c++) {
        if (*c < '0' || *c > '9') return 0;
        a = a * 10 + (*c - '0');
    }
    if (a < 1 || a > n_actions) return 0;
    *action = a;
    *bar = after - start;
    if (!colon) return 3;
    const char *second = memchr(colon + 1, ':', stop - colon - 1);
    const char *c_end = second ? second : stop;
    if (!parse_number(colon + 1, c_end, cost) || !isfinite(*cost) ||
        (*cost != 0.0 && (fabs(*cost) < FLT_MIN || fabs(*cost) > FLT_MAX)))
        return 0;
    if (!second) return 2;
    if (memchr(second + 1, ':', stop - second - 1) || !parse_number(second + 1, stop, prob) ||
        !(*prob > 0.0 && *prob <= 1.0) || *prob < FLT_MIN)
        return 0;
    return 1;
}

PyDoc_STRVAR(labels_doc,
"labels(lines, n_actions) -> (kind, action, cost, prob, bar)\n"
"Per line of a list of n lines: the kind of its label (int8: 1 action:cost:prob, 2\n"
"action:cost, 3 none, 0 for the Python parser), action (int64), cost, prob (float64) and\n"
"the offset of its first '|' (int64).");

static PyObject *py_labels(PyObject *self, PyObject *args) {
    PyObject *lines;
    Py_ssize_t n_actions;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &lines, &n_actions)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(lines);
    const char **starts = PyMem_Malloc((n + 1) * sizeof(char *));
    const char **ends = PyMem_Malloc((n + 1) * sizeof(char *));
    if (!starts || !ends) {
        PyMem_Free(starts);
        PyMem_Free(ends);
        return PyErr_NoMemory();
    }
    if (!line_texts(lines, starts, ends)) {
        PyMem_Free(starts);
        PyMem_Free(ends);
        return NULL;
    }
    PyObject *kind = PyBytes_FromStringAndSize(NULL, n);
    PyObject *action = PyBytes_FromStringAndSize(NULL, n * sizeof(int64_t));
    PyObject *cost = PyBytes_FromStringAndSize(NULL, n * sizeof(double));
    PyObject *prob = PyBytes_FromStringAndSize(NULL, n * sizeof(double));
    PyObject *bar = PyBytes_FromStringAndSize(NULL, n * sizeof(int64_t));
    PyObject *result = NULL;
    if (kind && action && cost && prob && bar) {
        char *k = PyBytes_AS_STRING(kind);
        int64_t *a = (int64_t *)PyBytes_AS_STRING(action), *b = (int64_t *)PyBytes_AS_STRING(bar);
        double *c = (double *)PyBytes_AS_STRING(cost), *q = (double *)PyBytes_AS_STRING(prob);
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t offset = 0;
            a[i] = 0, c[i] = 0.0, q[i] = 0.0;
            k[i] = starts[i] ? (char)plain_label(starts[i], ends[i], n_actions, &a[i], &c[i],
                                                  &q[i], &offset)
                             : 0;
            b[i] = offset;
        }
        result = PyTuple_Pack(5, kind, action, cost, prob, bar);
    }
    PyMem_Free(starts);
    PyMem_Free(ends);
    Py_XDECREF(kind);
    Py_XDECREF(action);
    Py_XDECREF(cost);
    Py_XDECREF(prob);
    Py_XDECREF(bar);
    return result;
}

PyDoc_STRVAR(known_run_doc,
"known_run(lines, start, known, out, limit) -> stop\n"
"Append known[line] to out for lines[start:], while they are keys of the dict known\n"
"(at most limit of them); return the index of the first line not taken.");

static PyObject *py_known_run(PyObject *self, PyObject *args) {
    PyObject *lines, *known, *out;
    Py_ssize_t start, limit;
    if (!PyArg_ParseTuple(args, "O!nO!O!n", &PyList_Type, &lines, &start, &PyDict_Type,
                          &known, &PyList_Type, &out, &limit))
        return NULL;
    Py_ssize_t i = start < 0 ? 0 : start, n = PyList_GET_SIZE(lines);
    for (; i < n && i - start < limit; i++) {
        PyObject *value = PyDict_GetItemWithError(known, PyList_GET_ITEM(lines, i));
        if (!value) {
            if (PyErr_Occurred()) return NULL;
            break;
        }
        if (PyList_Append(out, value) < 0) return NULL;
    }
    return PyLong_FromSsize_t(i);
}

PyDoc_STRVAR(adf_examples_doc,
"adf_examples(lines, start, memo, heads, max_lines, line_no, example, label, tail)\n"
"    -> (stop, examples)\n"
"Whole ADF examples from lines[start:] in the common case of vw_text.iter_adf's reader\n"
"(shared_text): an optional first line 'shared |<text>', then action lines that are keys\n"
"of memo (plain lines read before), or whose text from the first '|' is one and whose text\n"
"before it is a key of heads (a label and tag read before), then an empty line. Stops\n"
"before the first example with anything else, or not complete in lines: the caller reads\n"
"it line by line (and raises its errors). Returns the index after the examples taken and\n"
"the examples: example(shared, actions, label, tag, line_no, text, *tail), label(index of\n"
"the labelled line, cost, prob), both tuple types made as tuple.__new__ makes them (tail:\n"
"the example's other fields; actions: the previous example's tuple when it holds the same\n"
"line objects); line_no numbers lines[start].");

/* One example from lines[j] on (j at its first line); 1 and the example, or 0 if it is not
 * one this path takes (nothing taken), or -1 on an error. *end: the index of its empty
 * line. */
/* The tuple of an example's action lines (acts): the previous example's (*previous) when
 * it holds the same objects, so that repeated action sets are one object (the grouping of a
 * block by action set: vw_blocks.groups_of); else a new one, then *previous */
static PyObject *action_tuple(PyObject *acts, PyObject **previous) {
    Py_ssize_t k = PyList_GET_SIZE(acts);
    int same = *previous && PyTuple_GET_SIZE(*previous) == k;
    for (Py_ssize_t a = 0; same && a < k; a++)
        same = PyTuple_GET_ITEM(*previous, a) == PyList_GET_ITEM(acts, a);
    if (!same) {
        PyObject *fresh = PyList_AsTuple(acts);
        if (!fresh) return NULL;
        Py_XSETREF(*previous, fresh);
    }
    Py_INCREF(*previous);
    return *previous;
}

/* Whether two str hold the same text */
static int same_text(PyObject *a, PyObject *b) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    return a == b || (n == PyUnicode_GET_LENGTH(b) && PyUnicode_KIND(a) == PyUnicode_KIND(b) &&
                      memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), n * PyUnicode_KIND(a)) == 0);
}

/* seen: the plain action lines of the example of *previous (None for its other lines), whose
 * features a line of the same text at the same place takes without a lookup in memo (a
 * stream's action lines repeat from one example to the next); texts: scratch */
static int adf_example(PyObject *lines, Py_ssize_t j, PyObject *memo, PyObject *heads,
                       Py_ssize_t max_lines, Py_ssize_t number, PyObject *example_type,
                       PyObject *label_type, PyObject *tail, PyObject *acts,
                       PyObject **previous, PyObject *seen, PyObject *texts, Py_ssize_t *end,
                       PyObject **example) {
    Py_ssize_t n = PyList_GET_SIZE(lines), first = j;
    PyObject *shared = NULL, *label = NULL, *tag = Py_None;
    int status = 0;
    if (PyList_SetSlice(acts, 0, PyList_GET_SIZE(acts), NULL) < 0 ||
        PyList_SetSlice(texts, 0, PyList_GET_SIZE(texts), NULL) < 0)
        return -1;
    PyObject *line = PyList_GET_ITEM(lines, j);
    Py_ssize_t len = PyUnicode_GET_LENGTH(line);
    if (PyUnicode_READ_CHAR(line, len - 1) == '\r' || PyUnicode_READ_CHAR(line, 0) == 0xFEFF)
        return 0;  /* the example's text is the line cleaned of these */
    if (PyUnicode_IS_ASCII(line) && len >= 8 &&
        memcmp(PyUnicode_DATA(line), "shared |", 8) == 0 &&
        PyUnicode_FindChar(line, '\r', 0, len, 1) < 0) {  /* (ASCII: no other newline) */
        PyObject *rest = PyUnicode_Substring(line, 7, len);
        if (!rest) return -1;
        PyObject *known = PyDict_GetItemWithError(memo, rest);  /* the reader's quirk */
        Py_DECREF(rest);
        if (known || PyErr_Occurred()) return known ? 0 : -1;
        if (!(shared = PyUnicode_Substring(line, 8, len))) return -1;
        j++;
    }
    for (; j < n; j++) {
        line = PyList_GET_ITEM(lines, j);
        len = PyUnicode_GET_LENGTH(line);
        if (len == 0) break;
        Py_ssize_t k = PyList_GET_SIZE(acts);
        if (k >= max_lines) goto done;  /* the reader's error */
        PyObject *feats = NULL, *head_line = NULL;
        if (k < PyList_GET_SIZE(seen) && PyList_GET_ITEM(seen, k) != Py_None &&
            same_text(PyList_GET_ITEM(seen, k), line))
            feats = PyTuple_GET_ITEM(*previous, k);
        else if (!(feats = PyDict_GetItemWithError(memo, line)) && PyErr_Occurred())
            goto fail;
        if (PyList_Append(texts, feats ? line : Py_None) < 0) goto fail;
        if (!feats) {  /* a label (and tag) before features read before */
            Py_ssize_t bar = PyUnicode_IS_ASCII(line) ? PyUnicode_FindChar(line, '|', 0, len, 1)
                                                      : -1;
            if (bar <= 0 || PyUnicode_READ_CHAR(line, len - 1) == '\r') goto done;
            PyObject *rest = PyUnicode_Substring(line, bar, len),
                     *head = PyUnicode_Substring(line, 0, bar);
            if (rest && head) {
                feats = PyDict_GetItemWithError(memo, rest);
                if (feats) head_line = PyDict_GetItemWithError(heads, head);
            }
            Py_XDECREF(rest);
            Py_XDECREF(head);
            if (PyErr_Occurred()) goto fail;
            if (!feats || !head_line || !PyTuple_Check(head_line) ||
                PyTuple_GET_SIZE(head_line) < 4 ||
                PyTuple_GET_ITEM(head_line, 3) != Py_False)
                goto done;
            PyObject *parsed = PyTuple_GET_ITEM(head_line, 1);
            if (parsed != Py_None) {
                if (label || !PyTuple_Check(parsed) || PyTuple_GET_SIZE(parsed) < 3) goto done;
                label = make_tuple(label_type,
                                   Py_BuildValue("(nOO)", PyList_GET_SIZE(acts),
                                                 PyTuple_GET_ITEM(parsed, 1),
                                                 PyTuple_GET_ITEM(parsed, 2)));
                if (!label) goto fail;
            }
            if (j == first) tag = PyTuple_GET_ITEM(head_line, 2);
        }
        if (PyList_Append(acts, feats) < 0) goto fail;
    }
    if (j >= n) goto done;  /* no empty line yet */
    PyObject *actions = action_tuple(acts, previous);
    if (!actions || PyList_SetSlice(seen, 0, PyList_GET_SIZE(seen), texts) < 0) {
        Py_XDECREF(actions);
        goto fail;
    }
    PyObject *head = Py_BuildValue("(OOOOnO)", shared ? shared : Py_None, actions,
                                   label ? label : Py_None, tag, number,
                                   PyList_GET_ITEM(lines, first));
    Py_DECREF(actions);
    *example = make_tuple(example_type, head ? PySequence_Concat(head, tail) : NULL);
    Py_XDECREF(head);
    if (!*example) goto fail;
    *end = j;
    status = 1;
    goto done;
fail:
    status = -1;
done:
    Py_XDECREF(shared);
    Py_XDECREF(label);
    return status;
}

static PyObject *py_adf_examples(PyObject *self, PyObject *args) {
    PyObject *lines, *memo, *heads, *example_type, *label_type, *tail;
    Py_ssize_t start, max_lines, line_no;
    if (!PyArg_ParseTuple(args, "O!nO!O!nnO!O!O!", &PyList_Type, &lines, &start, &PyDict_Type,
                          &memo, &PyDict_Type, &heads, &max_lines, &line_no, &PyType_Type,
                          &example_type, &PyType_Type, &label_type, &PyTuple_Type, &tail))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)example_type, &PyTuple_Type) ||
        !PyType_IsSubtype((PyTypeObject *)label_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "example and label must be tuple types");
        return NULL;
    }
    PyObject *out = PyList_New(0), *acts = PyList_New(0), *previous = NULL,
             *seen = PyList_New(0), *texts = PyList_New(0);
    Py_ssize_t n = PyList_GET_SIZE(lines), i = start < 0 ? 0 : start, taken = i;
    int status = out && acts && seen && texts ? 1 : -1;
    while (status == 1 && i < n) {
        Py_ssize_t j = i;
        while (j < n && PyUnicode_GET_LENGTH(PyList_GET_ITEM(lines, j)) == 0) j++;
        if (j >= n) {  /* empty lines between examples: taken */
            taken = j;
            break;
        }
        PyObject *example = NULL;
        Py_ssize_t end = j;
        status = adf_example(lines, j, memo, heads, max_lines, line_no + (j - start),
                             example_type, label_type, tail, acts, &previous, seen, texts,
                             &end, &example);
        if (status == 1) {
            if (PyList_Append(out, example) < 0) status = -1;
            Py_DECREF(example);
            i = taken = end + 1;
        }
    }
    Py_XDECREF(acts);
    Py_XDECREF(previous);
    Py_XDECREF(seen);
    Py_XDECREF(texts);
    if (status < 0) {
        Py_XDECREF(out);
        return NULL;
    }
    return Py_BuildValue("nN", taken, out);
}

PyDoc_STRVAR(slot_columns_doc,
"slot_columns(keys, table, first, out) -> fresh\n"
"The columns of hashed keys (uint64) into out (int64): table[key & (len(table) - 1)] - 1,\n"
"a table of 2**bits int64 entries (a slot's column + 1; 0: not seen yet), new slots\n"
"numbered first, first + 1, ... in order of appearance; returns how many were new.");

static PyObject *py_slot_columns(PyObject *self, PyObject *args) {
    Py_buffer keys = {0}, table = {0}, out = {0};
    Py_ssize_t first;
    if (!PyArg_ParseTuple(args, "y*w*nw*", &keys, &table, &first, &out)) return NULL;
    Py_ssize_t n = keys.len / 8, size = table.len / 8, fresh = 0;
    int ok = out.len == keys.len && size > 0 && (size & (size - 1)) == 0;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "out must match keys, table a power of 2");
    } else {
        const uint64_t *k = keys.buf, m = (uint64_t)size - 1;
        int64_t *t = table.buf, *o = out.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t *slot = t + (k[i] & m);
            if (*slot <= 0) *slot = first + 1 + fresh++;
            o[i] = *slot - 1;
        }
    }
    PyBuffer_Release(&keys);
    PyBuffer_Release(&table);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    return PyLong_FromSsize_t(fresh);
}

PyDoc_STRVAR(merge_repeats_doc,
"merge_repeats(index, value, L) -> rows changed\n"
"In place, for rows of L int64 columns and float64 values: a column that repeats in its\n"
"row (column > 0) keeps its first entry, which takes the sum of the values, and the\n"
"later entries become padding (column 0, value 0).");

static PyObject *py_merge_repeats(PyObject *self, PyObject *args) {
    Py_buffer index = {0}, value = {0};
    Py_ssize_t L;
    if (!PyArg_ParseTuple(args, "w*w*n", &index, &value, &L)) return NULL;
    Py_ssize_t total = index.len / 8, changed = 0;
    int64_t *col = index.buf, top = 0;
    double *val = value.buf;
    int ok = value.len == index.len && L > 0 && total % L == 0;
    for (Py_ssize_t i = 0; ok && i < total; i++) {
        if (col[i] < 0) ok = 0;
        if (col[i] > top) top = col[i];
    }
    int64_t *stamp = ok ? PyMem_Calloc(top + 1, 2 * sizeof(int64_t)) : NULL;
    if (!ok || !stamp) {
        if (ok) PyErr_NoMemory();
        else PyErr_SetString(PyExc_ValueError, "index and value: rows of L, columns >= 0");
        ok = 0;
    }
    for (Py_ssize_t r = 0; ok && r < total / L; r++) {  /* stamp[2c]: row + 1, then where */
        int merged = 0;
        for (Py_ssize_t i = r * L; i < (r + 1) * L; i++) {
            int64_t c = col[i];
            if (c == 0) continue;
            if (stamp[2 * c] == r + 1) {
                val[stamp[2 * c + 1]] += val[i];
                col[i] = 0;
                val[i] = 0.0;
                merged = 1;
            } else {
                stamp[2 * c] = r + 1;
                stamp[2 * c + 1] = i;
            }
        }
        changed += merged;
    }
    PyMem_Free(stamp);
    PyBuffer_Release(&index);
    PyBuffer_Release(&value);
    if (!ok) return NULL;
    return PyLong_FromSsize_t(changed);
}

PyDoc_STRVAR(layout_fill_doc,
"layout_fill(keys, value, present, K, W, examples, rows, from_rows, layout, R, L, n,\n"
"            offsets, hashes, values)\n"
"Fill row rows[t] of example examples[t] of a block's padded keys (uint64), values\n"
"(float64) and presence (bool), (examples, K, W) each, from row from_rows[t] of a layout\n"
"(hashed_adf.Layout: source1, source2, cross, constants, coef, first, second, present;\n"
"R rows of L <= W entries) of shared lines of n tokens, whose tokens start at\n"
"offsets[example] in hashes (uint32) and values (float64).  An entry's key is x1, or\n"
"(x1 * FNV_PRIME) ^ x2 when crossed, where x is a token's hash (source < n) or one of\n"
"the layout's constants; its value coef * s[first] * s[second], s = [1, token values].\n"
"The compiled form of hashed_adf.layout_rows, written in place (no rows: nothing).");

static PyObject *py_layout_fill(PyObject *self, PyObject *args) {
    Py_buffer keys = {0}, value = {0}, present = {0}, ex = {0}, rw = {0}, from = {0};
    Py_buffer s1 = {0}, s2 = {0}, cross = {0}, consts = {0}, coef = {0}, first = {0};
    Py_buffer second = {0}, lpresent = {0}, offsets = {0}, hashes = {0}, values = {0};
    Py_ssize_t K, W, R, L, n;
    PyObject *layout;
    if (!PyArg_ParseTuple(args, "w*w*w*nny*y*y*O!nnny*y*y*", &keys, &value, &present, &K, &W,
                          &ex, &rw, &from, &PyTuple_Type, &layout, &R, &L, &n, &offsets,
                          &hashes, &values))
        return NULL;
    int ok = PyArg_ParseTuple(layout, "y*y*y*y*y*y*y*y*;a Layout of 8 arrays", &s1, &s2,
                              &cross, &consts, &coef, &first, &second, &lpresent);
    Py_ssize_t cells = keys.len / 8, T = ex.len / 8, C = consts.len / 8;
    Py_ssize_t N = hashes.len / 4, E = offsets.len / 8, RL = R * L;
    ok = ok && (T == 0 || (K > 0 && W > 0 && cells % (K * W) == 0)) && L >= 0 && L <= W &&
         n >= 0 &&
         value.len == keys.len && present.len == cells && rw.len == ex.len &&
         from.len == ex.len && s1.len == RL * 8 && s2.len == RL * 8 && first.len == RL * 8 &&
         second.len == RL * 8 && coef.len == RL * 8 && cross.len == RL && lpresent.len == RL &&
         values.len == hashes.len * 2;
    const int64_t *e = ex.buf, *r = rw.buf, *f = from.buf, *off = offsets.buf;
    const int64_t *src1 = s1.buf, *src2 = s2.buf, *fi = first.buf, *se = second.buf;
    const uint64_t *cst = consts.buf;
    const uint32_t *h = hashes.buf;
    const double *cf = coef.buf, *val = values.buf;
    const char *cr = cross.buf, *lp = lpresent.buf;
    uint64_t *ko = keys.buf;
    double *vo = value.buf;
    char *po = present.buf;
    Py_ssize_t examples = ok && T ? cells / (K * W) : 0;  /* (no rows to fill: nothing) */
    for (Py_ssize_t t = 0; ok && t < T; t++) {
        ok = e[t] >= 0 && e[t] < examples && e[t] < E && r[t] >= 0 && r[t] < K && f[t] >= 0 &&
             f[t] < R && off[e[t]] >= 0 && off[e[t]] + n <= N;
        Py_ssize_t base = ok ? off[e[t]] : 0, in = f[t] * L, out = (e[t] * K + r[t]) * W;
        for (Py_ssize_t c = 0; ok && c < L; c++, in++, out++) {
            if (!lp[in]) continue;
            int64_t a = src1[in], b = src2[in], i = fi[in], j = se[in];
            ok = a >= 0 && a < n + C && i >= 0 && i <= n && j >= 0 && j <= n &&
                 (!cr[in] || (b >= 0 && b < n + C));
            if (!ok) break;
            uint64_t x = a < n ? h[base + a] : cst[a - n];
            if (cr[in]) x = (x * 16777619ull) ^ (b < n ? h[base + b] : cst[b - n]);
            ko[out] = x;
            vo[out] = cf[in] * (i ? val[base + i - 1] : 1.0) * (j ? val[base + j - 1] : 1.0);
            po[out] = 1;
        }
    }
    if (!ok && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "layout_fill: arrays or indices out of range");
    RELEASE(&keys, &value, &present, &ex, &rw, &from, &s1, &s2, &cross, &consts, &coef,
            &first, &second, &lpresent, &offsets, &hashes, &values);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(layout_values_doc,
"layout_values(coef, first, second, values, m, n, out[, lead])\n"
"The values of hashed_adf.layout_rows, written into out (m, K, L) float64: out[t, r, c] =\n"
"coef[r, c] * s[t, first[r, c]] * s[t, second[r, c]], s[t] = (1, values[t]) for the\n"
"shared values (m, n) float64; first and second (K, L) int64 in 0..n, coef (K, L)\n"
"float64 (numpy's products, in its order).  With lead (L, float): out is (m, K, L + 1),\n"
"each row's first entry lead, then its L values.");

static PyObject *py_layout_values(PyObject *self, PyObject *args) {
    Py_buffer coef = {0}, first = {0}, second = {0}, values = {0}, out = {0};
    Py_ssize_t m, n, width = 0;
    double lead = 0.0;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nnw*|nd", &coef, &first, &second, &values, &m, &n,
                          &out, &width, &lead))
        return NULL;
    Py_ssize_t cells = coef.len / 8, rows = width > 0 ? cells / width : 0;
    int ok = m >= 0 && n >= 0 && width >= 0 && first.len == coef.len &&
             second.len == coef.len && values.len == m * n * 8 &&
             (width ? rows * width == cells && out.len == m * (cells + rows) * 8
                    : out.len == m * cells * 8);
    const double *cf = coef.buf, *val = values.buf;
    const int64_t *fi = first.buf, *se = second.buf;
    for (Py_ssize_t c = 0; ok && c < cells; c++)
        ok = fi[c] >= 0 && fi[c] <= n && se[c] >= 0 && se[c] <= n;
    double *o = out.buf;
    for (Py_ssize_t t = 0; ok && t < m; t++) {
        const double *s = val + t * n - 1;  /* s[j] for j >= 1; s[0] is the constant 1 */
        for (Py_ssize_t c = 0; c < cells;) {  /* a row (of width entries) at a time */
            if (width) *o++ = lead;
            for (Py_ssize_t end = width ? c + width : cells; c < end; c++, o++)
                *o = cf[c] * (fi[c] ? s[fi[c]] : 1.0) * (se[c] ? s[se[c]] : 1.0);
        }
    }
    if (!ok)
        PyErr_SetString(PyExc_ValueError, "layout_values: arrays or indices out of range");
    RELEASE(&coef, &first, &second, &values, &out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(format_block_doc,
"format_block(pmfs, orders, K, tags) -> str or None\n"
"The -p text of a block of examples (vw_predictions.format_block): for each example i,\n"
"a:p for a in orders[i] (int64, a permutation of 0..K-1) with pmfs[i, a] (float64) as\n"
"'%.6f' without trailing zeros and dot, joined by ',', then ' tag' for a tag that is a\n"
"non-empty str, then two newlines.  None when a tag is not UTF-8 (surrogates): the\n"
"caller formats that block itself.");

static int put_text(char **out, Py_ssize_t *size, Py_ssize_t *capacity, const char *s,
                    Py_ssize_t n) {
    if (*size + n > *capacity) {
        Py_ssize_t grown = 2 * (*size + n) + 256;
        char *more = PyMem_Realloc(*out, grown);
        if (!more) return 0;
        *out = more;
        *capacity = grown;
    }
    memcpy(*out + *size, s, n);
    *size += n;
    return 1;
}

/* The digits of a >= 0; their number. */
static int decimal(char *out, int64_t a) {
    char digits[24];
    int n = 0;
    do digits[n++] = (char)('0' + a % 10); while ((a /= 10) > 0);
    for (int i = 0; i < n; i++) out[i] = digits[n - 1 - i];
    return n;
}

/* A probability as '%.6f' without trailing zeros and dot (format_prob), from a cache of
 * the values met (a block's distributions repeat a few values: printf costs far more). */
typedef struct {
    uint64_t bits;
    int length;  /* 0: empty */
    char text[40];
} Formatted;

#define FORMATTED 256

static int probability_text(Formatted *cache, double value, char *out) {
    uint64_t bits;
    memcpy(&bits, &value, 8);
    Formatted *slot = cache + ((bits * 0x9E3779B97F4A7C15ull) >> 56);
    if (!slot->length || slot->bits != bits) {
        int length = snprintf(slot->text, sizeof slot->text, "%.6f", value);
        if (length >= (int)sizeof slot->text) length = sizeof slot->text - 1;
        if (memchr(slot->text, '.', length)) {
            while (slot->text[length - 1] == '0') length--;
            if (slot->text[length - 1] == '.') length--;
        }
        slot->bits = bits;
        slot->length = length;
    }
    memcpy(out, slot->text, slot->length);
    return slot->length;
}

static PyObject *py_format_block(PyObject *self, PyObject *args) {
    Py_buffer pmfs = {0}, orders = {0};
    Py_ssize_t K;
    PyObject *tags, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*nO!", &pmfs, &orders, &K, &PyList_Type, &tags))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(tags), size = 0, capacity = 0;
    char *out = NULL;
    Formatted *cache = PyMem_Calloc(FORMATTED, sizeof(Formatted));
    if (!cache) {
        PyBuffer_Release(&pmfs);
        PyBuffer_Release(&orders);
        return PyErr_NoMemory();
    }
    int ok = K > 0 && pmfs.len == n * K * 8 && orders.len == n * K * 8, utf8 = 1;
    if (!ok) PyErr_SetString(PyExc_ValueError, "pmfs and orders: (len(tags), K) each");
    const double *p = pmfs.buf;
    const int64_t *order = orders.buf;
    for (Py_ssize_t i = 0; ok && utf8 && i < n; i++) {
        for (Py_ssize_t j = 0; ok && j < K; j++) {
            int64_t a = order[i * K + j];
            if (a < 0 || a >= K) {
                PyErr_SetString(PyExc_ValueError, "orders must hold actions 0..K-1");
                ok = 0;
                break;
            }
            char cell[64];
            int length = 0;
            if (j) cell[length++] = ',';
            length += decimal(cell + length, a);
            cell[length++] = ':';
            length += probability_text(cache, p[i * K + a], cell + length);
            ok = put_text(&out, &size, &capacity, cell, length);
        }
        PyObject *tag = PyList_GET_ITEM(tags, i);
        if (ok && PyUnicode_Check(tag) && PyUnicode_GET_LENGTH(tag)) {
            Py_ssize_t length;
            const char *text = PyUnicode_AsUTF8AndSize(tag, &length);
            if (!text) {
                PyErr_Clear();
                utf8 = 0;
                break;
            }
            ok = put_text(&out, &size, &capacity, " ", 1) &&
                 put_text(&out, &size, &capacity, text, length);
        }
        ok = ok && put_text(&out, &size, &capacity, "\n\n", 2);
        if (!ok && !PyErr_Occurred()) PyErr_NoMemory();
    }
    if (ok && utf8) result = PyUnicode_DecodeUTF8(out ? out : "", size, "strict");
    else if (ok) result = Py_NewRef(Py_None);
    PyMem_Free(out);
    PyMem_Free(cache);
    PyBuffer_Release(&pmfs);
    PyBuffer_Release(&orders);
    return result;
}

PyDoc_STRVAR(format_slots_doc,
"format_slots(examples) -> str\n"
"The -p text of multi-slot examples (vw_predictions.format_slots): for each example (a\n"
"sequence of slot decisions), a line per slot, a:p for each action a of its offered (a tuple\n"
"of ints) with its probability in pmf (float64), the drawn index first, then the others\n"
"in order, joined by ',' (an empty line for None), then an empty line. A decision is a\n"
"tuple (index, prob, pmf, offered, ...), as slots.SlotDecision.");

/* One slot decision's pairs, the drawn action first, into out; 0 (an error set) if it is
 * not (index, prob, pmf, offered, ...) with pmf's length that of offered */
static int put_slot(PyObject *slot, Formatted *cache, char **out, Py_ssize_t *size,
                    Py_ssize_t *capacity) {
    if (!PyTuple_Check(slot) || PyTuple_GET_SIZE(slot) < 4 ||
        !PyTuple_Check(PyTuple_GET_ITEM(slot, 3))) {
        PyErr_SetString(PyExc_TypeError, "a slot decision is (index, prob, pmf, offered, ...)");
        return 0;
    }
    PyObject *offered = PyTuple_GET_ITEM(slot, 3);
    Py_ssize_t w = PyTuple_GET_SIZE(offered), at = -1;
    int64_t drawn = PyLong_AsLongLong(PyTuple_GET_ITEM(slot, 0));
    if (drawn == -1 && PyErr_Occurred()) return 0;
    Py_buffer pmf;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(slot, 2), &pmf, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return 0;
    int ok = pmf.len == w * 8 && pmf.format && strcmp(pmf.format, "d") == 0;
    if (!ok) PyErr_SetString(PyExc_ValueError, "a slot's pmf: float64, one per offered action");
    for (Py_ssize_t j = 0; ok && at < 0 && j < w; j++) {
        int64_t id = PyLong_AsLongLong(PyTuple_GET_ITEM(offered, j));
        ok = !(id == -1 && PyErr_Occurred());
        if (ok && id == drawn) at = j;
    }
    if (ok && at < 0) {
        PyErr_SetString(PyExc_ValueError, "a slot's drawn action is not among its offered");
        ok = 0;
    }
    const double *p = pmf.buf;
    for (Py_ssize_t j = -1; ok && j < w; j++) {
        if (j == at) continue;
        Py_ssize_t c = j < 0 ? at : j;
        int64_t id = PyLong_AsLongLong(PyTuple_GET_ITEM(offered, c));
        if (id < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a slot's offered actions: numbers from 0");
            ok = 0;
            break;
        }
        char cell[64];
        int length = 0;
        if (j >= 0) cell[length++] = ',';
        length += decimal(cell + length, id);
        cell[length++] = ':';
        length += probability_text(cache, p[c], cell + length);
        ok = put_text(out, size, capacity, cell, length);
        if (!ok && !PyErr_Occurred()) PyErr_NoMemory();
    }
    PyBuffer_Release(&pmf);
    return ok;
}

static PyObject *py_format_slots(PyObject *self, PyObject *args) {
    PyObject *examples, *result = NULL;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &examples)) return NULL;
    Py_ssize_t size = 0, capacity = 0;
    char *out = NULL;
    Formatted *cache = PyMem_Calloc(FORMATTED, sizeof(Formatted));
    int ok = cache != NULL;
    if (!ok) PyErr_NoMemory();
    for (Py_ssize_t e = 0; ok && e < PyList_GET_SIZE(examples); e++) {
        PyObject *slots = PySequence_Fast(PyList_GET_ITEM(examples, e),
                                          "an example's slot decisions: a sequence");
        ok = slots != NULL;
        for (Py_ssize_t j = 0; ok && j < PySequence_Fast_GET_SIZE(slots); j++) {
            PyObject *slot = PySequence_Fast_GET_ITEM(slots, j);
            ok = (slot == Py_None || put_slot(slot, cache, &out, &size, &capacity)) &&
                 put_text(&out, &size, &capacity, "\n", 1);
        }
        Py_XDECREF(slots);
        ok = ok && put_text(&out, &size, &capacity, "\n", 1);
        if (!ok && !PyErr_Occurred()) PyErr_NoMemory();
    }
    if (ok) result = PyUnicode_DecodeUTF8(out ? out : "", size, "strict");
    PyMem_Free(out);
    PyMem_Free(cache);
    return result;
}

PyDoc_STRVAR(lines_doc,
"lines(data) -> list of str\n\n"
"The lines of a bytes-like object split at each '\\n' (n newlines: n + 1 lines), each\n"
"decoded as UTF-8 with surrogate escapes: data.decode('utf-8', 'surrogateescape')\n"
"split('\\n'), in one pass over the bytes.");

static PyObject *py_lines(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    PyObject *out = PyList_New(0);
    const char *p = data.buf, *end = p + data.len;
    while (out) {
        const char *stop = memchr(p, '\n', end - p);
        if (!stop) stop = end;
        PyObject *line = PyUnicode_DecodeUTF8(p, stop - p, "surrogateescape");
        if (!line || PyList_Append(out, line) < 0) Py_CLEAR(out);
        Py_XDECREF(line);
        if (stop == end) break;
        p = stop + 1;
    }
    PyBuffer_Release(&data);
    return out;
}

PyDoc_STRVAR(keep_freed_memory_doc,
"keep_freed_memory() -> bool\n\n"
"Ask glibc's malloc to keep freed memory for reuse: blocks up to 32 MiB come from the\n"
"heap instead of their own mappings, and up to 128 MiB free at the heap's top stays\n"
"mapped. A streaming process frees and allocates a block's buffers again and again; by\n"
"default each of those costs fresh page faults. Peak memory is unchanged. False, and\n"
"nothing done, where the C library is not glibc.");

static PyObject *py_keep_freed_memory(PyObject *self, PyObject *unused) {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"scan", py_scan, METH_VARARGS, scan_doc},
    {"hashes", py_hashes, METH_VARARGS, hashes_doc},
    {"labels", py_labels, METH_VARARGS, labels_doc},
    {"known_run", py_known_run, METH_VARARGS, known_run_doc},
    {"adf_examples", py_adf_examples, METH_VARARGS, adf_examples_doc},
    {"slot_columns", py_slot_columns, METH_VARARGS, slot_columns_doc},
    {"merge_repeats", py_merge_repeats, METH_VARARGS, merge_repeats_doc},
    {"layout_fill", py_layout_fill, METH_VARARGS, layout_fill_doc},
    {"layout_values", py_layout_values, METH_VARARGS, layout_values_doc},
    {"lines", py_lines, METH_VARARGS, lines_doc},
    {"format_block", py_format_block, METH_VARARGS, format_block_doc},
    {"format_slots", py_format_slots, METH_VARARGS, format_slots_doc},
    {"keep_freed_memory", py_keep_freed_memory, METH_NOARGS, keep_freed_memory_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "Compiled tokenizer of VW feature text.", -1, methods,
};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&module); }
