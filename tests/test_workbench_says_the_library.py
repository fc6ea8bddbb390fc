"""The workbench shows what the library says and writes what it claims (issue 61, point 4).

On sdcMicro's testdata, in a data folder of the test's own: the estimates of the Apply step are those
``pramkit estimate`` prints (a singular design's cells "not identifiable"); a session file restores no
connection and no file named by its path, and is written 0600; an export claims its folder, so that a
second export into it is refused and the first's files stay; the exported ``reproduce.sh`` refuses a
changed original (its SHA-256, computed here by hashlib) before it writes anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import select
import shutil
import socket
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pramkit.cli import main
from pramkit.errors import OutputExistsError, ParameterError
from pramkit.kernel.rng import SecretKey, write_key_file
from pramkit.release.choices import DesignChoices
from pramkit.workbench import Workbench
from pramkit.workbench import export as export_module

KEY = SecretKey(bytes(range(7, 39)), "a test key")
OTHER = SecretKey(bytes(range(40, 72)), "another test key")


@pytest.fixture
def data(sdc_data: Path, tmp_path: Path) -> Path:
    """A data folder holding a copy of sdcMicro's testdata (the tests change it)."""
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copyfile(sdc_data / "testdata.csv", folder / "testdata.csv")
    return folder


def _workbench(data: Path, work: Path) -> Workbench:
    wb = Workbench(work, data_dirs=[data])
    wb.open_file("testdata.csv")
    return wb


def _applied(wb: Workbench, key: SecretKey) -> Workbench:
    """sex by randomized response at epsilon 1, designed and applied with ``key``."""
    wb.design(["sex"], DesignChoices(method="rr", epsilon=1.0), key=key)
    wb.apply(key)
    return wb


def _env() -> dict[str, str]:
    """This Python's ``pramkit`` first on the PATH of a script."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def _printed_rows(text: str, variable: str) -> dict[str, str]:
    """The rows of the table ``pramkit estimate`` prints, by category (the first field of a row)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == [variable, "released"])
    rows = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        rows[line.split()[0]] = line
    return rows


def _estimate(release: Path, name: str, *flags: str) -> str:
    """What ``pramkit estimate --weights sampling_weight`` prints for one variable of the workbench's release."""
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["estimate", str(release / "released.csv"), "--manifest", str(release / "manifest.json"),
                     "--vars", name, "--weights", "sampling_weight", *flags]) == 0
    return out.getvalue()


def test_the_estimates_are_what_pramkit_estimate_prints(data: Path, tmp_path: Path) -> None:
    """DP-optimal at record budget 3, weighted by the risk step's weights: walls's categories 2 and 9 have
    identical rows. Each interval of the page is the one ``pramkit estimate --weights`` prints for the cell,
    a cell it flags "not identifiable" reads so (before: "-7921075718502305.00 to 7921075718502330.00"), and
    the group's total it estimates (``--json``'s groups) has its row, "{2, 9}"."""
    wb = _workbench(data, tmp_path / "work")
    wb.risk(["roof", "walls", "water", "sex"], weights="sampling_weight")
    wb.design(["roof", "walls", "water"], DesignChoices(epsilon=3.0), key=KEY)
    estimates = wb.apply(KEY).estimates
    release = wb.work / "release"
    flagged = 0
    for name, rows in estimates.groupby("variable"):
        printed = _printed_rows(_estimate(release, str(name)), str(name))
        said = json.loads(_estimate(release, str(name), "--json"))
        totals = rows[rows["category"].str.startswith("{")]          # the groups' totals, as --json gives them
        assert [(t, i) for t, i in zip(totals["category"], totals["95 % interval"])] == [
            ("{" + ", ".join(map(str, g["category"])) + "}",
             f"{100 * g['ci_low'] / said['n']:.2f} .. {100 * g['ci_high'] / said['n']:.2f}") for g in said["groups"]]
        shown = rows[~rows["category"].str.startswith("{")]
        assert sorted(printed) == sorted(shown["category"])
        for category, interval in zip(shown["category"], shown["95 % interval"]):
            row = printed[category]
            assert (interval == "not identifiable") == row.endswith("not identifiable"), (name, category, row)
            flagged += interval == "not identifiable"
            if interval != "not identifiable":
                assert f" {interval} " in f"{row} ", (name, category, row)
    assert flagged >= 2                      # the design is singular: the test looks at what it is about


def test_a_session_file_starts_no_connection(data: Path, tmp_path: Path) -> None:
    """A session file naming the Spark engine and a master listening here: restored with the engine dropped
    and said, and no connection reaches the master (before, the design connected to it)."""
    wb = _workbench(data, tmp_path / "work")
    wb.design(["sex"], DesignChoices(method="rr", epsilon=1.0), key=KEY)
    saved = wb.save_session(tmp_path / "session.json")
    with socket.create_server(("127.0.0.1", 0)) as master:
        session = json.loads(saved.read_text(encoding="utf-8"))
        spark = f"spark://127.0.0.1:{master.getsockname()[1]}"
        session["design"]["choices"].update(engine="spark", spark_master=spark)
        crafted = tmp_path / "crafted.json"
        crafted.write_text(json.dumps(session), encoding="utf-8")
        again = Workbench(tmp_path / "again", data_dirs=[data])
        said = again.restore_session(crafted)
        reached, _, _ = select.select([master], [], [], 0)
    assert reached == []                                                  # nobody connected
    assert said == (f"not restored: engine=spark, spark_master={spark} (a session file never starts a connection: "
                    "choose the engine in the design form)",)
    assert again.designed.choices.engine == "local" and again.designed.choices.method == "rr"


