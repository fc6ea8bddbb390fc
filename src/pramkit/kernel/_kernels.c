/*
 * pramkit.kernel._kernels: the per-value loops that NumPy and Arrow cannot do in one pass.
 *
 * draw_diagonal, draw_alias,  the keep-or-move draws of pramkit.engine.sampling's samplers, one pass over the
 * draw_cumulative             values, in integer arithmetic on integer uniforms (the words of a Philox
 *                             generator, computed several blocks at a time: _philox.h), from the integer
 *                             tables of pramkit.privacy.law, so that the law they realise is known exactly.
 * alias_cells                 the alias tables of draw_alias, built in integers.
 * exact_reciprocals           the multipliers of draw_diagonal's exact quotients, where it does not
 *                             estimate them in doubles.
 * utf8_index, utf8_encode     codes of Arrow UTF-8 values among a codebook's labels, through an
 *                             open-addressing table built once per codebook (Arrow's hash lookup
 *                             costs three uniform draws per value; this costs under one).
 * object_encode               the same for a NumPy array of Python strings, their codes remembered by
 *                             address (a column holds few distinct string objects).
 * object_decode               the NumPy array of the labels of codes, as Python objects.
 * utf8_decode, utf8_size      the Arrow UTF-8 array of the labels of codes, offsets and bytes in one
 *                             pass (utf8_size counts the bytes first where no bound is tight).
 * csv_rows                    the CSV text of Arrow text columns, a value quoted only where a reader needs
 *                             it (Arrow's writer quotes every text value).
 * rake_fit                    one table's step of the synthesizer's raking: the candidates' weighted table and
 *                             the rescaling of their weights, each candidate's cell computed as it is read.
 *
 * Every argument is a C-contiguous buffer (a NumPy array or an Arrow buffer) whose element
 * type the Python caller fixes; lengths are checked here.  Loops run without the GIL.  The draws
 * decide in integers; the one double in them (the estimate of a quotient in draw_diagonal) is
 * corrected exactly, so every processor releases the same values.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
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

/* NumPy's interface to a bit generator (numpy/random/bitgen.h), which the "BitGenerator" capsule of
 * numpy.random.BitGenerator.capsule points to.  BitGenerator.random_raw() fills its output by calling
 * next_raw once per value, in order; so do the draws here, so that they read the same words. */
typedef struct {
    void *state;
    uint64_t (*next_uint64)(void *state);
    uint32_t (*next_uint32)(void *state);
    double (*next_double)(void *state);
    uint64_t (*next_raw)(void *state);
} bitgen_t;

#include "_philox.h"

/* Where a draw's words come from (the ``kind`` argument of the draws). */
enum { WORDS_GIVEN = 0, WORDS_PHILOX = 1, WORDS_CAPSULE = 2 };

/* Words of a draw: a buffer of them, or drawn CHUNK at a time into a buffer in the cache from a Philox
 * state or from a bit generator (the caller holds the generator's lock). */
#define CHUNK 512
typedef struct {
    const uint64_t *given;
    bitgen_t *gen;
    Philox *philox;
    uint64_t chunk[CHUNK];
} Words;

/* The words of values first .. first + n - 1 (n at most CHUNK), in order. */
static inline const uint64_t *
words_of(Words *src, Py_ssize_t first, Py_ssize_t n)
{
    if (src->given != NULL) {
        return src->given + first;
    }
    if (src->philox != NULL) {
        philox_fill(src->philox, src->chunk, n);
        return src->chunk;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        src->chunk[i] = src->gen->next_raw(src->gen->state);
    }
    return src->chunk;
}

/* Parse the words argument of ``kind``: a buffer of n uint64 (WORDS_GIVEN), a writable Philox state
 * (uint64[PHILOX_WORDS], WORDS_PHILOX) or a "BitGenerator" capsule (WORDS_CAPSULE); a buffer's view is
 * ``view``, released by the caller when ``*have_view``. */
static int
get_words(PyObject *obj, int kind, Py_ssize_t n, Words *src, Py_buffer *view, int *have_view)
{
    *have_view = 0;
    src->given = NULL;
    src->gen = NULL;
    src->philox = NULL;
    if (kind == WORDS_CAPSULE) {
        src->gen = PyCapsule_GetPointer(obj, "BitGenerator");
        return src->gen == NULL ? -1 : 0;
    }
    if (kind != WORDS_GIVEN && kind != WORDS_PHILOX) {
        PyErr_Format(PyExc_ValueError, "unknown kind of words %d", kind);
        return -1;
    }
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | (kind == WORDS_PHILOX ? PyBUF_WRITABLE : 0)) < 0) {
        return -1;
    }
    *have_view = 1;
    if (kind == WORDS_GIVEN) {
        src->given = view->buf;
        return check_len(view, n, sizeof(uint64_t), "words");
    }
    if (check_len(view, PHILOX_WORDS, sizeof(uint64_t), "Philox state") < 0) {
        return -1;
    }
    src->philox = view->buf;
    if (src->philox->pos > 4) {
        PyErr_SetString(PyExc_ValueError, "Philox state: the buffer position passes 4");
        return -1;
    }
    return 0;
}

/* _philox_fill(state, out): the next len(out) words of a Philox state (uint64[PHILOX_WORDS], advanced past
 * them) into out (uint64[n]); for tests, which compare its words and state with NumPy's. */
static PyObject *
philox_fill_py(PyObject *self, PyObject *args)
{
    PyObject *state_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OO", &state_obj, &out_obj)) {
        return NULL;
    }
    Words src;
    Py_buffer views[2];
    int have_state, ok = -1;
    if (get_words(state_obj, WORDS_PHILOX, 0, &src, &views[0], &have_state) == 0 &&
        PyObject_GetBuffer(out_obj, &views[1], PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) == 0) {
        ok = views[1].len % sizeof(uint64_t) == 0 ? 0 : -1;
        if (ok == 0) {
            Py_BEGIN_ALLOW_THREADS
            philox_fill(src.philox, views[1].buf, views[1].len / (Py_ssize_t)sizeof(uint64_t));
            Py_END_ALLOW_THREADS
        } else {
            PyErr_SetString(PyExc_ValueError, "words: not a whole number of uint64");
        }
        PyBuffer_Release(&views[1]);
    }
    if (have_state) {
        PyBuffer_Release(&views[0]);
    }
    if (ok < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Always supported: the portable paths. */
static int
supported_everywhere(void)
{
    return 1;
}

/* A test's switch between the paths of a kernel: path i is names[i], taken only where supported[i]() (count
 * of them); returns the name of the path taken before, and with a name (the one argument) takes that path.
 * ``what`` names the kernel's paths in the refusal. */
static PyObject *
switch_path(PyObject *args, const char *const names[], int (*const supported[])(void), int count, int *path,
            const char *what)
{
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "|s", &name)) {
        return NULL;
    }
    const char *before = names[*path];
    if (name != NULL) {
        int i = 0;
        while (i < count && !(strcmp(name, names[i]) == 0 && supported[i]())) {
            i++;
        }
        if (i == count) {
            PyErr_Format(PyExc_ValueError, "no %s %s on this processor", what, name);
            return NULL;
        }
        *path = i;
    }
    return PyUnicode_FromString(before);
}

/* _philox_path([name]): the path philox_fill takes ("portable", "avx512" or "avx2"); with a name, take that path
 * from now on and return the one taken before.  For tests, which run every path the processor has. */
static PyObject *
philox_path_py(PyObject *self, PyObject *args)
{
    static const char *const names[] = {"portable", "avx512", "avx2"};
    static int (*const supported[])(void) = {supported_everywhere, philox_avx512_supported, philox_avx2_supported};
    return switch_path(args, names, supported, 3, &philox_path, "Philox path");
}

/* Compiled once for the processor's widest vectors where the compiler can choose at load time (each
 * lane's arithmetic is the scalar one: the same values on every processor). */
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && !defined(__clang__)
#define VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define VECTOR_CLONES
#endif

/* A matrix's integer tables as the draws read them (see draw_diagonal, draw_alias and draw_cumulative).
 * A value's uniform is the integer x = word >> shift on [0, 2^(64 - shift)); a row k keeps the value when
 * x < keep[k] and otherwise moves it with r = x - keep[k], uniform on the row's move units. */
typedef struct {
    const int64_t *keep, *weight, *cells;
    const double *inv_weight;
    const uint64_t *rows; /* draw_diagonal's row records of the exact quotients: K_k, m_k, l_k, padding */
    Py_ssize_t s;
    intp missing_code;
    int shift, bits;
} Tables;

/* Form (8) on n values (see draw_diagonal): a value moves when x >= K_k, then to t = floor(r / W_k) capped
 * at S - 2, past k.  ``exact`` (a constant where this is inlined) chooses how t is found:
 *  - by a double estimate corrected by one integer step each way (the estimate is off by less than one
 *    while t <= S - 1, and it is clamped there first), from weight and inv_weight: without a branch (a
 *    value's move is a coin toss that a branch predictor gets wrong once in five values, so both outcomes
 *    are computed and one is selected), so that it vectorises where the processor has AVX-512;
 *  - or exactly by one multiply, t = ((r 2^shift) m_k >> 64) >> l_k, the reciprocal m_k and shift l_k of
 *    exact_reciprocals (rows[4 k + 1] and rows[4 k + 2]): where AVX-512 is absent the estimate does not vectorise (AVX2 has no 64-bit
 *    multiply and no conversion between 64-bit integers and doubles), and one multiply costs less than two,
 *    a double multiply and two conversions.
 * A code outside -1..S-1 is written out as it is; returns 1 if there is one, else 0. */
static inline __attribute__((always_inline)) int
form8_loop(const intp *restrict codes, const uint64_t *restrict w, const int64_t *restrict keep,
           const int64_t *restrict weight, const double *restrict inv_weight, const uint64_t *restrict rows,
           intp *restrict out, Py_ssize_t n, Py_ssize_t s, intp missing_code, int shift, Py_ssize_t *restrict counts,
           int exact)
{
    Py_ssize_t missing = 0, changed = 0;
    uint64_t bad = 0;
    const double top = (double)(s - 1);
    const int64_t cap = (int64_t)s - 2;
    for (Py_ssize_t i = 0; i < n; i++) {
        intp k = codes[i];
        uint64_t at = (uint64_t)(k + 1), outside = at > (uint64_t)s;
        bad |= outside;
        at = outside ? 0 : at;
        k = outside ? -1 : k;
        int64_t x = (int64_t)(w[i] >> shift), kk = keep[at];
        int kept = x < kk;
        int64_t t;
        if (exact) {
            uint64_t r = kept ? 0 : (uint64_t)(x - kk);
            const uint64_t *row = rows + 4 * at;
            t = (int64_t)((uint64_t)(((unsigned __int128)(r << shift) * row[1]) >> 64) >> row[2]);
        } else {
            int64_t r = kept ? 0 : x - kk, wk = weight[at];
            double e = (double)r * inv_weight[at];
            e = e > top ? top : e;
            t = (int64_t)e;
            t -= (uint64_t)t * (uint64_t)wk > (uint64_t)r;
            t += (uint64_t)(t + 1) * (uint64_t)wk <= (uint64_t)r;
        }
        t = t > cap ? cap : t;
        t += t >= k;
        intp released = kept ? k : (intp)t;
        missing += k == missing_code;
        changed += released != k;
        out[i] = outside ? codes[i] : released;
    }
    counts[0] += missing;
    counts[1] += changed;
    return (int)bad;
}

/* form8_loop by the double estimate, compiled for each vector width the processor may have. */
VECTOR_CLONES static int
diagonal_chunk(const intp *restrict codes, const uint64_t *restrict w, const int64_t *restrict keep,
               const int64_t *restrict weight, const double *restrict inv_weight, intp *restrict out, Py_ssize_t n,
               Py_ssize_t s, intp missing_code, int shift, Py_ssize_t *restrict counts)
{
    return form8_loop(codes, w, keep, weight, inv_weight, NULL, out, n, s, missing_code, shift, counts, 0);
}

/* form8_loop by the exact multiply. */
static int
diagonal_chunk_exact(const intp *restrict codes, const uint64_t *restrict w, const int64_t *restrict keep,
                     const uint64_t *restrict rows, intp *restrict out, Py_ssize_t n, Py_ssize_t s,
                     intp missing_code, int shift, Py_ssize_t *restrict counts)
{
    return form8_loop(codes, w, keep, NULL, NULL, rows, out, n, s, missing_code, shift, counts, 1);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(_WIN32)
#define DRAWS_HAVE_AVX2 1
#include <immintrin.h>
#define DRAWS_AVX2_INLINE __attribute__((target("avx2"), always_inline)) static inline

/* The high halves of the 64 x 64 -> 128-bit products of each lane of a and b, from four 32 x 32-bit products
 * (as philox_mulhilo4, with both factors varying). */
DRAWS_AVX2_INLINE __m256i
diagonal_mulhi4(__m256i a, __m256i b)
{
    const __m256i low32 = _mm256_set1_epi64x(0xFFFFFFFF);
    __m256i a_hi = _mm256_srli_epi64(a, 32), b_hi = _mm256_srli_epi64(b, 32);
    __m256i ll = _mm256_mul_epu32(a, b), lh = _mm256_mul_epu32(a, b_hi);
    __m256i hl = _mm256_mul_epu32(a_hi, b), hh = _mm256_mul_epu32(a_hi, b_hi);
    __m256i t = _mm256_add_epi64(hl, _mm256_srli_epi64(ll, 32));
    __m256i w = _mm256_add_epi64(lh, _mm256_and_si256(t, low32));
    return _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(t, 32)), _mm256_srli_epi64(w, 32));
}

/* The counts of an AVX2 draw loop over ``done`` values, from its lanes' counts of missing codes and of values
 * released as they were, added to counts[0] and counts[1] (changed: done less the same); whether a lane
 * marked a code outside -1..S-1 (``bad``). */
