"""The command line of amplification: design/inspect --sampling/--population, apply --shuffle/--public-columns.

Good runs on the built-in census file (local, sampled and shuffled guarantees side by side) and
table-driven bad input: exit 2, one line on stderr, the inputs unchanged, nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import assert_refused

from pramkit.cli import main
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.manifest import Manifest, PerturbedVariable


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("amplification_cli")
    frame = census(2_000, seed=7)[["age", "sex", "marital_status"]]
    frame.to_csv(d / "census.csv", index=False)
    frame[["age", "sex"]].to_csv(d / "perturbed_only.csv", index=False)
    hh = pd.DataFrame({"hid": [1, 1, 2, 2, 3, 3] * 20, "region": [1, 2, 1, 1, 3, 3] * 20})
    hh.to_csv(d / "households.csv", index=False)
    Manifest((PerturbedVariable("region", randomized_response([1, 2, 3], 1.0), unit="hid"),)).write(d / "hh.json")
    Manifest.of({"sex": randomized_response(["female", "male"], 1.0)}).write(d / "other.json")
    assert main(["keygen", str(d / "key")]) == 0
    assert main(["design", str(d / "census.csv"), "--vars", "age,sex", "--epsilon", "3", "--out", str(d / "m.json"),
                 "--key-file", str(d / "key"), "--sampling", "poisson:0.05", "--population", "40000",
                 "--quiet"]) == 0
    assert main(["apply", str(d / "perturbed_only.csv"), "--manifest", str(d / "m.json"), "--out", str(d / "r.csv"),
                 "--key-file", str(d / "key"), "--shuffle", "--quiet"]) == 0
    return d


def test_three_guarantees_side_by_side(d: Path, capsys) -> None:
    capsys.readouterr()
    assert main(["inspect", str(d / "m.json"), "--released", str(d / "r.csv"), "--json"]) == 0
    g = json.loads(capsys.readouterr().out)["guarantees"]
    assert f"{g['sampled_epsilon']:.4f}" == "0.6700" and g["local_epsilon"] == pytest.approx(3.0)
    assert g["shuffled_epsilon"] < g["local_epsilon"] / 2 and g["shuffled_delta"] == 1e-6
    assert g["shuffled_records"] == 2_000                           # no missing value: one group
    ledger = json.loads((d / "m.json").read_text())["ledger"]
    assert ledger["sampled_epsilon"] == g["sampled_epsilon"] and "Balle" in ledger["sampled_conditions"]
    assert main(["inspect", str(d / "m.json"), "--released", str(d / "r.csv"), "--population", "40000"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in text[-3:]] == ["local", "sampled", "shuffled"]
    assert "2,000 of 40,000" in text[-2]


def test_apply_prints_the_failing_condition(d: Path, tmp_path: Path, capsys) -> None:
    """An unperturbed key column not declared public: no central figure, and the column named."""
    capsys.readouterr()
    assert main(["apply", str(d / "census.csv"), "--manifest", str(d / "m.json"), "--out", str(tmp_path / "r.csv"),
                 "--key-file", str(d / "key"), "--shuffle", "--quiet"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == ("shuffled: no central figure: column 'marital_status' is released unperturbed and is not "
                    "declared public (--public-columns)")


def cases(d: Path) -> list[tuple[list, str]]:
    data, m = d / "census.csv", d / "m.json"
    design = ["design", data, "--vars", "age", "--epsilon", "2", "--out", d / "new.json", "--quiet"]
    apply = ["apply", data, "--manifest", m, "--out", d / "new.csv", "--key-file", d / "key", "--quiet"]
    return [
        (design + ["--sampling", "poisson:1.5"], "(0, 1]"),
        (design + ["--sampling", "poisson:0"], "(0, 1]"),
        (design + ["--sampling", "poisson:-0.1"], "(0, 1]"),
        (design + ["--sampling", "stratified:0.1,abc"], "numbers in (0, 1]"),
        (design + ["--sampling", "srswor:10/5"], "smaller than the file"),
        (design + ["--sampling", "cluster:0.1"], "poisson:Q"),
        (design + ["--population", "1999"], "smaller than the file"),
        (design + ["--population", "0"], "smaller than the file"),
        (design + ["--sampling", "srswor:100/5000", "--population", "5000"], "not both"),
        (design + ["--sampling", "poisson:0.1"], "needs --population N"),
        (["design", "--probs", "0.5,0.5", "--epsilon", "1", "--sampling", "poisson:0.1"], "data file"),
        (["inspect", m, "--sampling", "poisson:2"], "(0, 1]"),
        (["inspect", m, "--population", "100000"], "--released"),
        (["inspect", m, "--released", data, "--population", "100000"], "no receipt"),
        (["inspect", d / "other.json", "--released", d / "r.csv"], "another manifest"),
        (["inspect", m, "--released", d / "r.csv", "--population", "1000"], "smaller than the file"),
        (apply + ["--public-columns", "marital_status"], "add --shuffle"),
        (apply + ["--shuffle", "--public-columns", "income"], "'income' is not in the file"),
        (apply + ["--shuffle", "--public-columns", "age"], "'age' is perturbed"),
        (["apply", d / "households.csv", "--manifest", d / "hh.json", "--out", d / "new.csv", "--shuffle"],
         "household column 'hid'"),
    ]


@pytest.mark.parametrize("index", range(len(cases(Path("/x")))))
def test_bad_input(d: Path, capsys, index: int) -> None:
    assert_refused(d, *cases(d)[index], capsys)


def test_both_reports_show_the_three_guarantees(d: Path, tmp_path: Path) -> None:
    assert main(["report", str(d / "perturbed_only.csv"), "--manifest", str(d / "m.json"), "--released", str(d / "r.csv"),
                 "--keys", "age,sex", "--out", str(tmp_path / "internal.html"), "--public",
                 str(tmp_path / "public.html"), "--quiet"]) == 0
    for name in ("internal.html", "public.html"):
        html = (tmp_path / name).read_text()
        assert "<li>local: epsilon 3 per record" in html, name
        assert "<li>sampled: epsilon 0.6701 if each person" in html, name
        assert "<li>shuffled: epsilon 0." in html and "(central) because every released column" in html, name
