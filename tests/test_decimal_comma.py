"""``--decimal ,``: an office's export of EU-SILC (Latin-1, ``;``, CRLF, numbers with a decimal comma, made
here from the sdcMicro copy) gives the design, the release, the weighted estimates, the regression, the risk
and the recoding the same file with decimal points gives, and what pandas computes from it read with
``decimal=","``; categories stay text; a number written otherwise, and ``--decimal ,`` with ``--sep ,``, are
refused in one line with nothing written.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import assert_refused, eusilc_export

from pramkit.cli import main
from pramkit.io import csv_numbers
from pramkit.manifest import Manifest
from pramkit.source import Source

#: How the office's file is read.
OFFICE = ["--sep", ";", "--encoding", "latin-1", "--decimal", ","]
#: How pandas reads it.
PANDAS = {"sep": ";", "decimal": ",", "encoding": "latin-1"}
ROWS = 6000


def _office(frame: pd.DataFrame, path: Path) -> Path:
    """``frame`` (every column text) as an office exports it: decimal commas, ``;``, Latin-1, CRLF."""
    frame.apply(lambda c: c.str.replace(".", ",", regex=False)).to_csv(
        path, index=False, sep=";", encoding="latin-1", lineterminator="\r\n")
    return path


@pytest.fixture
def silc(tmp_path: Path) -> dict[str, Path]:
    """The first rows of EU-SILC with decimal points (``eu.csv``) and as an office exports them
    (``office.csv``); a Latin-1 region name, and a category written like a number (``band``: ``12,5``)."""
    frame = eusilc_export(ROWS, coded=())
    frame["db040"] = frame["db040"].replace({"Carinthia": "K\u00e4rnten"})
    frame["band"] = np.where(frame["hsize"].astype(int) > 2, "12,5", "7,5")
    point = tmp_path / "eu.csv"
    frame.to_csv(point, index=False)
    key = tmp_path / "k.key"
    assert main(["keygen", str(key)]) == 0
    return {"point": point, "office": _office(frame, tmp_path / "office.csv"), "key": key}


def _run(capsys: pytest.CaptureFixture[str], *args: Any) -> dict[str, Any]:
    """``pramkit ARGS --json``'s result, without what differs from run to run."""
    capsys.readouterr()
    assert main([str(a) for a in args] + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for name in ("released_file", "seconds"):
        out.pop(name, None)
    if isinstance(out.get("fit"), dict):
        out["fit"].pop("seconds", None)
    return out


@pytest.fixture
def released(silc: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    """A manifest designed from each file (``--weights rb050``) and each file released with the first."""
    key = silc["key"]
    out = {"manifest": tmp_path / "m.json", "office_manifest": tmp_path / "office-m.json"}
    for name, extra, manifest in (("point", [], out["manifest"]), ("office", OFFICE, out["office_manifest"])):
        assert main(["design", str(silc[name]), "--vars", "db040,rb090", "--epsilon", "2", "--weights", "rb050",
                     "--key-file", str(key), "--out", str(manifest), "-q", *extra]) == 0
    for name, extra in (("point", []), ("office", OFFICE)):
        out[name] = tmp_path / f"released-{name}.csv"
        assert main(["apply", str(silc[name]), "--manifest", str(out["manifest"]), "--out", str(out[name]),
                     "--key-file", str(key), "-q", *extra]) == 0
    return out


def _manifest(path: Path) -> dict[str, Any]:
    m = json.loads(path.read_text(encoding="utf-8"))
    m.pop("created")
    for v in m["variables"]:
        v["design"].pop("seconds")
    return m


def test_design_and_apply_read_the_office_file_as_the_point_file(silc: dict[str, Path],
                                                                  released: dict[str, Path]) -> None:
    assert _manifest(released["office_manifest"]) == _manifest(released["manifest"])
    office = released["office"].read_bytes()
    assert office.startswith(b"db030;hsize;db040;") and b"\r\n" in office and "K\u00e4rnten".encode("latin-1") in office
    as_read = pd.read_csv(silc["office"], sep=";", encoding="latin-1", dtype=str, keep_default_na=False)
    written = pd.read_csv(released["office"], sep=";", encoding="latin-1", dtype=str, keep_default_na=False)
    assert written.drop(columns=["db040", "rb090"]).equals(as_read.drop(columns=["db040", "rb090"]))  # as read
    assert written["rb050"].str.contains(",").mean() > 0.9  # the weights with decimals, as they were
    point = pd.read_csv(released["point"], dtype={"band": str})
    assert pd.read_csv(released["office"], dtype={"band": str}, **PANDAS).equals(point)  # the same draws


def test_weighted_estimates_are_those_of_the_point_file_and_of_pandas(released: dict[str, Path],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--manifest", released["manifest"], "--vars", "db040", "--weights", "rb050"]
    point = _run(capsys, "estimate", released["point"], *args)
    office = _run(capsys, "estimate", released["office"], *args, *OFFICE)
    assert office == point
    frame = pd.read_csv(released["office"], **PANDAS)
    matrix = Manifest.read(released["manifest"]).variables[0].matrix
    totals = frame.groupby("db040")["rb050"].sum().reindex(list(matrix.categories))
    assert [c["category"] for c in office["cells"]] == list(matrix.categories)
    np.testing.assert_allclose([c["released"] for c in office["cells"]], totals.to_numpy(), rtol=1e-12)
    unbiased = totals.to_numpy() @ np.linalg.inv(np.asarray(matrix.matrix))
    np.testing.assert_allclose([c["estimate"] for c in office["cells"]], unbiased, rtol=1e-9)


def test_a_category_written_like_a_number_stays_a_category(released: dict[str, Path],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--manifest", released["manifest"], "--vars", "db040", "--by", "band", "--weights", "rb050"]
    point = _run(capsys, "estimate", released["point"], *args)
    office = _run(capsys, "estimate", released["office"], *args, *OFFICE)
    assert office == point
    assert {c["category"][1] for c in office["cells"]} == {"12,5", "7,5"}
    source = Source.open(released["office"], sep=";", encoding="latin-1", decimal=",")
    assert source.meta.decimal == ","
    assert set(source.frame(["band"])["band"]) == {"12,5", "7,5"}  # text, not the numbers 12.5 and 7.5


def test_the_regression_reads_the_outcome_covariates_and_weights(released: dict[str, Path],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--manifest", released["manifest"], "--regress", "eqIncome ~ age + rb090", "--weights", "rb050"]
    point = _run(capsys, "estimate", released["point"], *args)
    office = _run(capsys, "estimate", released["office"], *args, *OFFICE)
    assert office == point
    frame = pd.read_csv(released["office"], **PANDAS).dropna(subset=["eqIncome", "age", "rb090", "rb050"])
    x = np.column_stack([np.ones(len(frame)), frame["age"], (frame["rb090"] == "male").astype(float)])
    w = frame["rb050"].to_numpy()
    naive = np.linalg.solve(x.T @ (w[:, None] * x), x.T @ (w * frame["eqIncome"].to_numpy()))
    assert [c["term"] for c in office["coefficients"]] == ["Intercept", "age", "rb090[male]"]
    np.testing.assert_allclose([c["naive_coef"] for c in office["coefficients"]], naive, rtol=1e-8)
    assert office["n"] == len(frame)


def test_the_risk_reads_the_weights(silc: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--keys", "db040,rb090", "--weights", "rb050", "--fractions", "file"]
    point = _run(capsys, "risk", silc["point"], *args)
    office = _run(capsys, "risk", silc["office"], *args, *OFFICE)
    assert office == point
    frame = pd.read_csv(silc["office"], **PANDAS)
    assert office["sampling_fraction"] == pytest.approx(len(frame) / frame["rb050"].sum(), rel=1e-12)


def test_recode_cuts_numbers_written_with_a_decimal_comma(silc: dict[str, Path], tmp_path: Path) -> None:
    rules = tmp_path / "map.json"
    rules.write_text(json.dumps({"eqIncome": {"breaks": [0, 15000.5, 25000, 1e7],
                                              "labels": ["low", "middle", "high"]}}), encoding="utf-8")
    out = tmp_path / "recoded.csv"
    assert main(["recode", str(silc["office"]), "--map", str(rules), "--out", str(out), "-q", *OFFICE]) == 0
    income = pd.read_csv(silc["office"], **PANDAS)["eqIncome"]
    expected = pd.cut(income, [0, 15000.5, 25000, 1e7], labels=["low", "middle", "high"], include_lowest=True)
    recoded = pd.read_csv(out, sep=";", encoding="latin-1", dtype=str, keep_default_na=False)
    assert recoded["eqIncome"].tolist() == expected.astype(str).tolist()
    before = pd.read_csv(silc["office"], sep=";", encoding="latin-1", dtype=str, keep_default_na=False)
    assert recoded.drop(columns="eqIncome").equals(before.drop(columns="eqIncome"))  # the other columns as read
    assert out.read_bytes().count(b"\r\n") == ROWS + 1


def test_a_numeric_public_column_is_binned_alike(silc: dict[str, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    made = {}
    for name, extra in (("point", []), ("office", OFFICE)):
        out = tmp_path / f"synth-{name}.csv"
        _run(capsys, "synthesize", silc[name], "--vars", "db040,rb090", "--public", "eqIncome", "--epsilon", "2",
             "--key-file", silc["key"], "--out", out, *extra)
        made[name] = (json.loads(out.with_suffix(".synthesis.json").read_text(encoding="utf-8")), out)
    point, office = made["point"][0], made["office"][0]
    income = pd.read_csv(silc["office"], **PANDAS)["eqIncome"].dropna().to_numpy()
    cuts = office["public"]["bins"]["eqIncome"]
    assert cuts == point["public"]["bins"]["eqIncome"] and len(cuts) > 5
    np.testing.assert_allclose(cuts, np.unique(np.quantile(income, np.linspace(0, 1, len(cuts) + 2)[1:-1])))
    assert pd.read_csv(made["office"][1], dtype={"band": str}, **PANDAS).equals(
        pd.read_csv(made["point"][1], dtype={"band": str}))


def _design_numbers(released: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    """Each release with an fpc and three replicate weights beside its weights, written with its decimal mark."""
    out = {}
    for name, dialect in (("point", {}), ("office", {"sep": ";", "encoding": "latin-1"})):
        frame = pd.read_csv(released[name], dtype=str, keep_default_na=False, **dialect)
        w = pd.to_numeric(frame["rb050"].str.replace(",", ".", regex=False))
        frame["fpc"] = "0.0125"
        for i, scale in enumerate((0.5, 1.25, 1.5), start=1):
            frame[f"rep{i}"] = (w * scale).map(repr)
        if name == "office":
            frame[["fpc", "rep1", "rep2", "rep3"]] = frame[["fpc", "rep1", "rep2", "rep3"]].apply(
                lambda c: c.str.replace(".", ",", regex=False))
        out[name] = tmp_path / f"design-{name}.csv"
        frame.to_csv(out[name], index=False, lineterminator="\r\n" if dialect else "\n", **dialect)
    return out


def test_estimate_table_streams_the_design_numbers_with_the_decimal(released: dict[str, Path], tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The library's estimate (``decimal=``, and :class:`EstimateSpec`'s ``decimal``): weights, fpc and replicate
    weights of the office's file read as the point file's, the file streamed (never read whole)."""
    import pramkit.io
    from pramkit.estimate import estimate_table
    from pramkit.estimate.spec import EstimateSpec
    from pramkit.estimate.survey import SurveyDesign
    from pramkit.estimate.weighted import Replicates

    files = _design_numbers(released, tmp_path)
    manifest = Manifest.read(released["manifest"])
    reps = Replicates(("rep1", "rep2", "rep3"), "bootstrap")

    def whole(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the released file was read whole")

    monkeypatch.setattr(pramkit.io, "read_arrow", whole)
    monkeypatch.setattr(pramkit.io, "read_table", whole)
    got = {}
    for name, reading in (("point", {}), ("office", {"sep": ";", "encoding": "latin-1", "decimal": ","})):
        with pytest.warns(Warning):  # the files changed since their receipts (columns added here)
            linear = estimate_table(files[name], manifest, "db040", by="rb090",
                                    survey=SurveyDesign("rb050", fpc="fpc"), **reading)
            replicated = estimate_table(files[name], manifest, "db040", weights="rb050", replicates=reps, **reading)
            spec = estimate_table(files[name], manifest, "db040", spec=EstimateSpec(
                weights="rb050", fpc="fpc", **reading))
        got[name] = [r.to_dict() for r in (linear, replicated, spec)]
    assert got["office"] == got["point"]
    frame = pd.read_csv(files["office"], **PANDAS)
    totals = frame.groupby("db040")["rb050"].sum().reindex(list(manifest.variables[0].matrix.categories))
    np.testing.assert_allclose([c["released"] for c in got["office"][2]["cells"]], totals.to_numpy(), rtol=1e-12)
    assert got["office"][0]["variance"] != got["office"][1]["variance"]  # linearised, and from the replicates


def test_the_regression_keeps_numbers_and_categories_apart(released: dict[str, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """``band`` (``12,5`` / ``7,5``) is a number in the office's file read with ``--decimal ,``, as ``12.5`` is in
    the point file once written so; a column of text (``db040``, perturbed, and ``pb220a``) stays a factor; the
    library reads the file as the command does."""
    from pramkit.estimate.regression import corrected_regression

    formula = "eqIncome ~ age + band + rb090 + pb220a"
    args = ["--manifest", released["manifest"], "--regress", formula, "--weights", "rb050"]
    office = _run(capsys, "estimate", released["office"], *args, *OFFICE)
    pointed = pd.read_csv(released["point"], dtype=str, keep_default_na=False)
    pointed["band"] = pointed["band"].str.replace(",", ".", regex=False)
    pointed.to_csv(tmp_path / "banded.csv", index=False)
    point = corrected_regression(tmp_path / "banded.csv", formula, released["manifest"], weights="rb050")
    assert [c["term"] for c in office["coefficients"]] == list(point.terms)
    assert "band" in point.terms and any(t.startswith("pb220a[") for t in point.terms)
    np.testing.assert_allclose([c["coef"] for c in office["coefficients"]], point.coef, rtol=1e-10)
    library = corrected_regression(released["office"], formula, released["manifest"], weights="rb050", sep=";",
                                   encoding="latin-1", decimal=",")
    np.testing.assert_allclose(library.coef, point.coef, rtol=1e-10)


def _report_figures(html: str, *files: Path) -> str:
    """A report's HTML without what differs between two files of the same records: their paths and names, their
    SHA-256 digests and the times written."""
    import re

    for f in files:
        html = html.replace(str(f), "FILE")
    for f in sorted(files, key=lambda f: -len(f.name)):  # released-office.csv before office.csv
        html = html.replace(f.name, "FILE")
    html = re.sub(r"\b[0-9a-f]{64}\b", "SHA-256", html)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)", "TIME", html)


def test_the_report_reads_the_weights(silc: dict[str, Path], released: dict[str, Path], tmp_path: Path) -> None:
    """``pramkit report --weights rb050 --decimal ,`` of the office's files: the internal and the public report
    (the weighted risk, estimates and shares) are those of the point files, every printed figure; the library's
    ``decimal=`` too."""
    from pramkit.report import build_public_report, build_report

    made: dict[str, dict[str, str]] = {}
    for name, extra in (("point", []), ("office", OFFICE)):
        out, public = tmp_path / f"report-{name}.html", tmp_path / f"public-{name}.html"
        assert main(["report", str(silc[name]), "--manifest", str(released["manifest"]), "--released",
                     str(released[name]), "--keys", "db040,rb090,hsize", "--weights", "rb050", "--out", str(out),
                     "--public", str(public), "-q", *extra]) == 0
        files = (silc[name], released[name])
        made[name] = {kind: _report_figures(path.read_text(encoding="utf-8"), *files)
                      for kind, path in (("internal", out), ("public", public))}
    assert made["office"] == made["point"]
    assert "weighted by rb050" in made["office"]["internal"] and "weighted by rb050" in made["office"]["public"]
    reading = {"sep": ";", "encoding": "latin-1", "decimal": ","}
    office = build_report(silc["office"], released["manifest"], released["office"], ["db040", "rb090"],
                          weights="rb050", **reading)
    point = build_report(silc["point"], released["manifest"], released["point"], ["db040", "rb090"], weights="rb050")
    assert office.risk is not None and point.risk is not None
    untimed = [dataclasses.replace(r.risk, before=dataclasses.replace(r.risk.before, seconds=0.0),
                                   after=r.risk.after and dataclasses.replace(r.risk.after, seconds=0.0))
               for r in (office, point)]
    assert untimed[0] == untimed[1]
    assert office.risk.sampling_fraction == pytest.approx(
        ROWS / pd.read_csv(silc["office"], **PANDAS)["rb050"].sum(), rel=1e-12)
    for a, b in zip(office.utility, point.utility):
        pd.testing.assert_frame_equal(a.frequencies, b.frequencies, check_exact=True)
    public = build_public_report(released["manifest"], released["office"], weights="rb050", **reading)
    expected = build_public_report(released["manifest"], released["point"], weights="rb050")
    for a, b in zip(public.utility, expected.utility, strict=True):
        pd.testing.assert_frame_equal(a.frequencies, b.frequencies, check_exact=True)


# ---- refusals: exit 2, one line, nothing written, the inputs as they were

def test_a_decimal_comma_in_a_comma_separated_file_is_refused(silc: dict[str, Path], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert_refused(tmp_path, ["risk", silc["point"], "--keys", "db040", "--weights", "rb050", "--decimal", ","],
                   "--decimal , needs another field separator than ','", capsys)
    assert_refused(tmp_path, ["design", silc["point"], "--vars", "db040", "--epsilon", "1", "--out",
                              tmp_path / "m.json", "--decimal", ";"],
                   "the decimal mark (--decimal) must be '.' or ',', not ';'", capsys)


def _pointed(silc: dict[str, Path], tmp_path: Path, column: str, row: int, value: str) -> Path:
    """The office's file with one number of ``column`` written with a decimal point at ``row`` (from 1)."""
    frame = pd.read_csv(silc["office"], sep=";", encoding="latin-1", dtype=str, keep_default_na=False)
    frame.loc[row - 1, column] = value
    path = tmp_path / "pointed.csv"
    frame.to_csv(path, index=False, sep=";", encoding="latin-1", lineterminator="\r\n")
    return path


def test_a_number_written_with_a_point_is_refused_naming_column_row_and_value(
        silc: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _pointed(silc, tmp_path, "rb050", 4321, "504.5696")
    said = f"column 'rb050' of '{bad}', row 4321: '504.5696' is not a number written with a decimal comma"
    assert_refused(tmp_path, ["risk", bad, "--keys", "db040,rb090", "--weights", "rb050", *OFFICE], said, capsys)
    assert_refused(tmp_path, ["risk", bad, "--keys", "db040,rb090", "--weights", "rb050", "--household", "db030",
                              *OFFICE], "row 4321: '504.5696' is not a number written with a decimal comma", capsys)
    rules = tmp_path / "map.json"
    rules.write_text(json.dumps({"eqIncome": {"top": {"above": 50000, "value": "50000+"}}}), encoding="utf-8")
    worse = _pointed(silc, tmp_path, "eqIncome", 17, "1.234,5")
    assert_refused(tmp_path, ["recode", worse, "--map", rules, "--out", tmp_path / "out.csv", *OFFICE],
                   "column 'eqIncome', row 17: '1.234,5' is not a number written with a decimal comma", capsys)


def test_weights_of_a_release_with_a_point_are_refused_by_estimate(released: dict[str, Path], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    frame = pd.read_csv(released["office"], sep=";", encoding="latin-1", dtype=str, keep_default_na=False)
    frame.loc[9, "rb050"] = "12.5"
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False, sep=";", encoding="latin-1", lineterminator="\r\n")
    args = ["estimate", bad, "--manifest", released["manifest"], "--vars", "db040", "--weights", "rb050", *OFFICE]
    assert_refused(tmp_path, args, "row 10: '12.5' is not a number written with a decimal comma (--decimal ,): "
                                   "write it 12,5, or read the file with --decimal .", capsys)
    assert_refused(tmp_path, [*args, "--engine", "spark"], "the Spark engine reads weights written with a decimal "
                                                           "point", capsys)
    assert_refused(tmp_path, [*args, "--emit", "r", "--emit-out", tmp_path / "a.R"],
                   "the script --emit writes reads weights written with a decimal point", capsys)


def test_a_weight_written_with_a_point_is_refused_by_report(silc: dict[str, Path], released: dict[str, Path],
                                                             tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = _pointed(silc, tmp_path, "rb050", 4321, "504.5696")
    said = f"column 'rb050' of '{bad}', row 4321: '504.5696' is not a number written with a decimal comma"
    base = ["report", bad, "--manifest", released["manifest"], "--released", released["office"], "--weights",
            "rb050", *OFFICE]
    assert_refused(tmp_path, [*base, "--keys", "db040,rb090", "--out", tmp_path / "r.html"], said, capsys)
    assert_refused(tmp_path, [*base, "--keys", "db040,rb090", "--out", tmp_path / "r.html", "--contributions"],
                   said, capsys)
    frame = pd.read_csv(released["office"], sep=";", encoding="latin-1", dtype=str, keep_default_na=False)
    frame.loc[16, "rb050"] = "12.5"
    worse = tmp_path / "released-pointed.csv"
    frame.to_csv(worse, index=False, sep=";", encoding="latin-1", lineterminator="\r\n")
    assert_refused(tmp_path, ["report", silc["office"], "--manifest", released["manifest"], "--released", worse,
                              "--weights", "rb050", "--public", tmp_path / "p.html", *OFFICE],
                   f"column 'rb050' of '{worse}', row 17: '12.5' is not a number written with a decimal comma "
                   "(--decimal ,): write it 12,5, or read the file with --decimal .", capsys)


def test_the_spec_declares_the_decimal_mark(capsys: pytest.CaptureFixture[str]) -> None:
    """``decimal`` is a setting of :class:`EstimateSpec` (its flag the shared ``--decimal``, in the docs' table), and
    its check refuses the Spark engine with weights written with a decimal comma."""
    from pramkit.errors import ParameterError
    from pramkit.estimate.spec import EstimateSpec
    from pramkit.settings import option_table, settings

    assert "decimal" in {s.name for s in settings(EstimateSpec)}
    assert "| `--decimal` | `decimal` | `'.'` |" in option_table(EstimateSpec)
    assert EstimateSpec(weights="w", sep=";", decimal=",").keywords("r.csv")["decimal"] == ","
    with pytest.raises(ParameterError, match="the Spark engine reads weights written with a decimal point"):
        EstimateSpec(weights="w", sep=";", decimal=",", engine="spark").check()
    EstimateSpec(sep=";", decimal=",", engine="spark").check()  # a table without weights reads categories only
    with pytest.raises(ParameterError, match="--decimal , needs another field separator than ','"):
        EstimateSpec(decimal=",").check()
    assert main(["estimate", "--help"]) == 0
    assert "--decimal MARK" in capsys.readouterr().out


def test_csv_numbers_is_pandas_with_the_decimal_point() -> None:
    texts = pd.Series(["12.5", None, "x", "1e3", " 7"], dtype=object)
    np.testing.assert_array_equal(csv_numbers(texts, "w"), pd.to_numeric(texts, errors="coerce").to_numpy(float))
    np.testing.assert_array_equal(csv_numbers(texts.str.replace(".", ",", regex=False).drop(2), "w", decimal=","),
                                  [12.5, np.nan, 1000.0, 7.0])
