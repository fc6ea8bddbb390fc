"""Shared fixtures."""

from __future__ import annotations

import importlib.util
import os
import random
import secrets
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pramkit.kernel.rng import SecretKey
from pramkit.synthesize_pgm import _cpu_codegen

# XLA's CPU code generation chosen before any test starts JAX, as a fresh command chooses it
# (pramkit.synthesize_pgm.CPU_CODEGEN): a release must not depend on which test ran first in a process.
_cpu_codegen()

#: Real microdata files shipped beside the project (absent in a user's clone).
SDC_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro"


def pytest_configure(config: pytest.Config) -> None:
    """With the tests in parallel processes (pytest-xdist, one per core), each process's BLAS runs on one
    thread.  OpenBLAS starts a thread per core in every process, and its threads wait for one another by
    spinning: on two cores shared by two test processes, a factorisation took 10 to 15 times as long.  The
    processes inherit the setting from the one that starts them (this hook runs there first); a value the
    environment already sets is kept."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(variable, "1")
    if not hasattr(config, "workerinput"):
        _share_compiled_programs(config)
        _quick_spark_jvm()


#: The Java options of the tests' Spark: its just-in-time compiler stops at its first tier (C1).
SPARK_TEST_JVM = "-XX:TieredStopAtLevel=1"


def _quick_spark_jvm() -> None:
    """Spark's Java process, started by a test or by a command a test starts, compiles with its first tier only
    (:data:`SPARK_TEST_JVM`).  The tests' few thousand records make short jobs, most of whose time is Java code
    run once or a few times: the second tier's optimising compiles cost more CPU than they save (the two files of
    Spark tests took 91 s of CPU instead of 116).  What Spark computes does not depend on it.  Passed as the
    driver's options of ``PYSPARK_SUBMIT_ARGS`` (not ``JAVA_TOOL_OPTIONS``, which the JVM announces on standard
    error, where a command's one-line errors are checked); a value the environment sets is kept."""
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-java-options {SPARK_TEST_JVM} pyspark-shell")


def _share_compiled_programs(config: pytest.Config) -> None:
    """One folder of JAX's compiled programs for the whole run (every test process and every command a test
    starts), removed at its end: the fits of the model pgm that tests make again (the same tables balanced and
    systematic, the audit's release made again, a module's release made in both test processes) load their
    programs instead of compiling them, most of a small release's time.  JAX stores a program only if it took
    at least the minimum compile time (a round's take about 0.2 s: the minimum is set to 0), and locks the
    folder only when its size is bounded (two processes write it).  A folder the environment names is kept."""
    import shutil
    import tempfile

    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="pramkit-tests-xla-")
    os.environ.update(JAX_COMPILATION_CACHE_DIR=folder, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                      JAX_COMPILATION_CACHE_MAX_SIZE=str(4 << 30))
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The test files that use the :func:`spark` fixture, each whole (some of their tests start Spark through
    the command line), and the examples of the Spark modules (``pramkit.engine.spark``, ``pramkit.audit.spark``)
    run in one test process (``--dist loadgroup``), so that the run starts one local Spark and pays its first
    slow job once, not once per process."""
    spark_files = {item.path for item in items if "spark" in getattr(item, "fixturenames", ())}
    for item in items:
        spark_example = isinstance(item, pytest.DoctestItem) and "spark" in (item.path.parent.name, item.path.stem)
        if item.path in spark_files or spark_example:
            item.add_marker(pytest.mark.xdist_group("spark"))


def benchmark_module(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` as a module, loaded once per process."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "benchmarks"
                                                      / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]


def sdnist_benchmark() -> ModuleType:
    """``benchmarks/bench_sdnist.py`` as a module, loaded once per process (its configurations, releases and
    corrected tables are what several test files check)."""
    return benchmark_module("bench_sdnist")


@pytest.fixture
def sdc_data() -> Path:
    """Folder of the sdcMicro test files; the test is skipped when it is absent."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    return SDC_DATA


class SeededSecrets:
    """What the package draws from :mod:`secrets` (new keys, the design's noise without a key, fresh words),
    drawn instead from a generator seeded by the test's name: a test that reads a release drawn with a new key
    (an audit's goodness-of-fit tests flag a faithful release with probability 1e-3) passes or fails the
    same way every run, and successive keys of one test still differ."""

    compare_digest = staticmethod(secrets.compare_digest)

    def __init__(self, seed: str) -> None:
        self._draws = random.Random(seed)

    def token_bytes(self, nbytes: int) -> bytes:
        return self._draws.randbytes(nbytes)

    def token_hex(self, nbytes: int) -> str:
        return self._draws.randbytes(nbytes).hex()

    def randbits(self, k: int) -> int:
        return self._draws.getrandbits(k)

    def SystemRandom(self) -> random.Random:  # the name secrets gives it
        return random.Random(self._draws.getrandbits(128))


