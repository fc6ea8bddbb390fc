"""benchmarks/bench_sdnist.py: SDNist's report read right, the skip, the edit rules, corrected tables.

SDNist itself is not needed: its ``report.json`` is a fixture written by hand from the documented
structure (tests/fixtures/sdnist_report.json, with the published sdcMicro figures).
"""

from __future__ import annotations

import csv
import json
import random
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import sdnist_benchmark
from hypothesis import given, settings
from hypothesis import strategies as st

import pramkit

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "sdnist_report.json"
NIST = ROOT.parent / "shared" / "data" / "nist-crc"



bench = sdnist_benchmark()


def test_report_fields_are_read_from_the_documented_places() -> None:
    scores = bench.parse_report(json.loads(FIXTURE.read_text(encoding="utf-8")))
    assert scores.k_marginal == 980
    assert scores.pmse == 0.01373
    assert (scores.matched, scores.unique, scores.records) == (8691, 14918, 27253)
    # the published share of all records, and the share of unique records SDNist prints (58.26)
    assert round(scores.matched_all, 2) == 31.89
    assert round(scores.matched_unique, 2) == 58.26
    assert scores.matched_all == pytest.approx(float(Fraction(100 * 8691, 27253)), rel=1e-15)
    # records with an inconsistency, summed over the groups; each check's violations by name
    assert scores.inconsistent == 480 + 0 + 7
    assert scores.violations == {"child_MSP": 458, "child_DVET": 31, "gq_own_jail": 7}


