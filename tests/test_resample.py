"""pramkit resample: analysis-ready files by posterior draws, post-processing of a release.

Checked against: the original file the release was made from (total variation of every 1- and
2-way table, raw release against resampled file, on the NIST CRC excerpt and the built-in census);
the posterior of the fitted model enumerated by brute force (chi-square over many keyed draws of
one released pattern); the edit rules evaluated on every output record; the keyed streams of the
perturbation; and the command line's refusals (one line, exit 2, nothing written).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom, chisquare

import pramkit
from pramkit import Manifest, PramMatrix
from pramkit.cli import main
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.design.classic import randomized_response
from pramkit.errors import DataError, ParameterError, PramkitWarning
from pramkit.io import read_table
from pramkit.kernel.rng import SecretKey, uniforms
from pramkit.manifest import PerturbedVariable
from pramkit.resample import resample_key, resample_release
from pramkit.structure import Rules

NIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
FEATURES = ["AGEP", "SEX", "MSP", "RAC1P", "HOUSING_TYPE", "OWN_RENT", "EDU", "PINCP_DECILE", "DVET", "DEYE"]
KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
#: NIST's consistency rules on age, marital status and veterans' disability ('N': not applicable).
NIST_RULES = [
    {"AGEP": "|".join(map(str, range(15))), "MSP": "1|2|3|4|5|6"},       # a married child
    {"AGEP": "|".join(map(str, range(15, 100))), "MSP": "N"},           # an adult without a status
    {"AGEP": "|".join(map(str, range(17))), "DVET": "1|2|3|4|5|6"},     # a child veteran
]


def nist(na_values: tuple[str, ...]) -> pd.DataFrame:
    if not NIST.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    return read_table(NIST, na_values=na_values)[FEATURES]


def tv(a: pd.DataFrame, b: pd.DataFrame, cols: list[str]) -> float:
    """Total variation between the tables of ``cols`` in two files (missing is a value of its own)."""
    pa_ = a[cols].fillna("<NA>").astype(str).value_counts(normalize=True)
    pb = b[cols].fillna("<NA>").astype(str).value_counts(normalize=True)
    joined = pd.concat([pa_, pb], axis=1).fillna(0.0)
    return 0.5 * float((joined.iloc[:, 0] - joined.iloc[:, 1]).abs().sum())


def released_frame(data: pd.DataFrame, variables: list[str], epsilon: float, **settings) -> tuple[Manifest, pd.DataFrame]:
    m = pramkit.design_release(data, variables, epsilon=epsilon, rng=random.Random(7), **settings)
    return m, pramkit.perturb_frame(data, m, key=KEY).data


@pytest.fixture(scope="module")
def nist_release():
    """The eight features other than AGEP and SEX released at epsilon 10, 'N' read as missing."""
    data = nist(("N",))
    m, released = released_frame(data, FEATURES[2:], 10.0, split="equal")
    return data, m, released, resample_release(released, m, key=KEY)


@pytest.fixture(scope="module")
def census_release():
    data = census(30_000)
    m, released = released_frame(data, ["age", "marital_status", "education", "employment"], 6.0,
                                 split="equal", categories=CENSUS_VARIABLES)
    return data, m, released


# ------------------------------------------------------------------ (a) margins closer to the original's

def assert_closer(original: pd.DataFrame, released: pd.DataFrame, resampled: pd.DataFrame, perturbed: list[str]):
    """Every perturbed variable's margin (or, where the release's is within the noise of its draws already,
    0.01, within that too), and the 2-way tables on average (and 4 in 5 of them), are closer to the original's
    in the resampled file than in the raw release."""
    raw1 = np.array([tv(original, released, [c]) for c in perturbed])
    new1 = np.array([tv(original, resampled, [c]) for c in perturbed])
    assert (new1 < np.maximum(raw1, 0.01)).all() and new1.mean() < 0.5 * raw1.mean(), (raw1, new1)
    pairs = [list(p) for p in itertools.combinations(original.columns, 2) if set(p) & set(perturbed)]
    raw = np.array([tv(original, released, p) for p in pairs])
    new = np.array([tv(original, resampled, p) for p in pairs])
    assert new.mean() < 0.5 * raw.mean()
    assert (new < raw).mean() >= 0.8


def test_nist_margins_closer_than_the_release(nist_release) -> None:
    data, m, released, res = nist_release
    assert res.public == ("AGEP", "SEX") and res.impossible == 0
    assert_closer(data, released, res.data, m.columns)


@pytest.mark.slow
def test_nist_margins_closer_with_another_key() -> None:
    """The margin holds for another perturbation and another resampling key (not one lucky draw)."""
    data = nist(("N",))
    m = pramkit.design_release(data, FEATURES[2:], epsilon=10.0, split="equal", rng=random.Random(11))
    released = pramkit.perturb_frame(data, m, key=OTHER_KEY).data
    assert_closer(data, released, resample_release(released, m, key=bytes(32)).data, m.columns)


def test_census_margins_closer_than_the_release(census_release) -> None:
    data, m, released = census_release
    res = resample_release(released, m, key=KEY)
    assert set(res.public) == set(data.columns) - set(m.columns)
    assert_closer(data, released, res.data, m.columns)


def test_missing_values_stay_as_released(nist_release) -> None:
    """'N' read as missing: every missing value is where the release has it, and public columns are
    untouched; the other values are categories of their variables."""
    _, m, released, res = nist_release
    out = res.data
    for c in FEATURES:
        assert (out[c].isna() == released[c].isna()).all(), c
    assert out[["AGEP", "SEX"]].equals(released[["AGEP", "SEX"]])
    for v in m.variables:
        cats = {str(x) for x in v.matrix.categories}
        assert set(out[v.name].dropna().astype(str)) <= cats
    summary = {s.name: s for s in res.variables}
    assert summary["MSP"].kept_as_released == int(released["MSP"].isna().sum()) > 0


# ------------------------------------------------------------------ (b) exact posterior draws

def brute_posterior(model, released_states: list[int]) -> np.ndarray:
    """The posterior of the model's states given released states, by enumerating every combination
    (the model's root law and conditionals, times each node's release law, times its allowed states)."""
    sizes = [n.size for n in model.nodes]
    post = np.zeros(sizes)
    for x in itertools.product(*(range(s) for s in sizes)):
        p = model.prior[x[model.order[0]]]
        for c in range(len(sizes)):
            if model.parent[c] >= 0:
                p *= model.conditional[c][x[model.parent[c]], x[c]]
            node = model.nodes[c]
            release = np.eye(node.size) if node.matrix is None else node.evidence
            p *= release[x[c], released_states[c]] * model.allowed[c][x[c]]
        post[x] = p
    return post / post.sum()


def tiny_release(kind: str, rng: np.random.Generator) -> tuple[Manifest, pd.DataFrame, dict]:
    """A small released frame: random records, and 20 000 copies of one released pattern."""
    n = 2_000
    frame = pd.DataFrame({"a": rng.choice(["x", "y", "z"], n), "b": rng.choice(["p", "q"], n),
                          "c": rng.choice(["u", "v"], n)})
    pattern = {"a": "x", "b": "q", "c": "u"}
    frame = pd.concat([frame, pd.DataFrame([pattern] * 20_000)], ignore_index=True)
    if kind == "independent":
        m = Manifest.of({"a": randomized_response(["x", "y", "z"], 1.0),
                         "b": PramMatrix([[0.7, 0.3], [0.2, 0.8]], ["p", "q"])})
    else:  # a and b perturbed jointly over five allowed cells (("z", "p") forbidden)
        cells = [("x", "p"), ("x", "q"), ("y", "p"), ("y", "q"), ("z", "q")]
        joint = PramMatrix(0.5 * np.eye(5) + 0.5 * rng.dirichlet(np.ones(5), 5), cells)
        m = Manifest((PerturbedVariable("a*b", joint, columns=("a", "b")),))
        frame.loc[(frame.a == "z") & (frame.b == "p"), "b"] = "q"
    return m, frame, pattern


@pytest.mark.parametrize("kind", ["independent", "joint"])
@pytest.mark.parametrize("rule", [False, True])
def test_draws_follow_the_exact_posterior(kind: str, rule: bool) -> None:
    rng = np.random.default_rng(5)
    m, frame, pattern = tiny_release(kind, rng)
    forbid = [{"a": "y", "c": "u"}] if rule else None     # y never with u: a zero of the a-c edge
    res = resample_release(frame, m, key=KEY, forbid=forbid)
    model = res.model
    names = [n.name for n in model.nodes]
    states = []
    for node in model.nodes:
        values = tuple(pattern[c] for c in node.columns)
        labels = [tuple(x) if isinstance(x, tuple) else (x,) for x in node.labels]
        states.append(labels.index(values))
    post = brute_posterior(model, states)
    copies = res.data.iloc[2_000:]
    observed = np.zeros(post.shape)
    for row in copies.itertuples(index=False):
        x = []
        for node in model.nodes:
            labels = [tuple(v) if isinstance(v, tuple) else (v,) for v in node.labels]
            x.append(labels.index(tuple(getattr(row, c) for c in node.columns)))
        observed[tuple(x)] += 1
    assert observed.ravel()[post.ravel() == 0].sum() == 0          # nothing drawn outside the posterior's support
    expected = post.ravel() * len(copies)
    big = expected >= 5
    obs, exp = observed.ravel()[big], expected[big]
    rare_obs, rare_p = observed.ravel()[~big].sum(), post.ravel()[~big].sum()
    if rare_p * len(copies) >= 5:                                 # the rare cells pooled into one bin
        obs, exp = np.append(obs, rare_obs), np.append(exp, rare_p * len(copies))
    else:  # a pool too small for the chi-square: its count against its binomial law, P(X >= count)
        assert binom.sf(rare_obs - 1, len(copies), rare_p) > 1e-3, (names, post, observed)
        obs[-1] += rare_obs
        exp[-1] += rare_p * len(copies)
    if len(obs) > 1:  # a single cell holds every draw the binomial check left: nothing more to compare
        assert chisquare(obs, exp).pvalue > 1e-3, (names, post, observed)
    if rule:
        assert (copies["a"] == "y").sum() == 0                    # released with c = u: never y


def test_one_variable_posterior_in_closed_form() -> None:
    """One variable under randomized response, no public column: the model's law is the MLE of the
    variable's distribution and a record released as k keeps k with probability p_k M[k,k] / lambda_k."""
    m = Manifest.of({"a": PramMatrix([[0.8, 0.2], [0.3, 0.7]], ["x", "y"])})
    frame = pd.DataFrame({"a": ["x"] * 30_000 + ["y"] * 10_000})
    res = resample_release(frame, m, key=KEY)
    # released shares (0.75, 0.25) = p M: p = (0.9, 0.1) exactly
    stay = 0.9 * 0.8 / 0.75
    kept = (res.data["a"].iloc[:30_000] == "x").mean()
    assert abs(kept - stay) < 4 * np.sqrt(stay * (1 - stay) / 30_000)


