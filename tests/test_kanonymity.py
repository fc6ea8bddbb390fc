"""Records and cells below k, l-diversity (``pramkit risk --k-anonymity K --l-diversity S``,
:mod:`pramkit.risk.kanonymity`) and keyed random identifiers (:mod:`pramkit.engine.ids`), issue 66.

Checked against code written here, never against numbers the code under test produced:

* the records below k, their weighted count and the cells below k of every table against a brute-force count
  (pure Python loops over the records' distinct key tuples, each with its number of records and their total
  weight, ``None`` missing), under both rules for a missing value, on sdcMicro's testdata and on EU-SILC, and on
  small random frames (Hypothesis);
* the l-diversity against a direct pandas ``groupby`` (``nunique`` and the entropy of ``value_counts``);
* a file released by ``pramkit suppress --k K`` has no record below K, as ``pramkit risk --k-anonymity K`` counts;
* bad input is one line, exit 2, nothing written;
* the new ids are one-to-one, keep the groups, are reproducible with the key and unrelated across keys, and leave
  no trace of the old order (a rank correlation near 0 on testdata's ``ori_hid``).
"""

from __future__ import annotations

import itertools
import json
import math
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

from pramkit.engine.ids import new_ids
from pramkit.risk.kanonymity import k_anonymity_violations, l_diversity, record_frequencies, risky_cells

needs_data = pytest.mark.skipif(not SDC_DATA.is_dir(), reason="../shared/data/sdcmicro is not available")
TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "sex"]
SEVEN_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
EUSILC_KEYS = ["db040", "hsize", "rb090", "pb220a"]


# ------------------------------------------------------------------ the independent count

def tuples(frame: pd.DataFrame, keys: Sequence[str]) -> list[tuple]:
    """The records' key values as tuples of texts, ``None`` for a missing value."""
    return [tuple(None if pd.isna(v) else str(v) for v in row) for row in frame[list(keys)].itertuples(index=False)]


def agrees(a: tuple, b: tuple, missing: str) -> bool:
    return all(x == y or (missing == "any" and (x is None or y is None)) for x, y in zip(a, b))


def brute_frequencies(rows: list[tuple], missing: str, weights: Sequence[float] | None = None) -> list[float]:
    """Each record's (weighted) frequency: the records that agree with it, a loop over the distinct key tuples,
    each standing for its records (their number, or their total weight)."""
    w = [1.0] * len(rows) if weights is None else list(weights)
    mass: dict[tuple, float] = {}
    for r, wj in zip(rows, w):
        mass[r] = mass.get(r, 0.0) + wj
    totals = {a: sum(m for b, m in mass.items() if agrees(a, b, missing)) for a in mass}
    return [totals[r] for r in rows]


def brute_agreeing(cell: tuple, sub: Counter, missing: str) -> int:
    """The records whose key tuple (counted in ``sub``, distinct tuple -> records) agree with ``cell``."""
    return sum(n for r, n in sub.items() if agrees(cell, r, missing))


def brute_cells(rows: list[tuple], k: int, missing: str, max_dim: int,
                width: int | None = None) -> dict[tuple[int, ...], tuple[int, int]]:
    """Per table (positions of its keys) its cells below k and the records in them, a loop over the distinct
    cells, each with its number of records."""
    out = {}
    width = len(rows[0]) if width is None else width
    for dim in range(1, max_dim + 1):
        for combo in itertools.combinations(range(width), dim):
            sub = Counter(tuple(r[j] for j in combo) for r in rows)
            if missing == "own":
                counts = sub
            else:
                counts = Counter({cell: brute_agreeing(cell, sub, "any") for cell in sub if None not in cell})
            below = [n for n in counts.values() if n < k]
            out[combo] = (len(below), sum(below))
    return out


def groupby_diversity(frame: pd.DataFrame, keys: list[str], s: str) -> pd.DataFrame:
    """Distinct and entropy l per class by pandas directly (missing keys a value of their own)."""
    g = frame.groupby(keys, dropna=False)[s]

    def entropy_l(values: pd.Series) -> float:
        p = values.value_counts(normalize=True)  # missing values left out
        return float(np.exp(-(p * np.log(p)).sum())) if len(p) else 0.0

    return pd.DataFrame({"distinct": g.nunique(), "entropy": g.apply(entropy_l), "records": g.size()})


