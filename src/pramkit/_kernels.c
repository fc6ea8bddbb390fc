/*
 * pramkit._kernels: the per-value loops that NumPy and Arrow cannot do in one pass.
 *
 * draw_diagonal, draw_alias   the keep-or-move draw of pramkit.sampling's DiagonalSampler and
 *                             AliasSampler, one pass over the values (NumPy needs about ten).
 * utf8_index, utf8_encode     codes of Arrow UTF-8 values among a codebook's labels, through an
 *                             open-addressing table built once per codebook (Arrow's hash lookup
 *                             costs three uniform draws per value; this costs under one).
 * utf8_size, utf8_decode      the Arrow UTF-8 array of the labels of codes: offsets, then bytes.
 *
 * Every argument is a C-contiguous buffer (a NumPy array or an Arrow buffer) whose element
 * type the Python caller fixes; lengths are checked here.  Loops run without the GIL.  The
 * floating-point arithmetic of the draws is that of the NumPy expressions they replace,
 * operation for operation (compiled with -ffp-contract=off), so a key releases the same values.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef Py_ssize_t intp;

static int
check_len(Py_buffer *b, Py_ssize_t items, Py_ssize_t itemsize, const char *name)
{
    if (b->len != items * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd bytes, got %zd", name, items * itemsize, b->len);
        return -1;
    }
    return 0;
}

static void
release(Py_buffer *views, int count)
{
    for (int i = 0; i < count; i++) {
        PyBuffer_Release(&views[i]);
    }
}

/* ------------------------------------------------------------------ draws */

/* The loop of draw_diagonal, its arguments in registers (not in the parser's memory). */
static Py_ssize_t
diagonal_run(const intp *codes, const double *u, const double *keep, const double *inv_move, intp *out,
             Py_ssize_t n, Py_ssize_t s, intp missing_code, Py_ssize_t *counts)
{
    Py_ssize_t bad = -1, missing = 0, changed = 0;
    const double others = (double)(s - 1);
    const uint64_t single = s == 1; /* one category: always kept */
    for (Py_ssize_t i = 0; i < n; i++) {
        intp k = codes[i];
        size_t at = (size_t)(k + 1);
        if (at > (size_t)s) { /* outside -1..S-1: reported, and read as missing */
            bad = bad < 0 ? i : bad;
            at = 0;
        }
        /* Both outcomes computed, one selected by a mask: whether a value moves is a coin toss that a
         * branch predictor gets wrong once in five values.  x < q is the sign of x - q (u lies in
         * [0, 1), and x - x is +0), read from its bits so that the compiler keeps it branch-free. */
        double d = u[i] - keep[at];
        uint64_t sign;
        memcpy(&sign, &d, sizeof sign);
        intp kept = -(intp)((sign >> 63) | single); /* all ones when kept */
        intp t = (intp)((d * inv_move[at]) * others); /* negative when kept: not used */
        t = t > s - 2 ? s - 2 : t;
        t += t >= k;
        t = (k & kept) | (t & ~kept);
        missing += k == missing_code;
        changed += t != k;
        out[i] = t;
    }
    counts[0] = missing;
    counts[1] = changed;
    return bad;
}

/* draw_diagonal(codes intp[n], u double[n], keep double[S + 1], inv_move double[S + 1], out intp[n],
 * missing_code): form (8), kept when u < q_k (always when S = 1); else u' = (u - q_k) / (1 - q_k),
 * t = floor(u' (S - 1)) capped at S - 2, released t + [t >= k].  The tables are shifted by one:
 * entry 0 is for code -1 (missing), keep 2 and inv_move 0, so that it is kept without a branch.
 * ``out`` may be ``codes``.  Returns (the position of the first code outside -1..S-1 or -1, the
 * number of codes equal to missing_code, the number changed). */
