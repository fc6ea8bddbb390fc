"""Every surface states one guarantee, word for word, and every sentence of it is true of the release.

One release is made through the workbench (the objects the app's pages render), applied again with
``pramkit apply`` and exported with both reports; the ledger's headline, coverage and sentence
(:func:`pramkit.ledger.release_guarantee`) must appear verbatim on the app's design page, its Export
step, in ``apply``'s output and in the internal and the public report; for a stratified release, each
variable's epsilon ("local inf; E given the structure", E recomputed here from the matrix's blocks) reads the
same on the design page, in ``inspect`` and ``inspect --json`` and in both reports.  A property test then
generates small releases (strata, blocks of one value, uniform blocks, identity rows, rules broken,
missing values, columns left unperturbed) and checks each sentence against the matrices and the
released file.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pramkit.cli import main
from pramkit.datasets import census
from pramkit.engine.perturb import perturb_frame
from pramkit.kernel.rng import SecretKey
from pramkit.ledger import ALL_COVERED, GIVEN_STRUCTURE, Ledger, release_guarantee
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix
from pramkit.release.choices import DesignChoices
from pramkit.workbench.session import Workbench

KEY = SecretKey(bytes(range(3, 35)), "test key")


def page_text(path: Path) -> str:
    """A report's text with its tags removed and its entities decoded (what a reader sees)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))).replace("  ", " ")


def surfaces(wb: Workbench, tmp: Path) -> dict[str, str]:
    """What each surface shows of the release of ``wb``: the design page and the Export step (the
    view objects the app renders), ``pramkit apply``'s output, the internal and the public report."""
    view = wb.designed.view
    wb.apply(KEY)
    export = wb.export(tmp / "export", confirmed=True)
    key_file = tmp / "key"
    key_file.write_text(KEY.text())
    key_file.chmod(0o600)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["apply", str(wb.source.path), "--manifest", str(export.out / "public" / "manifest.json"),
                     "--out", str(tmp / "again.csv"), "--key-file", str(key_file)])
    assert code == 0
    return {"design page": f"{view.guarantee}\n{view.headline}\n{view.coverage}",
            "export step": view.coverage, "apply": out.getvalue(),
            "internal report": page_text(export.out / "private" / "report.html"),
            "public report": page_text(export.out / "public" / "report.html")}


def assert_one_guarantee(wb: Workbench, tmp: Path) -> None:
    """The ledger's three statements appear verbatim on every surface, and no surface states another figure."""
    stated = wb.designed.view.stated
    shown = surfaces(wb, tmp)
    for where, text in shown.items():
        flat = " ".join(text.split())
        assert " ".join(stated.coverage.split()) in flat, where
        if where != "export step":
            assert " ".join(stated.headline.split()) in flat, where
            assert " ".join(stated.sentence.split()) in flat, where
        assert "record epsilon: inf" not in flat and "record epsilon inf" not in flat, where
    assert stated.covered == (stated.coverage == ALL_COVERED)


