"""The Bayes ceiling (:mod:`pramkit.risk.attack`, ``pramkit attack``) of stratified releases of sdcMicro's
testdata: the posteriors against enumeration over the matrices read from the manifest's JSON (a stratum part of
each cell), finite everywhere, the posterior odds within e^epsilon given the structure, a known stratum with the
prior estimated from the release, kept codes, a missing stratum and a joint variable, and the command under
``-W error``."""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA

from pramkit import Manifest
from pramkit.engine.perturb import perturb_frame
from pramkit.estimate.table import estimate_table
from pramkit.release.pipeline import design_release
from pramkit.risk.attack import BayesCeiling, attack, bayes_ceiling

pytestmark = pytest.mark.skipif(not (SDC_DATA / "testdata.csv").is_file(), reason="../shared/data/sdcmicro is absent")

COLUMNS = ["urbrur", "roof", "walls", "water", "sex"]
KEY = bytes(range(32))


def _testdata(rows: int | None = None) -> pd.DataFrame:
    frame = pd.read_csv(SDC_DATA / "testdata.csv", dtype=str, keep_default_na=False)[COLUMNS]
    return frame if rows is None else frame.sample(rows, random_state=rows).reset_index(drop=True)


def _release(data: pd.DataFrame, variables: list[str], seed: int, **settings: Any) -> tuple[Manifest, pd.DataFrame]:
    manifest = design_release(data, variables, epsilon=2.0, rng=random.Random(seed), **settings)
    return manifest, perturb_frame(data, manifest, key=KEY).data


@pytest.fixture(scope="module")
def stratified() -> tuple[pd.DataFrame, Manifest, pd.DataFrame]:
    """The whole file, roof and walls perturbed within the strata urbrur (record epsilon 2)."""
    data = _testdata()
    return (data, *_release(data, ["roof", "walls"], 1, strata="urbrur"))


# --- The enumeration, from the manifest's JSON alone -------------------------------------------------------------


def _entries(spec: dict[str, Any], size: int) -> list[list[float]]:
    """The matrix of one form of the manifest's JSON, entry by entry (docs/manifest.md, the forms)."""
    form = spec.get("form", "dense")
    if form == "dense":
        return [[float(x) for x in row] for row in spec["matrix"]]
    if form == "diagonal":
        q, w = spec["q"], spec["w"]
        return [[q[k] if j == k else w[k] for j in range(size)] for k in range(size)]
    assert form == "blocks", form
    out = [[0.0] * size for _ in range(size)]
    for block in spec["blocks"]:
        members = block["members"]
        inner = _entries(block, len(members))
        for a, row in enumerate(members):
            for b, col in enumerate(members):
                out[row][col] = inner[a][b]
    return out


def _matrices(manifest: Manifest, folder: Path) -> list[dict[str, Any]]:
    """Each perturbed variable of the manifest written as JSON and read back: the columns of its cells (the
    strata, then its own columns), its cells as tuples of text and its matrix as {(true cell, released cell):
    probability}."""
    path = manifest.write(folder / "manifest.json", force=True)
    out = []
    for v in json.loads(Path(path).read_text())["variables"]:
        columns = [*v.get("given", []), *v["columns"]]
        cells = [tuple(str(x) for x in (c if isinstance(c, list) else [c])) for c in v["categories"]]
        rows = _entries(v, len(cells))
        m = {(cells[i], cells[j]): rows[i][j] for i in range(len(cells)) for j in range(len(cells))}
        epsilon = v.get("epsilon_given_block", v["epsilon"])
        out.append({"columns": columns, "cells": set(cells), "m": m, "epsilon_given_block": epsilon})
    return out


