"""The workbench in a real browser (headless Chromium driven by Playwright): a whole release on the
census, and bad input answered by a message in the page, never a traceback, with nothing exported.

Skipped when Playwright or Chromium is absent, unless PRAMKIT_REQUIRE_BROWSER=1 (CI), which makes
that a failure.  Screenshots of each step go to tests/artifacts/app/ and, with
PRAMKIT_DOC_SCREENSHOTS=1, to docs/app/.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import _app_support
import pytest
from _browser import (  # skips this module when Playwright or Chromium is absent (unless required)
    WAIT,
    Browser,
    Page,
    choose,
    expect,
    no_trace,
    open_app,
    open_census,
    shot,
    step_error,
    tab,
    upload,
)
from _manifests import comparable

from pramkit.cli import main
from pramkit.kernel.rng import SecretKey, write_key_file

#: One app and one Chromium serve this module's tests (its fixtures): starting them is a good part of the
#: tests' time, paid once in one test process rather than in each that runs some of them.
pytestmark = pytest.mark.xdist_group("test_app_browser")
TOKEN = "browser-test-token"
RULES = 'age,marital_status\n0-9,"married, spouse present|married, spouse absent|separated|divorced|widowed"\n'


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _app_support.running_app(tmp_path_factory.mktemp("work"), TOKEN) as url:
        yield url


@pytest.fixture
def page(chromium: Browser, base: str) -> Iterator[Page]:
    """A new browser session on the app, opened with its token."""
    pg = open_app(chromium, base, TOKEN, accept_downloads=True)
    yield pg
    pg.context.close()


def design(page: Page, rules: Path, epsilon: str = "3") -> None:
    tab(page, "3 Design")
    choose(page, "design_vars", ["marital_status"])
    page.select_option("#method", "dp")
    page.fill("#epsilon", epsilon)
    choose(page, "strata", ["age"])
    upload(page, "forbid", rules)
    page.click("#run_design")


def test_the_whole_release_on_the_census(page: Page, tmp_path: Path) -> None:
    open_census(page)
    expect(page.locator("#variables")).to_contain_text("marital_status")
    expect(page.locator("#preview table tbody tr")).to_have_count(20)
    shot(page, "01-data")

    tab(page, "2 Risk")
    choose(page, "risk_keys", ["age", "sex", "marital_status"])
    page.fill("#sampling_fraction", "0.05")
    page.click("#run_risk")
    expect(page.locator("#risk_table table")).to_be_visible(timeout=WAIT)
    shot(page, "02-risk")

    tab(page, "4 Apply")  # the key first: the design's noise is drawn from it, as `pramkit design --key-file`
    key_file = write_key_file(tmp_path / "secret.key")
    upload(page, "key_upload", key_file)
    expect(page.locator("#key_status")).to_contain_text(SecretKey.from_file(key_file).fingerprint)

    rules = tmp_path / "rules.csv"
    rules.write_text(RULES)
    design(page, rules)
    expect(page.locator("#guarantee")).to_contain_text("Guarantee", timeout=WAIT)
    expect(page.locator("#ledger table")).to_contain_text("marital_status")
    shot(page, "03-design")

    tab(page, "4 Apply")
    page.click("#run_apply")
    expect(page.locator("#changed table")).to_contain_text("marital_status", timeout=WAIT)
    expect(page.locator("#estimates table")).to_be_attached(timeout=WAIT)
    assert SecretKey.from_file(key_file).material.hex() not in page.content()
    shot(page, "04-apply")

    tab(page, "5 Export")
    out = tmp_path / "release"
    page.fill("#out_folder", str(out))
    expect(page.locator("#uncovered")).not_to_be_empty(timeout=WAIT)
    if page.locator("#confirm").count():
        page.check("#confirm")
    page.click("#run_export")
    expect(page.locator("#export_files")).to_contain_text("private/: never publish", timeout=WAIT)
    expect(page.locator("#script pre")).to_be_visible()
    shot(page, "05-export")
    for name in ("public/released.csv", "public/manifest.json", "private/reproduce.sh"):
        assert (out / name).is_file(), name
    no_trace(page)
    same_as_the_command_line(out, key_file, tmp_path)



def same_as_the_command_line(out: Path, key_file: Path, tmp_path: Path) -> None:
    """The page's export equals what the command line, typed by hand, writes for the same parameters
    and key; the script saved in private/ makes the same release again."""
    cli = tmp_path / "cli"
    (cli / "public").mkdir(parents=True)
    rules = tmp_path / "elsewhere" / "rules.csv"          # the same rules, from another folder
    rules.parent.mkdir()
    rules.write_text(RULES)
    data = out / "private" / "census.csv"
    assert main(["design", str(data), "--vars", "marital_status", "--epsilon", "3", "--strata", "age",
                 "--forbid", str(rules), "--categories", str(out / "private" / "inputs" / "codebook.csv"),
                 "--key-file", str(key_file), "--out", str(cli / "public" / "manifest.json"), "--quiet"]) == 0
    assert main(["apply", str(data), "--manifest", str(cli / "public" / "manifest.json"), "--key-file",
                 str(key_file), "--out", str(cli / "public" / "released.csv"), "--quiet"]) == 0
    assert (cli / "public" / "released.csv").read_bytes() == (out / "public" / "released.csv").read_bytes()
    assert comparable(cli / "public" / "manifest.json") == comparable(out / "public" / "manifest.json")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    again = tmp_path / "again"
    proc = subprocess.run(["sh", str(out / "private" / "reproduce.sh"), str(key_file), str(again)], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (again / "public" / "released.csv").read_bytes() == (out / "public" / "released.csv").read_bytes()
    assert comparable(again / "public" / "manifest.json") == comparable(out / "public" / "manifest.json")
    wrong = write_key_file(tmp_path / "wrong.key")                 # another key: one line, exit 2, nothing written
    proc = subprocess.run(["sh", str(out / "private" / "reproduce.sh"), str(wrong), str(tmp_path / "other")], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "is not the key of this release" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "other").exists()


def test_a_file_on_this_computer_with_missing_values_and_unicode_labels(page: Page, tmp_path: Path) -> None:
    """Opened by its path (read where it is): the variables table counts missing values and markers."""
    data = tmp_path / "survey.csv"
    rows = ["région,âge,poids"] + [f"{r},{a},1.5" for r, a in
                                   [("Île-de-France", "15-24"), ("Zürich", ""), ("Île-de-France", "NA"),
                                    ("Nord", "-9"), ("Nord", "25-34")] * 40]
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    page.fill("#na_values", "NA,-9")
    page.fill("#data_path", str(data))
    page.click("#open_path")
    expect(page.locator("#data_summary")).to_contain_text("200 rows", timeout=WAIT)
    row = page.locator("#variables table tbody tr", has_text="âge")
    expect(row).to_contain_text("120")                     # 40 empty + 40 NA + 40 -9 missing
    expect(page.locator("#preview")).to_contain_text("Île-de-France")
    page.fill("#data_path", str(tmp_path / "absent.csv"))
    page.click("#open_path")
    assert "absent.csv" in step_error(page, "data")
    no_trace(page)


def test_a_generated_key_is_saved_for_its_owner_only_never_shown(page: Page, tmp_path: Path) -> None:
    """The app writes the key file itself (0600, in a new folder 0700): a browser's download follows the umask."""
    tab(page, "4 Apply")
    page.click("#new_key")
    expect(page.locator("#key_status")).to_contain_text("Not saved yet")
    target = tmp_path / "keys" / "release.key"
    page.fill("#key_path", str(target))
    page.click("#save_key")
    expect(page.locator("#key_status")).to_contain_text(f"Saved in {target}", timeout=WAIT)
    text = target.read_text()
    assert re.fullmatch(r"[0-9a-f]{64}\n", text)
    assert oct(target.stat().st_mode & 0o777) == "0o600" and oct(target.parent.stat().st_mode & 0o777) == "0o700"
    assert text.strip() not in page.content()
    expect(page.locator("#key_status")).to_contain_text(SecretKey.from_file(target).fingerprint)
    page.click("#save_key")                                    # never over an existing file
    assert "never overwritten" in step_error(page, "apply") and target.read_text() == text
    no_trace(page)


