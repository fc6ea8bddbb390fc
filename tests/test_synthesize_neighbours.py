"""``pramkit synthesize --model pgm --neighbours add-remove``: the guarantee under add-or-remove neighbours, the
relation of MST's and AIM's, so that they are compared like for like.

On sdcMicro's testdata (the first 2 000 records, four household and person variables): the default (no flag,
or ``--neighbours replace-one``) is the same release byte for byte, its manifest without the field; under
add-or-remove, each measured table moves by exactly 1 in L1 when one record of a small real subset is added
or removed (by brute force, every record removed and every combination added, each neighbour's table of the
four variables counted again by pandas and every measured table summed from it), against 2 when one is
replaced; the selections' quality moves by at most its weight and the stated sensitivity is the largest
weight (counted by hand); the noise's spread over 300 keys is the discrete Laplace law's at scale
1 / epsilon_i (its variance summed from the probabilities); the released number of records is the total the
noisy tables estimate (recomputed here), not the original's, and no figure of the manifest outside the noisy
tables equals one computed from it; the audit passes, and each field of the manifest forged fails it by name
(the new ``neighbours`` among them); bad input is one line, exit 2, nothing written.  Skipped in one line
without ``mbi`` or without the shared data.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA, assert_refused, run_cli

pytest.importorskip("mbi", reason='the model pgm needs mbi: pip install "pramkit[pgm]"')

from pramkit.audit import audit
from pramkit.kernel.rng import SecretKey

#: The module's tests run in one test process (``--dist loadgroup``): its fixture makes
#: three releases by the command line (about 12 s) and, with the tests spread over two processes, was made once in each.
pytestmark = pytest.mark.xdist_group("test_synthesize_neighbours")


KEY = bytes(range(32))
ROWS = 2_000
VARS = ["urbrur", "roof", "walls", "sex"]
EPSILON = "2"


def _synthesize(d: Path, name: str, *extra: Any, model: str = "pgm") -> Path:
    code, out, err = run_cli("synthesize", d / "o.csv", "--vars", ",".join(VARS), "--public", "", "--epsilon", EPSILON,
                             "--model", model, "--out", d / f"{name}.csv", "--key-file", d / "k.key", "--quiet", *extra)
    assert code == 0, out + err
    return d / f"{name}.csv"


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Any]:
    """The same data released three ways by the command line: without the flag, with ``--neighbours
    replace-one`` and with ``--neighbours add-remove``."""
    if not (SDC_DATA / "testdata.csv").is_file():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("neighbours")
    frame = pd.read_csv(SDC_DATA / "testdata.csv", dtype=str)[VARS].head(ROWS)
    frame.to_csv(d / "o.csv", index=False)
    (d / "k.key").write_text(KEY.hex())
    (d / "k.key").chmod(0o600)
    paths = {"plain": _synthesize(d, "plain"), "replace": _synthesize(d, "replace", "--neighbours", "replace-one"),
             "ar": _synthesize(d, "ar", "--neighbours", "add-remove")}
    manifests = {k: json.loads(p.with_name(p.stem + ".synthesis.json").read_text()) for k, p in paths.items()}
    return {"dir": d, "frame": frame, "paths": paths, "manifests": manifests,
            "released": pd.read_csv(paths["ar"], dtype=str, keep_default_na=False)}


def _table(frame: pd.DataFrame, axes: list[str], cats: dict[str, list[str]],
           groups: dict[str, Any] | None = None) -> np.ndarray:
    """The exact table of ``axes`` in the manifest's categories (a variable's ``groups`` merged, where given),
    counted by pandas."""
    def cells(a: str) -> tuple[dict[str, int], int]:
        merged = (groups or {}).get(a) or [[j] for j in range(len(cats[a]))]
        return {cats[a][j]: k for k, g in enumerate(merged) for j in g}, len(merged)

    index = {a: cells(a) for a in axes}
    counts = frame.groupby(axes).size()
    out = np.zeros([index[a][1] for a in axes], dtype=np.int64)
    for key, c in counts.items():
        key = key if isinstance(key, tuple) else (key,)
        out[tuple(index[a][0][k] for a, k in zip(axes, key))] += c
    return out


def _margin(joint: np.ndarray, axes: list[str], groups: dict[str, Any] | None = None) -> np.ndarray:
    """The table of ``axes`` (a variable's ``groups`` merged, where given) summed from ``joint``, the exact table
    of :data:`VARS` in the manifest's categories."""
    out = joint.sum(axis=tuple(k for k, v in enumerate(VARS) if v not in axes))
    kept = [v for v in VARS if v in axes]
    out = np.transpose(out, [kept.index(a) for a in axes])
    for k, a in enumerate(axes):
        if (groups or {}).get(a):
            out = np.stack([out.take(g, axis=k).sum(axis=k) for g in groups[a]], axis=k)
    return out


def _groups(raw: dict[str, Any], i: int) -> dict[str, Any]:
    """The groups of the model's compression that table ``i`` of a manifest is measured over: none for the
    start's 1-way tables (one a variable), each variable's ``groups`` after them."""
    variables = raw["variables"]
    return {} if i < len(variables) else {v: s.get("groups") for v, s in variables.items()}


def _categories(raw: dict[str, Any]) -> dict[str, list[str]]:
    return {v: [str(c) for c in s["categories"]] for v, s in raw["variables"].items()}


def _variance(epsilon: float, sensitivity: int) -> float:
    """The variance of discrete Laplace noise, P(k) proportional to exp(-epsilon |k| / sensitivity), summed from
    its probabilities (independently of the package's closed forms)."""
    k = np.arange(-20_000, 20_001)
    p = np.exp(-epsilon * np.abs(k) / sensitivity)
    return float((p * k * k).sum() / p.sum())


# ------------------------------------------------------------------ the default is unchanged

def test_the_default_is_unchanged(release):
    """No flag and ``--neighbours replace-one`` give the same bytes (file and manifest); the manifest has no
    ``neighbours`` and every table its sensitivity 2; the same for the model margins."""
    d, paths = release["dir"], release["paths"]
    for a, b in ((paths["plain"], paths["replace"]),):
        assert a.read_bytes() == b.read_bytes()
        ma, mb = (json.loads(p.with_name(p.stem + ".synthesis.json").read_text()) for p in (a, b))
        ma["released"].pop("file"), mb["released"].pop("file")
        assert ma == mb
    raw = release["manifests"]["plain"]
    assert "neighbours" not in raw and raw["rows"] == ROWS
    assert {m["sensitivity"] for m in raw["measurements"]} == {2}
    assert raw["ledger"]["statement"].startswith("Given the published manifest, changing one person's record")
    margins = [_synthesize(d, f"m{i}", *flag, model="margins") for i, flag in
               enumerate(((), ("--neighbours", "replace-one")))]
    assert margins[0].read_bytes() == margins[1].read_bytes()


# ------------------------------------------------------------------ sensitivity, by brute force

def test_each_table_moves_by_one_when_a_record_is_added_or_removed(release):
    """Every table the release measured, counted again on a small real subset with each record removed and
    each combination of categories added: the L1 change is exactly 1 (the manifest says 1); replacing a
    record moves it by up to 2 (the default's 2).  Each neighbour's table of the four variables is counted
    once by pandas and every measured table summed from it (on the subset itself, each equals pandas' own
    count of that table)."""
    raw = release["manifests"]["ar"]
    cats = _categories(raw)
    small = release["frame"].head(40).reset_index(drop=True)
    grid = [dict(zip(VARS, combo)) for combo in itertools.product(*(cats[v] for v in VARS))]
    assert raw["neighbours"] == "add-remove"
    base = _table(small, VARS, cats)
    removed = [_table(small.drop(index=i), VARS, cats) for i in range(len(small))]
    added = [_table(pd.concat([small, pd.DataFrame([g])], ignore_index=True), VARS, cats) for g in grid]
    replaced = [_table(pd.concat([small.drop(index=i), pd.DataFrame([g])], ignore_index=True), VARS, cats)
                for i in range(0, len(small), 7) for g in grid]
    for t, m in enumerate(raw["measurements"]):
        axes, merged = m["axes"], _groups(raw, t)
        table = _margin(base, axes, merged)
        assert np.array_equal(table, _table(small, axes, cats, merged)), axes
        one = [np.abs(_margin(j, axes, merged) - table).sum() for j in removed + added]
        assert max(one) == 1 == min(one) == m["sensitivity"], axes
        assert max(np.abs(_margin(j, axes, merged) - table).sum() for j in replaced) == 2, axes


def test_the_selections_sensitivity_is_the_largest_weight(release):
    """The quality w_r (|M_r(D) - c|_1 - b n_r) of a candidate moves by at most w_r between add-or-remove
    neighbours (brute force on the subset, c any fixed table); with four variables every candidate is allowed,
    so the stated sensitivity is the largest weight, a 3-way table's 3 + 2 + 2 + 2 = 9 (18 under replace-one)."""
    raw = release["manifests"]["ar"]
    cats = _categories(raw)
    small = release["frame"].head(30).reset_index(drop=True)
    rng = np.random.default_rng(5)
    for axes in (["urbrur", "roof"], ["roof", "walls", "sex"]):
        w = sum(len(set(axes) & set(s)) for s in itertools.combinations(VARS, 3))
        base = _table(small, axes, cats)
        c = rng.uniform(0, 3, base.shape)
        q = w * np.abs(base - c).sum()
        moved = [abs(w * np.abs(_table(small.drop(index=i), axes, cats) - c).sum() - q) for i in range(len(small))]
        assert max(moved) <= w + 1e-9 and max(moved) > 0
    assert {s["sensitivity"] for s in raw["selections"]} == {9.0}
    assert {s["sensitivity"] for s in release["manifests"]["plain"]["selections"]} == {18.0}


# ------------------------------------------------------------------ the noise's scale

def test_the_noise_is_discrete_laplace_at_scale_one_over_epsilon(release):
    """300 keys measure the release's largest table (the module's own measurement, at its stated epsilon
    and sensitivity 1): the noise's variance is the law's at scale 1 / epsilon_i within 12 % (four standard
    errors), a quarter of the replace-one law's; and the release's own tables, standardised, have the same
    spread."""
    from pramkit.synthesize_pgm import _Data, _measure

    raw = release["manifests"]["ar"]
    cats = _categories(raw)
    frame = release["frame"]
    codes = np.stack([frame[v].map({c: i for i, c in enumerate(cats[v])}).to_numpy() for v in VARS], 1)
    data = _Data(codes, VARS, [len(cats[v]) for v in VARS])
    m = max(raw["measurements"], key=lambda x: np.size(x["noisy"]))
    axes, eps = tuple(m["axes"]), float(m["epsilon"])
    exact = _table(frame, list(axes), cats)
    noise = np.concatenate([(_measure(data, axes, eps, SecretKey(bytes([i % 256, i // 256]) * 16, f"key {i}"), cats, 1).noisy
                             - exact).ravel() for i in range(300)])
    var = _variance(eps, 1)
    assert abs(noise.var() / var - 1) < 0.12, (noise.var(), var)
    assert _variance(eps, 2) > 3 * var
    assert abs(noise.mean()) < 4 * math.sqrt(var / noise.size)
    # the release's own tables: each cell's noise squared over its law's variance averages about 1
    z = np.concatenate([((np.asarray(t["noisy"]) - _table(frame, t["axes"], cats, _groups(raw, i))) ** 2).ravel()
                        / _variance(float(t["epsilon"]), 1) for i, t in enumerate(raw["measurements"])])
    assert 0.6 < z.mean() < 1.6, z.mean()


# ------------------------------------------------------------------ the number of records is not public

def _numbers(doc: Any, at: str = "") -> list[tuple[str, float]]:
    if isinstance(doc, dict):
        return [x for k, v in doc.items() for x in _numbers(v, f"{at}.{k}")]
    if isinstance(doc, list):
        return [x for i, v in enumerate(doc) for x in _numbers(v, f"{at}[{i}]")]
    return [(at, doc)] if isinstance(doc, (int, float)) and not isinstance(doc, bool) else []


def test_the_released_records_are_estimated_from_the_noisy_tables(release):
    """The released file has the inverse-variance weighted mean of the noisy tables' sums, rounded, records
    (recomputed here), which is not the original's 2 000; no figure of the manifest outside the noisy tables
    equals one computed from 2 000 (the records, half of them, one more or fewer)."""
    raw, rel = release["manifests"]["ar"], release["released"]
    sums = np.array([np.sum(m["noisy"]) for m in raw["measurements"]], dtype=float)
    var = np.array([np.size(m["noisy"]) * _variance(float(m["epsilon"]), 1) for m in raw["measurements"]])
    estimate = float((sums / var).sum() / (1 / var).sum())
    rows = math.floor(estimate + 0.5)
    assert len(rel) == raw["rows"] == raw["released"]["rows"] == rows != ROWS
    assert list(rel.columns) == VARS
    from_n = {ROWS, ROWS // 2, ROWS - 1, ROWS + 1}
    figures = [(at, x) for at, x in _numbers(raw) if ".noisy" not in at]
    assert figures and not [(at, x) for at, x in figures if x in from_n]
    assert raw["ledger"]["statement"].startswith("Given the published manifest, adding or removing one person's record "
                                                 "(add-or-remove neighbours: the number of records is not public")


def test_the_summary_speaks_of_the_estimate(release):
    from pramkit.synthesize import synthesize_release

    res = synthesize_release(release["frame"], variables=VARS, epsilon=float(EPSILON), key=KEY, model="pgm",
                             neighbours="add-remove")
    assert res.neighbours == "add-remove" and res.to_dict()["rows"] == len(res.data) == release["manifests"]["ar"]["rows"]
    assert res.shared_draws == (len(res.data) + 1) // 2  # pairs, a lone last record joining the last pair


# ------------------------------------------------------------------ the audit

def test_the_audit_passes_and_names_each_forged_field(release):
    """The add-or-remove release passes the audit with the original and the key; each declared field of its
    manifest (every pattern once, as tests/test_audit_fields.py forges them) forged fails the audit naming it:
    those recomputed from the public files without the key, the relation itself also with it."""
    from test_audit_fields import forgeries_escaping

    d = release["dir"]
    manifest = d / "ar.synthesis.json"
    inputs = {"manifest": manifest, "released": release["paths"]["ar"], "original": d / "o.csv",
              "key": d / "k.key"}
    assert audit(**inputs).passed
    kept = manifest.read_bytes()
    tried, escaped = forgeries_escaping(manifest, inputs, with_all=[("neighbours",)])
    assert {"neighbours", "measurements[0].sensitivity", "rows", "selections[0].sensitivity"} <= set(tried)
    assert not escaped, escaped
    raw = json.loads(kept)  # the field removed: the tables' sensitivity 1 is no longer what the relation says
    del raw["neighbours"]
    manifest.write_text(json.dumps(raw))
    try:
        failed = {c.field for c in audit(manifest=manifest, released=inputs["released"]).checks if not c.passed}
    finally:
        manifest.write_bytes(kept)
    assert "measurements[0]" in failed and any("sensitivity" in f for f in failed), failed


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("args, words", [
    (["--model", "margins", "--neighbours", "add-remove"], "neighbours 'add-remove' needs the model pgm"),
    (["--model", "pgm", "--neighbours", "add-or-remove"], "invalid choice: 'add-or-remove'"),
    (["--model", "pgm", "--neighbours", "add-remove", "--vars", "roof,sex"], "every column is synthesized"),
])
def test_bad_input_is_one_line(release, tmp_path, capsys, args, words):
    src = tmp_path / "o.csv"
    src.write_bytes((release["dir"] / "o.csv").read_bytes())
    base = {"--vars": ",".join(VARS), "--public": "", "--epsilon": "1", "--out": tmp_path / "x.csv"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    assert_refused(tmp_path, ["synthesize", src, *(x for kv in base.items() for x in kv),
                              "--key-file", release["dir"] / "k.key"], words, capsys)
