"""Generated survey files through every command: design, apply, estimate, risk, audit and swap.

Each example is drawn from the real EU-SILC file (a sample of its households, so every household is
whole) and written as an office might export it: comma or semicolon separated, UTF-8 or Latin-1, the
not-applicable economic status (``pl030`` of a child) written as an empty field, ``-9`` or ``NA``,
sex spelled in German with or without a combining accent (``männlich`` composed or decomposed, the
same in every row), with or without an edit rule (no child has an economic status, or a person of
65 or more is no pupil, rule breakers kept) and with or without a stratum (sex).  Every command reads
the file in its dialect; the release must be estimable (finite estimates, the released count of
every cell a whole number), risk-assessable and pass its audit, and the swap must keep every
area's households.  A file where one row spells a label another way (a leading space) is refused in
one line, with nothing written, by every command that reads that column as a key.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pramkit.cli import main

AGE_EDGES = [-2, 15, 24, 34, 44, 54, 64, 200]
AGE_BANDS = ["0-15", "16-24", "25-34", "35-44", "45-54", "55-64", "65+"]
SEX = {"male": "männlich", "female": "weiblich"}
MISSING = {"": (), "-9": ("-9",), "NA": ("NA",)}
RULES = {
    "none": None,
    "children": "ageg,pl030\n0-15,\n",      # no child has an economic status (missing for every child)
    "pupils": "ageg,pl030\n65+,4\n",         # no one of 65 or more is a pupil: one EU-SILC record breaks it
}

pytestmark = pytest.mark.slow


def run(args: list[Any]) -> tuple[int, str, str]:
    """``pramkit ARGS``: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def silc() -> pd.DataFrame:
    """EU-SILC as text, with the age bands beside the age."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    raw = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", dtype=str, keep_default_na=False)
    raw["ageg"] = pd.cut(pd.to_numeric(raw["age"]), AGE_EDGES, labels=AGE_BANDS).astype(str)
    return raw[["db030", "db040", "rb090", "ageg", "pl030", "rb050"]]


@st.composite
def surveys(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "seed": draw(st.integers(0, 2**32 - 1)),
        "households": draw(st.integers(150, 400)),
        "sep": draw(st.sampled_from([",", ";"])),
        "encoding": (encoding := draw(st.sampled_from(["utf-8", "latin-1"]))),
        "missing": draw(st.sampled_from(sorted(MISSING))),
        # Latin-1 has no combining accent: a Latin-1 file spells the umlaut composed
        "form": draw(st.sampled_from(["NFC", "NFD"] if encoding == "utf-8" else ["NFC"])),
        "rules": draw(st.sampled_from(sorted(RULES))),
        "strata": draw(st.booleans()),
        "weights": draw(st.booleans()),
        "misspelt": draw(st.booleans()),
    }


def write_survey(silc: pd.DataFrame, case: dict[str, Any], folder: Path) -> tuple[Path, pd.DataFrame]:
    """The sampled households written in the case's dialect; the frame as written (texts)."""
    rng = np.random.default_rng(case["seed"])
    ids = silc["db030"].unique()
    chosen = set(rng.choice(ids, size=min(case["households"], len(ids)), replace=False))
    frame = silc[silc["db030"].isin(chosen)].copy()
    frame["rb090"] = [unicodedata.normalize(case["form"], SEX[s]) for s in frame["rb090"]]
    frame["pl030"] = frame["pl030"].replace("", case["missing"])
    if case["misspelt"]:
        frame.iloc[len(frame) // 2, frame.columns.get_loc("rb090")] = " " + frame["rb090"].iloc[len(frame) // 2]
    path = folder / "survey.csv"
    frame.to_csv(path, index=False, sep=case["sep"], encoding=case["encoding"])
    return path, frame


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=surveys())
# a sample holding the record that breaks the pupils rule (kept, so released as it is)
@example(case={"seed": 2745, "households": 150, "sep": ",", "encoding": "utf-8", "missing": "", "form": "NFC",
               "rules": "pupils", "strata": False, "weights": False, "misspelt": False})
