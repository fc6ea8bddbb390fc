"""Guarantee kinds: each privacy model a release states is one entry of ``pramkit.privacy.kinds.GUARANTEE_KINDS``.

Each kind's figure is checked on real releases (sdcMicro's testdata, skipped when absent, and the bundled census)
against a computation written here from the dense matrix: the epsilon as the largest log-ratio in a column, the
metric epsilon by brute force over category pairs, beta by the entropy formula, k by grouping identical rows, and
the recognition bound by condition (C1) evaluated on the original counts.  A kind added to the registry reaches the
guarantee, its JSON and ``pramkit inspect`` with nothing else changed; a forged provenance cannot raise a figure
that is recomputed, and a figure that cannot be recomputed says so.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA, run_cli

import pramkit
from pramkit import Manifest, PramMatrix
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.design.bistochastic.families import k_anonymity
from pramkit.design.classic import randomized_response
from pramkit.distances import Distances
from pramkit.ledger import Guarantee, epsilon_words, release_guarantee
from pramkit.manifest import PerturbedVariable
from pramkit.matrix import Provenance
from pramkit.privacy import kinds
from pramkit.privacy.kinds import (
    GUARANTEE_KINDS,
    GuaranteeFigure,
    GuaranteeKind,
    Reading,
    guarantee_figures,
    kind_lines,
    kind_table,
    tied_categories,
)

TESTDATA = SDC_DATA / "testdata.csv"
needs_testdata = pytest.mark.skipif(not TESTDATA.is_file(), reason="../shared/data/sdcmicro/testdata.csv is absent")
DOCS = Path(__file__).resolve().parents[1] / "docs" / "privacy.md"


# ------------------------------------------------------------------ independent computations

def brute_epsilon(m: np.ndarray) -> float:
    """max over columns of log(max / min); infinite where a column mixes zeros and positive entries."""
    out = 0.0
    for col in m.T:
        if col.max() == 0:
            continue
        if col.min() == 0:
            return math.inf
        out = max(out, math.log(col.max() / col.min()))
    return out


def brute_metric(m: np.ndarray, d: np.ndarray) -> float:
    """max over pairs i != j and released columns k of |log M[i, k] - log M[j, k]| / d(i, j)."""
    out = 0.0
    s = m.shape[0]
    for k in range(s):
        if m[:, k].max() == 0:
            continue
        for i, j in itertools.permutations(range(s), 2):
            a, b = m[i, k], m[j, k]
            if (a == 0) != (b == 0):
                return math.inf
            if a > 0:
                out = max(out, abs(math.log(a) - math.log(b)) / d[i, j])
    return out


def brute_beta(m: np.ndarray) -> float:
    """H(P) / log2 S, H(P) = -(1/S) sum P log2 P with 0 log 0 = 0 (Ruiz and Domingo-Ferrer, eq. 4)."""
    s = m.shape[0]
    h = -sum(x * math.log2(x) for x in m.ravel() if x > 0) / s
    return h / math.log2(s)


def brute_k(m: np.ndarray) -> int:
    """The smallest class of identical rows (a k-anonymity matrix: one uniform block per class)."""
    groups: dict[bytes, int] = {}
    for row in m:
        groups[row.tobytes()] = groups.get(row.tobytes(), 0) + 1
    return min(groups.values())


def brute_recognition(data: pd.DataFrame, keys: list[str], combinations: int, manifest: Manifest) -> float:
    """The largest posterior of condition (C1) on the original counts: for every occurring type m, every
    combination pi of ``combinations`` keys and every value k0 of pi, sum over cells k with k_pi = k0 of
    P[m, k], over the same sum weighted by every type's count U_0(l)."""
    (v,) = manifest.variables
    cells = [tuple(c) for c in v.matrix.categories]
    p = v.matrix.matrix
    counts = data[keys].dropna().astype(int).value_counts()
    u0 = np.array([counts.get(tuple(int(x) for x in c), 0) for c in cells], dtype=float)
    worst = 0.0
    for pi in itertools.combinations(range(len(keys)), combinations):
        values = sorted({tuple(c[i] for i in pi) for c in cells})
        for k0 in values:
            cols = [j for j, c in enumerate(cells) if tuple(c[i] for i in pi) == k0]
            mass = p[:, cols].sum(axis=1)
            total = float(u0 @ mass)
            if total > 0:
                worst = max(worst, float(mass[u0 > 0].max()) / total)
    return worst


