"""The compiled kernels (pramkit.kernel._kernels) through sampling.py, utf8.py and codebook.py, against oracles
written here in plain Python: the per-value integer arithmetic of form (8) and of the alias draw, every
word of a small resolution enumerated, the matrix rows themselves (Monte Carlo), NumPy counts, and
dictionary lookups of text."""

from __future__ import annotations

import functools
import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.codebook import Codebook
from pramkit.engine.sampling import (
    SHIFT,
    AliasSampler,
    CumulativeSampler,
    DiagonalSampler,
    GeometricSampler,
    release,
    words_of,
)
from pramkit.errors import DataError
from pramkit.kernel import _kernels
from pramkit.kernel.utf8 import HEAD, PAD, Utf8Labels, label_records
from pramkit.matrix import PramMatrix
from pramkit.privacy.law import dense_units, form8_units

TEXT_TYPES = [pa.string(), pa.large_string()]
TEXT_IDS = ["string", "large_string"]


DIAGONAL_PATHS = ["estimate", "multiply", "avx2"]


def diagonal_paths_here() -> list[str]:
    """The loops of the form (8) draw this processor runs (the first two run on every one)."""
    here = []
    before = _kernels._diagonal_path()
    for name in DIAGONAL_PATHS:
        try:
            _kernels._diagonal_path(name)
        except ValueError:
            continue
        here.append(name)
    _kernels._diagonal_path(before)
    return here


@pytest.fixture(params=DIAGONAL_PATHS)
def diagonal_path(request: pytest.FixtureRequest):
    """Each loop of the form (8) draw in turn (AVX2 skipped where the processor lacks it), the module's choice
    restored."""
    if request.param not in diagonal_paths_here():
        pytest.skip(f"the processor lacks {request.param.upper()}")
    before = _kernels._diagonal_path(request.param)
    yield request.param
    _kernels._diagonal_path(before)


#: The loops of the form (8) and alias draws run together by :func:`loops`: each scalar one, then the AVX2 ones.
LOOPS = [("estimate", "scalar"), ("multiply", "scalar"), ("avx2", "avx2")]


@pytest.fixture(params=LOOPS, ids=["-".join(p) for p in LOOPS])
def loops(request: pytest.FixtureRequest):
    """The form (8) and alias draws on each of their loops in turn (AVX2 skipped where the processor lacks it),
    the module's choices restored."""
    diagonal, alias = request.param
    if diagonal not in diagonal_paths_here():
        pytest.skip("the processor lacks AVX2")
    before = _kernels._diagonal_path(diagonal), _kernels._alias_path(alias)
    yield request.param
    _kernels._diagonal_path(before[0])
    _kernels._alias_path(before[1])


def diagonal_tables(keep: np.ndarray, weight: np.ndarray, bits: int) -> tuple[np.ndarray, ...]:
    """draw_diagonal's tables for integer uniforms of ``bits`` bits: K (2^bits for code -1), W (0 for it),
    1 / W and the records of K and the exact reciprocals of W."""
    tables = (np.append(1 << bits, keep).astype(np.int64), np.append(0, weight).astype(np.int64))
    inv = np.zeros(tables[1].size)
    np.divide(1.0, tables[1], out=inv, where=tables[1] > 0)
    magic, magic_shift = np.empty(inv.size, dtype=np.uint64), np.empty(inv.size, dtype=np.int64)
    _kernels.exact_reciprocals(tables[1], bits, magic, magic_shift)
    rows = np.zeros((inv.size, 4), dtype=np.uint64)
    rows[:, 0], rows[:, 1], rows[:, 2] = tables[0], magic, magic_shift
    return (*tables, inv, rows)


# ---------------------------------------------------------------------------------------------- oracles


def x_of(words: np.ndarray) -> list[int]:
    """The integer uniforms of 64-bit words: their top 62 bits."""
    return [int(w) >> SHIFT for w in np.asarray(words, dtype=np.uint64).tolist()]


def diagonal_reference(sampler: DiagonalSampler, codes: np.ndarray, words: np.ndarray) -> list[int]:
    """Form (8), value by value in Python integers on the sampler's units: kept when x < K_k, else
    t = (x - K_k) // W_k capped at S - 2, released t + [t >= k]."""
    s = sampler.size
    keep, weight = sampler._keep[1:].tolist(), sampler._weight[1:].tolist()
    out = []
    for k, x in zip(codes.tolist(), x_of(words)):
        if k == -1:
            out.append(-1)
        elif x < keep[k]:
            out.append(k)
        else:
            t = min((x - keep[k]) // weight[k], s - 2)
            out.append(t + (1 if t >= k else 0))
    return out


def alias_reference(sampler: AliasSampler, codes: np.ndarray, words: np.ndarray) -> list[int]:
    """The integer alias draw of sampling.py's docstring, value by value on the sampler's own cells."""
    b = sampler.bits
    keep, cells = sampler._keep.tolist(), sampler._cells.tolist()
    out = []
    for k, x in zip(codes.tolist(), x_of(words)):
        if k == -1:
            out.append(-1)
            continue
        if x < keep[k]:
            out.append(k)
            continue
        r = x - keep[k]
        cell = r % (1 << b)
        entry = cells[(k << b) + cell]
        out.append(cell if r >> b < entry >> b else entry % (1 << b))
    return out


def encode_reference(labels: list, values: list, missing_code: int, unknown_code: int) -> tuple[list[int], int]:
    """Codes by a dictionary from label to position (null labels never match), and the first unknown's position."""
    lookup = {label: i for i, label in enumerate(labels) if label is not None}
    codes = [missing_code if v is None else lookup.get(v, unknown_code) for v in values]
    unknown = [i for i, v in enumerate(values) if v is not None and v not in lookup]
    return codes, (unknown[0] if unknown else -1)


def decode_reference(labels: list, codes) -> list:
    """The label of each code, None for -1."""
    return [labels[c] if c >= 0 else None for c in np.asarray(codes).tolist()]


def text_array(values: list, value_type: pa.DataType, *, prefix: bytes = b"", null_bytes: bytes = b"") -> pa.Array:
    """An Arrow text array built from its buffers: the data buffer exactly as long as the bytes (no slack after
    the last value), ``prefix`` before the first value, and ``null_bytes`` spanned by every null entry."""
    width = np.int64 if pa.types.is_large_string(value_type) else np.int32
    data = bytearray(prefix)
    offsets = [len(data)]
    for v in values:
        data += null_bytes if v is None else v.encode("utf-8")
        offsets.append(len(data))
    valid = np.array([v is not None for v in values], dtype=bool)
    validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes()) if not valid.all() else None
    arr = pa.Array.from_buffers(value_type, len(values),
                                [validity, pa.py_buffer(np.array(offsets, dtype=width).tobytes()),
                                 pa.py_buffer(bytes(data))],
                                null_count=int((~valid).sum()))
    arr.validate(full=True)
    return arr


def check_encode(labels_arr: pa.Array, values_arr: pa.Array, missing_code: int = -1, unknown_code: int = -2) -> None:
    """Utf8Labels.encode equals the dictionary oracle (codes and first unknown)."""
    codes, first_unknown = Utf8Labels(labels_arr).encode(values_arr, missing_code=missing_code,
                                                         unknown_code=unknown_code)
    want, want_first = encode_reference(labels_arr.to_pylist(), values_arr.to_pylist(), missing_code, unknown_code)
    assert codes.dtype == np.intp
    assert codes.tolist() == want
    assert first_unknown == want_first


# ---------------------------------------------------------------------------------------------- samplers

TOP = (1 << 64) - 1


def words_around(x: int) -> list[int]:
    """Words whose integer uniform is x - 1, x and x + 1 (within range), with low bits set and clear."""
    out = []
    for y in (x - 1, x, x + 1):
        if 0 <= y < 1 << 62:
            out += [y << SHIFT, (y << SHIFT) | ((1 << SHIFT) - 1)]
    return out


