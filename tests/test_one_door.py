"""One door per workflow: the library function works from one opened source and one checked specification.

``pramkit.apply_file`` given its settings as keywords builds the specification from them and goes through the
same door as ``apply_file(spec=ApplySpec(...))``: on sdcMicro's testdata the two calls write the same bytes,
and each call checks its settings exactly once (the specification's rules for a specification, the keywords'
own rules, with their messages, for keywords).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from conftest import SDC_DATA

import pramkit
import pramkit.engine.perturb as perturb
import pramkit.settings as settings
from pramkit import Manifest, PramMatrix
from pramkit.engine.apply_spec import ApplySettings
from pramkit.errors import ParameterError
from pramkit.release.apply_spec import ApplySpec

TESTDATA = SDC_DATA / "testdata.csv"
pytestmark = pytest.mark.skipif(not TESTDATA.is_file(), reason="../shared/data/sdcmicro/testdata.csv is absent")
KEY = bytes(range(11, 43))


def _rows() -> tuple[list[str], list[list[str]]]:
    """The header and records of testdata.csv, read by the csv module (not by pramkit)."""
    with TESTDATA.open(newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    return header, rows


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A manifest for urbrur and water: a keep-probability matrix over the categories the csv module reads."""
    header, rows = _rows()
    matrices = {}
    for name in ("urbrur", "water"):
        labels = sorted({r[header.index(name)] for r in rows}, key=int)
        matrices[name] = PramMatrix.from_diagonal([0.7] * len(labels), [int(c) for c in labels])
    path = tmp_path_factory.mktemp("one_door") / "m.json"
    Manifest.of(matrices).write(path)
    return path


SETTINGS: list[dict[str, Any]] = [
    {},
    {"chunk_rows": 333, "release": "wave 2", "threads": 1},
    {"shuffle": True, "public_columns": ("sex", "age"), "chunk_rows": 1000},
]


def _as_spec(keywords: dict[str, Any]) -> ApplySpec:
    given = dict(keywords)
    if "public_columns" in given:
        given["public_columns"] = ",".join(given["public_columns"])  # the command line's text
    return ApplySpec(**given)


@pytest.mark.parametrize("keywords", SETTINGS, ids=["defaults", "label-chunks", "shuffle"])
def test_apply_keywords_and_spec_release_the_same_bytes(keywords: dict[str, Any], manifest: Path,
                                                         tmp_path: Path) -> None:
    a = pramkit.apply_file(TESTDATA, manifest, tmp_path / "a.csv", key=KEY, **keywords)
    b = pramkit.apply_file(TESTDATA, manifest, tmp_path / "b.csv", key=KEY, spec=_as_spec(keywords))
    c = _as_spec(keywords).apply(TESTDATA, manifest, tmp_path / "c.csv", key=KEY)
    released = (tmp_path / "a.csv").read_bytes()
    assert released == (tmp_path / "b.csv").read_bytes() == (tmp_path / "c.csv").read_bytes()
    receipts = [(tmp_path / f"{n}.csv.receipt.json").read_text().replace(f"{n}.csv", "OUT") for n in "abc"]
    assert receipts[0] == receipts[1] == receipts[2]
    assert a.rows == b.rows == c.rows and a.release == b.release == c.release == keywords.get("release", "")
    assert a.guarantees == b.guarantees == c.guarantees
    # checked against the original read by the csv module: as many records, the unperturbed columns as they were
    header, rows = _rows()
    with (tmp_path / "a.csv").open(newline="", encoding="utf-8") as f:
        out_header, *out_rows = list(csv.reader(f))
    assert out_header == header and len(out_rows) == len(rows) == a.rows
    kept = [i for i, name in enumerate(header) if name not in ("urbrur", "water")]
    if keywords.get("shuffle"):
        assert sorted(tuple(r[i] for i in kept) for r in out_rows) == sorted(tuple(r[i] for i in kept) for r in rows)
    else:
        assert [[r[i] for i in kept] for r in out_rows] == [[r[i] for i in kept] for r in rows]
        changed = sum(r[header.index("urbrur")] != o[header.index("urbrur")] for r, o in zip(rows, out_rows))
        assert 0 < changed < len(rows) / 2  # kept with probability 0.7


def _counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_apply_checks_a_spec_once(manifest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = _counting(monkeypatch, ApplySpec, "check")
    rules = _counting(monkeypatch, settings, "check_rules")
    pramkit.apply_file(TESTDATA, manifest, tmp_path / "a.csv", key=KEY, spec=ApplySpec(release="wave 2"))
    assert (len(checks), len(rules)) == (1, 1)
    ApplySpec(chunk_rows=500).apply(TESTDATA, manifest, tmp_path / "b.csv", key=KEY)
    assert (len(checks), len(rules)) == (2, 2)


def test_apply_checks_its_keywords_once_by_their_own_rules(manifest: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Keywords build the settings and are checked once, by apply_file's own rules (release_label, chunk_rows),
    not again by the settings' rules."""
    spec_checks = _counting(monkeypatch, ApplySettings, "check")
    rules = _counting(monkeypatch, settings, "check_rules")
    labels = _counting(monkeypatch, perturb, "release_label")
    built: list[tuple[ApplySettings, int]] = []
    door = perturb._apply

    def seen(source: Any, manifest: Any, out: Any, spec: ApplySettings, **files: Any) -> Any:
        built.append((spec, len(labels)))  # the label's rule run once on the way in (release_key reads it after)
        assert settings.is_checked(spec)  # inside the block: taken as checked
        return door(source, manifest, out, spec, **files)

    monkeypatch.setattr(perturb, "_apply", seen)
    pramkit.apply_file(TESTDATA, manifest, tmp_path / "a.csv", key=KEY, release="wave 2", chunk_rows=700,
                       shuffle=True, public_columns=["sex"])
    assert (len(spec_checks), len(rules)) == (0, 0)
    assert built == [(ApplySettings(chunk_rows=700, shuffle=True, public_columns=("sex",), release="wave 2"), 1)]
    assert built[0][0].columns() == ("sex",) and built[0][0].label() == "wave 2"


@pytest.mark.parametrize(("keywords", "message"), [
    ({"chunk_rows": 0}, "chunk_rows must be at least 1"),
    ({"release": " wave"}, "the release label ' wave' begins or ends with a blank; give it without"),
    ({"threads": 0}, "threads must be at least 1, not 0"),
])
def test_apply_keywords_keep_their_messages(keywords: dict[str, Any], message: str, manifest: Path,
                                            tmp_path: Path) -> None:
    with pytest.raises(ParameterError) as caught:
        pramkit.apply_file(TESTDATA, manifest, tmp_path / "a.csv", key=KEY, **keywords)
    assert str(caught.value) == message
    assert not (tmp_path / "a.csv").exists()
