"""Risk by attack in the internal report (``pramkit report --attack-known``), on the first 300 records of sdcMicro's
testdata.csv with roof and walls perturbed.

The section's figures are checked against figures computed here from the two files and the manifest's matrices
alone: the Bayes ceiling of each perturbed column under the original's own joint law (posterior
``p(x, known) M[x, z]`` normalised, record by record), the most exposed records (the largest posteriors), the
linkage's unique records and records found unchanged, and the reconstruction (the mode of the released records
that agree on the known columns) bounded by its ties.  The public report of the same call holds none of it, and
bad input is one line, exit 2, nothing written.
"""

from __future__ import annotations

import contextlib
import html
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import assert_refused

import pramkit
from pramkit import Manifest
from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.report import build_report, render_html
from pramkit.risk.attack_words import percent

TESTDATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "testdata.csv"
KNOWN = ["urbrur", "sex", "age"]
TARGETS = {"roof": 1.0, "walls": 1.2}
ROWS = 300


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not TESTDATA.is_file():
        pytest.skip("../shared/data/sdcmicro/testdata.csv is not available")
    folder = tmp_path_factory.mktemp("attack")
    original = pd.read_csv(TESTDATA, dtype=str, keep_default_na=False).head(ROWS)
    files = {"data": folder / "data.csv", "manifest": folder / "m.json", "released": folder / "released.csv",
             "internal": folder / "internal.html", "public": folder / "public.html"}
    original.to_csv(files["data"], index=False)
    manifest = Manifest.of({t: randomized_response(sorted(original[t].unique()), e) for t, e in TARGETS.items()})
    manifest.write(files["manifest"])
    pramkit.apply_file(files["data"], manifest, files["released"], key=bytes(32), quiet=True)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in ["report", files["data"], "--manifest", files["manifest"], "--released",
                                      files["released"], "--keys", "roof,walls,sex", "--out", files["internal"],
                                      "--public", files["public"], "--attack-known", ",".join(KNOWN), "--quiet"]])
    assert code == 0, err.getvalue()
    report = build_report(files["data"], files["manifest"], files["released"], ["roof", "walls", "sex"],
                          attack_known=KNOWN, attack_key=bytes(32))
    released = pd.read_csv(files["released"], dtype=str, keep_default_na=False)
    return {"files": files, "original": original, "released": released, "manifest": manifest, "report": report,
            "internal": files["internal"].read_text(encoding="utf-8"),
            "public": files["public"].read_text(encoding="utf-8")}


def _posteriors(original: pd.DataFrame, released: pd.DataFrame, manifest: Manifest, target: str) -> dict:
    """Per record, the exact posterior of the target's true value given the known columns and the whole released
    record's perturbed cells (roof's and walls'), with the original's joint table as the prior: the original's
    records sharing the person's known values, each weighted by the product over the perturbed columns of
    M[its true value, the person's released value]; and the prior given the known columns alone.  (The columns
    released exactly make too large a table with these: the ceiling says it does not read them.)"""
    cats = {t: [str(c) for c in manifest[t].matrix.categories] for t in TARGETS}
    M = {t: np.asarray(manifest[t].matrix.matrix, dtype=float) for t in TARGETS}
    groups = original.groupby(KNOWN).indices
    post, prior, truth = [], [], []
    for i in range(len(original)):
        rows = groups[tuple(original.iloc[i][KNOWN])]
        weight = np.ones(len(rows))
        for t in TARGETS:
            z = cats[t].index(released.iloc[i][t])
            weight *= M[t][[cats[t].index(x) for x in original[t].iloc[rows]], z]
        x = np.array([cats[target].index(v) for v in original[target].iloc[rows]])
        q = np.bincount(x, weights=weight, minlength=len(cats[target]))
        p = np.bincount(x, minlength=len(cats[target])).astype(float)
        post.append(q / q.sum())
        prior.append(p / p.sum())
        truth.append(cats[target].index(original.iloc[i][target]))
    return {"post": np.array(post), "prior": np.array(prior), "truth": np.array(truth)}


def test_the_bayes_ceiling_matches_the_posteriors_computed_here(release: dict) -> None:
    attack = release["report"].attack
    true_law = {c.target: c for c in attack.ceilings if c.true_law}
    assert set(true_law) == set(TARGETS)
    for target in TARGETS:
        mine = _posteriors(release["original"], release["released"], release["manifest"], target)
        c = true_law[target]
        assert c.records == ROWS
        assert c.share == pytest.approx(mine["post"].max(axis=1).mean(), rel=1e-9)
        assert c.baseline_share == pytest.approx(mine["prior"].max(axis=1).mean(), rel=1e-9)
        assert c.realised_share == pytest.approx((mine["post"].argmax(axis=1) == mine["truth"]).mean())
        # the whole record read: the posterior odds move by the record's epsilon
        assert c.epsilon == pytest.approx(sum(TARGETS.values()), rel=1e-6)
        # the internal report shows them, in the words of the sentences
        assert f"<td>{target}</td><td class=\"n\">" in release["internal"]
        assert f"<td class=\"n\">{percent(c.share)}</td>" in release["internal"]