def test_generated_surveys_go_through_every_command(silc: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory,
                                                   case: dict[str, Any]) -> None:
    folder = tmp_path_factory.mktemp("survey")
    data, frame = write_survey(silc, case, folder)
    dialect = ["--sep", case["sep"], "--encoding", case["encoding"]]
    na = ["--na-values", ",".join(MISSING[case["missing"]]) or ""] if MISSING[case["missing"]] else []
    key = folder / "secret.key"
    assert main(["keygen", str(key)]) == 0
    design = ["design", data, "--vars", "ageg,pl030", "--epsilon", "4", "--out", folder / "m.json", "--quiet",
              *dialect, *na]
    if case["rules"] != "none":
        rules = folder / "rules.csv"
        rules.write_text(RULES[case["rules"]], encoding="utf-8")
        design += ["--split", "joint", "--forbid", rules, "--rule-breaking", "keep"]
    if case["strata"]:
        design += ["--strata", "rb090"]
    before = sorted(p.name for p in folder.iterdir())
    code, _, err = run(design)
    if case["misspelt"] and case["strata"]:   # the stratum column is read with the spelling rule
        assert code == 2 and len(err.strip().splitlines()) == 1 and "rb090" in err, err
        assert sorted(p.name for p in folder.iterdir()) == before
        return
    assert code == 0, err
    released = folder / "released.csv"
    code, _, err = run(["apply", data, "--manifest", folder / "m.json", "--out", released, "--key-file", key,
                        "--quiet", *dialect, *na])
    assert code == 0, err
    back = pd.read_csv(released, dtype=str, keep_default_na=False, sep=case["sep"], encoding=case["encoding"])
    assert len(back) == len(frame) and list(back.columns) == list(frame.columns)
    assert back["db030"].tolist() == frame["db030"].tolist()        # unperturbed columns as they were

    target = "ageg*pl030" if case["rules"] != "none" else "pl030"
    estimate = ["estimate", released, "--manifest", folder / "m.json", "--vars", target, "--json", *dialect, *na]
    if case["weights"]:
        estimate += ["--weights", "rb050"]
    code, out, err = run(estimate)
    assert code == 0, err
    cells = json.loads(out)["cells"]
    assert cells and all(math.isfinite(c["estimate"]) for c in cells)
    if not case["weights"]:       # whole released counts, adding up to at most the records
        assert all(float(c["released"]) == int(float(c["released"])) for c in cells)
        assert sum(int(c["released"]) for c in cells) <= len(frame)

    keys = "db040,rb090,ageg,pl030"
    # records with a missing value of a joint variable are released as they are: left out of the risk after PRAM
    joint = ["--missing", "exclude"] if case["rules"] != "none" else []
    code, out, err = run(["risk", released, "--keys", keys, "--manifest", folder / "m.json", "--sampling-fraction",
                          "0.01", *joint, *dialect, *na])
    # the one EU-SILC record that breaks the pupils rule, if the sample holds it, is released as it is
    breaker = case["rules"] == "pupils" and ((frame["ageg"] == "65+") & (frame["pl030"] == "4")).any()
    if case["misspelt"]:          # a key spelled two ways: one line naming it, as the design would
        assert code == 2 and len(err.strip().splitlines()) == 1 and "rb090" in err, err
    elif case["strata"] and case["rules"] == "none":   # two variables within one stratum: refused, not modelled
        assert code == 2 and len(err.strip().splitlines()) == 1 and "share a stratum" in err, err
    elif breaker:                 # a record released exactly: refused, named, not modelled
        assert code == 2 and len(err.strip().splitlines()) == 1 and "rule breakers the design kept" in err, err
    else:
        assert code == 0, err
    code, out, err = run(["audit", "--manifest", folder / "m.json", "--released", released, *dialect])
    assert code == 0, (out, err)

    swapped = folder / "swapped.csv"
    code, _, err = run(["swap", data, "--hid", "db030", "--geo", "db040", "--rate", "0.2", "--out", swapped,
                        "--manifest", folder / "swap.json", "--key-file", key, *dialect])
    assert code == 0, err
    after = pd.read_csv(swapped, dtype=str, keep_default_na=False, sep=case["sep"], encoding=case["encoding"])
    per_area = frame.groupby("db040")["db030"].nunique()
    assert after.groupby("db040")["db030"].nunique().equals(per_area)
