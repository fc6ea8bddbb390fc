"""k-anonymity designs are stored by blocks, and the ledger names the classes they release exactly.

A ``kanon`` matrix (Ruiz and Domingo-Ferrer, equation (3)) is block-diagonal: a value never leaves
its class, so the release shows the class exactly.  Checked here against the dense construction
of equation (3), against classes and epsilons worked out by hand or by brute force over the dense
entries, and against the engine's own draws; strata and kept-code releases keep the facts they had.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from pramkit import Manifest, design_release, perturb_frame
from pramkit.cli import main
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.design.bistochastic.families import k_anonymity, with_floor
from pramkit.design.classic import randomized_response
from pramkit.estimate import EstimationWarning
from pramkit.kernel.rng import SecretKey
from pramkit.ledger import release_guarantee
from pramkit.manifest import PerturbedVariable
from pramkit.matrix import PramMatrix
from pramkit.report import build_public_report, render_html

AGE_BANDS = ["0-15", "16-24", "25-34", "35-44", "45-54", "55-64", "65+"]
PL030 = [str(k) for k in range(1, 8)]
# equation (3) with k = 2 on 7 ordered categories: 7 // 2 = 3 classes as equal as possible (3, 2, 2)
AGE_CLASSES = [["0-15", "16-24", "25-34"], ["35-44", "45-54"], ["55-64", "65+"]]
PL030_CLASSES = [["1", "2", "3"], ["4", "5"], ["6", "7"]]


def dense_equation_3(size: int, classes: list[list[int]]) -> np.ndarray:
    """Equation (3) written densely: ``1 / n_l`` within each class, 0 elsewhere."""
    m = np.zeros((size, size))
    for c in classes:
        m[np.ix_(c, c)] = 1.0 / len(c)
    return m


def by_hand(size: int, k: int) -> list[list[int]]:
    """Consecutive classes of at least k categories, the first ``size mod L`` one larger."""
    n = size // k
    sizes = [size // n + (1 if i < size % n else 0) for i in range(n)]
    starts = np.cumsum([0, *sizes])
    return [list(range(a, b)) for a, b in zip(starts[:-1], starts[1:])]


def support_components(dense: np.ndarray) -> list[list[int]]:
    """The connected parts of the matrix's support: the classes a value can never leave."""
    n, labels = connected_components(csr_matrix(dense > 0), directed=True, connection="weak")
    return sorted(np.flatnonzero(labels == i).tolist() for i in range(n))


def brute_block_epsilon(dense: np.ndarray, blocks: list[list[int]]) -> float:
    """The largest log-ratio of two entries of one column within one block (Shlomo and Skinner 2012, sec. 4)."""
    worst = 0.0
    for b in blocks:
        sub = dense[np.ix_(b, b)]
        for j in range(len(b)):
            col = sub[:, j]
            worst = max(worst, math.log(col.max() / col.min()))
    return worst


# -- the matrix ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("size,k", [(1, 1), (2, 1), (5, 2), (7, 3), (12, 5), (13, 4), (40, 7), (97, 10), (30, 30)])
def test_entries_are_equation_3_bit_for_bit(size: int, k: int) -> None:
    m = k_anonymity(range(size), k)
    classes = by_hand(size, k)
    expected = dense_equation_3(size, classes)
    assert m.matrix.dtype == expected.dtype and m.matrix.tobytes() == expected.tobytes()
    assert m.blocks is not None and sorted(idx.tolist() for idx, _ in m.blocks) == classes
    assert support_components(expected) == classes  # the blocks are the support's connected parts
    assert m.block_epsilon == brute_block_epsilon(expected, classes) == 0.0
    assert m.epsilon == (math.inf if len(classes) > 1 else 0.0)


def test_the_data_classes_need_not_be_consecutive() -> None:
    classes = [[0, 3, 5], [1, 2], [4, 6]]
    m = k_anonymity("abcdefg", 2, classes=classes)
    assert m.matrix.tobytes() == dense_equation_3(7, classes).tobytes()
    assert sorted(idx.tolist() for idx, _ in m.blocks) == sorted(classes)


def test_a_floor_mixes_the_classes_so_the_matrix_is_dense() -> None:
    m = k_anonymity(range(10), 3)
    floored = with_floor(m, 0.01)
    assert floored.blocks is None and floored.matrix.min() >= 0.01  # no zero: one class, nothing to block
    assert support_components(floored.matrix) == [list(range(10))] and math.isfinite(floored.epsilon)
    assert floored.matrix.tobytes() == ((1 - 10 * 0.01) * dense_equation_3(10, by_hand(10, 3)) + 0.01).tobytes()
    zero = with_floor(m, 0.0)  # gamma 0 is the matrix itself, still by blocks
    assert zero.blocks is not None and zero.matrix.tobytes() == m.matrix.tobytes()
    assert zero.provenance.parameters["gamma"] == 0.0


