"""A key never couples two releases: release keys, data-dependent design noise, labels.

Checked against what the code under test does not compute: closed forms of the agreement of two
independent PRAM draws (sum_j M[k, j] M'[k, j]), the collision probability of two independent
discrete Laplace noises, the true counts of the files (pandas), and the bytes of files written twice.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.cli import main
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import apply_file, perturb_frame, release_key
from pramkit.engine.receipt import read_receipt, release_digest
from pramkit.engine.shuffle import permutation
from pramkit.errors import ParameterError
from pramkit.kernel.rng import SecretKey, uniforms, write_key_file
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix
from pramkit.release.frequencies import dp_frequencies

KEY = SecretKey(bytes(range(32)), "test key")
CENSUS_VARS = ["age", "sex", "marital_status"]


def _neighbours(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """``frame`` with one record's ``column`` moved to another of its categories (replace-one neighbours)."""
    other = frame.copy()
    values = other[column].astype(object)
    present = sorted({v for v in values if isinstance(v, str)})
    row = int(np.flatnonzero(values.notna().to_numpy())[0])
    values.iloc[row] = next(v for v in present if v != values.iloc[row])
    other[column] = values
    return other


def _true_counts(frame: pd.DataFrame, column: str, categories: list) -> np.ndarray:
    counts = frame[column].dropna().astype(str).value_counts()          # a CSV's values, as text
    return np.array([int(counts.get(str(c), 0)) for c in categories])


def _design(data: Path, out: Path, key_file: Path, columns: list[str]) -> Manifest:
    assert main(["design", str(data), "--vars", ",".join(columns), "--epsilon", "3", "--key-file", str(key_file),
                 "--out", str(out), "--quiet"]) == 0
    return Manifest.read(out)


def _noise(manifest: Manifest, frame: pd.DataFrame, column: str) -> np.ndarray:
    noisy = np.array(manifest.ledger.dp_counts[column]["noisy"])
    return noisy - _true_counts(frame, column, list(manifest[column].matrix.categories))


# -- 1. the design step's noise depends on the data it measures --------------------------------------------


@pytest.mark.parametrize("source", ["census", "eusilc"])
def test_neighbouring_files_designed_with_one_key_publish_independent_noise(source: str, tmp_path: Path) -> None:
    """Two files that differ in one record, designed with one key file: the changed histogram's noise
    differs (its published difference is not the exact difference of the true counts); a file designed
    twice gets the same noise."""
    if source == "census":
        frame, columns, changed = census(3_000).astype(object), CENSUS_VARS, "age"
    else:
        if not SDC_DATA.is_dir():
            pytest.skip("the shared EU-SILC file is not here")
        frame = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", usecols=["db040", "rb090", "pl030"], dtype=str)
        frame = frame.head(4_000)
        columns, changed = ["db040", "rb090", "pl030"], "pl030"         # pl030 has missing values
    other = _neighbours(frame, changed)
    frame.to_csv(tmp_path / "a.csv", index=False)
    other.to_csv(tmp_path / "b.csv", index=False)
    key = write_key_file(tmp_path / "key")
    a = _design(tmp_path / "a.csv", tmp_path / "a.json", key, columns)
    again = _design(tmp_path / "a.csv", tmp_path / "again.json", key, columns)
    b = _design(tmp_path / "b.csv", tmp_path / "b.json", key, columns)
    assert a.ledger.dp_counts == again.ledger.dp_counts                 # same data, same question: same answer
    true_difference = _true_counts(frame, changed, list(a[changed].matrix.categories)) - \
        _true_counts(other, changed, list(a[changed].matrix.categories))
    assert np.abs(true_difference).sum() == 2                           # one record moved: L1 distance 2
    published_difference = np.array(a.ledger.dp_counts[changed]["noisy"]) - np.array(b.ledger.dp_counts[changed]["noisy"])
    assert not np.array_equal(published_difference, true_difference)
    assert not np.array_equal(_noise(a, frame, changed), _noise(b, other, changed))


