"""Files as offices write them: a tab-separated ``.tsv`` export of the EU-SILC file, and a Latin-1 export with
``;`` between fields and CR LF at the end of each line (as Windows programs write them).

The released file is read back by the standard library's ``csv`` module (not pramkit's reader): it keeps
the tab separator, the header, every record, and every column that is not perturbed byte for byte, while
the perturbed column holds only the manifest's categories or the missing code.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import assert_refused, eusilc_export

from pramkit.cli import main
from pramkit.manifest import Manifest


@pytest.fixture(scope="module")
def tsv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """EU-SILC as a tab-separated export, its not-applicable answers written -9."""
    frame = eusilc_export(2000)
    d = tmp_path_factory.mktemp("tsv")
    frame.to_csv(d / "silc.tsv", sep="\t", index=False)
    return d / "silc.tsv"


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh, delimiter="\t"))


def test_a_tsv_export_is_released_as_tsv(tsv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest, released, key = tmp_path / "m.json", tmp_path / "released.tsv", tmp_path / "key"
    flags = ["--sep", "tab", "--na-values", "-9"]
    assert main(["keygen", str(key)]) == 0
    assert main(["design", str(tsv), "--vars", "pl030", "--epsilon", "2", "--out", str(manifest),
                 "--key-file", str(key), "--quiet", *flags]) == 0, capsys.readouterr().err
    assert main(["apply", str(tsv), "--manifest", str(manifest), "--out", str(released), "--key-file", str(key),
                 "--quiet", *flags]) == 0, capsys.readouterr().err
    before, after = _rows(tsv), _rows(released)
    assert after[0] == before[0] and len(after) == len(before)
    at = before[0].index("pl030")
    for old, new in zip(before[1:], after[1:]):
        assert old[:at] + old[at + 1:] == new[:at] + new[at + 1:]  # the rest as it was
        assert (new[at] == "-9") == (old[at] == "-9")  # missing kept missing, with its code
    categories = {str(c) for c in Manifest.read(manifest).variables[0].matrix.categories}
    assert {row[at] for row in after[1:]} - {"-9"} <= categories


def test_a_tsv_read_with_commas_is_one_line(tsv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "silc.tsv").write_bytes(tsv.read_bytes())
    assert_refused(folder, ["design", folder / "silc.tsv", "--vars", "pl030", "--epsilon", "2",
                            "--out", folder / "m.json"], "give --sep tab", capsys)


def test_a_windows_export_keeps_its_line_ends(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = eusilc_export(1500, coded=())
    frame["db040"] = frame["db040"].str.replace("Carinthia", "Kärnten")  # a letter Latin-1 holds
    frame.loc[3, "pb220a"] = "line one\nline two"  # a value holding a line feed: quoted, kept as it is
    original, released = tmp_path / "silc.csv", tmp_path / "released.csv"
    frame.to_csv(original, sep=";", index=False, encoding="latin-1", lineterminator="\r\n")
    flags = ["--sep", ";", "--encoding", "latin-1"]
    assert main(["keygen", str(tmp_path / "key")]) == 0
    assert main(["design", str(original), "--vars", "db040", "--epsilon", "2", "--out", str(tmp_path / "m.json"),
                 "--key-file", str(tmp_path / "key"), "--quiet", *flags]) == 0, capsys.readouterr().err
    assert main(["apply", str(original), "--manifest", str(tmp_path / "m.json"), "--out", str(released),
                 "--key-file", str(tmp_path / "key"), "--quiet", *flags]) == 0, capsys.readouterr().err
    data = released.read_bytes()
    assert data.count(b"\r\n") == len(frame) + 1 and data.endswith(b"\r\n")  # every record, the header too
    assert data.count(b"\n") == len(frame) + 2  # and one line feed more: the value's own, inside its quotes
    with open(released, newline="", encoding="latin-1") as fh:
        rows = list(csv.reader(fh, delimiter=";"))
    with open(original, newline="", encoding="latin-1") as fh:
        before = list(csv.reader(fh, delimiter=";"))
    at = before[0].index("db040")
    assert [r[:at] + r[at + 1:] for r in rows] == [r[:at] + r[at + 1:] for r in before]
    assert rows[4][before[0].index("pb220a")] == "line one\nline two"
