"""Benchmark: ``pramkit attack`` on NIST's national2019 excerpt (27 253 records, 24 columns), 4 known columns.

``python benchmarks/bench_attack.py`` releases the file with MSP, RAC1P, EDU and HISP perturbed (a record
epsilon of 8; not timed), then times the command end to end in this process (reading both files, the
reconstruction of the 20 other features, the Bayes ceiling of the 4 perturbed ones twice, the linkage with
its keyed holdout half, and the per-record file), and the linkage alone.  Target: under a minute on 2 cores.

Two yardsticks measured in the same run: reading the two files (the command's own floor: it reads them
whole), and one pass of NumPy's pairwise equality of one column over the same blocks as the linkage, every
(original, released) pair and every (attacked, held-out) pair compared once -- what the distances would
cost per column by brute force (the linkage compares all 24 columns).
"""

from __future__ import annotations

import contextlib
import io
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pramkit.cli import main
from pramkit.engine.perturb import perturb_frame
from pramkit.io import read_table
from pramkit.release.pipeline import design_release
from pramkit.risk.attack_linkage import BLOCK_CELLS, linkage_attack, shared_codes

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
KNOWN = ["AGEP", "SEX", "PUMA", "HOUSING_TYPE"]
PERTURBED = ["MSP", "RAC1P", "EDU", "HISP"]
#: End-to-end target on 2 cores (seconds).
TARGET = 60.0


def pairwise_floor(x: np.ndarray, y: np.ndarray) -> float:
    """Seconds for one equality test of the first column per pair, over the linkage's blocks."""
    t0 = time.perf_counter()
    block = max(1, BLOCK_CELLS // len(y))
    for b0 in range(0, len(x), block):
        np.equal(x[b0:b0 + block, 0][:, None], y[None, :, 0])
    return time.perf_counter() - t0


def main_bench() -> None:
    if not DATA.is_file():
        sys.exit(f"{DATA} is absent")
    data = read_table(DATA)
    manifest = design_release(data, PERTURBED, epsilon=8.0, rng=random.Random(1))
    released = perturb_frame(data, manifest, key=bytes(range(32))).data
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        released.to_csv(d / "released.csv", index=False)
        manifest.write(d / "manifest.json")
        key = d / "attack.key"
        key.write_text(bytes(range(3, 35)).hex() + "\n")
        key.chmod(0o600)

        t0 = time.perf_counter()
        read_table(DATA), read_table(d / "released.csv")
        reading = time.perf_counter() - t0

        original, rel = read_table(DATA), read_table(d / "released.csv")
        o, r = shared_codes(list(original.columns), original, rel)
        half = len(o) // 2
        floor = pairwise_floor(o, r) + pairwise_floor(o[half:], o[:half])

        t0 = time.perf_counter()
        link = linkage_attack(original, rel, KNOWN, key=key)
        linkage = time.perf_counter() - t0

        argv = ["attack", str(d / "released.csv"), "--original", str(DATA), "--known", ",".join(KNOWN),
                "--manifest", str(d / "manifest.json"), "--key-file", str(key), "--per-record",
                str(d / "links.csv"), "--force"]
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        whole = time.perf_counter() - t0
    print(f"records: {len(original):,} original, {len(rel):,} released, {original.shape[1]} columns; known: "
          f"{', '.join(KNOWN)}; perturbed: {', '.join(PERTURBED)} (record epsilon 8)")
    print(f"yardstick, reading both files: {reading:.2f} s")
    print(f"yardstick, one equality test per pair (one column, same blocks): {floor:.2f} s")
    print(f"linkage alone: {linkage:.2f} s = {linkage / floor:.1f}x the one-column pairwise pass "
          f"({original.shape[1]} columns compared); median DCR {link.median_dcr:.4f}, at 0 {link.share_at_zero:.4f}, "
          f"closer to the release {link.closer_to_release:.4f} / holdout {link.closer_to_holdout:.4f} / tied "
          f"{link.tied:.4f}")
    print(f"pramkit attack end to end (exit {code}): {whole:.2f} s = {whole / reading:.1f}x reading the files")
    print(f"target: under {TARGET:g} s on 2 cores -> {'met' if whole < TARGET else 'NOT met'}")


if __name__ == "__main__":
    main_bench()
