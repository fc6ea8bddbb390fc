"""Nested releases: a public-use file derived from a scientific-use release (``design --derive-from``).

Checked against what the design does not compute: a brute-force optimum over every vertex of the
polytope of second steps (small k), the gradual release of randomized response (Pan 2024: for two
categories and uniform p, randomized response at the target epsilon is optimal), the composed law in
exact rational arithmetic, an independent enumeration of the vertices, and a simulation of the two
steps drawn with one key.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit import atomic
from pramkit.cli import main
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.design.nested import composed_epsilon, derive_matrix, enumerated_vertices, law_units, vertices
from pramkit.engine.perturb import perturb_frame
from pramkit.errors import ManifestError, ParameterError
from pramkit.estimate.table import estimate_table
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix
from pramkit.privacy.exact import exp_lower
from pramkit.release.derive import derive_release, verify_pair

KEY = SecretKey(bytes(range(32)), "test key")


# ------------------------------------------------------------------ independent references

def info(p: np.ndarray, m: np.ndarray) -> float:
    """I(X; Z) in nats, written out."""
    joint = p[:, None] * m
    r = joint.sum(axis=0)
    mask = joint > 0
    return float((joint[mask] * np.log(m[mask] / np.broadcast_to(r, m.shape)[mask])).sum())


def brute_optimum(m1: np.ndarray, p: np.ndarray, eps: float) -> float:
    """The largest I(X; Z) over every vertex of the polytope of row-stochastic M2 with
    (m1 M2)[x, z] <= e^eps (m1 M2)[x', z]: the objective is convex, so a vertex attains it."""
    k = m1.shape[0]
    t = math.exp(eps)
    eq = np.zeros((k, k * k))
    for row in range(k):
        eq[row, row * k:(row + 1) * k] = 1.0
    ineq = [-np.eye(k * k)[i] for i in range(k * k)]                        # -M2 <= 0
    for z in range(k):
        for x, y in itertools.permutations(range(k), 2):
            g = np.zeros((k, k))
            g[:, z] = m1[x] - t * m1[y]
            ineq.append(g.ravel())
    ineq = np.array(ineq)
    combos = np.array(list(itertools.combinations(range(len(ineq)), k * k - k)))
    rhs = np.r_[np.ones(k), np.zeros(k * k - k)]
    best = -1.0
    for part in np.array_split(combos, max(1, len(combos) // 40_000)):
        a = np.concatenate([np.broadcast_to(eq, (len(part), k, k * k)), ineq[part]], axis=1)
        a = a[np.abs(np.linalg.det(a)) > 1e-12]
        x = np.linalg.solve(a, np.broadcast_to(rhs, (len(a), k * k))[..., None])[..., 0]
        for m2 in x[np.all(x @ ineq.T <= 1e-12, axis=1)]:
            best = max(best, info(p, m1 @ np.maximum(m2, 0.0).reshape(k, k)))
    return best


def brute_vertices(channel: np.ndarray, t: float) -> np.ndarray:
    """The vertices of {m >= 0, sum m = 1, channel m within ratio t} by every choice of k - 1 active constraints."""
    k = channel.shape[1]
    rows = [np.eye(k)[j] for j in range(k)] + [t * channel[y] - channel[x]
                                               for x, y in itertools.permutations(range(channel.shape[0]), 2)]
    found = []
    for chosen in itertools.combinations(rows, k - 1):
        a = np.vstack([np.ones(k), *chosen])
        if abs(np.linalg.det(a)) < 1e-12:
            continue
        m = np.linalg.solve(a, np.eye(k)[0])
        if all(g @ m >= -1e-12 for g in rows):
            found.append(np.round(m, 9))
    return np.unique(np.array(found), axis=0)


def exact_law_ratio(first: PramMatrix, second: PramMatrix) -> Fraction:
    """The largest ratio within a column of the composed realised law, in exact integers."""
    u1 = [[int(x) for x in row] for row in law_units(first)]
    u2 = [[int(x) for x in row] for row in law_units(second)]
    k = len(u1)
    cols = [[sum(u1[i][t] * u2[t][j] for t in range(k)) for i in range(k)] for j in range(k)]
    return max(Fraction(max(c), min(c)) for c in cols if max(c) > 0)


def exact_stored_ratio(first: np.ndarray, second: np.ndarray) -> Fraction:
    """The same for the stored doubles of both matrices, as fractions."""
    a = [[Fraction(float(x)) for x in row] for row in first]
    b = [[Fraction(float(x)) for x in row] for row in second]
    k = len(a)
    cols = [[sum(a[i][t] * b[t][j] for t in range(k)) for i in range(k)] for j in range(k)]
    return max(max(c) / min(c) for c in cols if max(c) > 0)


# ------------------------------------------------------------------ the design

SMALL = [
    (PramMatrix([[0.9, 0.1], [0.2, 0.8]]), [0.3, 0.7], 0.7),
    (randomized_response(["a", "b"], 3.0), [0.5, 0.5], 1.0),
    (PramMatrix([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.25, 0.05, 0.7]]), [0.5, 0.3, 0.2], 0.8),
    (PramMatrix.form8([0.9, 0.8, 0.85]), [0.2, 0.5, 0.3], 1.2),
]


@pytest.mark.parametrize("first, p, eps", SMALL)
def test_small_designs_reach_the_brute_force_optimum_and_their_exact_epsilon(first, p, eps) -> None:
    second = derive_matrix(first, p, eps)
    channel = law_units(first).astype(float) / 2.0 ** 62
    assert second.provenance.objective == pytest.approx(brute_optimum(channel, np.array(p), eps), abs=1e-9)
    assert second.provenance.certificate["optimal"]
    bound = Fraction(exp_lower(eps))                         # a double not above e^eps
    assert exact_law_ratio(first, second) <= bound           # what the engine draws: within eps, exactly
    assert composed_epsilon(first, second) <= eps
    assert exact_stored_ratio(first.matrix, second.matrix) <= bound * Fraction(1 + 10 ** -9)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.5])