# ------------------------------------------------------------------ (c) edit rules hold in every record

def test_nist_rules_hold_in_every_record() -> None:
    data = nist(())                                     # 'N' a value: the rules name it
    m, released = released_frame(data, FEATURES[2:], 10.0, split="equal")
    rules = Rules.of(NIST_RULES)
    assert rules.breaking(released, FEATURES).sum() > 1000          # the raw release breaks them
    res = resample_release(released, m, key=KEY, forbid=NIST_RULES)
    assert rules.breaking(res.data, FEATURES).sum() == 0
    assert res.rule_breaking_resampled == 0 and res.rule_breaking_released > 1000
    assert {tuple(sorted((e.parent, e.child))) for e in res.edges if e.forced} == {("AGEP", "DVET"), ("AGEP", "MSP")}
    assert_closer(data, released, res.data, m.columns)


def test_manifest_rules_hold_with_a_joint_design(tmp_path: Path) -> None:
    """The manifest's own rules (a joint design with --forbid, within strata) hold in every resampled record,
    and a CSV release comes back as a CSV of the same columns."""
    data = census(20_000)
    rules = [{"age": "0-9", "marital_status": "married, spouse present|married, spouse absent|separated|divorced|"
                                              "widowed"}]
    m = pramkit.design_release(data, ["age", "marital_status"], epsilon=3.0, split="joint", forbid=rules,
                               strata="sex", categories=CENSUS_VARIABLES, rng=random.Random(3))
    data.to_csv(tmp_path / "census.csv", index=False)
    m.write(tmp_path / "m.json")
    pramkit.apply_file(tmp_path / "census.csv", tmp_path / "m.json", tmp_path / "released.csv", key=KEY)
    res = resample_release(tmp_path / "released.csv", tmp_path / "m.json", tmp_path / "resampled.csv", key=KEY)
    out = read_table(tmp_path / "resampled.csv")
    released = read_table(tmp_path / "released.csv")
    assert list(out.columns) == list(released.columns) and len(out) == len(data)
    assert Rules.of(rules).breaking(out, ["age", "marital_status"]).sum() == 0
    assert (out["sex"] == released["sex"]).all() and res.rules == 1
    assert_closer(data.astype(str), released, out, ["age", "marital_status"])


