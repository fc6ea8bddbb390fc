"""The analyst's kit: scripts in R, SPSS syntax and Python that estimate a released file's table.

``pramkit estimate RELEASED --manifest M --vars ... --emit r|spss|python --emit-out FILE`` writes a
self-contained script that reads the released CSV file (and, in R and Python, the manifest) and
computes what ``pramkit estimate`` prints with its default (unbiased moment) estimator: the
corrected counts ``T = (M^T)^-1 u``, their standard errors, each cell's share of its ``by`` group
with its delta-method standard error, and normal intervals.  With survey weights (``survey``: the
weight column, and optionally strata and primary sampling units) the released counts are weighted
and their covariance is the with-replacement ultimate-cluster (Taylor linearisation) estimator,
which covers the design's variance and PRAM's together (:mod:`pramkit.estimate.weighted`):

* ``r`` -- R with jsonlite (:mod:`pramkit.estimate.emit_r`), and the package ``survey``
  (Lumley, *Complex Surveys*, 2010) for the design-based covariance of the weighted counts;
* ``python`` -- numpy and pandas, no pramkit (the template ``analyst_script.py`` beside this module);
* ``spss`` -- SPSS syntax that GNU PSPP (1.6 or later) runs: its MATRIX language forms the same
  matrices.  SPSS syntax cannot read JSON, so the script holds the manifest's matrices (dense)
  and the categories of the unperturbed columns tabulated, as read from the released file when
  the script was written: both public.

What no script computes is refused here, with what to use instead: a released file other than CSV,
a variable perturbed jointly or within strata, a singular or badly conditioned matrix, a
finite-population correction and replicate weights (``pramkit estimate`` computes all of these).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from pramkit.atomic import PathLike, write_text_atomic
from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import ParameterError
from pramkit.estimate.emit_r import check_script_request
from pramkit.manifest import Manifest

if TYPE_CHECKING:  # pragma: no cover
    from pramkit.estimate.survey import SurveyDesign

#: The languages of ``--emit``, and how each script is run.
EMIT_LANGUAGES: dict[str, str] = {
    "r": "Rscript {out} [OUT.csv]",
    "spss": "pspp {out}   (or open it in SPSS; it writes {out}.csv beside itself)",
    "python": "python {out} [OUT.csv]",
}


def _settings_python(values: dict[str, object]) -> str:
    return "\n".join(f"{k} = {v!r}" for k, v in values.items())


def python_script(manifest: Manifest, vars: Sequence[str], *, released: PathLike, manifest_file: PathLike,
                  by: Sequence[str] = (), variance: str = "multinomial", confidence: float = 0.95,
                  na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP, encoding: str = CSV_ENCODING,
                  survey: SurveyDesign | None = None) -> str:
    """The Python script (numpy and pandas only) that estimates the table of ``vars`` (by ``by``).

    Parameters
    ----------
    manifest : Manifest
        The release's manifest.
    vars, by : sequence of str
        The columns to tabulate; grouping columns (shares within their groups).
    released, manifest_file : str or os.PathLike
        The released CSV file and the manifest, as the script should name them.
    variance, confidence, na_values, sep, encoding
        As :func:`pramkit.estimate.emit_r.r_script`.
    survey : SurveyDesign, optional
        Weights, strata and PSUs (``single_psu`` as :class:`pramkit.estimate.survey.SurveyDesign`).

    Returns
    -------
    str
        The template ``analyst_script.py`` with its settings.

    Raises
    ------
    ParameterError
        As :func:`check_script_request`.

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> from pramkit.estimate.survey import SurveyDesign
    >>> m = Manifest.of({"answer": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))})
    >>> text = python_script(m, ["answer"], by=["sex"], released="r.csv", manifest_file="m.json",
    ...                      survey=SurveyDesign("w", strata="region"))
    >>> [line for line in text.splitlines() if line.startswith(("VARS", "BY", "WEIGHTS", "STRATA"))]
    ["VARS = ['answer']", "BY = ['sex']", "WEIGHTS = 'w'", "STRATA = 'region'"]
    >>> "import pramkit" in text
    False
    """
    from pramkit.estimate.identifiability import MAX_CONDITION
    from pramkit.io import csv_dialect

    check_script_request(manifest, vars, by, released=released, variance=variance, confidence=confidence,
                         survey=survey, language="python")
    dialect = csv_dialect(sep, encoding)
    settings = _settings_python({
        "RELEASED_FILE": str(released), "MANIFEST_FILE": str(manifest_file), "VARS": list(vars), "BY": list(by),
        "VARIANCE": variance, "CONFIDENCE": confidence,
        "NA_STRINGS": [str(v) for v in na_values if str(v) != ""], "CSV_SEP": dialect.sep,
        "FILE_ENCODING": dialect.encoding, "MAX_CONDITION": MAX_CONDITION,
        "WEIGHTS": None if survey is None else survey.weights, "STRATA": None if survey is None else survey.strata,
        "PSU": None if survey is None else survey.psu, "SINGLE_PSU": "error" if survey is None else survey.single_psu,
    })
    template = files("pramkit.estimate").joinpath("analyst_script.py").read_text(encoding="utf-8")
    head, rest = template.split("# ---- settings (written by pramkit) ----\n", 1)
    _, tail = rest.split("# ---- end of settings ----\n", 1)
    return (head + "# ---- settings (written by pramkit) ----\n" + settings + "\n# ---- end of settings ----\n"
            + tail)


def spss_string(text: str) -> str:
    """``text`` as an SPSS string literal (double quotes doubled).

    Examples
    --------
    >>> print(spss_string('a "b" c'))
    "a ""b"" c"
    """
    return '"' + text.replace('"', '""') + '"'


def _spss_matrix(m: np.ndarray) -> str:
    rows = [", ".join(repr(float(x)) for x in row) for row in m]
    return "{" + ";\n   ".join(rows) + "}"


def _released_levels(released: PathLike, column: str, na_values: Sequence[str], sep: str,
                     encoding: str) -> list[str]:
    """The categories of an unperturbed column of the released file, as the scripts order them."""
    import re

    import pandas as pd

    frame = pd.read_csv(released, usecols=[column], dtype=str, keep_default_na=False,
                        na_values=["", *na_values], sep=sep, encoding=encoding)
    labels = [str(x) for x in pd.unique(frame[column].dropna())]
    if not labels:
        raise ParameterError(f"column {column!r} of {str(released)!r} has no non-missing value")
    number = re.compile(r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$")
    return sorted(labels, key=float) if all(number.match(x) for x in labels) else sorted(labels)


def spss_script(manifest: Manifest, vars: Sequence[str], *, released: PathLike, by: Sequence[str] = (),
                variance: str = "multinomial", confidence: float = 0.95, na_values: Sequence[str] = NA_VALUES,
                sep: str = CSV_SEP, encoding: str = CSV_ENCODING, survey: SurveyDesign | None = None,
                out_csv: PathLike = "estimate.csv") -> str:
    """SPSS syntax (run by GNU PSPP 1.6 or later, or SPSS) that estimates the table of ``vars`` (by ``by``).

    The released file is read here for its header (the position of each column) and the
    categories of the unperturbed columns tabulated; the matrices are copied from the manifest.

    Parameters
    ----------
    manifest : Manifest
        The release's manifest.
    vars, by : sequence of str
        The columns to tabulate; grouping columns.
    released : str or os.PathLike
        The released CSV file (read now, and named in the script).
    variance, confidence, na_values, sep, encoding, survey
        As :func:`python_script`.
    out_csv : str or os.PathLike
        The table the script writes (CSV, numbers in full precision).

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        As :func:`check_script_request`, or a column is not in the released file.
    """
    import pandas as pd

    from pramkit.io import csv_dialect

    check_script_request(manifest, vars, by, released=released, variance=variance, confidence=confidence,
                         survey=survey, language="spss")
    dialect = csv_dialect(sep, encoding)
    na = [str(v) for v in na_values if str(v) != ""]
    header = list(pd.read_csv(released, nrows=0, sep=dialect.sep, encoding=dialect.encoding).columns)
    axes = [*vars, *by]
    design = [] if survey is None else survey.columns
    absent = [c for c in [*axes, *design] if c not in header]
    if absent:
        raise ParameterError(f"column(s) {absent} are not in {str(released)!r}; its columns are {header}")
    position = {c: i for i, c in enumerate(header)}
    levels, mats = _spss_axes(manifest, axes, released, na, dialect.sep, dialect.encoding)
    shape = [len(x) for x in levels]
    cells = int(np.prod(shape))
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    single = "error" if survey is None else survey.single_psu
    lines = [
        *_spss_read(released, header, axes, design, by, dialect.sep, dialect.encoding),
        *_spss_cells(axes, levels, position, na, strides),
        *_spss_survey(survey, position),
        *_spss_released_counts(cells),
        *_spss_estimate(mats, survey, variance, single),
        *_spss_shares(len(vars), shape, cells, confidence),
        *_spss_save(single, survey),
        *_spss_labels(axes, levels, shape, strides, out_csv),
    ]
    return "\n".join(lines) + "\n"


def _spss_axes(manifest: Manifest, axes: Sequence[str], released: PathLike, na: Sequence[str], sep: str,
               encoding: str) -> tuple[list[list[str]], list[np.ndarray]]:
    """Each tabulated column's categories and matrix: the manifest's for a perturbed column; for another,
    the categories of the released file (:func:`_released_levels`) and the identity.

    Parameters
    ----------
    manifest : Manifest
        The release's manifest.
    axes : sequence of str
        The tabulated columns, ``vars`` then ``by``.
    released : str or os.PathLike
        The released CSV file.
    na : sequence of str
        The texts that mean missing besides the empty field.
    sep, encoding : str
        The released file's separator and encoding (checked).

    Returns
    -------
    levels : list of list of str
        The categories of each column, as the script recodes them.
    mats : list of numpy.ndarray
        The matrix of each column (dense).
    """
    levels: list[list[str]] = []
    mats: list[np.ndarray] = []
    for a in axes:
        if a in manifest.names:
            v = manifest[a]
            levels.append([_label(c) for c in v.matrix.categories])
            mats.append(np.asarray(v.matrix.matrix, dtype=float))
        else:
            levels.append(_released_levels(released, a, na, sep, encoding))
            mats.append(np.eye(len(levels[-1])))
    return levels, mats


def _spss_read(released: PathLike, header: Sequence[str], axes: Sequence[str], design: Sequence[str],
               by: Sequence[str], sep: str, encoding: str) -> list[str]:
    """The script's opening comments and the GET DATA command that reads the released file.

    Parameters
    ----------
    released : str or os.PathLike
        The released CSV file, as the script names it.
    header : sequence of str
        Its columns: those tabulated or of the design are read as long strings, the others as one character.
    axes, design, by : sequence of str
        The tabulated columns, the survey design's columns and the grouping columns.
    sep, encoding : str
        The released file's separator and encoding (checked).

    Returns
    -------
    list of str
        The lines.
    """
    fields = " ".join(f"c{i + 1} A{4096 if c in axes or c in design else 1}" for i, c in enumerate(header))
    spss_encoding = "UTF-8" if encoding.startswith("utf") else encoding.upper()
    return [
        "* The original frequency table of a PRAM-released file, estimated in SPSS syntax (GNU PSPP 1.6+).",
        "* Written by pramkit estimate --emit spss: the unbiased moment estimator T = (M^T)^-1 u of the",
        "* original counts from the released counts u, its standard errors, and each cell's share of its",
        "* group with delta-method standard errors, as pramkit estimate computes them.",
        "* The matrices below are copied from the manifest; the categories of unperturbed columns from the",
        "* released file as it was when this script was written.",
        f"* Table: {' x '.join(axes)}" + (f" (shares within {', '.join(by)})" if by else "") + ".",
        "* Run: pspp THIS_FILE  (it writes the table to the file named on SAVE TRANSLATE at the end).",
        "SET DECIMAL=DOT MXLOOPS=2000000000.",
        f"GET DATA /TYPE=TXT /FILE={spss_string(str(released))} /ENCODING={spss_string(spss_encoding)}",
        f"  /ARRANGEMENT=DELIMITED /DELCASE=LINE /FIRSTCASE=2 /DELIMITERS={spss_string(sep)}",
        "  /QUALIFIER='\"' /VARIABLES=" + fields + ".",
    ]


def _spss_cells(axes: Sequence[str], levels: Sequence[Sequence[str]], position: dict[str, int],
                na: Sequence[str], strides: Sequence[int]) -> list[str]:
    """The commands that code each record's category of every tabulated column (``k1``, ``k2``, ...: 0
    missing, -1 not a category) and its cell of the table (``cell``: 0 when a value is missing).

    Parameters
    ----------
    axes : sequence of str
        The tabulated columns.
    levels : sequence of sequence of str
        Their categories.
    position : dict
        Each column's position in the released file (from 0).
    na : sequence of str
        The texts that mean missing besides the empty field.
    strides : sequence of int
        The step of each column's index in the cells' C order.

    Returns
    -------
    list of str
        The lines.
    """
    lines = []
    for i, a in enumerate(axes):
        rules = " ".join(f"({spss_string(x)}={k + 1})" for k, x in enumerate(levels[i]))
        missing = " ".join(f"({spss_string(x)}=0)" for x in ["", *na])
        lines.append(f"RECODE c{position[a] + 1} {missing} {rules} (ELSE=-1) INTO k{i + 1}.")
    all_present = " AND ".join(f"k{i + 1} > 0" for i in range(len(axes)))
    index = " + ".join(f"(k{i + 1} - 1) * {s}" for i, s in enumerate(strides))
    lines += [f"COMPUTE bad = {' OR '.join(f'k{i + 1} < 0' for i in range(len(axes)))}.",
              "COMPUTE cell = 0.", f"IF ({all_present}) cell = 1 + {index}."]
    return lines


def _spss_survey(survey: SurveyDesign | None, position: dict[str, int]) -> list[str]:
    """The commands that set each record's weight ``w``, stratum ``hs`` and PSU ``pp`` (1, 1 and 1 without a
    survey design; every record its own PSU without a PSU column).

    Parameters
    ----------
    survey : SurveyDesign or None
        The weights, strata and PSUs.
    position : dict
        Each column's position in the released file (from 0).

    Returns
    -------
    list of str
        The lines.
    """
    if survey is None:
        return ["COMPUTE w = 1.", "COMPUTE hs = 1.", "COMPUTE pp = 1."]
    return [f"COMPUTE w = NUMBER(c{position[survey.weights] + 1}, F40.0).",
            "COMPUTE hs = 1." if survey.strata is None
            else f"AUTORECODE VARIABLES=c{position[survey.strata] + 1} /INTO hs.",
            "COMPUTE pp = $CASENUM." if survey.psu is None
            else f"AUTORECODE VARIABLES=c{position[survey.psu] + 1} /INTO pp."]


def _spss_released_counts(cells: int) -> list[str]:
    """The commands that sum the (weighted) released counts of each PSU, open the MATRIX program, read them
    and stop on a value that is not a category or a weight that is not a number at least 0.

    Parameters
    ----------
    cells : int
        The number of cells of the table.

    Returns
    -------
    list of str
        The lines.
    """
    return [
        "COMPUTE badw = MISSING(w) OR w < 0.",
        f"VECTOR y({cells}).",
        f"RECODE y1 TO y{cells} (ELSE=0).",
        "IF (cell > 0 AND NOT badw) y(cell) = w.",
        "* The released counts of each PSU (weighted): one row per (stratum, PSU), one column per cell.",
        f"AGGREGATE OUTFILE=* /BREAK=hs pp /y1 TO y{cells} = SUM(y1 TO y{cells}) /bad=MAX(bad) /badw=MAX(badw).",
        "MATRIX.",
        f"GET Y /VARIABLES=y1 TO y{cells}.",
        "GET ST /VARIABLES=hs.",
        "GET BAD /VARIABLES=bad badw.",
        f"COMPUTE C = {cells}.",
        "DO IF MSUM(BAD(:, 1)) > 0.",
        "  PRINT /TITLE='error: a tabulated column holds a value that is not one of its categories'.",
        "ELSE IF MSUM(BAD(:, 2)) > 0.",
        "  PRINT /TITLE='error: the weight column holds a missing, non-numeric or negative value'.",
        "ELSE.",
        "COMPUTE P = NROW(Y).",
        "COMPUTE H = MMAX(ST).",
        "COMPUTE U = T(CSUM(Y)).",
        "COMPUTE N = MSUM(U).",
    ]


def _spss_estimate(mats: Sequence[np.ndarray], survey: SurveyDesign | None, variance: str,
                   single: str) -> list[str]:
    """The MATRIX commands of the estimate ``EST = (M^T)^-1 U`` and its covariance ``V``: multinomial or
    PRAM's alone without a survey design, else from the PSU totals (ultimate clusters).

    Parameters
    ----------
    mats : sequence of numpy.ndarray
        Each tabulated column's matrix.
    survey : SurveyDesign or None
        The weights, strata and PSUs.
    variance : str
        ``"multinomial"`` or ``"pram"`` (without a survey design).
    single : str
        What a stratum with a single PSU does (``"error"``, ``"certainty"`` or ``"center"``).

    Returns
    -------
    list of str
        The lines.
    """
    lines = []
    kron = None
    for i, m in enumerate(mats):
        lines.append(f"COMPUTE M{i + 1} = {_spss_matrix(m)}.")
        kron = f"M{i + 1}" if kron is None else f"KRONEKER({kron}, M{i + 1})"
    lines += [f"COMPUTE MT = {kron}.", "COMPUTE A = INV(T(MT)).", "COMPUTE EST = A * U."]
    if survey is None:
        lines.append("COMPUTE V = A * MDIAG(U) * T(A) - "
                     + ("EST * T(EST) / N." if variance == "multinomial" else "MDIAG(EST)."))
        return lines
    lines += [
        "COMPUTE G = (ST * MAKE(1, H, 1)) = (MAKE(P, 1, 1) * {1:H}).",
        "COMPUTE NH = CSUM(G).",
        "COMPUTE LONE = NH = 1.",
        "COMPUTE F = (1 - LONE) &* NH &/ (NH - 1 + LONE).",
        "COMPUTE SUMS = T(G) * Y.",
        "COMPUTE S = T(Y) * (Y &* ((G * T(F)) * MAKE(1, C, 1)))",
        "    - T(SUMS) * (SUMS &* (T(F &/ NH) * MAKE(1, C, 1))).",
    ]
    if single == "center":
        lines += ["COMPUTE L = G * T(LONE).",
                  "COMPUTE DEV = (Y - MAKE(P, 1, 1) * (CSUM(Y) / P)) &* (L * MAKE(1, C, 1)).",
                  "COMPUTE S = S + T(DEV) * DEV."]
    lines.append("COMPUTE V = A * S * T(A).")
    return lines


def _spss_shares(n_vars: int, shape: Sequence[int], cells: int, confidence: float) -> list[str]:
    """The MATRIX commands of each cell's share of its group (the cells of one category of every ``by``
    column; all cells without ``by``), the delta-method standard errors, the intervals and the table ``OUT``.

    Parameters
    ----------
    n_vars : int
        The number of ``vars`` columns (the first axes; the others are ``by``).
    shape : sequence of int
        The number of categories of each axis.
    cells : int
        The number of cells of the table.
    confidence : float
        The intervals' level.

    Returns
    -------
    list of str
        The lines.
    """
    group_axes = list(range(n_vars, len(shape)))
    grid = np.indices(shape).reshape(len(shape), -1)
    group = (np.ravel_multi_index(tuple(grid[group_axes]), tuple(shape[g] for g in group_axes))
             if group_axes else np.zeros(cells, dtype=np.int64))
    return [
        f"COMPUTE GRP = {_spss_matrix(np.asarray(group + 1, dtype=float)[:, None])}.",
        "COMPUTE SAME = (GRP * MAKE(1, C, 1)) = T(GRP * MAKE(1, C, 1)).",
        "COMPUTE TOT = SAME * EST.",
        "COMPUTE R = EST &/ TOT.",
        "COMPUTE J = (IDENT(C) - (R * MAKE(1, C, 1)) &* SAME) &/ (TOT * MAKE(1, C, 1)).",
        "COMPUTE RV = RSUM((J * V) &* J).",
        "COMPUTE SE = SQRT((DIAG(V) > 0) &* DIAG(V)).",
        "COMPUTE RSE = SQRT((RV > 0) &* RV).",
        f"COMPUTE Z = {NormalDist().inv_cdf(0.5 + confidence / 2)!r}.",
        "COMPUTE OUT = {T({1:C}), U, EST, SE, EST - Z * SE, EST + Z * SE, R, RSE, R - Z * RSE, R + Z * RSE}.",
    ]


def _spss_save(single: str, survey: SurveyDesign | None) -> list[str]:
    """The MATRIX commands that save the table ``OUT`` as the active dataset (refused, with a survey design
    whose ``single_psu`` is ``"error"``, when a stratum has one PSU) and close the MATRIX program.

    Parameters
    ----------
    single : str
        What a stratum with a single PSU does.
    survey : SurveyDesign or None
        The weights, strata and PSUs.

    Returns
    -------
    list of str
        The lines.
    """
    save = ["SAVE OUT /OUTFILE=* /VARIABLES=cell released estimate se ci_low ci_high proportion",
            "  proportion_se proportion_ci_low proportion_ci_high."]
    if single == "error" and survey is not None:
        lines = ["DO IF ANY(LONE).",
                 "  PRINT /TITLE='error: a stratum has a single PSU, so no variance of its own'.",
                 "ELSE.",
                 *save,
                 "END IF."]
    else:
        lines = save
    return [*lines, "END IF.", "END MATRIX."]


def _spss_labels(axes: Sequence[str], levels: Sequence[Sequence[str]], shape: Sequence[int],
                 strides: Sequence[int], out_csv: PathLike) -> list[str]:
    """The commands that label each cell with its categories (``v1``, ``v2``, ...), write the table to
    ``out_csv`` and list it.

    Parameters
    ----------
    axes : sequence of str
        The tabulated columns.
    levels : sequence of sequence of str
        Their categories.
    shape : sequence of int
        The number of categories of each axis.
    strides : sequence of int
        The step of each column's index in the cells' C order.
    out_csv : str or os.PathLike
        The table the script writes.

    Returns
    -------
    list of str
        The lines.
    """
    lines = []
    for i in range(len(axes)):
        lines.append(f"STRING l{i + 1} (A4096).")
        lines.append(f"COMPUTE #k = TRUNC(MOD(cell - 1, {strides[i] * shape[i]}) / {strides[i]}) + 1.")
        lines.append("RECODE #k " + " ".join(f"({k + 1}={spss_string(x)})" for k, x in enumerate(levels[i]))
                     + f" INTO l{i + 1}.")
    label_vars = " ".join(f"l{i + 1}" for i in range(len(axes)))
    return [
        *lines,
        f"RENAME VARIABLES ({label_vars} = {' '.join(f'v{i + 1}' for i in range(len(axes)))}).",
        f"* The columns v1, v2, ... are {', '.join(axes)}.",
        f"SAVE TRANSLATE /OUTFILE={spss_string(str(out_csv))} /TYPE=CSV /FIELDNAMES /REPLACE "
        f"/TEXTOPTIONS FORMAT=PLAIN /KEEP={' '.join(f'v{i + 1}' for i in range(len(axes)))} released estimate se "
        "ci_low ci_high proportion proportion_se proportion_ci_low proportion_ci_high.",
        "LIST.",
    ]


def _label(category: object) -> str:
    """A manifest's category as the released CSV file spells it."""
    if isinstance(category, float) and category == round(category) and abs(category) < 2**53:
        return str(int(category))
    return str(category)


