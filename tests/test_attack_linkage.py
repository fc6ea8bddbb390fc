"""The linkage attack (:mod:`pramkit.risk.attack_linkage`, ``pramkit attack``): unique records found and
distances to the closest released record, against pure-Python loops over sdcMicro's testdata (missing
values included); properties of the distance; the figures in plain words; the per-record file (private,
never in a public folder, all or nothing); the command's refusals."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.cli import main
from pramkit.errors import ParameterError
from pramkit.io import read_table
from pramkit.risk.attack import attack
from pramkit.risk.attack_linkage import PUBLIC_FOLDER, closest, linkage_attack, refuse_public, shared_codes
from pramkit.risk.attack_words import attack_sentences, linkage_sentences, percent

COLUMNS = ["urbrur", "roof", "walls", "water", "electcon", "sex", "relat", "hhcivil"]
KNOWN = ["urbrur", "sex", "relat"]
KEY = bytes(range(32))
needs_data = pytest.mark.skipif(not (SDC_DATA / "testdata.csv").is_file(), reason="../shared/data/sdcmicro is absent")


# --- Small real files, and the figures computed by loops ------------------------------------------------


def _testdata(tmp: Path, rows: int, seed: int) -> pd.DataFrame:
    """``rows`` records of testdata, with 9 (sdcMicro's missing code) read as missing."""
    frame = read_table(SDC_DATA / "testdata.csv", na_values=["9"])[COLUMNS]
    return frame.sample(rows, random_state=seed).reset_index(drop=True)


def _perturbed(data: pd.DataFrame, rows: int, seed: int) -> pd.DataFrame:
    """A release of ``rows`` records drawn from ``data``, a third of the values replaced by another record's
    value of the column (missing values travel too)."""
    rng = random.Random(seed)
    picked = [rng.randrange(len(data)) for _ in range(rows)]
    out = data.iloc[picked].reset_index(drop=True).astype(object)
    for c in data.columns:
        for i in range(rows):
            if rng.random() < 1 / 3:
                out.at[i, c] = data[c].iloc[rng.randrange(len(data))]
    return out


def _value(v: object) -> object:
    return None if pd.isna(v) else str(v)


def _records(frame: pd.DataFrame, columns: list[str]) -> list[tuple[object, ...]]:
    return [tuple(_value(v) for v in row) for row in frame[columns].itertuples(index=False)]


def _hamming(a: tuple[object, ...], b: tuple[object, ...]) -> int:
    return sum(x != y for x, y in zip(a, b))


def _loops(original: pd.DataFrame, released: pd.DataFrame, known: list[str]) -> dict[str, object]:
    """Every figure of the linkage but the holdout's, by plain loops."""
    o_k, r_k = _records(original, known), _records(released, known)
    o_all, r_all = _records(original, COLUMNS), _records(released, COLUMNS)
    unique_known = [sum(x == y for y in o_k) == 1 for x in o_k]
    agreeing = [sum(x == y for y in r_k) for x in o_k]
    unique_all = [sum(x == y for y in o_all) == 1 for x in o_all]
    dcr = [min(_hamming(x, y) for y in r_all) / len(COLUMNS) for x in o_all]
    return {
        "unique_on_known": sum(unique_known),
        "unique_on_known_found": sum(u and a > 0 for u, a in zip(unique_known, agreeing)),
        "unique_on_known_linked": sum(u and a == 1 for u, a in zip(unique_known, agreeing)),
        "unique_records": sum(unique_all),
        "unique_records_found": sum(u and d == 0 for u, d in zip(unique_all, dcr)),
        "dcr": dcr, "agreeing": agreeing, "unique_known": unique_known, "unique_all": unique_all,
    }


@needs_data
@pytest.mark.parametrize(("rows", "seed"), [(120, 1), (200, 2)])
def test_the_figures_are_those_of_plain_loops_with_a_holdout_file(tmp_path: Path, rows: int, seed: int) -> None:
    """Release and holdout of the same size: nothing is sampled, every figure is a loop's."""
    data = _testdata(tmp_path, 2 * rows, seed)
    original, holdout = data.iloc[:rows].reset_index(drop=True), data.iloc[rows:].reset_index(drop=True)
    assert original.isna().any().any() and holdout.isna().any().any()  # missing values on both sides
    released = _perturbed(original, rows, seed)
    result = linkage_attack(original, released, KNOWN, holdout=holdout, key=KEY)
    expected = _loops(original, released, KNOWN)
    for name in ("unique_on_known", "unique_on_known_found", "unique_on_known_linked", "unique_records",
                 "unique_records_found"):
        assert getattr(result, name) == expected[name], name
    assert np.allclose(result.dcr, expected["dcr"])
    assert result.agreeing_on_known.tolist() == expected["agreeing"]
    assert result.unique_known.tolist() == expected["unique_known"]
    assert result.unique_record.tolist() == expected["unique_all"]
    h_all = _records(holdout, COLUMNS)
    to_holdout = [min(_hamming(x, y) for y in h_all) / len(COLUMNS) for x in _records(original, COLUMNS)]
    assert np.allclose(result.dcr_holdout, to_holdout) and np.allclose(result.dcr_sample, expected["dcr"])
    closer = [d < h for d, h in zip(expected["dcr"], to_holdout)]
    farther = [d > h for d, h in zip(expected["dcr"], to_holdout)]
    assert result.closer_to_release == pytest.approx(sum(closer) / rows)
    assert result.closer_to_holdout == pytest.approx(sum(farther) / rows)
    assert result.tied == pytest.approx(1 - (sum(closer) + sum(farther)) / rows)
    assert result.median_dcr == pytest.approx(float(np.median(expected["dcr"])))
    assert result.share_at_zero == pytest.approx(sum(d == 0 for d in expected["dcr"]) / rows)
    assert (result.holdout, result.attacked, result.holdout_records, result.compared) == ("file", rows, rows, rows)


@needs_data
def test_the_keyed_half_is_held_out_and_compared_with_a_release_of_its_size(tmp_path: Path) -> None:
    """A release of half the original's size: the holdout half and the release are compared whole."""
    original = _testdata(tmp_path, 151, 3)
    released = _perturbed(original, 75, 4)
    result = linkage_attack(original, released, KNOWN, key=KEY)
    held = result.in_holdout
    assert held.sum() == 75 and result.attacked == 76 and result.compared == 75
    o_all = _records(original, COLUMNS)
    r_all = _records(released, COLUMNS)
    h_all = [x for x, h in zip(o_all, held) if h]
    for i, x in enumerate(o_all):
        if held[i]:
            assert np.isnan(result.dcr_holdout[i]) and np.isnan(result.dcr_sample[i])
        else:
            assert result.dcr_holdout[i] * len(COLUMNS) == pytest.approx(min(_hamming(x, y) for y in h_all))
            assert result.dcr_sample[i] * len(COLUMNS) == pytest.approx(min(_hamming(x, y) for y in r_all))
    frame = result.per_record()
    assert frame.loc[held, "closer"].eq("").all()
    attacked = frame[~held]
    assert (attacked["closer"] == "release").mean() == pytest.approx(result.closer_to_release)
    # the same key draws the same half; another key another one
    assert linkage_attack(original, released, KNOWN, key=KEY).in_holdout.tolist() == held.tolist()
    assert linkage_attack(original, released, KNOWN, key=bytes(32)).in_holdout.tolist() != held.tolist()


@needs_data
def test_a_larger_release_is_sampled_to_the_holdout_s_size(tmp_path: Path) -> None:
    original = _testdata(tmp_path, 100, 5)
    released = _perturbed(original, 100, 6)
    result = linkage_attack(original, released, KNOWN, key=KEY)
    assert result.compared == result.holdout_records == 50
    attacked = ~result.in_holdout
    # a sample of the release is never closer than the whole release
    assert (result.dcr_sample[attacked] >= result.dcr[attacked]).all()


# --- Properties -----------------------------------------------------------------------------------------

VALUES = st.sampled_from(["a", "b", "c", None])


@st.composite
def releases(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.DataFrame, list[int]]:
    """An original, a release holding some of its records (their positions) among others."""
    width = draw(st.integers(1, 4))
    row = st.tuples(*[VALUES] * width)
    original = draw(st.lists(row, min_size=2, max_size=12))
    copied = draw(st.lists(st.integers(0, len(original) - 1), max_size=len(original)))
    others = draw(st.lists(row, max_size=8))
    released = [original[i] for i in copied] + others
    if not released:
        released = others = [original[0]]
        copied = [0]
    columns = [f"c{j}" for j in range(width)]
    return pd.DataFrame(original, columns=columns), pd.DataFrame(released, columns=columns), copied


@settings(max_examples=60, deadline=None)
@given(releases())
def test_a_record_present_in_the_release_is_at_distance_0(case: tuple[pd.DataFrame, pd.DataFrame, list[int]]) -> None:
    original, released, copied = case
    result = linkage_attack(original, released, ["c0"], key=KEY)
    assert (result.dcr[copied] == 0).all()
    assert ((result.dcr >= 0) & (result.dcr <= 1)).all()


@settings(max_examples=40, deadline=None)
@given(releases(), st.randoms(use_true_random=False))
def test_the_distances_follow_a_permutation_of_the_rows(case: tuple[pd.DataFrame, pd.DataFrame, list[int]],
                                                        rng: random.Random) -> None:
    original, released, _ = case
    result = linkage_attack(original, released, ["c0"], key=KEY)
    o_perm = list(range(len(original)))
    r_perm = list(range(len(released)))
    rng.shuffle(o_perm)
    rng.shuffle(r_perm)
    moved = linkage_attack(original.iloc[o_perm].reset_index(drop=True),
                           released.iloc[r_perm].reset_index(drop=True), ["c0"], key=KEY)
    assert moved.dcr.tolist() == result.dcr[o_perm].tolist()  # released rows shuffled: the same distances
    assert moved.unique_known.tolist() == result.unique_known[o_perm].tolist()
    assert moved.agreeing_on_known.tolist() == result.agreeing_on_known[o_perm].tolist()
    for name in ("unique_on_known", "unique_on_known_linked", "unique_records", "unique_records_found",
                 "median_dcr", "share_at_zero"):
        assert getattr(moved, name) == getattr(result, name), name


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 40), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_closest_is_the_brute_force_minimum(width: int, nq: int, npool: int, seed: int) -> None:
    """Skewed values, so that both the matrix product and the rare pairs take part."""
    rng = np.random.default_rng(seed)
    q = (rng.zipf(1.6, (nq, width)) % 9).astype(np.int32)
    p = (rng.zipf(1.6, (npool, width)) % 9).astype(np.int32)
    subset = rng.random(npool) < 0.5
    whole, within = closest(q, p, subset)
    d = (q[:, None, :] != p[None, :, :]).sum(axis=2)
    assert whole.tolist() == d.min(axis=1).tolist()
    assert within.tolist() == (d[:, subset].min(axis=1) if subset.any() else np.full(nq, width + 1)).tolist()


