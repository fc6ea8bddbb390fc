"""``pramkit inspect --ddi``: a DDI-Codebook 2.5 description of a release.

Every document is checked twice, by readers pramkit did not write: against the DDI Alliance's official
schema (``codebook.xsd`` of DDI-Codebook 2.5 in ``../shared/ddi-codebook-2.5``, through libxml2 by lxml;
those tests skip in one line when ``../shared`` is absent), and, without it, by the standard library's
parser: the ``ddi:codebook:2_5`` namespace and version 2.5, the elements in the order of the schema's
sequences (:data:`ORDER`, transcribed from DDI-Codebook 2.5's complex types), a unique ``ID`` and a ``name``
for every ``var``, only IDs it defines referred to, and what the manifest says.
"""

from __future__ import annotations

import errno
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA, assert_refused, eusilc_export

from pramkit import atomic
from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.ledger import release_guarantee
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix
from pramkit.report.ddi import DDI_NAMESPACE, ddi_codebook

NS = {"ddi": DDI_NAMESPACE}
Q = f"{{{DDI_NAMESPACE}}}"

#: The children each element may hold, in the order DDI-Codebook 2.5's sequences require (codeBookType,
#: docDscrType, citationType, titlStmtType, prodStmtType, stdyDscrType, methodType, fileDscrType,
#: fileTxtType, dimensnsType, dataDscrType, varType, catgryType, otherMatType): only the ones pramkit may
#: write are listed, and an element whose children are not all listed fails the test.
ORDER = {
    "codeBook": ["docDscr", "stdyDscr", "fileDscr", "dataDscr", "otherMat"],
    "docDscr": ["citation"],
    "citation": ["titlStmt", "prodStmt"],
    "titlStmt": ["titl"],
    "prodStmt": ["prodDate", "software"],
    "stdyDscr": ["citation", "method"],
    "method": ["dataColl", "notes", "anlyInfo", "stdyClas", "dataProcessing"],
    "fileDscr": ["fileTxt"],
    "fileTxt": ["fileName", "dimensns"],
    "dimensns": ["caseQnty", "varQnty"],
    "dataDscr": ["var"],
    "var": ["labl", "invalrng", "txt", "catgry"],
    "invalrng": ["item"],
    "catgry": ["catValu", "labl"],
    "otherMat": ["labl", "txt"],
}
#: Elements that must hold at least one of a child (the schema's minOccurs="1").
REQUIRED = {"codeBook": ["stdyDscr"], "stdyDscr": ["citation"], "citation": ["titlStmt"], "titlStmt": ["titl"]}


def check_structure(element: ET.Element) -> None:
    """Every element in the DDI namespace, its children in the schema's order; leaves hold text."""
    assert element.tag.startswith(Q), element.tag
    name = element.tag[len(Q):]
    children = [child.tag[len(Q):] if child.tag.startswith(Q) else child.tag for child in element]
    if children:
        allowed = ORDER[name]
        assert set(children) <= set(allowed), (name, children)
        ranks = [allowed.index(c) for c in children]
        assert ranks == sorted(ranks), (name, children)
    else:
        assert (element.text or "").strip() or name in ("fileDscr",) or (name == "item" and element.get("VALUE")), name
    for child in REQUIRED.get(name, []):
        assert child in children, (name, child)
    for child in element:
        check_structure(child)


#: The official schema of DDI-Codebook 2.5 (test data beside the project, not shipped with it).
XSD = Path(__file__).resolve().parents[2] / "shared" / "ddi-codebook-2.5" / "schemas" / "codebook.xsd"


@pytest.fixture(scope="module")
def schema():
    """The official DDI-Codebook 2.5 schema, compiled by libxml2 (lxml)."""
    if not XSD.is_file():
        pytest.skip("../shared/ddi-codebook-2.5 is not available")
    from lxml import etree

    return etree.XMLSchema(etree.parse(str(XSD)))


def check_valid(schema, text: str) -> None:
    """The document validates against the official schema (each error named with its line)."""
    from lxml import etree

    document = etree.fromstring(text.encode("utf-8"))
    assert schema.validate(document), [str(e) for e in schema.error_log]


