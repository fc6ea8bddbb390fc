"""A workbench release written as the command line writes it, and the script that makes it again.

:func:`export` writes ``OUT/public/`` (released file, receipt, manifest, public
report: may be published) and ``OUT/private/`` (design record, internal
report, the inputs used, the original when it was an upload or the built-in
census, ``summary.json`` and ``reproduce.sh``: never publish them), assembled
in a work folder inside ``OUT`` and moved into place at the end
(:mod:`pramkit.release.folders`): a failed or cancelled export leaves nothing.

:func:`reproduce_script` gives the ``pramkit`` commands (design, apply,
report) that make the same release from the same inputs with the same key:
``sh private/reproduce.sh KEY_FILE OUT``.  The design command's flags come
from :meth:`pramkit.release.choices.DesignChoices.to_args`, the library value
the workbench designed with, so the two cannot disagree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from pramkit._json import to_jsonable
from pramkit._version import __version__
from pramkit.atomic import make_folder, signals_deferred, temporary, write_text_atomic
from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import OutputExistsError, ParameterError
from pramkit.release.folders import PRIVATE, PUBLIC, check_target, move_into_place
from pramkit.workbench.heard import heard
from pramkit.workbench.layout import INPUT_FILES, INPUTS, ORIGINAL, RECODE_MAP, RECODED, RELEASE, SUPPRESSED
from pramkit.workbench.source import Source
from pramkit.workbench.suppression import Suppressed
from pramkit.workbench.views import ApplyView, Designed, ExportView


class Workbench(Protocol):
    """What the export reads of a :class:`pramkit.workbench.session.Workbench`."""

    work: Path
    source: Source | None
    base: Source | None
    recode: dict[str, dict[str, Any]]
    suppression: Suppressed | None
    designed: Designed | None
    applied: ApplyView | None
    risk_keys: tuple[str, ...]
    sampling_fraction: float | None
    weights: str | None
    copied: bool

#: The script's name in ``private/``.
SCRIPT = "reproduce.sh"


def _in_private(wb: Workbench, path: Path) -> str | None:
    """Where a file of the work folder is exported in ``private/`` (None: it stays where it is): a suppression's
    file and receipt where the script's ``pramkit suppress`` writes them."""
    if path.resolve().parent.parent == (wb.work / SUPPRESSED).resolve():
        return path.name
    for folder in (ORIGINAL, INPUTS, RECODED):
        base = (wb.work / folder).resolve()
        if path.resolve().parent == base:
            return {ORIGINAL: path.name, INPUTS: f"{INPUTS}/{path.name}"}.get(folder, _recoded_name(wb))
    return None


def _recoded_name(wb: Workbench) -> str:
    """The recoded copy's name in ``private/``."""
    assert wb.source is not None
    return f"recoded{wb.source.path.suffix.lower() or '.csv'}"


def _opened(wb: Workbench) -> Source:
    """The file as opened (before a recoding and a suppression), which the script reads first."""
    assert wb.source is not None
    return wb.base if wb.base is not None and (wb.recode or wb.suppression is not None) else wb.source


def _shell_path(wb: Workbench, path: Path | str) -> str:
    """A path in the script: under ``$HERE`` (the exported ``private/``) or absolute, quoted."""
    inside = _in_private(wb, Path(path))
    return f'"$HERE"/{shlex.quote(inside)}' if inside is not None else shlex.quote(str(Path(path).resolve()))


def _files_in_private(wb: Workbench) -> dict[Path, str]:
    """Work files the export copies into ``private/``: the original (upload or census) and the design inputs."""
    assert wb.source is not None and wb.designed is not None
    out: dict[Path, str] = {}
    choices = wb.designed.choices
    recode = [wb.work / INPUTS / RECODE_MAP] if wb.recode else []
    base = [] if wb.base is None or wb.base is wb.source else [wb.base.path]
    if wb.suppression is not None:  # the file suppressed, its receipt, and the recoded copy it was made from
        base += [wb.suppression.receipt, wb.suppression.before.path]
    candidates = [wb.source.path, *base, *recode, wb.designed.manifest_file] + (
        [] if choices is None else [getattr(choices, name) for name in INPUT_FILES])
    for path in candidates:
        if path is not None and _in_private(wb, Path(path)) is not None:
            out[Path(path)] = _in_private(wb, Path(path)) or ""
    return out