DRAWS_AVX2_INLINE int
lane_counts(__m256i missing, __m256i same, __m256i bad, Py_ssize_t done, Py_ssize_t *counts)
{
    uint64_t m[4], u[4], o[4];
    _mm256_storeu_si256((__m256i *)m, missing);
    _mm256_storeu_si256((__m256i *)u, same);
    _mm256_storeu_si256((__m256i *)o, bad);
    counts[0] += (Py_ssize_t)(m[0] + m[1] + m[2] + m[3]);
    counts[1] += done - (Py_ssize_t)(u[0] + u[1] + u[2] + u[3]);
    return (o[0] | o[1] | o[2] | o[3]) != 0;
}

/* Form (8) on n values as diagonal_chunk_exact, four values to a register.  rows holds a record of four words
 * per table entry (entry 0 for code -1): K_k, m_k, l_k and a word of padding, so that four values' entries are
 * four loads and a transpose; t = floor(r / W_k) is the high half of (r 2^shift) m_k shifted right by l_k, as
 * in diagonal_chunk_exact.  The last n mod 4 values go through
 * diagonal_chunk_exact.  Signed comparisons serve: codes outside -1..S-1 are caught by comparing k + 1
 * as unsigned, every other operand is below 2^63. */
__attribute__((target("avx2"))) static int
diagonal_chunk_avx2(const intp *restrict codes, const uint64_t *restrict w, const uint64_t *restrict rows,
                    const Tables *t, intp *restrict out, Py_ssize_t n, Py_ssize_t *restrict counts)
{
    const __m256i one = _mm256_set1_epi64x(1), ones = _mm256_set1_epi64x(-1);
    const __m256i flip = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
    const __m256i top = _mm256_xor_si256(_mm256_set1_epi64x((long long)t->s), flip);
    const __m256i cap = _mm256_set1_epi64x((long long)(t->s - 2));
    const __m256i missing_code = _mm256_set1_epi64x((long long)t->missing_code);
    const __m128i shift = _mm_cvtsi32_si128(t->shift);
    __m256i missing = _mm256_setzero_si256(), same = _mm256_setzero_si256(), bad = _mm256_setzero_si256();
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i code = _mm256_loadu_si256((const __m256i *)(codes + i));
        __m256i at = _mm256_add_epi64(code, one);
        __m256i outside = _mm256_cmpgt_epi64(_mm256_xor_si256(at, flip), top);
        bad = _mm256_or_si256(bad, outside);
        at = _mm256_andnot_si256(outside, at);
        __m256i k = _mm256_or_si256(code, outside); /* -1 where outside */
        uint64_t e[4];
        _mm256_storeu_si256((__m256i *)e, at);
        __m256i r0 = _mm256_loadu_si256((const __m256i *)(rows + 4 * e[0]));
        __m256i r1 = _mm256_loadu_si256((const __m256i *)(rows + 4 * e[1]));
        __m256i r2 = _mm256_loadu_si256((const __m256i *)(rows + 4 * e[2]));
        __m256i r3 = _mm256_loadu_si256((const __m256i *)(rows + 4 * e[3]));
        __m256i a = _mm256_unpacklo_epi64(r0, r1), b = _mm256_unpacklo_epi64(r2, r3); /* K and l of 0, 1 | 2, 3 */
        __m256i c = _mm256_unpackhi_epi64(r0, r1), d = _mm256_unpackhi_epi64(r2, r3); /* m and padding */
        __m256i kk = _mm256_permute2x128_si256(a, b, 0x20);
        __m256i ell = _mm256_permute2x128_si256(a, b, 0x31);
        __m256i magic = _mm256_permute2x128_si256(c, d, 0x20);
        __m256i x = _mm256_srl_epi64(_mm256_loadu_si256((const __m256i *)(w + i)), shift);
        __m256i kept = _mm256_cmpgt_epi64(kk, x);
        __m256i r = _mm256_andnot_si256(kept, _mm256_sub_epi64(x, kk));
        __m256i q = _mm256_srlv_epi64(diagonal_mulhi4(_mm256_sll_epi64(r, shift), magic), ell);
        q = _mm256_blendv_epi8(q, cap, _mm256_cmpgt_epi64(q, cap));
        q = _mm256_sub_epi64(q, _mm256_xor_si256(_mm256_cmpgt_epi64(k, q), ones)); /* + [q >= k] */
        __m256i released = _mm256_blendv_epi8(q, k, kept);
        missing = _mm256_sub_epi64(missing, _mm256_cmpeq_epi64(k, missing_code));
        same = _mm256_sub_epi64(same, _mm256_cmpeq_epi64(released, k));
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_blendv_epi8(released, code, outside));
    }
    int outside_any = lane_counts(missing, same, bad, i, counts);
    if (i < n) {
        outside_any |= diagonal_chunk_exact(codes + i, w + i, t->keep, t->rows, out + i, n - i, t->s,
                                            t->missing_code, t->shift, counts);
    }
    return outside_any;
}
#endif

/* Which loop the form (8) draw runs: diagonal_chunk, whose quotient is a double estimate corrected in
 * integers (vectorised where the processor has AVX-512), diagonal_chunk_exact, whose quotient is exact by a
 * multiply, or diagonal_chunk_avx2, the same in AVX2 registers.  All release the same codes (each computes
 * floor(r / W_k)); the fastest on this processor is chosen when the module loads, and tests run each
 * (_diagonal_path). */
enum { DIAGONAL_ESTIMATE = 0, DIAGONAL_MULTIPLY = 1, DIAGONAL_AVX2 = 2 };
static int diagonal_path = DIAGONAL_MULTIPLY;

static int
diagonal_run(const Tables *t, const intp *codes, const uint64_t *w, intp *out, Py_ssize_t n, Py_ssize_t *counts)
{
#ifdef DRAWS_HAVE_AVX2
    if (diagonal_path == DIAGONAL_AVX2) {
        return diagonal_chunk_avx2(codes, w, t->rows, t, out, n, counts);
    }
#endif
    if (diagonal_path == DIAGONAL_MULTIPLY) {
        return diagonal_chunk_exact(codes, w, t->keep, t->rows, out, n, t->s, t->missing_code, t->shift, counts);
    }
    return diagonal_chunk(codes, w, t->keep, t->weight, t->inv_weight, out, n, t->s, t->missing_code, t->shift,
                          counts);
}

/* Whether the AVX2 loops of the draws (diagonal_chunk_avx2, alias_chunk_avx2) run here. */
static int
avx2_supported(void)
{
#ifdef DRAWS_HAVE_AVX2
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

/* Whether diagonal_chunk runs vectorised here: its x86-64-v4 clone (AVX-512 F, BW, CD, DQ and VL). */
static int
diagonal_vectorised(void)
{
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && !defined(__clang__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

/* _diagonal_path([name]): the loop of the form (8) draw ("estimate", "multiply" or "avx2"); with a name, take it
 * from now on and return the one taken before.  For tests and benchmarks: the first two run on every processor,
 * "avx2" where it has AVX2. */
static PyObject *
diagonal_path_py(PyObject *self, PyObject *args)
{
    static const char *const names[] = {"estimate", "multiply", "avx2"};
    static int (*const supported[])(void) = {supported_everywhere, supported_everywhere, avx2_supported};
    return switch_path(args, names, supported, 3, &diagonal_path, "form (8) loop");
}

/* exact_reciprocals(weight int64[S], bits, magic uint64[S], magic_shift int64[S]): for each W = weight[k] > 0
 * (at most 2^63), with l = ceil(log2 W), m = ceil(2^(bits + l) / W) into magic and l into magic_shift, so that
 * floor(r / W) = floor(r m / 2^(bits + l)), the high half of (r 2^(64 - bits)) m shifted right by l, for every
 * 0 <= r < 2^bits (Granlund and Montgomery 1994, Theorem 4.2: m W = 2^(bits + l) + e with 0 <= e < W <= 2^l, so
 * r m / 2^(bits + l) = r / W + r e / (W 2^(bits + l)) falls short of floor(r / W) + 1 by more than zero).
 * m <= 2^(bits + 1) <= 2^63.  W = 0 gives m = 0 and l = 0 (a row that moves nothing).  bits is 1 to 62; a
 * weight outside 0 .. 2^63 is refused. */
static PyObject *
exact_reciprocals(PyObject *self, PyObject *args)
{
    Py_buffer b[3];
    int bits;
    if (!PyArg_ParseTuple(args, "y*iw*w*", &b[0], &bits, &b[1], &b[2])) {
        return NULL;
    }
    Py_ssize_t s = b[0].len / (Py_ssize_t)sizeof(int64_t);
    int ok = bits >= 1 && bits <= 62 && check_len(&b[0], s, sizeof(int64_t), "weight") == 0 &&
             check_len(&b[1], s, sizeof(uint64_t), "magic") == 0 &&
             check_len(&b[2], s, sizeof(int64_t), "magic_shift") == 0;
    if (!ok && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "exact_reciprocals: bits must be 1 to 62");
    }
    const int64_t *weight = b[0].buf;
    uint64_t *magic = b[1].buf;
    int64_t *magic_shift = b[2].buf;
    for (Py_ssize_t k = 0; ok && k < s; k++) {
        if (weight[k] < 0) {
            PyErr_Format(PyExc_ValueError, "exact_reciprocals: weight %zd is negative", k);
            ok = 0;
            break;
        }
        uint64_t d = (uint64_t)weight[k];
        int l = 0;
        while (l < 63 && ((uint64_t)1 << l) < d) {
            l++;
        }
        unsigned __int128 top = (unsigned __int128)1 << (bits + l);
        magic[k] = d == 0 ? 0 : (uint64_t)((top + d - 1) / d);
        magic_shift[k] = d == 0 ? 0 : l;
    }
    release(b, 3);
    if (!ok) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The loop of draw_alias on n values (see draw_alias); a code outside -1..S-1 is written out as it is,
 * and returns 1 if there is one, else 0. */
static int
alias_chunk(const Tables *t, const intp *codes, const uint64_t *w, intp *out, Py_ssize_t n, Py_ssize_t *counts)
{
    const int64_t *keep = t->keep, *cells = t->cells;
    const Py_ssize_t s = t->s;
    const int bits = t->bits, shift = t->shift;
    const int64_t mask = ((int64_t)1 << bits) - 1;
    const intp missing_code = t->missing_code;
    Py_ssize_t missing = 0, changed = 0;
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        intp k = codes[i];
        if (k < 0 || k >= s) {
            bad |= k != -1;
            missing += k == missing_code;
            out[i] = k;
            continue;
        }
        missing += k == missing_code;
        int64_t x = (int64_t)(w[i] >> shift), kk = keep[k];
        if (x < kk) { /* the table read of a move is worth a branch */
            out[i] = k;
            continue;
        }
        int64_t r = x - kk, cell = r & mask, entry = cells[((int64_t)k << bits) + cell];
        intp j = (r >> bits) < (entry >> bits) ? (intp)cell : (intp)(entry & mask);
        changed += j != k;
        out[i] = j;
    }
    counts[0] += missing;
    counts[1] += changed;
    return bad;
}

#ifdef DRAWS_HAVE_AVX2
/* alias_chunk four values at a time in AVX2 registers: K_k and the cell's entry by gathers, the keep test,
 * the cell's threshold and the choice between the cell and its alias by comparisons and blends, without the
 * scalar loop's branch (a move is a coin toss that a branch predictor gets wrong once in five values).  A
 * value that is kept or outside -1..S-1 still reads an entry of its row (row 0 when outside), which it does
 * not use.  The last n mod 4 values go through alias_chunk. */
__attribute__((target("avx2"))) static int
alias_chunk_avx2(const Tables *t, const intp *restrict codes, const uint64_t *restrict w, intp *restrict out,
                 Py_ssize_t n, Py_ssize_t *restrict counts)
{
    const __m256i zero = _mm256_setzero_si256(), ones = _mm256_set1_epi64x(-1);
    const __m256i size = _mm256_set1_epi64x((long long)t->s);
    const __m256i mask = _mm256_set1_epi64x(((long long)1 << t->bits) - 1);
    const __m256i missing_code = _mm256_set1_epi64x((long long)t->missing_code);
    const __m128i shift = _mm_cvtsi32_si128(t->shift), bits = _mm_cvtsi32_si128(t->bits);
    const long long *keep = (const long long *)t->keep, *cells = (const long long *)t->cells;
    __m256i missing = zero, same = zero, bad = zero;
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i k = _mm256_loadu_si256((const __m256i *)(codes + i));
        __m256i inside = _mm256_andnot_si256(_mm256_cmpgt_epi64(zero, k), _mm256_cmpgt_epi64(size, k));
        bad = _mm256_or_si256(bad, _mm256_andnot_si256(_mm256_or_si256(inside, _mm256_cmpeq_epi64(k, ones)), ones));
        __m256i row = _mm256_and_si256(k, inside);
        __m256i kk = _mm256_i64gather_epi64(keep, row, 8);
        __m256i x = _mm256_srl_epi64(_mm256_loadu_si256((const __m256i *)(w + i)), shift);
        __m256i moved = _mm256_andnot_si256(_mm256_cmpgt_epi64(kk, x), inside);
        __m256i r = _mm256_sub_epi64(x, kk), cell = _mm256_and_si256(r, mask);
        __m256i entry = _mm256_i64gather_epi64(cells, _mm256_add_epi64(_mm256_sll_epi64(row, bits), cell), 8);
        __m256i below = _mm256_cmpgt_epi64(_mm256_srl_epi64(entry, bits), _mm256_srl_epi64(r, bits));
        __m256i j = _mm256_blendv_epi8(_mm256_and_si256(entry, mask), cell, below);
        __m256i released = _mm256_blendv_epi8(k, j, moved);
        missing = _mm256_sub_epi64(missing, _mm256_cmpeq_epi64(k, missing_code));
        same = _mm256_sub_epi64(same, _mm256_cmpeq_epi64(released, k));
        _mm256_storeu_si256((__m256i *)(out + i), released);
    }
    int outside = lane_counts(missing, same, bad, i, counts);
    if (i < n) {
        outside |= alias_chunk(t, codes + i, w + i, out + i, n - i, counts);
    }
    return outside;
}
#endif

/* Which loop draw_alias runs: alias_chunk, or alias_chunk_avx2 where the processor has AVX2 (the same codes);
 * tests run both (_alias_path). */
enum { ALIAS_SCALAR = 0, ALIAS_AVX2 = 1 };
static int alias_path = ALIAS_SCALAR;

static int
alias_run(const Tables *t, const intp *codes, const uint64_t *w, intp *out, Py_ssize_t n, Py_ssize_t *counts)
{
#ifdef DRAWS_HAVE_AVX2
    if (alias_path == ALIAS_AVX2) {
        return alias_chunk_avx2(t, codes, w, out, n, counts);
    }
#endif
    return alias_chunk(t, codes, w, out, n, counts);
}

/* _alias_path([name]): the loop of the alias draw ("scalar" or "avx2"); with a name, take it from now on and
 * return the one taken before.  For tests and benchmarks. */
static PyObject *
alias_path_py(PyObject *self, PyObject *args)
{
    static const char *const names[] = {"scalar", "avx2"};
    static int (*const supported[])(void) = {supported_everywhere, avx2_supported};
    return switch_path(args, names, supported, 2, &alias_path, "alias loop");
}

/* The loop of draw_cumulative on n values (see draw_cumulative). */
static int
cumulative_run(const Tables *t, const intp *codes, const uint64_t *w, intp *out, Py_ssize_t n, Py_ssize_t *counts)
{
    const int64_t *keep = t->keep, *cells = t->cells;
    const Py_ssize_t s = t->s;
    const int shift = t->shift;
    const intp missing_code = t->missing_code;
    Py_ssize_t missing = 0, changed = 0;
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        intp k = codes[i];
        if (k < 0 || k >= s) {
            bad |= k != -1;
            missing += k == missing_code;
            out[i] = k;
            continue;
        }
        missing += k == missing_code;
        int64_t x = (int64_t)(w[i] >> shift), kk = keep[k];
        if (x < kk) {
            out[i] = k;
            continue;
        }
        int64_t r = x - kk;
        const int64_t *row = cells + (int64_t)k * s;
        Py_ssize_t lo = 0, hi = s - 1; /* the first j with row[j] > r: row[s - 1] is the row's move units */
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (row[mid] > r) {
                hi = mid;
            }
            else {
                lo = mid + 1;
            }
        }
        changed += lo != k;
        out[i] = lo;
    }
    counts[0] += missing;
    counts[1] += changed;
    return bad;
}