static PyObject *
draw_diagonal(PyObject *self, PyObject *args)
{
    Py_buffer b[5];
    Py_ssize_t missing_code;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*n", &b[0], &b[1], &b[2], &b[3], &b[4], &missing_code)) {
        return NULL;
    }
    Py_ssize_t n = b[0].len / (Py_ssize_t)sizeof(intp), s = b[2].len / (Py_ssize_t)sizeof(double) - 1;
    if (s < 1 || check_len(&b[0], n, sizeof(intp), "codes") || check_len(&b[1], n, sizeof(double), "u") ||
        check_len(&b[3], s + 1, sizeof(double), "inv_move") || check_len(&b[4], n, sizeof(intp), "out")) {
        release(b, 5);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "draw_diagonal: no categories");
        }
        return NULL;
    }
    Py_ssize_t bad, counts[2];
    Py_BEGIN_ALLOW_THREADS
    bad = diagonal_run(b[0].buf, b[1].buf, b[2].buf, b[3].buf, b[4].buf, n, s, missing_code, counts);
    Py_END_ALLOW_THREADS
    release(b, 5);
    return Py_BuildValue("nnn", bad, counts[0], counts[1]);
}

/* draw_alias(codes, u, keep, inv_move, table double[S * S], out, missing_code): any matrix, kept
 * when u < M[k, k]; else x = u' S, j = floor(x) capped at S - 1, and the cell (k, j) of the packed
 * alias table (alias + probability) releases j when x - j is below its probability, else its alias.
 * Code -1 stays -1; ``out`` may be ``codes``.  Returns what draw_diagonal returns. */
/* The loop of draw_alias, its arguments in registers. */
static Py_ssize_t
alias_run(const intp *codes, const double *u, const double *keep, const double *inv_move, const double *table,
          intp *out, Py_ssize_t n, Py_ssize_t s, intp missing_code, Py_ssize_t *counts)
{
    Py_ssize_t bad = -1, missing = 0, changed = 0;
    const double cells = (double)s;
    for (Py_ssize_t i = 0; i < n; i++) {
        intp k = codes[i];
        if (k < 0 || k >= s) {
            if (k != -1) {
                bad = bad < 0 ? i : bad;
            }
            missing += k == missing_code;
            out[i] = k;
            continue;
        }
        missing += k == missing_code;
        double x = u[i], q = keep[k];
        if (x < q || s == 1) { /* the table read of a move is worth a branch */
            out[i] = k;
            continue;
        }
        x = ((x - q) * inv_move[k]) * cells;
        intp j = (intp)x;
        if (j > s - 1) {
            j = s - 1;
        }
        x -= (double)j;
        double entry = table[k * s + j];
        intp alias = (intp)entry;
        j = x < entry - (double)alias ? j : alias;
        changed += j != k;
        out[i] = j;
    }
    counts[0] = missing;
    counts[1] = changed;
    return bad;
}

static PyObject *
draw_alias(PyObject *self, PyObject *args)
{
    Py_buffer b[6];
    Py_ssize_t missing_code;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &missing_code)) {
        return NULL;
    }
    Py_ssize_t n = b[0].len / (Py_ssize_t)sizeof(intp), s = b[2].len / (Py_ssize_t)sizeof(double);
    if (check_len(&b[0], n, sizeof(intp), "codes") || check_len(&b[1], n, sizeof(double), "u") ||
        check_len(&b[3], s, sizeof(double), "inv_move") || check_len(&b[4], s * s, sizeof(double), "table") ||
        check_len(&b[5], n, sizeof(intp), "out")) {
        release(b, 6);
        return NULL;
    }
    Py_ssize_t bad, counts[2];
    Py_BEGIN_ALLOW_THREADS
    bad = alias_run(b[0].buf, b[1].buf, b[2].buf, b[3].buf, b[4].buf, b[5].buf, n, s, missing_code, counts);
    Py_END_ALLOW_THREADS
    release(b, 6);
    return Py_BuildValue("nnn", bad, counts[0], counts[1]);
}

/* ------------------------------------------------------------------ UTF-8 values */

/* Label bytes are followed by at least PAD bytes (the caller pads them), and so is the output of
 * utf8_decode, so that a short value is read or written as two whole words: no branch on its
 * length, whose changes from value to value a processor cannot predict. */
#define PAD 16

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SHORT_LOADS 1
/* The bytes of the first and second word that a value of 0..16 bytes keeps (little-endian loads). */
static const uint64_t KEEP0[17] = {
    0, 0xffULL, 0xffffULL, 0xffffffULL, 0xffffffffULL, 0xffffffffffULL, 0xffffffffffffULL, 0xffffffffffffffULL,
    ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL};
