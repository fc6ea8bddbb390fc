"""The model pgm's declared bins (``synthesize --bins AGEP=10``): an ordered variable modelled in bins of its values.

On NIST's CRC excerpt (the first 3 000 records; AGEP over its declared 0-99, MSP, SEX; the rule that a person
under 15 has MSP 'N'), released at (1, 1e-5) under zCDP, add-or-remove neighbours, AGEP in bins of 10:

* AGEP's groups are the decades, the one of 10-19 split at 15 where the rule treats ages apart (counted here by
  hand from the ages, never from the code's groups), whatever the counts; the manifest states the width;
* every table measured after the start is over those groups, with its stated noise;
* every released record keeps the rule, and within each bin the released ages follow the bin's noisy 1-way
  counts (published), to within the rounding of systematic sampling;
* the audit passes with the original and the key, and names a forged width, a forged variable and bins taken
  away; the command refuses bad ``--bins`` in one line (exit 2, nothing written, the input unchanged).

The grouping itself is checked against a brute-force partition on arbitrary categories (Hypothesis).
Skipped in one line without ``mbi`` or without the shared data.
"""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import nist_inputs, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from test_synthesize_neighbours import _groups, _table

from pramkit.pgm_compression import bin_groups

#: The module's tests run in one test process (``--dist loadgroup``): its fixture makes a release (about
#: 7 s) and, with the tests spread over two processes, was made once in each.
pytestmark = pytest.mark.xdist_group("test_pgm_bins")

VARS = ["AGEP", "MSP", "SEX"]
ROWS = 3_000
KEY = bytes(range(7, 39))
AGES = [str(a) for a in range(100)]
YOUNG = {str(a) for a in range(15)}
MARRIED = ["1", "2", "3", "4", "5", "6"]
RULES = f"AGEP,MSP\n{'|'.join(sorted(YOUNG))},{'|'.join(MARRIED)}\n"


