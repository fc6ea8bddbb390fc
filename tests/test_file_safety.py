"""Nothing lost, nothing half-written, no input overwritten: fault injection on every output.

Each case checks the same things: the exit status, one line on stderr, the
input files unchanged (digest before and after), no partial output under
the final name, and no temporary file left behind.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from pramkit import atomic
from pramkit import io as pio
from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import apply_file
from pramkit.engine.receipt import check_release, receipt_path
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
FORMATS = ["csv", "parquet", "dta", "sav"]


def digests(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones included) and its SHA-256."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*")) if p.is_file()
    }


def temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if atomic.TMP_TAG in p.name or p.name.endswith(".tmp")]


def run(args: list, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code: int, err: str, folder: Path, before: dict[str, str], *, message: str = "") -> None:
    """Exit 2, one line, files as they were, nothing new, no temporaries."""
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert message in lines[0], lines[0]
    assert digests(folder) == before, "a file was written, changed or removed"
    assert temporaries(folder) == []


@pytest.fixture(scope="module")
def made_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files of :func:`files`, made once for the module (its key drawn as a test's keys are drawn,
    :class:`conftest.SeededSecrets`, so every run releases the same records)."""
    from conftest import SeededSecrets

    import pramkit.kernel.rng

    rng = np.random.default_rng(11)
    n = 12_000  # several CSV blocks of 64 KB
    frame = pd.DataFrame({
        "region": rng.integers(1, 4, n),
        "sex": rng.choice(["m", "f"], n),
        "age": rng.integers(0, 400, n),
        "income": rng.normal(1000, 100, n).round(1),
    })
    d = tmp_path_factory.mktemp("files")
    frame.to_csv(d / "data.csv", index=False)
    pio.write_table(frame, d / "data.parquet")
    pyreadstat.write_dta(frame, str(d / "data.dta"))
    pyreadstat.write_sav(frame, str(d / "data.sav"))
    Manifest.of({
        "region": randomized_response([1, 2, 3], 1.0),
        "sex": randomized_response(["m", "f"], 0.5),
    }).write(d / "m.json")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pramkit.kernel.rng, "secrets", SeededSecrets("tests/test_file_safety.py::files"))
        assert main(["keygen", str(d / "key")]) == 0
    apply_file(d / "data.csv", d / "m.json", d / "rel.csv", key=SecretKey.from_file(d / "key"))  # with its receipt
    return d


@pytest.fixture
def files(made_files: Path, tmp_path: Path) -> dict[str, Path]:
    """The test's own copy (modes kept: the key file stays private) of the module's data in four formats, a
    manifest, a key file and a release with its receipt (which names its file, not its folder)."""
    import shutil

    d = tmp_path
    for path in made_files.iterdir():
        shutil.copy2(path, d / path.name)
    return {"dir": d, "csv": d / "data.csv", "parquet": d / "data.parquet", "dta": d / "data.dta",
            "sav": d / "data.sav", "manifest": d / "m.json", "key": d / "key", "released": d / "rel.csv"}


def apply_args(files: dict[str, Path], out: Path, fmt: str = "csv", *extra: str) -> list:
    return ["apply", files[fmt], "--manifest", files["manifest"], "--out", out, "--key-file", files["key"],
            "--quiet", *extra]


