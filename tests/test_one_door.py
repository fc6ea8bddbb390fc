"""One door per workflow: the library function works from one opened source and one checked specification.

``pramkit.apply_file`` given its settings as keywords builds the specification from them and goes through the
same door as ``apply_file(spec=ApplySpec(...))``: on sdcMicro's testdata the two calls write the same bytes,
and each call checks its settings exactly once (the specification's rules for a specification, the keywords'
own rules, with their messages, for keywords).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SDC_DATA, run_cli

import pramkit
import pramkit.engine.perturb as perturb
import pramkit.estimate.spec as estimate_spec
import pramkit.estimate.table as estimate_module
import pramkit.risk.identification as risk_module
import pramkit.settings as settings
import pramkit.swap.run as swap_module
from pramkit import Manifest, PramMatrix
from pramkit.engine.apply_spec import ApplySettings
from pramkit.errors import ParameterError
from pramkit.estimate.spec import EstimateSpec
from pramkit.release.apply_spec import ApplySpec
from pramkit.release.risk_spec import RiskSpec
from pramkit.release.swap_settings import SwapSettings
from pramkit.release.swap_spec import SwapSpec
from pramkit.settings import RiskSettings
from pramkit.swap.plan import plan_swap

TESTDATA = SDC_DATA / "testdata.csv"
pytestmark = pytest.mark.skipif(not TESTDATA.is_file(), reason="../shared/data/sdcmicro/testdata.csv is absent")
KEY = bytes(range(11, 43))


def _rows() -> tuple[list[str], list[list[str]]]:
    """The header and records of testdata.csv, read by the csv module (not by pramkit)."""
    with TESTDATA.open(newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    return header, rows


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A manifest for urbrur and water: a keep-probability matrix over the categories the csv module reads."""
    header, rows = _rows()
    matrices = {}
    for name in ("urbrur", "water"):
        labels = sorted({r[header.index(name)] for r in rows}, key=int)
        matrices[name] = PramMatrix.from_diagonal([0.7] * len(labels), [int(c) for c in labels])
    path = tmp_path_factory.mktemp("one_door") / "m.json"
    Manifest.of(matrices).write(path)
    return path


SETTINGS: list[dict[str, Any]] = [
    {},
    {"chunk_rows": 333, "release": "wave 2", "threads": 1},
    {"shuffle": True, "public_columns": ("sex", "age"), "chunk_rows": 1000},
]


def _as_spec(keywords: dict[str, Any]) -> ApplySpec:
    given = dict(keywords)
    if "public_columns" in given:
        given["public_columns"] = ",".join(given["public_columns"])  # the command line's text
    return ApplySpec(**given)


@pytest.mark.parametrize("keywords", SETTINGS, ids=["defaults", "label-chunks", "shuffle"])
def test_apply_keywords_and_spec_release_the_same_bytes(keywords: dict[str, Any], manifest: Path,
                                                         tmp_path: Path) -> None:
    a = pramkit.apply_file(TESTDATA, manifest, tmp_path / "a.csv", key=KEY, **keywords)
    b = pramkit.apply_file(TESTDATA, manifest, tmp_path / "b.csv", key=KEY, spec=_as_spec(keywords))
    c = _as_spec(keywords).apply(TESTDATA, manifest, tmp_path / "c.csv", key=KEY)
    released = (tmp_path / "a.csv").read_bytes()
    assert released == (tmp_path / "b.csv").read_bytes() == (tmp_path / "c.csv").read_bytes()
    receipts = [(tmp_path / f"{n}.csv.receipt.json").read_text().replace(f"{n}.csv", "OUT") for n in "abc"]
    assert receipts[0] == receipts[1] == receipts[2]
    assert a.rows == b.rows == c.rows and a.release == b.release == c.release == keywords.get("release", "")
    assert a.guarantees == b.guarantees == c.guarantees
    # checked against the original read by the csv module: as many records, the unperturbed columns as they were
    header, rows = _rows()
    with (tmp_path / "a.csv").open(newline="", encoding="utf-8") as f:
        out_header, *out_rows = list(csv.reader(f))
    assert out_header == header and len(out_rows) == len(rows) == a.rows
    kept = [i for i, name in enumerate(header) if name not in ("urbrur", "water")]
    if keywords.get("shuffle"):
        assert sorted(tuple(r[i] for i in kept) for r in out_rows) == sorted(tuple(r[i] for i in kept) for r in rows)
    else:
        assert [[r[i] for i in kept] for r in out_rows] == [[r[i] for i in kept] for r in rows]
        changed = sum(r[header.index("urbrur")] != o[header.index("urbrur")] for r, o in zip(rows, out_rows))
        assert 0 < changed < len(rows) / 2  # kept with probability 0.7