def check_document(text: str) -> ET.Element:
    root = ET.fromstring(text.encode("utf-8"))
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    assert root.tag == Q + "codeBook" and root.get("version") == "2.5"
    assert root.get("{http://www.w3.org/2001/XMLSchema-instance}schemaLocation").startswith(DDI_NAMESPACE + " ")
    check_structure(root)
    ids = [e.get("ID") for e in root.iter() if e.get("ID") is not None]
    assert len(ids) == len(set(ids))
    for e in root.iter():
        for ref in (e.get("files") or "").split():
            assert ref in ids, ref
    for var in root.iterfind("ddi:dataDscr/ddi:var", NS):
        assert var.get("name") and var.get("intrvl") in (None, "discrete", "contin")
    return root


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from pramkit.datasets import census

    d = tmp_path_factory.mktemp("ddi")
    census(1200, seed=11).to_csv(d / "data.csv", index=False)
    assert main(["keygen", str(d / "key")]) == 0
    assert main(["design", str(d / "data.csv"), "--vars", "age,sex,marital_status", "--epsilon", "4", "--out",
                 str(d / "m.json"), "--key-file", str(d / "key"), "--quiet"]) == 0
    assert main(["apply", str(d / "data.csv"), "--manifest", str(d / "m.json"), "--out", str(d / "r.csv"),
                 "--key-file", str(d / "key"), "--quiet"]) == 0
    return {"dir": d, "manifest": d / "m.json", "released": d / "r.csv"}


def test_inspect_writes_a_codebook_of_the_release(release, capsys) -> None:
    d = release["dir"]
    assert main(["inspect", str(release["manifest"]), "--released", str(release["released"]),
                 "--ddi", str(d / "release.xml")]) == 0
    assert "DDI-Codebook 2.5" in capsys.readouterr().out
    root = check_document((d / "release.xml").read_text(encoding="utf-8"))
    manifest = Manifest.read(release["manifest"])
    columns = list(pd.read_csv(release["released"], nrows=0).columns)
    assert [v.get("name") for v in root.iterfind("ddi:dataDscr/ddi:var", NS)] == columns
    for v in manifest.variables:
        var = root.find(f"ddi:dataDscr/ddi:var[@name='{v.name}']", NS)
        assert [c.text for c in var.iterfind("ddi:catgry/ddi:catValu", NS)] == [str(c) for c in v.matrix.categories]
    methodology = " ".join(e.text for e in root.iterfind("ddi:stdyDscr/ddi:method/ddi:dataProcessing", NS))
    assert release_guarantee(manifest, columns).sentence in methodology
    other = root.find("ddi:otherMat", NS)
    assert other.get("URI") == "m.json" and other.get("level") == "study"
    assert root.find("ddi:fileDscr/ddi:fileTxt/ddi:fileName", NS).text == "r.csv"
    assert root.find("ddi:fileDscr/ddi:fileTxt/ddi:dimensns/ddi:varQnty", NS).text == str(len(columns))


def test_json_names_the_file_and_nothing_reads_the_values(release, tmp_path, capsys) -> None:
    import json

    assert main(["inspect", str(release["manifest"]), "--released", str(release["released"]), "--json",
                 "--ddi", str(tmp_path / "a.xml")]) == 0
    assert json.loads(capsys.readouterr().out)["ddi"] == str(tmp_path / "a.xml")
    other = tmp_path / "r.csv"  # other records under the same header, as many: the same description
    frame = pd.read_csv(release["released"])
    frame.iloc[::-1].apply(lambda c: c.sample(frac=1.0, random_state=3).to_numpy()).to_csv(other, index=False)
    assert ddi_codebook(release["manifest"], other) == (tmp_path / "a.xml").read_text(encoding="utf-8")


