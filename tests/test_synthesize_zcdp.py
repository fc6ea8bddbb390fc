"""``pramkit synthesize --model pgm --delta D``: an (epsilon, delta) guarantee accounted in zero-concentrated DP,
the kind MST and AIM state, so that the model pgm is compared with them like for like.

On sdcMicro's testdata (the first 2 000 records, four household and person variables), under both neighbour
relations: every table is a discrete Gaussian measurement whose residuals, standardised by the stated
``sigma2``, have the spread of that law (a chi-square test over every cell); the rho the manifest spends,
recomputed here by hand with fractions (``sensitivity / (2 sigma2)`` per table, ``epsilon^2 / 8`` per
selection), is within the stated budget; the composition of that many Gaussian measurements is held against
the exact privacy profile of the Gaussian mechanism (Balle and Wang 2018, written here with SciPy's normal
law), which must stay within the stated delta at the stated epsilon; the guarantee sentence states the delta;
the audit passes with the original and the key, and each field of the manifest forged fails it by name; bad
input is one line, exit 2, nothing written.  Skipped in one line without ``mbi`` or the shared data.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA, assert_refused, run_cli
from test_synthesize_neighbours import _groups, _table

pytest.importorskip("mbi", reason='the model pgm needs mbi: pip install "pramkit[pgm]"')

from pramkit.audit import audit

#: The module's tests run in one test process (``--dist loadgroup``): its fixture makes
#: two releases by the command line (about 9 s) and, with the tests spread over two processes, was made once in each.
pytestmark = pytest.mark.xdist_group("test_synthesize_zcdp")


KEY = bytes(range(32))
ROWS = 2_000
VARS = ["urbrur", "roof", "walls", "sex"]
EPSILON, DELTA = "2", "1e-05"


def _synthesize(d: Path, name: str, *extra: Any) -> tuple[Path, str]:
    """The release written to ``d/NAME.csv`` by the command line, and the summary it printed."""
    code, out, err = run_cli("synthesize", d / "o.csv", "--vars", ",".join(VARS), "--public", "", "--epsilon", EPSILON,
                             "--model", "pgm", "--delta", DELTA, "--out", d / f"{name}.csv", "--key-file", d / "k.key",
                             "--quiet", *extra)
    assert code == 0, out + err
    return d / f"{name}.csv", out


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Any]:
    """The same data released under zCDP with each neighbour relation, with the summaries the command printed
    (``--quiet`` silences only the progress on stderr)."""
    if not (SDC_DATA / "testdata.csv").is_file():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("zcdp")
    frame = pd.read_csv(SDC_DATA / "testdata.csv", dtype=str)[VARS].head(ROWS)
    frame.to_csv(d / "o.csv", index=False)
    (d / "k.key").write_text(KEY.hex())
    (d / "k.key").chmod(0o600)
    made = {"replace": _synthesize(d, "replace"), "ar": _synthesize(d, "ar", "--neighbours", "add-remove")}
    paths = {k: p for k, (p, _) in made.items()}
    manifests = {k: json.loads(p.with_name(p.stem + ".synthesis.json").read_text()) for k, p in paths.items()}
    return {"dir": d, "frame": frame, "paths": paths, "manifests": manifests,
            "summaries": {k: out for k, (_, out) in made.items()}}


def _spent(raw: dict[str, Any]) -> Fraction:
    """The rho the manifest's tables and selections spend, by hand."""
    tables = sum(Fraction(m["sensitivity"]) / (2 * Fraction(m["sigma2"])) for m in raw["measurements"])
    return tables + sum(Fraction(s["epsilon"]) ** 2 / 8 for s in raw["selections"])


def _gaussian_delta(rho: float, epsilon: float) -> float:
    """The exact delta at ``epsilon`` of a Gaussian mechanism of zCDP ``rho`` (Balle and Wang 2018, Theorem 8):
    ``Phi(-eps / mu + mu / 2) - e^eps Phi(-eps / mu - mu / 2)``, ``mu = sqrt(2 rho)``."""
    from scipy.stats import norm

    mu = math.sqrt(2 * rho)
    return float(norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2))


