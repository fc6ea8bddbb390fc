"""Design a release in one call: :func:`design_release`.

The whole design step of a release, as the privacy ledger (:mod:`pramkit.ledger`)
accounts for it:

1. count the variables (streamed from a file; a DataFrame or an Arrow table in
   memory) over their categories: declared (a codebook), from a public prior,
   or read from the data (then the ledger says so);
2. take the frequencies the design family needs (:mod:`pramkit.design.registry`):
   through the geometric mechanism at ``design_epsilon`` (the default,
   :func:`pramkit.ledger.default_design_epsilon`: enough for noise of 5 % of a
   histogram's mean count, at most a tenth of the record budget), from a
   public prior (no budget), or exactly (``exact_frequencies=True``: the ledger
   then says that no DP guarantee covers the design); data-free families read none;
3. split what is left of the record budget ``epsilon`` over the variables
   (``split="equal"``, ``"optimal"``: the most information, Ayed et al. sec. 5;
   ``"joint"``: one matrix on the cross-classification), or take the per-variable
   budgets given; round every share down so that the record epsilon, rounded
   outward, never exceeds the budget;
4. design each matrix and return the :class:`pramkit.manifest.Manifest` (public:
   nothing in it is computed from the data outside the ledger) with its private
   :class:`DesignRecord` attached as ``manifest.design_record`` (exact counts and
   proportions, the information kept on them, the original file's digest).

``epsilon`` means the record's total budget for every method, design step included.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from pramkit._json import to_jsonable
from pramkit.atomic import staged_bytes, write_text_atomic
from pramkit.counts import CountTable, count_file, count_frame
from pramkit.defaults import NA_VALUES
from pramkit.design.matrix_design import estimability_warnings, matrix_json, truthful_warnings
from pramkit.design.registry import family
from pramkit.design.structured import (build, check_breaking, complete, household_table, normalised, plan_targets,
                                      structure)
from pramkit.structure import Rules
from pramkit.errors import DataError, ParameterError, PramkitError
from pramkit.information import mutual_information, mutual_information_form8
from pramkit.ledger import Ledger, default_design_epsilon, split_within
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import Label, PramMatrix, Provenance
from pramkit.progress import progress
from pramkit.public_inputs import Prior, read_codebook, read_prior, require_variables
from pramkit.validate import positive

#: Splits of the record budget.
SPLITS = ("equal", "optimal", "joint")


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
        exact proportions (nats) and on the design's own (nats).
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

    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> m = design_release(census(2_000), ["age", "sex"], epsilon=1.0, categories=CENSUS_VARIABLES,
    ...                    rng=random.Random(1))
    >>> r = m.design_record
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

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON: the design command's output and the private design-record file.

        Returns
        -------
        dict
            JSON values: the fields, each variable's epsilon and information (nats) and
            their total, each matrix (:func:`pramkit.design.matrix_design.matrix_json`),
            ``extra``'s figures, warnings and notes.

        Examples
        --------
        >>> from pramkit.datasets import census, CENSUS_VARIABLES
        >>> m = design_release(census(2_000), ["age", "sex"], epsilon=1.0, categories=CENSUS_VARIABLES,
        ...                    rng=random.Random(1))
        >>> d = m.design_record.to_dict()
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
            "total_information_nats": None if any(v["information_nats"] is None for v in self.variables.values())
            else math.fsum(v["information_nats"] for v in self.variables.values()),
            "per_variable": {n: dict(v) for n, v in self.variables.items()},
            "matrices": {n: matrix_json(m) for n, m in self.matrices.items()},
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
        >>> import os, tempfile
        >>> from pramkit.datasets import census, CENSUS_VARIABLES
        >>> m = design_release(census(2_000), ["sex"], epsilon=1.0, categories=CENSUS_VARIABLES,
        ...                    rng=random.Random(1))
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = m.design_record.write(os.path.join(d, "design-record.json"))
        ...     with open(path) as f:
        ...         json.load(f)["per_variable"]["sex"]["counts"]
        [966, 1034]
        """
        return write_text_atomic(path, self.to_json(), force=force)

    def to_json(self) -> str:
        """The record as strict JSON text (no NaN or infinity literals), as :meth:`write` writes it.

        Examples
        --------
        >>> from pramkit.datasets import census, CENSUS_VARIABLES
        >>> m = design_release(census(2_000), ["sex"], epsilon=1.0, categories=CENSUS_VARIABLES,
        ...                    rng=random.Random(1))
        >>> json.loads(m.design_record.to_json())["rows"]
        2000
        """
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"