def _report_flags(wb: Workbench) -> list[str]:
    """The report command's keys and sampling fraction (the risk step's, else the perturbed variables)."""
    assert wb.designed is not None
    keys = wb.risk_keys or wb.designed.variables
    flags = ["--keys", ",".join(keys)]
    if wb.sampling_fraction is not None:
        flags += ["--sampling-fraction", repr(float(wb.sampling_fraction))]
    if wb.weights is not None:
        flags += ["--weights", wb.weights]
    return flags


def _na_flags(wb: Workbench) -> list[str]:
    assert wb.source is not None
    flags = [] if wb.source.na_values == NA_VALUES else ["--na-values", ",".join(wb.source.na_values)]
    if wb.source.sep != CSV_SEP:
        flags += ["--sep", wb.source.sep]
    if wb.source.encoding != CSV_ENCODING:
        flags += ["--encoding", wb.source.encoding]
    return flags


def released_name(wb: Workbench) -> str:
    """The released file's name: ``released`` with the original's suffix."""
    assert wb.source is not None
    return f"released{wb.source.path.suffix.lower() or '.csv'}"


def reproduce_script(wb: Workbench) -> str:
    """The shell script that makes the workbench's release again, byte for byte, with the same key.

    Parameters
    ----------
    wb : Workbench
        A workbench whose release is designed.

    Returns
    -------
    str
        A POSIX shell script: ``sh private/reproduce.sh KEY_FILE OUT`` writes ``OUT/public/``
        and ``OUT/private/`` with the ``pramkit`` commands.

    Raises
    ------
    ParameterError
        Nothing is designed yet.

    Examples
    --------
    >>> import tempfile
    >>> from pramkit.release.choices import DesignChoices
    >>> from pramkit.workbench import Workbench
    >>> with tempfile.TemporaryDirectory() as d:
    ...     wb = Workbench(d)
    ...     _ = wb.open_census(rows=2_000)
    ...     _ = wb.design(["sex"], DesignChoices(epsilon=1.0))
    ...     lines = reproduce_script(wb).splitlines()
    >>> [line.split(" ", 2)[:2] for line in lines if line.startswith("pramkit ")]
    [['pramkit', 'design'], ['pramkit', 'apply'], ['pramkit', 'report']]
    """
    if wb.source is None or wb.designed is None:
        raise ParameterError("design the release first: the script repeats the design, apply and report steps")
    base = _opened(wb)
    recoded = f'"$OUT"/private/{_recoded_name(wb)}' if wb.recode else _shell_path(wb, base.path)
    data = f'"$OUT"/private/{wb.source.path.name}' if wb.suppression is not None else recoded
    released = f'"$OUT"/public/{released_name(wb)}'
    na = " ".join(map(shlex.quote, _na_flags(wb)))
    lines = [
        "#!/bin/sh",
        f"# Makes a pramkit release again, byte for byte, with the key it was made with (pramkit {__version__}).",
        "#   sh reproduce.sh KEY_FILE OUT",
        "# writes OUT/public/ (may be published) and OUT/private/ (never publish it). The key is never in",
        "# this script: keep it apart from the release.",
        "set -eu",
        'if [ "$#" -ne 2 ]; then echo "usage: sh reproduce.sh KEY_FILE OUT" >&2; exit 2; fi',
        'KEY=$1',
        'OUT=$2',
        'HERE=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)',
        *_original_check(wb, base),
        *_key_check(wb),
        'mkdir -p "$OUT"/public "$OUT"/private',
        *([f'pramkit recode {_shell_path(wb, base.path)} --map "$HERE"/{INPUTS}/{RECODE_MAP} --out {recoded} {na} '
           "--quiet".replace("  ", " ")] if wb.recode else []),
        *_suppress_line(wb, recoded, data, na),
        _design_line(wb, data),
        f'pramkit apply {data} --manifest "$OUT"/public/manifest.json --key-file "$KEY" --out {released} '
        f"{na} --quiet".replace("  ", " "),
        f'pramkit report {data} --manifest "$OUT"/public/manifest.json --released {released} '
        + " ".join(map(shlex.quote, _report_flags(wb)))
        + f' --out "$OUT"/private/report.html --public "$OUT"/public/report.html {na} --quiet'.replace("  ", " "),
    ]
    return "\n".join(lines) + "\n"


