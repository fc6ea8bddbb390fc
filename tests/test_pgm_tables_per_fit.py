"""The model pgm's tables between two fits (``synthesize --tables-per-fit``, ``procedure.tables_per_fit``).

Every fit of the model compiles a program of its own, so a release that fits after every third table instead
of after each (the default) makes a third as many.  On sdcMicro's testdata (the first 2 000 records, four
household and person variables): the model is fitted once after the 1-way tables and then after every
``tables_per_fit`` tables (counted by wrapping the fit), the tables chosen between two fits are distinct, the
manifest states the setting when it is not 1 (and the default's file is the file of 1), the audit makes each
release again from the key, and a forged setting fails the audit naming it.
The schedule's replay is checked against epsilons written out here with exact fractions: a round's epsilon
may double once for each table of a fit, and only at a fit.  Skipped in one line without ``mbi`` or without
the shared data.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import SDC_DATA

pytest.importorskip("mbi", reason='the model pgm needs mbi: pip install "pramkit[pgm]"')

from pramkit.audit import audit
from pramkit.errors import ParameterError

pytestmark = pytest.mark.xdist_group("test_pgm_tables_per_fit")

KEY = bytes(range(32))
VARS = ["urbrur", "roof", "walls", "sex"]


def _release(d: Path, name: str, monkeypatch: pytest.MonkeyPatch, **settings: Any) -> dict[str, Any]:
    """One release of the original in ``d`` by the Python door, the fits' iterations counted."""
    import pramkit.synthesize_pgm as sp
    from pramkit.synthesize import synthesize_release

    fits: list[int] = []
    fit = sp._Rounds.fit

    def counted(self: Any, iters: int) -> None:
        fits.append(iters)
        fit(self, iters)

    monkeypatch.setattr(sp._Rounds, "fit", counted)
    out = d / f"{name}.csv"
    synthesize_release(d / "o.csv", out, variables=VARS, public="", epsilon=2.0, key=d / "k.key", model="pgm",
                       quiet=True, **settings)
    monkeypatch.setattr(sp._Rounds, "fit", fit)
    raw = json.loads(out.with_name(f"{name}.synthesis.json").read_text())
    return {"path": out, "manifest": out.with_name(f"{name}.synthesis.json"), "raw": raw, "fits": fits}


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Any]:
    """The same records released with three tables a fit, with one (asked for) and with the default."""
    if not (SDC_DATA / "testdata.csv").is_file():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("per-fit")
    pd.read_csv(SDC_DATA / "testdata.csv", dtype=str)[VARS].head(2_000).to_csv(d / "o.csv", index=False)
    (d / "k.key").write_text(KEY.hex())
    (d / "k.key").chmod(0o600)
    with pytest.MonkeyPatch.context() as mp:
        return {"dir": d, "three": _release(d, "three", mp, tables_per_fit=3),
                "one": _release(d, "one", mp, tables_per_fit=1), "default": _release(d, "default", mp)}


def test_the_model_is_fitted_after_every_third_table(releases):
    """One fit after the 1-way tables, then one per three tables chosen (the last fit's iterations the final
    fit's); with ``tables_per_fit=1`` one per table."""
    from pramkit.synthesize_pgm import FINAL_ITERS

    for name, per in (("three", 3), ("one", 1)):
        rel = releases[name]
        chosen = len(rel["raw"]["selections"])
        assert rel["raw"]["procedure"].get("tables_per_fit", 1) == per
        assert len(rel["fits"]) == 1 + math.ceil(chosen / per), (name, chosen, rel["fits"])
        assert rel["fits"][-1] == FINAL_ITERS and FINAL_ITERS not in rel["fits"][:-1]
    assert len(releases["three"]["fits"]) < len(releases["one"]["fits"])


def test_the_default_is_one_table_a_fit_and_writes_no_setting(releases):
    """The default's manifest has no ``tables_per_fit`` (a release made before the setting reads alike), and its
    file is byte for byte the file that ``tables_per_fit=1`` draws."""
    assert "tables_per_fit" not in releases["default"]["raw"]["procedure"]
    assert "tables_per_fit" not in releases["one"]["raw"]["procedure"]
    assert releases["default"]["path"].read_bytes() == releases["one"]["path"].read_bytes()
    assert releases["three"]["raw"]["procedure"]["tables_per_fit"] == 3


def test_the_tables_between_two_fits_are_distinct(releases):
    """The rounds between two fits choose among the candidates but those chosen since the fit (14 candidates
    of four variables, so never all taken)."""
    chosen = [tuple(s["chosen"]) for s in releases["three"]["raw"]["selections"]]
    batches = [chosen[i:i + 3] for i in range(0, len(chosen), 3)]
    assert all(len(set(b)) == len(b) for b in batches), batches
    counts = [s["candidates"] for s in releases["three"]["raw"]["selections"]]
    assert all(counts[i] > counts[i + 1] for i in range(0, len(counts) - 1, 3) if i + 1 < len(counts)
               and (i + 1) % 3), counts