def test_labels_with_unicode_spaces_markup_and_a_joint_variable(tmp_path) -> None:
    labels = [" Île-de-France", "a<b & c", "x_y ", "tab\there", "bell\x07"]
    cells = [(r, s) for r in (1, 2) for s in ("m", "f")]
    joint = PerturbedVariable("region*sex", PramMatrix(np.full((4, 4), 0.25), cells), columns=("region", "sex"))
    manifest = Manifest((PerturbedVariable("région", randomized_response(labels, 1.0)), joint))
    pd.DataFrame({"région": [labels[0]], "region": [1], "sex": ["m"], "revenu": [3]}).to_csv(tmp_path / "r.csv",
                                                                                           index=False)
    root = check_document(ddi_codebook(manifest, tmp_path / "r.csv"))
    var = root.find("ddi:dataDscr/ddi:var[@name='région']", NS)
    assert [c.text for c in var.iterfind("ddi:catgry/ddi:catValu", NS)] == [*labels[:4], "bell\\x07"]
    texts = {v.get("name"): v.find("ddi:txt", NS).text for v in root.iterfind("ddi:dataDscr/ddi:var", NS)}
    assert "jointly" in texts["region"] and "jointly" in texts["sex"] and "not perturbed" in texts["revenu"]
    alone = check_document(ddi_codebook(manifest))  # no released file: the manifest's variables alone
    assert [v.get("name") for v in alone.iterfind("ddi:dataDscr/ddi:var", NS)] == ["région", "region*sex"]
    assert alone.find("ddi:fileDscr", NS) is None


def test_a_failed_write_leaves_nothing(release, capsys, monkeypatch) -> None:
    d = release["dir"]

    def enospc(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    for point in ("_fsync", "_write_file"):
        before = sorted(p.name for p in d.iterdir())
        monkeypatch.setattr(atomic, point, enospc)
        code = main(["inspect", str(release["manifest"]), "--ddi", str(d / "failed.xml")])
        monkeypatch.undo()
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "No space left" in err, err
        assert sorted(p.name for p in d.iterdir()) == before


BAD = [
    (["--ddi", "{d}/old.xml"], "exists"),
    (["--ddi", "{d}/m.json", "--force"], "m.json"),
    (["--ddi", "{d}/r.csv", "--released", "{d}/r.csv", "--force"], "r.csv"),
    (["--ddi", "{d}/no/such/folder/r.xml"], "does not exist"),
    (["--ddi", "{d}/r.xml", "--released", "{d}/empty.csv"], "empty.csv"),
]


@pytest.mark.parametrize(("flags", "message"), BAD)
def test_bad_input_is_one_line_and_writes_nothing(release, tmp_path, capsys, flags, message) -> None:
    for name in ("m.json", "r.csv", "r.csv.receipt.json"):
        (tmp_path / name).write_bytes((release["dir"] / name).read_bytes())
    (tmp_path / "old.xml").write_text("<old/>\n")
    (tmp_path / "empty.csv").write_text("")
    assert_refused(tmp_path, ["inspect", str(tmp_path / "m.json"), *(f.format(d=tmp_path) for f in flags)],
                   message, capsys)


def test_the_manifest_alone_in_a_missing_file_is_one_line(tmp_path, capsys) -> None:
    assert_refused(tmp_path, ["inspect", str(tmp_path / "absent.json"), "--ddi", str(tmp_path / "r.xml")],
                   "absent.json", capsys)


def _kinds(d: Path, data: Path) -> dict[str, tuple[Path, Path | None]]:
    """A release of each kind on the EU-SILC file read with its missing code -9: (manifest, released file)."""
    key, na = str(d / "key"), ["--na-values", "-9"]
    assert main(["keygen", key]) == 0
    runs = {
        "plain": ["design", str(data), "--vars", "pl030,pb220a", "--epsilon", "3", *na],
        "joint": ["design", str(data), "--vars", "pl030,pb220a", "--split", "joint", "--epsilon", "3", *na],
        "strata": ["design", str(data), "--vars", "pl030", "--strata", "rb090", "--epsilon", "3", *na],
    }
    out: dict[str, tuple[Path, Path | None]] = {}
    for kind, command in runs.items():
        manifest, released = d / f"{kind}.json", d / f"{kind}.csv"
        assert main([*command, "--out", str(manifest), "--key-file", key, "--quiet"]) == 0, kind
        assert main(["apply", str(data), "--manifest", str(manifest), "--out", str(released), "--key-file", key,
                     *na, "--quiet"]) == 0, kind
        out[kind] = (manifest, released)
    resampled = d / "resampled.csv"
    assert main(["resample", str(out["plain"][1]), "--manifest", str(out["plain"][0]), "--out", str(resampled),
                 "--key-file", key, *na, "--quiet"]) == 0
    out["resampled"] = (out["plain"][0], resampled)
    swapped, swap_manifest = d / "swapped.csv", d / "swap.json"
    assert main(["swap", str(data), "--hid", "db030", "--geo", "db040", "--rate", "0.1", "--out", str(swapped),
                 "--manifest", str(swap_manifest), "--key-file", key, *na]) == 0
    out["swap"] = (swap_manifest, swapped)
    return out


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path | None]]:
    frame = eusilc_export(coded=("pl030", "pb220a"))  # the not-applicable code, as an office export writes it
    d = tmp_path_factory.mktemp("kinds")
    frame.to_csv(d / "eusilc.csv", index=False)
    return _kinds(d, d / "eusilc.csv")