def _suppress_line(wb: Workbench, before: str, data: str, na: str) -> list[str]:
    """The script's ``pramkit suppress`` step (none without a suppression): the settings' flags
    (:meth:`pramkit.workbench.suppression.SuppressSpec.flags`), the suppressed file and its receipt written in
    ``OUT/private/``, where the export puts the workbench's."""
    if wb.suppression is None:
        return []
    flags = " ".join(f"{flag} {shlex.quote(value)}" if value is not None else flag
                     for flag, value in wb.suppression.spec.flags())
    return [f"pramkit suppress {before} {flags} --out {data} {na} --quiet".replace("  ", " ")]


def key_fingerprint(wb: Workbench) -> str | None:
    """The fingerprint of the key the release is made with: the applied release's, else the design's."""
    if wb.applied is not None:
        return wb.applied.key_fingerprint
    if wb.designed is not None and wb.designed.key is not None:
        return wb.designed.key.fingerprint
    return None


def _key_check(wb: Workbench) -> list[str]:
    """The script's first step: the key file must be the release's (its fingerprint), else one line and exit 2,
    before anything is written."""
    fingerprint = key_fingerprint(wb)
    if fingerprint is None:
        return []
    return [
        f"RELEASE_KEY={fingerprint}",
        'GIVEN_KEY=$(pramkit keygen --fingerprint "$KEY") || exit 2',
        'if [ "$GIVEN_KEY" != "$RELEASE_KEY" ]; then',
        '  echo "reproduce.sh: $KEY is not the key of this release (its fingerprint is $GIVEN_KEY, the release\'s is '
        '$RELEASE_KEY): give the key file the release was made with; nothing was written" >&2',
        "  exit 2",
        "fi",
    ]


def original_digest(wb: Workbench) -> str | None:
    """The SHA-256 of the file the release was made from, as opened (before a recoding): the opened file's
    (:attr:`pramkit.source.Source.digest`, read once, when the release is applied); None for a folder of part
    files, whose digest is not one file's."""
    if wb.source is None:
        return None
    base = _opened(wb)
    if base.path.is_dir():
        return None
    return base.digest


def _original_check(wb: Workbench, base: Source) -> list[str]:
    """The script's first step: the original file must be the one the release was made from (its SHA-256, by
    ``sha256sum`` or ``shasum -a 256``), else one line and exit 2, before anything is written."""
    digest = original_digest(wb)
    if digest is None:
        return []
    return [
        f"ORIGINAL={_shell_path(wb, base.path)}",
        f"ORIGINAL_SHA256={digest}",
        'GIVEN_SHA256=$({ sha256sum < "$ORIGINAL" || shasum -a 256 < "$ORIGINAL"; } 2>/dev/null | cut -d " " -f 1) '
        "|| true",
        'if [ "$GIVEN_SHA256" != "$ORIGINAL_SHA256" ]; then',
        '  echo "reproduce.sh: $ORIGINAL is not the file this release was made from (its SHA-256 is '
        '${GIVEN_SHA256:-not readable}, the release\'s is $ORIGINAL_SHA256): give the original file; nothing was '
        'written" >&2',
        "  exit 2",
        "fi",
    ]


