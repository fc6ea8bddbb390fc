/*
 * Philox-4x64-10 (Salmon, Moraes, Dror and Shaw 2011) as numpy.random.Philox runs it, computed by the draws of
 * _kernels.c instead of through its next_raw: NumPy computes one block (four words) per call, a chain of ten
 * dependent rounds during which the processor waits on the multiplier.  Here blocks are computed several side
 * by side, with the round keys computed once per call: two at a time in general-purpose registers on every
 * machine (the portable path), up to thirty-two at a time in AVX-512 registers where the processor has them,
 * and eight at a time in AVX2 registers where it has those only (the vector paths, chosen at run time).  Every
 * path gives NumPy's words, bit for bit, and leaves NumPy's state: the
 * counter (four words), the key (two words), the buffer of the last block and how many of its words were
 * used; NumPy increments the counter (with carry) before each block.  pramkit.engine.sampling.uniform_source
 * moves the state between the generator and an array of PHILOX_WORDS uint64, the layout of Philox below.
 *
 * Included once, by _kernels.c (after Python.h and stdint.h).
 */
#define PHILOX_WORDS 11
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && !defined(__clang__)
#define PHILOX_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define PHILOX_CLONES
#endif
typedef struct {
    uint64_t ctr[4], key[2], buffer[4], pos;
} Philox;

/* Philox-4x64's multipliers and the Weyl increments of its key (bumped after each round). */
#define PHILOX_M0 0xD2E7470EE14C6C93ULL
#define PHILOX_M1 0xCA5A826395121157ULL
#define PHILOX_W0 0x9E3779B97F4A7C15ULL
#define PHILOX_W1 0xBB67AE8584CAA73BULL

/* Add one to the counter (c0, c1, c2, c3), carrying. */
#define PHILOX_INCREMENT(c0, c1, c2, c3)                                                                       \
    do {                                                                                                       \
        if (++c0 == 0 && ++c1 == 0 && ++c2 == 0) {                                                            \
            ++c3;                                                                                              \
        }                                                                                                      \
    } while (0)

/* One round of one block: x = (x0, x1, x2, x3) under round key (k0, k1). */
#define PHILOX_ROUND(x0, x1, x2, x3, k0, k1)                                                                   \
    do {                                                                                                       \
        unsigned __int128 p0_ = (unsigned __int128)PHILOX_M0 * x0;                                             \
        unsigned __int128 p1_ = (unsigned __int128)PHILOX_M1 * x2;                                             \
        x0 = (uint64_t)(p1_ >> 64) ^ x1 ^ (k0);                                                                \
        x1 = (uint64_t)p1_;                                                                                    \
        x2 = (uint64_t)(p0_ >> 64) ^ x3 ^ (k1);                                                                \
        x3 = (uint64_t)p0_;                                                                                    \
    } while (0)

/* The ten round keys of ``key``. */
static inline void
philox_round_keys(const uint64_t key[2], uint64_t keys[10][2])
{
    for (int r = 0; r < 10; r++) {
        keys[r][0] = key[0] + (uint64_t)r * PHILOX_W0;
        keys[r][1] = key[1] + (uint64_t)r * PHILOX_W1;
    }
}

/* The words left in g's buffer, at most n of them, into out; returns how many. */
static inline Py_ssize_t
philox_drain(Philox *g, uint64_t *out, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    for (; i < n && g->pos < 4; i++) {
        out[i] = g->buffer[g->pos++];
    }
    return i;
}

/* The portable path: the next n words of ``g``, whose buffer is used up (pos 4), into out, and the state
 * NumPy's n calls of next_raw would leave.  The counter lives in registers while it runs: stored word by word
 * and read back as a whole, it made the processor wait on every block (a store it cannot forward to a wider
 * load). */