# ------------------------------------------------------------------ (d) keyed, reproducible, its own streams

def test_same_key_same_bytes_other_key_other_file(tmp_path: Path, census_release) -> None:
    _, m, released = census_release
    released.to_csv(tmp_path / "released.csv", index=False)
    m.write(tmp_path / "m.json")
    paths = []
    for name, key in (("a", KEY), ("b", KEY), ("c", OTHER_KEY)):
        with pytest.warns(PramkitWarning):
            resample_release(tmp_path / "released.csv", tmp_path / "m.json", tmp_path / f"{name}.csv", key=key)
        paths.append(hashlib.sha256((tmp_path / f"{name}.csv").read_bytes()).hexdigest())
    assert paths[0] == paths[1] != paths[2]
    frame = resample_release(released, m, key=KEY).data          # a frame and its file: the same draws
    assert frame.astype(str).equals(read_table(tmp_path / "a.csv").astype(str))


def _rerun(x: object) -> object:
    """A manifest's JSON as a second run of the same design writes it: other times, durations, version."""
    if isinstance(x, dict):
        return {k: ("2031-01-01T00:00:00Z" if k == "created" else 9.75 if k == "seconds" and isinstance(v, float)
                    else "9.9.9" if k == "pramkit_version" else _rerun(v)) for k, v in x.items()}
    return [_rerun(v) for v in x] if isinstance(x, list) else x


