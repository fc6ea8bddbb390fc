"""pramkit.sklearn.PRAMTransformer: scikit-learn's estimator checks, pipelines, and the released values.

The reference for a release is :func:`pramkit.perturb_frame` and :func:`pramkit.design_planned`
called directly (the transformer must add nothing), and scikit-learn's own checks.
"""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pandas as pd
import polars as pl
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils.estimator_checks import parametrize_with_checks

import pramkit
from pramkit import Manifest, PramMatrix
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.errors import DataError, ParameterError
from pramkit.sklearn import PRAMTransformer

KEY = bytes(range(32))

#: The checks a keyed PRAM release cannot pass, and why (docs/frames.md repeats them).
EXPECTED_FAILED = {
    # Row i is released with the draw (key, column, i): reordering the rows gives each record another draw.
    # Keying the draw by the record's values instead would give equal records equal released values,
    # which tells an attacker which records were equal in the original file.
    "check_methods_sample_order_invariance": "draws are keyed by row position, not by record content",
    # Transforming a subset restarts the row counter at 0, so its rows get the draws of the first rows of the
    # whole; the released values differ although both follow the same matrix (same law, other draws).
    "check_methods_subset_invariance": "draws are keyed by row position within the data transformed",
}


@parametrize_with_checks([PRAMTransformer(epsilon=4.0, key=KEY)], expected_failed_checks=lambda e: EXPECTED_FAILED)
def test_scikit_learn_checks(estimator, check):
    check(estimator)


def test_unkeyed_transformer_is_declared_non_deterministic():
    """Without a key every call draws fresh randomness; the tag says so, with a key it does not."""
    assert PRAMTransformer().__sklearn_tags__().non_deterministic
    assert not PRAMTransformer(key=KEY).__sklearn_tags__().non_deterministic


def _frame(n: int = 4_000) -> pd.DataFrame:
    """Census records with missing values, a Unicode label and an undeclared order, as text."""
    frame = census(n)[["age", "sex", "education", "employment"]].astype(object)
    frame.loc[::9, "education"] = None
    frame.loc[::31, "age"] = "75 et plus"
    return frame


def test_transform_is_perturb_frame_of_the_designed_manifest():
    """fit = design_planned with the key; transform = perturb_frame with the key (same values, same order)."""
    frame = _frame()
    pram = PRAMTransformer(["age", "education"], epsilon=3.0, key=KEY).fit(frame)
    plan = pramkit.plan_release(["age", "education"], epsilon=3.0)
    direct = pramkit.design_planned(frame, plan, key=pramkit.SecretKey(KEY, "bytes")).manifest
    assert [v.matrix.matrix.tolist() for v in pram.manifest_.variables] == \
        [v.matrix.matrix.tolist() for v in direct.variables]
    released = pram.transform(frame)
    expected = pramkit.perturb_frame(frame, direct, key=KEY).data
    for j, name in enumerate(frame.columns):
        got = [None if v is None else v for v in released[:, j]]
        want = [None if pd.isna(v) else v for v in expected[name]]
        assert got == want, name
    assert released[0, 2] is None  # missing kept missing


def test_polars_input_and_a_published_manifest():
    """A polars frame fits and transforms like its pandas twin; a manifest given is applied as it is."""
    frame = _frame(2_000)
    manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.7, 0.9], list(CENSUS_VARIABLES["sex"]))})
    a = PRAMTransformer(manifest=manifest, key=KEY).fit(frame)
    b = PRAMTransformer(manifest=manifest, key=KEY).fit(pl.from_pandas(frame))
    assert a.manifest_ is manifest
    assert (a.transform(frame) == b.transform(pl.from_pandas(frame))).all()
    assert list(b.get_feature_names_out()) == list(frame.columns)


def test_pipeline_column_transformer_and_a_classifier():
    """In a ColumnTransformer inside a Pipeline, before one-hot encoding and a classifier."""
    frame = _frame(3_000)
    y = (frame["employment"] == "employed").to_numpy()
    X = frame.drop(columns="employment").fillna("n/a")
    pipe = Pipeline([
        ("pram", ColumnTransformer([("pram", PRAMTransformer(epsilon=3.0, key=KEY), ["age", "education"])],
                                   remainder="passthrough", verbose_feature_names_out=False)),
        ("onehot", OneHotEncoder(handle_unknown="ignore")),
        ("model", LogisticRegression(max_iter=500)),
    ]).fit(X, y)
    assert list(pipe[0].get_feature_names_out()) == ["age", "education", "sex"]
    released = pipe[0].transform(X)
    assert released.shape == (3_000, 3) and (released[:, 2] == X["sex"].to_numpy()).all()  # sex passes through
    assert (released[:, :2] != X[["age", "education"]].to_numpy()).any()
    assert pipe.predict(X).shape == (3_000,)


def test_set_output_pandas_names_the_columns():
    frame = _frame(500)[["sex", "age"]]
    out = PRAMTransformer(epsilon=3.0, key=KEY).set_output(transform="pandas").fit_transform(frame)
    assert list(out.columns) == ["sex", "age"] and len(out) == 500


@pytest.mark.parametrize("make, error, words", [
    (lambda: PRAMTransformer(["region"], key=KEY), DataError, r"\['region'\] are not in the data"),
    (lambda: PRAMTransformer([], key=KEY), ParameterError, "name at least one"),
    (lambda: PRAMTransformer(epsilon=-1.0, key=KEY), ParameterError, "epsilon"),
    (lambda: PRAMTransformer(method="nonsense", key=KEY), ParameterError, "nonsense"),
    (lambda: PRAMTransformer(manifest=Manifest.of({"region": PramMatrix.from_diagonal([0.7, 0.7], ["a", "b"])})),
     DataError, r"\['region'\] are not in the data"),
])
def test_bad_settings(make, error, words):
    with pytest.raises(error, match=words):
        make().fit(_frame(200)[["sex", "age"]])


def test_transform_of_an_unknown_category_is_refused():
    pram = PRAMTransformer(epsilon=3.0, key=KEY).fit(_frame(300)[["sex"]])
    with pytest.raises(DataError, match="other"):
        pram.transform(pd.DataFrame({"sex": ["male", "other"]}))


def test_gallery_example_runs(tmp_path, monkeypatch):
    """The gallery example executes (as sphinx-gallery will run it) and prints its accuracies."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    script = Path(__file__).resolve().parents[1] / "examples" / "plot_sklearn_classifier.py"
    namespace = runpy.run_path(str(script), run_name="__main__")
    assert 0.5 < namespace["accuracy_released"] <= 1.0 and 0.5 < namespace["accuracy_original"] <= 1.0
    assert os.environ["MPLBACKEND"] == "Agg"
