"""The household risk and SUDA read a file's key columns as codes (pramkit.io.read_arrow, compact):
their results are those of the same records as a pandas frame of text (the path they had before).

The reference is each function on the frame :func:`pramkit.io.read_table` reads (text columns as
text): the file path may only save memory, never change a number, a level's order or a message.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import SDC_DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pramkit.errors import DataError
from pramkit.io import read_arrow, read_table
from pramkit.risk.household import household_risk
from pramkit.risk.suda import suda

EUSILC = SDC_DATA / "eusilc_laeken.csv"
KEYS = ["db040", "age", "rb090", "pl030", "pb220a"]


def _same_suda(path: Path, keys: list[str], **kw) -> None:
    on_file, on_frame = suda(path, keys, **kw), suda(read_table(path, columns=keys), keys, **kw)
    np.testing.assert_array_equal(on_file.msu_counts, on_frame.msu_counts)
    np.testing.assert_array_equal(on_file.scores, on_frame.scores)
    assert on_file.attribute_contributions == pytest.approx(on_frame.attribute_contributions, nan_ok=True)
    pd.testing.assert_frame_equal(on_file.level_contributions.astype({"level": object}),
                                  on_frame.level_contributions.astype({"level": object}))


def _same_household(path: Path, keys: list[str], household: str, **kw) -> None:
    columns = list(dict.fromkeys([*keys, household] + ([kw["weights"]] if isinstance(kw.get("weights"), str)
                                                       else [])))
    on_file = household_risk(path, keys, household, **kw)
    on_frame = household_risk(read_table(path, columns=columns), keys, household, **kw)
    pd.testing.assert_frame_equal(on_file.per_record, on_frame.per_record)
    assert on_file.to_dict() == on_frame.to_dict()


def test_eusilc_suda_and_household_risk_from_the_file_are_those_of_the_frame() -> None:
    if not EUSILC.exists():
        pytest.skip("../shared/data/sdcmicro is not available")
    _same_suda(EUSILC, KEYS, max_size=3, sampling_fraction=0.1)
    _same_household(EUSILC, KEYS, "db030", weights="rb050")
    _same_household(EUSILC, ["db040", "rb090"], "db030", sampling_fraction=0.01, missing="exclude")


def test_the_compact_table_holds_the_same_values_as_codes(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('k,n\n"a, b",1\nNA,2\n"é",3\n"a, b",\n', encoding="utf-8")
    compact, plain = read_arrow(path, compact=True), read_arrow(path)
    assert all(pa.types.is_dictionary(t) for t in compact.schema.types)  # a CSV file's columns are text
    assert compact.column("k").to_pylist() == plain.column("k").to_pylist() == ["a, b", None, "é", "a, b"]
    assert compact.column("n").to_pylist() == plain.column("n").to_pylist() == ["1", "2", "3", None]


texts = st.sampled_from(["a", "b", " a", "Zürich", "日本", "x,y", 'q"', "NA", ""])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(texts, texts, st.integers(0, 5), st.sampled_from(["h1", "h2", "h3", "h 4"])),
                     min_size=3, max_size=40))
def test_small_files_with_missing_unicode_and_quotes(tmp_path: Path, rows) -> None:
    """Random CSV files (missing values, Unicode, separators and quotes inside fields, ids as text),
    written by pandas and read back through the file path and the frame path."""
    frame = pd.DataFrame(rows, columns=["k1", "k2", "k3", "hh"])
    path = tmp_path / "r.csv"
    frame.to_csv(path, index=False)
    for compare in (lambda: _same_suda(path, ["k1", "k2", "k3"], max_size=2),
                    lambda: _same_household(path, ["k1", "k2"], "hh", sampling_fraction=0.5)):
        try:
            compare()
        except DataError as refused:  # then the frame path refuses it too, with the same message
            frame_error = _refusal_of_frame(path, str(refused))
            assert frame_error == str(refused)


def _refusal_of_frame(path: Path, message: str) -> str:
    """The message of the frame path's refusal of the same file (for the call that raised ``message``)."""
    for call in (lambda: suda(read_table(path, columns=["k1", "k2", "k3"]), ["k1", "k2", "k3"], max_size=2),
                 lambda: household_risk(read_table(path, columns=["k1", "k2", "hh"]), ["k1", "k2"], "hh",
                                        sampling_fraction=0.5)):
        try:
            call()
        except DataError as e:
            if str(e) == message:
                return str(e)
    return "the frame path did not refuse it"


