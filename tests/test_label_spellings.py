"""One value, one category: labels spelled two ways (surrounding whitespace, NFC and NFD, ``3``/``3.0``/``03``
in a numeric column) stop design, risk, apply and estimation alike, with one line naming both spellings and
their rows.

The rows expected are found with pandas in the file the test wrote, and the key rule is checked against an
independent oracle (``str.strip``, ``unicodedata.normalize`` and :class:`fractions.Fraction`).
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from conftest import SDC_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.cli import main
from pramkit.codebook import Codebook, categories_of, label_key, sort_labels, spelling_clash
from pramkit.counts import count_file
from pramkit.errors import DataError
from pramkit.release.pipeline import design_release
from pramkit.risk.frequencies import key_table

COLUMNS = ["db040", "hsize", "rb090", "pl030", "rb050"]
NFC = "K\u00e4rnten"
NFD = unicodedata.normalize("NFD", NFC)


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def first_row(path: Path, column: str, text: str) -> int:
    """The row (counted from 1) where ``text`` first occurs, read by pandas as text."""
    values = pd.read_csv(path, dtype=str, keep_default_na=False)[column]
    return int((values == text).to_numpy().argmax()) + 1


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """eusilc (missing values in pl030), clean and with one variant spelling injected per file; a manifest
    designed from the clean file and a release of it."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("spellings")
    data = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", usecols=COLUMNS, dtype={"pl030": "string"})
    data["db040"] = data["db040"].replace({"Carinthia": NFC})
    data.to_csv(d / "clean.csv", index=False)
    spots = {}
    for name, column, value, new in [("ws", "db040", "Tyrol", "Tyrol "), ("lead", "rb090", "male", " male"),
                                     ("nfd", "db040", NFC, NFD), ("float", "hsize", 3, "3.0"),
                                     ("padded", "hsize", 3, "03")]:
        bad = data.astype({column: object})
        rows = bad.index[bad[column] == value]
        i = rows[len(rows) // 2]
        bad.loc[i, column] = new
        bad.to_csv(d / f"{name}.csv", index=False)
        spots[name] = (column, str(value), new, int(i) + 1)
    assert main(["design", str(d / "clean.csv"), "--vars", "db040,hsize,rb090", "--method", "rr", "--epsilon", "3",
                 "--out", str(d / "m.json"), "--quiet"]) == 0
    assert main(["keygen", str(d / "key")]) == 0
    assert main(["apply", str(d / "clean.csv"), "--manifest", str(d / "m.json"), "--out", str(d / "released.csv"),
                 "--key-file", str(d / "key"), "--quiet"]) == 0
    released = pd.read_csv(d / "released.csv", dtype=str, keep_default_na=False)
    for name, (column, value, new, _) in spots.items():
        bad = released.copy()
        i = bad.index[bad[column] == value][7]
        bad.loc[i, column] = new
        bad.to_csv(d / f"released_{name}.csv", index=False)
    SPOTTED.update(spots)
    return d


SPOTS = ["ws", "lead", "nfd", "float", "padded"]
#: Per file of :func:`files`: the column, the value respelled, its new spelling, the row (from 1).
SPOTTED: dict[str, tuple[str, str, str, int]] = {}


def spot(files: Path, name: str) -> tuple[str, str, str, int]:
    return SPOTTED[name]


def run_bad(files: Path, capsys, args: list[str]) -> str:
    """Run a command that must fail: exit 2, one line, inputs unchanged, nothing written (estimate notes first
    that the released file has no receipt: that note is not the error)."""
    before = digests(files)
    code = main([str(a) for a in args])
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "no release receipt" not in line]
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0], (args, err)
    assert digests(files) == before, "an input changed or a file was written"
    return err[0]