def read(name: str) -> pd.DataFrame:
    return pd.read_csv(SDC_DATA / name, dtype=str, keep_default_na=False, na_values=[""])



# ------------------------------------------------------------------ records below k, real data

@needs_data
@pytest.mark.parametrize("keys", [TESTDATA_KEYS, SEVEN_KEYS], ids=["5 keys", "7 keys"])
@pytest.mark.parametrize("missing", ["own", "any"])
def test_records_below_k_on_testdata_are_the_brute_force_count(keys: list[str], missing: str) -> None:
    frame = read("testdata.csv")
    frame.loc[frame.index % 97 == 3, "walls"] = None  # some missing keys, so that the two rules differ
    rows = tuples(frame, keys)
    w = frame["sampling_weight"].astype(float).tolist()
    f = brute_frequencies(rows, missing)
    big_f = brute_frequencies(rows, missing, w)
    for k in (2, 3, 5):
        r = k_anonymity_violations(frame, keys, k, missing=missing, weights="sampling_weight")
        assert r.frequencies.tolist() == [int(x) for x in f]
        assert r.rows.tolist() == [i for i, x in enumerate(f) if x < k]
        assert r.violating == sum(x < k for x in f) and r.smallest == min(f)
        assert r.combinations == len(set(rows))
        assert r.combinations_below == len({row for row, x in zip(rows, f) if x < k})
        assert r.weighted_violating == sum(x < k for x in big_f)


def test_the_testdata_figures_stated_in_the_docs() -> None:
    """docs/suppression.md states them: 12, 24 and 79 records below 2, 3 and 5 on five keys (missing: own)."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    frame = read("testdata.csv")
    assert [k_anonymity_violations(frame, TESTDATA_KEYS, k).violating for k in (2, 3, 5)] == [12, 24, 79]


@needs_data
@pytest.mark.parametrize("missing", ["own", "any"])
def test_records_below_k_on_eusilc_within_strata(missing: str) -> None:
    frame = read("eusilc_laeken.csv")
    frame.loc[frame.index % 53 == 0, "pb220a"] = None
    keys = ["hsize", "rb090", "pb220a", "pl030"]
    rows, strata = tuples(frame, keys), frame["db040"].tolist()
    expected = [0] * len(rows)
    for s in set(strata):
        idx = [i for i, x in enumerate(strata) if x == s]
        for i, x in zip(idx, brute_frequencies([rows[i] for i in idx], missing)):
            expected[i] = int(x)
    r = k_anonymity_violations(frame, keys, 3, missing=missing, strata="db040")
    assert r.frequencies.tolist() == expected and r.violating == sum(x < 3 for x in expected)


# ------------------------------------------------------------------ cells below k

@needs_data
@pytest.mark.parametrize("missing", ["own", "any"])
def test_cells_below_k_on_testdata_are_the_brute_force_count(missing: str) -> None:
    frame = read("testdata.csv")
    frame.loc[frame.index % 89 == 5, "water"] = None
    keys = TESTDATA_KEYS
    rows = tuples(frame, keys)
    for k, top in ((2, 5), (3, 3), (5, 2)):
        r = risky_cells(frame, keys, k, max_dim=top, missing=missing)
        want = brute_cells(rows, k, missing, top)
        got = {tuple(keys.index(v) for v in names): (c, n) for names, c, n
               in r.tables[["variables", "cells", "records"]].itertuples(index=False)}
        assert got == want
        assert r.unsafe == sum(c for c, _ in want.values()) == len(r.cells)
        # every listed cell is one that the brute force counts below k, with its count
        tables: dict[tuple[int, ...], Counter] = {}  # each table's distinct cells and their records, counted once
        for names, values, count in r.cells.itertuples(index=False):
            idx = tuple(keys.index(v) for v in names)
            if idx not in tables:
                tables[idx] = Counter(tuple(row[j] for j in idx) for row in rows)
            assert count == brute_agreeing(values, tables[idx], missing) < k


def test_risky_cells_counts_below_k_where_sdcmicro_counts_at_most_its_threshold() -> None:
    """sdcMicro's riskyCells marks a cell unsafe when its count is at most the threshold: k = threshold + 1."""
    frame = pd.DataFrame({"a": list("xxxyyz"), "b": list("pqpqpq")})
    r = risky_cells(frame, ["a", "b"], 3, max_dim=1)
    # a: x 3 (safe), y 2, z 1 -> 2 cells below 3; b: p 3, q 3 -> none
    assert r.tables[["cells", "records"]].values.tolist() == [[2, 3], [0, 0]]