def test_keyed_noise_of_neighbouring_histograms_collides_as_independent_draws_do() -> None:
    """Over many keys, a cell's noise on two neighbouring histograms is equal with the collision probability
    of two independent discrete Laplace variables, sum_k P(k)^2 = ((1-q)/(1+q))^2 (1+q^2)/(1-q^2), not 1."""
    eps, cells = 1.0, ["a", "b"]
    a, b = np.array([1_000, 1_000]), np.array([1_001, 999])
    q = math.exp(-eps / 2)                                              # sensitivity 2
    collide = ((1 - q) / (1 + q)) ** 2 * (1 + q * q) / (1 - q * q)
    trials, equal, same = 1_500, 0, 0
    for i in range(trials):
        key = SecretKey(i.to_bytes(32, "little"), f"key {i}")
        keyed = {"x": (key, cells)}
        na = np.array(dp_frequencies({"x": a}, eps, None, keyed=keyed)[1]["x"]["noisy"]) - a
        nb = np.array(dp_frequencies({"x": b}, eps, None, keyed=keyed)[1]["x"]["noisy"]) - b
        again = np.array(dp_frequencies({"x": a}, eps, None, keyed=keyed)[1]["x"]["noisy"]) - a
        equal += int(na[0] == nb[0])
        same += int(np.array_equal(na, again))
    sd = math.sqrt(trials * collide * (1 - collide))
    assert same == trials
    assert abs(equal - trials * collide) < 5 * sd, (equal, trials * collide)


# -- 2. every release draws from its own stream ----------------------------------------------------------------


def _rr(categories: list, eps: float) -> PramMatrix:
    return randomized_response(categories, eps)


@pytest.fixture(scope="module")
def people() -> pd.DataFrame:
    return census(20_000).astype(object)


def test_release_keys_of_two_manifests_or_labels_share_no_uniform(people: pd.DataFrame) -> None:
    """The derived streams themselves: no row gets the same uniform twice, and the streams are uncorrelated."""
    cats = sorted(people["sex"].unique())
    one, two = Manifest.of({"sex": _rr(cats, 1.0)}), Manifest.of({"sex": _rr(cats, 1.5)})
    keys = [release_key(KEY, one), release_key(KEY, two), release_key(KEY, one, "wave 2")]
    n = 200_000
    draws = [uniforms(k, "sex", 0, n) for k in keys]
    for i in range(3):
        for j in range(i + 1, 3):
            assert not np.any(draws[i] == draws[j])
            assert np.intersect1d(draws[i], draws[j]).size == 0
            assert abs(np.corrcoef(draws[i], draws[j])[0, 1]) < 5 / math.sqrt(n)
    assert np.array_equal(draws[0], uniforms(release_key(KEY, one), "sex", 0, n))  # the same release: the same draws
    assert not np.array_equal(draws[0], uniforms(KEY, "sex", 0, n))                 # never the key's own stream


@pytest.mark.parametrize("second", ["another manifest", "another label"])
def test_two_releases_of_one_file_agree_as_independent_draws_do(people: pd.DataFrame, second: str) -> None:
    """Released twice with one key: the two released columns agree on about
    sum_i sum_j M[x_i, j] M'[x_i, j] records (independent draws), never on all records whose draw is shared."""
    cats = sorted(people["marital_status"].unique())
    m1 = _rr(cats, 1.0)
    first = Manifest.of({"marital_status": m1})
    if second == "another manifest":
        m2 = _rr(cats, 1.5)
        other, label = Manifest.of({"marital_status": m2}), ""
    else:
        m2, other, label = m1, first, "wave 2"
    a = perturb_frame(people, first, key=KEY).data["marital_status"].astype(object).to_numpy()
    b = perturb_frame(people, other, key=KEY, release=label).data["marital_status"].astype(object).to_numpy()
    index = {c: i for i, c in enumerate(cats)}
    x = np.array([index[v] for v in people["marital_status"]])
    p = (m1.matrix * m2.matrix).sum(axis=1)[x]                   # P(agree) of each record
    expected, sd = p.sum(), math.sqrt((p * (1 - p)).sum())
    agree = int((a == b).sum())
    assert abs(agree - expected) < 5 * sd, (agree, expected, sd)
    assert agree < len(people) - 10 * sd                                  # far from a shared stream
    same = perturb_frame(people, other, key=KEY, release=label).data["marital_status"].astype(object).to_numpy()
    assert np.array_equal(b, same)


def test_two_labels_shuffle_in_independent_orders() -> None:
    m = Manifest.of({"sex": _rr(["f", "m"], 1.0)})
    a, b = permutation(release_key(KEY, m), 10_000), permutation(release_key(KEY, m, "wave 2"), 10_000)
    assert np.array_equal(a, permutation(release_key(KEY, m), 10_000))
    assert int((a == b).sum()) < 10                                       # about one fixed point expected


# -- reproduction: byte for byte with key, manifest and label -------------------------------------------------


