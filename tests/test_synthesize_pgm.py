"""``pramkit synthesize --model pgm``: marginals chosen under the budget (AIM), a graphical model fitted to them
(Private-PGM), the edit rules as structural zeros.

On NIST's CRC excerpt (the first rows, three features and the rule that ties two of them): every record of the
file keeps the rule (checked on the file); the released 2-way tables are near the noisy tables the model was
fitted to; the epsilons replay from the budget and add up (exact rationals) within it, and the ledger says
so; one key and one file give one release, byte for byte; the audit recomputes every field and names each
forgery; bad input is one line, exit 2, nothing written.  Skipped in one line without ``mbi``
(``pip install "pramkit[pgm]"``) or without the shared data.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import nist_inputs
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("mbi", reason='the model pgm needs mbi: pip install "pramkit[pgm]"')

from pramkit.audit import audit
from pramkit.cli import main
from pramkit.errors import ParameterError
from pramkit.kernel.rng import resolve_key
from pramkit.privacy.epsilon import record_epsilon
from pramkit.structure import Rules
from pramkit.synthesize import synthesize_release
from pramkit.synthesize_pgm import expected_noise, fit_and_draw, schedule, shared_draws

#: The module's tests run in one test process (``--dist loadgroup``): its fixture makes a release by the
#: command line (about 3 s) and, with the tests spread over two processes, was made once in each.
pytestmark = pytest.mark.xdist_group("test_synthesize_pgm")

KEY = bytes(range(32))
ROWS = 2_000
FEATURES = ["SEX", "HOUSING_TYPE", "OWN_RENT"]
RULES = "HOUSING_TYPE,OWN_RENT\n1,0\n2|3,1|2\n"  # OWN_RENT is 0 (group quarters) exactly when HOUSING_TYPE is not 1


def _cli(*args: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Any]:
    """One release by the command line (epsilon 4, the rule), with its inputs."""
    d = tmp_path_factory.mktemp("pgm")
    frame = nist_inputs(d, FEATURES, ROWS, RULES, KEY)
    key = d / "k.key"
    code, out, err = _cli("synthesize", d / "o.csv", "--vars", ",".join(FEATURES), "--public", "", "--epsilon", "4",
                          "--model", "pgm", "--max-cells", "5000", "--forbid", d / "rules.csv", "--na-values", "",
                          "--out", d / "s.csv", "--key-file", key, "--quiet")
    assert code == 0, out + err
    return {"dir": d, "key": key, "frame": frame, "released": pd.read_csv(d / "s.csv", dtype=str,
                                                                         keep_default_na=False),
            "manifest": json.loads((d / "s.synthesis.json").read_text())}


def test_every_record_keeps_the_rule(release):
    rel = release["released"]
    assert len(rel) == ROWS and list(rel.columns) == FEATURES
    rules = Rules.of([{"HOUSING_TYPE": "1", "OWN_RENT": "0"}, {"HOUSING_TYPE": "2|3", "OWN_RENT": "1|2"}])
    assert not rules.breaking(rel, FEATURES).any()
    assert ((rel["HOUSING_TYPE"] == "1") == (rel["OWN_RENT"] != "0")).all()  # the rule, read directly


def test_released_tables_follow_the_noisy_tables(release):
    """Each measured table, read off the released file, is within the noise of the measurements of it (and
    the file's every combination is shown at least twice: min-count 2)."""
    rel, raw = release["released"], release["manifest"]
    cats = {v: [str(c) for c in s["categories"]] for v, s in raw["variables"].items()}
    for m in raw["measurements"]:
        axes = m["axes"]
        counts = rel.groupby(axes).size()
        table = np.zeros([len(cats[a]) for a in axes])
        for key, c in counts.items():
            key = key if isinstance(key, tuple) else (key,)
            table[tuple(cats[a].index(k) for a, k in zip(axes, key))] = c
        noisy = np.asarray(m["noisy"], dtype=float)
        # the fitted law draws within a few noise units per cell, and sampling within a few sqrt(n)
        bound = 4 * expected_noise(m["epsilon"]) * noisy.size + 4 * np.sqrt(ROWS * noisy.size)
        assert np.abs(table - noisy).sum() <= bound, axes
    assert (rel.value_counts() >= 2).all()


def test_epsilons_replay_and_add_up(release):
    raw = release["manifest"]
    measured, chosen = schedule(raw)
    assert [m["epsilon"] for m in raw["measurements"]] == measured
    assert [s["epsilon"] for s in raw["selections"]] == chosen
    exact = sum(Fraction(e) for e in measured + chosen)
    assert exact <= Fraction(4)  # within the budget, exactly
    assert raw["ledger"]["record_epsilon"] == record_epsilon(measured + chosen) <= 4.0
    assert raw["ledger"]["record_epsilon"] >= float(exact) > 3.99  # the whole budget is spent
    assert all(s["mechanism"] == "exponential" and s["sensitivity"] > 0 for s in raw["selections"])
    assert [m["axes"] for m in raw["measurements"]][:3] == [[v] for v in FEATURES]
    assert all(m["mechanism"] == "geometric" and m["sensitivity"] == 2 for m in raw["measurements"])


def test_one_key_one_file_and_the_audit(release):
    """The same key and file give the same bytes; the audit passes, and fails naming each forged field."""
    d = release["dir"]
    again = synthesize_release(d / "o.csv", d / "again.csv", variables=FEATURES, public="", epsilon=4.0,
                               key=KEY, forbid=d / "rules.csv", na_values=(), model="pgm", max_cells=5000)
    assert (d / "again.csv").read_bytes() == (d / "s.csv").read_bytes()
    assert again.manifest["measurements"] == release["manifest"]["measurements"]
    inputs = {"manifest": d / "s.synthesis.json", "released": d / "s.csv", "original": d / "o.csv",
              "key": release["key"], "na_values": ()}
    assert audit(**inputs).passed
    forgeries = {("selections", 0, "epsilon"): lambda x: x * 0.5,
                 ("selections", 0, "chosen"): lambda x: ["SEX", "OWN_RENT"] if x != ["SEX", "OWN_RENT"] else ["SEX"],
                 ("selections", 0, "sensitivity"): lambda x: 0.5,
                 ("selections", 0, "mechanism"): lambda x: "laplace",
                 ("measurements", 3, "epsilon"): lambda x: x * 2}
    for (top, i, name), forge in forgeries.items():
        raw = copy.deepcopy(release["manifest"])
        raw[top][i][name] = forge(raw[top][i][name])
        path = d / "forged.synthesis.json"
        path.write_text(json.dumps(raw))
        result = audit(**{**inputs, "manifest": path})
        failed = {c.field for c in result.checks if not c.passed}
        assert not result.passed and f"{top}[{i}].{name}" in failed, (name, failed)


@pytest.mark.parametrize("args, words", [
    (["--max-cells", "10"], "--max-cells must be an integer from 1000"),
    (["--public", "SEX"], "the model pgm conditions on no public column"),
    (["--epsilon", "0"], "epsilon"),
])
def test_bad_input_is_one_line(release, tmp_path, args, words):
    d = release["dir"]
    base = {"--public": "", "--epsilon": "4"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    code, _out, err = _cli("synthesize", d / "o.csv", "--vars", "HOUSING_TYPE,OWN_RENT", "--model", "pgm",
                          *(x for kv in base.items() for x in kv), "--out", tmp_path / "x.csv",
                          "--key-file", release["key"])
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert not list(tmp_path.iterdir())


def test_a_model_too_large_for_the_cap_is_refused(release):
    frame = release["frame"].assign(AGE=[str(i % 100) for i in range(ROWS)], ID=[str(i % 1500) for i in range(ROWS)])
    with pytest.raises(ParameterError, match="ID has 1,500 categories, more than max_cells = 1,000"):
        synthesize_release(frame, variables="ID,SEX", epsilon=1.0, key=KEY, model="pgm", max_cells=1000)


def test_without_mbi_one_line(monkeypatch, release):
    monkeypatch.setitem(sys.modules, "mbi", None)  # import mbi raises ImportError
    code, _out, err = _cli("synthesize", release["dir"] / "o.csv", "--vars", "SEX", "--epsilon", "1", "--model", "pgm",
                          "--out", release["dir"] / "never.csv")
    assert code == 2 and 'pip install "pramkit[pgm]"' in err and len(err.strip().splitlines()) == 1
    assert not (release["dir"] / "never.csv").exists()


@settings(max_examples=60, deadline=None)
@given(draws=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=40),
       extra=st.integers(0, 2), share=st.integers(1, 3), seed=st.binary(min_size=32, max_size=32))
def test_shared_draws_repeat_each_draw(draws, extra, share, seed):
    """Each draw is given to ``share`` records and the few records left over take draws in a keyed order: every
    table of the released records is ``share`` times that of the draws, plus the left-over records' (counted
    here by brute force over the records)."""
    drawn = np.array(draws)
    rows = share * len(drawn) + min(extra, share - 1)
    out = shared_draws(drawn, rows, share, resolve_key(seed))
    assert out.shape == (rows, 2) and out.dtype == drawn.dtype
    given = {}
    for r in map(tuple, drawn.tolist()):
        given[r] = given.get(r, 0) + share
    got = {}
    for r in map(tuple, out.tolist()):
        got[r] = got.get(r, 0) + 1
    assert set(got) == set(given)
    assert sum(got[r] - given[r] for r in got) == rows - share * len(drawn)
    rounds = -(-(rows - share * len(drawn)) // len(drawn))  # how often the left-over records go round the draws
    assert all(0 <= got[r] - given[r] <= rounds * given[r] // share for r in got)
    np.testing.assert_array_equal(out, shared_draws(drawn, rows, share, resolve_key(seed)))  # one key, one order


def test_a_shared_draw_keeps_the_table_of_half_a_draw(tmp_path):
    """One variable of NIST's excerpt: the same key fits the same model whatever the share, and a systematic
    draw puts each category within one record of the law times the records drawn.  So with each of ``n / 2``
    draws given to two records the 1-way table is within 1 + 2 records of one draw a record's, where pairing
    ``n`` independent draws at random would leave half of them out (a standard deviation of about 7 records
    for the rarest category here, 38 of 2 000)."""
    frame = nist_inputs(tmp_path, ["HOUSING_TYPE"], ROWS, "", KEY)
    cats = sorted(frame["HOUSING_TYPE"].unique())
    codes = frame["HOUSING_TYPE"].map(cats.index).to_numpy()[:, None]
    got = {}
    for share in (1, 2):
        fit = fit_and_draw(codes, ["HOUSING_TYPE"], {"HOUSING_TYPE": cats}, epsilon=2.0, key=resolve_key(KEY),
                           draw_key=resolve_key(bytes(32)), share=share, quiet=True)
        assert len(fit.drawn) == ROWS and fit.shared == ROWS - ROWS // share
        got[share] = np.bincount(fit.drawn[:, 0], minlength=len(cats))
    assert np.abs(got[2] - got[1]).max() <= 3, got
