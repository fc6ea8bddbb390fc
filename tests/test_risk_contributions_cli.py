"""``pramkit risk --suda`` and ``--contributions``: sdcMicro's published figures, and bad input
(exit 2, one line on stderr, inputs unchanged, nothing written)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import perturb_frame
from pramkit.manifest import Manifest


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> Path:
    """Issue 275's file, issue 356's, a one-row file, and a release of a census sample with a missing value."""
    d = tmp_path_factory.mktemp("suda_cli")
    pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]}).to_csv(d / "i275.csv", index=False)
    pd.DataFrame({"a": [2], "b": [0], "c": [0]}).to_csv(d / "one.csv", index=False)
    from pramkit.datasets import census

    original = census(400)[["age", "sex", "race", "education"]].astype(object)
    original.loc[3, "race"] = None
    original["w"] = 20.0 + (original.index % 3)
    manifest = Manifest.of({"sex": randomized_response(["female", "male"], 1.0)})
    original.to_csv(d / "original.csv", index=False)
    perturb_frame(original, manifest, key=bytes(32)).data.to_csv(d / "released.csv", index=False)
    manifest.write(d / "m.json")
    return d


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_suda_json_matches_issue_275(d: Path, capsys) -> None:
    code, out, _ = run(["risk", str(d / "i275.csv"), "--keys", "a,b,c", "--suda", "--json"], capsys)
    res = json.loads(out)
    assert code == 0
    assert res["total_score"] == 8 and res["attribute_contributions"] == {"a": 50.0, "b": 37.5, "c": 37.5}
    code, out, _ = run(["risk", str(d / "i275.csv"), "--keys", "a,b,c", "--suda", "--sampling-fraction", "0.1"],
                       capsys)
    assert code == 0 and "a: 50.00 %" in out and "DIS-SUDA at sampling fraction 0.1" in out


def test_contributions_before_and_after(d: Path, capsys) -> None:
    code, out, err = run(["risk", str(d / "released.csv"), "--keys", "age,sex,race,education", "--contributions",
                          "--weights", "w", "--model", "independence", "--max-size", "3", "--manifest",
                          str(d / "m.json"), "--original", str(d / "original.csv"), "--replicates", "2", "--json"],
                         capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["after"]["perturbed"] == ["sex"]
    assert [r["variable"] for r in res["after"]["epsilon"]] == ["sex", "design step"]
    assert res["after"]["epsilon"][0]["epsilon"] == pytest.approx(1.0)
    assert res["expected"]["method"] == "monte carlo" and res["expected"]["outcomes"] == 2
    levels = {(r["variable"], r["level"]) for r in res["before"]["levels"]}
    assert ("race", None) not in levels
    code, out, _ = run(["risk", str(d / "original.csv"), "--keys", "age,sex,race", "--contributions",
                        "--sampling-fraction", "0.05", "--model", "independence"], capsys)
    assert code == 0 and out.startswith("contributions in %") and "before PRAM" in out and "after PRAM" not in out


BAD = [
    (["--keys", ",", "--suda"], "i275.csv"),
    (["--keys", "a,b,c", "--suda", "--max-size", "0"], "i275.csv"),
    (["--keys", "a,b,c", "--suda", "--max-size", "4"], "i275.csv"),
    (["--keys", "a,b,c", "--suda", "--sampling-fraction", "0"], "i275.csv"),
    (["--keys", "a,b,c", "--suda", "--sampling-fraction", "1.5"], "i275.csv"),
    (["--keys", "a,b,c", "--suda"], "one.csv"),
    (["--keys", "a,b,c", "--suda", "--weights", "a"], "i275.csv"),
    (["--keys", "a,b,d", "--suda"], "i275.csv"),
    (["--keys", "a,b,c", "--suda", "--contributions"], "i275.csv"),
    (["--keys", ",", "--contributions", "--sampling-fraction", "0.1"], "i275.csv"),
    (["--keys", "a,b,c", "--contributions", "--sampling-fraction", "0.1", "--max-size", "0"], "i275.csv"),
    (["--keys", "a,b,c", "--contributions", "--sampling-fraction", "0.1", "--max-size", "4"], "i275.csv"),
    (["--keys", "a,b,c", "--contributions", "--sampling-fraction", "1.5"], "i275.csv"),
    (["--keys", "a,b,c", "--contributions", "--sampling-fraction", "0.1"], "one.csv"),
    (["--keys", "a,b,c", "--contributions"], "i275.csv"),
    (["--keys", "sex", "--contributions", "--sampling-fraction", "0.1", "--manifest", "m.json"], "released.csv"),
    (["--keys", "a,b,c", "--contributions", "--sampling-fraction", "0.1", "--plot", "fit.png"], "i275.csv"),
    (["--keys", "a,b,c", "--sampling-fraction", "0.1", "--max-size", "2"], "i275.csv"),
    (["--keys", "sex", "--contributions", "--sampling-fraction", "0.1", "--manifest", "m.json", "--original",
      "original.csv", "--replicates", "1"], "released.csv"),
]


@pytest.mark.parametrize("args, data", BAD, ids=[" ".join(a) + f" {f}" for a, f in BAD])
def test_bad_input(d: Path, capsys, args: list[str], data: str) -> None:
    before = digests(d)
    resolved = [str(d / a) if a.endswith((".json", ".csv", ".png")) else a for a in args]
    code, out, err = run(["risk", str(d / data), *resolved], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert digests(d) == before  # inputs unchanged, nothing written


def test_suda_reads_missing_codes_of_the_csv(tmp_path: Path, capsys) -> None:
    """'X' is missing with --na-values X, so it matches nothing: record 3 keeps {a, b} as an MSU
    (record 4, (1, missing, 0), is not like it on b), and record 4 has none."""
    (tmp_path / "na.csv").write_text("a,b,c\n2,0,0\n1,3,6\n1,0,0\n1,X,0\n")
    code, out, _ = run(["risk", str(tmp_path / "na.csv"), "--keys", "a,b,c", "--suda", "--json",
                        "--na-values", "X"], capsys)
    res = json.loads(out)
    assert code == 0 and res["msus_by_size"] == [3, 1, 0] and res["total_score"] == 7.0
    levels = {(r["variable"], r["level"]) for r in res["level_contributions"]}
    assert ("b", "X") not in levels
