"""The 48-cell example of Cator, Hensbergen and Rozenholc, section 4, recomputed.

X = {0,1}^4 x {0,1,2} (48 types; the 10 combinations of three variables give
104 pairs (pi, k0)), n = 2500 records, alpha = 0.1.  The paper's file is not
published; it says only that "some probability structure" gave 17 types with
``0 < U_0(m) < 10``.  Ours: the four binary variables independent with
``P(xi_j = 1) = 0.9, 0.85, 0.8, 0.75`` and the ternary one independent with
probabilities (0.5, 0.3, 0.2), drawn with ``numpy.random.default_rng(SEED)``;
SEED = 6 is the first seed in 0..99 whose file has, like the paper's, 17 rare
types and 5 problem combinations (``0 < U_pi(k0) < 10``).

Reported beside the paper's figures: the smallest diagonal entry, the
expected number of changed records, l2(P), where the changed records go,
the share of changes coming from the three most frequent types, and
Figure 1 (probability of change against frequency) as a PNG; plus the
uniform-noise baseline at the same alpha.  ``quick`` computes only the
restricted-support design (a fraction of a second); otherwise the full
48 x 48 optimisation (about a minute and a half) is added for comparison.

Output: ``cator_summary.json``, ``cator_summary.md``, ``cator_destinations.csv``,
``cator_figure1.png`` in the output folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from pramkit._extras import require_extra
from pramkit._figure import new_figure
from pramkit.atomic import atomic_path, write_text_atomic
from pramkit.recognition.design import RecognitionDesign, recognition_design

#: What draws the figures, for the message when matplotlib is missing (checked on import: before any work).
FIGURES = "pramkit reproduce cator (its figures)"
require_extra("report", FIGURES)

#: The example's key space and size.
SHAPE = (2, 2, 2, 2, 3)
N = 2500
ALPHA = 0.1
#: P(xi_j = 1) of the four binary variables, and the distribution of the ternary one.
P_ONE = (0.9, 0.85, 0.8, 0.75)
P_TERNARY = (0.5, 0.3, 0.2)
SEED = 6

#: The paper's figures (section 4).
PAPER = {
    "rare_types": 17,
    "problem_combinations": 5,
    "min_diagonal": 0.9971,
    "expected_changes": 4.0,
    "l2_loss": 6.4e-7,
    "destination_share_top3": 0.99999,
    "changes_from_top3_frequent": 0.88,
}


def example_counts(seed: int = SEED) -> np.ndarray:
    """The table of counts U_0 (shape 2 x 2 x 2 x 2 x 3) of the generated file.

    N records with independent keys: four binary ones with ``P(xi_j = 1)`` =
    :data:`P_ONE`, a ternary one with distribution :data:`P_TERNARY`.

    Parameters
    ----------
    seed : int
        Seed of :func:`numpy.random.default_rng` (default :data:`SEED`).

    Returns
    -------
    numpy.ndarray, shape (2, 2, 2, 2, 3)
        The counts (float), summing to N.

    Examples
    --------
    Like the paper's file, the default one has 17 rare types
    (``0 < U_0(m) < 1/alpha = 10``):

    >>> u0 = example_counts()
    >>> u0.shape, int(u0.sum()), int(((u0 > 0) & (u0 < 1 / ALPHA)).sum())
    ((2, 2, 2, 2, 3), 2500, 17)
    """
    rng = np.random.default_rng(seed)
    binary = (rng.random((N, 4)) < np.asarray(P_ONE)).astype(np.int64)
    ternary = rng.choice(3, size=N, p=P_TERNARY)
    cells = np.ravel_multi_index((*binary.T, ternary), SHAPE)
    return np.bincount(cells, minlength=int(np.prod(SHAPE))).reshape(SHAPE).astype(float)


def summary(design: RecognitionDesign) -> dict[str, Any]:
    """The paper's figures for one design.

    Parameters
    ----------
    design : RecognitionDesign
        A design (of the example, or any other: ``n2_l2_over_changes`` uses its own n).

    Returns
    -------
    dict
        The method, the smallest diagonal entry (all rows and occurring
        types), the expected number of changed records, l2, the worst
        posterior, the five largest destinations and the share of the
        three largest, the share of changes coming from the three most
        frequent types, the time, the solver's status and the certified gap.

    Examples
    --------
    The restricted design of section 4's example keeps every diagonal entry
    above 0.998 and changes 3 records, expected (the paper: 0.9971 and 4):

    >>> from pramkit.recognition.design import recognition_design
    >>> s = summary(recognition_design(example_counts(), alpha=ALPHA, method="restricted"))
    >>> s["method"], round(s["min_diagonal"], 4), round(s["expected_changes_records"], 2)
    ('restricted', 0.9988, 3.0)
    >>> s["worst_posterior"] <= ALPHA, round(s["destination_share_top3"], 6)
    (True, 1.0)
    """
    u0 = design.space.counts
    occ = design.space.occurring
    change = design.change_probability
    moved = u0 * change
    top3 = occ[np.argsort(-u0[occ], kind="stable")[:3]]
    dest = design.destinations()
    return {
        "method": design.diagnostics.method,
        "min_diagonal": float(1.0 - change.max()),
        "min_diagonal_occurring_types": float(1.0 - change[occ].max()),
        "expected_changes_records": design.expected_changes,
        "l2_loss": design.loss,
        "n2_l2_over_changes": design.loss * design.space.n ** 2 / design.expected_changes
        if design.expected_changes else None,
        "worst_posterior": design.worst_posterior,
        "destinations": [{"cell": list(c), "share": float(s)} for c, s in zip(dest["cell"][:5], dest["share"][:5])],
        "destination_share_top3": float(dest["share"][:3].sum()),
        "changes_from_top3_frequent": float(moved[top3].sum() / moved.sum()) if moved.sum() > 0 else 0.0,
        "seconds": design.diagnostics.seconds,
        "solver_status": design.diagnostics.status,
        "gap_records": design.diagnostics.gap,
    }


def plot_figure1(designs: list[RecognitionDesign], path: Path) -> Path:
    """Figure 1: probability of change against frequency U_0(m), occurring types.

    Parameters
    ----------
    designs : list of RecognitionDesign
        One or two designs (markers ``o`` and ``x``).
    path : pathlib.Path
        The PNG to write (overwritten atomically).

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> from pramkit.recognition.design import recognition_design
    >>> design = recognition_design(np.array([[30.0, 1.0], [40.0, 20.0]]), alpha=0.3, combinations=2)
    >>> with tempfile.TemporaryDirectory() as out:
    ...     png = plot_figure1([design], Path(out) / "figure1.png")
    ...     print(png.name, png.read_bytes()[1:4] == b"PNG")
    figure1.png True
    """

    fig = new_figure(FIGURES, figsize=(6.4, 4.2), layout="constrained")
    ax = fig.subplots()
    for design, marker in zip(designs, ("o", "x")):
        occ = design.space.occurring
        ax.plot(design.space.counts[occ], design.change_probability[occ], marker, linestyle="none",
                label=f"{design.diagnostics.method} ({design.expected_changes:.2f} expected changes)")
    ax.set_xlabel("frequency U_0(m) [records]")
    ax.set_ylabel("probability of change 1 - P[m, m]")
    ax.set_title(f"Probability of change against frequency (n = {N}, alpha = {ALPHA})")
    ax.grid(True, alpha=0.3)
    ax.legend()
    with atomic_path(path, force=True) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    return path


def _markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Cator, Hensbergen and Rozenholc, section 4 example, recomputed",
        "",
        f"X = {{0,1}}^4 x {{0,1,2}} (48 types), n = {N}, alpha = {ALPHA}; generated file (seed {SEED}): "
        f"{result['rare_types']} rare types (paper 17), {result['problem_combinations']} problem combinations "
        f"(paper 5), {result['pairs']} pairs (pi, k0) (paper 104).",
        "",
        "| figure | paper | " + " | ".join(d["method"] for d in result["designs"]) + " | uniform noise |",
        "|---|---|" + "---|" * (len(result["designs"]) + 1),
    ]
    base = result["baseline"]
    rows = [
        ("smallest diagonal entry, occurring types", PAPER["min_diagonal"], "min_diagonal_occurring_types",
         1.0 - base["weight"] * (1 - 1 / 48)),
        ("smallest diagonal entry, all 48 rows", PAPER["min_diagonal"], "min_diagonal", 1.0 - base["weight"] * (1 - 1 / 48)),
        ("expected changed records [records]", PAPER["expected_changes"], "expected_changes_records",
         base["expected_changes_records"]),
        ("l2 loss [proportion^2]", PAPER["l2_loss"], "l2_loss", base["l2_loss"]),
        ("share of changes into the top-3 destinations", PAPER["destination_share_top3"], "destination_share_top3", None),
        ("share of changes from the 3 most frequent types", PAPER["changes_from_top3_frequent"],
         "changes_from_top3_frequent", None),
    ]
    for label, paper, key, b in rows:
        cells = [f"{d[key]:.4g}" for d in result["designs"]]
        lines.append(f"| {label} | {paper:g} | " + " | ".join(cells) + f" | {'' if b is None else f'{b:.4g}'} |")
    lines += ["", "Destinations (largest first): " + "; ".join(
        f"{d['method']}: " + ", ".join(f"{tuple(x['cell'])} {x['share']:.3f}" for x in d["destinations"][:3])
        for d in result["designs"])]
    return "\n".join(lines) + "\n"


def run(out: Path, *, quick: bool, quiet: bool) -> dict:
    """Write the summary, the destinations and Figure 1; return the key numbers.

    ``quick`` skips the full 48 x 48 optimisation; ``quiet`` changes nothing (no progress bar).

    Parameters
    ----------
    out : pathlib.Path
        The output folder (files are overwritten).
    quick : bool
        Only the restricted-support design.
    quiet : bool
        Unused.

    Returns
    -------
    dict
        n, alpha, the seed, the rare types, problem combinations and pairs
        (pi, k0) of the file, :func:`summary` of each design, the
        uniform-noise baseline, the paper's figures and the files written.

    Examples
    --------
    About a second even with ``quick`` (the design and the PNG), so not run here:

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:                  # doctest: +SKIP
    ...     result = run(Path(out), quick=True, quiet=True)
    >>> result["rare_types"], result["problem_combinations"], result["pairs"]      # doctest: +SKIP
    (17, 5, 104)
    """
    out = Path(out)
    counts = example_counts()
    designs = [recognition_design(counts, alpha=ALPHA, method="restricted")]
    if not quick:
        designs.append(recognition_design(counts, alpha=ALPHA, method="full"))
    first = designs[0]
    base = first.baseline
    result: dict[str, Any] = {
        "n": N,
        "alpha": ALPHA,
        "seed": SEED,
        "rare_types": first.diagnostics.rare_types,
        "problem_combinations": first.diagnostics.problem_combinations,
        "pairs": sum(int(np.prod([SHAPE[a] for a in c])) for c in
                     [tuple(first.space.keys.index(k) for k in combo) for combo in first.combinations]),
        "designs": [summary(d) for d in designs],
        "baseline": {"weight": base.weight, "worst_posterior": base.worst_posterior, "l2_loss": base.loss,
                     "expected_changes_records": base.expected_changes},
        "paper": PAPER,
    }
    dest = first.destinations()
    csv_text = "cell,records_in,share,count\n" + "".join(
        f"\"{tuple(c)}\",{r:.6g},{s:.6g},{int(u)}\n" for c, r, s, u in dest.itertuples(index=False))
    files = [
        write_text_atomic(out / "cator_summary.json", json.dumps(result, indent=2) + "\n", force=True),
        write_text_atomic(out / "cator_summary.md", _markdown(result), force=True),
        write_text_atomic(out / "cator_destinations.csv", csv_text, force=True),
        plot_figure1(designs, out / "cator_figure1.png"),
    ]
    result["files"] = [str(f) for f in files]
    return result