def form8_inputs(s: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep probabilities (with q = 1, q = 0 and q just below 1 rows), codes with -1 mixed in, and words
    with the edge cases x = K_k - 1, K_k, K_k + 1, the first and last word of each other category's units,
    0 and the largest word."""
    rng = np.random.default_rng(seed)
    q = rng.random(s)
    special = [1.0, 0.0, float(np.nextafter(1.0, 0.0)), 0.999999, 0.5]
    for i, value in zip(rng.permutation(s), special):
        q[i] = value
    n = 4000
    codes = rng.integers(-1, s, n)
    words = rng.integers(0, TOP, n, dtype=np.uint64, endpoint=True)
    keep, weight, _ = form8_units(q, (1.0 - q) / max(s - 1, 1) if s > 1 else np.zeros(1))
    edge_codes, edge_words = [], []
    for k in range(min(s, 60)):
        k_units, w_units = int(keep[k]), int(weight[k])
        xs = words_around(k_units) + [0, TOP]
        for t in (1, s - 2, s - 1):
            xs += words_around(k_units + t * w_units)
        edge_words += xs
        edge_codes += [k] * len(xs)
    codes = np.concatenate([codes, np.array(edge_codes, dtype=np.intp), [-1, -1]]).astype(np.intp)
    words = np.concatenate([words, np.array(edge_words, dtype=np.uint64), np.array([0, TOP], dtype=np.uint64)])
    return q, codes, words


@pytest.mark.parametrize("s", [1, 2, 3, 7, 50, 1000])
def test_diagonal_matches_form8_reference(s, diagonal_path):
    """DiagonalSampler's compiled draw releases exactly the codes of the plain-Python integer reference."""
    q, codes, words = form8_inputs(s, seed=s)
    sampler = DiagonalSampler(q)
    out = np.full(codes.size, -99, dtype=np.intp)
    sampler.draw(codes, words, out)
    assert out.tolist() == diagonal_reference(sampler, codes, words)


@pytest.mark.parametrize("kind", ["diagonal", "alias"])
@pytest.mark.parametrize("start, n", [(0, 1), (3, 511), (6, 513), (1, 5000)])
def test_keyed_stream_draws_the_words_of_its_rows(kind, start, n):
    """Drawing from the keyed stream itself (the kernel computes Philox in chunks of 512) releases what the
    reference releases with the rows' words (pramkit.kernel.rng.words_at: Philox written in NumPy arithmetic, not
    NumPy's generator), across chunk ends and starts inside a Philox block of four."""
    from pramkit.engine.perturb import perturb_codes
    from pramkit.kernel.rng import SecretKey, words_at

    q, codes, _ = form8_inputs(7, seed=n)
    codes = codes[:n]
    key = SecretKey(bytes(range(32)), "test")
    words = words_at(key, "v", np.arange(start, start + n))
    if kind == "diagonal":
        matrix, want = PramMatrix.from_diagonal(q, list("abcdefg")), diagonal_reference(DiagonalSampler(q), codes,
                                                                                         words)
    else:
        m = np.random.default_rng(n).dirichlet(np.ones(7), 7) * 0.3 + 0.7 * np.eye(7)
        matrix, want = PramMatrix(m), alias_reference(AliasSampler(m), codes, words)
    assert perturb_codes(codes, matrix, key=key, variable="v", start=start).tolist() == want


@functools.cache
def _mostly_moving(kind: str) -> DiagonalSampler | AliasSampler:
    """A sampler of 1000 categories that moves most values (keep probabilities under 0.3)."""
    s, rng = 1000, np.random.default_rng(5)
    if kind == "diagonal":
        return DiagonalSampler(rng.uniform(0.0, 0.3, s))
    if kind == "alias":
        return AliasSampler(rng.dirichlet(np.ones(s), s) * 0.8 + 0.2 * np.eye(s))
    return CumulativeSampler(rng.dirichlet(np.ones(s), s) * 0.8 + 0.2 * np.eye(s))


@pytest.mark.parametrize("kind", ["diagonal", "alias", "cumulative"])
@pytest.mark.parametrize("counter", [[0, 0, 0, 0], [2**64 - 3, 0, 0, 0], [2**64 - 2, 2**64 - 1, 2**64 - 1, 7]])
@pytest.mark.parametrize("used", [0, 1, 3, 4])
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 6, 7, 8, 9, 511, 512, 513, 2000])
def test_philox_source_follows_numpys_generator(kind, counter, used, n):
    """The compiled draws compute Philox-4x64-10 themselves from a Philox generator's state
    (pramkit.engine.sampling.uniform_source): they release what they release with the words NumPy's own
    generator gives, and leave the generator where NumPy's would be, whatever the words of its last block
    already used and across carries from each counter word into the next."""
    sampler = _mostly_moving(kind)
    codes = np.random.default_rng(n + used).integers(-1, sampler.size, n)

    def generator() -> np.random.Generator:
        gen = np.random.Generator(np.random.Philox(key=[11, 2**63 + 5], counter=np.array(counter, np.uint64)))
        gen.bit_generator.random_raw(used)
        return gen

    ours, numpys = generator(), generator()
    out, want = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp)
    counts = release(sampler, codes, ours, out)
    assert counts == release(sampler, codes, numpys.bit_generator.random_raw(n), want)  # most values move
    assert out.tolist() == want.tolist()
    a, b = ours.bit_generator.state, numpys.bit_generator.state
    assert a["state"]["counter"].tolist() == b["state"]["counter"].tolist()
    assert a["buffer"].tolist() == b["buffer"].tolist() and a["buffer_pos"] == b["buffer_pos"]
    assert ours.random(9).tolist() == numpys.random(9).tolist()


def test_generator_other_than_philox_reads_its_raw_words():
    """Another bit generator is read through its capsule, word by word, as random_raw reads it."""
    sampler = _mostly_moving("alias")
    codes = np.random.default_rng(1).integers(0, sampler.size, 3000)
    out, want = np.empty(codes.size, dtype=np.intp), np.empty(codes.size, dtype=np.intp)
    release(sampler, codes, np.random.Generator(np.random.PCG64(3)), out)
    release(sampler, codes, np.random.PCG64(3).random_raw(codes.size), want)
    assert out.tolist() == want.tolist()


def test_philox_state_and_words_are_checked():
    sampler, codes, out = DiagonalSampler(np.array([0.5, 0.5])), np.zeros(3, dtype=np.intp), np.empty(3, np.intp)
    with pytest.raises(ValueError, match="Philox state"):
        sampler.kernel(codes, np.zeros(10, dtype=np.uint64), 1, out, -1)
    with pytest.raises(ValueError, match="buffer position"):
        sampler.kernel(codes, np.array([0] * 10 + [5], dtype=np.uint64), 1, out, -1)
    with pytest.raises(ValueError, match="words"):
        sampler.kernel(codes, np.zeros(2, dtype=np.uint64), 0, out, -1)
    with pytest.raises(ValueError, match="unknown kind"):
        sampler.kernel(codes, np.zeros(3, dtype=np.uint64), 7, out, -1)
    with pytest.raises(ValueError, match="62 bits"):
        _kernels.draw_diagonal(codes, np.zeros(3, dtype=np.uint64), 0, sampler._keep, sampler._weight,
                               sampler._inv_weight, sampler._rows, out, -1, 1)
    with pytest.raises(ValueError, match="rows"):
        _kernels.draw_diagonal(codes, np.zeros(3, dtype=np.uint64), 0, sampler._keep, sampler._weight,
                               sampler._inv_weight, sampler._rows[:-1], out, -1, SHIFT)


def test_diagonal_extra_units_go_to_the_last_other_category():
    """A row that keeps nothing (q = 0) gives W units to each other category and the E units past
    (S - 1) W to its last other category: the largest words land there, never on k itself."""
    q = np.array([0.0, 0.0, 0.0])
    sampler = DiagonalSampler(q)
    keep, weight = sampler._keep[1:], sampler._weight[1:]
    assert keep.tolist() == [0, 0, 0] and int(weight[0]) == (1 << 62) // 2
    words = np.array([TOP, (int(weight[0]) << SHIFT) - 1, int(weight[0]) << SHIFT], dtype=np.uint64)
    for k, want in ((0, [2, 1, 2]), (1, [2, 0, 2]), (2, [1, 0, 1])):
        out = np.empty(3, dtype=np.intp)
        sampler.draw(np.full(3, k, dtype=np.intp), words, out)
        assert out.tolist() == want


def test_diagonal_never_moves_q_one():
    """A category with keep probability 1 is released as itself for every word, the largest included."""
    q = np.array([1.0, 0.3, 1.0, 0.0])
    words = np.concatenate([np.random.default_rng(1).integers(0, TOP, 5000, dtype=np.uint64, endpoint=True),
                            np.array([0, TOP], dtype=np.uint64)])
    for k in (0, 2):
        codes = np.full(words.size, k, dtype=np.intp)
        out = np.empty_like(codes)
        DiagonalSampler(q).draw(codes, words, out)
        assert (out == k).all()


BIGGEST = (1 << 63) - 1  # the largest weight an int64 holds


@settings(max_examples=300, deadline=None)
@given(bits=st.integers(1, 62), data=st.data())
def test_exact_reciprocals_give_every_quotient(bits, data):
    """floor(r m / 2^l) is floor(r / W), in Python integers, for divisors of every size (1, powers of two and
    their neighbours, 2^bits - 1 and beyond, the largest int64) and numerators at the ends of [0, 2^bits) and
    around multiples of W, where a reciprocal one unit too small or too large would first go wrong."""
    top = (1 << bits) - 1
    powers = st.integers(0, 62).map(lambda e: 1 << e).flatmap(lambda p: st.sampled_from([p, p + 1, max(1, p - 1)]))
    d = data.draw(st.one_of(st.sampled_from([1, 2, 3, max(1, top), top + 1, top + 2, BIGGEST]),
                            st.integers(1, BIGGEST), powers))
    magic, magic_shift = np.empty(1, dtype=np.uint64), np.empty(1, dtype=np.int64)
    _kernels.exact_reciprocals(np.array([d], dtype=np.int64), bits, magic, magic_shift)
    m, l = int(magic[0]), int(magic_shift[0])
    assert m <= 1 << (bits + 1) and l <= 63
    q_top = top // d
    around = [q * d + e for q in (1, 2, q_top - 1, q_top, data.draw(st.integers(0, q_top)))
              for e in (-1, 0, 1)]
    for r in [0, 1, top, top - 1, *around, data.draw(st.integers(0, top))]:
        if 0 <= r <= top:
            assert (r * m) >> (bits + l) == r // d, (r, d)
            assert ((((r << (64 - bits)) * m) >> 64) >> l) == r // d, (r, d)  # the form the loops compute