def figures_of(manifest: Manifest, kind: str) -> dict[str | None, GuaranteeFigure]:
    return {f.variable: f for f in release_guarantee(manifest).kinds if f.kind == kind}


# ------------------------------------------------------------------ real releases

@pytest.fixture(scope="module")
def testdata() -> pd.DataFrame:
    if not TESTDATA.is_file():
        pytest.skip("../shared/data/sdcmicro/testdata.csv is absent")
    return pd.read_csv(TESTDATA)


@pytest.fixture(scope="module")
def releases(testdata: pd.DataFrame) -> dict[str, Manifest]:
    """Releases of roof and water of sdcMicro's testdata, one per family, each read back from its JSON."""
    import random

    def design(method: str, epsilon: float | None = None, **options) -> Manifest:
        m = pramkit.design_release(TESTDATA, ["roof", "water"], method=method, epsilon=epsilon, options=options,
                                   distances="ordinal" if method == "metric" else None, rng=random.Random(1))
        return Manifest.from_dict(json.loads(json.dumps(m.to_dict())))

    return {
        "dp": design("dp", 3.0),
        "metric": design("metric", 8.0, metric_epsilon=0.5),
        "geometric": design("metric", 8.0, metric_epsilon=0.5, mechanism="geometric"),
        "optimal": design("metric", 8.0, metric_epsilon=0.5, mechanism="optimal"),
        "beta": design("bistochastic-beta", 8.0, beta=0.5),
        "kanon": design("kanon", None, k=3),
    }


@needs_testdata
@pytest.mark.parametrize("name", ["dp", "metric", "geometric", "optimal", "beta", "kanon"])
def test_the_epsilon_of_each_variable_is_the_largest_log_ratio_of_a_column(releases, name) -> None:
    m = releases[name]
    found = figures_of(m, "epsilon")
    for v in m.variables:
        brute = brute_epsilon(v.matrix.matrix)
        assert found[v.name].value >= brute and found[v.name].recomputed
        assert found[v.name].value == pytest.approx(brute, rel=1e-9) if math.isfinite(brute) else \
            math.isinf(found[v.name].value)
        assert found[v.name].words == epsilon_words(v.epsilon, v.block_epsilon if v.is_structured else None)
    # the release: the variables' sum, as the manifest's perturbation epsilon
    assert found[None].value == m.perturbation_epsilon
    total = math.fsum(brute_epsilon(v.matrix.matrix) for v in m.variables)
    assert found[None].value >= total and (math.isinf(total) or found[None].value == pytest.approx(total, rel=1e-9))


@needs_testdata
@pytest.mark.parametrize("name", ["metric", "geometric", "optimal"])
def test_the_metric_epsilon_is_checked_by_brute_force_over_category_pairs(releases, name) -> None:
    m = releases[name]
    found = figures_of(m, "metric_epsilon")
    assert set(found) == {v.name for v in m.variables}  # stated per variable: no release figure
    for v in m.variables:
        s = v.matrix.size
        steps = np.abs(np.subtract.outer(np.arange(s), np.arange(s))).astype(float)
        brute = brute_metric(v.matrix.matrix, steps)
        figure = found[v.name]
        assert figure.recomputed and figure.words.endswith(" per step")
        assert brute <= figure.value * (1 + 1e-12)
        if name == "metric":  # the exponential mechanism: its closed form, the rate asked, bounds the law
            assert figure.value == pytest.approx(0.5, rel=1e-12)
        else:  # the geometric mechanism's adjacent rows differ by e^rate; the LP's reach its target
            assert figure.value == pytest.approx(brute, rel=1e-9)
            assert brute == pytest.approx(0.5, rel=1e-9)


