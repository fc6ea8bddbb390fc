"""pramkit synthesize on real files: rules over several synthesized variables, settings, missing codes.

Checked against: the rules file read by the test itself (its own CSV reading, not pramkit's checker), the
messages of ``pramkit design`` for the same settings, and the original file's bytes (a drawn file made again
from other originals with the same noisy tables).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pramkit.synthesize as synth
from pramkit.cli import main
from pramkit.synthesize import synthesize_release
from tests.conftest import assert_refused

#: Synthesized variables of sdcMicro's testdata, and its public columns (age: public cells of a few records).
VARS = ["relat", "hhcivil", "water"]
PUBLIC = ["sex", "age"]
#: Rules over two synthesized variables (a head or spouse is married, a child is not), and one naming a public
#: column with two synthesized variables.
RULES = "relat,hhcivil,sex\n1|2,1,\n3|5|7,2|4,\n2,4,1\n"


def small(folder: Path, sdc_data: Path, rows: int = 120) -> Path:
    """The first ``rows`` records of sdcMicro's testdata, and the rules file, in ``folder``."""
    lines = (sdc_data / "testdata.csv").read_text().splitlines()[:rows + 1]
    (folder / "d.csv").write_text("\n".join(lines) + "\n")
    (folder / "rules.csv").write_text(RULES)
    return folder / "d.csv"


def breaking(frame: pd.DataFrame, rules_file: Path) -> np.ndarray:
    """The records that hold a forbidden combination, by the test's own reading of the rules file: a row is a
    rule, an empty cell any value, ``a|b`` alternatives; values compared as the file's texts."""
    with rules_file.open(newline="") as f:
        rules = [{c: set(v.split("|")) for c, v in row.items() if v} for row in csv.DictReader(f)]
    texts = frame.astype(str)
    out = np.zeros(len(frame), dtype=bool)
    for rule in rules:
        out |= np.logical_and.reduce([texts[c].isin(v).to_numpy() for c, v in rule.items()])
    return out


def test_rules_over_synthesized_variables_hold_for_every_key(tmp_path: Path, sdc_data: Path) -> None:
    """At 120 records, epsilon 1 and public cells of one or a few records, 40 keys all give a release (the
    candidates were drawn one variable at a time, then those breaking a rule dropped: most keys failed), and
    every released record keeps every rule."""
    data = small(tmp_path, sdc_data)
    original = pd.read_csv(data, dtype=str)
    assert breaking(original, tmp_path / "rules.csv").sum() == 1  # the original breaks one: no matter
    cells = original.groupby(PUBLIC).size()
    assert (cells <= 2).mean() > 0.5  # most public cells hold one or two records
    for seed in range(40):
        res = synthesize_release(data, variables=VARS, public=PUBLIC, epsilon=1.0, key=bytes([seed]) * 32,
                                 forbid=tmp_path / "rules.csv", min_count=1 + seed % 2)
        assert not breaking(res.data, tmp_path / "rules.csv").any(), seed
        assert res.data[PUBLIC].equals(original[PUBLIC])


def test_the_draws_read_only_the_noisy_tables(tmp_path: Path, sdc_data: Path, monkeypatch) -> None:
    """Given the same noisy tables (and the same key), an original whose synthesized columns are shuffled gives
    the same file byte for byte: the pool, the raking and the draws read the original only through the
    measurements."""
    data = small(tmp_path, sdc_data)
    original = pd.read_csv(data, dtype=str)
    measured = synth._measure
    kept: list = []

    def measure_once(*args, **kwargs):  # the first original's measurements, for both files
        if not kept:
            kept.append(measured(*args, **kwargs))
        return kept[0]

    monkeypatch.setattr(synth, "_measure", measure_once)
    other = original.copy()
    rng = np.random.default_rng(1)
    for v in VARS:
        other[v] = rng.permutation(other[v].to_numpy())
    cats = {v: sorted(set(original[v])) for v in VARS}
    made = [synthesize_release(f, variables=VARS, public=PUBLIC, epsilon=1.0, key=bytes(32), categories=cats,
                               forbid=tmp_path / "rules.csv").data for f in (original, other)]
    assert not made[0].equals(original)
    pd.testing.assert_frame_equal(made[0], made[1])


