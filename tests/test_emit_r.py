"""``pramkit estimate --emit-r FILE``: the R script computes the numbers ``pramkit estimate`` prints.

The script is run by Rscript (R and jsonlite, as Debian's r-base-core and r-cran-jsonlite install
them) on a release of the real EU-SILC file (missing values, whitespace and Unicode spellings of
its region labels, an ordered variable, sampling weights present but not used by the script), and
its cells are compared with ``pramkit estimate --json`` to 1e-10 (relative to the size of the value).
CI sets PRAMKIT_REQUIRE_R=1, so that a missing Rscript fails there instead of skipping.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pandas as pd
import pytest
from conftest import SDC_DATA

from pramkit import atomic
from pramkit.cli import main
from pramkit.distances import (
    graph_distances,
    great_circle_distances,
    ordinal_distances,
)
from pramkit.engine.perturb import apply_file
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix

RSCRIPT = shutil.which("Rscript")
needs_r = pytest.mark.skipif(RSCRIPT is None and not os.environ.get("PRAMKIT_REQUIRE_R"),
                             reason="Rscript is not installed (CI installs r-base-core and r-cran-jsonlite)")
FIELDS = ("released", "estimate", "se", "ci_low", "ci_high", "proportion", "proportion_se", "proportion_ci_low",
          "proportion_ci_high")
CARINTHIA = "K\u00e4rnten"  # the region's own name, so that a label is not ASCII
#: The regions' capitals (lat, lon degrees) and which regions share a border: public facts.
CAPITALS = {"Burgenland": (47.85, 16.52), CARINTHIA: (46.62, 14.31), "Lower Austria": (48.20, 15.63),
            "Salzburg": (47.80, 13.04), "Styria": (47.07, 15.44), "Tyrol": (47.27, 11.40),
            "Upper Austria": (48.31, 14.29), "Vienna": (48.21, 16.37), "Vorarlberg": (47.50, 9.75)}
BORDERS = [("Vorarlberg", "Tyrol"), ("Tyrol", "Salzburg"), ("Tyrol", CARINTHIA), ("Salzburg", "Upper Austria"),
           ("Salzburg", "Styria"), ("Salzburg", CARINTHIA), (CARINTHIA, "Styria"), ("Upper Austria", "Lower Austria"),
           ("Upper Austria", "Styria"), ("Lower Austria", "Vienna"), ("Lower Austria", "Styria"),
           ("Lower Austria", "Burgenland"), ("Styria", "Burgenland")]


@pytest.fixture(scope="module")
def release(tmp_path_factory, sdc_data_module) -> dict[str, Path]:
    """Releases of EU-SILC's region (one label not ASCII), sex, economic status (missing values) and
    household size (an order), with the matrices in every form a manifest stores (exponential ones over
    great-circle, ordinal and border-crossing distances)."""
    d = tmp_path_factory.mktemp("emit_r")
    frame = pd.read_csv(sdc_data_module / "eusilc_laeken.csv", dtype=str, keep_default_na=False)
    frame = frame[["db040", "rb090", "pl030", "hsize", "pb220a", "rb050"]].copy()
    frame["db040"] = frame["db040"].replace("Carinthia", CARINTHIA)
    frame.to_csv(d / "original.csv", index=False)
    regions = sorted(set(frame.db040))
    sizes = sorted({int(h) for h in frame.hsize})
    status = [str(i) for i in range(1, 8)]
    kept = PramMatrix.block_diagonal([PramMatrix.form8([0.7] * 6, categories=status[:6]),
                                      PramMatrix.identity([status[6]])])
    manifests = {
        "diagonal": {"db040": PramMatrix.form8([0.6 + 0.03 * i for i in range(len(regions))], categories=regions),
                     "rb090": PramMatrix([[0.9, 0.1], [0.2, 0.8]], ("female", "male"))},
        "geometric": {"pl030": PramMatrix.truncated_geometric(0.9, status),
                      "hsize": PramMatrix.truncated_geometric(1.3, sizes)},
        "blocks": {"pl030": kept, "rb090": PramMatrix([[0.85, 0.15], [0.25, 0.75]], ("female", "male"))},
        "geography": {"db040": PramMatrix.exponential(0.02, great_circle_distances(
                          regions, [CAPITALS[r] for r in regions])),
                      "hsize": PramMatrix.exponential(1.5, ordinal_distances(sizes))},
        "borders": {"db040": PramMatrix.exponential(2.0, graph_distances(regions, BORDERS))},
    }
    for name, matrices in manifests.items():
        Manifest.of(matrices).write(d / f"{name}.json")
        apply_file(d / "original.csv", d / f"{name}.json", d / f"{name}.csv", key=bytes(range(32)), quiet=True)
    return {"dir": d}


@pytest.fixture(scope="module")
def sdc_data_module() -> Path:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    return SDC_DATA


def _pramkit(args: list[str]) -> dict:
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()):
        assert main(args + ["--json"]) == 0
    return json.loads(out.getvalue())


def _key(category) -> tuple[str, ...]:
    labels = category if isinstance(category, list) else [category]
    return tuple(unicodedata.normalize("NFC", str(x)) for x in labels)


CASES = [
    ("diagonal", ["db040"], [], []),
    ("diagonal", ["db040", "rb090"], ["pb220a"], ["--variance", "pram"]),
    ("geometric", ["pl030"], ["hsize"], ["--confidence", "0.9"]),
    ("geometric", ["hsize", "rb090"], [], []),
    ("blocks", ["pl030", "rb090"], ["pb220a"], []),
    ("blocks", ["pl030"], ["db040"], ["--variance", "pram"]),
    ("geography", ["db040"], ["rb090"], []),
    ("geography", ["hsize", "db040"], [], ["--variance", "pram"]),
    ("borders", ["db040"], ["pl030"], []),
]


def test_the_script_reads_every_form_a_manifest_stores() -> None:
    """A form added to pramkit.matrix.FORMS must be added to the script too."""
    from importlib.resources import files

    from pramkit.matrix import FORMS

    template = files("pramkit.estimate").joinpath("estimate.R").read_text(encoding="utf-8")
    assert set(re.findall(r'form == "(\w+)"', template)) == set(FORMS)


@needs_r
@pytest.mark.parametrize("release_name, vars_, by, extra", CASES)
def test_r_script_gives_pramkits_numbers(release, release_name, vars_, by, extra) -> None:
    d = release["dir"]
    args = ["estimate", str(d / f"{release_name}.csv"), "--manifest", str(d / f"{release_name}.json"),
            "--vars", ",".join(vars_), *(["--by", ",".join(by)] if by else []), *extra]
    expected = {_key(c["category"]): c for c in _pramkit(args)["cells"]}
    script, table = d / "estimate.R", d / "r.csv"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(args + ["--emit-r", str(script), "--force"]) == 0
    run = subprocess.run([RSCRIPT or "Rscript", str(script), str(table)], capture_output=True, text=True,
                         env={**os.environ, "LC_ALL": "C"}, timeout=120)
    assert run.returncode == 0, run.stderr
    got = pd.read_csv(table, dtype=dict.fromkeys(vars_ + by, str), keep_default_na=False, encoding="utf-8")
    assert len(got) == len(expected)
    for _, row in got.iterrows():
        cell = expected[_key([row[a] for a in vars_ + by])]
        for field in FIELDS:
            want, have = cell[field], float(row[field])
            if math.isnan(want):
                assert math.isnan(have), field
            else:
                assert abs(have - want) <= 1e-10 * max(1.0, abs(want)), (field, want, have)


@needs_r
@pytest.mark.parametrize("spelling", [" Tyrol", "Tyrol\u00a0", unicodedata.normalize("NFD", CARINTHIA)],
                         ids=["leading space", "no-break space", "NFD"])
def test_a_value_spelled_another_way_is_refused_by_both(release, tmp_path, spelling) -> None:
    """pramkit does not guess which category a respelled value means; neither does the script."""
    frame = pd.read_csv(release["dir"] / "diagonal.csv", dtype=str, keep_default_na=False)
    row = frame.index[frame.db040 == spelling.strip()[:1] + spelling.strip()[1:]][0] if spelling.strip() == "Tyrol" \
        else frame.index[frame.db040 == CARINTHIA][0]
    frame.loc[row, "db040"] = spelling
    frame.to_csv(tmp_path / "respelled.csv", index=False)
    args = ["estimate", str(tmp_path / "respelled.csv"), "--manifest", str(release["dir"] / "diagonal.json"),
            "--vars", "db040"]
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(args) == 2
    assert "spelled another way" in err.getvalue()
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(args + ["--emit-r", str(tmp_path / "e.R")]) == 0
    run = subprocess.run([RSCRIPT or "Rscript", str(tmp_path / "e.R")], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and f"row {row + 1}:" in run.stderr and "not a category" in run.stderr


def test_the_script_names_the_settings_it_was_asked_for(release) -> None:
    d = release["dir"]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["estimate", str(d / "diagonal.csv"), "--manifest", str(d / "diagonal.json"), "--vars", "db040",
                     "--by", "rb090", "--variance", "pram", "--na-values", "NA,-9", "--emit-r",
                     str(d / "named.R")]) == 0
    text = (d / "named.R").read_text()
    assert 'vars <- c("db040")' in text and 'by <- c("rb090")' in text and 'na_strings <- c("NA", "-9")' in text
    assert 'variance <- "pram"' in text and "named.R" in out.getvalue()


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


BAD = [
    (["--emit-r", "{d}/x.R", "--estimator", "mle"], "leave out --estimator"),
    (["--emit-r", "{d}/x.R", "--method", "mle"], "leave out --method mle"),
    (["--emit-r", "{d}/x.R", "--weights", "rb050", "--replicate-weights", "rb050", "--replicate-method", "jk1"],
     "leave out --replicate-weights"),
    (["--emit-r", "{d}/x.R", "--json"], "leave out --json"),
    (["--emit-r", "{d}/x.R", "--confidence", "1.5"], "confidence must be a number strictly between 0 and 1, got 1.5"),
    (["--emit-r", "{d}/old.R"], "exists; pass --force"),
    (["--emit-r", "{d}/diagonal.json", "--force"], "would overwrite"),
    (["--emit-r", "{d}/no/such/folder/x.R"], "does not exist"),
    (["--emit-r", "{d}/x.R", "--manifest", "{d}/joint.json", "--vars", "db040|rb090"], "perturbed jointly"),
    (["--emit-r", "{d}/x.R", "--manifest", "{d}/singular.json"], "singular or badly conditioned"),
    (["--emit-r", "{d}/x.R", "--released", "{d}/released.parquet"], "reads a released CSV file"),
    (["--emit-r", "{d}/x.R", "--manifest", "{d}/missing.json"], "does not exist"),
    (["--emit-r", "{d}/x.R", "--manifest", "{d}/derived.json"], "derived from another release"),
    (["--emit-r", "{d}/x.R", "--released", "{d}/../diagonal.csv", "--manifest", "{d}/../geography.json"],
     "another manifest"),
]


@pytest.mark.parametrize("extra, message", BAD, ids=[m for _, m in BAD])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(release, capsys, extra, message) -> None:
    d = release["dir"] / "bad"
    if not d.exists():
        d.mkdir()
        (d / "old.R").write_text("# an earlier script\n")
        shutil.copy(release["dir"] / "diagonal.csv", d / "released.csv")
        shutil.copy(release["dir"] / "diagonal.json", d / "diagonal.json")
        pd.read_csv(d / "released.csv", dtype=str).to_parquet(d / "released.parquet")
        regions = Manifest.read(d / "diagonal.json")["db040"].matrix
        Manifest.of({"db040": PramMatrix([[0.5, 0.5], [0.5, 0.5]], ("female", "male"))}).write(d / "singular.json")
        joint = PramMatrix.identity([(r, s) for r in regions.categories for s in ("female", "male")])
        Manifest((PerturbedVariable("db040|rb090", joint, columns=("db040", "rb090")),)).write(d / "joint.json")
        Manifest((PerturbedVariable("db040", regions, applied_to=regions),)).write(d / "derived.json")
    args = {"--released": str(d / "released.csv"), "--manifest": str(d / "diagonal.json"), "--vars": "db040"}
    rest: list[str] = []
    it = iter(extra)
    for flag in it:
        if flag in ("--released", "--manifest", "--vars"):
            args[flag] = next(it).format(d=d)
        else:
            rest.append(flag.format(d=d))
    before = digests(d)
    code = main(["estimate", args["--released"], "--manifest", args["--manifest"], "--vars", args["--vars"], *rest])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert digests(d) == before and not (d / "x.R").exists()


def test_a_failed_write_leaves_nothing(release, capsys, monkeypatch) -> None:
    d = release["dir"]
    before = digests(d)

    def enospc(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    for point in ("_fsync", "_write_file"):
        monkeypatch.setattr(atomic, point, enospc)
        code = main(["estimate", str(d / "diagonal.csv"), "--manifest", str(d / "diagonal.json"), "--vars", "db040",
                     "--emit-r", str(d / "full.R")])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "No space left" in err, err
        assert digests(d) == before and sorted(p.name for p in d.iterdir() if p.name.startswith(".")) == []
        monkeypatch.undo()