#: The design shown, kept in ``private/inputs/`` when its noise came from another key than the release's.
DESIGN_MANIFEST = "design-manifest.json"


def design_copied(wb: Workbench) -> bool:
    """Whether the script copies the design's manifest instead of designing again: the design's noise was drawn
    from another key than the one the release is applied with (:attr:`pramkit.workbench.views.Designed.noise_key`),
    and the release is the design the page showed."""
    d = wb.designed
    return d is not None and d.choices is not None and d.noise_key is not None and d.noise_key != key_fingerprint(wb)


def _design_line(wb: Workbench, data: str) -> str:
    """The script's design step: ``pramkit design`` with the choices' flags, or a copy of a manifest given (or of
    the design shown, when its noise came from another key: :func:`design_copied`)."""
    assert wb.designed is not None
    choices = wb.designed.choices
    if design_copied(wb):
        return f'cp "$HERE"/{INPUTS}/{DESIGN_MANIFEST} "$OUT"/public/manifest.json'
    if choices is None:
        assert wb.designed.manifest_file is not None
        return f'cp {_shell_path(wb, wb.designed.manifest_file)} "$OUT"/public/manifest.json'
    files = {name: _shell_path(wb, getattr(choices, name)) for name in INPUT_FILES
             if getattr(choices, name) is not None}
    if choices.suppressed_by is not None:  # the receipt the script's pramkit suppress wrote beside the file
        from pramkit.suppress import RECEIPT_SUFFIX

        files["suppressed_by"] = f"{data}{RECEIPT_SUFFIX}"
    flags = []
    for flag, value in choices.flags():
        name = flag[2:].replace("-", "_")
        shown = files[name] if name in files else None if value is None else shlex.quote(value)
        flags.append(flag if shown is None else f"{flag} {shown}")
    if choices.recognition is None:  # the recognition design draws no noise
        flags.append('--key-file "$KEY"')
    return (f"pramkit design {data} --vars {shlex.quote(','.join(wb.designed.variables))} " + " ".join(flags)
            + ' --out "$OUT"/public/manifest.json --design-record "$OUT"/private/design-record.json --quiet')