@pytest.mark.parametrize("which, sensitivity", [("replace", 2), ("ar", 1)])
def test_every_table_is_a_discrete_gaussian_measurement(release, which, sensitivity):
    """Each table states the discrete Gaussian mechanism, its sensitivity and a variance; the residuals against
    the tables counted here, standardised, have a chi-square spread (mean 1 within 5 standard errors)."""
    from scipy.stats import chi2

    raw = release["manifests"][which]
    cats = {v: [str(c) for c in s["categories"]] for v, s in raw["variables"].items()}
    z2, cells = 0.0, 0
    for i, m in enumerate(raw["measurements"]):
        assert m["mechanism"] == "discrete_gaussian" and m["sensitivity"] == sensitivity and "epsilon" not in m
        exact = _table(release["frame"], m["axes"], cats, _groups(raw, i))
        resid = np.asarray(m["noisy"]) - exact
        z2 += float((resid.astype(float) ** 2 / m["sigma2"]).sum())
        cells += resid.size
    assert cells > 40
    assert chi2.sf(z2, cells) > 1e-4 and chi2.cdf(z2, cells) > 1e-4, (z2, cells)


@pytest.mark.parametrize("which", ["replace", "ar"])
def test_the_rho_spent_implies_the_stated_epsilon_and_delta(release, which):
    """The rho spent (by hand) is within the stated budget and the stated figure; a Gaussian mechanism of that
    rho meets (epsilon, delta) by its exact profile; the sentence states the pair."""
    raw = release["manifests"][which]
    led = raw["ledger"]
    spent = _spent(raw)
    assert spent <= Fraction(led["rho_budget"]) and Fraction(led["rho"]) >= spent
    assert float(spent) > 0.5 * led["rho_budget"]  # the budget is spent, not a sliver of it
    assert led["delta"] == float(DELTA) and led["record_epsilon"] == float(EPSILON)
    assert _gaussian_delta(led["rho_budget"], float(EPSILON)) <= float(DELTA)
    # the classical conversion (Bun and Steinke 2016) gives less rho than the tighter one stated
    assert led["rho_budget"] >= (math.sqrt(math.log(1 / float(DELTA)) + float(EPSILON))
                                 - math.sqrt(math.log(1 / float(DELTA)))) ** 2
    assert "up to an additive delta of 1e-05" in led["statement"]
    assert "zero-concentrated DP" in led["statement"]
    assert raw["procedure"]["delta"] == float(DELTA)


def test_the_summary_states_the_pair(release, tmp_path):
    """The module's release (replace-one) states the pair in its summary; made again without ``--quiet``, it is
    the same file, and its summary as JSON states the pair too; a pure epsilon-DP release states no delta."""
    assert "central epsilon: 2, delta 1e-05 (zCDP;" in release["summaries"]["replace"]
    code, out, err = run_cli("synthesize", release["dir"] / "o.csv", "--vars", ",".join(VARS), "--public", "",
                             "--epsilon", EPSILON, "--model", "pgm", "--delta", DELTA, "--out", tmp_path / "j.csv",
                             "--key-file", release["dir"] / "k.key", "--json")
    assert code == 0, err
    assert (tmp_path / "j.csv").read_bytes() == release["paths"]["replace"].read_bytes()
    summary = json.loads(out)
    assert summary["delta"] == float(DELTA) and summary["record_epsilon"] <= float(EPSILON)
    code, out, err = run_cli("synthesize", release["dir"] / "o.csv", "--vars", ",".join(VARS), "--public", "",
                             "--epsilon", EPSILON, "--model", "pgm", "--out", tmp_path / "p.csv",
                             "--key-file", release["dir"] / "k.key", "--json")
    assert code == 0 and json.loads(out)["delta"] is None, err  # pure epsilon-DP states no delta


def test_the_audit_passes_and_names_each_forged_field(release):
    """The release passes the audit with the original and the key; each declared field recomputed from the
    public files, forged, fails the audit naming it."""
    from test_audit_fields import forgeries_escaping

    d = release["dir"]
    inputs = {"manifest": d / "ar.synthesis.json", "released": release["paths"]["ar"], "original": d / "o.csv",
              "key": d / "k.key"}
    result = audit(**inputs)
    assert result.passed, [c.line() for c in result.checks if not c.passed]
    tried, escaped = forgeries_escaping(inputs["manifest"], inputs,  # "ledger.*" is one pattern: its fields too
                                        extra=[("ledger", "delta"), ("ledger", "alpha"), ("ledger", "rho")])
    assert {"measurements[0].sigma2", "measurements[0].rho", "measurements[0].mechanism", "selections[0].rho",
            "ledger.rho_budget", "ledger.delta", "ledger.alpha", "ledger.rho"} <= set(tried), tried
    assert not escaped, escaped