/* The first position of a code outside -1..S-1, or -1. */
static Py_ssize_t
first_outside(const intp *codes, Py_ssize_t n, Py_ssize_t s)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (codes[i] < -1 || codes[i] >= s) {
            return i;
        }
    }
    return -1;
}

typedef int (*Run)(const Tables *, const intp *, const uint64_t *, intp *, Py_ssize_t, Py_ssize_t *);

/* What the draws share: the codes b[0], the words (their view in b[1]), ``tables`` buffers from b[2] that
 * the caller checked (``ok``), then ``out``; draws chunk by chunk with ``run`` without the GIL and gives
 * every buffer back.  Returns (the position of the first code outside -1..S-1 or -1, the number of codes
 * equal to missing_code, the number changed), or NULL with an exception. */
static PyObject *
draw(Run run, const Tables *t, Py_buffer *b, int tables, PyObject *words, int kind, int ok)
{
    Py_buffer *out_view = &b[2 + tables];
    Py_ssize_t n = b[0].len / (Py_ssize_t)sizeof(intp);
    int have_view = 0;
    Words src;
    PyObject *result = NULL;
    if (ok && t->shift < 2) {
        PyErr_SetString(PyExc_ValueError, "draws use at most 62 bits of a word");
        ok = 0;
    }
    if (ok && get_words(words, kind, n, &src, &b[1], &have_view) == 0 &&
        check_len(&b[0], n, sizeof(intp), "codes") == 0 && check_len(out_view, n, sizeof(intp), "out") == 0) {
        const intp *codes = b[0].buf;
        intp *out = out_view->buf;
        Py_ssize_t bad = -1, counts[2] = {0, 0};
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t first = 0; first < n; first += CHUNK) {
            Py_ssize_t m = n - first < CHUNK ? n - first : CHUNK;
            for (Py_ssize_t i = first + CHUNK; i < first + 2 * CHUNK && i < n; i += 8) { /* the next chunk's */
                __builtin_prefetch(codes + i);
                __builtin_prefetch(out + i, 1);
            }
            if (run(t, codes + first, words_of(&src, first, m), out + first, m, counts) && bad < 0) {
                bad = first + first_outside(out + first, m, t->s);
            }
        }
        Py_END_ALLOW_THREADS
        result = Py_BuildValue("nnn", bad, counts[0], counts[1]);
    }
    PyBuffer_Release(&b[0]);
    release(b + 2, tables + 1);
    if (have_view) {
        PyBuffer_Release(&b[1]);
    }
    return result;
}

/* draw_diagonal(codes intp[n], words, kind, keep int64[S + 1], weight int64[S + 1], inv_weight
 * double[S + 1], rows uint64[4 (S + 1)], out intp[n], missing_code, shift): form (8) in integers.  With
 * x = word >> shift, a value of category k is kept when x < K_k; else r = x - K_k, t = floor(r / W_k) capped
 * at S - 2, released t + [t >= k] (the cap gives the last other category the units past (S - 1) W_k).  rows
 * holds a record per entry for the exact quotients: K_k, then m_k and l_k of exact_reciprocals of W_k for
 * 64 - shift bits, then a word of padding; l_k above 63 is refused.  ``words`` of ``kind`` (get_words):
 * uint64[n], a Philox state (advanced past the n words drawn from it), or the capsule of a bit generator (its
 * lock held by the caller).  The tables are shifted by one: entry 0 is for code -1 (missing), K = 2^(64 - shift)
 * and W = 0, so that it is kept without a branch.  ``out`` may be ``codes``.  Returns what draw() returns. */
static PyObject *
draw_diagonal(PyObject *self, PyObject *args)
{
    Py_buffer b[7];
    PyObject *words;
    int kind;
    Tables t = {0};
    if (!PyArg_ParseTuple(args, "y*Oiy*y*y*y*w*ni", &b[0], &words, &kind, &b[2], &b[3], &b[4], &b[5], &b[6],
                          &t.missing_code, &t.shift)) {
        return NULL;
    }
    t.s = b[2].len / (Py_ssize_t)sizeof(int64_t) - 1;
    t.keep = b[2].buf;
    t.weight = b[3].buf;
    t.inv_weight = b[4].buf;
    t.rows = b[5].buf;
    int ok = t.s >= 1 && check_len(&b[3], t.s + 1, sizeof(int64_t), "weight") == 0 &&
             check_len(&b[4], t.s + 1, sizeof(double), "inv_weight") == 0 &&
             check_len(&b[5], 4 * (t.s + 1), sizeof(uint64_t), "rows") == 0;
    if (!ok && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "draw_diagonal: no categories");
    }
    for (Py_ssize_t k = 0; ok && k <= t.s; k++) {
        if (t.rows[4 * k + 2] > 63) {
            PyErr_Format(PyExc_ValueError, "draw_diagonal: the shift of row %zd passes 63", k);
            ok = 0;
        }
    }
    return draw(diagonal_run, &t, b, 4, words, kind, ok);
}

/* draw_alias(codes, words, kind, keep int64[S], cells int64[S 2^bits], out, missing_code, shift, bits):
 * any matrix, kept when x < K_k; else r = x - K_k, whose low ``bits`` bits pick a cell c of row k and
 * whose other bits y = r >> bits are uniform on the cell's units C_k = (2^(64 - shift) - K_k) / 2^bits;
 * the cell, packed as (threshold << bits) | alias, releases c when y < threshold, else its alias.
 * ``words`` as for draw_diagonal.  Code -1 stays -1; ``out`` may be ``codes``.  Returns what draw()
 * returns. */
static PyObject *
draw_alias(PyObject *self, PyObject *args)
{
    Py_buffer b[5];
    PyObject *words;
    int kind;
    Tables t = {0};
    if (!PyArg_ParseTuple(args, "y*Oiy*y*w*nii", &b[0], &words, &kind, &b[2], &b[3], &b[4], &t.missing_code,
                          &t.shift, &t.bits)) {
        return NULL;
    }
    t.s = b[2].len / (Py_ssize_t)sizeof(int64_t);
    t.keep = b[2].buf;
    t.cells = b[3].buf;
    int ok = t.bits >= 0 && t.bits < 31 && ((Py_ssize_t)1 << t.bits) >= t.s &&
             check_len(&b[3], t.s << t.bits, sizeof(int64_t), "cells") == 0;
    if (!ok && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "draw_alias: 2^bits must cover the categories");
    }
    return draw(alias_run, &t, b, 2, words, kind, ok);
}

/* draw_cumulative(codes, words, kind, keep int64[S], cumulative int64[S S], out, missing_code, shift): any
 * matrix, kept when x < K_k; else r = x - K_k and the released category is the first j whose cumulative
 * move units cumulative[k, j] (the diagonal adding none) exceed r, found by bisection.  ``words`` as for
 * draw_diagonal.  Returns what draw() returns. */
static PyObject *
draw_cumulative(PyObject *self, PyObject *args)
{
    Py_buffer b[5];
    PyObject *words;
    int kind;
    Tables t = {0};
    if (!PyArg_ParseTuple(args, "y*Oiy*y*w*ni", &b[0], &words, &kind, &b[2], &b[3], &b[4], &t.missing_code,
                          &t.shift)) {
        return NULL;
    }
    t.s = b[2].len / (Py_ssize_t)sizeof(int64_t);
    t.keep = b[2].buf;
    t.cells = b[3].buf;
    int ok = check_len(&b[3], t.s * t.s, sizeof(int64_t), "cumulative") == 0;
    return draw(cumulative_run, &t, b, 2, words, kind, ok);
}

/* alias_cells(weights int64[S S], S, bits, out int64[S 2^bits]): each row's alias table of its move units
 * (the diagonal's weight zero), in integers: the row's total must be a multiple of 2^bits, each of the
 * 2^bits cells holds C = total / 2^bits units (Vose 1991: a cell below C is topped up from one above).
 * A cell is packed as (threshold << bits) | alias.  A row of total zero is never read and gets cells of
 * threshold zero.  Returns None, or raises ValueError when a total is not a multiple of 2^bits. */