# ------------------------------------------------------------------ l-diversity

@needs_data
@pytest.mark.parametrize("sensitive", ["hhcivil", "electcon", "relat"])
def test_l_diversity_on_testdata_is_the_pandas_groupby(sensitive: str) -> None:
    frame = read("testdata.csv")
    frame.loc[frame.index % 41 == 1, sensitive] = None  # a missing sensitive value is no value
    frame.loc[frame.index % 67 == 2, "roof"] = None
    keys = ["urbrur", "roof", "walls", "water", "sex"]
    keys = [k for k in keys if k != sensitive]
    r = l_diversity(frame, keys, sensitive, l=3)
    want = groupby_diversity(frame, keys, sensitive)
    def plain(index: Any) -> tuple:
        return tuple(None if pd.isna(v) else v for v in (index if isinstance(index, tuple) else (index,)))

    expected = {plain(i): (d, e, n) for i, d, e, n in want[["distinct", "entropy", "records"]].itertuples()}
    got = {plain(tuple(row[:len(keys)])): tuple(row[len(keys):]) for row in
           r.classes[[*keys, f"{sensitive}_distinct", f"{sensitive}_entropy", "records"]].itertuples(index=False)}
    assert set(got) == set(expected)
    for cls, (d, e, n) in expected.items():
        assert got[cls][0] == d and math.isclose(got[cls][1], e, rel_tol=1e-12) and got[cls][2] == n
    (s,) = r.sensitive
    assert s.smallest_distinct == want["distinct"].min()
    assert math.isclose(s.smallest_entropy, want["entropy"].min(), rel_tol=1e-12)
    assert s.records_below == int(want.loc[want["distinct"] < 3, "records"].sum())
    assert s.classes_below == int((want["distinct"] < 3).sum())
    assert s.records_below_entropy == int(want.loc[want["entropy"] < 3 - 1e-9, "records"].sum())


@needs_data
def test_l_diversity_on_eusilc_is_the_pandas_groupby() -> None:
    frame = read("eusilc_laeken.csv")
    r = l_diversity(frame, ["db040", "hsize", "rb090"], ["pl030", "pb220a"])
    for s in r.sensitive:
        want = groupby_diversity(frame, ["db040", "hsize", "rb090"], s.sensitive)
        assert s.smallest_distinct == want["distinct"].min()
        assert s.records_below == int(want.loc[want["distinct"] < 2, "records"].sum())


# ------------------------------------------------------------------ small random frames

values = st.sampled_from(["a", "b", "c", None])


@st.composite
def frames(draw: Any) -> pd.DataFrame:
    n = draw(st.integers(0, 14))
    width = draw(st.integers(1, 3))
    data = {f"k{j}": draw(st.lists(values, min_size=n, max_size=n)) for j in range(width)}
    data["s"] = draw(st.lists(st.sampled_from(["1", "2", "3", None]), min_size=n, max_size=n))
    data["w"] = draw(st.lists(st.floats(0.0, 3.0), min_size=n, max_size=n))
    return pd.DataFrame(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=frames(), k=st.integers(2, 4), missing=st.sampled_from(["own", "any"]))
def test_random_frames_match_the_brute_force(frame: pd.DataFrame, k: int, missing: str) -> None:
    keys = [c for c in frame.columns if c.startswith("k")]
    rows = tuples(frame, keys)
    f = brute_frequencies(rows, missing)
    r = k_anonymity_violations(frame, keys, k, missing=missing, weights="w")
    assert r.frequencies.tolist() == [int(x) for x in f]
    assert r.rows.tolist() == [i for i, x in enumerate(f) if x < k]
    big_f = brute_frequencies(rows, missing, frame["w"].tolist())
    assert r.weighted_violating == sum(x < k - 1e-9 for x in big_f) or any(abs(x - k) < 1e-9 for x in big_f)
    cells = risky_cells(frame, keys, k, missing=missing)
    want = brute_cells(rows, k, missing, len(keys), len(keys))
    got = {tuple(keys.index(v) for v in names): (c, n) for names, c, n
           in cells.tables[["variables", "cells", "records"]].itertuples(index=False)}
    assert got == want
    d = l_diversity(frame, keys, "s", missing=missing)
    sens = [None if pd.isna(v) else v for v in frame["s"]]
    for i, row in enumerate(rows):  # the class of record i: the records agreeing with it
        seen = Counter(s for other, s in zip(rows, sens) if agrees(row, other, missing) and s is not None)
        total = sum(seen.values())
        entropy = math.exp(-sum(c / total * math.log(c / total) for c in seen.values())) if total else 0.0
        assert d.sensitive[0].distinct[i] == len(seen)
        assert math.isclose(d.sensitive[0].entropy[i], entropy, rel_tol=1e-9, abs_tol=1e-12)