PHILOX_CLONES static void
philox_fill_portable(Philox *g, uint64_t *out, Py_ssize_t n)
{
    if (n == 0) {
        return;
    }
    /* blocks are computed two side by side, whose eight words fit the registers (with three or four,
     * words went to memory and the draws were slower, measured while the counter was still in memory) */
    uint64_t keys[10][2];
    philox_round_keys(g->key, keys);
    uint64_t c0 = g->ctr[0], c1 = g->ctr[1], c2 = g->ctr[2], c3 = g->ctr[3];
    uint64_t a0, a1, a2, a3, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
    Py_ssize_t i = 0, left;
    uint64_t used = 4; /* of the last block's words */
    while ((left = n - i) > 4) { /* two blocks side by side, at least one word of the second used */
        PHILOX_INCREMENT(c0, c1, c2, c3);
        a0 = c0, a1 = c1, a2 = c2, a3 = c3;
        PHILOX_INCREMENT(c0, c1, c2, c3);
        b0 = c0, b1 = c1, b2 = c2, b3 = c3;
        for (int r = 0; r < 10; r++) {
            PHILOX_ROUND(a0, a1, a2, a3, keys[r][0], keys[r][1]);
            PHILOX_ROUND(b0, b1, b2, b3, keys[r][0], keys[r][1]);
        }
        out[i] = a0;
        out[i + 1] = a1;
        out[i + 2] = a2;
        out[i + 3] = a3;
        if (left >= 8) {
            out[i + 4] = b0;
            out[i + 5] = b1;
            out[i + 6] = b2;
            out[i + 7] = b3;
            i += 8;
            continue;
        }
        uint64_t last[4] = {b0, b1, b2, b3}; /* the last block, partly used */
        for (int j = 0; j < left - 4; j++) {
            out[i + 4 + j] = last[j];
        }
        used = (uint64_t)(left - 4);
        i = n;
    }
    if (left > 0) { /* one block for the last 1 to 4 words */
        PHILOX_INCREMENT(c0, c1, c2, c3);
        b0 = c0, b1 = c1, b2 = c2, b3 = c3;
        for (int r = 0; r < 10; r++) {
            PHILOX_ROUND(b0, b1, b2, b3, keys[r][0], keys[r][1]);
        }
        uint64_t last[4] = {b0, b1, b2, b3};
        for (int j = 0; j < left; j++) {
            out[i + j] = last[j];
        }
        used = (uint64_t)left;
    }
    /* NumPy's buffer: the last block, and how many of its words were used */
    g->buffer[0] = b0, g->buffer[1] = b1, g->buffer[2] = b2, g->buffer[3] = b3;
    g->pos = used;
    g->ctr[0] = c0, g->ctr[1] = c1, g->ctr[2] = c2, g->ctr[3] = c3;
}

/* Which path philox_fill takes: the widest vector one the processor (and the system, which must save the
 * vector registers) has, found when the module loads; tests force each path in turn (_philox_path). */
enum { PHILOX_PORTABLE = 0, PHILOX_AVX512 = 1, PHILOX_AVX2 = 2 };
static int philox_path = PHILOX_PORTABLE;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(_WIN32)
#define PHILOX_HAVE_VECTORS 1
#include <immintrin.h>

/* The state a vector path leaves in g, as NumPy would: its last block (whose four words are at ``last``) all
 * used, and the counter c. */
static inline void
philox_vector_done(Philox *g, const uint64_t *last, const uint64_t c[4])
{
    memcpy(g->buffer, last, sizeof g->buffer);
    g->pos = 4;
    memcpy(g->ctr, c, sizeof g->ctr);
}

/* The most blocks a vector path computes side by side (four groups of eight). */
#define PHILOX_MOST_BLOCKS 32

/* The counters of the next ``blocks`` blocks (at most PHILOX_MOST_BLOCKS), word w of block b in lanes[w][b],
 * and c advanced past them, carrying: the vector paths' counters where the first word wraps among them. */
static inline void
philox_counter_lanes(uint64_t c[4], uint64_t lanes[4][PHILOX_MOST_BLOCKS], uint64_t blocks)
{
    for (uint64_t b = 0; b < blocks; b++) {
        PHILOX_INCREMENT(c[0], c[1], c[2], c[3]);
        for (int w = 0; w < 4; w++) {
            lanes[w][b] = c[w];
        }
    }
}

/* The vector path: block b of a step in lane b % 8 of group b / 8, word w of every block of a group in one
 * register.  AVX-512 has no 64 x 64 -> 128-bit multiply, so the high half comes from four 32 x 32 -> 64-bit
 * products (vpmuludq).  A round of one group is a chain of dependent instructions; four groups side by side
 * hide its latency and still fit the 32 registers (ns per word on a Zen 4, 512 words a call: one group 1.67,
 * two 1.13, three 1.10, four 1.02, six 1.21; the portable path 1.95).  The low half by vpmullq (AVX-512DQ)
 * instead of the shift and merge measured the same. */