def test_gradual_randomized_response_two_categories(eps: float) -> None:
    """Pan (2024): randomized response at eps1 then at the matching rate is randomized response at eps;
    for two equally likely categories it is the most informative eps-DP release."""
    second = derive_matrix(randomized_response(["no", "yes"], 4.0), [0.5, 0.5], eps)
    q = math.exp(eps) / (1 + math.exp(eps))
    assert second.provenance.objective == pytest.approx(math.log(2) + q * math.log(q) + (1 - q) * math.log(1 - q),
                                                        abs=1e-12)


def test_a_first_step_within_the_budget_is_kept() -> None:
    """Data processing: nothing beats releasing the first step as it is."""
    first = PramMatrix.form8([0.6, 0.5, 0.55])
    p = np.array([0.2, 0.5, 0.3])
    second = derive_matrix(first, p, 3.0)
    assert second.provenance.objective == pytest.approx(info(p, first.matrix), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_both_vertex_enumerations_agree_with_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    channel = rng.dirichlet(np.full(3, 0.8), size=3)
    t = math.exp(0.4)
    expected = brute_vertices(channel, t)
    assert np.array_equal(np.unique(np.round(enumerated_vertices(channel, t), 9), axis=0), expected)
    assert np.array_equal(np.unique(np.round(vertices(channel, t), 9), axis=0), expected)


def _second_step_rr(first: np.ndarray, eps: float) -> float:
    """The largest mixing weight lam of (1 - lam) I + lam / k J that keeps first @ it within eps (bisection)."""
    k = first.shape[0]
    lo, hi = 0.0, 1.0
    for _ in range(60):
        lam = (lo + hi) / 2
        m = first @ ((1 - lam) * np.eye(k) + lam / k)
        ok = np.log(m.max(axis=0) / m.min(axis=0)).max() <= eps * (1 - 1e-9)
        lo, hi = (lo, lam) if ok else (lam, hi)
    return hi


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 4), st.integers(0, 2**32 - 1), st.floats(0.05, 2.5))
def test_any_first_step_composes_within_epsilon_and_beats_mixing(k: int, seed: int, eps: float) -> None:
    rng = np.random.default_rng(seed)
    first = PramMatrix(rng.dirichlet(np.full(k, 0.6), size=k) * 0.98 + 0.02 / k)
    p = rng.dirichlet(np.ones(k))
    second = derive_matrix(first, p, eps)
    assert exact_law_ratio(first, second) <= Fraction(exp_lower(eps))
    lam = _second_step_rr(first.matrix, eps)
    mixed = info(p, first.matrix @ ((1 - lam) * np.eye(k) + lam / k))
    assert second.provenance.objective >= mixed - 1e-12
    assert second.provenance.certificate["certified_gap_nats"] <= 1e-12