def test_the_subsample_line_is_read_from_the_report_folder(tmp_path: Path) -> None:
    """SDNist's random subsamples of the target (the CSV its report names, as SDNist 2.4 wrote it on the
    demographic features) give the share of the target, sampled at random, as close as the release: linear
    between the two samples that enclose its k-marginal (worked by hand below), unknown under the smallest."""
    from dataclasses import replace

    report = json.loads(FIXTURE.read_text(encoding="utf-8"))
    scores = bench.parse_report(report, FIXTURE.parent)
    assert scores.subsample_curve[:3] == ((1.0, 889.0), (5.0, 958.0), (10.0, 971.0))
    assert [p for p, _ in scores.subsample_curve] == [1, 5, *range(10, 100, 10)]
    assert scores.sample_as_close() == 20.0  # 980: the 20 % sample's own score
    assert replace(scores, k_marginal=985).sample_as_close() == pytest.approx(35.0)  # 30 %: 983, 40 %: 987
    assert replace(scores, k_marginal=961).sample_as_close() == pytest.approx(5 + 5 * 3 / 13)  # 5 %: 958, 10 %: 971
    assert replace(scores, k_marginal=999).sample_as_close() == 90.0  # above the largest sample: a bound
    assert replace(scores, k_marginal=880).sample_as_close() is None  # under the 1 % sample's 889
    assert bench.parse_report(report).subsample_curve == ()  # no folder given
    assert bench.parse_report(report, tmp_path).subsample_curve == ()  # the CSV absent
    (tmp_path / "k_marginal_synopsys").mkdir()
    (tmp_path / "k_marginal_synopsys" / "subsample_error_comparison.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    assert bench.parse_report(report, tmp_path).subsample_curve == ()  # another layout: not read


def test_inconsistencies_listed_under_any_group_are_counted() -> None:
    report = json.loads(FIXTURE.read_text(encoding="utf-8"))
    item = {"inconsistency_name": "house_OWN_RENT", "inconsistency_violations": 3}
    report["inconsistencies"]["housing"]["inconsistencies"].append(item)
    report["inconsistencies"]["age"]["inconsistencies"].append(dict(item))
    assert bench.parse_report(report).violations["house_OWN_RENT"] == 6


@pytest.mark.parametrize("env, data", [
    ({}, None),                                            # no SDNist interpreter
    ({"SDNIST_PYTHON": "/nonexistent/python"}, None),      # one that does not run
    ({"SDNIST_PYTHON": "/nonexistent/python"}, "absent"),  # nor the data
])
def test_skipped_in_one_line_with_exit_0(env: dict[str, str], data: str | None, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.delenv("SDNIST_PYTHON", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    argv = ["--out", str(tmp_path / "out")]
    if data:
        argv += ["--data", str(tmp_path / "absent.csv")]
    assert bench.main(argv) == 0
    out = capsys.readouterr()
    assert out.out.count("\n") == 1 and "skipped" in out.out and not out.err
    assert not (tmp_path / "out").exists()


def test_an_unknown_configuration_is_one_line_exit_2(capsys: pytest.CaptureFixture) -> None:
    assert bench.main(["--configs", "raw,no-such-release"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-release" in err


@pytest.mark.parametrize("args, words", [
    (["--peers", "--epsilons", "0"], "--epsilons takes positive numbers"),
    (["--peers", "--epsilons", "2,701"], "--epsilons takes positive numbers up to 700"),
    (["--configs", "pgm-zcdp-1000"], "unknown configuration(s) pgm-zcdp-1000; --list shows them (an epsilon E"),
    (["--configs", "aim-0"], "unknown configuration(s) aim-0"),
    (["--peers", "--models", "pgm-zcdp,mst"], "--models takes names among synth-all, pgm-all, pgm-zcdp"),
    (["--peers", "--peer-tools", "aim,sdv"], "--peer-tools takes names among mst, aim"),
    (["--peers", "--peer-tools", ""], "--peer-tools takes names among mst, aim"),
    (["--peers", "--peer-minutes", "-1"], "--peer-minutes takes a number of minutes, at least 0"),
    (["--peers", "--peer-minutes", "an hour"], "--peer-minutes takes a number of minutes, at least 0"),
    (["--peers", "--peer-minutes", "nan"], "--peer-minutes takes a number of minutes, at least 0"),
    (["--peers", "--rounds-per-variable", "0"], "--rounds-per-variable takes a whole number from 1 to 900"),
    (["--rounds-per-variable", "901"], "--rounds-per-variable takes a whole number from 1 to 900"),
    (["--rounds-per-variable", "2.5"], "--rounds-per-variable takes a whole number from 1 to 900"),
    (["--rounds-per-variable", "sixteen"], "--rounds-per-variable takes a whole number from 1 to 900"),
    (["--peers", "--tables-per-fit", "0"], "--tables-per-fit takes a whole number from 1 to 16"),
    (["--tables-per-fit", "17"], "--tables-per-fit takes a whole number from 1 to 16"),
    (["--tables-per-fit", "2.5"], "--tables-per-fit takes a whole number from 1 to 16"),
    (["--rounds-per-variable", "900", "--no-score", "--features",
      "AGEP,SEX,MSP,RAC1P,HOUSING_TYPE,OWN_RENT,EDU,PINCP_DECILE,DVET,DEYE,DEAR,DPHY"],
     "--rounds-per-variable 900 times the 12 features passes the most rounds (10000): at most 833 here"),
    (["--peers", "--rounds-per-variable", "901"], "--rounds-per-variable takes a whole number from 1 to 900"),
    (["--peers", "--bins", "AGE=5"], "--bins names AGE, which is not a synthesized variable"),
    (["--peers", "--bins", "AGEP=0"], "--bins: the width of AGEP must be a positive integer, got '0'"),
    (["--bins", "AGEP"], "--bins must be written VAR=WIDTH, comma-separated"),
    (["--peers", "--peer-releases", str(ROOT / "pyproject.toml")], "--peer-releases takes a folder; "),
    (["--kept-peers-only"], "--kept-peers-only reads the peers' kept releases: give it with --peers and"),
    (["--peers", "--kept-peers-only"], "--kept-peers-only reads the peers' kept releases: give it with --peers and"),
    (["--kept-peers-only", "--peer-releases", str(ROOT / "benchmarks" / "peer-releases")],
     "--kept-peers-only reads the peers' kept releases: give it with --peers and"),
    (["--peers", "--kept-peers-only", "--peer-releases", str(ROOT / "no-such-folder")],
     "--kept-peers-only reads the peers' kept releases, but " + str(ROOT / "no-such-folder") + " is not a folder"),
    (["--peers", "--kept-peers-only", "--peer-releases", str(ROOT / "pyproject.toml")], "is not a folder"),
    (["--features", "AGEP,SEX,AGEP"], "bench_sdnist: --features: AGEP given twice"),
    (["--peers", "--features", ",,"], "bench_sdnist: --features: none given"),
    (["--peers", "--features", "AGEP", "--feature-set", "family"], "give --features or --feature-set, not both"),
])
def test_bad_options_are_one_line_exit_2(capsys: pytest.CaptureFixture, args: list[str], words: str) -> None:
    assert bench.main(args) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err


def test_a_release_sdnist_cannot_score_is_one_line_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture) -> None:
    """An SDNist that fails (here one that exits 1 with its message) stops the run with one line naming the
    release and SDNist's last words, exit 1, not a traceback (the records prepared once, :func:`_prepared`)."""
    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    monkeypatch.setattr(bench, "prepare", _prepared)
    fake = tmp_path / "fake" / "sdnist" / "report"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("", encoding="utf-8")
    (fake / "__init__.py").write_text("", encoding="utf-8")
    (fake / "__main__.py").write_text("import sys\nsys.exit('data root has no national2019 target')\n",
                                      encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fake"))
    monkeypatch.setenv("SDNIST_PYTHON", sys.executable)
    assert bench.main(["--configs", "raw", "--data", str(excerpt)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bench_sdnist: SDNist failed on ") and \
        "raw.csv" in err and "no national2019 target" in err, err


def test_a_peer_that_fails_is_one_line_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture) -> None:
    """A dpmm that fails (here one whose MST raises on fitting) stops the run with one line naming the peer, its
    epsilon and its last words, exit 1, nothing scored (the records prepared once, :func:`_prepared`)."""
    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    monkeypatch.setattr(bench, "prepare", _prepared)
    _fake_dpmm(tmp_path, monkeypatch,
               "class MSTPipeline:\n"
               "    def __init__(self, **kw):\n        pass\n"
               "    def fit(self, *a, **kw):\n        raise ValueError('the domain is too large for the model')\n"
               "AIMPipeline = MSTPipeline\n")
    monkeypatch.setenv("DPMM_PYTHON", sys.executable)
    assert bench.main(["--configs", "mst-1", "--data", str(excerpt), "--no-score"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bench_sdnist: dpmm's MST failed at epsilon 1: ValueError: the "
                                                    "domain is too large"), err


def test_a_setting_pramkit_refuses_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    """A release whose settings pramkit refuses for these features (here a configuration that asks for them)
    ends the run in pramkit's one line, exit 2, not a traceback (the records prepared once, :func:`_prepared`)."""
    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    monkeypatch.setattr(bench, "prepare", _prepared)

    @bench.configuration("test-refused", "registered by the test")
    def build(setup):
        raise pramkit.errors.ParameterError("rounds must be an integer from 12 (the synthesized variables) to "
                                            "10000, got 10800")

    try:
        assert bench.main(["--configs", "test-refused", "--data", str(excerpt), "--no-score"]) == 2
    finally:
        del bench.CONFIGS["test-refused"]
    err = capsys.readouterr().err
    assert err == "bench_sdnist: rounds must be an integer from 12 (the synthesized variables) to 10000, got 10800\n"


def test_a_configuration_is_one_registered_function(capsys: pytest.CaptureFixture) -> None:
    @bench.configuration("test-only", "registered by the test")
    def build(setup):  # pragma: no cover - never run
        raise AssertionError

    try:
        assert bench.main(["--list"]) == 0
        listed = capsys.readouterr().out.splitlines()
        assert [line.split()[0] for line in listed] == list(bench.CONFIGS)
        assert {"raw", "sdcmicro-pram", "sdcmicro-pram-rules", "dp-3", "dp-10", "dp-20",
                "dp-rules-strata-10", "dp-10-shuffle", "test-only"} <= set(bench.CONFIGS)
    finally:
        del bench.CONFIGS["test-only"]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=6, max_size=6), st.lists(st.integers(0, 9), min_size=6, max_size=6))
def test_total_variation_is_half_the_l1_distance_of_the_shares(a: list[int], b: list[int]) -> None:
    if sum(a) == 0 or sum(b) == 0:
        return
    exact = sum(abs(Fraction(x, sum(a)) - Fraction(y, sum(b))) for x, y in zip(a, b)) / 2
    assert bench.total_variation(np.reshape(a, (2, 3)), np.reshape(b, (2, 3))) == pytest.approx(float(exact), abs=1e-12)


def _forbids(rules: list[dict[str, str]]) -> Callable[[dict[str, str]], bool]:
    """Whether one of the rules-file rows forbids a record: a row forbids it when every non-empty cell lists the
    record's value (each cell split once, not once per record: the checks run on every record of a file)."""
    split = [[(col, frozenset(cell.split("|"))) for col, cell in rule.items() if cell] for rule in rules]
    return lambda record: any(all(record[col] in cell for col, cell in rule) for rule in split)


def _setup(frame: pd.DataFrame, tmp_path: Path) -> object:
    dictionary = NIST / "data_dictionary.json"
    categories = {k: [str(c) for c in v["values"]] for k, v in json.loads(dictionary.read_text()).items()
                  if isinstance(v.get("values"), dict) and "min" not in v["values"]}
    return bench.Setup(tmp_path / "input.csv", frame, tuple(bench.FEATURES), tuple(bench.PUBLIC), categories,
                       bytes(32), 1, tmp_path)


def test_edit_rules_hold_on_the_original_and_forbid_sdnists_inconsistencies(tmp_path: Path) -> None:
    source = NIST / "national" / "national2019.csv"
    if not source.is_file():
        pytest.skip(f"{source} is not available")
    frame = pd.read_csv(source, dtype=str, keep_default_na=False, usecols=list(bench.FEATURES))
    setup = _setup(frame, tmp_path)
    variables = setup.perturbed
    rules = bench.age_rules(setup, variables, na_is_value=True) + bench.housing_rules(variables)
    path = setup.rules("rules.csv", rules)
    assert len(pramkit.read_rules(path).rules) == len(rules)  # pramkit reads the file as written
    forbids = _forbids(rules)
    records = frame.assign(**{bench.AGE_CLASS: frame["AGEP"].map(bench.age_class)}).to_dict("records")
    assert not [r for r in records if forbids(r)]
    # SDNist's checks (sdnist.metrics.inconsistency), each on a record that fails it
    child = {"AGEP": "10", bench.AGE_CLASS: "5-14", "MSP": "N", "PINCP_DECILE": "N", "DVET": "N", "EDU": "3",
             "HOUSING_TYPE": "1", "OWN_RENT": "1"}
    for change in ({"MSP": "1"}, {"DVET": "2"}, {"PINCP_DECILE": "4"}, {"EDU": "12"},
                   {"AGEP": "2", bench.AGE_CLASS: "0-2", "EDU": "1"},
                   {"AGEP": "4", bench.AGE_CLASS: "3-4", "EDU": "5"},
                   {"AGEP": "40", bench.AGE_CLASS: "15+", "MSP": "N", "PINCP_DECILE": "3", "EDU": "9"},
                   {"HOUSING_TYPE": "2"}, {"HOUSING_TYPE": "3", "OWN_RENT": "2"}, {"OWN_RENT": "0"}):
        assert forbids({**child, **change}), change
    assert not forbids(child)


def _unbiased(matrix: np.ndarray, labels: list, released: list) -> dict:
    """The moment estimate solve(M^T, released counts), by cell label: numpy, not pramkit."""
    counts = np.array([sum(1 for r in released if r == c) for c in labels], dtype=float)
    return dict(zip(labels, np.linalg.solve(matrix.T, counts)))


@pytest.mark.filterwarnings("ignore:no release receipt")
def test_corrected_tables_sum_joint_cells_and_strata_as_linear_algebra_does(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    n = 600
    frame = pd.DataFrame({"s": rng.choice(["x", "y"], n), "a": rng.choice(["1", "2", "3"], n),
                          "h": rng.choice(["p", "q"], n), "g": rng.choice(["u", "v", "w"], n)})
    src = tmp_path / "small.csv"
    frame.to_csv(src, index=False)
    joint = pramkit.design_release(src, ["h", "g"], epsilon=2.0, split="joint", exact_frequencies=True,
                                   rng=random.Random(1))
    strat = pramkit.design_release(src, ["a"], epsilon=1.5, strata=["s"], exact_frequencies=True,
                                   rng=random.Random(2))
    for manifest, pair, by in ((joint, ("h", "g"), None), (joint, ("s", "h"), "s"), (strat, ("a", "h"), "h")):
        released = pramkit.perturb_frame(frame, manifest, key=bytes(range(32))).data.astype(str)
        path = tmp_path / "released.csv"
        released.to_csv(path, index=False)
        got = bench.corrected_table(path, manifest, *pair, na_values=(), estimator="unbiased")
        variable = manifest[manifest.names[0]]
        pm = variable.release_matrix
        labels = [tuple(str(x) for x in c) for c in pm.categories]
        cols = [*variable.given, *variable.columns]  # a cell lists its strata, then its columns
        groups = [None] if by is None else sorted(released[by].unique())
        expected: dict[tuple[str, str], float] = {}
        for group in groups:
            rows = released if group is None else released[released[by] == group]
            cells = [tuple(r) for r in rows[cols].itertuples(index=False)]
            est = _unbiased(np.asarray(pm.matrix, dtype=float), labels, cells)
            for cell, count in est.items():
                values = dict(zip(cols, cell))
                if group is not None:
                    values[by] = group
                key = (values[pair[0]], values[pair[1]])
                expected[key] = expected.get(key, 0.0) + count
        for (u, v), count in expected.items():
            assert got.loc[u, v] == pytest.approx(count, abs=1e-8), (pair, u, v)
        assert set(product(got.index, got.columns)) == set(expected)


def test_the_peers_frontier_is_one_png_with_a_panel_per_feature_set(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    s = bench.Scores(960, 0.0, 100, 1000, 2000, 3)
    sampled = bench.parse_report(json.loads(FIXTURE.read_text(encoding="utf-8")), FIXTURE.parent)  # with the line
    rows = [(f, bench.Row(f"{m}-{e}", "-", str(e), sampled if f == "family" else s, None, 1.0, 1.0))
            for f in ("demographic", "family") for m in ("pgm-zcdp", "mst") for e in (1, 10)]
    assert bench.peers_plot(rows, tmp_path / "f.png")
    png = (tmp_path / "f.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(png[16:20], "big")
    assert width > 1.5 * int.from_bytes(png[20:24], "big")  # two panels side by side


@pytest.mark.parametrize("name, known", [
    ("dp-shuffle-1", True), ("dp-shuffle-2.5-resampled", True), ("dp-shuffle-1-single", False),
    ("dp-shuffle-0", False), ("dp-shuffle-x", False), ("pgm-zcdp-1-resampled", False),
])
def test_the_shuffled_pram_rows_are_named_by_their_central_epsilon(name: str, known: bool) -> None:
    fresh = name not in bench.CONFIGS
    try:
        assert bench.on_demand(name) is known
        if known:
            assert f"central epsilon is {name.split('-')[2]}" in bench.CONFIGS[name].summary
    finally:
        if fresh and name in bench.CONFIGS:
            del bench.CONFIGS[name]


def test_a_shuffled_pram_row_is_the_largest_local_budget_within_its_central_epsilon(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On NIST's excerpt (4 000 records, every feature perturbed, 'N' a category, AGEP over its declared
    range): the file states a central epsilon of at most 2 by the clone bound; a local budget 0.01 larger
    would not; the rows are in a keyed random order; resampled with the rules (the row resamples the shuffled
    release at its central epsilon: the one checked here, not searched for again), the guarantee is kept and
    every record keeps the age and housing rules."""
    from pramkit.privacy.amplification import record_clones
    from pramkit.privacy.shuffle_bound import shuffled_epsilon

    source = NIST / "national" / "national2019.csv"
    if not source.is_file():
        pytest.skip(f"{source} is not available")
    features = ["AGEP", "SEX", "MSP", "HOUSING_TYPE", "OWN_RENT"]
    excerpt = tmp_path / "excerpt.csv"
    pd.read_csv(source, dtype=str, keep_default_na=False, usecols=features)[features].head(4_000).to_csv(
        excerpt, index=False)
    setup = bench.prepare(excerpt, features, [], 0, tmp_path / "w", NIST / "data_dictionary.json")
    release = bench._dp_shuffled(setup, 2.0)
    (_, manifest), = release.steps
    assert [v.name for v in manifest.variables] == features
    assert release.guarantees.shuffled <= 2.0
    local = manifest.record_epsilon
    cats = {**setup.codebook(features), **{v: r for v, r in setup.ranges.items() if v in features}}
    wider = pramkit.design_release(setup.source, features, epsilon=local + 0.01, rng=setup.rng(), na_values=(),
                                   categories=cats)
    # the design step's epsilon (its DP counts) adds to the shuffled perturbation's, as the file states it
    design = wider.ledger.design_epsilon
    assert 0 < design < 2.0
    assert shuffled_epsilon(record_clones(wider), 4_000, bench.SHUFFLE_DELTA).epsilon + design > 2.0
    released = pd.read_csv(release.released, dtype=str, keep_default_na=False)
    original = setup.frame[features].reset_index(drop=True)
    assert released.shape == original.shape
    # in a random order, a record sits where its original did about as often as values agree by chance
    same_place = (released["AGEP"] == original["AGEP"]).mean()
    by_chance = float((original["AGEP"].value_counts(normalize=True) ** 2).sum())
    assert same_place < by_chance + 0.05, (same_place, by_chance)
    name = "dp-shuffle-2-resampled"
    fresh = name not in bench.CONFIGS
    asked: list[tuple[object, float]] = []
    monkeypatch.setattr(bench, "_dp_shuffled", lambda s, central: asked.append((s, central)) or release)
    try:
        bench.on_demand(name)
        again = bench.CONFIGS[name].build(setup)
    finally:
        if fresh:
            del bench.CONFIGS[name]
    assert [(s is setup, central) for s, central in asked] == [(True, 2.0)] and again.released != release.released
    assert again.guarantees.shuffled == release.guarantees.shuffled
    forbids = _forbids(bench.age_rules_on_ages(setup, features, na_is_value=True) + bench.housing_rules(features))
    records = pd.read_csv(again.released, dtype=str, keep_default_na=False).to_dict("records")
    assert not [r for r in records if forbids(r)]


def test_family_and_industry_rules_hold_on_the_original_and_forbid_sdnists_inconsistencies(tmp_path: Path) -> None:
    """On national2019 (every record): no record breaks a family or industry rule, or an age rule on INDP and
    INDP_CAT; SDNist's checks (too many children, a child with an industry, INDP and INDP_CAT not 'N'
    together) each fail a record the rules forbid."""
    source = NIST / "national" / "national2019.csv"
    if not source.is_file():
        pytest.skip(f"{source} is not available")
    features = ["AGEP", "NOC", "NPF", "INDP", "INDP_CAT"]
    setup = bench.prepare(source, features, [], 0, tmp_path / "w", NIST / "data_dictionary.json")
    forbids = _forbids(bench.definition_rules(setup, features))
    records = setup.frame[features].drop_duplicates().to_dict("records")
    assert len(records) > 1000
    assert not [r for r in records if forbids(r)]
    adult = {"AGEP": "40", "NOC": "1", "NPF": "3", "INDP": "7870", "INDP_CAT": "11"}
    assert not forbids(adult)
    for change in ({"NOC": "3"}, {"NOC": "5", "NPF": "4"}, {"NOC": "N"}, {"AGEP": "12"},
                   {"AGEP": "12", "INDP": "N"}, {"AGEP": "12", "INDP_CAT": "N"}, {"INDP": "N"}, {"INDP_CAT": "N"},
                   {"INDP_CAT": "12"}, {"INDP": "170"}, {"INDP": "9920", "INDP_CAT": "17"}):
        assert forbids({**adult, **change}), change
    # INDP_CAT is INDP's sector: every industry code of the file allows exactly one sector, and no two sectors'
    # codes overlap (the ranges are the Census code list's; the file's 16 324 workers all keep them, above)
    sectors = [c for c in setup.categories["INDP_CAT"] if c != "N"]
    allowed = {code: [k for k in sectors if not forbids({**adult, "INDP": code, "INDP_CAT": k})]
               for code in setup.categories["INDP"] if code != "N"}
    assert len(allowed) > 250 and all(len(ks) == 1 for ks in allowed.values()), allowed
    assert len({ks[0] for ks in allowed.values()}) == len(sectors)


def test_group_quarters_and_under_five_rules_hold_on_the_original(tmp_path: Path) -> None:
    """On national2019 (every record): no record breaks the data dictionary's group-quarters rules on NOC and NPF
    or its under-5 rules on DREM and DPHY; a child of 3 with a cognitive difficulty answered, a 40-year-old with
    it not applicable, own children or a family counted in group quarters, and no own children counted in a
    housing unit are each forbidden."""
    source = NIST / "national" / "national2019.csv"
    if not source.is_file():
        pytest.skip(f"{source} is not available")
    features = ["AGEP", "HOUSING_TYPE", "NOC", "NPF", "DREM", "DPHY"]
    setup = bench.prepare(source, features, [], 0, tmp_path / "w", NIST / "data_dictionary.json")
    forbids = _forbids(bench.definition_rules(setup, features))
    records = setup.frame[features].drop_duplicates().to_dict("records")
    assert len(records) > 1000
    assert not [r for r in records if forbids(r)]
    adult = {"AGEP": "40", "HOUSING_TYPE": "1", "NOC": "1", "NPF": "3", "DREM": "2", "DPHY": "2"}
    for fine in ({}, {"NOC": "0", "NPF": "N"}, {"HOUSING_TYPE": "2", "NOC": "N", "NPF": "N"},
                 {"AGEP": "3", "DREM": "N", "DPHY": "N"}, {"AGEP": "5"}):
        assert not forbids({**adult, **fine}), fine
    for change in ({"AGEP": "3"}, {"AGEP": "3", "DREM": "N"}, {"DPHY": "N"}, {"HOUSING_TYPE": "3", "NPF": "N"},
                   {"HOUSING_TYPE": "2", "NOC": "N"}, {"NOC": "N", "NPF": "N"}):
        assert forbids({**adult, **change}), change


@pytest.mark.parametrize("features", sorted(bench.FEATURE_SETS))
def test_the_resampled_pram_row_keeps_every_definition_on_each_feature_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, features: str) -> None:
    """``dp-shuffle-E-resampled`` on each of SDNist's feature sets (1 000 of NIST's records, SDNist not run): the
    resample's rules tie no variables in a cycle (on the industry set the age rule on INDP_CAT is implied by the
    others, and left out), and the released file breaks none of the definitions, the rule left out among them.
    The refusal is asked of the shuffled release the row resampled (not of one searched for again)."""
    import pandas as pd

    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    names = list(bench.FEATURE_SETS[features])
    setup = bench.prepare(excerpt, names, [], 1, tmp_path / "w", NIST / "data_dictionary.json")
    shuffled: list[Any] = []
    shuffle = bench._dp_shuffled
    monkeypatch.setattr(bench, "_dp_shuffled", lambda s, central: shuffled.append(shuffle(s, central)) or shuffled[-1])
    bench.on_demand("dp-shuffle-2-resampled")
    release = bench.CONFIGS["dp-shuffle-2-resampled"].build(setup)
    assert len(shuffled) == 1
    frame = pd.read_csv(release.released, dtype=str, keep_default_na=False)
    assert len(frame) == 1_000
    assert bench.rules_broken(frame, bench.definition_rules(setup, names)) == 0
    if features == "industry":  # with the implied rule, the refusal names the cycle's variables, and only them
        from pramkit.errors import ParameterError

        with pytest.raises(ParameterError) as refused:
            bench._resampled(setup, shuffled[0], bench.definition_rules(setup, names))
        tied = str(refused.value).split("the rules tie ")[1].split(" in a cycle")[0].split(", ")
        assert sorted(tied) == ["AGEP", "INDP", "INDP_CAT"], refused.value


def test_the_provenance_names_the_checkout_and_whether_it_was_modified(tmp_path: Path) -> None:
    """An editable install keeps the version of the commit it was installed at, so the provenance line also names
    the script's checkout: its commit, and ", modified" once a tracked file has changed (an untracked one is not
    counted); nothing outside a checkout."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.org",
                               *args], capture_output=True, text=True, check=True).stdout.strip()

    assert bench.checkout(tmp_path) == ""
    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n", encoding="utf-8")
    git("add", "a.txt")
    git("commit", "-q", "-m", "one")
    head = git("rev-parse", "HEAD")
    (tmp_path / "untracked.txt").write_text("x\n", encoding="utf-8")
    assert bench.checkout(tmp_path) == head[:12]
    (tmp_path / "a.txt").write_text("two\n", encoding="utf-8")
    assert bench.checkout(tmp_path) == head[:12] + ", modified"
    assert f"; this script's checkout at {bench.checkout()}" in bench.provenance([]) or not bench.checkout()


def test_rules_broken_counts_the_records_a_definition_forbids(tmp_path: Path) -> None:
    """The benchmark's "rules broken" column: 0 on national2019 itself; with INDP_CAT drawn apart from INDP (each
    worker's sector taken from another worker), about as many workers as hold another sector than their own."""
    source = NIST / "national" / "national2019.csv"
    if not source.is_file():
        pytest.skip(f"{source} is not available")
    features = list(bench.FEATURE_SETS["industry"])
    setup = bench.prepare(source, features, [], 0, tmp_path / "w", NIST / "data_dictionary.json")
    rules = bench.definition_rules(setup, features)
    frame = setup.frame
    assert bench.rules_broken(frame, rules) == 0
    workers = frame.index[frame["INDP"] != "N"]
    moved = frame.copy()
    moved.loc[workers, "INDP_CAT"] = frame.loc[workers, "INDP_CAT"].sample(frac=1, random_state=3).to_numpy()
    other = int((moved["INDP_CAT"] != frame["INDP_CAT"]).sum())
    assert other > 10_000 and bench.rules_broken(moved, rules) == other


def _excerpt_without_sdnist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The first 1 000 records of NIST's national file, written to ``tmp_path``, and no SDNist interpreter
    (skipped when the file is absent)."""
    source = NIST / "national" / "national2019.csv"
    if not source.is_file():
        pytest.skip(f"{source} is not available")
    monkeypatch.delenv("SDNIST_PYTHON", raising=False)
    excerpt = tmp_path / "national2019.csv"
    excerpt.write_text("".join(source.open(encoding="utf-8").readlines()[:1001]), encoding="utf-8")
    return excerpt


def test_no_score_releases_without_sdnist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture) -> None:
    """``--no-score``: the releases and their times, SDNist neither needed nor run (its columns '-'; the records
    prepared once, :func:`_prepared`)."""
    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    monkeypatch.setattr(bench, "prepare", _prepared)
    assert bench.main(["--no-score", "--configs", "raw,dp-10", "--data", str(excerpt)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("| raw ", "| dp-10 "))]
    assert len(rows) == 2 and all(row.split(" | ")[3] == "-" for row in rows), rows


def test_a_feature_set_gives_the_features_outside_the_peers_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture) -> None:
    """``--feature-set`` without ``--peers`` releases that set's features (it was silently ignored); with
    ``--features`` too, one line and exit 2."""
    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    assert bench.main(["--feature-set", "family", "--features", "AGEP,SEX", "--no-score"]) == 2
    assert capsys.readouterr().err.strip() == "bench_sdnist: give --features or --feature-set, not both"
    seen = []
    monkeypatch.setattr(bench, "prepare", lambda data, features, *a, **k: seen.append(list(features)) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        bench.main(["--no-score", "--configs", "raw", "--feature-set", "family", "--data", str(excerpt)])
    assert seen == [list(bench.FEATURE_SETS["family"])]


def _slow_peer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An interpreter for the peers that does not finish in time (it sleeps 120 s, whatever it is asked), and the
    file where each of its runs writes its process id."""
    pids = tmp_path / "pids"
    slow = tmp_path / "slow-python"
    slow.write_text(f"#!/bin/sh\necho $$ >> {pids}\nexec sleep 120\n", encoding="utf-8")
    slow.chmod(0o755)
    monkeypatch.setattr(bench, "dpmm_python", lambda: str(slow))
    return pids


def _running(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_peer_past_its_time_limit_is_stopped_and_its_row_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture) -> None:
    """``--peers`` with a peer still running at ``--peer-minutes``: the peer is stopped (it never writes after),
    the run goes on to the next row, and the table has the stopped row ("not finished", "stopped at" the
    limit) beside the finished ones, with no score and no digest (NIST's records, three of their features given
    with ``--features``: pramkit's rows take a fraction of a feature set's time, and their figures are not what is
    checked; SDNist not run)."""
    import argparse
    import time

    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    pids = _slow_peer(tmp_path, monkeypatch)
    args = argparse.Namespace(feature_set=None, features="AGEP,SEX,MSP", data=excerpt, seed=1, epsilons=[1.0, 2.0],
                              no_peer_runs=False, peer_tools=["aim"], models=["dp-shuffle"], target="NATIONAL", out=None,
                              estimator="mle", plot=None, peer_minutes=1 / 60, rounds_per_variable=None, bins={},
                              tables_per_fit=None, peer_releases=None, kept_peers_only=False)
    t0 = time.monotonic()
    assert bench.run_peers(args, None, NIST) == 0
    assert time.monotonic() - t0 < 2 * 120  # unstopped, the two peers' sleeps alone would take 240 s (the pramkit rows
    # took 43 s once on a loaded machine: a bound of the sleeps alone would time the machine, not the stop)
    out, err = capsys.readouterr()
    rows = {line.split(" | ")[1]: line.split(" | ") for line in out.splitlines() if line.startswith("| given ")}
    assert set(rows) == {"dp-shuffle-1", "aim-1", "dp-shuffle-2", "aim-2"}, out
    for eps in (1, 2):
        stopped = rows[f"aim-{eps}"]
        assert stopped[2] == f"{eps} (delta 1e-05; dpmm AIM)" and stopped[4] == "not finished", stopped
        assert stopped[5:9] == ["-", "-", "-", "-"] and stopped[9].strip(" |") == "stopped at 1", stopped
        assert f"given aim-{eps}: stopped, not finished in " in err
    assert rows["dp-shuffle-1"][4] == "-" and rows["dp-shuffle-1"][8].strip(" |").replace(".", "").isdigit()
    assert "aim-" not in out.split("scored files")[1]  # a stopped peer scored nothing
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 2 and not any(_running(pid) for pid in started)  # each killed, not left behind


def test_without_a_time_limit_a_peer_runs_to_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--peer-minutes 0``: no limit, the peer's own end (here: its failure, for it writes no file) is reported."""
    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    quick = tmp_path / "quick-python"
    quick.write_text("#!/bin/sh\necho 'dpmm: no file' >&2\nexit 1\n", encoding="utf-8")
    quick.chmod(0o755)
    monkeypatch.setattr(bench, "dpmm_python", lambda: str(quick))
    setup = bench.replace(bench.prepare(excerpt, list(bench.FEATURE_SETS["demographic"]), [], 1, tmp_path, None),
                          peer_seconds=None)
    with pytest.raises(RuntimeError, match=r"dpmm's AIM failed at epsilon 1: dpmm: no file"):
        bench.CONFIGS["aim-1"].build(setup)


@pytest.mark.parametrize("argv, config, rounds", [
    (["--rounds-per-variable", "16"], "pgm-zcdp-1", 16 * 10),
    ([], "pgm-zcdp-1", None),
    (["--rounds-per-variable", "8"], "pgm-all-1", 8 * 10),
    (["--rounds-per-variable", "8"], "pgm-tuned-1", 16 * 10),  # the configuration's own rounds
    ([], "pgm-zcdp-1-half", 8 * 10),
    (["--rounds-per-variable", "16"], "pgm-zcdp-1-half", 8 * 10),
    (["--rounds-per-variable", "16"], "pgm-zcdp-1-quarter", 16 * 10),
    (["--rounds-per-variable", "8"], "synth-all-1", None),  # the model margins has no rounds
])
def test_the_rounds_per_variable_reach_the_model_pgm_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          argv: list[str], config: str, rounds: int | None) -> None:
    """``--rounds-per-variable R``: each release of the model pgm is asked for ``--rounds`` R times its ten
    demographic features, one with rounds of its own keeps them, the model margins is asked for none
    (``synthesize_release`` stood in for, NIST's records, SDNist not run)."""
    assert _asked(tmp_path, monkeypatch, config, argv).get("rounds") == rounds


#: ``bench.prepare`` itself, whatever a test stands in for it.
PREPARE = bench.prepare
#: The setups :func:`_prepared` made, by their inputs, with the input file each wrote.
PREPARED: dict[tuple[object, ...], tuple[Any, bytes]] = {}


def _prepared(data: Path, features: Sequence[str], public: Sequence[str], seed: int, workdir: Path,
              dictionary: Path | None) -> Any:
    """``bench.prepare``, made once for the same inputs (the data's bytes, the features, the public ones, the seed,
    the dictionary) and given again in ``workdir``, its input file written there byte for byte.  The tests that
    run the bench on NIST's records only to see where a flag goes (:func:`_asked`) or how a failure is reported
    all prepare the same records, and most of ``prepare`` (half a second) is reading the data dictionary's ranges;
    what it makes is not what they check."""
    from dataclasses import replace

    key = (data.read_bytes(), tuple(features), tuple(public), seed, dictionary)
    if key not in PREPARED:
        setup = PREPARE(data, features, public, seed, workdir, dictionary)
        PREPARED[key] = replace(setup, frame=setup.frame.copy()), setup.source.read_bytes()
        return setup
    setup, written = PREPARED[key]
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / setup.source.relative_to(setup.workdir)
    source.write_bytes(written)
    return replace(setup, source=source, workdir=workdir, frame=setup.frame.copy(),
                   categories={k: list(v) for k, v in setup.categories.items()})


def _asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str, argv: list[str]) -> dict[str, object]:
    """What ``config`` asks ``synthesize_release`` for on the demographic features of NIST's records, with the
    bench's flags ``argv`` (``synthesize_release`` stood in for, SDNist not run; the records prepared once for
    every case, :func:`_prepared`)."""
    import pramkit

    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    monkeypatch.setattr(bench, "prepare", _prepared)
    asked: list[dict[str, object]] = []

    def stand_in(*args: object, **kwargs: object) -> None:
        asked.append(kwargs)
        raise ZeroDivisionError

    monkeypatch.setattr(pramkit, "synthesize_release", stand_in)
    with pytest.raises(ZeroDivisionError):
        bench.main(["--no-score", "--configs", config, "--feature-set", "demographic", "--public", "",
                    "--data", str(excerpt), *argv])
    assert len(asked) == 1, asked
    return asked[0]


