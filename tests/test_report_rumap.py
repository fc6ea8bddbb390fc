"""The risk-utility map of a release designed to a target, in the internal report (pramkit.report.rumap).

The numbers the report embeds (the table beside the figure) are read back from the HTML and compared with
the design record's curve, and the budget kept with figures computed here from the manifest and the
original file alone: the expected share of unique records reproduced (``1 - prod_r (1 - P(r -> x))``
summed by brute force over every pair of records), its bounds, the share of records changed and
I(X; Z) on the exact proportions."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import inspect
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pramkit
from pramkit.cli import main
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.report import build_public_report, build_report, render_html
from pramkit.report.html import _table
from pramkit.report.rumap import RiskUtilityMap, RiskUtilityPoint, risk_utility_section

NIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
ACS_FEATURES = ["AGEP", "SEX", "MSP", "RAC1P", "HOUSING_TYPE", "OWN_RENT", "EDU", "PINCP_DECILE", "DVET", "DEYE"]
#: Per data set: the variables perturbed, the target keys, the report's risk keys, the largest budget, the target.
SETTINGS = {
    "census": (["age", "marital_status", "education"],
               ["age", "sex", "marital_status", "race", "education", "employment"], "age,sex,race", "12", "10%"),
    "acs": (["MSP", "EDU", "PINCP_DECILE", "RAC1P"], ACS_FEATURES, "SEX,MSP,EDU", "12", "10%"),
}
ROWS = 3_000


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _census() -> pd.DataFrame:
    """The census-like file, with labels holding Unicode and inner spaces, as officers' files do."""
    data = census(ROWS)
    data["education"] = data["education"].cat.rename_categories(
        lambda c: {"high school": "high  school", "college": "collège – 1ʳᵉ année"}.get(c, c))
    return data


def _acs() -> pd.DataFrame:
    if not NIST.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    return pd.read_csv(NIST, dtype=str, keep_default_na=False)[ACS_FEATURES].head(ROWS)


def _design(folder: Path, name: str, data_file: Path, variables: list[str], keys: list[str], epsilon: str,
            target: str | None, key: Path) -> dict:
    out = folder / f"{name}.json"
    args = ["design", data_file, "--vars", ",".join(variables), "--epsilon", epsilon, "--out", out, "--key-file",
            key, "--quiet"] + (["--target", f"matched={target}", "--target-keys", ",".join(keys)] if target else [])
    code, _, err = _run(args)
    assert code == 0, err
    return {"manifest": out, "record": folder / f"{name}.design-record.json"}


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], dict]:
    """Each data set's release, built once."""
    built: dict[str, dict] = {}

    def release(kind: str) -> dict:
        if kind not in built:
            built[kind] = _release(kind, tmp_path_factory.mktemp(kind))
        return built[kind]
    return release


@pytest.fixture(params=["census", "acs"])
def targeted(request: pytest.FixtureRequest, releases: Callable[[str], dict]) -> dict:
    return releases(request.param)


def _release(kind: str, folder: Path) -> dict:
    """A release designed to a target on disk (original, key, manifest, record, released file), and two
    other designs of the same file: one to another target, one without a target."""
    data = _census() if kind == "census" else _acs()
    variables, keys, report_keys, epsilon, target = SETTINGS[kind]
    data_file, key = folder / "data.csv", folder / "k.key"
    data.to_csv(data_file, index=False)
    key.write_text(bytes(range(32)).hex() + "\n")
    key.chmod(0o600)
    files = _design(folder, "m", data_file, variables, keys, epsilon, target, key)
    released = folder / "released.csv"
    code, _, err = _run(["apply", data_file, "--manifest", files["manifest"], "--out", released, "--key-file", key,
                         "--quiet"])
    assert code == 0, err
    other = _design(folder, "other", data_file, variables, keys, epsilon, "15%", key)
    untargeted = _design(folder, "plain", data_file, variables, keys, epsilon, None, key)
    return {"name": kind, "folder": folder, "data": data_file, "released": released, "keys": keys,
            "report_keys": report_keys, "other": other, "plain": untargeted, **files}


def _map_rows(page: str) -> list[list[str]]:
    """The cells of the table beside the R-U map."""
    block = re.search(r'<div id="risk-utility-map">(.*?)</div>', page, re.S)
    assert block is not None
    body = re.search(r"<tbody>(.*?)</tbody>", block.group(1), re.S).group(1)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def _number(cell: str) -> float | None:
    return None if cell == "n/a" else float(cell)


