"""Frequencies on key variables (risk/frequencies.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pramkit.errors import DataError
from pramkit.risk.frequencies import frequencies, key_table

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def test_sdcmicro_testdata_counts(sdc_data):
    # Facts of the file: 412 distinct combinations of the 7 keys, 157 sample uniques.
    data = pd.read_csv(sdc_data / "testdata.csv")
    res = frequencies(data, TESTDATA_KEYS, weights="sampling_weight")
    assert res.combinations == 412
    assert res.sample_uniques == 157
    assert res.n == len(data) == 4580
    # constant weight 100: F = 100 f
    np.testing.assert_allclose(res.F, 100.0 * res.f)


def test_counts_against_groupby():
    rng = np.random.default_rng(3)
    data = pd.DataFrame({"a": rng.integers(0, 4, 500), "b": rng.choice(["x", "y", "z"], 500),
                         "w": rng.uniform(1, 50, 500)})
    res = frequencies(data, ["a", "b"], weights="w")
    size = data.groupby(["a", "b"])["w"].transform("size").to_numpy()
    wsum = data.groupby(["a", "b"])["w"].transform("sum").to_numpy()
    np.testing.assert_array_equal(res.f, size)
    np.testing.assert_allclose(res.F, wsum)
    assert res.sample_uniques == int((size == 1).sum())
    assert res.sample_doubles == int((size == 2).sum())
    assert res.combinations == data.groupby(["a", "b"]).ngroups


def test_missing_policies():
    data = pd.DataFrame({"a": [1, 1, None, None, 2], "b": ["u", "u", "u", "v", "v"]})
    cat = frequencies(data, ["a", "b"], missing="category")
    assert cat.missing == "category" and cat.excluded == 0
    assert cat.f.tolist() == [2, 2, 1, 1, 1]
    exc = frequencies(data, ["a", "b"], missing="exclude")
    assert exc.missing == "exclude" and exc.excluded == 2 and exc.n == 3
    assert exc.f.tolist() == [2, 2, 0, 0, 1]
    assert key_table(data, ["a", "b"]).categories[0] == (1, 2, None)


@pytest.mark.parametrize("kwargs, match", [
    ({"keys": ["nope"]}, "unknown key column"),
    ({"keys": []}, "at least one key"),
    ({"keys": ["a"], "weights": "w0"}, "finite and positive"),
    ({"keys": ["a"], "weights": "zz"}, "unknown weight column"),
    ({"keys": ["a"], "weights": [1.0]}, "one value per record"),
    ({"keys": ["a"], "missing": "drop"}, "missing must be one of"),
])
def test_bad_input(kwargs, match):
    data = pd.DataFrame({"a": [1, 2, 3], "w0": [1.0, np.nan, 2.0]})
    with pytest.raises(DataError, match=match):
        frequencies(data, **kwargs)


def test_empty_data():
    with pytest.raises(DataError, match="no rows"):
        frequencies(pd.DataFrame({"a": []}), ["a"])