def test_a_missing_text_household_id_is_refused_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("k,hh\na,x\nb,\na,y\n", encoding="utf-8")
    with pytest.raises(DataError, match="row 2 has no household id"):
        household_risk(path, ["k"], "hh", sampling_fraction=0.5)


@pytest.mark.parametrize("missing_keys", [True, False])
def test_the_report_from_files_is_the_report_from_the_frames(tmp_path: Path, missing_keys: bool) -> None:
    """The report reads both files' text columns as categoricals: its figures are those it gives the
    same records as frames of text (a weight column in a CSV file).  With every key present the risks
    stream the files (counted chunk by chunk: the weighted sums to rounding); with records left out
    for a missing key, from the records held, exactly."""
    import random

    from pramkit.datasets import CENSUS_VARIABLES, census
    from pramkit.engine.perturb import apply_file
    from pramkit.release.pipeline import design_release
    from pramkit.report.build import build_report

    data = census(3_000, seed=4).astype(str)
    if missing_keys:
        data.loc[::17, "race"] = None
    data["w"] = [f"{1 + (i % 5) / 4:g}" for i in range(len(data))]
    original, released = tmp_path / "o.csv", tmp_path / "r.csv"
    data.to_csv(original, index=False)
    manifest = design_release(data, ["sex", "marital_status"], epsilon=3.0, categories=CENSUS_VARIABLES,
                              rng=random.Random(0))
    manifest.write(tmp_path / "m.json")
    apply_file(original, tmp_path / "m.json", released, key=bytes(32))
    keys = ["age", "sex", "marital_status", "race"]
    columns = [*keys, "w"]
    on_files = build_report(original, tmp_path / "m.json", released, keys, weights="w")
    on_frames = build_report(read_table(original, columns=columns), tmp_path / "m.json",
                             read_table(released, columns=columns), keys, weights="w")
    untimed = {"seconds": 0.0}
    for a, b in ((on_files.risk.before, on_frames.risk.before), (on_files.risk.after, on_frames.risk.after)):
        if missing_keys:
            assert dataclasses.replace(a, **untimed) == dataclasses.replace(b, **untimed)  # exactly: same tables
        else:
            assert (a.n, a.cells, a.sample_uniques) == (b.n, b.cells, b.sample_uniques)
            for field in ("tau1", "tau2", "expected_reidentifications"):
                assert getattr(a, field) == pytest.approx(getattr(b, field), rel=1e-12), field
    assert on_files.risk.recognition == on_frames.risk.recognition
    assert on_files.risk.sampling_note == on_frames.risk.sampling_note
    assert on_files.records == on_frames.records
    for a, b in zip(on_files.utility, on_frames.utility, strict=True):
        pd.testing.assert_frame_equal(a.frequencies, b.frequencies)
        assert a.entropy_nats == b.entropy_nats and a.mutual_information_nats == b.mutual_information_nats


def test_a_spelling_clash_is_refused_alike_from_the_file_and_the_frame(tmp_path: Path) -> None:
    """One value spelled two ways (composed and decomposed Unicode) in a key read as codes: the same
    message as from the text, naming the same rows."""
    import unicodedata

    composed = "Zürich"
    path = tmp_path / "c.csv"
    path.write_text(f"k,hh\n{composed},1\nBern,1\n{unicodedata.normalize('NFD', composed)},2\n", encoding="utf-8")
    frame = read_table(path)
    for call in (lambda d: household_risk(d, ["k"], "hh", sampling_fraction=0.5),
                 lambda d: suda(d, ["k"], max_size=1)):
        with pytest.raises(DataError) as on_frame:
            call(frame)
        with pytest.raises(DataError) as on_file:
            call(path)
        assert str(on_file.value) == str(on_frame.value) and "row" in str(on_file.value)