@pytest.mark.parametrize("argv, config, bins", [
    (["--bins", "AGEP=5"], "pgm-zcdp-1", {"AGEP": 5}),
    (["--bins", "AGEP=5,POVPIP=25"], "pgm-zcdp-1", {"AGEP": 5}),  # POVPIP is no demographic feature
    (["--bins", ""], "pgm-zcdp-1", None),
    (["--bins", "AGEP=5"], "synth-all-1", None),  # the model margins bins nothing
    (["--bins", "AGEP=5"], "pgm-all-1", None),  # nor the documented rows of pure DP
    ([], "pgm-zcdp-1", {"AGEP": 5}),  # the default's POVPIP is no demographic feature
])
def test_the_bins_reach_the_model_pgm_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str],
                                          config: str, bins: dict[str, int] | None) -> None:
    """``--bins``: each release of the rows pgm-zcdp is asked for the bins of its features, the others for none
    (``synthesize_release`` stood in for, NIST's records, SDNist not run)."""
    assert _asked(tmp_path, monkeypatch, config, argv).get("bins") == bins


@pytest.mark.parametrize("config, min_count, per_draw", [
    ("pgm-zcdp-1-quarter", 1, 1.25), ("pgm-zcdp-2-half", 1, 1.5), ("pgm-zcdp-1", 2, None),
    ("pgm-zcdp-1-single", 1, None),
])
def test_the_shared_rows_ask_for_their_records_per_draw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str,
                                                        min_count: int, per_draw: float | None) -> None:
    """Each row of the model pgm asks ``synthesize_release`` for the records a draw its name says (``--min-count 1
    --records-per-draw R``; two records a draw by default, one with ``-single``)."""
    asked = _asked(tmp_path, monkeypatch, config, [])
    assert (asked["min_count"], asked.get("records_per_draw")) == (min_count, per_draw)