@needs_testdata
def test_beta_is_the_entropy_rate_over_its_largest_value(releases) -> None:
    for name in ("beta", "kanon"):
        m = releases[name]
        found = figures_of(m, "beta")
        for v in m.variables:
            assert v.matrix.is_bistochastic
            assert found[v.name].value == pytest.approx(brute_beta(v.matrix.matrix), abs=1e-12)
        assert None not in found
    beta = figures_of(releases["beta"], "beta")
    assert [round(f.value, 9) for f in beta.values()] == [0.5, 0.5]  # what the design aimed at
    assert not any(v.matrix.is_bistochastic for v in releases["metric"].variables)
    assert not figures_of(releases["metric"], "beta")  # not bistochastic: beta does not apply


@needs_testdata
def test_k_is_the_smallest_class_of_equally_likely_categories(releases) -> None:
    m = releases["kanon"]
    found = figures_of(m, "k")
    for v in m.variables:
        assert found[v.name].value == brute_k(v.matrix.matrix) >= 3
        assert found[v.name].words == f"{brute_k(v.matrix.matrix)} categories"
    for name in ("dp", "beta", "metric"):
        assert not figures_of(releases[name], "k")  # k applies to the k-anonymity design


@needs_testdata
def test_the_recognition_bound_holds_on_the_original_counts_and_is_said_to_be_stated(testdata) -> None:
    keys = ["roof", "water", "sex"]
    release = pramkit.design_recognition(TESTDATA, keys, alpha=0.3, combinations=2)
    m = Manifest.from_dict(json.loads(json.dumps(release.manifest.to_dict())))
    (figure,) = figures_of(m, "recognition").values()
    assert figure.variable == "roof*water*sex" and figure.value == 0.3 and not figure.recomputed
    assert "as the design states it" in figure.words
    worst = brute_recognition(testdata, keys, 2, m)
    assert 0 < worst <= figure.value
    assert not figures_of(pramkit.Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}), "recognition")


@needs_testdata
def test_in_strata_the_metric_epsilon_and_k_hold_within_each_stratum() -> None:
    """water within the strata of urbrur: every block is checked by brute force on its own, and the figure is
    the largest, given the structure (two strata are told apart)."""
    def design(method: str, epsilon: float | None, **options) -> Manifest:
        m = pramkit.design_release(TESTDATA, ["water"], method=method, epsilon=epsilon, options=options,
                                   strata=["urbrur"], distances="ordinal" if method == "metric" else None)
        return Manifest.from_dict(json.loads(json.dumps(m.to_dict())))

    metric, kanon = design("metric", 8.0, metric_epsilon=0.5), design("kanon", None, k=2)
    (v,) = metric.variables
    m = v.matrix.matrix
    per_block = []
    for idx, _ in v.matrix.blocks:
        steps = np.abs(np.subtract.outer(np.arange(idx.size), np.arange(idx.size))).astype(float)
        per_block.append(brute_metric(m[np.ix_(idx, idx)], steps))
    figure = figures_of(metric, "metric_epsilon")["water"]
    assert len(per_block) == 2 and max(per_block) <= figure.value <= 0.5 * (1 + 1e-12)
    assert figure.words == "0.5 per step given the structure"
    assert math.isinf(brute_metric(m, np.abs(np.subtract.outer(np.arange(16), np.arange(16))) + 1.0))
    (w,) = kanon.variables
    assert figures_of(kanon, "k")["water"].value == brute_k(w.matrix.matrix) == 2


