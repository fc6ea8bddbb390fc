"""``apply --shuffle``: a keyed permutation of the release, the same for any chunk size, out of core.

Checked against the unshuffled release made with the same key (same multiset of rows, in the order
:func:`pramkit.engine.shuffle.permutation` gives), against itself across chunk sizes and threads
(byte for byte, CSV and Parquet), against a chi-square test of the permutation's uniformity, and on
real microdata with missing values and weights (eusilc) and the built-in census file.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy.stats import chisquare

import pramkit.engine.shuffle as shuffle_module
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import apply_file, release_key
from pramkit.engine.shuffle import permutation
from pramkit.errors import WriteError
from pramkit.io import read_table, sha256_of
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest


@pytest.fixture(scope="module")
def census_files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("shuffle")
    frame = census(6_000, seed=3)
    frame = frame[["age", "sex", "marital_status", "education"]]
    frame.to_csv(d / "census.csv", index=False)
    frame.to_parquet(d / "census.parquet", index=False)
    Manifest.of({c: randomized_response(sorted(frame[c].unique()), 1.5) for c in ("age", "sex", "marital_status")}
                ).write(d / "m.json")
    return {"dir": d, "csv": d / "census.csv", "parquet": d / "census.parquet", "manifest": d / "m.json"}


def test_a_permutation_of_the_unshuffled_release(census_files, key: SecretKey) -> None:
    d = census_files["dir"]
    apply_file(census_files["csv"], census_files["manifest"], d / "plain.csv", key=key, force=True)
    result = apply_file(census_files["csv"], census_files["manifest"], d / "shuffled.csv", key=key, force=True,
                        shuffle=True, public_columns=["education"])
    plain, shuffled = (read_table(d / name, na_values=()) for name in ("plain.csv", "shuffled.csv"))
    order = permutation(release_key(key, Manifest.read(census_files["manifest"])), len(plain))  # the release's
    assert not np.array_equal(order, np.arange(len(plain)))
    pd.testing.assert_frame_equal(shuffled, plain.iloc[order].reset_index(drop=True))
    g = result.guarantees
    assert g.shuffled is not None and g.shuffled < g.local and g.clones == plain.groupby("education").size().min()
    receipt = json.loads((d / "shuffled.csv.receipt.json").read_text())
    assert receipt["guarantees"]["shuffled_records"] == g.clones
    assert "guarantees" not in json.loads((d / "plain.csv.receipt.json").read_text())


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_byte_identical_across_chunk_sizes_and_threads(census_files, key, monkeypatch, suffix: str) -> None:
    monkeypatch.setattr(shuffle_module, "OUT_ROWS", 1_000)             # several slices of the output
    d = census_files["dir"]
    digests = set()
    for chunk, threads in [(6_000, None), (777, 1), (64, 2)]:
        out = d / f"s{chunk}.{suffix}"
        apply_file(census_files[suffix], census_files["manifest"], out, key=key, force=True, chunk_rows=chunk,
                   threads=threads, shuffle=True, public_columns=["education"], receipt=False)
        digests.add(sha256_of(out))
    assert len(digests) == 1
    if suffix == "parquet":
        assert pq.ParquetFile(out).metadata.num_row_groups == 6


def test_permutation_is_uniform() -> None:
    """Over 2 400 keys, each of the 24 orders of 4 rows appears about equally often (chi-square)."""
    orders = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    counts = np.zeros(24)
    for k in range(2_400):
        counts[orders[tuple(permutation(SecretKey(k.to_bytes(32, "little"), "test"), 4).tolist())]] += 1
    assert chisquare(counts).pvalue > 1e-4


def test_missing_values_and_weights(sdc_data, tmp_path, key) -> None:
    """eusilc: missing values stay missing and form their own clones; public weights make groups of one."""
    frame = pd.read_csv(sdc_data / "eusilc_laeken.csv", usecols=["db040", "rb090", "pl030", "rb050"], nrows=4_000,
                        dtype={"pl030": "string"})
    frame.to_csv(tmp_path / "eusilc.csv", index=False)
    frame[["db040", "rb090", "pl030"]].to_csv(tmp_path / "three.csv", index=False)
    cats = {c: sorted(frame[c].dropna().unique()) for c in ("db040", "rb090", "pl030")}
    Manifest.of({c: randomized_response(v, 2.0) for c, v in cats.items()}).write(tmp_path / "m.json")
    missing = frame["pl030"].isna()
    assert 0 < missing.sum() < len(frame)
    result = apply_file(tmp_path / "three.csv", tmp_path / "m.json", tmp_path / "r.csv", key=key, shuffle=True)
    released = pd.read_csv(tmp_path / "r.csv")
    assert released["pl030"].isna().sum() == missing.sum()
    assert result.guarantees.clones == min(missing.sum(), (~missing).sum())
    weighted = apply_file(tmp_path / "eusilc.csv", tmp_path / "m.json", tmp_path / "w.csv", key=key, shuffle=True,
                          public_columns=["rb050"])
    assert weighted.guarantees.clones == 1 and weighted.guarantees.shuffled >= weighted.guarantees.local - 1e-9


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("where", ["spill", "read back"])
def test_injected_failure_leaves_nothing(census_files, key, monkeypatch, tmp_path, where: str) -> None:
    out = tmp_path / "r.csv"
    apply_file(census_files["csv"], census_files["manifest"], out, key=key)       # an earlier release
    before = {p.name: sha256_of(p) for p in tmp_path.iterdir()}

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    if where == "spill":
        monkeypatch.setattr(shuffle_module.ipc, "new_file", broken)
    else:
        monkeypatch.setattr(shuffle_module.pa, "memory_map", broken)
    with pytest.raises(WriteError, match="No space left"):
        apply_file(census_files["csv"], census_files["manifest"], out, key=key, shuffle=True, force=True,
                   chunk_rows=500)
    assert {p.name: sha256_of(p) for p in tmp_path.iterdir()} == before
    assert _leftovers(tmp_path) == []