def test_clean_file_goes_through_every_command(files, capsys) -> None:
    """The control: without a second spelling every command succeeds on the same columns."""
    for args in (["risk", files / "clean.csv", "--keys", "db040,hsize,rb090", "--weights", "rb050", "--json"],
                 ["estimate", files / "released.csv", "--manifest", files / "m.json", "--vars", "db040", "--json"]):
        assert main([str(a) for a in args]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("name", SPOTS)
def test_design_and_risk_name_both_spellings_and_rows(files, capsys, name) -> None:
    column, value, new, _ = spot(files, name)
    path = files / f"{name}.csv"
    expected = [f"{value!r} (row {first_row(path, column, value)})", f"{new!r} (row {first_row(path, column, new)})"]
    for args in (["design", path, "--vars", f"{column},pl030", "--method", "rr", "--epsilon", "3",
                  "--out", files / "out.json"],
                 ["risk", path, "--keys", f"db040,hsize,rb090", "--weights", "rb050"]):
        line = run_bad(files, capsys, args)
        assert f"column '{column}'" in line and "one value spelled two ways" in line, line
        assert all(e in line for e in expected), (line, expected)


@pytest.mark.parametrize("name", SPOTS)
def test_apply_names_the_value_its_row_and_the_category(files, capsys, name) -> None:
    column, value, new, row = spot(files, name)
    line = run_bad(files, capsys, ["apply", files / f"{name}.csv", "--manifest", files / "m.json",
                                   "--out", files / "out.csv", "--key-file", files / "key"])
    category = int(value) if column == "hsize" else value
    assert f"column '{column}', row {row}: value {new!r} is not one of its categories but the category " \
           f"{category!r} spelled another way" in line, line


@pytest.mark.parametrize("name", SPOTS)
def test_estimate_refuses_a_respelled_released_value(files, capsys, name) -> None:
    column, value, new, _ = spot(files, name)
    path = files / f"released_{name}.csv"
    line = run_bad(files, capsys, ["estimate", path, "--manifest", files / "m.json", "--vars", column])
    assert f"row {first_row(path, column, new)}: value {new!r}" in line and "spelled another way" in line, line


@pytest.mark.parametrize("name", SPOTS)
def test_in_memory_design_and_risk_refuse_alike(files, name) -> None:
    column, value, new, _ = spot(files, name)
    frame = pd.read_csv(files / f"{name}.csv", dtype=str, keep_default_na=False)
    pattern = rf"column '{column}': .*one value spelled two ways"
    with pytest.raises(DataError, match=pattern):
        design_release(frame, [column], method="rr", epsilon=3.0)
    with pytest.raises(DataError, match=pattern):
        key_table(frame, [column, "rb090" if column != "rb090" else "db040"])
    with pytest.raises(DataError, match=pattern):
        count_file(files / f"{name}.csv", [column], quiet=True)
    as_category = frame.astype({column: "category"})
    with pytest.raises(DataError, match=pattern):
        categories_of(as_category[column], column=column)


def test_zero_padded_codes_are_kept_as_written_and_in_numeric_order(tmp_path, capsys) -> None:
    """A numeric column written with leading zeros is one spelling per value: designed and applied as written
    (the categories were once made the integers 1, 2, 10, which the file's '01' then did not match)."""
    rng = random.Random(4)
    codes = ["01", "02", "10", "09"]
    pd.DataFrame({"area": [rng.choice(codes) for _ in range(400)], "sex": ["m", "f"] * 200}).to_csv(
        tmp_path / "pad.csv", index=False)
    assert main(["design", str(tmp_path / "pad.csv"), "--vars", "area", "--method", "rr", "--epsilon", "2",
                 "--out", str(tmp_path / "m.json"), "--quiet"]) == 0
    assert main(["apply", str(tmp_path / "pad.csv"), "--manifest", str(tmp_path / "m.json"),
                 "--out", str(tmp_path / "out.csv"), "--quiet"]) == 0, capsys.readouterr().err
    released = pd.read_csv(tmp_path / "out.csv", dtype=str)["area"]
    assert set(released) <= set(codes) and len(released) == 400
    assert categories_of(pd.Series(codes)) == sorted(codes, key=int)


def test_declared_categories_are_taken_as_declared() -> None:
    """A codebook that lists two spellings declares two categories; a value outside them that spells one of
    them another way is still refused."""
    book = Codebook(["3", "03"], column="x")
    assert book.encode(pa.array(["03", "3"])).tolist() == [1, 0]
    with pytest.raises(DataError, match=r"value '3.0' is not one of its categories but the category '3'"):
        book.encode(pa.array(["3", "3.0"]))


# -- the key rule, against an independent oracle --------------------------------------------------------------

PAD = st.sampled_from(["", " ", "  ", "\t", "\u00a0", "\u3000", " \t"])
WORDS = st.text(alphabet=st.characters(categories=("Lu", "Ll", "Mn", "Nd", "Pd")), min_size=1, max_size=8)


def oracle_key(text: str, numeric: bool) -> object:
    text = unicodedata.normalize("NFC", text.strip())
    return Fraction(text) if numeric else text


def is_number(text: str) -> bool:
    return re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text.strip()) is not None