#define PHILOX_AVX512_FN __attribute__((target("avx512f")))
#define PHILOX_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) static inline
#define PHILOX_LANES 8
#define PHILOX_GROUPS 4

/* The high half of x * m in each lane, and its low half into *lo; m_hi holds m >> 32.  With x = xh 2^32 + xl
 * and m = mh 2^32 + ml: t = xh ml + (xl ml >> 32) and w = xl mh + (t mod 2^32) cannot overflow, and
 * x m = (xh mh + (t >> 32) + (w >> 32)) 2^64 + (w mod 2^32) 2^32 + (xl ml mod 2^32). */
PHILOX_AVX512_INLINE __m512i
philox_mulhilo8(__m512i x, __m512i m, __m512i m_hi, __m512i *lo)
{
    const __m512i low32 = _mm512_set1_epi64(0xFFFFFFFF);
    __m512i x_hi = _mm512_srli_epi64(x, 32);
    __m512i ll = _mm512_mul_epu32(x, m); /* the instruction reads the low 32 bits of each lane */
    __m512i lh = _mm512_mul_epu32(x, m_hi);
    __m512i hl = _mm512_mul_epu32(x_hi, m);
    __m512i hh = _mm512_mul_epu32(x_hi, m_hi);
    __m512i t = _mm512_add_epi64(hl, _mm512_srli_epi64(ll, 32));
    __m512i w = _mm512_add_epi64(lh, _mm512_and_si512(t, low32));
    *lo = _mm512_ternarylogic_epi64(_mm512_slli_epi64(w, 32), ll, low32, 0xF8); /* a | (b & c) */
    return _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(t, 32)), _mm512_srli_epi64(w, 32));
}

/* The counters of the next 8 * groups blocks into x[g][w] (lane b of group g: block 8 g + b), and c advanced
 * past them.  Where the first word cannot wrap within them (every step but the one where it wraps) they are
 * one addition; otherwise they are counted block by block with carry. */
PHILOX_AVX512_INLINE void
philox_counters8(uint64_t c[4], __m512i x[][4], int groups)
{
    uint64_t blocks = (uint64_t)(PHILOX_LANES * groups);
    if (c[0] <= UINT64_MAX - blocks) {
        const __m512i first =
            _mm512_add_epi64(_mm512_set1_epi64((long long)c[0]), _mm512_set_epi64(8, 7, 6, 5, 4, 3, 2, 1));
        for (int g = 0; g < groups; g++) {
            x[g][0] = _mm512_add_epi64(first, _mm512_set1_epi64(PHILOX_LANES * g));
            for (int w = 1; w < 4; w++) {
                x[g][w] = _mm512_set1_epi64((long long)c[w]);
            }
        }
        c[0] += blocks;
        return;
    }
    uint64_t lanes[4][PHILOX_MOST_BLOCKS];
    philox_counter_lanes(c, lanes, blocks);
    for (int g = 0; g < groups; g++) {
        for (int w = 0; w < 4; w++) {
            x[g][w] = _mm512_loadu_si512(&lanes[w][PHILOX_LANES * g]);
        }
    }
}

/* The 32 words of a group, x[w] lane b holding word w of block b, into out in NumPy's order (block after
 * block): a 4 x 8 transpose of 128-bit pairs. */