def test_a_session_file_reads_no_file_by_its_path(data: Path, tmp_path: Path) -> None:
    """The session file is 0600. Rules, a codebook, distances and a manifest to derive from named by paths
    outside the data folder are not read (dropped and said); the data outside it is refused, its digest right."""
    wb = _workbench(data, tmp_path / "work")
    wb.design(["sex"], DesignChoices(method="rr", epsilon=1.0), key=KEY)
    saved = wb.save_session(tmp_path / "session.json")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600                # private: it holds the designs tried
    session = json.loads(saved.read_text(encoding="utf-8"))
    outside = tmp_path / "outside"
    outside.mkdir()
    named = {"forbid": outside / "rules.csv", "categories": outside / "codebook.csv",
             "distances": outside / "distances.csv", "derive_from": outside / "manifest.json"}
    for path in named.values():
        path.write_text("sex\n1\n", encoding="utf-8")
    session["design"]["choices"].update({k: str(v) for k, v in named.items()})
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(session), encoding="utf-8")
    again = Workbench(tmp_path / "again", data_dirs=[data])
    [said] = again.restore_session(crafted)
    assert said.startswith("not restored: ") and all(f"{k}={v}" in said for k, v in named.items())
    assert all(getattr(again.designed.choices, k) is None for k in named)
    shutil.copyfile(data / "testdata.csv", outside / "testdata.csv")
    session["data"]["path"] = str(outside / "testdata.csv")
    crafted.write_text(json.dumps(session), encoding="utf-8")
    with pytest.raises(ParameterError, match="is not in the folders this app may open files from"):
        Workbench(tmp_path / "third", data_dirs=[data]).restore_session(crafted)


def test_a_second_export_into_the_folder_is_refused(data: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Another tab exports into the folder while the first export writes its reports: refused in one line,
    and the folder holds the first release (before, both succeeded and the first was replaced)."""
    first = _applied(_workbench(data, tmp_path / "a"), KEY)
    second = _applied(_workbench(data, tmp_path / "b"), OTHER)
    out = tmp_path / "out"
    refused: list[str] = []
    reports = export_module._write_reports

    def racing(*args: object) -> tuple[str, ...]:
        if not refused:  # the first export, its files assembled: the second tab exports now
            refused.append("")
            with pytest.raises(OutputExistsError) as exc:
                second.export(out, confirmed=True)
            refused[0] = str(exc.value)
        return reports(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(export_module, "_write_reports", racing)
    view = first.export(out, confirmed=True)
    monkeypatch.undo()
    assert refused == [f"another export is writing into {out}: wait for it to finish and choose another folder "
                       f"(its claim {out / '.pramkit-export'} is removed when it ends)"]
    released = (out / "public" / "released.csv").read_bytes()
    assert released == (first.work / "release" / "released.csv").read_bytes()
    assert released != (second.work / "release" / "released.csv").read_bytes()   # the keys differ
    assert sorted(p.name for p in out.iterdir()) == ["private", "public"] and view.out == out
    with pytest.raises(OutputExistsError):                                  # after it, the folder is taken
        second.export(out, confirmed=True)


def test_the_script_refuses_a_changed_original_before_writing(data: Path, tmp_path: Path) -> None:
    """The original opened by its path, then changed (a record added): reproduce.sh exits 2 with one line
    naming both SHA-256 digests and writes nothing (before, it exited 0 with another release)."""
    wb = _applied(_workbench(data, tmp_path / "work"), KEY)
    script = wb.export(tmp_path / "out", confirmed=True).out / "private" / "reproduce.sh"
    key_file = tmp_path / "secret.key"
    key_file.write_text(KEY.text())
    key_file.chmod(0o600)
    original = data / "testdata.csv"
    before = hashlib.sha256(original.read_bytes()).hexdigest()

    def run(key: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", str(script), str(key), str(tmp_path / "again")], env=_env(),
                              capture_output=True, text=True)

    wrong = run(write_key_file(tmp_path / "other.key"))  # the original as it was: its check passes, the key's not
    assert wrong.returncode == 2 and "is not the key of this release" in wrong.stderr, wrong.stderr
    lines = original.read_text().splitlines(keepends=True)
    with original.open("a") as f:
        f.write(lines[1])
    after = hashlib.sha256(original.read_bytes()).hexdigest()
    proc = run(key_file)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"reproduce.sh: {original.resolve()} is not the file this release was made from (its SHA-256 is {after}, "
        f"the release's is {before}): give the original file; nothing was written"]
    assert not (tmp_path / "again").exists()


def test_a_session_keeps_its_distance_file_as_text(tmp_path: Path) -> None:
    """A metric design over a distance file: the session file holds the file's text, and restoring it designs
    the same matrix with the original file gone (before, the session named the file by its path and read it)."""
    import itertools

    from pramkit.datasets import CENSUS_VARIABLES

    ages = CENSUS_VARIABLES["age"]
    distances = tmp_path / "age-distances.csv"
    distances.write_text("from,to,distance\n" + "".join(f"{a},{b},{abs(i - j)}\n" for (i, a), (j, b)
                                                         in itertools.product(enumerate(ages), repeat=2)))
    wb = Workbench(tmp_path / "work")
    wb.open_census(rows=2_000)
    choices = DesignChoices(method="metric", epsilon=5.0, metric_epsilon=0.5, distances=str(distances))
    shown = wb.design(["age"], choices, key=KEY)
    saved = wb.save_session(tmp_path / "session.json")
    assert json.loads(saved.read_text())["design"]["files"]["distances"]["text"] == distances.read_text()
    distances.unlink()
    again = Workbench(tmp_path / "again")
    assert again.restore_session(saved) == ()
    assert Path(again.designed.choices.distances).parent == again.work / "inputs"
    assert (again.designed.view.manifest["age"].matrix.matrix == shown.manifest["age"].matrix.matrix).all()