@dataclass(frozen=True)
class WrittenDesign:
    """A designed release written to disk: the public manifest and the private design record.

    :meth:`to_dict` is the ``pramkit design --json`` output.

    Parameters
    ----------
    manifest : Manifest
        The manifest (with its ``design_record``).
    manifest_path : Path
        Where the manifest was written (public).
    record_path : Path
        Where the design record was written (private).

    Examples
    --------
    >>> import os, tempfile
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> m = design_release(census(2_000), ["sex"], epsilon=1.0, categories=CENSUS_VARIABLES, rng=random.Random(1))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     w = write_design(m, os.path.join(d, "release.json"))
    ...     w.manifest_path.name, w.record_path.name, Manifest.read(w.manifest_path) == m
    ('release.json', 'release.design-record.json', True)
    """

    manifest: Manifest
    manifest_path: Path
    record_path: Path

    def to_dict(self) -> dict[str, Any]:
        """The private design record's fields, where the two files are, and the public epsilons and ledger.

        Returns
        -------
        dict
            :meth:`DesignRecord.to_dict` with ``manifest`` and ``design_record`` (the paths),
            ``record_epsilon`` and ``ledger`` (as in the manifest), and
            ``record_epsilon_given_structure`` for a structured release.

        Examples
        --------
        >>> import os, tempfile
        >>> from pramkit.datasets import census, CENSUS_VARIABLES
        >>> m = design_release(census(2_000), ["sex"], epsilon=1.0, categories=CENSUS_VARIABLES, rng=random.Random(1))
        >>> with tempfile.TemporaryDirectory() as d:
        ...     out = write_design(m, os.path.join(d, "release.json")).to_dict()
        >>> os.path.basename(out["design_record"]), out["record_epsilon"] == m.record_epsilon <= 1.0
        ('release.design-record.json', True)
        >>> out["ledger"]["record_epsilon"] == out["record_epsilon"]
        True
        """
        public = self.manifest.to_dict()
        out = {**self.manifest.design_record.to_dict(), "manifest": str(self.manifest_path),
               "design_record": str(self.record_path), "record_epsilon": public["record_epsilon"],
               "ledger": public.get("ledger")}
        if self.manifest.is_structured:
            out["record_epsilon_given_structure"] = public["record_epsilon_given_structure"]
        return out


def write_design(manifest: Manifest, out: str | Path, *, design_record: str | Path | None = None,
                 force: bool = False) -> WrittenDesign:
    """Write a designed release: the private design record and the public manifest, as a pair.

    Both are serialised and written to temporaries before either is renamed into place
    (:func:`pramkit.atomic.staged_bytes`): a failure while writing them (a full disk, a
    read-only folder) leaves neither file, and a pair written earlier as it was; the
    manifest is renamed first, then its record.

    Parameters
    ----------
    manifest : Manifest
        From :func:`design_release` or :func:`design_recognition` (it carries ``design_record``).
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
        The two paths are the same file, or the manifest carries no design record.
    OutputExistsError
        A file exists and ``force`` is false.

    Examples
    --------
    >>> import random, tempfile, os
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> m = design_release(census(2_000), ["sex"], epsilon=1.0, categories=CENSUS_VARIABLES, rng=random.Random(1))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     w = write_design(m, os.path.join(d, "m.json"))
    ...     sorted(os.listdir(d)), w.to_dict()["record_epsilon"] <= 1.0
    (['m.design-record.json', 'm.json'], True)
    """
    out = Path(out)
    record_path = design_record_path(out, design_record)
    if manifest.design_record is None:
        raise ParameterError("the manifest carries no design record: write a manifest from design_release")
    record_text, text = manifest.design_record.to_json(), manifest.to_json()
    with staged_bytes(record_path, force=force) as record:
        record.write(record_text.encode("utf-8"))
        with staged_bytes(out, force=force) as public:
            public.write(text.encode("utf-8"))
    return WrittenDesign(manifest, out, record_path)


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


def _names(variables: str | Sequence[str]) -> list[str]:
    names = [variables] if isinstance(variables, str) else list(variables)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ParameterError("give at least one variable (column name) to perturb")
    if len(set(names)) != len(names):
        raise ParameterError(f"a variable is listed twice: {names}")
    return names


def _count(data: Any, names: list[str], categories: Mapping[str, Sequence[Label]],
           quiet: bool, na_values: Sequence[str]) -> tuple[CountTable, str, str | None]:
    """Count the variables, missing values as a category ``None`` of each (so that a record
    missing one variable still counts in the others' designs); returns the table, a
    description of the data and its digest."""
    from pramkit.codebook import categories_of
    from pramkit.io import sha256_of

    with_missing = {c: (*cats, None) for c, cats in categories.items()}
    if isinstance(data, (str, Path)):
        table = count_file(data, names, categories=with_missing or None, missing="category", quiet=quiet,
                           na_values=na_values)
        return table, str(data), sha256_of(data)
    import pandas as pd
    import pyarrow as pa

    if isinstance(data, pa.Table):
        data = data.select([n for n in names if n in data.column_names]).to_pandas()
    if isinstance(data, pd.DataFrame):
        from pramkit.io import require_columns

        require_columns(names, list(data.columns), "the data")
        found = {n: with_missing.get(n) or (*categories_of(data[n], column=n), None) for n in names}
        return count_frame(data, names, categories=found), "a DataFrame in memory", None
    raise ParameterError(f"data must be a file path, a pandas DataFrame or an Arrow table, "
                         f"not {type(data).__name__}")