def analyst_script(language: str, manifest: Manifest, vars: Sequence[str], *, released: PathLike,
                   manifest_file: PathLike, by: Sequence[str] = (), variance: str = "multinomial",
                   confidence: float = 0.95, na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP,
                   encoding: str = CSV_ENCODING, survey: SurveyDesign | None = None,
                   out_csv: PathLike = "estimate.csv") -> str:
    """The script in ``language`` that estimates the table of ``vars`` (by ``by``) from a released CSV file.

    Parameters
    ----------
    language : {"r", "spss", "python"}
        :data:`EMIT_LANGUAGES`.
    manifest, vars, released, manifest_file, by, variance, confidence, na_values, sep, encoding, survey
        As :func:`python_script`.
    out_csv : str or os.PathLike
        The table the SPSS script writes (R and Python write it to their first argument).

    Returns
    -------
    str

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> m = Manifest.of({"answer": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))})
    >>> "library(jsonlite)" in analyst_script("r", m, ["answer"], released="r.csv", manifest_file="m.json")
    True
    >>> analyst_script("stata", m, ["answer"], released="r.csv", manifest_file="m.json")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --emit must be one of r, spss, python, not 'stata'
    """
    from pramkit.estimate.emit_r import r_script

    if language == "r":
        return r_script(manifest, list(vars), released=released, manifest_file=manifest_file, by=list(by),
                        variance=variance, confidence=confidence, na_values=na_values, sep=sep, encoding=encoding,
                        survey=survey)
    if language == "python":
        return python_script(manifest, list(vars), released=released, manifest_file=manifest_file, by=list(by),
                             variance=variance, confidence=confidence, na_values=na_values, sep=sep,
                             encoding=encoding, survey=survey)
    if language == "spss":
        return spss_script(manifest, list(vars), released=released, by=list(by), variance=variance,
                           confidence=confidence, na_values=na_values, sep=sep, encoding=encoding, survey=survey,
                           out_csv=out_csv)
    raise ParameterError(f"--emit must be one of {', '.join(EMIT_LANGUAGES)}, not {language!r}")


