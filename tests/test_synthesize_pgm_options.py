"""``pramkit synthesize --model pgm --rounds T``: the nominal rounds of the model pgm's schedule.

On sdcMicro's testdata (the first 2 000 records, four household and person variables): the rounds asked for
reach the mechanism (the manifest's ``procedure.rounds`` is them, and the rounds counted back from the stated
epsilons, the 1-way tables' and the first round's, are them too); every epsilon of the release, added up
with fractions, is at most the budget and the ledger's total; every round but the last spends the budget over
T times a power of two (the annealing); the release passes the audit with the original and the key (which
makes it again with the stated rounds); the default rounds asked for by their number give the same bytes as
no flag; bad values are one line, exit 2, nothing written.  Skipped in one line without ``mbi`` or without
the shared data.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import SDC_DATA, assert_refused, run_cli

pytest.importorskip("mbi", reason='the model pgm needs mbi: pip install "pramkit[pgm]"')

from pramkit.audit import audit

#: The module's tests run in one test process (``--dist loadgroup``): its fixture makes
#: three releases by the command line (about 14 s) and, with the tests spread over two processes, was made once in each.
pytestmark = pytest.mark.xdist_group("test_synthesize_pgm_options")


KEY = bytes(range(32))
ROWS = 2_000
VARS = ["urbrur", "roof", "walls", "sex"]
EPSILON = "2"
ASKED = 32  # 8 rounds per variable, twice the default's 4


def _synthesize(d: Path, name: str, *extra: Any) -> Path:
    code, out, err = run_cli("synthesize", d / "o.csv", "--vars", ",".join(VARS), "--public", "", "--epsilon", EPSILON,
                             "--model", "pgm", "--out", d / f"{name}.csv", "--key-file", d / "k.key", "--quiet", *extra)
    assert code == 0, out + err
    return d / f"{name}.csv"


def _manifest(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.stem + ".synthesis.json").read_text())


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Any]:
    """The same data released by the command line without the flag, with the default's rounds by their number
    (4 per variable: 16) and with ``--rounds 32``."""
    if not (SDC_DATA / "testdata.csv").is_file():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("rounds")
    frame = pd.read_csv(SDC_DATA / "testdata.csv", dtype=str)[VARS].head(ROWS)
    frame.to_csv(d / "o.csv", index=False)
    (d / "k.key").write_text(KEY.hex())
    (d / "k.key").chmod(0o600)
    paths = {"plain": _synthesize(d, "plain"), "default": _synthesize(d, "default", "--rounds", "16"),
             "asked": _synthesize(d, "asked", "--rounds", str(ASKED))}
    return {"dir": d, "paths": paths, "manifests": {k: _manifest(p) for k, p in paths.items()}}


def test_jax_imported_first_draws_the_same_file(release):
    """A process that imported JAX (without computing) before the command draws the file a fresh one draws from
    the same key: XLA reads its flags when its backend starts, and pramkit's choice of CPU emitters is made
    before (they round otherwise, which would draw another file)."""
    import os
    import subprocess
    import sys

    d = release["dir"]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    code = ("import sys, jax, jax.numpy\nfrom pramkit.cli import main\nsys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, "synthesize", str(d / "o.csv"), "--vars", ",".join(VARS),
                           "--public", "", "--epsilon", EPSILON, "--model", "pgm", "--rounds", "16",
                           "--out", str(d / "jax-first.csv"), "--key-file", str(d / "k.key"), "--quiet"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "fresh process" not in done.stderr, done.stderr
    assert (d / "jax-first.csv").read_bytes() == release["paths"]["default"].read_bytes()


def _counted_rounds(raw: dict[str, Any]) -> tuple[int, int]:
    """The nominal rounds T counted back from the stated epsilons: each 1-way table takes 9/10 of a round's
    epsilon (budget / T), and the first round (never annealed before it) takes the whole of one."""
    budget = Fraction(raw["ledger"]["record_epsilon_budget"])
    d = len(raw["variables"])
    first_table = Fraction(raw["measurements"][0]["epsilon"])
    first_round = Fraction(raw["selections"][0]["epsilon"]) + Fraction(raw["measurements"][d]["epsilon"])
    return round(budget * Fraction(9, 10) / first_table), round(budget / first_round)


# ------------------------------------------------------------------ the option reaches the mechanism

def test_the_rounds_asked_are_the_rounds_run(release):
    """``procedure.rounds`` is what was asked, and so are the rounds counted back from the epsilons; without the
    flag they are 4 per variable."""
    asked, plain = release["manifests"]["asked"], release["manifests"]["plain"]
    assert asked["procedure"]["rounds"] == ASKED and _counted_rounds(asked) == (ASKED, ASKED)
    assert plain["procedure"]["rounds"] == 4 * len(VARS) and _counted_rounds(plain) == (16, 16)
    assert len(asked["measurements"]) == len(VARS) + len(asked["selections"])
    assert [m["axes"] for m in asked["measurements"][len(VARS):]] == [s["chosen"] for s in asked["selections"]]


def test_each_round_spends_the_budget_over_t_times_a_power_of_two(release):
    """Every round but the last spends budget / T doubled some number of times (the annealing), never less
    than the round before, within the floats' rounding down; the last spends at most what was left."""
    raw = release["manifests"]["asked"]
    unit = Fraction(raw["ledger"]["record_epsilon_budget"]) / ASKED
    d = len(VARS)
    spent = [Fraction(s["epsilon"]) + Fraction(m["epsilon"])
             for s, m in zip(raw["selections"], raw["measurements"][d:])]
    powers = []
    for eps in spent[:-1]:
        ratio = eps / unit
        k = round(ratio).bit_length() - 1
        assert abs(ratio - 2 ** k) < Fraction(1, 10 ** 9), (eps, unit)
        powers.append(k)
    assert powers == sorted(powers) and powers[0] == 0