@pytest.fixture(autouse=True)
def seeded_secrets(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test draws its keys and keyless noise from :class:`SeededSecrets` (in this process; a
    ``pramkit`` started as a subprocess draws from the operating system)."""
    import pramkit.engine.sampling
    import pramkit.kernel.rng
    import pramkit.privacy.geometric

    shim = SeededSecrets(request.node.nodeid)
    for module in (pramkit.kernel.rng, pramkit.engine.sampling, pramkit.privacy.geometric):
        monkeypatch.setattr(module, "secrets", shim)


@pytest.fixture
def key() -> SecretKey:
    """A fixed key: reproducible draws in tests."""
    return SecretKey(bytes(range(32)), "test key")


@pytest.fixture(scope="session")
def spark() -> Any:
    """One local Spark session (``local[2]``) for every test of this process that runs Spark, stopped after the
    last; a ``--spark-master`` or ``master=`` of a test reuses it.  The test is skipped where Spark cannot run
    (tests/_requires.py).  Its shuffles make 4 partitions, not Spark's 200: the tests' few thousand records
    would spread over 200 mostly empty tasks, each with its fixed cost."""
    from _requires import require_spark

    require_spark()
    from pramkit.engine import spark as ps

    session = ps.session("local[2]")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def chromium() -> Any:
    """Headless Chromium (Debian's, driven by Playwright), one for a module's browser tests; the test is
    skipped when Playwright or Chromium is absent, unless PRAMKIT_REQUIRE_BROWSER=1 (tests/_browser.py).
    Closed with its module: Playwright's synchronous API runs an event loop in this thread while it is open,
    and a later test calling asyncio.run would find it."""
    import _browser

    with _browser.chromium() as browser:
        yield browser


def assert_refused(folder: Path, args: list, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``pramkit ARGS`` exits 2 with one line on stderr holding ``message``, leaves every file under
    ``folder`` as it was and writes nothing there (no temporary left behind either)."""
    import hashlib

    from pramkit.cli import main

    def digests() -> dict[str, str]:
        return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(folder.rglob("*")) if p.is_file()}

    before = digests()
    capsys.readouterr()
    code = main([str(a) for a in args])
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (args, err)
    assert len(lines) == 1 and "Traceback" not in err, (args, err)
    assert message in lines[0], (args, lines[0])
    assert digests() == before, (args, "an input changed or a file was written")
    assert not any(p.name.startswith(".") for p in folder.iterdir()), (args, "a temporary file was left behind")


def eusilc_export(rows: int | None = None, coded: tuple[str, ...] = ("pl030",), code: str = "-9") -> Any:
    """The EU-SILC file as an office exports it: every column as its text, the not-applicable answers (empty
    fields) of the ``coded`` columns written ``code``; its first ``rows`` records (all by default).  The test
    is skipped when ../shared/data/sdcmicro is absent."""
    import pandas as pd

    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    frame = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", dtype=str, keep_default_na=False)
    frame = frame if rows is None else frame.head(rows)
    for column in coded:
        frame[column] = frame[column].replace("", code)
    return frame


#: Income columns of the EU-SILC file that :func:`silc20` turns into bands.
SILC_INCOMES = ("py010n", "py050n", "py090n", "py100n", "py110n", "py120n", "py130n", "py140n",
                "hy040n", "hy050n", "hy070n", "hy080n", "hy090n")


@pytest.fixture
def silc20(sdc_data: Path) -> Any:
    """The first 300 persons of the EU-SILC file on 20 categorical keys: household size, region, age
    band (missing for the age -1 of the file), sex, economic status (missing under 16), citizenship, equivalised household size and 13
    incomes as bands ``none`` / ``low`` / ``high`` (missing where the file has none)."""
    import numpy as np
    import pandas as pd

    data = pd.read_csv(sdc_data / "eusilc_laeken.csv", dtype={"pl030": str, "hsize": str, "eqSS": str}).head(300)
    out = data[["hsize", "db040", "rb090", "pl030", "pb220a", "eqSS"]].copy()
    out.insert(2, "age", pd.cut(data["age"], [-1, 15, 24, 34, 44, 54, 64, 74, 120],
                                labels=["0-15", "16-24", "25-34", "35-44", "45-54", "55-64", "65-74", "75+"]
                                ).astype(str))
    for name in SILC_INCOMES:
        x = data[name]
        band = np.where(x <= 0, "none", np.where(x < x[x > 0].median(), "low", "high"))
        out[name] = pd.Series(band, index=x.index).where(x.notna(), None)
    return out


#: NIST's CRC excerpt (real ACS records), shared by the tests of the model pgm.
NIST_CRC = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"


def nist_inputs(d: Path, features: list[str], rows: int, rules: str, key: bytes) -> Any:
    """The first ``rows`` records of NIST's excerpt (``features``, as text) written to ``d/o.csv``, the
    ``rules`` to ``d/rules.csv`` and ``key`` to ``d/k.key`` (mode 600); the records as a frame.  Skips when
    the shared data is absent."""
    import pandas as pd

    if not NIST_CRC.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    frame = pd.read_csv(NIST_CRC, dtype=str, keep_default_na=False, usecols=features)[features].head(rows)
    frame.to_csv(d / "o.csv", index=False)
    (d / "rules.csv").write_text(rules)
    (d / "k.key").write_text(key.hex())
    (d / "k.key").chmod(0o600)
    return frame


def run_cli(*args: Any) -> tuple[int, str, str]:
    """``pramkit ARGS`` in this process: its exit status, what it printed and what it said on stderr (each argument
    as text)."""
    import contextlib
    import io

    from pramkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()
