"""Spark sessions, and Spark's failures as one-line pramkit errors.

Failures of Spark and Py4J never escape as such: the public functions of the
Spark engine turn them into one-line errors (:func:`engine_error`), a value that
a worker refuses (an unknown category) into the :class:`~pramkit.errors.DataError`
the local engine raises, with its column and value.  The console output of the
Java process (log4j lines, Java stack traces, the workers' tracebacks) goes to a
temporary log (:func:`jvm_log`), not to the terminal.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, TypeVar

from pramkit import errors
from pramkit.errors import PramkitError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


#: Settings of every session pramkit starts.
_SETTINGS = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",  # 10^4 (default) doubles the time
    # a persisted aggregation (:func:`pramkit.engine.spark.counts.collected`) keeps the partitions adaptive
    # execution coalesces, not spark.sql.shuffle.partitions (200) mostly empty ones, each a task at every read
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


#: Bytes of the end of the Java process's log searched for the reason of a failure to start.
_LOG_TAIL = 64_000


class SparkEngineError(PramkitError):
    """Spark or Py4J failed (Spark could not start, a job failed); the message is one line.

    Examples
    --------
    >>> issubclass(SparkEngineError, PramkitError), str(SparkEngineError("cannot start Spark: no Java"))
    (True, 'cannot start Spark: no Java')
    """


#: A pramkit error raised in a Python worker, as its traceback prints it.
_PRAMKIT_ERROR = re.compile(r"^pramkit\.errors\.(\w+): (.+)$", re.M)
#: An exception line of a Java or Python traceback: ``[Exception in thread "main"] NAME: message``.
_EXCEPTION = re.compile(r'^(?:Exception in thread "[^"]*" )?(?:[\w$]+\.)*([\w$]*(?:Exception|Error)): (.+)$', re.M)
#: What Py4J puts before the Java exception.
_PY4J_PREFIX = re.compile(r"^An error occurred while calling [\w.]+\.\s*:?\s*", re.S)


def engine_error(exc: BaseException, context: str = "the Spark job failed") -> PramkitError:
    """A one-line :class:`~pramkit.errors.PramkitError` for a failure of Spark or Py4J.

    A pramkit error raised in a Python worker (e.g. an unknown category)
    comes back as that error, with its message (column, row and value);
    any other failure as a :class:`SparkEngineError`, ``CONTEXT: reason``,
    where the reason is the message of the innermost exception the text names
    (Python workers) or its first (Java).

    Examples
    --------
    >>> text = ("An exception was thrown from the Python worker:\\nTraceback (most recent call last):\\n"
    ...         "  File ...\\npramkit.errors.DataError: column 'region', row 2: value '7' is not one of ...")
    >>> engine_error(RuntimeError(text))
    DataError("column 'region', row 2: value '7' is not one of ...")
    >>> str(engine_error(RuntimeError("An error occurred while calling o42.parquet.\\n: "
    ...                               "org.apache.spark.SparkException: Job aborted.\\n\\tat org...")))
    'the Spark job failed: Job aborted.'
    """
    text = str(exc) or type(exc).__name__
    own = _PRAMKIT_ERROR.findall(text)
    if own:
        name, message = own[-1]
        cls = getattr(errors, name, None)
        if not (isinstance(cls, type) and issubclass(cls, PramkitError)):
            cls = SparkEngineError
        return cls(message.strip())
    reason = _reason(text)
    if "OutOfMemoryError" in text or (reason.startswith("Exception thrown in awaitResult")
                                      and "OutOfMemoryError" in _log_tail()):
        return SparkEngineError(f"{context}: Spark ran out of memory (java.lang.OutOfMemoryError); give it more "
                                "(spark.driver.memory, spark.executor.memory) or more partitions")
    return SparkEngineError(f"{context}: {reason}")


def _reason(text: str) -> str:
    """The message of the exception a Spark, Py4J or JVM text reports (one line)."""
    text = _PY4J_PREFIX.sub("", text.strip())
    found = _EXCEPTION.findall(text)
    if found:
        # a Python worker's traceback ends with its exception; a Java one starts with it
        _name, message = found[-1] if "Traceback (most recent call last)" in text else found[0]
        return message.strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "no reason given"


_Func = TypeVar("_Func", bound=Callable[..., Any])


def from_spark(exc: BaseException) -> bool:
    """Whether an exception comes from pyspark or py4j (not from pramkit or Python itself).

    Examples
    --------
    >>> from pramkit.errors import DataError
    >>> from_spark(ValueError("x")), from_spark(DataError("x"))
    (False, False)
    """
    return type(exc).__module__.split(".", 1)[0] in ("pyspark", "py4j")


def _one_line_errors(func: _Func) -> _Func:
    """Turn Spark and Py4J exceptions raised by ``func`` into one-line pramkit errors (:func:`engine_error`)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            if not from_spark(exc):
                raise
            raise engine_error(exc) from None

    return wrapper  # type: ignore[return-value]