def _by_hand() -> list[list[int]]:
    """AGEP's groups in bins of 10, split at 15 (the rule's line), from the ages alone."""
    keys: dict[tuple[int, bool], list[int]] = {}
    for a in range(100):
        keys.setdefault((a // 10, a < 15), []).append(a)
    return sorted(keys.values())


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Any]:
    pytest.importorskip("mbi", reason='the model pgm needs mbi: pip install "pramkit[pgm]"')
    from pramkit.synthesize import synthesize_release

    d = tmp_path_factory.mktemp("bins")
    frame = nist_inputs(d, VARS, ROWS, RULES, KEY)
    synthesize_release(d / "o.csv", d / "s.csv", variables=VARS, public="", epsilon=1.0, key=d / "k.key",
                       categories={"AGEP": AGES}, forbid=d / "rules.csv", model="pgm", delta=1e-5,
                       neighbours="add-remove", na_values=(), bins="AGEP=10", quiet=True)
    raw = json.loads((d / "s.synthesis.json").read_text())
    return {"dir": d, "frame": frame, "raw": raw,
            "released": pd.read_csv(d / "s.csv", dtype=str, keep_default_na=False)}


def test_the_bins_are_the_decades_split_where_the_rule_is(release):
    raw = release["raw"]
    assert raw["procedure"]["bins"] == {"AGEP": 10}
    assert raw["variables"]["AGEP"]["groups"] == _by_hand()
    assert [len(g) for g in _by_hand()][:3] == [10, 5, 5]  # 0-9, 10-14, 15-19


def test_later_tables_are_over_the_bins_with_their_stated_noise(release):
    from scipy.stats import chi2

    raw, frame = release["raw"], release["frame"]
    cats = {v: [str(c) for c in s["categories"]] for v, s in raw["variables"].items()}
    z2, cells, with_age = 0.0, 0, 0
    for i, m in enumerate(raw["measurements"]):
        exact = _table(frame, m["axes"], cats, _groups(raw, i))
        assert np.shape(m["noisy"]) == exact.shape, (i, m["axes"])
        if i >= len(VARS) and "AGEP" in m["axes"]:
            assert exact.shape[m["axes"].index("AGEP")] == len(_by_hand())
            with_age += 1
        z2 += float(((np.asarray(m["noisy"]) - exact) ** 2).sum() / m["sigma2"])
        cells += exact.size
    assert with_age and cells > 50
    assert chi2.sf(z2, cells) > 1e-4 and chi2.cdf(z2, cells) > 1e-4, (z2, cells)


def test_every_record_keeps_the_rule_and_a_bin_spreads_by_its_noisy_counts(release):
    """Two records a draw: within a bin, the records on each age are twice the draws, and the draws follow the
    bin's noisy 1-way counts (clipped at 0) to within one draw of systematic sampling, plus the records given a
    leftover draw."""
    out, raw = release["released"], release["raw"]
    assert not (out["AGEP"].isin(YOUNG) & out["MSP"].isin(MARRIED)).any()
    noisy = np.clip(np.asarray(raw["measurements"][VARS.index("AGEP")]["noisy"], dtype=float), 0, None)
    got = out["AGEP"].astype(int).value_counts().reindex(range(100), fill_value=0).to_numpy()
    for g in _by_hand():
        total = got[g].sum()
        w = noisy[g] if noisy[g].sum() > 0 else np.ones(len(g))
        assert np.abs(got[g] - w / w.sum() * total).max() <= 4, (g, got[g], w)


def test_the_audit_passes_and_names_forged_bins(release, tmp_path):
    from pramkit.audit import audit

    d = release["dir"]
    result = audit(manifest=d / "s.synthesis.json", released=d / "s.csv", original=d / "o.csv", key=d / "k.key")
    assert result.passed, [c.line() for c in result.checks if not c.passed]
    proc = release["raw"]["procedure"]
    for name, bins, named in [("width", {"AGEP": 5}, "procedure.bins"), ("variable", {"AGE": 10}, "procedure.bins"),
                              ("zero", {"AGEP": 0}, "procedure.bins"), ("taken away", None, "variables.AGEP.groups")]:
        forged = {**release["raw"], "procedure": {k: v for k, v in proc.items() if k != "bins"}}
        if bins is not None:
            forged["procedure"]["bins"] = bins
        path = tmp_path / "forged.json"
        path.write_text(json.dumps(forged))
        failed = [c.line() for c in audit(manifest=path, released=d / "s.csv").checks if not c.passed]
        assert any(named in line for line in failed), (name, failed)


@pytest.mark.parametrize("flags, says", [
    (["--bins", "AGEP=0"], "--bins: the width of AGEP must be a positive integer"),
    (["--bins", "AGEP"], "--bins must be written VAR=WIDTH"),
    (["--bins", "AGE=5"], "--bins names AGE, which is not a synthesized variable"),
    (["--bins", "AGEP=5,AGEP=10"], "--bins names AGEP twice"),
    (["--bins", "AGEP=2.5"], "--bins: the width of AGEP must be a positive integer"),
    (["--bins", "SEX=2"], "--bins: SEX has no category that is a number"),
    (["--bins", "AGEP=5", "--model", "margins"], "--bins needs the model pgm"),
])
def test_bad_bins_are_one_line_and_nothing_is_written(tmp_path, flags, says):
    pytest.importorskip("mbi", reason='the model pgm needs mbi: pip install "pramkit[pgm]"')
    frame = nist_inputs(tmp_path, ["AGEP", "SEX"] if "SEX=2" in flags else ["AGEP", "MSP"], 300, "", KEY)
    if "SEX" in frame:  # SEX's codes written as its labels: no category a number
        frame["SEX"] = frame["SEX"].map({"1": "male", "2": "female"})
        frame.to_csv(tmp_path / "o.csv", index=False)
    before = (tmp_path / "o.csv").read_bytes()
    model = [] if "--model" in flags else ["--model", "pgm"]
    variables = ",".join(frame.columns)
    code, out, err = run_cli("synthesize", tmp_path / "o.csv", "--vars", variables, "--public", "", "--epsilon", "1",
                             "--out", tmp_path / "s.csv", "--key-file", tmp_path / "k.key", "--quiet", *model, *flags)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err, (code, out, err)
    assert (tmp_path / "o.csv").read_bytes() == before
    assert not (tmp_path / "s.csv").exists() and not (tmp_path / "s.synthesis.json").exists()


def _brute(categories: list[Any], width: int, signature: list[bytes]) -> list[list[int]]:
    """Two categories together exactly when both are finite numbers in one interval [k w, (k + 1) w) and of one
    signature, by comparing every pair."""
    def number(c: Any) -> float | None:
        with contextlib.suppress(TypeError, ValueError):
            x = float(c)
            return x if math.isfinite(x) and not isinstance(c, bool) else None
        return None

    def together(i: int, j: int) -> bool:
        a, b = number(categories[i]), number(categories[j])
        return i == j or (a is not None and b is not None and signature[i] == signature[j]
                          and math.floor(a / width) == math.floor(b / width))

    groups: list[list[int]] = []
    for i in range(len(categories)):
        for g in groups:
            if together(g[0], i):
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(-50, 150), st.floats(-50, 150), st.just(float("nan")), st.sampled_from(
    ["N", "", " 7 ", "b", "inf", "1e1", "٣"])), min_size=1, max_size=30),
    st.integers(1, 40), st.lists(st.sampled_from([b"", b"x", b"y"]), min_size=30, max_size=30))
def test_bins_are_the_brute_force_partition(categories, width, signature):
    sig = signature[: len(categories)]
    assert bin_groups(categories, width, sig) == _brute(categories, width, sig)


def test_the_bins_setting_is_one_whatever_its_order():
    """``B=2,A=3`` and ``A=3,B=2`` are one setting (in the variables' order): one release, one key's draws."""
    from pramkit.synthesize_pgm import check_bins

    assert list(check_bins("B=2,A=3", ["A", "B"]).items()) == list(check_bins({"A": 3, "B": 2}, ["A", "B"]).items())