def test_values_match_by_their_text_and_missing_matches_missing() -> None:
    a = pd.DataFrame({"x": ["1", None, "2.5"]})
    b = pd.DataFrame({"x": [1.0, float("nan"), 2.5]})
    ca, cb = shared_codes(["x"], a, b)
    assert ca[:, 0].tolist() == cb[:, 0].tolist()
    assert linkage_attack(a, b, "x", key=KEY).dcr.tolist() == [0.0, 0.0, 0.0]


# --- In plain words -------------------------------------------------------------------------------------


def test_the_sentences_state_the_figures_against_their_baselines() -> None:
    """Four persons; knowing age, job is recovered for 3 of them, against 2 for the most frequent released
    value (a)."""
    o = pd.DataFrame({"age": ["20", "20", "60", "70"], "job": ["a", "a", "b", "c"]})
    r = pd.DataFrame({"age": ["20", "20", "60", "80"], "job": ["a", "a", "b", "c"]})
    words = attack_sentences(attack(o, r, ["age"], key=KEY))
    # job: 20 -> a (2 right), 60 -> b (right), 70 -> nearest (every group at distance 1): mode a (wrong)
    assert words[0] == ("An attacker who knows age guesses job right for 75 % of people, against 50 % from the "
                        "published margins alone.")
    # unique on age: 60 and 70; 60 has one released record, 70 none
    assert words[1].startswith("2 people (50 %) are the only ones in the original with their age; 1 of them "
                               "share it with exactly one released record (a one-to-one link), 1 with at least one.")
    # unchanged: the 20s and the 60 (3 of 4); unique records: 60 and 70, found: 60
    assert words[2] == ("75 % of the original's records appear unchanged, every column, in the released file; of "
                        "the 2 records no other record of the original equals, 1 do.")
    assert words[3] == "For half the people, the closest released record differs in at most 0 % of the 2 columns."
    assert [percent(x) for x in (0.995, 0.0049, 0.5)] == ["99.5 %", "0.5 %", "50 %"]