static const uint64_t KEEP1[17] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0xffULL, 0xffffULL, 0xffffffULL, 0xffffffffULL, 0xffffffffffULL, 0xffffffffffffULL,
    0xffffffffffffffULL, ~0ULL};
#else
#define SHORT_LOADS 0
#endif

/* Word i (bytes 8i .. 8i + 7) of the len bytes at p, zero past len; bytes up to ``end`` may be read. */
static inline uint64_t
word(const unsigned char *p, int64_t len, int64_t i, const unsigned char *end)
{
    uint64_t w = 0;
    int64_t left = len - 8 * i;
    const unsigned char *at = p + 8 * i;
    if (left >= 8) {
        memcpy(&w, at, 8);
        return w;
    }
    if (left <= 0) {
        return 0;
    }
#if SHORT_LOADS
    if (end - at >= 8) { /* one load, masked */
        memcpy(&w, at, 8);
        return w & KEEP0[left];
    }
#endif
    for (int64_t j = 0; j < left; j++) {
        w |= (uint64_t)at[j] << (8 * j);
    }
    return w;
}

/* The hash of a value from its length and zero-padded words (at least two): a multiply-shift hash
 * whose top bits, which index a table of 2^bits slots, depend on every bit of every word. */
static inline uint64_t
short_hash(uint64_t w0, uint64_t w1, int64_t len, uint64_t seed)
{
    return (w0 ^ seed) * 0x9e3779b97f4a7c15ULL + (w1 + (uint64_t)len) * 0xc2b2ae3d27d4eb4fULL;
}

static uint64_t
hash_value(const unsigned char *p, int64_t len, uint64_t seed, const unsigned char *end)
{
    uint64_t h = short_hash(word(p, len, 0, end), word(p, len, 1, end), len, seed);
    for (int64_t i = 2; i < (len + 7) / 8; i++) {
        h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL + word(p, len, i, end) * 0x94d049bb133111ebULL;
    }
    return h;
}

static inline uint64_t
slot_of(uint64_t h, int shift)
{
    return h >> shift;
}

/* Whether the len bytes at a (readable up to a_end) equal those at b (up to b_end). */
static inline int
same_value(const unsigned char *a, const unsigned char *a_end, const unsigned char *b, const unsigned char *b_end,
           int64_t len)
{
    for (int64_t i = 0; i < (len + 7) / 8; i++) {
        if (word(a, len, i, a_end) != word(b, len, i, b_end)) {
            return 0;
        }
    }
    return 1;
}


/* Bits of the index of a table of m slots (m a power of two). */
static int
table_bits(Py_ssize_t m)
{
    int bits = 0;
    while (((Py_ssize_t)1 << bits) < m) {
        bits++;
    }
    return bits;
}

/* Hash seeds that utf8_index tries. */
#define SEEDS 32

/* Place the labels that ``use`` marks in ``slots`` (m of them, index bits 64 - shift) by open
 * addressing with the hash of ``seed``; return how many slots past their own they landed in all. */
static uint64_t
place(const unsigned char *data, const unsigned char *data_end, const int64_t *offsets, const unsigned char *use,
      Py_ssize_t s, int32_t *slots, Py_ssize_t m, int shift, uint64_t seed)
{
    uint64_t displaced = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        slots[j] = -1;
    }
    for (Py_ssize_t i = 0; i < s; i++) {
        if (!use[i]) {
            continue;
        }
        uint64_t at = slot_of(hash_value(data + offsets[i], offsets[i + 1] - offsets[i], seed, data_end), shift);
        while (slots[at] >= 0) {
            at = (at + 1) & (uint64_t)(m - 1);
            displaced++;
        }
        slots[at] = (int32_t)i;
    }
    return displaced;
}

/* utf8_index(label_offsets int64[S + 1], label_data (padded), use uint8[S], slots int32[m],
 * label_words uint64[3 S]): fill ``slots`` (m a power of two above S) with the positions of the
 * labels that ``use`` marks, by open addressing, and ``label_words`` with each label's first two
 * words and its length.  Returns the hash seed: the first that places every label in its own
 * slot, else the one of SEEDS that displaces the fewest (a displaced label costs its values a
 * second probe, which the processor mispredicts), so that no set of labels makes lookups slow. */
