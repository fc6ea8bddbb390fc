"""pramkit synthesize: a file useful as it is, at a central epsilon.

Checked against: the original NIST CRC excerpt (total variation of its 2-way tables, as SDNist's
k-marginal reads them, with the bar of the published MST entry), the edit rules evaluated on every
released record, exact rational sums of the tables' epsilons, the Euclidean projection's optimality
conditions (and a brute-force minimiser), the raking's fixed point recomputed with pandas, keyed
noise on neighbouring files, and the command line's refusals (one line, exit 2, nothing written).
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

import pramkit
from pramkit.audit import audit
from pramkit.cli import main
from pramkit.datasets import census
from pramkit.errors import DataError, ParameterError
from pramkit.io import read_table
from pramkit.structure import Rules
from pramkit.synthesize import _rake, project_simplex, synthesize_release

NIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
DICTIONARY = NIST.parents[1] / "data_dictionary.json"
FEATURES = ["AGEP", "SEX", "MSP", "RAC1P", "HOUSING_TYPE", "OWN_RENT", "EDU", "PINCP_DECILE", "DVET", "DEYE"]
SYNTH = FEATURES[2:]
KEY = bytes(range(32))
#: SDNist's consistency rules, as definitions ('N': not applicable), on the public AGEP.
CHILD = "|".join(map(str, range(15)))
ADULT = "|".join(map(str, range(15, 100)))
NIST_RULES = [
    {"AGEP": CHILD, "MSP": "1|2|3|4|5|6"}, {"AGEP": ADULT, "MSP": "N"},
    {"AGEP": CHILD, "PINCP_DECILE": "0|1|2|3|4|5|6|7|8|9"}, {"AGEP": ADULT, "PINCP_DECILE": "N"},
    {"AGEP": CHILD, "DVET": "1|2|3|4|5|6"},
    {"AGEP": "0|1|2", "EDU": "1|2|3|4|5|6|7|8|9|10|11|12"}, {"AGEP": "|".join(map(str, range(3, 100))), "EDU": "N"},
    {"AGEP": "3|4", "EDU": "5|6|7|8|9|10|11|12"}, {"AGEP": CHILD, "EDU": "12"},
    {"HOUSING_TYPE": "1", "OWN_RENT": "0"}, {"HOUSING_TYPE": "2|3", "OWN_RENT": "1|2"},
]


def nist() -> tuple[pd.DataFrame, dict[str, list[str]]]:
    if not NIST.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    frame = read_table(NIST, na_values=())[FEATURES]
    cats = {k: [str(c) for c in v["values"]] for k, v in json.loads(DICTIONARY.read_text()).items()
            if k in SYNTH}
    return frame, cats


def sdnist_tv(original: pd.DataFrame, released: pd.DataFrame, columns: list[str] = FEATURES) -> np.ndarray:
    """Total variation of every 2-way table as SDNist's k-marginal reads them (AGEP in 20 percentile bins of
    the original, cut where the original's bins end)."""
    ages = original["AGEP"].astype(int)
    rank = ages.rank(pct=True)
    bins = np.where(rank < 1, (20 * rank).astype(int), 19)
    tops = pd.Series(ages.to_numpy()).groupby(bins).max().sort_values().to_numpy()

    def binned(f: pd.DataFrame) -> pd.DataFrame:
        f = f.copy()
        f["AGEP"] = np.searchsorted(tops, f["AGEP"].astype(int).to_numpy(), side="left")
        return f.astype(str)

    a, b = binned(original), binned(released)
    out = []
    for x, y in itertools.combinations(columns, 2):
        t = a.groupby([x, y]).size() / len(a)
        s = b.groupby([x, y]).size() / len(b)
        out.append(0.5 * float(t.sub(s, fill_value=0).abs().sum()))
    return np.array(out)


#: The tests of :func:`nist_release` run in one test process (``--dist loadgroup``): the release takes about
#: 13 s to make, and tests of one module spread over two processes made it once in each.
NIST_GROUP = pytest.mark.xdist_group("test_synthesize.nist_release")


