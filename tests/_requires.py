"""What the Spark tests need beyond Python packages: Java.

A test that needs it is skipped when it is absent, with one line saying so; CI sets
``PRAMKIT_REQUIRE_SPARK=1``, so that there an absent Java fails the tests instead of skipping them.
(The tests that need R or Chromium skip in one line the same way, in their own modules, unless
``PRAMKIT_REQUIRE_R=1`` or ``PRAMKIT_REQUIRE_BROWSER=1``.)
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REQUIRE_SPARK = bool(os.environ.get("PRAMKIT_REQUIRE_SPARK"))


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

