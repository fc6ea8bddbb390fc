"""What the library warns of during a workbench step reaches the step's view, in the page's words.

The oracles: the matrix's rank by numpy (a singular design is singular), the released file counted by
pandas (a k-anonymity block's total is released exactly, so its estimate is the original block total),
and warnings raised by hand in threads run at once (each step hears its own).
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pramkit.errors import PramkitWarning
from pramkit.estimate import EstimationWarning
from pramkit.kernel.rng import SecretKey
from pramkit.release.choices import DesignChoices
from pramkit.workbench import Workbench
from pramkit.workbench.heard import heard

#: sdcMicro's testdata codes a missing answer 9 (roof, walls, water, relat).
MISSING = ("NA", "9")


@pytest.fixture
def singular(sdc_data: Path, tmp_path: Path) -> tuple[Workbench, Path]:
    """sdcMicro's testdata, its 9s missing, water released in k-anonymity blocks of 3: a singular matrix."""
    wb = Workbench(tmp_path / "work")
    wb.open_file(sdc_data / "testdata.csv", na_values=MISSING)
    return wb, sdc_data / "testdata.csv"


def _words_only(messages: tuple[str, ...], wb: Workbench) -> None:
    for m in messages:
        assert "--" not in m and "`pramkit" not in m and str(wb.work) not in m, m


def test_a_singular_design_says_so_in_the_design_and_the_estimates(singular: tuple[Workbench, Path]) -> None:
    wb, path = singular
    view = wb.design(["water"], DesignChoices(method="kanon", k=3))
    m = view.manifest["water"].matrix
    rank = np.linalg.matrix_rank(m.matrix)
    assert rank < m.size                                                     # numpy: singular indeed
    [note] = [n for n in view.notes if "singular" in n]
    assert f"rank {rank} of {m.size}" in note and "the Method 'DP: the least variance of the estimates'" in note
    _words_only(view.notes, wb)

    applied = wb.apply(SecretKey(bytes(range(32)), "a test key"))
    [said] = applied.warnings
    assert said.startswith("the estimates of water: the transition matrix is singular") and "maximum-likelihood" in said
    _words_only(applied.warnings, wb)
    estimates = applied.estimates
    assert not estimates["95 % interval"].str.contains("nan").any()
    cells = estimates[~estimates["category"].str.startswith("{")]
    assert (cells["95 % interval"] == "not identifiable").all()                      # pramkit estimate's flag

    # each block of identical rows moves values within the block only: its released total is its original
    # total, counted here by pandas, and the maximum-likelihood estimate of the block is that total
    original = pd.read_csv(path, na_values=list(MISSING), keep_default_na=False)["water"]
    released = pd.read_csv(wb.work / "release" / "released.csv", na_values=list(MISSING),
                           keep_default_na=False)["water"]
    assert original.isna().sum() == released.isna().sum() > 0                 # missing values kept missing
    rows = {tuple(np.round(r, 12)) for r in m.matrix}
    assert len(rows) == rank
    for row in rows:
        block = [c for c, r in zip(m.categories, m.matrix) if tuple(np.round(r, 12)) == row]
        share = original.isin(block).sum() / original.notna().sum()
        assert released.isin(block).sum() == original.isin(block).sum()
        shown = estimates[estimates["category"].isin([str(c) for c in block])]["estimate (%)"].sum()
        assert abs(shown - 100 * share) <= 0.005 * len(block) + 1e-9           # rounded to 0.01 per cell
        [total] = estimates.loc[estimates["category"] == "{" + ", ".join(map(str, block)) + "}", "estimate (%)"]
        assert abs(total - 100 * share) <= 0.005 + 1e-9                        # the block's total, one row

    exported = wb.export(wb.work.parent / "out", confirmed=True)
    assert [w for w in exported.warnings if "singular" in w] == [
        "the reports: the transition matrix is singular, so the moment estimator (M^T)^-1 lambda cannot be used; "
        "the maximum-likelihood estimate (EM) is given instead"]
    _words_only(exported.warnings, wb)


def test_the_warnings_come_back_with_an_undo_and_are_cleared_by_a_design_without(
        singular: tuple[Workbench, Path]) -> None:
    wb, _ = singular
    wb.design(["water"], DesignChoices(method="kanon", k=3))
    clean = wb.design(["water"], DesignChoices(method="rr", epsilon=2.0))       # invertible: no warning
    assert not clean.warnings and not any("singular" in n for n in clean.notes)
    assert not wb.apply(SecretKey(bytes(range(32)), "a test key")).warnings
    wb.undo()
    assert any("singular" in n for n in wb.designed.view.notes)


def test_an_export_says_what_it_cleaned_up(singular: tuple[Workbench, Path], tmp_path: Path) -> None:
    """A temporary folder left by an interrupted export is removed, and the export's view says so."""
    wb, _ = singular
    wb.design(["roof"], DesignChoices(method="rr", epsilon=2.0))
    wb.apply(SecretKey(bytes(range(32)), "a test key"))
    out = tmp_path / "out"
    left = out / ".export.pramkit-tmp.999999999.0a1b2c3d"
    left.mkdir(parents=True)
    (left / "released.csv").write_text("partial")
    view = wb.export(out, confirmed=True)
    assert view.warnings == (f"removed 1 temporary file(s) of the export in {str(out)!r} left by an interrupted "
                             "run (7 bytes)",)
    assert not left.exists()


def test_steps_in_threads_at_once_each_hear_their_own() -> None:
    """Two steps warn at the same moments in two threads: each hears its own warnings, all of them, and a
    warning outside any step goes where it went before."""
    start = threading.Barrier(2)
    heard_by: dict[str, list[str]] = {}

    def step(name: str) -> None:
        with heard() as said:
            start.wait()
            for i in range(200):
                warnings.warn(f"{name} {i}", PramkitWarning if i % 2 else EstimationWarning, stacklevel=1)
                if i % 50 == 0:
                    start.wait()
        heard_by[name] = said

    threads = [threading.Thread(target=step, args=(name,)) for name in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert heard_by == {n: [f"{n} {i}" for i in range(200)] for n in ("a", "b")}
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        with heard() as said:
            warnings.warn("not the library's", UserWarning, stacklevel=1)
            warnings.warn("the library's", PramkitWarning, stacklevel=1)
        warnings.warn("outside a step", PramkitWarning, stacklevel=1)
    assert [str(w.message) for w in log] == ["not the library's", "outside a step"] and said == ["the library's"]


def test_the_same_warning_is_heard_by_every_step_that_raises_it() -> None:
    """Python shows a warning once per place by default; a step hears it each time it is raised."""
    for _ in range(3):
        with heard() as said:
            warnings.warn("the matrix is singular", EstimationWarning, stacklevel=1)
        assert said == ["the matrix is singular"]