@NIST_GROUP
def test_the_tests_of_a_group_run_in_one_process(request: pytest.FixtureRequest) -> None:
    """Under ``--dist loadgroup`` a grouped test carries its group in its node id, by which pytest-xdist schedules
    it.  pytest 9.2 no longer lets pytest-xdist 3.8 rewrite node ids: each group was then spread over both
    processes without a word, and every group's fixture made twice (the extra ``test`` pins pytest below 9.2)."""
    if getattr(request.config, "workerinput", None) is None or not request.config.getvalue("loadgroup"):
        pytest.skip("the tests do not run in processes under --dist loadgroup")
    assert request.node.nodeid.endswith("@test_synthesize.nist_release"), (
        f"pytest-xdist did not group {request.node.nodeid} under pytest {pytest.__version__}")


@pytest.fixture(scope="module")
def nist_release() -> tuple[pd.DataFrame, pramkit.SynthesisResult]:
    frame, cats = nist()
    return frame, synthesize_release(frame, variables=SYNTH, public=["AGEP", "SEX"], epsilon=10.0, key=KEY,
                                     categories=cats, forbid=NIST_RULES)


# ------------------------------------------------------------------ (a) the file, read as it is

@NIST_GROUP
def test_nist_at_epsilon_10_meets_the_published_bar(nist_release) -> None:
    """At central epsilon 10 the 2-way tables are within the k-marginal of the published MST entry (969:
    mean TV <= 0.031), every rule holds, the public columns are untouched, and far fewer unique records
    are reproduced than MST's 7.44 % of all records."""
    frame, res = nist_release
    tv = sdnist_tv(frame, res.data)
    assert tv.mean() <= 0.031, tv.mean()
    # against the file whose synthesized columns are shuffled within age and sex (each exact given the public
    # columns, their associations lost): the model holds the pairs
    shuffled = frame.copy()
    rng = np.random.default_rng(0)
    for v in SYNTH:
        shuffled[v] = frame.groupby(["AGEP", "SEX"])[v].transform(lambda s: s.sample(frac=1, random_state=rng).values)
    pairs = sdnist_tv(frame, res.data, SYNTH).mean()
    assert pairs < 0.6 * sdnist_tv(frame, shuffled, SYNTH).mean(), pairs
    assert not Rules.of(NIST_RULES).breaking(res.data, FEATURES).any()
    assert res.data[["AGEP", "SEX"]].equals(frame[["AGEP", "SEX"]])
    counts = frame.value_counts()
    uniques = counts[counts == 1].index
    matched = len(set(uniques) & set(res.data[FEATURES].value_counts().index))
    assert matched / len(frame) < 0.0744


@NIST_GROUP
def test_every_released_combination_appears_twice(nist_release) -> None:
    frame, res = nist_release
    combos = res.data[FEATURES].value_counts()
    lone_cells = frame.groupby(["AGEP", "SEX"]).size()
    lone = set(lone_cells[lone_cells == 1].index)
    singles = [c for c in combos[combos == 1].index if (c[0], c[1]) not in lone]
    assert singles == []
    assert res.shared_draws >= len(frame) // 2 - len(lone_cells)


@NIST_GROUP
def test_the_epsilons_add_up_within_the_budget(nist_release) -> None:
    _, res = nist_release
    exact = sum(Fraction(m.epsilon) for m in res.measurements)
    assert exact <= Fraction(10) and Fraction(res.record_epsilon) >= exact
    assert len(res.measurements) == len(SYNTH) + len(SYNTH) * (len(SYNTH) - 1) // 2
    ledger = res.manifest["ledger"]
    assert ledger["design_epsilon"] == res.record_epsilon and ledger["frequencies"] == "dp_counts"
    assert "AGEP and SEX are released as they are" in res.guarantee
    assert all(m["sensitivity"] == 2 and np.asarray(m["noisy"]).shape == tuple(x.shape)
               for m, x in zip(res.manifest["measurements"], res.measurements))


# ------------------------------------------------------------------ (b) keys: one release per key and data

