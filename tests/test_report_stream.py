"""Two files' reports come from tables counted chunk by chunk: the same report as from the records in memory.

The reference is the report of the same files read into memory, as the report read them before (forced here by
making ``_streams`` say no). Streamed, the original's frequencies and the locality's realised figures come from the
cross-tab of (original, released) categories counted chunk by chunk, and the estimates from the released file
streamed. Every printed digit of both reports (the HTML, with its JSON blocks) must be the same. The realised
distance moved is a mean over records: summed by cell it may differ in its last bits, so it is compared at 1e-12
relative; every other figure is compared exactly.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pramkit.counts
import pramkit.errors
from pramkit import Manifest, PramMatrix
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.design.classic import randomized_response
from pramkit.design.metric.mechanisms import truncated_geometric
from pramkit.engine.perturb import perturb_frame
from pramkit.report import build as report_build
from pramkit.report import build_public_report, build_report
from pramkit.report.html import render_html

LABELS = ["Zürich", "zürich ", "日本", "a, b", 'q"', "north"]


def _write(folder, frame: pd.DataFrame, manifest: Manifest):
    released = perturb_frame(frame, manifest, key=bytes(32)).data
    paths = folder / "original.csv", folder / "released.csv", folder / "manifest.json"
    frame.to_csv(paths[0], index=False)
    released.to_csv(paths[1], index=False)
    manifest.write(paths[2])
    return paths


def _census(folder):
    frame = census(3_000).astype(object)
    manifest = Manifest.of({"age": truncated_geometric(list(CENSUS_VARIABLES["age"]), 1.0),
                            "marital_status": randomized_response(list(CENSUS_VARIABLES["marital_status"]), 1.5)})
    return _write(folder, frame, manifest), ["age", "sex", "marital_status"]


def _random(folder, missing_key: bool):
    rng = np.random.default_rng(11)
    n = 600
    frame = pd.DataFrame({"place": rng.choice(LABELS[2:], n), "sex": rng.choice(["f", "m"], n),
                          "age": rng.choice(["0-17", "18-64", "65+"], n)})
    frame.loc[rng.choice(n, 30, replace=False), "age"] = None
    if missing_key:
        frame.loc[rng.choice(n, 10, replace=False), "sex"] = None
    manifest = Manifest.of({"place": PramMatrix.form8([0.7] * 4, categories=tuple(sorted(LABELS[2:]))),
                            "age": truncated_geometric(["0-17", "18-64", "65+"], 0.8)})
    return _write(folder, frame, manifest), ["place", "sex", "age"] if missing_key else ["place", "sex"]


def _eusilc(folder, sdc_data):
    frame = pd.read_csv(sdc_data / "eusilc_laeken.csv", usecols=["db040", "rb090", "pl030", "hsize"],
                        dtype=str).head(4_000)
    status = sorted(frame["pl030"].dropna().unique())
    regions = sorted(frame["db040"].unique())
    manifest = Manifest.of({"pl030": truncated_geometric(status, 1.0),
                            "db040": randomized_response(regions, 2.0)})
    return _write(folder, frame, manifest), ["db040", "rb090", "hsize"]


def _untimed(report):
    risk = report.risk
    if risk is not None:
        risk = dataclasses.replace(risk, before=dataclasses.replace(risk.before, seconds=0.0),
                                   after=risk.after and dataclasses.replace(risk.after, seconds=0.0))
    return dataclasses.replace(report, created="", seconds={}, risk=risk)


def _both(paths, keys, streamed: bool, monkeypatch):
    """The three reports, and the columns read into memory and the warnings given on the way."""
    original, released, manifest = paths
    held: list[str] = []
    load = report_build._load

    def holding(data, columns, *args, **kwargs):
        held.extend(columns)
        return load(data, columns, *args, **kwargs)

    with monkeypatch.context() as m, warnings.catch_warnings(record=True) as given:
        warnings.simplefilter("always")
        m.setattr(report_build, "_load", holding)
        if not streamed:
            m.setattr(report_build, "_streams", lambda *_: False)
        internal = build_report(original, manifest, released, keys, sampling_fraction=0.1)
        public = build_public_report(manifest, released, original=original)
        alone = build_public_report(manifest, released)
    return [_untimed(r) for r in (internal, public, alone)], set(held), sorted(str(w.message) for w in given)


def _realised(report):
    return [f.realised for loc in report.locality for f in loc.figures]


def _same(got, expected) -> None:
    assert render_html(got) == render_html(expected)   # every printed digit, the JSON blocks included
    assert got.records == expected.records and got.risk == expected.risk
    for a, b in zip(got.utility, expected.utility):
        pd.testing.assert_frame_equal(a.frequencies, b.frequencies, check_exact=True)
        assert np.array_equal([a.entropy_nats, a.mutual_information_nats],
                              [b.entropy_nats, b.mutual_information_nats], equal_nan=True)
    assert len(_realised(got)) == len(_realised(expected))
    for x, y in zip(_realised(got), _realised(expected)):
        assert (x is None) == (y is None)
        if x is not None:   # a mean over records, summed by cell: the same to 1e-12 relative
            assert x == pytest.approx(y, rel=1e-12, nan_ok=True)
    for a, b in zip(got.locality, expected.locality):
        assert [dataclasses.replace(f, realised=None) for f in a.figures] == \
            [dataclasses.replace(f, realised=None) for f in b.figures]


@pytest.mark.parametrize("case", ["census", "random", "random, a key missing"])
def test_streamed_reports_are_the_reports_in_memory(tmp_path, monkeypatch, case) -> None:
    paths, keys = _census(tmp_path) if case == "census" else _random(tmp_path, "missing" in case)
    expected = _both(paths, keys, False, monkeypatch)
    # chunks of a few rows: every table is the sum of many chunks'
    monkeypatch.setattr(pramkit.counts, "CHUNK_BYTES", 5 * 4 * pramkit.counts.CHUNK_BYTES_PER_VALUE)
    (got, held, said), (expected, _, expected_said) = _both(paths, keys, True, monkeypatch), expected
    assert any(_realised(expected[0]))
    for a, b in zip(got, expected):
        _same(a, b)
    assert said == expected_said
    # only the keys are held, when a key is missing in some records (the risk compares those with every key)
    assert held == (set(keys) if "missing" in case else set())


def test_streamed_reports_of_eusilc_are_the_reports_in_memory(tmp_path, monkeypatch, sdc_data) -> None:
    """EU-SILC's economic status has missing values (children): left out of its frequencies and localities."""
    paths, keys = _eusilc(tmp_path, sdc_data)
    expected = _both(paths, keys, False, monkeypatch)
    got = _both(paths, keys, True, monkeypatch)
    for a, b in zip(got[0], expected[0]):
        _same(a, b)
    assert got[2] == expected[2] and got[1] <= set(keys)