def test_a_design_made_again_is_resampled_as_it_was(tmp_path: Path, census_release) -> None:
    """The same release, its manifest written by another run (another time, durations and version), gives the
    same resampled bytes.  The run's fields once changed the draws: a benchmark's resampled files differed
    from process to process, though every release before them was the same."""
    _, m, released = census_release
    released.to_csv(tmp_path / "released.csv", index=False)
    first = json.loads(m.to_json())
    again = _rerun(first)
    assert again != first and "seconds" in json.dumps(first)
    (tmp_path / "again.json").write_text(json.dumps(again), encoding="utf-8")
    digests = []
    for name, manifest in (("first", m), ("again", tmp_path / "again.json")):
        with pytest.warns(PramkitWarning):
            resample_release(tmp_path / "released.csv", manifest, tmp_path / f"{name}.csv", key=KEY)
        digests.append(hashlib.sha256((tmp_path / f"{name}.csv").read_bytes()).hexdigest())
    assert digests[0] == digests[1]
    key = SecretKey(KEY, "test")
    assert resample_key(key, m).material == resample_key(key, Manifest.read(tmp_path / "again.json")).material


def test_draws_use_streams_of_their_own(census_release) -> None:
    """The resampling key shares no stream with the perturbation's: for every node its Philox key and its
    uniforms differ from those of the same name under the secret key, and another manifest gets another key."""
    data, m, released = census_release
    key = SecretKey(KEY, "test")
    derived = resample_key(key, m)
    for name in list(data.columns):
        assert not np.array_equal(derived.philox_key(name), key.philox_key(name))
        assert np.corrcoef(uniforms(derived, name, 0, 5000), uniforms(key, name, 0, 5000))[0, 1] < 0.1
    other = Manifest.of({"age": randomized_response(list(CENSUS_VARIABLES["age"]), 2.0)})
    assert resample_key(key, other).material != derived.material
    # the draws are the derived key's: the same file whatever the perturbation's streams would give
    from pramkit.resample import _codes, _Release, sample_posterior

    res = resample_release(released, m, key=KEY)
    release = _Release(released, ())
    (start, table), = release.chunks()
    codes = _codes(table, res.model.nodes, release.meta.missing, start)
    draws, _ = sample_posterior(res.model, codes, derived)
    for j, node in enumerate(res.model.nodes[: len(m.variables)]):
        labels = np.array([str(x) for x in node.labels], dtype=object)
        assert (res.data[node.name].astype(str).to_numpy() == labels[draws[:, j]]).all()