def components(dense: np.ndarray) -> list[list[int]]:
    """The blocks of a matrix: categories linked by a positive entry either way (what a record's block shows)."""
    parent = list(range(len(dense)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i, j in zip(*np.nonzero(dense)):
        parent[root(int(i))] = root(int(j))
    groups: dict[int, list[int]] = {}
    for i in range(len(dense)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def assert_one_variable_epsilon(wb: Workbench, tmp: Path) -> None:
    """After :func:`assert_one_guarantee`: each perturbed variable's epsilon is stated in the same words on the
    design page, by ``pramkit inspect`` (text and JSON) and in both reports: its local epsilon, infinite (its
    matrix mixes zeros and positives in a column), and its epsilon given the structure, the largest over the
    matrix's blocks (computed here from the doubles), never a bare figure."""
    manifest_file = tmp / "export" / "public" / "manifest.json"
    manifest = Manifest.read(manifest_file)
    text = run_cli(["inspect", str(manifest_file)])
    described = {v["name"]: v for v in json.loads(run_cli(["inspect", str(manifest_file), "--json"]))["variables"]}
    reports = {name: " ".join(page_text(tmp / "export" / folder / "report.html").split())
               for name, folder in (("public report", "public"), ("internal report", "private"))}
    ledger = wb.designed.view.ledger.set_index("variable")
    for v in manifest.variables:
        dense = v.matrix.matrix
        assert log_ratio(dense) == math.inf
        given = max(log_ratio(dense[np.ix_(b, b)]) for b in components(dense))
        words = ledger.loc[v.name, "epsilon"]                               # the design page
        shown = re.fullmatch(r"local inf; ([0-9.]+) given the structure", words)
        assert shown and given <= float(shown.group(1)) <= given * (1 + 1e-3), words   # rounded up
        assert described[v.name]["epsilon_stated"] == words                  # inspect --json
        assert f"(epsilon {words})" in text                                  # inspect
        for where, page in reports.items():
            assert f"{v.name} {v.matrix.size} {words}" in page, where        # the privacy ledger's row
            assert f"person {words}" in page, where                          # the structure's row
            assert f"{v.name} {v.matrix.size} infinite" not in page, where


def test_census_stratified_with_a_rule_states_one_guarantee(tmp_path: Path) -> None:
    """Census persons, marital status within age strata, the rule 'age 0-9 is never married': the
    guarantee is given the structure on every surface, names the nine columns released as they are,
    and claims no value never changed ('never married' changes at every other age)."""
    wb = Workbench(tmp_path / "work")
    wb.open_census(rows=4_000)
    rules = tmp_path / "rules.csv"
    pd.DataFrame({"age": ["0-9"], "marital_status": [
        "married, spouse present|married, spouse absent|separated|divorced|widowed"]}).to_csv(rules, index=False)
    wb.design(["marital_status"], DesignChoices(epsilon=3.0, strata="age", forbid=rules))
    stated = wb.designed.view.stated
    columns = list(census(10).columns)
    others = [c for c in columns if c not in ("age", "marital_status")]
    assert stated.given_structure and stated.figure.endswith(GIVEN_STRUCTURE) and math.isfinite(stated.record_epsilon)
    assert stated.unperturbed == tuple(others) and not stated.covered
    assert all(c in stated.coverage and c in stated.sentence for c in others)
    assert "never changes" not in stated.sentence           # every age but 0-9 moves 'never married'
    assert_one_guarantee(wb, tmp_path)
    assert_one_variable_epsilon(wb, tmp_path)
    original = pd.read_csv(wb.source.path, dtype=str, keep_default_na=False)
    again = pd.read_csv(tmp_path / "again.csv", dtype=str, keep_default_na=False)
    married = original["marital_status"] == "never married"
    assert ((again["marital_status"] != "never married") & married & (original["age"] != "0-9")).any()
    assert (again[others] == original[others]).all().all()  # the columns the sentence names are as they were


def test_eusilc_with_kept_codes_states_one_guarantee(sdc_data: Path, tmp_path: Path) -> None:
    """EU-SILC (laeken's synthetic file): economic status with the code n/a kept, within sex strata,
    missing values of age banded in: the same three statements on every surface, 'n/a' claimed never
    changed, and it never changes in the released file."""
    raw = pd.read_csv(sdc_data / "eusilc_laeken.csv")
    frame = pd.DataFrame({"db030": raw["db030"].astype(str), "db040": raw["db040"], "rb090": raw["rb090"],
                          "age": pd.cut(raw["age"], [-2, 15, 64, 200], labels=["0-15", "16-64", "65+"]).astype(str),
                          "pl030": raw["pl030"].map(lambda v: "n/a" if pd.isna(v) else str(int(v)))})
    path = tmp_path / "eusilc.csv"
    frame.to_csv(path, index=False)
    wb = Workbench(tmp_path / "work")
    wb.open_file(path)
    wb.design(["pl030"], DesignChoices(epsilon=4.0, strata="rb090", keep_codes="pl030=n/a"))
    stated = wb.designed.view.stated
    kept = [f for f in stated.facts if f.kind == "kept_code"]
    assert [f.values for f in kept] == [("n/a",)] and not kept[0].strata
    assert stated.unperturbed == ("db030", "db040", "age") and stated.given_structure
    assert_one_guarantee(wb, tmp_path)
    assert_one_variable_epsilon(wb, tmp_path)
    again = pd.read_csv(tmp_path / "again.csv", dtype=str, keep_default_na=False)
    assert ((again["pl030"] == "n/a") == (frame["pl030"] == "n/a")).all()


# --- the property test ---------------------------------------------------------------------------

VALUES = ["a", "b", "c", "d"]


@st.composite
def releases(draw: st.DrawFn) -> tuple[Manifest, pd.DataFrame, list[str]]:
    """A small release: a variable within 0 to 3 strata, each stratum's allowed values cut into blocks
    (a block of one value, a uniform block, randomized response, or a dense block with an identity row),
    missing values, records that break the rules (kept or not), and 0 to 2 columns left unperturbed."""
    n_strata = draw(st.integers(0, 3))
    strata = [f"s{i}" for i in range(n_strata)] or [None]
    cells, parts, kinds = [], [], []
    for s in strata:
        allowed = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=4, unique=True))
        cut = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
        start = 0
        while start < len(allowed):
            size = min(cut[len(kinds) % len(cut)], len(allowed) - start)
            block = allowed[start:start + size]
            start += size
            labels = [(s, v) if s is not None else v for v in block]
            kind = "one" if size == 1 else draw(st.sampled_from(["uniform", "rr", "identity_row"]))
            if kind == "one":
                m = PramMatrix.identity(labels)
            elif kind == "uniform":
                m = PramMatrix.form8(np.full(size, 1 / size), np.full(size, 1 / size), categories=labels)
            elif kind == "rr":
                q = draw(st.floats(1 / size + 0.05, 0.95))
                m = PramMatrix.form8(np.full(size, q), categories=labels)
            else:
                dense = np.full((size, size), 1.0 / size)
                dense[0] = 0.0
                dense[0, 0] = 1.0
                m = PramMatrix(dense, labels)
            cells += labels
            parts.append(m)
            kinds.append(kind)
    matrix = PramMatrix.block_diagonal(parts, cells) if len(parts) > 1 else parts[0]
    given = ("g",) if strata != [None] else ()
    variable = PerturbedVariable("v", matrix, given=given)
    keep_breakers = draw(st.booleans())
    extra = draw(st.lists(st.sampled_from(["id", "income"]), max_size=2, unique=True))
    manifest = Manifest((variable,), input={"structure": {"rule_breaking": "keep" if keep_breakers else "error"}},
                        ledger=Ledger(frequencies="none"))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows = [cells[i] for i in rng.integers(0, len(cells), 300)]
    frame = pd.DataFrame({"g": [r[0] for r in rows], "v": [r[1] for r in rows]} if given else {"v": rows})
    frame.loc[rng.random(len(frame)) < 0.1, "v"] = None                 # missing values stay missing
    if keep_breakers and given:
        known = sorted({c[1] for c in cells})                          # a value no cell holds is not a rule breaker
        absent = [(s, x) for s in strata for x in known if (s, x) not in cells]
        for i, cell in enumerate(absent[:5]):                           # records outside every cell
            frame.loc[len(frame)] = {"g": cell[0], "v": cell[1]}
    for c in extra:
        frame[c] = np.arange(len(frame)).astype(str)
    return manifest, frame, kinds


def singleton(matrix: PramMatrix, k: int) -> bool:
    """M[k, k] = 1 and nothing else moves into k (exactly, on the matrix's doubles)."""
    dense = matrix.matrix
    return dense[k, k] == 1.0 and np.count_nonzero(dense[:, k]) == 1


def log_ratio(block: np.ndarray) -> float:
    """The epsilon of one block from its doubles, computed with fractions (independent of the engine)."""
    worst = Fraction(1)
    for j in range(block.shape[1]):
        col = [Fraction(float(x)) for x in block[:, j]]
        if max(col) > 0 and min(col) == 0:
            return math.inf
        if max(col) > 0:
            worst = max(worst, max(col) / min(col))
    return math.log(worst) if worst != 1 else 0.0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(releases())
def test_every_sentence_is_true_of_the_matrices_and_the_file(release: tuple) -> None:
    manifest, frame, kinds = release
    variable = manifest["v"]
    stated = release_guarantee(manifest, list(frame.columns))
    released = perturb_frame(frame, manifest, key=KEY).data
    cats = list(variable.matrix.categories)
    g = len(variable.given)
    own = [c[g] if g else c for c in cats]
    stratum = [c[:g] for c in cats] if g else [()] * len(cats)
    facts = {f.kind: f for f in stated.facts}

    # values claimed never changed: a block of one in every stratum (or in the strata named), in the file too
    for fact in (f for f in stated.facts if f.kind == "kept_code"):
        for x in fact.values:
            where = [k for k, o in enumerate(own) if o == x and (not fact.strata or stratum[k] in fact.strata)]
            assert where and all(singleton(variable.matrix, k) for k in where), fact.reveals
            if not fact.strata:
                in_cells = frame["v"].isin([x]) & (frame["g"].isin([s[0] for s in stratum]) if g else True)
                assert (released.loc[in_cells, "v"] == x).all()
    # and every value no stratum moves (shown by some stratum of two blocks or more) is claimed
    never = {x for x in own if all(singleton(variable.matrix, k) for k, o in enumerate(own) if o == x)}
    claimed = {x for f in stated.facts if f.kind == "kept_code" and not f.strata for x in f.values}
    assert claimed <= never
    # what is shown exactly is a fact exactly when the release does it
    assert ("stratum" in facts) == bool(g)
    assert ("missing" in facts) and (released["v"].isna() == frame["v"].isna()).all()
    breaks = manifest.input["structure"]["rule_breaking"] == "keep"
    assert ("rule_breaker" in facts) == breaks
    if g:
        assert (released["g"] == frame["g"]).all()
    # columns released as they are: named, equal in the file; "covered" only when nothing escapes
    extra = [c for c in frame.columns if c not in ("g", "v")]
    assert stated.unperturbed == tuple(extra)
    for c in extra:
        assert c in stated.coverage and c in stated.sentence and (released[c] == frame[c]).all()
    assert stated.covered == (not extra and not stated.facts and not stated.data_dependent)
    assert stated.covered is False        # missing values stay missing: at least that is shown exactly
    # each fact is in the sentence and in the coverage
    for fact in stated.facts:
        assert fact.reveals in stated.coverage
        assert fact.reveals in stated.sentence or fact.reveals[0].upper() + fact.reveals[1:] in stated.sentence
    # the figure: infinite exactly when a block has an identity row beside others; 0 only for uniform blocks
    blocks = variable.matrix.blocks or [(np.arange(len(cats)), variable.matrix)]
    exact = max(log_ratio(part.matrix) for _, part in blocks)
    assert stated.record_epsilon >= exact * (1 - 1e-14)  # outward, up to the rounding of this log itself
    assert math.isinf(stated.record_epsilon) == ("identity_row" in kinds)
    assert (stated.record_epsilon == 0.0) == all(k in ("one", "uniform") for k in kinds)
    assert stated.figure.endswith(GIVEN_STRUCTURE) == (len(blocks) > 1)
    assert ("e^inf" in stated.sentence) is False


# --- the command line: words that were false ------------------------------------------------------

@pytest.fixture
def census_files(tmp_path: Path) -> dict[str, Path]:
    """The census as CSV with its codebook, the rule 'age 0-9 is never married', five children who break it."""
    from pramkit.datasets import CENSUS_VARIABLES

    data = census(20_000).astype(str)
    children = data.index[data["age"] == "0-9"][:5]
    data.loc[children, "marital_status"] = "divorced"
    files = {"data": tmp_path / "census.csv", "codebook": tmp_path / "codebook.csv", "rules": tmp_path / "rules.csv"}
    data.to_csv(files["data"], index=False)
    pd.DataFrame([(v, c) for v, cs in CENSUS_VARIABLES.items() for c in cs],
                 columns=["variable", "category"]).to_csv(files["codebook"], index=False)
    pd.DataFrame({"age": ["0-9"], "marital_status": [
        "married, spouse present|married, spouse absent|separated|divorced|widowed"]}).to_csv(files["rules"], index=False)
    return files


def run_cli(args: list[str]) -> str:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(args) == 0
    return out.getvalue()


def test_optimal_split_says_released_exactly(census_files: dict[str, Path], tmp_path: Path) -> None:
    """A variable the optimal split leaves unperturbed is 'released exactly', never 'epsilon = 0', and the
    guarantee names it among the columns released as they are."""
    out = run_cli(["design", str(census_files["data"]), "--vars", "age,sex,marital_status", "--split", "optimal",
                   "--epsilon", "0.5", "--categories", str(census_files["codebook"]), "--out", str(tmp_path / "m.json")])
    manifest = Manifest.read(tmp_path / "m.json")
    left = [n for n in ("age", "sex", "marital_status") if n not in manifest.names]
    assert left, "the optimal split perturbs every variable here: the test needs one it leaves out"
    assert "epsilon = 0," not in out and "epsilon = 0\n" not in out
    for n in left:
        assert f"{n}: released exactly (not perturbed)" in out
    stated = release_guarantee(manifest, list(pd.read_csv(census_files["data"], nrows=1).columns))
    assert all(n in stated.unperturbed for n in left) and stated.headline in out and stated.sentence in out
    record = json.loads(run_cli(["design", str(census_files["data"]), "--vars", "age,sex,marital_status", "--split",
                                 "optimal", "--epsilon", "0.5", "--categories", str(census_files["codebook"]),
                                 "--out", str(tmp_path / "again.json"), "--json"]))
    for n in left:  # no epsilon covers a variable released exactly: null, never 0
        assert record["epsilons"][n] is None and record["per_variable"][n]["epsilon"] is None
        assert record["per_variable"][n]["released_exactly"] is True
    assert all(record["epsilons"][n] > 0 for n in manifest.names)


def test_risk_contributions_state_the_ledger_headline(census_files: dict[str, Path], tmp_path: Path) -> None:
    """``risk --contributions`` leads its epsilon shares with the ledger's headline (the figure and what it
    counts), not a bare record epsilon of its own."""
    run_cli(["design", str(census_files["data"]), "--vars", "marital_status,sex", "--epsilon", "2",
             "--categories", str(census_files["codebook"]), "--out", str(tmp_path / "m.json"), "--quiet"])
    key = tmp_path / "key"
    key.write_text(KEY.text())
    key.chmod(0o600)
    run_cli(["apply", str(census_files["data"]), "--manifest", str(tmp_path / "m.json"), "--out",
             str(tmp_path / "r.csv"), "--key-file", str(key), "--quiet"])
    out = run_cli(["risk", str(tmp_path / "r.csv"), "--keys", "marital_status,sex", "--contributions", "--manifest",
                   str(tmp_path / "m.json"), "--original", str(census_files["data"]), "--sampling-fraction", "0.1"])
    stated = release_guarantee(Manifest.read(tmp_path / "m.json"), list(pd.read_csv(tmp_path / "r.csv", nrows=1)))
    assert "design step" in stated.headline
    assert any(line.startswith(f"{stated.headline}; its shares: ") for line in out.splitlines()), out


def test_apply_counts_rule_breakers_apart_from_missing_values(census_files: dict[str, Path], tmp_path: Path) -> None:
    """Five children who break the rule, kept: apply says five rule breakers, and no missing value."""
    run_cli(["design", str(census_files["data"]), "--vars", "age,marital_status", "--split", "joint", "--forbid",
             str(census_files["rules"]), "--rule-breaking", "keep", "--epsilon", "3", "--categories",
             str(census_files["codebook"]), "--out", str(tmp_path / "m.json"), "--quiet"])
    key = tmp_path / "key"
    key.write_text(KEY.text())
    key.chmod(0o600)
    out = run_cli(["apply", str(census_files["data"]), "--manifest", str(tmp_path / "m.json"), "--out",
                   str(tmp_path / "r.csv"), "--key-file", str(key)])
    line = next(x for x in out.splitlines() if x.strip().startswith("age*marital_status:"))
    assert "0 records missing one of age, marital_status" in line
    assert "5 records that break an edit rule released unperturbed" in line and "5 missing" not in line
    original = pd.read_csv(census_files["data"], dtype=str, keep_default_na=False)
    released = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    broken = (original["age"] == "0-9") & (original["marital_status"] == "divorced")
    assert broken.sum() == 5 and (released[broken] == original[broken]).all().all()