def test_a_derived_variable_states_the_figures_of_the_law_it_releases() -> None:
    """A public-use file perturbed again from a scientific-use one: beta of the product of the two matrices."""
    first, second = randomized_response(list("abc"), 2.0), randomized_response(list("abc"), 1.0)
    v = PerturbedVariable("x", second, applied_to=first)
    product = first.matrix @ second.matrix
    assert kinds.beta_reading(v).value == pytest.approx(brute_beta(product), abs=1e-12)
    assert kinds.epsilon_reading(v).value == pytest.approx(brute_epsilon(product), rel=1e-9)


def test_kinds_on_the_bundled_census() -> None:
    data = census(3_000)
    m = pramkit.design_release(data, ["age", "marital_status"], method="kanon", options={"k": 3},
                               categories=CENSUS_VARIABLES)
    for v in m.variables:
        assert figures_of(m, "k")[v.name].value == brute_k(v.matrix.matrix)
        assert figures_of(m, "beta")[v.name].value == pytest.approx(brute_beta(v.matrix.matrix), abs=1e-12)
    geo = pramkit.design_release(data, ["age"], method="metric", options={"metric_epsilon": 0.25,
                                                                          "mechanism": "geometric"},
                                 distances="ordinal", epsilon=8.0, categories=CENSUS_VARIABLES)
    (v,) = geo.variables
    steps = np.abs(np.subtract.outer(np.arange(9), np.arange(9))).astype(float)
    assert figures_of(geo, "metric_epsilon")["age"].value == pytest.approx(brute_metric(v.matrix.matrix, steps),
                                                                           rel=1e-9)


# ------------------------------------------------------------------ the figures' readers at any size

def test_the_compact_forms_are_read_as_their_dense_matrix() -> None:
    rng = np.random.default_rng(7)
    for s in (2, 3, 7, 30):
        q = rng.choice([0.2, 0.5, 0.9], size=s)
        w = (1 - q) / (s - 1)
        if s == 7:  # ties among the diagonal and the off-diagonal entries
            q[:] = 1 / s
            w = (1 - q) / (s - 1)
        compact = PramMatrix.form8(q, categories=list(range(s)))
        dense = PramMatrix(compact.matrix, categories=list(range(s)))
        assert tied_categories(compact) == tied_categories(dense)
        m = dense.matrix
        largest = m.max(axis=0)
        assert tied_categories(compact) == int(min((m[:, j] == largest[j]).sum() for j in range(s)))
        assert kinds.row_entropy_nats(compact) == pytest.approx(kinds.row_entropy_nats(dense), rel=1e-12)
    big = randomized_response(list(range(100_000)), 2.0)  # compact: O(S), no dense 100 000 x 100 000 array
    (beta,) = [f for f in guarantee_figures(Manifest.of({"x": big})) if f.kind == "beta"]
    q, w = float(big.form8_q[0]), float(big.form8_w[0])
    closed = -(q * math.log2(q) + (1e5 - 1) * w * math.log2(w)) / math.log2(1e5)
    assert beta.value == pytest.approx(closed, rel=1e-12)
    assert "_dense_cache" not in big.__dict__


def test_k_counts_exact_ties_only() -> None:
    m = PramMatrix([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], categories="abc",
                   provenance=Provenance("k_anonymity", {"k": 2}))
    assert tied_categories(m) == 1  # the class of one: c
    (figure,) = [f for f in guarantee_figures(Manifest.of({"x": m})) if f.kind == "k"]
    assert figure.value == 1 and figure.words == "1 category"


# ------------------------------------------------------------------ forged provenance

def _forged(manifest: Manifest, change) -> Manifest:
    d = json.loads(json.dumps(manifest.to_dict()))
    for v in d["variables"]:
        change(v)
    return Manifest.from_dict(d)


