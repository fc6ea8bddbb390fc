"""Linear and logistic regression on a released file whose covariates or outcome were perturbed by PRAM.

A regression fitted to the released values as if they were the true ones is biased: PRAM is
misclassification, and a misclassified covariate attenuates its coefficient (and distorts the
others), a misclassified binary outcome flattens the fit.  The published matrices make the
misclassification known.  A linear regression is fitted by default by moments
(:mod:`pramkit.estimate.regression_moment`: the normal equations corrected by the matrices'
inverses, sandwich standard errors), which assumes no model of the outcome; with survey weights
(``weights=``, ``survey=``) it is weighted, with the design's standard errors by linearisation.  A logistic
regression, or a linear one with ``method="em"``, is fitted to what was released by maximum likelihood,
treating the true categories as missing data (van den Hout and van der Heijden, 2002, section 5;
the misclassified-covariate likelihood of Carroll et al., 2006, section 8.2):

    L_i = sum_x sum_y* pi_g(x) prod_j M_j[x_j, z_ij] M_Y[y*, z_iY] f(y* | x, w_i; beta)

for record i with released values ``z_ij`` of the perturbed covariates (true values ``x``, one
of the K combinations of their categories), released outcome ``z_iY`` (its true value ``y*``
summed over when the outcome is perturbed; ``f`` evaluated at the observed ``y_i`` otherwise),
unperturbed covariates ``w_i`` and ``pi_g``, the distribution of the true perturbed covariates
within the cell ``g`` of the unperturbed categorical covariates of the formula (a nuisance
parameter; numeric covariates are not conditioned on, so that an association between a numeric
covariate and the perturbed one is assumed absent or captured by the categorical ones).
``f`` is the normal density (identity link, ``family="gaussian"``) or the Bernoulli law with
logit link (``family="binomial"``).

The likelihood is maximised by EM (Dempster, Laird and Rubin, 1977): the E-step computes each
record's posterior over its latent true categories, the M-step refits the regression by
weighted least squares (gaussian; ``sigma^2`` the weighted mean squared residual) or one Newton
step of the weighted logistic likelihood (binomial: a generalised EM with the same fixed
points), and updates ``pi_g`` by the weighted shares.  EM is accelerated by SQUAREM (Varadhan and
Roland, 2008), which extrapolates along two EM steps and keeps the point only where the
log-likelihood has not fallen: near a maximum where plain EM's steps shrink slowly (a share of pi
close to 0), it needs tens of steps where EM needed thousands.  Standard errors come from the observed
information by Louis' method (Louis, 1982): ``I = sum_i E[-H_c,i | z_i] - Var[S_c,i | z_i]``
with ``S_c`` and ``H_c`` the complete-data score and Hessian in ``(beta, log sigma^2, softmax
parameters of pi)``.  The naive fit (released values taken as true) is reported beside it.
The normal outcome of one variance is what the linear likelihood rests on: where the residuals
are skewed or their variance differs between the true categories (incomes), EM's coefficients
are biased with small standard errors, so a linear EM fit is checked against its residuals
(:func:`pramkit.estimate.regression_moment.residual_check`) and warns.

References
----------
van den Hout, A. and van der Heijden, P. G. M. (2002). Randomized response, statistical disclosure
control and misclassification: a review. *International Statistical Review* 70(2), 269-288.
Carroll, R. J., Ruppert, D., Stefanski, L. A. and Crainiceanu, C. M. (2006). *Measurement Error in
Nonlinear Models*, 2nd ed., Chapman & Hall/CRC.
Dempster, A. P., Laird, N. M. and Rubin, D. B. (1977). Maximum likelihood from incomplete data via
the EM algorithm. *JRSS B* 39(1), 1-38.
Louis, T. A. (1982). Finding the observed information matrix when using the EM algorithm.
*JRSS B* 44(2), 226-233.
Varadhan, R. and Roland, C. (2008). Simple and globally convergent methods for accelerating the
convergence of any EM algorithm. *Scandinavian Journal of Statistics* 35(2), 335-353.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse, special

from pramkit.defaults import CSV_DECIMAL, CSV_ENCODING, CSV_SEP
from pramkit.errors import DataError, ParameterError, PramkitWarning
from pramkit.estimate.axes import inverses
from pramkit.estimate.covariance import check_variance_kind
from pramkit.estimate.identifiability import MAX_CONDITION
from pramkit.estimate.mle import squarem_lengths
from pramkit.estimate.regression_moment import (
    ResidualCheck,
    SampleDesign,
    gram,
    moment_fit,
    residual_check,
    weighted_rows,
)
from pramkit.estimate.result import condition_number
from pramkit.estimate.spec import check_confidence
from pramkit.estimate.survey import SurveyDesign
from pramkit.manifest import Manifest

FAMILIES = ("gaussian", "binomial")
#: The estimators (``method`` of :func:`corrected_regression`; ``"auto"``: moment for gaussian, EM for binomial).
REGRESSION_METHODS = ("auto", "moment", "em")
#: What each estimator is, as ``--json`` names it in ``method``.
METHODS = {"moment": "moment: normal equations corrected by the inverse matrices (sandwich standard errors)",
           "em": "EM over the true categories (Louis standard errors)"}
#: The error of a record that no true category can have released (the released file of another manifest).
_ZERO_LIKELIHOOD = "a record has likelihood 0 under every true category (is the released file of this manifest?)"
#: A true category estimated to hold fewer records than this many standard errors makes the moment fit warn.
WEAK_COUNT = 3.0
#: The largest number of combinations of the perturbed covariates' categories (latent states).
MAX_LATENT = 10_000


@dataclass(frozen=True)
class RegressionResult:
    """A regression corrected for PRAM, with the naive fit beside it.

    Attributes
    ----------
    formula, family : str
        As asked; ``family`` is ``"gaussian"`` or ``"binomial"``.
    terms : tuple of str
        The coefficients' names: ``Intercept``, a numeric covariate's name, ``name[level]`` for a
        category against the first (reference) category.
    coef, se : numpy.ndarray
        The corrected (maximum-likelihood) coefficients and their standard errors (Louis).
    covariance : numpy.ndarray
        Their covariance (the inverse observed information, coefficients' block).
    naive_coef, naive_se : numpy.ndarray
        The fit to the released values taken as true.
    n, dropped : int
        Records used, records left out for a missing value.
    iterations : int
    converged : bool
    loglik : float or None
        The observed-data log-likelihood at the estimate (EM; None for the moment estimator).
    sigma : float or None
        The residual standard deviation (gaussian).
    event : str or None
        The outcome's category modelled as 1 (binomial).
    perturbed : tuple of str
        The formula's columns the manifest perturbs.
    confidence : float
    estimator : str
        ``"moment"`` (:mod:`pramkit.estimate.regression_moment`: corrected normal equations, sandwich
        standard errors, no outcome model) or ``"em"`` (the likelihood of the module docstring).
    variance : str or None
        The moment estimator's sandwich: ``"multinomial"`` (records sampled and perturbed), ``"pram"``
        (the original file fixed) or ``"linearization"`` (survey weights: the design's middle, Taylor
        linearisation); None for EM (the observed information).
    check : ResidualCheck or None
        The residuals' variance and skewness by true category (gaussian), and a warning when they
        contradict EM's normal outcome of one variance.
    warnings : tuple of str
        What the fit's reader must know (the check's warning for EM, EM not converged).
    design : SurveyDesign or None
        The survey design of a weighted fit (its weights, strata, PSUs, fpc), None unweighted.
    pram_se : numpy.ndarray or None
        A weighted fit's standard errors from PRAM alone (the sample fixed), a part of ``se``.

    With ``estimator="moment"`` the naive fit is least squares on the released file with White's
    HC0 standard errors, ``iterations`` is 0, ``converged`` True and ``loglik`` None.
    """

    formula: str
    family: str
    terms: tuple[str, ...]
    coef: np.ndarray
    se: np.ndarray
    covariance: np.ndarray
    naive_coef: np.ndarray
    naive_se: np.ndarray
    n: int
    dropped: int
    iterations: int
    converged: bool
    loglik: float | None
    sigma: float | None
    event: str | None
    perturbed: tuple[str, ...]
    confidence: float = 0.95
    estimator: str = "em"
    variance: str | None = None
    check: ResidualCheck | None = None
    warnings: tuple[str, ...] = ()
    design: SurveyDesign | None = None
    pram_se: np.ndarray | None = None

    def to_frame(self) -> pd.DataFrame:
        """One row per coefficient: corrected estimate, se, interval; naive estimate and se (and, weighted,
        ``pram_se``: PRAM's part of se)."""
        from statistics import NormalDist

        z = NormalDist().inv_cdf(0.5 + self.confidence / 2)
        frame = pd.DataFrame({"term": list(self.terms), "coef": self.coef, "se": self.se,
                              "ci_low": self.coef - z * self.se, "ci_high": self.coef + z * self.se,
                              "naive_coef": self.naive_coef, "naive_se": self.naive_se})
        if self.pram_se is not None:
            frame["pram_se"] = self.pram_se
        return frame

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON values."""
        return {"formula": self.formula, "family": self.family, "n": self.n, "dropped": self.dropped,
                "perturbed": list(self.perturbed), "event": self.event, "sigma": self.sigma,
                "iterations": self.iterations, "converged": self.converged, "loglik": self.loglik,
                "confidence": self.confidence, "method": METHODS[self.estimator], "estimator": self.estimator,
                "variance": self.variance, "model_check": None if self.check is None else self.check.to_dict(),
                "warnings": list(self.warnings),
                "design": None if self.design is None else {
                    "weights": self.design.weights, "strata": self.design.strata, "psu": self.design.psu,
                    "fpc": self.design.fpc, "single_psu": self.design.single_psu},
                "coefficients": [{k: (v if isinstance(v, str) else float(v)) for k, v in row.items()}
                                 for row in self.to_frame().to_dict("records")]}


def parse_formula(formula: str) -> tuple[str, list[str]]:
    """The outcome and the covariates of ``"y ~ x1 + x2"`` (main effects only, an intercept always).

    Examples
    --------
    >>> parse_formula("income ~ region + age")
    ('income', ['region', 'age'])
    >>> parse_formula("y ~ a * b")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the formula 'y ~ a * b' must read 'outcome ~ x1 + x2 + ...' (column names joined by +; an intercept is always fitted, interactions are not offered)
    """
    if not isinstance(formula, str) or formula.count("~") != 1:
        raise ParameterError(f"the formula must read 'outcome ~ x1 + x2 + ...', not {formula!r}")
    lhs, rhs = (s.strip() for s in formula.split("~"))
    terms = [t.strip() for t in rhs.split("+")]
    bad = not lhs or not all(terms) or any(ch in formula for ch in "*:()^|") or any(t in ("0", "1", "-1") for t in terms)
    if bad:
        raise ParameterError(f"the formula {formula!r} must read 'outcome ~ x1 + x2 + ...' (column names joined by "
                             "+; an intercept is always fitted, interactions are not offered)")
    if len(set(terms)) != len(terms) or lhs in terms:
        raise ParameterError(f"the formula {formula!r} names a column twice")
    return lhs, terms


def _text(values: pd.Series) -> pd.Series:
    """Values as the texts the manifest's labels are compared with (3.0 as 3); texts as they are, whole
    numbers (below 2^53) at once, anything else value by value.

    Examples
    --------
    >>> _text(pd.Series([3.0, None])).tolist(), _text(pd.Series([3.0, 2.5])).tolist(), _text(pd.Series(["a", None])).tolist()
    (['3', None], ['3', '2.5'], ['a', None])
    """
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind == "string":
        return values.astype(object).where(values.notna(), None)
    if kind in ("integer", "floating") and not pd.api.types.is_extension_array_dtype(values):
        numbers = values.to_numpy(dtype=float, na_value=np.nan)
        present = ~np.isnan(numbers)
        if (numbers[present] == np.round(numbers[present])).all() and (np.abs(numbers[present]) < 2**53).all():
            out = np.full(len(numbers), None, dtype=object)
            out[present] = numbers[present].astype(np.int64).astype(str)
            return pd.Series(out, index=values.index, dtype=object)

    def one(v: Any) -> Any:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        if isinstance(v, (float, np.floating)) and float(v) == round(float(v)) and abs(float(v)) < 2**53:
            return str(int(v))
        return str(v)
    return values.map(one)


@dataclass
class _Problem:
    """The arrays EM works on."""

    y: np.ndarray                 # (n,) outcome (0/1 for binomial; released code for a perturbed outcome)
    base: np.ndarray              # (n, p) design with the perturbed covariates' dummies zero
    shift: np.ndarray             # (K, p) the dummies of each latent combination
    like_x: np.ndarray            # (n, K) prod_j M_j[x_j, z_ij]
    my: np.ndarray | None         # (2, 2) the outcome's matrix when it is perturbed
    group: np.ndarray             # (n,) the cell of the unperturbed categorical covariates
    n_groups: int
    family: str
    released: np.ndarray          # (n,) the combination of the released values
    matrices: tuple[np.ndarray, ...] = ()   # the perturbed covariates' matrices (dense), in the formula's order
    codes: tuple[np.ndarray, ...] = ()      # (n,) each: their released codes
    latent: tuple[str, ...] = ("all",)      # (K,) the combinations' names, "name=label, ..."
    rows: np.ndarray | None = None          # (n,) the records' positions in the frame (those without a missing value)

    def inverse_x(self) -> np.ndarray:
        """(n, K): the row of ``(M_1 ⊗ M_2 ⊗ ...)^-1`` of each record's released combination, the unbiased
        estimate of the indicator of its true one (:mod:`pramkit.estimate.regression_moment`)."""
        cond = condition_number(list(self.matrices))
        if not cond <= MAX_CONDITION:
            what = "singular" if math.isinf(cond) else f"badly conditioned (condition number {cond:.3g})"
            raise DataError(f"the perturbed covariates' matrix is {what}: the moment estimator needs its inverse; "
                            "fit the likelihood instead (method 'em', --regress-method em)")
        return _combined([np.asarray(inv)[z] for inv, z in zip(inverses(self.matrices), self.codes)], len(self.y))

    @cached_property
    def cells(self) -> sparse.csr_array:
        """(G, n): which cell each record is in, so that ``cells @ a`` sums the rows of ``a`` by cell."""
        n = len(self.group)
        return sparse.csr_array((np.ones(n), (self.group, np.arange(n))), shape=(self.n_groups, n))


def _categories(frame: pd.DataFrame, name: str, manifest: Manifest) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """A categorical column's labels, codes (-1 missing) and its matrix (None unperturbed)."""
    text = _text(frame[name])
    if name in manifest.names:
        v = manifest[name]
        if v.is_joint or v.given or v.applied_to is not None:
            raise ParameterError(f"{name!r} is perturbed jointly, within strata or from another release; the "
                                 "regression takes variables perturbed on their own")
        labels = [str(int(c)) if isinstance(c, float) and c == round(c) else str(c) for c in v.matrix.categories]
        matrix = np.asarray(v.matrix.matrix, dtype=float)
        outside = text.notna() & ~text.isin(labels)
        if outside.any():
            row = int(np.flatnonzero(outside.to_numpy())[0])
            raise DataError(f"column {name!r}, row {row + 1}: {text.iloc[row]!r} is not a category of its matrix")
    else:
        labels = sorted(text.dropna().unique().tolist())
        matrix = None
    codes = pd.Categorical(text, categories=labels).codes.astype(np.int64)
    return labels, codes, matrix


def _problem(frame: pd.DataFrame, outcome: str, terms: Sequence[str], manifest: Manifest,
             family: str, decimal: str = CSV_DECIMAL,
             where: str = "") -> tuple[_Problem, list[str], int, str | None, list[str]]:
    """The EM arrays, the coefficient names, rows dropped, the event label, the perturbed columns (numbers
    written as text read with the decimal mark ``decimal``, a refusal naming the file ``where``)."""
    absent = [c for c in [outcome, *terms] if c not in frame.columns]
    if absent:
        raise DataError(f"column(s) {absent} are not in the data; its columns are {list(frame.columns)}")
    frame = _numbers_parsed(frame[[outcome, *terms]].copy(), manifest, decimal, where)
    columns, missing = _term_columns(frame, terms, manifest)
    out = _outcome_of(frame, outcome, manifest, family)
    keep = ~(missing | out.missing)
    n = int(keep.sum())
    if n == 0:
        raise DataError("every row has a missing value in the formula's columns")
    design = _design_of(columns, keep, n)
    shift, latent, sizes = _latent_shift(design)
    like_x = _combined(design.like_parts, n)
    _, group = np.unique(design.group, return_inverse=True)
    released = (np.ravel_multi_index(tuple(design.released_codes), sizes) if sizes
                else np.zeros(n, dtype=np.int64))
    problem = _Problem(out.y[keep], design.base, shift, like_x, out.matrix, group.astype(np.int64),
                       int(group.max()) + 1, out.family, np.asarray(released, dtype=np.int64),
                       tuple(m for _, _, m in design.perturbed_x), tuple(design.released_codes),
                       tuple(latent) if sizes else ("all",), np.flatnonzero(keep))
    perturbed = [outcome] if out.perturbed else []
    return problem, design.names, len(frame) - n, out.event, perturbed + design.perturbed


def _is_number(column: pd.Series) -> bool:
    """Whether a column holds numbers (booleans are not)."""
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def _numbers_parsed(frame: pd.DataFrame, manifest: Manifest, decimal: str = CSV_DECIMAL,
                    where: str = "") -> pd.DataFrame:
    """``frame`` with its columns of numbers written as text (a CSV file's columns) read as numbers.

    A column the manifest perturbs stays as it is, as does one whose first value is not a number or in
    which some text is not one.  With the decimal comma (``decimal=","``) a column is read as numbers when
    every text is a number so written (:func:`pramkit.io.csv_numbers`); a column of numbers written with a
    decimal point is refused (naming its row), and any other column of text stays text (a factor).

    Parameters
    ----------
    frame : pandas.DataFrame
        The formula's columns (a copy: changed in place).
    manifest : Manifest
        The release's manifest.
    decimal : {".", ","}
        The decimal mark of the numbers written as text.
    where : str
        The file, for the decimal comma's refusal (``"'released.csv'"``); empty: not named.

    Returns
    -------
    pandas.DataFrame
        ``frame``.

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> m = Manifest.of({"x": PramMatrix([[0.8, 0.2], [0.2, 0.8]], ("a", "b"))})
    >>> read = _numbers_parsed(pd.DataFrame({"y": ["1,5", "2"], "band": ["a", "b"]}), m, ",")
    >>> read["y"].tolist(), read["band"].tolist()
    ([1.5, 2.0], ['a', 'b'])
    >>> _numbers_parsed(pd.DataFrame({"y": ["1.5", "2.5"]}), m, ",")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'y', row 1: '1.5' is not a number written with a decimal comma (--decimal ,): write it 1,5, or read the file with --decimal .
    """
    if decimal != CSV_DECIMAL:
        return _comma_numbers_parsed(frame, manifest, decimal, where)
    for name in frame.columns:
        column = frame[name]
        if name not in manifest.names and not pd.api.types.is_numeric_dtype(column) \
                and not pd.api.types.is_bool_dtype(column) and column.notna().any() \
                and pd.to_numeric(column.dropna().iloc[:1], errors="coerce").notna().all():  # not text at once
            parsed = pd.to_numeric(column, errors="coerce")
            if (parsed.notna() == column.notna()).all():
                frame[name] = parsed
    return frame


def _comma_numbers_parsed(frame: pd.DataFrame, manifest: Manifest, decimal: str, where: str) -> pd.DataFrame:
    """:func:`_numbers_parsed` with the decimal comma: each column not perturbed holding text read by
    :func:`pramkit.io.csv_numbers` when every text is a number so written; a column of numbers written with a
    point refused (the value misread otherwise), any other column of text left as it is (a factor)."""
    from pramkit.io import csv_numbers

    for name in frame.columns:
        column = frame[name]
        if name in manifest.names or pd.api.types.is_numeric_dtype(column) \
                or pd.api.types.is_bool_dtype(column) or not column.notna().any():
            continue
        try:
            frame[name] = csv_numbers(column, name, decimal=decimal, where=where)
        except DataError:
            pointed = pd.to_numeric(column, errors="coerce")
            if (pointed.notna() == column.notna()).all():
                raise  # numbers written with a decimal point in a file read with decimal commas
    return frame


def _term_columns(frame: pd.DataFrame, terms: Sequence[str],
                  manifest: Manifest) -> tuple[list[tuple[str, str, Any]], np.ndarray]:
    """Each covariate's kind and values, and which rows miss one.

    Parameters
    ----------
    frame : pandas.DataFrame
        The formula's columns (numbers read: :func:`_numbers_parsed`).
    terms : sequence of str
        The covariates, in the formula's order.
    manifest : Manifest
        The release's manifest.

    Returns
    -------
    columns : list of tuple
        ``(name, kind, payload)``: ``"numeric"`` with its values (float, NaN missing), or ``"factor"``
        (unperturbed) or ``"perturbed"`` with ``(labels, codes, matrix)`` (:func:`_categories`).
    missing : numpy.ndarray
        (n,) bool: a covariate is missing.

    Raises
    ------
    DataError
        A categorical covariate has fewer than two categories (and as :func:`_categories`).
    """
    columns: list[tuple[str, str, Any]] = []   # (name, kind, payload)
    missing = np.zeros(len(frame), dtype=bool)
    for name in terms:
        if name not in manifest.names and _is_number(frame[name]):
            values = frame[name].to_numpy(dtype=float, na_value=np.nan)
            missing |= np.isnan(values)
            columns.append((name, "numeric", values))
        else:
            labels, codes, matrix = _categories(frame, name, manifest)
            if len(labels) < 2:
                raise DataError(f"column {name!r} has fewer than two categories; leave it out of the formula")
            missing |= codes < 0
            columns.append((name, "perturbed" if matrix is not None else "factor", (labels, codes, matrix)))
    return columns, missing


class _Outcome(NamedTuple):
    """The outcome of a regression, read for its family (:func:`_outcome_of`)."""

    family: str                   # "gaussian" or "binomial"
    y: np.ndarray                 # (n,) its values (0/1, or the released code, for binomial)
    missing: np.ndarray           # (n,) bool: missing
    event: str | None             # the label of y = 1 (binomial)
    matrix: np.ndarray | None     # its matrix when it is perturbed
    perturbed: bool               # the manifest perturbs it


def _outcome_of(frame: pd.DataFrame, outcome: str, manifest: Manifest, family: str) -> _Outcome:
    """The outcome's family (``"auto"`` resolved: binomial for a perturbed or non-numeric outcome), values
    and missing rows.

    Parameters
    ----------
    frame : pandas.DataFrame
        The formula's columns (numbers read: :func:`_numbers_parsed`).
    outcome : str
        The outcome's column.
    manifest : Manifest
        The release's manifest.
    family : str
        ``"gaussian"``, ``"binomial"`` or ``"auto"``.

    Returns
    -------
    _Outcome

    Raises
    ------
    ParameterError
        The family is unknown.
    DataError
        A gaussian outcome is not numeric (or is perturbed), or a binomial one that is not 0/1 has other
        than two categories (and as :func:`_categories`).
    """
    perturbed_y = outcome in manifest.names
    numeric_y = not perturbed_y and _is_number(frame[outcome])
    if family == "auto":
        family = "binomial" if perturbed_y or not numeric_y else "gaussian"
    if family not in FAMILIES:
        raise ParameterError(f"family must be one of {FAMILIES} or 'auto', not {family!r}")
    if family == "gaussian" and not numeric_y:
        raise DataError(f"the outcome {outcome!r} is not numeric (or is perturbed): use family='binomial' "
                        "for a two-category outcome")
    if family == "gaussian" or (numeric_y and set(np.unique(frame[outcome].dropna())) <= {0, 1}):
        y = frame[outcome].to_numpy(dtype=float, na_value=np.nan)
        return _Outcome(family, y, np.isnan(y), None if family == "gaussian" else "1", None, perturbed_y)
    labels, codes, matrix = _categories(frame, outcome, manifest)
    if len(labels) != 2:
        raise DataError(f"a binomial outcome has two categories; {outcome!r} has {len(labels)}")
    return _Outcome(family, codes.astype(float), codes < 0, labels[1], matrix, perturbed_y)


class _Design(NamedTuple):
    """The design matrix of a regression over the records kept, and its perturbed covariates
    (:func:`_design_of`)."""

    names: list[str]                                        # the coefficients
    base: np.ndarray                                        # (n, p) the perturbed covariates' dummies zero
    shifts: list[np.ndarray]                                # per perturbed covariate: (L, p_block) dummies
    positions: list[int]                                    # per perturbed covariate: its first column in base
    like_parts: list[np.ndarray]                            # per perturbed covariate: (n, L) M[x, z_i]
    released_codes: list[np.ndarray]                        # per perturbed covariate: (n,) released codes
    perturbed_x: list[tuple[str, list[str], np.ndarray]]    # per perturbed covariate: name, labels, matrix
    group: np.ndarray                                       # (n,) the cell of the unperturbed factors
    perturbed: list[str]                                    # the perturbed covariates


def _design_of(columns: Sequence[tuple[str, str, Any]], keep: np.ndarray, n: int) -> _Design:
    """The design matrix (intercept, numbers, dummies of the factors, zeros for the perturbed covariates'
    dummies) of the ``n`` records ``keep`` holds, and what EM needs of the perturbed covariates.

    Parameters
    ----------
    columns : sequence of tuple
        The covariates (:func:`_term_columns`).
    keep : numpy.ndarray
        (rows,) bool: the records without a missing value.
    n : int
        Their number.

    Returns
    -------
    _Design
    """
    names = ["Intercept"]
    blocks = [np.ones((n, 1))]
    group = np.zeros(n, dtype=np.int64)
    perturbed: list[str] = []
    shifts: list[np.ndarray] = []
    positions: list[int] = []
    like_parts: list[np.ndarray] = []
    released_codes: list[np.ndarray] = []
    perturbed_x: list[tuple[str, list[str], np.ndarray]] = []
    for name, kind, payload in columns:
        if kind == "numeric":
            names.append(name)
            blocks.append(payload[keep][:, None])
            continue
        labels, codes, matrix = payload
        codes = codes[keep]
        dummies = np.eye(len(labels))[:, 1:]
        names += [f"{name}[{lab}]" for lab in labels[1:]]
        if kind == "factor":
            blocks.append(dummies[codes])
            group = group * len(labels) + codes
        else:
            perturbed.append(name)
            positions.append(sum(b.shape[1] for b in blocks))
            blocks.append(np.zeros((n, len(labels) - 1)))
            shifts.append(dummies)
            like_parts.append(matrix[:, codes].T)
            released_codes.append(codes)
            perturbed_x.append((name, labels, matrix))
    return _Design(names, np.hstack(blocks), shifts, positions, like_parts, released_codes, perturbed_x, group,
                   perturbed)


def _latent_shift(design: _Design) -> tuple[np.ndarray, list[str], list[int]]:
    """The dummies of each combination K of the perturbed covariates' categories, the first varying slowest.

    Parameters
    ----------
    design : _Design
        The design (:func:`_design_of`).

    Returns
    -------
    shift : numpy.ndarray
        (K, p): each combination's dummies in the columns of its covariates (zero elsewhere).
    latent : list of str
        (K,) each combination's name, ``"name=label, ..."``.
    sizes : list of int
        The number of categories of each perturbed covariate.

    Raises
    ------
    ParameterError
        There are more than :data:`MAX_LATENT` combinations.
    """
    shifts, positions, perturbed_x = design.shifts, design.positions, design.perturbed_x
    sizes = [s.shape[0] for s in shifts]
    k_all = int(np.prod(sizes)) if sizes else 1
    if k_all > MAX_LATENT:
        raise ParameterError(f"the perturbed covariates have {k_all:,} combinations of categories (more than "
                             f"{MAX_LATENT:,}); use fewer or coarser ones")
    shift = np.zeros((k_all, design.base.shape[1]))
    latent = []
    for k, combo in enumerate(itertools.product(*[range(s) for s in sizes])):
        latent.append(", ".join(f"{perturbed_x[j][0]}={perturbed_x[j][1][c]}" for j, c in enumerate(combo)))
        for j, c in enumerate(combo):
            width = shifts[j].shape[1]
            shift[k, positions[j]:positions[j] + width] = shifts[j][c]
    return shift, latent, sizes


def _combined(parts: Sequence[np.ndarray], n: int) -> np.ndarray:
    """(n, K): ``prod_j parts[j][i, k_j]`` for every combination ``k = (k_1, k_2, ...)`` of the columns of the
    ``(n, S_j)`` arrays ``parts``, the first varying slowest (ones (n, 1) without parts)."""
    out = np.ones((n, 1))
    for part in parts:
        out = (out[:, :, None] * part[:, None, :]).reshape(n, -1)
    return out


def _outcome_terms(p: _Problem, eta: np.ndarray, sigma2: float) -> tuple[np.ndarray, list[np.ndarray]]:
    """The outcome's likelihood f (n, K) and, for a perturbed outcome, the shares of y* = 0, 1 (n, K) each."""
    if p.family == "gaussian":
        resid = p.y[:, None] - eta
        return np.exp(-0.5 * resid**2 / sigma2) / math.sqrt(2 * math.pi * sigma2), []
    mu = special.expit(eta)
    if p.my is None:
        return np.where(p.y[:, None] == 1, mu, 1 - mu), []
    z = p.y.astype(np.int64)
    parts = [p.my[0, z][:, None] * (1 - mu), p.my[1, z][:, None] * mu]
    return parts[0] + parts[1], parts


def _e_step(p: _Problem, beta: np.ndarray, sigma2: float, pi: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray | None, float, np.ndarray]:
    """Posterior over the latent combinations (n, K), the share of y* = 1 given each (or None),
    the observed log-likelihood (``-inf`` when a record has likelihood 0) and eta (n, K)."""
    eta = (p.base @ beta)[:, None] + p.shift @ beta
    f, parts = _outcome_terms(p, eta, sigma2)
    joint = p.like_x * pi[p.group] * f
    total = joint.sum(axis=1)
    if not (total > 0).all():
        return joint, None, -math.inf, eta
    post = joint / total[:, None]
    ystar = None
    if parts:
        with np.errstate(invalid="ignore", divide="ignore"):
            ystar = np.where(f > 0, parts[1] / f, 0.5)
    return post, ystar, float(np.log(total).sum()), eta


def _gram(p: _Problem, w: np.ndarray) -> np.ndarray:
    """``sum_ik w_ik x_ik x_ik^T`` for the rows ``x_ik = base_i + shift_k`` of every record and latent
    combination, without forming them (:func:`pramkit.estimate.regression_moment.gram`)."""
    return gram(p.base, p.shift, w)


def _weighted_rows(p: _Problem, w: np.ndarray) -> np.ndarray:
    """``sum_ik w_ik x_ik`` (:func:`pramkit.estimate.regression_moment.weighted_rows`)."""
    return weighted_rows(p.base, p.shift, w)


def _m_step(p: _Problem, post: np.ndarray, ystar: np.ndarray | None, beta: np.ndarray, eta: np.ndarray
            ) -> tuple[np.ndarray, float, np.ndarray]:
    """New beta, sigma^2 and pi from the posterior."""
    counts = p.cells @ post
    pi = counts / counts.sum(axis=1, keepdims=True)
    if p.family == "gaussian":
        beta = np.linalg.solve(_gram(p, post), _weighted_rows(p, post * p.y[:, None]))
        eta = (p.base @ beta)[:, None] + p.shift @ beta
        sigma2 = float((post * (p.y[:, None] - eta) ** 2).sum() / len(p.y))
        return beta, sigma2, pi
    target = p.y[:, None] if ystar is None else ystar
    mu = special.expit(eta)
    grad = _weighted_rows(p, post * (target - mu))
    info = _gram(p, post * mu * (1 - mu))
    return beta + np.linalg.solve(info, grad), 1.0, pi


def _louis(p: _Problem, beta: np.ndarray, sigma2: float, pi: np.ndarray) -> np.ndarray:
    """The observed information in (beta, [log sigma^2], softmax parameters of pi) by Louis' method.

    ``I = sum_i E[-H_c,i] - E[S_c,i S_c,i^T] + E[S_c,i] E[S_c,i]^T`` over each record's posterior
    (and, for a perturbed outcome, its true value).  The regression's parameters (beta and
    log sigma^2, ``h`` of them) have a score ``r_ik`` per record and latent combination, taken
    whole; the score of record i's cell g in pi's softmax parameters is ``e_k - pi_g`` (categories
    1..K-1) and zero in the other cells' parameters, so their blocks are summed by cell and the
    full ``(n, K, d, d)`` arrays are never formed.
    """
    post, ystar, _, eta = _e_step(p, beta, sigma2, pi)
    k_all = post.shape[1]
    xs = p.base[:, None, :] + p.shift[None, :, :]                 # (n, K, q)
    if p.family == "gaussian":
        resid = p.y[:, None] - eta
        score = np.concatenate([xs * (resid / sigma2)[:, :, None],
                                (-0.5 + resid**2 / (2 * sigma2))[:, :, None]], axis=2)
        states = [(post, score)]
        curvature = np.concatenate([xs, (resid / math.sqrt(2.0))[:, :, None]], axis=2)  # -H = c c^T / sigma^2
        expected = _sum_outer(post / sigma2, curvature)
        q = p.base.shape[1]
        expected[:q, q] = expected[q, :q] = _weighted_rows(p, post * resid) / sigma2
    else:
        mu = special.expit(eta)
        outcomes = [(post, p.y[:, None] * np.ones_like(post))] if ystar is None else \
            [(post * (1 - ystar), np.zeros_like(post)), (post * ystar, np.ones_like(post))]
        states = [(weight, xs * (yv - mu)[:, :, None]) for weight, yv in outcomes]
        expected = _sum_outer(post * mu * (1 - mu), xs)
    h = expected.shape[0]
    scored = sum(weight[:, :, None] * r for weight, r in states)   # (n, K, h): w r summed over the states
    mean = scored.sum(axis=1)                                       # E[r | z_i]
    info = expected - sum(_sum_outer(weight, r) for weight, r in states) + mean.T @ mean
    if k_all == 1:
        return info
    full = np.zeros((h + p.n_groups * (k_all - 1),) * 2)
    full[:h, :h] = info
    mean_pi = post[:, 1:] - pi[p.group][:, 1:]                      # E[e_k - pi_g | z_i], categories 1..K-1
    order = np.argsort(p.group, kind="stable")
    bounds = np.searchsorted(p.group[order], np.arange(p.n_groups + 1))
    for g in range(p.n_groups):
        rows = order[bounds[g]:bounds[g + 1]]
        sl = slice(h + g * (k_all - 1), h + (g + 1) * (k_all - 1))
        share = pi[g]
        by_k = scored[rows].sum(axis=0)                             # (K, h): sum_i w_ik r_ik
        cross = by_k[1:] - share[1:, None] * by_k.sum(axis=0)       # -E[r (e_k - pi)] summed, negated below
        cross = mean[rows].T @ mean_pi[rows] - cross.T              # (h, K-1)
        full[:h, sl] = cross
        full[sl, :h] = cross.T
        total = post[rows].sum(axis=0)                              # (K,)
        spread = np.diag(total) - np.outer(total, share) - np.outer(share, total) + total.sum() * np.outer(share, share)
        block = np.diag(share[1:]) - np.outer(share[1:], share[1:])
        full[sl, sl] = len(rows) * block - spread[1:, 1:] + mean_pi[rows].T @ mean_pi[rows]
    return full


def _sum_outer(w: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``sum_ik w_ik r_ik r_ik^T`` for ``w`` (n, K) and ``r`` (n, K, h), by one matrix product."""
    flat = r.reshape(-1, r.shape[2])
    return (flat * w.reshape(-1, 1)).T @ flat


class _Parameters:
    """beta, sigma^2 and pi as one vector ``(beta, log sigma^2, pi)`` (no ``log sigma^2`` for binomial),
    the space in which EM steps are measured and extrapolated."""

    def __init__(self, p: _Problem) -> None:
        self.q = p.base.shape[1]
        self.extra = 1 if p.family == "gaussian" else 0
        self.shape = (p.n_groups, p.like_x.shape[1])

    def pack(self, beta: np.ndarray, sigma2: float, pi: np.ndarray) -> np.ndarray:
        return np.concatenate([beta, [math.log(sigma2)] if self.extra else [], pi.ravel()])

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
        sigma2 = math.exp(theta[self.q]) if self.extra else 1.0
        return theta[: self.q], sigma2, theta[self.q + self.extra:].reshape(self.shape)

    def feasible(self, theta: np.ndarray, reference: np.ndarray) -> bool:
        """Finite, and every share of pi above 0 where ``reference``'s is (and not below 0 where it is 0:
        a category that no record of a cell can have); each row of pi sums to 1 along any extrapolation."""
        share, known = theta[self.q + self.extra:], reference[self.q + self.extra:]
        return bool(np.isfinite(theta).all() and ((share > 0) | ((known == 0) & (share >= 0))).all())


def _em_map(p: _Problem, space: _Parameters, theta: np.ndarray) -> tuple[np.ndarray, float]:
    """One EM step from ``theta`` and the log-likelihood at ``theta`` (``-inf``: not a valid point)."""
    beta, sigma2, pi = space.unpack(theta)
    post, ystar, loglik, eta = _e_step(p, beta, sigma2, pi)
    if not math.isfinite(loglik):
        return theta, -math.inf
    return space.pack(*_m_step(p, post, ystar, beta, eta)), loglik


def _small_step(old: np.ndarray, new: np.ndarray, tol: float) -> bool:
    """No parameter moved by more than ``tol`` times (1 + its size)."""
    return bool((np.abs(new - old) <= tol * (1.0 + np.abs(new))).all())


def _extrapolated(space: _Parameters, t0: np.ndarray, t1: np.ndarray, t2: np.ndarray) -> np.ndarray | None:
    """SQUAREM's point from two EM steps ``t0 -> t1 -> t2``: ``t0 - 2 a r + a^2 v`` with ``r = t1 - t0`` and
    ``v = t2 - t1 - r``, at the first of :func:`pramkit.estimate.mle.squarem_lengths` that stays in the
    parameter space.  ``None`` when none does."""
    r = t1 - t0
    v = t2 - t1 - r
    for alpha in squarem_lengths(r, v):
        trial = t0 - 2 * alpha * r + alpha**2 * v
        if space.feasible(trial, t2):
            return trial
    return None


def _fit(p: _Problem, max_iter: int, tol: float) -> tuple[np.ndarray, float, np.ndarray, int, bool, float]:
    """EM from the naive start, accelerated by SQUAREM: beta, sigma^2, pi, EM steps, converged, log-likelihood.

    Each cycle takes two EM steps ``t1 = F(t0)``, ``t2 = F(t1)``, extrapolates along them
    (:func:`_extrapolated`) and takes one EM step from that point, kept when the log-likelihood at
    the point is at least that at ``t1``; otherwise ``t2`` is kept.  So the log-likelihood never
    falls below plain EM's, and the fixed points are EM's.  EM has converged when one step moves no
    parameter by more than ``tol`` relative (:func:`_small_step`) and the log-likelihood by at most
    ``tol`` relative; ``max_iter`` bounds the EM steps.
    """
    space = _Parameters(p)
    beta = np.zeros(p.base.shape[1])
    sigma2 = 1.0
    if p.family == "gaussian":
        beta[0] = float(np.mean(p.y))
        sigma2 = float(np.var(p.y)) or 1.0
    theta = space.pack(beta, sigma2, np.full(space.shape, 1.0 / space.shape[1]))
    steps, previous, converged = 0, -math.inf, False

    def em(t: np.ndarray, extrapolated: bool = False) -> tuple[np.ndarray, float]:
        """F(t) and the log-likelihood at t; counts the step and whether EM has converged at t.  An
        extrapolated point whose M-step is singular is not a valid point (log-likelihood ``-inf``)."""
        nonlocal steps, previous, converged
        try:
            new, loglik = _em_map(p, space, t)
        except np.linalg.LinAlgError:
            if not extrapolated:
                raise
            new, loglik = t, -math.inf
        if steps == 0 and not math.isfinite(loglik):
            raise DataError(_ZERO_LIKELIHOOD)
        steps += 1
        converged = math.isfinite(loglik) and _small_step(t, new, tol) \
            and abs(loglik - previous) <= tol * (1 + abs(loglik))
        previous = loglik
        return new, loglik

    while steps < max_iter:
        t1, _ = em(theta)
        if converged or steps >= max_iter:
            theta = t1
            break
        t2, l1 = em(t1)
        if converged or steps >= max_iter:
            theta = t2
            break
        trial = _extrapolated(space, theta, t1, t2)
        if trial is None:
            theta = t2
            continue
        t3, at_trial = em(trial, extrapolated=True)
        theta = t3 if converged or at_trial >= l1 else t2
        if converged:
            break
    beta, sigma2, pi = space.unpack(theta)
    return beta, sigma2, pi, steps, converged, _e_step(p, beta, sigma2, pi)[2]


def _standard_errors(p: _Problem, beta: np.ndarray, sigma2: float, pi: np.ndarray) -> np.ndarray:
    """The coefficients' covariance: the beta block of the inverse observed information."""
    info = _louis(p, beta, sigma2, pi)
    return np.linalg.pinv(info, hermitian=True)[: len(beta), : len(beta)]


def _naive(problem: _Problem) -> _Problem:
    """The same problem with every matrix the identity (the released values taken as true)."""
    released = np.eye(problem.like_x.shape[1])[problem.released]
    return _Problem(problem.y, problem.base, problem.shift, released, None if problem.my is None else np.eye(2),
                    problem.group, problem.n_groups, problem.family, problem.released)


def corrected_regression(data: Any, formula: str, manifest: Manifest | str, *, family: str = "auto",
                         confidence: float = 0.95, max_iter: int = 5000, tol: float = 1e-10,
                         na_values: Sequence[str] | None = None, method: str = "auto",
                         variance: str = "multinomial", weights: str | None = None,
                         survey: SurveyDesign | None = None, sep: str = CSV_SEP, encoding: str = CSV_ENCODING,
                         decimal: str = CSV_DECIMAL) -> RegressionResult:
    """Fit ``formula`` to a released file, correcting for the PRAM of its perturbed columns.

    A linear regression is fitted by default by moments (:mod:`pramkit.estimate.regression_moment`):
    consistent for the original file's least-squares coefficients whatever the outcome's law, with
    sandwich standard errors.  A logistic regression, or a linear one with ``method="em"``, maximises
    the likelihood of the module docstring by EM, whose linear model is a normal outcome of one
    variance: the result's ``check`` measures whether the residuals contradict it, and its
    ``warnings`` say so.

    Parameters
    ----------
    data : pandas.DataFrame or str or os.PathLike
        The released records (a frame, or a file :func:`pramkit.io.read_table` reads).
    formula : str
        ``"outcome ~ x1 + x2 + ..."``: main effects, an intercept.  A numeric column not in the
        manifest is a numeric covariate; any other column is categorical (its first category the
        reference).
    manifest : Manifest or str or os.PathLike
        The release's manifest.
    family : {"auto", "gaussian", "binomial"}
        Linear regression of a numeric outcome, or logistic regression of a two-category one
        (0/1, or the second category of its matrix or of its sorted labels as the event);
        ``"auto"`` picks by the outcome.
    confidence : float
        The level of the intervals of :meth:`RegressionResult.to_frame`.
    max_iter : int
        Most EM steps (SQUAREM's extrapolations are not counted; the steps from them are).
    tol : float
        EM stops when a step moves no parameter (the coefficients, log sigma^2, the shares pi) by
        more than ``tol`` times (1 + its size) and the log-likelihood by at most ``tol`` relative.
    na_values : sequence of str, optional
        The texts of a CSV file that are missing (with ``data`` a file).
    method : {"auto", "moment", "em"}
        The estimator: ``"moment"`` (linear regression only; needs invertible matrices) or ``"em"``;
        ``"auto"`` takes the moment estimator for a linear regression, EM for a logistic one.
    variance : {"multinomial", "pram"}
        The moment estimator's standard errors: records sampled from a population and perturbed
        (the target: the population's coefficients), or the original file fixed and PRAM the only
        randomness (the target: the original file's least-squares coefficients).  EM takes
        ``"multinomial"`` (its observed information); a weighted fit too (its standard errors are
        the design's, :mod:`pramkit.estimate.regression_moment`, with PRAM's part as ``pram_se``).
    weights : str, optional
        A column of sampling weights: the moment estimator weighted, consistent for the population's
        (census) least-squares coefficients, with design-based standard errors (every record its own
        PSU, one stratum).  A linear regression only (EM's likelihood is unweighted).
    survey : pramkit.estimate.survey.SurveyDesign, optional
        The whole design instead: weights, strata, PSUs, finite population correction, the rule
        for a stratum of one PSU (as :func:`pramkit.estimate_table` takes it).  Rows with a missing
        value in the formula's columns stay in their stratum and PSU, adding nothing (a domain).
    sep, encoding : str
        The field separator and character encoding of a CSV file (with ``data`` a file:
        :func:`pramkit.io.csv_dialect`).
    decimal : {".", ","}
        The decimal mark of the numbers written as text (a CSV file's): the outcome, the numeric covariates
        (a column not perturbed whose every text is a number), the weights and the fpc.  With ``","``,
        ``12,5`` is 12.5 and a column of numbers written with a point is refused naming its row
        (:func:`pramkit.io.csv_numbers`); a column of text stays a factor.

    Returns
    -------
    RegressionResult

    Raises
    ------
    ParameterError
        A malformed formula, family or option, a perturbed column that is joint or stratified.
    DataError
        A column is absent, a value is not a category of its matrix, the outcome does not suit the family,
        a weight is missing, negative or not finite.

    Examples
    --------
    A covariate released by randomized response keeping 80 %: the naive slope is attenuated
    (about 0.6 of the true 2.0), the corrected one (moments) is not, nor is EM's.

    >>> from pramkit.matrix import PramMatrix
    >>> rng = np.random.default_rng(1)
    >>> x = rng.integers(0, 2, 4000)
    >>> y = 1.0 + 2.0 * x + rng.normal(size=4000)
    >>> z = np.where(rng.random(4000) < 0.8, x, 1 - x)
    >>> m = Manifest.of({"x": PramMatrix([[0.8, 0.2], [0.2, 0.8]], ("0", "1"))})
    >>> fit = corrected_regression(pd.DataFrame({"y": y, "x": z.astype(str)}), "y ~ x", m)
    >>> fit.terms, fit.estimator, round(float(fit.naive_coef[1]), 1), round(float(fit.coef[1]), 1)
    (('Intercept', 'x[1]'), 'moment', 1.2, 2.0)
    >>> em = corrected_regression(pd.DataFrame({"y": y, "x": z.astype(str)}), "y ~ x", m, method="em")
    >>> em.estimator, round(float(em.coef[1]), 1), em.warnings
    ('em', 2.0, ())

    Weighted by a column of sampling weights (every record its own PSU): the same corrected slope,
    standard errors by linearisation, PRAM's part of them beside.

    >>> survey = pd.DataFrame({"y": y, "x": z.astype(str), "w": rng.uniform(1, 3, 4000)})
    >>> weighted = corrected_regression(survey, "y ~ x", m, weights="w")
    >>> weighted.variance, round(float(weighted.coef[1]), 1), bool((weighted.pram_se < weighted.se).all())
    ('linearization', 2.0, True)
    """
    if isinstance(manifest, Manifest):
        man = manifest
    else:
        man = Manifest.read(manifest)
    check_confidence(confidence)  # the rule of the estimate's setting (pramkit.estimate.spec)
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ParameterError(f"max_iter must be a positive integer, not {max_iter!r}")
    if not (isinstance(tol, float) and 0 < tol < 1):
        raise ParameterError(f"tol must be a number in (0, 1), not {tol!r}")
    if method not in REGRESSION_METHODS:
        raise ParameterError(f"method must be one of {REGRESSION_METHODS}, not {method!r}")
    check_variance_kind(variance)
    design = _survey_design(weights, survey)
    if design is not None and variance != "multinomial":
        raise ParameterError(f"variance {variance!r} is for an unweighted regression; with weights or a survey design "
                             "the standard errors are the design's and PRAM's together (PRAM's part is given as "
                             "pram_se): leave variance out")
    outcome, terms = parse_formula(formula)
    if isinstance(data, pd.DataFrame):
        frame, where = data, ""
    else:
        from pramkit.defaults import NA_VALUES
        from pramkit.io import read_table

        columns = list(dict.fromkeys([outcome, *terms, *([] if design is None else design.columns)]))
        frame = read_table(data, columns=columns, na_values=NA_VALUES if na_values is None else na_values, sep=sep,
                           encoding=encoding, decimal=decimal)
        where = repr(str(data))
    problem, names, dropped, event, perturbed = _problem(frame, outcome, terms, man, family, decimal, where)
    estimator = method if method != "auto" else ("moment" if problem.family == "gaussian" else "em")
    if design is not None and estimator == "em":
        raise ParameterError("EM maximises an unweighted likelihood: survey weights go with the moment estimator of a "
                             "linear regression (method 'moment', --regress-method moment)")
    sample = None if design is None else SampleDesign(design, design.read(frame, decimal=decimal, where=where),
                                                       _rows(problem))
    if estimator == "moment" and problem.family != "gaussian":
        raise ParameterError("the moment estimator fits a linear regression (family gaussian); a logistic "
                             "regression is fitted by EM (method 'em' or 'auto')")
    if estimator == "em" and variance != "multinomial":
        raise ParameterError(f"variance {variance!r} is the moment estimator's; EM's standard errors are its "
                             "observed information (leave variance out, or use method 'moment')")
    try:
        fields = _moment_fields(problem, variance, sample) if estimator == "moment" else \
            _em_fields(problem, max_iter, tol)
    except np.linalg.LinAlgError:
        raise DataError(f"{formula}: the coefficients are not identified (a singular information matrix: a "
                        "category with too few records, or one that separates the outcome); merge small "
                        "categories or leave a term out") from None
    return RegressionResult(formula=formula, family=problem.family, terms=tuple(names), n=len(problem.y),
                            dropped=dropped, event=event, perturbed=tuple(perturbed), confidence=confidence,
                            estimator=estimator, design=design, **fields)


def _survey_design(weights: str | None, survey: SurveyDesign | None) -> SurveyDesign | None:
    """The design of a weighted fit: ``survey``, or every record its own PSU with ``weights``; None unweighted."""
    if survey is not None and not isinstance(survey, SurveyDesign):
        raise ParameterError(f"survey must be a SurveyDesign, not {type(survey).__name__}")
    if survey is not None and weights is not None and weights != survey.weights:
        raise ParameterError(f"weights {weights!r} and the survey design's weights {survey.weights!r} differ; "
                             "give one of them")
    return survey if survey is not None or weights is None else SurveyDesign(weights)


def _rows(problem: _Problem) -> np.ndarray:
    """The fitted records' positions in the frame."""
    return problem.rows if problem.rows is not None else np.arange(len(problem.y))


def _se(cov: np.ndarray) -> np.ndarray:
    """The square roots of a covariance's diagonal (0 where rounding left it below 0)."""
    return np.sqrt(np.maximum(np.diag(cov), 0.0))


def _moment_fields(p: _Problem, variance: str, sample: SampleDesign | None = None) -> dict[str, Any]:
    """The moment estimator's part of a :class:`RegressionResult` (its naive fit: least squares, HC0; weighted
    least squares with the same design's standard errors when ``sample`` is given)."""
    weights = p.inverse_x()
    fit = moment_fit(p.base, p.shift, weights, p.y, variance=variance, design=sample)
    with warnings.catch_warnings():   # a stratum of one PSU: said once, by the corrected fit
        warnings.simplefilter("ignore", PramkitWarning)
        naive = moment_fit(p.base, p.shift, np.eye(p.shift.shape[0])[p.released], p.y, design=sample)
    notes = _weak_categories(weights, p.latent)
    if variance == "pram" and (np.diag(fit.covariance) <= 0).any():
        notes.append("the variance estimate of a coefficient is not positive (too few records of a category "
                     "for the 'pram' variance): its standard error shows 0; use variance 'multinomial'")
    return {"coef": fit.beta, "se": _se(fit.covariance), "covariance": fit.covariance, "naive_coef": naive.beta,
            "naive_se": _se(naive.covariance), "iterations": 0, "converged": True, "loglik": None,
            "sigma": math.sqrt(max(fit.sigma2, 0.0)), "variance": variance if sample is None else "linearization",
            "pram_se": None if fit.pram_covariance is None else _se(fit.pram_covariance),
            "check": residual_check(weights, fit.residuals, p.latent), "warnings": tuple(notes)}


def _weak_categories(weights: np.ndarray, latent: Sequence[str]) -> list[str]:
    """A warning naming the true combinations whose estimated count (the moment estimate ``sum_i q_ik``) is
    below :data:`WEAK_COUNT` of its standard errors: the corrected Gram matrix is then close to singular, and
    the coefficients (an unperturbed covariate's too) move with the noise of that count."""
    counts = weights.sum(axis=0)
    se = np.sqrt(np.maximum((weights**2).sum(axis=0) - counts**2 / len(weights), 0.0))
    weak = np.flatnonzero(counts < WEAK_COUNT * se)
    if len(latent) < 2 or not len(weak):
        return []
    shown = ", ".join(f"{latent[k]} ({counts[k]:.0f} +- {se[k]:.0f})" for k in weak[:5])
    return [f"the true categories {shown}{' ...' if len(weak) > 5 else ''} are estimated to hold fewer records than "
            f"{WEAK_COUNT:g} standard errors of that estimate: the coefficients are unstable (look at their "
            "standard errors); merge such a category with a neighbour, or fit by EM (method 'em')"]


def _em_fields(p: _Problem, max_iter: int, tol: float) -> dict[str, Any]:
    """EM's part of a :class:`RegressionResult`, with the check of its normal outcome (gaussian): by the
    moment estimator's weights and residuals, or by EM's posterior where the matrices have no usable inverse."""
    beta, sigma2, pi, iterations, converged, loglik = _fit(p, max_iter, tol)
    cov = _standard_errors(p, beta, sigma2, pi)
    naive = _naive(p)
    nbeta, nsigma2, npi, _, _, _ = _fit(naive, max_iter, tol)
    ncov = _standard_errors(naive, nbeta, nsigma2, npi)
    check, warnings = None, []
    if p.family == "gaussian":
        try:
            weights = p.inverse_x()
            check = residual_check(weights, moment_fit(p.base, p.shift, weights, p.y).residuals, p.latent)
        except (DataError, np.linalg.LinAlgError):
            post, _, _, eta = _e_step(p, beta, sigma2, pi)
            check = residual_check(post, p.y[:, None] - eta, p.latent, source="em posterior")
        if check.warning is not None and len(p.latent) > 1:
            warnings.append(check.warning)
    if not converged:
        warnings.append(f"EM did not converge after {iterations} iterations")
    return {"coef": beta, "se": _se(cov), "covariance": cov, "naive_coef": nbeta, "naive_se": _se(ncov),
            "iterations": iterations, "converged": converged, "loglik": loglik,
            "sigma": math.sqrt(sigma2) if p.family == "gaussian" else None, "check": check,
            "warnings": tuple(warnings)}


def observed_loglik(data: pd.DataFrame, formula: str, manifest: Manifest, beta: np.ndarray, *,
                    sigma: float = 1.0, pi: np.ndarray | None = None, family: str = "auto") -> float:
    """The observed-data log-likelihood of the module docstring at given parameters (for checks).

    Parameters
    ----------
    data, formula, manifest, family
        As :func:`corrected_regression`.
    beta : numpy.ndarray
        The coefficients, in the order of :attr:`RegressionResult.terms`.
    sigma : float
        The residual standard deviation (gaussian).
    pi : numpy.ndarray, optional
        ``(G, K)``: the distribution of the perturbed covariates' combinations in each cell of the
        unperturbed categorical covariates (uniform when None).

    Returns
    -------
    float

    Examples
    --------
    Nothing in the formula perturbed: the normal log-likelihood of the residuals.

    >>> from pramkit.matrix import PramMatrix
    >>> other = Manifest.of({"region": PramMatrix([[0.8, 0.2], [0.2, 0.8]], ("n", "s"))})
    >>> frame = pd.DataFrame({"y": [1.0, 2.0, 4.0], "x": [0.0, 1.0, 2.0]})
    >>> ll = observed_loglik(frame, "y ~ x", other, np.array([1.0, 1.5]), sigma=1.0)
    >>> round(ll, 6) == round(-1.5 * math.log(2 * math.pi) - 0.5 * (0 + 0.25 + 0), 6)
    True
    """
    outcome, terms = parse_formula(formula)
    problem, *_ = _problem(data, outcome, terms, manifest, family)
    k_all = problem.like_x.shape[1]
    weights = np.full((problem.n_groups, k_all), 1.0 / k_all) if pi is None else np.asarray(pi, dtype=float)
    loglik = _e_step(problem, np.asarray(beta, dtype=float), float(sigma) ** 2, weights)[2]
    if not math.isfinite(loglik):
        raise DataError(_ZERO_LIKELIHOOD)
    return loglik


__all__ = ["FAMILIES", "METHODS", "REGRESSION_METHODS", "RegressionResult", "corrected_regression", "observed_loglik", "parse_formula"]
