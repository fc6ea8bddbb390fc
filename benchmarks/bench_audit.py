"""Benchmark: the release audit of the census demo, and the engine audit's 10^6 trials.

``python benchmarks/bench_audit.py`` runs the demo release (953 076 persons, ten variables, age,
sex and marital status perturbed, with a key file) into a temporary folder, then times, best of
three:

* the full release audit (``pramkit.audit.audit`` with the released file, the original and the
  key: manifest audit with the receipt, transition tables, fit tests, unperturbed columns, and
  the release derived again and compared byte for byte) against the target of 30 s, and against
  a floor measured in the same run: reading both files and hashing the released one (what any
  audit must do);
* the engine audit of randomized response (k = 2, epsilon 1) with 10^6 trials per input,
  against the floor of drawing the same 2 x 10^6 uniforms with NumPy.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import numpy as np
from timing import best_of

from pramkit.audit import audit
from pramkit.audit.engine import audit_variable
from pramkit.audit.release import read_whole
from pramkit.demo import run_demo
from pramkit.design.classic import randomized_response
from pramkit.kernel.rng import SecretKey, write_key_file
from pramkit.manifest import PerturbedVariable

#: The release audit's target on the census demo (seconds).
TARGET = 30.0


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        out, key = Path(d) / "demo", write_key_file(Path(d) / "k.key")
        run_demo(out, key=SecretKey.from_file(key), quiet=True)
        public, private = out / "public", out / "private"

        def floor() -> None:
            read_whole(private / "census.csv")
            read_whole(public / "released.csv")
            hashlib.sha256((public / "released.csv").read_bytes()).hexdigest()

        def full() -> None:
            result = audit(public / "manifest.json", released=public / "released.csv",
                           original=private / "census.csv", key=key)
            assert result.passed, result.verdict()

        base, seconds = best_of(floor), best_of(full)
        print(f"release audit of the census demo (953 076 rows, 3 perturbed variables, with the key): "
              f"{seconds:.2f} s = {seconds / base:.1f}x reading both files and hashing one ({base:.2f} s)")
        print(f"target: under {TARGET:g} s -> {'met' if seconds < TARGET else 'NOT met'}")

    rr = PerturbedVariable("sex", randomized_response(["female", "male"], 1.0))
    draws = best_of(lambda: np.random.default_rng().random(2 * 10**6))
    engine = best_of(lambda: audit_variable(rr, trials=10**6))
    bound = audit_variable(rr, trials=10**6).data["empirical_epsilon"]
    print(f"engine audit, RR k = 2 at epsilon 1, 10^6 trials per input: {engine:.3f} s = {engine / draws:.1f}x "
          f"NumPy drawing 2 x 10^6 uniforms ({draws:.3f} s); empirical epsilon >= {bound:.4f}")


if __name__ == "__main__":
    main()
