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
from scipy.stats import poisson

from pramkit.atomic import atomic_path
from pramkit.risk.loglinear import LogLinearFit, margins
from pramkit.risk.tuning import TuningResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path, force: bool) -> Path:
    with atomic_path(path, force=force) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    return Path(path)


def count_frequencies(fit: LogLinearFit, *, largest: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts c = 0..largest, the number of cells with sample count c, and its expectation
    sum_j P(Poisson(mu_j) = c) under the fit."""
    c = np.arange(largest + 1)
    observed = np.bincount(np.minimum(fit.observed.ravel().astype(np.int64), largest + 1), minlength=largest + 2)
    mu = fit.fitted.ravel()
    mu = mu[mu > 0]
    expected = np.array([poisson.pmf(k, mu).sum() for k in c])
    expected[0] += fit.fitted.size - mu.size  # cells fitted exactly zero
    return c, observed[: largest + 1], expected


def plot_fit(fit: LogLinearFit, path: str | Path, *, force: bool = False, max_triples: int = 120) -> Path:
    """Goodness-of-fit figure of a log-linear fit (module docstring)."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    c, observed, expected = count_frequencies(fit)
    left.bar(c - 0.2, observed, width=0.4, label="observed")
    left.bar(c + 0.2, expected, width=0.4, label="expected under the fit")
    left.set_yscale("log")
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
    fig.tight_layout()
    out = _save(fig, path, force)
    plt.close(fig)
    return out


def plot_risk_curve(result: TuningResult, path: str | Path, *, force: bool = False) -> Path:
    """The risk-epsilon curve with the threshold and the chosen epsilon, as PNG."""
    plt = _pyplot()
    unit = "records" if result.measure == "tau2" else "probability"
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(result.curve_epsilon, result.curve_risk, "o-", label=f"{result.measure} after PRAM")
    ax.axhline(result.threshold, color="grey", ls="--", label=f"threshold {result.threshold:g}")
    ax.axvline(result.epsilon, color="C3", ls=":", label=f"epsilon = {result.epsilon:.3g}")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon per record (nats)")
    ax.set_ylabel(f"{result.measure} ({unit})")
    ax.legend()
    fig.tight_layout()
    out = _save(fig, path, force)
    plt.close(fig)
    return out