def census_frame(n: int = 3_000) -> pd.DataFrame:
    return census(n)[["age", "sex", "race", "education", "employment"]].astype(str)


def test_same_key_same_file_other_data_other_noise() -> None:
    data = census_frame()
    a = synthesize_release(data, variables="race,education,employment", public="age,sex", epsilon=3.0, key=KEY)
    b = synthesize_release(data, variables="race,education,employment", public="age,sex", epsilon=3.0, key=KEY)
    assert a.data.equals(b.data)
    assert all((x.noisy == y.noisy).all() for x, y in zip(a.measurements, b.measurements))
    neighbour = data.copy()
    neighbour.loc[0, "race"] = "black" if data.loc[0, "race"] != "black" else "white"
    c = synthesize_release(neighbour, variables="race,education,employment", public="age,sex", epsilon=3.0, key=KEY)
    # every table that reads race is measured on other data: its noise is drawn again, not reused
    for x, y in zip(a.measurements, c.measurements):
        if "race" in x.axes:
            exact_diff = (pd.crosstab(data["race"], data["education"]).values.size > 0)
            assert exact_diff and not (x.noisy == y.noisy).all()


def test_noise_is_discrete_laplace_at_the_stated_epsilon() -> None:
    """Many keys on one small file: each cell's noise has the discrete Laplace variance of its epsilon
    (2 a / (1 - a)^2 with a = exp(-epsilon / 2))."""
    data = pd.DataFrame({"sex": ["f", "m"] * 100, "a": ["x", "y", "z", "x"] * 50})
    exact = pd.crosstab(data["sex"], data["a"]).to_numpy()
    noise = []
    for i in range(300):
        res = synthesize_release(data, variables="a", public="sex", epsilon=1.0, key=i.to_bytes(32, "little"))
        noise.append(res.measurements[0].noisy - exact)
    noise = np.array(noise, dtype=float)
    alpha = np.exp(-res.measurements[0].epsilon / 2)
    var = 2 * alpha / (1 - alpha) ** 2
    assert abs(noise.var() / var - 1) < 0.15 and abs(noise.mean()) < 0.3


# ------------------------------------------------------------------ (c) the parts, against independent computations

@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=8), st.floats(0, 100))
def test_projection_is_the_euclidean_one(v: list[float], total: float) -> None:
    x = project_simplex(np.array([v]), np.array([total]))[0]
    assert (x >= 0).all() and abs(x.sum() - total) < 1e-8
    # KKT: positive entries sit at v - theta, zero entries have v <= theta
    pos = x > 1e-12
    if pos.any():
        theta = float(np.mean(np.array(v)[pos] - x[pos]))
        assert np.allclose(np.array(v)[pos] - x[pos], theta, atol=1e-8)
        assert (np.array(v)[~pos] <= theta + 1e-8).all()


def test_projection_against_a_general_minimiser() -> None:
    v = np.array([3.0, -1.0, 0.5, 2.0, -4.0])
    ref = minimize(lambda x: ((x - v) ** 2).sum(), np.full(5, 1.0), method="SLSQP", bounds=[(0, None)] * 5,
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 4.0}]).x
    assert np.allclose(project_simplex(v[None, :], np.array([4.0]))[0], ref, atol=1e-6)
    allowed = np.array([[True, True, False, True, True]])
    got = project_simplex(v[None, :], np.array([4.0]), allowed)[0]
    assert got[2] == 0 and abs(got.sum() - 4) < 1e-12