PHILOX_AVX512_INLINE void
philox_store8(uint64_t *out, const __m512i x[4])
{
    __m512i t0 = _mm512_unpacklo_epi64(x[0], x[1]); /* (w0, w1) of blocks 0, 2, 4, 6 */
    __m512i t1 = _mm512_unpackhi_epi64(x[0], x[1]); /* (w0, w1) of blocks 1, 3, 5, 7 */
    __m512i t2 = _mm512_unpacklo_epi64(x[2], x[3]); /* (w2, w3) of blocks 0, 2, 4, 6 */
    __m512i t3 = _mm512_unpackhi_epi64(x[2], x[3]);
    __m512i u0 = _mm512_shuffle_i64x2(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)); /* blocks 0, 2 | 0, 2 */
    __m512i v0 = _mm512_shuffle_i64x2(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)); /* blocks 1, 3 | 1, 3 */
    __m512i u1 = _mm512_shuffle_i64x2(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    __m512i v1 = _mm512_shuffle_i64x2(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    _mm512_storeu_si512(out, _mm512_shuffle_i64x2(u0, v0, _MM_SHUFFLE(2, 0, 2, 0)));      /* blocks 0, 1 */
    _mm512_storeu_si512(out + 8, _mm512_shuffle_i64x2(u0, v0, _MM_SHUFFLE(3, 1, 3, 1)));  /* blocks 2, 3 */
    _mm512_storeu_si512(out + 16, _mm512_shuffle_i64x2(u1, v1, _MM_SHUFFLE(2, 0, 2, 0))); /* blocks 4, 5 */
    _mm512_storeu_si512(out + 24, _mm512_shuffle_i64x2(u1, v1, _MM_SHUFFLE(3, 1, 3, 1))); /* blocks 6, 7 */
}

/* 8 * groups blocks (groups 1, 2 or PHILOX_GROUPS), their words into out, the counter c advanced past them. */
PHILOX_AVX512_INLINE void
philox_step8(const uint64_t keys[10][2], uint64_t c[4], uint64_t *out, int groups)
{
    const __m512i m0 = _mm512_set1_epi64((long long)PHILOX_M0), m0_hi = _mm512_set1_epi64((long long)(PHILOX_M0 >> 32));
    const __m512i m1 = _mm512_set1_epi64((long long)PHILOX_M1), m1_hi = _mm512_set1_epi64((long long)(PHILOX_M1 >> 32));
    __m512i x[PHILOX_GROUPS][4];
    philox_counters8(c, x, groups);
    for (int r = 0; r < 10; r++) {
        const __m512i k0 = _mm512_set1_epi64((long long)keys[r][0]), k1 = _mm512_set1_epi64((long long)keys[r][1]);
        for (int g = 0; g < groups; g++) {
            __m512i lo0, lo1;
            __m512i hi0 = philox_mulhilo8(x[g][0], m0, m0_hi, &lo0);
            __m512i hi1 = philox_mulhilo8(x[g][2], m1, m1_hi, &lo1);
            x[g][0] = _mm512_ternarylogic_epi64(hi1, x[g][1], k0, 0x96); /* a ^ b ^ c */
            x[g][1] = lo1;
            x[g][2] = _mm512_ternarylogic_epi64(hi0, x[g][3], k1, 0x96);
            x[g][3] = lo0;
        }
    }
    for (int g = 0; g < groups; g++) {
        philox_store8(out + 4 * PHILOX_LANES * g, x[g]);
    }
}

/* The vector path: the next ngroups groups of eight blocks of ``g`` (32 ngroups words; ngroups > 0), whose
 * buffer is used up, into out, and the state NumPy would leave: the last block, all four of its words used. */
PHILOX_AVX512_FN static void
philox_fill_avx512(Philox *g, uint64_t *out, Py_ssize_t ngroups)
{
    uint64_t keys[10][2], c[4] = {g->ctr[0], g->ctr[1], g->ctr[2], g->ctr[3]};
    philox_round_keys(g->key, keys);
    Py_ssize_t done = 0;
    for (; done + PHILOX_GROUPS <= ngroups; done += PHILOX_GROUPS) {
        philox_step8(keys, c, out + 4 * PHILOX_LANES * done, PHILOX_GROUPS);
    }
    if (done + 2 <= ngroups) { /* the last one to three groups: two side by side, then one */
        philox_step8(keys, c, out + 4 * PHILOX_LANES * done, 2);
        done += 2;
    }
    if (done < ngroups) {
        philox_step8(keys, c, out + 4 * PHILOX_LANES * done, 1);
    }
    philox_vector_done(g, out + 4 * PHILOX_LANES * ngroups - 4, c);
}

/* The AVX2 path, for processors without AVX-512 (Zen 3 and earlier, Intel before Skylake-X): the same
 * scheme in 256-bit registers, four blocks to a group, two groups side by side (16 registers: the eight of
 * the state, the multipliers' four and the temporaries of a product).  On a Zen 3, whose general-purpose
 * 64 x 64 -> 128-bit multiply issues once every two cycles, four 32 x 32-bit products per instruction win
 * (ns per word, 512 words a call: the portable path 3.0-4.1, one group 3.2, two 2.2, three 2.3, four
 * 2.2; two groups with a third block in general-purpose registers beside them 2.1, not kept).  On a Zen 4
 * the AVX-512 path is taken. */
#define PHILOX_AVX2_FN __attribute__((target("avx2")))
#define PHILOX_AVX2_INLINE __attribute__((target("avx2"), always_inline)) static inline
#define PHILOX_LANES4 4
#define PHILOX_GROUPS4 2

/* The high half of x * m in each of four lanes, and its low half into *lo (as philox_mulhilo8). */
PHILOX_AVX2_INLINE __m256i
philox_mulhilo4(__m256i x, __m256i m, __m256i m_hi, __m256i *lo)
{
    const __m256i low32 = _mm256_set1_epi64x(0xFFFFFFFF);
    __m256i x_hi = _mm256_srli_epi64(x, 32);
    __m256i ll = _mm256_mul_epu32(x, m);
    __m256i lh = _mm256_mul_epu32(x, m_hi);
    __m256i hl = _mm256_mul_epu32(x_hi, m);
    __m256i hh = _mm256_mul_epu32(x_hi, m_hi);
    __m256i t = _mm256_add_epi64(hl, _mm256_srli_epi64(ll, 32));
    __m256i w = _mm256_add_epi64(lh, _mm256_and_si256(t, low32));
    *lo = _mm256_or_si256(_mm256_slli_epi64(w, 32), _mm256_and_si256(ll, low32));
    return _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(t, 32)), _mm256_srli_epi64(w, 32));
}