def _declared(names: list[str], categories: Mapping[str, Sequence[Label]] | str | Path | None,
              prior: Prior | None) -> tuple[dict[str, tuple[Label, ...]], dict[str, str]]:
    """Each variable's declared categories and where they came from."""
    if isinstance(categories, (str, Path)):
        categories = read_codebook(categories)
    declared: dict[str, tuple[Label, ...]] = {}
    source: dict[str, str] = {}
    for n in names:
        if categories is not None and n in categories:
            declared[n], source[n] = tuple(categories[n]), "declared"
        elif prior is not None and n in prior.distributions:
            declared[n], source[n] = prior.categories(n), "prior"
        else:
            source[n] = "data"
    return declared, source


def _labelled(data: Any, table: CountTable, source: dict[str, str], notes: list[str]) -> CountTable:
    """Categories read from the data, replaced by the value labels a Stata or SPSS file declares
    (its codebook) when they list every value found; ``source`` and ``notes`` say so."""
    from pramkit.io import value_label_categories

    undeclared = [n for n in table.columns if source[n] == "data"]
    if not undeclared or not isinstance(data, (str, Path)):
        return table
    for n, labels in value_label_categories(data, undeclared).items():
        try:
            table = table.extended(n, [*labels, None] if None in table.categories[table.columns.index(n)] else labels)
        except DataError as exc:
            notes.append(f"the value labels of {n!r} were not used as its categories: {exc}")
            continue
        source[n] = "declared"
        notes.append(f"the categories of {n!r} are the codes of its value labels in the file")
    return table


def _dp_frequencies(margins: Mapping[str, np.ndarray], epsilon: float,
                    rng: random.Random | None) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    """Noisy counts of each histogram (geometric mechanism, L1 sensitivity 2 per histogram), the
    design budget shared in proportion to the histograms' cells (the same noise relative to a mean
    count; :func:`pramkit.ledger.default_design_epsilon`); returns the post-processed proportions
    and the DP outputs."""
    from pramkit.privacy.geometric import dp_counts

    shares = split_within(epsilon, 0.0, [float(len(c)) for c in margins.values()])
    ps: dict[str, np.ndarray] = {}
    outputs: dict[str, dict[str, Any]] = {}
    for (name, counts), eps in zip(margins.items(), shares):
        noisy = dp_counts(np.asarray(counts, dtype=np.int64), eps, sensitivity=2, rng=rng)
        ps[name] = noisy.proportions(floor=1.0)  # noise never leaves a category probability 0
        outputs[name] = noisy.to_dict()
    return ps, outputs


def _public(m: PramMatrix, exact: bool) -> PramMatrix:
    """The matrix as it may be published: a design made on the exact data keeps its method
    and parameters but not p, nor an objective or certificate computed on p; nor do the
    blocks of a block-diagonal matrix, each designed on its stratum's exact frequencies."""
    if not exact:
        return m
    prov = m.provenance
    params = {k: v for k, v in prov.parameters.items() if k != "p"}
    public = Provenance(prov.method, params, None, None, None, prov.seconds)
    if m.blocks is None:
        return m.with_provenance(public)
    return PramMatrix.block_diagonal([_public(part, exact) for _, part in m.blocks], m.categories, public)