def test_the_holdout_sentence_names_the_holdout() -> None:
    o = pd.DataFrame({"a": ["1", "2", "3", "4"]})
    result = linkage_attack(o, o, "a", holdout=pd.DataFrame({"a": ["5", "6", "7", "8"]}), key=KEY)
    last = linkage_sentences(result)[-1]
    # every record is in the release, none in the holdout: all four closer to the release
    assert last == ("Against the holdout file (records not used to make the release): for 100 % of the 4 people "
                    "compared, a released record is closer than any held-out person (each set taken at 4 records), "
                    "for 0 % a held-out person is closer, 0 % tie.")


# --- The command ----------------------------------------------------------------------------------------


def _run(argv: list[object]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def folder(tmp_path: Path) -> dict[str, Path]:
    """An original with missing values, a release, a holdout, one with a column less, a key file."""
    o = pd.DataFrame({"age": ["20", "20", "60", "70", "", "30"], "sex": ["f", "m", "m", "f", "f", ""],
                      "job": ["a", "b", "", "c", "a", "b"]})
    r = pd.DataFrame({"age": ["20", "20", "60", "80", "", "30"], "sex": ["f", "m", "m", "m", "f", "m"],
                      "job": ["a", "a", "", "c", "a", "b"]})
    f = {name: tmp_path / f"{name}.csv" for name in ("original", "released", "holdout", "fewer")}
    o.to_csv(f["original"], index=False)
    r.to_csv(f["released"], index=False)
    o.assign(age=["21", "22", "61", "71", "", "31"]).to_csv(f["holdout"], index=False)
    r.drop(columns="job").to_csv(f["fewer"], index=False)
    f["key"] = tmp_path / "k.key"
    f["key"].write_text(bytes(range(7, 39)).hex() + "\n")
    f["key"].chmod(0o600)
    (tmp_path / "private").mkdir()
    (tmp_path / PUBLIC_FOLDER).mkdir()
    return f


def _state(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with its SHA-256 (temporaries included)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_per_record_file_holds_the_loops_figures_and_is_private(folder: dict[str, Path]) -> None:
    out = folder["original"].parent / "private" / "links.csv"
    code, printed, err = _run(["attack", folder["released"], "--original", folder["original"], "--known", "age,sex",
                               "--holdout", folder["holdout"], "--key-file", folder["key"], "--per-record", out])
    assert code == 0, err
    assert out.stat().st_mode & 0o777 == 0o600
    frame = pd.read_csv(out, keep_default_na=False)
    o = pd.read_csv(folder["original"], dtype=str, keep_default_na=False).replace("", None)
    r = pd.read_csv(folder["released"], dtype=str, keep_default_na=False).replace("", None)
    rows = _records(o, ["age", "sex", "job"])
    rel = _records(r, ["age", "sex", "job"])
    assert frame["row"].tolist() == list(range(6))
    assert frame["dcr"].tolist() == pytest.approx([min(_hamming(x, y) for y in rel) / 3 for x in rows])
    known_o, known_r = _records(o, ["age", "sex"]), _records(r, ["age", "sex"])
    assert frame["released_agreeing_on_known"].tolist() == [sum(x == y for y in known_r) for x in known_o]
    assert "per-record linkage" in printed and "in plain words:" in printed
    assert str(out) in printed


def test_the_json_holds_the_linkage_totals_and_validates(folder: dict[str, Path]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from pramkit._json import output_schema

    code, out, err = _run(["attack", folder["released"], "--original", folder["original"], "--known", "age",
                           "--key-file", folder["key"], "--json"])
    assert code == 0, err
    value = json.loads(out)
    jsonschema.Draft202012Validator(output_schema("pramkit.attack.result")).validate(value)
    link = value["linkage"]
    assert link["records"] == 6 and link["holdout"] == "keyed half" and link["holdout_records"] == 3
    # found exactly: the first 20, the 60 and the one of unknown age; not the second 20 (job a in the release),
    # the 70 (80 and m) nor the 30 (sex missing, m in the release)
    assert link["share_at_zero"] == pytest.approx(3 / 6)
    assert "dcr" not in link and "in_holdout" not in link


def _bad_cases(f: dict[str, Path]) -> list[tuple[list[object], str]]:
    base = ["attack", f["released"], "--original", f["original"]]
    public = f["original"].parent / PUBLIC_FOLDER / "links.csv"
    private = f["original"].parent / "private" / "links.csv"
    one = f["original"].parent / "one.csv"
    one.write_text("age,sex,job\n20,f,a\n")
    ragged = f["original"].parent / "ragged.csv"
    ragged.write_text("age,sex,job\n20,f,a\n60,m\n")
    return [
        ([*base, "--known", "income", "--per-record", private], "no known column 'income' in the files"),
        (["attack", f["fewer"], "--original", f["original"], "--known", "age", "--per-record", private],
         "columns differ from the original's; only in the original: job"),
        ([*base, "--known", "age", "--holdout", f["fewer"], "--per-record", private],
         "the holdout file's columns differ from the original's; only in the original: job"),
        (["attack", f["released"], "--original", one, "--known", "age", "--per-record", private],
         "a holdout half needs at least 2 records"),
        ([*base, "--known", "age", "--per-record", public], "cannot go inside the public folder"),
        ([*base, "--known", "age", "--per-record", f["original"]], "would overwrite the input"),
        ([*base, "--known", "age", "--per-record", f["released"].parent / "absent" / "x.csv"], "does not exist"),
        (["attack", ragged, "--original", f["original"], "--known", "age", "--per-record", private], "ragged.csv"),
        ([*base, "--known", "age", "--holdout", ragged, "--per-record", private], "ragged.csv"),
        ([*base, "--known", "age", "--no-linkage", "--per-record", private], "leave out --no-linkage"),
    ]


def test_bad_input_is_one_line_exit_2_and_nothing_is_written(folder: dict[str, Path]) -> None:
    root = folder["original"].parent
    for argv, message in _bad_cases(folder):
        before = _state(root)
        code, out, err = _run(argv)
        assert (code, out) == (2, ""), (argv, err)
        assert err.count("\n") == 1 and message in err, (message, err)
        assert _state(root) == before, message  # inputs unchanged, nothing written


def test_an_existing_per_record_file_needs_force(folder: dict[str, Path]) -> None:
    out = folder["original"].parent / "private" / "links.csv"
    out.write_text("old\n")
    argv = ["attack", folder["released"], "--original", folder["original"], "--known", "age", "--per-record", out]
    code, _, err = _run(argv)
    assert code == 2 and "exists" in err and out.read_text() == "old\n"
    assert _run([*argv, "--force"])[0] == 0 and out.read_text().startswith("row,")


@pytest.mark.parametrize("failure", ["write", "short", "rename"])
def test_a_failed_per_record_write_leaves_nothing(folder: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                                  failure: str) -> None:
    import pramkit.atomic as atomic

    def half(path: Path, data: bytes) -> None:
        with open(path, "wb") as fh:
            fh.write(data[: len(data) // 2])
        if failure == "write":
            raise OSError(errno.ENOSPC, "No space left on device")

    def no_rename(*args: object, **kw: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    if failure == "rename":
        monkeypatch.setattr(atomic.os, "link", no_rename)
        monkeypatch.setattr(atomic.os, "rename", no_rename)
        monkeypatch.setattr(atomic.os, "replace", no_rename)
    else:
        monkeypatch.setattr(atomic, "_write_file", half)
    root = folder["original"].parent
    before = _state(root)
    code, out, err = _run(["attack", folder["released"], "--original", folder["original"], "--known", "age",
                           "--per-record", root / "private" / "links.csv"])
    assert code == 2 and err.count("\n") == 1 and "links.csv" in err, err
    assert out == ""  # nothing printed: the figures go with the file or not at all
    assert _state(root) == before  # no file, no temporary


def test_a_public_folder_is_refused_in_any_spelling() -> None:
    for path in ("out/public/x.csv", "out/Public/deep/x.csv", "public/x.csv"):
        with pytest.raises(ParameterError, match="public folder"):
            refuse_public(path)
    refuse_public("out/publication/x.csv")


def test_too_many_pairs_are_refused_and_the_linkage_can_be_left_out(folder: dict[str, Path],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import pramkit.risk.attack_linkage as linkage

    monkeypatch.setattr(linkage, "MAX_PAIRS", 10)
    argv = ["attack", folder["released"], "--original", folder["original"], "--known", "age", "--json"]
    code, out, err = _run(argv)
    assert code == 2 and out == "" and "more than 10 pairs" in err and err.count("\n") == 1
    code, out, _ = _run([*argv, "--no-linkage"])
    assert code == 0 and json.loads(out)["linkage"] is None
