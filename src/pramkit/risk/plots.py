"""Figures of the risk assessment (PNG, matplotlib's Agg backend).

* :func:`plot_fit`: goodness of fit of a log-linear model (Skinner and Shlomo
  2008 stress that tau estimates are only as good as the fit): the numbers
  of cells with sample count 0, 1, 2, ... observed and expected under the
  fitted Poisson means, and the three-way margins (not fitted by a two-way
  model) observed against fitted.
* :func:`plot_risk_curve`: the risk-epsilon curve of :func:`pramkit.risk.tuning.tune_epsilon`.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
from scipy import special

from pramkit._figure import new_figure, place_axes, plain_log, png_bytes, ytick_inches
from pramkit.atomic import write_bytes_atomic
from pramkit.risk.loglinear import LogLinearFit, margins
from pramkit.risk.tuning import TuningResult

#: What draws these figures, for the message when matplotlib is missing.
RISK_PLOT = "the risk plot"


#: Dots per inch of these figures.
RISK_DPI = 120


def _save(fig, path: str | Path, force: bool) -> Path:
    return write_bytes_atomic(path, png_bytes(fig), force=force)


def count_frequencies(fit: LogLinearFit, *, largest: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts c = 0..largest, the number of cells with sample count c, and its expectation
    sum_j P(Poisson(mu_j) = c) under the fit.

    Parameters
    ----------
    fit : pramkit.risk.loglinear.LogLinearFit
        A fitted model (its ``observed`` and ``fitted`` tables).
    largest : int
        The largest count shown; cells with more are left out of both.

    Returns
    -------
    c : numpy.ndarray
        ``0..largest``.
    observed : numpy.ndarray
        The number of cells with sample count ``c``.
    expected : numpy.ndarray
        Its expectation under the fit (cells fitted exactly zero count at ``c = 0``).

    Examples
    --------
    >>> from pramkit.risk.loglinear import fit_loglinear
    >>> f = np.array([[[3.0, 0.0], [1.0, 2.0]], [[0.0, 1.0], [4.0, 1.0]]])
    >>> c, observed, expected = count_frequencies(fit_loglinear(f, ["a", "b", "c"]), largest=4)
    >>> c.tolist(), observed.tolist()
    ([0, 1, 2, 3, 4], [2, 3, 1, 1, 1])
    >>> np.round(expected, 2).tolist()
    [2.5, 2.22, 1.53, 0.9, 0.47]
    """
    c = np.arange(largest + 1)
    observed = np.bincount(np.minimum(fit.observed.ravel().astype(np.int64), largest + 1), minlength=largest + 2)
    mu = fit.fitted.ravel()
    mu = mu[mu > 0]
    # Poisson probabilities of k under each mean, as scipy.stats.poisson.pmf computes them
    expected = np.array([np.exp(special.xlogy(k, mu) - special.gammaln(k + 1) - mu).sum() for k in c])
    expected[0] += fit.fitted.size - mu.size  # cells fitted exactly zero
    return c, observed[: largest + 1], expected