def test_exact_reciprocals_of_zero_and_refusals():
    magic, magic_shift = np.empty(3, dtype=np.uint64), np.empty(3, dtype=np.int64)
    _kernels.exact_reciprocals(np.array([0, 1, 7], dtype=np.int64), 62, magic, magic_shift)
    assert magic.tolist()[0] == 0 and magic_shift.tolist()[0] == 0      # a row that moves nothing
    assert magic.tolist()[1:] == [1 << 62, -(-(1 << 65) // 7)] and magic_shift.tolist()[1:] == [0, 3]
    with pytest.raises(ValueError, match="bits must be 1 to 62"):
        _kernels.exact_reciprocals(np.array([1], dtype=np.int64), 63, magic[:1], magic_shift[:1])
    with pytest.raises(ValueError, match="weight 1 is negative"):
        _kernels.exact_reciprocals(np.array([1, -4, 2], dtype=np.int64), 62, magic, magic_shift)
    with pytest.raises(ValueError, match="magic"):
        _kernels.exact_reciprocals(np.array([1, 2], dtype=np.int64), 62, magic, magic_shift)
    with pytest.raises(ValueError, match="no form \\(8\\) loop"):
        _kernels._diagonal_path("fused")
    with pytest.raises(ValueError, match="no alias loop avx9"):
        _kernels._alias_path("avx9")


@pytest.mark.parametrize("s, n", [(10_000, 1_000_000), (3, 4099), (1, 7)])
def test_every_form8_loop_releases_the_same_stream(s, n):
    """A million keyed draws of 10 000 categories (every path through the cap and the skip of k), and small
    ones whose length is not a multiple of the vector loop's four: the loop that estimates each quotient in
    doubles, the one that multiplies by its exact reciprocal and its AVX2 form agree, counts included."""
    rng = np.random.default_rng(11 + s)
    q = rng.uniform(0.0, 1.0, s)
    q[:3] = [0.0, 1.0, np.nextafter(1.0, 0.0)][:s]
    if s == 1:
        q[0] = 1.0
    sampler = DiagonalSampler(q)
    codes = rng.integers(-1, s, n).astype(np.intp)
    released = {}
    before = _kernels._diagonal_path()
    try:
        for name in diagonal_paths_here():
            _kernels._diagonal_path(name)
            out = np.empty_like(codes)
            gen = np.random.Generator(np.random.Philox(key=5))
            counts = release(sampler, codes, gen, out, missing_code=min(s - 1, 2))
            released[name] = (out, counts)
    finally:
        _kernels._diagonal_path(before)
    for name in released:
        assert np.array_equal(released[name][0], released["estimate"][0]), name
        assert released[name][1] == released["estimate"][1], name


def test_a_real_file_is_released_byte_for_byte_alike_on_every_loop(sdc_data, key):
    """EU-SILC (14 827 persons: 2 720 missing values in the economic status) released through form (8) (the
    region, the economic status, the age) and alias tables (the household size, a dense matrix) on each loop
    the processor runs: the same bytes."""
    import pandas as pd

    from pramkit.engine.perturb import perturb_frame
    from pramkit.manifest import Manifest

    data = pd.read_csv(sdc_data / "eusilc_laeken.csv", usecols=["db040", "pl030", "hsize", "age"])
    rng = np.random.default_rng(4)
    labels = {c: sorted(data[c].dropna().unique().tolist()) for c in data.columns}
    matrices = {c: PramMatrix.from_diagonal(rng.uniform(0.5, 0.95, len(v)), v) for c, v in labels.items()}
    sizes = labels["hsize"]
    matrices["hsize"] = PramMatrix(random_matrix(len(sizes), rng), sizes)
    manifest = Manifest.of(matrices)
    released = {}
    before = _kernels._diagonal_path(), _kernels._alias_path()
    try:
        for diagonal, alias in LOOPS:
            if diagonal in diagonal_paths_here():
                _kernels._diagonal_path(diagonal)
                _kernels._alias_path(alias)
                released[diagonal] = perturb_frame(data, manifest, key=key, threads=1).data.to_csv(index=False)
    finally:
        _kernels._diagonal_path(before[0])
        _kernels._alias_path(before[1])
    assert int(data["pl030"].isna().sum()) == 2720
    assert len(released) >= 2 and len(set(released.values())) == 1


def test_codes_outside_the_categories_are_found_on_every_loop(diagonal_path):
    """A code below -1 or past S - 1, at any place within a vector of four, is written out as it is and its
    first position reported, on every loop."""
    sampler = DiagonalSampler(np.array([0.5, 0.7, 0.9]))
    for where in range(6):
        codes = np.zeros(9, dtype=np.intp)
        codes[where] = 3 if where % 2 else -2
        codes[where + 3] = -7
        out = np.full(codes.size, -99, dtype=np.intp)
        first, _, _ = sampler.kernel(codes, np.arange(9, dtype=np.uint64) << np.uint64(58), 0, out, -1)
        assert first == where
        assert out[where] == codes[where] and out[where + 3] == -7


def test_a_row_shift_past_63_is_refused(diagonal_path):
    """No loop shifts a quotient by more than 63 bits: a record asking for it is refused before any draw."""
    sampler, codes, out = DiagonalSampler(np.array([0.5, 0.5])), np.zeros(3, dtype=np.intp), np.empty(3, np.intp)
    rows = sampler._rows.copy()
    rows[2, 2] = 64
    with pytest.raises(ValueError, match="the shift of row 2 passes 63"):
        _kernels.draw_diagonal(codes, np.zeros(3, dtype=np.uint64), 0, sampler._keep, sampler._weight,
                               sampler._inv_weight, rows, out, -1, SHIFT)


def random_matrix(s: int, rng: np.random.Generator, zero_share: float = 0.3) -> np.ndarray:
    """A row-stochastic matrix with some zero off-diagonal entries, a row with q = 0, a row with q = 1 and a row
    whose only off-diagonal mass is in one column."""
    m = rng.random((s, s)) * (rng.random((s, s)) >= zero_share)
    np.fill_diagonal(m, 0.0)
    for k in range(s):
        if s > 1 and m[k].sum() == 0:
            m[k, (k + 1) % s] = 1.0
    m /= np.maximum(m.sum(axis=1, keepdims=True), 1e-300)
    q = rng.random(s)
    if s > 1:
        q[0] = 0.0
    if s > 2:
        q[1] = 1.0
    if s > 3:
        m[2] = 0.0
        m[2, 0] = 1.0
    m *= (1.0 - q)[:, None]
    m[np.arange(s), np.arange(s)] = q
    if s == 1:
        m[0, 0] = 1.0
    return m


def alias_inputs(sampler: AliasSampler, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Codes with -1 mixed in and words, with the edge cases x = K_k and around it, 0 and the largest word."""
    s = sampler.size
    rng = np.random.default_rng(seed)
    codes = rng.integers(-1, s, 4000)
    words = rng.integers(0, TOP, codes.size, dtype=np.uint64, endpoint=True)
    edge_codes, edge_words = [], []
    for k in range(min(s, 60)):
        xs = words_around(int(sampler._keep[k])) + [0, TOP]
        edge_codes += [k] * len(xs)
        edge_words += xs
    return (np.concatenate([codes, np.array(edge_codes, dtype=np.intp)]).astype(np.intp),
            np.concatenate([words, np.array(edge_words, dtype=np.uint64)]))


@pytest.mark.parametrize("s", [1, 2, 3, 7, 50])
def test_alias_matches_per_value_reference(s, loops):
    """AliasSampler's compiled draw releases exactly the codes of the integer alias arithmetic redone in Python."""
    m = random_matrix(s, np.random.default_rng(100 + s))
    sampler = AliasSampler(m)
    codes, words = alias_inputs(sampler, seed=s)
    out = np.full(codes.size, -99, dtype=np.intp)
    sampler.draw(codes, words, out)
    assert out.tolist() == alias_reference(sampler, codes, words)


def brute_force_law(draw, s: int, bits: int) -> np.ndarray:
    """The law a compiled draw realises at a resolution of ``bits``, by enumeration: every integer
    uniform x in [0, 2^bits), as the word x << (64 - bits), drawn for every row."""
    x = np.arange(1 << bits, dtype=np.uint64) << np.uint64(64 - bits)
    law = np.zeros((s, s), dtype=np.int64)
    for k in range(s):
        out = np.empty(x.size, dtype=np.intp)
        draw(np.full(x.size, k, dtype=np.intp), x, out, 64 - bits)
        law[k] = np.bincount(out, minlength=s)
    return law


@pytest.mark.parametrize("s, bits", [(1, 6), (2, 6), (3, 8), (5, 12), (9, 12)])
def test_every_word_of_a_small_resolution_gives_the_form8_units(s, bits, diagonal_path):
    """Enumerating every integer uniform of a small resolution through the compiled form (8) draw counts
    exactly the units of pramkit.privacy.law.form8_units (extra units on the last other category)."""
    rng = np.random.default_rng(s)
    q = rng.random(s)
    q[0] = 0.0 if s > 1 else 1.0
    if s > 2:
        q[1] = 1.0
    w = (1.0 - q) / max(s - 1, 1) if s > 1 else np.zeros(1)
    keep, weight, extra = form8_units(q, w, bits)
    d = 1 << bits
    tables = diagonal_tables(keep, weight, bits)

    def draw(codes, words, out, shift):
        _kernels.draw_diagonal(codes, words, 0, *tables, out, -1, shift)

    want = np.repeat(weight[:, None], s, axis=1)
    want[np.arange(s), np.arange(s)] = keep
    for k in range(s):
        if s > 1:
            want[k, s - 1 if k < s - 1 else s - 2] += extra[k]
    assert np.array_equal(brute_force_law(draw, s, bits), want)
    assert (want.sum(axis=1) == d).all()
    assert np.array_equal(want > 0, np.where(np.eye(s, dtype=bool), q[:, None] > 0, w[:, None] > 0))


@pytest.mark.parametrize("s, bits", [(2, 6), (3, 8), (5, 12), (7, 12)])
def test_uniform_rows_are_drawn_identically(s, bits, diagonal_path):
    """A uniform matrix (the classes of a k-anonymity design) is drawn with the same units in every row:
    enumerating every integer uniform through the compiled form (8) draw gives identical rows, so the
    realised law's epsilon is exactly 0 (not the 1e-16 of a leftover unit placed row by row)."""
    q = np.full(s, 1.0 / s)
    keep, weight, _ = form8_units(q, q.copy(), bits)
    tables = diagonal_tables(keep, weight, bits)

    def draw(codes, words, out, shift):
        _kernels.draw_diagonal(codes, words, 0, *tables, out, -1, shift)

    law = brute_force_law(draw, s, bits)
    assert (law == law[0]).all() and law[0].sum() == 1 << bits
    assert law[0].max() - law[0].min() < s               # as near uniform as 2^bits allows
    from pramkit.design.bistochastic.families import k_anonymity
    from pramkit.engine import realised_law

    classes = k_anonymity([f"c{i}" for i in range(2 * s)], s)       # two uniform classes of s categories
    assert realised_law(classes).block_epsilon == 0.0 and realised_law(PramMatrix.form8(q, q)).epsilon == 0.0


@pytest.mark.parametrize("s, bits", [(1, 8), (2, 8), (3, 10), (6, 12), (11, 14)])
@pytest.mark.parametrize("kind", ["alias", "cumulative"])
def test_every_word_of_a_small_resolution_gives_the_dense_units(s, bits, kind, loops):
    """Enumerating every integer uniform of a small resolution through the compiled alias and bisection draws
    counts exactly the units of pramkit.privacy.law.dense_units: every positive entry at least one unit
    (entries of 1e-300 included), every zero none."""
    m = random_matrix(s, np.random.default_rng(7 * s + bits), zero_share=0.5)
    if s > 3:
        m[3] *= 1.0 - 1e-12
        m[3, (3 + 2) % s] = 1e-300
        m[3, 3] += 1.0 - m[3].sum()
    b = max(0, (s - 1).bit_length())
    units = dense_units(m, bits, 1 << b if kind == "alias" else 1)
    keep = np.ascontiguousarray(np.diagonal(units))
    off = units.copy()
    np.fill_diagonal(off, 0)
    if kind == "alias":
        cells = np.empty(s << b, dtype=np.int64)
        _kernels.alias_cells(off.ravel(), s, b, cells)

        def draw(codes, words, out, shift):
            _kernels.draw_alias(codes, words, 0, keep, cells, out, -1, shift, b)
    else:
        cumulative = np.cumsum(off, axis=1)

        def draw(codes, words, out, shift):
            _kernels.draw_cumulative(codes, words, 0, keep, cumulative, out, -1, shift)

    assert np.array_equal(brute_force_law(draw, s, bits), units)
    assert np.array_equal(units > 0, m > 0)
    assert (units.sum(axis=1) == 1 << bits).all()


def test_alias_cells_refuse_rows_off_the_grain():
    off = np.array([[0, 3], [2, 0]], dtype=np.int64)
    with pytest.raises(ValueError, match="multiple of 2"):
        _kernels.alias_cells(off.ravel(), 2, 1, np.empty(4, dtype=np.int64))
    with pytest.raises(ValueError, match="cover"):
        _kernels.alias_cells(off.ravel(), 2, 0, np.empty(2, dtype=np.int64))


def test_alias_large_mostly_identity_matches_reference():
    """At S = 1000 (a table of a million cells), a few moving rows release the codes of the Python reference."""
    s = 1000
    rng = np.random.default_rng(7)
    m = np.eye(s)
    moving = np.array([0, 1, 499, 998, 999])
    for k in moving:
        row = rng.random(s) * (rng.random(s) < 0.2)
        row[k] = 0.0
        row /= row.sum()
        q = rng.random()
        m[k] = row * (1.0 - q)
        m[k, k] = q
    sampler = AliasSampler(m)
    codes = np.concatenate([rng.choice(moving, 20000), rng.integers(-1, s, 2000)]).astype(np.intp)
    words = rng.integers(0, TOP, codes.size, dtype=np.uint64, endpoint=True)
    out = np.empty_like(codes)
    sampler.draw(codes, words, out)
    assert out.tolist() == alias_reference(sampler, codes, words)
    assert (m[codes[codes >= 0], out[codes >= 0]] > 0).all()


ALIAS_MATRICES = {
    "docstring": (np.array([[0.7, 0.3, 0.0], [0.1, 0.6, 0.3], [0.0, 0.5, 0.5]]), None),
    "random6": (random_matrix(6, np.random.default_rng(11)), None),
    "random40": (random_matrix(40, np.random.default_rng(12), zero_share=0.6), [0, 1, 2, 17, 39]),
    "skewed": (np.array([[0.0, 1e-6, 0.0, 1.0 - 1e-6], [0.25, 0.25, 0.25, 0.25],
                         [0.1, 0.0, 0.0, 0.9], [0.0, 0.0, 0.5, 0.5]]), None),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ALIAS_MATRICES))
@pytest.mark.parametrize("kind", ["alias", "cumulative"])
def test_dense_shares_match_matrix_rows(name, kind):
    """Over 200 000 words per row the released shares match the row within 5 se; a zero entry is never drawn."""
    m, rows = ALIAS_MATRICES[name]
    s = m.shape[0]
    sampler = AliasSampler(m) if kind == "alias" else CumulativeSampler(m)
    n = 200_000
    words = np.random.default_rng(2024).bit_generator.random_raw(n)
    out = np.empty(n, dtype=np.intp)
    for k in range(s) if rows is None else rows:
        sampler.draw(np.full(n, k, dtype=np.intp), words, out)
        share = np.bincount(out, minlength=s) / n
        p = m[k]
        se = np.sqrt(p * (1.0 - p) / n)
        assert (np.abs(share - p) <= 5 * se + 1e-12).all(), (k, share, p)
        assert not out[m[k, out] == 0].size, f"row {k} released a zero entry"


def make_sampler(kind: str, s: int):
    """A sampler of each kind release() handles, on S categories."""
    rng = np.random.default_rng(s)
    if kind == "diagonal":
        return DiagonalSampler(rng.uniform(0.2, 0.9, s))
    if kind == "alias":
        return AliasSampler(random_matrix(s, rng))
    if kind == "cumulative":
        return CumulativeSampler(random_matrix(s, rng))
    return GeometricSampler(s, 0.7)


@pytest.mark.parametrize("kind", ["diagonal", "alias", "cumulative", "geometric"])
@pytest.mark.parametrize("missing_code", [-1, 0, 3])
def test_release_counts_match_numpy(kind, missing_code, loops):
    """release() returns NumPy's (missing, changed) counts, and the same output and counts when done in place."""
    s = 6
    sampler = make_sampler(kind, s)
    rng = np.random.default_rng(99)
    codes = rng.integers(-1, s, 20_000).astype(np.intp)
    words = rng.bit_generator.random_raw(codes.size)
    out = np.full(codes.size, -99, dtype=np.intp)
    counts = release(sampler, codes, words, out, missing_code)
    assert counts == (np.count_nonzero(codes == missing_code), np.count_nonzero(out != codes))
    assert (out[codes == -1] == -1).all() and (out[codes >= 0] >= 0).all() and (out < s).all()
    in_place = codes.copy()
    assert release(sampler, in_place, words, in_place, missing_code) == counts
    assert np.array_equal(in_place, out)


@pytest.mark.parametrize("kind", ["diagonal", "alias"])
def test_release_counts_against_references(kind, loops):
    """Output and counts equal the Python references' for several missing codes, with strided and read-only codes."""
    s = 5
    sampler = make_sampler(kind, s)
    rng = np.random.default_rng(3)
    base = rng.integers(-1, s, 6000).astype(np.intp)
    words_base = rng.bit_generator.random_raw(base.size)
    codes, words = base[::2], words_base[::2]  # strided views
    want = (diagonal_reference if kind == "diagonal" else alias_reference)(sampler, codes, words)
    frozen = base.copy()
    frozen.setflags(write=False)
    for missing_code in (-1, 2, s + 5):
        out = np.empty(codes.size, dtype=np.intp)
        counts = release(sampler, codes, words, out, missing_code)
        assert out.tolist() == want
        changed = sum(1 for a, b in zip(codes.tolist(), want) if a != b)
        assert counts == (codes.tolist().count(missing_code), changed)
        out2 = np.empty(base.size, dtype=np.intp)
        assert release(sampler, frozen, words_base, out2, missing_code)[0] == base.tolist().count(missing_code)


@pytest.mark.parametrize("kind", ["diagonal", "alias", "cumulative"])
def test_release_all_missing_and_empty(kind):
    """A block of only missing codes stays missing (all counted, none changed); an empty block counts nothing."""
    sampler = make_sampler(kind, 4)
    codes = np.full(100, -1, dtype=np.intp)
    out = np.empty_like(codes)
    assert release(sampler, codes, np.random.default_rng(0), out) == (100, 0)
    assert (out == -1).all()
    assert release(sampler, codes, np.random.default_rng(0), out, 0) == (0, 0)
    empty = np.empty(0, dtype=np.intp)
    assert release(sampler, empty, np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.intp)) == (0, 0)


@pytest.mark.parametrize("kind", ["diagonal", "alias", "cumulative"])
@pytest.mark.parametrize("bad", [-2, 5, 6, 1000, -(2 ** 40), 2 ** 62])
@pytest.mark.parametrize("where", [0, 17, 499])
def test_release_rejects_codes_outside_range(kind, bad, where, loops):
    """A code outside -1..S-1 raises ValueError naming it (release, draw, in place); the kernel reports its position."""
    s = 5
    sampler = make_sampler(kind, s)
    rng = np.random.default_rng(where)
    codes = rng.integers(-1, s, 500).astype(np.intp)
    codes[where] = bad
    codes[-1] = -7  # a later bad code: the first one is named
    if where == 499:
        codes[-1] = bad
    words = rng.bit_generator.random_raw(codes.size)
    message = rf"-1\.\.{s - 1}, found {bad}$"
    with pytest.raises(ValueError, match=message):
        release(sampler, codes, words, np.empty(codes.size, dtype=np.intp))
    with pytest.raises(ValueError, match=message):
        sampler.draw(codes, words, np.empty(codes.size, dtype=np.intp))
    with pytest.raises(ValueError, match=message):
        release(sampler, codes.copy(), words, codes.copy(), 0)
    in_place = codes.copy()
    with pytest.raises(ValueError, match=message):
        release(sampler, in_place, words, in_place)
    position = sampler.kernel(codes, words, 0, np.empty(codes.size, dtype=np.intp), -1)[0]
    assert position == int(np.flatnonzero((codes < -1) | (codes >= s))[0]) == where


def test_release_rejects_bad_code_with_one_category():
    """With S = 1 the codes 1 and -2 are out of range for every compiled sampler."""
    for sampler in (DiagonalSampler(np.array([0.4])), AliasSampler(np.array([[1.0]])),
                    CumulativeSampler(np.array([[1.0]]))):
        for bad in (1, -2):
            with pytest.raises(ValueError, match=rf"found {bad}$"):
                release(sampler, np.array([0, -1, bad]), words_of([0.1, 0.2, 0.3]), np.empty(3, dtype=np.intp))


# ---------------------------------------------------------------------------------------------- UTF-8 labels


LONG = "0123456789abcdef-long-label-tail"
EDGE_LABELS = ["", "a", "ab", "abc", "Zürich", "東京", "x" * 16, "x" * 17, "x" * 8, "y" * 15 + "é",
               LONG, LONG[:-1] + "!", "\x00", "a\x00", "ü" * 30, "z" * 40]
EDGE_UNKNOWN = ["abcd", "b", "x" * 15, "x" * 18, LONG[:16], LONG[:17], LONG + "x", LONG[:20] + "#" + LONG[21:],
                "Zurich", "東", "\x00\x00", "a\x00\x00", "zz", " ", "Z" * 40]


@pytest.mark.parametrize("label_type", TEXT_TYPES, ids=TEXT_IDS)
@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
@pytest.mark.parametrize("missing_code,unknown_code", [(-1, -2), (3, -2), (-1, 99)])
def test_utf8_encode_edge_labels(label_type, value_type, missing_code, unknown_code):
    """Empty, prefix, long, 16-byte-prefix-sharing, NUL and non-ASCII texts encode as the dictionary oracle says."""
    rng = np.random.default_rng(1)
    pool = EDGE_LABELS + EDGE_UNKNOWN + [None]
    values = [pool[i] for i in rng.integers(0, len(pool), 3000)]
    labels = pa.array(EDGE_LABELS, type=label_type)
    check_encode(labels, pa.array(values, type=value_type), missing_code, unknown_code)
    known_only = [v for v in values if v not in EDGE_UNKNOWN]
    check_encode(labels, pa.array(known_only, type=value_type), missing_code, unknown_code)


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
def test_utf8_encode_nul_padded_labels(value_type):
    """Labels that differ only by trailing NUL bytes (equal zero-padded words, different lengths) are told apart."""
    labels = ["\x00" * k for k in range(0, 26)] + ["q" + "\x00" * k for k in range(0, 26)]
    values = labels[::-1] + ["\x00" * 30, "q" + "\x00" * 30, None]
    check_encode(pa.array(labels, type=value_type), pa.array(values, type=value_type))


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
@pytest.mark.parametrize("with_nulls", [False, True], ids=["no-nulls", "nulls"])
def test_utf8_encode_sliced(value_type, with_nulls):
    """A slice of values (and a slice of labels) encodes as its own Python values, nulls read at the slice's bits."""
    rng = np.random.default_rng(4)
    pool = EDGE_LABELS + (EDGE_UNKNOWN[:2] if with_nulls else []) + ([None] if with_nulls else [])
    values = [pool[i] for i in rng.integers(0, len(pool), 80)]
    values[:3] = [None, "nope", None]  # outside the slice: only the slice's own validity bits count
    if with_nulls:
        values[4] = values[20] = values[52] = None
    arr = pa.array(values, type=value_type)
    for start, length in ((3, 50), (5, 70), (11, 1), (9, 0)):
        sliced = arr.slice(start, length)
        check_encode(pa.array(EDGE_LABELS, type=value_type), sliced)
    labels = pa.array(["junk", None, "zzz"] + EDGE_LABELS + ["tail"], type=value_type).slice(3, len(EDGE_LABELS))
    check_encode(labels, arr.slice(3, 50))


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
def test_utf8_null_label_never_matches(value_type):
    """A null label is never matched, not by the empty string (which matches its own label) nor by a null value."""
    labels = pa.array(["a", None, ""], type=value_type)
    values = pa.array(["", None, "a", "", "b", None], type=value_type)
    codes, first = Utf8Labels(labels).encode(values, missing_code=-1, unknown_code=-2)
    assert codes.tolist() == encode_reference(labels.to_pylist(), values.to_pylist(), -1, -2)[0]
    assert first == 4
    check_encode(pa.array([None, "a"], type=value_type), pa.array(["", "a", None], type=value_type))
    # a null label whose offsets span the bytes "b": "b" is no label
    spanned = text_array(["a", None, "c"], value_type, null_bytes=b"b")
    check_encode(spanned, pa.array(["b", "a", "c", ""], type=value_type))


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
@pytest.mark.parametrize("last", ["a", "", "Zürich", "x" * 16, LONG, "b"])
def test_utf8_encode_value_at_end_of_data(value_type, last):
    """Values at the very end of an exactly sized data buffer encode as the oracle says, known or not."""
    labels = pa.array(EDGE_LABELS, type=value_type)
    for values in ([last], ["abc", "x" * 17, last], ["a"] * 5 + [last], [LONG, "ab", last]):
        check_encode(labels, text_array(values, value_type))
        check_encode(labels, text_array(values, value_type, prefix=b"\xff" * 13))


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
def test_utf8_encode_null_spans_and_empty_data(value_type):
    """Nulls spanning a label's bytes get missing_code; data-less and empty arrays encode as the oracle says."""
    labels = pa.array(EDGE_LABELS, type=value_type)
    check_encode(labels, text_array(["a", None, "東京", None], value_type, null_bytes=b"abc"), missing_code=7)
    check_encode(labels, text_array(["", "", ""], value_type))
    check_encode(labels, text_array([None, None], value_type))
    check_encode(pa.array(["a"], type=value_type), text_array(["", None], value_type))
    codes, first = Utf8Labels(labels).encode(pa.array([], type=value_type), missing_code=-1, unknown_code=-2)
    assert codes.size == 0 and first == -1


SHORT_LABELS = ["", "a", "ab", "Zürich", "東京", "x" * 8, "x" * 15, "x" * 16, "y" * 14 + "é", "\x00", "a\x00",
                "\x00" * 16]
SHORT_UNKNOWN = ["x" * 17, "x" * 16 + "\x00", "x" * 40, "y" * 14 + "é!", "\x00" * 17, "\x00" * 2, "a\x00\x00", "b",
                 "Zürich!", "x" * 7, "東"]


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
@pytest.mark.parametrize("with_nulls", [False, True], ids=["no-nulls", "nulls"])
def test_utf8_encode_labels_of_at_most_16_bytes(value_type, with_nulls):
    """Labels of at most 16 bytes (the loop without a branch on the value's length): values longer than 16
    bytes that start with a 16-byte label, NUL-padded twins, nulls or none, the last values of an exactly
    sized buffer (read by the general loop), of a buffer with bytes after them and of a slice of a larger
    array all encode as the dictionary oracle says."""
    rng = np.random.default_rng(16)
    pool = SHORT_LABELS + SHORT_UNKNOWN + ([None] if with_nulls else [])
    values = [pool[i] for i in rng.integers(0, len(pool), 2000)]
    labels = pa.array(SHORT_LABELS, type=value_type)
    for tail in ([], ["x" * 16], ["x" * 17], ["a", "", "x" * 16, ""], SHORT_UNKNOWN, SHORT_LABELS):
        check_encode(labels, text_array(values + tail, value_type))
        check_encode(labels, text_array(values + tail, value_type, prefix=b"\xff" * 5))
        whole = pa.array(values + tail + SHORT_LABELS, type=value_type)
        check_encode(labels, whole.slice(1, len(values) + len(tail) - 1))
    known = [v for v in values if v not in SHORT_UNKNOWN]
    check_encode(labels, text_array(known, value_type), missing_code=5, unknown_code=-7)


def random_words(rng: np.random.Generator, count: int, alphabet: str) -> list[str]:
    """``count`` distinct random strings of 1..40 characters of ``alphabet``."""
    seen: dict[str, None] = {}
    letters = np.array(list(alphabet))
    while len(seen) < count:
        lengths = rng.integers(1, 41, count)
        for n in lengths:
            seen.setdefault("".join(letters[rng.integers(0, letters.size, n)]), None)
            if len(seen) == count:
                break
    return list(seen)


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
def test_utf8_encode_labels_of_17_to_24_bytes(value_type):
    """Values of 17 to 24 bytes (three words) are told apart by their third word and length: labels sharing
    their first 16 bytes, values one byte off in the last word, NUL-padded twins, and the value that ends
    the buffer (read word by word) all match the dictionary oracle."""
    head = "married, spouse "
    labels = [head + tail for tail in ("present", "absent", "a", "ab\0", "ab", "éé", "12345678")] + ["x" * 24]
    strangers = [head + tail for tail in ("presenT", "absen", "ab\0\0", "b", "123456789", "")] + ["x" * 23]
    rng = np.random.default_rng(17)
    # many values with a label's first 16 bytes and length, differing in the third word only: some land on
    # that label's slot, where only the third word tells them apart
    strangers += [head + "".join(rng.choice(list("abcdefgprsent"), k)) for k in rng.integers(1, 9, 20_000)]
    pool = labels + strangers
    values = [pool[i] for i in rng.integers(0, len(pool), 30_000)]
    for last in labels + strangers[:20]:
        check_encode(pa.array(labels, type=value_type), text_array(values + [last], value_type))


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
def test_utf8_encode_many_labels(value_type):
    """10 000 random labels and 100 000 values (some unknown, some null) encode as the dictionary oracle says."""
    rng = np.random.default_rng(10)
    words = random_words(rng, 10_500, "abcdefgh01ü東")
    labels, others = words[:10_000], words[10_000:]
    picks = rng.integers(0, len(labels), 100_000)
    values = [labels[i] for i in picks]
    for i in rng.integers(0, len(values), 300):
        values[i] = others[i % len(others)]
    for i in rng.integers(0, len(values), 500):
        values[i] = None
    labels_arr = pa.array(labels, type=value_type)
    check_encode(labels_arr, pa.array(values, type=value_type))
    strangers = set(others)
    known = [labels[0] if v in strangers else v for v in values]
    check_encode(labels_arr, pa.array(known, type=value_type), missing_code=17)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), labels=st.lists(st.text(), min_size=1, max_size=30, unique=True),
       strangers=st.lists(st.text(), max_size=4), label_type=st.sampled_from(TEXT_TYPES),
       value_type=st.sampled_from(TEXT_TYPES), offset=st.integers(0, 9))