def export(wb: Workbench, out: Path, *, confirmed: bool = False) -> ExportView:
    """Write the applied release into ``out/public/`` and ``out/private/`` (module docstring).

    Parameters
    ----------
    wb : Workbench
        A workbench whose release is applied.
    out : pathlib.Path
        The folder to hold ``public/`` and ``private/`` (created if absent; neither may exist).
    confirmed : bool
        The officer has read what the ledger does not cover (:attr:`DesignView.uncovered`)
        and publishes anyway.

    Returns
    -------
    ExportView

    Raises
    ------
    ParameterError
        Nothing is applied yet, or the ledger does not cover everything published and
        ``confirmed`` is false (the message gives the ledger's words).
    OutputExistsError
        ``out/public`` or ``out/private`` exists, or another export is writing into ``out`` (:func:`claimed`).
    WriteError
        ``out`` cannot be written; nothing is left behind.
    """
    if wb.applied is None or wb.designed is None or wb.source is None:
        raise ParameterError("apply the release first: the export writes the released file")
    uncovered = wb.designed.view.uncovered
    if uncovered and not confirmed:
        raise ParameterError("the ledger does not cover everything published: " + "; ".join(uncovered)
                             + ". Confirm to export anyway")
    check_target(out, force=False, inputs=[wb.source.path])
    created = not out.exists()
    make_folder(out)
    files: dict[str, str] = {}
    try:
        with claimed(out), temporary(out / "export", folder=True, label=f"the export in {str(out)!r}") as work:
            check_target(out, force=False, inputs=[wb.source.path])  # again, the folder claimed: none finished since
            for folder in (PUBLIC, f"{PRIVATE}/inputs"):
                (work / folder).mkdir(parents=True)
            _copy_release(wb, work, files)
            for path, name in _files_in_private(wb).items():
                # the data's copy, as large as the release, is not written again; the inputs (rules, codebook,
                # recoding map), small, are copied: a later design rewrites them in place
                (shutil.copyfile if path.parent.resolve() == (wb.work / INPUTS).resolve() else place)(
                    path, work / PRIVATE / name)
                files[f"input {name}"] = f"{PRIVATE}/{name}"
            reported = _write_reports(wb, work, files)
            script = reproduce_script(wb)
            write_text_atomic(work / PRIVATE / SCRIPT, script, force=False)
            files.update(script=f"{PRIVATE}/{SCRIPT}", summary=f"{PRIVATE}/summary.json")
            summary = {"pramkit": __version__, "data": wb.source.label, "variables": list(wb.designed.variables),
                       "design": (["(the manifest given)"] if wb.designed.choices is None
                                  else wb.designed.choices.to_args()), "key_fingerprint": wb.applied.key_fingerprint,
                       "record_epsilon": wb.designed.view.record_epsilon, "uncovered": list(uncovered),
                       "suppression": None if wb.suppression is None else {  # private: the counts per key
                           **wb.suppression.spec.to_dict(), "suppressed": {str(k): int(n) for k, n in zip(
                               wb.suppression.view.table["key"], wb.suppression.view.table["values suppressed"])}},
                       "files": files}
            write_text_atomic(work / PRIVATE / "summary.json", json.dumps(to_jsonable(summary), indent=2) + "\n",
                              force=False)
            with signals_deferred():
                move_into_place(work, out)
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    return ExportView(out, files, script, reported)


#: The file an export creates in its output folder while it writes there (:func:`claimed`).
CLAIM = ".pramkit-export"


@contextlib.contextmanager
def claimed(out: Path) -> Iterator[Path]:
    """Claim the folder ``out`` for one export: a file :data:`CLAIM` created there with ``O_EXCL`` (holding the
    process id), removed when the export ends; a second export into ``out`` meanwhile is refused.

    A claim left by a process that is no longer running (killed) is taken over.

    Parameters
    ----------
    out : pathlib.Path
        The export's folder (it exists).

    Yields
    ------
    pathlib.Path
        The claim file.

    Raises
    ------
    OutputExistsError
        Another export holds the folder.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.errors import OutputExistsError
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with claimed(pathlib.Path(d)):
    ...         try:
    ...             with claimed(pathlib.Path(d)):
    ...                 pass
    ...         except OutputExistsError as exc:
    ...             print(str(exc).replace(d, "D").split(":")[0])
    ...     print(sorted(p.name for p in pathlib.Path(d).iterdir()))
    another export is writing into D
    []
    """
    claim = out / CLAIM
    for attempt in range(2):
        try:
            fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            holder = _claim_holder(claim)
            if attempt or holder is None or _running(holder):
                raise OutputExistsError(
                    f"another export is writing into {out}: wait for it to finish and choose another folder "
                    f"(its claim {claim} is removed when it ends)") from None
            claim.unlink(missing_ok=True)  # left by a process that ended without removing it
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)
    try:
        yield claim
    finally:
        claim.unlink(missing_ok=True)


