"""Every value a release shows exactly is named by the ledger, or it went through the stated matrix.

The invariant of docs/privacy.md ("What the release reveals about each kind of value"): for every
record and every perturbed column, the released value either passed through the manifest's matrix
(the released cell has positive probability in the original cell's row, or in the row of the
margin over the present columns), or the ledger's facts (:attr:`pramkit.Manifest.exact_facts`)
name it as released exactly.  Checked on EU-SILC (children have no economic status) and on
generated files with missing values, odd labels, rules, strata and households; the checker
itself is checked on a release it must reject.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import io
import json
import random
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from scipy import stats

from pramkit import Manifest, design_release, perturb_frame
from pramkit.cli import main
from pramkit.codebook import canonical

AGE_BANDS = ["0-15", "16-24", "25-34", "35-44", "45-54", "55-64", "65+"]
MISSING_TEXTS = ("", "NA")


# -- the checker ------------------------------------------------------------------------------------


def _value(text: object) -> str | None:
    """A value of a CSV read as text: ``None`` when missing (the empty field, ``NA``)."""
    if text is None or (isinstance(text, float) and np.isnan(text)) or text in MISSING_TEXTS:
        return None
    return canonical(text)


def violations(original: pd.DataFrame, released: pd.DataFrame, manifest: Manifest) -> list[str]:
    """Records whose released values neither went through the matrix nor are named by the ledger.

    Computed from the matrices' dense entries and the facts' kinds only: a released cell must have a
    positive probability in its original cell's row; a record missing some columns of a joint
    variable keeps them missing and has its present values reachable from a cell that agrees on them.
    """
    named = {(f.kind, v) for f in manifest.exact_facts for v in f.variables}
    out = []
    for v in manifest.variables:
        cats = [tuple(canonical(x) for x in (c if isinstance(c, tuple) else (c,))) for c in v.matrix.categories]
        index = {c: i for i, c in enumerate(cats)}
        dense = v.matrix.matrix
        g = len(v.given)
        for r in range(len(original)):
            o = tuple(_value(original.at[r, c]) for c in v.read_columns)
            z = tuple(_value(released.at[r, c]) for c in v.read_columns)
            if z[:g] != o[:g]:
                out.append(f"{v.name} row {r}: a stratum changed")
            elif o in index:
                if z not in index or dense[index[o], index[z]] <= 0:
                    out.append(f"{v.name} row {r}: {o} -> {z} has probability 0")
            elif any(x is None for x in o[:g]):
                if z != o or ("stratum_missing", v.name) not in named:
                    out.append(f"{v.name} row {r}: missing stratum, released {z} for {o} unnamed")
            elif all(x is not None for x in o[g:]):  # a combination outside the cells: a rule breaker kept
                if z != o or ("rule_breaker", v.name) not in named:
                    out.append(f"{v.name} row {r}: rule breaker {o} released as {z} unnamed")
            elif len(v.columns) == 1:
                if z != o or ("missing", v.name) not in named:
                    out.append(f"{v.name} row {r}: missing value released as {z} unnamed")
            else:
                present = [i for i, x in enumerate(o) if x is not None]
                if ("joint_missing", v.name) not in named or any(z[i] is not None for i, x in enumerate(o)
                                                                 if x is None):
                    out.append(f"{v.name} row {r}: missing columns of {o} released as {z} unnamed")
                    continue
                rows = [index[c] for c in cats if all(c[i] == o[i] for i in present)]
                cols = [index[c] for c in cats if all(c[i] == z[i] for i in present)]
                if not rows:  # the present values are in no cell: they break a rule, kept
                    if z != o or ("rule_breaker", v.name) not in named:
                        out.append(f"{v.name} row {r}: rule breaker {o} released as {z} unnamed")
                elif len(present) > g and not (cols and dense[np.ix_(rows, cols)].max() > 0):
                    out.append(f"{v.name} row {r}: present values of {o} cannot become {z}")
                if len(present) == g and z != o:
                    out.append(f"{v.name} row {r}: every own column missing, yet {o} became {z}")
    return out


def _as_text(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype(object).where(frame.notna(), None).reset_index(drop=True)


# -- EU-SILC: children have no economic status (pl030) -------------------------------------------------


@pytest.fixture
def eusilc(sdc_data: Path) -> pd.DataFrame:
    raw = pd.read_csv(sdc_data / "eusilc_laeken.csv")
    bands = pd.cut(raw["age"], [-2, 15, 24, 34, 44, 54, 64, 200], labels=AGE_BANDS).astype(str)
    pl030 = raw["pl030"].astype("Int64").astype(str).replace("<NA>", None)
    return pd.DataFrame({"age": bands, "rb090": raw["rb090"].astype(str), "pl030": pl030,
                         "db030": raw["db030"], "db040": raw["db040"]})


RULES = [{"age": "0-15", "pl030": "1|2|3"}]  # a child is not working (the definitions, not the data)


def _margin_expectation(manifest: Manifest, band: str) -> np.ndarray:
    """Released age of a record with age ``band`` and pl030 missing, from the joint matrix's entries:
    the average of the rows of its cells, summed over released pl030."""
    v = manifest.variables[0]
    cats = v.matrix.categories
    dense = v.matrix.matrix
    rows = [i for i, c in enumerate(cats) if c[0] == band]
    return np.array([dense[np.ix_(rows, [j for j, c in enumerate(cats) if c[0] == b])].sum() / len(rows)
                     for b in AGE_BANDS])


def test_eusilc_no_child_age_released_exactly_unless_the_ledger_says_so(eusilc, key) -> None:
    children = eusilc["pl030"].isna()
    assert children.sum() == 2720 and (eusilc.loc[children, "age"] == "0-15").all()
    categories = {"age": AGE_BANDS, "pl030": [str(k) for k in range(1, 8)]}
    m = design_release(eusilc, ["age", "pl030"], split="joint", forbid=RULES, epsilon=6.0, categories=categories,
                       rng=random.Random(27))
    kinds = {f.kind: f for f in m.exact_facts}
    assert "joint_missing" in kinds and "which of age, pl030 are missing" in m.guarantee
    assert m.to_dict()["ledger"]["statement"] == m.guarantee
    released = perturb_frame(eusilc, m, key=key).data
    assert released.loc[children, "pl030"].isna().all()  # missingness is what the ledger names
    # the children's ages go through the margin: not released exactly, and distributed as the matrix says
    counts = released.loc[children, "age"].value_counts().reindex(AGE_BANDS, fill_value=0).to_numpy()
    expected = _margin_expectation(m, "0-15")
    assert counts[0] < children.sum() and expected[0] < 1
    assert stats.chisquare(counts[expected > 0], expected[expected > 0] * counts.sum()).pvalue > 1e-4
    assert counts[expected == 0].sum() == 0
    assert violations(_as_text(eusilc), _as_text(released), m) == []


def test_eusilc_missing_as_a_category_of_a_joint_design(eusilc, key) -> None:
    categories = {"age": AGE_BANDS, "pl030": [str(k) for k in range(1, 8)]}
    m = design_release(eusilc, ["age", "pl030"], split="joint", epsilon=6.0, categories=categories,
                       missing="category", rng=random.Random(28))
    v = m.variables[0]
    assert v.missing == "category" and ("0-15", None) in v.matrix.categories and len(v.matrix.categories) == 64
    assert not {"missing", "joint_missing"} & {f.kind for f in m.exact_facts}
    assert not m.guarantee.startswith("The released file shows exactly")
    back = Manifest.from_dict(json.loads(m.to_json()))
    assert back == m and back.guarantee == m.guarantee
    released = perturb_frame(eusilc, m, key=key).data
    children = eusilc["pl030"].isna()
    assert 0 < (released.loc[children, "age"] != "0-15").sum() and released.loc[~children, "pl030"].isna().any()
    assert violations(_as_text(eusilc), _as_text(released), m) == []


def test_eusilc_kept_rule_breakers_and_households_one_sentence_everywhere(eusilc, tmp_path: Path) -> None:
    """The sentence the manifest stores is the one ``design``, ``inspect`` and both reports print."""
    frame = eusilc.copy()
    breakers = list(frame.index[frame["age"] == "0-15"][:2])
    frame.loc[breakers, "pl030"] = "1"        # two children made to break the rule
    frame.loc[frame["age"] == "0-15", "pl030"] = frame.loc[frame["age"] == "0-15", "pl030"].fillna("n/a")
    data = tmp_path / "eusilc.csv"
    frame.to_csv(data, index=False)
    rules = tmp_path / "rules.csv"
    pd.DataFrame(RULES).to_csv(rules, index=False)
    before = hashlib.sha256(data.read_bytes()).hexdigest()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["design", str(data), "--vars", "db040,age,pl030", "--household", "db030",
                     "--household-vars", "db040", "--keep-codes", "pl030=n/a", "--forbid", str(rules),
                     "--rule-breaking", "keep", "--epsilon", "6", "--out", str(tmp_path / "m.json"), "--quiet"]) == 2
    # a rule coupling age and pl030 needs a joint design: households refuse it; without households:
    with contextlib.redirect_stdout(out):
        code = main(["design", str(data), "--vars", "age,pl030", "--split", "joint", "--forbid", str(rules),
                     "--rule-breaking", "keep", "--epsilon", "6", "--out", str(tmp_path / "m.json"), "--quiet"])
    assert code == 0
    manifest = json.loads((tmp_path / "m.json").read_text())
    statement = manifest["ledger"]["statement"]          # of the manifest alone: columns not perturbed in general
    others = [c for c in frame.columns if c not in ("age", "pl030")]
    named = statement.replace("Columns that are not perturbed are released as they are: no epsilon covers them.",
                              f"The columns {', '.join(others[:-1])} and {others[-1]} are released as they are "
                              "(not perturbed): no epsilon covers them.")
    assert named != statement and named in out.getvalue()  # the design names the data's other columns
    assert "Records that break an edit rule are released unperturbed: no epsilon covers them." in statement
    assert {f["kind"] for f in manifest["ledger"]["released_exactly_facts"]} >= {"rule_breaker", "joint_missing"}
    inspected = io.StringIO()
    with contextlib.redirect_stdout(inspected):
        assert main(["inspect", str(tmp_path / "m.json")]) == 0
    assert statement in inspected.getvalue() and "shown exactly (rule_breaker)" in inspected.getvalue()
    statement = named                                      # a released file's surfaces know its columns
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["keygen", str(tmp_path / "k.key")]) == 0
        assert main(["apply", str(data), "--manifest", str(tmp_path / "m.json"), "--out",
                     str(tmp_path / "released.csv"), "--key-file", str(tmp_path / "k.key"), "--quiet"]) == 0
        assert main(["report", str(data), "--manifest", str(tmp_path / "m.json"), "--released",
                     str(tmp_path / "released.csv"), "--keys", "age,rb090,pl030", "--sampling-fraction", "0.01",
                     "--out", str(tmp_path / "internal.html"), "--public", str(tmp_path / "public.html")]) == 0
    for page in ("internal.html", "public.html"):
        assert html.escape(statement, quote=True) in (tmp_path / page).read_text()
    assert hashlib.sha256(data.read_bytes()).hexdigest() == before
    released = pd.read_csv(tmp_path / "released.csv", dtype=str, keep_default_na=False)
    original = pd.read_csv(data, dtype=str, keep_default_na=False)
    assert violations(original, released, Manifest.read(tmp_path / "m.json")) == []
    kept = ["age", "pl030"]
    assert (released.loc[breakers, kept].to_numpy() == original.loc[breakers, kept].to_numpy()).all()


def test_the_checker_rejects_an_unnamed_exact_release(eusilc, key) -> None:
    """A release that leaves a joint record with a missing column as it is, while its facts do not
    say so, is caught (the behaviour pramkit had)."""
    categories = {"age": AGE_BANDS, "pl030": [str(k) for k in range(1, 8)]}
    m = design_release(eusilc.head(400), ["age", "pl030"], split="joint", epsilon=2.0, categories=categories,
                       rng=random.Random(3))
    original = _as_text(eusilc.head(400))
    released = _as_text(perturb_frame(eusilc.head(400), m, key=key).data)
    assert violations(original, released, m) == []
    tampered = released.copy()
    child = int(np.flatnonzero(original["pl030"].isna())[0])
    tampered.at[child, "pl030"] = "1"  # a missing value released as present: no matrix row allows it
    assert any("missing columns" in x for x in violations(original, tampered, m))
    adult = int(np.flatnonzero(original["pl030"].notna())[0])
    tampered = released.copy()
    tampered.at[adult, "pl030"] = None
    assert any("probability 0" in x for x in violations(original, tampered, m))


# -- generated files -----------------------------------------------------------------------------------

#: Labels with whitespace and Unicode variants (é composed and decomposed, a comma, a slash).
ODD = ["x", "y z", "\u00e9", "e\u0301", "\u03a9", "a,b", "n/a", "q"]


@st.composite
def releases(draw: st.DrawFn) -> tuple[pd.DataFrame, list[str]]:
    n = draw(st.integers(12, 40))
    households = draw(st.integers(3, 8))
    labels_a = draw(st.lists(st.sampled_from(ODD), min_size=2, max_size=4, unique=True))
    labels_b = draw(st.lists(st.sampled_from(["1", "2", "3", "k"]), min_size=2, max_size=3, unique=True))
    pick = lambda labels, miss: [None if draw(st.integers(0, 9)) < miss else draw(st.sampled_from(labels))
                                 for _ in range(n)]
    h = [draw(st.integers(0, households - 1)) for _ in range(n)]
    hv = {k: draw(st.sampled_from(["r1", "r2", "r3", None])) for k in range(households)}
    frame = pd.DataFrame({"a": pick(labels_a, draw(st.integers(0, 3))), "b": pick(labels_b, draw(st.integers(0, 3))),
                          "s": pick(["s1", "s2"], draw(st.integers(0, 2))), "h": [f"h{k}" for k in h],
                          "g": [hv[k] for k in h]})
    split = draw(st.sampled_from(["equal", "joint"]))
    args = ["--split", split, "--missing", draw(st.sampled_from(["keep", "category"])),
            "--rule-breaking", draw(st.sampled_from(["error", "keep"]))]
    variables = ["a", "b"]
    if draw(st.booleans()):
        args += ["--strata", "s"]
    elif split == "equal" and draw(st.booleans()):
        args += ["--household", "h", "--household-vars", "g"]
        variables.append("g")
    if draw(st.booleans()):
        args += ["--keep-codes", f"a={draw(st.sampled_from(labels_a))}"]
    if split == "joint" and draw(st.booleans()):
        args += ["--forbid", "RULES"]
        rule = {"a": draw(st.sampled_from(labels_a)), "b": draw(st.sampled_from(labels_b))}
        frame.attrs["rule"] = rule
    return frame, ["--vars", ",".join(variables), *args]


def _run(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(args)
    return code, err.getvalue()


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(releases())
def test_every_released_value_went_through_the_matrix_or_is_named(case) -> None:
    frame, args = case
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        data = folder / "data.csv"
        frame.to_csv(data, index=False)
        if "RULES" in args:
            pd.DataFrame([frame.attrs["rule"]]).to_csv(folder / "rules.csv", index=False)
            args = [str(folder / "rules.csv") if a == "RULES" else a for a in args]
        inputs = _digests(folder)
        code, err = _run(["design", str(data), *args, "--epsilon", "3", "--out", str(folder / "m.json"), "--quiet"])
        assert code in (0, 2) and "Traceback" not in err, err
        if code == 2:
            event(f"design refused: {err.split(': error: ')[-1][:24]}")
            assert len(err.strip().splitlines()) == 1 and not (folder / "m.json").exists(), err
            assert _digests(folder) == inputs
            return
        assert _run(["keygen", str(folder / "k.key")])[0] == 0
        code, err = _run(["apply", str(data), "--manifest", str(folder / "m.json"), "--out",
                          str(folder / "released.csv"), "--key-file", str(folder / "k.key"), "--quiet"])
        assert code in (0, 2) and "Traceback" not in err, err
        assert {k: v for k, v in _digests(folder).items() if k in inputs} == inputs  # no input changed
        if code == 2:
            event(f"apply refused: {err.split(': error: ')[-1][:24]}")
            assert len(err.strip().splitlines()) == 1 and not (folder / "released.csv").exists(), err
            return
        manifest = Manifest.read(folder / "m.json")
        assert json.loads((folder / "m.json").read_text())["ledger"]["statement"] == manifest.guarantee
        original = pd.read_csv(data, dtype=str, keep_default_na=False)
        released = pd.read_csv(folder / "released.csv", dtype=str, keep_default_na=False)
        event("released and checked: " + ", ".join(sorted({f.kind for f in manifest.exact_facts})))
        assert violations(original, released, manifest) == []


# -- the margin's bound, by brute force ------------------------------------------------------------------


def _brute_margin(dense: np.ndarray, cells: list[tuple], present: tuple[int, ...]) -> tuple[list, np.ndarray]:
    """The margin by loops over cells: each row the mean over the cells that agree on ``present``."""
    labels = []
    for c in cells:
        if tuple(c[i] for i in present) not in labels:
            labels.append(tuple(c[i] for i in present))
    out = np.zeros((len(labels), len(labels)))
    for a, la in enumerate(labels):
        rows = [k for k, c in enumerate(cells) if tuple(c[i] for i in present) == la]
        for b, lb in enumerate(labels):
            cols = [j for j, c in enumerate(cells) if tuple(c[i] for i in present) == lb]
            out[a, b] = sum(dense[k, j] for k in rows for j in cols) / len(rows)
    return labels, out


def _brute_epsilon(m: np.ndarray) -> float:
    eps = 0.0
    for j in range(m.shape[1]):
        col = m[:, j]
        if (col > 0).any():
            eps = max(eps, np.inf if (col == 0).any() else float(np.log(col.max() / col.min())))
    return eps


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 3), st.integers(2, 3), st.integers(0, 2 ** 32 - 1))
def test_a_margin_of_a_matrix_without_blocks_keeps_its_epsilon(ra: int, rb: int, seed: int) -> None:
    """The reason the margins of a matrix without blocks need no computing: each margin row is a
    convex combination of the matrix's rows, so its epsilon is at most the matrix's."""
    from pramkit import PramMatrix
    from pramkit.manifest import PerturbedVariable

    cells = [(a, b) for a in range(ra) for b in range(rb)]
    dense = np.random.default_rng(seed).dirichlet(np.ones(len(cells)), size=len(cells)) * 0.5 + 0.5 * np.eye(len(cells))
    v = PerturbedVariable("a*b", PramMatrix(dense, cells), columns=("a", "b"))
    for present in v.margin_patterns():
        labels, margin = v.margin(present)
        brute_labels, brute = _brute_margin(dense, cells, present)
        assert labels == brute_labels and np.allclose(margin.matrix, brute)
        assert _brute_epsilon(brute) <= _brute_epsilon(dense) * (1 + 1e-12)
    assert v.epsilon_given_shown == v.block_epsilon


def test_a_margin_that_mixes_a_kept_code_is_bounded_by_its_own_epsilon(eusilc) -> None:
    """Status ``n/a`` kept: a record whose status is missing gets its age from rows of both blocks."""
    from pramkit import PramMatrix
    from pramkit.manifest import PerturbedVariable

    cells = [(a, s) for a in ("0-15", "16+") for s in ("1", "2")] + [("0-15", "n/a")]
    free = PramMatrix.form8([0.4] * 4, categories=cells[:4])
    m = PramMatrix.block_diagonal([free, PramMatrix.identity([cells[4]])], cells)
    v = PerturbedVariable("age*pl030", m, columns=("age", "pl030"))
    _, brute = _brute_margin(m.matrix, cells, (0,))
    assert np.isclose(v.epsilon_given_shown, max(_brute_epsilon(brute), v.block_epsilon))
    assert v.epsilon_given_shown > v.block_epsilon  # log(0.6 / (0.8 / 3)) > log(0.4 / 0.2)
    from pramkit.manifest import Manifest as M

    manifest = M((v,))
    assert manifest.record_epsilon_given_structure == v.epsilon_given_shown
    assert f"e^{v.epsilon_given_shown:.4g}"[:6] in manifest.guarantee


# -- every path names what it shows exactly --------------------------------------------------------------

PATHS = [  # (design_release keywords, the facts' kinds)
    (dict(variables=["age", "rb090"]), {"missing"}),
    (dict(variables=["age", "rb090"], missing="category"), set()),
    (dict(variables=["age", "pl030"], split="joint"), {"joint_missing"}),
    (dict(variables=["age", "pl030"], split="joint", missing="category"), set()),
    (dict(variables=["age", "pl030"], strata="rb090"), {"stratum", "missing", "stratum_missing"}),
    (dict(variables=["age", "pl030"], keep_codes={"age": "0-15"}), {"kept_code", "missing"}),
    (dict(variables=["age", "db040"], household="db030", household_vars="db040"), {"missing", "household"}),
    (dict(variables=["age", "pl030"], split="joint", forbid=RULES, rule_breaking="keep"),
     {"joint_missing", "rule_breaker"}),
]


@pytest.mark.parametrize("index", range(len(PATHS)))
def test_every_path_names_what_it_shows_exactly(eusilc, index: int) -> None:
    kwargs, kinds = PATHS[index]
    m = design_release(eusilc, epsilon=4.0, rng=random.Random(index), **kwargs)
    assert {f.kind for f in m.exact_facts} == kinds
    stored = json.loads(m.to_json())
    assert stored["ledger"]["statement"] == m.guarantee == m.describe()["guarantee"]
    assert [f["kind"] for f in stored["ledger"]["released_exactly_facts"]] == [f.kind for f in m.exact_facts]
    back = Manifest.from_dict(stored)
    assert back.guarantee == m.guarantee  # derived again on reading, not copied
    for f in m.exact_facts:
        if f.kind != "household":
            assert f.reveals[1:] in m.guarantee
    assert m.guarantee.startswith("The released file shows exactly") == bool(kinds - {"rule_breaker", "stratum_missing", "household"})
