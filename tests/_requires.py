"""What some tests need beyond Python packages: Java (the Spark engine), R (``Rscript``) and Chromium.

A test that needs one that is absent is skipped, with one line saying what is missing; CI sets
``PRAMKIT_REQUIRE_SPARK=1``, ``PRAMKIT_REQUIRE_R=1`` and ``PRAMKIT_REQUIRE_BROWSER=1``, so that
there an absent one fails the tests instead of skipping them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REQUIRE_SPARK = bool(os.environ.get("PRAMKIT_REQUIRE_SPARK"))
REQUIRE_R = bool(os.environ.get("PRAMKIT_REQUIRE_R"))


def java() -> str | None:
    """The Java that PySpark would start: ``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        path = Path(home) / "bin" / "java"
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which("java")


def require_spark() -> None:
    """Skip the calling test (or module, at import) when PySpark or Java is absent; fail when CI requires Spark.

    Raises
    ------
    RuntimeError
        ``PRAMKIT_REQUIRE_SPARK`` is set and Java is absent (PySpark absent: its ImportError).
    """
    if REQUIRE_SPARK:
        import pyspark  # noqa: F401  (CI must run these tests, not skip them)

        if java() is None:
            raise RuntimeError("PRAMKIT_REQUIRE_SPARK is set but Java is absent (set JAVA_HOME or put java on PATH)")
        return
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
    if java() is None:
        pytest.skip("Java is not installed, which Spark needs (JAVA_HOME unset and no java on PATH)",
                    allow_module_level=True)


def rscript() -> str:
    """The path of ``Rscript``; skip the calling test when R is absent, fail when CI requires R."""
    found = shutil.which("Rscript")
    if found is None:
        if REQUIRE_R:
            pytest.fail("Rscript is required (PRAMKIT_REQUIRE_R) but absent")
        pytest.skip("Rscript is not installed (CI installs r-base-core, r-cran-haven and r-cran-jsonlite)")
    return found


#: Marks a test that runs R: skipped in one line when Rscript is absent, unless CI requires R.
needs_r = pytest.mark.skipif(shutil.which("Rscript") is None and not REQUIRE_R,
                             reason="Rscript is not installed (CI installs r-base-core, r-cran-haven and r-cran-jsonlite)")