def test_a_plain_or_dense_matrix_has_no_classes() -> None:
    form8 = randomized_response(["a", "b", "c"], 1.0)
    dense = PramMatrix([[0.7, 0.3, 0.0], [0.1, 0.6, 0.3], [0.0, 0.5, 0.5]], ["a", "b", "c"])
    kept = PramMatrix.block_diagonal([PramMatrix.form8([0.8, 0.8], categories=["a", "b"]),
                                      PramMatrix.identity(["n/a"])])
    for m in (form8, dense, kept):
        v = PerturbedVariable("x", m)
        assert v.classes() == [] and "block" not in {f.kind for f in v.exact_facts()}
    single = PerturbedVariable("x", k_anonymity("abc", 3))  # one class: nothing told apart
    assert single.classes() == [] and not single.is_structured


def test_classes_of_one_category_are_kept_codes() -> None:
    v = PerturbedVariable("x", k_anonymity("abcde", classes=[[0, 1], [2], [3, 4]]))
    assert v.classes() == [["a", "b"], ["d", "e"]] and v.unchanged_values() == ["c"]
    assert [f.kind for f in v.exact_facts()] == ["block", "kept_code", "missing"]


# -- a release ------------------------------------------------------------------------------------------


@pytest.fixture
def eusilc(sdc_data: Path) -> pd.DataFrame:
    raw = pd.read_csv(sdc_data / "eusilc_laeken.csv")
    bands = pd.cut(raw["age"], [-2, 15, 24, 34, 44, 54, 64, 200], labels=AGE_BANDS).astype(str)
    pl030 = raw["pl030"].astype("Int64").astype(str).replace("<NA>", None)  # children: missing
    return pd.DataFrame({"age": bands, "rb090": raw["rb090"].astype(str), "pl030": pl030})


def _kanon(data: pd.DataFrame, **kwargs) -> Manifest:
    return design_release(data, ["age", "pl030"], method="kanon", options={"k": 2}, epsilon=4.0,
                          categories={"age": AGE_BANDS, "pl030": PL030}, rng=random.Random(5), **kwargs)


def _shown(classes: list[list[str]]) -> str:
    return ", ".join("{" + ", ".join(repr(x) for x in c) + "}" for c in classes)


def test_eusilc_kanon_release_names_its_classes(eusilc: pd.DataFrame, tmp_path: Path) -> None:
    assert eusilc["pl030"].isna().sum() == 2720
    m = _kanon(eusilc)
    assert [(f.kind, f.variables, f.covered) for f in m.exact_facts] == [
        ("block", ("age",), True), ("block", ("pl030",), True), ("missing", ("age", "pl030"), True)]
    assert m["age"].classes() == AGE_CLASSES and m["pl030"].classes() == PL030_CLASSES
    for name, classes in (("age", AGE_CLASSES), ("pl030", PL030_CLASSES)):
        words = f"which class of {name}'s categories each value lies in (the matrix's blocks: {_shown(classes)})"
        assert words in m.guarantee and words in m.released_exactly
    assert m.guarantee.startswith("The released file shows exactly, as the original does: which class of age")
    assert "keeping what is shown exactly" in m.guarantee
    stored = json.loads(m.to_json())
    ledger = stored["ledger"]
    assert ledger["statement"] == m.guarantee and ledger["released_exactly"] == m.released_exactly
    assert ledger["record_epsilon_is_given_structure"] and ledger["record_epsilon"] == 0  # uniform: exactly
    assert stored["record_epsilon"] == "inf" and stored["record_epsilon_given_structure"] == ledger["record_epsilon"]
    assert [v["form"] for v in stored["variables"]] == ["blocks", "blocks"]
    described = m.describe()
    assert described["record_epsilon"] == "inf"
    assert described["record_epsilon_given_structure"] == 0  # uniform classes: nothing told apart, exactly
    # read back: the facts and the sentence are derived again from the matrices, and agree
    path = m.write(tmp_path / "m.json")
    back = Manifest.read(path)
    assert back.exact_facts == m.exact_facts and back.guarantee == m.guarantee
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["inspect", str(path)]) == 0
    printed = out.getvalue()
    assert "shown exactly (block): which class of age's categories" in printed
    assert "record epsilon: 0 given the structure" in printed and "e-1" not in printed  # no 1.666e-16


def test_eusilc_kanon_public_report_states_the_classes(eusilc: pd.DataFrame, key: SecretKey) -> None:
    m = _kanon(eusilc)
    released = perturb_frame(eusilc, m, key=key).data
    with pytest.warns(EstimationWarning, match="singular"):  # equation (3) has rank 3 on 7 categories
        report = build_public_report(m, released)
    page = html.unescape(render_html(report))
    assert release_guarantee(m, list(released.columns)).sentence in page  # the released file's columns named
    assert f"Released exactly, as in the original: {m.released_exactly}." in page


