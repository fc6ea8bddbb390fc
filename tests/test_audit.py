"""The manifest and release audits (pramkit.audit), their faults and the ``pramkit audit`` command.

Each injected fault is made in a copy of the engine's output (or by the engine run with a
matrix other than the published one) and must be found; the untouched release must pass.
The data: the built-in census (not-applicable codes, kept as a code of their own), with missing
values and a whitespace variant of a label added, and the sdcMicro testdata file (households,
sampling weights, the code 9 of an undeclared order).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pramkit.audit import audit
from pramkit.audit.manifest import manifest_audit
from pramkit.audit.ratios import holds
from pramkit.audit.release import release_audit
from pramkit.audit.stats import holm, row_pvalue
from pramkit.cli import main
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import apply_file
from pramkit.errors import WriteError
from pramkit.kernel.rng import write_key_file
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix

AGES = ["0-9", "10-17", "18-24", "25-34", "35-44", "45-54", "55-64", "65-74", "75+"]
WORK = ["employed", "unemployed", "not in labor force"]


def _employment(q: float) -> PramMatrix:
    """Employment perturbed among its three codes; 'n/a' kept (a block of its own: zero cells)."""
    return PramMatrix.block_diagonal([PramMatrix.form8([q] * 3, categories=WORK), PramMatrix.identity(["n/a"])])


def _manifest(eps_sex: float = 1.0, age: PramMatrix | None = None) -> Manifest:
    return Manifest.of({
        "sex": randomized_response(["female", "male"], eps_sex),
        "age": age if age is not None else PramMatrix.form8([0.6] * 9, categories=AGES),
        "employment": _employment(0.8),
    })


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Path]:
    """A census release: original (with missing sex and a label written with spaces), manifest, released file."""
    folder = tmp_path_factory.mktemp("audit")
    data = census(20_000, seed=7).astype(object)
    data.loc[::97, "sex"] = None                      # missing values, kept missing
    data.loc[5, "race"] = " white "                   # a whitespace variant in a column left as it is
    data.to_csv(folder / "original.csv", index=False)
    _manifest().write(folder / "manifest.json")
    apply_file(folder / "original.csv", folder / "manifest.json", folder / "released.csv", key=bytes(range(32)))
    return {"dir": folder, "original": folder / "original.csv", "manifest": folder / "manifest.json",
            "released": folder / "released.csv"}


def _failed(checks, field: str) -> list[str]:
    return [c.subject for c in checks if c.field == field and not c.passed]


def _copy(release: dict[str, Path], tmp_path: Path, edit=None, name: str = "released.csv") -> Path:
    """A copy of the engine's output, with a fault injected by ``edit(frame)``."""
    frame = pd.read_csv(release["released"], dtype=str, keep_default_na=False)
    if edit is not None:
        frame = edit(frame)
    out = tmp_path / name
    frame.to_csv(out, index=False)
    return out


def _faulty_release(release: dict[str, Path], tmp_path: Path, manifest: Manifest, key: bytes) -> Path:
    """The engine run with a matrix other than the published one."""
    wrong = manifest.write(tmp_path / "wrong.json")
    apply_file(release["original"], wrong, tmp_path / "released.csv", key=key)
    return tmp_path / "released.csv"


def test_the_release_passes(release):
    checks = release_audit(release["manifest"], release["original"], release["released"], key=bytes(range(32)))
    assert [c.line() for c in checks if not c.passed] == []
    assert {c.field for c in checks} >= {"row count and order", "impossible transitions", "transition table",
                                         "missing kept missing", "derived again with the key"}


def test_the_public_audit_passes_and_reads_no_original(release, monkeypatch):
    import pramkit.audit.release as private

    monkeypatch.setattr(private, "read_whole", lambda *a, **k: pytest.fail("the public audit read a table"))
    monkeypatch.setattr(private, "read_chunks", lambda *a, **k: pytest.fail("the public audit read a table"))
    result = audit(release["manifest"], released=release["released"])
    assert result.passed and result.audits == ("manifest",)


