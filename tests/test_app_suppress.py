"""Local suppression as a step of the app and the workbench, and the attack figures beside the guarantee.

On sdcMicro's testdata (skipped when ../shared/data/sdcmicro is absent): the workbench's suppression writes the
file ``pramkit suppress`` writes with the same settings; an export with a suppression and an attack keeps the
counts per key and the attack's figures out of ``public/``, its script makes the same release again; a failure
of the suppression's write leaves the release as it was; and in Chromium (skipped as the other browser tests
are, unless PRAMKIT_REQUIRE_BROWSER=1) the page goes data -> suppression (its live count against a count made
here with pandas) -> design -> apply -> attack and shows the combined guarantee.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from conftest import SDC_DATA

from pramkit.cli import main
from pramkit.errors import PramkitError
from pramkit.kernel.rng import SecretKey
from pramkit.workbench import DesignChoices, Workbench
from pramkit.workbench import session as session_module
from pramkit.workbench.suppression import SuppressSpec

TESTDATA = SDC_DATA / "testdata.csv"
KEYS = ["urbrur", "roof", "walls", "water", "sex"]
KEY = bytes(range(7, 39))

#: In one test process (pytest-xdist): the release of :func:`exported` serves two tests, and was made again in
#: each process that ran one of them.
pytestmark = [pytest.mark.skipif(not TESTDATA.is_file(), reason="../shared/data/sdcmicro/testdata.csv is absent"),
              pytest.mark.xdist_group("test_app_suppress")]


def below_k(frame: pd.DataFrame, keys: list[str], k: int) -> int:
    """Records whose combination of ``keys`` fewer than ``k`` records share (no key is missing in testdata)."""
    return int((frame.groupby(keys)[keys[0]].transform("size") < k).sum())


def test_the_workbench_suppresses_as_the_command_line_does(tmp_path: Path) -> None:
    """The same settings (strata, an importance order, the heuristic) give the same bytes, file and receipt."""
    wb = Workbench(tmp_path / "work", data_dirs=[SDC_DATA])
    wb.open_file("testdata.csv")
    spec = SuppressSpec(keys=("urbrur", "roof", "walls", "water"), k=3, strata=("sex",),
                        importance=("urbrur", "walls", "roof", "water"), method="heuristic")
    view = wb.suppress(spec)
    out = tmp_path / "cli" / "suppressed.csv"
    out.parent.mkdir()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["suppress", str(TESTDATA), "--keys", "urbrur,roof,walls,water", "--k", "3", "--strata", "sex",
                     "--importance", "urbrur,walls,roof,water", "--method", "heuristic", "--out", str(out), "--quiet"])
    assert code == 0
    assert wb.source is not None and wb.source.path.read_bytes() == out.read_bytes()
    assert wb.suppression is not None
    assert wb.suppression.receipt.read_bytes() == Path(f"{out}.suppression.json").read_bytes()
    released = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert view.total == int((released[list(spec.keys)] == "").to_numpy().sum())  # the counts are the file's
    original = pd.read_csv(TESTDATA)
    assert view.before.violating == int((original.groupby(["sex", *spec.keys])["sex"].transform("size") < 3).sum())
    assert view.after.violating == 0


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workbench, Path, object]]:
    """testdata suppressed (5 keys, k = 2), roof and walls perturbed, applied, attacked and exported."""
    folder = tmp_path_factory.mktemp("exported")
    wb = Workbench(folder / "work", data_dirs=[SDC_DATA])
    wb.open_file("testdata.csv")
    wb.suppress(SuppressSpec(keys=tuple(KEYS), k=2))
    wb.risk(["urbrur", "roof", "walls"], sampling_fraction=0.1)
    key = SecretKey(KEY, "the test's key")
    wb.design(["roof", "walls"], DesignChoices(method="rr", epsilon=2.0), key=key)
    wb.apply(key)
    attacked = wb.attack(["urbrur", "roof"])
    wb.export(folder / "out", confirmed=True)
    yield wb, folder, attacked


def test_nothing_private_lands_in_public(exported: tuple[Workbench, Path, object]) -> None:
    """public/ holds the released file, its receipt, the manifest (the suppression's settings only) and the public
    report: no count per key, no attack figure, no suppressed file or its receipt."""
    wb, folder, attacked = exported
    public, private = folder / "out" / "public", folder / "out" / "private"
    assert sorted(p.name for p in public.iterdir()) == ["manifest.json", "released.csv", "released.csv.receipt.json",
                                                        "report.html"]
    manifest = json.loads((public / "manifest.json").read_text())
    assert manifest["input"]["suppression"] == {"keys": KEYS, "k": 2, "missing": "own", "strata": []}
    texts = {p.name: p.read_text(encoding="utf-8") for p in public.iterdir() if p.suffix != ".csv"}
    assert wb.suppression is not None
    counts = dict(zip(wb.suppression.view.table["key"], wb.suppression.view.table["values suppressed"]))
    assert sum(counts.values()) > 0
    for name, text in texts.items():
        for key, n in counts.items():
            assert f"{key}: {n} value" not in text and f'"{key}": {n}' not in text, (name, key)
        assert "values suppressed" not in text and "suppressed.csv" not in text, name
        assert "An attacker who knows" not in text and "closest released record" not in text, name
        for sentence in attacked.sentences:  # type: ignore[attr-defined]
            assert sentence not in text, name
    # where pramkit suppress writes them in the script: the suppressed file and its receipt, private
    assert (private / "suppressed.csv").is_file() and (private / "suppressed.csv.suppression.json").is_file()
    summary = json.loads((private / "summary.json").read_text())
    assert summary["suppression"]["suppressed"] == counts


def test_the_script_suppresses_and_makes_the_release_again(exported: tuple[Workbench, Path, object],
                                                            tmp_path: Path) -> None:
    """reproduce.sh runs pramkit suppress before the design: the same suppressed file, receipt and release."""
    _, folder, _ = exported
    out, private = folder / "out", folder / "out" / "private"
    script = (private / "reproduce.sh").read_text()
    assert "pramkit suppress " in script and "--suppressed-by" in script
    assert script.index("pramkit suppress ") < script.index("pramkit design ")
    key = tmp_path / "release.key"
    key.write_bytes(KEY)
    key.chmod(0o600)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if shutil.which("pramkit", path=env["PATH"]) is None:
        pytest.skip("the pramkit command is not on the PATH")
    done = subprocess.run(["sh", str(private / "reproduce.sh"), str(key), str(tmp_path / "again")],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    again = tmp_path / "again"
    for name in ("private/suppressed.csv", "private/suppressed.csv.suppression.json", "public/released.csv"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name


def test_a_failed_suppression_leaves_the_release_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure once the suppressed file is written (reading it back): no file of it is left, the design shown
    and the file read are as they were, and nothing is to undo."""
    wb = Workbench(tmp_path / "work", data_dirs=[SDC_DATA])
    source = wb.open_file("testdata.csv")
    designed = wb.design(["roof"], DesignChoices(method="rr", epsilon=1.0))

    def full(path: Path, **_: object) -> object:
        assert path.is_file() and Path(f"{path}.suppression.json").is_file()  # written, then the failure
        raise PramkitError("no space left on the device")

    monkeypatch.setattr(session_module, "describe_file", full)
    with pytest.raises(PramkitError, match="no space left"):
        wb.suppress(SuppressSpec(keys=("roof", "walls"), k=2, method="heuristic"))
    assert [p for p in (wb.work / "suppressed").rglob("*") if p.is_file()] == []
    assert wb.source is source and wb.suppression is None
    assert wb.designed is not None and wb.designed.view is designed
    wb.undo()  # the design: the failed suppression is not a change
    assert wb.designed is None


def test_a_session_keeps_the_suppression_and_undo_takes_it_back(tmp_path: Path) -> None:
    """A session file saves the suppression's settings (never its counts); restored, the file is suppressed again
    and the design states it; an undo takes the suppression back to the file as opened."""
    wb = Workbench(tmp_path / "a", data_dirs=[SDC_DATA])
    wb.open_file("testdata.csv")
    wb.suppress(SuppressSpec(keys=("urbrur", "roof", "walls"), k=2, method="heuristic"))
    wb.design(["roof"], DesignChoices(method="rr", epsilon=1.0))
    saved = json.loads(Path(wb.save_session(tmp_path / "session.json")).read_text())
    assert saved["suppress"]["keys"] == ["urbrur", "roof", "walls"] and saved["suppress"]["k"] == 2
    assert "suppressed" not in json.dumps(saved) and "suppressed_by" not in saved["design"]["choices"]
    again = Workbench(tmp_path / "b", data_dirs=[SDC_DATA])
    again.restore_session(tmp_path / "session.json")
    assert again.is_suppressed and again.designed is not None
    assert again.designed.view.manifest.input["suppression"]["keys"] == ["urbrur", "roof", "walls"]
    wb.undo()
    wb.undo()
    assert not wb.is_suppressed and wb.source is wb.base


# ------------------------------------------------------------------ the page, in Chromium

TOKEN = "suppress-test-token"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import _app_support
    import _browser  # noqa: F401  (skips without Playwright, Chromium or Shiny, unless PRAMKIT_REQUIRE_BROWSER=1)

    with _app_support.running_app(tmp_path_factory.mktemp("app"), TOKEN, data_dirs=[SDC_DATA]) as url:
        yield url


def test_the_page_suppresses_then_designs_under_one_guarantee(app: str, tmp_path: Path) -> None:
    """data -> suppression (the live count as k changes, against pandas; run: none below k after) -> design ->
    apply -> attack: the combined guarantee sentence and the attack's sentences, nothing private in public/."""
    from _browser import WAIT, choose, chromium, expect, no_trace, open_app, shot, tab  # skips without a browser

    from pramkit.app.ui import SUPPRESS_TAB

    original = pd.read_csv(TESTDATA)
    with chromium() as browser:
        page = open_app(browser, app, TOKEN)
        page.fill("#data_path", "testdata.csv")
        page.click("#open_path")
        expect(page.locator("#data_summary")).to_contain_text("4,580 rows", timeout=WAIT)
        tab(page, SUPPRESS_TAB)
        choose(page, "suppress_keys", KEYS)
        live = page.locator("#suppress_live")
        page.fill("#suppress_k", "3")
        expect(live).to_contain_text(f"{below_k(original, KEYS, 3):,} of 4,580 records", timeout=WAIT)
        page.fill("#suppress_k", "2")                                      # live: before anything is run
        expect(live).to_contain_text(f"{below_k(original, KEYS, 2):,} of 4,580 records", timeout=WAIT)
        expect(live).to_contain_text("fewer than 2 records")
        shot(page, "suppress-live")
        page.click("#run_suppress")
        result = page.locator("#suppress_result")
        expect(result).to_contain_text("After: 0 of 4,580 records", timeout=WAIT)
        expect(page.locator("#suppress_table table")).to_contain_text("water")
        shot(page, "suppress-done")
        tab(page, "3 Design")
        choose(page, "design_vars", ["roof", "walls"])
        page.select_option("#method", "rr")
        page.fill("#epsilon", "2")
        page.click("#run_design")
        guarantee = page.locator("#guarantee")
        expect(guarantee).to_contain_text("chosen by local suppression from the whole file", timeout=WAIT)
        expect(guarantee).to_contain_text("The epsilon is of the records after suppression.")
        expect(guarantee).to_contain_text("Every combination of urbrur, water and sex, released as they are, "
                                          "appears at least 2 times in the released file")
        tab(page, "4 Apply")
        page.click("#new_key")
        page.click("#run_apply")
        expect(page.locator("#changed table")).to_contain_text("roof", timeout=WAIT)
        expect(page.locator("#attack_known option:checked")).to_have_count(2, timeout=WAIT)  # the first two keys
        page.click("#run_attack")
        figures = page.locator("#attack_figures")
        expect(figures).to_contain_text("An attacker who knows urbrur and roof guesses", timeout=WAIT)
        expect(figures).to_contain_text("The epsilon is of the records after suppression.")  # beside the guarantee
        shot(page, "suppress-attack", full_page=True)
        tab(page, "5 Export")
        out = tmp_path / "release"
        page.fill("#out_folder", str(out))
        page.check("#confirm")
        page.click("#run_export")
        expect(page.locator("#export_files")).to_contain_text("private/: never publish", timeout=WAIT)
        no_trace(page)
        page.context.close()
    public = "".join(p.read_text(encoding="utf-8") for p in (out / "public").iterdir() if p.suffix != ".csv")
    assert "An attacker who knows" not in public and "values suppressed" not in public
    assert (out / "private" / "suppressed.csv.suppression.json").is_file()