def test_a_forged_smaller_delta_fails(release, tmp_path):
    """A manifest that claims a smaller delta in its procedure and ledger alike: the rho spent is then more than
    the budget that delta allows."""
    raw = json.loads(json.dumps(release["manifests"]["ar"]))
    raw["procedure"]["delta"] = raw["ledger"]["delta"] = 1e-12
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(raw))
    failed = {c.field for c in audit(manifest=manifest, released=release["paths"]["ar"]).checks if not c.passed}
    assert "ledger.rho_budget" in failed or "ledger.statement" in failed, failed


@pytest.mark.parametrize("args, words", [
    (["--model", "margins", "--delta", "1e-5"], "delta needs the model pgm"),
    (["--model", "pgm", "--delta", "0"], "--delta must be a number above 0 and at most 0.001"),
    (["--model", "pgm", "--delta", "0.5"], "--delta must be a number above 0 and at most 0.001"),
    (["--model", "pgm", "--delta", "nan"], "--delta must be a number above 0"),
    (["--model", "pgm", "--delta", "x"], "invalid float value: 'x'"),
])
def test_bad_input_is_one_line(release, tmp_path, capsys, args, words):
    src = tmp_path / "o.csv"
    src.write_bytes((release["dir"] / "o.csv").read_bytes())
    base = {"--vars": ",".join(VARS), "--public": "", "--epsilon": "1", "--out": tmp_path / "x.csv"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    assert_refused(tmp_path, ["synthesize", src, *(x for kv in base.items() for x in kv),
                              "--key-file", release["dir"] / "k.key"], words, capsys)


def test_marginals_by_mbi_when_the_factors_give_no_distribution(release, monkeypatch):
    """Forced onto mbi's inference in logs (the path taken when the calibrated tree finds the factors' product
    zero everywhere), every marginal the rounds read equals the calibrated tree's within 1e-9 of a record."""
    import pramkit.synthesize_pgm as pgm
    from pramkit.kernel.rng import resolve_key

    frame = release["frame"][VARS[:3]]
    cats = {v: sorted(frame[v].unique()) for v in VARS[:3]}
    codes = np.stack([frame[v].map({c: i for i, c in enumerate(cats[v])}).to_numpy() for v in VARS[:3]], 1)
    fast = pgm._Factors.marginal
    gaps: list[float] = []

    def both(self, r):
        x = fast(self, r)
        tree, self._tree, self._no_tree = self._tree, None, True
        y = fast(self, r)
        self._tree, self._no_tree = tree, False
        gaps.append(float(np.abs(x - y).max()))
        return x

    monkeypatch.setattr(pgm._Factors, "marginal", both)
    monkeypatch.setattr(pgm._Factors, "fitted", False)
    pgm.fit_and_draw(codes.astype(np.int64), VARS[:3], cats, epsilon=2.0, delta=1e-5, key=resolve_key(KEY),
                     draw_key=resolve_key(bytes(32)))
    assert gaps and max(gaps) < 1e-9, max(gaps)


def test_a_marginal_a_clique_holds_is_the_fits_own(release, monkeypatch):
    """Summed from the fit's marginal of a clique that holds it, every marginal the rounds and the draw read
    equals the one variable elimination over the model's factors gives, within 1e-6 of a record; and some
    are held (the path is taken)."""
    import pramkit.synthesize_pgm as pgm
    from pramkit.kernel.rng import resolve_key

    names = VARS[:4]
    frame = release["frame"][names]
    cats = {v: sorted(frame[v].unique()) for v in names}
    codes = np.stack([frame[v].map({c: i for i, c in enumerate(cats[v])}).to_numpy() for v in names], 1)
    fast = pgm._Factors.marginal
    gaps: list[float] = []

    def both(self, r):
        x = fast(self, r)
        if self._held(r) is not None:
            self.fitted = False
            gaps.append(float(np.abs(x - fast(self, r)).max()))
            self.fitted = True
        return x

    monkeypatch.setattr(pgm._Factors, "marginal", both)
    pgm.fit_and_draw(codes.astype(np.int64), names, cats, epsilon=2.0, delta=1e-5, key=resolve_key(KEY),
                     draw_key=resolve_key(bytes(32)))
    assert len(gaps) > 10 and max(gaps) < 1e-6, (len(gaps), max(gaps))