@pytest.mark.parametrize("repeat", range(3))
def test_a_matrix_at_epsilon_plus_0_2_is_found(release, tmp_path, repeat):
    """Drawn with randomized response at 1.2 instead of the published 1: the fit test of sex rejects
    (power: keep 0.769 against 0.731 on about 9 900 records per row, z about 8); three keys."""
    released = _faulty_release(release, tmp_path, _manifest(eps_sex=1.2), bytes([repeat + 1] * 32))
    assert _failed(release_audit(release["manifest"], release["original"], released), "transition table") == ["sex"]


def test_a_swapped_row_is_found(release, tmp_path):
    m = PramMatrix.form8([0.6] * 9, categories=AGES).matrix.copy()
    m[[0, 1]] = m[[1, 0]]
    released = _faulty_release(release, tmp_path, _manifest(age=PramMatrix(m, AGES)), bytes([7] * 32))
    checks = release_audit(release["manifest"], release["original"], released)
    assert _failed(checks, "transition table") == ["age"]
    rejected = next(c for c in checks if c.field == "transition table" and c.subject == "age").data["rejected"]
    assert {r["category"] for r in rejected} == {"0-9", "10-17"}


def test_one_record_moved_into_a_zero_cell_is_found_with_its_row(release, tmp_path):
    original = pd.read_csv(release["original"], dtype=str, keep_default_na=False)
    row = int(np.flatnonzero(original["employment"] == "n/a")[3])

    def enter(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[row, "employment"] = "employed"     # a kept code left
        return frame

    checks = release_audit(release["manifest"], release["original"], _copy(release, tmp_path, enter))
    found = next(c for c in checks if c.field == "impossible transitions" and c.subject == "employment")
    assert not found.passed and found.data["rows"] == [row + 1]
    assert found.data["kinds"] == {"a kept code left": [row + 1]}


def test_households_whose_members_disagree_are_found(sdc_data, tmp_path):
    """testdata: roof is a household variable (1 000 households); one member's released roof changed."""
    roof = PramMatrix.form8([0.7] * 5, categories=[2, 4, 5, 6, 9])
    manifest = Manifest((PerturbedVariable("roof", roof, unit="ori_hid"),)).write(tmp_path / "m.json")
    apply_file(sdc_data / "testdata.csv", manifest, tmp_path / "r.csv", key=bytes(32))
    assert release_audit(manifest, sdc_data / "testdata.csv", tmp_path / "r.csv") \
        and not _failed(release_audit(manifest, sdc_data / "testdata.csv", tmp_path / "r.csv"),
                        "household members agree")
    frame = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    member = int(np.flatnonzero(frame["ori_hid"].duplicated())[0])
    frame.loc[member, "roof"] = "2" if frame.loc[member, "roof"] != "2" else "4"
    frame.to_csv(tmp_path / "bad.csv", index=False)
    checks = release_audit(manifest, sdc_data / "testdata.csv", tmp_path / "bad.csv")
    found = next(c for c in checks if c.field == "household members agree")
    assert not found.passed and found.data["rows"] == [member + 1]
    # the weights column is not perturbed: it stays identical row for row
    assert next(c for c in checks if c.field == "row count and order").passed


@pytest.mark.parametrize("fault, field", [
    ("other rows", "row count"),
    ("shuffled", "row count and order"),
    ("original", "transition table"),
])
def test_files_that_do_not_belong_together(release, tmp_path, fault, field):
    def other_rows(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.iloc[:-5]

    def shuffled(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.sample(frac=1.0, random_state=1)

    released = (release["original"] if fault == "original"
                else _copy(release, tmp_path, other_rows if fault == "other rows" else shuffled))
    checks = release_audit(release["manifest"], release["original"], released)
    assert field in [c.field for c in checks if not c.passed]


def test_a_wrong_key_and_another_manifest_are_named(release, tmp_path):
    checks = release_audit(release["manifest"], release["original"], release["released"], key=bytes(32))
    assert [c.field for c in checks if not c.passed] == ["derived again with the key"]
    other = _manifest(eps_sex=2.0).write(tmp_path / "other.json")
    public = manifest_audit(other, release["released"])
    assert [c.field for c in public if not c.passed] == ["manifest sha256"]


def test_a_changed_released_file_fails_its_receipt(release, tmp_path):
    copy = _copy(release, tmp_path)
    (tmp_path / "released.csv.receipt.json").write_bytes(
        (release["dir"] / "released.csv.receipt.json").read_bytes())
    with open(copy, "a") as f:
        f.write("owned,mortgage,0-9,female,never married,white,none,n/a,n/a,n/a\n")
    failed = [c.field for c in manifest_audit(release["manifest"], copy) if not c.passed]
    assert failed == ["released file sha256", "rows"]


def test_an_understated_epsilon_and_a_wrong_total_are_found(tmp_path):
    raw = json.loads(Manifest.of({"sex": randomized_response(["female", "male"], 1.0),
                                  "age": PramMatrix.form8([0.6] * 9, categories=AGES)}).to_json())
    raw["variables"][0]["epsilon"] = 0.99          # sex is RR at epsilon 1
    raw["perturbation_epsilon"] = raw["perturbation_epsilon"] - 0.5
    (tmp_path / "m.json").write_text(json.dumps(raw))
    failed = {(c.subject, c.field) for c in manifest_audit(tmp_path / "m.json") if not c.passed}
    # the stated total is below the sum of the stated parts, and below the sum recomputed from the matrices
    assert failed == {("sex", "epsilon"), ("manifest", "perturbation epsilon"), ("manifest", "perturbation_epsilon")}


@given(num=st.integers(1, 10**6), den=st.integers(1, 10**6))
@settings(max_examples=60, deadline=None)
def test_the_exact_epsilon_check_agrees_with_the_logarithm(num, den):
    """``holds`` against ``math.log`` of the correctly rounded ratio (error below 4e-16 relative):
    a stated epsilon that much above passes, that much below fails."""
    from fractions import Fraction

    ratio = Fraction(max(num, den), min(num, den))
    eps = math.log(max(num, den) / min(num, den))
    slack = 4e-16 * max(1.0, eps)
    assert holds(eps + slack, ratio)[0]
    assert not holds(max(eps - slack, 0.0), ratio)[0] or ratio == 1


def test_holm_against_statsmodels_free_reference():
    """Holm's adjusted p-values min(1, max_{j<=i} (m - j) p_(j)) (Holm 1979), computed by brute force."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        p = rng.uniform(0, 0.1, size=rng.integers(1, 8))
        order = np.argsort(p)
        adjusted = np.empty_like(p)
        running = 0.0
        for i, k in enumerate(order):
            running = max(running, min(1.0, (p.size - i) * p[k]))
            adjusted[k] = running
        assert np.array_equal(holm(p, 0.05), adjusted < 0.05)


def test_the_row_test_is_each_cells_binomial_test_times_the_cells():
    """Against scipy's binomial tails: twice the smaller, the smallest cell's times three; the zero cell
    is not a cell of the test (two cells left: one test, no factor)."""
    obs, prob = np.array([30, 50, 20]), np.array([0.3, 0.5, 0.2])
    cells = [2 * min(stats.binom.cdf(x, 100, q), stats.binom.sf(x - 1, 100, q)) for x, q in zip(obs + 3, prob)]
    assert math.isclose(row_pvalue(obs + 3, prob), min(1.0, 3 * min(cells)))
    two = 2 * stats.binom.sf(61, 80, 0.625)
    assert math.isclose(row_pvalue([62, 18, 0], [0.5, 0.3, 0.0]), two)


def _valid_by_enumeration(outcomes: list[tuple[float, float]]) -> None:
    """Every attained p-value v: P(p <= v) <= v, the probability summed over every outcome exactly."""
    attained = sorted((p, q) for p, q in outcomes if not math.isnan(p))
    below = 0.0
    for i, (p, q) in enumerate(attained):
        below += q
        if i + 1 == len(attained) or attained[i + 1][0] > p:
            assert below <= p * (1 + 1e-9) + 1e-15, (p, below)


@given(n=st.integers(1, 24), weights=st.lists(st.integers(0, 9), min_size=3, max_size=4))
@settings(max_examples=30, deadline=None)
def test_the_row_test_is_valid_by_enumeration(n, weights):
    """Every outcome of a row of n records through a matrix row (zero cells among them): the row's
    p-value is at most t with probability at most t, for every t it attains. A minimum count is not
    needed: small rows are where an approximation's tails fail."""
    from itertools import product
    if sum(w > 0 for w in weights) < 2:
        weights = [1, 1, *weights[2:]]
    prob = np.array(weights, dtype=float) / sum(weights)
    reach = np.flatnonzero(prob > 0)
    outcomes = []
    for head in product(range(n + 1), repeat=reach.size - 1):
        if sum(head) <= n:
            x = np.zeros(prob.size, dtype=int)
            x[reach] = [*head, n - sum(head)]
            outcomes.append((row_pvalue(x, prob), float(stats.multinomial.pmf(x[reach], n, prob[reach]))))
    assert math.isclose(sum(q for _, q in outcomes), 1.0)
    _valid_by_enumeration(outcomes)


def test_the_shuffled_test_is_valid_by_enumeration():
    """Every outcome of three small categories released through a matrix with a zero cell, the released
    counts summed over the records' multinomials: the margin test's p-value is valid at every level."""
    from itertools import product

    from pramkit.audit.stats import margin_pvalue
    m = np.array([[0.6, 0.3, 0.1], [0.2, 0.8, 0.0], [0.05, 0.15, 0.8]])
    for n in ([5, 3, 4], [9, 0, 2], [1, 6, 6]):
        law: dict[tuple[int, ...], float] = {(0, 0, 0): 1.0}
        for k, nk in enumerate(n):
            step: dict[tuple[int, ...], float] = {}
            for x in product(range(nk + 1), repeat=3):
                if sum(x) == nk and (q := float(stats.multinomial.pmf(x, nk, m[k]))) > 0:
                    for r, p in law.items():
                        key = tuple(a + b for a, b in zip(r, x))
                        step[key] = step.get(key, 0.0) + p * q
            law = step
        assert math.isclose(sum(law.values()), 1.0)
        _valid_by_enumeration([(margin_pvalue(n, m, r), q) for r, q in law.items()])


@pytest.mark.slow
def test_false_alarm_rate_of_the_fit_tests():
    """Transition tables drawn from M itself (numpy's multinomial, not the engine): the family of
    2 + 9 + 4 row tests, Holm at 0.1, rejects in at most about 10 % of 400 releases."""
    rng = np.random.default_rng(11)
    manifest = _manifest()
    alarms = 0
    for _ in range(400):
        pvalues = []
        for v in manifest.variables:
            m = v.matrix.matrix
            for k in range(m.shape[0]):
                pvalues.append(row_pvalue(rng.multinomial(int(rng.integers(20, 400)), m[k]), m[k]))
        alarms += bool(holm(pvalues, 0.1).any())
    assert alarms / 400 <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / 400)


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["audit", *args])
    return code, out.getvalue(), err.getvalue()


def _listing(folder: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in folder.rglob("*")}


def test_cli_verdict_and_json(release):
    code, out, _ = _cli(["--manifest", str(release["manifest"]), "--released", str(release["released"]),
                         "--original", str(release["original"]), "--json"])
    result = json.loads(out)
    assert code == 0 and result["passed"] and result["audits"] == ["manifest", "release"]
    code, out, err = _cli(["--manifest", str(release["manifest"]), "--released", str(release["original"]),
                           "--original", str(release["original"])])
    assert code == 1 and err == "" and out.splitlines()[-1].startswith("audit: ")
    assert "receipt present" in out.splitlines()[-1] and "transition table" in out.splitlines()[-1]


@pytest.mark.parametrize("args, message", [
    (["--manifest", "{dir}/absent.json"], "does not exist"),
    (["--manifest", "{dir}/original.csv"], "manifest"),
    (["--manifest", "{manifest}", "--original", "{original}"], "--released"),
    (["--manifest", "{manifest}", "--released", "{released}", "--key-file", "{manifest}"], "--original"),
    (["--manifest", "{manifest}", "--released", "{dir}/absent.csv", "--original", "{original}"], "absent.csv"),
    (["--manifest", "{manifest}", "--released", "{released}", "--original", "{original}",
      "--key-file", "{dir}/absent.key"], "absent.key"),
    (["--released", "{released}"], "--manifest"),
    (["--manifest", "{manifest}", "--released", "{dir}/absent.csv"], "absent.csv"),
])
def test_cli_bad_input(release, args, message):
    before = _listing(release["dir"])
    filled = [a.format(**{k: str(v) for k, v in release.items()}) for a in args]
    code, out, err = _cli(filled)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and message in err
    assert "Traceback" not in err and _listing(release["dir"]) == before


def test_a_short_key_is_refused_before_any_work(release, tmp_path, monkeypatch):
    import pramkit.audit.release as private

    monkeypatch.setattr(private, "read_whole", lambda *a, **k: pytest.fail("the audit read a table"))
    monkeypatch.setattr(private, "read_chunks", lambda *a, **k: pytest.fail("the audit read a table"))
    key = tmp_path / "short.key"
    key.write_text("abcd")
    key.chmod(0o600)
    code, out, err = _cli(["--manifest", str(release["manifest"]), "--released", str(release["released"]),
                           "--original", str(release["original"]), "--key-file", str(key)])
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "key" in err


def test_a_failing_rederivation_leaves_nothing(release, tmp_path, monkeypatch):
    """Injected failure of the one write the audit makes (the release derived again, in a temporary folder)."""
    import pramkit.engine.perturb as perturb

    def broken(original, manifest, out, **kwargs):
        Path(out).write_text("half")
        raise WriteError("disk full (injected): nothing was written")

    key = write_key_file(tmp_path / "k.key")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(perturb, "apply_file", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = _listing(release["dir"])
    code, out, err = _cli(["--manifest", str(release["manifest"]), "--released", str(release["released"]),
                           "--original", str(release["original"]), "--key-file", str(key)])
    assert code == 2 and out == "" and "injected" in err and len(err.splitlines()) == 1
    assert list(scratch.iterdir()) == [] and _listing(release["dir"]) == before


def test_the_reports_show_the_audit(release):
    """The internal report shows every audit (failures first); the public one the manifest audit only."""
    from pramkit.errors import ParameterError
    from pramkit.report import build_public_report, build_report, render_html
    from pramkit.report.build import with_audit

    full = audit(release["manifest"], released=release["released"], original=release["original"])
    internal = build_report(release["original"], release["manifest"], release["released"], ["sex", "age", "education"],
                            sampling_fraction=0.05)
    page = render_html(with_audit(internal, full))
    assert "<h2>" in page and ". Audit</h2>" in page and full.verdict() in page and "transition table" in page
    public = build_public_report(release["manifest"], release["released"])
    with pytest.raises(ParameterError, match="manifest audit only"):
        with_audit(public, full)
    shown = render_html(with_audit(public, audit(release["manifest"], released=release["released"])))
    assert ". Audit</h2>" in shown and "transition table" not in shown


@given(p=st.lists(st.integers(1, 50), min_size=2, max_size=6), eps=st.floats(0.1, 4.0))
@settings(max_examples=25, deadline=None)
def test_the_form8_search_agrees_with_the_design(p, eps):
    """The audit's own exhaustive search against pramkit's certified form (8) design (another method:
    vertex patterns, placements by equal p, branch and bound)."""
    from pramkit.audit.manifest import form8_information, form8_optimum
    from pramkit.design.dp.optimal import dp_optimal

    pv = np.array(p, dtype=float) / sum(p)
    design = dp_optimal(pv, eps)
    found = form8_optimum(pv, design.provenance.parameters["epsilon"])
    assert found == pytest.approx(form8_information(pv, design.diagonal[None, :])[0], abs=1e-10)


def test_a_design_that_is_not_optimal_fails_its_certificate(tmp_path):
    """The form (8) and the general design replaced by randomized response at the same epsilon, their
    certificates and stated information kept: the audit re-proves neither."""
    from pramkit.design.dp.general import dp_general
    from pramkit.design.dp.optimal import dp_optimal

    p = [0.5, 0.3, 0.15, 0.05]
    raw = json.loads(Manifest.of({"a": dp_optimal(p, 1.0, categories=list("wxyz")),
                                  "b": dp_general(p, 1.0, categories=list("wxyz"))}).to_json())
    weaker = json.loads(Manifest.of({"a": randomized_response(list("wxyz"), 1.0)}).to_json())["variables"][0]
    for name, entry in zip("ab", raw["variables"]):
        design = entry["design"]
        entry.clear()
        entry.update(weaker, name=name, columns=[name], design=design)
    (tmp_path / "m.json").write_text(json.dumps(raw))
    failed = sorted((c.subject, c.field) for c in manifest_audit(tmp_path / "m.json") if not c.passed)
    assert failed == [("a", "mutual information"), ("a", "optimality certificate"),
                      ("b", "mutual information"), ("b", "optimality certificate")]


def test_a_null_stated_figure_fails_its_check(tmp_path, capsys):
    """A hand-edited provenance whose objective is null (the manifest's schema allows null): a failed check and
    exit 1, no traceback; a list or a word there, which every other command refuses on reading, is a forged
    field too: exit 1, the field named (issue 61)."""
    from pramkit.cli import main
    from pramkit.design.dp.general import dp_general

    raw = json.loads(Manifest.of({"a": dp_general([0.5, 0.3, 0.2], 1.0, categories=["ja", "nein", "k. A."])}).to_json())
    for objective in (None, [0.5], "much"):
        raw["variables"][0]["design"]["objective"] = objective
        (tmp_path / "m.json").write_text(json.dumps(raw))
        assert main(["audit", "--manifest", str(tmp_path / "m.json")]) == 1
        captured = capsys.readouterr()
        assert captured.err == "" and (objective is None or "variables[0].design.objective" in captured.out)
    raw["variables"][0]["design"]["objective"] = None
    (tmp_path / "m.json").write_text(json.dumps(raw))
    failed = [c for c in manifest_audit(tmp_path / "m.json") if not c.passed]
    assert [(c.subject, c.field) for c in failed] == [("a", "optimality certificate")]
    assert "cannot be read as numbers" in failed[0].detail


def test_files_without_the_manifests_columns_get_a_verdict(release, tmp_path):
    other = Manifest.of({"region": randomized_response(["north", "south"], 1.0)}).write(tmp_path / "m.json")
    checks = release_audit(other, release["original"], release["released"])
    # its columns are absent, and the columns it does not name (sex, age, employment were perturbed) differ
    assert [(c.subject, c.field) for c in checks if not c.passed] == [("file", "row count and order"),
                                                                      ("region", "columns")]


def test_a_large_variable_is_reported_not_recomputed(tmp_path):
    """5 000 categories: no S x S array is built; the checks say what they did not recompute."""
    from pramkit.audit.engine import audit_variable

    big = PramMatrix.form8([0.5] * 5_000, categories=[f"area {i}" for i in range(5_000)])
    path = Manifest.of({"area": big}).write(tmp_path / "m.json")
    epsilon = next(c for c in manifest_audit(path) if c.field == "epsilon")
    assert epsilon.passed and "not recomputed" in epsilon.detail
    assert "not audited" in audit_variable(PerturbedVariable("area", big)).detail


def test_a_household_that_disagrees_is_found_without_the_shared_files(tmp_path):
    """Census persons grouped into households of three, ownership a household variable (the first
    member's); one member's released ownership changed."""
    data = census(6_000, seed=3).astype(object)
    data["hid"] = [f"h{i // 3:05d}" for i in range(len(data))]
    data["ownership"] = data.groupby("hid")["ownership"].transform("first")
    data.to_csv(tmp_path / "o.csv", index=False)
    owned = PramMatrix.form8([0.8] * 3, categories=["owned", "rented", "n/a"])
    manifest = Manifest((PerturbedVariable("ownership", owned, unit="hid"),)).write(tmp_path / "m.json")
    apply_file(tmp_path / "o.csv", manifest, tmp_path / "r.csv", key=bytes(32))
    assert all(c.passed for c in release_audit(manifest, tmp_path / "o.csv", tmp_path / "r.csv"))
    frame = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    frame.loc[4, "ownership"] = "rented" if frame.loc[4, "ownership"] != "rented" else "owned"
    frame.to_csv(tmp_path / "bad.csv", index=False)
    found = next(c for c in release_audit(manifest, tmp_path / "o.csv", tmp_path / "bad.csv")
                 if c.field == "household members agree")
    assert not found.passed and found.data["rows"] == [5]


def test_a_value_outside_its_stratum_is_found(tmp_path):
    """Marital status given the age stratum: children (0-9, 10-17) are never married, adults move
    among the six values.  One child released as divorced is a combination outside the stratum."""
    data = census(8_000, seed=5).astype(object)
    children = data["age"].isin(["0-9", "10-17"])
    data.loc[children, "marital_status"] = "never married"
    data.to_csv(tmp_path / "o.csv", index=False)
    statuses = sorted(data["marital_status"].unique())
    blocks = [PramMatrix.identity([(a, "never married")]) for a in ("0-9", "10-17")]
    blocks += [PramMatrix.form8([0.7] * 6, categories=[(a, m) for m in statuses]) for a in AGES[2:]]
    v = PerturbedVariable("marital_status", PramMatrix.block_diagonal(blocks), given=("age",))
    manifest = Manifest((v,)).write(tmp_path / "m.json")
    apply_file(tmp_path / "o.csv", manifest, tmp_path / "r.csv", key=bytes(32))
    assert all(c.passed for c in release_audit(manifest, tmp_path / "o.csv", tmp_path / "r.csv"))
    frame = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    child = int(np.flatnonzero(children.to_numpy())[2])
    frame.loc[child, "marital_status"] = "divorced"
    frame.to_csv(tmp_path / "bad.csv", index=False)
    found = next(c for c in release_audit(manifest, tmp_path / "o.csv", tmp_path / "bad.csv")
                 if c.field == "forbidden combinations")
    assert not found.passed and found.data["rows"] == [child + 1] and "outside its stratum" in found.detail


def test_rule_breakers_are_released_as_they_are(tmp_path):
    """Age and marital status perturbed jointly under the rule 'a child is never married', with the
    records that break it kept (``rule_breaking="keep"``); one of them changed is found by row."""
    import random

    from pramkit.release.pipeline import design_release

    data = census(8_000, seed=9).astype(object)
    children = np.flatnonzero(data["age"].isin(["0-9"]).to_numpy())
    data.loc[children, "marital_status"] = "never married"
    data.loc[children[:4], "marital_status"] = "divorced"          # rule breakers
    data.to_csv(tmp_path / "o.csv", index=False)
    (tmp_path / "rules.csv").write_text(
        'age,marital_status\n0-9,"married, spouse present|married, spouse absent|separated|divorced|widowed"\n')
    manifest = design_release(data, ["age", "marital_status"], epsilon=3.0, split="joint",
                              forbid=tmp_path / "rules.csv", rule_breaking="keep", rng=random.Random(2))
    path = manifest.write(tmp_path / "m.json")
    apply_file(tmp_path / "o.csv", path, tmp_path / "r.csv", key=bytes(32))
    checks = release_audit(path, tmp_path / "o.csv", tmp_path / "r.csv")
    assert [c.line() for c in checks if not c.passed] == []
    assert any(c.field == "rule breakers unchanged" for c in checks)
    frame = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    frame.loc[children[1], "marital_status"] = "widowed"
    frame.to_csv(tmp_path / "bad.csv", index=False)
    found = next(c for c in release_audit(path, tmp_path / "o.csv", tmp_path / "bad.csv")
                 if c.field == "rule breakers unchanged")
    assert not found.passed and found.data["rows"] == [int(children[1]) + 1]


def test_a_derived_release_passes_and_a_lowered_composed_epsilon_fails(tmp_path: Path) -> None:
    """A public-use file derived from a scientific-use file (``derive_release``) on the census with missing
    values: its stated epsilon is the composed law's, which the audit recomputes as the product of the two
    integer laws (randomized response keeping 3/4 twice keeps 5/8 exactly: log(5/3)), and the engine audit
    checks the second step's draws against that step's own epsilon. A manifest stating less fails."""
    from fractions import Fraction

    from pramkit.audit.engine import engine_audit
    from pramkit.audit.ratios import composed_ratio
    from pramkit.release.choices import DesignChoices
    from pramkit.release.derive import derive_release

    rr = PramMatrix.form8([0.75, 0.75], categories=["f", "m"])
    assert composed_ratio(rr, rr) == Fraction(5, 8) / Fraction(3, 8)  # by hand: 3/4 3/4 + 1/4 1/4 = 5/8
    data = census(2_000, seed=5)
    data.loc[data.index[::41], "sex"] = None
    suf = DesignChoices(epsilon=3.0).release(data, ["sex", "marital_status"]).manifest.write(tmp_path / "suf.json")
    puf = derive_release(suf, 1.0).manifest
    path = puf.write(tmp_path / "puf.json")
    checks = manifest_audit(path)
    epsilon = [c for c in checks if c.field.startswith("epsilon")]
    assert epsilon and all(c.passed for c in epsilon), [c.detail for c in epsilon if not c.passed]
    assert all(c.passed for c in engine_audit(Manifest.read(path), trials=20_000))
    raw = json.loads(path.read_text())
    raw["variables"][0]["epsilon"] = raw["variables"][0]["epsilon"] / 2
    (tmp_path / "lowered.json").write_text(json.dumps(raw))
    failed = [c for c in manifest_audit(tmp_path / "lowered.json") if not c.passed]
    assert any(c.field == "epsilon" and "below the exact epsilon" in c.detail for c in failed)


def test_a_manifest_altered_after_apply_is_audited_with_its_release(tmp_path: Path) -> None:
    """The census (missing sexes) released with a manifest whose epsilon is then lowered: with the released
    file the audit still lists its checks (the epsilon fails, and the receipt does not name the altered file)
    instead of stopping at the manifest's own validation."""
    data = census(1_500, seed=9)
    data.loc[data.index[::29], "sex"] = None
    data.to_csv(tmp_path / "original.csv", index=False)
    Manifest.of({"sex": randomized_response(["female", "male"], 1.0)}).write(tmp_path / "m.json")
    apply_file(tmp_path / "original.csv", tmp_path / "m.json", tmp_path / "released.csv", key=bytes(32),
               quiet=True)
    raw = json.loads((tmp_path / "m.json").read_text())
    raw["variables"][0]["epsilon"] = 0.5
    (tmp_path / "m.json").write_text(json.dumps(raw, indent=2))
    failed = {c.field for c in manifest_audit(tmp_path / "m.json", tmp_path / "released.csv") if not c.passed}
    assert {"epsilon", "manifest sha256"} <= failed, failed


def test_the_key_check_reads_missing_codes_as_the_design_did(tmp_path: Path) -> None:
    """eusilc's economic status with -9 written for missing: designed and applied with ``--na-values -9``,
    the release derived again with the key equals the released file byte for byte (it was derived with the
    default "NA" and failed)."""
    from conftest import SDC_DATA

    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    frame = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", usecols=["pl030", "rb090"], dtype=str).head(3_000)
    frame["pl030"] = frame["pl030"].fillna("-9")
    frame.to_csv(tmp_path / "original.csv", index=False)
    (tmp_path / "key").write_bytes(bytes(range(32)))
    assert main(["design", str(tmp_path / "original.csv"), "--vars", "pl030", "--method", "dp", "--epsilon", "2",
                 "--na-values", "-9", "--out", str(tmp_path / "m.json"), "--quiet"]) == 0
    assert main(["apply", str(tmp_path / "original.csv"), "--manifest", str(tmp_path / "m.json"), "--out",
                 str(tmp_path / "released.csv"), "--key-file", str(tmp_path / "key"), "--na-values", "-9",
                 "--quiet"]) == 0
    checks = release_audit(tmp_path / "m.json", tmp_path / "original.csv", tmp_path / "released.csv",
                           key=tmp_path / "key")
    keyed = [c for c in checks if c.field == "derived again with the key"]
    assert keyed and keyed[0].passed, keyed