def design_release(
    data: Any,
    variables: str | Sequence[str],
    *,
    epsilon: float | None = None,
    method: str = "dp",
    split: str = "equal",
    epsilon_per_variable: Mapping[str, float] | None = None,
    design_epsilon: float | None = None,
    prior: Prior | str | Path | None = None,
    categories: Mapping[str, Sequence[Label]] | str | Path | None = None,
    exact_frequencies: bool = False,
    options: Mapping[str, Any] | None = None,
    distances: Mapping[str, Any] | str | Path | None = None,
    rng: random.Random | None = None,
    quiet: bool = True,
    na_values: Sequence[str] = NA_VALUES,
    forbid: Rules | str | Path | Sequence[Mapping[str, Any]] | None = None,
    strata: str | Sequence[str] = (),
    keep_codes: Mapping[str, Any] | None = None,
    household: str | None = None,
    household_vars: str | Sequence[str] = (),
    rule_breaking: str = "error",
    missing: str = "keep",
) -> Manifest:
    """Design the PRAM matrices of a release under one record budget.

    Parameters
    ----------
    data : str, Path, pandas.DataFrame or pyarrow.Table
        The original data (a file is streamed).
    variables : str or sequence of str
        The columns to perturb.
    epsilon : float, optional
        The record's total budget (nats), design step included.  Required for the
        families designed to a budget (dp, rr) unless ``epsilon_per_variable`` is given;
        for the others it is checked.
    method : str
        A family of :data:`pramkit.design.registry.FAMILIES`.
    split : {"equal", "optimal", "joint"}
        How the perturbation's budget is shared (module docstring).
    epsilon_per_variable : mapping, optional
        ``{variable: epsilon}``: explicit per-variable budgets instead of a split.
    design_epsilon : float, optional
        Budget of the design step's DP counts (default: :func:`pramkit.ledger.default_design_epsilon`).
    prior : Prior or path, optional
        Public frequencies (and categories): no design budget is spent.
    categories : mapping or path, optional
        Declared categories (a codebook): ``{variable: labels}`` or a codebook CSV.
    exact_frequencies : bool
        Design on the exact frequencies: no DP guarantee covers the design (the ledger says so).
    options : mapping, optional
        The family's own parameters (e.g. ``{"truthful": True}``, ``{"keep": 0.8}``).
    distances : str, Path, Distances or mapping, optional
        Distances between the categories (:func:`pramkit.design.distances.read_distances`:
        ``"ordinal"`` or a CSV of centroids, adjacencies or a table), for every variable or as
        ``{variable: spec}``: the ``dp`` family's ``objective="distance"`` and the ``metric``
        family design with them, and the design record gives each such variable's
        ``expected_distance`` (on the exact frequencies, in the distances' unit) for any method.
    rng : random.Random, optional
        Randomness of the DP counts (default: the operating system's CSPRNG; pass a seeded
        generator only in tests).
    quiet : bool
        No progress bars.
    na_values : sequence of str
        Texts that mean missing in a CSV file besides the empty field (default ``("NA",)``);
        the manifest's ``input`` records them, and ``pramkit apply`` must read the file the same way.
    forbid : Rules, path or list of mappings, optional
        Edit rules (:mod:`pramkit.structure`): forbidden combinations, public knowledge that
        costs no budget.  No released record holds one: with ``split="joint"`` the matrix
        covers the allowed cells only; a rule naming a single variable (or a variable and
        strata) removes cells from that variable's matrix; a rule coupling two variables
        perturbed independently is an error that points to ``split="joint"``.
    strata : str or sequence of str
        Stratum columns, released unperturbed: each variable's values move only within the
        values its record's stratum allows (those the rules leave it), by a block-diagonal
        matrix with a block per stratum, each designed at the variable's budget (its epsilon
        given the stratum).
    keep_codes : mapping, optional
        ``{variable: code or codes}``: codes that never change and into which nothing
        moves; membership in a kept code is released exactly and the ledger says so.
    household, household_vars : str, sequence of str
        The household id column and the variables perturbed once per household (every member
        gets the household's draw); each must be constant within a household, and their
        design counts households, not persons.
    rule_breaking : {"error", "keep"}
        An original record that breaks a rule: an error naming the row (default), or kept
        as it is (unperturbed) and counted in the design record's notes.
    missing : {"keep", "category"}
        ``"keep"`` (default): missing values stay missing and no value becomes missing, so which
        values are missing is released exactly (the ledger says so; a joint record missing some
        columns has the others perturbed by the matrix's margin over them).  ``"category"``:
        missing is a category of every variable (a level of every column of a joint design),
        designed and perturbed like the others, whether or not the file holds a missing value.

    Returns
    -------
    Manifest
        The public manifest; ``manifest.design_record`` is the private :class:`DesignRecord`.

    Raises
    ------
    ParameterError
        An option is malformed or inconsistent with another (budget, split, method,
        prior, distances, structure), or the design exceeds the record budget.
    DataError
        The data cannot be read, a variable has fewer than two categories, a record
        breaks an edit rule (``rule_breaking="error"``), or a household variable varies
        within a household.
    PramkitError
        The optimal split funds no variable.

    Examples
    --------
    >>> import random
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> data = census(20_000)
    >>> m = design_release(data, ["age", "sex"], epsilon=2.0, categories=CENSUS_VARIABLES,
    ...                    rng=random.Random(1))
    >>> m.record_epsilon <= 2.0, m.ledger.frequencies, m.ledger.covers_everything
    (True, 'dp_counts', True)
    """
    t0 = time.perf_counter()
    names = _names(variables)
    fam = family(method)
    opts = dict(options or {})
    if split not in SPLITS:
        raise ParameterError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    dist_specs: dict[str, Any] = {}
    if distances is not None:
        dist_specs = dict(distances) if isinstance(distances, Mapping) else {n: distances for n in names}
        if set(dist_specs) - set(names):
            raise ParameterError(f"distances name {sorted(set(dist_specs) - set(names))}, which are not among the "
                                 f"variables {names}")
        if split != "equal":
            raise ParameterError("distances apply to split equal (one matrix per variable)")
        if "distances" in opts:
            raise ParameterError("give distances once: as distances=, not also as an option")
    uses_distances = method == "metric" or (method == "dp" and opts.get("objective") == "distance")
    budget = None if epsilon is None else positive(epsilon, "epsilon (the record budget)")
    per_var = None
    if epsilon_per_variable is not None:
        per_var = {n: positive(e, f"epsilon of {n!r}") for n, e in epsilon_per_variable.items()}
        require_variables(per_var, names, "per-variable budget")
        if set(per_var) - set(names):
            raise ParameterError(f"per-variable budgets name {sorted(set(per_var) - set(names))}, "
                                 f"which are not among the variables {names}")
        if split != "equal":
            raise ParameterError("give either per-variable budgets or a split, not both")
    takes_budget = fam.takes_budget(opts)
    if takes_budget and budget is None and per_var is None:
        raise ParameterError(f"method {method!r} needs epsilon (the record budget) or per-variable budgets")
    if not takes_budget and per_var is not None:
        raise ParameterError(f"method {method!r} fixes each variable's epsilon by its own parameters; "
                             "per-variable budgets do not apply")
    if split != "equal" and not (method == "dp"):
        raise ParameterError(f"split {split!r} is for method 'dp'; method {method!r} designs each variable "
                             "on its own (split equal)")
    shape = structure(names, split, forbid, strata, keep_codes, household, household_vars, rule_breaking)
    if missing not in ("keep", "category"):
        raise ParameterError(f"missing must be 'keep' or 'category', got {missing!r}")
    if isinstance(prior, (str, Path)):
        prior = read_prior(prior)
    reads = fam.reads_frequencies(opts)
    notes: list[str] = list(prior.notes) if prior is not None else []
    if prior is not None:
        require_variables(prior.distributions, names, "prior")
    if exact_frequencies and prior is not None:
        raise ParameterError("give a prior or exact frequencies, not both")
    source = "none" if not reads else "prior" if prior is not None else "exact" if exact_frequencies else "dp_counts"
    if design_epsilon is not None:
        if isinstance(design_epsilon, bool) or not isinstance(design_epsilon, (int, float)) \
                or not math.isfinite(design_epsilon) or design_epsilon < 0 \
                or (source == "dp_counts" and design_epsilon == 0):
            raise ParameterError(f"design epsilon must be a {'positive' if source == 'dp_counts' else 'non-negative'}"
                                 f" finite number, got {design_epsilon!r}")
        if budget is not None and not design_epsilon < budget:
            raise ParameterError(f"the design epsilon {design_epsilon:g} must be smaller than the record budget "
                                 f"{budget:g}, which also pays for the perturbation")
        if source != "dp_counts":
            why = {"none": f"method {method!r} reads no frequencies", "prior": "the design uses the public prior",
                   "exact": "the design uses the exact frequencies"}[source]
            notes.append(f"design epsilon not spent: {why}")
    base = budget if budget is not None else math.fsum(per_var.values()) if per_var else None
    if source == "dp_counts" and design_epsilon is None and base is None:
        raise ParameterError(f"method {method!r} reads frequencies: give epsilon (the record budget), "
                             "design_epsilon, or a public prior")

    counted = [*shape.strata, *names]
    declared, cat_source = _declared(counted, categories, prior)
    table, described, digest = _count(data, counted, declared, quiet, tuple(na_values))
    table = _labelled(data, table, cat_source, notes)
    for n, cats in zip(counted, table.categories):
        if n in names and len([c for c in cats if c is not None]) < 2:
            raise DataError(f"column {n!r} has fewer than two categories ({[c for c in cats if c is not None]}); "
                            "nothing to perturb")
    households = household_table(data, shape, table, tuple(na_values)) if shape.household else None
    targets = plan_targets(names, split, shape, table, households, missing)
    check_breaking(data, shape, targets, notes, tuple(na_values))

    # the frequencies the design may read
    dp_outputs: dict[str, dict[str, Any]] = {}
    margins = {k: t.counts for k, t in targets.items()}
    exact_design = {k: normalised(t.counts) for k, t in targets.items()}
    design_eps = 0.0
    if source == "dp_counts":
        design_eps = float(design_epsilon) if design_epsilon is not None else \
            default_design_epsilon(base, table.rows, [len(c) for c in margins.values()])
    if source == "dp_counts":
        design_p, dp_outputs = _dp_frequencies(margins, design_eps, rng)
    elif source == "prior":
        require_variables(prior.distributions, list(shape.strata), "prior (the strata)")
        design_p = {k: normalised(_product([prior.p(c) for c in t.read_columns])[t.index]) for k, t in targets.items()}
    elif source == "exact":
        design_p = dict(exact_design)
    else:
        design_p = {k: None for k in margins}

    # the budget of each designed matrix
    warnings: list[str] = []
    extra: dict[str, Any] = {}
    if not takes_budget:
        eps_of: dict[str, float | None] = {k: None for k in targets}
    elif per_var is not None:
        eps_of = dict(per_var)
        if budget is not None and Ledger(design_eps).total(list(per_var.values())) > budget:
            raise ParameterError(f"the per-variable budgets and the design step add up to "
                                 f"{Ledger(design_eps).total(list(per_var.values())):.6g}, more than the record "
                                 f"budget {budget:g}")
    elif split == "optimal":
        from pramkit.design.dp_multivariate import split_budget

        if opts.get("objective") == "variance":
            raise ParameterError("split 'optimal' maximises information; use split equal with objective 'variance'")

        room = split_within(budget, design_eps, [1.0])[0]
        best = split_budget({n: design_p[n] for n in names}, room, split="optimal",
                            truthful=bool(opts.get("truthful")), categories={n: targets[n].labels for n in names})
        funded = {n: e for n, e in best.epsilons.items() if e > 0}
        if not funded:
            raise PramkitError("no variable gets a positive epsilon; nothing to design")
        fitted = split_within(budget, design_eps, list(funded.values()))
        eps_of = dict(zip(funded, fitted))
        extra["split_upper_bound_nats"] = best.upper_bound_nats
        extra["split_grid_step"] = best.grid_step
        left = [n for n in names if n not in funded]
        if left:
            warnings.append(f"variables {left} get epsilon 0 in the optimal split and are released unperturbed "
                            "only if they are not sensitive; use split equal to perturb every variable")
    else:
        eps_of = dict(zip(targets, split_within(budget, design_eps, [1.0] * len(targets))))

    cats_of = {k: t.labels for k, t in targets.items()}
    from pramkit.codebook import declares_order
    from pramkit.design.distances import read_distances, require_order

    ordered = {k: cat_source.get(k) != "data" or declares_order(data, k) for k in targets}
    dist_of = {k: read_distances(spec, cats_of[k], declared_order=ordered[k], variable=k)
               for k, spec in dist_specs.items()}
    for k in targets:  # "ordinal" given as an option, and the geometric mechanism, read the order too
        spec = dist_specs.get(k, opts.get("distances"))
        if isinstance(spec, str) and spec.strip().lower() == "ordinal":
            require_order(k, cats_of[k], declared=ordered[k])
        elif method == "metric" and opts.get("mechanism") == "geometric":
            require_order(k, cats_of[k], declared=ordered[k], needs="the geometric mechanism and its steps")
    matrices: dict[str, PramMatrix] = {}
    to_design = sum(len(cats_of[k]) for k in eps_of)
    with progress(total=to_design, desc="designing", unit="categories", quiet=quiet) as bar:
        for k in eps_of:
            bar.set_postfix_str(f"{k} (S = {len(cats_of[k]):,})")
            build_opts = {**opts, "distances": dist_of[k]} if uses_distances and k in dist_of else opts
            matrices[k] = build(fam, targets[k], design_p[k], eps_of[k], build_opts)
            warnings.extend(f"{k}: {w}" for w in truthful_warnings(matrices[k]) + estimability_warnings(matrices[k]))
            bar.update(len(cats_of[k]))

    exact = source == "exact"
    variables_out = tuple(
        PerturbedVariable(k, _public(m, exact), missing, columns=targets[k].columns, given=targets[k].given,
                          unit=targets[k].unit)
        for k, m in matrices.items())
    dependent = []
    from_data = [n for n in names if cat_source[n] == "data"]
    if from_data:
        dependent.append(f"the categories of {', '.join(from_data)} were read from the original file, so the "
                         "manifest shows which categories occur in it (declare them with a codebook to avoid this)")
    if exact:
        dependent.append("the matrices were designed from the exact frequencies of the original file, which the "
                         "published matrices reveal in part")
    ledger = Ledger(design_epsilon=design_eps, frequencies=source, record_epsilon_budget=budget,
                    prior=prior.name if prior is not None else None, categories=cat_source,
                    data_dependent=tuple(dependent), dp_counts=dp_outputs)
    facts = {"method": method, "split": split, "record_epsilon_budget": budget, "design_epsilon": design_eps,
             "frequencies": source, "prior": ledger.prior, "options": to_jsonable(opts),
             "na_values": list(na_values), **({"missing": missing} if missing != "keep" else {})}
    if shape.any:
        facts["structure"] = shape.to_dict()
    if dist_specs:
        facts["distances"] = {k: getattr(v, "source", None) or str(v) for k, v in dist_specs.items()}
    total = ledger.total([v.epsilon_given_shown for v in variables_out])
    if budget is not None and total > budget:
        mixed = [v.name for v in variables_out if v.epsilon_given_shown > v.block_epsilon]
        raise ParameterError(f"the design gives record epsilon {total:.6g}"
                             f"{' (given the structure)' if shape.any else ''}, more than the budget "
                             f"{budget:g}; " + (
                                 f"a record of {', '.join(mixed)} missing a column whose codes are kept is "
                                 "perturbed by a margin that mixes blocks, with a larger epsilon: use missing "
                                 "'category' (--missing category)" if mixed else
                                 "lower the method's parameters (or raise the budget)"))

    per_variable = {}
    for k in margins:
        m = matrices.get(k)  # None: epsilon 0 in the optimal split, released unperturbed
        p_exact = exact_design[k]
        per_variable[k] = {
            "categories": [list(c) if isinstance(c, tuple) else c for c in cats_of[k]],
            "counts": np.asarray(margins[k]).tolist(),
            "p": np.asarray(p_exact).tolist(),
            "design_p": None if design_p[k] is None else np.asarray(design_p[k]).tolist(),
            "epsilon": 0.0 if m is None else m.block_epsilon,
            "information_nats": 0.0 if m is None else _information(p_exact, m),
            "design_information_nats": None if m is None or m.provenance.objective_name != "mutual_information_nats"
            else m.provenance.objective,
        }
        if k in dist_of and m is not None and _dense_ok(m):
            from pramkit.design.geo import geo_utility

            per_variable[k]["expected_distance"] = geo_utility(m, dist_of[k], p_exact).expected_distance
            per_variable[k]["distance_unit"] = dist_of[k].unit
    if split == "joint" and not shape.any and missing == "keep" and design_p[names_joint := "*".join(names)] is not None:
        extra["joint"] = _joint_comparison(complete(table), design_p[names_joint], matrices[names_joint], opts)
    if households is not None:
        extra["households"] = households.rows
    if method != "dp":
        from pramkit.design.methods import measure

        extra["measures"] = {k: dataclasses.asdict(measure(m, exact_design[k])) for k, m in matrices.items()
                             if m.blocks is None and _dense_ok(m)}
    extra["seconds"] = time.perf_counter() - t0
    record = DesignRecord(
        data=described, sha256=digest, rows=table.rows, missing=table.rows - int(complete(table).counts.sum()),
        method=method, split=split,
        options=opts, variables=per_variable, matrices=matrices, extra=extra, warnings=tuple(warnings),
        notes=tuple(notes),
    )
    return Manifest(variables_out, input=facts, ledger=ledger, design_record=record)