def enumerate_posteriors(original: pd.DataFrame, released: pd.DataFrame, matrices: list[dict[str, Any]],
                         known: list[str], target: str,
                         prior: Counter[tuple[str, ...]] | None = None,
                         whole: bool = False) -> dict[int, dict[str, float]]:
    """Per record (its position) with its known values whose released cells are all in the matrices:
    P(target | released cells, known)
    as prior(x, known, other columns) x prod over the variables reading a target or known column of
    M[true cell, released cell], summed over the other columns and normalised; the prior is the original's
    counts of the columns involved unless given (keyed by the same column order).  ``whole``: every variable of the
    manifest read, and every other column of the file (released exactly) matched like a known one."""
    involved = matrices if whole else [v for v in matrices if set(v["columns"]) & {target, *known}]
    read = {c for v in involved for c in v["columns"]}
    if whole:
        # a column released exactly with a missing value is not read (bayes_ceiling says so in not_conditioned_on)
        known = [*known, *(c for c in original.columns if c not in read and c not in known and c != target
                           and not original[c].isna().any())]
    columns = list(dict.fromkeys([target, *known, *(c for v in involved for c in v["columns"])]))
    if prior is None:
        prior = Counter(tuple(str(x) for x in row) for row in original[columns].itertuples(index=False))
    cache: dict[tuple[Any, ...], dict[str, float] | None] = {}
    out = {}
    for i in range(len(original)):
        if any(pd.isna(original[c][i]) for c in known):
            continue
        k = tuple(str(original[c][i]) for c in known)
        z = tuple(tuple(str(released[c][i]) for c in v["columns"]) for v in involved)
        if not all(cell in v["cells"] for cell, v in zip(z, involved)):
            continue
        if (k, z) not in cache:
            weights: dict[str, float] = {}
            for values, count in prior.items():
                row = dict(zip(columns, values))
                if any(row[c] != x for c, x in zip(known, k)):
                    continue
                p = float(count)
                for v, cell in zip(involved, z):
                    p *= v["m"].get((tuple(row[c] for c in v["columns"]), cell), 0.0)
                weights[row[target]] = weights.get(row[target], 0.0) + p
            total = sum(weights.values())
            cache[(k, z)] = {x: w / total for x, w in weights.items()} if total > 0 else None
        post = cache[(k, z)]
        if post is not None:
            out[i] = post
    return out


def _check_against(c: BayesCeiling, expected: dict[int, dict[str, float]], rel: float | None = None) -> None:
    labels = [str(x) for x in c.categories]
    assert np.isfinite(c.posterior).all() and np.isfinite(c.prior_given_known).all()
    assert np.allclose(c.posterior.sum(axis=1), 1.0)
    assert set(expected) == set(c.rows.tolist())
    for row, post in zip(c.rows.tolist(), c.posterior):
        want = expected[row]
        got = {x: p for x, p in zip(labels, post) if p > 1e-300}
        assert set(got) <= set(want)
        for x, p in want.items():
            # an estimated prior is the MLE's iterate, its stopping rule's relative 1e-8 or so apart between two
            # calls that order the cells differently (1.5e-8 seen): a wrong prior is off by far more
            assert math.isclose(post[labels.index(x)], p, rel_tol=1e-9 if rel is None else rel, abs_tol=1e-12), \
                (row, x)


def _finite(c: BayesCeiling) -> None:
    d = c.to_dict()
    for name in ("share", "baseline_share", "advantage", "realised_share", "expected_correct", "baseline_expected",
                 "correct_over_draws", "expected_over_draws"):
        assert d[name] is not None and math.isfinite(d[name]), name
    assert np.isfinite(c.posterior).all() and np.isfinite(c.prior_given_known).all()


# --- The true law as prior ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("known", [["urbrur", "sex"], ["sex"], ["urbrur", "water"]])
@pytest.mark.parametrize("target", ["walls", "roof"])
def test_the_posterior_is_the_enumerated_one_within_strata(stratified: tuple, tmp_path: Path, known: list[str],
                                                           target: str) -> None:
    """The stratum known, or read from the released cells; every record of the whole file scored."""
    data, manifest, released = stratified
    c = bayes_ceiling(released, manifest, known, target, prior=data, original=data)
    assert c.records == len(data) and c.unsupported == 0 and c.impossible == 0
    _finite(c)
    # under the true law the two expectations over the draws are one (docs/risk.md)
    assert math.isclose(c.correct_over_draws, c.expected_over_draws, rel_tol=1e-9)
    _check_against(c, enumerate_posteriors(data, released, _matrices(manifest, tmp_path), known, target, whole=True))
    assert c.scope == "record" and c.not_conditioned_on == ()
    assert set(c.conditioned_on) == set(data.columns) - set(known)