def test_raking_reaches_consistent_targets() -> None:
    """Targets from one law: the raked pool's weighted tables equal them (pandas recomputes them)."""
    rng = np.random.default_rng(3)
    n, pool = 400, 12
    cell = rng.integers(0, 3, n)
    cand = rng.integers(0, [3, 4], size=(n, pool, 2))
    truth = pd.DataFrame({"c": cell, "a": rng.integers(0, 3, n), "b": rng.integers(0, 4, n)})
    t_a = pd.crosstab(truth["c"], truth["a"]).reindex(index=range(3), columns=range(3), fill_value=0).to_numpy(float)
    t_b = pd.crosstab(truth["c"], truth["b"]).reindex(index=range(3), columns=range(4), fill_value=0).to_numpy(float)
    t_ab = pd.crosstab(truth["a"], truth["b"]).reindex(index=range(3), columns=range(4), fill_value=0).to_numpy(float)
    w = _rake(cand, cell, [t_a, t_b, t_ab], np.ones((n, pool), bool), 300)
    flat = pd.DataFrame({"c": np.repeat(cell, pool), "a": cand[:, :, 0].ravel(), "b": cand[:, :, 1].ravel(),
                         "w": w.ravel()})
    got_ab = flat.pivot_table(index="a", columns="b", values="w", aggfunc="sum", fill_value=0).to_numpy()
    assert np.allclose(w.sum(axis=1), 1)
    assert np.abs(got_ab - t_ab).max() < 0.5  # IPF converges to the constraints (up to the pool's support)
    got_a = flat.pivot_table(index="c", columns="a", values="w", aggfunc="sum", fill_value=0).to_numpy()
    assert np.abs(got_a - t_a).max() < 0.5


# ------------------------------------------------------------------ (d) files: both or neither; bad input

@pytest.fixture
def files(tmp_path: Path) -> Path:
    census_frame(1_500).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "k").write_text(KEY.hex() + "\n")
    (tmp_path / "k").chmod(0o600)
    (tmp_path / "rules.csv").write_text("age,employment\n0-9,employed\n")
    (tmp_path / "cats.json").write_text(json.dumps({"race": ["white"]}))
    (tmp_path / "notjson.json").write_text("race,white\n")
    return tmp_path


def test_cli_writes_file_and_manifest(files: Path, capsys) -> None:
    code = main(["synthesize", str(files / "d.csv"), "--vars", "race,education", "--public", "age,sex",
                 "--epsilon", "4", "--out", str(files / "s.csv"), "--key-file", str(files / "k")])
    out = capsys.readouterr().out
    assert code == 0 and "central epsilon: 4" in out
    man = json.loads((files / "s.synthesis.json").read_text())
    released = pd.read_csv(files / "s.csv", dtype=str)
    assert man["released"]["rows"] == len(released) == 1_500 and man["format"] == "pramkit.synthesis"
    assert set(released["race"]) <= set(man["variables"]["race"]["categories"])
    assert "the categories of race were read from the data" in man["ledger"]["statement"]


