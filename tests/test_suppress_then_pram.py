"""Local suppression, then PRAM: one release, one guarantee (``pramkit design --suppressed-by``).

On sdcMicro's testdata (real, with its missing code 9): the keys suppressed to 3-anonymity by
``pramkit suppress``, two of them then perturbed by PRAM.  The guarantee sentence is checked word for word
against the text written here by hand; the audit recounts k-anonymity in the suppressed file and, for the
keys released as they are, in the released file (a released file edited to make a record unique fails it,
named); the design refuses a receipt that is not the data's, in one line, writing nothing."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import SDC_DATA
from conftest import run_cli as cli

from pramkit.errors import ParameterError

KEYS = ["urbrur", "roof", "walls", "water", "sex"]
needs_data = pytest.mark.skipif(not (SDC_DATA / "testdata.csv").is_file(), reason="../shared/data/sdcmicro is absent")



@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """testdata suppressed to 3-anonymity on five keys, roof and walls then perturbed (rr, epsilon 2)."""
    if not (SDC_DATA / "testdata.csv").is_file():
        pytest.skip("../shared/data/sdcmicro is absent")
    d = tmp_path_factory.mktemp("suppress-pram")
    key = d / "k.key"
    key.write_text(bytes(range(32)).hex())
    key.chmod(0o600)
    steps = [
        ("suppress", SDC_DATA / "testdata.csv", "--keys", ",".join(KEYS), "--k", 3, "--na-values", 9,
         "--out", d / "sup.csv", "--quiet"),
        ("design", d / "sup.csv", "--vars", "roof,walls", "--method", "rr", "--epsilon", 2, "--key-file", key,
         "--suppressed-by", d / "sup.csv.suppression.json", "--out", d / "m.json", "--quiet"),
        ("apply", d / "sup.csv", "--manifest", d / "m.json", "--key-file", key, "--out", d / "r.csv", "--quiet"),
    ]
    for step in steps:
        code, out, err = cli(*step)
        assert code == 0, out + err
    return {"dir": d, "key": key, "suppressed": d / "sup.csv", "receipt": d / "sup.csv.suppression.json",
            "manifest": d / "m.json", "released": d / "r.csv"}


#: The sentence, as the ledger must write it for this release (by hand, from docs/suppression.md).
SENTENCE = (
    "The released file shows exactly, as the original does: which values of roof and walls are missing; no epsilon "
    "covers that. Given the published manifest, changing one person's record in its perturbed variables, keeping "
    "what is shown exactly, changes the probability of the released file by a factor of at most e^2 = 7.389 (the "
    "perturbation alone (the design did not read the data's frequencies)). This does not cover the manifest "
    "itself: the categories of roof, walls were read from the original file, so the manifest shows which "
    "categories occur in it (declare them with a codebook to avoid this). Columns that are not perturbed are "
    "released as they are: no epsilon covers them. Which values of the keys urbrur, roof, walls, water and sex "
    "are missing, chosen by local suppression from the whole file before the perturbation so that every "
    "combination of the keys appeared at least 3 times (a missing value is a value of its own): no epsilon covers "
    "them. The epsilon is of the records after suppression. Every combination of urbrur, water and sex, released "
    "as they are, appears at least 3 times in the released file (a missing value is a value of its own).")


@needs_data
def test_the_guarantee_sentence_word_for_word(release) -> None:
    manifest = json.loads(release["manifest"].read_text())
    assert manifest["input"]["suppression"] == {"keys": KEYS, "k": 3, "missing": "own", "strata": []}
    assert manifest["ledger"]["statement"] == SENTENCE


def _frequencies(path: Path, keys: list[str]) -> Counter:
    """How many records share each record's combination of ``keys``, a missing value a value of its own (the
    released file's missing values are empty fields), counted here without pramkit."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)[keys]
    return Counter(map(tuple, frame.to_numpy().tolist()))


@needs_data
def test_what_the_sentence_says_holds_in_the_files(release) -> None:
    """Counted with pandas: the suppressed file is 3-anonymous on every key, the released file on the keys released
    as they are, and not on all five (the perturbation breaks it there: the sentence does not claim it)."""
    assert min(_frequencies(release["suppressed"], KEYS).values()) >= 3
    assert min(_frequencies(release["released"], ["urbrur", "water", "sex"]).values()) >= 3
    assert min(_frequencies(release["released"], KEYS).values()) < 3


def _audit(release: dict[str, Path], *extra: Any) -> tuple[int, str]:
    code, out, err = cli("audit", "--manifest", release["manifest"], "--released", release["released"], *extra)
    assert err == "", err
    return code, out