#: Largest matrix stored without its entries (truncated geometric) whose dense figures the design
#: record computes (information, measures): 4096^2 entries are 134 MB.
MAX_DENSE_FIGURES = 4096


def _dense_ok(m: PramMatrix) -> bool:
    """Whether the record may build ``m``'s dense array for its figures."""
    return m.geometric_rate is None or m.size <= MAX_DENSE_FIGURES


def _information(p: np.ndarray, m: PramMatrix) -> float | None:
    """I(X; Z) in nats: O(S) for a compact form (8) matrix, O(S^2) otherwise; ``None`` for a
    matrix stored without its entries beyond :data:`MAX_DENSE_FIGURES` categories."""
    if m.is_compact:
        return mutual_information_form8(p, m.form8_q)
    if not _dense_ok(m):
        return None
    return mutual_information(p, m.matrix)


def _joint_comparison(table: CountTable, design_p: np.ndarray, joint: PramMatrix,
                      options: Mapping[str, Any]) -> dict[str, Any]:
    """The joint matrix against the best independent alternative at the same budget (private).

    The alternative splits the joint matrix's epsilon over the variables (``split="optimal"``),
    each designed on the margins of the same design frequencies; both are scored on the exact
    joint I(X; Z) of the original file (:func:`pramkit.design.dp_multivariate.independent_information`),
    so the record says which perturbation keeps more.
    """
    from pramkit.design.dp_multivariate import MAX_JOINT_CELLS, independent_information, split_budget

    cells = int(table.counts.size)
    out: dict[str, Any] = {"cells": cells}
    if cells > MAX_JOINT_CELLS:
        out["better"] = None
        out["note"] = f"not compared: more than {MAX_JOINT_CELLS} cells (the comparison builds K x K matrices)"
        return out
    shape = table.counts.shape
    joint_p = np.asarray(design_p, dtype=float).reshape(shape)
    margins = {n: joint_p.sum(axis=tuple(a for a in range(len(shape)) if a != i))
               for i, n in enumerate(table.columns)}
    alt = split_budget(margins, joint.epsilon, split="optimal", truthful=bool(options.get("truthful")))
    exact = table.counts.reshape(-1) / table.counts.sum()
    independent = independent_information(exact, table.columns, shape, alt.matrices)
    joint_nats = mutual_information(exact, joint.matrix)
    out.update({"independent_joint_information_nats": independent, "joint_design_information_nats": joint_nats,
                "independent_epsilons": alt.epsilons,
                "better": "joint" if joint_nats > independent else "independent"})
    return out