def test_a_failed_manifest_write_leaves_nothing(files: Path, monkeypatch, capsys) -> None:
    before = {p.name: p.read_bytes() for p in files.iterdir()}

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", boom)
    code = main(["synthesize", str(files / "d.csv"), "--vars", "race", "--public", "sex", "--epsilon", "2",
                 "--out", str(files / "s.csv"), "--key-file", str(files / "k")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in files.iterdir() if not p.name.startswith(".")} == before


BAD = [
    (["--epsilon", "0"], "positive"),
    (["--epsilon", "nan"], "positive"),
    (["--vars", "race,race"], "distinct"),
    (["--vars", "employment2"], "employment2"),
    (["--public", "race"], "both synthesized and public"),
    (["--out", "{d}/d.csv"], "input"),
    (["--forbid", "{d}/absent.csv"], "does not exist"),
    (["--categories", "{d}/cats.json"], "not one of its declared categories"),
    (["--categories", "{d}/notjson.json"], "not JSON"),
    (["--key-file", "{d}/nokey"], "does not exist"),
]


@pytest.mark.parametrize("extra, words", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_input_is_one_line(files: Path, capsys, extra: list[str], words: str) -> None:
    args = {"--vars": "race,employment", "--public": "age,sex", "--epsilon": "3", "--out": str(files / "s.csv"),
            "--key-file": str(files / "k")}
    for flag, value in zip(extra[::2], extra[1::2]):
        args[flag] = value.format(d=files)
    before = {p.name: p.read_bytes() for p in files.iterdir()}
    code = main(["synthesize", str(files / "d.csv"), *itertools.chain.from_iterable(args.items())])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("pramkit synthesize: error:") and words in err[0], err
    assert {p.name: p.read_bytes() for p in files.iterdir()} == before


def test_library_refusals() -> None:
    data = census_frame(200)
    with pytest.raises(ParameterError, match="min_count"):
        synthesize_release(data, variables="race", epsilon=1.0, min_count=3)
    with pytest.raises(ParameterError, match="at least one"):
        synthesize_release(data, variables=[], epsilon=1.0)
    with pytest.raises(DataError, match="forbids every value"):
        synthesize_release(data, variables="race", public="sex", epsilon=1.0,
                           forbid=[{"sex": "female", "race": "|".join(sorted(set(data["race"])))}])


# ------------------------------------------------------------------ (e) the audit reads it strictly

@pytest.fixture
def synthesized(files: Path) -> Path:
    (files / "cats.json").write_text(json.dumps({"race": sorted(set(census_frame(1_500)["race"]))}))
    assert main(["synthesize", str(files / "d.csv"), "--vars", "race,education", "--public", "age,sex",
                 "--epsilon", "4", "--out", str(files / "s.csv"), "--key-file", str(files / "k"),
                 "--categories", str(files / "cats.json"), "--forbid", str(files / "rules.csv"), "-q",
                 "--json"]) == 0
    return files


def test_audit_passes_a_true_release_with_its_key(synthesized: Path) -> None:
    d = synthesized
    res = audit(d / "s.synthesis.json", released=d / "s.csv", original=d / "d.csv", key=d / "k")
    assert res.passed, [c.line() for c in res.checks if not c.passed]
    assert res.audits == ("synthesis", "release") and any(c.field == "key" for c in res.checks)


FORGED = [
    ("measurements.0.epsilon", lambda m: m["measurements"][0].__setitem__("epsilon", m["measurements"][0]["epsilon"] * 3),
     "ledger.design_epsilon"),
    ("ledger.statement", lambda m: m["ledger"].__setitem__("statement", m["ledger"]["statement"].replace("e^4", "e^2")),
     "ledger.statement"),
    ("measurements.dropped", lambda m: m["measurements"].pop(), "measurements"),
    ("sensitivity", lambda m: m["measurements"][1].__setitem__("sensitivity", 1), "measurements[1]"),
    ("released.rows", lambda m: m["released"].__setitem__("rows", 1), "released.rows"),
    ("as they are", lambda m: m.__setitem__("released_as_they_are", ["age"]), "ledger.statement"),
]


@pytest.mark.parametrize("name, forge, field", FORGED, ids=[f[0] for f in FORGED])
def test_audit_names_each_forged_field(synthesized: Path, name: str, forge, field: str) -> None:
    d = synthesized
    raw = json.loads((d / "s.synthesis.json").read_text())
    forge(raw)
    (d / "forged.json").write_text(json.dumps(raw))
    res = audit(d / "forged.json", released=d / "s.csv")
    assert not res.passed and field in [c.field for c in res.checks if not c.passed]


def test_audit_catches_an_edited_file_and_a_wrong_key(synthesized: Path) -> None:
    d = synthesized
    frame = pd.read_csv(d / "s.csv", dtype=str, keep_default_na=False)
    frame.loc[0, "race"] = "martian"
    frame.to_csv(d / "edited.csv", index=False)
    raw = json.loads((d / "s.synthesis.json").read_text())
    res = audit(d / "s.synthesis.json", released=d / "edited.csv")
    failed = {c.field for c in res.checks if not c.passed}
    assert {"released.sha256", "variables.race"} <= failed
    (d / "k2").write_text(bytes(range(1, 33)).hex() + "\n")
    (d / "k2").chmod(0o600)
    res = audit(d / "s.synthesis.json", released=d / "s.csv", original=d / "d.csv", key=d / "k2")
    assert [c.field for c in res.checks if not c.passed] == ["key"] and raw["format"] == "pramkit.synthesis"


def test_audit_cli_on_a_synthesized_release(synthesized: Path, capsys) -> None:
    d = synthesized
    code = main(["audit", "--manifest", str(d / "s.synthesis.json"), "--released", str(d / "s.csv")])
    assert code == 0, capsys.readouterr()


def test_a_rule_the_draws_cannot_keep_is_refused() -> None:
    data = census_frame(300)
    with pytest.raises(ParameterError, match="neither synthesized nor public"):
        synthesize_release(data, variables="race", public="sex", epsilon=1.0,
                           forbid=[{"employment": "employed", "race": "white"}])
    with pytest.raises(ParameterError, match="which the data lacks"):
        synthesize_release(data, variables="race", public="sex", epsilon=1.0, forbid=[{"income": "high"}])


@pytest.mark.parametrize("command", [["estimate", "{d}/s.csv", "--vars", "race"], ["inspect"],
                                     ["resample", "{d}/s.csv", "--out", "{d}/r.csv"]])
def test_commands_that_need_matrices_say_what_a_synthesized_release_is(synthesized: Path, capsys, command) -> None:
    d = synthesized
    args = [c.format(d=d) for c in command]
    argv = [args[0], *(args[1:] if args[0] != "inspect" else []), *(["--manifest"] if args[0] != "inspect" else []),
            str(d / "s.synthesis.json")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "synthesized release" in err[0], err


def _fit_by_numpy(w: np.ndarray, cand: np.ndarray, cell: np.ndarray, a: int | None, b: int,
                  target: np.ndarray) -> None:
    """One raking step as NumPy writes it: each candidate's cell, numpy.bincount of the weights, the ratio."""
    ix = (cell[:, None] if a is None else cand[:, :, a].astype(np.int64)) * target.shape[1] + cand[:, :, b]
    cur = np.bincount(ix.ravel(), weights=w.ravel(), minlength=target.size)
    w *= np.divide(target.ravel(), cur, out=np.zeros(target.size), where=cur > 0)[ix]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 9), st.lists(st.integers(1, 7), min_size=2, max_size=4),
       st.integers(1, 5), st.integers(0, 2**32 - 1), st.data())
def test_a_raking_step_is_numpys_to_the_last_bit(n: int, pool: int, sizes: list[int], cells: int, seed: int,
                                                 data: st.DataObject) -> None:
    """The compiled step (:func:`pramkit.kernel._kernels.rake_fit`) against NumPy's bincount and gather: the
    same weights bit for bit, for a table of two variables or of the public cell by a variable; empty cells of
    the table and zero targets included."""
    from pramkit.synthesize import _fit_table

    rng = np.random.default_rng(seed)
    cand = np.stack([rng.integers(0, s, (n, pool)) for s in sizes], axis=2).astype(np.int32)
    cell = rng.integers(0, cells, n).astype(np.int64)
    w = rng.random((n, pool)) * (rng.random((n, pool)) > 0.2)
    b = data.draw(st.integers(0, len(sizes) - 1))
    a = data.draw(st.none() | st.integers(0, len(sizes) - 1).filter(lambda j: j != b))
    rows = cells if a is None else sizes[a]
    target = rng.random((rows, sizes[b])) * (rng.random((rows, sizes[b])) > 0.3) * n
    expected, got = w.copy(), w.copy()
    _fit_by_numpy(expected, cand, cell, a, b, target)
    _fit_table(got, cand, cell, a, b, target)
    assert expected.tobytes() == got.tobytes()


def test_a_candidate_outside_the_table_is_an_error_not_a_write() -> None:
    """A cell beyond the target (a code the table has no column for) raises; the weights are left as they were
    when the first pass finds it."""
    from pramkit.kernel import _kernels

    frame = census_frame(300)
    codes = frame["race"].astype("category").cat.codes.to_numpy()
    cand = np.stack([codes, codes], axis=1)[:, None, :].astype(np.int32)   # one candidate per record
    w = np.ones((300, 1))
    target = np.ones(int(codes.max()) * 2)                                  # one cell too few
    with pytest.raises(ValueError, match="outside the table"):
        _kernels.rake_fit(w, cand, 2, 0, 1, 2, np.zeros(300, dtype=np.int64), target, np.empty_like(target))
    assert (w == 1).all()