# ------------------------------------------------------------------ the budget

def test_the_epsilons_add_up_to_at_most_the_budget(release):
    """Every measurement's and selection's epsilon, added up exactly, is at most the budget, and the ledger's
    total is that sum (as a float)."""
    for name in ("asked", "plain"):
        raw = release["manifests"][name]
        total = sum(Fraction(m["epsilon"]) for m in raw["measurements"]) + \
            sum(Fraction(s["epsilon"]) for s in raw["selections"])
        budget = Fraction(raw["ledger"]["record_epsilon_budget"])
        assert budget == Fraction(EPSILON) and total <= budget, (name, float(total))
        assert total > budget * Fraction(999, 1000), (name, float(total))  # the last round spends what is left
        assert abs(Fraction(raw["ledger"]["record_epsilon"]) - total) <= Fraction(1, 10 ** 12), name


def test_the_audit_makes_the_release_again_with_its_rounds(release):
    """With the original and the key the audit makes the release again (with the stated rounds) byte for byte;
    the file of the default's rounds differs from it."""
    d = release["dir"]
    assert audit(manifest=d / "asked.synthesis.json", released=release["paths"]["asked"], original=d / "o.csv",
                 key=d / "k.key").passed
    assert release["paths"]["asked"].read_bytes() != release["paths"]["plain"].read_bytes()


# ------------------------------------------------------------------ the default is unchanged

def test_the_default_rounds_by_their_number_are_the_default(release):
    """``--rounds 16`` (4 per variable) gives the same bytes as no flag: the file and the manifest."""
    a, b = release["paths"]["plain"], release["paths"]["default"]
    assert a.read_bytes() == b.read_bytes()
    ma, mb = _manifest(a), _manifest(b)
    ma["released"].pop("file"), mb["released"].pop("file")
    assert ma == mb


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("args, words", [
    (["--rounds", "3"], "--rounds must be an integer from 4 (the synthesized variables) to 10000, got 3"),
    (["--rounds", "0"], "--rounds must be an integer from 4 (the synthesized variables) to 10000, got 0"),
    (["--rounds", "10001"], "--rounds must be an integer from 4"),
    (["--rounds", "2.5"], "invalid int value: '2.5'"),
    (["--model", "margins", "--rounds", "16"], "rounds needs the model pgm"),
    (["--tables-per-fit", "0"], "--tables-per-fit must be a whole number from 1 to 16, got 0"),
    (["--tables-per-fit", "17"], "--tables-per-fit must be a whole number from 1 to 16, got 17"),
    (["--tables-per-fit", "2.5"], "invalid int value: '2.5'"),
    (["--model", "margins", "--tables-per-fit", "3"], "--tables-per-fit needs the model pgm"),
])
def test_bad_input_is_one_line(release, tmp_path, capsys, args, words):
    src = tmp_path / "o.csv"
    src.write_bytes((release["dir"] / "o.csv").read_bytes())
    base = {"--vars": ",".join(VARS), "--public": "", "--epsilon": "1", "--out": tmp_path / "x.csv",
            "--model": "pgm"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    assert_refused(tmp_path, ["synthesize", src, *(x for kv in base.items() for x in kv),
                              "--key-file", release["dir"] / "k.key"], words, capsys)