def _counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_apply_checks_a_spec_once(manifest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = _counting(monkeypatch, ApplySpec, "check")
    rules = _counting(monkeypatch, settings, "check_rules")
    pramkit.apply_file(TESTDATA, manifest, tmp_path / "a.csv", key=KEY, spec=ApplySpec(release="wave 2"))
    assert (len(checks), len(rules)) == (1, 1)
    ApplySpec(chunk_rows=500).apply(TESTDATA, manifest, tmp_path / "b.csv", key=KEY)
    assert (len(checks), len(rules)) == (2, 2)

    key_file = tmp_path / "key"
    key_file.write_bytes(KEY)
    code, _, err = run_cli("apply", TESTDATA, "--manifest", manifest, "--out", tmp_path / "c.csv", "--key-file",
                           key_file, "--chunk-rows", "500", "-q")
    assert code == 0, err
    assert (len(checks), len(rules)) == (3, 3)  # the command checks its settings once too
    assert (tmp_path / "c.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_apply_checks_its_keywords_once_by_their_own_rules(manifest: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Keywords build the settings and are checked once, by apply_file's own rules (release_label, chunk_rows),
    not again by the settings' rules."""
    spec_checks = _counting(monkeypatch, ApplySettings, "check")
    rules = _counting(monkeypatch, settings, "check_rules")
    labels = _counting(monkeypatch, perturb, "release_label")
    built: list[tuple[ApplySettings, int]] = []
    door = perturb._apply

    def seen(source: Any, manifest: Any, out: Any, spec: ApplySettings, **files: Any) -> Any:
        built.append((spec, len(labels)))  # the label's rule run once on the way in (release_key reads it after)
        assert settings.is_checked(spec)  # inside the block: taken as checked
        return door(source, manifest, out, spec, **files)

    monkeypatch.setattr(perturb, "_apply", seen)
    pramkit.apply_file(TESTDATA, manifest, tmp_path / "a.csv", key=KEY, release="wave 2", chunk_rows=700,
                       shuffle=True, public_columns=["sex"])
    assert (len(spec_checks), len(rules)) == (0, 0)
    assert built == [(ApplySettings(chunk_rows=700, shuffle=True, public_columns=("sex",), release="wave 2"), 1)]
    assert built[0][0].columns() == ("sex",) and built[0][0].label() == "wave 2"


@pytest.mark.parametrize(("keywords", "message"), [
    ({"chunk_rows": 0}, "chunk_rows must be at least 1"),
    ({"release": " wave"}, "the release label ' wave' begins or ends with a blank; give it without"),
    ({"threads": 0}, "threads must be at least 1, not 0"),
])
def test_apply_keywords_keep_their_messages(keywords: dict[str, Any], message: str, manifest: Path,
                                            tmp_path: Path) -> None:
    with pytest.raises(ParameterError) as caught:
        pramkit.apply_file(TESTDATA, manifest, tmp_path / "a.csv", key=KEY, **keywords)
    assert str(caught.value) == message
    assert not (tmp_path / "a.csv").exists()


# -- estimate_table: the same door for keywords and EstimateSpec ---------------------------------------------------



@pytest.fixture(scope="module")
def released(manifest: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """testdata.csv released with the manifest of urbrur and water (a fixed key)."""
    out = tmp_path_factory.mktemp("one_door_released") / "released.csv"
    pramkit.apply_file(TESTDATA, manifest, out, key=KEY)
    return out


def _column_counts(path: Path, name: str) -> dict[str, int]:
    """How often each value of ``name`` occurs in ``path``, counted by the csv module."""
    with path.open(newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[header.index(name)]] = counts.get(r[header.index(name)], 0) + 1
    return counts


ESTIMATES: list[dict[str, Any]] = [
    {},
    {"estimator": "mle", "confidence": 0.9},
    {"variance": "pram", "estimator": "norm-sub"},
    {"weights": "sampling_weight"},
]


@pytest.mark.parametrize("keywords", ESTIMATES, ids=["defaults", "mle", "pram-norm-sub", "weighted"])
def test_estimate_keywords_and_spec_give_the_same_table(keywords: dict[str, Any], manifest: Path,
                                                        released: Path) -> None:
    m = Manifest.read(manifest)
    a = pramkit.estimate_table(released, m, "urbrur", by="sex", **keywords)
    b = pramkit.estimate_table(released, m, "urbrur", by="sex", spec=EstimateSpec(**keywords))
    assert json.dumps(a.to_dict()) == json.dumps(b.to_dict())  # NaN written alike
    assert a.weights == b.weights == keywords.get("weights")


def test_estimate_of_one_variable_inverts_its_matrix(manifest: Path, released: Path) -> None:
    """The unbiased estimate by keywords and by spec is M^-T z, z counted by the csv module, M the manifest's."""
    m = Manifest.read(manifest)
    matrix = m["urbrur"].matrix
    counted = _column_counts(released, "urbrur")
    z = np.array([counted.get(str(c), 0) for c in matrix.categories], dtype=float)
    expected = np.linalg.solve(matrix.matrix.T, z)
    for result in (pramkit.estimate_table(released, m, "urbrur"),
                   pramkit.estimate_table(released, m, "urbrur", spec=EstimateSpec())):
        assert result.table.released.tolist() == z.tolist()
        assert np.allclose(result.table.counts, expected, rtol=1e-12, atol=1e-9)


def test_estimate_checks_a_spec_once(manifest: Path, released: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The specification's rules run once (its check is asked again inside the block, by its keywords(), and
    returns at once); the keywords' check_values not at all."""
    rules = _counting(monkeypatch, estimate_spec, "check_rules")
    values = _counting(monkeypatch, estimate_module, "check_values")
    m = Manifest.read(manifest)
    pramkit.estimate_table(released, m, "water", spec=EstimateSpec(weights="sampling_weight", confidence=0.9))
    assert (len(rules), len(values)) == (1, 0)


def test_estimate_checks_its_keywords_once_by_their_own_rules(manifest: Path, released: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    spec_checks = _counting(monkeypatch, EstimateSpec, "check")
    rules = _counting(monkeypatch, estimate_spec, "check_rules")
    values = _counting(monkeypatch, estimate_module, "check_values")
    built: list[EstimateSpec] = []
    door = estimate_module._estimate

    def seen(data: Any, manifest: Any, vars: Any, by: Any, spec: EstimateSpec, **given: Any) -> Any:
        built.append(spec)
        assert settings.is_checked(spec)  # inside the block: taken as checked
        return door(data, manifest, vars, by, spec, **given)

    monkeypatch.setattr(estimate_module, "_estimate", seen)
    pramkit.estimate_table(released, Manifest.read(manifest), "water", estimator="mle", weights="sampling_weight")
    assert (len(spec_checks), len(rules), len(values)) == (0, 0, 1)
    assert built == [EstimateSpec(estimator="mle", weights="sampling_weight")]


@pytest.mark.parametrize(("keywords", "message"), [
    ({"confidence": 1.5}, "confidence must be a number strictly between 0 and 1, got 1.5"),
    ({"method": "bogus"}, "method must be one of 'moment', 'mle', got 'bogus'"),
    ({"method": "moment", "estimator": "mle"}, "method 'moment' and estimator 'mle' disagree; give one of them"),
    ({"variance": "bogus"}, "variance must be one of ['multinomial', 'pram'], not 'bogus'"),
    ({"engine": "dask"}, "engine must be one of 'local', 'spark', got 'dask'"),
    ({"confidence": 0.9, "spec": EstimateSpec()},
     "give the settings as an EstimateSpec or as keywords, not both (confidence)"),
])
def test_estimate_keywords_keep_their_messages(keywords: dict[str, Any], message: str, manifest: Path,
                                               released: Path) -> None:
    with pytest.raises(ParameterError) as caught:
        pramkit.estimate_table(released, Manifest.read(manifest), "water", **keywords)
    assert str(caught.value) == message


def test_estimate_keywords_accept_what_they_accepted() -> None:
    """A decimal comma with the default comma separator: the spec's rule refuses it (a CSV file could not be read
    so); the keywords, for a frame, never read it, and accept it as before."""
    import pandas as pd

    m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    frame = pd.DataFrame({"answer": ["yes"] * 60 + ["no"] * 40})
    with pytest.raises(ParameterError, match="needs another field separator"):
        EstimateSpec(decimal=",").check()
    result = pramkit.estimate_table(frame, Manifest.of({"answer": m}), "answer", decimal=",")
    assert result.table.counts.tolist() == [70.0, 30.0]  # (1.5 * 60 - 0.5 * 40, -0.5 * 60 + 1.5 * 40)


# -- identification_risk: the same door for keywords and RiskSpec ---------------------------------------------------


KEYS = ["urbrur", "water", "sex", "roof"]


def _risk_figures(result: Any) -> str:
    """A risk result's JSON without its wall times (the result's and its model fit's)."""
    def timeless(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: timeless(v) for k, v in value.items() if k != "seconds"}
        return value

    return json.dumps(timeless(result.to_dict()))


RISKS: list[dict[str, Any]] = [
    {"sampling_fraction": 0.1},
    {"weights": "sampling_weight", "fractions": "file", "model": "independence"},
    {"sampling_fraction": 0.2, "missing": "exclude", "model": "urbrur*water + sex + roof"},
]


@pytest.mark.parametrize("keywords", RISKS, ids=["fraction", "weights-file", "formula"])
def test_risk_keywords_spec_and_its_method_give_the_same_figures(keywords: dict[str, Any]) -> None:
    a = risk_module.identification_risk(TESTDATA, KEYS, **keywords)
    b = risk_module.identification_risk(TESTDATA, KEYS, spec=RiskSpec(**keywords))
    c = RiskSpec(**keywords).assess(TESTDATA, KEYS)
    assert _risk_figures(a) == _risk_figures(b) == _risk_figures(c)
    # the sample uniques and records counted by the csv module
    header, rows = _rows()
    combos: dict[tuple[str, ...], int] = {}
    for r in rows:
        combo = tuple(r[header.index(k)] for k in KEYS)
        combos[combo] = combos.get(combo, 0) + 1
    assert a.n == len(rows) and a.sample_uniques == sum(1 for c in combos.values() if c == 1)


def test_risk_after_pram_by_keywords_and_by_spec(manifest: Path, released: Path) -> None:
    m = Manifest.read(manifest)
    a = risk_module.identification_risk(released, ["urbrur", "water", "sex"], sampling_fraction=0.1, manifest=m,
                                        original=TESTDATA)
    b = RiskSpec(sampling_fraction=0.1).assess(released, ["urbrur", "water", "sex"], manifest=m, original=TESTDATA)
    assert _risk_figures(a) == _risk_figures(b)
    assert a.perturbed == ("urbrur", "water") and a.fitted_to == "original"


def test_risk_checks_a_spec_once_and_its_keywords_by_their_own_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    checks = _counting(monkeypatch, RiskSpec, "check")
    rules = _counting(monkeypatch, settings, "check_rules")
    risk_module.identification_risk(TESTDATA, KEYS, spec=RiskSpec(sampling_fraction=0.1))
    assert (len(checks), len(rules)) == (1, 1)
    built: list[RiskSettings] = []
    door = risk_module._risk

    def seen(data: Any, keys: Any, spec: RiskSettings, **given: Any) -> Any:
        built.append(spec)
        assert settings.is_checked(spec)
        return door(data, keys, spec, **given)

    monkeypatch.setattr(risk_module, "_risk", seen)
    risk_module.identification_risk(TESTDATA, KEYS, sampling_fraction=0.1, model="independence")
    assert (len(checks), len(rules)) == (1, 1)  # the keywords ran no rule of the settings
    assert built == [RiskSettings(sampling_fraction=0.1, model="independence")]


def test_risk_keywords_accept_what_they_accepted() -> None:
    """Weights given as values and a model as margins: the spec's rules (a column name, a formula) refuse both;
    the keywords take them as before."""
    import pandas as pd

    data = pd.DataFrame({"region": [0] * 6 + [1] * 4, "sex": [0, 0, 0, 1, 1, 0, 0, 1, 1, 0]})
    weights = [10.0] * 6 + [40.0] * 4
    by_values = risk_module.identification_risk(data, ["region", "sex"], weights=weights, model=[["region"], ["sex"]])
    by_column = risk_module.identification_risk(data.assign(w=weights), ["region", "sex"], weights="w",
                                                model="independence")
    assert by_values.sampling_fraction_range == by_column.sampling_fraction_range == (0.025, 0.1)
    assert by_values.tau1 == pytest.approx(by_column.tau1, rel=1e-9)
    for bad in ({"weights": weights}, {"model": [["region"], ["sex"]]}):
        with pytest.raises(ParameterError):
            RiskSpec(**bad).check()  # type: ignore[arg-type]


@pytest.mark.parametrize(("keywords", "message"), [
    ({"sampling_fraction": 1.5}, "the sampling fraction must lie in (0, 1], got 1.5"),
    ({"sampling_fraction": 0.1, "tau_rtol": 0}, "tau_rtol must be a positive number or None, got 0"),
    ({"sampling_fraction": 0.1, "spec": RiskSpec(sampling_fraction=0.1)},
     "give the settings as a RiskSpec or as keywords, not both (sampling_fraction)"),
])
def test_risk_keywords_keep_their_messages(keywords: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError) as caught:
        risk_module.identification_risk(TESTDATA, KEYS, **keywords)
    assert str(caught.value) == message


# -- swap_file: the same door for keywords and SwapSpec -------------------------------------------------------------


SWAPS: list[dict[str, Any]] = [
    {"rate": 0.1},
    {"rate": 0.05, "k": 2, "risk_vars": ["sex", "roof"], "chunk_rows": 500},
    {"rate": 0.2, "donors": "any-area", "chunk_rows": 333},
]


@pytest.mark.parametrize("given", SWAPS, ids=["random", "targeted-chunks", "any-area"])
def test_swap_keywords_spec_and_its_method_release_the_same_bytes(given: dict[str, Any], tmp_path: Path) -> None:
    plan_keywords = {k: v for k, v in given.items() if k in ("rate", "k", "donors")}
    chunks = {k: v for k, v in given.items() if k == "chunk_rows"}
    geo = ["water"] if given.get("donors") == "any-area" else ["urbrur"]
    plan = plan_swap("ori_hid", geo, risk_vars=given.get("risk_vars", ()), **plan_keywords)
    spec = SwapSpec(**plan_keywords, **chunks)
    files = {"key": KEY, "partners": None}
    a = swap_module.swap_file(TESTDATA, plan, tmp_path / "a.csv", **files, **chunks)
    b = swap_module.swap_file(TESTDATA, spec.plan("ori_hid", geo, risk_vars=given.get("risk_vars", ())),
                              tmp_path / "b.csv", spec=spec, **files)
    c = spec.swap(TESTDATA, plan, tmp_path / "c.csv", key=KEY)
    outputs = [(tmp_path / f"{n}.csv").read_bytes() for n in "abc"]
    assert outputs[0] == outputs[1] == outputs[2]
    receipts = [(tmp_path / f"{n}.csv.receipt.json").read_text().replace(f"{n}.csv", "OUT") for n in "abc"]
    assert receipts[0] == receipts[1] == receipts[2]
    assert a.swapped_households == b.swapped_households == c.swapped_households > 0
    # checked against the original read by the csv module: the other columns as they were, the geography moved
    # with whole households, as many records changed as the result says
    header, rows = _rows()
    with (tmp_path / "a.csv").open(newline="", encoding="utf-8") as f:
        out_header, *out_rows = list(csv.reader(f))
    assert out_header == header and len(out_rows) == len(rows) == a.rows
    g, h = header.index(geo[0]), header.index("ori_hid")
    kept = [i for i in range(len(header)) if i != g]
    assert [[r[i] for i in kept] for r in out_rows] == [[r[i] for i in kept] for r in rows]
    assert sum(r[g] != o[g] for r, o in zip(rows, out_rows)) == a.swapped_records
    areas: dict[str, set[str]] = {}
    for o in out_rows:
        areas.setdefault(o[h], set()).add(o[g])
    assert all(len(v) == 1 for v in areas.values())


def test_swap_checks_a_spec_once_and_its_keywords_by_their_own_rules(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    checks = _counting(monkeypatch, SwapSettings, "check")
    rules = _counting(monkeypatch, settings, "check_rules")
    spec = SwapSpec(rate=0.1, chunk_rows=700)
    plan = plan_swap("ori_hid", ["urbrur"], rate=0.1)
    swap_module.swap_file(TESTDATA, plan, tmp_path / "a.csv", key=KEY, spec=spec)
    assert (len(checks), len(rules)) == (1, 1)
    built: list[SwapSettings] = []
    door = swap_module._swap

    def seen(source: Any, plan: Any, out: Any, spec: SwapSettings, **files: Any) -> Any:
        built.append(spec)
        assert settings.is_checked(spec)
        return door(source, plan, out, spec, **files)

    monkeypatch.setattr(swap_module, "_swap", seen)
    swap_module.swap_file(TESTDATA, plan, tmp_path / "b.csv", key=KEY, chunk_rows=700)
    assert (len(checks), len(rules)) == (1, 1)  # the keywords ran no rule of the settings
    assert built == [SwapSettings(rate=0.1, chunk_rows=700)]
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


@pytest.mark.parametrize(("call", "message"), [
    ({"chunk_rows": 0}, "chunk_rows must be at least 1"),
    ({"spec": SwapSpec(chunk_rows=0)}, "chunk_rows must be at least 1, not 0"),
    ({"sep": ";", "spec": SwapSpec()}, "give the settings as a SwapSpec or as keywords, not both (sep)"),
])
def test_swap_keywords_keep_their_messages(call: dict[str, Any], message: str, tmp_path: Path) -> None:
    with pytest.raises(ParameterError) as caught:
        swap_module.swap_file(TESTDATA, plan_swap("ori_hid", ["urbrur"]), tmp_path / "o.csv", key=KEY,
                              **call)
    assert str(caught.value) == message
    assert list(tmp_path.iterdir()) == []


def test_swap_file_refuses_a_frame_in_one_line(tmp_path: Path) -> None:
    """The door asks the opened source for its file: a frame in memory is refused in one line (it was a TypeError
    of pathlib before), and nothing is written."""
    import pandas as pd

    frame = pd.DataFrame({"hid": [1, 2], "area": ["a", "b"]})
    with pytest.raises(ParameterError) as caught:
        swap_module.swap_file(frame, plan_swap("hid", ["area"]), tmp_path / "o.csv", key=KEY)  # type: ignore[arg-type]
    assert str(caught.value) == ("swap_file reads a file or a folder of part files, not a DataFrame in memory; "
                                 "swap a frame in memory with swap_frame")
    assert list(tmp_path.iterdir()) == []


def test_swap_spec_runs_only_a_plan_of_its_settings(tmp_path: Path) -> None:
    """SwapSpec.swap goes through swap_file(spec=...): a plan of another rate is refused, as swap_file refuses it."""
    with pytest.raises(ParameterError) as caught:
        SwapSpec(rate=0.2).swap(TESTDATA, plan_swap("ori_hid", ["urbrur"], rate=0.1), tmp_path / "o.csv", key=KEY)
    assert str(caught.value) == ("the plan was not made with the spec's rate 0.2 (it has 0.1): make it with "
                                 "spec.plan(...)")
    assert list(tmp_path.iterdir()) == []