def test_utf8_encode_hypothesis(data, labels, strangers, label_type, value_type, offset):
    """Any unique labels: values from labels, non-labels and None encode as the oracle says and decode back."""
    pool = labels + [s for s in strangers if s not in labels] + [None]
    values = data.draw(st.lists(st.sampled_from(pool), max_size=60))
    labels_arr = pa.array(labels, type=label_type)
    check_encode(labels_arr, pa.array(values, type=value_type))
    padded = pa.array([pool[0]] * offset + values, type=value_type).slice(offset)
    check_encode(labels_arr, padded, missing_code=-1, unknown_code=-5)
    known = [v for v in values if v is None or v in labels]
    codes, first = Utf8Labels(labels_arr).encode(pa.array(known, type=value_type), missing_code=-1, unknown_code=-2)
    assert first == -1
    back = Utf8Labels(labels_arr).decode(codes, value_type)
    back.validate(full=True)
    assert back.type == value_type and back.to_pylist() == known


DECODE_LABELS = ["a", None, "", "Zürich", "東京", LONG, "x" * 16, "x" * 17, "ab", "\x00"]


@pytest.mark.parametrize("label_type", TEXT_TYPES, ids=TEXT_IDS)
@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
def test_utf8_decode_matches_labels(label_type, value_type):
    """decode gives each code's label (null for -1 and the null label) as a valid array of the asked type."""
    labels = pa.array(DECODE_LABELS, type=label_type)
    book = Utf8Labels(labels)
    rng = np.random.default_rng(2)
    codes = rng.integers(-1, len(DECODE_LABELS), 3001)
    cases = [codes, codes[::3], codes.astype(np.int32), np.full(7, -1), np.empty(0, dtype=np.intp),
             np.array([5, 5, 5]), np.array([2, 2]), np.array([len(DECODE_LABELS) - 1])]
    for c in cases:
        out = book.decode(c, value_type)
        out.validate(full=True)
        assert out.type == value_type
        assert out.to_pylist() == decode_reference(DECODE_LABELS, c)
        assert out.null_count == sum(1 for v in decode_reference(DECODE_LABELS, c) if v is None)


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
def test_utf8_decode_sliced_labels_and_round_trip(value_type):
    """Labels from a slice (offsets not from 0) decode right, and encode then decode gives the values back."""
    words = random_words(np.random.default_rng(6), 2000, "xyzé東0")
    parent = pa.array(["skip", None] + words + ["after"], type=value_type)
    labels = parent.slice(2, len(words))
    book = Utf8Labels(labels)
    rng = np.random.default_rng(8)
    codes = rng.integers(-1, len(words), 50_000)
    out = book.decode(codes, value_type)
    out.validate(full=True)
    assert out.to_pylist() == decode_reference(words, codes)
    values = pa.array(decode_reference(words, codes), type=value_type)
    again, first = book.encode(values, missing_code=-1, unknown_code=-2)
    assert first == -1
    assert again.tolist() == codes.tolist()
    assert book.decode(again, value_type).equals(values)


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
def test_utf8_decode_null_label_with_bytes_and_bad_codes(value_type):
    """A null label spanning bytes decodes to null; a code outside -1..S-1 raises ValueError, no crash."""
    labels = text_array(["a", None, "c", LONG], value_type, null_bytes=b"bb")
    book = Utf8Labels(labels)
    codes = np.array([1, 0, 2, 1, -1, 3, 0])
    out = book.decode(codes, value_type)
    out.validate(full=True)
    assert out.to_pylist() == decode_reference(["a", None, "c", LONG], codes)
    for bad in (4, -2, 1000):
        with pytest.raises(ValueError):
            book.decode(np.array([0, bad, 1]), value_type)


