/* Compiled reader of Decision Service JSON lines: the fast path of io/dsjson.py.
 *
 * events(lines) reads a list of DSJSON lines and returns, for each, either None (a line
 * the reference parser must read: anything unusual, malformed or not) or the tuple
 *
 *     (shared, actions, label_index, cost, probability, weight, event_id)
 *
 * where shared is the context's features as VW feature text (the text after a shared
 * line's first '|', read by the same tokenizer as VW text), actions the JSON text of each
 * object of c._multi (the Python side parses each distinct one once), label_index -1 when
 * the line has no _labelIndex, weight 1 / (1 - pdrop) in float32 (as VW), and event_id the EventId string or
 * None.  Given the features of action texts already parsed (sets), a line whose action
 * texts are known is returned as the example itself (see events' docstring).  The fast
 * path takes only what it can write exactly as VW text and reads exactly as
 * dsjson.parse_event does:
 *
 *   - lines of strict JSON (escapes and UTF-8 only in strings it passes over or leaves to
 *     the Python side: a name, a feature's string or the EventId is printable ASCII);
 *   - a line starting with '{' (VW skips the others), an event with actions (a non-empty
 *     'a' and c._multi, no _skipLearn: true: VW skips the others);
 *   - a top-level object without repeated keys among those it reads (c, _labelIndex,
 *     _label_cost, _label_probability, _label_Action, a, p, _p, _ba, pdrop,
 *     _original_label_cost, _skipLearn, Timestamp, EventId), no other key starting with
 *     _label, no _outcomes;
 *   - c's fields, none repeated: objects (namespaces) and arrays of objects (a namespace
 *     repeated) whose fields are plain values; arrays of numbers (positional features);
 *     plain values (the default namespace); keys starting with '_' skipped, but for
 *     _text, _multi (but c's own), _slots and _label...;
 *   - plain values: numbers (zero: no feature; magnitude in float32's normal range), true,
 *     false, null, strings (key + value with ' ', '|', ':' and tab made '_');
 *   - names as VW text holds them: a number's or true's key has no ' ', '|' or ':'.
 * Everything else, including every error the reference reports, is returned as None.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "_readers.h"

#define MAX_KEYS 64 /* fields of one object checked for repeats (more: slow) */
#define MAX_ACTIONS 1024 /* actions of one event (more: slow) */

typedef struct {
    const char *p, *end;
} Cursor;

typedef struct {
    char *data;
    Py_ssize_t size, capacity;
} Buffer;

typedef struct {
    const char *start[MAX_KEYS];
    Py_ssize_t length[MAX_KEYS];
    int count;
} Keys;

