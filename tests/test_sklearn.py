"""pramkit.sklearn.PRAMTransformer: scikit-learn's estimator checks, pipelines, and the released values.

The reference for a release is :func:`pramkit.perturb_frame` and :func:`pramkit.design_planned`
called directly (the transformer must add nothing), and scikit-learn's own checks.
"""

from __future__ import annotations

import os
import pickle
import re
import runpy
import warnings
from fractions import Fraction
from pathlib import Path

import pandas as pd
import polars as pl
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils.estimator_checks import parametrize_with_checks

import pramkit
from pramkit import Manifest, PramMatrix
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.errors import DataError, ParameterError, PramkitWarning
from pramkit.sklearn import HiddenKey, PRAMTransformer

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


# The checks fit clones of one transformer on many unrelated data sets: the repeated-fit warning is right, and noise.
@pytest.mark.filterwarnings("ignore::pramkit.errors.PramkitWarning")
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


# --- the key never shows -------------------------------------------------------------------------------------------

SECRET = b"correct horse battery staple 42!"  # printable, so that any rendering of its bytes would contain it


def _renderings(obj) -> str:
    """Every way scikit-learn and a notebook show an estimator: repr, str, the HTML diagram, the MIME bundle,
    and the parameters (shallow and deep), with the diagram's and the text display's settings."""
    out = [repr(obj), str(obj), obj._repr_html_(), str(obj._repr_mimebundle_()),
           str(obj.get_params(deep=False)), str(obj.get_params(deep=True)), repr(obj.get_params(deep=True))]
    with config_context(display="text", print_changed_only=False):
        out += [repr(obj), str(obj._repr_mimebundle_())]
    return "\n".join(out)


def _no_secret(text: str) -> None:
    for form in (SECRET.decode(), "correct horse", SECRET.hex(), repr(SECRET), str(list(SECRET))[1:40]):
        assert form not in text, form


def test_the_key_never_shows_in_repr_diagram_or_parameters():
    frame = _frame(400)[["sex", "age"]]
    pram = PRAMTransformer(epsilon=3.0, key=SECRET)
    ct = ColumnTransformer([("pram", pram, ["sex", "age"])], remainder="passthrough")
    pipe = Pipeline([("pram", ct), ("onehot", OneHotEncoder(handle_unknown="ignore"))])
    grid = GridSearchCV(Pipeline([("pram", PRAMTransformer(key=SECRET))]), {"pram__epsilon": [2.0, 3.0]})
    for obj in (pram, ct, pipe, grid):
        text = _renderings(obj)
        _no_secret(text)
        assert "<secret key, not shown>" in text
    fitted = PRAMTransformer(epsilon=3.0, key=bytearray(SECRET)).fit(frame)  # fitted: the attributes' table too
    _no_secret(_renderings(fitted) + _renderings(pipe.fit(frame)))
    # a key file's path is not a secret and shows as it is; a SecretKey shows only where it came from
    assert "key='secret.key'" in repr(PRAMTransformer(key="secret.key"))
    assert "SecretKey(source=" in repr(PRAMTransformer(key=pramkit.SecretKey(SECRET, "a test")))


def test_the_hidden_key_is_still_the_key():
    """clone, set_params and pickle keep the key (the same release); the hidden form is made once per key."""
    frame = _frame(600)[["sex", "education"]]
    pram = PRAMTransformer(epsilon=3.0, key=SECRET)
    shown = pram.get_params()["key"]
    assert isinstance(shown, HiddenKey) and shown == SECRET and pram.get_params()["key"] is shown
    assert pram.key is SECRET  # the attribute is what was given (scikit-learn's contract)
    twin = clone(clone(pram))
    assert twin.key == SECRET and twin.get_params()["key"] is twin.key
    released = pram.fit(frame).transform(frame)
    assert (twin.fit(frame).transform(frame) == released).all()
    assert (pickle.loads(pickle.dumps(pram)).transform(frame) == released).all()
    other = bytes(reversed(SECRET))
    pram.set_params(key=other)
    assert pram.get_params()["key"] == other and repr(pram.get_params()["key"]) == "<secret key, not shown>"
    direct = pramkit.perturb_frame(frame, pram.manifest_, key=SECRET).data  # the reference: perturb_frame itself
    assert [list(direct[c].where(direct[c].notna(), None)) for c in frame.columns] == \
        [list(released[:, j]) for j in range(2)]