static PyObject *
alias_cells(PyObject *self, PyObject *args)
{
    Py_buffer b[2];
    Py_ssize_t s;
    int bits;
    if (!PyArg_ParseTuple(args, "y*niw*", &b[0], &s, &bits, &b[1])) {
        return NULL;
    }
    Py_ssize_t m = (Py_ssize_t)1 << (bits < 0 || bits > 30 ? 0 : bits);
    if (bits < 0 || bits > 30 || m < s || check_len(&b[0], s * s, sizeof(int64_t), "weights") < 0 ||
        check_len(&b[1], s * m, sizeof(int64_t), "cells") < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "alias_cells: 2^bits must cover the categories");
        }
        release(b, 2);
        return NULL;
    }
    int64_t *scaled = PyMem_Malloc(m * sizeof(int64_t));
    Py_ssize_t *small = PyMem_Malloc(m * sizeof(Py_ssize_t)), *large = PyMem_Malloc(m * sizeof(Py_ssize_t));
    int fail = scaled == NULL || small == NULL || large == NULL ? 1 : 0;
    const int64_t *weights = b[0].buf;
    int64_t *cells = b[1].buf;
    for (Py_ssize_t k = 0; k < s && !fail; k++) {
        int64_t total = 0;
        for (Py_ssize_t j = 0; j < m; j++) {
            scaled[j] = j < s ? weights[k * s + j] : 0;
            total += scaled[j];
        }
        int64_t *row = cells + k * m;
        if (total & (m - 1)) {
            fail = 2;
            break;
        }
        const int64_t c = total >> bits;
        Py_ssize_t ns = 0, nl = 0;
        for (Py_ssize_t j = 0; j < m; j++) {
            row[j] = ((int64_t)c << bits) | (j < s ? j : 0); /* full: its own category (a padding cell: 0) */
            if (scaled[j] < c) {
                small[ns++] = j;
            }
            else {
                large[nl++] = j;
            }
        }
        while (ns > 0 && nl > 0) {
            Py_ssize_t lo = small[--ns], hi = large[--nl];
            row[lo] = (scaled[lo] << bits) | hi;
            scaled[hi] -= c - scaled[lo];
            if (scaled[hi] < c) {
                small[ns++] = hi;
            }
            else {
                large[nl++] = hi;
            }
        }
        /* exact arithmetic: whatever is left holds exactly c units */
        while (nl > 0) {
            fail |= scaled[large[--nl]] != c ? 2 : 0;
        }
        while (ns > 0) {
            fail |= scaled[small[--ns]] != c ? 2 : 0;
        }
    }
    PyMem_Free(scaled);
    PyMem_Free(small);
    PyMem_Free(large);
    release(b, 2);
    if (fail == 1) {
        return PyErr_NoMemory();
    }
    if (fail) {
        PyErr_SetString(PyExc_ValueError, "alias_cells: a row's units are not a multiple of 2^bits");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ UTF-8 values */

/* Loops over Arrow values ask for the lines PREFETCH_VALUES values (offsets, codes) and PREFETCH_BYTES bytes
 * (text) ahead of the one they read or write: the processor's own prefetcher, on this machine kind, left a
 * third of the time of a text lookup waiting for the next offsets and bytes (both distances measured from
 * 64 to 512 values and 512 to 4096 bytes: all about as good).  utf8_decode, which reads codes and writes
 * offsets and bytes in order, asks for nothing: its three requests per value cost a tenth of its time. */
#define PREFETCH_VALUES 256
#define PREFETCH_BYTES 2048

/* Label bytes are followed by at least PAD bytes (the caller pads them), and so is the output of
 * utf8_decode, so that a short value is read or written as whole words: no branch on its length, whose
 * changes from value to value a processor cannot predict. */
#define PAD 24

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

/* The hash of a value of up to 24 bytes: short_hash plus its third word's product (zero up to 16 bytes,
 * where it is short_hash itself). */
static inline uint64_t
hash3(uint64_t w0, uint64_t w1, uint64_t w2, int64_t len, uint64_t seed)
{
    return short_hash(w0, w1, len, seed) + w2 * 0xd6e8feb86659fd93ULL;
}

static uint64_t
hash_value(const unsigned char *p, int64_t len, uint64_t seed, const unsigned char *end)
{
    uint64_t h = hash3(word(p, len, 0, end), word(p, len, 1, end), word(p, len, 2, end), len, seed);
    for (int64_t i = 3; i < (len + 7) / 8; i++) {
        h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL + word(p, len, i, end) * 0x94d049bb133111ebULL;
    }
    return h;
}

static inline uint64_t
slot_of(uint64_t h, int shift)
{
    return h >> shift;
}

/* Whether the len bytes at a (readable up to a_end) equal those at b (up to b_end), from word ``from``. */
static inline int
same_value(const unsigned char *a, const unsigned char *a_end, const unsigned char *b, const unsigned char *b_end,
           int64_t len, int64_t from)
{
    for (int64_t i = from; i < (len + 7) / 8; i++) {
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

/* A slot of the label table: a label's first two words (zero-padded), its length and its code; an empty
 * slot has length and code -1, so that no value matches it.  32 bytes: a lookup reads one cache line. */
typedef struct {
    uint64_t w0, w1;
    int64_t len, code;
} Slot;

/* Hash seeds that utf8_index tries. */
#define SEEDS 32

/* Place the labels that ``use`` marks in ``slots`` (m of them, index bits 64 - shift) by open addressing
 * with the hash of ``seed``; return how many slots past their own they landed in all. */
static uint64_t
place(const unsigned char *data, const unsigned char *data_end, const int64_t *offsets, const unsigned char *use,
      Py_ssize_t s, Slot *slots, Py_ssize_t m, int shift, uint64_t seed)
{
    uint64_t displaced = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        slots[j] = (Slot){0, 0, -1, -1};
    }
    for (Py_ssize_t i = 0; i < s; i++) {
        if (!use[i]) {
            continue;
        }
        const unsigned char *p = data + offsets[i];
        int64_t len = offsets[i + 1] - offsets[i];
        uint64_t at = slot_of(hash_value(p, len, seed, data_end), shift);
        while (slots[at].code >= 0) {
            at = (at + 1) & (uint64_t)(m - 1);
            displaced++;
        }
        slots[at] = (Slot){word(p, len, 0, data_end), word(p, len, 1, data_end), len, i};
    }
    return displaced;
}

/* utf8_index(label_offsets int64[S + 1], label_data (padded), use uint8[S], slots uint64[4 m]): fill the
 * table ``slots`` (m Slots, m a power of two above S) with the labels that ``use`` marks, by open
 * addressing.  Returns the hash seed: the first that places every label in its own slot, else the one
 * of SEEDS that displaces the fewest (a displaced label costs its values a second probe, which the
 * processor mispredicts), so that no set of labels makes lookups slow. */
static PyObject *
utf8_index(PyObject *self, PyObject *args)
{
    Py_buffer b[4];
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &b[0], &b[1], &b[2], &b[3])) {
        return NULL;
    }
    Py_ssize_t s = b[0].len / (Py_ssize_t)sizeof(int64_t) - 1, m = b[3].len / (Py_ssize_t)sizeof(Slot);
    const int64_t *offsets = b[0].buf;
    if (s < 0 || m <= s || m < 2 || (m & (m - 1)) || b[3].len != m * (Py_ssize_t)sizeof(Slot) || b[2].len != s ||
        b[1].len < offsets[s] + PAD) {
        release(b, 4);
        PyErr_SetString(PyExc_ValueError, "utf8_index: inconsistent buffers");
        return NULL;
    }
    const unsigned char *data = b[1].buf, *use = b[2].buf, *data_end = data + b[1].len;
    Slot *slots = b[3].buf;
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
    release(b, 4);
    return PyLong_FromUnsignedLongLong(best_seed);
}

/* The lookup of utf8_encode, inlined for each offset width, with and without a validity bitmap. */
typedef struct {
    const unsigned char *data, *label_data, *label_end, *valid;
    const int64_t *label_offsets;
    const Slot *slots;
    int64_t data_len;
    uint64_t mask, seed;
    int shift;
    int short_labels; /* every label has at most 16 bytes (and SHORT_LOADS) */
    intp missing_code, unknown_code;
} Lookup;

/* The slot of the len bytes at p (readable up to ``end``): a label's, or an empty one. */
static inline const Slot *
find_slot(const Lookup *t, const unsigned char *p, int64_t len, const unsigned char *end)
{
    uint64_t w0 = word(p, len, 0, end), w1 = word(p, len, 1, end);
    uint64_t at = slot_of(hash_value(p, len, t->seed, end), t->shift);
    for (;;) {
        const Slot *slot = t->slots + at;
        if (slot->code < 0 ||
            (slot->w0 == w0 && slot->w1 == w1 && slot->len == len &&
             same_value(p, end, t->label_data + t->label_offsets[slot->code], t->label_end, len, 2))) {
            return slot;
        }
        at = (at + 1) & t->mask;
    }
}

/* Set the label table of ``t`` from utf8_index's buffers: 0, or -1 with ValueError if they disagree. */
static int
label_table(Lookup *t, Py_buffer *offsets, Py_buffer *data, Py_buffer *slots, uint64_t seed)
{
    Py_ssize_t m = slots->len / (Py_ssize_t)sizeof(Slot), s = offsets->len / (Py_ssize_t)sizeof(int64_t) - 1;
    if (s < 0 || m <= s || m < 2 || (m & (m - 1)) || slots->len != m * (Py_ssize_t)sizeof(Slot) ||
        data->len < ((const int64_t *)offsets->buf)[s] + PAD) {
        PyErr_SetString(PyExc_ValueError, "inconsistent label table");
        return -1;
    }
    t->label_data = data->buf;
    t->label_end = t->label_data + data->len;
    t->label_offsets = offsets->buf;
    t->slots = slots->buf;
    t->mask = (uint64_t)(m - 1);
    t->seed = seed;
    t->shift = 64 - table_bits(m);
    t->short_labels = SHORT_LOADS;
    for (Py_ssize_t i = 0; i < s && t->short_labels; i++) {
        t->short_labels = t->label_offsets[i + 1] - t->label_offsets[i] <= 16;
    }
    return 0;
}

/* The slot of a value of up to 16 bytes whose zero-padded words are w0 and w1. */
static inline __attribute__((always_inline)) const Slot *
probe2(const Lookup *t, uint64_t w0, uint64_t w1, int64_t len)
{
    uint64_t at = slot_of(short_hash(w0, w1, len, t->seed), t->shift);
    for (;;) {
        const Slot *slot = t->slots + at;
        if ((slot->code < 0) | ((slot->w0 == w0) & (slot->w1 == w1) & (slot->len == len))) {
            return slot;
        }
        at = (at + 1) & t->mask;
    }
}

/* The slot of a value of 17 to 24 bytes whose zero-padded words are w0, w1 and w2; the third word is
 * compared with the label's own. */
static inline __attribute__((always_inline)) const Slot *
probe3(const Lookup *t, uint64_t w0, uint64_t w1, uint64_t w2, int64_t len)
{
    uint64_t at = slot_of(hash3(w0, w1, w2, len, t->seed), t->shift);
    for (;;) {
        const Slot *slot = t->slots + at;
        if (slot->code < 0) {
            return slot;
        }
        if ((slot->w0 == w0) & (slot->w1 == w1) & (slot->len == len)) {
            uint64_t own; /* the label's third word: its bytes are followed by PAD */
            memcpy(&own, t->label_data + t->label_offsets[slot->code] + 16, 8);
#if SHORT_LOADS
            own &= KEEP0[len - 16];
#endif
            if (own == w2) {
                return slot;
            }
        }
        at = (at + 1) & t->mask;
    }
}

#if SHORT_LOADS && defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#define SSE_PROBE 1
/* KEEP16[len]: KEEP0[len] then KEEP1[len], the bytes of 16 that a value of len bytes keeps, as one load. */
static uint64_t KEEP16[17][2];

/* probe2 of a value of len bytes whose first ``keep`` (at most 16) are the 16 bytes at p (readable) masked,
 * compared with a slot's first 16 bytes as one register: fewer instructions than two words compared one by
 * one.  keep is len for a value of up to 16 bytes. */
static inline __attribute__((always_inline)) const Slot *
probe2_bytes(const Lookup *t, const unsigned char *p, uint64_t keep, int64_t len)
{
    __m128i v = _mm_and_si128(_mm_loadu_si128((const __m128i *)p), _mm_loadu_si128((const __m128i *)KEEP16[keep]));
    uint64_t w0 = (uint64_t)_mm_cvtsi128_si64(v), w1 = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
    uint64_t at = slot_of(short_hash(w0, w1, len, t->seed), t->shift);
    for (;;) {
        const Slot *slot = t->slots + at;
        int same = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_loadu_si128((const __m128i *)slot))) == 0xffff;
        if ((slot->code < 0) | (same & (slot->len == len))) {
            return slot;
        }
        at = (at + 1) & t->mask;
    }
}
#endif

/* The slot of the len bytes at p, readable up to ``end``: two or three masked loads when the value is
 * short and that many words can be read, else word by word. */
static inline __attribute__((always_inline)) const Slot *
lookup_bytes(const Lookup *t, const unsigned char *p, int64_t len, const unsigned char *end)
{
#if SHORT_LOADS
    if (len <= 16 && end - p >= 16) { /* two masked loads, as the labels' words */
#ifdef SSE_PROBE
        return probe2_bytes(t, p, (uint64_t)len, len);
#else
        uint64_t w0, w1;
        memcpy(&w0, p, 8);
        memcpy(&w1, p + 8, 8);
        return probe2(t, w0 & KEEP0[len], w1 & KEEP1[len], len);
#endif
    }
    if (len <= 24 && end - p >= 24) { /* three masked loads */
        uint64_t w0, w1, w2;
        memcpy(&w0, p, 8);
        memcpy(&w1, p + 8, 8);
        memcpy(&w2, p + 16, 8);
        return probe3(t, w0, w1, w2 & KEEP0[len - 16], len);
    }
#endif
    return find_slot(t, p, len, end);
}

/* The code of value i found at ``slot``: the label's, or unknown_code when no label is there (the first such
 * position is kept in *bad). */
static inline __attribute__((always_inline)) intp
code_of(const Lookup *t, const Slot *slot, Py_ssize_t i, Py_ssize_t *bad)
{
    if (slot->code < 0) {
        *bad = *bad < 0 ? i : *bad;
        return t->unknown_code;
    }
    return slot->code;
}

/* The slot of a value of len bytes whose start p has 16 readable bytes after it, in a table whose labels all
 * have at most 16 bytes: no branch on its length.  A longer value is masked to its first 16 bytes, whose
 * slot holds no label of its length: it finds an empty one, as it must. */
static inline __attribute__((always_inline)) const Slot *
lookup_short(const Lookup *t, const unsigned char *p, int64_t len)
{
    uint64_t keep = (uint64_t)len < 16 ? (uint64_t)len : 16;
#ifdef SSE_PROBE
    return probe2_bytes(t, p, keep, len);
#elif SHORT_LOADS
    uint64_t w0, w1;
    memcpy(&w0, p, 8);
    memcpy(&w1, p + 8, 8);
    return probe2(t, w0 & KEEP0[keep], w1 & KEEP1[keep], len);
#else
    return find_slot(t, p, len, p + len); /* not reached: short_labels is 0 without SHORT_LOADS */
#endif
}

static inline __attribute__((always_inline)) int64_t
offset_at(const void *offsets, int width, Py_ssize_t i)
{
    return width == 4 ? (int64_t)((const int32_t *)offsets)[i] : ((const int64_t *)offsets)[i];
}

/* The loop of encode_run, specialised by the compiler for each offset width, with and without a validity
 * bitmap, and for values read by lookup_short (``short_only``) or lookup_bytes. */
static inline __attribute__((always_inline)) Py_ssize_t
encode_values(const Lookup *t, const void *offsets, int width, int with_validity, int short_only, Py_ssize_t first,
              Py_ssize_t n, intp *out)
{
    const unsigned char *data = t->data, *valid = t->valid, *data_end = t->data + t->data_len;
    Py_ssize_t bad = -1;
    int64_t start = offset_at(offsets, width, first);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t row = first + i;
        int64_t end = offset_at(offsets, width, row + 1), len = end - start, at_byte = start;
        __builtin_prefetch((const char *)offsets + width * (row + PREFETCH_VALUES));
        __builtin_prefetch(data + at_byte + PREFETCH_BYTES);
        start = end;
        if (with_validity && !((valid[row >> 3] >> (row & 7)) & 1)) {
            out[i] = t->missing_code;
            continue;
        }
        const Slot *slot = short_only ? lookup_short(t, data + at_byte, len) : lookup_bytes(t, data + at_byte, len, data_end);
        out[i] = code_of(t, slot, i, &bad);
    }
    return bad;
}

/* The codes of values first .. first + n - 1 (see utf8_encode).  When every label has at most 16 bytes, the
 * values that start at least 16 bytes before the end of the data (all but the last few: offsets rise) are
 * looked up by lookup_short, with neither a branch on their length nor a check of the room after them; the
 * others by lookup_bytes.  Like the loop before it, this trusts the offsets to rise, as Arrow's format
 * requires (utf8_encode checks the last one): clamping each start to the data cost 3 instructions a value. */
