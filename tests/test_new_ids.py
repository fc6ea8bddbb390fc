"""``pramkit new-ids``: a grouping column replaced by keyed random ids, the rows shuffled, and a public receipt the
audit recounts.

On sdcMicro's testdata (real: 1 000 households ``ori_hid``, 4 580 persons, missing codes): the groups are kept
(checked with pandas against the original, row by row where the order is kept), each order does what it says,
the same key gives the same bytes, the audit passes the release and derives it again with the key, and fails a
released file whose ids or order were edited, naming the field; bad input is refused in one line with nothing
written, and a failed write leaves nothing."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import SDC_DATA
from conftest import run_cli as cli

import pramkit.atomic as atomic

needs_data = pytest.mark.skipif(not (SDC_DATA / "testdata.csv").is_file(), reason="../shared/data/sdcmicro is absent")



@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (SDC_DATA / "testdata.csv").is_file():
        pytest.skip("../shared/data/sdcmicro is absent")
    d = tmp_path_factory.mktemp("new-ids")
    (d / "testdata.csv").write_bytes((SDC_DATA / "testdata.csv").read_bytes())
    (d / "k.key").write_text(bytes(range(32)).hex())
    (d / "k.key").chmod(0o600)
    (d / "other.key").write_text(bytes(range(1, 33)).hex())
    (d / "other.key").chmod(0o600)
    for shuffle in ("households", "within", "records", "none"):
        code, out, err = cli("new-ids", d / "testdata.csv", "--id", "ori_hid", "--shuffle", shuffle, "--key-file",
                             d / "k.key", "--out", d / f"{shuffle}.csv", "--quiet")
        assert code == 0, out + err
    return d


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


@needs_data
def test_the_groups_are_kept_and_the_ids_are_1_to_h(folder) -> None:
    """With the order kept, row by row: one old id to one new id and back; the new ids are 1..H; every other
    value as it was."""
    before, after = _read(folder / "testdata.csv"), _read(folder / "none.csv")
    pairs = pd.DataFrame({"old": before["ori_hid"], "new": after["ori_hid"]})
    assert (pairs.groupby("old")["new"].nunique() == 1).all() and (pairs.groupby("new")["old"].nunique() == 1).all()
    assert sorted(after["ori_hid"].astype(int).unique()) == list(range(1, before["ori_hid"].nunique() + 1))
    rest = [c for c in before.columns if c != "ori_hid"]
    assert before[rest].equals(after[rest])
    assert (after["ori_hid"] != before["ori_hid"]).mean() > 0.9  # not the old numbering


@needs_data
def test_each_order_does_what_it_says(folder) -> None:
    before = _read(folder / "testdata.csv")
    rest = [c for c in before.columns if c != "ori_hid"]
    rows = sorted(map(tuple, before[rest].to_numpy().tolist()))
    for shuffle in ("households", "within", "records"):
        after = _read(folder / f"{shuffle}.csv")
        assert sorted(map(tuple, after[rest].to_numpy().tolist())) == rows, shuffle  # the same records
        ids = after["ori_hid"].astype(int)
        assert ids.is_monotonic_increasing == (shuffle != "records"), shuffle
    # households together and each in its order in the file: a new id's records in the households file are, in
    # order, those the same id holds in the file whose rows kept their order (the groups kept, checked above)
    households, kept = _read(folder / "households.csv"), _read(folder / "none.csv")
    shown = {new: group[rest].to_numpy().tolist() for new, group in households.groupby("ori_hid", sort=False)}
    assert shown == {new: group[rest].to_numpy().tolist() for new, group in kept.groupby("ori_hid", sort=False)}


@needs_data
def test_the_same_key_gives_the_same_bytes_and_another_key_other_ids(folder, tmp_path) -> None:
    again = tmp_path / "again.csv"
    code, _, err = cli("new-ids", folder / "testdata.csv", "--id", "ori_hid", "--key-file", folder / "k.key",
                       "--out", again, "--quiet")
    assert code == 0 and again.read_bytes() == (folder / "households.csv").read_bytes(), err
    code, _, err = cli("new-ids", folder / "testdata.csv", "--id", "ori_hid", "--key-file", folder / "other.key",
                       "--shuffle", "none", "--out", tmp_path / "other-none.csv", "--quiet")
    a, b = _read(folder / "none.csv"), _read(tmp_path / "other-none.csv")
    assert code == 0 and (a["ori_hid"] != b["ori_hid"]).mean() > 0.9


@needs_data
def test_the_receipt_holds_only_what_the_released_file_shows(folder) -> None:
    raw = json.loads((folder / "households.csv.new-ids.json").read_text())
    assert set(raw) == {"format", "version", "column", "shuffle", "groups", "guarantee", "released"}
    assert raw["groups"] == 1000 and raw["released"]["rows"] == 4580
    assert "fingerprint" not in json.dumps(raw)


def _audit(folder: Path, name: str, *extra: Any) -> tuple[int, str]:
    code, out, err = cli("audit", "--manifest", folder / f"{name}.csv.new-ids.json", "--released",
                         folder / f"{name}.csv", *extra)
    assert err == "", err
    return code, out


@needs_data
@pytest.mark.parametrize("shuffle", ["households", "records"])
def test_the_audit_passes_and_derives_the_file_again_with_the_key(folder, shuffle) -> None:
    code, out = _audit(folder, shuffle, "--original", folder / "testdata.csv", "--key-file", folder / "k.key")
    assert code == 0 and "the key reproduces the released file byte for byte" in out, out
    code, out = _audit(folder, shuffle, "--original", folder / "testdata.csv")
    assert code == 0 and "one new id for each value of ori_hid" in out, out


@needs_data
@pytest.mark.parametrize(("edit", "field"), [
    (lambda f: f.assign(ori_hid=f["ori_hid"].where(f.index != 0, "1001")), "groups"),       # an id beyond H
    (lambda f: pd.concat([f.iloc[[5]], f.drop(index=5)]), "shuffle"),                         # a record moved up
])
def test_a_released_file_edited_fails_named(folder, tmp_path, edit, field) -> None:
    kept = (folder / "households.csv").read_bytes()
    try:
        edit(_read(folder / "households.csv")).to_csv(folder / "households.csv", index=False)
        code, out = _audit(folder, "households")
        failed = [line for line in out.splitlines() if line.startswith("FAIL")]
        assert code == 1 and any(field in line for line in failed), out
    finally:
        (folder / "households.csv").write_bytes(kept)


@needs_data
@pytest.mark.parametrize(("args", "message"), [
    (["--id", "nope"], "'nope' is not a column of testdata.csv"),
    (["--id", "ori_hid", "--shuffle", "some"], "invalid choice: 'some'"),
    (["--id", "ori_hid", "--key-file", "absent.key"], "absent.key"),
    (["--id", "ori_hid", "--out", "testdata.csv"], "testdata.csv"),
], ids=["no such column", "bad order", "no key", "out is the input"])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, args, message) -> None:
    data = tmp_path / "testdata.csv"
    data.write_bytes((SDC_DATA / "testdata.csv").read_bytes())
    (tmp_path / "k.key").write_text(bytes(range(32)).hex())
    (tmp_path / "k.key").chmod(0o600)
    before = sorted(p.name for p in tmp_path.iterdir())
    rest = {"--key-file": str(tmp_path / "k.key"), "--out": str(tmp_path / "o.csv")}
    given = dict(zip(args[::2], args[1::2]))
    for flag in ("--key-file", "--out"):
        if flag in given:
            given[flag] = str(tmp_path / given[flag])
    flags = [x for kv in {**rest, **given}.items() for x in kv]
    code, out, err = cli("new-ids", data, *flags)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert data.read_bytes() == (SDC_DATA / "testdata.csv").read_bytes()


def _enospc(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@needs_data
@pytest.mark.parametrize("point", ["fsync", "receipt rename"])
def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch, point) -> None:
    data = tmp_path / "d.csv"
    data.write_bytes((SDC_DATA / "testdata.csv").read_bytes())
    (tmp_path / "k.key").write_text(bytes(range(32)).hex())
    (tmp_path / "k.key").chmod(0o600)
    if point == "fsync":
        monkeypatch.setattr(atomic, "_fsync", _enospc)
    else:  # the released file is in place, its receipt fails: the file goes too
        commit = atomic._commit

        def failing(tmp: Path, target: Path, **kwargs: Any) -> None:
            if target.name.endswith(".new-ids.json"):
                _enospc()
            commit(tmp, target, **kwargs)

        monkeypatch.setattr(atomic, "_commit", failing)
    code, _, err = cli("new-ids", data, "--id", "ori_hid", "--key-file", tmp_path / "k.key", "--out", tmp_path / "o.csv")
    assert code == 2 and "No space left on device" in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "k.key"]