def test_a_release_is_made_again_byte_for_byte_with_its_key_manifest_and_label(people: pd.DataFrame,
                                                                              tmp_path: Path) -> None:
    """CSV through the CLI (two chunk sizes, the label in the receipt), the same release in memory, and the
    audit's key check (it reads the label from the receipt)."""
    from pramkit.audit.release import release_audit

    data = people.head(5_000).copy()
    data.loc[::13, "age"] = None
    data.to_csv(tmp_path / "data.csv", index=False)
    manifest = Manifest.of({"age": _rr(sorted(data["age"].dropna().unique()), 1.0),
                            "sex": _rr(["female", "male"], 2.0)})
    manifest.write(tmp_path / "m.json")
    key = write_key_file(tmp_path / "key")
    runs = {}
    for name, chunk in (("a", "100000"), ("b", "777")):
        assert main(["apply", str(tmp_path / "data.csv"), "--manifest", str(tmp_path / "m.json"), "--key-file",
                     str(key), "--out", str(tmp_path / f"{name}.csv"), "--release", "wave 2", "--chunk-rows", chunk,
                     "--quiet"]) == 0
        runs[name] = (tmp_path / f"{name}.csv").read_bytes()
    assert runs["a"] == runs["b"]
    assert read_receipt(tmp_path / "a.csv")["release"] == "wave 2"
    unlabelled = apply_file(tmp_path / "data.csv", tmp_path / "m.json", tmp_path / "c.csv", key=key)
    assert unlabelled.release == "" and read_receipt(tmp_path / "c.csv")["release"] == ""
    assert (tmp_path / "c.csv").read_bytes() != runs["a"]
    memory = perturb_frame(pd.read_csv(tmp_path / "data.csv", dtype=str, keep_default_na=False, na_values=["", "NA"]),
                           Manifest.read(tmp_path / "m.json"), key=SecretKey.from_file(key), release="wave 2")
    written = pd.read_csv(tmp_path / "a.csv", dtype=str, keep_default_na=False, na_values=["", "NA"])
    for column in ("age", "sex"):
        assert memory.data[column].tolist() == written[column].tolist()
    assert memory.result.release == "wave 2"
    assert memory.result.key_fingerprint == SecretKey.from_file(key).fingerprint   # the user's key, not the release key
    checks = release_audit(tmp_path / "m.json", tmp_path / "data.csv", tmp_path / "a.csv", key=key)
    assert [c.passed for c in checks if c.field == "derived again with the key"] == [True]


def test_a_manifest_object_and_its_file_are_one_release(tmp_path: Path) -> None:
    m = Manifest.of({"sex": _rr(["f", "m"], 1.0)})
    path = m.write(tmp_path / "m.json")
    assert release_digest(path) == release_digest(m)
    relaid = tmp_path / "relaid.json"
    relaid.write_text(json.dumps(json.loads(path.read_text()), sort_keys=True))   # other bytes, same content
    assert release_digest(relaid) == release_digest(m)
    assert release_key(KEY, Manifest.read(relaid)).material == release_key(KEY, m).material


def test_a_release_key_of_another_release_is_refused() -> None:
    one, two = Manifest.of({"sex": _rr(["f", "m"], 1.0)}), Manifest.of({"sex": _rr(["f", "m"], 2.0)})
    derived = release_key(KEY, one)
    with pytest.raises(ParameterError, match="another release"):
        release_key(derived, two)
    with pytest.raises(ParameterError, match="another release"):
        release_key(derived, one, "wave 2")


def test_the_release_digest_is_the_manifest_content_without_when_and_by_whom(tmp_path: Path) -> None:
    """Recomputed from the file's text: SHA-256 of its canonical JSON without created, pramkit_version and
    seconds at any depth."""
    import hashlib

    m = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])}, created="2024-01-01T00:00:00Z")
    text = m.write(tmp_path / "m.json").read_text()

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("created", "pramkit_version", "seconds")}
        return [strip(v) for v in x] if isinstance(x, list) else x

    canonical = json.dumps(strip(json.loads(text)), sort_keys=True, separators=(",", ":"))
    assert release_digest(m) == hashlib.sha256(canonical.encode()).hexdigest()
    later = json.loads(text) | {"created": "2030-01-01T00:00:00Z", "pramkit_version": "9.9"}
    (tmp_path / "later.json").write_text(json.dumps(later))
    assert release_digest(tmp_path / "later.json") == release_digest(m)


# -- swaps: the key derived for what is swapped -----------------------------------------------------------------


