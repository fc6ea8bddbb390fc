"""``pramkit estimate --emit r|spss|python``: each script, run by its own interpreter, computes the numbers
``pramkit estimate --json`` prints.

The scripts are run by Rscript (with jsonlite, and survey for weighted files: Debian's r-cran-survey),
GNU PSPP (Debian's pspp) and this Python, on releases of the real EU-SILC file: missing values in the
economic status, a region label that is not ASCII, the household as primary sampling unit within the
region as stratum, the personal sampling weights, and a stratum of one household (a lonely PSU).
Their cells are compared with ``pramkit estimate --json`` to 1e-10 relative to the size of the value.
CI sets PRAMKIT_REQUIRE_R=1 and PRAMKIT_REQUIRE_PSPP=1, so that a missing interpreter fails there.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pandas as pd
import pytest
from conftest import SDC_DATA

from pramkit.cli import main
from pramkit.engine.perturb import apply_file
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix

RSCRIPT = shutil.which("Rscript")
PSPP = shutil.which("pspp")
REQUIRE_R = bool(os.environ.get("PRAMKIT_REQUIRE_R"))
REQUIRE_PSPP = bool(os.environ.get("PRAMKIT_REQUIRE_PSPP"))
FIELDS = ("released", "estimate", "se", "ci_low", "ci_high", "proportion", "proportion_se", "proportion_ci_low",
          "proportion_ci_high")
CARINTHIA = "K\u00e4rnten"


@functools.cache  # R's start and the loading of survey take about 2.5 s: asked once per test process
def _r_has_survey() -> bool:
    if RSCRIPT is None:
        return False
    run = subprocess.run([RSCRIPT, "-e", "library(jsonlite); library(survey)"], capture_output=True, timeout=120)
    return run.returncode == 0


def interpreter(language: str, weighted: bool) -> list[str]:
    """The command that runs a script, or a skip (a failure when CI requires the interpreter)."""
    if language == "python":
        return [sys.executable]
    if language == "r":
        if (RSCRIPT is None or (weighted and not _r_has_survey())) and not REQUIRE_R:
            pytest.skip("Rscript (or its package survey) is not installed (CI installs r-base-core r-cran-survey)")
        return [RSCRIPT or "Rscript"]
    if PSPP is None and not REQUIRE_PSPP:
        pytest.skip("GNU PSPP is not installed (CI installs Debian's pspp)")
    return [PSPP or "pspp"]


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """Releases of EU-SILC's region (one label not ASCII), sex, economic status (missing values) and
    household size, with its weights, regions as strata, households as PSUs and a lone household stratum."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("emit_scripts")
    frame = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", dtype=str, keep_default_na=False)
    frame = frame[["db040", "rb090", "pl030", "hsize", "db030", "rb050"]].copy()
    frame["db040"] = frame["db040"].replace("Carinthia", CARINTHIA)
    frame["stratum"] = frame["db040"].where(frame["db030"] != frame["db030"].iloc[0], "lone household")
    frame.to_csv(d / "original.csv", index=False)
    regions = sorted(set(frame.db040))
    status = [str(i) for i in range(1, 8)]
    manifests = {
        "diagonal": {"db040": PramMatrix.form8([0.6 + 0.03 * i for i in range(len(regions))], categories=regions),
                     "rb090": PramMatrix([[0.9, 0.1], [0.2, 0.8]], ("female", "male"))},
        "geometric": {"pl030": PramMatrix.truncated_geometric(0.9, status),
                      "hsize": PramMatrix.truncated_geometric(1.3, sorted({int(h) for h in frame.hsize}))},
    }
    for name, matrices in manifests.items():
        Manifest.of(matrices).write(d / f"{name}.json")
        apply_file(d / "original.csv", d / f"{name}.json", d / f"{name}.csv", key=bytes(range(32)), quiet=True)
    return d


def _pramkit(args: list[str]) -> dict:
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()):
        assert main([*args, "--json"]) == 0
    return json.loads(out.getvalue())


def _key(category) -> tuple[str, ...]:
    labels = category if isinstance(category, list) else [category]
    return tuple(unicodedata.normalize("NFC", str(x)) for x in labels)


SURVEY = ["--weights", "rb050", "--strata", "db040", "--psu", "db030"]
CASES = [
    ("diagonal", ["db040"], [], []),
    ("diagonal", ["db040", "rb090"], [], ["--variance", "pram"]),
    ("geometric", ["pl030"], ["rb090"], ["--confidence", "0.9"]),
    ("geometric", ["pl030"], ["rb090"], SURVEY),
    ("geometric", ["hsize", "pl030"], [], ["--weights", "rb050"]),
    ("diagonal", ["rb090"], ["db040"], ["--weights", "rb050", "--strata", "db040"]),
    ("diagonal", ["db040"], ["rb090"], ["--weights", "rb050", "--psu", "db030"]),
    ("geometric", ["pl030"], [], ["--weights", "rb050", "--strata", "stratum", "--psu", "db030",
                                  "--single-psu", "certainty"]),
    ("geometric", ["pl030"], [], ["--weights", "rb050", "--strata", "stratum", "--psu", "db030",
                                  "--single-psu", "center"]),
]