@st.composite
def spelled_number(draw) -> str:
    """A decimal number with arbitrary spelling: sign, leading zeros, trailing zeros, exponent, padding."""
    value = Fraction(draw(st.integers(-10**6, 10**6)), 10 ** draw(st.integers(0, 4)))
    exponent = draw(st.integers(-3, 3))
    mantissa = value / Fraction(10) ** exponent
    scale = draw(st.integers(0, 3))
    digits = mantissa * 10 ** (scale + 7)
    assert digits.denominator == 1
    whole, frac = divmod(abs(digits.numerator), 10 ** (scale + 7))
    text = f"{'0' * draw(st.integers(0, 2))}{whole}"
    if frac or draw(st.booleans()):
        text += "." + f"{frac:0{scale + 7}d}".rstrip("0") + "0" * draw(st.integers(0, 2))
    sign = "-" if value < 0 else draw(st.sampled_from(["", "+"]))
    text = sign + text + (f"e{exponent}" if exponent else draw(st.sampled_from(["", "e0", "E+0"])))
    return draw(PAD) + text + draw(PAD)


@settings(max_examples=300, deadline=None)
@given(WORDS, PAD, PAD)
def test_key_ignores_padding_and_normal_form(word, left, right) -> None:
    for form in ("NFC", "NFD"):
        assert label_key(left + unicodedata.normalize(form, word) + right) == unicodedata.normalize("NFC", word)


@settings(max_examples=300, deadline=None)
@given(spelled_number(), spelled_number())
def test_numeric_keys_are_equal_exactly_for_equal_numbers(a, b) -> None:
    assert Fraction(a.strip()) == Fraction(a.strip())  # the oracle reads every spelling drawn
    assert (label_key(a, numeric=True) == label_key(b, numeric=True)) == (Fraction(a.strip()) == Fraction(b.strip()))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(spelled_number(), WORDS.map(lambda w: unicodedata.normalize("NFD", w)), WORDS),
                min_size=1, max_size=8, unique=True))
def test_clash_found_exactly_when_two_labels_share_the_oracle_key(labels) -> None:
    numeric = all(is_number(t) for t in labels)
    keys = [oracle_key(t, numeric) for t in labels]
    clash = spelling_clash(labels)
    assert (clash is None) == (len(set(keys)) == len(keys))
    if clash is not None:
        assert clash[0] != clash[1] and oracle_key(clash[0], numeric) == oracle_key(clash[1], numeric)


@settings(max_examples=300, deadline=None)
@given(st.lists(spelled_number(), min_size=1, max_size=10))
def test_numbers_sort_by_value_whatever_their_spelling(texts) -> None:
    distinct = {Fraction(t.strip()): t for t in texts}  # one spelling per value
    ordered = sort_labels(distinct.values())
    assert [Fraction(str(v).strip()) for v in ordered] == sorted(distinct)