static inline __attribute__((always_inline)) Py_ssize_t
encode_run(const Lookup *t, const void *offsets, int width, int with_validity, Py_ssize_t first, Py_ssize_t n,
           intp *out)
{
    Py_ssize_t fast = t->short_labels ? n : 0;
    while (fast > 0 && offset_at(offsets, width, first + fast - 1) > t->data_len - 16) {
        fast--;
    }
    Py_ssize_t bad = encode_values(t, offsets, width, with_validity, 1, first, fast, out);
    Py_ssize_t rest = encode_values(t, offsets, width, with_validity, 0, first + fast, n - fast, out + fast);
    return bad >= 0 ? bad : rest >= 0 ? fast + rest : -1;
}

/* utf8_encode(offsets, width, first, validity or None, data, label_offsets, label_data, slots, seed,
 * missing_code, unknown_code, out intp[n]): the position among the labels of each of the n values of an
 * Arrow string array (offsets of ``width`` bytes, from entry ``first``; validity bit first + i), through
 * the table of utf8_index.  A null takes ``missing_code``, a value that is no label ``unknown_code``.
 * Returns the position of the first value that is no label, or -1. */
static PyObject *
utf8_encode(PyObject *self, PyObject *args)
{
    Py_buffer b[7];
    PyObject *validity_obj;
    int width;
    Py_ssize_t first;
    Lookup t;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "y*inOy*y*y*y*Knnw*", &b[0], &width, &first, &validity_obj, &b[1], &b[2], &b[3],
                          &b[4], &seed, &t.missing_code, &t.unknown_code, &b[5])) {
        return NULL;
    }
    int have_validity = validity_obj != Py_None;
    if (have_validity && PyObject_GetBuffer(validity_obj, &b[6], PyBUF_SIMPLE) < 0) {
        release(b, 6);
        return NULL;
    }
    int count = have_validity ? 7 : 6;
    Py_ssize_t n = b[5].len / (Py_ssize_t)sizeof(intp);
    const int32_t *off32 = b[0].buf;
    const int64_t *off64 = b[0].buf;
    if (label_table(&t, &b[2], &b[3], &b[4], seed) < 0) {
        release(b, count);
        return NULL;
    }
    if ((width != 4 && width != 8) || first < 0 || b[0].len < (first + n + 1) * width ||
        (have_validity && b[6].len * 8 < first + n) ||
        (width == 4 ? (int64_t)off32[first + n] : off64[first + n]) > (int64_t)b[1].len) {
        release(b, count);
        PyErr_SetString(PyExc_ValueError, "utf8_encode: inconsistent buffers");
        return NULL;
    }
    t.data = b[1].buf;
    t.valid = have_validity ? b[6].buf : NULL;
    t.data_len = (int64_t)b[1].len;
    intp *out = b[5].buf;
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

/* The value at i of integers of ``width`` bytes, signed or not, as an int64 (an unsigned 64-bit value above
 * INT64_MAX wraps negative: no table reaches it). */
static inline __attribute__((always_inline)) int64_t
integer_at(const void *values, int width, int is_signed, Py_ssize_t i)
{
    switch (width) {
    case 1:
        return is_signed ? (int64_t)((const int8_t *)values)[i] : (int64_t)((const uint8_t *)values)[i];
    case 2:
        return is_signed ? (int64_t)((const int16_t *)values)[i] : (int64_t)((const uint16_t *)values)[i];
    case 4:
        return is_signed ? (int64_t)((const int32_t *)values)[i] : (int64_t)((const uint32_t *)values)[i];
    default:
        return ((const int64_t *)values)[i];
    }
}

typedef struct {
    const void *values;
    const unsigned char *valid;
    const intp *table;
    Py_ssize_t first, m;
    int64_t low;
    intp missing_code, unknown_code;
} Dense;

/* The loop of dense_encode.  The fields of ``d`` are read once into locals: most are of the codes' own type,
 * so that each write of a code would otherwise make the compiler read them all again (about 2.3 ns a value
 * with the reads, 0.8 without, on a Zen 3); an unknown value is only flagged in the loop, and its position
 * found after it, in the rare call that has one. */
static inline __attribute__((always_inline)) Py_ssize_t
dense_run(const Dense *d, int width, int is_signed, Py_ssize_t n, intp *restrict out)
{
    const void *values = d->values;
    const unsigned char *valid = d->valid;
    const intp *table = d->table;
    const Py_ssize_t first = d->first;
    const uint64_t m = (uint64_t)d->m, low = (uint64_t)d->low;
    const intp missing_code = d->missing_code, unknown_code = d->unknown_code;
    int unknown = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t row = first + i;
        uint64_t at = (uint64_t)integer_at(values, width, is_signed, row) - low; /* below low wraps past m */
        intp code = at < m ? table[at] : unknown_code;
        if (valid != NULL && !((valid[row >> 3] >> (row & 7)) & 1)) {
            code = missing_code;
        }
        out[i] = code;
        unknown |= code == unknown_code;
    }
    for (Py_ssize_t i = 0; unknown && i < n; i++) {
        if (out[i] == unknown_code) {
            return i;
        }
    }
    return -1;
}

/* dense_encode(values (integers of ``width`` bytes, from entry first), width, signed, first, validity or None,
 * low, table intp[m], missing_code, unknown_code, out intp[n]): the code of each of n integers,
 * table[value - low] (a value outside low .. low + m - 1 takes unknown_code, as does an entry of the table
 * that is unknown_code), a null missing_code: one pass over Arrow's buffers, where NumPy took several (the
 * conversion to intp, the nulls, the range, the gather).  Returns the position of the first value whose code
 * is unknown_code, or -1. */
static PyObject *
dense_encode(PyObject *self, PyObject *args)
{
    Py_buffer b[4];
    PyObject *validity_obj;
    int width, is_signed;
    long long low;
    Dense d;
    if (!PyArg_ParseTuple(args, "y*ipnOLy*nnw*", &b[0], &width, &is_signed, &d.first, &validity_obj, &low, &b[1],
                          &d.missing_code, &d.unknown_code, &b[2])) {
        return NULL;
    }
    int count = 3;
    if (validity_obj != Py_None && PyObject_GetBuffer(validity_obj, &b[count++], PyBUF_SIMPLE) < 0) {
        release(b, 3);
        return NULL;
    }
    Py_ssize_t n = b[2].len / (Py_ssize_t)sizeof(intp);
    if ((width != 1 && width != 2 && width != 4 && width != 8) || d.first < 0 || b[0].len < (d.first + n) * width ||
        (count == 4 && b[3].len * 8 < d.first + n)) {
        release(b, count);
        PyErr_SetString(PyExc_ValueError, "dense_encode: inconsistent buffers");
        return NULL;
    }
    d.values = b[0].buf;
    d.valid = count == 4 ? b[3].buf : NULL;
    d.table = b[1].buf;
    d.m = b[1].len / (Py_ssize_t)sizeof(intp);
    d.low = (int64_t)low;
    intp *out = b[2].buf;
    Py_ssize_t bad;
    Py_BEGIN_ALLOW_THREADS
    switch (width * (is_signed ? 1 : -1)) {
    case 1: bad = dense_run(&d, 1, 1, n, out); break;
    case -1: bad = dense_run(&d, 1, 0, n, out); break;
    case 2: bad = dense_run(&d, 2, 1, n, out); break;
    case -2: bad = dense_run(&d, 2, 0, n, out); break;
    case 4: bad = dense_run(&d, 4, 1, n, out); break;
    case -4: bad = dense_run(&d, 4, 0, n, out); break;
    default: bad = dense_run(&d, 8, 1, n, out); break;
    }
    Py_END_ALLOW_THREADS
    release(b, count);
    return PyLong_FromSsize_t(bad);
}

/* The buffers of an Arrow string_view array's long values (more than 12 bytes). */
typedef struct {
    Py_buffer *views;
    Py_ssize_t count;
} ViewData;

/* The codes of n views (16 bytes each: the length, then the value itself up to 12 bytes, else its first
 * four bytes, the index of its data buffer and its offset there), as encode_run.  Returns the position of
 * the first value that is no label, or -1; -2 if a view points outside its buffers. */
static Py_ssize_t
encode_views(const Lookup *t, const unsigned char *views, const ViewData *d, Py_ssize_t first, Py_ssize_t n,
             intp *out)
{
    Py_ssize_t bad = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t row = first + i;
        const unsigned char *v = views + 16 * row;
        int32_t len;
        memcpy(&len, v, 4);
        if (t->valid != NULL && !((t->valid[row >> 3] >> (row & 7)) & 1)) {
            out[i] = t->missing_code;
            continue;
        }
        const Slot *slot;
        if (len < 0) {
            return -2;
        }
        if (len <= 12) { /* inline: the value's words are read from the view itself */
#if SHORT_LOADS
            uint64_t w0;
            uint32_t w1;
            memcpy(&w0, v + 4, 8);
            memcpy(&w1, v + 12, 4);
            slot = probe2(t, w0 & KEEP0[len], (uint64_t)w1 & KEEP1[len], len);
#else
            slot = find_slot(t, v + 4, len, v + 16);
#endif
        }
        else {
            int32_t index, offset;
            memcpy(&index, v + 8, 4);
            memcpy(&offset, v + 12, 4);
            if (index < 0 || index >= d->count || offset < 0 || (Py_ssize_t)offset + len > d->views[index].len) {
                return -2;
            }
            const unsigned char *buf = d->views[index].buf;
            slot = lookup_bytes(t, buf + offset, len, buf + d->views[index].len);
        }
        out[i] = code_of(t, slot, i, &bad);
    }
    return bad;
}

/* utf8_encode_views(views, first, validity or None, data buffers (a tuple), label_offsets, label_data, slots,
 * seed, missing_code, unknown_code, out intp[n]): utf8_encode of an Arrow string_view array (views of 16
 * bytes, from view ``first``; validity bit first + i), read where the views and their buffers are. */
static PyObject *
utf8_encode_views(PyObject *self, PyObject *args)
{
    Py_buffer b[6];
    PyObject *validity_obj, *buffers;
    Py_ssize_t first;
    Lookup t;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "y*nOO!y*y*y*Knnw*", &b[0], &first, &validity_obj, &PyTuple_Type, &buffers, &b[1],
                          &b[2], &b[3], &seed, &t.missing_code, &t.unknown_code, &b[4])) {
        return NULL;
    }
    int count = 5;
    if (validity_obj != Py_None && PyObject_GetBuffer(validity_obj, &b[count++], PyBUF_SIMPLE) < 0) {
        release(b, 5);
        return NULL;
    }
    ViewData d = {NULL, 0};
    Py_ssize_t want = PyTuple_GET_SIZE(buffers);
    d.views = PyMem_Calloc(want > 0 ? (size_t)want : 1, sizeof(Py_buffer));
    if (d.views == NULL) {
        release(b, count);
        return PyErr_NoMemory();
    }
    for (; d.count < want; d.count++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(buffers, d.count), &d.views[d.count], PyBUF_SIMPLE) < 0) {
            break;
        }
    }
    Py_ssize_t n = b[4].len / (Py_ssize_t)sizeof(intp), bad = -3;
    if (d.count == want && label_table(&t, &b[1], &b[2], &b[3], seed) == 0) {
        if (first < 0 || b[0].len < (first + n) * 16 || (count == 6 && b[5].len * 8 < first + n)) {
            PyErr_SetString(PyExc_ValueError, "utf8_encode_views: inconsistent buffers");
        }
        else {
            t.valid = count == 6 ? b[5].buf : NULL;
            Py_BEGIN_ALLOW_THREADS
            bad = encode_views(&t, b[0].buf, &d, first, n, b[4].buf);
            Py_END_ALLOW_THREADS
            if (bad == -2) {
                PyErr_SetString(PyExc_ValueError, "utf8_encode_views: a view points outside its buffers");
            }
        }
    }
    release(d.views, (int)d.count);
    PyMem_Free(d.views);
    release(b, count);
    return bad < -1 ? NULL : PyLong_FromSsize_t(bad);
}

/* The items of a 1-D C-contiguous NumPy array of objects, through its array interface (the caller keeps
 * the array alive, and the GIL); NULL with an exception otherwise. */
static PyObject **
object_items(PyObject *array, Py_ssize_t *n)
{
    PyObject *face = PyObject_GetAttrString(array, "__array_interface__");
    if (face == NULL) {
        return NULL;
    }
    PyObject **items = NULL;
    PyObject *typestr = PyDict_Check(face) ? PyDict_GetItemString(face, "typestr") : NULL;
    PyObject *shape = typestr ? PyDict_GetItemString(face, "shape") : NULL;
    PyObject *strides = typestr ? PyDict_GetItemString(face, "strides") : NULL;
    PyObject *data = typestr ? PyDict_GetItemString(face, "data") : NULL;
    if (typestr && PyUnicode_Check(typestr) && PyUnicode_CompareWithASCIIString(typestr, "|O") == 0 && shape &&
        PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) == 1 && (strides == NULL || strides == Py_None) && data &&
        PyTuple_Check(data) && PyTuple_GET_SIZE(data) == 2) {
        *n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, 0));
        items = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
        if (PyErr_Occurred() || items == NULL) {
            items = NULL;
        }
    }
    Py_DECREF(face);
    if (items == NULL && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "object_encode: expected a non-empty 1-D contiguous array of objects");
    }
    return items;
}

/* Whether ``value`` is missing as pandas reads an object column: None, a float NaN, or one of ``na``. */
static inline int
is_missing(PyObject *value, PyObject *na)
{
    if (value == Py_None || (PyFloat_Check(value) && PyFloat_AS_DOUBLE(value) != PyFloat_AS_DOUBLE(value))) {
        return 1;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(na); k++) {
        if (value == PyTuple_GET_ITEM(na, k)) {
            return 1;
        }
    }
    return 0;
}