static void skip_space(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int take(Cursor *c, char ch) {
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A string of printable ASCII without escapes (a name, a feature's value): its contents
 * [*s, *e). */
static int read_string(Cursor *c, const char **s, const char **e) {
    skip_space(c);
    if (c->p >= c->end || *c->p != '"') return 0;
    const char *q = ++c->p;
    while (q < c->end && *q != '"') {
        if (*q == '\\' || (unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e) return 0;
        q++;
    }
    if (q >= c->end) return 0;
    *s = c->p;
    *e = q;
    c->p = q + 1;
    return 1;
}

/* Any JSON string (escapes, UTF-8), checked and passed over. */
static int skip_string(Cursor *c) {
    skip_space(c);
    if (c->p >= c->end || *c->p != '"') return 0;
    for (const char *q = c->p + 1; q < c->end; q++) {
        if (*q == '"') {
            c->p = q + 1;
            return 1;
        }
        if ((unsigned char)*q < 0x20) return 0;
        if (*q != '\\') continue;
        if (++q >= c->end) return 0;
        if (*q == 'u') {
            for (int i = 0; i < 4; i++)
                if (++q >= c->end || !isxdigit((unsigned char)*q)) return 0;
        } else if (!*q || !strchr("\"\\/bfnrt", *q)) {
            return 0;
        }
    }
    return 0;
}

/* A JSON number -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?: its text and value. */
static int read_number(Cursor *c, const char **s, const char **e, double *value, int *integer) {
    skip_space(c);
    const char *q = c->p, *start = q;
    if (q < c->end && *q == '-') q++;
    if (q >= c->end || *q < '0' || *q > '9') return 0;
    if (*q == '0')
        q++;
    else
        while (q < c->end && *q >= '0' && *q <= '9') q++;
    *integer = 1;
    if (q < c->end && *q == '.') {
        *integer = 0;
        if (++q >= c->end || *q < '0' || *q > '9') return 0;
        while (q < c->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < c->end && (*q == 'e' || *q == 'E')) {
        *integer = 0;
        q++;
        if (q < c->end && (*q == '+' || *q == '-')) q++;
        if (q >= c->end || *q < '0' || *q > '9') return 0;
        while (q < c->end && *q >= '0' && *q <= '9') q++;
    }
    if (q - start >= 64 || !parse_number(start, q, value)) return 0;
    *s = start;
    *e = c->p = q;
    return 1;
}

static int read_literal(Cursor *c, const char *word) {
    skip_space(c);
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    c->p += n;
    return 1;
}

/* Any JSON value, checked and passed over. */
static int skip_value(Cursor *c, int depth) {
    const char *s, *e;
    double v;
    int integer;
    skip_space(c);
    if (c->p >= c->end || depth > 64) return 0;
    switch (*c->p) {
    case '"':
        return skip_string(c);
    case '{':
        c->p++;
        if (take(c, '}')) return 1;
        do {
            if (!skip_string(c) || !take(c, ':') || !skip_value(c, depth + 1)) return 0;
        } while (take(c, ','));
        return take(c, '}');
    case '[':
        c->p++;
        if (take(c, ']')) return 1;
        do {
            if (!skip_value(c, depth + 1)) return 0;
        } while (take(c, ','));
        return take(c, ']');
    case 't':
        return read_literal(c, "true");
    case 'f':
        return read_literal(c, "false");
    case 'n':
        return read_literal(c, "null");
    default:
        return read_number(c, &s, &e, &v, &integer);
    }
}

/* Whether the key [s, e) is new among keys (added); 0 when repeated or too many. */
static int new_key(Keys *keys, const char *s, const char *e) {
    for (int i = 0; i < keys->count; i++)
        if (keys->length[i] == e - s && memcmp(keys->start[i], s, e - s) == 0) return 0;
    if (keys->count == MAX_KEYS) return 0;
    keys->start[keys->count] = s;
    keys->length[keys->count++] = e - s;
    return 1;
}

static int put(Buffer *b, const char *s, Py_ssize_t n) {
    if (b->size + n > b->capacity) {
        Py_ssize_t capacity = 2 * (b->size + n) + 256;
        char *data = PyMem_Realloc(b->data, capacity);
        if (!data) return 0;
        b->data = data;
        b->capacity = capacity;
    }
    memcpy(b->data + b->size, s, n);
    b->size += n;
    return 1;
}

/* Whether [s, e) holds a character VW text cannot keep in a name. */
static int breaks_name(const char *s, const char *e) {
    for (; s < e; s++)
        if (*s == ' ' || *s == '|' || *s == ':') return 1;
    return 0;
}

/* The feature of a plain field key: value, written " name[:value]" to out.  Returns 0 for
 * a value that is not plain or not written exactly (slow), 1 otherwise. */
static int plain_feature(Cursor *c, const char *ks, const char *ke, Buffer *out) {
    const char *s, *e;
    double value;
    int integer;
    skip_space(c);
    if (c->p >= c->end) return 0;
    if (*c->p == '"') {
        if (!read_string(c, &s, &e) || (ke == ks && e == s)) return 0;
        Py_ssize_t at = out->size;
        if (!put(out, " ", 1) || !put(out, ks, ke - ks) || !put(out, s, e - s)) return -1;
        for (char *q = out->data + at + 1; q < out->data + out->size; q++)
            if (*q == ' ' || *q == '|' || *q == ':' || *q == '\t') *q = '_';
        return 1;
    }
    if (*c->p == 't') {
        if (!read_literal(c, "true") || ke == ks || breaks_name(ks, ke)) return 0;
        return put(out, " ", 1) && put(out, ks, ke - ks) ? 1 : -1;
    }
    if (*c->p == 'f') return read_literal(c, "false");
    if (*c->p == 'n') return read_literal(c, "null");
    if (!read_number(c, &s, &e, &value, &integer) || ke == ks || breaks_name(ks, ke)) return 0;
    if (value == 0) return 1;
    if (!(fabs(value) >= FLT_MIN && fabs(value) <= FLT_MAX)) return 0;
    return put(out, " ", 1) && put(out, ks, ke - ks) && put(out, ":", 1) &&
                   put(out, s, e - s) ? 1 : -1;
}

/* Whether the key [s, e) (starting with '_') is one the reference reads or refuses: _text
 * (features), _multi and _slots (actions, out of place), _label... (labels, out of place). */
static int special_key(const char *s, const char *e) {
    Py_ssize_t n = e - s;
    return (n == 5 && memcmp(s, "_text", 5) == 0) || (n == 6 && memcmp(s, "_multi", 6) == 0) ||
           (n == 6 && memcmp(s, "_slots", 6) == 0) || (n >= 6 && memcmp(s, "_label", 6) == 0);
}

/* The plain fields of an object (at '{'), as features written to out. */
static int plain_fields(Cursor *c, Buffer *out) {
    const char *ks, *ke;
    Keys keys;
    keys.count = 0;
    if (!take(c, '{')) return 0;
    if (take(c, '}')) return 1;
    do {
        if (!read_string(c, &ks, &ke) || !take(c, ':')) return 0;
        if (ks < ke && *ks == '_') {
            if (special_key(ks, ke) || !skip_value(c, 1)) return 0;
            continue;
        }
        if (!new_key(&keys, ks, ke)) return 0;
        int ok = plain_feature(c, ks, ke, out);
        if (ok != 1) return ok;
    } while (take(c, ','));
    return take(c, '}');
}

/* A field of c that is an object, an array of objects or an array of numbers: the
 * namespace key, written " |key features" to out (nothing when it has no features). */
static int namespace(Cursor *c, const char *ks, const char *ke, Buffer *out) {
    Py_ssize_t at = out->size;
    if (ke == ks || breaks_name(ks, ke)) return 0;
    if (!put(out, " |", 2) || !put(out, ks, ke - ks)) return -1;
    Py_ssize_t header = out->size;
    int ok = 1;
    if (take(c, '{')) {
        c->p--;
        ok = plain_fields(c, out);
    } else if (!take(c, '[')) {
        return 0;
    } else if (take(c, ']')) {
        ok = 1;  /* an empty array: no features */
    } else if (skip_space(c), *c->p == '{') {
        do ok = plain_fields(c, out);
        while (ok == 1 && take(c, ','));
        ok = ok == 1 ? take(c, ']') : ok;
    } else {
        for (long i = 0; ok == 1; i++) {  /* positional features 0, 1, ... */
            const char *s, *e;
            double value;
            int integer;
            if (!read_number(c, &s, &e, &value, &integer)) return 0;
            if (value != 0) {
                if (!(fabs(value) >= FLT_MIN && fabs(value) <= FLT_MAX)) return 0;
                char index[32];
                int n = snprintf(index, sizeof index, " %ld:", i);
                ok = put(out, index, n) && put(out, s, e - s) ? 1 : -1;
            }
            if (ok == 1 && !take(c, ',')) break;
        }
        ok = ok == 1 ? take(c, ']') : ok;
    }
    if (ok == 1 && out->size == header) out->size = at;  /* no features: no namespace */
    return ok;
}

typedef struct {
    Buffer plain, spaces;        /* default namespace features; the namespaces */
    const char *action[MAX_ACTIONS];  /* each _multi object's text [action, action_end) */
    const char *action_end[MAX_ACTIONS];
    Py_ssize_t n_actions;
    PyObject *previous;          /* the tuple of the previous event's action texts (NULL:
                                  * not made, its features found by their bytes) */
    char *previous_start, *previous_end;  /* a copy of its _multi array after the '[' */
    Py_ssize_t previous_n;                /* its objects */
    Py_ssize_t offset[MAX_ACTIONS];       /* where each text starts in that array */
    Py_ssize_t length[MAX_ACTIONS];       /* and its bytes */
    const char *multi, *multi_end;        /* this event's _multi array after the '[' */
    int same;                             /* whether it is the previous event's */
    PyObject *features;          /* the previous texts' features (found in the sets) */
} Context;

/* Whether the array at c (after its '[') is the previous event's _multi, byte for byte
 * (logs repeat their actions): then c passes it and ctx has its objects' texts. */
static int same_actions(Cursor *c, Context *ctx) {
    if (!ctx->previous_end) return 0;
    Py_ssize_t length = ctx->previous_end - ctx->previous_start;
    if (c->end - c->p < length || memcmp(c->p, ctx->previous_start, length) != 0) return 0;
    Py_ssize_t n = ctx->previous_n;
    const char *at = c->p;
    for (Py_ssize_t i = 0; i < n; i++) {  /* the texts, at their offsets in this line */
        ctx->action[i] = at + ctx->offset[i];
        ctx->action_end[i] = ctx->action[i] + ctx->length[i];
    }
    ctx->n_actions = n;
    c->p += length;
    return 1;
}

/* c (at '{'): its features to ctx's buffers, its _multi's objects to ctx->actions. */
static int context(Cursor *c, Context *ctx) {
    const char *ks, *ke;
    Keys keys;
    keys.count = 0;
    int multi = 0;
    if (!take(c, '{')) return 0;
    if (take(c, '}')) return 0;  /* no actions */
    do {
        if (!read_string(c, &ks, &ke) || !take(c, ':')) return 0;
        if (ke - ks == 6 && memcmp(ks, "_multi", 6) == 0) {
            if (multi++ || !take(c, '[')) return 0;
            ctx->multi = c->p;
            if ((ctx->same = same_actions(c, ctx))) continue;
            do {
                skip_space(c);
                const char *s = c->p;
                if (s >= c->end || *s != '{' || !skip_value(c, 1)) return 0;
                if (ctx->n_actions == MAX_ACTIONS) return 0;
                ctx->action[ctx->n_actions] = s;
                ctx->action_end[ctx->n_actions++] = c->p;
            } while (take(c, ','));
            if (!take(c, ']')) return 0;
            ctx->multi_end = c->p;
            continue;
        }
        if (ks < ke && *ks == '_') {
            if (special_key(ks, ke) || !skip_value(c, 1)) return 0;
            continue;
        }
        if (!new_key(&keys, ks, ke)) return 0;
        skip_space(c);
        int ok = c->p < c->end && (*c->p == '{' || *c->p == '[')
                     ? namespace(c, ks, ke, &ctx->spaces)
                     : plain_feature(c, ks, ke, &ctx->plain);
        if (ok != 1) return ok;
    } while (take(c, ','));
    return take(c, '}') && ctx->n_actions > 0;
}

/* An array of numbers (a, p): its length. */
static int numbers(Cursor *c, Py_ssize_t *length) {
    const char *s, *e;
    double value;
    int integer;
    *length = 0;
    if (!take(c, '[')) return 0;
    if (take(c, ']')) return 1;
    do {
        if (!read_number(c, &s, &e, &value, &integer) || !isfinite(value)) return 0;
        ++*length;
    } while (take(c, ','));
    return take(c, ']');
}

typedef struct {
    long index;
    double cost, probability, pdrop, action;
    int has_index, has_cost, has_probability, has_action;
    PyObject *event_id;
} Event;

static int number_field(Cursor *c, double *value, int *seen) {
    const char *s, *e;
    int integer;
    if ((*seen)++) return 0;
    return read_number(c, &s, &e, value, &integer) && isfinite(*value);
}

/* One line: 1 and the event, 0 slow, -1 error (exception set). */
static int event(const char *p, const char *end, Context *ctx, Event *ev) {
    Cursor c = {p, end};
    const char *ks, *ke, *s, *e;
    double value;
    int integer, seen_c = 0, seen_a = 0, seen_p = 0, seen_pdrop = 0, seen_skip = 0,
                 seen_id = 0, seen_time = 0, seen_ba = 0, seen_original = 0;
    Py_ssize_t n_a = -1, ignored;
    ev->pdrop = 0;
    if (c.p >= c.end || *c.p != '{') return 0;  /* (VW skips the line: the reference's) */
    c.p++;
    if (take(&c, '}')) return 0;
    do {
        if (!read_string(&c, &ks, &ke) || !take(&c, ':')) return 0;
        Py_ssize_t n = ke - ks;
#define IS(word) (n == (Py_ssize_t)strlen(word) && memcmp(ks, word, n) == 0)
        int ok;
        if (IS("c")) {
            ok = seen_c++ ? 0 : context(&c, ctx);
        } else if (IS("_labelIndex")) {
            ok = !ev->has_index++ && read_number(&c, &s, &e, &value, &integer) && integer &&
                 fabs(value) < 1e9;
            ev->index = (long)value;
        } else if (IS("_label_cost")) {
            ok = number_field(&c, &ev->cost, &ev->has_cost);
        } else if (IS("_label_probability")) {
            ok = number_field(&c, &ev->probability, &ev->has_probability);
        } else if (IS("_label_Action")) {
            ok = number_field(&c, &ev->action, &ev->has_action);
        } else if (n >= 6 && memcmp(ks, "_label", 6) == 0) {
            ok = 0;  /* another label field (VW's case is loose): the reference's */
        } else if (IS("pdrop")) {
            ok = number_field(&c, &ev->pdrop, &seen_pdrop);
        } else if (IS("a")) {
            ok = !seen_a++ && numbers(&c, &n_a);
        } else if (IS("p") || IS("_p")) {
            ok = !seen_p++ && numbers(&c, &ignored);
        } else if (IS("_ba")) {
            ok = !seen_ba++ && numbers(&c, &ignored);
        } else if (IS("_original_label_cost")) {
            ok = number_field(&c, &value, &seen_original);
        } else if (IS("_skipLearn")) {  /* true: VW skips the event (the reference's) */
            ok = !seen_skip++ && read_literal(&c, "false");
        } else if (IS("_outcomes")) {
            ok = 0;
        } else if (IS("Timestamp")) {
            ok = !seen_time++ && (read_literal(&c, "null") || skip_string(&c));
        } else if (IS("EventId")) {
            ok = !seen_id++;
            if (ok && read_literal(&c, "null")) continue;
            ok = ok && read_string(&c, &s, &e);
            if (ok && !(ev->event_id = PyUnicode_FromStringAndSize(s, e - s))) return -1;
        } else {
            ok = skip_value(&c, 1);
        }
#undef IS
        if (ok != 1) return ok;
    } while (take(&c, ','));
    if (!take(&c, '}')) return 0;
    skip_space(&c);
    if (c.p != c.end || !seen_c || n_a <= 0) return 0;  /* (no actions: skipped) */
    if (!ev->has_index && (ev->has_cost || ev->has_probability || ev->has_action)) return 0;
    if (ev->has_index && !(ev->has_cost && ev->has_probability && ev->index >= 0 &&
                           ev->index < ctx->n_actions &&
                           ev->probability > 0 && ev->probability <= 1))
        return 0;
    return ev->pdrop >= 0 && ev->pdrop < 1;
}

/* A copy of the event's _multi array and where its objects are, for the next event's
 * same_actions (unless it is the previous event's); its texts not made yet. 0: no memory. */
static int remember_actions(Context *ctx) {
    if (ctx->same) return 1;
    Py_ssize_t n = ctx->n_actions, length = ctx->multi_end - ctx->multi;
    char *copy = PyMem_Realloc(ctx->previous_start, length ? length : 1);
    if (!copy) {
        PyErr_NoMemory();
        return 0;
    }
    memcpy(copy, ctx->multi, length);
    ctx->previous_start = copy;
    ctx->previous_end = copy + length;
    for (Py_ssize_t i = 0; i < n; i++) {
        ctx->offset[i] = ctx->action[i] - ctx->multi;
        ctx->length[i] = ctx->action_end[i] - ctx->action[i];
    }
    ctx->previous_n = n;
    Py_CLEAR(ctx->previous);
    return 1;
}

/* The tuple of the event's action texts: the previous event's when its _multi is the
 * same and they were made (logs repeat their actions: the Python side then finds them by
 * the tuple at once); otherwise a new one, kept for the next event. */
static PyObject *action_texts(Context *ctx) {
    if (ctx->previous) return Py_NewRef(ctx->previous);
    Py_ssize_t n = ctx->n_actions;
    PyObject *texts = PyTuple_New(n);
    for (Py_ssize_t i = 0; texts && i < n; i++) {
        PyObject *text = PyUnicode_FromStringAndSize(ctx->action[i],
                                                     ctx->action_end[i] - ctx->action[i]);
        if (!text) Py_CLEAR(texts);
        else PyTuple_SET_ITEM(texts, i, text);
    }
    Py_XSETREF(ctx->previous, Py_XNewRef(texts));
    return texts;
}

/* Action texts' features found by the texts' bytes (not made into strings): an open-
 * addressing table of copies of the texts, each with the features the sets and known
 * (dsjson._Actions') gave it, kept across calls in a capsule (`texts_table`); at most
 * TABLE_MAX texts, then forgotten. */
#define TABLE_MAX 65536
typedef struct {
    uint64_t hash;
    Py_ssize_t length;
    char *bytes;           /* NULL: an empty entry */
    PyObject *features;
} Entry;

typedef struct {
    Entry *entries;
    Py_ssize_t capacity, count;  /* capacity: a power of 2, at least twice count */
} Table;

static uint64_t bytes_hash(const char *p, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n, w;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    w = 0;
    memcpy(&w, p + i, n - i);
    h = (h ^ w) * 0x94D049BB133111EBull;
    return h ^ (h >> 29);
}

static void table_clear(Table *t) {
    for (Py_ssize_t i = 0; i < t->capacity; i++)
        if (t->entries[i].bytes) {
            PyMem_Free(t->entries[i].bytes);
            Py_DECREF(t->entries[i].features);
            t->entries[i].bytes = NULL;
        }
    t->count = 0;
}

static void table_free(PyObject *capsule) {
    Table *t = PyCapsule_GetPointer(capsule, "regcb_stream.texts_table");
    if (!t) return;
    table_clear(t);
    PyMem_Free(t->entries);
    PyMem_Free(t);
}

/* The entry of text [p, p + n): its own, or the empty one where it would go */
static Entry *table_slot(Table *t, const char *p, Py_ssize_t n, uint64_t hash) {
    for (Py_ssize_t i = (Py_ssize_t)(hash & (uint64_t)(t->capacity - 1));;
         i = (i + 1) & (t->capacity - 1)) {
        Entry *e = t->entries + i;
        if (!e->bytes || (e->hash == hash && e->length == n && memcmp(e->bytes, p, n) == 0))
            return e;
    }
}

/* Room for one more text (0: no memory) */
static int table_room(Table *t) {
    if (t->count >= TABLE_MAX) table_clear(t);
    if (2 * (t->count + 1) <= t->capacity) return 1;
    Py_ssize_t old = t->capacity, capacity = old ? 2 * old : 1024;
    Entry *entries = PyMem_Calloc(capacity, sizeof(Entry)), *previous = t->entries;
    if (!entries) {
        PyErr_NoMemory();
        return 0;
    }
    t->entries = entries, t->capacity = capacity;
    for (Py_ssize_t i = 0; i < old; i++)
        if (previous[i].bytes)
            *table_slot(t, previous[i].bytes, previous[i].length, previous[i].hash) =
                previous[i];
    PyMem_Free(previous);
    return 1;
}

/* The features of the event's texts found by their bytes, as a new tuple; NULL (without
 * an exception) if one is not in the table */
static PyObject *table_features(Table *t, Context *ctx) {
    Py_ssize_t n = ctx->n_actions;
    if (!t->count) return NULL;
    PyObject *found[MAX_ACTIONS];
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t length = ctx->action_end[i] - ctx->action[i];
        Entry *e = table_slot(t, ctx->action[i], length, bytes_hash(ctx->action[i], length));
        if (!e->bytes) return NULL;
        found[i] = e->features;
    }
    PyObject *features = PyTuple_New(n);
    for (Py_ssize_t i = 0; features && i < n; i++)
        PyTuple_SET_ITEM(features, i, Py_NewRef(found[i]));
    return features;
}

/* The event's texts put in the table with their features (a tuple of as many); 0: no
 * memory */
static int table_add(Table *t, Context *ctx, PyObject *features) {
    for (Py_ssize_t i = 0; i < ctx->n_actions; i++) {
        Py_ssize_t length = ctx->action_end[i] - ctx->action[i];
        uint64_t hash = bytes_hash(ctx->action[i], length);
        if (t->capacity && table_slot(t, ctx->action[i], length, hash)->bytes) continue;
        if (!table_room(t)) return 0;
        char *bytes = PyMem_Malloc(length ? length : 1);
        if (!bytes) {
            PyErr_NoMemory();
            return 0;
        }
        memcpy(bytes, ctx->action[i], length);
        *table_slot(t, ctx->action[i], length, hash) = (Entry){
            hash, length, bytes, Py_NewRef(PyTuple_GET_ITEM(features, i))};
        t->count++;
    }
    return 1;
}

PyDoc_STRVAR(texts_table_doc,
"texts_table() -> capsule\n"
"An empty table of action texts and their features for events(): each text found\n"
"by its bytes afterwards, without making it a string.");

static PyObject *py_texts_table(PyObject *self, PyObject *args) {
    Table *t = PyMem_Calloc(1, sizeof(Table));
    if (!t) return PyErr_NoMemory();
    PyObject *capsule = PyCapsule_New(t, "regcb_stream.texts_table", table_free);
    if (!capsule) PyMem_Free(t);
    return capsule;
}

/* The event's shared features as VW text: " a b |ns c |ms d" (a default namespace first)
 * or "ns c |ms d" (the line's first '|' is implied). */
static PyObject *shared_text(Context *ctx) {
    Buffer *plain = &ctx->plain, *spaces = &ctx->spaces;
    Py_ssize_t skip = plain->size || !spaces->size ? 0 : 2;
    PyObject *shared = PyUnicode_New(plain->size + spaces->size - skip, 127);
    if (!shared) return NULL;
    char *data = (char *)PyUnicode_DATA(shared);
    if (plain->size) memcpy(data, plain->data, plain->size);
    if (spaces->size) memcpy(data + plain->size, spaces->data + skip, spaces->size - skip);
    return shared;
}

static double event_weight(Event *ev) { return (double)(1.0f / (1.0f - (float)ev->pdrop)); }

/* The event's tuple (see the module's comment). */
static PyObject *event_tuple(Context *ctx, Event *ev, PyObject *texts) {
    PyObject *shared = shared_text(ctx);
    if (!shared) return NULL;
    return Py_BuildValue("(NOldddO)", shared, texts, ev->has_index ? ev->index : -1L,
                         ev->has_index ? ev->cost : 0.0,
                         ev->has_index ? ev->probability : 1.0, event_weight(ev),
                         ev->event_id ? ev->event_id : Py_None);
}

/* The event as an example (shared text, actions' features, label or None, tag None,
 * line number, line, weight, event id, False), as dsjson._example makes it. */
static PyObject *event_example(Context *ctx, Event *ev, PyObject *features, Py_ssize_t no,
                               PyObject *line, PyObject *example_type, PyObject *label_type) {
    PyObject *label = Py_NewRef(Py_None);
    if (ev->has_index && ev->index >= 0) {
        Py_SETREF(label, make_tuple(label_type, Py_BuildValue("(ldd)", ev->index, ev->cost,
                                                              ev->probability)));
        if (!label) return NULL;
    }
    PyObject *shared = shared_text(ctx);
    if (!shared) {
        Py_DECREF(label);
        return NULL;
    }
    return make_tuple(example_type, Py_BuildValue(
        "(NONOnOdOO)", shared, features, label, Py_None, no, line, event_weight(ev),
        ev->event_id ? ev->event_id : Py_None, Py_False));  /* (skip_learn: VW skips) */
}

/* The features of an event's action texts as _Actions.of finds them without parsing: the
 * tuple in sets, else the features of each text in known, as a new tuple put in sets
 * (cleared first when it holds more than max_sets); NULL without an exception when a text
 * is not known (the Python side parses it). A borrowed reference, held by ctx->features.
 * (The previous event's, when its texts are the same and known: event_item's.) */
static PyObject *known_features(Context *ctx, PyObject *texts, PyObject *sets,
                                PyObject *known, Py_ssize_t max_sets) {
    PyObject *features = PyDict_GetItemWithError(sets, texts);
    if (!features && !PyErr_Occurred()) {
        Py_ssize_t n = PyTuple_GET_SIZE(texts);
        PyObject *made = PyTuple_New(n);
        for (Py_ssize_t i = 0; made && i < n; i++) {
            PyObject *one = PyDict_GetItemWithError(known, PyTuple_GET_ITEM(texts, i));
            if (!one) Py_CLEAR(made);
            else PyTuple_SET_ITEM(made, i, Py_NewRef(one));
        }
        if (made && PyDict_GET_SIZE(sets) > max_sets) PyDict_Clear(sets);
        if (made && PyDict_SetItem(sets, texts, made) < 0) Py_CLEAR(made);
        features = made;
        Py_XDECREF(made);  /* (sets holds it) */
    }
    if (PyErr_Occurred()) return NULL;
    Py_XSETREF(ctx->features, Py_XNewRef(features));
    return features;
}

/* The event's example when its action texts' features are known (known_features), else
 * its tuple; without sets, its tuple. */
static PyObject *event_item(Context *ctx, Event *ev, PyObject *line, Py_ssize_t no,
                            PyObject *sets, PyObject *known, Py_ssize_t max_sets,
                            PyObject *example_type, PyObject *label_type, Table *table) {
    int same = ctx->same;
    if (!remember_actions(ctx)) return NULL;
    if (sets != Py_None && (same ? ctx->features != NULL : table != NULL)) {  /* no texts */
        PyObject *features = same ? ctx->features : table_features(table, ctx);
        if (features) {
            if (!same) Py_XSETREF(ctx->features, features);  /* (held there) */
            return event_example(ctx, ev, features, no, line, example_type, label_type);
        }
        if (PyErr_Occurred()) return NULL;
    }
    PyObject *texts = action_texts(ctx), *features = NULL, *item = NULL;
    if (!texts) return NULL;
    if (sets != Py_None) {
        features = known_features(ctx, texts, sets, known, max_sets);
        if ((!features && PyErr_Occurred()) || (features && table &&
                                                 !table_add(table, ctx, features))) {
            Py_DECREF(texts);
            return NULL;
        }
    }
    item = features ? event_example(ctx, ev, features, no, line, example_type, label_type)
                    : event_tuple(ctx, ev, texts);
    Py_DECREF(texts);
    return item;
}

PyDoc_STRVAR(events_doc,
"events(lines[, first_no, sets, known, max_sets, example_type, label_type, table])\n"
"-> list\n"
"For each DSJSON line, None (the reference parser's) or (shared, actions, label_index,\n"
"cost, probability, weight, event_id): see the module's comment.  With sets\n"
"and known (dsjson._Actions': tuples of action texts to their features, a text to its\n"
"features), a line whose action texts' features are known is returned as\n"
"example_type(shared, features, label, None, line number, line, weight, event_id,\n"
"False),\n"
"label label_type(index, cost, probability) or None (no label), lines numbered from\n"
"first_no: dsjson._example's example (the features\n"
"found as _Actions.of finds them, sets holding at most max_sets + 1 tuples; with table,\n"
"a texts_table(), the texts met before found by their bytes, not made strings).");

static PyObject *py_events(PyObject *self, PyObject *args) {
    PyObject *lines, *sets = Py_None, *known = Py_None, *example_type = Py_None;
    PyObject *label_type = Py_None, *capsule = Py_None;
    Py_ssize_t first_no = 1, max_sets = 0;
    if (!PyArg_ParseTuple(args, "O!|nOOnOOO", &PyList_Type, &lines, &first_no, &sets, &known,
                          &max_sets, &example_type, &label_type, &capsule))
        return NULL;
    Table *table = NULL;
    if (capsule != Py_None &&
        !(table = PyCapsule_GetPointer(capsule, "regcb_stream.texts_table")))
        return NULL;
    if (sets != Py_None && (!PyDict_Check(sets) || !PyDict_Check(known) ||
                            !PyType_Check(example_type) || !PyType_Check(label_type))) {
        PyErr_SetString(PyExc_TypeError, "sets and known must be dicts, with two tuple types");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(lines);
    PyObject *out = PyList_New(n);
    Context ctx;
    memset(&ctx, 0, sizeof ctx);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *line = PyList_GET_ITEM(lines, i), *item = NULL;
        if (!PyUnicode_Check(line)) {
            PyErr_SetString(PyExc_TypeError, "lines must be str");
            goto fail;
        }
        ctx.plain.size = ctx.spaces.size = ctx.n_actions = ctx.same = 0;
        Event ev;
        memset(&ev, 0, sizeof ev);
        Py_ssize_t length;
        const char *p = PyUnicode_AsUTF8AndSize(line, &length);
        int ok = p ? event(p, p + length, &ctx, &ev) : 0;
        PyErr_Clear();  /* (a str that is not UTF-8: the reference's to report) */
        if (ok == 1) {
            item = event_item(&ctx, &ev, line, first_no + i, sets, known, max_sets,
                              example_type, label_type, table);
        } else if (ok == 0) {
            item = Py_NewRef(Py_None);
        }
        Py_XDECREF(ev.event_id);
        if (!item) goto fail;
        PyList_SET_ITEM(out, i, item);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    PyMem_Free(ctx.previous_start);
    Py_XDECREF(ctx.previous);
    Py_XDECREF(ctx.features);
    PyMem_Free(ctx.plain.data);
    PyMem_Free(ctx.spaces.data);
    return out;
}

static PyMethodDef methods[] = {
    {"events", py_events, METH_VARARGS, events_doc},
    {"texts_table", py_texts_table, METH_NOARGS, texts_table_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_dsjson", "Compiled reader of Decision Service JSON lines.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__dsjson(void) { return PyModule_Create(&module); }