def test_a_swap_of_other_data_is_drawn_anew_and_of_the_same_data_again() -> None:
    from pramkit.swap.run import plan_swap, swap_frame

    rng = np.random.default_rng(3)
    n = 400
    data = pd.DataFrame({"hid": np.arange(n), "region": rng.choice(list("NSEW"), n), "size": rng.integers(1, 4, n)})
    plan = plan_swap("hid", ["region"], similar=[["size"]], rate=0.5)
    a = swap_frame(data, plan, key=KEY).frame["region"].to_numpy()
    again = swap_frame(data, plan, key=KEY).frame["region"].to_numpy()
    changed = data.copy()
    changed.loc[0, "size"] = 4 - changed.loc[0, "size"] if changed.loc[0, "size"] != 2 else 3
    b = swap_frame(changed, plan, key=KEY).frame["region"].to_numpy()
    assert np.array_equal(a, again)
    moved_a, moved_b = a != data["region"].to_numpy(), b != changed["region"].to_numpy()
    assert int((moved_a != moved_b)[1:].sum()) > 20                      # other households are swapped anew


# -- property: derived keys differ ------------------------------------------------------------------------------

_LABELS = st.text(st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")),
                  max_size=12).filter(lambda s: s == s.strip())
_DIGESTS = st.text("0123456789abcdef", min_size=1, max_size=64)


@settings(max_examples=200, deadline=None)
@given(_DIGESTS, _LABELS, _DIGESTS, _LABELS)
def test_release_keys_differ_for_different_identities(d1: str, l1: str, d2: str, l2: str) -> None:
    import unicodedata

    a, b = KEY.for_release(d1, l1), KEY.for_release(d2, l2)
    same = (d1, unicodedata.normalize("NFC", l1)) == (d2, unicodedata.normalize("NFC", l2))
    assert (a.material == b.material) == same
    assert a.material != KEY.material and len(a.material) == 32
    assert a.fingerprint != KEY.fingerprint


# -- bad input --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("label, says", [
    ("", "--release needs a label"),
    ("wave\n2", "control or invisible character (U+000A)"),
    ("wave\x072", "control or invisible character (U+0007)"),
    ("wave\u200b2", "control or invisible character (U+200B)"),
    (" wave 2", "begins or ends with a blank"),
    ("x" * 201, "at most 200"),
])
def test_a_bad_release_label_is_one_line_and_writes_nothing(label: str, says: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    census(200).to_csv(tmp_path / "data.csv", index=False)
    Manifest.of({"sex": _rr(["female", "male"], 1.0)}).write(tmp_path / "m.json")
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["apply", str(tmp_path / "data.csv"), "--manifest", str(tmp_path / "m.json"),
                 "--out", str(tmp_path / "out.csv"), "--release", label, "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and says in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# -- Spark: the same release key, derived once on the driver ------------------------------------------------------


@pytest.mark.slow
def test_spark_releases_what_the_local_engine_releases_under_a_label(spark, tmp_path: Path) -> None:
    """Shuffled, under a label, from a file Spark reads in several partitions: the part files read in order
    are the local release row for row, and both receipts record the label."""
    from pramkit.engine import spark as ps

    frame = census(2_000, seed=5)[["age", "sex", "marital_status"]].astype(str)
    frame.to_csv(tmp_path / "in.csv", index=False)
    Manifest.of({"age": _rr(sorted(frame["age"].unique()), 2.0), "sex": _rr(sorted(frame["sex"].unique()), 1.0)}
                ).write(tmp_path / "m.json")
    (tmp_path / "key").write_bytes(KEY.material)
    apply_file(tmp_path / "in.csv", tmp_path / "m.json", tmp_path / "local.csv", key=KEY, shuffle=True,
               public_columns=["marital_status"], release="wave 2")
    out = tmp_path / "spark.csv"
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "20000")  # the file (58 KB) in three partitions
    try:
        assert ps.read(spark, tmp_path / "in.csv").rdd.getNumPartitions() > 2
        assert main(["apply", str(tmp_path / "in.csv"), "--manifest", str(tmp_path / "m.json"), "--out", str(out),
                     "--key-file", str(tmp_path / "key"), "--engine", "spark", "--spark-master", "local[1]",
                     "--shuffle", "--public-columns", "marital_status", "--release", "wave 2", "--quiet"]) == 0
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    parts = sorted(p for p in out.iterdir() if p.name.endswith(".csv"))
    released = pd.concat([pd.read_csv(p, dtype=str) for p in parts], ignore_index=True)
    expected = pd.read_csv(tmp_path / "local.csv", dtype=str)
    pd.testing.assert_frame_equal(released, expected)
    assert read_receipt(out)["release"] == read_receipt(tmp_path / "local.csv")["release"] == "wave 2"
    unlabelled = pd.read_csv(apply_file(tmp_path / "in.csv", tmp_path / "m.json", tmp_path / "plain.csv", key=KEY,
                                        shuffle=True, public_columns=["marital_status"]).output, dtype=str)
    assert not unlabelled.equals(expected)
