"""What ``inspect --released`` and the reports say of a shuffled release's central guarantee is recomputed from
the manifest and the released records, never copied from the receipt: a receipt whose central epsilon was
rewritten (0.904 -> 0.1) is shown with the release's own figure, and a note says the receipt disagrees."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import SDC_DATA

from pramkit.cli import main


@pytest.fixture(scope="module")
def shuffled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("shuffled")
    frame = pd.read_csv(SDC_DATA / "testdata.csv", dtype=str, keep_default_na=False)
    frame[["urbrur", "roof", "walls", "sex"]].to_csv(d / "data.csv", index=False)
    assert main(["keygen", str(d / "key")]) == 0
    assert main(["design", str(d / "data.csv"), "--vars", "roof,walls", "--method", "rr", "--epsilon", "3",
                 "--out", str(d / "m.json"), "--quiet"]) == 0
    assert main(["apply", str(d / "data.csv"), "--manifest", str(d / "m.json"), "--out", str(d / "r.csv"),
                 "--key-file", str(d / "key"), "--shuffle", "--public-columns", "urbrur,sex", "--quiet"]) == 0
    return d


def _inspect(d: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:
    capsys.readouterr()
    assert main(["inspect", str(d / "m.json"), "--released", str(d / "r.csv"), "--json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out)["guarantees"], err


def test_a_rewritten_central_epsilon_is_not_shown(shuffled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    receipt = shuffled / "r.csv.receipt.json"
    true, err = _inspect(shuffled, capsys)
    stated = json.loads(receipt.read_text())["guarantees"]
    assert err == "" and true["shuffled_epsilon"] == stated["shuffled_epsilon"] > 0.2  # the release's own figure
    forged = json.loads(receipt.read_text())
    forged["guarantees"]["shuffled_epsilon"] = 0.1
    receipt.write_text(json.dumps(forged))
    shown, err = _inspect(shuffled, capsys)
    assert shown["shuffled_epsilon"] == true["shuffled_epsilon"]
    assert "states other guarantees than its release has" in err and "0.1" in err
    capsys.readouterr()
    assert main(["inspect", str(shuffled / "m.json"), "--released", str(shuffled / "r.csv")]) == 0
    assert "epsilon 0.1 (central)" not in capsys.readouterr().out
    assert main(["audit", "--manifest", str(shuffled / "m.json"), "--released", str(shuffled / "r.csv")]) == 1
    assert "guarantees.shuffled_epsilon" in capsys.readouterr().out


def test_a_resampled_file_names_its_release(shuffled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """inspect --released of a resampled file names the release its receipt comes from, and checks that the
    file beside it is that release (its SHA-256); another file there is said to be another."""
    import hashlib

    import jsonschema

    import pramkit

    d = shuffled
    assert main(["apply", str(d / "data.csv"), "--manifest", str(d / "m.json"), "--out", str(d / "p.csv"),
                 "--key-file", str(d / "key"), "--quiet"]) == 0
    assert main(["resample", str(d / "p.csv"), "--manifest", str(d / "m.json"), "--out", str(d / "s.csv"),
                 "--key-file", str(d / "key"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["inspect", str(d / "m.json"), "--released", str(d / "s.csv"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(pramkit.output_schema("pramkit.inspect.result")).validate(printed)
    chain = printed["post_processing"]
    assert chain["release"] == "p.csv" and chain["beside"] and chain["digest_matches"]
    assert chain["release_sha256"] == hashlib.sha256((d / "p.csv").read_bytes()).hexdigest()
    text = (d / "p.csv").read_text().splitlines()
    (d / "p.csv").write_text("\n".join([text[0], *text[2:]]) + "\n")  # a record fewer: another file
    assert main(["inspect", str(d / "m.json"), "--released", str(d / "s.csv")]) == 0
    assert "does NOT have the SHA-256 the receipt states" in capsys.readouterr().out