/* Text objects whose codes are remembered by address: a column of Python strings that a reader made holds
 * few distinct objects (pandas' CSV reader makes one per distinct value and chunk), so most values cost one
 * comparison of pointers.  The cache is an open-addressing table with room for four times as many objects
 * as there are labels (between 2^10 and 2^16 slots); an object is remembered if a free slot is within
 * CACHE_PROBES of its own, and never forgotten.  The loop asks for the slot of the object CACHE_AHEAD
 * places later.  Strings made one per value (``astype(object)`` of Arrow text: a million objects for a
 * million values) never hit and fill the cache, after which each value probed CACHE_PROBES slots in vain:
 * values are taken in blocks of CACHE_BLOCK, and a block in which fewer than half of the values were found
 * or remembered (the cache is full of objects that do not come back) turns the cache off for the next
 * CACHE_REST blocks (then one block tries it again). */
#define CACHE_MIN_BITS 10
#define CACHE_MAX_BITS 16
#define CACHE_PROBES 8
#define CACHE_AHEAD 16
#define CACHE_BLOCK 1024
#define CACHE_REST 31

/* The slot of an object's address in a table of 2^bits slots (multiply-shift of the address). */
static inline uint64_t
cache_slot(const PyObject *value, int bits)
{
    return ((uint64_t)(uintptr_t)value >> 4) * 0x9e3779b97f4a7c15ULL >> (64 - bits);
}

typedef struct {
    PyObject *key;
    int64_t code;
} Cached;

/* The cache of object_encode: its slots, whether the current block uses it, and how many of the block's
 * values it found or remembered. */
typedef struct {
    Cached *slots;
    int bits, on;
    Py_ssize_t useful, rest;
} ObjectCache;

/* The cached slot of ``value``, or NULL (*free_slot: where to remember it, or NULL if no room near). */
static inline Cached *
cache_find(ObjectCache *c, PyObject *value, Cached **free_slot)
{
    uint64_t at = cache_slot(value, c->bits);
    *free_slot = NULL;
    for (int probe = 0; probe < CACHE_PROBES; probe++) {
        Cached *known = c->slots + at;
        if (known->key == value) {
            return known;
        }
        if (known->key == NULL) {
            *free_slot = known;
            return NULL;
        }
        at = (at + 1) & (((uint64_t)1 << c->bits) - 1);
    }
    return NULL;
}

/* At the end of a block of CACHE_BLOCK values: whether the next block uses the cache (see CACHE_REST). */
static inline void
cache_block_done(ObjectCache *c)
{
    if (c->on) {
        c->on = 2 * c->useful >= CACHE_BLOCK;
        c->rest = CACHE_REST;
    }
    else {
        c->on = --c->rest <= 0;
    }
    c->useful = 0;
}

#if SHORT_LOADS && defined(__SIZEOF_INT128__)
#define ASCII_IN_PLACE 1
/* The code of an ASCII string of len (at most 24) bytes ending at ``end``, read where it is: a string's
 * header lies before its bytes, so the 16 bytes up to its end (a value of up to 16 bytes, the bytes before
 * it shifted out) or its first 16 bytes and the 8 up to its end (17 to 24 bytes) can be read. */
static inline intp
ascii_code(const Lookup *t, const unsigned char *end, int64_t len)
{
    uint64_t lo, hi;
    memcpy(&lo, end - 16, 8);
    memcpy(&hi, end - 8, 8);
    if (len <= 16) {
        unsigned __int128 whole = (unsigned __int128)hi << 64 | lo;
        unsigned __int128 words = len ? whole >> (8 * (16 - len)) : 0; /* the bytes before the text out */
        return probe2(t, (uint64_t)words, (uint64_t)(words >> 64), len)->code;
    }
    uint64_t w0, w1;
    memcpy(&w0, end - len, 8);
    memcpy(&w1, end - len + 8, 8);
    return probe3(t, w0, w1, hi >> (8 * (24 - len)), len)->code;
}
#endif

/* The code of the text object ``value`` among the labels, or -1 (no label); -2 if it has no UTF-8 form (a
 * lone surrogate).  An ASCII string of up to 24 bytes is read where it is (ascii_code); other strings
 * through their UTF-8 form. */
static inline intp
text_code(const Lookup *t, PyObject *value)
{
#ifdef ASCII_IN_PLACE
    if (PyUnicode_IS_COMPACT_ASCII(value) && PyUnicode_GET_LENGTH(value) <= 24 && sizeof(PyASCIIObject) >= 24) {
        int64_t len = PyUnicode_GET_LENGTH(value);
        return ascii_code(t, (const unsigned char *)PyUnicode_DATA(value) + len, len);
    }
#endif
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(value, &len);
    if (text == NULL) {
        PyErr_Clear();
        return -2;
    }
    const unsigned char *p = (const unsigned char *)text;
    return find_slot(t, p, len, p + len)->code;
}

/* The code of ``value``: its label's, -1 if missing (is_missing), -2 if it is neither missing nor the text
 * of a label. */
static inline int64_t
object_code(const Lookup *t, PyObject *value, PyObject *na)
{
    if (is_missing(value, na)) {
        return -1;
    }
    if (!PyUnicode_Check(value)) {
        return -2;
    }
    intp code = text_code(t, value);
    return code < 0 ? -2 : code;
}

/* The codes of values start .. stop - 1 of object_encode (``use_cache``: through the cache ``c``), into
 * ``out`` and the validity bitmap (start a multiple of 8); returns the position of the first value that is
 * neither missing nor a label's text, or -1. */
static inline __attribute__((always_inline)) Py_ssize_t
object_block(const Lookup *t, ObjectCache *c, int use_cache, PyObject **items, Py_ssize_t start, Py_ssize_t stop,
             Py_ssize_t n, PyObject *na, int64_t *out, unsigned char *valid, Py_ssize_t *nulls)
{
    unsigned char bits = 0;
    for (Py_ssize_t i = start; i < stop; i++) {
        PyObject *value = items[i];
        __builtin_prefetch(items + i + PREFETCH_VALUES);
        __builtin_prefetch(out + i + PREFETCH_VALUES, 1);
        if (i + CACHE_AHEAD < n) { /* a later object's slot (a table of 10 000 labels' objects is 1 MiB), or
                                    * the object itself when each is read */
            __builtin_prefetch(use_cache ? (const void *)(c->slots + cache_slot(items[i + CACHE_AHEAD], c->bits))
                                         : (const void *)items[i + CACHE_AHEAD]);
        }
        Cached *free_slot = NULL, *known = use_cache ? cache_find(c, value, &free_slot) : NULL;
        int64_t code;
        if (known != NULL) {
            code = known->code;
            c->useful++;
        }
        else {
            code = object_code(t, value, na);
            if (code < -1) {
                return i;
            }
            if (free_slot != NULL && code >= 0) {
                free_slot->key = value;
                free_slot->code = code;
                c->useful++;
            }
        }
        *nulls += code < 0;
        out[i] = code < 0 ? 0 : code;
        bits |= (unsigned char)((code >= 0) << (i & 7));
        if ((i & 7) == 7 || i == n - 1) {
            valid[i >> 3] = bits;
            bits = 0;
        }
    }
    return -1;
}

/* object_encode(values object[n], label_offsets, label_data, slots, seed, na tuple, out int64[n],
 * validity uint8[(n + 7) / 8]): the codes of a NumPy array of Python strings and missing values
 * (is_missing) among the labels of utf8_index: ``out`` (0 where missing) and an Arrow validity bitmap.
 * Returns (the position of the first value that is neither missing nor the text of a label, or -1; the
 * number missing).  Runs with the GIL (it reads Python objects). */
static PyObject *
object_encode(PyObject *self, PyObject *args)
{
    Py_buffer b[5];
    PyObject *values, *na;
    unsigned long long seed;
    Lookup t;
    if (!PyArg_ParseTuple(args, "Oy*y*y*KO!w*w*", &values, &b[0], &b[1], &b[2], &seed, &PyTuple_Type, &na, &b[3],
                          &b[4])) {
        return NULL;
    }
    Py_ssize_t n = 0, s = b[0].len / (Py_ssize_t)sizeof(int64_t) - 1;
    PyObject **items = object_items(values, &n);
    if (items == NULL || label_table(&t, &b[0], &b[1], &b[2], seed) < 0 ||
        check_len(&b[3], n, sizeof(int64_t), "out") || check_len(&b[4], (n + 7) / 8, 1, "validity")) {
        release(b, 5);
        return NULL;
    }
    ObjectCache cache = {NULL, CACHE_MIN_BITS, 1, 0, 0};
    while (cache.bits < CACHE_MAX_BITS && ((Py_ssize_t)1 << cache.bits) < 4 * s) {
        cache.bits++;
    }
    cache.slots = PyMem_Calloc((size_t)1 << cache.bits, sizeof(Cached));
    if (cache.slots == NULL) {
        release(b, 5);
        return PyErr_NoMemory();
    }
    Py_ssize_t first = -1, nulls = 0;
    for (Py_ssize_t start = 0; start < n && first < 0; start += CACHE_BLOCK) {
        Py_ssize_t stop = n - start < CACHE_BLOCK ? n : start + CACHE_BLOCK;
        first = cache.on ? object_block(&t, &cache, 1, items, start, stop, n, na, b[3].buf, b[4].buf, &nulls)
                         : object_block(&t, &cache, 0, items, start, stop, n, na, b[3].buf, b[4].buf, &nulls);
        cache_block_done(&cache);
    }
    PyMem_Free(cache.slots);
    release(b, 5);
    return Py_BuildValue("nn", first, nulls);
}

/* Add ``count`` references to ``value`` at once (under the GIL; one by one where there is none). */
static void
add_references(PyObject *value, Py_ssize_t count)
{
#ifdef Py_GIL_DISABLED
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_INCREF(value);
    }
#else
    Py_SET_REFCNT(value, Py_REFCNT(value) + count); /* no effect on an immortal object */
#endif
}

/* object_decode(labels tuple, codes intp[n], out object[n]): out[i] = labels[codes[i] + 1] (entry 0 is for
 * code -1), for ``out`` a NumPy array of objects as numpy.empty makes it (every item None).  The
 * references to each label are added at once, after the loop, since adding them one at a time makes
 * every value wait for the last.  Returns None; ValueError for a code outside -1..S-1 or an item that is
 * not None (the items before it written). */
static PyObject *
object_decode(PyObject *self, PyObject *args)
{
    PyObject *labels, *out_array;
    Py_buffer codes_view;
    if (!PyArg_ParseTuple(args, "O!y*O", &PyTuple_Type, &labels, &codes_view, &out_array)) {
        return NULL;
    }
    Py_ssize_t n = 0, s = PyTuple_GET_SIZE(labels) - 1;
    PyObject **items = object_items(out_array, &n);
    if (items == NULL || check_len(&codes_view, n, sizeof(intp), "codes") < 0 || s < 0) {
        PyBuffer_Release(&codes_view);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "object_decode: no labels");
        }
        return NULL;
    }
    Py_ssize_t *counts = PyMem_Calloc((size_t)s + 1, sizeof(Py_ssize_t));
    if (counts == NULL) {
        PyBuffer_Release(&codes_view);
        return PyErr_NoMemory();
    }
    const intp *codes = codes_view.buf;
    PyObject *const *by_code = &PyTuple_GET_ITEM(labels, 0);
    Py_ssize_t i = 0;
    for (; i < n; i++) {
        uint64_t at = (uint64_t)(codes[i] + 1);
        __builtin_prefetch(codes + i + PREFETCH_VALUES);
        __builtin_prefetch(items + i + PREFETCH_VALUES, 1);
        if (at > (uint64_t)s) {
            break;
        }
        if (items[i] != Py_None) {
            break;
        }
        items[i] = by_code[at];
        counts[at]++;
    }
    for (Py_ssize_t k = 0; k <= s; k++) {
        add_references(by_code[k], counts[k]);
    }
    add_references(Py_None, -i); /* the references of the items replaced */
    PyMem_Free(counts);
    PyBuffer_Release(&codes_view);
    if (i < n) {
        PyErr_SetString(PyExc_ValueError, "object_decode: a code is outside -1..S-1, or an item is not None");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Labels of up to HEAD bytes are written as whole words from their records, without a branch on their
 * length (the census labels run from 2 to 23 bytes): as 16 bytes when no label is longer (a third store per
 * value cost labels of up to 16 bytes a fifth of the writing), else as HEAD bytes. */
#define HEAD 24

/* A label as utf8_decode writes it: its first HEAD bytes (zero past its length), its length, and where it
 * starts in the label bytes (read only for a label of more than HEAD bytes): 32 bytes, so that one cache
 * line holds two and writing a value reads one place, not three (length, start, bytes). */
typedef struct {
    unsigned char head[HEAD];
    int32_t len, start;
} Label;

/* The labels' records (``records`` uint8[32 (S + 1)], by code + 1: entry 0 for code -1, length 0) checked,
 * and where a label of more than HEAD bytes lies checked against ``label_data`` unless it is NULL: their
 * number S, or -1 with ValueError. */
static Py_ssize_t
check_records(Py_buffer *records, Py_buffer *label_data, const char *name)
{
    Py_ssize_t s = records->len / (Py_ssize_t)sizeof(Label) - 1;
    const Label *rec = records->buf;
    int bad = s < 0 || records->len != (s + 1) * (Py_ssize_t)sizeof(Label);
    for (Py_ssize_t k = 0; k <= s && !bad; k++) {
        bad = rec[k].len < 0 || (label_data != NULL && rec[k].len > HEAD &&
                                 (rec[k].start < 0 || (Py_ssize_t)rec[k].start + rec[k].len > label_data->len));
    }
    if (bad) {
        PyErr_Format(PyExc_ValueError, "%s: inconsistent label records", name);
        return -1;
    }
    return s;
}

/* utf8_size(codes intp[n], records): (the number of bytes of the labels of ``codes``, the number of codes
 * -1), the labels' records as for utf8_decode (only their lengths read). */
static PyObject *
utf8_size(PyObject *self, PyObject *args)
{
    Py_buffer b[2];
    if (!PyArg_ParseTuple(args, "y*y*", &b[0], &b[1])) {
        return NULL;
    }
    Py_ssize_t n = b[0].len / (Py_ssize_t)sizeof(intp), s = check_records(&b[1], NULL, "utf8_size");
    if (s < 0) {
        release(b, 2);
        return NULL;
    }
    const intp *codes = b[0].buf;
    const Label *rec = b[1].buf;
    int64_t total = 0;
    Py_ssize_t nulls = 0;
    uint64_t bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        uint64_t at = (uint64_t)(codes[i] + 1), outside = at > (uint64_t)s;
        bad |= outside;
        at = outside ? 0 : at;
        nulls += at == 0;
        total += rec[at].len;
    }
    Py_END_ALLOW_THREADS
    release(b, 2);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "utf8_size: a code is outside -1..S-1");
        return NULL;
    }
    return Py_BuildValue("Ln", (long long)total, nulls);
}