def test_a_release_of_other_rounds_says_so_in_its_row() -> None:
    """The row of a release of the model pgm names its rounds when they are not the default's 4 per variable."""
    names = {v: {} for v in bench.FEATURE_SETS["family"]}
    assert bench.rounds_note({"variables": names, "procedure": {"rounds": 176}}) == ", 176 rounds"
    assert bench.rounds_note({"variables": names, "procedure": {"rounds": 44}}) == ""


@pytest.mark.parametrize("name, known", [
    ("pgm-zcdp-2-quarter", True), ("pgm-zcdp-0.5-quarter", True), ("mst-1-quarter", False),
    ("pgm-all-1-quarter", False), ("pgm-zcdp-quarter", False),
    ("pgm-zcdp-1-half", True), ("pgm-zcdp-10-half", True), ("aim-1-half", False), ("pgm-zcdp-half", False),
    ("pgm-zcdp-1-half-quarter", False),
])
def test_the_quarter_rows_give_each_draw_to_one_and_a_quarter_records(name: str, known: bool) -> None:
    """``-quarter``: 1.25 records a draw; ``-half``: 1.5; each a suffix of the model pgm's zCDP rows only."""
    fresh = name not in bench.CONFIGS
    suffix = name.rsplit("-", 1)[1]
    try:
        assert bench.on_demand(name) is known
        if known:
            shared = {"quarter": "1.25", "half": "1.5"}[suffix]
            assert f"--records-per-draw {shared}:" in bench.CONFIGS[name].summary
            assert bench.at_epsilon(f"pgm-zcdp-{suffix}", bench.method_of(name)[1]) == name
            assert bench.method_of(name)[0] == f"pgm-zcdp-{suffix}"
    finally:
        if fresh and name in bench.CONFIGS:
            del bench.CONFIGS[name]