def _claim_holder(claim: Path) -> int | None:
    """The process id written in a claim, or None when it cannot be read (being written: taken as held)."""
    try:
        return int(claim.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


def _running(pid: int) -> bool:
    """Whether a process of this id runs (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write_reports(wb: Workbench, work: Path, files: dict[str, str]) -> tuple[str, ...]:
    """The internal and public reports, built from the export's files in ``work``; what the library warned of
    as it made their estimates (e.g. a singular matrix), each saying it is the reports'."""
    from pramkit.report import build_public_report, build_report, write_report

    assert wb.designed is not None and wb.source is not None
    manifest, released = work / PUBLIC / "manifest.json", work / PUBLIC / released_name(wb)
    keys = wb.risk_keys or wb.designed.variables
    given = None if wb.designed.choices is None else wb.designed.choices.distances
    with heard() as said:
        report = build_report(wb.source.path, manifest, released, list(keys), sampling_fraction=wb.sampling_fraction,
                              weights=wb.weights, distances=given, **wb.source.reading)
        # the report is built in the export's temporary folder: it names the released file where the export
        # puts it (and an uploaded original by the officer's name, not the app's copy)
        report = dataclasses.replace(report, files=dataclasses.replace(
            report.files, released=f"{PUBLIC}/{released_name(wb)}",
            original=wb.source.label if wb.copied else report.files.original))
        write_report(report, work / PRIVATE / "report.html")
        write_report(build_public_report(manifest, released, original=wb.source.path, weights=wb.weights,
                                         distances=given, **wb.source.reading), work / PUBLIC / "report.html")
    files.update(internal_report=f"{PRIVATE}/report.html", public_report=f"{PUBLIC}/report.html")
    return tuple(f"the reports: {w}" for w in said)


def _copy_release(wb: Workbench, work: Path, files: dict[str, str]) -> None:
    """The applied release (manifest, released file, receipt) and the design record, from the work folder."""
    from pramkit.engine.receipt import receipt_path
    made = wb.work / RELEASE
    name = released_name(wb)
    if design_copied(wb):  # the design shown, for the script to copy (its noise came from another key)
        shutil.copyfile(made / "manifest.json", work / PRIVATE / INPUTS / DESIGN_MANIFEST)
        files["design"] = f"{PRIVATE}/{INPUTS}/{DESIGN_MANIFEST}"
    for src, dst, label in ((made / "manifest.json", f"{PUBLIC}/manifest.json", "manifest"),
                            (made / name, f"{PUBLIC}/{name}", "released"),
                            (receipt_path(made / name), f"{PUBLIC}/{receipt_path(name).name}", "receipt"),
                            (made / "design-record.json", f"{PRIVATE}/design-record.json", "design_record")):
        if label == "design_record" and not src.exists():  # a manifest given as it is has none
            continue
        (place if label == "released" else shutil.copyfile)(src, work / dst)
        files[label] = dst


def place(src: Path, dst: Path) -> str:
    """Put the file ``src`` of the work folder at ``dst`` without writing it again: a hard link when both lie
    on one file system, else a streamed copy (another file system, or one without hard links).

    Only for the files of the work folder that are never changed in place (the released file and the data's
    copies: each step writes a new file and renames it over the old one, :mod:`pramkit.atomic`), so that the
    link keeps what was exported; removing the work folder, or the export's folder after a failure, removes
    one name of the file, never the other.  The link has the mode of
    ``src``: a released file's is an ordinary new file's (the umask's), as a copy's would be; ``private/`` is
    made its owner's only as a whole before it appears (:func:`pramkit.release.folders.move_into_place`).

    Parameters
    ----------
    src : pathlib.Path
        A file of the work folder.
    dst : pathlib.Path
        Where it goes (in the export's temporary folder; absent).

    Returns
    -------
    str
        ``"linked"`` or ``"copied"``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     src = pathlib.Path(d, "released.csv")
    ...     _ = src.write_text("sex\\nf\\n")
    ...     how = place(src, pathlib.Path(d, "public.csv"))
    ...     print(how, pathlib.Path(d, "public.csv").read_text() == src.read_text(), src.stat().st_nlink)
    linked True 2
    """
    try:
        os.link(src, dst)
    except OSError:  # EXDEV (another file system), EPERM or ENOTSUP (no hard links there), EMLINK
        shutil.copyfile(src, dst)
        return "copied"
    return "linked"