/* The length of the longest of the S + 1 labels of checked records. */
static int32_t
longest_label(const Label *rec, Py_ssize_t s)
{
    int32_t longest = 0;
    for (Py_ssize_t k = 0; k <= s; k++) {
        longest = rec[k].len > longest ? rec[k].len : longest;
    }
    return longest;
}

/* The loop of utf8_decode for one offset width and head (16 or HEAD: a label of up to that many bytes is
 * copied as that many); returns the number of bytes written, or -1 if a code is outside -1..S-1 or the
 * bytes pass ``limit``.  ``roomy``: the caller found room for the longest label per value within
 * ``limit``, so the bytes are not checked per value. */
static inline __attribute__((always_inline)) int64_t
decode_run(const intp *codes, Py_ssize_t n, Py_ssize_t s, const Label *rec, const unsigned char *label_data,
           void *offsets, int width, int head, int roomy, unsigned char *out, int64_t limit, Py_ssize_t *nulls)
{
    int32_t *o32 = offsets;
    int64_t *o64 = offsets;
    int64_t at = 0;
    Py_ssize_t missing = 0;
    if (width == 4) {
        o32[0] = 0;
    }
    else {
        o64[0] = 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t code = (uint64_t)(codes[i] + 1);
        if (code > (uint64_t)s) {
            return -1;
        }
        const Label *label = rec + code;
        int64_t len = label->len;
        if (!roomy && at + len > limit) {
            return -1;
        }
        if (len <= head) { /* the head as whole words: the next value overwrites the excess */
            memcpy(out + at, label->head, (size_t)head);
        }
        else {
            memcpy(out + at, label_data + label->start, (size_t)len);
        }
        at += len;
        missing += code == 0;
        if (width == 4) {
            o32[i + 1] = (int32_t)at;
        }
        else {
            o64[i + 1] = at;
        }
    }
    *nulls = missing;
    return at;
}

/* decode_run on utf8_decode's buffers ``b``, for either offset width. */
static inline __attribute__((always_inline)) int64_t
decode_pass(Py_buffer *b, Py_ssize_t n, Py_ssize_t s, int width, int head, int roomy, int64_t limit,
            Py_ssize_t *nulls)
{
    if (width == 4) {
        return decode_run(b[0].buf, n, s, b[1].buf, b[2].buf, b[3].buf, 4, head, roomy, b[4].buf, limit, nulls);
    }
    return decode_run(b[0].buf, n, s, b[1].buf, b[2].buf, b[3].buf, 8, head, roomy, b[4].buf, limit, nulls);
}

/* utf8_decode(codes intp[n], records, label_data, offsets, width, out_data): the Arrow UTF-8 array of the
 * labels of ``codes`` (code -1: an empty value), in one pass: ``width``-byte offsets into ``offsets`` (n + 1
 * of them), the labels one after the other into ``out_data``, which must hold PAD bytes past the last.
 * ``records`` holds a Label per code + 1 (entry 0, for code -1, of length 0), whose ``start`` is where a
 * label of more than HEAD bytes lies in ``label_data``.  Returns (the number of bytes written, or -1 if
 * ``out_data`` is too small or 4-byte offsets would overflow; the number of codes -1).  Every copy stays
 * within the buffers, whatever the arguments. */
static PyObject *
utf8_decode(PyObject *self, PyObject *args)
{
    Py_buffer b[5];
    int width;
    if (!PyArg_ParseTuple(args, "y*y*y*w*iw*", &b[0], &b[1], &b[2], &b[3], &width, &b[4])) {
        return NULL;
    }
    Py_ssize_t n = b[0].len / (Py_ssize_t)sizeof(intp), s = check_records(&b[1], &b[2], "utf8_decode");
    if (s < 0 || (width != 4 && width != 8) || check_len(&b[3], n + 1, width, "offsets") < 0) {
        release(b, 5);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "utf8_decode: offsets are 4 or 8 bytes wide");
        }
        return NULL;
    }
    int64_t total, limit = b[4].len - PAD; /* the room, and what 4-byte offsets address */
    limit = width == 4 && limit > INT32_MAX ? INT32_MAX : limit;
    Py_ssize_t nulls = 0;
    Py_BEGIN_ALLOW_THREADS
    int32_t longest = longest_label(b[1].buf, s);
    if (n <= limit / (longest > 0 ? longest : 1)) { /* room for the longest label per value: no check per value */
        total = longest <= 16 ? decode_pass(b, n, s, width, 16, 1, limit, &nulls)
                              : decode_pass(b, n, s, width, HEAD, 1, limit, &nulls);
    }
    else {
        total = decode_pass(b, n, s, width, HEAD, 0, limit, &nulls);
    }
    Py_END_ALLOW_THREADS
    int outside = total == -1 && first_outside(b[0].buf, n, s) >= 0;
    release(b, 5);
    if (outside) {
        PyErr_SetString(PyExc_ValueError, "utf8_decode: a code is outside -1..S-1");
        return NULL;
    }
    return Py_BuildValue("Ln", (long long)total, nulls);
}

/* ------------------------------------------------------------------ CSV */

/* One Arrow text column (UTF-8 or binary, 4- or 8-byte offsets) of csv_rows. */
typedef struct {
    const unsigned char *data;
    const void *offsets;
    const unsigned char *valid; /* NULL: no nulls */
    Py_ssize_t offset;          /* the array's offset into its buffers */
    Py_ssize_t size;            /* the bytes of data */
    int width;
} CsvColumn;

static inline int64_t
csv_at(const CsvColumn *c, Py_ssize_t i)
{
    return c->width == 4 ? ((const int32_t *)c->offsets)[c->offset + i] : ((const int64_t *)c->offsets)[c->offset + i];
}

static inline int
csv_valid(const CsvColumn *c, Py_ssize_t i)
{
    Py_ssize_t at = c->offset + i;
    return c->valid == NULL || ((c->valid[at >> 3] >> (at & 7)) & 1);
}

/* The first position from k on of a byte that makes a value quoted (the separator, a quote, CR or LF), or
 * ``last``: eight bytes at a time (a byte equal to c makes a zero byte of x ^ c..c, which (v - 1..1) & ~v
 * & 80..80 finds exactly), then byte by byte. */
static inline int64_t
csv_next(const unsigned char *d, int64_t k, int64_t last, const unsigned char *special, uint64_t sep8)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    const uint64_t q8 = ones * '"', r8 = ones * '\r', l8 = ones * '\n';
    while (k + 8 <= last) {
        uint64_t x, a, q, r, l;
        memcpy(&x, d + k, 8);
        a = x ^ sep8;
        q = x ^ q8;
        r = x ^ r8;
        l = x ^ l8;
        if ((((a - ones) & ~a) | ((q - ones) & ~q) | ((r - ones) & ~r) | ((l - ones) & ~l)) & highs) {
            break;
        }
        k += 8;
    }
    while (k < last && !special[d[k]]) {
        k++;
    }
    return k;
}

/* The bytes of value i of column c as a field, quoted as ``quoting`` (NULL: none) says. */
static inline int64_t
csv_length(const CsvColumn *c, Py_ssize_t i, const unsigned char *quoting)
{
    if (!csv_valid(c, i)) {
        return 0;
    }
    int64_t start = csv_at(c, i), end = csv_at(c, i + 1), len = end - start;
    unsigned char f = quoting == NULL ? 0 : quoting[i];
    if (f == 2) {
        for (int64_t k = start; k < end; k++) {
            len += c->data[k] == '"';
        }
    }
    return len + (f ? 2 : 0);
}

/* Write value i of column c at ``to`` as a field (csv_length bytes; with ``spill``, 16 bytes when the value is
 * short and unquoted, the excess in room written later). */
static inline int64_t
csv_put(unsigned char *to, const CsvColumn *c, Py_ssize_t i, const unsigned char *quoting, int spill)
{
    if (!csv_valid(c, i)) {
        return 0;
    }
    int64_t start = csv_at(c, i), len = csv_at(c, i + 1) - start;
    const unsigned char *p = c->data + start;
    unsigned char f = quoting == NULL ? 0 : quoting[i];
    if (f == 0) {
        if (spill && len <= 16 && start + 16 <= c->size) {
            memcpy(to, p, 16);
        }
        else {
            memcpy(to, p, (size_t)len);
        }
        return len;
    }
    unsigned char *w = to;
    *w++ = '"';
    if (f == 1) {
        memcpy(w, p, (size_t)len);
        w += len;
    }
    else {
        for (int64_t k = 0; k < len; k++) {
            if (p[k] == '"') {
                *w++ = '"';
            }
            *w++ = p[k];
        }
    }
    *w++ = '"';
    return w - to;
}

/* Rows per block of csv_rows. */
#define CSV_BLOCK 1024

/* csv_rows(columns, n, sep[, crlf]): the bytes of n CSV rows (each ended by LF, or CR LF with crlf) of the text
 * columns ``columns``, a
 * list of (offsets, width, data, validity or None, offset, data length) of Arrow arrays of n values, the fields
 * separated by the byte ``sep``.  A null is an empty field; a value is quoted (its quotes doubled) only if it
 * holds ``sep``, a quote, CR or LF, or is empty (so that it stays apart from a null).  Lengths and offsets are
 * checked against the buffers. */