def test_the_posterior_odds_are_within_e_epsilon_given_the_structure(stratified: tuple, tmp_path: Path) -> None:
    """Knowing the stratum, the released record moves the odds of two values of walls by at most e^epsilon of
    its variable given the structure; with roof read as well (it shares the known stratum), of both."""
    data, manifest, released = stratified
    matrices = {tuple(v["columns"]): v for v in _matrices(manifest, tmp_path)}
    walls = float(matrices[("urbrur", "walls")]["epsilon_given_block"])
    roof = float(matrices[("urbrur", "roof")]["epsilon_given_block"])
    assert math.isfinite(walls) and math.isfinite(roof)
    alone = design_release(data, ["walls"], epsilon=2.0, rng=random.Random(3), strata="urbrur")
    released_alone = perturb_frame(data, alone, key=KEY).data
    eps_alone = float(_matrices(alone, tmp_path)[0]["epsilon_given_block"])
    for man, rel, bound in ((alone, released_alone, eps_alone), (manifest, released, walls + roof)):  # whole record
        c = bayes_ceiling(rel, man, ["urbrur", "sex"], "walls", prior=data, original=data)
        worst = 0.0
        for post, prior in zip(c.posterior, c.prior_given_known):
            live = np.flatnonzero(prior > 0)
            for a in live:
                for b in live:
                    if a != b:
                        worst = max(worst, (post[a] / post[b]) / (prior[a] / prior[b]))
        assert worst <= math.exp(bound) * (1 + 1e-9)
        # every perturbed variable read: the record's epsilon given the structure, not walls' alone
        assert c.epsilon == math.inf and c.epsilon_given_structure == pytest.approx(bound, rel=1e-12)
        if man is alone:  # met: some released cell's ratio of rows is the matrix's epsilon within its block
            assert worst >= math.exp(bound) * 0.99


# --- The prior estimated from the release ------------------------------------------------------------------------


def _estimated_counts(released: pd.DataFrame, manifest: Manifest, known: list[str],
                      target: str) -> Counter[tuple[str, ...]]:
    """The release's corrected table of the cells of roof and walls (each with its stratum) that read a known or
    target column and of the other known columns, as counts keyed like :func:`enumerate_posteriors`' prior
    (cells that disagree on the stratum dropped; negative counts as 0)."""
    cells = [v for v in ("walls", "roof") if {"urbrur", v} & {target, *known}]
    rest = [k for k in known if k != "urbrur"]
    est = estimate_table(released, manifest, [*cells, *rest], estimator="mle")
    counts = np.asarray(est.table.counts, dtype=float)
    columns = list(dict.fromkeys([target, *known, "urbrur", *cells]))
    out: Counter[tuple[str, ...]] = Counter()
    for index in np.ndindex(*counts.shape):
        pairs = [est.categories[j][index[j]] for j in range(len(cells))]
        if len({str(u) for u, _ in pairs}) != 1 or counts[index] <= 0:
            continue
        row = {"urbrur": str(pairs[0][0]), **{v: str(x) for v, (_, x) in zip(cells, pairs)},
               **{k: str(est.categories[len(cells) + j][index[len(cells) + j]]) for j, k in enumerate(rest)}}
        out[tuple(row[c] for c in columns)] += float(counts[index])
    return out


@pytest.mark.parametrize("known", [["urbrur", "sex"], ["sex"]])
def test_a_known_stratum_works_with_the_estimated_prior(stratified: tuple, tmp_path: Path, known: list[str]) -> None:
    """The prior made as estimate_table allows (the stratum with the variables' cells), unfolded over the columns:
    the posteriors are the enumerated ones with that table as the prior."""
    data, manifest, released = stratified
    for target in ("walls", "roof"):
        c = bayes_ceiling(released, manifest, known, target, original=data, scope="target")
        assert c.prior == "estimated (mle)" and c.records == len(data)
        _finite(c)
        prior = _estimated_counts(released, manifest, known, target)
        _check_against(c, enumerate_posteriors(data, released, _matrices(manifest, tmp_path), known, target, prior),
                       rel=1e-6)


# --- Kept codes, a missing stratum, a joint variable -------------------------------------------------------------


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    """800 records of testdata, four with their stratum missing."""
    data = _testdata(800)
    data.loc[[3, 50, 120, 400], "urbrur"] = None
    return data


