"""The Philox words the compiled draws compute themselves (pramkit.kernel._kernels, _philox.h), on each of its
paths -- the vector ones (AVX-512 and AVX2, where the processor has them) and the portable one -- against NumPy's own
generator, ``numpy.random.Philox.random_raw``: the words, and the state left behind (counter, buffer of the last
block, position in it), from every position in the buffer, across carries out of each counter word, for
random keys; and a real file released byte for byte the same on every path."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.engine.perturb import perturb_codes, perturb_frame
from pramkit.kernel import _kernels
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix

TOP = 2**64 - 1
PATHS = ["portable", "avx2", "avx512"]


def has_path(name: str) -> bool:
    """Whether this processor runs the path ``name``, as the kernel finds it at run time."""
    before = _kernels._philox_path()
    try:
        _kernels._philox_path(name)
    except ValueError:
        return False
    _kernels._philox_path(before)
    return True


def paths_here() -> list[str]:
    """The paths this processor runs."""
    return [name for name in PATHS if has_path(name)]


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each path of the kernel in turn (a vector one skipped where the processor lacks it), the path the
    module chose restored afterwards."""
    if not has_path(request.param):
        pytest.skip(f"the processor lacks {request.param.upper()}")
    before = _kernels._philox_path(request.param)
    yield request.param
    _kernels._philox_path(before)


def numpy_state(bits: np.random.Philox) -> np.ndarray:
    """NumPy's Philox state in the kernel's layout: counter, key, the last block's words, how many used."""
    s = bits.state
    return np.array([*s["state"]["counter"], *s["state"]["key"], *s["buffer"], s["buffer_pos"]], dtype=np.uint64)


def assert_follows_numpy(key: list[int], counter: list[int], used: int, n: int) -> None:
    """The kernel's next n words from NumPy's generator after ``used`` words, and the state it leaves, are
    those of NumPy's random_raw(n)."""
    bits = np.random.Philox(key=np.array(key, dtype=np.uint64), counter=np.array(counter, dtype=np.uint64))
    bits.random_raw(used)
    state, words = numpy_state(bits), np.full(n, 12345, dtype=np.uint64)
    _kernels._philox_fill(state, words)
    want = bits.random_raw(n)
    where = np.flatnonzero(words != want)
    assert where.size == 0, f"{where.size} words differ, the first at {where[:1]}"
    assert state.tolist() == numpy_state(bits).tolist()


SIZES = [0, *range(1, 41), 63, 64, 65, 127, 128, 129, 511, 512, 513, 100_003]
COUNTERS = [
    [0, 0, 0, 0],
    [TOP - 5, 0, 0, 0],  # the first word wraps within the first group of blocks
    [TOP - 100, 3, 0, 0],  # ... within a later group of a long draw
    [TOP - 2, TOP, 0, 9],  # the carry runs into the third word
    [TOP - 30, TOP, TOP, 2**63],  # ... and into the fourth
    [TOP - 1, TOP, TOP, TOP],  # the whole counter wraps to zero
]


@pytest.mark.parametrize("counter", COUNTERS)
@pytest.mark.parametrize("used", [0, 1, 2, 3, 4])
def test_words_and_state_are_numpys(path: str, counter: list[int], used: int) -> None:
    for n in SIZES:
        assert_follows_numpy([0x0123456789ABCDEF, TOP - 7], counter, used, n)


def test_consecutive_fills_continue_the_stream(path: str) -> None:
    """Fills of many sizes in a row, each from the state the one before left, give NumPy's stream."""
    bits = np.random.Philox(key=[7, 8], counter=np.array([TOP - 300, TOP, 5, 0], dtype=np.uint64))
    state = numpy_state(bits)
    sizes = [3, 1, 96, 29, 0, 512, 37, 4, 4, 1000, 64, 5]
    got = []
    for n in sizes:
        words = np.empty(n, dtype=np.uint64)
        _kernels._philox_fill(state, words)
        got.append(words)
    assert np.concatenate(got).tolist() == bits.random_raw(sum(sizes)).tolist()
    assert state.tolist() == numpy_state(bits).tolist()


WORD = st.integers(0, TOP)
NEAR_TOP = st.integers(TOP - 200, TOP)