def test_eusilc_strata_and_kept_codes_keep_their_facts(eusilc: pd.DataFrame) -> None:
    """A release whose blocks are its strata and kept codes names them as before (no class)."""
    m = design_release(eusilc, ["age", "pl030"], epsilon=4.0, strata="rb090", keep_codes={"age": "0-15|65+"},
                       rng=random.Random(10))
    assert [f.kind for f in m.exact_facts] == ["stratum", "kept_code", "missing", "stratum_missing",
                                               "stratum_missing"]
    assert [f.reveals for f in m.exact_facts[:3]] == [
        "the strata (rb090, released unperturbed)",
        "whether age is one of the values it never changes ('0-15', '65+')",
        "which values of age and pl030 are missing"]
    assert [v["released_exactly"] for v in m.describe()["variables"]] == [
        "the strata of age (rb090) and whether age is one of the values it never changes ('0-15', '65+')",
        "the strata of pl030 (rb090)"]
    joint = design_release(eusilc, ["age", "pl030"], epsilon=4.0, split="joint", keep_codes={"pl030": "7"},
                           rng=random.Random(11))
    assert "block" not in {f.kind for f in joint.exact_facts}


def test_eusilc_kanon_within_strata_and_beside_a_kept_code(eusilc: pd.DataFrame) -> None:
    m = _kanon(eusilc, strata="rb090", keep_codes={"pl030": "7"})
    assert [f.kind for f in m.exact_facts] == ["stratum", "block", "block", "kept_code", "missing",
                                               "stratum_missing", "stratum_missing"]
    assert m["age"].classes() == AGE_CLASSES  # the same classes in each stratum, named once
    assert m["pl030"].classes() == [["1", "2"], ["3", "4"], ["5", "6"]]  # 7 kept: k = 2 on the six others
    assert "whether pl030 is one of the values it never changes ('7')" in m.guarantee
    for v in m.variables:
        dense = v.matrix.matrix
        blocks = [idx.tolist() for idx, _ in v.matrix.blocks]
        assert sorted(blocks) == support_components(dense)
        assert v.matrix.block_epsilon == brute_block_epsilon(dense, blocks)
        assert brute_block_epsilon(dense, blocks) <= v.block_epsilon < brute_block_epsilon(dense, blocks) + 1e-12
    back = Manifest.from_dict(json.loads(m.to_json()))
    assert back.exact_facts == m.exact_facts and back.guarantee == m.guarantee


# -- the built-in census, with missing values ----------------------------------------------------------------


@pytest.fixture(scope="module")
def census_missing() -> pd.DataFrame:
    d = census(6_000, seed=31)[["age", "marital_status", "sex"]].copy()
    d.loc[d.index % 9 == 0, "age"] = None
    return d


def test_census_kanon_release_block_epsilon_and_facts(census_missing: pd.DataFrame) -> None:
    m = design_release(census_missing, ["age", "marital_status"], method="kanon", options={"k": 3}, epsilon=4.0,
                       categories=CENSUS_VARIABLES, rng=random.Random(3))
    for v in m.variables:
        cats = list(v.matrix.categories)
        expected = [[cats[i] for i in c] for c in by_hand(len(cats), 3)]
        assert v.classes() == expected
        dense = v.matrix.matrix
        assert dense.tobytes() == dense_equation_3(len(cats), by_hand(len(cats), 3)).tobytes()
        blocks = [idx.tolist() for idx, _ in v.matrix.blocks]
        assert v.matrix.block_epsilon == brute_block_epsilon(dense, blocks)
        assert brute_block_epsilon(dense, blocks) <= v.block_epsilon < 1e-12
    assert [f.kind for f in m.exact_facts] == ["block", "block", "missing"]
    assert "which class of marital_status's categories each value lies in" in m.guarantee
    back = Manifest.from_dict(json.loads(m.to_json()))
    assert back.exact_facts == m.exact_facts and back.guarantee == m.guarantee


def test_census_simulation_never_moves_a_value_out_of_its_class(census_missing: pd.DataFrame) -> None:
    """Many records of each category, drawn by the engine under several keys: every released value lies
    in its original's class, missing values stay missing, and within a class the draw is uniform."""
    m = design_release(census_missing, ["age"], method="kanon", options={"k": 3}, epsilon=4.0,
                       categories=CENSUS_VARIABLES, rng=random.Random(4))
    cats = list(m["age"].matrix.categories)
    classes = [[cats[i] for i in c] for c in by_hand(len(cats), 3)]
    class_of = {c: i for i, members in enumerate(classes) for c in members}
    repeats = 600
    original = pd.DataFrame({"age": pd.Categorical([*[c for c in cats for _ in range(repeats)], None, None],
                                                   categories=cats)})
    for seed in range(4):
        out = perturb_frame(original, m, key=SecretKey(bytes([seed]) * 32, "test key")).data["age"]
        assert out.iloc[-2:].isna().all()
        o, z = original["age"].iloc[:-2].astype(str), out.iloc[:-2].astype(str)
        assert (o.map(class_of) == z.map(class_of)).all()
        assert (o != z).mean() > 0.3  # values do move, within their class
        for members in classes:
            rows = o.isin(members)
            counts = z[rows].value_counts().reindex(members, fill_value=0).to_numpy()
            assert stats.chisquare(counts).pvalue > 1e-4
