"""The built-in census-like data: structure of the NY 2000 sample, determinism, dependence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pramkit.datasets import CENSUS_VARIABLES, NY_ROWS, _employment_table, census


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return census(200_000)


def test_structure(data) -> None:
    assert NY_ROWS == 953_076
    assert list(data.columns) == [
        "ownership", "mortgage", "age", "sex", "marital_status", "race", "education", "employment",
        "disability", "veteran",
    ]
    assert [len(CENSUS_VARIABLES[c]) for c in data.columns] == [3, 4, 9, 2, 6, 5, 11, 4, 3, 3]
    assert int(np.prod([len(v) for v in CENSUS_VARIABLES.values()])) == 2_566_080
    for c in data.columns:
        assert list(data[c].cat.categories) == list(CENSUS_VARIABLES[c])
        assert data[c].notna().all()


def test_deterministic() -> None:
    pd.testing.assert_frame_equal(census(1000), census(1000))
    assert not census(1000, seed=1).equals(census(1000))


def test_sex_share(data) -> None:
    share = data["sex"].value_counts(normalize=True)
    assert share["male"] == pytest.approx(0.48, abs=0.005)
    assert share["female"] == pytest.approx(0.52, abs=0.005)


def test_dependence(data) -> None:
    children = data["age"].isin(["0-9", "10-17"])
    assert (data.loc[data["age"] == "0-9", "marital_status"] == "never married").all()
    assert (data.loc[data["ownership"] != "owned", "mortgage"] == "n/a").all()
    assert (data.loc[data["ownership"] == "owned", "mortgage"] != "n/a").all()
    assert (data.loc[children, "veteran"] == "n/a").all()
    widowed = pd.crosstab(data["age"], data["marital_status"], normalize="index")["widowed"]
    assert widowed["75+"] > widowed["45-54"] > widowed["18-24"]
    employed = pd.crosstab(data["age"], data["employment"], normalize="index")["employed"]
    assert employed["35-44"] > employed["65-74"]
    # every variable is associated with at least one other (chi-square on the full file)
    from scipy.stats import chi2_contingency
    for c in data.columns:
        pvals = [chi2_contingency(pd.crosstab(data[c], data[o])).pvalue for o in data.columns if o != c]
        assert min(pvals) < 1e-10, c


def test_employment_follows_its_table_at_every_age(data) -> None:
    """The share employed at each age is the table's, averaged over that age's sexes and education levels in
    the file: the row of (age, sex, education) is 198 long, and counting it in one-byte codes once sent everyone
    of 55 and over (and women of 45-54 with more education) to other rows (54 % of the 75+ employed, where the table says 5 % or less)."""
    table = _employment_table().reshape(9, 2, 11, 4)[..., CENSUS_VARIABLES["employment"].index("employed")]
    codes = {c: data[c].cat.codes.to_numpy() for c in ("age", "sex", "education")}
    expected = np.array([
        table[a][codes["sex"][codes["age"] == a], codes["education"][codes["age"] == a]].mean() for a in range(9)])
    employed = pd.crosstab(data["age"], data["employment"], normalize="index")["employed"].to_numpy()
    np.testing.assert_allclose(employed, expected, atol=0.01)
    assert employed[-1] < 0.06 and employed[3:6].min() > 2 * employed[7]