/* The counters of the next 4 * groups blocks into x[g][w] (lane b of group g: block 4 g + b), and c advanced
 * past them (as philox_counters8). */
PHILOX_AVX2_INLINE void
philox_counters4(uint64_t c[4], __m256i x[][4], int groups)
{
    uint64_t blocks = (uint64_t)(PHILOX_LANES4 * groups);
    if (c[0] <= UINT64_MAX - blocks) {
        const __m256i first = _mm256_add_epi64(_mm256_set1_epi64x((long long)c[0]), _mm256_set_epi64x(4, 3, 2, 1));
        for (int g = 0; g < groups; g++) {
            x[g][0] = _mm256_add_epi64(first, _mm256_set1_epi64x(PHILOX_LANES4 * g));
            for (int w = 1; w < 4; w++) {
                x[g][w] = _mm256_set1_epi64x((long long)c[w]);
            }
        }
        c[0] += blocks;
        return;
    }
    uint64_t lanes[4][PHILOX_MOST_BLOCKS];
    philox_counter_lanes(c, lanes, blocks);
    for (int g = 0; g < groups; g++) {
        for (int w = 0; w < 4; w++) {
            x[g][w] = _mm256_loadu_si256((const __m256i *)&lanes[w][PHILOX_LANES4 * g]);
        }
    }
}

/* The 16 words of a group, x[w] lane b holding word w of block b, into out block after block: a 4 x 4
 * transpose of 128-bit pairs. */
PHILOX_AVX2_INLINE void
philox_store4(uint64_t *out, const __m256i x[4])
{
    __m256i t0 = _mm256_unpacklo_epi64(x[0], x[1]); /* (w0, w1) of blocks 0 and 2 */
    __m256i t1 = _mm256_unpackhi_epi64(x[0], x[1]); /* (w0, w1) of blocks 1 and 3 */
    __m256i t2 = _mm256_unpacklo_epi64(x[2], x[3]); /* (w2, w3) of blocks 0 and 2 */
    __m256i t3 = _mm256_unpackhi_epi64(x[2], x[3]);
    _mm256_storeu_si256((__m256i *)out, _mm256_permute2x128_si256(t0, t2, 0x20));        /* block 0 */
    _mm256_storeu_si256((__m256i *)(out + 4), _mm256_permute2x128_si256(t1, t3, 0x20));  /* block 1 */
    _mm256_storeu_si256((__m256i *)(out + 8), _mm256_permute2x128_si256(t0, t2, 0x31));  /* block 2 */
    _mm256_storeu_si256((__m256i *)(out + 12), _mm256_permute2x128_si256(t1, t3, 0x31)); /* block 3 */
}

