"""Audits of a release: that what was applied is what was published, and the engine's privacy
measured from the outside (docs/audit.md).

* :func:`pramkit.audit.manifest.manifest_audit` -- public files only: the stated epsilons, the
  ledger's composition, the noisy counts, the certificates and the receipt, recomputed;
* :func:`pramkit.audit.release.release_audit` -- private: the original against the released
  file through the matrices (and, with the key, the release derived again);
* :func:`pramkit.audit.engine.engine_audit` -- black box: an empirical epsilon lower bound of the
  real engine per variable.

:func:`audit` runs the audits its inputs allow and returns one :class:`AuditResult`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pramkit.audit.result import AuditResult, Check
from pramkit.errors import ParameterError
from pramkit.validate import SPARK_MASTER, engine_name

__all__ = ["AuditResult", "Check", "audit"]


def audit(manifest: str | Path, *, released: str | Path | None = None, original: str | Path | None = None,
          key: Any = None, engine: bool = False, trials: int | None = None, sep: str = ",",
          encoding: str = "utf-8", backend: str = "local", spark_master: str = SPARK_MASTER) -> AuditResult:
    """Audit a release: the manifest (public), the release (with the original), the engine.

    Parameters
    ----------
    manifest : str or pathlib.Path
        The published manifest.
    released : str or pathlib.Path, optional
        The released file, or folder of part files (its receipt beside it): checked against the
        manifest, and, with ``original``, against the original.
    original : str or pathlib.Path, optional
        The original file: adds the release audit (needs ``released``).
    key : SecretKey, bytes, str or path, optional
        The secret key (needs ``original``): the release is derived again and compared byte for byte.
    engine : bool
        Add the black-box engine audit (an empirical epsilon lower bound per variable).
    trials : int, optional
        Trials per input of the engine audit (default: chosen for a precision of 0.02 nats).
    sep, encoding : str
        The field separator and character encoding of the CSV files (:func:`pramkit.io.csv_dialect`).
    backend : str
        Where the release audit's passes over records run (``engine`` is the engine audited, not where):
        ``"local"`` (default), or ``"spark"``: aggregated by Spark and decided by the same code
        (:func:`pramkit.audit.release.release_audit`), the same checks and messages.  It needs
        ``original``; the manifest's checks read the released file on this machine.
    spark_master : str
        Spark's master URL, for ``backend="spark"``.

    Returns
    -------
    AuditResult

    Raises
    ------
    ParameterError
        ``original`` without ``released``, ``key`` without ``original``, an unknown ``backend``, or
        ``backend="spark"`` without ``original`` or for a synthesized release.
    PramkitError
        A file that is missing or is not what it should be (the manifest, a table).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.manifest import Manifest
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).write(pathlib.Path(d) / "m.json")
    ...     result = audit(path, engine=True, trials=20_000)
    >>> result.passed, result.audits, 0.8 < result.empirical_epsilons()["sex"] <= 1.0
    (True, ('manifest', 'engine'), True)
    """
    from pramkit.audit.engine import engine_audit
    from pramkit.audit.manifest import manifest_audit, read_manifest
    from pramkit.audit.release import release_audit
    from pramkit.engine.rng import resolve_key
    from pramkit.validate import csv_separator, text_encoding

    if original is not None and released is None:
        raise ParameterError("the release audit needs the released file as well as the original (--released)")
    if key is not None and original is None:
        raise ParameterError("the key is checked by deriving the release again: give the original too (--original)")
    if engine_name(backend, "backend") == "spark" and original is None:
        raise ParameterError("the Spark backend runs the release audit's passes over records: give the original "
                             "and the released file (--original, --released), or leave out --backend spark")
    start = time.perf_counter()
    if key is not None:
        key = resolve_key(key)  # an unreadable key is refused before any work
    text_encoding(encoding), csv_separator(sep)  # checked before any work
    synthesis = _synthesis_manifest(manifest)
    if synthesis is not None and backend == "spark":
        raise ParameterError("a synthesized release is audited on this machine: leave out --backend spark")
    if synthesis is not None:
        return _synthesis_audit(synthesis, released, original, key, engine, sep, encoding, start)
    audits, checks = ["manifest"], manifest_audit(manifest, released, sep=sep, encoding=encoding)
    if original is not None and released is not None:
        audits.append("release")
        checks += release_audit(manifest, original, released, key=key, sep=sep, encoding=encoding, backend=backend,
                                spark_master=spark_master)
    if engine:
        audits.append("engine")
        checks += engine_audit(read_manifest(manifest)[0], trials=trials)
    return AuditResult(tuple(audits), tuple(checks), time.perf_counter() - start)


def _synthesis_manifest(path: str | Path) -> dict[str, Any] | None:
    """The manifest's JSON when it is a synthesized release's (``pramkit synthesize``), else ``None``."""
    from pramkit._json import read_json
    from pramkit.audit.synthesis import is_synthesis
    from pramkit.errors import ManifestError

    p = Path(path)
    if not p.is_file():
        return None
    try:
        raw = read_json(p, f"manifest {str(p)!r}", ManifestError)
    except ManifestError:
        return None
    return raw if is_synthesis(raw) else None


def _synthesis_audit(raw: dict[str, Any], released: str | Path | None, original: str | Path | None, key: Any,
                     engine: bool, sep: str, encoding: str, start: float) -> AuditResult:
    """The audit of a synthesized release: its manifest, its file, the original and the key."""
    from pramkit.audit.synthesis import manifest_checks, original_checks, release_checks

    if engine:
        raise ParameterError("a synthesized release has no perturbation engine to audit: leave out --engine")
    audits, checks = ["synthesis"], manifest_checks(raw)
    if released is not None:
        checks += release_checks(raw, released, sep=sep, encoding=encoding)
    if original is not None and released is not None:
        audits.append("release")
        checks += original_checks(raw, original, released, key=key, sep=sep, encoding=encoding)
    return AuditResult(tuple(audits), tuple(checks), time.perf_counter() - start)