static PyObject *
utf8_index(PyObject *self, PyObject *args)
{
    Py_buffer b[5];
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*", &b[0], &b[1], &b[2], &b[3], &b[4])) {
        return NULL;
    }
    Py_ssize_t s = b[0].len / (Py_ssize_t)sizeof(int64_t) - 1, m = b[3].len / (Py_ssize_t)sizeof(int32_t);
    const int64_t *offsets = b[0].buf;
    if (s < 0 || m <= s || m < 2 || (m & (m - 1)) || s > INT32_MAX || b[2].len != s || b[1].len < offsets[s] + PAD ||
        check_len(&b[4], 3 * s, sizeof(uint64_t), "label_words")) {
        release(b, 5);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "utf8_index: inconsistent buffers");
        }
        return NULL;
    }
    const unsigned char *data = b[1].buf, *use = b[2].buf, *data_end = data + b[1].len;
    int32_t *slots = b[3].buf;
    uint64_t *words = b[4].buf;
    for (Py_ssize_t i = 0; i < s; i++) {
        int64_t len = offsets[i + 1] - offsets[i];
        words[3 * i] = word(data + offsets[i], len, 0, data_end);
        words[3 * i + 1] = word(data + offsets[i], len, 1, data_end);
        words[3 * i + 2] = (uint64_t)len;
    }
    int shift = 64 - table_bits(m);
    uint64_t best_seed = 0, best = UINT64_MAX, seed = 0;
    for (; seed < SEEDS && best > 0; seed++) {
        uint64_t displaced = place(data, data_end, offsets, use, s, slots, m, shift, seed);
        if (displaced < best) {
            best = displaced;
            best_seed = seed;
        }
    }
    if (best_seed != seed - 1) { /* the table holds the last seed tried: place the best one again */
        place(data, data_end, offsets, use, s, slots, m, shift, best_seed);
    }
    release(b, 5);
    return PyLong_FromUnsignedLongLong(best_seed);
}

/* The lookup of utf8_encode, inlined for each offset width, with and without a validity bitmap. */
typedef struct {
    const unsigned char *data, *label_data, *label_end, *valid;
    const int64_t *label_offsets;
    const int32_t *slots;
    const uint64_t *label_words;
    int64_t data_len;
    uint64_t mask, seed;
    int shift;
    intp missing_code, unknown_code;
} Lookup;

static inline __attribute__((always_inline)) Py_ssize_t
encode_run(const Lookup *t, const void *offsets, int width, int with_validity, Py_ssize_t first, Py_ssize_t n,
           intp *out)
{
    const int32_t *off32 = offsets;
    const int64_t *off64 = offsets;
    const unsigned char *data = t->data, *valid = t->valid, *data_end = t->data + t->data_len;
    const int32_t *slots = t->slots;
    const uint64_t *label_words = t->label_words;
    const int64_t *label_offsets = t->label_offsets;
    const uint64_t mask = t->mask, seed = t->seed;
    const int shift = t->shift;
    const int64_t short_end = t->data_len - 16; /* a value starting at or before it can be read in two words */
    Py_ssize_t bad = -1;
    int64_t start = width == 4 ? off32[first] : off64[first];
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t row = first + i;
        int64_t end = width == 4 ? off32[row + 1] : off64[row + 1];
        int64_t len = end - start, at_byte = start;
        start = end;
        if (with_validity && !((valid[row >> 3] >> (row & 7)) & 1)) {
            out[i] = t->missing_code;
            continue;
        }
        const unsigned char *p = data + at_byte;
        int32_t label;
        if (SHORT_LOADS && len <= 16 && at_byte <= short_end) { /* two masked loads, as the labels' words */
            uint64_t w0, w1;
            memcpy(&w0, p, 8);
            memcpy(&w1, p + 8, 8);
#if SHORT_LOADS
            w0 &= KEEP0[len];
            w1 &= KEEP1[len];
#endif
            uint64_t at = slot_of(short_hash(w0, w1, len, seed), shift);
            for (;;) {
                label = slots[at];
                const uint64_t *own = label_words + 3 * label; /* one cache line: the words, then the length */
                if (label < 0 || ((own[0] == w0) & (own[1] == w1) & (own[2] == (uint64_t)len))) {
                    break;
                }
                at = (at + 1) & mask;
            }
        }
        else {
            uint64_t at = slot_of(hash_value(p, len, seed, data_end), shift);
            for (;;) {
                label = slots[at];
                if (label < 0 || (label_offsets[label + 1] - label_offsets[label] == len &&
                                  same_value(p, data_end, t->label_data + label_offsets[label], t->label_end, len))) {
                    break;
                }
                at = (at + 1) & mask;
            }
        }
        if (label < 0) {
            bad = bad < 0 ? i : bad;
            out[i] = t->unknown_code;
            continue;
        }
        out[i] = label;
    }
    return bad;
}