@settings(max_examples=150, deadline=None)
@given(key=st.lists(WORD, min_size=2, max_size=2),
       counter=st.lists(st.one_of(WORD, NEAR_TOP), min_size=4, max_size=4),
       used=st.integers(0, 4), n=st.integers(0, 1500))
def test_random_keys_and_counters(key: list[int], counter: list[int], used: int, n: int) -> None:
    """Any key and counter (words drawn near 2^64 - 1 as often as anywhere), on every path the processor
    has."""
    before = _kernels._philox_path()
    try:
        for name in paths_here():
            _kernels._philox_path(name)
            assert_follows_numpy(key, counter, used, n)
    finally:
        _kernels._philox_path(before)


def test_the_widest_vector_path_is_chosen_where_the_processor_has_it() -> None:
    """On a processor with AVX-512F (as NumPy's own detection finds it) the module takes that path, else on one
    with AVX2 the AVX2 path, else the portable one."""
    features = pytest.importorskip("numpy._core._multiarray_umath").__cpu_features__
    want = "avx512" if features.get("AVX512F") else "avx2" if features.get("AVX2") else "portable"
    assert _kernels._philox_path() == want
    assert has_path("avx512") == bool(features.get("AVX512F"))
    assert has_path("avx2") == bool(features.get("AVX2"))


def test_an_unknown_path_is_refused() -> None:
    before = _kernels._philox_path()
    with pytest.raises(ValueError, match="no Philox path sse9"):
        _kernels._philox_path("sse9")
    assert _kernels._philox_path() == before
    with pytest.raises(ValueError, match="Philox state"):
        _kernels._philox_fill(np.zeros(10, dtype=np.uint64), np.empty(3, dtype=np.uint64))
    with pytest.raises(ValueError, match="whole number of uint64"):
        _kernels._philox_fill(np.zeros(11, dtype=np.uint64), np.empty(3, dtype=np.uint8))


def test_a_real_file_is_released_byte_for_byte_alike_on_every_path(sdc_data: Path, key) -> None:
    """EU-SILC (14 827 rows, not a whole number of the draws' chunks of 512; two columns with 2 720 missing
    values) released through form (8) and through alias tables: the same bytes on either path; and a column's
    codes perturbed from row 3 on (inside a Philox block, so every chunk starts inside one): the same codes."""
    here = paths_here()
    if len(here) < 2:
        pytest.skip("the processor has no vector path")
    data = pd.read_csv(sdc_data / "eusilc_laeken.csv", usecols=["db040", "rb090", "pl030", "pb220a", "hsize"])
    rng = np.random.default_rng(3)

    def form8(values: list) -> PramMatrix:
        return PramMatrix.from_diagonal(rng.uniform(0.6, 0.95, len(values)), values)

    def dense(values: list) -> PramMatrix:
        m = rng.dirichlet(np.ones(len(values)), len(values)) * 0.4 + 0.6 * np.eye(len(values))
        return PramMatrix(m, values)

    labels = {c: sorted(data[c].dropna().unique().tolist()) for c in data.columns}
    manifest = Manifest.of({"db040": form8(labels["db040"]), "rb090": form8(labels["rb090"]),
                            "pl030": dense(labels["pl030"]), "pb220a": dense(labels["pb220a"]),
                            "hsize": form8(labels["hsize"])})
    assert int(data["pl030"].isna().sum()) == int(data["pb220a"].isna().sum()) == 2720
    codes = pd.Categorical(data["pb220a"], categories=labels["pb220a"]).codes.astype(np.intp)
    before = _kernels._philox_path()
    released, shifted = {}, {}
    try:
        for name in here:
            _kernels._philox_path(name)
            released[name] = perturb_frame(data, manifest, key=key, threads=1).data.to_csv(index=False).encode()
            shifted[name] = perturb_codes(codes, manifest["pb220a"].matrix, key=key, variable="pb220a", start=3)
    finally:
        _kernels._philox_path(before)
    for name in here[1:]:
        assert released[name] == released["portable"], name
        assert shifted[name].tolist() == shifted["portable"].tolist(), name
    out = pd.read_csv(io.BytesIO(released[here[-1]]))
    for c in data.columns:  # missing values kept missing, the others perturbed, not copied
        assert out[c].isna().tolist() == data[c].isna().tolist(), c
        kept = data[c].notna()
        assert 0.02 < (out[c][kept] != data[c][kept]).mean() < 0.5, c