@pytest.mark.parametrize("kind", ["plain", "joint", "strata", "resampled", "swap"])
def test_every_kind_validates_against_the_official_schema(kinds, schema, tmp_path, capsys, kind) -> None:
    manifest, released = kinds[kind]
    for with_file in (False, True):
        out = tmp_path / f"{with_file}.xml"
        assert main(["inspect", str(manifest), "--ddi", str(out),
                     *(["--released", str(released)] if with_file else [])]) == 0, capsys.readouterr().err
        text = out.read_text(encoding="utf-8")
        check_valid(schema, text)
        root = check_document(text)
    frame = pd.read_csv(released, dtype=str, keep_default_na=False)
    assert root.find("ddi:fileDscr/ddi:fileTxt/ddi:dimensns/ddi:caseQnty", NS).text == str(len(frame))
    for var in root.iterfind("ddi:dataDscr/ddi:var", NS):  # the missing code the release was read with
        assert [i.get("VALUE") for i in var.iterfind("ddi:invalrng/ddi:item", NS)] == ["-9"], var.get("name")
    processing = " ".join(e.text for e in root.iterfind("ddi:stdyDscr/ddi:method/ddi:dataProcessing", NS))
    assert ("post-processing" in processing) == (kind == "resampled")
    if kind == "strata":  # the variable's epsilon given its strata, beside its local epsilon (inf)
        described = Manifest.read(manifest).describe()["variables"][0]
        given = float(described["epsilon_given_block"])
        shown = re.search(r"epsilon local inf; ([0-9.]+) given the structure", processing)
        assert described["epsilon"] == "inf" and shown, processing
        assert given <= float(shown.group(1)) <= given * (1 + 1e-3)  # rounded up, never below the truth


def test_a_recoded_release_says_how_its_categories_were_formed(schema, tmp_path, capsys) -> None:
    """EU-SILC's age cut into bands by `pramkit recode`, the map declared with `design --recoded-by`: the
    description names the recoding (it is the data holder's declaration, not read from the data)."""
    import json

    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    frame = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", dtype=str, keep_default_na=False).head(1500)
    frame.to_csv(tmp_path / "silc.csv", index=False)
    (tmp_path / "map.json").write_text(json.dumps({"age": {"breaks": [-1, 17, 64, 120],
                                                          "labels": ["0-17", "18-64", "65+"]}}))
    assert main(["recode", str(tmp_path / "silc.csv"), "--map", str(tmp_path / "map.json"),
                 "--out", str(tmp_path / "bands.csv")]) == 0
    assert main(["design", str(tmp_path / "bands.csv"), "--vars", "age", "--epsilon", "2", "--recoded-by",
                 str(tmp_path / "map.json"), "--out", str(tmp_path / "m.json"), "--quiet"]) == 0, capsys.readouterr()
    text = ddi_codebook(tmp_path / "m.json")
    check_valid(schema, text)
    processing = [e.text for e in check_document(text).iterfind("ddi:stdyDscr/ddi:method/ddi:dataProcessing", NS)]
    assert ("Recoded before PRAM (global recoding): age: numbers in intervals at the breaks -1, 17, 64, 120 "
            "(closed on the right) become '0-17', '18-64', '65+'") in processing
    capsys.readouterr()  # and inspect says it, in its text and its JSON (the declared map as it is)
    assert main(["inspect", str(tmp_path / "m.json")]) == 0
    assert ("recoded before PRAM: age: numbers in intervals at the breaks -1, 17, 64, 120 (closed on the right) "
            "become '0-17', '18-64', '65+'") in capsys.readouterr().out.splitlines()
    assert main(["inspect", str(tmp_path / "m.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recode"] == json.loads((tmp_path / "map.json").read_text())