def test_utf8_size_counts_bytes_and_nulls():
    """utf8_size gives the labels' total bytes (past what 4-byte offsets address) and the number of codes -1."""
    lengths = [2 ** 31 - 11, 10, 1, 0]
    # shifted by one: entry 0 for code -1; utf8_size reads the lengths only
    by_code = label_records(bytes(PAD), np.zeros(5, dtype=np.int64), np.array([0] + lengths))
    for codes in ([0, 1], [0, 1, 2], [0, -1, 3, 1], [1, 0, 2, 0], [], [-1, -1]):
        total = sum(lengths[k] for k in codes if k >= 0)
        assert _kernels.utf8_size(np.array(codes, dtype=np.intp), by_code) == (total, codes.count(-1))
    for bad in (4, -2):
        with pytest.raises(ValueError):
            _kernels.utf8_size(np.array([0, bad], dtype=np.intp), by_code)
    with pytest.raises(ValueError):  # a negative length
        _kernels.utf8_size(np.array([0], dtype=np.intp), with_field(by_code, 1, "length", -1))


@pytest.mark.parametrize("width", [4, 8])
def test_utf8_decode_room_boundary(width):
    """utf8_decode writes exactly when the bytes fit the room it is given (its buffer less PAD; for 4-byte
    offsets also at most 2^31 - 1) and returns -1 otherwise; offsets are the running byte sums."""
    labels = Utf8Labels(pa.array(["ab", "", "cdefghijklmnopqrstuvwxyz", None]))
    rng = np.random.default_rng(3)
    for _ in range(20):
        codes = rng.integers(-1, 4, 30).astype(np.intp)
        sizes = [0 if k < 0 else [2, 0, 24, 0][k] for k in codes]
        total = sum(sizes)
        for room, fits in ((total, True), (total + 7, True), (total - 1, False)):
            if room < 0:
                continue
            offsets = np.zeros(codes.size + 1, dtype=np.int32 if width == 4 else np.int64)
            out = np.zeros(room + PAD, dtype=np.uint8)
            written, nulls = _kernels.utf8_decode(codes, labels.records, labels.data, offsets, width, out)
            assert written == (total if fits else -1)
            if fits:
                assert offsets.tolist() == np.cumsum([0] + sizes).tolist() and nulls == int((codes == -1).sum())
                expected = "".join("" if k < 0 else ["ab", "", "cdefghijklmnopqrstuvwxyz", ""][k] for k in codes)
                assert bytes(out[:total]) == expected.encode()


