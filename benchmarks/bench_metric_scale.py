"""The metric design (exponential mechanism over centroids) at scale, end to end through the CLI.

Writes a centroid CSV of S areas (a seeded jittered grid) and a data file of N records whose
``area`` column draws the areas, then times ``pramkit design --method metric`` (the exponential
mechanism stored by its rate and the centroids: no S x S array) and ``pramkit apply`` (each row of
the law computed once from the centroids and sampled exactly).  The floor, measured in the same
run, is NumPy computing the S rows ``exp(-d / 2)`` of the distances once and drawing N uniforms:
the least any exact sampler of this mechanism must do; the ratio is the CLI's time over it.

Usage: python benchmarks/bench_metric_scale.py [--areas 10000] [--records 1000000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def centroids(areas: int, seed: int = 0) -> np.ndarray:
    """A jittered square grid of ``areas`` points, 1 km apart (coordinates in km)."""
    side = int(np.ceil(np.sqrt(areas)))
    grid = np.stack(np.meshgrid(np.arange(side), np.arange(side)), axis=-1).reshape(-1, 2)[:areas].astype(float)
    return grid + np.random.default_rng(seed).uniform(-0.3, 0.3, grid.shape)


def floor_seconds(xy: np.ndarray, records: int) -> float:
    t0 = time.perf_counter()
    for start in range(0, len(xy), 256):
        block = xy[start:start + 256]
        d = np.hypot(block[:, None, 0] - xy[None, :, 0], block[:, None, 1] - xy[None, :, 1])
        np.cumsum(np.exp(d * -0.25), axis=1)
    np.random.default_rng(0).random(records)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--areas", type=int, default=10_000)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--metric-epsilon", type=float, default=0.5)
    args = ap.parse_args()
    xy = centroids(args.areas)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        names = [f"A{i:05d}" for i in range(args.areas)]
        with open(d / "centroids.csv", "w") as f:
            f.write("category,x,y\n" + "".join(f"{n},{x!r},{y!r}\n" for n, (x, y) in zip(names, xy.tolist())))
        codes = np.random.default_rng(1).integers(0, args.areas, args.records)
        with open(d / "data.csv", "w") as f:
            f.write("area\n" + "\n".join(names[c] for c in codes) + "\n")
        with open(d / "codebook.csv", "w") as f:
            f.write("variable,category\n" + "".join(f"area,{n}\n" for n in names))
        cli = [sys.executable, "-m", "pramkit"]
        t0 = time.perf_counter()
        subprocess.run([*cli, "design", str(d / "data.csv"), "--vars", "area", "--method", "metric",
                        "--categories", str(d / "codebook.csv"), "--distances", str(d / "centroids.csv"),
                        "--metric-epsilon", str(args.metric_epsilon),
                        "--out", str(d / "manifest.json"), "--quiet"], check=True)
        design = time.perf_counter() - t0
        (d / "key").write_bytes(bytes(range(32)))
        t0 = time.perf_counter()
        subprocess.run([*cli, "apply", str(d / "data.csv"), "--manifest", str(d / "manifest.json"),
                        "--key-file", str(d / "key"), "--out", str(d / "released.csv"), "--quiet"], check=True)
        apply = time.perf_counter() - t0
    floor = floor_seconds(xy, args.records)
    from pramkit.design.metric.mechanisms import exponential_mechanism
    from pramkit.distances import euclidean_distances
    from pramkit.engine.perturb import perturb_codes
    from pramkit.kernel.rng import SecretKey

    t0 = time.perf_counter()
    m = exponential_mechanism(euclidean_distances(names, xy, unit="km"), args.metric_epsilon)
    _ = m.epsilon
    library_design = time.perf_counter() - t0
    t0 = time.perf_counter()
    perturb_codes(codes, m, key=SecretKey(bytes(32), "zeros"), variable="area")
    library_apply = time.perf_counter() - t0
    print(f"library: design {library_design:.1f} s, perturb {library_apply:.1f} s; "
          f"ratio {(library_design + library_apply) / floor:.1f}")
    print(f"S = {args.areas} areas, N = {args.records} records, metric epsilon {args.metric_epsilon}")
    print(f"design {design:.1f} s, apply {apply:.1f} s, total {design + apply:.1f} s; "
          f"floor {floor:.2f} s; ratio {(design + apply) / floor:.1f}")


if __name__ == "__main__":
    main()
