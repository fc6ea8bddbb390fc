"""Randomized response on S = 100 000 categories, end to end through the CLI (no S x S array).

Writes a codebook of S codes and a data file of N records drawing them, then times
``pramkit design --method rr`` (randomized response stored as form (8): its diagonal q and
off-diagonal w, O(S) memory) with the manifest and the design record written.  The floor,
measured in the same run, is pandas reading the data file and the codebook and NumPy counting
the codes and filling the two vectors q and w: the least a design of this variable must do.

Usage: python benchmarks/bench_rr_scale.py [--categories 100000] [--records 200000]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def floor_seconds(data: Path, codebook: Path, s: int, epsilon: float) -> float:
    t0 = time.perf_counter()
    codes = pd.read_csv(data)["code"].to_numpy()
    labels = pd.read_csv(codebook)["category"].to_numpy()
    _, counts = np.unique(codes, return_counts=True)
    q = np.full(s, 1.0 / (1.0 + (s - 1) * math.exp(-epsilon)))
    w = (1.0 - q) / (s - 1)
    assert labels.size == s and counts.sum() == codes.size and np.all(q + (s - 1) * w > 0)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--categories", type=int, default=100_000)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--epsilon", type=float, default=2.0)
    args = ap.parse_args()
    s = args.categories
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        names = [f"C{i:06d}" for i in range(s)]
        codes = np.random.default_rng(1).integers(0, s, args.records)
        (d / "data.csv").write_text("code\n" + "\n".join(names[c] for c in codes) + "\n")
        (d / "codebook.csv").write_text("variable,category\n" + "".join(f"code,{n}\n" for n in names))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pramkit", "design", str(d / "data.csv"), "--vars", "code",
                        "--method", "rr", "--epsilon", str(args.epsilon), "--categories", str(d / "codebook.csv"),
                        "--out", str(d / "manifest.json"), "--quiet"], check=True, stdout=subprocess.DEVNULL)
        design = time.perf_counter() - t0
        floor = floor_seconds(d / "data.csv", d / "codebook.csv", s, args.epsilon)
    print(f"S = {s} categories, N = {args.records} records, epsilon {args.epsilon}")
    print(f"pramkit design --method rr {design:.1f} s; floor {floor:.2f} s; ratio {design / floor:.1f}")


if __name__ == "__main__":
    main()