def test_text_in_the_budget_field(page: Page, tmp_path: Path) -> None:
    open_census(page, 5_000)
    rules = tmp_path / "rules.csv"
    rules.write_text(RULES)
    design(page, rules, epsilon="three")
    assert "the record budget must be a number" in step_error(page, "design")
    expect(page.locator("#ledger table")).to_have_count(0)
    no_trace(page)


def test_rules_naming_an_unknown_category(page: Page, tmp_path: Path) -> None:
    open_census(page, 5_000)
    rules = tmp_path / "rules.csv"
    rules.write_text("age,marital_status\n0-9,engaged\n")
    design(page, rules)
    assert "engaged" in step_error(page, "design")
    _export_refused(page, tmp_path / "release")


def _export_refused(page: Page, out: Path) -> None:
    """Export asked for without a release: a message, nothing written."""
    tab(page, "5 Export")
    page.fill("#out_folder", str(out))
    page.click("#run_export")
    assert step_error(page, "export")
    assert not out.exists()
    no_trace(page)


@pytest.mark.parametrize("field, step", [("upload", "data"), ("key_upload", "apply")])
def test_an_empty_upload(page: Page, tmp_path: Path, field: str, step: str) -> None:
    empty = tmp_path / "empty.csv"
    empty.touch()
    if step != "data":
        tab(page, "4 Apply")
    upload(page, field, empty)
    assert "empty (0 bytes)" in step_error(page, step)
    _export_refused(page, tmp_path / "release")


