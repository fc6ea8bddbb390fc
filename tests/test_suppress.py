"""Local suppression to k-anonymity (``pramkit suppress``, :mod:`pramkit.suppress`), issue 66.

Checked against code written here, never against numbers the code under test produced:

* the released files are k-anonymous, by a frequency count written here (pure Python over the distinct
  combinations, the released CSV read with the ``csv`` module), under both rules for a missing value, on
  sdcMicro's testdata and on EU-SILC;
* the exact program's count is the true optimum, found by enumerating every suppression of every record of
  small random frames (Hypothesis) and of a fixed file of a few dozen records;
* the heuristic is never below the lower bound nor below the optimum, and the bound never above the optimum;
* the audit passes a correct release and fails, naming the field, a receipt with k or the digest forged and a
  released file edited to break k-anonymity;
* bad input is one line, exit 2, nothing written, the input unchanged; a write that fails leaves nothing.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import itertools
import json
import random
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA
from conftest import run_cli as cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pramkit.atomic as atomic
from pramkit.suppress import cells_to_suppress, counting_bound, greedy, suppression_plan

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "sex"]
needs_data = pytest.mark.skipif(not SDC_DATA.is_dir(), reason="../shared/data/sdcmicro is not available")


# ------------------------------------------------------------------ the independent count

def brute_frequencies(rows: Sequence[Sequence[Any]], missing: str) -> list[int]:
    """Each record's frequency: the records that agree with it on every key (``None`` missing: any value under
    ``"any"``, a value of its own under ``"own"``), counted over the distinct combinations."""
    counts = Counter(tuple(r) for r in rows)

    def agree(a: tuple, b: tuple) -> bool:
        return all(x == y or (missing == "any" and (x is None or y is None)) for x, y in zip(a, b))

    per = {a: sum(n for b, n in counts.items() if agree(a, b)) for a in counts}
    return [per[tuple(r)] for r in rows]


def brute_k_anonymous(rows: Sequence[Sequence[Any]], k: int, missing: str,
                      strata: Sequence[Any] | None = None) -> bool:
    if strata is None:
        return min(brute_frequencies(rows, missing), default=k) >= k
    groups: dict[Any, list] = {}
    for r, s in zip(rows, strata):
        groups.setdefault(s, []).append(r)
    return all(brute_k_anonymous(g, k, missing) for g in groups.values())


def brute_optimum(rows: Sequence[Sequence[Any]], k: int, missing: str) -> int:
    """The fewest suppressions, by trying every set of suppressions of every record (the product of each
    record's subsets of its present keys), the cheapest first."""
    m = len(rows[0])
    options = []
    for r in rows:
        present = [v for v in range(m) if r[v] is not None]
        options.append([s for size in range(len(present) + 1) for s in itertools.combinations(present, size)])
    best = None
    for choice in itertools.product(*options):
        cost = sum(len(s) for s in choice)
        if best is not None and cost >= best:
            continue
        released = [tuple(None if v in s else r[v] for v in range(m)) for r, s in zip(rows, choice)]
        if brute_k_anonymous(released, k, missing):
            best = cost
    assert best is not None
    return best


def as_rows(codes: np.ndarray, mask: np.ndarray | None = None) -> list[tuple]:
    codes = np.asarray(codes)
    if mask is not None:
        codes = np.where(mask, -1, codes)
    return [tuple(None if x < 0 else int(x) for x in row) for row in codes]


def read_keys(path: Path, keys: Sequence[str]) -> list[tuple]:
    """The keys of a released CSV file as written: an empty field is missing."""
    with path.open(newline="", encoding="utf-8") as fh:
        return [tuple(row[k] if row[k] != "" else None for k in keys) for row in csv.DictReader(fh)]



# ------------------------------------------------------------------ the independent count is right

def test_the_brute_count_follows_both_rules() -> None:
    rows = [("a", "x"), ("a", None), ("b", "x"), (None, None)]
    assert brute_frequencies(rows, "any") == [3, 3, 2, 4]
    assert brute_frequencies(rows, "own") == [1, 1, 1, 1]
    assert brute_optimum([("a", "x"), ("a", "x"), ("a", "y")], 2, "any") == 1
    assert brute_optimum([("a", "x"), ("a", "x"), ("a", "y")], 2, "own") == 3  # (a, NA) needs two records


# ------------------------------------------------------------------ (a) k-anonymous on the shared data

@pytest.fixture(scope="module")
def testdata() -> pd.DataFrame:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    return pd.read_csv(SDC_DATA / "testdata.csv", dtype=str)


@pytest.fixture(scope="module")
def suppressed_testdata(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``pramkit suppress`` of testdata.csv on its five keys, for a given k and missing rule: its released file,
    exit status, stdout and stderr, run once per pair for the module (the release is read, never changed)."""
    folder = tmp_path_factory.mktemp("suppressed")

    @functools.cache
    def run(k: int, missing: str) -> tuple[Path, int, str, str]:
        out = folder / f"r-{k}-{missing}.csv"
        code, said, err = cli("suppress", SDC_DATA / "testdata.csv", "--keys", ",".join(TESTDATA_KEYS), "--k", k,
                              "--missing", missing, "--out", out, "--json")
        return out, code, said, err

    return run


@needs_data
@pytest.mark.parametrize("missing", ["any", "own"])
@pytest.mark.parametrize("k", [2, 3])
def test_testdata_is_k_anonymous_after_suppression(testdata, suppressed_testdata, missing, k) -> None:
    rows = [tuple(r) for r in testdata[TESTDATA_KEYS].itertuples(index=False)]
    assert not brute_k_anonymous(rows, k, missing)  # there is something to do
    out, code, said, err = suppressed_testdata(k, missing)
    assert code == 0, said + err
    result = json.loads(said)
    released = read_keys(out, TESTDATA_KEYS)
    assert len(released) == len(rows)
    assert brute_k_anonymous(released, k, missing)
    # the count printed is the count in the file, and nothing but key values changed
    suppressed = sum(a is not None and b is None for r, s in zip(rows, released) for a, b in zip(r, s))
    assert suppressed == result["total"] == sum(result["suppressed"].values())
    assert all(b is None or a == b for r, s in zip(rows, released) for a, b in zip(r, s))
    others = [c for c in testdata.columns if c not in TESTDATA_KEYS]
    assert pd.read_csv(out, dtype=str)[others].equals(testdata[others])
    assert result["optimal"] and result["lower_bound"] == result["total"]  # the exact program solves these


@needs_data
@pytest.mark.parametrize("missing", ["any", "own"])
def test_testdata_heuristic_is_k_anonymous_and_above_the_optimum(testdata, suppressed_testdata, missing) -> None:
    """The heuristic against the exact program on the same file: for k = 2 and 3 the optimum that ``pramkit
    suppress`` proved (its exact program, run once for this test and the one above), for k = 5 the library's."""
    frame = testdata[TESTDATA_KEYS]
    rows = [tuple(r) for r in frame.itertuples(index=False)]
    for k in (2, 3, 5):
        cells, plan = cells_to_suppress(frame, TESTDATA_KEYS, k, missing=missing, method="heuristic")
        released = [tuple(None if cells.iat[i, j] else v for j, v in enumerate(r)) for i, r in enumerate(rows)]
        assert brute_k_anonymous(released, k, missing)
        assert plan.lower_bound <= plan.count
        if k < 5:  # the exact program on the same file, through the command
            _, code, said, err = suppressed_testdata(k, missing)
            assert code == 0, said + err
            exact = json.loads(said)
            assert exact["method"] == "exact" and exact["optimal"]
            assert plan.lower_bound <= exact["total"] <= plan.count
        elif missing == "own":  # the exact program on the same file
            _, exact = cells_to_suppress(frame, TESTDATA_KEYS, k, missing=missing, method="exact")
            assert exact.optimal and plan.lower_bound <= exact.count <= plan.count


@needs_data
def test_strata_make_each_stratum_k_anonymous(testdata) -> None:
    frame = testdata[["roof", "walls", "water", "urbrur"]]
    cells, plan = cells_to_suppress(frame, ["roof", "walls", "water"], 3, strata="urbrur", missing="own")
    rows = [tuple(None if cells.iat[i, j] else v for j, v in enumerate(r))
            for i, r in enumerate(frame[["roof", "walls", "water"]].itertuples(index=False))]
    original = [tuple(r) for r in frame[["roof", "walls", "water"]].itertuples(index=False)]
    assert not brute_k_anonymous(original, 3, "own", strata=list(frame["urbrur"]))
    assert brute_k_anonymous(rows, 3, "own", strata=list(frame["urbrur"])) and plan.count > 0


@needs_data
@pytest.mark.parametrize("missing", ["any", "own"])
def test_eusilc_with_missing_values_is_k_anonymous(tmp_path, missing) -> None:
    """EU-SILC: pb220a is missing for many records (an empty field); db040 x hsize x rb090 x pb220a is too large for
    the exact program under "any" (the heuristic and its bound) and small enough under "own"."""
    keys = ["db040", "hsize", "rb090", "pb220a"]
    original = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", dtype=str, keep_default_na=False)
    rows = [tuple(None if v == "" else v for v in r) for r in original[keys].itertuples(index=False)]
    assert any(None in r for r in rows)
    out = tmp_path / "r.csv"
    code, said, err = cli("suppress", SDC_DATA / "eusilc_laeken.csv", "--keys", ",".join(keys), "--k", 3,
                          "--missing", missing, "--out", out, "--json", "--time-limit", "30")
    assert code == 0, said + err
    result = json.loads(said)
    released = read_keys(out, keys)
    assert brute_k_anonymous(released, 3, missing)
    made_missing = sum(a is not None and b is None for r, s in zip(rows, released) for a, b in zip(r, s))
    assert made_missing == result["total"]
    assert all(b is None or a == b for r, s in zip(rows, released) for a, b in zip(r, s))
    assert result["lower_bound"] <= result["total"]
    code, said, err = cli("audit", "--manifest", Path(str(out) + ".suppression.json"), "--released", out,
                          "--original", SDC_DATA / "eusilc_laeken.csv")
    assert code == 0, said + err


# ------------------------------------------------------------------ (b), (c) the optimum, by enumeration

def _frame(draw: Any, m: int | None = None) -> tuple[np.ndarray, int]:
    m = draw(st.integers(2, 3)) if m is None else m
    n = draw(st.integers(3, 7 if m == 2 else 5))
    cats = draw(st.integers(2, 3))
    cell = st.one_of(st.integers(0, cats - 1), st.just(-1)) if draw(st.booleans()) else st.integers(0, cats - 1)
    codes = np.array(draw(st.lists(st.lists(cell, min_size=m, max_size=m), min_size=n, max_size=n)))
    return codes, draw(st.integers(2, min(3, n)))


@st.composite
def small_frames(draw: Any) -> tuple[np.ndarray, int]:
    return _frame(draw)


@st.composite
def two_strata(draw: Any) -> tuple[np.ndarray, np.ndarray, int]:
    m = draw(st.integers(2, 3))
    (a, k), (b, _) = _frame(draw, m), _frame(draw, m)
    return a, b, min(k, len(b))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_frames(), st.sampled_from(["any", "own"]))
def test_the_exact_program_finds_the_true_optimum(frame, missing) -> None:
    codes, k = frame
    rows = as_rows(codes)
    optimum = brute_optimum(rows, k, missing)
    plan = suppression_plan(codes, k, missing=missing, method="exact")
    assert plan.optimal and plan.count == optimum == plan.lower_bound
    assert brute_k_anonymous(as_rows(codes, plan.mask), k, missing)
    assert not (plan.mask & (codes < 0)).any()  # only present values are suppressed
    # (c) the heuristic: k-anonymous, never below the optimum; the counting bound never above it
    mask = greedy(codes, k, missing)
    assert brute_k_anonymous(as_rows(codes, mask), k, missing)
    assert mask.sum() >= optimum >= counting_bound(codes, k, missing)
    heuristic = suppression_plan(codes, k, missing=missing, method="heuristic")
    assert heuristic.lower_bound <= optimum <= heuristic.count


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(two_strata(), st.sampled_from(["any", "own"]))
def test_with_strata_the_optimum_is_each_stratums(frames, missing) -> None:
    """Two strata: the exact program's count is the sum of each stratum's optimum by enumeration, and each stratum
    is k-anonymous on its own (a record of the other stratum never counts)."""
    a, b, k = frames
    codes = np.vstack([a, b])
    strata = np.array([0] * len(a) + [1] * len(b))
    plan = suppression_plan(codes, k, missing=missing, strata=strata, method="exact")
    assert plan.count == brute_optimum(as_rows(a), k, missing) + brute_optimum(as_rows(b), k, missing)
    assert brute_k_anonymous(as_rows(codes, plan.mask), k, missing, strata=list(strata))


def test_a_file_of_a_few_dozen_records_has_its_true_optimum() -> None:
    """30 records, 2 keys, rare combinations (c, z): the optimum found by trying every set of suppressed cells,
    the smallest sets first."""
    rng = random.Random(3)
    rows = [(rng.choice("aaabbc"), rng.choice("xxxyyz")) for _ in range(30)]
    codes = np.array([["abc".index(a), "xyz".index(b)] for a, b in rows])
    for missing in ("any", "own"):
        for k in (2, 3):
            cells = [(i, v) for i in range(len(rows)) for v in range(2)]
            optimum = next(t for t in range(61) for chosen in itertools.combinations(cells, t)
                           if brute_k_anonymous([tuple(None if (i, v) in chosen else r[v] for v in range(2))
                                                 for i, r in enumerate(rows)], k, missing))
            plan = suppression_plan(codes, k, missing=missing, method="exact")
            assert plan.count == optimum, (missing, k)


@pytest.mark.parametrize("method", ["exact", "heuristic"])
def test_importance_decides_which_key_is_suppressed(method) -> None:
    """(x, q) is unique; under sdcMicro's rule suppressing a or b costs one either way: the least important key
    goes."""
    frame = pd.DataFrame({"a": ["x", "x", "y", "y", "x"], "b": ["p", "p", "q", "q", "q"]})
    for order, lost in ((["a", "b"], "a"), (["b", "a"], "b")):
        cells, plan = cells_to_suppress(frame, ["a", "b"], 2, importance=order, method=method, missing="any")
        assert plan.count == 1 and cells[lost].iat[4] and cells.sum().sum() == 1, (order, cells)


def test_under_any_k_minus_one_blank_records_suffice() -> None:
    """Why docs/suppression.md warns about the rule: a record with every key missing agrees with every record, so
    k - 1 of them make any file k-anonymous under "any" (the optimum is at most (k - 1) x keys)."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 6, size=(40, 3))
    for k in (2, 3):
        plan = suppression_plan(codes, k, missing="any", method="exact")
        assert plan.count <= (k - 1) * 3
        blank = codes.copy()
        blank[: k - 1] = -1
        assert brute_k_anonymous(as_rows(blank), k, "any")


# ------------------------------------------------------------------ (d) the audit

@pytest.fixture(scope="module")
def suppressed_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of one ``pramkit suppress`` release (testdata, three keys, k = 3), made once for the module."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    folder = tmp_path_factory.mktemp("release")
    code, said, err = cli("suppress", SDC_DATA / "testdata.csv", "--keys", "roof,walls,water", "--k", 3, "--missing",
                          "own", "--out", folder / "r.csv", "--quiet")
    assert code == 0, said + err
    return folder


@pytest.fixture()
def release(suppressed_once, tmp_path) -> dict[str, Path]:
    """A copy of that release (the released file and its receipt, as written) for each test: they forge and edit it."""
    shutil.copytree(suppressed_once, tmp_path, dirs_exist_ok=True)
    return {"out": tmp_path / "r.csv", "receipt": tmp_path / "r.csv.suppression.json"}


def _audit(release: dict[str, Path], *extra: Any) -> tuple[int, str]:
    code, out, err = cli("audit", "--manifest", release["receipt"], "--released", release["out"], *extra)
    assert err == "", err
    return code, out


def test_the_receipt_holds_only_what_the_released_file_shows(release) -> None:
    raw = json.loads(release["receipt"].read_text())
    assert set(raw) == {"format", "version", "keys", "k", "missing", "strata", "guarantee", "released"}
    assert raw["released"] == {"file": "r.csv", "rows": 4580,
                               "sha256": hashlib.sha256(release["out"].read_bytes()).hexdigest()}
    assert raw["guarantee"] == ("every combination of the key variables roof, walls, water appears at least 3 times "
                                "in the released file (a missing value is a value of its own)")
    assert "suppressed" not in release["receipt"].read_text()


@needs_data
def test_the_audit_passes_a_correct_release(release) -> None:
    code, out = _audit(release)
    assert code == 0, out
    code, out = _audit(release, "--original", SDC_DATA / "testdata.csv")
    assert code == 0 and "the released file is the original with key values made missing" in out, out


@pytest.mark.parametrize(("field", "forge"), [
    ("k", lambda r: r.update(k=r["k"] + 40)),
    ("k", lambda r: r.update(k=r["k"] + 40, guarantee=r["guarantee"].replace("least 3", f"least {r['k'] + 40}"))),
    ("released.sha256", lambda r: r["released"].update(sha256="0" * 64)),
    ("released.rows", lambda r: r["released"].update(rows=4579)),
    ("keys", lambda r: r.update(keys=["roof", "walls"])),
    ("missing", lambda r: r.update(missing="every")),
    ("guarantee", lambda r: r.update(guarantee=r["guarantee"].replace("least 3", "least 30"))),
])
def test_the_audit_fails_a_forged_receipt_naming_the_field(release, field, forge) -> None:
    raw = json.loads(release["receipt"].read_text())
    forge(raw)
    release["receipt"].write_text(json.dumps(raw))
    code, out = _audit(release)
    assert code == 1, out
    failed = [line.split(": ")[1].split(", ") for line in out.splitlines() if line.startswith("FAIL")]
    assert any(field in fields for fields in failed), out


def test_the_audit_fails_a_released_file_edited_to_break_k_anonymity(release) -> None:
    """A suppressed value put back (the record unique again): the recount fails k, and the digest."""
    lines = release["out"].read_text().splitlines()
    header = lines[0].split(",")
    col = [header.index(k) for k in ("roof", "walls", "water")]
    i = next(i for i, line in enumerate(lines[1:], 1) if any(line.split(",")[c] == "" for c in col))
    cells = lines[i].split(",")
    cells[col[0]], cells[col[1]], cells[col[2]] = "9", "9", "9"  # a combination of its own
    lines[i] = ",".join(cells)
    release["out"].write_text("\n".join(lines) + "\n")
    code, out = _audit(release)
    assert code == 1
    failed = " ".join(line for line in out.splitlines() if line.startswith("FAIL"))
    assert "receipt: k:" in failed and "shared by fewer than 3" in failed and "released.sha256" in failed, out


# ------------------------------------------------------------------ (e) bad input

BAD = [
    (["--k", "1"], "k must be a whole number of at least 2"),
    (["--k", "4581"], "k = 4581 is more than the 4580 rows of testdata.csv"),
    (["--keys", "roof,nope"], "key 'nope' is not a column of testdata.csv"),
    (["--keys", "roof,roof"], "key 'roof' is named twice"),
    (["--importance", "roof,walls"], "--importance must name every key exactly once, least important first: it "
                                     "does not name 'water'"),
    (["--importance", "roof,walls,water,sex"], "'sex' is no key"),
    (["--importance", "roof,roof,walls"], "does not name 'water'"),
    (["--strata", "roof"], "stratum 'roof' is also a key"),
    (["--strata", "nope"], "stratum 'nope' is not a column"),
    (["--missing", "some"], "invalid choice: 'some'"),
    (["--strata", "age"], "fewer than k = 3"),
    (["--time-limit", "0"], "the time limit must be a positive number of seconds"),
]


@needs_data
@pytest.mark.parametrize(("flags", "message"), BAD, ids=[" ".join(f) for f, _ in BAD])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, flags, message) -> None:
    data = tmp_path / "testdata.csv"
    data.write_bytes((SDC_DATA / "testdata.csv").read_bytes())
    before = data.read_bytes()
    args = {"--keys": "roof,walls,water", "--k": "3"}
    rest = []
    for flag, value in zip(flags[::2], flags[1::2]):
        if flag in args:
            args[flag] = value
        else:
            rest += [flag, value]
    code, out, err = cli("suppress", data, *[x for kv in args.items() for x in kv], *rest, "--out", tmp_path / "o.csv")
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["testdata.csv"] and data.read_bytes() == before


@needs_data
def test_the_output_cannot_be_the_input_nor_replace_a_file_without_force(tmp_path) -> None:
    data = tmp_path / "d.csv"
    data.write_bytes((SDC_DATA / "testdata.csv").read_bytes())
    before = data.read_bytes()
    code, _, err = cli("suppress", data, "--keys", "roof,walls", "--k", 2, "--out", data, "--force")
    assert code == 2 and err.count("\n") == 1 and data.read_bytes() == before
    (tmp_path / "o.csv").write_text("old\n")
    code, _, err = cli("suppress", data, "--keys", "roof,walls", "--k", 2, "--out", tmp_path / "o.csv")
    assert code == 2 and "exists" in err and (tmp_path / "o.csv").read_text() == "old\n"
    assert not (tmp_path / "o.csv.suppression.json").exists()


# ------------------------------------------------------------------ (f) a write that fails leaves nothing

def _enospc(*_args: Any, **_kwargs: Any) -> None:
    import errno

    raise OSError(errno.ENOSPC, "No space left on device")


@needs_data
@pytest.mark.parametrize("point", ["fsync", "rename", "receipt rename"])
def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch, point) -> None:
    data = tmp_path / "d.csv"
    data.write_bytes((SDC_DATA / "testdata.csv").read_bytes())
    if point == "fsync":
        monkeypatch.setattr(atomic, "_fsync", _enospc)
    elif point == "rename":
        monkeypatch.setattr(atomic.os, "replace", _enospc)
        monkeypatch.setattr(atomic.os, "link", _enospc)
    else:  # the released file is in place, its receipt fails: the file goes too
        commit = atomic._commit

        def failing(tmp: Path, target: Path, **kwargs: Any) -> None:
            if target.name.endswith(".suppression.json"):
                _enospc()
            commit(tmp, target, **kwargs)

        monkeypatch.setattr(atomic, "_commit", failing)
    code, _, err = cli("suppress", data, "--keys", "roof,walls,water", "--k", 3, "--out", tmp_path / "o.csv")
    assert code == 2 and "No space left on device" in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]
