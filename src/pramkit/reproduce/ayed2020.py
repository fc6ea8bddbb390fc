"""Tables 1-4 and Figures 1-6 of Ayed, Battiston and Camerlenghi (section 4).

* Tables 1-4 (section 4.1, scenarios I-IV): how many of the optimal q_k equal
  v_alpha, v_-alpha, v_min and v_max (Proposition 3.2), for alpha in
  {0.5, 1, 1.5, 2}; ours (exact global optimum, :func:`pramkit.design.dp.optimal.dp_optimal`)
  beside the paper's, with the mutual information of both.  The paper gives
  counts, not positions: its I is that of the best assignment of its values
  to the categories (every assignment scored).
* Figures 1-4: estimates of p from privatised samples (n = 10^4, 100
  repetitions) by maximum likelihood (:func:`pramkit.estimate.mle_estimate`).
  The released counts of a sample are drawn as one multinomial with
  probabilities ``p M``: the same law as drawing X_i ~ p and perturbing each.
* Figures 5-6 (section 4.2): the sex variable of the NY census, p = (0.48,
  0.52), alpha = 0.05, six q in J_alpha = [0.4875, 0.5125]; estimates of p
  for each q (n = 953 076 persons), and I(X; Z) as a function of q, exact
  and estimated by plug-in from the sample's (X, Z) counts.

Scenario III draws p from 30 Gamma(1, 5) variables with the documented seed
:data:`SCENARIO_III_SEED`; the paper's draw is not published.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from pramkit._extras import require_extra
from pramkit._figure import new_figure
from pramkit.atomic import atomic_path, write_text_atomic
from pramkit.design.dp.optimal import dp_optimal, v
from pramkit.estimate import mle_estimate
from pramkit.information import form8_objective, mutual_information_form8
from pramkit.matrix import PramMatrix
from pramkit.progress import progress

#: What draws the figures, for the message when matplotlib is missing (checked on import: before any work).
FIGURES = "pramkit reproduce ayed2020 (its figures)"
require_extra("report", FIGURES)

ALPHAS = (0.5, 1.0, 1.5, 2.0)
SCENARIO_III_SEED = 2020
MONTE_CARLO_SEED = 4
#: The paper's Tables 1-4: alpha -> (#v_alpha, #v_-alpha, #v_min, #v_max).
PAPER_COUNTS: dict[str, dict[float, tuple[int, int, int, int]]] = {
    "I": {0.5: (4, 6, 0, 0), 1.0: (5, 5, 0, 0), 1.5: (2, 8, 0, 0), 2.0: (0, 9, 0, 1)},
    "II": {0.5: (7, 3, 0, 0), 1.0: (6, 4, 0, 0), 1.5: (6, 4, 0, 0), 2.0: (0, 9, 0, 1)},
    "III": {0.5: (29, 0, 1, 0), 1.0: (29, 0, 1, 0), 1.5: (30, 0, 0, 0), 2.0: (29, 0, 1, 0)},
    "IV": {0.5: (0, 29, 0, 1), 1.0: (30, 0, 0, 0), 1.5: (30, 0, 0, 0), 2.0: (30, 0, 0, 0)},
}
SEX_P = np.array([0.48, 0.52])
SEX_ALPHA = 0.05
SEX_Q = (0.4875, 0.4925, 0.4975, 0.5025, 0.5075, 0.5125)
NY_PERSONS = 953_076


def scenarios() -> dict[str, np.ndarray]:
    """The four distributions of section 4.1.

    Scenarios I and II (10 categories) are the paper's; III is 30 Gamma(1, 5)
    draws, normalised, with the seed :data:`SCENARIO_III_SEED` (the paper's
    draw is not published); IV puts 0.05 on one category and the rest evenly
    on 29.

    Returns
    -------
    dict of str to numpy.ndarray
        ``"I"``, ``"II"``, ``"III"``, ``"IV"`` -> p, each summing to 1.

    Examples
    --------
    >>> p = scenarios()
    >>> {name: q.size for name, q in p.items()}
    {'I': 10, 'II': 10, 'III': 30, 'IV': 30}
    >>> all(math.isclose(q.sum(), 1.0) for q in p.values()), p["I"][:3].tolist()
    (True, [0.3, 0.1, 0.2])
    """
    g = np.random.default_rng(SCENARIO_III_SEED).gamma(shape=1.0, scale=5.0, size=30)
    return {
        "I": np.array([0.3, 0.1, 0.2, 0.08, 0.02, 0.04, 0.06, 0.1, 0.01, 0.09]),
        "II": np.array([0.0336, 0.1059, 0.1697, 0.0962, 0.0180, 0.0062, 0.1097, 0.0005, 0.1233, 0.3369]),
        "III": g / g.sum(),
        "IV": np.array([0.05] + [0.95 / 29] * 29),
    }


def special_values(s: int, alpha: float) -> tuple[float, float, float, float]:
    """(v_alpha, v_-alpha, v_min, v_max) of Proposition 3.2.

    ``v_x = e^x / (e^x + S - 1)``, ``v_min = e^-alpha / (e^alpha + S - 1)``,
    ``v_max = e^alpha / (e^-alpha + S - 1)``: the values the optimal q_k of
    form (8) take at a vertex of the feasible set.

    Parameters
    ----------
    s : int
        The number of categories S.
    alpha : float
        The privacy budget.

    Returns
    -------
    (float, float, float, float)
        v_alpha, v_-alpha, v_min, v_max.

    Examples
    --------
    >>> va, vma, vmin, vmax = special_values(10, 1.0)
    >>> math.isclose(va, math.e / (math.e + 9)), vmin < vma < va < vmax
    (True, True)
    """
    t, c = math.exp(alpha), s - 1
    return v(alpha, s), v(-alpha, s), math.exp(-alpha) / (t + c), t / (math.exp(-alpha) + c)


def value_counts(q: np.ndarray, alpha: float) -> tuple[int, int, int, int, int]:
    """How many q_k equal v_alpha, v_-alpha, v_min, v_max, and how many none of them.

    The columns of Tables 1-4 (section 4.1); a q_k counts as equal within 1e-9.

    Parameters
    ----------
    q : numpy.ndarray, shape (S,)
        The keep probabilities of a form (8) matrix.
    alpha : float
        The privacy budget the values are computed for.

    Returns
    -------
    (int, int, int, int, int)
        #v_alpha, #v_-alpha, #v_min, #v_max and #other.

    Examples
    --------
    Scenario I at alpha = 1: the exact optimum is randomized response (ten
    v_alpha); Table 1 reports five v_alpha and five v_-alpha.

    >>> from pramkit.design.dp.optimal import dp_optimal
    >>> value_counts(dp_optimal(scenarios()["I"], 1.0).diagonal, 1.0), PAPER_COUNTS["I"][1.0]
    ((10, 0, 0, 0, 0), (5, 5, 0, 0))
    """
    vals = special_values(q.size, alpha)
    a, b, c, d = (int(np.sum(np.abs(q - x) <= 1e-9)) for x in vals)
    return a, b, c, d, q.size - (a + b + c + d)


def arrangements(counts: tuple[int, ...], s: int) -> np.ndarray:
    """Every distinct assignment of labels 0, 1, ... with the given counts to S
    positions (one row each; a multinomial coefficient of rows).

    Parameters
    ----------
    counts : tuple of int
        How many positions get label 0, 1, ...; they sum to S.
    s : int
        The number of positions S.

    Returns
    -------
    numpy.ndarray, shape (S! / prod(counts!), S)
        One assignment per row.

    Examples
    --------
    >>> arrangements((1, 2), 3).tolist()
    [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    >>> len(arrangements((2, 2, 1), 5)) == math.factorial(5) // (2 * 2 * 1)
    True
    """
    rows: list[np.ndarray] = []

    def place(row: np.ndarray, free: list[int], label: int) -> None:
        if label == len(counts):
            rows.append(row.copy())
            return
        for chosen in itertools.combinations(free, counts[label]):
            row[list(chosen)] = label
            place(row, [f for f in free if f not in chosen], label + 1)

    place(np.zeros(s, dtype=np.intp), list(range(s)), 0)
    return np.array(rows)


def best_assignment(p: np.ndarray, alpha: float, counts: tuple[int, int, int, int]) -> tuple[float, np.ndarray]:
    """The most informative q with the given numbers of v_alpha, v_-alpha,
    v_min, v_max (every distinct assignment scored).

    The paper reports counts, not positions; this scores its Tables 1-4 by
    their best placement.

    Parameters
    ----------
    p : numpy.ndarray, shape (S,)
        The distribution.
    alpha : float
        The privacy budget.
    counts : (int, int, int, int)
        #v_alpha, #v_-alpha, #v_min, #v_max, summing to S.

    Returns
    -------
    (float, numpy.ndarray)
        I(X; Z) in nats (form (8), :func:`pramkit.information.form8_objective`)
        and the q attaining it.

    Examples
    --------
    One v_alpha among three categories goes to the smallest one here; the
    exact optimum (all v_alpha) keeps more information:

    >>> from pramkit.design.dp.optimal import dp_optimal
    >>> p = np.array([0.5, 0.3, 0.2])
    >>> info, q = best_assignment(p, 1.0, (1, 2, 0, 0))
    >>> round(info, 4), q.round(4).tolist()
    (0.0563, [0.1554, 0.1554, 0.5761])
    >>> info < dp_optimal(p, 1.0).provenance.objective
    True
    """
    qs = np.array(special_values(p.size, alpha))[arrangements(counts, p.size)]
    f = form8_objective(p, qs)
    i = int(np.argmax(f))
    return float(f[i]), qs[i]


def tables(quiet: bool) -> list[dict[str, Any]]:
    """Tables 1-4 recomputed: the exact optimum for each scenario and alpha beside the paper's counts.

    Parameters
    ----------
    quiet : bool
        Hide the progress bar.

    Returns
    -------
    list of dict
        One row per scenario and alpha in :data:`ALPHAS` (16): our counts
        (:func:`value_counts` of :func:`pramkit.design.dp.optimal.dp_optimal`),
        the paper's, both I(X; Z) in nats (the paper's by
        :func:`best_assignment`), the difference and how the optimum was searched.

    Examples
    --------
    The exact optimum is never below the paper's (a local optimiser's) and is
    strictly better in 12 of the 16 cases:

    >>> rows = tables(quiet=True)
    >>> len(rows), all(r["ours_mi_nats"] >= r["paper_mi_nats"] - 1e-12 for r in rows)
    (16, True)
    >>> sum(r["ours_better_by_nats"] > 1e-9 for r in rows)
    12
    """
    rows = []
    bar = progress(total=16, desc="tables", unit="design", quiet=quiet)
    for name, p in scenarios().items():
        for alpha in ALPHAS:
            m = dp_optimal(p, alpha)
            mi, certificate = m.provenance.objective, m.provenance.certificate
            assert mi is not None and certificate is not None  # dp_optimal certifies its objective
            ours = value_counts(m.diagonal, alpha)
            paper = PAPER_COUNTS[name][alpha]
            paper_mi, _ = best_assignment(p, alpha, paper)
            rows.append({
                "scenario": name, "alpha": alpha,
                "ours": {"v_alpha": ours[0], "v_-alpha": ours[1], "v_min": ours[2], "v_max": ours[3], "other": ours[4]},
                "paper": {"v_alpha": paper[0], "v_-alpha": paper[1], "v_min": paper[2], "v_max": paper[3]},
                "ours_mi_nats": float(mi),
                "paper_mi_nats": paper_mi,
                "ours_better_by_nats": float(mi) - paper_mi,
                "search": certificate["search"],
            })
            bar.update()
    bar.close()
    return rows


def _tables_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| scenario | alpha | ours: #v_a #v_-a #v_min #v_max | paper: #v_a #v_-a #v_min #v_max "
             "| I ours (nats) | I paper, best assignment (nats) |", "|---|---|---|---|---|---|"]
    for r in rows:
        o, p = r["ours"], r["paper"]
        lines.append(
            f"| {r['scenario']} | {r['alpha']} | {o['v_alpha']} {o['v_-alpha']} {o['v_min']} {o['v_max']}"
            + (f" (+{o['other']} other)" if o["other"] else "")
            + f" | {p['v_alpha']} {p['v_-alpha']} {p['v_min']} {p['v_max']} "
            f"| {r['ours_mi_nats']:.6f} | {r['paper_mi_nats']:.6f} |")
    return "\n".join(lines) + "\n"


def estimates(p: np.ndarray, matrix: PramMatrix, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """MLE of p from ``reps`` privatised samples of size n (one row per sample).

    The released counts of a sample are one multinomial draw with
    probabilities ``p M`` (the law of perturbing n records drawn from p); p
    is estimated by maximum likelihood (:func:`pramkit.estimate.mle_estimate`).

    Parameters
    ----------
    p : numpy.ndarray, shape (S,)
        The true distribution.
    matrix : PramMatrix
        M.
    n : int
        Sample size.
    reps : int
        Number of samples.
    rng : numpy.random.Generator
        The random source.

    Returns
    -------
    numpy.ndarray, shape (reps, S)
        The estimates, each a distribution.

    Examples
    --------
    >>> from pramkit.design.dp.optimal import dp_optimal
    >>> est = estimates(SEX_P, dp_optimal(SEX_P, 1.0), 10_000, 3, np.random.default_rng(0))
    >>> est.shape, bool(np.allclose(est.sum(axis=1), 1.0)), bool(np.allclose(est.mean(axis=0), SEX_P, atol=0.03))
    ((3, 2), True, True)
    """
    out = np.empty((reps, p.size))
    lam = p @ matrix.matrix
    for r in range(reps):
        released = rng.multinomial(n, lam / lam.sum()).astype(float)
        out[r] = mle_estimate(released, [matrix]).counts / n
    return out


def _figure(path: Path, panels: list[tuple[str, np.ndarray, np.ndarray]], title: str, ncols: int) -> Path:
    nrows = math.ceil(len(panels) / ncols)
    fig = new_figure(FIGURES, figsize=(5.0 * ncols, 3.6 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, (label, p, est) in zip(axes.ravel(), panels):
        x = np.arange(1, p.size + 1)
        for row in est:
            ax.plot(x, row, "*", color="tab:blue", markersize=3, alpha=0.3)
        ax.plot(x, est.mean(axis=0), "-", color="tab:red", label="mean estimate")
        ax.plot(x, p, "o", color="gold", markeredgecolor="k", label="true p")
        ax.set_title(label)
        ax.set_xlabel("category")
        ax.set_ylabel("probability")
    axes.ravel()[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_path(path, force=True) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    return path


def run(out: Path, *, quick: bool, quiet: bool) -> dict[str, Any]:
    """Regenerate the tables and figures in ``out``; returns the paths and key numbers.

    Parameters
    ----------
    out : pathlib.Path
        The output folder (files are overwritten).
    quick : bool
        4 repetitions of 2000 records (and 20 000 for the sex variable)
        instead of 100 of 10 000 (and the 953 076 persons of the census).
    quiet : bool
        Hide the progress bars.

    Returns
    -------
    dict
        ``files`` (``tables_json``, ``tables_md``, ``figure1`` .. ``figure6``),
        the tables, the number of paper tables beaten
        (``paper_tables_suboptimal``), and I(X; Z) of the sex variable for
        each q, exact and plug-in.

    Examples
    --------
    Several seconds even with ``quick``, so not run here:

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:          # doctest: +SKIP
    ...     result = run(Path(out), quick=True, quiet=True)
    >>> sorted(result["files"]), result["paper_tables_suboptimal"]        # doctest: +SKIP
    (['figure1', 'figure2', 'figure3', 'figure4', 'figure5', 'figure6', 'tables_json', 'tables_md'], 12)
    """
    out = Path(out)
    reps, n, n_sex = (4, 2_000, 20_000) if quick else (100, 10_000, NY_PERSONS)
    rng = np.random.default_rng(MONTE_CARLO_SEED)
    rows = tables(quiet)
    files = {
        "tables_json": str(write_text_atomic(out / "ayed2020_tables.json", json.dumps(rows, indent=2) + "\n", force=True)),
        "tables_md": str(write_text_atomic(out / "ayed2020_tables.md", _tables_markdown(rows), force=True)),
    }
    figures = {}
    bar = progress(total=16 + len(SEX_Q), desc="figures", unit="panel", quiet=quiet)
    for fig_no, (name, p) in enumerate(scenarios().items(), start=1):
        panels = []
        for alpha in ALPHAS:
            m = dp_optimal(p, alpha)
            panels.append((f"alpha = {alpha}", p, estimates(p, m, n, reps, rng)))
            bar.update()
        figures[f"figure{fig_no}"] = str(_figure(
            out / f"ayed2020_figure{fig_no}.png", panels,
            f"Scenario {name}: MLE of p from privatised samples (n = {n}, {reps} repetitions)", 2))
    sex_panels, mi_hat = [], []
    for q in SEX_Q:
        m = PramMatrix.from_diagonal([q, q])
        sex_panels.append((f"q = {q}", SEX_P, estimates(SEX_P, m, n_sex, reps, rng)))
        joint = rng.multinomial(n_sex, (SEX_P[:, None] * m.matrix).ravel(), size=reps).reshape(reps, 2, 2) / n_sex
        px, pz = joint.sum(axis=2), joint.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(joint > 0, joint * np.log(joint / (px[:, :, None] * pz[:, None, :])), 0.0)
        mi_hat.append(terms.sum(axis=(1, 2)))
        bar.update()
    bar.close()
    figures["figure5"] = str(_figure(out / "ayed2020_figure5.png", sex_panels,
                                     f"NY sex, alpha = {SEX_ALPHA}: MLE of p (n = {n_sex}, {reps} repetitions)", 3))
    figures["figure6"] = str(_figure6(out / "ayed2020_figure6.png", np.array(mi_hat)))
    exact = {q: mutual_information_form8(SEX_P, [q, q]) for q in SEX_Q}
    return {
        "reproduction": "ayed2020",
        "quick": quick,
        "repetitions": reps,
        "sample_size": n,
        "files": {**files, **figures},
        "tables": [{k: r[k] for k in ("scenario", "alpha", "ours", "paper", "ours_mi_nats", "paper_mi_nats")}
                   for r in rows],
        "paper_tables_suboptimal": sum(r["ours_better_by_nats"] > 1e-9 for r in rows),
        "sex_mutual_information_nats": {str(q): exact[q] for q in SEX_Q},
        "sex_mutual_information_plugin_nats": {str(q): float(m.mean()) for q, m in zip(SEX_Q, mi_hat)},
        "scenario_iii_seed": SCENARIO_III_SEED,
    }


def _figure6(path: Path, mi_hat: np.ndarray) -> Path:
    lo, hi = 1 / (1 + math.exp(SEX_ALPHA)), math.exp(SEX_ALPHA) / (1 + math.exp(SEX_ALPHA))
    grid = np.linspace(lo, hi, 201)
    exact = form8_objective(SEX_P, np.stack([grid, grid], axis=1))
    fig = new_figure(FIGURES, figsize=(6, 4))
    ax = fig.subplots()
    ax.plot(grid, exact, "-", color="tab:blue", label="exact I(X;Z)")
    ax.errorbar(SEX_Q, mi_hat.mean(axis=1), yerr=mi_hat.std(axis=1), fmt="o", color="tab:red",
                label="plug-in estimate (mean +- sd)")
    ax.set_xlabel("q")
    ax.set_ylabel("mutual information (nats)")
    ax.set_title(f"NY sex, alpha = {SEX_ALPHA}: I(X;Z) over J_alpha")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path, force=True) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    return path