# --- repeated fits: the budgets compose ----------------------------------------------------------------------------

def _caught(run) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if issubclass(w.category, PramkitWarning)]


def _total(message: str) -> float:
    return float(re.search(r"covered by ([0-9.]+) nats in total", message).group(1))


def test_cross_validation_warns_what_the_folds_spend():
    """5-fold cross-validation fits 5 clones: fits 2 to 5 warn, the last with the sum of the 5 folds' record
    epsilons, which the same key reproduces by designing on each fold's training rows directly."""
    frame = _frame(2_000)
    X, y = frame[["age", "education"]].fillna("n/a"), (frame["employment"] == "employed").to_numpy()
    pipe = Pipeline([("pram", PRAMTransformer(epsilon=3.0, key=KEY)), ("onehot", OneHotEncoder()),
                     ("model", LogisticRegression(max_iter=300))])
    folds = KFold(5)
    messages = _caught(lambda: cross_val_score(pipe, X, y, cv=folds))
    assert len(messages) == 4 and all("(the budgets compose)" in m for m in messages)
    assert [re.search(r"fitted (\d+) times", m).group(1) for m in messages] == ["2", "3", "4", "5"]
    spent = [PRAMTransformer(epsilon=3.0, key=KEY).fit(X.iloc[train]).manifest_.record_epsilon
             for train, _ in folds.split(X)]
    exact = sum(Fraction(e) for e in spent)  # exact sum of the doubles
    assert Fraction(_total(messages[-1])) >= exact and _total(messages[-1]) <= float(exact) * (1 + 1e-3)
    assert float(exact) <= 5 * 3.0 + 1e-9 and "manifest=" in messages[-1]


def test_grid_search_counts_every_candidate_and_the_refit():
    """2 budgets x 3 folds, then the refit on all rows: 7 fits at two epsilons."""
    frame = _frame(1_200)
    X, y = frame[["age"]], (frame["employment"] == "employed").to_numpy()
    pipe = Pipeline([("pram", PRAMTransformer(key=KEY)), ("onehot", OneHotEncoder(handle_unknown="ignore")),
                     ("model", LogisticRegression(max_iter=300))])
    grid = GridSearchCV(pipe, {"pram__epsilon": [1.0, 2.0]}, cv=3)
    messages = _caught(lambda: grid.fit(X, y))
    assert len(messages) == 6 and "fitted 7 times" in messages[-1]
    assert re.search(r"record epsilon of [0-9.]+ to [0-9.]+ nats", messages[-1])
    budgets = 3 * 1.0 + 3 * 2.0 + grid.best_params_["pram__epsilon"]  # the refit at the best budget
    assert budgets * (1 - 1e-6) <= _total(messages[-1]) <= budgets * (1 + 1e-3)  # each fit spends its budget


@pytest.mark.parametrize("run", [
    # one fit; a keyed refit on the same data (same noise, same matrices: nothing new is spent)
    lambda f: PRAMTransformer(epsilon=3.0, key=KEY).fit(f).fit(f),
    # a clone refitted on the same data with the same key
    lambda f: clone(PRAMTransformer(epsilon=3.0, key=KEY).fit(f)).fit(f),
    # two transformers made apart (not clones) on other data: nothing ties them
    lambda f: (PRAMTransformer(epsilon=3.0).fit(f), PRAMTransformer(epsilon=3.0).fit(f.iloc[:300])),
    # a published manifest is applied, not designed
    lambda f: [clone(PRAMTransformer(manifest=Manifest.of({"sex": PramMatrix.from_diagonal(
        [0.7, 0.9], list(CENSUS_VARIABLES["sex"]))}))).fit(f.iloc[i:]) for i in range(3)],
])
def test_no_warning_where_nothing_composes(run):
    assert _caught(lambda: run(_frame(600)[["sex", "age"]])) == []


def test_an_unkeyed_refit_spends_again():
    """Without a key every fit draws fresh noise: the same data refitted spends the budget again."""
    frame = _frame(600)[["sex"]]
    pram = PRAMTransformer(epsilon=2.0)
    messages = _caught(lambda: pram.fit(frame).fit(frame))
    assert len(messages) == 1 and "fitted 2 times" in messages[0]
    assert Fraction(_total(messages[0])) >= 2 * Fraction(pram.manifest_.record_epsilon) - Fraction(1, 10**9)