@pytest.mark.parametrize("settings", [
    {"strata": "urbrur", "keep_codes": {"walls": "9"}},
    {"strata": "urbrur"},
    {"strata": "urbrur", "split": "joint"},
    {"split": "joint"},
], ids=["kept-codes", "missing-stratum", "joint-within-strata", "joint"])
def test_structured_designs_give_finite_enumerated_posteriors(small: pd.DataFrame, tmp_path: Path,
                                                              settings: dict[str, Any]) -> None:
    manifest, released = _release(small, ["roof", "walls"], 4, **settings)
    matrices = _matrices(manifest, tmp_path)
    cases = [(known, target) for known in (["urbrur", "sex"], ["sex"]) for target in ("walls", "roof")]
    for known, target in [*cases, (["walls", "sex"], "roof")]:  # a perturbed known column: its true value
        # a record without its stratum is released as it is (no cell of the matrix) or has no known value
        unscored = int(small["urbrur"].isna().sum()) if "strata" in settings or "urbrur" in known else 0
        for prior in (small, None):
            c = bayes_ceiling(released, manifest, known, target, prior=prior, original=small,
                              scope="record" if prior is not None else "target")
            _finite(c)
            assert c.impossible == 0
            assert c.left_out == unscored
            if prior is not None:
                assert c.unsupported == 0
                assert math.isclose(c.correct_over_draws, c.expected_over_draws, rel_tol=1e-9)
                _check_against(c, enumerate_posteriors(small, released, matrices, known, target, whole=True))


def test_an_impossible_record_is_counted_not_divided(stratified: tuple) -> None:
    """A released record whose cells no true value can give with its known stratum (its stratum changed after
    the release): scored by the prior alone, counted, and said by attack()."""
    data, manifest, released = stratified
    forged = released.copy()
    rows = forged.index[(forged["urbrur"] == "1") & (forged["walls"] == "2")][:3]
    forged.loc[rows, "urbrur"] = "2"
    original = data.copy()
    original = data  # the known stratum is the true one
    c = bayes_ceiling(forged, manifest, ["urbrur", "sex"], "walls", prior=data, original=original)
    assert c.impossible == 3 and c.unsupported >= 3
    _finite(c)
    at = [list(c.rows).index(r) for r in rows]
    assert np.array_equal(c.posterior[at], c.prior_given_known[at])
    result = attack(original, forged, ["urbrur", "sex"], "walls", manifest, linkage=False)
    assert any("3 records released in cells the manifest cannot give" in n for n in result.notes)


# --- The command ---------------------------------------------------------------------------------------------------


def test_the_command_runs_under_warnings_as_errors(tmp_path: Path) -> None:
    """``design --strata``, ``apply`` and ``attack --known urbrur,sex`` as separate processes with ``-W error``:
    every share printed is finite, and the JSON holds finite figures for both priors."""
    data = tmp_path / "testdata.csv"
    _testdata(1500).to_csv(data, index=False)

    def pramkit(*args: Any) -> str:
        done = subprocess.run([sys.executable, "-W", "error", "-m", "pramkit", *map(str, args)], cwd=tmp_path,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    pramkit("keygen", "k")
    pramkit("design", data, "--vars", "roof,walls", "--strata", "urbrur", "--epsilon", "2", "--out", "m.json",
            "--key-file", "k", "-q")
    pramkit("apply", data, "--manifest", "m.json", "--out", "r.csv", "--key-file", "k", "-q")
    attack_args = ["attack", "r.csv", "--original", data, "--known", "urbrur,sex", "--manifest", "m.json",
                   "--key-file", "k"]
    text = pramkit(*attack_args)
    lines = [line for line in text.splitlines() if line.lstrip().startswith("prior ")]
    assert len(lines) == 4 and not re.search(r"\b(nan|inf)\b", "\n".join(lines), re.IGNORECASE)
    result = json.loads(pramkit(*attack_args, "--json"))
    assert [c["target"] for c in result["ceilings"]] == [["roof"], ["roof"], ["walls"], ["walls"]]
    manifest = json.loads((tmp_path / "m.json").read_text())
    given = {v["name"]: float(v["epsilon_given_block"]) for v in manifest["variables"]}
    record = given["roof"] + given["walls"]  # the whole record read: both variables move the odds
    assert [line for line in text.splitlines() if line.startswith("Bayes ceiling")] == [
        f"Bayes ceiling of {name} (epsilon inf; {record:.4g} given the structure, 1,500 records; "
        "shares of correct guesses, expected / realised)" for name in ("roof", "walls")]
    for c in result["ceilings"]:
        assert c["records"] == 1500 and c["unsupported"] == 0
        # the estimated prior reads the target's cell and the known stratum's cells: roof's and walls' too
        assert c["epsilon_given_structure"] == pytest.approx(record, rel=1e-12)
        for name in ("share", "baseline_share", "advantage", "realised_share", "correct_over_draws",
                     "expected_over_draws"):
            assert isinstance(c[name], float) and math.isfinite(c[name]), name