@pytest.mark.parametrize("width", [4, 8])
@pytest.mark.parametrize("labels", [["ab", "", "cdefghijklmnop", None], ["ab", "married, spouse absent", "x" * 24, None],
                                    ["ab", "x" * 40, "é" * 12, None]])
def test_utf8_decode_with_room_for_the_longest_label_per_value(width, labels):
    """With room for the longest label per value the bytes are not checked value by value: the output at that
    room, one byte less (checked per value) and more is the same, for labels of up to 16, 24 and 40 bytes."""
    book = Utf8Labels(pa.array(labels))
    longest = max(len(t.encode()) for t in labels if t is not None)
    rng = np.random.default_rng(9)
    codes = rng.integers(-1, len(labels), 500).astype(np.intp)
    expected = "".join("" if k < 0 or labels[k] is None else labels[k] for k in codes).encode()
    for room in (codes.size * longest, codes.size * longest - 1, codes.size * longest + 100):
        offsets = np.zeros(codes.size + 1, dtype=np.int32 if width == 4 else np.int64)
        out = np.zeros(room + PAD, dtype=np.uint8)
        written, nulls = _kernels.utf8_decode(codes, book.records, book.data, offsets, width, out)
        assert written == len(expected) and bytes(out[:written]) == expected
        assert nulls == int((codes == -1).sum())