def test_closed_form_first_steps_are_refused() -> None:
    with pytest.raises(ParameterError, match="closed form"):
        derive_matrix(PramMatrix.truncated_geometric(1.0, ["a", "b", "c"]), [0.2, 0.3, 0.5], 0.5)


# ------------------------------------------------------------------ the release and its ledger

@pytest.fixture(scope="module")
def suf_made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The census (its n/a codes, labels with spaces and commas) released at record epsilon 5, once for the
    module: :func:`suf` gives each test its own copy."""
    d = tmp_path_factory.mktemp("suf")
    data = d / "census.csv"
    census(4_000).to_csv(data, index=False)
    key = d / "key"  # a fixed key: the release, its DP counts and so the derived design are the same every run
    key.write_text(bytes(range(32)).hex())
    key.chmod(0o600)
    manifest = d / "suf.json"
    assert main(["design", str(data), "--vars", "age,marital_status,sex", "--epsilon", "5", "--out",
                 str(manifest), "--key-file", str(key), "--quiet"]) == 0
    released = d / "suf.csv"
    assert main(["apply", str(data), "--manifest", str(manifest), "--out", str(released), "--key-file", str(key),
                 "--quiet"]) == 0
    return d


@pytest.fixture
def suf(suf_made: Path, tmp_path: Path) -> dict[str, Path]:
    """The files of :func:`suf_made`, copied into the test's own folder (tests write beside them and change them)."""
    import shutil

    shutil.copytree(suf_made, tmp_path, dirs_exist_ok=True)
    return {"dir": tmp_path, "data": tmp_path / "census.csv", "key": tmp_path / "key",
            "manifest": tmp_path / "suf.json", "released": tmp_path / "suf.csv"}


