"""Geographic PRAM: design time and distance moved against randomized response.

On the synthetic geography of :func:`pramkit.datasets.census_areas` (areas on
a 100 km square, clustered in five towns; p = the areas' population shares):

* the distance-optimal epsilon-DP design (:func:`pramkit.design.dp.distance.dp_min_distance`,
  a certified LP) for S = 100 and 1000;
* the exponential mechanism (:func:`pramkit.design.metric.mechanisms.exponential_mechanism`, closed form)
  for S = 100, 1000 and 10 000, at the metric epsilon ``eps / d_max`` so that its pure
  epsilon is at most eps; and the truncated geometric mechanism on 10 000 ordered
  categories at ``eps / (S - 1)`` per step;
* the least-distance metric-DP matrix (:func:`pramkit.design.dp.distance.metric_min_distance`,
  LP with the spanner reduction) at the same metric epsilon, for each spanner dilation of
  ``--dilation``, beside the exponential mechanism; and on an n x n grid of areas bordering
  their four neighbours (a path metric: the reduction is exact), p uniform, against the LP with
  every pair's constraint written out (``--full-grid``);
* the worst-case objective of the distance-optimal epsilon-DP design (p = None,
  ``objective="worst"``) beside the uniform average's design;
* what the release report computes for an area variable (``--report``): the privacy-utility
  curve of randomized response on S areas (the report's 25 points), as a ratio to one
  ``numpy.linalg.inv`` of an S x S matrix, and the frequency chart of S areas, as a ratio to
  Pillow writing the chart's pixels as a PNG, both measured in the same run.

For each, at pure epsilon 1, 2 and 4: design time, whether the certificate
proved optimality, and the expected distance moved (km), the share kept and
the share moved at most 5 km, each as a ratio to randomized response at the
same (stored) epsilon.  ``--plot`` draws where the values of one area move
(``docs/geo-moves.png``).

Usage: python benchmarks/bench_geo.py [--lp 100,1000] [--closed 100,1000,10000] [--eps 1,2,4]
       [--metric 100,200] [--dilation 1.05,1.1,1.2] [--grid 6,10] [--full-grid 6] [--worst 100,300]
       [--within 5] [--report 300] [--plot docs/geo-moves.png] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from pramkit.datasets import census_areas
from pramkit.design.classic import randomized_response
from pramkit.design.dp.distance import dp_min_distance, metric_min_distance
from pramkit.design.metric.mechanisms import compare_with_rr, exponential_mechanism, geo_utility, truncated_geometric
from pramkit.distances import Distances, euclidean_distances, graph_distances, ordinal_distances
from pramkit.engine.perturb import perturb_codes
from pramkit.engine.sampling import sampler_for
from pramkit.kernel.rng import SecretKey


def geography(n: int):
    areas = census_areas(n)
    d = euclidean_distances(areas["category"], areas[["x", "y"]].to_numpy(), unit="km", source="census_areas")
    p = areas["share"].to_numpy()
    return areas, d, p / p.sum()


#: Values perturbed to time a design's release (apply throughput).
APPLY_ROWS = 1_000_000
KEY = SecretKey(bytes(32), "benchmark")


def apply_timing(m, p) -> tuple[float, float, float]:
    """Seconds to build the design's sampler and to perturb APPLY_ROWS values drawn from p, and the
    floor measured beside them: NumPy drawing as many uniforms."""
    rng = np.random.default_rng(0)
    codes = rng.choice(m.size, APPLY_ROWS, p=p)
    t0 = time.perf_counter()
    rng.random(APPLY_ROWS)
    floor = time.perf_counter() - t0
    t0 = time.perf_counter()
    sampler = sampler_for(m)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    perturb_codes(codes, sampler, key=KEY, variable="area")
    return build, time.perf_counter() - t0, floor


def row(kind: str, s: int, eps: float, seconds: float, m, d, p, within: float) -> dict:
    cmp = compare_with_rr(m, d, p, within=within)
    build, draw, floor = apply_timing(m, p)
    cert = m.provenance.certificate or {}
    out = {
        "design": kind, "S": s, "epsilon": eps, "stored_epsilon": m.epsilon, "seconds": seconds,
        "optimal": cert.get("optimal"), "certified_gap": cert.get("certified_gap"), "tolerance": cert.get("tolerance"),
        "metric_dp_verified": cert.get("metric_dp_verified"),
        "expected_distance": cmp["design"]["expected_distance"],
        "rr_expected_distance": cmp["randomized_response"]["expected_distance"],
        "distance_ratio": cmp["distance_ratio"], "share_kept": cmp["design"]["share_kept"],
        "rr_share_kept": cmp["randomized_response"]["share_kept"], "kept_ratio": cmp["kept_ratio"],
        "within_ratio": cmp.get("within_ratio"), "outputs_used": int((m.matrix.max(axis=0) > 0).sum()),
        "sampler_seconds": build, "apply_seconds": draw, "apply_floor_ratio": draw / floor,
    }
    proved = out["optimal"] if kind in ("lp", "worst", "metric-lp") else out["metric_dp_verified"]
    print(f"{kind:>12} {s:>6} {eps:>4g} {seconds:>9.2f} {str(proved):>8}"
          f" {out['expected_distance']:>9.3f} {out['rr_expected_distance']:>9.3f} {out['distance_ratio']:>7.3f}"
          f" {out['share_kept']:>7.4f} {out['rr_share_kept']:>7.4f} {out['kept_ratio']:>7.3f}"
          f" {out['within_ratio'] if out['within_ratio'] is not None else float('nan'):>7.3f} {out['outputs_used']:>6}"
          f" {build:>8.2f} {draw / floor:>7.1f}", flush=True)
    return out


def grid(n: int) -> Distances:
    """n x n areas, each bordering its four neighbours (hops)."""
    names = [f"{i},{j}" for i in range(n) for j in range(n)]
    pairs = ([(f"{i},{j}", f"{i + 1},{j}") for i in range(n - 1) for j in range(n)]
             + [(f"{i},{j}", f"{i},{j + 1}") for i in range(n) for j in range(n - 1)])
    return graph_distances(names, pairs, source=f"{n} x {n} grid")


def full_metric_lp(d: np.ndarray, eps_d: float) -> tuple[float, float]:
    """The uniform-average metric-DP LP with every (x, x', z) constraint written out: (optimum, seconds)."""
    t0 = time.perf_counter()
    s = d.shape[0]
    first, second = np.array(list(itertools.permutations(range(s), 2))).T
    k = first.size
    z = np.tile(np.arange(s), k)
    rows = np.repeat(np.arange(k * s), 2)
    cols = np.column_stack([np.repeat(first, s) * s + z, np.repeat(second, s) * s + z]).ravel()
    vals = np.column_stack([np.ones(k * s), -np.repeat(np.exp(eps_d * d[first, second]), s)]).ravel()
    a_ub = sp.csr_matrix((vals, (rows, cols)), shape=(k * s, s * s))
    a_eq = sp.csr_matrix((np.ones(s * s), (np.repeat(np.arange(s), s), np.arange(s * s))), shape=(s, s * s))
    res = linprog((d / s).ravel(), A_ub=a_ub, b_ub=np.zeros(k * s), A_eq=a_eq, b_eq=np.ones(s), bounds=(0, None),
                  method="highs-ipm")
    return float(res.fun), time.perf_counter() - t0


def metric_rows(d: Distances, p, eps_list: list[float], dilations: list[float], within: float,
                full_max: int) -> list[dict]:
    out = []
    for eps in eps_list:
        eps_d = eps / d.max
        expo = geo_utility(exponential_mechanism(d, eps_d), d, p).expected_distance
        for dilation in (dilations if d.edges is None else [1.0]):
            t0 = time.perf_counter()
            m = metric_min_distance(p, eps_d, d, dilation=dilation)
            r = row("metric-lp", d.size, eps, time.perf_counter() - t0, m, d, p, within)
            cert = m.provenance.certificate
            r.update(dilation=dilation, reduction=cert["reduction"], edges=cert["constraint_edges"],
                     ratio_to_lower_bound=cert["ratio_to_lower_bound"], exponential_distance=expo,
                     ratio_to_exponential=r["expected_distance"] / expo)
            if d.edges is not None and d.size <= full_max:
                r["full_lp"], r["full_seconds"] = full_metric_lp(d.matrix, eps_d)
            print(f"{'':>12} dilation {dilation:g}: {cert['constraint_edges']} edges, {cert['reduction']}; "
                  f"/ lower bound {cert['ratio_to_lower_bound']:.4f}; / exponential {r['ratio_to_exponential']:.3f}"
                  + (f"; full LP {r['full_lp']:.6f} in {r['full_seconds']:.1f} s" if "full_lp" in r else ""),
                  flush=True)
            out.append(r)
    return out


def worst_rows(s: int, eps_list: list[float], within: float) -> list[dict]:
    out = []
    _, d, _ = geography(s)
    for eps in eps_list:
        t0 = time.perf_counter()
        m = dp_min_distance(None, eps, d, objective="worst")
        r = row("worst", s, eps, time.perf_counter() - t0, m, d, None, within)
        average = dp_min_distance(None, eps, d).provenance.certificate
        r.update(worst_case_distance=m.provenance.objective, average_design_worst=average["worst_case_distance"],
                 average_design_average=average["expected_distance"],
                 worst_design_average=m.provenance.certificate["expected_distance"])
        print(f"{'':>12} worst case {r['worst_case_distance']:.3f} km (the average's design: "
              f"{r['average_design_worst']:.3f}); uniform average {r['worst_design_average']:.3f} km "
              f"(the average's design: {r['average_design_average']:.3f})", flush=True)
        out.append(r)
    return out


def plot(path: Path, eps: float = 4.0, n: int = 300) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    areas, d, p = geography(n)
    xy = areas[["x", "y"]].to_numpy()
    lp = dp_min_distance(p, eps, d).matrix
    ex = exponential_mechanism(d, eps / d.max).matrix
    # an area of the largest town, on its edge (the 90th percentile of distance from its centre)
    town = np.flatnonzero(areas["town"].to_numpy() == 0)
    reach = np.hypot(*(xy[town] - xy[town].mean(axis=0)).T)
    x = int(town[np.argsort(reach)[int(0.9 * (town.size - 1))]])
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.4), sharex=True, sharey=True)
    for ax, m, title in ((axes[0], lp, f"distance-optimal epsilon-DP (epsilon {eps:g})"),
                         (axes[1], ex, f"exponential mechanism (pure epsilon <= {eps:g})")):
        ax.scatter(xy[:, 0], xy[:, 1], s=4, c="0.8", linewidths=0)
        w = m[x]
        big = w > 1e-4
        ax.scatter(xy[big, 0], xy[big, 1], s=2000 * w[big], c="tab:blue", alpha=0.55, linewidths=0)
        ax.scatter([xy[x, 0]], [xy[x, 1]], marker="x", c="tab:red", s=40)
        ax.set_title(f"{title}\nkept {w[x]:.3f}, moved {float(w @ d.matrix[x]):.1f} km on average", fontsize=9)
        ax.set_aspect("equal")
        ax.set_xlabel("km")
    axes[0].set_ylabel("km")
    fig.suptitle(f"Where the values of area {areas['category'][x]} (x) go: disc area = probability "
                 f"({n} areas, p = population)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    print(f"wrote {path}")


def report_rows(s: int) -> None:
    """CPU seconds of the report's curve and frequency chart of S areas, each against its floor."""
    import io

    import pandas as pd
    from PIL import Image

    from pramkit.report.build import CURVE_MIN_EPSILON, CURVE_POINTS, VariableUtility
    from pramkit.report.plots import frequency_chart
    from pramkit.utility import privacy_utility_curve

    _, _, p = geography(s)
    grid = np.geomspace(CURVE_MIN_EPSILON, 10.0, CURVE_POINTS)
    dense = randomized_response(range(s), 1.0).matrix

    def cpu(fn) -> float:
        times = []
        for _ in range(3):
            t0 = time.process_time()
            fn()
            times.append(time.process_time() - t0)
        return min(times)

    curve, inverse = cpu(lambda: privacy_utility_curve(p, grid, n=5000)), cpu(lambda: np.linalg.inv(dense))
    print(f"report curve, S = {s}, {CURVE_POINTS} points: {curve:.4f} s CPU, {curve / inverse:.1f} x one "
          f"{s} x {s} inverse ({inverse:.4f} s)")
    shares = 100 * p
    frame = pd.DataFrame({"category": [f"A{i:03d}" for i in range(s)], "original": shares, "released": shares,
                          "estimate": shares, "ci_low": 0.8 * shares, "ci_high": 1.2 * shares})
    utility = VariableUtility("area", 1.0, 0.5, frame, None, "")
    chart = cpu(lambda: frequency_chart(utility))
    pixels = np.asarray(Image.open(io.BytesIO(frequency_chart(utility))))
    floor = cpu(lambda: Image.fromarray(pixels).save(io.BytesIO(), format="png"))
    print(f"report frequency chart, S = {s}: {chart:.2f} s CPU, {chart / floor:.1f} x writing its "
          f"{pixels.shape[1]} x {pixels.shape[0]} pixels as a PNG ({floor:.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lp", default="100,1000", help="sizes for the LP design")
    ap.add_argument("--closed", default="100,1000,10000", help="sizes for the closed-form mechanisms")
    ap.add_argument("--eps", default="1,2,4")
    ap.add_argument("--metric", default="100", help="sizes of the geography for the metric-DP LP")
    ap.add_argument("--dilation", default="1.05,1.1,1.2", help="spanner dilations of the metric-DP LP")
    ap.add_argument("--grid", default="6,10", help="grid sides n (n x n areas, adjacency) for the metric-DP LP")
    ap.add_argument("--full-grid", type=int, default=6, help="largest grid side also solved with every pair")
    ap.add_argument("--worst", default="100,300", help="sizes for the worst-case objective")
    ap.add_argument("--within", type=float, default=5.0, help="radius (km) of the share moved at most that far")
    ap.add_argument("--report", default="300", help="sizes for the report's curve and frequency chart")
    ap.add_argument("--plot", type=Path, help="write the PNG of where one area's values move")
    ap.add_argument("--json", type=Path, help="write the rows as JSON")
    args = ap.parse_args()
    eps_list = [float(e) for e in args.eps.split(",") if e]
    rows = []
    print(f"{'design':>12} {'S':>6} {'eps':>4} {'seconds':>9} {'proved':>8} {'E[d] km':>9} {'RR km':>9}"
          f" {'ratio':>7} {'kept':>7} {'RR kept':>7} {'ratio':>7} {'<=r':>7} {'outs':>6}"
          f" {'sampler':>8} {'apply':>7}")
    print(f"(sampler: seconds to build the design's sampler; apply: perturbing {APPLY_ROWS:,} values, as a ratio to "
          "NumPy drawing as many uniforms in the same run)")
    for s in [int(x) for x in args.lp.split(",") if x]:
        _, d, p = geography(s)
        for eps in eps_list:
            t0 = time.perf_counter()
            m = dp_min_distance(p, eps, d)
            rows.append(row("lp", s, eps, time.perf_counter() - t0, m, d, p, args.within))
    for s in [int(x) for x in args.closed.split(",") if x]:
        _, d, p = geography(s)
        for eps in eps_list:
            t0 = time.perf_counter()
            m = exponential_mechanism(d, eps / d.max)
            rows.append(row("exponential", s, eps, time.perf_counter() - t0, m, d, p, args.within))
            del m
        del d
    big = max([int(x) for x in args.closed.split(",") if x] or [0])
    if big:
        cats = list(range(big))
        od = ordinal_distances(cats)
        for eps in eps_list:
            t0 = time.perf_counter()
            m = truncated_geometric(cats, eps / (big - 1))
            rows.append(row("geometric", big, eps, time.perf_counter() - t0, m, od, None, 1.0))
            del m
    dilations = [float(x) for x in args.dilation.split(",") if x]
    for s in [int(x) for x in args.metric.split(",") if x]:
        _, d, p = geography(s)
        rows += metric_rows(d, p, eps_list, dilations, args.within, 0)
    for n in [int(x) for x in args.grid.split(",") if x]:
        rows += metric_rows(grid(n), None, eps_list, dilations, 1.0, args.full_grid ** 2)
    for s in [int(x) for x in args.worst.split(",") if x]:
        rows += worst_rows(s, eps_list, args.within)
    for s in [int(x) for x in args.report.split(",") if x]:
        report_rows(s)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.plot:
        plot(args.plot)


if __name__ == "__main__":
    main()
