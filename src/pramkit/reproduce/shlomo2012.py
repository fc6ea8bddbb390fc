"""Shlomo and Skinner (2012), sec. 3: the numerical example and Figure 1, regenerated.

Numerical example: 16 binary key variables, each Bernoulli(0.2) and
independent, give ``k = 2^16 = 65 536`` cells; a population of
``N = 10^6`` is drawn once; 1000 simple random samples of ``n = 5000``
(``pi = 0.005``) and of ``n = 10 000`` (``pi = 0.01``) are drawn from it, and
for each the proportion of sample uniques that are population uniques is
computed; the paper reports averages of about 0.024 and 0.035.  Beside the
simulation, the same proportion under the Poisson model of sec. 2.1
(``F_j ~ Poisson(lambda_j)``, ``lambda_j = N p_j``, Bernoulli sampling):

    E[# SU that are PU] / E[# SU] = sum_j lambda_j exp(-lambda_j) / sum_j lambda_j exp(-pi lambda_j).

The Chaudhuri-Mishra threshold ``2 eps^-1 log(2k / delta)`` for
``eps = delta = 1/3`` (paper: 77.3) and the share of the population living
in cells below it.  Figure 1: ``P(F = 1 | f = 1) = exp(-lambda (1 - pi))``
against lambda for ``pi = 0.005`` and ``0.01``.

Output: ``shlomo2012_example.csv``, ``shlomo2012_summary.json``,
``shlomo2012_figure1.png`` in the output folder.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import comb

from pramkit._extras import require_extra
from pramkit._figure import new_figure
from pramkit.atomic import atomic_path, write_text_atomic
from pramkit.privacy.probabilistic import population_unique_probability, rare_cell_threshold
from pramkit.progress import progress

#: What draws the figures, for the message when matplotlib is missing (checked on import: before any work).
FIGURES = "pramkit reproduce shlomo2012 (its figures)"
require_extra("report", FIGURES)

KEYS = 16
P_ONE = 0.2
N = 1_000_000
SAMPLE_SIZES = (5000, 10_000)
PAPER_SHARE = {5000: 0.024, 10_000: 0.035}
PAPER_THRESHOLD = 77.3
SEED = 2012


def cell_probabilities() -> np.ndarray:
    """p_j of the 2^16 cells: 0.2^b 0.8^(16-b), b = number of ones in j.

    Returns
    -------
    numpy.ndarray, shape (65536,)
        The cell probabilities (bit i of j is key i), summing to 1.

    Examples
    --------
    >>> p = cell_probabilities()
    >>> p.size, math.isclose(p.sum(), 1.0), p.argmax(), math.isclose(p.max(), 0.8 ** 16)
    (65536, True, np.int64(0), True)
    """
    ones = np.array([bin(j).count("1") for j in range(2**KEYS)])
    return P_ONE**ones * (1 - P_ONE) ** (KEYS - ones)


def model_share(sampling_fraction: float) -> float:
    """Expected share of sample uniques that are population uniques under the Poisson model.

    ``sum_j lambda_j exp(-lambda_j) / sum_j lambda_j exp(-pi lambda_j)`` with
    ``lambda_j = N p_j`` (section 2.1; module docstring), summed over the
    17 classes of cells with the same number of ones.

    Parameters
    ----------
    sampling_fraction : float
        pi = n / N.

    Returns
    -------
    float
        The share, a probability.

    Examples
    --------
    The paper's simulation reports about 0.024 (n = 5000) and 0.035
    (n = 10 000); the model gives:

    >>> round(model_share(5000 / N), 3), round(model_share(10_000 / N), 3)
    (0.026, 0.036)
    """
    b = np.arange(KEYS + 1)
    lam = N * P_ONE**b * (1 - P_ONE) ** (KEYS - b)
    mult = comb(KEYS, b)
    return float((mult * lam * np.exp(-lam)).sum() / (mult * lam * np.exp(-sampling_fraction * lam)).sum())


def simulate(samples: int, *, quiet: bool, rng: np.random.Generator) -> dict[int, np.ndarray]:
    """Per-sample share of sample uniques that are population uniques, for each sample size.

    Draws one population of N records (16 Bernoulli(0.2) keys), then
    ``samples`` simple random samples of each size in :data:`SAMPLE_SIZES`.

    Parameters
    ----------
    samples : int
        Samples per sample size.
    quiet : bool
        Hide the progress bar.
    rng : numpy.random.Generator
        The random source.

    Returns
    -------
    dict of int to numpy.ndarray
        Sample size -> the share of each sample; key 0 holds the population
        counts F of the 2^16 cells instead.

    Examples
    --------
    The population alone is 16 million draws (about a second), so not run here:

    >>> shares = simulate(20, quiet=True, rng=np.random.default_rng(SEED))     # doctest: +SKIP
    >>> int(shares[0].sum()), round(float(shares[5000].mean()), 3)           # doctest: +SKIP
    (1000000, 0.026)
    """
    bits = rng.random((N, KEYS)) < P_ONE
    cells = (bits.astype(np.int64) << np.arange(KEYS)).sum(axis=1)
    F = np.bincount(cells, minlength=2**KEYS)
    shares: dict[int, np.ndarray] = {}
    with progress(total=samples * len(SAMPLE_SIZES), desc="samples", unit="sample", quiet=quiet) as bar:
        for n in SAMPLE_SIZES:
            out = np.empty(samples)
            for s in range(samples):
                sample = cells[rng.choice(N, n, replace=False)]
                f = np.bincount(sample, minlength=2**KEYS)
                unique = sample[f[sample] == 1]
                out[s] = np.mean(F[unique] == 1)
                bar.update(1)
            shares[n] = out
    shares[0] = F  # the population counts, for the threshold figures
    return shares


def figure1(path: Path) -> Path:
    """Figure 1: ``P(F = 1 | f = 1) = exp(-lambda (1 - pi))`` against lambda, pi = 0.005 and 0.01.

    Parameters
    ----------
    path : pathlib.Path
        The PNG to write (overwritten atomically).

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:
    ...     png = figure1(Path(out) / "figure1.png")
    ...     print(png.name, png.read_bytes()[1:4] == b"PNG")
    figure1.png True
    """
    lam = np.linspace(0, 20, 401)
    fig = new_figure(FIGURES, figsize=(6, 4))
    ax = fig.subplots()
    for pi, style in ((0.005, "-"), (0.01, "--")):
        ax.plot(lam, population_unique_probability(lam, pi), style, label=f"pi = {pi:g}")
    ax.set_xlabel("expected population count lambda of the cell (persons)")
    ax.set_ylabel("P(PU | SU) (probability)")
    ax.set_title("Shlomo and Skinner (2012), Figure 1")
    ax.legend()
    fig.tight_layout()
    with atomic_path(path, force=True) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    return path


def run(out: Path, *, quick: bool, quiet: bool) -> dict[str, Any]:
    """The numerical example and Figure 1: write the table, the summary and the PNG.

    Parameters
    ----------
    out : pathlib.Path
        The output folder (files are overwritten).
    quick : bool
        20 samples of each size instead of 1000.
    quiet : bool
        Hide the progress bar.

    Returns
    -------
    dict
        k, N, the threshold ``2 eps^-1 log(2k / delta)`` (eps = delta = 1/3)
        and the population in cells below it, the number of population
        uniques, per sample size the simulated share (mean, sd, se) beside
        the Poisson model's and the paper's, the seed and the files.

    Examples
    --------
    One to two seconds even with ``quick`` (the population), so not run here:

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:                  # doctest: +SKIP
    ...     result = run(Path(out), quick=True, quiet=True)
    >>> round(result["threshold"], 1), result["paper_threshold"]    # doctest: +SKIP
    (77.3, 77.3)
    """
    samples = 20 if quick else 1000
    rng = np.random.default_rng(SEED)
    shares = simulate(samples, quiet=quiet, rng=rng)
    F = shares.pop(0)
    threshold = rare_cell_threshold(2**KEYS, epsilon=1 / 3, delta=1 / 3)
    rare = math.ceil(threshold) > F
    rows = []
    for n in SAMPLE_SIZES:
        s = shares[n]
        rows.append({
            "n": n,
            "sampling_fraction": n / N,
            "samples": samples,
            "share_su_pu_mean": float(s.mean()),
            "share_su_pu_sd": float(s.std(ddof=1)),
            "share_su_pu_se": float(s.std(ddof=1) / math.sqrt(samples)),
            "poisson_model_share": model_share(n / N),
            "paper_share": PAPER_SHARE[n],
        })
    csv_path = out / "shlomo2012_example.csv"
    header = list(rows[0])
    write_text_atomic(csv_path, ",".join(header) + "\n" + "".join(
        ",".join(f"{r[h]:.6g}" if isinstance(r[h], float) else str(r[h]) for h in header) + "\n" for r in rows
    ), force=True)
    fig_path = figure1(out / "shlomo2012_figure1.png")
    summary = {
        "cells": 2**KEYS,
        "population": N,
        "mean_population_cell_size_persons": N / 2**KEYS,
        "threshold": threshold,
        "paper_threshold": PAPER_THRESHOLD,
        "population_cells_below_threshold": int(rare.sum()),
        "population_share_in_cells_below_threshold": float(F[rare].sum() / N),
        "population_uniques": int((F == 1).sum()),
        "samples": rows,
        "seed": SEED,
        "files": {"table": str(csv_path), "figure1": str(fig_path)},
    }
    json_path = out / "shlomo2012_summary.json"
    write_text_atomic(json_path, json.dumps(summary, indent=2) + "\n", force=True)
    summary["files"]["summary"] = str(json_path)
    return summary
