"""benchmarks/bench_attack_crc.py: the advantage at a peer's k-marginal, interpolated between the runs that bracket it.

Every expectation is written by hand from rows made here (the line through two points, the average of tied runs,
out of range outside the runs); no SDNist and no CRC data are needed.
"""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest
from conftest import sdnist_benchmark

import pramkit

ROOT = Path(__file__).resolve().parents[1]


def _attack_benchmark() -> ModuleType:
    sdnist_benchmark()  # the module it imports, loaded once
    name = "bench_attack_crc"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "bench_attack_crc.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


crc = _attack_benchmark()


def row(name: str, k: float | None, advantage: float, weighted: float | None = None) -> dict[str, object]:
    return {"release": name, "k_marginal": k, "advantage": advantage,
            "weighted_advantage": advantage if weighted is None else weighted}


CURVE = [row("pgm-all-0.25", 928, 0.050), row("pgm-all-0.5", 950, 0.070), row("pgm-all-1", 965, 0.094),
         row("pgm-all-2", 971, 0.100)]


@pytest.mark.parametrize("k, low, high, expected", [
    (961, "pgm-all-0.5", "pgm-all-1", 0.070 + (961 - 950) / (965 - 950) * (0.094 - 0.070)),
    (950, "pgm-all-0.5", "pgm-all-0.5", 0.070),          # a run at the very k-marginal: its own figure
    (928, "pgm-all-0.25", "pgm-all-0.25", 0.050),        # the ends of the range are in range
    (971, "pgm-all-2", "pgm-all-2", 0.100),
    (939, "pgm-all-0.25", "pgm-all-0.5", 0.060),         # half way
])
def test_the_advantage_at_a_k_marginal_is_on_the_line_through_the_bracketing_runs(
        k: float, low: str, high: str, expected: float) -> None:
    at = crc.at_k_marginal(CURVE, k)
    assert (at.low, at.high) == (low, high)
    assert at.value == pytest.approx(expected, abs=1e-12)
    assert at.span == (928, 971)


@pytest.mark.parametrize("k", [981, 927.5, 1000, 0])
def test_outside_the_runs_it_is_out_of_range_never_extrapolated(k: float) -> None:
    at = crc.at_k_marginal(CURVE, k)
    assert at.value is None and at.low is None and at.high is None
    assert at.span == (928, 971)


def test_the_runs_order_and_unscored_runs_do_not_matter() -> None:
    shuffled = [CURVE[2], CURVE[0], row("pgm-all-4", None, 0.9), CURVE[3], CURVE[1]]
    assert crc.at_k_marginal(shuffled, 961).value == pytest.approx(crc.at_k_marginal(CURVE, 961).value, abs=1e-15)
    assert crc.at_k_marginal([row("pgm-all-4", None, 0.9)], 961).span is None


def test_runs_of_the_same_k_marginal_are_one_point_at_their_mean() -> None:
    # two runs at 971 (pgm's curve is flat at the top): one point at 971 with the mean of their figures
    runs = [*CURVE, row("pgm-all-10", 971, 0.120)]
    at = crc.at_k_marginal(runs, 968)
    assert at.high == "pgm-all-2 = pgm-all-10" and at.low == "pgm-all-1"
    assert at.value == pytest.approx(0.094 + (968 - 965) / (971 - 965) * (0.110 - 0.094), abs=1e-12)


def test_the_rarity_weighted_advantage_is_interpolated_the_same_way() -> None:
    runs = [row("dp-40", 900, 0.01, 0.02), row("dp-60", 980, 0.05, 0.10)]
    assert crc.at_k_marginal(runs, 960, "weighted_advantage").value == pytest.approx(0.08, abs=1e-12)
    assert crc.at_k_marginal(runs, 960).value == pytest.approx(0.04, abs=1e-12)


@pytest.mark.parametrize("name, method, parameter", [
    ("pgm-all-0.25", "pgm-all", 0.25), ("pgm-all-1", "pgm-all", 1.0), ("synth-all-10", "synth-all", 10.0),
    ("dp-40-resampled", "dp-resampled", 40.0), ("dp-100", "dp", 100.0),
    ("sdcmicro-pram-pd0.9", "sdcmicro-pram", 0.9), ("pgm-all-1-single", "pgm-all-single", 1.0),
    ("mst-1", "mst", 1.0), ("aim-0.5", "aim", 0.5), ("raw", "raw", None), ("sdcmicro-pram", "sdcmicro-pram", None),
])
def test_a_release_name_is_its_method_and_parameter(name: str, method: str, parameter: float | None) -> None:
    assert crc.method_of(name) == (method, parameter)