static PyObject *
csv_rows(PyObject *self, PyObject *args)
{
    PyObject *list;
    Py_ssize_t n;
    int sep, crlf = 0;
    if (!PyArg_ParseTuple(args, "O!ni|p", &PyList_Type, &list, &n, &sep, &crlf)) {
        return NULL;
    }
    Py_ssize_t m = PyList_GET_SIZE(list), opened = 0;
    if (m < 1 || n < 0 || sep < 0 || sep > 255 || sep == '"' || sep == '\r' || sep == '\n') {
        PyErr_SetString(PyExc_ValueError, "csv_rows: at least one column, n >= 0, and a one-byte separator");
        return NULL;
    }
    CsvColumn *cols = PyMem_Calloc((size_t)m, sizeof(CsvColumn));
    Py_buffer *views = PyMem_Calloc((size_t)m * 3, sizeof(Py_buffer));
    unsigned char *flags = PyMem_Malloc((size_t)(n * m) + 1);
    PyObject *out = NULL;
    if (cols == NULL || views == NULL || flags == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *item = PyList_GET_ITEM(list, j), *valid;
        Py_ssize_t offset;
        int width;
        if (!PyArg_ParseTuple(item, "y*iy*On", &views[opened], &width, &views[opened + 1], &valid, &offset)) {
            goto done;
        }
        opened += 2;
        Py_buffer *off = &views[opened - 2], *data = &views[opened - 1];
        if ((width != 4 && width != 8) || offset < 0 || off->len < (offset + n + 1) * width) {
            PyErr_SetString(PyExc_ValueError, "csv_rows: offsets too short or not 4 or 8 bytes wide");
            goto done;
        }
        cols[j] = (CsvColumn){data->buf, off->buf, NULL, offset, data->len, width};
        if (valid != Py_None) {
            if (PyObject_GetBuffer(valid, &views[opened], PyBUF_SIMPLE) < 0) {
                goto done;
            }
            opened++;
            if (views[opened - 1].len * 8 < offset + n) {
                PyErr_SetString(PyExc_ValueError, "csv_rows: validity too short");
                goto done;
            }
            cols[j].valid = views[opened - 1].buf;
        }
        int64_t first = n ? csv_at(&cols[j], 0) : 0, bad = first < 0;
        for (Py_ssize_t i = 1; i <= n && !bad; i++) {
            bad = csv_at(&cols[j], i) < csv_at(&cols[j], i - 1);
        }
        if (bad || (n && csv_at(&cols[j], n) > data->len)) {
            PyErr_SetString(PyExc_ValueError, "csv_rows: offsets outside the data");
            goto done;
        }
    }
    unsigned char special[256] = {0};
    special[(unsigned char)sep] = special['"'] = special['\r'] = special['\n'] = 1;
    int64_t total = (int64_t)n * (m + crlf); /* a separator or LF after each field, and CR before each LF */
    const uint64_t sep8 = 0x0101010101010101ULL * (unsigned char)sep;
    unsigned char **quoting = PyMem_Calloc((size_t)m, sizeof(unsigned char *));
    if (quoting == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < m; j++) {
        const CsvColumn *c = &cols[j];
        int64_t first = csv_at(c, 0), last = csv_at(c, n), extra = 0;
        /* most columns need no quotes: no special byte in all their bytes and no empty value (a null of
         * length 0 is looked at value by value); their text is all their bytes only without nulls, whose slots
         * may hold bytes that are not written (a column with nulls is measured value by value) */
        int64_t next = csv_next(c->data, first, last, special, sep8);
        unsigned char any = next < last;
        for (Py_ssize_t i = 0; i < n && !any; i++) {
            any |= csv_at(c, i + 1) == csv_at(c, i);
        }
        if (!any && c->valid == NULL) {
            total += last - first;
            continue;
        }
        unsigned char *f = flags + j * n;
        quoting[j] = f;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t start = csv_at(c, i), end = csv_at(c, i + 1);
            if (!csv_valid(c, i)) {
                f[i] = 0;
                continue;
            }
            if (next < start) {
                next = csv_next(c->data, start, last, special, sep8);
            }
            if (next < end) { /* a special byte in the value: quoted, its quotes doubled */
                int64_t quotes = 0;
                for (int64_t k = next; k < end; k++) {
                    quotes += c->data[k] == '"';
                }
                f[i] = quotes ? 2 : 1;
                extra += end - start + 2 + quotes;
                next = csv_next(c->data, end, last, special, sep8);
            }
            else {
                f[i] = end == start; /* an empty text, quoted: an empty field is a missing value */
                extra += end - start + 2 * f[i];
            }
        }
        total += extra;
    }
    Py_END_ALLOW_THREADS
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (out == NULL) {
        PyMem_Free(quoting);
        goto done;
    }
    unsigned char *w = (unsigned char *)PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    /* rows in blocks whose text stays in the cache: the start of each row of the block, then the block
     * column by column (a tight loop per column, as the columns' layouts differ) */
    int64_t pos[CSV_BLOCK], rowend[CSV_BLOCK], at = 0;
    for (Py_ssize_t b0 = 0; b0 < n; b0 += CSV_BLOCK) {
        Py_ssize_t nb = n - b0 < CSV_BLOCK ? n - b0 : CSV_BLOCK;
        for (Py_ssize_t i = 0; i < nb; i++) {
            pos[i] = m + crlf;
        }
        for (Py_ssize_t j = 0; j < m; j++) {
            const CsvColumn *c = &cols[j];
            if (quoting[j] == NULL && c->valid == NULL && c->width == 4) {
                const int32_t *o = (const int32_t *)c->offsets + c->offset + b0;
                for (Py_ssize_t i = 0; i < nb; i++) {
                    pos[i] += o[i + 1] - o[i];
                }
            }
            else {
                for (Py_ssize_t i = 0; i < nb; i++) {
                    pos[i] += csv_length(c, b0 + i, quoting[j]);
                }
            }
        }
        for (Py_ssize_t i = 0; i < nb; i++) {
            int64_t len = pos[i];
            pos[i] = at;
            at += len;
            rowend[i] = at;
        }
        for (Py_ssize_t j = 0; j < m; j++) {
            const CsvColumn *c = &cols[j];
            /* a short value is copied as 16 bytes where the rest of its row, written later, takes the excess
             * (the rows before and after are written already) */
            const int last = j + 1 == m;
            unsigned char end = last ? '\n' : (unsigned char)sep;
            const int cr = last && crlf; /* CR LF: the CR where a field's end goes, the LF after it */
            if (quoting[j] == NULL && c->valid == NULL && c->width == 4) {
                const int32_t *o = (const int32_t *)c->offsets + c->offset + b0;
                for (Py_ssize_t i = 0; i < nb; i++) {
                    int64_t start = o[i], len = o[i + 1] - start;
                    unsigned char *to = w + pos[i];
                    if (len <= 16 && start + 16 <= c->size && pos[i] + 16 <= rowend[i]) {
                        memcpy(to, c->data + start, 16);
                    }
                    else {
                        memcpy(to, c->data + start, (size_t)len);
                    }
                    if (cr) {
                        to[len++] = '\r';
                    }
                    to[len] = end;
                    pos[i] += len + 1;
                }
            }
            else {
                for (Py_ssize_t i = 0; i < nb; i++) {
                    int64_t len = csv_put(w + pos[i], c, b0 + i, quoting[j], pos[i] + 16 <= rowend[i]);
                    if (cr) {
                        w[pos[i] + len++] = '\r';
                    }
                    w[pos[i] + len] = end;
                    pos[i] += len + 1;
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(quoting);
done:
    release(views, (int)opened);
    PyMem_Free(views);
    PyMem_Free(cols);
    PyMem_Free(flags);
    return out;
}

/* ------------------------------------------------------------------ raking */

/* rake_fit(w float64[n pool], cand int32[n pool k], k, a, b, columns, cell int64[n], target float64[T],
 * current float64[T]): one step of iterative proportional fitting of pramkit.synthesize.  Each candidate's cell
 * of the table of variable a (a < 0: the record's public cell) by variable b is cand[., a] * columns +
 * cand[., b] (cell[record] * columns + cand[., b]); current[c] gets the sum of the weights of the candidates in c,
 * added in the candidates' order (as numpy.bincount adds them), then every weight is multiplied by
 * target[c] / current[c] (0 where current[c] is 0).  The cells are computed as they are read, twice, never
 * stored.  Returns None, or raises ValueError when a cell falls outside the target. */
static PyObject *
rake_fit(PyObject *self, PyObject *args)
{
    Py_buffer b[5];
    Py_ssize_t k, a, col_b, columns;
    if (!PyArg_ParseTuple(args, "w*y*nnnny*y*w*", &b[0], &b[1], &k, &a, &col_b, &columns, &b[2], &b[3], &b[4])) {
        return NULL;
    }
    Py_ssize_t values = b[0].len / (Py_ssize_t)sizeof(double);
    Py_ssize_t records = b[2].len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t cells = b[3].len / (Py_ssize_t)sizeof(double);
    int ok = k > 0 && a < k && col_b >= 0 && col_b < k && columns > 0 && records > 0 && values % records == 0 &&
             check_len(&b[1], values * k, sizeof(int32_t), "cand") == 0 &&
             check_len(&b[4], cells, sizeof(double), "current") == 0;
    if (!ok) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "rake_fit: inconsistent sizes");
        }
        release(b, 5);
        return NULL;
    }
    double *w = b[0].buf, *target = b[3].buf, *current = b[4].buf;
    const int32_t *cand = b[1].buf;
    const int64_t *cell = b[2].buf;
    Py_ssize_t pool = values / records, bad = -1;
    Py_BEGIN_ALLOW_THREADS
    memset(current, 0, (size_t)cells * sizeof(double));
    for (int pass = 0; pass < 2 && bad < 0; pass++) {
        for (Py_ssize_t i = 0; i < values; i++) {
            const int32_t *row = cand + i * k;
            int64_t c = (a < 0 ? cell[i / pool] : (int64_t)row[a]) * columns + row[col_b];
            if (c < 0 || c >= cells) {
                bad = i;
                break;
            }
            if (pass == 0) {
                current[c] += w[i];
            } else {
                w[i] *= current[c];
            }
        }
        if (pass == 0) {
            for (Py_ssize_t c = 0; c < cells; c++) {
                current[c] = current[c] > 0 ? target[c] / current[c] : 0.0;
            }
        }
    }
    Py_END_ALLOW_THREADS
    release(b, 5);
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "rake_fit: candidate %zd falls outside the table's %zd cells", bad, cells);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- balance */

/* The balanced draw's swap search (pramkit.pgm_balance.balance): for each proposal s, the released draw at
 * slot pick[s] (inside; counted weight[slot] times) and the pool record at slot pick[steps + s] (outside)
 * change places when that lowers sum |counts - goal| over the cells of every table; idx holds each pool
 * record's cell of every table.  Counts, goals and weights are integers (fixed point), so the change is exact
 * and its sign does not depend on the order of the sum.  Returns the swaps made. */
static PyObject *
balance_swaps(PyObject *self, PyObject *args)
{
    Py_buffer b[7];
    Py_ssize_t tables;
    if (!PyArg_ParseTuple(args, "y*w*y*w*w*y*y*n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &tables)) {
        return NULL;
    }
    Py_ssize_t cells = b[1].len / (Py_ssize_t)sizeof(int64_t), m = b[3].len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t rest = b[4].len / (Py_ssize_t)sizeof(int64_t), steps = b[5].len / (Py_ssize_t)sizeof(int64_t) / 2;
    Py_ssize_t pool = m + rest, bad = -1;
    int ok = tables > 0 && check_len(&b[0], pool * tables, sizeof(int32_t), "idx") == 0 &&
             check_len(&b[2], cells, sizeof(int64_t), "goal") == 0 &&
             check_len(&b[5], 2 * steps, sizeof(int64_t), "picks") == 0 &&
             check_len(&b[6], m, sizeof(int64_t), "weights") == 0;
    if (!ok) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "balance_swaps: inconsistent sizes");
        }
        release(b, 7);
        return NULL;
    }
    const int32_t *idx = b[0].buf;
    const int64_t *goal = b[2].buf, *pick = b[5].buf, *weight = b[6].buf;
    int64_t *counts = b[1].buf, *inside = b[3].buf, *outside = b[4].buf;
    Py_ssize_t swaps = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < pool * tables && bad < 0; i++) {
        if (idx[i] < 0 || idx[i] >= cells) {
            bad = 0;
        }
    }
    for (Py_ssize_t i = 0; i < m && bad < 0; i++) {
        bad = inside[i] < 0 || inside[i] >= pool ? 1 : weight[i] <= 0 ? 3 : -1;
    }
    for (Py_ssize_t i = 0; i < rest && bad < 0; i++) {
        bad = outside[i] < 0 || outside[i] >= pool ? 1 : -1;
    }
    for (Py_ssize_t s = 0; s < steps && bad < 0; s++) {
        int64_t a = pick[s], o = pick[steps + s];
        if (a < 0 || a >= m || o < 0 || o >= rest) {
            bad = 2;
            break;
        }
        const int32_t *ci = idx + inside[a] * tables, *cj = idx + outside[o] * tables;
        const int64_t share = weight[a];
        int64_t change = 0;
        for (Py_ssize_t k = 0; k < tables; k++) {
            if (ci[k] != cj[k]) {
                int64_t x = counts[ci[k]], y = counts[cj[k]], gi = goal[ci[k]], gj = goal[cj[k]];
                change += llabs(y + share - gj) - llabs(y - gj) + llabs(x - share - gi) - llabs(x - gi);
            }
        }
        if (change < 0) {
            for (Py_ssize_t k = 0; k < tables; k++) {
                counts[cj[k]] += share;
                counts[ci[k]] -= share;
            }
            int64_t t = inside[a];
            inside[a] = outside[o];
            outside[o] = t;
            swaps++;
        }
    }
    Py_END_ALLOW_THREADS
    release(b, 7);
    if (bad >= 0) {
        static const char *const what[] = {"a cell outside the counts", "a slot outside the pool",
                                           "a pick outside the slots", "a weight not positive"};
        PyErr_Format(PyExc_ValueError, "balance_swaps: %s", what[bad]);
        return NULL;
    }
    return PyLong_FromSsize_t(swaps);
}

static PyMethodDef methods[] = {
    {"draw_diagonal", draw_diagonal, METH_VARARGS, "Form (8) keep-or-move draw: (first bad position, missing, changed)."},
    {"draw_alias", draw_alias, METH_VARARGS, "Keep-or-move draw with an alias table: (first bad position, missing, changed)."},
    {"draw_cumulative", draw_cumulative, METH_VARARGS, "Keep-or-move draw by bisection: (first bad position, missing, changed)."},
    {"alias_cells", alias_cells, METH_VARARGS, "Integer alias tables of rows of move units."},
    {"utf8_index", utf8_index, METH_VARARGS, "Fill an open-addressing table of labels."},
    {"dense_encode", dense_encode, METH_VARARGS, "Codes of integers through a table by value; first unknown or -1."},
    {"utf8_encode_views", utf8_encode_views, METH_VARARGS, "Codes of Arrow UTF-8 string views; first unknown position or -1."},
    {"utf8_encode", utf8_encode, METH_VARARGS, "Codes of Arrow UTF-8 values; first unknown position or -1."},
    {"object_encode", object_encode, METH_VARARGS, "Codes of Python strings; (first not a label or -1, missing)."},
    {"object_decode", object_decode, METH_VARARGS, "Python objects of the labels of codes."},
    {"utf8_size", utf8_size, METH_VARARGS, "Offsets of the labels of codes; total bytes (-1: too many)."},
    {"utf8_decode", utf8_decode, METH_VARARGS, "Bytes of the labels of codes."},
    {"csv_rows", csv_rows, METH_VARARGS, "CSV rows of text columns, quoted only where needed."},
    {"rake_fit", rake_fit, METH_VARARGS, "One step of iterative proportional fitting of candidates' weights."},
    {"balance_swaps", balance_swaps, METH_VARARGS, "The balanced draw's swap search, in place: the swaps made."},
    {"_philox_fill", philox_fill_py, METH_VARARGS, "The next words of a Philox state (for tests)."},
    {"_alias_path", alias_path_py, METH_VARARGS, "The alias loop taken; with a name, take it (for tests)."},
    {"_diagonal_path", diagonal_path_py, METH_VARARGS, "The form (8) loop taken; with a name, take it (for tests)."},
    {"exact_reciprocals", exact_reciprocals, METH_VARARGS, "Multipliers and shifts of exact integer quotients."},
    {"_philox_path", philox_path_py, METH_VARARGS, "The Philox path taken; with a name, take it (for tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pramkit.kernel._kernels", "Per-value loops of pramkit's samplers and codebooks.", -1, methods,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    philox_path = philox_avx512_supported() ? PHILOX_AVX512 : philox_avx2_supported() ? PHILOX_AVX2 : PHILOX_PORTABLE;
    alias_path = avx2_supported() ? ALIAS_AVX2 : ALIAS_SCALAR;
    diagonal_path = diagonal_vectorised()      ? DIAGONAL_ESTIMATE
                    : avx2_supported() ? DIAGONAL_AVX2
                                                : DIAGONAL_MULTIPLY;
#ifdef SSE_PROBE
    for (int len = 0; len <= 16; len++) {
        KEEP16[len][0] = KEEP0[len];
        KEEP16[len][1] = KEEP1[len];
    }
#endif
    return PyModule_Create(&module);
}