def design_error(folder: Path, epsilon: str, capsys) -> str:
    """What ``pramkit design`` says of ``--epsilon EPSILON`` on the same file (after ``error:``)."""
    capsys.readouterr()
    assert main(["design", str(folder / "d.csv"), "--vars", "relat", "--epsilon", epsilon, "--out",
                 str(folder / "m.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert not (folder / "m.json").exists()
    return err.split("error: ", 1)[1]


@pytest.mark.parametrize("epsilon", ["1e308", "inf", "nan", "0", "-1"])
def test_epsilon_is_refused_as_design_refuses_it(tmp_path: Path, sdc_data: Path, capsys, epsilon: str) -> None:
    """A budget design refuses is refused before any work, in design's words (1e308 was an OverflowError)."""
    small(tmp_path, sdc_data)
    words = design_error(tmp_path, epsilon, capsys)
    assert_refused(tmp_path, ["synthesize", tmp_path / "d.csv", "--vars", "relat,hhcivil", "--public", "sex",
                              "--epsilon", epsilon, "--out", tmp_path / "s.csv"], words, capsys)


def test_the_largest_budget_is_a_release(tmp_path: Path, sdc_data: Path) -> None:
    """Epsilon 700, the largest accepted, makes a release (no overflow in the noise or the shares)."""
    data = small(tmp_path, sdc_data)
    res = synthesize_release(data, variables=VARS, public=PUBLIC, epsilon=700.0, key=bytes(32),
                             forbid=tmp_path / "rules.csv")
    assert 0 < res.record_epsilon <= 700.0


SETTINGS = [
    ({"sweeps": 10**9}, "sweeps must be an integer from 1 to 1000"),
    ({"sweeps": True}, "sweeps must be an integer"),
    ({"pool": 1}, "pool must be an integer from 2"),
    ({"public_bins": 0}, "public_bins must be an integer from 1"),
    ({"min_count": True}, "min_count must be 1 or 2"),
    ({"sep": ",,"}, "separator"),
    ({"encoding": "no-such-codec"}, "encoding"),
]


@pytest.mark.parametrize("setting, words", SETTINGS, ids=[next(iter(s)) + "=" + str(next(iter(s.values())))
                                                           for s, _ in SETTINGS])
def test_settings_are_checked_before_the_file_is_read(tmp_path: Path, setting: dict, words: str) -> None:
    """Every numeric setting (and the CSV dialect) is refused before the data is read: the file named does
    not even exist."""
    with pytest.raises(synth.ParameterError, match=words):
        synthesize_release(tmp_path / "absent.csv", variables="a", epsilon=1.0, **setting)


def with_places(folder: Path, sdc_data: Path, column: str) -> Path:
    """The small file with a column ``column`` naming a town, "Zürich" composed (NFC) in some records and
    decomposed (NFD) in others."""
    data = small(folder, sdc_data)
    frame = pd.read_csv(data, dtype=str)
    frame[column] = np.where(np.arange(len(frame)) % 3 == 0, "Z\u00fcrich", "Bern")
    frame.loc[frame.index[1::6], column] = "Zu\u0308rich"
    frame.to_csv(data, index=False)
    return data


@pytest.mark.parametrize("role", ["--vars", "--public"])
def test_one_value_spelled_two_ways_is_refused_as_design_refuses_it(tmp_path: Path, sdc_data: Path, capsys,
                                                                     role: str) -> None:
    """NFC and NFD "Zürich" were two categories (or two public cells): refused in design's words."""
    data = with_places(tmp_path, sdc_data, "town")
    capsys.readouterr()
    assert main(["design", str(data), "--vars", "town", "--epsilon", "1", "--out", str(tmp_path / "m.json")]) == 2
    words = capsys.readouterr().err.strip().split("error: ", 1)[1]
    assert "NFC and NFD" in words and "'Zürich' (row 1)" in words
    args = {"--vars": "town,relat", "--public": "sex"} if role == "--vars" else {"--vars": "relat", "--public": "town"}
    assert_refused(tmp_path, ["synthesize", data, *[x for kv in args.items() for x in kv], "--epsilon", "1",
                              "--out", tmp_path / "s.csv"], words[words.index("column"):], capsys)


def with_codes(folder: Path, sdc_data: Path) -> tuple[Path, pd.DataFrame]:
    """The small file with relat coded -9 (refused) in every seventh record, and the file as text."""
    data = small(folder, sdc_data)
    frame = pd.read_csv(data, dtype=str)
    frame.loc[frame.index[::7], "relat"] = "-9"
    frame.to_csv(data, index=False)
    return data, frame


def key_file(folder: Path, seed: int) -> Path:
    """A key file of the bytes ``seed`` to ``seed + 31``."""
    path = folder / f"k{seed}.key"
    path.write_text(bytes(range(seed, seed + 32)).hex() + "\n")
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("min_count", [1, 2])
def test_a_missing_code_stays_as_written_and_the_ledger_names_it(tmp_path: Path, sdc_data: Path,
                                                                 min_count: int) -> None:
    """``--na-values -9`` with declared categories (it was refused as "the value nan" unless null was declared):
    a -9 stays -9 in the file, no other value becomes missing, whatever the key and with draws shared; the
    ledger names which values of relat are missing (released exactly); every other column is written back
    as its text was read."""
    data, frame = with_codes(tmp_path, sdc_data)
    (tmp_path / "cats.json").write_text('{"relat": ["1", "2", "3", "4", "5", "6", "7"]}')
    out = tmp_path / "s.csv"
    for seed in range(5):
        assert main(["synthesize", str(data), "--vars", "relat,hhcivil", "--public", "sex,age", "--epsilon", "1",
                     "--out", str(out), "--categories", str(tmp_path / "cats.json"), "--na-values", "-9",
                     "--min-count", str(min_count), "--forbid", str(tmp_path / "rules.csv"), "--quiet",
                     "--key-file", str(key_file(tmp_path, seed)), "--force"]) == 0
        released = pd.read_csv(out, dtype=str, keep_default_na=False)
        assert ((released["relat"] == "-9") == (frame["relat"] == "-9")).all(), seed
        assert set(released["relat"]) <= {"1", "2", "3", "4", "5", "6", "7", "-9"}
        assert not breaking(released, tmp_path / "rules.csv").any()
        others = [c for c in frame.columns if c not in ("relat", "hhcivil")]
        assert released[others].equals(frame[others])
    manifest = json.loads((tmp_path / "s.synthesis.json").read_text())
    assert manifest["variables"]["relat"]["categories"][-1] is None
    facts = manifest["ledger"]["released_exactly_facts"]
    assert [(f["kind"], f["variables"]) for f in facts] == [("missing", ["relat"])]
    assert "which values of relat are missing" in manifest["ledger"]["statement"]


def test_spss_user_missing_codes_and_labels_are_carried(tmp_path: Path, sdc_data: Path) -> None:
    """A .sav file released as .sav keeps its user-missing declaration, its missing codes where they were and
    its value and variable labels (they were dropped); read back by pyreadstat."""
    pyreadstat = pytest.importorskip("pyreadstat")
    _, frame = with_codes(tmp_path, sdc_data)
    numbers = frame.astype(float)
    labels = {"relat": {1.0: "head", 2.0: "spouse", 3.0: "child", -9.0: "refused"}, "sex": {1.0: "male", 2.0: "female"}}
    pyreadstat.write_sav(numbers, str(tmp_path / "d.sav"), variable_value_labels=labels,
                         missing_ranges={"relat": [-9]}, column_labels={"relat": "relation to the head"})
    assert main(["synthesize", str(tmp_path / "d.sav"), "--vars", "relat,hhcivil", "--public", "sex", "--epsilon",
                 "2", "--out", str(tmp_path / "s.sav"), "--quiet"]) == 0
    back, meta = pyreadstat.read_sav(str(tmp_path / "s.sav"), user_missing=True)
    assert meta.missing_ranges == {"relat": [{"lo": -9.0, "hi": -9.0}]}
    assert meta.variable_value_labels == labels
    assert meta.column_names_to_labels["relat"] == "relation to the head"
    assert ((back["relat"] == -9) == (numbers["relat"] == -9)).all()
    assert back["sex"].equals(numbers["sex"])


def test_a_release_too_large_for_the_memory_is_refused(tmp_path: Path, sdc_data: Path, capsys, monkeypatch) -> None:
    """The memory is estimated from the records, the candidates and the categories before any work: over the
    machine's memory (here made 1 MiB), one line naming the figure and what to change."""
    data = small(tmp_path, sdc_data)
    monkeypatch.setattr(synth, "_machine_memory", lambda: 2**20)
    assert_refused(tmp_path, ["synthesize", data, "--vars", "relat,hhcivil", "--public", "sex", "--epsilon", "1",
                              "--out", tmp_path / "s.csv"], "GiB (120 records by 40 candidates of 2 variables",
                   capsys)
    assert_refused(tmp_path, ["synthesize", data, "--vars", "relat,hhcivil", "--public", "sex", "--epsilon", "1",
                              "--out", tmp_path / "s.csv"], "more than the 0.0 GiB of this machine: synthesize fewer "
                   "variables or records, or recode to fewer categories first", capsys)
