"""The workbench's export does not write the released file (nor the data's copy) a second time.

On the work folder's file system the export links them (the same inode, read from the file system);
elsewhere it copies them, streamed.  The oracle of the content is ``pramkit apply`` typed by hand with the
exported manifest and the same key; injected failures check that nothing partial is left.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
from pathlib import Path

import pytest

import pramkit.workbench.export as export_module
from pramkit.cli import main
from pramkit.kernel.rng import SecretKey
from pramkit.release.choices import DesignChoices
from pramkit.workbench import Workbench

KEY = SecretKey(bytes(range(32)), "a test key")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def applied(sdc_data: Path, tmp_path: Path) -> Workbench:
    """sdcMicro's testdata uploaded (its 9s missing), roof and water released at record budget 2."""
    wb = Workbench(tmp_path / "work")
    wb.open_file(sdc_data / "testdata.csv", na_values=("NA", "9"), upload=True)
    wb.design(["roof", "water"], DesignChoices(method="rr", epsilon=2.0))
    wb.apply(KEY)
    return wb


def test_the_released_file_and_the_upload_are_linked_not_written_again(applied: Workbench, tmp_path: Path) -> None:
    wb = applied
    out = tmp_path / "out"
    view = wb.export(out, confirmed=True)
    work_released, public = wb.work / "release" / "released.csv", out / "public" / "released.csv"
    work_original, private = wb.work / "original" / "testdata.csv", out / "private" / "testdata.csv"
    assert public.stat().st_ino == work_released.stat().st_ino and public.stat().st_nlink == 2
    assert private.stat().st_ino == work_original.stat().st_ino
    assert view.files["released"] == "public/released.csv"

    probe = tmp_path / "probe"                                       # an ordinary new file's mode (the umask)
    probe.touch()
    assert _mode(public) == _mode(probe) == _mode(out / "public" / "manifest.json")
    assert _mode(out / "private") == 0o700
    assert {_mode(p) for p in (out / "private").rglob("*") if p.is_file()} == {0o600}

    key_file = tmp_path / "secret.key"
    key_file.write_text(KEY.text())
    key_file.chmod(0o600)
    by_hand = tmp_path / "by-hand.csv"
    assert main(["apply", str(private), "--manifest", str(out / "public" / "manifest.json"), "--key-file",
                 str(key_file), "--na-values", "NA,9", "--out", str(by_hand), "--quiet"]) == 0
    assert by_hand.read_bytes() == public.read_bytes()

    exported = _digest(public)
    wb.apply(SecretKey(bytes(range(1, 33)), "another key"))          # the work folder's file is replaced...
    assert _digest(work_released) != exported and work_released.stat().st_ino != public.stat().st_ino
    assert _digest(public) == exported                               # ...the exported one is as it was
    shutil.rmtree(wb.work)                                           # the app's folder removed at its end
    assert _digest(public) == exported and public.stat().st_nlink == 1


def test_the_inputs_a_later_design_rewrites_are_copied(sdc_data: Path, tmp_path: Path) -> None:
    """The edit rules kept in the work folder are rewritten in place by the next design: the exported ones
    stay those of the release exported."""
    wb = Workbench(tmp_path / "work")
    wb.open_file(sdc_data / "testdata.csv", na_values=("NA", "9"))
    rules = tmp_path / "rules.csv"
    rules.write_text("urbrur,water\n1,7\n")
    wb.design(["water"], DesignChoices(method="rr", epsilon=2.0, forbid=rules, strata="urbrur"))
    wb.apply(KEY)
    wb.export(tmp_path / "out", confirmed=True)
    exported = tmp_path / "out" / "private" / "inputs" / "rules.csv"
    assert exported.read_text() == rules.read_text() and exported.stat().st_nlink == 1
    rules.write_text("urbrur,water\n1,6|7\n")
    wb.design(["water"], DesignChoices(method="rr", epsilon=2.0, forbid=rules, strata="urbrur"))
    assert (wb.work / "inputs" / "rules.csv").read_text() == rules.read_text()
    assert exported.read_text() == "urbrur,water\n1,7\n"


def test_on_another_file_system_the_files_are_copied(applied: Workbench, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def other_file_system(src: object, dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(export_module.os, "link", other_file_system)
    wb = applied
    wb.export(tmp_path / "out", confirmed=True)
    public, work_released = tmp_path / "out" / "public" / "released.csv", wb.work / "release" / "released.csv"
    assert public.stat().st_nlink == 1 and public.stat().st_ino != work_released.stat().st_ino
    assert public.read_bytes() == work_released.read_bytes()
    assert _mode(tmp_path / "out" / "private" / "testdata.csv") == 0o600


def test_a_failure_after_the_link_leaves_nothing_and_the_release_as_it_was(
        applied: Workbench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pramkit.report

    wb = applied
    work_released = wb.work / "release" / "released.csv"
    before = (_digest(work_released), _mode(work_released))

    def full(*args: object, **kwargs: object) -> None:
        assert work_released.stat().st_nlink == 2                    # linked into the export's folder already
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pramkit.report, "write_report", full)
    with pytest.raises(OSError):
        wb.export(tmp_path / "out", confirmed=True)
    assert not (tmp_path / "out").exists()
    assert (_digest(work_released), _mode(work_released)) == before and work_released.stat().st_nlink == 1
    monkeypatch.undo()
    wb.export(tmp_path / "out", confirmed=True)                      # and the export can be made again
    assert _digest(tmp_path / "out" / "public" / "released.csv") == before[0]


def test_a_failing_copy_on_another_file_system_leaves_nothing(applied: Workbench, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def other_file_system(src: object, dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    copied = shutil.copyfile

    def full(src: os.PathLike, dst: os.PathLike) -> object:
        if Path(src).name == "released.csv":
            Path(dst).write_bytes(b"a partial copy")
            raise OSError(errno.ENOSPC, "No space left on device")
        return copied(src, dst)

    monkeypatch.setattr(export_module.os, "link", other_file_system)
    monkeypatch.setattr(export_module.shutil, "copyfile", full)
    with pytest.raises(OSError):
        applied.export(tmp_path / "out", confirmed=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]       # no OUT, no partial copy anywhere