@needs_testdata
def test_a_forged_beta_or_k_in_the_provenance_does_not_change_the_figure(releases) -> None:
    m = releases["beta"]

    def claim_beta(v: dict) -> None:
        v["design"]["objective"] = 0.99
        v["design"]["parameters"]["target_beta"] = 0.99

    forged = _forged(m, claim_beta)
    assert forged.variables[0].matrix.provenance.parameters["target_beta"] == 0.99  # the forgery is read
    assert figures_of(forged, "beta") == figures_of(m, "beta")
    k = releases["kanon"]

    def claim_k(v: dict) -> None:
        v["design"]["parameters"]["k"] = 50

    assert figures_of(_forged(k, claim_k), "k") == figures_of(k, "k")


@needs_testdata
def test_a_forged_metric_epsilon_in_the_provenance_does_not_change_the_figure(releases) -> None:
    for name in ("geometric", "optimal"):
        m = releases[name]

        def claim(v: dict) -> None:
            v["design"]["parameters"]["metric_epsilon"] = 0.001
            v["design"]["certificate"]["metric_epsilon_stored"] = 0.001

        assert figures_of(_forged(m, claim), "metric_epsilon") == figures_of(m, "metric_epsilon")


def test_a_matrix_said_to_be_k_anonymous_shows_the_classes_it_has() -> None:
    """The identity under a k-anonymity provenance: k is 1, not the k the provenance states."""
    m = PramMatrix(np.eye(4), categories="abcd", provenance=Provenance("k_anonymity", {"k": 4, "classes": [[0, 1, 2, 3]]}))
    (figure,) = [f for f in guarantee_figures(Manifest.of({"x": m})) if f.kind == "k"]
    assert figure.value == 1 and figure.recomputed


def test_a_figure_that_cannot_be_recomputed_says_it_is_stated() -> None:
    """Distances of a table (read from a file) are named by their SHA-256 only: the design's figure, stated."""
    from pramkit.design.dp.distance import metric_min_distance

    table = Distances(list("abcd"), [[0, 1, 3, 4], [1, 0, 2, 3], [3, 2, 0, 1], [4, 3, 1, 0]], kind="table", unit="km")
    matrix = metric_min_distance(None, 0.4, table)
    m = Manifest.from_dict(json.loads(json.dumps(Manifest.of({"area": matrix}).to_dict())))
    (figure,) = figures_of(m, "metric_epsilon").values()
    assert not figure.recomputed and figure.words.startswith("0.4 per km (as the design states it")
    assert brute_metric(matrix.matrix, table.matrix) <= figure.value * (1 + 1e-9)  # the statement is true here
    assert json.loads(json.dumps(release_guarantee(m).to_dict()))["kinds"][-1]["recomputed"] is False


# ------------------------------------------------------------------ one entry, every surface

def _keep_kind() -> GuaranteeKind:
    def read(v) -> Reading | None:
        keep = float(v.release_matrix.min_diagonal)
        return Reading(keep, f"{keep:.3f}")

    def combine(readings) -> Reading:
        least = min(r.value for r in readings)
        return Reading(least, f"{least:.3f}")

    return GuaranteeKind("keep", "smallest keep probability", "probability",
                         "No value is kept with probability below this.", "recomputed from the matrix", read, combine,
                         "the smallest")


def test_a_kind_added_to_the_registry_reaches_the_guarantee_its_json_and_inspect(tmp_path, monkeypatch) -> None:
    m = Manifest.of({"region": randomized_response([1, 2, 3], 1.0), "sex": randomized_response(["m", "f"], 0.5)})
    path = m.write(tmp_path / "m.json")
    monkeypatch.setitem(GUARANTEE_KINDS, "keep", _keep_kind())
    keep = {f.variable: f for f in release_guarantee(m).kinds if f.kind == "keep"}
    brute = {v.name: float(np.diag(v.matrix.matrix).min()) for v in m.variables}
    assert {k: f.value for k, f in keep.items()} == {**brute, None: min(brute.values())}
    listed = [f for f in release_guarantee(m).to_dict()["kinds"] if f["kind"] == "keep"]
    assert [f["variable"] for f in listed] == ["region", "sex", None]
    code, out, _ = run_cli("inspect", path)
    line = (f"smallest keep probability of region: {brute['region']:.3f}; of sex: {brute['sex']:.3f}; "
            f"of the release: {min(brute.values()):.3f}")
    assert code == 0 and line in out.splitlines()
    code, out, _ = run_cli("inspect", path, "--json")
    assert any(f["kind"] == "keep" for f in json.loads(out)["release_guarantee"]["kinds"])
    assert "`keep` | probability |" in kind_table()
    monkeypatch.delitem(GUARANTEE_KINDS, "keep")
    assert not any(f.kind == "keep" for f in release_guarantee(m).kinds)