def enospc(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


# ------------------------------------------------------------------ disk full, injected

def _fail_on_call(original, n: int):
    """A wrapper of ``original`` raising ENOSPC at its n-th call."""
    calls = {"n": 0}

    def wrapped(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == n:
            enospc()
        return original(*args, **kwargs)

    return wrapped


def _silent_truncation(writer, keep: int):
    """A Stata/SPSS writer that reports success but leaves only ``keep`` bytes (as readstat does on a full disk)."""
    def write(frame, path, **kwargs):
        writer(frame, path, **kwargs)
        with open(path, "r+b") as fh:
            fh.truncate(keep)

    return write


def inject(monkeypatch, fmt: str, point: str) -> None:
    """Make the writing of ``fmt`` fail at ``point``."""
    if point == "fsync":
        monkeypatch.setattr(atomic, "_fsync", enospc)
    elif point == "rename":
        monkeypatch.setattr(atomic.os, "replace", enospc)
        monkeypatch.setattr(atomic.os, "link", enospc)
    elif point == "receipt":
        monkeypatch.setattr(atomic, "_write_file", enospc)
    elif fmt in ("csv", "parquet"):
        if point == "close":
            original_finish = pio.TableWriter._finish

            def finish(self):
                original_finish(self)
                enospc()

            monkeypatch.setattr(pio.TableWriter, "_finish", finish)
        else:
            n = {"first chunk": 1, "later chunk": 2}[point]
            monkeypatch.setattr(pio.TableWriter, "_write_chunk", _fail_on_call(pio.TableWriter._write_chunk, n))
    else:
        name = "write_dta" if fmt == "dta" else "write_sav"
        if point == "writer raises":
            monkeypatch.setattr(pyreadstat, name, enospc)
        else:
            keep = {"empty file": 0, "truncated": 300}[point]
            monkeypatch.setattr(pyreadstat, name, _silent_truncation(getattr(pyreadstat, name), keep))


CASES = (
    [(f, p) for f in ("csv", "parquet") for p in ("first chunk", "later chunk", "close")]
    + [(f, p) for f in ("dta", "sav") for p in ("writer raises", "empty file", "truncated")]
    + [(f, p) for f in FORMATS for p in ("fsync", "rename", "receipt")]
)


@pytest.mark.parametrize("fmt, point", CASES)
@pytest.mark.parametrize("existing", [False, True], ids=["new", "force-over-good"])
def test_disk_full_injected(files, capsys, monkeypatch, fmt: str, point: str, existing: bool) -> None:
    d = files["dir"]
    out = d / f"out.{fmt}"
    if existing:  # a good earlier release must survive a failed --force
        assert main([str(a) for a in apply_args(files, out, fmt)]) == 0
    capsys.readouterr()
    before = digests(d)
    inject(monkeypatch, fmt, point)
    code, _, err = run(apply_args(files, out, fmt, "--chunk-rows", "500", *(["--force"] if existing else [])), capsys)
    assert_refused(code, err, d, before, message="cannot write")
    assert out.exists() == existing


def test_json_and_key_outputs_on_a_full_disk(files, capsys, monkeypatch) -> None:
    d = files["dir"]
    before = digests(d)
    monkeypatch.setattr(atomic, "_write_file", enospc)
    code, _, err = run(["keygen", d / "new_key"], capsys)
    assert_refused(code, err, d, before, message="No space left on device")
    monkeypatch.undo()

    def half(path, data):  # a short write that does not raise: the size check catches it
        with open(path, "wb") as fh:
            fh.write(data[: len(data) // 2])

    monkeypatch.setattr(atomic, "_write_file", half)
    code, _, err = run(["keygen", d / "new_key"], capsys)
    assert_refused(code, err, d, before, message="cannot write")
    with pytest.raises(Exception, match="cannot write"):
        Manifest.read(files["manifest"]).write(d / "copy.json")
    assert digests(d) == before and temporaries(d) == []


def test_plot_on_a_full_disk(files, capsys, monkeypatch) -> None:
    d = files["dir"]
    before = digests(d)
    monkeypatch.setattr(atomic, "_fsync", enospc)  # the figure's bytes do not reach the disk
    code, _, err = run(["risk", files["csv"], "--keys", "region,sex,age", "--sampling-fraction", "0.1",
                        "--model", "independence", "--plot", d / "fit.png"], capsys)
    assert_refused(code, err, d, before, message="cannot write '")


# ------------------------------------------------------------------ a real small disk

@contextlib.contextmanager
def tmpfs(folder: Path, options: str, why: str) -> Iterator[Path]:
    """A tmpfs mounted on ``folder`` (created) with ``options``; the test is skipped when mounting is not
    permitted (``why`` says what needed it)."""
    if not ROOT:
        pytest.skip(f"{why} needs root")
    folder.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"{why}: cannot mount a tmpfs here: {proc.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 256 KB tmpfs (needs root and a kernel that lets us mount); skipped otherwise."""
    with tmpfs(tmp_path / "disk", "size=256k", "a small disk") as disk:
        yield disk


@pytest.mark.parametrize("fmt", FORMATS)
def test_real_full_disk(files, small_disk: Path, capsys, fmt: str) -> None:
    d = files["dir"]
    big = d / "big.csv"
    rng = np.random.default_rng(1)
    n = 60_000
    pd.DataFrame({"region": rng.integers(1, 4, n), "sex": rng.choice(["m", "f"], n),
                  "note": [os.urandom(8).hex() for _ in range(n)]}).to_csv(big, index=False)  # incompressible
    (small_disk / f"out.{fmt}").write_bytes(b"good old release")
    before, before_disk = digests(d), digests(small_disk)
    args = ["apply", big, "--manifest", files["manifest"], "--out", small_disk / f"out.{fmt}", "--quiet"]
    code, _, err = run(args + ["--force"], capsys)
    assert_refused(code, err, small_disk, before_disk, message="cannot write")
    assert digests(d) == before
    (small_disk / f"out.{fmt}").unlink()
    code, _, err = run(args, capsys)
    assert_refused(code, err, small_disk, {}, message="cannot write")


# ------------------------------------------------------------------ read-only and missing folders

@pytest.fixture
def readonly_dir(tmp_path: Path):
    """A folder nobody can write: a read-only tmpfs as root (root ignores permissions), mode 0555 otherwise."""
    ro = tmp_path / "ro"
    if ROOT:  # root ignores permissions
        with tmpfs(ro, "ro,size=64k", "a read-only folder as root") as folder:
            yield folder
    else:
        ro.mkdir()
        ro.chmod(0o555)
        try:
            yield ro
        finally:
            ro.chmod(0o755)


def output_commands(files: dict[str, Path], folder: Path) -> list[list]:
    """One command per kind of output, writing into ``folder``."""
    return [
        apply_args(files, folder / "out.csv"),
        apply_args(files, folder / "out.sav", "sav"),
        ["apply", files["parquet"], "--manifest", files["manifest"], "--out", folder / "spark.parquet",
         "--engine", "spark"],
        ["risk", files["csv"], "--keys", "region,sex", "--sampling-fraction", "0.1", "--plot", folder / "fit.png"],
        ["keygen", folder / "key"],
        ["design", files["csv"], "--vars", "region,sex", "--epsilon", "2", "--out", folder / "m2.json",
         "--exact-frequencies"],
        report_args(files, "--out", folder / "r.html"),
        report_args(files, "--public", folder / "p.html"),
        ["report", "--manifest", files["manifest"], "--released", files["released"], "--public", folder / "p.html"],
        ["demo", "--rows", "1000", "--out", folder / "demo", "--quiet"],
        ["reproduce", "ruiz", "--quick", "--out", folder / "sub"],
    ]


def report_args(files: dict[str, Path], *extra) -> list:
    """``pramkit report`` of the fixture's release (``rel.csv``, with its receipt)."""
    return ["report", files["csv"], "--manifest", files["manifest"], "--released", files["released"],
            "--keys", "region,sex", "--sampling-fraction", "0.1", "--quiet", *extra]


def test_readonly_folder(files, readonly_dir: Path, capsys) -> None:
    d = files["dir"]
    before = digests(d)
    for args in output_commands(files, readonly_dir) + [["demo", "--rows", "1000", "--out", readonly_dir]]:
        code, _, err = run(args, capsys)
        assert_refused(code, err, d, before, message="")
        assert any(w in err for w in ("not writable", "Read-only", "Permission denied")), (args, err)
        assert list(readonly_dir.iterdir()) == []


def test_missing_folder(files, capsys) -> None:
    d = files["dir"]
    before = digests(d)
    for args in output_commands(files, d / "absent"):
        code, _, err = run(args, capsys)
        assert_refused(code, err, d, before, message="does not exist")
        assert not (d / "absent").exists()


# ------------------------------------------------------------------ --force never over an input

def force_over_inputs(files: dict[str, Path]) -> list[list]:
    d = files["dir"]
    m, k = files["manifest"], files["key"]
    (d / "receipt_named").mkdir()
    named = d / "receipt_named" / "out.csv.receipt.json"  # an input where the receipt would go
    Manifest.read(m).write(named)
    (d / "folder.csv").mkdir()
    (d / "folder.csv" / "part.csv").write_bytes(files["csv"].read_bytes())
    cases = []
    for fmt in FORMATS:
        cases.append(["apply", files[fmt], "--manifest", m, "--out", files[fmt], "--force"])
    cases += [
        ["apply", files["csv"], "--manifest", m, "--out", m, "--force"],
        ["apply", files["csv"], "--manifest", m, "--key-file", k, "--out", k, "--force"],
        ["apply", files["csv"], "--manifest", named, "--out", d / "receipt_named" / "out.csv", "--force"],
        ["apply", d / "folder.csv" / "part.csv", "--manifest", m, "--out", d / "folder.csv", "--force",
         "--engine", "spark"],
        ["apply", files["csv"], "--manifest", m, "--out", files["csv"], "--force", "--engine", "spark"],
        ["risk", files["csv"], "--keys", "region,sex", "--sampling-fraction", "0.1", "--plot", files["csv"], "--force"],
        ["risk", files["csv"], "--keys", "region,sex", "--sampling-fraction", "0.1", "--manifest", m,
         "--plot", m, "--force"],
        ["risk", files["csv"], "--keys", "region,sex", "--sampling-fraction", "0.1", "--manifest", m,
         "--original", files["parquet"], "--plot", files["parquet"], "--force"],
        ["design", files["csv"], "--vars", "region,sex", "--epsilon", "2", "--exact-frequencies",
         "--out", files["csv"], "--force"],
    ]
    # report: neither report over the data, the manifest, the released file or its receipt
    for given in (files["csv"], m, files["released"], receipt_path(files["released"])):
        cases += [report_args(files, "--out", given, "--force"), report_args(files, "--public", given, "--force")]
    # demo: never replace public/ or private/ when it holds the key file, nor write over the key file
    for folder in ("private", "public"):
        (d / "earlier" / folder).mkdir(parents=True)
        inside = d / "earlier" / folder / "key"
        inside.write_bytes(k.read_bytes())
        inside.chmod(0o600)
        cases.append(["demo", "--rows", "1000", "--out", d / "earlier", "--key-file", inside, "--force"])
    cases.append(["demo", "--rows", "1000", "--out", k, "--key-file", k, "--force"])
    return cases


def test_force_never_overwrites_an_input(files, capsys) -> None:
    d = files["dir"]
    cases = force_over_inputs(files)
    before = digests(d)
    for args in cases:
        code, _, err = run(args, capsys)
        assert_refused(code, err, d, before, message="would overwrite the input")


def test_keygen_and_reproduce_never_overwrite_a_file(files, capsys) -> None:
    d = files["dir"]
    before = digests(d)
    for args, message in [
        (["keygen", files["csv"]], "never overwritten"),
        (["keygen", files["key"]], "never overwritten"),
        (["reproduce", "ruiz", "--out", files["csv"]], "not a folder"),
    ]:
        code, _, err = run(args, capsys)
        assert_refused(code, err, d, before, message=message)


# ------------------------------------------------------------------ killed and interrupted runs

#: A child ``pramkit apply`` whose writer stops after each chunk until the parent lets it go on.
# A CSV chunk is at least one 64 KiB block (about 4 600 rows of this file, whatever --chunk-rows asks), so
# the apply writes three chunks. The chunks are written by a background thread, which the exiting child
# waits for: after each chunk it waits (up to two minutes) for the file that :func:`resume` writes once
# the parent has sent its signal, so that the signal always finds it writing, however loaded the machine.
SLOW_APPLY = textwrap.dedent("""
    import os, signal, sys, time
    import pramkit.io as pio
    from pramkit.cli import main
    # SIGINT as in a terminal: a test runner started in the background hands its children SIGINT ignored,
    # which pramkit rightly leaves ignored (the apply would then finish and exit 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    original = pio.TableWriter._write_chunk
    go_on = os.environ["PRAMKIT_TEST_GO_ON"]
    def slow(self, table):
        original(self, table)
        deadline = time.monotonic() + 120
        while not os.path.exists(go_on) and time.monotonic() < deadline:
            time.sleep(0.02)
    pio.TableWriter._write_chunk = slow
    sys.exit(main(sys.argv[1:]))
""")


def start_slow_apply(files: dict[str, Path], out: Path, *, sigint_ignored: bool = False) -> subprocess.Popen:
    args = [str(a) for a in apply_args(files, out, "csv", "--chunk-rows", "20")]
    go_on = out.parent.parent / f"go-on-{out.parent.name}"  # outside the folder whose digests count
    code = SLOW_APPLY.replace("signal.default_int_handler", "signal.SIG_IGN") if sigint_ignored else SLOW_APPLY
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PRAMKIT_TEST_GO_ON": str(go_on)})
    proc.go_on = go_on  # type: ignore[attr-defined]  # where resume() lets the child's writer go on
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until it is writing
        tmps = [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}{atomic.TMP_TAG}")]
        if tmps and tmps[0].stat().st_size > 0:
            return proc
        if proc.poll() is not None:
            pytest.fail(f"the child ended before writing: {proc.communicate()}")
        time.sleep(0.02)
    proc.kill()
    pytest.fail("the child never started writing")


def resume(proc: subprocess.Popen) -> None:
    """Let the child's writer go on (after the signal: the child exits at once, waiting only for its writer)."""
    Path(proc.go_on).write_text("")  # type: ignore[attr-defined]


def test_kill_9_then_a_clean_run(files, capsys) -> None:
    d = files["dir"]
    out = d / "released.csv"
    before = digests(d)
    proc = start_slow_apply(files, out)
    proc.kill()
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    stale = temporaries(d)
    assert len(stale) == 1 and not out.exists()  # kill -9 cannot clean up: a temporary stays
    assert all(digests(d)[k] == v for k, v in before.items())
    code, _, err = run(apply_args(files, out), capsys)
    assert code == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "removed 1 temporary file(s)" in lines[0] and "interrupted run" in lines[0]
    assert temporaries(d) == [] and out.exists()
    assert all(digests(d)[k] == v for k, v in before.items())


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_removes_the_temporary(files, sig: int, status: int) -> None:
    d = files["dir"]
    out = d / "released.csv"
    before = digests(d)
    proc = start_slow_apply(files, out)
    proc.send_signal(sig)
    resume(proc)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1
    assert digests(d) == before and temporaries(d) == [] and not out.exists()


def test_an_ignored_sigint_stays_ignored(files) -> None:
    """A background job's SIGINT is ignored: pramkit leaves it so, and the apply finishes its file."""
    d = files["dir"]
    out = d / "released.csv"
    proc = start_slow_apply(files, out, sigint_ignored=True)
    proc.send_signal(signal.SIGINT)
    resume(proc)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.exists() and temporaries(d) == []


def test_stale_temporaries_of_other_outputs_and_live_runs_are_left_alone(files, capsys) -> None:
    d = files["dir"]
    other = d / f".other.csv{atomic.TMP_TAG}1.abcdef12"
    other.write_text("someone else's")
    live = d / f".out.csv{atomic.TMP_TAG}{os.getppid()}.abcdef12"  # a process that is alive
    live.write_text("being written")
    stale = d / f".out.csv{atomic.TMP_TAG}999999999.abcdef12"  # a run that ended
    stale.write_text("left behind")
    lookalike = d / ".out.csv.abcd_123.tmp"  # not pramkit's tag: somebody else's file
    lookalike.write_text("not ours")
    code, _, err = run(apply_args(files, d / "out.csv"), capsys)
    assert code == 0 and "removed 1 temporary file(s)" in err
    assert other.exists() and live.exists() and lookalike.exists() and not stale.exists()


def test_output_that_appears_meanwhile_is_not_replaced(files, monkeypatch) -> None:
    """Without --force, a file that appears while pramkit writes is never replaced."""
    d = files["dir"]
    out = d / "out.json"
    original = atomic._write_file

    def racing(path, data):
        original(path, data)
        out.write_text("written by someone else")

    monkeypatch.setattr(atomic, "_write_file", racing)
    with pytest.raises(Exception, match="appeared while writing"):
        atomic.write_text_atomic(out, "{}", force=False)
    assert out.read_text() == "written by someone else" and temporaries(d) == []


def test_outputs_are_complete_and_ordinary(files, capsys) -> None:
    """The happy path: every format written, readable, with its receipt, and no temporaries."""
    d = files["dir"]
    for fmt in FORMATS:
        code, out, err = run(apply_args(files, d / f"out.{fmt}", fmt, "--json"), capsys)
        assert code == 0, err
        summary = json.loads(out)
        assert summary["rows"] == 12_000 and len(summary["key_fingerprint"]) == 16
        assert Path(summary["receipt"]).is_file()
    assert temporaries(d) == []


# ------------------------------------------------------------------ a release and its receipt

def fail_commit_of(monkeypatch, name: str) -> None:
    """Make only the rename into place of the output called ``name`` fail (ENOSPC)."""
    original = atomic._commit

    def commit(tmp: Path, target: Path, **kwargs) -> None:
        if target.name == name:
            enospc()
        original(tmp, target, **kwargs)

    monkeypatch.setattr(atomic, "_commit", commit)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_failed_release_keeps_the_receipt_of_the_earlier_one(files, capsys, monkeypatch, fmt: str) -> None:
    """The receipt is renamed into place after the released file, never before."""
    d = files["dir"]
    out = d / f"out.{fmt}"
    assert main([str(a) for a in apply_args(files, out, fmt)]) == 0
    capsys.readouterr()
    before = digests(d)
    fail_commit_of(monkeypatch, out.name)
    # a fresh key: another release, whose receipt would differ from the earlier one
    args = ["apply", files[fmt], "--manifest", files["manifest"], "--out", out, "--quiet", "--force"]
    code, _, err = run(args, capsys)
    assert_refused(code, err, d, before, message=f"cannot write {str(out)!r}")
    assert check_release(out, files["manifest"]) is None  # the earlier release and its receipt still agree


@pytest.mark.parametrize("earlier", [True, False], ids=["force-over-good", "new"])
def test_a_receipt_that_cannot_follow_its_release_is_named(files, capsys, monkeypatch, earlier: bool) -> None:
    d = files["dir"]
    out, receipt = d / "out.csv", receipt_path(d / "out.csv")
    if earlier:
        assert main([str(a) for a in apply_args(files, out)]) == 0
    capsys.readouterr()
    before = digests(d)
    fail_commit_of(monkeypatch, receipt.name)
    args = ["apply", files["csv"], "--manifest", files["manifest"], "--out", out, "--quiet"]
    code, _, err = run(args + (["--force"] if earlier else []), capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert f"{str(out)!r} was written but its receipt was not" in lines[0]
    assert "No space left on device" in lines[0]
    assert (f"the receipt {receipt.name} beside it is stale" if earlier else "it has no receipt") in lines[0]
    after = digests(d)
    assert after[out.name] != before.get(out.name)  # the new release is in place ...
    assert after.get(receipt.name) == before.get(receipt.name)  # ... beside the earlier receipt, or none
    assert {k: v for k, v in after.items() if k != out.name} == {k: v for k, v in before.items() if k != out.name}
    assert temporaries(d) == []
    if earlier:  # what the stale receipt now tells `estimate` and `risk`
        assert "has changed since its receipt" in check_release(out, files["manifest"])


# ------------------------------------------------------------------ the reports

@pytest.mark.parametrize("which", ["--out", "--public"])
@pytest.mark.parametrize("existing", [False, True], ids=["new", "force-over-good"])
def test_reports_on_a_full_disk(files, capsys, monkeypatch, which: str, existing: bool) -> None:
    d = files["dir"]
    report = d / "report.html"
    args = report_args(files, which, report)
    if existing:
        code, _, err = run(args, capsys)
        assert code == 0 and err == "", err
    before = digests(d)
    monkeypatch.setattr(atomic, "_write_file", enospc)
    code, _, err = run(args + (["--force"] if existing else []), capsys)
    assert_refused(code, err, d, before, message=f"cannot write {str(report)!r}: No space left on device")
    assert report.exists() == existing


def test_report_checks_the_release_against_its_receipt_and_the_original(files, capsys) -> None:
    d = files["dir"]
    Manifest.of({"region": randomized_response([1, 2, 3], 2.0)}).write(d / "other.json")
    internal = report_args(files, "--out", d / "r.html")
    internal[internal.index(files["manifest"])] = d / "other.json"
    cases = [
        (["report", "--manifest", d / "other.json", "--released", files["released"], "--public", d / "p.html"],
         "released with another manifest"),
        (internal, "released with another manifest"),
        (["report", files["csv"], "--manifest", files["manifest"], "--released", files["csv"],
          "--public", d / "p.html"], "identical to the original"),
    ]
    before = digests(d)
    for args, message in cases:
        code, _, err = run(args, capsys)
        assert_refused(code, err, d, before, message=message)
    # the original as the release, without DATA: refused, since nothing shows it is a release
    code, out, err = run(["report", "--manifest", files["manifest"], "--released", files["csv"],
                          "--public", d / "p.html", "--quiet"], capsys)
    assert_refused(code, err, d, before, message=f"cannot tell that {str(files['csv'])!r} is a release")
    assert f"no release receipt beside {str(files['csv'])!r} (data.csv.receipt.json)" in err


# ------------------------------------------------------------------ the demo

def test_demo_never_removes_the_key_file(tmp_path: Path, capsys) -> None:
    out = tmp_path / "demo"
    assert run(["demo", "--rows", "1000", "--out", out, "--quiet"], capsys)[0] == 0
    key = out / "private" / "mykey"
    assert main(["keygen", str(key)]) == 0
    capsys.readouterr()
    before = digests(tmp_path)
    code, _, err = run(["demo", "--rows", "1000", "--out", out, "--key-file", key, "--force", "--quiet"], capsys)
    assert_refused(code, err, tmp_path, before, message=f"would overwrite the input {str(key)!r}")
    code, _, err = run(["demo", "--rows", "1000", "--out", out, "--key-file", key, "--quiet"], capsys)
    assert_refused(code, err, tmp_path, before, message="would overwrite the input")  # before "pass --force"


def wait_for_demo_work(proc: subprocess.Popen, out: Path) -> None:
    """Wait until the child demo has written something into its work folder inside ``out``."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        work = [p for p in out.glob(f".demo{atomic.TMP_TAG}*")] if out.is_dir() else []
        if work and any(f.is_file() and f.stat().st_size > 0 for f in work[0].rglob("*")):
            return
        if proc.poll() is not None:
            pytest.fail(f"the child ended before writing: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the child never started writing")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_demo_interrupted_then_a_clean_run(tmp_path: Path, capsys, sig: int) -> None:
    out = tmp_path / "demo"
    proc = subprocess.Popen([sys.executable, "-m", "pramkit", "demo", "--rows", "200000", "--out", str(out),
                             "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_demo_work(proc, out)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGTERM:  # the work folder is removed, and so is the folder the demo made
        assert proc.returncode == 143 and "Traceback" not in err and err.strip() == "", err
        assert temporaries(tmp_path) == [] and not out.exists()
    else:  # kill -9 cannot clean up: the work folder stays, inside --out
        assert proc.returncode == -signal.SIGKILL
        assert [p.name for p in out.iterdir()][0].startswith(f".demo{atomic.TMP_TAG}{proc.pid}.")
    code, _, err = run(["demo", "--rows", "1000", "--out", out, "--quiet"], capsys)
    assert code == 0, err
    removed = [line for line in err.splitlines() if "temporary file(s)" in line]  # other notes may come
    if sig == signal.SIGTERM:
        assert removed == []
    else:
        assert len(removed) == 1 and removed[0].startswith(
            f"pramkit demo: note: removed 1 temporary file(s) of the demo in {str(out)!r} left by an interrupted run")
    assert temporaries(tmp_path) == [] and sorted(p.name for p in out.iterdir()) == ["private", "public"]


def test_demo_into_a_mount_point(tmp_path: Path, capsys) -> None:
    """--out may be a file system of its own: the work folder lives inside it."""
    with tmpfs(tmp_path / "mnt", "size=32m", "a mount point as --out") as mnt:
        for extra in ([], ["--force"]):
            code, _, err = run(["demo", "--rows", "1000", "--out", mnt, "--quiet", *extra], capsys)
            assert code == 0 and "error" not in err, err
            assert sorted(p.name for p in mnt.iterdir()) == ["private", "public"]
            assert temporaries(mnt) == []


# ------------------------------------------------------------------ the Spark engine

def spark_args(files: dict[str, Path], out: Path, *extra) -> list:
    return ["apply", files["parquet"], "--manifest", files["manifest"], "--out", out, "--engine", "spark",
            "--spark-master", "local[1]", "--quiet", *extra]


@pytest.fixture(scope="module")
def made_spark_release(made_files: Path, spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A good release of the module's Parquet file written by Spark (a folder of part files) with its receipt,
    made once for the module: the earlier release that the Spark tests' failed runs must leave as it was."""
    d = tmp_path_factory.mktemp("spark_release")
    files = {"parquet": made_files / "data.parquet", "manifest": made_files / "m.json"}
    assert main([str(a) for a in spark_args(files, d / "spark.parquet", "--key-file", made_files / "key")]) == 0
    return d / "spark.parquet"


def earlier_spark_release(made: Path, folder: Path) -> Path:
    """The test's own copy of :func:`made_spark_release` (the folder and its receipt) in ``folder``."""
    import shutil

    out = folder / made.name
    shutil.copytree(made, out)
    shutil.copy2(receipt_path(made), receipt_path(out))
    return out


@pytest.mark.parametrize("existing", [False, True], ids=["new", "force-over-good"])
def test_spark_output_on_a_full_disk(files, spark, request, capsys, monkeypatch, existing: bool) -> None:
    d = files["dir"]
    out = d / "spark.parquet"
    if existing:  # the earlier release is made (once for the module) only where it is needed
        earlier_spark_release(request.getfixturevalue("made_spark_release"), d)
        assert check_release(out, files["manifest"]) is None  # a good release with its receipt
    before = digests(d)
    monkeypatch.setattr(atomic, "_fsync", enospc)
    code, _, err = run(spark_args(files, out, *(["--force"] if existing else [])), capsys)
    assert_refused(code, err, d, before, message=f"cannot write {str(out)!r}: No space left on device")
    assert out.exists() == existing


def test_spark_failed_release_keeps_the_receipt_of_the_earlier_one(files, spark, made_spark_release, capsys,
                                                                  monkeypatch) -> None:
    d = files["dir"]
    out = earlier_spark_release(made_spark_release, d)
    Manifest.of({"region": randomized_response([1, 2, 3], 2.0)}).write(d / "other.json")
    before = digests(d)
    fail_commit_of(monkeypatch, out.name)
    args = spark_args(files, out, "--force")
    args[3] = d / "other.json"  # another manifest: the receipt (no digest of a folder) would name it
    code, _, err = run(args, capsys)
    assert_refused(code, err, d, before, message=f"cannot write {str(out)!r}")
    assert check_release(out, files["manifest"]) is None


def test_spark_unknown_category_is_one_line(files, spark, capfd) -> None:
    d = files["dir"]
    (d / "unknown.csv").write_text("region,sex\n1,m\n7,f\n2,m\n")
    before = digests(d)
    code = main([str(a) for a in ["apply", d / "unknown.csv", "--manifest", files["manifest"], "--out",
                                  d / "z.parquet", "--engine", "spark", "--spark-master", "local[1]"]])
    _, err = capfd.readouterr()  # file descriptor 2: what Spark's Java process would print too
    assert_refused(code, err, d, before, message="column 'region', row 2: value '7' is not one of its categories")


def test_spark_bogus_master_is_one_line(files) -> None:
    """In a new process (the Java process fails to start): its console output is not shown."""
    pytest.importorskip("pyspark")
    d = files["dir"]
    before = digests(d)
    args = ["apply", files["csv"], "--manifest", files["manifest"], "--out", d / "z.parquet", "--engine", "spark",
            "--spark-master", "bogus://x"]
    proc = subprocess.run([sys.executable, "-m", "pramkit", *map(str, args)], capture_output=True, text=True,
                          timeout=300)
    assert proc.stdout == ""
    assert_refused(proc.returncode, proc.stderr, d, before, message="cannot start Spark with master 'bogus://x': ")


@pytest.mark.parametrize("failing", [1, 2], ids=["record", "manifest"])
@pytest.mark.parametrize("existing", [False, True], ids=["new", "force-over-good"])
def test_design_writes_its_manifest_and_record_as_a_pair(files, capsys, monkeypatch, failing: int,
                                                         existing: bool) -> None:
    """A full disk while writing either file of a design leaves neither (or the earlier pair as it was)."""
    d = files["dir"]
    args = ["design", files["csv"], "--vars", "region,sex", "--epsilon", "2", "--exact-frequencies",
            "--out", d / "designed.json", "--quiet"]
    if existing:
        assert run(args, capsys)[0] == 0
    before = digests(d)
    monkeypatch.setattr(atomic.Staged, "write", _fail_on_call(atomic.Staged.write, failing))
    code, _, err = run(args + (["--force"] if existing else []), capsys)
    assert_refused(code, err, d, before, message="No space left on device")
    assert (d / "designed.json").exists() == existing and (d / "designed.design-record.json").exists() == existing
