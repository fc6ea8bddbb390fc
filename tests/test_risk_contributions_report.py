"""The internal report's contributions section (pramkit.report.contributions) and ``report --contributions``."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pandas as pd
import pytest

from pramkit.cli import main
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.engine.perturb import perturb_frame
from pramkit.release.pipeline import design_release
from pramkit.report import build_public_report
from pramkit.report.build import build_report
from pramkit.report.html import sections

KEYS = ["age", "sex", "race", "education"]


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict:
    """A census sample with a missing race and a not-applicable employment code, age perturbed."""
    data = census(1500)
    data["race"] = data["race"].astype(object)
    data.loc[[4, 9], "race"] = None
    manifest = design_release(data, ["age"], epsilon=1.2, categories=CENSUS_VARIABLES, rng=random.Random(1))
    released = perturb_frame(data, manifest, key=bytes(32)).data
    report = build_report(data, manifest, released, KEYS, sampling_fraction=0.01, contributions=True)
    return {"data": data, "manifest": manifest, "released": released, "report": report,
            "d": tmp_path_factory.mktemp("contrib_report")}


def test_section_shows_chart_table_and_sentences(release: dict) -> None:
    report = release["report"]
    titles = dict(sections(report))
    body = titles["What makes records risky"]
    assert body.count("<img") == 1 and "<table>" in body
    assert all(s.replace("'", "&#x27;") in body for s in report.contributions.sentences)
    assert report.contributions.after.perturbed == ("age",)
    age = report.contributions.after.epsilon.set_index("variable").loc["age"]
    assert math.isclose(age["epsilon"], release["manifest"]["age"].epsilon)
    assert "contributions" in report.seconds


def test_section_counts_the_records_of_each_level(release: dict) -> None:
    """The table's record counts are the original file's level counts over the records with every key
    (the report's risk compares those; the two with a missing race are left out)."""
    levels = release["report"].contributions.before.levels
    data = release["data"][release["data"]["race"].notna()]
    for row in levels.itertuples(index=False):
        assert row.records == int((data[row.variable].astype(object) == row.level).sum())
    assert levels.query("variable == 'race'")["records"].sum() == len(release["data"]) - 2


def test_public_report_has_no_contributions(release: dict) -> None:
    public = build_public_report(release["manifest"], release["released"])
    assert public.contributions is None
    assert "What makes records risky" not in dict(sections(public))


def test_cli_report_with_contributions(release: dict, capsys: pytest.CaptureFixture) -> None:
    d: Path = release["d"]
    release["data"].to_csv(d / "original.csv", index=False)
    release["released"].to_csv(d / "released.csv", index=False)
    release["manifest"].write(d / "m.json")
    args = ["report", str(d / "original.csv"), "--manifest", str(d / "m.json"), "--released", str(d / "released.csv"),
            "--keys", "age,sex,race", "--sampling-fraction", "0.01"]
    assert main(args + ["--out", str(d / "r.html"), "--contributions"]) == 0
    assert "What makes records risky" in (d / "r.html").read_text()
    capsys.readouterr()
    before = sorted(p.name for p in d.iterdir())
    assert main(args + ["--public", str(d / "p.html"), "--contributions"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--contributions goes with --out" in err
    assert sorted(p.name for p in d.iterdir()) == before


def test_jointly_perturbed_keys_get_contributions_before_only() -> None:
    from pramkit import Manifest, PramMatrix
    from pramkit.manifest import PerturbedVariable

    data = pd.DataFrame({"a": ["x", "y"] * 30, "b": ["u", "u", "v"] * 20, "c": list(range(6)) * 10})
    cells = [(a, b) for a in "xy" for b in "uv"]
    joint = PerturbedVariable("a*b", PramMatrix.form8([0.7] * 4, categories=cells), columns=("a", "b"))
    manifest = Manifest((joint,))
    released = perturb_frame(data, manifest, key=bytes(32)).data
    report = build_report(data, manifest, released, ["a", "c"], sampling_fraction=0.1, model="independence",
                          contributions=True)
    assert report.risk.after is None and report.contributions.after is None
    assert report.contributions.before.keys == ("a", "c")


def test_workbench_risk_view_shows_the_contributions(tmp_path: Path) -> None:
    from pramkit.workbench.session import Workbench

    wb = Workbench(tmp_path / "work")
    wb.open_census(rows=2000)
    plain = wb.risk(["age", "sex", "race"], sampling_fraction=0.05)
    assert plain.contributions is None and plain.sentences == ()
    view = wb.risk(["age", "sex", "race"], sampling_fraction=0.05, contributions=True)
    assert view.contributions["variable"].tolist() == ["age", "sex", "race"]
    assert list(view.contributions.columns) == ["variable", "SUDA", "tau1", "tau2", "individual risk"]
    assert view.sentences and all(" carries " in s for s in view.sentences)
    assert view.table.equals(plain.table)  # the risk figures themselves are unchanged