def test_the_suppress_module_keeps_its_frequencies() -> None:
    from pramkit.suppress import frequencies, key_codes

    x = np.array([[0, 0], [0, 1], [0, -1], [1, 1]])
    assert frequencies is record_frequencies
    assert frequencies(x, "any").tolist() == [2, 2, 3, 1]
    assert key_codes(pd.DataFrame({"a": ["y", None, "x"]}), ["a"]).ravel().tolist() == [1, -1, 0]


# ------------------------------------------------------------------ the command, and after pramkit suppress

@needs_data
@pytest.mark.parametrize("missing", ["own", "any"])
def test_no_record_is_below_k_after_pramkit_suppress(tmp_path: Path, missing: str) -> None:
    data = SDC_DATA / "testdata.csv"
    before = brute_frequencies(tuples(read("testdata.csv"), TESTDATA_KEYS), missing)  # the original's, for every k
    for k in (2, 3, 5):
        out = tmp_path / f"s{k}.csv"
        code, _, err = cli("suppress", data, "--keys", ",".join(TESTDATA_KEYS), "--k", k, "--missing", missing,
                           "--out", out, "--quiet", "--method", "heuristic")
        assert code == 0, err
        code, text, err = cli("risk", out, "--keys", ",".join(TESTDATA_KEYS), "--k-anonymity", k,
                              "--missing-rule", missing, "--json")
        assert code == 0, err
        printed = json.loads(text)
        assert printed["format"] == "pramkit.risk.kanonymity" and printed["violations"]["violating"] == 0
        assert printed["violations"]["smallest"] >= k
        released = pd.read_csv(out, dtype=str, keep_default_na=False, na_values=[""])
        f = brute_frequencies(tuples(released, TESTDATA_KEYS), missing)
        assert min(f) >= k
        code, text, _ = cli("risk", data, "--keys", ",".join(TESTDATA_KEYS), "--k-anonymity", k,
                            "--missing-rule", missing, "--json")
        assert json.loads(text)["violations"]["violating"] == sum(x < k for x in before) > 0


@needs_data
def test_the_text_output(tmp_path: Path) -> None:
    code, text, err = cli("risk", SDC_DATA / "testdata.csv", "--keys", ",".join(TESTDATA_KEYS), "--k-anonymity", 3,
                          "--max-dim", 2, "--l-diversity", "hhcivil", "--l", 3, "--weights", "sampling_weight")
    assert code == 0, err
    lines = text.splitlines()
    assert lines[0].startswith("records: 4580; keys: urbrur, roof, walls, water, sex")
    assert lines[1].startswith("records below k = 3: 24 (0.52 %)")
    assert any(line.startswith("cells counted fewer than 3 times") for line in lines)
    assert lines[-1].startswith("  hhcivil: smallest distinct l")