def _product(ps: Sequence[np.ndarray]) -> np.ndarray:
    """The joint distribution of independent variables (a prior gives margins only)."""
    out = np.ones(1)
    for p in ps:
        out = np.outer(out, p).ravel()
    return out


def design_recognition(
    data: Any,
    keys: Sequence[str],
    *,
    alpha: float,
    combinations: int | Sequence[Sequence[str]] = 3,
    solver: str = "restricted",
    gamma: float = 0.9,
) -> Manifest:
    """One joint matrix over the key variables against spontaneous recognition (Cator,
    Hensbergen and Rozenholc, condition C1), as a release manifest.

    The design reads the exact joint frequencies of the keys (condition C1 is a statement
    about the file's own counts), so no DP guarantee covers it: the ledger says so in plain
    words.  The figures of the design (worst posterior, L2 loss, the uniform-noise
    baseline) are in the private design record.

    Parameters
    ----------
    data : str, Path or pandas.DataFrame
        The original data.
    keys : sequence of str
        The key variables, perturbed jointly.
    alpha : float
        The bound on every posterior of condition (C1) (a probability).
    combinations : int or sequence of sequences
        The key combinations checked: a size, or lists of keys.
    solver : {"restricted", "full"}
        Restricted: convex, certified gap; full: every entry free (small key spaces only).
    gamma : float
        Lower bound on the diagonal of the reductions.

    Returns
    -------
    Manifest
        With ``design_record`` attached.

    Raises
    ------
    ParameterError
        No key, a key twice, or ``alpha``, ``gamma`` or ``solver`` out of range.
    PramkitError
        ``combinations`` is not between 1 and the number of keys.
    DataError
        The data cannot be read, or a key is not one of its columns.

    References
    ----------
    Cator, Hensbergen and Rozenholc, condition (C1).

    Examples
    --------
    >>> from pramkit.datasets import census
    >>> m = design_recognition(census(3_000), ["sex", "marital_status"], alpha=0.9, combinations=2)
    >>> m.ledger.frequencies, m.ledger.covers_everything
    ('exact', False)
    """
    from pramkit.design.recognition import recognition_design_from_data
    from pramkit.io import read_table, sha256_of

    names = _names(list(keys))
    if len(names) < 2:
        raise ParameterError("the recognition design perturbs the key variables jointly: give at least two keys")
    t0 = time.perf_counter()
    digest = None
    described = "a DataFrame in memory"
    if isinstance(data, (str, Path)):
        described, digest = str(data), sha256_of(data)
        data = read_table(data, columns=names)
    d = recognition_design_from_data(data, names, alpha=alpha, combinations=combinations, method=solver,
                                     gamma=gamma)
    designed = d.perturbed_variable()
    # the loss, the worst posterior and the certificate are computed on the exact counts: private
    var = dataclasses.replace(designed, matrix=_public(designed.matrix, exact=True))
    ledger = Ledger(frequencies="exact", categories={k: "data" for k in names}, data_dependent=(
        "the recognition design reads the exact joint frequencies of the keys, and the published joint matrix "
        "lists the key combinations that occur in the original file",))
    top = d.destinations().head(5)
    extra = {
        "keys": names,
        "alpha": d.alpha,
        "worst_posterior": d.worst_posterior,
        "l2_loss": d.loss,
        "expected_changes_records": d.expected_changes,
        "min_diagonal": d.matrix.min_diagonal if d.matrix is not None else None,
        "baseline": {"weight": d.baseline.weight, "l2_loss": d.baseline.loss,
                     "expected_changes_records": d.baseline.expected_changes},
        "destinations": [{"cell": list(c) if isinstance(c, tuple) else c, "records_in": float(r)}
                         for c, r in zip(top["cell"], top["records_in"])],
        "diagnostics": dataclasses.asdict(d.diagnostics),
        "seconds": time.perf_counter() - t0,
    }
    counts = d.space.counts
    info = mutual_information(counts / counts.sum(), var.matrix.matrix) if var.matrix.size == counts.size else None
    record = DesignRecord(
        data=described, sha256=digest, rows=int(counts.sum()), missing=0, method="recognition", split="joint",
        options={"alpha": alpha, "combinations": combinations, "solver": solver, "gamma": gamma},
        variables={var.name: {"categories": [list(c) for c in var.matrix.categories], "epsilon": var.epsilon,
                              "information_nats": info, "design_information_nats": None}},
        matrices={var.name: designed.matrix}, extra=extra,
    )
    facts = {"method": "recognition", "split": "joint", "record_epsilon_budget": None, "design_epsilon": 0.0,
             "frequencies": "exact", "prior": None, "options": to_jsonable(record.options)}
    return Manifest((var,), input=facts, ledger=ledger, design_record=record)
