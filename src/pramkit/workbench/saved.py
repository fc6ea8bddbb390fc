"""A workbench's settings as a session file, and its undo history.

A session file (:func:`session_dict`, JSON) holds what the officer chose, never
a key and never the original data: how the file was opened (its path or name
and its SHA-256, the census's rows), how it is read, the recoding, the local suppression, the risk
step's keys and the design's choices, with the small input files the design
read (rules, public frequencies, codebook, a manifest given) as their text,
and the designs tried with their expected figures (computed from the original:
the session file is private, like the work folder).
:func:`restore` opens the file again (by its path, or the one opened now for
an upload), checks its digest, and runs the recoding, risk and design steps
again with the saved choices.

:class:`Snapshot` is one entry of the undo history: the state of the steps
after the data (never a key), with the bytes of the input files kept in the
work folder, which a later design overwrites.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit._version import __version__
from pramkit.errors import ParameterError
from pramkit.release.choices import DesignChoices
from pramkit.workbench.layout import INPUT_FILES, INPUTS

if TYPE_CHECKING:
    from pramkit.workbench.source import Source
    from pramkit.workbench.views import Designed, RiskView

#: The session file's format name and version.
#: The workbench (:class:`pramkit.workbench.session.Workbench`, which imports this module: named, not imported).
Workbench = Any

FORMAT, VERSION = "pramkit-workbench-session", 1

#: Choices that name a file the design reads: kept in the session as the file's text.
_FILES = (*INPUT_FILES, "derive_from", "distances")

#: What ``distances`` may be besides a file (:func:`pramkit.distances.read_distances`).
DISTANCE_WORDS = ("ordinal", "discrete")

#: Choices that make the design connect elsewhere (a Spark master): a session file never restores them.
CONNECTIONS = ("engine", "spark_master")


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """The steps' state after the data, for undo (never a key: a design is kept without it).

    Parameters
    ----------
    risk : tuple
        ``(assessed, keys, sampling_fraction, weights, household)`` of the risk step.
    designed : Designed or None
        The design step's state, its key dropped.
    recode : mapping
        The recoding in force (:mod:`pramkit.recode`).
    inputs : mapping
        File name in the work folder's ``inputs/`` -> its bytes.
    source : Source or None
        The file the steps read.
    suppression : pramkit.workbench.suppression.Suppressed or None
        The local suppression in force.
    """

    risk: tuple[RiskView | None, tuple[str, ...], float | None, str | None, str | None]
    designed: Designed | None
    recode: Mapping[str, Any]
    inputs: Mapping[str, bytes]
    source: Source | None = None
    suppression: Any = None

    @classmethod
    def of(cls, wb: Workbench) -> Snapshot:
        """The workbench's state now."""
        designed = None if wb.designed is None else dataclasses.replace(wb.designed, key=None)
        folder = wb.work / INPUTS
        inputs = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()} if folder.is_dir() else {}
        return cls((wb.assessed, wb.risk_keys, wb.sampling_fraction, wb.weights, wb.household), designed,
                   dict(wb.recode), inputs, wb.source, wb.suppression)

    def put_back(self, wb: Workbench) -> None:
        """Make this the workbench's state (a release applied or exported since is forgotten)."""
        wb.assessed, wb.risk_keys, wb.sampling_fraction, wb.weights, wb.household = self.risk
        wb.designed, wb.recode, wb.source = self.designed, dict(self.recode), self.source
        wb.suppression = self.suppression
        wb.applied = wb.exported = None
        self.put_back_inputs(wb)

    def put_back_inputs(self, wb: Workbench) -> None:
        """The work folder's input files as they were."""
        folder = wb.work / INPUTS
        for p in folder.iterdir():
            if p.is_file() and p.name not in self.inputs:
                p.unlink()
        for name, data in self.inputs.items():
            (folder / name).write_bytes(data)