/* utf8_encode(offsets, width, first, validity or None, data, label_offsets, label_data, slots,
 * label_words, seed, missing_code, unknown_code, out intp[n]): the position among the labels of each
 * of the n values of an Arrow string array (offsets of ``width`` bytes, from entry ``first``;
 * validity bit first + i).  A null takes ``missing_code``, a value that is no label
 * ``unknown_code``.  Returns the position of the first value that is no label, or -1. */
static PyObject *
utf8_encode(PyObject *self, PyObject *args)
{
    Py_buffer b[8];
    PyObject *validity_obj;
    int width;
    Py_ssize_t first;
    Lookup t;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "y*inOy*y*y*y*y*Knnw*", &b[0], &width, &first, &validity_obj, &b[1], &b[2], &b[3],
                          &b[4], &b[5], &seed, &t.missing_code, &t.unknown_code, &b[6])) {
        return NULL;
    }
    int have_validity = validity_obj != Py_None;
    if (have_validity && PyObject_GetBuffer(validity_obj, &b[7], PyBUF_SIMPLE) < 0) {
        release(b, 7);
        return NULL;
    }
    int count = have_validity ? 8 : 7;
    Py_ssize_t n = b[6].len / (Py_ssize_t)sizeof(intp), m = b[4].len / (Py_ssize_t)sizeof(int32_t);
    Py_ssize_t s = b[2].len / (Py_ssize_t)sizeof(int64_t) - 1;
    const int32_t *off32 = b[0].buf;
    const int64_t *off64 = b[0].buf;
    if ((width != 4 && width != 8) || first < 0 || b[0].len < (first + n + 1) * width || m < 2 ||
        (m & (m - 1)) || s < 0 || b[5].len != 3 * s * (Py_ssize_t)sizeof(uint64_t) ||
        (have_validity && b[7].len * 8 < first + n) ||
        (width == 4 ? (int64_t)off32[first + n] : off64[first + n]) > (int64_t)b[1].len) {
        release(b, count);
        PyErr_SetString(PyExc_ValueError, "utf8_encode: inconsistent buffers");
        return NULL;
    }
    t.data = b[1].buf;
    t.label_data = b[3].buf;
    t.label_end = t.label_data + b[3].len;
    t.valid = have_validity ? b[7].buf : NULL;
    t.label_offsets = b[2].buf;
    t.slots = b[4].buf;
    t.label_words = b[5].buf;
    t.data_len = (int64_t)b[1].len;
    t.mask = (uint64_t)(m - 1);
    t.seed = seed;
    t.shift = 64 - table_bits(m);
    intp *out = b[6].buf;
    Py_ssize_t bad;
    Py_BEGIN_ALLOW_THREADS
    if (width == 4) {
        bad = have_validity ? encode_run(&t, b[0].buf, 4, 1, first, n, out) : encode_run(&t, b[0].buf, 4, 0, first, n, out);
    }
    else {
        bad = have_validity ? encode_run(&t, b[0].buf, 8, 1, first, n, out) : encode_run(&t, b[0].buf, 8, 0, first, n, out);
    }
    Py_END_ALLOW_THREADS
    release(b, count);
    return PyLong_FromSsize_t(bad);
}

/* utf8_size(codes intp[n], label_offsets int64[S + 1], out_offsets, width): write the offsets of
 * the labels of ``codes`` (code -1: an empty value) as ``width``-byte integers; returns the total
 * number of bytes, or -1 if it does not fit 4-byte offsets. */
