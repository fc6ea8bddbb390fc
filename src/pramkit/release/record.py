"""The private design record, a designed release's two parts, and writing them as a pair.

:class:`Release` is what the design workflow returns: the public
:class:`pramkit.manifest.Manifest` and the private :class:`DesignRecord` (exact counts and
proportions, the information kept on them, the original file's digest), named apart so
that the record never travels with the manifest.  :func:`write_design` writes both
atomically, as a pair.
"""

from __future__ import annotations

import math
import random  # noqa: F401 (the doctests draw designs with random.Random)
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pramkit._json import dumps, to_jsonable
from pramkit.atomic import staged_bytes, write_text_atomic
from pramkit.errors import ParameterError
from pramkit.manifest import Manifest, epsilon_to_json
from pramkit.matrix import PramMatrix

#: Largest matrix of a compact form (any but ``"dense"``) whose dense entries the design record
#: also lists, as ``matrix``: a figure to read, beside the form's own fields.
MAX_DENSE_RECORD = 32


def record_matrix(m: PramMatrix) -> dict[str, Any]:
    """One designed matrix as the design record (and ``pramkit design --json``) writes it.

    Parameters
    ----------
    m : PramMatrix
        A designed matrix, with its provenance.

    Returns
    -------
    dict
        :meth:`pramkit.PramMatrix.to_dict` (its form: O(S) or O(1) but for ``"dense"``), the
        dense ``matrix`` too for a compact form of at most :data:`MAX_DENSE_RECORD` categories,
        and ``epsilon`` (``"inf"`` when infinite).

    Examples
    --------
    >>> m = PramMatrix.truncated_geometric(math.log(2), ["low", "mid", "high"])
    >>> d = record_matrix(m)
    >>> d["form"], d["rate"] == math.log(2), d["matrix"][0]   # a = 1/2: 1/(1+a), a (1-a)/(1+a), a^2/(1+a)
    ('truncated_geometric', True, [0.6666666666666666, 0.16666666666666666, 0.16666666666666666])
    >>> PramMatrix.from_dict(d) == m
    True
    >>> "matrix" in record_matrix(PramMatrix.truncated_geometric(0.5, range(MAX_DENSE_RECORD + 1)))
    False
    """
    return {**m.to_dict(dense_up_to=MAX_DENSE_RECORD), "epsilon": epsilon_to_json(m.epsilon)}