def test_the_audit_makes_each_release_again(releases):
    """With the original and the key the audit makes each release again, byte for byte (with its stated
    tables per fit); the two files differ."""
    d = releases["dir"]
    for name in ("three", "default"):
        rel = releases[name]
        result = audit(manifest=rel["manifest"], released=rel["path"], original=d / "o.csv", key=d / "k.key")
        assert result.passed, [c.line() for c in result.checks if not c.passed]
    assert releases["three"]["path"].read_bytes() != releases["one"]["path"].read_bytes()


@pytest.mark.parametrize("value", [0, 17, 2.5, "3", True, None])
def test_a_forged_setting_fails_naming_it(releases, tmp_path, value):
    """A value no release writes fails the audit of the manifest alone, naming the field."""
    rel = releases["three"]
    forged = {**rel["raw"], "procedure": {**rel["raw"]["procedure"], "tables_per_fit": value}}
    path = tmp_path / "forged.synthesis.json"
    path.write_text(json.dumps(forged))
    failed = [c.line() for c in audit(manifest=path, released=rel["path"]).checks if not c.passed]
    assert any("procedure.tables_per_fit" in line for line in failed), failed


def test_a_forged_valid_setting_fails_with_the_key(releases, tmp_path):
    """1 in place of 3 is a setting a release may have: the release made again from the key with it is another
    file, and the audit names the field."""
    d, rel = releases["dir"], releases["three"]
    forged = {**rel["raw"], "procedure": {**rel["raw"]["procedure"], "tables_per_fit": 1}}
    path = tmp_path / "forged.synthesis.json"
    path.write_text(json.dumps(forged))
    result = audit(manifest=path, released=rel["path"], original=d / "o.csv", key=d / "k.key")
    failed = [c.line() for c in result.checks if not c.passed]
    assert any("procedure.tables_per_fit" in line for line in failed), failed


@pytest.mark.parametrize("settings, words", [
    ({"tables_per_fit": 0}, "tables_per_fit must be a whole number from 1 to 16, got 0"),
    ({"tables_per_fit": 17}, "tables_per_fit must be a whole number from 1 to 16, got 17"),
    ({"tables_per_fit": "3"}, "got '3'"),
    ({"tables_per_fit": 2.0}, "got 2.0"),
    ({"tables_per_fit": 3, "model": "margins"}, "tables_per_fit needs the model pgm"),
])
def test_bad_settings_are_one_line_and_write_nothing(releases, tmp_path, settings, words):
    from pramkit.synthesize import synthesize_release

    before = (releases["dir"] / "o.csv").read_bytes()
    settings = {"model": "pgm", **settings}
    with pytest.raises(ParameterError) as info:
        synthesize_release(releases["dir"] / "o.csv", tmp_path / "out.csv", variables=VARS, public="",
                           epsilon=2.0, key=KEY, quiet=True, **settings)
    assert words in str(info.value) and "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == [] and (releases["dir"] / "o.csv").read_bytes() == before


# ------------------------------------------------------------------ the schedule's replay

def _down(x: Fraction) -> float:
    """The largest float at most ``x`` (written here, not imported: the replay's arithmetic checked by hand)."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)


def _manifest(per_fit: int | None, factors: list[int]) -> dict[str, Any]:
    """A pure-DP manifest of two variables, budget 10 over 40 nominal rounds (a round's epsilon 1/4, 9/10 of it
    the measurement's), whose round ``t`` spends 1/4 times ``factors[t]``."""
    first = _down(Fraction(1, 4) * Fraction(9, 10))
    sel, meas = [], []
    for f in factors:
        total = Fraction(1, 4) * f
        s = _down(total * Fraction(1, 10))
        sel.append({"epsilon": s, "chosen": ["a", "b"]})
        meas.append({"epsilon": _down(total - Fraction(s))})
    proc = {"model": "pgm", "rounds": 40, **({"tables_per_fit": per_fit} if per_fit is not None else {})}
    return {"variables": {"a": {}, "b": {}}, "procedure": proc, "ledger": {"record_epsilon_budget": 10.0},
            "selections": sel, "measurements": [{"epsilon": first}, {"epsilon": first}, *meas]}


@pytest.mark.parametrize("per_fit, factors, replays", [
    (3, [1, 1, 1, 4, 4, 4, 8], True),   # two tables of the first three fit annealed, then one of the next three
    (3, [1, 1, 1, 8, 8], True),         # all three: doubled three times
    (3, [1, 1, 1, 16, 16], False),      # four doublings after a fit of three tables
    (3, [1, 1, 1, 1, 2], False),        # a doubling between two fits
    (None, [1, 1, 1, 4, 4], False),     # absent, one table a fit: at most one doubling a round
    (None, [1, 2, 4, 4], True),
    (2, [1, 1, 4, 4, 4, 4], True),
    (2, [1, 1, 1, 2], False),
])
def test_the_replay_allows_a_doubling_per_table_of_a_fit_and_only_at_fits(per_fit, factors, replays):
    from pramkit.synthesize_pgm import schedule

    raw = _manifest(per_fit, factors)
    measured, chosen = schedule(raw)
    stated = ([m["epsilon"] for m in raw["measurements"]], [s["epsilon"] for s in raw["selections"]])
    assert ((measured, chosen) == stated) is replays, (measured, chosen, stated)


def test_a_setting_the_replay_cannot_use_is_named():
    from pramkit.synthesize_pgm import schedule

    assert "tables_per_fit" in schedule(_manifest(0, [1, 1]))
