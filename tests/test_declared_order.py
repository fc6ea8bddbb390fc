"""Order is declared, not guessed: ordinal distances and the geometric mechanism read the order of a codebook,
a prior, midpoints or numeric labels; text labels read from the data are an error that asks for the order.

Expected distances are written from the age bands' own bounds and from integer ranks, not by pramkit.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.cli import main
from pramkit.codebook import categories_of
from pramkit.distances import numeric_order, read_distances, require_order
from pramkit.errors import ParameterError
from pramkit.release.pipeline import design_release


def band_of(age: float) -> str:
    low = min(max(int(age), 0) // 5 * 5, 80)
    return "80+" if low == 80 else f"{low}-{low + 4}"


def low_of(band: str) -> int:
    return int(band.split("-")[0].rstrip("+"))


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> Path:
    """eusilc with age in five-year text bands (-1, an infant's code, in 0-4), its codebook in age order,
    midpoints, and a prior."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("order")
    data = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", usecols=["db040", "hsize", "age", "rb090", "pl030", "rb050"])
    data["ageband"] = data["age"].map(band_of)
    data.to_csv(d / "bands.csv", index=False)
    order = sorted(data["ageband"].unique(), key=low_of)
    pd.DataFrame({"variable": "ageband", "category": order}).to_csv(d / "book.csv", index=False)
    pd.DataFrame({"category": order[::-1], "midpoint": [low_of(b) + 2.5 for b in order[::-1]]}).to_csv(
        d / "mid.csv", index=False)
    share = data["ageband"].value_counts(normalize=True)
    pd.DataFrame({"variable": "ageband", "category": order, "frequency": [share[b] for b in order]}).to_csv(
        d / "prior.csv", index=False)
    return d


DESIGN = ["--method", "dp", "--objective", "distance", "--epsilon", "3"]
GEOMETRIC = ["--method", "metric", "--mechanism", "geometric", "--metric-epsilon", "0.5"]

BAD = [
    ("ordinal on text bands", [*DESIGN, "--distances", "ordinal"], "ordinal distances need the order"),
    ("geometric on text bands", GEOMETRIC, "the geometric mechanism and its steps need the order"),
    ("metric exponential, ordinal", ["--method", "metric", "--metric-epsilon", "0.5", "--distances", "ordinal"],
     "ordinal distances need the order"),
]


@pytest.mark.parametrize("name, args, message", BAD, ids=[b[0] for b in BAD])
def test_text_bands_from_the_data_ask_for_the_order(d, capsys, name, args, message) -> None:
    before = digests(d)
    code = main(["design", str(d / "bands.csv"), "--vars", "ageband", *args, "--out", str(d / "m.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0], err
    assert message in err[0] and "'10-14'" in err[0] and "--categories" in err[0], err[0]
    assert digests(d) == before


@pytest.mark.parametrize("declare", [["--categories", "book.csv"], ["--prior", "prior.csv"]])
@pytest.mark.parametrize("args", [[*DESIGN, "--distances", "ordinal"], GEOMETRIC], ids=["ordinal", "geometric"])
def test_a_codebook_or_a_prior_declares_the_order(d, tmp_path, declare, args) -> None:
    declare = [declare[0], str(d / declare[1])]
    out = tmp_path / "m.json"
    assert main(["design", str(d / "bands.csv"), "--vars", "ageband", *args, *declare, "--out", str(out),
                 "--quiet"]) == 0
    manifest = json.loads(out.read_text())
    categories = [c for c in manifest["variables"][0]["categories"] if c is not None]
    assert categories == sorted(categories, key=low_of)


def test_midpoints_declare_the_order_of_labels_read_from_the_data(d, tmp_path) -> None:
    data = pd.read_csv(d / "bands.csv")
    found = categories_of(data["ageband"])  # text order: '0-4', '10-14', '15-19', ..., '5-9', ...
    assert found != sorted(found, key=low_of)
    dist = read_distances(str(d / "mid.csv"), found, declared_order=False, variable="ageband")
    mid = np.array([low_of(b) + 2.5 for b in found])
    assert np.array_equal(dist.matrix, np.abs(mid[:, None] - mid[None, :]))
    assert main(["design", str(d / "bands.csv"), "--vars", "ageband", *DESIGN, "--distances", str(d / "mid.csv"),
                 "--out", str(tmp_path / "m.json"), "--quiet"]) == 0
    with pytest.raises(ParameterError, match="midpoints must increase along the category order"):
        read_distances(str(d / "mid.csv"), found, declared_order=True)  # a declared order they contradict


@pytest.mark.parametrize("column", ["hsize", "age"])
def test_numeric_labels_sort_numerically(d, tmp_path, column) -> None:
    text = pd.read_csv(d / "bands.csv", dtype=str)[column]  # as a CSV reads them: text
    found = categories_of(text)
    ranks = {v: i for i, v in enumerate(sorted({int(v) for v in text}))}
    dist = read_distances("ordinal", found, declared_order=False, variable=column)
    r = np.array([ranks[int(c)] for c in found])
    assert np.array_equal(dist.matrix, np.abs(r[:, None] - r[None, :]))
    for args in ([*DESIGN, "--distances", "ordinal"], GEOMETRIC):
        assert main(["design", str(d / "bands.csv"), "--vars", column, *args, "--out", str(tmp_path / "m.json"),
                     "--quiet", "--force"]) == 0


def test_an_ordered_categorical_declares_its_order(d) -> None:
    data = pd.read_csv(d / "bands.csv")
    order = sorted(data["ageband"].unique(), key=low_of)
    ordered = data.assign(ageband=pd.Categorical(data["ageband"], categories=order, ordered=True))
    m = design_release(ordered, ["ageband"], epsilon=3.0, options={"objective": "distance"}, distances="ordinal",
                       rng=random.Random(3))
    assert [c for c in m.variables[0].matrix.categories if c is not None] == order
    unordered = data.assign(ageband=pd.Categorical(data["ageband"]))
    with pytest.raises(ParameterError, match="ordinal distances need the order"):
        design_release(unordered, ["ageband"], epsilon=3.0, options={"objective": "distance"}, distances="ordinal",
                       rng=random.Random(3))
    with pytest.raises(ParameterError, match="ordinal distances need the order"):  # given as an option
        design_release(unordered, ["ageband"], method="metric", options={"metric_epsilon": 0.5, "distances": "ordinal"})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-10**9, 10**9), min_size=1, max_size=12, unique=True), st.integers(0, 3))
def test_numbers_have_their_order_and_text_has_none(values, pad) -> None:
    texts = [f"{v:0{pad + len(str(abs(v)))}d}" if v >= 0 else str(v) for v in sorted(values)]
    assert numeric_order(texts) and numeric_order(sorted(values))
    require_order("x", categories_of(pd.Series(texts[::-1])), declared=False)  # found: sorted by value
    if len(values) > 1:
        assert not numeric_order(texts[::-1])
    with pytest.raises(ParameterError, match="variable 'x'"):
        require_order("x", [*texts, "unknown"], declared=False)