@pytest.mark.parametrize("one_pass_bytes", [0, 1 << 24])
def test_utf8_decode_both_passes_and_the_string_limit(monkeypatch, one_pass_bytes):
    """Labels of very different lengths are counted first (past ONE_PASS_BYTES), others written into room
    for the longest: both give the labels, cut to the bytes written; ``string`` gives None exactly when its
    4-byte offsets could not address the bytes (the limit lowered here to 100 bytes)."""
    import pramkit.kernel.utf8 as utf8

    monkeypatch.setattr(utf8, "ONE_PASS_BYTES", one_pass_bytes)
    monkeypatch.setattr(utf8, "_INT32_MAX", 100)
    words = ["a", "b" * 40, None, "ü"]
    for value_type in (pa.string(), pa.large_string()):
        labels = Utf8Labels(pa.array(words, type=value_type))
        for codes in ([0, 3, 1, -1, 1], [1, 1, 0, 2], [1, 1, 1], [0] * 50, []):
            total = sum(len(words[k].encode()) for k in codes if k >= 0 and words[k] is not None)
            out = labels.decode(np.array(codes, dtype=np.intp), value_type)
            if value_type == pa.string() and total > 100:
                assert out is None
                continue
            out.validate(full=True)
            assert out.to_pylist() == decode_reference(words, codes)
            assert out.buffers()[2].size == total + PAD


def test_utf8_decode_stays_within_its_buffers():
    """utf8_decode checks its tables once and each copy against the output: tables or an output that disagree
    with the codes raise ValueError or return -1 instead of reading or writing out of bounds."""
    labels = Utf8Labels(pa.array(["ab", "cdef"]))
    codes = np.array([0, 1, 1, -1], dtype=np.intp)
    offsets = np.zeros(5, dtype=np.int32)
    fits = np.zeros(10 + PAD, dtype=np.uint8)
    records = labels.records
    assert _kernels.utf8_decode(codes, records, labels.data, offsets, 4, fits) == (10, 1)
    assert bytes(fits[:10]) == b"abcdefcdef" and offsets.tolist() == [0, 2, 6, 10, 10]
    small = np.zeros(9 + PAD, dtype=np.uint8)
    assert _kernels.utf8_decode(codes, records, labels.data, offsets, 4, small)[0] == -1
    long = with_field(records, 2, "length", 400)  # a label of more than HEAD bytes past the label bytes
    bad = [
        (np.array([2], dtype=np.intp), records, labels.data, offsets[:2], 4),  # code past S - 1
        (np.array([-2], dtype=np.intp), records, labels.data, offsets[:2], 4),
        (codes, long, labels.data, offsets, 4),
        (codes, with_field(with_field(records, 2, "length", HEAD + 1), 2, "start", -1), labels.data, offsets, 4),
        (codes, with_field(records, 1, "length", -1), labels.data, offsets, 4),
        (codes, records.ravel()[:-8], labels.data, offsets, 4),  # not a whole number of records
        (codes, records, labels.data, offsets[:4], 4),  # offsets of the wrong size
        (codes, records, labels.data, offsets, 2),  # no such width
    ]
    for args in bad:
        with pytest.raises(ValueError):
            _kernels.utf8_decode(*args, fits)
    # a label of up to HEAD bytes is written from its record, whatever its start
    assert _kernels.utf8_decode(codes, with_field(records, 2, "start", 10**9), labels.data, offsets, 4, fits) == (10, 1)
    assert bytes(fits[:10]) == b"abcdefcdef"


def with_field(records: np.ndarray, entry: int, field: str, value: int) -> np.ndarray:
    """A copy of label records (pramkit.kernel.utf8.label_records) with one entry's length or start replaced."""
    out = records.copy()
    at = {"length": HEAD, "start": HEAD + 4}[field]
    out[entry, at:at + 4] = np.array([value], dtype=np.int32).view(np.uint8)
    return out


# ---------------------------------------------------------------------------------------------- Codebook


CATEGORIES = ["north", "south", "", "Zürich", "東京", LONG, "x" * 16]


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
@pytest.mark.parametrize("first_row", [0, 100])
def test_codebook_unknown_names_row(value_type, first_row):
    """Codebook.encode of a text column raises DataError naming the value and row (from 1) of the first unknown."""
    book = Codebook(CATEGORIES, column="x")
    values = ["north", None, "", "x" * 16 + "y", "west", "Zürich"]
    first = next(i for i, v in enumerate(values) if v is not None and v not in CATEGORIES)
    row = first_row + first + 1
    shown = re.escape(repr(values[first]))
    with pytest.raises(DataError, match=rf"column 'x', row {row}: value {shown} is not"):
        book.encode(pa.array(values, type=value_type), first_row=first_row)
    chunked = pa.chunked_array([pa.array(["south"] * 4, type=value_type), pa.array(values, type=value_type)])
    with pytest.raises(DataError, match=rf"row {row + 4}: value {shown}"):
        book.encode(chunked, first_row=first_row)
    sliced = pa.array(["zzz", "qqq"] + values, type=value_type).slice(2)
    with pytest.raises(DataError, match=rf"row {row}: value {shown}"):
        book.encode(sliced, first_row=first_row)