@needs_data
@pytest.mark.parametrize("flags, message", [
    (["--k-anonymity", "1"], "--k-anonymity must be a whole number >= 2, got 1"),
    (["--k-anonymity", "3", "--keys", "roof,nowhere"], "key 'nowhere' is not a column of the file"),
    (["--l-diversity", "roof"], "the sensitive variable 'roof' is also a key"),
    (["--l-diversity", "absent"], "sensitive variable 'absent' is not a column of the file"),
    (["--l-diversity", "relat", "--l", "1"], "--l must be a whole number >= 2, got 1"),
    (["--k-anonymity", "3", "--suda"], "--k-anonymity and --l-diversity does not take --suda"),
    (["--k-anonymity", "3", "--plot", "fit.png"], "does not take --plot"),
    (["--k-anonymity", "3", "--max-dim", "9"], "the largest table must have 1 to 3 keys"),
    (["--sampling-fraction", "0.1", "--max-dim", "2"], "does not take --max-dim"),
    (["--l-diversity", "relat", "--max-dim", "2"], "--max-dim goes with --k-anonymity"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, flags: list[str], message: str) -> None:
    data = tmp_path / "testdata.csv"
    data.write_bytes((SDC_DATA / "testdata.csv").read_bytes())
    args = ["--keys", "roof,walls,water"] if "--keys" not in flags else []
    code, out, err = cli("risk", data, *args, *flags)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["testdata.csv"]


# ------------------------------------------------------------------ random identifiers

KEY = bytes(range(32))
OTHER = bytes(range(1, 33))


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    ra, rb = pd.Series(a).rank().to_numpy(), pd.Series(b).rank().to_numpy()
    return float(np.corrcoef(ra, rb)[0, 1])


@needs_data
@pytest.mark.parametrize("shuffle", ["households", "within", "records"])
def test_new_ids_on_testdata(shuffle: str) -> None:
    frame = read("testdata.csv")
    frame["row"] = range(len(frame))
    out = new_ids(frame, "ori_hid", KEY, shuffle=shuffle)
    assert list(out.index) == list(range(len(frame))) and sorted(out["row"]) == list(range(len(frame)))
    back = out.sort_values("row")
    # the records, every other value as it was
    assert back.drop(columns="ori_hid").reset_index(drop=True).equals(frame.drop(columns="ori_hid"))
    # one old id, one new id, and back: the groups are preserved
    pairs = set(zip(frame["ori_hid"], back["ori_hid"]))
    assert len(pairs) == frame["ori_hid"].nunique() == len({b for _, b in pairs})
    assert sorted({b for _, b in pairs}) == list(range(1, len(pairs) + 1))
    # no order survives: the new ids against the old, and the rows' new order against the old
    old_ids = [int(a) for a, _ in sorted(pairs, key=lambda p: p[1])]
    assert abs(spearman(old_ids, range(len(old_ids)))) < 0.1
    assert abs(spearman(out["row"], range(len(out)))) < 0.1
    if shuffle != "records":  # each household's records together
        starts = out["ori_hid"].ne(out["ori_hid"].shift()).sum()
        assert starts == len(pairs)
    if shuffle == "households":  # each household's records in their order in the file
        assert out.groupby("ori_hid")["row"].apply(lambda r: r.is_monotonic_increasing).all()
    # reproducible with the key; another key, unrelated ids
    assert out.equals(new_ids(frame, "ori_hid", KEY, shuffle=shuffle))
    other = new_ids(frame, "ori_hid", OTHER, shuffle=shuffle).sort_values("row")
    assert abs(spearman(back["ori_hid"], other["ori_hid"])) < 0.1


def test_new_ids_missing_is_a_group_and_bad_input_is_refused() -> None:
    from pramkit.errors import ParameterError

    frame = pd.DataFrame({"hid": ["a", None, "b", None, "a"], "x": range(5)})
    out = new_ids(frame, "hid", KEY, shuffle="none")
    assert out["x"].tolist() == list(range(5))
    ids = out["hid"].tolist()
    assert ids[0] == ids[4] and ids[1] == ids[3] and len(set(ids)) == 3 and sorted(set(ids)) == [1, 2, 3]
    with pytest.raises(ParameterError, match="not a column"):
        new_ids(frame, "nowhere", KEY)
    with pytest.raises(ParameterError, match="shuffle must be one of"):
        new_ids(frame, "hid", KEY, shuffle="sometimes")


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(st.integers(0, 6), max_size=25), shuffle=st.sampled_from(["households", "within", "records", "none"]))
def test_new_ids_are_one_to_one_on_random_columns(ids: list[int], shuffle: str) -> None:
    frame = pd.DataFrame({"hid": ids, "row": range(len(ids))})
    out = new_ids(frame, "hid", KEY, shuffle=shuffle).sort_values("row")
    mapping = dict(zip(frame["hid"], out["hid"]))
    assert len(set(mapping.values())) == len(mapping) == len(set(ids))
    assert all(mapping[a] == b for a, b in zip(frame["hid"], out["hid"]))