def test_the_most_exposed_records_are_the_largest_posteriors(release: dict) -> None:
    attack = release["report"].attack
    best = np.max([_posteriors(release["original"], release["released"], release["manifest"], t)["post"].max(axis=1)
                   for t in TARGETS], axis=0)
    assert attack.scored == ROWS and len(attack.exposed) == 20
    shown = np.array([r.posterior for r in attack.exposed])
    assert (np.diff(shown) <= 1e-12).all()                                    # largest first
    assert shown == pytest.approx(np.sort(best)[::-1][:20], rel=1e-9)
    for r in attack.exposed:
        assert r.posterior == pytest.approx(best[r.row], rel=1e-9)
        assert r.known == tuple((k, release["original"].iloc[r.row][k]) for k in KNOWN)
    table = release["internal"].split("most exposed records")[1]
    rows = re.findall(r'<tr><td class="n">(\d+)</td><td>([^<]*)</td>', table)
    assert [int(row) for row, _ in rows] == [r.row for r in attack.exposed]
    first = attack.exposed[0]
    assert rows[0][1] == "; ".join(f"{k} = {v}" for k, v in first.known)


def test_linkage_and_reconstruction_against_counts_made_here(release: dict) -> None:
    attack, o, r = release["report"].attack, release["original"], release["released"]
    combos = o.groupby(KNOWN).size()
    unique = int((o.set_index(KNOWN).index.map(combos) == 1).sum())
    assert attack.linkage["unique_on_known"] == unique
    released_rows = set(map(tuple, r.to_numpy().tolist()))
    assert attack.linkage["share_at_zero"] == pytest.approx(np.mean([tuple(x) in released_rows
                                                                     for x in o.to_numpy().tolist()]))
    features = [c for c in o.columns if c not in KNOWN]
    assert attack.features == len(features) and attack.records == ROWS
    low = high = base_low = base_high = 0
    groups = r.groupby(KNOWN)
    for f in features:
        top = r[f].value_counts()
        margin = set(top.index[top == top.max()])
        for i in range(ROWS):
            counts = groups.get_group(tuple(o.iloc[i][KNOWN]))[f].value_counts()
            modes = set(counts.index[counts == counts.max()])
            truth = o.iloc[i][f]
            low += modes == {truth}
            high += truth in modes
            base_low += margin == {truth}
            base_high += truth in margin
    cells = ROWS * len(features)
    assert low / cells - 1e-12 <= attack.accuracy <= high / cells + 1e-12
    assert base_low / cells - 1e-12 <= attack.baseline <= base_high / cells + 1e-12
    assert f"<td class=\"n\">{percent(attack.accuracy)}</td>" in release["internal"]


def test_the_section_is_in_the_internal_report_only(release: dict) -> None:
    internal, public = release["internal"], release["public"]
    titles = re.findall(r"<h2>\d+\. (.*?)</h2>", internal)
    assert titles[:3] == ["Privacy ledger", "Disclosure risk before and after", "Risk by attack"]
    assert "The 20 most exposed records" in internal
    assert re.findall(r"<h2>\d+\. (.*?)</h2>", public) == ["Privacy ledger", "Estimates from the released file",
                                                            "Provenance"]
    for text in ("Risk by attack", "most exposed", "Bayes", "reconstruction", "linkage", "holdout"):
        assert text not in public, text
    attack = release["report"].attack
    for sentence in attack.sentences:   # no figure of the attack either
        assert html.escape(sentence) not in public
        if "held-out" not in sentence:  # the command line drew its own holdout half
            assert html.escape(sentence) in internal
    for r in attack.exposed:
        assert "; ".join(f"{k} = {v}" for k, v in r.known) not in public
    # the rendering never adds it to a public report, whatever the report holds
    assert "Risk by attack" not in render_html(pramkit.report.build_public_report(release["manifest"],
                                                                                  release["files"]["released"]))


@pytest.mark.parametrize("known, message", [
    ("urbrur,nosuch", "the attack's known column(s) 'nosuch' are not in the original file"),
    (",", "--attack-known names no column"),
])
def test_bad_attack_columns_are_one_line_and_write_nothing(release: dict, known: str, message: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    f = release["files"]
    folder = f["data"].parent
    args = ["report", f["data"], "--manifest", f["manifest"], "--released", f["released"], "--keys", "roof,sex",
            "--out", folder / "bad.html", "--public", folder / "bad-public.html", "--attack-known", known, "--quiet"]
    assert_refused(folder, args, message, capsys)


def test_a_column_only_in_the_original_and_attack_without_out(release: dict, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    f = release["files"]
    for name in ("data", "manifest"):
        (tmp_path / f[name].name).write_bytes(f[name].read_bytes())
    release["released"].drop(columns=["age"]).to_csv(tmp_path / "released.csv", index=False)
    base = ["report", tmp_path / "data.csv", "--manifest", tmp_path / "m.json", "--released", tmp_path / "released.csv"]
    assert_refused(tmp_path, [*base, "--keys", "roof,sex", "--out", tmp_path / "i.html", "--attack-known", "sex,age",
                              "--quiet"], "the attack's known column(s) 'age' are not in the released file",
                   capsys)
    assert_refused(tmp_path, [*base, "--public", tmp_path / "p.html", "--attack-known", "sex", "--quiet"],
                   "--attack-known goes with --out", capsys)