def test_derive_then_apply_on_the_released_file(suf, capsys) -> None:
    capsys.readouterr()
    puf = suf["dir"] / "puf.json"
    assert main(["design", "--derive-from", str(suf["manifest"]), "--epsilon", "2", "--out", str(puf),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    first, derived = Manifest.read(suf["manifest"]), Manifest.read(puf)
    assert derived.record_epsilon <= 2.0 and out["record_epsilon"] == derived.record_epsilon_given_structure
    assert out["pair_record_epsilon"] == first.record_epsilon_given_structure        # not the sum
    assert all(v["optimal"] for v in out["per_variable"].values())
    assert verify_pair(derived, suf["manifest"])["sha256"] == hashlib.sha256(suf["manifest"].read_bytes()).hexdigest()
    led = json.loads(puf.read_text())["ledger"]
    assert led["derived_from"]["record_epsilon"] == first.record_epsilon_given_structure
    assert "the pair's record epsilon is that release's" in led["statement"]
    for v in derived.variables:                              # the PUF's categories are the SUF's released ones
        assert v.matrix.categories == first[v.name].matrix.categories == v.applied_to.categories
    released = suf["dir"] / "puf.csv"
    args = ["apply", str(suf["released"]), "--manifest", str(puf), "--key-file", str(suf["key"]), "--quiet"]
    assert main([*args, "--out", str(released)]) == 0
    assert main([*args, "--out", str(suf["dir"] / "again.csv")]) == 0
    assert released.read_bytes() == (suf["dir"] / "again.csv").read_bytes()
    before, after = pd.read_csv(suf["released"], dtype=str), pd.read_csv(released, dtype=str)
    assert after.drop(columns=derived.names).equals(before.drop(columns=derived.names))
    for v in derived.variables:
        assert set(after[v.name].dropna()) <= {str(c) for c in v.matrix.categories}
        assert after[v.name].isna().equals(before[v.name].isna())


def test_a_tampered_scientific_use_manifest_is_detected(suf) -> None:
    derived = derive_release(suf["manifest"], 2.0).manifest
    text = suf["manifest"].read_text()
    suf["manifest"].write_text(text.replace('"created": "', '"created": "1', 1))      # still a valid manifest
    Manifest.read(suf["manifest"])
    with pytest.raises(ManifestError, match="SHA-256"):
        verify_pair(derived, suf["manifest"])
    suf["manifest"].write_text(text)
    assert verify_pair(derived, suf["manifest"])["pair_record_epsilon"] == Manifest.read(suf["manifest"]).record_epsilon
    first = Manifest.read(suf["manifest"])                  # another release: sex perturbed by another matrix
    sex = PramMatrix.form8([0.9, 0.9], categories=first["sex"].matrix.categories)
    other = Manifest(tuple(PerturbedVariable(v.name, sex if v.name == "sex" else v.matrix) for v in first.variables),
                     input=first.input, ledger=first.ledger).write(suf["dir"] / "other.json")
    spoofed = json.loads(json.dumps(derived.to_dict()))
    spoofed["ledger"]["derived_from"]["sha256"] = hashlib.sha256(other.read_bytes()).hexdigest()
    with pytest.raises(ManifestError, match="not that of"):
        verify_pair(Manifest.from_dict(spoofed), other)


def test_a_derived_manifest_states_the_composed_epsilon_it_can_prove(suf) -> None:
    """Editing the second step's entries without its epsilon is refused when the manifest is read."""
    doc = json.loads(derive_release(suf["manifest"], 2.0).manifest.to_json())
    assert Manifest.from_dict(doc)["sex"].epsilon <= 2.0
    doc["variables"][2]["matrix"] = [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(ManifestError, match="epsilon"):
        Manifest.from_dict(doc)


def test_a_public_prior_and_codebook_on_real_data(sdc_data: Path, tmp_path: Path, capsys) -> None:
    """eusilc: missing values of pl030, region names, weights released as they are (the PUF says so too)."""
    data = tmp_path / "eusilc.csv"
    data.write_bytes((sdc_data / "eusilc_laeken.csv").read_bytes())
    frame = pd.read_csv(data, dtype=str)
    regions = sorted(frame["db040"].unique())
    work = [str(c) for c in range(1, 8)]
    book = tmp_path / "codebook.csv"
    book.write_text("variable,category\n" + "".join(f"db040,{r}\n" for r in regions)
                    + "".join(f"pl030,{c}\n" for c in work))
    suf = tmp_path / "suf.json"
    assert main(["design", str(data), "--vars", "db040,pl030", "--epsilon", "6", "--categories", str(book),
                 "--weights", "rb050", "--out", str(suf), "--quiet"]) == 0
    prior = tmp_path / "prior.csv"
    counts = {r: 100 * (i + 1) for i, r in enumerate(regions)}        # a public table, not the data
    prior.write_text("variable,category,frequency\n" + "".join(f"db040,{r},{counts[r]}\n" for r in reversed(regions))
                     + "".join(f"pl030,{c},10\n" for c in work))
    puf = tmp_path / "puf.json"
    capsys.readouterr()
    assert main(["design", "--derive-from", str(suf), "--epsilon", "1.5", "--prior", str(prior), "--categories",
                 str(book), "--vars", "pl030,db040", "--out", str(puf)]) == 0
    text = capsys.readouterr().out
    assert "under the prior.csv" in text and "rb050" in text
    derived = Manifest.read(puf)
    assert derived.record_epsilon <= 1.5 and verify_pair(derived, suf)
    assert derived.ledger.derived_from["record_epsilon"] == Manifest.read(suf).record_epsilon_given_structure


@pytest.mark.slow
def test_two_steps_drawn_with_one_key_realise_the_composed_matrix() -> None:
    """Simulation: the second step draws from a stream of its own, so the law from the original to the
    public-use value is M1 M2 even when one key draws both."""
    first = PramMatrix.form8([0.8, 0.7, 0.75], categories=["a", "b", "c"])
    suf = Manifest.of({"x": first})
    derived = Manifest((PerturbedVariable("x", derive_matrix(first, [0.3, 0.3, 0.4], 0.7), applied_to=first),))
    n = 60_000
    frame = pd.DataFrame({"x": np.repeat(["a", "b", "c"], n)})
    puf = perturb_frame(perturb_frame(frame, suf, key=KEY).data, derived, key=KEY).data["x"]
    target = first.matrix @ derived["x"].matrix.matrix
    for i, label in enumerate("abc"):
        seen = puf.iloc[i * n:(i + 1) * n].value_counts(normalize=True).reindex(list("abc"), fill_value=0).to_numpy()
        sd = np.sqrt(target[i] * (1 - target[i]) / n)
        assert np.all(np.abs(seen - target[i]) <= 4.5 * sd + 1e-12), (label, seen, target[i])
    table = estimate_table(pd.DataFrame({"x": puf}), derived, "x", variance="pram").table   # through M1 M2
    assert np.all(np.abs(table.counts - n) <= 4.5 * table.se), (table.counts, table.se)


def test_estimates_from_the_public_use_file_invert_the_composed_law() -> None:
    first = PramMatrix.form8([0.8, 0.7, 0.75], categories=["a", "b", "c"])
    second = derive_matrix(first, [0.3, 0.3, 0.4], 0.7)
    derived = Manifest((PerturbedVariable("x", second, applied_to=first),))
    composed = Manifest.of({"x": PramMatrix(first.matrix @ second.matrix, first.categories)})
    released = pd.DataFrame({"x": list("aabcccbab") * 20})
    got, expected = estimate_table(released, derived, "x").table, estimate_table(released, composed, "x").table
    assert np.allclose(got.counts, expected.counts) and np.allclose(got.se, expected.se)


# ------------------------------------------------------------------ bad input

def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


BAD = [
    ("variables differ", ["--vars", "age,sex"], "--vars must name the variables"),
    ("unknown variable", ["--vars", "age,sex,marital_status,race"], "--vars must name the variables"),
    ("prior categories differ", ["--prior", "{prior}"], "the prior's categories of 'age' differ"),
    ("codebook categories differ", ["--categories", "{book}"], "the codebook's categories of 'age' differ"),
    ("missing manifest", ["--derive-from", "{dir}/none.json"], "does not exist"),
    ("data given", ["{data}"], "--derive-from reads no data file"),
    ("budget below the design step", ["--epsilon", "0.001"], "--epsilon must be above the design epsilon"),
    ("no epsilon", ["--epsilon", None], "needs --derive-from and --epsilon"),
    ("another family", ["--method", "rr"], "--method does not apply to --derive-from"),
    ("no output", ["--out", None], "--out is required"),
    ("output is the input", ["--out", "{manifest}", "--force"], ""),
    ("derived again", ["--derive-from", "{puf}"], "derived already"),
    ("no ledger", ["--derive-from", "{bare}"], "has no privacy ledger"),
    ("a private record", ["--design-record", "{dir}/r.json"], "--design-record does not apply"),
    ("a key", ["--key-file", "{dir}/key"], "--key-file does not apply"),
    ("a sampling design", ["--sampling", "poisson:0.1"], "--sampling does not apply"),
    ("a population", ["--population", "100000"], "--population does not apply"),
]


@pytest.mark.parametrize("case, change, message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_one_line_exit_2_nothing_written(suf, capsys, case: str, change: list, message: str) -> None:
    d = suf["dir"]
    (d / "prior.csv").write_text("variable,category,frequency\nsex,female,10\nsex,other,10\nage,0-9,10\n"
                                 "marital_status,widowed,10\n")
    (d / "book.csv").write_text("variable,category\nage,0-9\nage,10+\nsex,female\nsex,male\nmarital_status,x\n")
    assert main(["design", "--derive-from", str(suf["manifest"]), "--epsilon", "2", "--out", str(d / "puf.json"),
                 "--quiet"]) == 0
    Manifest.of({"sex": randomized_response(["female", "male"], 3.0)}).write(d / "bare.json")
    fill = {"prior": d / "prior.csv", "book": d / "book.csv", "dir": d, "data": suf["data"],
            "manifest": suf["manifest"], "puf": d / "puf.json", "bare": d / "bare.json"}
    args = {"--derive-from": str(suf["manifest"]), "--epsilon": "2", "--out": str(d / "new.json")}
    extra: list[str] = []
    pairs = iter(change)
    for flag in pairs:
        if flag.startswith("--") and flag not in ("--force",):
            args[flag] = next(pairs)
        else:
            extra.append(flag)
    argv = ["design", *[x.format(**fill) for x in extra]]
    for flag, value in args.items():
        if value is not None:
            argv += [flag, value.format(**fill)]
    capsys.readouterr()
    before = _digests(d)
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert _digests(d) == before


def test_a_failed_write_leaves_nothing(suf, capsys, monkeypatch) -> None:
    d = suf["dir"]
    before = _digests(d)

    def full(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", full)
    monkeypatch.setattr(atomic.os, "link", full)
    code = main(["design", "--derive-from", str(suf["manifest"]), "--epsilon", "2", "--out", str(d / "puf.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "cannot write" in err[0]
    assert _digests(d) == before and not [p for p in d.iterdir() if atomic.TMP_TAG in p.name]