static PyObject *
utf8_size(PyObject *self, PyObject *args)
{
    Py_buffer b[3];
    int width;
    if (!PyArg_ParseTuple(args, "y*y*w*i", &b[0], &b[1], &b[2], &width)) {
        return NULL;
    }
    Py_ssize_t n = b[0].len / (Py_ssize_t)sizeof(intp), s = b[1].len / (Py_ssize_t)sizeof(int64_t) - 1;
    if ((width != 4 && width != 8) || s < 0 || check_len(&b[2], n + 1, width, "out_offsets")) {
        release(b, 3);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "utf8_size: inconsistent buffers");
        }
        return NULL;
    }
    const intp *codes = b[0].buf;
    const int64_t *label_offsets = b[1].buf;
    int32_t *o32 = b[2].buf;
    int64_t *o64 = b[2].buf;
    int64_t total = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    if (width == 8) {
        o64[0] = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            intp k = codes[i];
            if (k < -1 || k >= s) {
                bad = 1;
                break;
            }
            if (k >= 0) {
                total += label_offsets[k + 1] - label_offsets[k];
            }
            o64[i + 1] = total;
        }
    }
    else {
        o32[0] = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            intp k = codes[i];
            if (k < -1 || k >= s) {
                bad = 1;
                break;
            }
            if (k >= 0) {
                total += label_offsets[k + 1] - label_offsets[k];
            }
            if (total > INT32_MAX) {
                total = -1;
                break;
            }
            o32[i + 1] = (int32_t)total;
        }
    }
    Py_END_ALLOW_THREADS
    release(b, 3);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "utf8_size: a code is outside -1..S-1");
        return NULL;
    }
    return PyLong_FromLongLong(total);
}

/* utf8_decode(codes intp[n], label_offsets int64[S + 1], label_data, out_data): copy the labels of
 * ``codes`` one after the other into ``out_data``, of the size utf8_size returned plus PAD. */
static PyObject *
utf8_decode(PyObject *self, PyObject *args)
{
    Py_buffer b[4];
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &b[0], &b[1], &b[2], &b[3])) {
        return NULL;
    }
    Py_ssize_t n = b[0].len / (Py_ssize_t)sizeof(intp), s = b[1].len / (Py_ssize_t)sizeof(int64_t) - 1;
    const intp *codes = b[0].buf;
    const int64_t *label_offsets = b[1].buf;
    const unsigned char *label_data = b[2].buf;
    unsigned char *out = b[3].buf;
    Py_ssize_t room = b[3].len;
    int bad = s < 0 || b[2].len < label_offsets[s] + PAD;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        intp k = codes[i];
        if (k == -1) {
            continue;
        }
        if (k < -1 || k >= s) {
            bad = 1;
            break;
        }
        Py_ssize_t len = (Py_ssize_t)(label_offsets[k + 1] - label_offsets[k]);
        if (at + len + PAD > room) {
            bad = 1;
            break;
        }
        const unsigned char *from = label_data + label_offsets[k];
        if (len <= 16) { /* two whole words: the next value overwrites the excess */
            memcpy(out + at, from, 16);
        }
        else {
            memcpy(out + at, from, (size_t)len);
        }
        at += len;
    }
    Py_END_ALLOW_THREADS
    release(b, 4);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "utf8_decode: a code is outside -1..S-1 or the output is too small");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"draw_diagonal", draw_diagonal, METH_VARARGS, "Form (8) keep-or-move draw: (first bad position, missing, changed)."},
    {"draw_alias", draw_alias, METH_VARARGS, "Keep-or-move draw with an alias table: (first bad position, missing, changed)."},
    {"utf8_index", utf8_index, METH_VARARGS, "Fill an open-addressing table of labels."},
    {"utf8_encode", utf8_encode, METH_VARARGS, "Codes of Arrow UTF-8 values; first unknown position or -1."},
    {"utf8_size", utf8_size, METH_VARARGS, "Offsets of the labels of codes; total bytes (-1: too many)."},
    {"utf8_decode", utf8_decode, METH_VARARGS, "Bytes of the labels of codes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pramkit._kernels", "Per-value loops of pramkit's samplers and codebooks.", -1, methods,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    return PyModule_Create(&module);
}
