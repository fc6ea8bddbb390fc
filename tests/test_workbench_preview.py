"""Workbench.preview: the expected risk and utility of a design before it is applied, the designs tried
(the risk-utility map), undo and sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pramkit.kernel.rng import SecretKey
from pramkit.release.choices import DesignChoices
from pramkit.risk.expected import ProblemSet, expected_release
from pramkit.workbench import Workbench
from pramkit.workbench.preview import PRIVATE_NOTE, ru_map_svg

KEYS = ["urbrur", "roof", "walls", "water", "sex"]


@pytest.fixture
def bench(sdc_data: Path, tmp_path: Path) -> Workbench:
    wb = Workbench(tmp_path / "work")
    wb.open_file(sdc_data / "testdata.csv")
    wb.risk(KEYS, weights="sampling_weight", household="ori_hid")
    return wb


def test_a_stratified_design_has_its_risk_after_pram(bench: Workbench, sdc_data: Path) -> None:
    changes = len(bench._history)
    view = bench.preview(["roof"], DesignChoices(epsilon=2.0, strata="urbrur"))
    assert view.expected is not None and view.note == ""
    # the same figures as the library's function on the original, for the manifest previewed
    problem = ProblemSet.of(sdc_data / "testdata.csv", KEYS, weights="sampling_weight", household="ori_hid")
    again = expected_release(problem, view.manifest)
    assert (view.expected.tau1, view.expected.tau2, view.expected.household) == pytest.approx(
        (again.tau1, again.tau2, again.household), rel=1e-12)
    assert view.expected.tau2 < view.expected.tau2_before
    assert "persons in re-identified households" in set(view.risk["measure (records)"])
    assert bench.designed is None and len(bench._history) == changes  # a preview is not a change of the settings


def test_designs_tried_are_kept_for_the_map_and_the_session(bench: Workbench, tmp_path: Path) -> None:
    problem = None
    for epsilon in (1.0, 3.0, 1.0):
        bench.preview(["walls", "water"], DesignChoices(epsilon=epsilon, split="joint"))
        problem = problem or bench._problem
        assert bench._problem is problem  # the original read once for the same problem set
    assert [t.parameters.split("--epsilon ")[1].split()[0] for t in bench.tried] == ["3.0", "1.0"]  # tried again: moved last
    assert bench.tried[-1].number == 3 and bench.tried[0].risk > bench.tried[1].risk
    svg = ru_map_svg(bench.tried, bench.tried[-1].number)
    assert svg.count('class="ru-point') == 2 and svg.count("ru-point current") == 1
    bench.design(["walls"], DesignChoices(method="rr", epsilon=2.0))
    bench.undo()
    assert len(bench.tried) == 2  # undo takes back settings, not the map
    saved = bench.save_session(tmp_path / "session.json")
    assert len(json.loads(saved.read_text())["tried"]) == 2
    other = Workbench(tmp_path / "other")
    other.open_file(bench.base.path if bench.base else "")
    other.restore_session(saved)
    assert [t.to_dict() for t in other.tried] == [t.to_dict() for t in bench.tried]


def test_the_problem_set_follows_the_risk_step(bench: Workbench) -> None:
    bench.preview(["roof"], DesignChoices(method="rr", epsilon=1.0))
    first = bench._problem
    bench.risk(["roof", "sex"], sampling_fraction=0.01)
    view = bench.preview(["roof"], DesignChoices(method="rr", epsilon=1.0))
    assert bench._problem is not first and view.expected is not None and view.expected.keys == ("roof", "sex")
    assert view.expected.household is None


def test_before_the_risk_step_the_utility_alone(sdc_data: Path, tmp_path: Path) -> None:
    wb = Workbench(tmp_path / "work")
    wb.open_file(sdc_data / "testdata.csv")
    view = wb.preview(["roof"], DesignChoices(method="rr", epsilon=1.0))
    assert view.expected is None and "Assess the risk before" in view.note
    assert 0 < view.current.figures["information_kept"] < 1  # type: ignore[union-attr]


def test_shared_strata_say_why_the_risk_is_not_computed(bench: Workbench) -> None:
    view = bench.preview(["roof", "walls"], DesignChoices(epsilon=2.0, strata="urbrur"))
    assert view.expected is None and view.note.startswith("Risk after PRAM not computed")


def test_the_figures_never_reach_the_public_files(bench: Workbench, tmp_path: Path) -> None:
    view = bench.preview(["roof"], DesignChoices(method="rr", epsilon=1.0))
    assert view.expected is not None
    bench.design(["roof"], DesignChoices(method="rr", epsilon=1.0))
    bench.apply(SecretKey(bytes(range(32)), "test key"))
    out = bench.export(tmp_path / "out", confirmed=True).out
    public = "".join(p.read_text(errors="replace") for p in Path(out, "public").rglob("*") if p.is_file()
                     and p.suffix in (".json", ".md", ".html", ".txt"))
    assert "tau2" not in public and "tried" not in public
    assert "not published" in PRIVATE_NOTE


@pytest.mark.filterwarnings("ignore:the transition matrix is singular")  # the estimates of this design: EM
def test_the_apply_step_assesses_a_stratified_release_too(bench: Workbench) -> None:
    """sdcMicro's testdata PRAM example within strata: the released file's risk, PRAM accounted for."""
    bench.design(["roof"], DesignChoices(epsilon=2.0, strata="urbrur"))
    applied = bench.apply(SecretKey(bytes(range(32)), "test key"))
    assert applied.risk_after is not None and applied.risk_after.note == ""
    figures = dict(zip(applied.risk_after.table["measure"], applied.risk_after.table["value"]))
    assert any("tau2" in m for m in figures)


def test_a_preview_of_a_joint_design_leaves_out_only_the_records_comparison(sdc_data: Path) -> None:
    """The preview skips the record's comparison of the joint matrix with an independent split (the
    page does not show it; it is most of a joint design's time): the manifest is the design's."""
    key = SecretKey(bytes(range(32)), "a test key")
    choices = DesignChoices(epsilon=2.0, split="joint")
    data = sdc_data / "testdata.csv"
    full = choices.release(data, ["walls", "water"], key=key)
    quick = choices.release(data, ["walls", "water"], key=key, compare=False)
    assert "joint" in full.record.extra and "joint" not in quick.record.extra
    assert full.record.extra["joint"]["better"] in ("joint", "independent")
    one, two = full.manifest.to_dict(), quick.manifest.to_dict()
    for m in (one, two):  # the wall times differ, as two designs' do
        m.pop("created")
        for v in m["variables"]:
            v["design"].pop("seconds")
    assert one == two
