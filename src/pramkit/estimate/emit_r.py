"""An R script that estimates a released file's table as ``pramkit estimate`` does.

Analysts of a released file often work in R.  :func:`r_script` writes a
self-contained script (R and its package jsonlite only, the template
``estimate.R`` beside this module) that reads the released CSV file and the
manifest and computes the unbiased moment estimate of the original counts,
their standard errors (multinomial or PRAM-only variance), each cell's share
of its ``by`` group with its standard error, and normal intervals: the numbers
``pramkit estimate`` prints with its default estimator.

What the script does not compute is refused here, with what to use instead: a
released file other than CSV (base R reads CSV only), a variable perturbed
jointly or within strata, and a singular or badly conditioned matrix
(``pramkit estimate`` then gives the maximum-likelihood estimate).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from pramkit.atomic import PathLike, write_text_atomic
from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.engine.receipt import check_release
from pramkit.errors import ParameterError
from pramkit.estimate.spec import check_confidence
from pramkit.manifest import Manifest

if TYPE_CHECKING:  # pragma: no cover
    from pramkit.estimate.survey import SurveyDesign


def r_string(text: str) -> str:
    """``text`` as an R string literal of ASCII characters (any Unicode text, any quote or backslash).

    Parameters
    ----------
    text : str
        The text.

    Returns
    -------
    str
        A double-quoted R literal; characters outside printable ASCII as ``\\U{...}``.

    Examples
    --------
    >>> print(r_string('K\u00e4rnten "north"\\\\n'))
    "K\\U{e4}rnten \\"north\\"\\\\n"
    """
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(f"\\U{{{ord(ch):x}}}")
    return '"' + "".join(out) + '"'


def _r_vector(texts: Sequence[str]) -> str:
    return "character(0)" if not texts else "c(" + ", ".join(r_string(t) for t in texts) + ")"


def check_r_axes(manifest: Manifest, axes: Sequence[str], *, script: str = "the R script") -> None:
    """:class:`ParameterError` for a table the R script cannot estimate as ``pramkit estimate`` does.

    Parameters
    ----------
    manifest : Manifest
        The release's manifest.
    axes : sequence of str
        The columns tabulated (``vars`` then ``by``).
    script : str
        How the messages name the script.

    Raises
    ------
    ParameterError
        A variable is perturbed jointly or within strata, or its matrix is singular or badly
        conditioned.

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> m = Manifest.of({"answer": PramMatrix([[0.5, 0.5], [0.5, 0.5]], ("yes", "no"))})
    >>> check_r_axes(m, ["sex"])  # an unperturbed column: nothing to check
    >>> check_r_axes(m, ["answer"])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the matrix of 'answer' is singular or badly conditioned (condition number inf): pramkit estimate gives the maximum-likelihood estimate there, which the R script does not compute; run pramkit estimate instead
    """
    from pramkit.estimate.identifiability import MAX_CONDITION
    from pramkit.estimate.result import condition_number

    for name in axes:
        if name not in manifest.names:
            continue
        v = manifest[name]
        if v.is_joint or v.given:
            raise ParameterError(f"{name!r} is perturbed jointly with other columns or within strata; {script} "
                                 "estimates variables of one column: run pramkit estimate for this table")
        if v.applied_to is not None:
            raise ParameterError(f"{name!r} is derived from another release's values (its law is the product of two "
                                 f"matrices, which {script} does not form): run pramkit estimate for this table")
        cond = condition_number([v.matrix.matrix])
        if not cond <= MAX_CONDITION:
            raise ParameterError(f"the matrix of {name!r} is singular or badly conditioned (condition number "
                                 f"{cond:.3g}): pramkit estimate gives the maximum-likelihood estimate there, which "
                                 f"{script} does not compute; run pramkit estimate instead")


_NAMES = {"r": "R", "spss": "SPSS", "python": "Python"}


def check_script_request(manifest: Manifest, vars: Sequence[str], by: Sequence[str], *, released: PathLike,
                         variance: str, confidence: float, survey: SurveyDesign | None, language: str) -> None:
    """:class:`ParameterError` for a table a script cannot estimate as ``pramkit estimate`` does.

    Parameters
    ----------
    manifest : Manifest
        The release's manifest.
    vars, by : sequence of str
        The columns tabulated and the grouping columns.
    released : str or os.PathLike
        The released file (it must be CSV).
    variance : {"multinomial", "pram"}
        The variance of an unweighted file.
    confidence : float
        The level of the intervals, in (0, 1).
    survey : SurveyDesign, optional
        The weights, strata and PSUs (no finite-population correction).
    language : {"r", "spss", "python"}

    Raises
    ------
    ParameterError
        Any of the refusals of the module docstring, or a column named twice.

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> from pramkit.estimate.survey import SurveyDesign
    >>> m = Manifest.of({"answer": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))})
    >>> check_script_request(m, ["answer"], [], released="r.csv", variance="multinomial", confidence=0.95,
    ...                      survey=SurveyDesign("w", fpc="f"), language="python")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the Python script does not apply a finite-population correction (--fpc); leave it out or run pramkit estimate
    """
    from pramkit.estimate.covariance import check_variance_kind
    from pramkit.io import table_format

    if language not in _NAMES:
        raise ParameterError(f"--emit must be one of {', '.join(_NAMES)}, not {language!r}")
    name = _NAMES[language]
    if table_format(Path(released)) != "csv":
        reader = "base R has" if language == "r" else "the script has"
        raise ParameterError(f"the {name} script reads a released CSV file ({reader} no Parquet, Stata or SPSS "
                             f"reader); {str(released)!r} is not one: write the release as .csv")
    axes = [*vars, *by]
    if not vars or len(set(axes)) != len(axes):
        raise ParameterError(f"name each column once in vars and by, and at least one in vars: {axes}")
    check_variance_kind(variance, weighted=survey is not None)
    check_confidence(confidence)  # the rule of the estimate's setting (pramkit.estimate.spec)
    if survey is not None and survey.fpc is not None:
        raise ParameterError(f"the {name} script does not apply a finite-population correction (--fpc); "
                             "leave it out or run pramkit estimate")
    check_r_axes(manifest, axes, script=f"the {name} script")


def iconv_name(encoding: str) -> str:
    """The name R (iconv) knows an encoding by, from Python's codecs name of it.

    Examples
    --------
    >>> iconv_name("utf-8"), iconv_name("iso8859-1"), iconv_name("cp1252"), iconv_name("mac-roman")
    ('UTF-8', 'ISO-8859-1', 'CP1252', 'MAC-ROMAN')
    """
    name = encoding.lower()
    if name in ("utf-8", "utf-8-sig"):
        return "UTF-8"
    if name.startswith("iso8859-"):
        return "ISO-8859-" + name.split("-", 1)[1]
    return name.upper()


def r_script(manifest: Manifest, vars: Sequence[str], *, released: PathLike, manifest_file: PathLike,
             by: Sequence[str] = (), variance: str = "multinomial", confidence: float = 0.95,
             na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP, encoding: str = CSV_ENCODING,
             survey: SurveyDesign | None = None) -> str:
    """The R script that estimates the table of ``vars`` (by ``by``) from a released CSV file.

    Parameters
    ----------
    manifest : Manifest
        The release's manifest (checked with :func:`check_r_axes`).
    vars : sequence of str
        The columns to tabulate.
    released : str or os.PathLike
        The released file the script reads (CSV), as the script should name it.
    manifest_file : str or os.PathLike
        The manifest's file, as the script should name it.
    by : sequence of str
        Grouping columns: shares within their groups.
    variance : {"multinomial", "pram"}
        As :func:`pramkit.estimate_table`.
    confidence : float
        The level of the intervals, in (0, 1).
    na_values : sequence of str
        The texts of the CSV file that are missing besides the empty field.
    sep, encoding : str
        The field separator and character encoding of the CSV file (:func:`pramkit.io.csv_dialect`);
        R reads the file in that encoding (``fileEncoding``, named as iconv names it).
    survey : pramkit.estimate.survey.SurveyDesign, optional
        Weights, strata and PSUs (no finite-population correction): the script then estimates the
        covariance of the weighted released counts with the package ``survey`` (``svydesign``,
        ``svytotal``; ``single_psu`` as ``options(survey.lonely.psu)``: fail, certainty, adjust).

    Returns
    -------
    str
        The script: its settings, then the template ``estimate.R``.

    Raises
    ------
    ParameterError
        The released file is not CSV, a column is named twice, ``variance`` or ``confidence``
        is out of range, or :func:`check_r_axes` refuses the table.

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> m = Manifest.of({"answer": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))})
    >>> text = r_script(m, ["answer"], by=["sex"], released="released.csv", manifest_file="m.json")
    >>> [line for line in text.splitlines() if line.startswith(("vars", "by", "released_file"))]
    ['released_file <- "released.csv"', 'vars <- c("answer")', 'by <- c("sex")']
    >>> text = r_script(m, ["answer"], released="r.csv", manifest_file="m.json", sep=";", encoding="latin-1")
    >>> [line for line in text.splitlines() if line.startswith(("csv_sep", "file_encoding"))]
    ['csv_sep <- ";"', 'file_encoding <- "ISO-8859-1"']
    >>> r_script(m, ["answer"], released="released.parquet", manifest_file="m.json")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the R script reads a released CSV file (base R has no Parquet, Stata or SPSS reader); 'released.parquet' is not one: write the release as .csv
    """
    from pramkit.io import csv_dialect

    dialect = csv_dialect(sep, encoding)
    check_script_request(manifest, vars, by, released=released, variance=variance, confidence=confidence,
                         survey=survey, language="r")
    from pramkit.estimate.identifiability import MAX_CONDITION

    def column(name: str | None) -> str:
        return "NULL" if name is None else r_string(name)

    settings = "\n".join([
        f"released_file <- {r_string(str(released))}",
        f"manifest_file <- {r_string(str(manifest_file))}",
        f"vars <- {_r_vector(vars)}",
        f"by <- {_r_vector(by)}",
        f"variance <- {r_string(variance)}  # \"multinomial\" or \"pram\"",
        f"confidence <- {confidence!r}",
        f"na_strings <- {_r_vector([str(v) for v in na_values if str(v) != ''])}  # missing besides the empty field",
        f"csv_sep <- {r_string(dialect.sep)}",
        f"file_encoding <- {r_string(iconv_name(dialect.encoding))}",
        f"max_condition <- {MAX_CONDITION!r}",
        "# survey files (the package survey): the weight column, strata and PSUs (NULL: none)",
        f"weights_column <- {column(None if survey is None else survey.weights)}",
        f"strata_column <- {column(None if survey is None else survey.strata)}",
        f"psu_column <- {column(None if survey is None else survey.psu)}",
        f"single_psu <- {r_string('error' if survey is None else survey.single_psu)}"
        "  # a stratum with one PSU: \"error\", \"certainty\" or \"center\"",
    ])
    template = files("pramkit.estimate").joinpath("estimate.R").read_text(encoding="utf-8")
    return template.replace("@SETTINGS@", settings)


def write_r_script(out: PathLike, released: PathLike, manifest_file: PathLike, vars: Sequence[str], *,
                   by: Sequence[str] = (), variance: str = "multinomial", confidence: float = 0.95,
                   na_values: Sequence[str] = NA_VALUES, force: bool = False, sep: str = CSV_SEP,
                   encoding: str = CSV_ENCODING, survey: SurveyDesign | None = None) -> Path:
    """Write the R script of :func:`r_script` for a released file and its manifest, atomically.

    Parameters
    ----------
    out : str or os.PathLike
        The script to write (``.R``).
    released : str or os.PathLike
        The released CSV file.
    manifest_file : str or os.PathLike
        Its manifest.
    vars, by, variance, confidence, na_values, sep, encoding, survey
        As :func:`r_script`.
    force : bool
        Replace an existing script.

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    ParameterError
        As :func:`r_script`, or ``out`` is the released file or the manifest.
    DataError
        The released file's receipt names another manifest.
    ManifestError
        The manifest cannot be read.
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
    ...     out = write_r_script(pathlib.Path(d) / "estimate.R", pathlib.Path(d) / "released.csv",
    ...                          pathlib.Path(d) / "m.json", ["answer"])
    ...     "library(jsonlite)" in out.read_text()
    True
    """
    manifest = Manifest.read(Path(manifest_file))
    check_release(released, manifest)  # a release of another manifest is refused, as pramkit estimate does
    text = r_script(manifest, list(vars), released=released, manifest_file=manifest_file, by=list(by),
                    variance=variance, confidence=confidence, na_values=na_values, sep=sep, encoding=encoding,
                    survey=survey)
    return write_text_atomic(out, text, force=force, inputs=[released, manifest_file])


__all__ = ["check_r_axes", "check_script_request", "r_script", "r_string", "write_r_script"]