def plot_fit(fit: LogLinearFit, path: str | Path, *, force: bool = False, max_triples: int = 120) -> Path:
    """Goodness-of-fit figure of a log-linear fit (module docstring).

    Parameters
    ----------
    fit : pramkit.risk.loglinear.LogLinearFit
        A fitted model.
    path : str or pathlib.Path
        The PNG file to write (atomically, :func:`pramkit.atomic.atomic_path`).
    force : bool
        Replace an existing file.
    max_triples : int
        Most three-way margins drawn.

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
    >>> import pathlib, tempfile
    >>> from pramkit.risk.loglinear import fit_loglinear
    >>> f = np.array([[[3.0, 0.0], [1.0, 2.0]], [[0.0, 1.0], [4.0, 1.0]]])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     png = plot_fit(fit_loglinear(f, ["a", "b", "c"]), pathlib.Path(d) / "fit.png")
    ...     print(png.read_bytes()[:4], [p.name for p in pathlib.Path(d).iterdir()])
    b'\\x89PNG' ['fit.png']
    """
    fig = new_figure(RISK_PLOT, figsize=(11, 4.5), dpi=RISK_DPI)
    left, right = fig.subplots(1, 2)
    c, observed, expected = count_frequencies(fit)
    left.bar(c - 0.2, observed, width=0.4, label="observed")
    left.bar(c + 0.2, expected, width=0.4, label="expected under the fit")
    left.set_yscale("log")
    plain_log(left.yaxis)
    left.set_xlabel("sample count f of a cell")
    left.set_ylabel("number of cells")
    left.set_title(f"{fit.formula[:60]}{'...' if len(fit.formula) > 60 else ''}", fontsize=8)
    left.legend()
    ndim = fit.observed.ndim
    triples = list(itertools.combinations(range(ndim), min(3, ndim)))[:max_triples]
    obs = np.concatenate([m.ravel() for m in margins(fit.observed, triples)])
    fitted = np.concatenate([m.ravel() for m in margins(fit.fitted, triples)])
    keep = (obs > 0) | (fitted > 0.5)
    right.loglog(fitted[keep] + 0.5, obs[keep] + 0.5, ".", ms=2, alpha=0.4)
    top = float(max(obs.max(), fitted.max())) + 1
    right.loglog([0.5, top], [0.5, top], color="grey", lw=1)
    right.set_xlabel("fitted count + 0.5 (records)")
    right.set_ylabel("observed count + 0.5 (records)")
    right.set_title(f"{len(triples)} three-way margins; deviance {fit.deviance:.4g} on {fit.df} df", fontsize=8)
    plain_log(right.xaxis)
    plain_log(right.yaxis)
    # margins in inches (place_axes), each panel's from the width of its numbers
    place_axes(fig, left=0.45 + ytick_inches(left), right=0.2, bottom=0.6, top=0.35, wspace=0.6 + ytick_inches(right))
    return _save(fig, path, force)


def plot_risk_curve(result: TuningResult, path: str | Path, *, force: bool = False) -> Path:
    """The risk-epsilon curve with the threshold and the chosen epsilon, as PNG.

    Parameters
    ----------
    result : pramkit.risk.tuning.TuningResult
        What :func:`pramkit.risk.tuning.tune_epsilon` found.
    path : str or pathlib.Path
        The PNG file to write (atomically).
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
    An existing figure is kept unless ``force`` is given:

    >>> import pathlib, tempfile
    >>> from pramkit.errors import OutputExistsError
    >>> result = TuningResult(epsilon=2.0, risk=0.5, measure="tau2", threshold=0.6, matrices={},
    ...                       curve_epsilon=np.geomspace(0.1, 10, 5), curve_risk=np.array([0.1, 0.3, 0.55, 0.8, 0.9]),
    ...                       monotone=True, at_upper_bound=False, evaluations=9)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     png = plot_risk_curve(result, pathlib.Path(d) / "curve.png")
    ...     size = png.stat().st_size
    ...     try:
    ...         plot_risk_curve(result, png)
    ...     except OutputExistsError:
    ...         print(png.read_bytes()[:4], png.stat().st_size == size)
    b'\\x89PNG' True
    """
    unit = "records" if result.measure == "tau2" else "probability"
    fig = new_figure(RISK_PLOT, figsize=(6, 4), dpi=RISK_DPI)
    ax = fig.subplots()
    ax.plot(result.curve_epsilon, result.curve_risk, "o-", label=f"{result.measure} after PRAM")
    ax.axhline(result.threshold, color="grey", ls="--", label=f"threshold {result.threshold:g}")
    ax.axvline(result.epsilon, color="C3", ls=":", label=f"epsilon = {result.epsilon:.3g}")
    ax.set_xscale("log")
    plain_log(ax.xaxis)
    ax.set_xlabel("epsilon per record (nats)")
    ax.set_ylabel(f"{result.measure} ({unit})")
    ax.legend()
    place_axes(fig, left=0.45 + ytick_inches(ax), right=0.2, bottom=0.6, top=0.2)
    return _save(fig, path, force)
