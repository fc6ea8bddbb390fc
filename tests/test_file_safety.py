"""Nothing lost, nothing half-written, no input overwritten: fault injection on every output.

Each case checks the same things: the exit status, one line on stderr, the
input files unchanged (digest before and after), no partial output under
the final name, and no temporary file left behind.
"""

from __future__ import annotations

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

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from pramkit import atomic
from pramkit import io as pio
from pramkit.cli import main
from pramkit.design.classic import randomized_response
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


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(11)
    n = 12_000  # several CSV blocks of 64 KB
    frame = pd.DataFrame({
        "region": rng.integers(1, 4, n),
        "sex": rng.choice(["m", "f"], n),
        "age": rng.integers(0, 400, n),
        "income": rng.normal(1000, 100, n).round(1),
    })
    d = tmp_path
    frame.to_csv(d / "data.csv", index=False)
    pio.write_table(frame, d / "data.parquet")
    pyreadstat.write_dta(frame, str(d / "data.dta"))
    pyreadstat.write_sav(frame, str(d / "data.sav"))
    Manifest.of({
        "region": randomized_response([1, 2, 3], 1.0),
        "sex": randomized_response(["m", "f"], 0.5),
    }).write(d / "m.json")
    assert main(["keygen", str(d / "key")]) == 0
    return {"dir": d, "csv": d / "data.csv", "parquet": d / "data.parquet", "dta": d / "data.dta",
            "sav": d / "data.sav", "manifest": d / "m.json", "key": d / "key"}


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
    import matplotlib.figure

    d = files["dir"]
    before = digests(d)
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", enospc)
    code, _, err = run(["risk", files["csv"], "--keys", "region,sex,age", "--sampling-fraction", "0.1",
                        "--model", "independence", "--plot", d / "fit.png"], capsys)
    assert_refused(code, err, d, before, message="cannot write '")


# ------------------------------------------------------------------ a real small disk

@pytest.fixture
def small_disk(tmp_path: Path):
    """A 256 KB tmpfs (needs root and a kernel that lets us mount); skipped otherwise."""
    if not ROOT:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode(errors='replace').strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


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
    ro.mkdir()
    if ROOT:
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)], capture_output=True)
        if proc.returncode != 0:
            pytest.skip("running as root, which ignores permissions, and cannot mount a read-only tmpfs")
        try:
            yield ro
        finally:
            subprocess.run(["umount", str(ro)], capture_output=True)
    else:
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
    ]


def test_readonly_folder(files, readonly_dir: Path, capsys) -> None:
    d = files["dir"]
    before = digests(d)
    for args in output_commands(files, readonly_dir) + [["reproduce", "ruiz", "--out", readonly_dir / "sub"]]:
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

#: A child ``pramkit apply`` whose writer is slowed down, so that it can be killed mid-file.
SLOW_APPLY = textwrap.dedent("""
    import sys, time
    import pramkit.io as pio
    from pramkit.cli import main
    original = pio.TableWriter._write_chunk
    def slow(self, table):
        original(self, table)
        time.sleep(0.05)
    pio.TableWriter._write_chunk = slow
    sys.exit(main(sys.argv[1:]))
""")


def start_slow_apply(files: dict[str, Path], out: Path) -> subprocess.Popen:
    args = [str(a) for a in apply_args(files, out, "csv", "--chunk-rows", "20")]
    proc = subprocess.Popen([sys.executable, "-c", SLOW_APPLY, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
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
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1
    assert digests(d) == before and temporaries(d) == [] and not out.exists()


def test_stale_temporaries_of_other_outputs_and_live_runs_are_left_alone(files, capsys) -> None:
    d = files["dir"]
    other = d / f".other.csv{atomic.TMP_TAG}1.abcdef12"
    other.write_text("someone else's")
    live = d / f".out.csv{atomic.TMP_TAG}{os.getppid()}.abcdef12"  # a process that is alive
    live.write_text("being written")
    legacy = d / ".out.csv.abcd_123.tmp"  # what earlier versions left behind
    legacy.write_text("old")
    code, _, err = run(apply_args(files, d / "out.csv"), capsys)
    assert code == 0 and "removed 1 temporary file(s)" in err
    assert other.exists() and live.exists() and not legacy.exists()


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
