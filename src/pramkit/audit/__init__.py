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

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pramkit.audit.result import AuditResult, Check
from pramkit.errors import ParameterError, PramkitError
from pramkit.validate import SPARK_MASTER, engine_name

__all__ = ["AuditRequest", "AuditResult", "Check", "audit", "audit_new_ids", "audit_suppression", "audit_synthesis"]


def audit(manifest: str | Path, *, released: str | Path | None = None, original: str | Path | None = None,
          key: Any = None, engine: bool = False, trials: int | None = None, sep: str = ",",
          encoding: str = "utf-8", backend: str = "local", spark_master: str = SPARK_MASTER,
          na_values: Sequence[str] | None = None) -> AuditResult:
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
    na_values : sequence of str, optional
        The texts the release read as missing (default: what its manifest records, ``input.na_values``, or
        the synthesis manifest's ``na_values``).

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
    from pramkit.engine.receipt import post_processing_of
    from pramkit.errors import DataError, ManifestError
    from pramkit.kernel.rng import resolve_key
    from pramkit.validate import csv_separator, text_encoding

    if original is not None and released is None:
        raise ParameterError("the release audit needs the released file as well as the original (--released)")
    if key is not None and original is None:
        raise ParameterError("the key is checked by deriving the release again: give the original too (--original)")
    if engine_name(backend, "backend") == "spark" and original is None:
        raise ParameterError("the Spark backend runs the release audit's passes over records: give the original "
                             "and the released file (--original, --released), or leave out --backend spark")
    start = time.perf_counter()
    for what, path in (("original", original), ("released", released)):
        if path is not None and not Path(path).exists():  # a mistake in the command, not a finding
            raise DataError(f"{what} file {str(path)!r} does not exist")
        if path is not None and Path(path).is_dir():  # a folder that is no table (no parts, stray files,
            from pramkit.io import iter_batches  # parts of other columns): a mistake in the command too

            iter_batches(path, sep=sep, encoding=encoding)
    if key is not None:
        key = resolve_key(key)  # an unreadable key is refused before any work
    text_encoding(encoding), csv_separator(sep)  # checked before any work
    request = AuditRequest(None if released is None else Path(released), None if original is None else Path(original),
                           key, engine, backend, sep, encoding, None if na_values is None else tuple(na_values), start)
    own = _audited_on_its_own(manifest, request)  # a public file whose method audits it (pramkit.methods)
    if own is not None:
        return own
    try:
        read_manifest(manifest)
    except ManifestError as exc:  # a forged field the reader refuses: failed, named, and nothing more to audit
        return _unreadable_audit(manifest, exc, start)
    refused = _refused_receipt(released)
    if refused is not None:  # a receipt no reader takes: failed, named; the manifest is audited alone
        checks = [*manifest_audit(manifest, sep=sep, encoding=encoding), refused,
                  *public_field_checks(manifest, None, None, None, na_values)]
        return AuditResult(("manifest",), tuple(checks), time.perf_counter() - start)
    audits, checks = ["manifest"], manifest_audit(manifest, released, sep=sep, encoding=encoding)
    post = post_processing_of(released)
    applied = released
    if post is not None:  # a resampled file: post-processing of its release, whose chain is audited instead
        audits.append("post-processing")
        applied = Path(released).parent / Path(str(post.get("release"))).name  # type: ignore[arg-type]
        checks.append(_post_processing_check(Path(released), applied, post))  # type: ignore[arg-type]
    found: list[Check] | None = None
    if original is not None and applied is not None:
        audits.append("release")
        found = _release_checks(manifest, original, applied, key=key, sep=sep, encoding=encoding,
                                backend=backend, spark_master=spark_master, na_values=na_values)
        checks += found
    named = any(c.subject == "receipt" and c.field == "manifest sha256" and c.passed for c in checks)
    checks += public_field_checks(manifest, released, original, key, na_values, sep=sep, encoding=encoding,
                                  release_checks=found, names_manifest=named, manifest_checks=checks,
                                  parent=Path(applied) if post is not None and applied is not None else None)
    if engine:
        audits.append("engine")
        checks += engine_audit(read_manifest(manifest)[0], trials=trials)
    return AuditResult(tuple(audits), tuple(checks), time.perf_counter() - start)


@dataclasses.dataclass(frozen=True)
class AuditRequest:
    """What ``pramkit audit`` was given besides the public file: the released file, the original, the key, the
    engine and backend asked for, how the files are read, and when the audit started."""

    released: Path | None
    original: Path | None
    key: Any
    engine: bool
    backend: str
    sep: str
    encoding: str
    na_values: tuple[str, ...] | None
    start: float

    def refuse(self, what: str, *, key: bool = False) -> None:
        """Refuse a backend or an engine (and, with ``key``, a key) that ``what`` has no use for, in one line."""
        if self.backend == "spark" or self.engine or (key and self.key is not None):
            extra = " and --key-file (nothing was drawn at random)" if key else ""
            raise ParameterError(f"{what} is audited on this machine, with no engine: leave out --backend spark, "
                                 f"--engine{extra}")


def _audited_on_its_own(manifest: str | Path, request: AuditRequest) -> AuditResult | None:
    """The audit of a public file its release method audits on its own (a kind whose declaration names an audit:
    :attr:`pramkit.methods.PublicFile.audit`), else ``None``."""
    import importlib

    from pramkit.methods import public_files

    for kind, public in public_files().items():
        if public.audit is None:
            continue
        raw = _public_json(manifest, kind)
        if raw is not None:
            module, _, name = public.audit.partition(":")
            audited: AuditResult = getattr(importlib.import_module(module), name)(raw, Path(manifest), request)
            return audited
    return None


def _public_json(path: str | Path, kind: str) -> dict[str, Any] | None:
    """The JSON of a public file when it is of ``kind`` (:func:`pramkit.methods.file_kind`), else ``None``."""
    from pramkit._json import read_json
    from pramkit.errors import ManifestError
    from pramkit.methods import file_kind

    p = Path(path)
    if not p.is_file():
        return None
    try:
        raw = read_json(p, f"manifest {str(p)!r}", ManifestError)
    except ManifestError:
        return None
    return raw if file_kind(raw) == kind else None


def audit_suppression(raw: dict[str, Any], receipt: Path, request: AuditRequest) -> AuditResult:
    """The audit of a release by local suppression (its receipt given as the manifest): every field of its receipt
    (k-anonymity recounted in the released file), and, with the original, that the released file is the original
    with key values made missing and nothing else changed."""
    from pramkit.audit.declared import FieldContext, field_checks

    request.refuse("a release by local suppression", key=True)
    ctx = FieldContext("suppression receipt", raw, audit="suppression", subject="receipt", manifest_path=receipt,
                       released=request.released, original=request.original, na_values=request.na_values,
                       sep=request.sep, encoding=request.encoding)
    audits, checks = ["suppression"], field_checks(ctx)
    if request.original is not None and request.released is not None:
        audits.append("release")
        checks.append(_suppressed_only(raw, request.original, request.released, request.sep, request.encoding, ctx))
    return AuditResult(tuple(audits), tuple(checks), time.perf_counter() - request.start)


def _suppressed_only(raw: dict[str, Any], original: Path, released: Path, sep: str, encoding: str,
                     ctx: Any) -> Check:
    """The released file against the original: the same columns and rows, every value kept, except key values
    made missing."""
    from pramkit.suppress import changed_cells

    keys = [k for k in raw.get("keys") or [] if isinstance(k, str)]
    na = ctx.na_values if ctx.na_values is not None else tuple(raw.get("na_values") or ())
    try:
        found = changed_cells(original, released, keys, na_values=na, sep=sep, encoding=encoding)
    except PramkitError as exc:
        return Check("release", "file", "values", False, f"the released file cannot be read against the original: "
                                                         f"{exc}")
    if found:
        return Check("release", "file", "values", False, found)
    return Check("release", "file", "values", True, "the released file is the original with key values made "
                 "missing, every other value as it was")


def audit_new_ids(raw: dict[str, Any], receipt: Path, request: AuditRequest) -> AuditResult:
    """The audit of a file with new ids (``pramkit new-ids``; its receipt given as the manifest): every field of
    the receipt; with the original, the same records; with the key too, the file derived again."""
    from pramkit.audit.declared import FieldContext, field_checks

    request.refuse("a file with new ids")
    ctx = FieldContext("new-ids receipt", raw, audit="new ids", subject="receipt", manifest_path=receipt,
                       released=request.released, original=request.original, key=request.key,
                       na_values=request.na_values, sep=request.sep, encoding=request.encoding)
    audits, checks = ["new ids"], field_checks(ctx)
    if request.original is not None and request.released is not None:
        audits.append("release")
        checks.append(_renumbered_only(raw, request.original, request.released, request.key, request.sep,
                                       request.encoding, request.na_values))
    return AuditResult(tuple(audits), tuple(checks), time.perf_counter() - request.start)


def _renumbered_only(raw: dict[str, Any], original: Path, released: Path, key: Any, sep: str, encoding: str,
                     na_values: Sequence[str] | None) -> Check:
    """The released file against the original: with the key, derived again byte for byte; without it, the same
    records but for the id column, and as many ids as the original has distinct values of it."""
    import tempfile

    from pramkit.defaults import NA_VALUES
    from pramkit.engine.ids import new_ids_file
    from pramkit.io import read_table, sha256_of

    column, shuffle = str(raw.get("column")), str(raw.get("shuffle"))
    na = NA_VALUES if na_values is None else tuple(na_values)
    try:
        if key is not None:
            with tempfile.TemporaryDirectory() as d:
                again = new_ids_file(original, column, Path(d) / released.name, key=key, shuffle=shuffle,
                                     na_values=na, sep=sep, encoding=encoding)
                same = again.sha256 == sha256_of(released)
            return Check("release", "file", "derived again with the key", same,
                         "the key reproduces the released file byte for byte" if same else
                         "the original, given new ids with the key, is not the released file")
        before = read_table(original, na_values=(), sep=sep, encoding=encoding)
        after = read_table(released, na_values=(), sep=sep, encoding=encoding)
    except PramkitError as exc:
        return Check("release", "file", "values", False, f"the released file cannot be read against the original: "
                                                         f"{exc}")
    rest = [c for c in before.columns if c != column]
    same_columns = list(before.columns) == list(after.columns)
    same_rows = same_columns and sorted(map(tuple, before[rest].to_numpy().tolist())) == sorted(
        map(tuple, after[rest].to_numpy().tolist()))
    groups = before[column].nunique(dropna=False) == after[column].nunique(dropna=False) if same_columns else False
    ok = bool(same_rows and groups)
    return Check("release", "file", "values", ok, "the released file holds the original's records, every value but "
                 f"the ids as it was, with one new id for each value of {column}" if ok else
                 "the released file does not hold the original's records with new ids alone")


def audit_synthesis(raw: dict[str, Any], manifest: Path, request: AuditRequest) -> AuditResult:
    """The audit of a synthesized release: its manifest, its file, the original and the key."""
    from pramkit.audit.declared import FieldContext, field_checks
    from pramkit.audit.synthesis import manifest_checks, original_checks, release_checks
    from pramkit.defaults import NA_VALUES

    if request.backend == "spark":
        raise ParameterError("a synthesized release is audited on this machine: leave out --backend spark")
    if request.engine:
        raise ParameterError("a synthesized release has no perturbation engine to audit: leave out --engine")
    released, original, sep, encoding = request.released, request.original, request.sep, request.encoding
    na = request.na_values if request.na_values is not None else tuple(raw.get("na_values", NA_VALUES))
    ctx = FieldContext("synthesis manifest", raw, audit="synthesis", subject="manifest", manifest_path=manifest,
                       released=released, original=original, key=request.key, na_values=na, sep=sep,
                       encoding=encoding)
    audits, checks = ["synthesis"], manifest_checks(raw)
    if released is not None:
        checks += release_checks(raw, released, sep=sep, encoding=encoding, na_values=na)
    if original is not None and released is not None:
        audits.append("release")
        checks += original_checks(raw, original, released, key=request.key, sep=sep, encoding=encoding,
                                  na_values=na, again=ctx.cache)
    checks += field_checks(ctx)
    return AuditResult(tuple(audits), tuple(checks), time.perf_counter() - request.start)


def _release_checks(manifest: str | Path, original: str | Path, released: str | Path,
                    **options: Any) -> list[Check]:
    """The release audit (the matrices as read, their stated figures set aside), or why it cannot run: files
    that disagree with the manifest are a finding."""
    from pramkit.audit.release import release_audit
    from pramkit.errors import DataError

    try:
        return release_audit(manifest, original, released, **options)
    except DataError as exc:  # the files disagree with the manifest: a finding, not a mistake in the command
        return [Check("release", "file", "read against the manifest", False, str(exc))]


def public_field_checks(manifest: str | Path, released: str | Path | None, original: str | Path | None, key: Any,
                        na_values: Sequence[str] | None, *, sep: str = ",", encoding: str = "utf-8",
                        release_checks: Sequence[Check] | None = None, names_manifest: bool = False,
                        manifest_checks: Sequence[Check] | None = None, parent: Path | None = None) -> list[Check]:
    """Every field of the manifest and of the released file's receipt (and, for a resampled file, of its
    release's receipt, ``parent``) against its declaration (:mod:`pramkit.methods`,
    :func:`pramkit.audit.declared.field_checks`); ``release_checks``: what the release audit found, the
    evidence of the fields the release was made with; ``names_manifest``: the receipt names this manifest;
    ``manifest_checks``: the manifest audit's checks (its certificates re-proved, not proved twice).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.manifest import Manifest
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).write(pathlib.Path(d) / "m.json")
    ...     print([c.field for c in public_field_checks(path, None, None, None, None)])
    ['declared fields']
    """
    from pramkit.audit.declared import FieldContext, field_checks
    from pramkit.audit.manifest import read_raw_manifest
    from pramkit.engine.receipt import read_receipt
    from pramkit.methods import file_kind

    path = Path(manifest)
    raw = read_raw_manifest(path)
    rel = None if released is None else Path(released)
    orig = None if original is None else Path(original)
    ctx = FieldContext("manifest", raw, manifest_path=path, released=rel, original=orig, key=key,
                       na_values=na_values, sep=sep, encoding=encoding)
    shared = {"names manifest": names_manifest,
              **({} if release_checks is None else {"release": list(release_checks)})}
    ctx.cache.update(shared)
    if manifest_checks is not None:
        ctx.cache["manifest checks"] = list(manifest_checks)
    checks = field_checks(ctx)
    for file, subject in ((rel, "receipt"), (parent, "receipt of the release")):
        receipt = read_receipt(file) if file is not None and file.exists() else None
        if receipt is not None:
            kind = "resample receipt" if file_kind(receipt) == "resample receipt" else "receipt"
            checks += field_checks(dataclasses.replace(ctx, kind=kind, raw=receipt, subject=subject, released=file,
                                                       manifest_raw=raw, cache=dict(shared)))
    return checks


def _refused_receipt(released: str | Path | None) -> Check | None:
    """The failed check of a receipt that :func:`pramkit.engine.receipt.read_receipt` refuses (its ``format``
    is not a receipt's), else ``None``."""
    from pramkit.engine.receipt import read_receipt
    from pramkit.errors import DataError

    if released is None or not Path(released).exists():
        return None
    try:
        read_receipt(released)
    except DataError as exc:
        return Check("manifest", "receipt", "format", False, f"every reader refuses the receipt: {exc}")
    return None


def _post_processing_check(released: Path, parent: Path, post: dict[str, Any]) -> Check:
    """The line that says a resampled file is audited as post-processing of its release."""
    there = parent.is_file()
    return Check("manifest", "file", "post-processing", there,
                 f"{released.name} is post-processing ({post.get('method')}) of the release {parent.name}: its "
                 "values are draws from a model fitted to that release, not tested against the matrices; the "
                 "release is audited instead, with its receipt and the digest that ties the two" +
                 ("" if there else f", but {parent.name} is not beside it"))


def _unreadable_audit(manifest: str | Path, exc: BaseException, start: float) -> AuditResult:
    """A manifest the reader refuses: the field it names fails (exit 1), and every other field is checked."""
    from pramkit.audit.declared import FieldContext, field_checks
    from pramkit.audit.manifest import read_raw_manifest
    from pramkit.audit.stated import validation_checks
    from pramkit.errors import ManifestError

    try:
        raw = read_raw_manifest(Path(manifest))
    except (ManifestError, OSError):
        raise exc from None  # not a manifest at all (missing, not JSON): a mistake in the command
    checks = validation_checks(raw) + [c for c in field_checks(FieldContext("manifest", raw,
                                                                            manifest_path=Path(manifest)))
                                       if not c.passed]
    if all(c.passed for c in checks):
        checks.append(Check("manifest", "manifest", "read", False, f"every other command refuses it: {exc}"))
    checks.append(Check("manifest", "release", "not audited", False,
                        "the manifest does not read, so the release cannot be audited against it"))
    return AuditResult(("manifest",), tuple(checks), time.perf_counter() - start)