def _fake_dpmm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipelines: str) -> None:
    """A package ``dpmm`` whose ``pipelines`` module is the source given, first on the peers' PYTHONPATH."""
    fake = tmp_path / "fake" / "dpmm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("", encoding="utf-8")
    (fake / "pipelines.py").write_text(pipelines, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fake"))


def _counting_peer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A dpmm whose pipelines draw the input's records again (seeded), each fit logged as a line of its epsilon
    in the file returned: the peer's runs are counted without dpmm."""
    log = tmp_path / "peer-runs"
    _fake_dpmm(tmp_path, monkeypatch,
               "class AIMPipeline:\n"
               "    def __init__(self, **kw):\n        self.kw = kw\n"
               "    def fit(self, coded, domain, random_state):\n"
               f"        open({str(log)!r}, 'a').write(f\"{{self.kw['epsilon']}}\\n\")\n"
               "        self.coded = coded\n"
               "    def generate(self, n_records, random_state):\n"
               "        return self.coded.sample(n=n_records, replace=True, random_state=random_state)"
               ".reset_index(drop=True)\n"
               "MSTPipeline = AIMPipeline\n")
    monkeypatch.setattr(bench, "dpmm_python", lambda: sys.executable)
    return log


def test_a_kept_peer_release_is_read_back_only_for_the_same_inputs(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``--peer-releases``: the second run of a peer from the same inputs reads the kept file (the peer is not run;
    the same bytes are scored; the row gives the first run's time and when it was made); another epsilon, seed or
    input record, or a kept file whose bytes were changed, makes the release again."""
    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    log = _counting_peer(tmp_path, monkeypatch)
    store = tmp_path / "kept"

    def run(config: str, *, seed: int = 1, data: Path = excerpt) -> bench.Row:
        work = tmp_path / f"work-{len(list(tmp_path.glob('work-*')))}"
        setup = bench.replace(bench.prepare(data, list(bench.FEATURE_SETS["demographic"]), [], seed, work, None),
                              peer_releases=store)
        bench.on_demand(config)
        return bench.run_config(config, setup, python=None, data_root=NIST, target="NATIONAL", out=None)

    def runs() -> int:
        return len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0

    first = run("aim-1")
    assert runs() == 1 and first.made == "" and len(list(store.glob("*.csv"))) == 1
    about = json.loads(next(store.glob("*.json")).read_text(encoding="utf-8"))
    again = run("aim-1")
    assert runs() == 1, "the kept release was made again"
    assert again.digest == first.digest and again.made == about["made"] and again.release_seconds == about["seconds"]
    assert again.broken == first.broken
    run("aim-2")
    run("aim-1", seed=2)
    lines = excerpt.read_text(encoding="utf-8").splitlines()
    other = tmp_path / "other.csv"  # one record's age changed
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index("AGEP")] = "44" if cells[header.index("AGEP")] != "44" else "45"
    other.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n", encoding="utf-8")
    run("aim-1", data=other)
    assert runs() == 4 and len(list(store.glob("*.csv"))) == 4
    kept = bench.PeerStore(store).path(about["inputs"])
    kept.write_bytes(kept.read_bytes().replace(b"\n", b"\r\n"))  # the kept file changed after it was made
    assert run("aim-1").made == "" and runs() == 5
    assert run("aim-1").made != "" and runs() == 5  # kept again, whole


def test_kept_peers_only_reads_the_kept_releases_and_makes_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture) -> None:
    """``--kept-peers-only``: a peer's release kept from the same inputs is read (the row gives when it was made); one
    not kept is not made (the peer never runs) and its row says "not kept", with no score, no time and no digest,
    in one line on stderr.  The kept folder is left as it was."""
    import argparse

    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    log = _counting_peer(tmp_path, monkeypatch)
    store = tmp_path / "kept"
    args = argparse.Namespace(feature_set="demographic", features=None, data=excerpt, seed=1, epsilons=[1.0],
                              no_peer_runs=False, peer_tools=["aim"], models=[], target="NATIONAL", out=None,  # the peer's rows only
                              estimator="mle", plot=None, peer_minutes=None, rounds_per_variable=None, bins={},
                              tables_per_fit=None,
                              peer_releases=store, kept_peers_only=False)
    assert bench.run_peers(args, None, NIST) == 0  # keeps AIM's release at epsilon 1
    assert len(log.read_text(encoding="utf-8").splitlines()) == 1
    before = {p.name: p.read_bytes() for p in store.iterdir()}
    capsys.readouterr()
    args.epsilons, args.kept_peers_only = [1.0, 2.0], True
    assert bench.run_peers(args, None, NIST) == 0
    out, err = capsys.readouterr()
    assert len(log.read_text(encoding="utf-8").splitlines()) == 1, "a peer was run"
    rows = {line.split(" | ")[1]: line.split(" | ") for line in out.splitlines() if line.startswith("| demographic ")}
    assert set(rows) == {"aim-1", "aim-2"}, out
    assert ", made 20" in rows["aim-1"][9], rows["aim-1"]
    absent = rows["aim-2"]
    assert absent[2] == "2 (delta 1e-05; dpmm AIM)" and absent[4] == "not kept", absent
    assert absent[5:9] == ["-", "-", "-", "-"] and absent[9].strip(" |") == "-", absent
    assert err.count("aim-2") == 1 and f"demographic aim-2: not kept in {store} (--kept-peers-only)" in err, err
    assert "aim-2" not in out.split("scored files")[1]
    assert {p.name: p.read_bytes() for p in store.iterdir()} == before


def test_peers_on_the_features_given_run_them_as_one_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture) -> None:
    """``--peers --features``: the features listed are the one set run, named ``given`` (they were silently
    ignored, every SDNist set run instead); the peer is given exactly those columns."""
    import argparse

    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    _counting_peer(tmp_path, monkeypatch)
    store = tmp_path / "kept"
    args = argparse.Namespace(feature_set=None, features="DREM,AGEP,DEAR", data=excerpt, seed=1, epsilons=[1.0],
                              no_peer_runs=False, peer_tools=["mst"], models=[], target="NATIONAL", out=None,
                              estimator="mle", plot=None, peer_minutes=None, rounds_per_variable=None, bins={},
                              tables_per_fit=None,
                              peer_releases=store, kept_peers_only=False)
    assert bench.run_peers(args, None, NIST) == 0
    out = capsys.readouterr().out
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| ") and "| release |" not in line]
    assert [(r[0], r[1]) for r in rows] == [("| given", "mst-1")], out
    (kept,) = store.glob("*.csv")
    with open(kept, newline="", encoding="utf-8") as fh:
        assert next(csv.reader(fh)) == ["DREM", "AGEP", "DEAR"]


def test_features_not_in_the_file_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A feature the file has not (here in a copy of the national file's first records) is named with the file's
    columns, in one line, exit 2, before anything is released; the file is left as it was."""
    source = NIST / "national" / "national2019.csv"
    if not source.is_file():
        pytest.skip(f"{source} is not available")
    data = tmp_path / "national2019.csv"
    data.write_text("".join(source.open(encoding="utf-8").readlines()[:11]), encoding="utf-8")
    before = data.read_bytes()
    for args in (["--features", "AGEP,DREMM", "--configs", "raw"],
                 ["--peers", "--features", "AGEP,DREMM", "--no-peer-runs"]):
        assert bench.main([*args, "--data", str(data), "--no-score"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("bench_sdnist: --features: DREMM not among the columns of ") \
            and "PUMA, AGEP, SEX" in err, err
    assert data.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["national2019.csv"]


def test_a_peer_release_that_cannot_be_kept_is_scored_and_made_again_later(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """Injected failure: the description of a kept release cannot be written.  The run says so in one line and
    scores the release; nothing half-written stays in the folder, and the next run makes the release again. A
    peer that fails keeps nothing."""
    from pramkit import atomic

    excerpt = _excerpt_without_sdnist(tmp_path, monkeypatch)
    log = _counting_peer(tmp_path, monkeypatch)
    store = tmp_path / "kept"
    setup = bench.replace(bench.prepare(excerpt, list(bench.FEATURE_SETS["demographic"]), [], 1, tmp_path / "w", None),
                          peer_releases=store)
    real = atomic._write_file

    def failing(path: Path, data: bytes) -> None:
        if ".json" in path.name:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(atomic, "_write_file", failing)
    row = bench.run_config("mst-1", setup, python=None, data_root=NIST, target="NATIONAL", out=None)
    err = capsys.readouterr().err
    assert row.made == "" and row.digest and err.count("\n") == 1 and "mst-1 not kept in" in err and \
        "no space left on device" in err.lower(), err
    assert sorted(p.suffix for p in store.iterdir()) == [".csv"]  # no description, no temporary left
    monkeypatch.setattr(atomic, "_write_file", real)
    assert bench.run_config("mst-1", setup, python=None, data_root=NIST, target="NATIONAL", out=None).made == ""
    assert len(log.read_text(encoding="utf-8").splitlines()) == 2
    for kept in store.iterdir():
        kept.unlink()
    (tmp_path / "fake" / "dpmm" / "pipelines.py").write_text(
        "class MSTPipeline:\n    def __init__(self, **kw):\n        raise ValueError('no')\n", encoding="utf-8")
    with pytest.raises(bench.ToolFailed):
        bench.run_config("mst-1", setup, python=None, data_root=NIST, target="NATIONAL", out=None)
    assert not list(store.iterdir())


def test_the_peer_releases_kept_in_the_repository_are_read_by_this_script(tmp_path: Path) -> None:
    """Each release in benchmarks/peer-releases/ is whole (its CSV has the SHA-256 its description states), lies
    under the digest of the inputs it states, was made by this script's ``PEER_SCRIPT`` at the peers' delta, and
    (with the national file) from the very input file and codes that ``--peers`` writes for one feature set, with
    that set's features and every record: so ``--peers --peer-releases benchmarks/peer-releases`` reads it.  A
    change of the peer script or of the input the benchmark writes fails here, naming the file to make again."""
    import hashlib

    kept = sorted(bench.KEPT_PEER_RELEASES.glob("*.json"))
    if not kept:
        pytest.skip("no peer release is kept in the repository")
    store = bench.PeerStore(bench.KEPT_PEER_RELEASES)
    written: dict[tuple[str, str], str] = {}  # (input SHA-256, codes SHA-256) -> the feature set that writes them
    if (NIST / "national" / "national2019.csv").is_file():
        for name, features in bench.FEATURE_SETS.items():
            setup = bench.prepare(NIST / "national" / "national2019.csv", list(features), [], 1, tmp_path / name,
                                  NIST / "data_dictionary.json")
            codes = bench.peer_codes(setup)
            written[hashlib.sha256(setup.source.read_bytes()).hexdigest(), hashlib.sha256(codes).hexdigest()] = name
    script = hashlib.sha256(bench.PEER_SCRIPT.encode()).hexdigest()
    for about_path in kept:
        about = json.loads(about_path.read_text(encoding="utf-8"))
        inputs, data = about["inputs"], about_path.with_suffix(".csv").read_bytes()
        assert hashlib.sha256(data).hexdigest() == about["sha256"], f"{about_path.name}: the CSV has changed"
        assert store.path(inputs) == about_path.with_suffix(".csv"), f"{about_path.name}: not under its digest"
        assert inputs["script"] == script, f"{about_path.name}: made by another PEER_SCRIPT; make it again"
        assert inputs["peer"] in bench.PEERS and inputs["delta"] == bench.PEER_DELTA and inputs["seed"] == 1
        assert about["seconds"] > 0 and about["made"].endswith("Z")
        if written:
            which = written.get((inputs["input"], inputs["codes"]))
            assert which is not None, f"{about_path.name}: its input is not what --peers writes now; make it again"
            frame = pd.read_csv(about_path.with_suffix(".csv"), dtype=str, keep_default_na=False)
            assert tuple(frame.columns) == bench.FEATURE_SETS[which] and len(frame) == 27253


@pytest.mark.parametrize("name", ["PeerStore", "peers_table", "goal_lines", "method_of", "peer_configs",
                                  "resample_rules", "checkout"])
def test_the_documented_examples_hold(name: str) -> None:
    """The examples in the docstrings of the side-by-side table's parts run as written."""
    import doctest

    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(getattr(bench, name), name, globs=vars(bench))
    assert tests and any(t.examples for t in tests)
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).failed == 0