/* 4 * groups blocks (groups 1 or PHILOX_GROUPS4), their words into out, the counter c advanced past them. */
PHILOX_AVX2_INLINE void
philox_step4(const uint64_t keys[10][2], uint64_t c[4], uint64_t *out, int groups)
{
    const __m256i m0 = _mm256_set1_epi64x((long long)PHILOX_M0), m0_hi = _mm256_set1_epi64x((long long)(PHILOX_M0 >> 32));
    const __m256i m1 = _mm256_set1_epi64x((long long)PHILOX_M1), m1_hi = _mm256_set1_epi64x((long long)(PHILOX_M1 >> 32));
    __m256i x[PHILOX_GROUPS4][4];
    philox_counters4(c, x, groups);
    for (int r = 0; r < 10; r++) {
        const __m256i k0 = _mm256_set1_epi64x((long long)keys[r][0]), k1 = _mm256_set1_epi64x((long long)keys[r][1]);
        for (int g = 0; g < groups; g++) {
            __m256i lo0, lo1;
            __m256i hi0 = philox_mulhilo4(x[g][0], m0, m0_hi, &lo0);
            __m256i hi1 = philox_mulhilo4(x[g][2], m1, m1_hi, &lo1);
            x[g][0] = _mm256_xor_si256(_mm256_xor_si256(hi1, x[g][1]), k0);
            x[g][1] = lo1;
            x[g][2] = _mm256_xor_si256(_mm256_xor_si256(hi0, x[g][3]), k1);
            x[g][3] = lo0;
        }
    }
    for (int g = 0; g < groups; g++) {
        philox_store4(out + 4 * PHILOX_LANES4 * g, x[g]);
    }
}

/* The AVX2 path: the next ngroups groups of four blocks of ``g`` (16 ngroups words; ngroups > 0), whose
 * buffer is used up, into out, and the state NumPy would leave (as philox_fill_avx512). */
PHILOX_AVX2_FN static void
philox_fill_avx2(Philox *g, uint64_t *out, Py_ssize_t ngroups)
{
    uint64_t keys[10][2], c[4] = {g->ctr[0], g->ctr[1], g->ctr[2], g->ctr[3]};
    philox_round_keys(g->key, keys);
    Py_ssize_t done = 0;
    for (; done + PHILOX_GROUPS4 <= ngroups; done += PHILOX_GROUPS4) {
        philox_step4(keys, c, out + 4 * PHILOX_LANES4 * done, PHILOX_GROUPS4);
    }
    if (done < ngroups) {
        philox_step4(keys, c, out + 4 * PHILOX_LANES4 * done, 1);
    }
    philox_vector_done(g, out + 4 * PHILOX_LANES4 * ngroups - 4, c);
}
#endif

/* The next n words of ``g`` into out, as n calls of NumPy's Philox next_raw would give them, and the state
 * those calls would leave: the buffer's words, then whole groups of blocks on a vector path (eight blocks
 * to a group with AVX-512, four with AVX2), then the rest (under 32 or 16 words there) on the portable
 * one. */
static void
philox_fill(Philox *g, uint64_t *out, Py_ssize_t n)
{
    Py_ssize_t i = philox_drain(g, out, n);
#ifdef PHILOX_HAVE_VECTORS
    if (philox_path == PHILOX_AVX512) {
        Py_ssize_t ngroups = (n - i) / (4 * PHILOX_LANES);
        if (ngroups > 0) {
            philox_fill_avx512(g, out + i, ngroups);
            i += 4 * PHILOX_LANES * ngroups;
        }
    }
    else if (philox_path == PHILOX_AVX2) {
        Py_ssize_t ngroups = (n - i) / (4 * PHILOX_LANES4);
        if (ngroups > 0) {
            philox_fill_avx2(g, out + i, ngroups);
            i += 4 * PHILOX_LANES4 * ngroups;
        }
    }
#endif
    philox_fill_portable(g, out + i, n - i);
}

/* Whether this processor and system run the AVX-512 path. */
static int
philox_avx512_supported(void)
{
#ifdef PHILOX_HAVE_VECTORS
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

/* Whether this processor and system run the AVX2 path. */
static int
philox_avx2_supported(void)
{
#ifdef PHILOX_HAVE_VECTORS
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}