def write_analyst_script(language: str, out: PathLike, released: PathLike, manifest_file: PathLike,
                         vars: Sequence[str], *, by: Sequence[str] = (), variance: str = "multinomial",
                         confidence: float = 0.95, na_values: Sequence[str] = NA_VALUES, force: bool = False,
                         sep: str = CSV_SEP, encoding: str = CSV_ENCODING,
                         survey: SurveyDesign | None = None) -> Path:
    """Write the script of :func:`analyst_script` for a released file and its manifest, atomically.

    The SPSS script writes its table to ``out`` with ``.csv`` appended.

    Parameters
    ----------
    language : {"r", "spss", "python"}
    out : str or os.PathLike
        The script to write.
    released, manifest_file : str or os.PathLike
        The released CSV file and its manifest.
    vars, by, variance, confidence, na_values, sep, encoding, survey
        As :func:`analyst_script`.
    force : bool
        Replace an existing script.

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    ParameterError
        As :func:`analyst_script`, or ``out`` is the released file or the manifest.
    DataError
        The released file's receipt names another manifest.
    OutputExistsError
        ``out`` exists and ``force`` is false.
    WriteError
        ``out`` cannot be written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.matrix import PramMatrix
    >>> m = Manifest.of({"answer": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = m.write(pathlib.Path(d) / "m.json")
    ...     out = write_analyst_script("python", pathlib.Path(d) / "estimate.py", pathlib.Path(d) / "released.csv",
    ...                                pathlib.Path(d) / "m.json", ["answer"])
    ...     "import pandas as pd" in out.read_text()
    True
    """
    from pramkit.engine.receipt import check_release

    manifest = Manifest.read(Path(manifest_file))
    check_release(released, manifest)  # a release of another manifest is refused, as pramkit estimate does
    text = analyst_script(language, manifest, list(vars), released=released, manifest_file=manifest_file,
                          by=list(by), variance=variance, confidence=confidence, na_values=na_values, sep=sep,
                          encoding=encoding, survey=survey, out_csv=f"{out}.csv")
    return write_text_atomic(out, text, force=force, inputs=[released, manifest_file])


__all__ = ["EMIT_LANGUAGES", "analyst_script", "check_script_request", "python_script", "spss_script",
           "spss_string", "write_analyst_script"]