def _independent(original: pd.DataFrame, manifest: pramkit.Manifest, keys: list[str]) -> dict[str, float]:
    """Figures of a release computed here from its matrices and the original file alone (module docstring)."""
    n = len(original)
    frame = original[keys].astype(str)
    codes, dense = {}, {}
    for v in manifest.variables:
        labels = [str(c) for c in v.matrix.categories]
        codes[v.name] = frame[v.name].map({c: i for i, c in enumerate(labels)}).to_numpy()
        assert not np.isnan(codes[v.name].astype(float)).any()
        dense[v.name] = v.release_matrix.matrix
    codes = {k: c.astype(int) for k, c in codes.items()}
    stay = np.prod([dense[k][c, c] for k, c in codes.items()], axis=0)
    unique = ~frame.duplicated(keep=False).to_numpy()
    public = [k for k in keys if k not in codes]
    same_public = frame[public].agg("\x1f".join, axis=1).to_numpy()
    targets = np.flatnonzero(unique)
    expected = upper = 0.0
    for start in range(0, targets.size, 256):
        chunk = targets[start:start + 256]
        moves = (same_public[:, None] == same_public[None, chunk]).astype(float)   # P(record r -> unique x)
        for k, c in codes.items():
            moves *= dense[k][c[:, None], c[None, chunk]]
        expected += float((1 - np.prod(1 - moves, axis=0)).sum())
        upper += float(np.minimum(moves.sum(axis=0), 1).sum())
    information = 0.0
    for k, c in codes.items():
        p = np.bincount(c, minlength=dense[k].shape[0]) / n
        joint = p[:, None] * dense[k]
        q = joint.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            information += float(np.nansum(joint * np.log(dense[k] / q[None, :])))
    return {"matched": expected / n, "lower": float(stay[unique].sum()) / n, "upper": upper / n,
            "changed": 1 - float(stay.mean()), "information": information}


def test_the_map_shows_the_records_curve_and_the_kept_budget(targeted: dict, tmp_path: Path) -> None:
    internal, public = tmp_path / "internal.html", tmp_path / "public.html"
    code, _, err = _run(["report", targeted["data"], "--manifest", targeted["manifest"], "--released",
                         targeted["released"], "--keys", targeted["report_keys"], "--out", internal,
                         "--public", public, "--design-record", targeted["record"], "--quiet"])
    assert code == 0, err
    page = internal.read_text(encoding="utf-8")
    assert "Risk-utility map of the budget search" in page
    record = json.loads(targeted["record"].read_text(encoding="utf-8"))["target"]
    curve = sorted(record["curve"], key=lambda p: p["record_epsilon"])
    rows = _map_rows(page)
    assert len(rows) == len(curve) >= 3
    for row, point in zip(rows, curve):
        shown = [_number(c) for c in row[:6]]
        wanted = [point["record_epsilon"], 100 * point["matched"], 100 * point["matched_lower"],
                  100 * point["matched_upper"], point["information_nats"], 100 * point["changed"]]
        assert shown == pytest.approx(wanted, rel=1e-5, abs=1e-12)
        assert (row[6] == "kept") == (point["record_epsilon"] == record["record_epsilon"])
    assert [r[6] for r in rows].count("kept") == 1
    # the budget kept is the manifest's, and its figures are the manifest's on the original file
    manifest = pramkit.Manifest.read(targeted["manifest"])
    assert manifest.ledger.record_epsilon_budget == record["record_epsilon"]
    kept = next(r for r in rows if r[6] == "kept")
    figures = _independent(pd.read_csv(targeted["data"], dtype=str, keep_default_na=False), manifest,
                           targeted["keys"])
    assert _number(kept[1]) == pytest.approx(100 * figures["matched"], rel=1e-5)
    assert _number(kept[1]) <= 100 * record["matched"]                          # the target is met
    assert _number(kept[2]) == pytest.approx(100 * figures["lower"], rel=1e-5)
    assert _number(kept[3]) == pytest.approx(100 * figures["upper"], rel=1e-5)
    assert _number(kept[4]) == pytest.approx(figures["information"], rel=1e-5)
    assert _number(kept[5]) == pytest.approx(100 * figures["changed"], rel=1e-5)
    # the figure is there, as a PNG
    figure = re.search(r'<div id="risk-utility-map">.*?src="data:image/png;base64,([^"]+)"', page, re.S)
    assert base64.b64decode(figure.group(1))[:8] == b"\x89PNG\r\n\x1a\n"
    # and never in the public report
    published = public.read_text(encoding="utf-8")
    assert "risk-utility" not in published.lower() and "designed to a target" not in published
    for row in rows:
        for cell in row[1:4]:   # no share of unique records the search computed
            assert cell not in published or len(cell) < 5