@dataclass(frozen=True)
class DesignRecord:
    """What the data holder keeps of a design: private, never published.

    Parameters
    ----------
    data : str
        What was designed from (a file path, or "a DataFrame in memory").
    sha256 : str or None
        The original file's SHA-256 (None in memory).
    rows : int
        Records read.
    missing : int
        Records left out because a variable was missing.
    method : str
        The design family.
    split : str
        The budget split.
    options : mapping
        The family's options.
    variables : mapping
        Per designed variable: categories, exact counts and proportions, the
        proportions the design used, its epsilon, the information it keeps on the
        exact proportions (``information_nats``: I(X; Z) of the variable itself, its
        strata mixed, not of its stratum cells), the variable's entropy H(X) on them
        (``entropy_nats``) and the information on the design's own (nats).
    matrices : mapping of str to PramMatrix
        The designed matrices, with provenance (which may hold the exact proportions).
    extra : mapping
        Family-specific figures (split bound, joint comparison, measures).
    warnings : tuple of str
        What the holder should read before publishing.
    notes : tuple of str
        What the holder should know.

    Examples
    --------
    The exact counts stay in the record; the manifest holds only the DP counts:

    >>> import pramkit
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> plan = pramkit.plan_release(["age", "sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
    >>> m, r = pramkit.design_planned(census(2_000), plan, rng=random.Random(1))
    >>> r.rows, r.method, r.split, list(r.variables)
    (2000, 'dp', 'equal', ['age', 'sex'])
    >>> sum(r.variables["sex"]["counts"]) == r.rows - r.missing
    True
    >>> "design_record" in m.to_dict(), sorted(m.ledger.dp_counts)
    (False, ['age', 'sex'])
    """

    data: str
    sha256: str | None
    rows: int
    missing: int
    method: str
    split: str
    options: Mapping[str, Any]
    variables: Mapping[str, Mapping[str, Any]]
    matrices: Mapping[str, PramMatrix] = field(repr=False)
    extra: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def total_information_nats(self) -> float | None:
        """I(X; Z) summed over the designed variables, on the exact proportions (nats); ``None`` when a
        variable's figure was not computed (a matrix too large to measure).

        Examples
        --------
        >>> import pramkit
        >>> from pramkit.datasets import census, CENSUS_VARIABLES
        >>> plan = pramkit.plan_release(["age", "sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
        >>> r = pramkit.design_planned(census(2_000), plan, rng=random.Random(1)).record
        >>> math.isclose(r.total_information_nats, r.variables["age"]["information_nats"]
        ...              + r.variables["sex"]["information_nats"])
        True
        """
        figures = [v["information_nats"] for v in self.variables.values()]
        return None if any(f is None for f in figures) else math.fsum(figures)

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON: the design command's output and the private design-record file.

        Returns
        -------
        dict
            JSON values: the fields, each variable's epsilon and information (nats) and
            their total, each matrix (:func:`record_matrix`: compact forms compactly),
            ``extra``'s figures, warnings and notes.

        Examples
        --------
        >>> import pramkit
        >>> from pramkit.datasets import census, CENSUS_VARIABLES
        >>> plan = pramkit.plan_release(["age", "sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
        >>> m, r = pramkit.design_planned(census(2_000), plan, rng=random.Random(1))
        >>> d = r.to_dict()
        >>> d["private"].startswith("design record"), d["rows"], sorted(d["matrices"])
        (True, 2000, ['age', 'sex'])
        >>> math.isclose(d["total_information_nats"], math.fsum(d["information_nats"].values()))
        True
        >>> m.ledger.design_epsilon + math.fsum(d["epsilons"].values()) <= 1.0  # within the record budget
        True
        """
        return to_jsonable({
            "private": "design record: computed from the original data; keep it with the data, never publish it",
            "data": self.data,
            "sha256": self.sha256,
            "rows": self.rows,
            "missing_rows": self.missing,
            "method": self.method,
            "split": self.split,
            "options": dict(self.options),
            "variables": list(self.variables),
            "epsilons": {n: v["epsilon"] for n, v in self.variables.items()},
            "information_nats": {n: v["information_nats"] for n, v in self.variables.items()},
            "total_information_nats": self.total_information_nats,
            "per_variable": {n: dict(v) for n, v in self.variables.items()},
            "matrices": {n: record_matrix(m) for n, m in self.matrices.items()},
            **self.extra,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        })

    def write(self, path: str | Path, *, force: bool = False) -> Path:
        """Write the record atomically (JSON).

        Parameters
        ----------
        path : str or Path
            The file (private: keep it with the original data).
        force : bool
            Replace an existing file.

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        OutputExistsError
            ``path`` exists and ``force`` is false.
        WriteError
            The file cannot be written.

        Examples
        --------
        >>> import json, os, tempfile
        >>> import pramkit
        >>> from pramkit.datasets import census, CENSUS_VARIABLES
        >>> plan = pramkit.plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
        >>> record = pramkit.design_planned(census(2_000), plan, rng=random.Random(1)).record
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = record.write(os.path.join(d, "design-record.json"))
        ...     with open(path) as f:
        ...         json.load(f)["per_variable"]["sex"]["counts"]
        [966, 1034]
        """
        return write_text_atomic(path, self.to_json(), force=force)

    def to_json(self) -> str:
        """The record as strict JSON text (no NaN or infinity literals), as :meth:`write` writes it:
        :meth:`to_dict` indented by :func:`pramkit._json.dumps` (each array of numbers on one line).

        Examples
        --------
        >>> import json, pramkit
        >>> from pramkit.datasets import census, CENSUS_VARIABLES
        >>> plan = pramkit.plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
        >>> json.loads(pramkit.design_planned(census(2_000), plan).record.to_json())["rows"]
        2000
        """
        return _record_text(self.to_dict())


def _record_text(value: Any) -> str:
    """The design record's JSON values as the file holds them: strict JSON indented by
    :func:`pramkit._json.dumps` (each array of scalars on one line), with a final newline."""
    return dumps(value) + "\n"


@dataclass(frozen=True)
class Release:
    """A designed release: the public manifest and the private design record, named apart.

    What :func:`pramkit.design_planned` and :func:`pramkit.design_recognition` return
    (:func:`pramkit.design_release` returns its manifest).  It unpacks as ``manifest, record``.

    Parameters
    ----------
    manifest : Manifest
        Public: published beside the released file.
    record : DesignRecord
        Private: kept with the original data, never published.

    Examples
    --------
    >>> import pramkit
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> plan = pramkit.plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
    >>> manifest, record = pramkit.design_planned(census(2_000), plan, rng=random.Random(1))
    >>> record.rows, "design_record" in manifest.to_dict()
    (2000, False)
    """

    manifest: Manifest
    record: DesignRecord

    def __iter__(self) -> Any:
        return iter((self.manifest, self.record))


@dataclass(frozen=True)
class WrittenDesign:
    """A designed release written to disk: the public manifest and the private design record.

    :meth:`to_dict` is the ``pramkit design --json`` output.

    Parameters
    ----------
    release : Release
        The manifest and its design record.
    manifest_path : Path
        Where the manifest was written (public).
    record_path : Path
        Where the design record was written (private).
    record_values : mapping
        The design record's JSON values as written (:meth:`DesignRecord.to_dict`, computed once
        by :func:`write_design`).

    Examples
    --------
    >>> import os, tempfile, pramkit
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> plan = pramkit.plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
    >>> release = pramkit.design_planned(census(2_000), plan, rng=random.Random(1))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     w = write_design(release, os.path.join(d, "release.json"))
    ...     w.manifest_path.name, w.record_path.name, Manifest.read(w.manifest_path) == release.manifest
    ('release.json', 'release.design-record.json', True)
    """

    release: Release
    manifest_path: Path
    record_path: Path
    record_values: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def manifest(self) -> Manifest:
        """The manifest written."""
        return self.release.manifest

    def to_dict(self) -> dict[str, Any]:
        """The private design record's fields, where the two files are, and the public epsilons and ledger.

        Returns
        -------
        dict
            JSON values: the design record's as written (:attr:`record_values`, not converted
            again; the dict shares them) with ``manifest`` and ``design_record`` (the paths),
            ``record_epsilon`` and ``ledger`` (as in the manifest), and
            ``record_epsilon_given_structure`` for a structured release.

        Examples
        --------
        >>> import os, tempfile, pramkit
        >>> from pramkit.datasets import census, CENSUS_VARIABLES
        >>> plan = pramkit.plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
        >>> release = pramkit.design_planned(census(2_000), plan, rng=random.Random(1))
        >>> with tempfile.TemporaryDirectory() as d:
        ...     out = write_design(release, os.path.join(d, "release.json")).to_dict()
        >>> os.path.basename(out["design_record"]), out["record_epsilon"] == release.manifest.record_epsilon <= 1.0
        ('release.design-record.json', True)
        >>> out["ledger"]["record_epsilon"] == out["record_epsilon"]
        True
        """
        public = self.manifest.to_dict()
        extra = {"manifest": str(self.manifest_path), "design_record": str(self.record_path),
                 "record_epsilon": public["record_epsilon"], "ledger": public.get("ledger")}
        if self.manifest.is_structured:
            extra["record_epsilon_given_structure"] = public["record_epsilon_given_structure"]
        return {**self.record_values, **to_jsonable(extra)}


def write_design(release: Release, out: str | Path, *, design_record: str | Path | None = None,
                 force: bool = False) -> WrittenDesign:
    """Write a designed release: the private design record and the public manifest, as a pair.

    The record is converted to JSON values once (:meth:`DesignRecord.to_dict`), written
    (indented by :func:`pramkit._json.dumps`) and kept in the result for
    :meth:`WrittenDesign.to_dict`.  Both files are serialised and written to temporaries
    before either is renamed into place (:func:`pramkit.atomic.staged_bytes`): a failure
    while writing them (a full disk, a read-only folder) leaves neither file, and a pair
    written earlier as it was; the manifest is renamed first, then its record.

    Parameters
    ----------
    release : Release
        From :func:`pramkit.design_planned` or :func:`pramkit.design_recognition`.
    out : str or Path
        The manifest to write (public).
    design_record : str or Path, optional
        The design record to write (private); default beside ``out``, named ``OUT_STEM.design-record.json``.
    force : bool
        Replace existing files.

    Returns
    -------
    WrittenDesign

    Raises
    ------
    ParameterError
        The two paths are the same file, or ``release`` is not a :class:`Release`.
    OutputExistsError
        A file exists and ``force`` is false.

    Examples
    --------
    >>> import tempfile, os, pramkit
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> plan = pramkit.plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
    >>> release = pramkit.design_planned(census(2_000), plan, rng=random.Random(1))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     w = write_design(release, os.path.join(d, "m.json"))
    ...     sorted(os.listdir(d)), w.to_dict()["record_epsilon"] <= 1.0
    (['m.design-record.json', 'm.json'], True)
    """
    if not isinstance(release, Release):
        raise ParameterError(f"write_design writes a Release (pramkit.design_planned), not {type(release).__name__}")
    out = Path(out)
    record_path = design_record_path(out, design_record)
    values = release.record.to_dict()
    record_text, text = _record_text(values), release.manifest.to_json()
    with staged_bytes(record_path, force=force) as record:
        record.write(record_text.encode("utf-8"))
        with staged_bytes(out, force=force) as public:
            public.write(text.encode("utf-8"))
    return WrittenDesign(release, out, record_path, values)


def design_record_path(out: str | Path, design_record: str | Path | None = None) -> Path:
    """Where the private design record of manifest ``out`` goes: ``design_record``, or beside
    ``out`` as ``OUT_STEM.design-record.json``; never ``out`` itself.

    Parameters
    ----------
    out : str or Path
        The manifest.
    design_record : str or Path, optional
        The design record asked for.

    Returns
    -------
    Path

    Raises
    ------
    ParameterError
        The two are the same file.

    Examples
    --------
    >>> design_record_path("release/m.json").as_posix()
    'release/m.design-record.json'
    >>> design_record_path("m.json", "m.json")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the design record and the manifest must be different files
    """
    out = Path(out)
    record = Path(design_record) if design_record is not None else out.with_name(out.stem + ".design-record.json")
    if record.resolve() == out.resolve():
        raise ParameterError("the design record and the manifest must be different files")
    return record
