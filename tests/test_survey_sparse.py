"""The PSU totals of :class:`pramkit.estimate.survey.CellTotals` are kept sparse: the linearised
covariance from them equals the dense textbook formula.

The reference is computed here without the module: each (stratum, PSU)'s weighted cell counts
by a pandas cross-tabulation (dense, PSUs x cells), then
``sum_h (1 - f_h) n_h / (n_h - 1) sum_i (Y_hi - Ybar_h)(Y_hi - Ybar_h)^T``, in floating point on
laeken's eusilc file (wide tables whose cells few households touch, and narrow ones that every
household touches), and in exact fractions on small random designs.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.errors import PramkitWarning
from pramkit.estimate import survey
from pramkit.estimate.survey import CellTotals, SurveyDesign, linearized_covariance


@pytest.fixture(scope="module")
def eusilc() -> pd.DataFrame:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", usecols=["db030", "db040", "rb050", "pl030", "age", "rb090"])
    status = data["pl030"].astype("string").fillna("missing")
    band = (data["age"].clip(0, 89) // 5).astype(str)
    data["wide"] = pd.factorize(status + "/" + band)[0]           # 88 cells, a household in a few
    data["narrow"] = pd.factorize(data["rb090"])[0]                # 2 cells, nearly every household in both
    data["state"] = pd.factorize(status + "/" + data["db040"])[0]  # 72 cells, a stratum in a ninth of them
    rank = pd.factorize(data["db040"], sort=True)[0]
    data["fraction"] = 0.02 * (rank + 1)
    return data


def _dense_reference(data: pd.DataFrame, cells: str, strata: str | None, fpc: str | None) -> np.ndarray:
    """The textbook formula from a dense (PSU x cell) table of weighted counts."""
    c = int(data[cells].max()) + 1
    keys = [strata, "db030"] if strata else ["db030"]
    out = np.zeros((c, c))
    for _, part in data.groupby(strata) if strata else [(None, data)]:
        y = pd.crosstab([part[k] for k in keys], part[cells], values=part["rb050"], aggfunc="sum").fillna(0.0)
        y = y.reindex(columns=range(c), fill_value=0.0).to_numpy()
        n = y.shape[0]
        d = y - y.mean(axis=0)
        f = 0.0 if fpc is None else float(part[fpc].iloc[0])
        out += (1 - f) * n / (n - 1) * (d.T @ d)
    return out


DESIGNS = {
    "strata and PSUs": ("db040", None),
    "PSUs only": (None, None),
    "strata, PSUs, fpc": ("db040", "fraction"),
}


@pytest.mark.parametrize("merge_every_chunk", [False, True])
@pytest.mark.parametrize("cells", ["wide", "narrow", "state"])
@pytest.mark.parametrize("design_name", list(DESIGNS))
def test_the_sparse_totals_give_the_dense_formula(eusilc, monkeypatch, design_name, cells, merge_every_chunk) -> None:
    strata, fpc = DESIGNS[design_name]
    if merge_every_chunk:
        monkeypatch.setattr(survey, "MERGE_ENTRIES", 1)
    design = SurveyDesign("rb050", strata=strata, psu="db030", fpc=fpc)
    codes = eusilc[cells].to_numpy().astype(np.int64)
    totals = CellTotals(int(codes.max()) + 1, design)
    for a in range(0, len(eusilc), 2999):     # chunks cut through households
        totals.add_frame(eusilc.iloc[a:a + 2999], codes[a:a + 2999])
    reference = _dense_reference(eusilc, cells, strata, fpc)
    sigma = linearized_covariance(totals)
    np.testing.assert_allclose(sigma, reference, rtol=1e-12, atol=1e-12 * np.abs(reference).max())
    np.testing.assert_allclose(np.sqrt(np.diag(sigma)), np.sqrt(np.diag(reference)), rtol=1e-12)
    weighted = np.bincount(codes, eusilc["rb050"].to_numpy(), minlength=codes.max() + 1)
    np.testing.assert_allclose(totals.total, weighted, rtol=1e-13)
    assert totals.n_psus == eusilc.groupby(list(filter(None, [strata, "db030"]))).ngroups


# --------------------------------------------------------------------------------------------
# Exact: small designs in fractions; a cell every PSU touches, with nearly equal totals, is the
# case where an uncentred sum of squares would lose digits.

designs = st.integers(2, 40).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 5), min_size=n, max_size=n),                       # cells
    st.lists(st.floats(0.5, 3.0, allow_nan=False), min_size=n, max_size=n),    # weights
    st.lists(st.sampled_from("ab"), min_size=n, max_size=n),                   # strata
    st.lists(st.integers(0, 6), min_size=n, max_size=n),                       # PSUs
    st.integers(1, 60),                                                        # the chunk size
    st.booleans(),                                                             # a constant cell
))


def _exact(cells, weights, strata, psu) -> np.ndarray:
    """The formula in fractions (single PSUs: certainty)."""
    c = 7
    totals: dict[str, dict[int, list[Fraction]]] = {}
    for cell, w, s, p in zip(cells, weights, strata, psu):
        row = totals.setdefault(s, {}).setdefault(p, [Fraction(0)] * c)
        row[cell] += Fraction(w)
    out = [[Fraction(0)] * c for _ in range(c)]
    for rows in totals.values():
        n = len(rows)
        if n < 2:
            continue
        mean = [sum(r[j] for r in rows.values()) / n for j in range(c)]
        for r in rows.values():
            d = [r[j] - mean[j] for j in range(c)]
            for a in range(c):
                for b in range(c):
                    out[a][b] += Fraction(n, n - 1) * d[a] * d[b]
    return np.array([[float(x) for x in row] for row in out])


@settings(max_examples=80, deadline=None)
@given(design=designs)
def test_the_covariance_equals_the_formula_in_fractions(design) -> None:
    cells, weights, strata, psu, chunk, constant = design
    cells, weights, strata, psu = list(cells), list(weights), list(strata), list(psu)
    if constant:       # cell 6 in every PSU, with totals 1000 + a small part: large mean, small variance
        for s, p in {(s, p) for s, p in zip(strata, psu)}:
            cells.append(6)
            weights.append(1000.0 + (p % 3) / 64)
            strata.append(s)
            psu.append(p)
    totals = CellTotals(7, SurveyDesign("w", strata="s", psu="p", single_psu="certainty"))
    order = np.random.default_rng(len(cells)).permutation(len(cells))
    arrays = [np.array(a)[order] for a in (cells, weights, strata, psu)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PramkitWarning)
        for a in range(0, len(cells), chunk):
            totals.add(arrays[0][a:a + chunk].astype(np.int64), arrays[1][a:a + chunk], strata=arrays[2][a:a + chunk],
                       psu=arrays[3][a:a + chunk])
        sigma = linearized_covariance(totals)
    exact = _exact(*arrays)
    scale = max(np.abs(exact).max(), 1e-300)
    np.testing.assert_allclose(sigma, exact, rtol=1e-12, atol=1e-13 * scale)