def test_inspect_prints_a_line_per_kind_beyond_the_epsilon(tmp_path) -> None:
    m = Manifest.of({"age": k_anonymity(["0-17", "18-34", "35-64", "65+"], 2),
                     "sex": randomized_response(["f", "m"], 1.0)})
    path = m.write(tmp_path / "m.json")
    code, out, _ = run_cli("inspect", path)
    lines = out.splitlines()
    sex_beta = brute_beta(m.variables[1].matrix.matrix)
    assert code == 0
    assert "beta of age: 0.5; of sex: " + kinds.shown(sex_beta, up=False) in lines
    assert "k of age: 2 categories" in lines
    assert not any(line.startswith("epsilon of") for line in lines)  # the epsilon is printed already
    assert all(line in lines for line in kind_lines(release_guarantee(m).kinds))


def test_the_guarantee_json_gains_the_kinds_and_keeps_every_other_field() -> None:
    m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    d = release_guarantee(m, ["sex"]).to_dict()
    assert list(d) == ["record_epsilon", "given_structure", "figure", "headline", "coverage", "not_covered",
                       "unperturbed_columns", "statement", "kinds"]
    first = d["kinds"][0]
    assert first == {"kind": "epsilon", "variable": "sex", "value": m.variables[0].epsilon, "words": "1",
                     "recomputed": True}
    assert first["value"] == pytest.approx(1.0, rel=1e-12)
    assert Guarantee(1.0, False, "...", (), ()).to_dict()["kinds"] == []
    json.dumps(d, allow_nan=False)


def test_a_structured_variable_states_its_epsilon_in_the_words_of_every_surface() -> None:
    v = PerturbedVariable("water", k_anonymity(list("abcdefgh"), 4))
    figure = kinds.epsilon_reading(v)
    assert math.isinf(figure.value)
    assert figure.words == epsilon_words(v.epsilon, v.block_epsilon) == "local inf; 0 given the structure"
    for x in (3.0, 2.9999999999999987, 1.23441, 19999.8, 1e-7, 0.5):
        from pramkit.ledger import fmt_epsilon

        assert kinds.shown(x) == fmt_epsilon(x)


def test_the_privacy_page_holds_the_generated_table() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert "## Guarantee kinds: one entry per privacy model" in text
    assert kind_table() in text
    assert all(f"| `{name}` |" in kind_table() for name in GUARANTEE_KINDS)


def test_the_app_shows_the_kinds_where_it_shows_the_guarantee(chromium, tmp_path) -> None:
    """The design step's guarantee panel lists the kinds' lines (skipped as the other browser tests are)."""
    import _app_support
    from _browser import WAIT, choose, expect, no_trace, open_app, open_census, tab

    (tmp_path / "work").mkdir()
    with _app_support.running_app(tmp_path / "work", "kinds-test-token") as url:
        page = open_app(chromium, url, "kinds-test-token")
        open_census(page, 3_000)
        tab(page, "3 Design")
        choose(page, "design_vars", ["sex", "race"])
        page.select_option("#method", "recognition")
        page.fill("#epsilon", "")
        page.fill("#options", "recognition=0.5")
        page.click("#run_design")
        expect(page.locator("#guarantee")).to_contain_text("recognition bound of sex*race: 0.5 (as the design "
                                                           "states it", timeout=WAIT)
        no_trace(page)
        page.context.close()