@needs_data
def test_the_audit_recounts_k_anonymity_in_both_files(release) -> None:
    """With the files the recount passes; the manifest alone leaves the suppression's fields unchecked, saying so."""
    code, out = _audit(release, "--original", release["suppressed"], "--key-file", release["key"])
    assert code == 0, out
    code, out, _ = cli("audit", "--manifest", release["manifest"])
    unchecked = next(line for line in out.splitlines() if "manifest: declared fields" in line)
    assert code == 0 and "needs --original (the suppressed file) or --released: input.suppression.keys" in unchecked


@needs_data
def test_a_released_file_edited_to_make_a_record_unique_fails_named(release, tmp_path) -> None:
    kept = release["released"].read_bytes()
    try:
        frame = pd.read_csv(release["released"], dtype=str, keep_default_na=False)
        frame.loc[0, ["urbrur", "water", "sex"]] = ["7", "7", "7"]  # a combination no other record has
        frame.to_csv(release["released"], index=False)
        code, out = _audit(release)
        assert code == 1, out
        failed = [line for line in out.splitlines() if line.startswith("FAIL")]
        assert any("input.suppression.k" in line and "the released file" in line for line in failed), out
    finally:
        release["released"].write_bytes(kept)


@needs_data
@pytest.mark.parametrize(("forge", "message"), [
    (lambda d, r: (d / "other.csv").write_bytes(r["suppressed"].read_bytes() + b"1,1,1,1,1,1,1,1,1,1,1,1,1,1,1\n")
     and d / "other.csv", "is not the file sup.csv.suppression.json was written for"),
    (lambda d, r: r["manifest"], "is not a receipt of pramkit suppress"),
    (lambda d, r: d / "absent.json", "does not exist"),
], ids=["another file", "a manifest", "absent"])
def test_design_refuses_a_receipt_not_of_the_data(release, tmp_path, forge, message) -> None:
    data = release["suppressed"]
    made = forge(tmp_path, release)
    if made.name == "other.csv":
        data, receipt = made, release["receipt"]
    else:
        receipt = made
    before = {p: p.read_bytes() for p in (data, release["receipt"])}
    code, out, err = cli("design", data, "--vars", "roof,walls", "--method", "rr", "--epsilon", 2,
                         "--suppressed-by", receipt, "--out", tmp_path / "m.json")
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "m.json").exists() and not (tmp_path / "m.design-record.json").exists()
    assert {p: p.read_bytes() for p in before} == before


@needs_data
def test_a_frame_is_recounted(release) -> None:
    """A frame has no digest: its k-anonymity by the receipt's settings is recounted, and the original refused."""
    from pramkit.release.choices import DesignChoices

    frame = pd.read_csv(release["suppressed"], dtype=str)
    made = DesignChoices(method="rr", epsilon=2.0, suppressed_by=release["receipt"]).release(frame, ["sex"])
    assert made.manifest.guarantee.endswith(
        "Every combination of urbrur, roof, walls and water, released as they are, appears at least 3 times in the "
        "released file (a missing value is a value of its own).")
    with pytest.raises(ParameterError, match=r"the data is not 3-anonymous by sup\.csv\.suppression\.json"):
        DesignChoices(method="rr", epsilon=2.0, suppressed_by=release["receipt"]).release(
            pd.read_csv(SDC_DATA / "testdata.csv", dtype=str), ["sex"])


def test_a_perturbed_stratum_claims_nothing_of_the_released_file() -> None:
    """Strata perturbed: k-anonymity within them no longer holds in the released file, and the sentence says
    nothing of it (only that the epsilon is of the records after suppression)."""
    from pramkit.design.classic import randomized_response
    from pramkit.manifest import Manifest

    m = Manifest.of({"region": randomized_response(["n", "s"], 1.0)})
    m = type(m)(m.variables, input={"suppression": {"keys": ["age", "sex"], "k": 2, "missing": "any",
                                                    "strata": ["region"]}})
    assert m.guarantee.endswith("(a missing value matches any value): no epsilon covers them. The epsilon is of "
                                "the records after suppression.")
    kept = Manifest(m.variables, input={"suppression": {"keys": ["age", "sex"], "k": 2, "missing": "any",
                                                         "strata": ["area"]}})
    assert kept.guarantee.endswith("Every combination of age and sex, released as they are, appears at least 2 times "
                                   "within each stratum of area in the released file (a missing value matches any "
                                   "value).")