def test_the_library_takes_the_record_in_memory_and_the_public_report_does_not() -> None:
    data = census(2_000)
    found = pramkit.design_to_target(
        data, lambda e: pramkit.plan_release(["age", "education"], epsilon=e, categories=CENSUS_VARIABLES),
        matched=0.1, keys=["age", "sex", "education", "race"], bounds=(0.5, 8.0),
        key=pramkit.SecretKey(bytes(32), "t"), grid=3, rtol=0.2)
    manifest, record = found.release
    released = pramkit.perturb_frame(data, manifest, key=pramkit.SecretKey(bytes(range(32)), "t")).data
    report = build_report(data, manifest, released, ["age", "sex"], design_record=record)
    assert report.risk_utility_map.record_epsilon == found.epsilon
    assert [p.record_epsilon for p in report.risk_utility_map.points] == [p["record_epsilon"] for p in found.curve]
    assert 'id="risk-utility-map"' in render_html(report)
    assert "design_record" not in inspect.signature(build_public_report).parameters
    public = build_public_report(manifest, released)
    leaked = dataclasses.replace(public, risk_utility_map=report.risk_utility_map)   # even if set by hand
    assert 'id="risk-utility-map"' not in render_html(leaked)


def _damaged(folder: Path, record: Path, change: str) -> Path:
    values = json.loads(record.read_text(encoding="utf-8"))
    if change == "sha256":
        values["sha256"] = "0" * 64
    elif change == "kept":
        values["target"]["record_epsilon"] = 1e-3
    out = folder / f"{change}.design-record.json"
    out.write_text(json.dumps(values), encoding="utf-8")
    return out


@pytest.mark.parametrize(("case", "message"), [
    ("absent", "does not exist"),
    ("folder", "does not exist"),
    ("text", "is not valid JSON"),
    ("manifest", "is not a design record"),
    ("plain", "holds no target"),
    ("other", "is not the record of the manifest"),
    ("sha256", "was designed from another file"),
    ("kept", "the design record is damaged"),
    ("public only", "--design-record goes with --out"),
])
def test_bad_design_records_are_one_line_and_write_nothing(releases: Callable[[str], dict], tmp_path: Path,
                                                           case: str, message: str) -> None:
    targeted = releases("census")
    record = {"absent": tmp_path / "absent.design-record.json", "folder": tmp_path, "text": targeted["data"],
              "manifest": targeted["manifest"], "plain": targeted["plain"]["record"],
              "other": targeted["other"]["record"], "public only": targeted["record"]}.get(case)
    if record is None:
        record = _damaged(targeted["folder"], targeted["record"], case)
    inputs = [targeted["data"], targeted["manifest"], targeted["released"], targeted["record"]]
    before = [p.read_bytes() for p in inputs]
    out = tmp_path / "out"
    out.mkdir()
    internal = [] if case == "public only" else ["--out", out / "internal.html"]
    code, printed, err = _run(["report", targeted["data"], "--manifest", targeted["manifest"], "--released",
                               targeted["released"], "--keys", targeted["report_keys"], *internal,
                               "--public", out / "public.html", "--design-record", record, "--quiet"])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("pramkit report: error:") and printed == ""
    assert list(out.iterdir()) == []
    assert [p.read_bytes() for p in inputs] == before


@st.composite
def _maps(draw: st.DrawFn) -> RiskUtilityMap:
    epsilons = sorted(draw(st.sets(st.floats(0.01, 50.0), min_size=1, max_size=8)))
    points = []
    for e in epsilons:
        lower, matched, upper = sorted(draw(st.lists(st.floats(0.0, 1.0), min_size=3, max_size=3)))
        points.append(RiskUtilityPoint(e, matched, lower, upper, draw(st.none() | st.floats(0.0, 1.0)),
                                       draw(st.none() | st.floats(0.0, 20.0)), False))
    kept = draw(st.integers(0, len(points) - 1))
    points[kept] = dataclasses.replace(points[kept], kept=True)
    return RiskUtilityMap(draw(st.floats(0.001, 0.999)), ("a", "b"), epsilons[kept], tuple(points), None, "r.json")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_maps())
def test_the_table_beside_the_figure_holds_every_point(rmap: RiskUtilityMap) -> None:
    rows = _map_rows(risk_utility_section(rmap, _table))
    assert len(rows) == len(rmap.points)
    for row, p in zip(rows, rmap.points):
        assert _number(row[0]) == pytest.approx(p.record_epsilon, rel=1e-5)
        assert [_number(c) for c in row[1:4]] == pytest.approx(
            [100 * p.matched, 100 * p.matched_lower, 100 * p.matched_upper], rel=1e-5, abs=1e-300)
        assert _number(row[4]) == (None if p.information_nats is None else pytest.approx(p.information_nats, rel=1e-5))
        assert _number(row[5]) == (None if p.changed is None else pytest.approx(100 * p.changed, rel=1e-5))
        assert (row[6] == "kept") == p.kept


def test_the_report_never_overwrites_the_design_record(releases: Callable[[str], dict]) -> None:
    targeted = releases("census")
    before = targeted["record"].read_bytes()
    code, printed, err = _run(["report", targeted["data"], "--manifest", targeted["manifest"], "--released",
                               targeted["released"], "--keys", targeted["report_keys"], "--out", targeted["record"],
                               "--design-record", targeted["record"], "--force", "--quiet"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and printed == "", err
    assert targeted["record"].read_bytes() == before