def test_the_fit_and_the_draws_sum_on_one_blas_thread(census_release, monkeypatch) -> None:
    """BLAS splits a product among its threads (one per core) and adds the pieces, so the same key drew another
    file on one core than on two (NIST's demographic features, the benchmark's dp-shuffle-1-resampled).  Every
    product of the fit and of the draws runs with BLAS on one thread, even where the process set it to more; and
    the resampled file is the one BLAS on one thread gives."""
    from threadpoolctl import threadpool_info, threadpool_limits

    import pramkit.resample as rs

    seen: set[int] = set()

    def watch(function):
        def watched(*args, **kwargs):
            seen.update(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
            return function(*args, **kwargs)
        return watched

    monkeypatch.setattr(rs, "_fit", watch(rs._fit))          # the fit's estimates (step 3)
    monkeypatch.setattr(rs, "_rescale", watch(rs._rescale))  # the draws' messages (step 4)
    _, m, released = census_release
    with threadpool_limits(limits=2, user_api="blas"):
        if not {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} - {1}:
            pytest.skip("BLAS here cannot run on two threads")
        res = resample_release(released, m, key=KEY)
    assert seen == {1}
    with threadpool_limits(limits=1, user_api="blas"):
        again = resample_release(released, m, key=KEY)
    pd.testing.assert_frame_equal(res.data, again.data)


# ------------------------------------------------------------------ receipts and the estimate refusal

def test_receipt_says_post_processing_and_estimate_refuses(tmp_path: Path, capsys) -> None:
    data = census(5_000)[["age", "sex", "race"]]
    data.to_csv(tmp_path / "d.csv", index=False)
    m = pramkit.design_release(data, ["age"], epsilon=2.0, categories=CENSUS_VARIABLES, rng=random.Random(1))
    m.write(tmp_path / "m.json")
    pramkit.apply_file(tmp_path / "d.csv", tmp_path / "m.json", tmp_path / "r.csv", key=KEY)
    (tmp_path / "k").write_text(KEY.hex() + "\n")
    (tmp_path / "k").chmod(0o600)
    code = main([str(a) for a in ("resample", tmp_path / "r.csv", "--manifest", tmp_path / "m.json", "--out",
                                  tmp_path / "s.csv", "--key-file", tmp_path / "k", "--json")])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["record_epsilon"] == pytest.approx(m.record_epsilon)
    assert out["guarantee"].startswith(m.guarantee) and "no further budget" in out["guarantee"]
    receipt = json.loads((tmp_path / "s.csv.receipt.json").read_text())
    post = receipt["post_processing"]
    assert post["method"] == "resample" and post["release"] == "r.csv"
    assert post["release_sha256"] == hashlib.sha256((tmp_path / "r.csv").read_bytes()).hexdigest()
    assert receipt["released_sha256"] == hashlib.sha256((tmp_path / "s.csv").read_bytes()).hexdigest()
    code = main(["estimate", str(tmp_path / "s.csv"), "--manifest", str(tmp_path / "m.json"), "--vars", "age"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "post-processed" in err[0] and "r.csv" in err[0]
    assert main(["inspect", str(tmp_path / "m.json"), "--released", str(tmp_path / "s.csv")]) == 0


def test_injected_write_failure_leaves_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    """A failure while writing the resampled file leaves neither it nor its receipt; an earlier one survives."""
    from pramkit import io as pio

    data = census(3_000)[["age", "sex"]]
    data.to_csv(tmp_path / "d.csv", index=False)
    m = pramkit.design_release(data, ["age"], epsilon=2.0, categories=CENSUS_VARIABLES, rng=random.Random(1))
    m.write(tmp_path / "m.json")
    pramkit.apply_file(tmp_path / "d.csv", tmp_path / "m.json", tmp_path / "r.csv", key=KEY)
    args = ["resample", str(tmp_path / "r.csv"), "--manifest", str(tmp_path / "m.json"), "--out",
            str(tmp_path / "s.csv"), "--quiet"]
    for existing in (False, True):
        if existing:
            assert main(args) == 0
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
        capsys.readouterr()

        def fail(self, *a, **k):
            raise OSError(28, "No space left on device")

        with monkeypatch.context() as mp:
            mp.setattr(pio.TableWriter, "_write_chunk", fail)
            code = main(args + (["--force"] if existing else []))
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and "No space left" in err[0]
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


# ------------------------------------------------------------------ (e) bad input: one line, exit 2, nothing written

@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    data = census(2_000)[["age", "sex", "race"]]
    data.to_csv(tmp_path / "d.csv", index=False)
    m = pramkit.design_release(data, ["age"], epsilon=2.0, categories=CENSUS_VARIABLES, rng=random.Random(1))
    m.write(tmp_path / "m.json")
    other = pramkit.design_release(data, ["age"], epsilon=3.0, categories=CENSUS_VARIABLES, rng=random.Random(1))
    other.write(tmp_path / "other.json")
    pramkit.apply_file(tmp_path / "d.csv", tmp_path / "m.json", tmp_path / "r.csv", key=KEY)
    (tmp_path / "k").write_text(KEY.hex() + "\n")
    (tmp_path / "k").chmod(0o600)
    (tmp_path / "rules.csv").write_text("age,income\n0-9,high\n")
    (tmp_path / "three.csv").write_text("age,sex,race\n0-9,male,white\n")
    Manifest.of({"age": randomized_response(list(CENSUS_VARIABLES["age"]), 2.0),
                 "sex": randomized_response(list(CENSUS_VARIABLES["sex"]), 2.0),
                 "race": randomized_response(list(CENSUS_VARIABLES["race"]), 2.0)}).write(tmp_path / "m3.json")
    return {"dir": tmp_path}


BAD = [
    (["--manifest", "{d}/absent.json"], "does not exist"),
    (["--manifest", "{d}/other.json"], "another manifest"),
    (["--public", "income"], "income"),
    (["--public", "age"], "perturbed"),
    (["--key-file", "{d}/nokey"], "does not exist"),
    (["--out", "{d}/r.csv"], "overwrite the input"),
    (["--out", "{d}/m.json"], "overwrite the input"),
    (["--forbid", "{d}/rules.csv"], "income"),
    (["--forbid", "{d}/absent.csv"], "does not exist"),
    (["--out", "{d}/s.xlsx"], "suffix"),
]


@pytest.mark.parametrize("extra, words", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_input_is_one_line(files, capsys, extra: list[str], words: str) -> None:
    d = files["dir"]
    args = {"--manifest": str(d / "m.json"), "--out": str(d / "s.csv"), "--key-file": str(d / "k")}
    for flag, value in zip(extra[::2], extra[1::2]):
        args[flag] = value.format(d=d)
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    code = main(["resample", str(d / "r.csv"), *itertools.chain.from_iterable(args.items())])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("pramkit resample: error:") and words in err[0], err
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before


def test_library_refusals(files) -> None:
    d = files["dir"]
    frame = read_table(d / "r.csv")
    m = Manifest.read(d / "m.json")
    with pytest.raises(ParameterError, match="give no out"):
        resample_release(frame, m, d / "x.csv", key=KEY)
    with pytest.raises(ParameterError, match="give out"):
        resample_release(d / "r.csv", m, key=KEY)
    with pytest.raises(ParameterError, match="more than two"):
        resample_release(read_table(d / "three.csv"), Manifest.read(d / "m3.json"), key=KEY,
                         forbid=[{"age": "0-9", "sex": "male", "race": "white"}])
    with pytest.raises(ParameterError, match=r"tie (age, sex, race|age, race, sex|race, sex, age|sex, race, age"
                                             r"|race, age, sex|sex, age, race) in a cycle"):
        resample_release(read_table(d / "three.csv"), Manifest.read(d / "m3.json"), key=KEY,
                         forbid=[{"age": "0-9", "sex": "male"}, {"sex": "female", "race": "black"},
                                 {"race": "white", "age": "75+"}])
    with pytest.raises(ParameterError, match="not a category"):
        resample_release(frame, m, key=KEY, forbid=[{"age": "0-99", "sex": "male"}])
    bad = frame.copy()
    bad.loc[0, "age"] = "100+"
    with pytest.raises(DataError, match="100\\+"):
        resample_release(bad, m, key=KEY)
    hh = Manifest((PerturbedVariable("age", m["age"].matrix, unit="sex"),))
    with pytest.raises(ParameterError, match="household"):
        resample_release(frame, hh, key=KEY)


# ------------------------------------------------------------------ properties over small random releases

@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60), missing=st.floats(0, 0.4))
def test_output_keeps_what_is_shown_exactly(seed: int, n: int, missing: float) -> None:
    """Any small release: missing values where they were, public columns untouched, values among the
    categories, the rule held in every record the release explains."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.choice(["x", "y", "z"], n), "b": rng.choice(["p", "q"], n),
                          "c": rng.choice(["u", "v", "w"], n)})
    frame.loc[rng.random(n) < missing, "a"] = None
    m = Manifest.of({"a": randomized_response(["x", "y", "z"], float(rng.uniform(0.2, 3))),
                     "b": PramMatrix(0.5 * np.eye(2) + 0.5 * rng.dirichlet(np.ones(2), 2), ["p", "q"])})
    res = resample_release(frame, m, key=KEY, forbid=[{"a": "x", "c": "u"}])
    out = res.data
    assert (out["a"].isna() == frame["a"].isna()).all() and out["c"].equals(frame["c"])
    assert set(out["a"].dropna()) <= {"x", "y", "z"} and set(out["b"]) <= {"p", "q"}
    assert ((out["a"] == "x") & (out["c"] == "u")).sum() == res.impossible == 0
