"""The report reads a file's columns chunk by chunk as categoricals: its figures do not depend on the chunk size.

The reference is the report of the same files read in one chunk (the whole file at once, as the report read
them before); read in chunks of a few rows, every figure must be the same, with missing values, Unicode and
whitespace variants of the labels, and a key missing in some records (the report then holds the records).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import pramkit.counts
import pramkit.io
from pramkit import Manifest, PramMatrix
from pramkit.engine.perturb import perturb_frame
from pramkit.report import build_public_report, build_report

LABELS = ["Zürich", "zürich ", "日本", "a, b", 'q"', "north"]


def _files(folder, missing: bool):
    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame({"place": rng.choice(LABELS[2:], n), "sex": rng.choice(["f", "m"], n),
                          "age": rng.choice(["0-17", "18-64", "65+"], n), "w": rng.uniform(1, 3, n).round(3)})
    if missing:
        frame.loc[rng.choice(n, 20, replace=False), "age"] = None
    manifest = Manifest.of({"place": PramMatrix.form8([0.7] * 4, categories=tuple(sorted(LABELS[2:]))),
                            "sex": PramMatrix([[0.8, 0.2], [0.2, 0.8]], ("f", "m"))})
    released = perturb_frame(frame, manifest, key=bytes(32)).data
    paths = folder / "original.csv", folder / "released.csv", folder / "manifest.json"
    frame.to_csv(paths[0], index=False)
    released.to_csv(paths[1], index=False)
    manifest.write(paths[2])
    return paths


def _untimed(figures):
    return None if figures is None else dataclasses.replace(figures, seconds=0.0)


def _figures(report):
    risk = report.risk
    return (risk and (_untimed(risk.before), _untimed(risk.after), risk.recognition, risk.sampling_note),
            [u.frequencies for u in report.utility], [(u.entropy_nats, u.mutual_information_nats)
                                                                  for u in report.utility], report.records)


@pytest.mark.parametrize("missing", [False, True])
def test_the_figures_do_not_depend_on_the_chunk(tmp_path, monkeypatch, missing) -> None:
    original, released, manifest = _files(tmp_path, missing)

    def both():
        private = build_report(original, manifest, released, ["place", "sex", "age"], sampling_fraction=0.1)
        public = build_public_report(manifest, released, original=original, weights="w")
        return _figures(private), _figures(public)

    whole = both()
    monkeypatch.setitem(pramkit.io.iter_batches.__kwdefaults__, "chunk_rows", 7)
    # the report's reads and the streamed counts choose their chunk by the bytes it holds: a few rows
    monkeypatch.setattr(pramkit.counts, "CHUNK_BYTES", 3 * 4 * pramkit.counts.CHUNK_BYTES_PER_VALUE)
    chunked = both()
    for got, expected in zip(chunked, whole):
        assert got[0] == expected[0] and got[2:] == expected[2:]
        for a, b in zip(got[1], expected[1]):
            pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_parquet_dictionary_columns_in_many_chunks_give_the_csv_figures(tmp_path, monkeypatch) -> None:
    """Columns stored as dictionaries, in row groups of a few rows: the figures of the same files as CSV."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    original, released, manifest = _files(tmp_path, missing=True)
    as_csv = _figures(build_report(original, manifest, released, ["place", "sex", "age"], sampling_fraction=0.1))
    parquet = []
    for path in (original, released):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
        table = pa.Table.from_pandas(frame.drop(columns="w"), preserve_index=False)
        table = pa.table({c: table.column(c).dictionary_encode() for c in table.column_names})
        parquet.append(path.with_suffix(".parquet"))
        pq.write_table(table, parquet[-1], row_group_size=9)
    monkeypatch.setattr(pramkit.counts, "CHUNK_BYTES", 3 * 4 * pramkit.counts.CHUNK_BYTES_PER_VALUE)
    got = _figures(build_report(parquet[0], manifest, parquet[1], ["place", "sex", "age"], sampling_fraction=0.1))
    assert got[0] == as_csv[0] and got[2:] == as_csv[2:]
    for a, b in zip(got[1], as_csv[1]):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