def test_the_equal_utility_table_has_a_line_per_peer_and_method() -> None:
    rows = [*CURVE, row("mst-1", 961, 0.089, 0.103), row("aim-1", 981, 0.115, 0.174),
            row("sdcmicro-pram-pd0.8", 955, 0.200), row("sdcmicro-pram-pd0.9", 975, 0.300), row("raw", 1000, 0.5)]
    lines = crc.equal_utility_table(rows).splitlines()[2:]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    # AIM first (the higher k-marginal), each of pramkit's methods in name order; raw is no method to compare
    assert [(c[0], c[3]) for c in cells] == [("aim-1", "pgm-all"), ("aim-1", "sdcmicro-pram"),
                                              ("mst-1", "pgm-all"), ("mst-1", "sdcmicro-pram")]
    aim_pgm, aim_sdc, mst_pgm, mst_sdc = cells
    assert aim_pgm[4:] == ["out of range (runs 928 to 971)", "-", "-"]
    assert aim_sdc[4:] == ["out of range (runs 955 to 975)", "-", "-"]
    assert mst_pgm[1:3] == ["961", "+8.9 (+10.3)"]
    assert mst_pgm[4] == "pgm-all-0.5 (950), pgm-all-1 (965)"
    pgm = 0.070 + 11 / 15 * 0.024  # the line through (950, 0.070) and (965, 0.094) at 961: 0.0876
    assert mst_pgm[5] == f"{100 * pgm:+.1f} ({100 * pgm:+.1f})" == "+8.8 (+8.8)"
    assert mst_pgm[6] == f"{100 * (pgm - 0.089):+.1f} ({100 * (pgm - 0.103):+.1f})" == "-0.1 (-1.5)"
    assert mst_sdc[5:] == ["+23.0 (+23.0)", "+14.1 (+12.7)"]  # 0.2 + 6/20 * 0.1 = 0.23


def test_what_each_release_shows_exactly_and_what_its_epsilon_covers(tmp_path: Path) -> None:
    frame = pd.DataFrame({"AGEP": ["30", "40", "50", "60"] * 25, "SEX": ["1", "2"] * 50,
                          "MSP": ["1", "2", "3", "4"] * 25})
    src = tmp_path / "input.csv"
    frame.to_csv(src, index=False)
    categories = {"MSP": ["1", "2", "3", "4"], "SEX": ["1", "2"]}
    m = pramkit.design_release(src, ["MSP", "SEX"], epsilon=4.0, rng=random.Random(1), categories=categories,
                               na_values=("N",))
    for name in ("dp-4", "dp-4-resampled"):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        m.write(tmp_path / f"{name}.json")
    columns = list(frame.columns)
    exact, covers = crc.describe(tmp_path / "dp-4.csv", columns)
    assert exact == "AGEP; every 'N' value (kept as missing)"  # the column no matrix perturbs, and the missing
    assert covers == "4 local per record (design step included)"  # the record's budget asked
    assert crc.describe(tmp_path / "dp-4-resampled.csv", columns)[1].endswith(", resampled (post-processing)")
    classic = pramkit.design_release(src, ["MSP"], method="invariant", options={"pd": 0.8, "alpha": 0.5, "seed": 1},
                                     exact_frequencies=True, categories=categories, na_values=())
    frame.to_csv(tmp_path / "sdcmicro-pram-pd0.8.csv", index=False)
    classic.write(tmp_path / "sdcmicro-pram-pd0.8.json")
    exact, covers = crc.describe(tmp_path / "sdcmicro-pram-pd0.8.csv", columns)  # no value read as missing
    assert exact == "AGEP, SEX"
    assert covers.startswith("none: ") and covers.endswith(" local from the matrices, but the design reads exact "
                                                           "frequencies")
    (tmp_path / "pgm-all-1.json").write_text(json.dumps({
        "format": "pramkit.synthesis", "public": {"columns": []}, "released_as_they_are": [],
        "ledger": {"record_epsilon": 0.9999999999990001}}), encoding="utf-8")
    assert crc.describe(tmp_path / "pgm-all-1.csv", columns) == (
        "none", "1 central, pure (replace-one): the whole file")
    assert crc.describe(tmp_path / "mst-0.5.csv", columns) == (
        "none", "0.5 central, delta 1e-05 (dpmm MST, add-or-remove): the whole file")
    assert crc.describe(tmp_path / "unknown.csv", columns) == ("-", "-")


def test_the_curves_configurations_are_made_on_demand_and_leave_the_default_run_alone() -> None:
    bench = sdnist_benchmark()
    default = list(bench.CONFIGS)
    made = ["pgm-all-0.25", "synth-all-4", "dp-60", "dp-60-resampled", "sdcmicro-pram-pd0.95", "mst-0.5", "aim-4"]
    try:
        assert all(bench.on_demand(n) for n in made)
        assert list(bench.CONFIGS)[:len(default)] == default
        for bad in ("pgm-all-0", "pgm-all-x", "mst-1-resampled", "sdcmicro-pram-pd1.5", "sdcmicro-pram-pd0", "rr-3"):
            assert not bench.on_demand(bad), bad
        assert bench.main(["--configs", "pgm-all-0", "--list"]) == 0  # --list names the registered ones only
    finally:
        for n in made:
            bench.CONFIGS.pop(n, None)
    assert list(bench.CONFIGS) == default
