"""Peak memory of ``pramkit compare``: it holds the columns it reads, so it grows with the file by a stated
number of bytes per record, and no more.

Measured as tests/test_memory_bounds.py measures the streamed commands: a census-like Parquet file of one
chunk and one of sixteen (households in 300 areas), the command in a fresh process
reporting ``VmHWM``.  ``compare`` reads the household id, the geography, the risk variables and the similarity
column whole (:func:`pramkit.io.read_table`), swaps the geography as ``pramkit swap`` does, then perturbs the
lowest level by DP-PRAM and measures risk and utility on the frame: a study of one file in memory, not a
release streamed to disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_memory_bounds import CHUNK, LARGE, _peak, shared_census

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from /proc")]

#: The most ``compare`` may grow from the small file to the large: a fixed part and so much per record added.
#: Measured: 239 MiB for 32 768 persons, 460 MiB for 524 288, 221 MiB more, about 470 bytes per person
#: (eight columns read as text, the swap's household arrays, the perturbed geography and the risk tables'
#: codes); the bound is about 1.5 times that.
COMPARE_MIB = 32
COMPARE_BYTES_PER_RECORD = 700


@pytest.fixture(scope="module")
def census_files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, str]]:
    return shared_census(tmp_path_factory)


def _compare_args(f: dict[str, str]) -> list[str]:
    return ["compare", f["original"], "--hid", "hid", "--geo", "region,area", "--risk-vars",
            "age,sex,marital_status,race", "--similar", "hsize", "--key-file", f["key"], "--json"]


def test_compare_holds_a_bounded_number_of_bytes_per_record(census_files: dict[int, dict[str, str]]) -> None:
    small, large = _peak(_compare_args(census_files[CHUNK])), _peak(_compare_args(census_files[LARGE]))
    limit = COMPARE_MIB + COMPARE_BYTES_PER_RECORD * (LARGE - CHUNK) / 2**20
    assert large - small < limit, (f"compare: {small:.0f} MiB for one chunk, {large:.0f} MiB for sixteen "
                                   f"(at most {limit:.0f} MiB more)")