_log: IO[bytes] | None = None


def jvm_log() -> IO[bytes]:
    """The temporary file (already unlinked) that receives the console output of Spark's Java process.

    Returns
    -------
    file object
        Opened for binary writing and reading; one per process.

    Examples
    --------
    >>> jvm_log() is jvm_log()
    True
    """
    global _log
    if _log is None:
        _log = tempfile.TemporaryFile(prefix="pramkit-spark-")  # noqa: SIM115 (kept open for the session)
    return _log


def _log_tail() -> str:
    """The end of the Java process's console output (read without moving the file's offset)."""
    fd = jvm_log().fileno()
    size = os.fstat(fd).st_size
    start = max(0, size - _LOG_TAIL)
    return os.pread(fd, size - start, start).decode("utf-8", errors="replace")


def _start_java(conf: Any) -> None:
    """Start Spark's Java process with its console output in :func:`jvm_log` (pyspark starts one per process)."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stdout": jvm_log(), "stderr": jvm_log()})
    SparkContext(conf=conf, gateway=gateway)


def _require_pyspark():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import functions as F
    except ImportError:
        raise SparkEngineError('the Spark engine needs pyspark: pip install "pramkit[spark]"') from None
    return F


def _quiet_python_loggers() -> None:
    """Silence the loggers with which pyspark prints a failed query's context on standard error (the failure
    itself becomes one line, :func:`engine_error`)."""
    import logging

    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # pragma: no cover (pyspark before 4.0)
        return
    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


def worker_python() -> str:
    """The Python interpreter Spark's Python workers run: ``PYSPARK_PYTHON`` if set, otherwise this one.

    Spark starts its workers with ``PYSPARK_PYTHON``, by default the first ``python3`` on the ``PATH``; from a
    virtual environment that is not activated, that interpreter lacks pramkit and every pass fails with "No
    module named 'pramkit'". So unless the user chose one, the workers run the interpreter running pramkit
    (and the variable is set so for the Java process this process starts).

    Returns
    -------
    str
        The interpreter's path, also in ``os.environ["PYSPARK_PYTHON"]``.

    Examples
    --------
    >>> import os, sys
    >>> chosen = os.environ.pop("PYSPARK_PYTHON", None)
    >>> worker_python() == sys.executable == os.environ["PYSPARK_PYTHON"]
    True
    >>> os.environ["PYSPARK_PYTHON"] = "/opt/python3"
    >>> worker_python()
    '/opt/python3'
    >>> _ = os.environ.pop("PYSPARK_PYTHON") if chosen is None else os.environ.update(PYSPARK_PYTHON=chosen)
    """
    import os
    import sys

    return os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def session(master: str = "local[2]", *, app_name: str = "pramkit") -> SparkSession:
    """A Spark session (an existing one is reused) with Arrow transfers enabled.

    The first session of a process starts Spark's Java process with its
    console output in :func:`jvm_log` (Spark logs errors only); its Python workers run
    :func:`worker_python` (this interpreter unless ``PYSPARK_PYTHON`` says otherwise).

    Parameters
    ----------
    master : str
        The master URL (``local[N]`` runs Spark in this machine's processes).
    app_name : str
        The application's name.

    Returns
    -------
    pyspark.sql.SparkSession

    Raises
    ------
    SparkEngineError
        Spark cannot start (e.g. a master URL it rejects), in one line

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> spark = session("local[1]")
    >>> session("local[1]") is spark, spark.conf.get("spark.sql.execution.arrow.pyspark.enabled")
    (True, 'true')
    """
    _require_pyspark()
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(_SETTINGS.items()))
    worker_python()
    try:
        if SparkContext._gateway is None:  # no Java process yet
            _start_java(conf)
        spark = SparkSession.builder.config(conf=conf).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        _quiet_python_loggers()
    except Exception as exc:
        if not from_spark(exc):
            raise
        # a Java process that did not start said why on its console only
        reason = _reason(_log_tail() if SparkContext._gateway is None else str(exc))
        raise SparkEngineError(f"cannot start Spark with master {master!r}: {reason}") from None
    return spark


def _quoted(name: str) -> str:
    """A column name as Spark reads it literally (no nested field, no wildcard)."""
    return "`" + name.replace("`", "``") + "`"