def test_the_realised_figures_from_the_cross_tab_are_the_records_own() -> None:
    """The realised figures of a cross-tab against a brute force over its records, in exact fractions."""
    from fractions import Fraction

    rng = random.Random(5)
    d = np.array([[0.0, 1.5, 3.0], [1.5, 0.0, 1.5], [3.0, 1.5, 0.0]])
    pairs = [(rng.randrange(3), rng.randrange(3)) for _ in range(257)]
    table = np.zeros((3, 3), dtype=np.int64)
    for x, z in pairs:
        table[x, z] += 1
    got = report_build._realised_pairs(table, d, 1.5)
    n = len(pairs)
    assert got["kept"] == float(Fraction(sum(x == z for x, z in pairs), n))
    assert got["within"] == float(Fraction(sum(d[x, z] <= 1.5 for x, z in pairs), n))
    assert got["distance"] == pytest.approx(float(sum(Fraction(d[x, z]) for x, z in pairs) / n), rel=1e-12)
    assert all(math.isnan(v) for v in report_build._realised_pairs(np.zeros((3, 3), int), d, 1.5).values())


def test_a_release_of_other_records_is_refused_streamed(tmp_path) -> None:
    """The streamed pass refuses what the pass in memory refused: another number of records, or the original."""
    (original, released, manifest), keys = _random(tmp_path, False)
    short = tmp_path / "short.csv"
    pd.read_csv(released, dtype=str, keep_default_na=False).head(599).to_csv(short, index=False)
    with pytest.raises(pramkit.errors.DataError, match="600 records and the released file 599"):
        build_report(original, manifest, short, keys)
    with pytest.raises(pramkit.errors.DataError, match="identical to the original in every perturbed column"):
        build_report(original, manifest, original, keys)
    with pytest.raises(pramkit.errors.DataError, match=re.escape("column(s) ['place'] are not in the released")):
        build_public_report(manifest, tmp_path / "cut.csv" if pd.read_csv(released).drop(columns="place").to_csv(
            tmp_path / "cut.csv", index=False) is None else released)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=40),
       st.lists(st.integers(0, 9), min_size=16, max_size=16), st.integers(0, 9))
def test_the_realised_figures_of_any_cross_tab(pairs, steps, radius) -> None:
    """Any records and whole distances: the shares exactly the records' own, the mean to 1e-12 relative."""
    d = np.array(steps, dtype=float).reshape(4, 4) / 4
    table = np.zeros((4, 4), dtype=np.int64)
    for x, z in pairs:
        table[x, z] += 1
    got = report_build._realised_pairs(table, d, radius / 4)
    if not pairs:
        assert all(math.isnan(v) for v in got.values())
        return
    x, z = (np.array(c) for c in zip(*pairs))
    expected = report_build._realised((x, z), d, radius / 4)
    assert got["kept"] == expected["kept"] and got["within"] == expected["within"]
    assert got["distance"] == pytest.approx(expected["distance"], rel=1e-12)