@pytest.mark.parametrize("language", ["python", "r", "spss"])
@pytest.mark.parametrize("release_name, vars_, by, extra", CASES)
def test_script_gives_pramkits_numbers(release, tmp_path, language, release_name, vars_, by, extra) -> None:
    command = interpreter(language, "--weights" in extra)
    args = ["estimate", str(release / f"{release_name}.csv"), "--manifest", str(release / f"{release_name}.json"),
            "--vars", ",".join(vars_), *(["--by", ",".join(by)] if by else []), *extra]
    expected = {_key(c["category"]): c for c in _pramkit(args)["cells"]}
    script, table = tmp_path / f"estimate.{language}", tmp_path / "out.csv"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([*args, "--emit", language, "--emit-out", str(script)]) == 0
    if language == "spss":
        table = Path(f"{script}.csv")
    run = subprocess.run([*command, str(script), *([str(table)] if language != "spss" else [])],
                         capture_output=True, text=True, env={**os.environ, "LC_ALL": "C.UTF-8"}, timeout=300,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr + run.stdout
    got = pd.read_csv(table, dtype=str, keep_default_na=False, encoding="utf-8")
    label_columns = list(got.columns[: len(vars_) + len(by)])
    assert len(got) == len(expected)
    for _, row in got.iterrows():
        cell = expected[_key([row[a].strip() if language == "spss" else row[a] for a in label_columns])]
        for field in FIELDS:
            want, have = cell[field], float(row[field]) if row[field] not in ("", ".") else math.nan
            if math.isnan(want):
                assert math.isnan(have), field
            else:
                assert abs(have - want) <= 1e-10 * max(1.0, abs(want)), (language, field, want, have)


@pytest.mark.parametrize("language", ["python", "r", "spss"])
def test_a_lonely_psu_is_refused_by_default(release, tmp_path, language) -> None:
    """pramkit refuses a stratum with one PSU unless told how to treat it; so does every script."""
    command = interpreter(language, True)
    args = ["estimate", str(release / "geometric.csv"), "--manifest", str(release / "geometric.json"),
            "--vars", "pl030", "--weights", "rb050", "--strata", "stratum", "--psu", "db030"]
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(args) == 2
    assert "single PSU" in err.getvalue()
    script = tmp_path / "s"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*args, "--emit", language, "--emit-out", str(script)]) == 0
    run = subprocess.run([*command, str(script), *([str(tmp_path / "o.csv")] if language != "spss" else [])],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    text = (run.stderr + run.stdout).lower()
    assert "single psu" in text or "only one psu" in text or "stratum" in text, text
    assert not (tmp_path / "o.csv").exists() and not Path(f"{script}.csv").exists()


def test_the_python_script_imports_no_pramkit(release, tmp_path) -> None:
    args = ["estimate", str(release / "diagonal.csv"), "--manifest", str(release / "diagonal.json"), "--vars", "db040",
            "--emit", "python", "--emit-out", str(tmp_path / "e.py")]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(args) == 0
    text = (tmp_path / "e.py").read_text()
    assert "pramkit" not in "".join(line for line in text.splitlines() if line.startswith(("import", "from")))
    run = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.modules['pramkit'] = None; "
                          f"sys.argv = ['e.py']; exec(open({str(tmp_path / 'e.py')!r}).read())"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


BAD = [
    (["--emit", "python"], "go together"),
    (["--emit-out", "{d}/x.py"], "go together"),
    (["--emit", "stata", "--emit-out", "{d}/x"], "invalid choice"),
    (["--emit", "python", "--emit-out", "{d}/x.py", "--emit-r", "{d}/x.R"], "one or the other"),
    (["--emit", "spss", "--emit-out", "{d}/x.sps", "--estimator", "mle"], "leave out --estimator"),
    (["--emit", "python", "--emit-out", "{d}/x.py", "--json"], "leave out --json"),
    (["--emit", "r", "--emit-out", "{d}/x.R", "--weights", "rb050", "--fpc", "rb050"], "finite-population"),
    (["--emit", "r", "--emit-out", "{d}/x.R", "--weights", "rb050", "--replicate-weights", "rb050",
      "--replicate-method", "jk1"], "leave out --replicate-weights"),
    (["--emit", "python", "--emit-out", "{d}/x.py", "--weights", "rb050", "--variance", "pram"], "--variance"),
    (["--emit", "spss", "--emit-out", "{d}/x.sps", "--strata", "db040"], "needs --weights"),
    (["--emit", "spss", "--emit-out", "{d}/x.sps", "--weights", "nosuch"], "not in"),
    (["--emit", "python", "--emit-out", "{d}/old.py"], "exists; pass --force"),
    (["--emit", "python", "--emit-out", "{d}/diagonal.json", "--force"], "would overwrite"),
    (["--emit", "spss", "--emit-out", "{d}/no/such/folder/x.sps"], "does not exist"),
]


@pytest.mark.parametrize("extra, message", BAD, ids=[m for _, m in BAD])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(release, capsys, extra, message) -> None:
    d = release / "bad"
    if not d.exists():
        d.mkdir()
        (d / "old.py").write_text("# an earlier script\n")
        shutil.copy(release / "diagonal.csv", d / "released.csv")
        shutil.copy(release / "diagonal.json", d / "diagonal.json")
    before = digests(d)
    args = ["estimate", str(d / "released.csv"), "--manifest", str(d / "diagonal.json"), "--vars", "db040",
            *[x.format(d=d) for x in extra]]
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own refusal (an unknown choice)
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = [line for line in err.strip().splitlines() if not line.startswith("usage:") and line.startswith(" ") is False]
    assert message in err and len(lines) == 1, err
    assert digests(d) == before and not any(p.name.startswith("x") for p in d.iterdir())


def test_a_failed_write_leaves_nothing(release, capsys, monkeypatch) -> None:
    import errno

    from pramkit import atomic

    d = release
    before = digests(d)

    def enospc(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "_write_file", enospc)
    code = main(["estimate", str(d / "diagonal.csv"), "--manifest", str(d / "diagonal.json"), "--vars", "db040",
                 "--emit", "spss", "--emit-out", str(d / "full.sps")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "No space left" in err, err
    assert digests(d) == before and not any(p.name.startswith(".") for p in d.iterdir())