@pytest.mark.parametrize("value_type", TEXT_TYPES, ids=TEXT_IDS)
@pytest.mark.parametrize("missing", ["keep", "category"])
def test_codebook_text_encode_decode(value_type, missing):
    """Codebook encodes text as the dictionary oracle and decodes codes to the labels (missing category: null)."""
    categories = CATEGORIES + ([None] if missing == "category" else [])
    book = Codebook(categories, column="x", missing=missing)
    missing_code = len(CATEGORIES) if missing == "category" else -1
    rng = np.random.default_rng(12)
    pool = CATEGORIES + [None]
    values = [pool[i] for i in rng.integers(0, len(pool), 5000)]
    codes = book.encode(pa.array(values, type=value_type))
    assert codes.tolist() == encode_reference(categories, values, missing_code, -2)[0]
    chunked = pa.chunked_array([pa.array(values[:1234], type=value_type), pa.array(values[1234:], type=value_type)])
    assert book.encode(chunked).tolist() == codes.tolist()
    random_codes = rng.integers(-1, len(categories), 5000)
    for like in (pa.large_string(), pa.string()):
        out = book.decode(random_codes, like=like)
        out.validate(full=True)
        assert out.type == like
        assert out.to_pylist() == decode_reference(categories, random_codes)
        assert book.decode(codes, like=like).to_pylist() == values


# ---------------------------------------------------------------------------------------------- Python strings


class Text(str):
    """A str subclass: its text is what counts."""


def objects_reference(labels: list, values: list) -> list | None:
    """Codes of Python values by a dictionary (None, NaN, pandas.NA, pandas.NaT: missing), or None if a value
    is neither missing nor a str equal to a label."""
    import pandas as pd

    lookup = {label: i for i, label in enumerate(labels) if label is not None}
    out = []
    for v in values:
        if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v):
            out.append(None)
        elif isinstance(v, str) and str(v) in lookup:
            out.append(lookup[str(v)])
        else:
            return None
    return out


def fresh(text: str) -> str:
    """An equal str that is a distinct object (as string operations make them)."""
    return "".join(list(text))


@pytest.mark.parametrize("case", ["labels", "fresh objects", "missing kinds", "subclass", "non-ASCII", "empty",
                                  "unknown text", "a number", "lone surrogate", "many labels"])
def test_encode_objects_matches_dictionary(case):
    """Utf8Labels.encode_objects gives the dictionary oracle's codes (null where missing), or None where the
    oracle finds a value that is neither missing nor a label: for cached and fresh string objects alike."""
    import pandas as pd

    rng = np.random.default_rng(len(case))
    labels = CATEGORIES if case != "many labels" else random_words(rng, 5000, "abcü東")
    picks = [labels[i] for i in rng.integers(0, len(labels), 3000)]
    values = {
        "labels": picks,
        "fresh objects": [fresh(v) for v in picks],
        "missing kinds": [v if i % 5 else [None, float("nan"), pd.NA, pd.NaT, np.float64("nan")][i % 4]
                          for i, v in enumerate(picks)],
        "subclass": [Text(v) for v in picks],
        "non-ASCII": [fresh("Zürich"), "東京"] * 50 + picks,
        "empty": [],
        "unknown text": picks + ["nowhere"] + picks,
        "a number": picks[:100] + [3] + picks,
        "lone surrogate": picks[:10] + ["\ud800"],
        "many labels": picks + [fresh(v) for v in picks],
    }[case]
    arr = np.array(values + [None], dtype=object)[:-1]  # a 1-D object array even for lists of equal strings
    got = Utf8Labels(pa.array(labels)).encode_objects(arr, (pd.NA, pd.NaT))
    want = objects_reference(labels, values)
    if want is None:
        assert got is None
    else:
        got.validate(full=True)
        assert got.type == pa.int64() and got.to_pylist() == want


def test_encode_objects_refuses_other_arrays():
    """encode_objects reads a 1-D array of objects; object_encode refuses anything else with ValueError."""
    labels = Utf8Labels(pa.array(["a", "b"]))
    two_d = np.array([["a", "b"], ["b", "a"]], dtype=object)
    assert labels.encode_objects(two_d[:, 0]).to_pylist() == [0, 1]  # a strided column: made contiguous
    out, valid = np.empty(4, dtype=np.int64), np.empty(1, dtype=np.uint8)
    for bad in (two_d, np.array([1, 2, 3, 4]), [1, 2, 3, 4]):
        with pytest.raises((ValueError, AttributeError)):
            _kernels.object_encode(bad, labels.offsets, labels.data, labels.slots, labels.seed, (), out, valid)
    items = np.array(["a", "b", "a", "b"], dtype=object)
    for slots in (labels.slots[:8], labels.slots[:12]):  # a table too small for the labels, or of no power of two
        with pytest.raises(ValueError, match="inconsistent label table"):
            _kernels.object_encode(items, labels.offsets, labels.data, slots, labels.seed, (), out, valid)


def test_dictionary_objects_and_reference_counts():
    """Codebook.dictionary_objects gives the labels' own objects (NaN for -1) and adds exactly one reference
    per item written, given back when the array goes; a bad code raises ValueError and leaks nothing."""
    import sys

    book = Codebook(["f", "m", "x" * 40], column="sex")
    rng = np.random.default_rng(4)
    indices = rng.integers(-1, 3, 20_000)
    labels = book.dictionary(pa.string()).to_pylist()
    book.dictionary_objects(indices[:1], pa.string())  # builds the codebook's tuple of labels
    held = book._objects[pa.string()]
    before = [sys.getrefcount(v) for v in held] + [sys.getrefcount(None)]
    out = book.dictionary_objects(indices, pa.string())
    assert [v if isinstance(v, str) else "nan" for v in out.tolist()] == \
        [labels[i] if i >= 0 else "nan" for i in indices.tolist()]
    assert all(out[i] is held[k + 1] for i, k in enumerate(indices.tolist()[:100]))
    counts = np.bincount(indices + 1, minlength=4)
    now = [sys.getrefcount(v) for v in held]
    assert [now[k] - before[k] for k in range(4)] == counts.tolist()  # one reference per item written
    if sys.version_info < (3, 12):  # None is immortal from 3.12: its count does not move
        # numpy.empty's None items each held a reference, given back as they were replaced (none kept, none
        # given twice: either would move the count by the 20 000 items)
        assert abs(sys.getrefcount(None) - before[4]) < 100
    del out
    assert [sys.getrefcount(v) for v in held] == before[:4]
    with pytest.raises(ValueError):
        book.dictionary_objects(np.array([0, 1, 5, 0]), pa.string())
    assert [sys.getrefcount(v) for v in held] == before[:4]
    assert book.dictionary_objects(np.array([], dtype=np.intp), pa.string()).shape == (0,)
    assert book.text_dictionary_array(np.array([], dtype=object)).indices.to_pylist() == []
    not_none = np.array(["x", "y"], dtype=object)
    with pytest.raises(ValueError):
        _kernels.object_decode(held, np.array([0, 1]), not_none)
    assert not_none.tolist() == ["x", "y"]


INTEGER_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32()]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), type_=st.sampled_from(INTEGER_TYPES), missing_code=st.sampled_from([-1, 5]))
def test_dense_encode_is_a_lookup_by_value(data, type_, missing_code):
    """``dense_encode`` (through ``codebook._table_codes``) against a lookup written here, value by value: a
    null takes the missing code, a value inside the table its entry, one outside it (below ``low`` too) the
    unknown code, and the position returned is the first unknown code, table entries that are unknown among
    them; on sliced arrays (an offset into Arrow's buffers) with and without nulls."""
    from pramkit.codebook import _UNKNOWN, _table_codes

    info = np.iinfo(type_.to_pandas_dtype())
    low = data.draw(st.integers(max(int(info.min), -50), min(int(info.max), 200) - 1), label="low")
    size = data.draw(st.integers(1, 40), label="size")
    table = np.array(data.draw(st.lists(st.sampled_from([0, 1, 2, 3, _UNKNOWN]), min_size=size, max_size=size),
                               label="table"), dtype=np.intp)
    near = st.integers(max(int(info.min), low - 5), min(int(info.max), low + size + 5))
    values = data.draw(st.lists(st.one_of(near, st.none()), min_size=1, max_size=300), label="values")
    cut = data.draw(st.integers(0, len(values) - 1), label="offset")
    array = pa.array(values, type=type_).slice(cut)
    codes, first = _table_codes(array, low, table, missing_code)

    expected = []
    for v in array.to_pylist():
        if v is None:
            expected.append(missing_code)
        else:
            expected.append(int(table[v - low]) if 0 <= v - low < size else _UNKNOWN)
    assert codes.tolist() == expected
    assert first == (expected.index(_UNKNOWN) if _UNKNOWN in expected else -1)