def session_dict(wb: Workbench) -> dict[str, Any]:
    """The workbench's settings as a JSON object (no key, no original data).

    Parameters
    ----------
    wb : Workbench
        A workbench with a file open.

    Returns
    -------
    dict

    Raises
    ------
    ParameterError
        No file is open.

    Examples
    --------
    >>> import tempfile
    >>> from pramkit.workbench import Workbench
    >>> with tempfile.TemporaryDirectory() as d:
    ...     wb = Workbench(d)
    ...     _ = wb.open_census(rows=2_000)
    ...     _ = wb.design(["sex"], DesignChoices(method="rr", epsilon=1.0))
    ...     saved = session_dict(wb)
    >>> saved["data"]["kind"], saved["data"]["rows"], saved["design"]["variables"], saved["design"]["choices"]
    ('census', 2000, ['sex'], {'method': 'rr', 'epsilon': 1.0})
    """
    from pramkit.io import sha256_of

    source = wb.base  # the file as opened (a recoding is saved as its map)
    if source is None:
        raise ParameterError("open a file first: a session is saved on a file")
    data = {**wb.opened, "name": source.label, "sha256": sha256_of(source.path),
            "na_values": list(source.na_values), "sep": source.sep, "encoding": source.encoding}
    risk = None if wb.assessed is None else {"keys": list(wb.risk_keys), "sampling_fraction": wb.sampling_fraction,
                                             "weights": wb.weights, "household": wb.household}
    design: dict[str, Any] | None = None
    if wb.designed is not None and wb.designed.choices is not None:
        choices = wb.designed.choices
        defaults = DesignChoices()
        values = {f.name: getattr(choices, f.name) for f in dataclasses.fields(DesignChoices)
                  if f.name not in _FILES and f.name not in ("na_values", "sep", "encoding", "suppressed_by")
                  and getattr(choices, f.name) != getattr(defaults, f.name)}
        files = {name: {"name": Path(getattr(choices, name)).name,
                        "text": Path(getattr(choices, name)).read_text(encoding="utf-8")}
                 for name in _FILES if _names_file(getattr(choices, name)) and isinstance(getattr(choices, name),
                                                                                         (str, Path))}
        values.update({name: choices.distances for name in ("distances",) if _distance_words(choices.distances)})
        if isinstance(choices.distances, Mapping) and not _distance_words(choices.distances):
            raise ParameterError("a session saves distances given as one file or as words (ordinal, discrete), "
                                 "not as a file per variable")
        design = {"variables": list(wb.designed.variables), "choices": values, "files": files}
    elif wb.designed is not None and wb.designed.manifest_file is not None:
        design = {"variables": list(wb.designed.variables),
                  "manifest": wb.designed.manifest_file.read_text(encoding="utf-8")}
    return {"format": FORMAT, "version": VERSION, "pramkit": __version__, "data": data,
            "recode": {k: dict(v) for k, v in wb.recode.items()},
            "suppress": None if wb.suppression is None else wb.suppression.spec.to_dict(), "risk": risk,
            "design": design,
            "tried": [t.to_dict() for t in wb.tried]}


def _distance_words(value: Any) -> bool:
    """Whether ``distances`` is given by words alone (``ordinal``, ``discrete``, or a mapping of them), no file."""
    if isinstance(value, Mapping):
        return bool(value) and all(_distance_words(v) for v in value.values())
    return isinstance(value, str) and value.strip().lower() in DISTANCE_WORDS


def _names_file(value: Any) -> bool:
    """Whether a choice of :data:`_FILES` names a file (not None, not distances given by words)."""
    return value is not None and not _distance_words(value)


def safe_choices(choices: Mapping[str, Any], files: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any],
                                                                                tuple[str, ...]]:
    """A session file's design choices and files without what a session file may not do: connect elsewhere
    (:data:`CONNECTIONS`: the Spark engine and its master) or name a file to read by its path (a saved session
    holds the files its design read as their text, ``files``), and what the dropped choices were, in words.

    Parameters
    ----------
    choices : mapping
        The session's ``design.choices``.
    files : mapping
        The session's ``design.files`` (a choice of :data:`_FILES` -> its name and text).

    Returns
    -------
    tuple
        The choices kept, the files kept, and one sentence per kind of setting dropped.

    Raises
    ------
    ParameterError
        A choice is not a setting of the design.

    Examples
    --------
    >>> kept, files, said = safe_choices({"epsilon": 1.0, "engine": "spark", "spark_master": "spark://h:7077",
    ...                                   "forbid": "/etc/rules.csv", "distances": "ordinal"}, {})
    >>> kept, files
    ({'epsilon': 1.0, 'distances': 'ordinal'}, {})
    >>> print("\\n".join(said))
    not restored: engine=spark, spark_master=spark://h:7077 (a session file never starts a connection: choose the engine in the design form)
    not restored: forbid=/etc/rules.csv (a session file names no file to read: give the file in the design form)
    """
    known = {f.name for f in dataclasses.fields(DesignChoices)}
    unknown = sorted(set(choices) - known) + sorted(set(files) - set(_FILES))
    if unknown:
        raise ParameterError(f"the session file's design names settings pramkit does not have: {', '.join(unknown)}")
    defaults = DesignChoices()
    connecting = [f"{k}={v}" for k, v in choices.items() if k in CONNECTIONS and v != getattr(defaults, k)]
    paths = [f"{k}={v}" for k, v in choices.items() if k in _FILES and _names_file(v)]
    kept = {k: v for k, v in choices.items() if k not in CONNECTIONS and not (k in _FILES and _names_file(v))}
    said = ([f"not restored: {', '.join(connecting)} (a session file never starts a connection: choose the engine "
             "in the design form)"] if connecting else []) + \
        ([f"not restored: {', '.join(paths)} (a session file names no file to read: give the file in the design "
          "form)"] if paths else [])
    return kept, dict(files), tuple(said)