def test_a_key_file_that_is_not_a_key(page: Page, tmp_path: Path) -> None:
    bad = tmp_path / "notakey.txt"
    bad.write_text("hello\n")
    tab(page, "4 Apply")
    upload(page, "key_upload", bad)
    assert step_error(page, "apply")
    expect(page.locator("#key_status")).to_contain_text("No key yet")
    no_trace(page)


def test_cancel_stops_a_long_step_and_the_page_goes_on(page: Page) -> None:
    page.fill("#census_rows", "1000000")
    page.click("#open_census")
    page.click("#data_stop", timeout=WAIT)  # shown while the step runs; it stops at the next progress update
    assert step_error(page, "data").startswith("cancelled")
    expect(page.locator("#data_stop")).to_have_count(0, timeout=WAIT)
    expect(page.locator("#data_summary")).to_contain_text("Open the census")
    open_census(page, 5_000)  # the session works on
    no_trace(page)


def test_the_least_variance_design_and_a_recognition_design_without_its_alpha(page: Page) -> None:
    """The method list reaches the designs by name: least variance sets --objective variance; the
    recognition design asks for its alpha before anything runs."""
    open_census(page, 5_000)
    tab(page, "3 Design")
    choose(page, "design_vars", ["sex", "race"])
    page.select_option("#method", "dp-variance")
    page.fill("#epsilon", "1")
    page.click("#run_design")
    expect(page.locator("#ledger table")).to_contain_text("race", timeout=WAIT)
    expect(page.locator("#guarantee")).to_contain_text("e^1")
    page.select_option("#method", "recognition")
    page.click("#run_design")
    assert "recognition=ALPHA" in step_error(page, "design")
    no_trace(page)


def test_a_manifest_for_other_columns(page: Page, tmp_path: Path) -> None:
    """A manifest made for another file: a message in the page; nothing is designed, applied or written."""
    regions = tmp_path / "regions.csv"
    regions.write_text("region\n" + "north\nsouth\n" * 50)
    manifest = tmp_path / "other.json"
    assert main(["design", str(regions), "--vars", "region", "--method", "rr", "--epsilon", "1",
                 "--out", str(manifest), "--quiet"]) == 0
    open_census(page, 5_000)
    tab(page, "3 Design")
    upload(page, "manifest_upload", manifest)
    assert "for other columns: region is not in" in step_error(page, "design")
    tab(page, "4 Apply")
    page.click("#new_key")
    page.click("#run_apply")
    assert "design the release first" in step_error(page, "apply")
    no_trace(page)


def test_a_reload_keeps_the_release_in_progress(page: Page, tmp_path: Path) -> None:
    """Reloading the tab (or losing the connection) comes back to the same release, step by step."""
    open_census(page, 5_000)
    tab(page, "3 Design")
    choose(page, "design_vars", ["sex"])
    page.select_option("#method", "rr")
    page.fill("#epsilon", "1")
    page.click("#run_design")
    expect(page.locator("#ledger table")).to_contain_text("sex", timeout=WAIT)
    page.reload()
    expect(page.locator("#data_summary")).to_contain_text("5,000 rows", timeout=WAIT)
    tab(page, "3 Design")
    expect(page.locator("#ledger table")).to_contain_text("sex", timeout=WAIT)
    tab(page, "4 Apply")
    expect(page.locator("#key_status")).to_contain_text("No key yet")    # a key is given again, never kept in the page
    page.click("#new_key")
    page.click("#run_apply")
    expect(page.locator("#changed table")).to_contain_text("sex", timeout=WAIT)
    other = page.context.new_page()                                      # another tab: a release of its own
    other.goto(page.url)
    expect(other.locator("#data_summary")).to_contain_text("Open the census", timeout=WAIT)
    other.close()
    no_trace(page)