def read_session(path: str | Path) -> dict[str, Any]:
    """A session file read and checked for its format.

    Parameters
    ----------
    path : str or pathlib.Path
        A file written by :meth:`pramkit.workbench.Workbench.save_session`.

    Returns
    -------
    dict

    Raises
    ------
    ParameterError
        It is not a session file of the workbench (or of a later version).
    """
    p = Path(path)
    name = p.name
    try:
        saved = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, ValueError):
        raise ParameterError(f"{name} is not a session file of the workbench (JSON saved by Save the session)") \
            from None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT or not isinstance(saved.get("data"), dict):
        raise ParameterError(f"{name} is not a session file of the workbench (JSON saved by Save the session)")
    if not isinstance(saved.get("version"), int) or saved["version"] > VERSION:
        raise ParameterError(f"{name} was saved by a later version of pramkit ({saved.get('pramkit')}); "
                             f"this one is {__version__}")
    return saved


def restore(wb: Workbench, saved: Mapping[str, Any]) -> tuple[str, ...]:
    """Open the session's file again, check its digest, and run its recoding, risk and design steps again.

    A session file is settings: restoring one starts no connection and reads no file by a path it names
    but the data's (which the workbench's data folders limit, :meth:`Workbench.readable`); such settings
    are dropped (:func:`safe_choices`) and said.

    Parameters
    ----------
    wb : Workbench
        The workbench to restore into.  For a session saved on an uploaded file, that file must be
        open in it already (uploaded again): its digest is checked.
    saved : mapping
        :func:`read_session`'s result.

    Returns
    -------
    tuple of str
        What was not restored, and why (:func:`safe_choices`).

    Raises
    ------
    ParameterError
        The file is not the one the session was saved on (another digest), or an uploaded file is
        not open; the steps' own errors as they are.
    """
    from pramkit.io import sha256_of

    design = saved.get("design")
    said: tuple[str, ...] = ()
    if design and "manifest" not in design:  # checked before anything is opened or run
        choices, files, said = safe_choices(design.get("choices", {}), design.get("files", {}))
        design = {**design, "choices": choices, "files": files}
    data = saved["data"]
    reading = {"na_values": tuple(data.get("na_values", ())), "sep": data.get("sep", ","),
               "encoding": data.get("encoding", "utf-8")}
    kind, name = data.get("kind"), data.get("name", "the file")
    if kind == "census":
        wb.open_census(rows=int(data["rows"]))
    elif kind == "path":
        wb.open_file(data["path"], **reading)
    elif wb.source is None or sha256_of(wb.source.path) != data.get("sha256"):
        raise ParameterError(f"the session was saved on the uploaded file {name}: upload it again first, "
                             "then restore the session")
    source = wb.source
    assert source is not None
    if sha256_of(source.path) != data.get("sha256"):
        raise ParameterError(f"{name} has changed since the session was saved (its SHA-256 differs): "
                             "the session's choices may not fit it")
    wb._history.clear()
    if saved.get("recode"):
        wb.recoding(saved["recode"])
    if saved.get("suppress"):  # the design then reads the suppressed file (pramkit.workbench.suppression)
        from pramkit.workbench.suppression import SuppressSpec

        wb.suppress(SuppressSpec.from_dict(saved["suppress"]))
    risk = saved.get("risk")
    if risk:
        wb.risk(risk["keys"], sampling_fraction=risk.get("sampling_fraction"), weights=risk.get("weights"),
                household=risk.get("household"))
    if design and "manifest" in design:
        kept = wb.work / INPUTS / "given-manifest.json"
        kept.write_text(design["manifest"], encoding="utf-8")
        wb.use_manifest(kept)
    elif design:
        values = dict(design.get("choices", {}))
        for name, file in design.get("files", {}).items():
            target = wb.work / INPUTS / f"session-{Path(file['name']).name}"
            target.write_text(file["text"], encoding="utf-8")
            values[name] = target if name in ("prior", "forbid", "derive_from", "recoded_by") else str(target)
        wb.design(design["variables"], DesignChoices(**values))
    wb._history.clear()
    if saved.get("tried"):  # the designs tried: figures computed from the original (the session file is private)
        from pramkit.workbench.preview import Tried

        wb.tried = [Tried.from_dict(t) for t in saved["tried"]]
    return said
