"""Monte Carlo over keys: ``pramkit attack``'s figures on NIST's national2019 against the Bayes ceiling.

    python benchmarks/bench_attack_mc.py [--features AGEP,SEX,MSP,RAC1P,EDU,OWN_RENT,PINCP_DECILE]
        [--known AGEP,SEX,RAC1P] [--epsilons 1,2,5] [--keys 20] [--seed 2019] [--rows N] [--data FILE]

The features are read as text ('N', "not applicable", is a category like any other).  For each record epsilon E
(the record's total budget, design step included, split equally) the features that are not known are released by
pramkit's DP-optimal PRAM: the design is made once per epsilon, as ``pramkit design --epsilon E`` makes it
(:func:`pramkit.design_release`, its DP counts drawn from a fixed seed), and applied with ``--keys`` secret keys
derived from the seed (:func:`pramkit.perturb_frame`, the engine of ``pramkit apply``): the matrices, hence the
ceiling, are the same for every key; only the draw changes.

For every key and every perturbed target, the correct guesses of the target's true value by an attacker who knows
the known columns of every person and has found the person's released record:

* **reconstruction**: the most frequent released value among the released records that agree on the known columns
  (:func:`pramkit.risk.attack.reconstruction_attack`; no manifest used);
* **Bayes, estimated prior, target's cell only**: the argmax of the exact posterior given the known columns and the
  target's released cell, with the prior the release's own corrected table of the target and the known columns
  (:func:`pramkit.risk.attack.bayes_ceiling` without ``prior``, ``scope="target"``: what a public attacker can
  compute cheaply; the corrected table of every feature is too slow to estimate by maximum likelihood here);
* **Bayes, true law, target's cell only**: the same argmax with the original's own joint table of the target and the
  known columns as the prior (``scope="target"``: an attacker who ignores the record's other perturbed columns);
* **Bayes, true law, whole record**: the argmax of the exact posterior given the known columns and *every* released
  column of the record (the other perturbed features too), the prior the original's own joint table of all the
  features (computed here: :func:`whole_record_posteriors`; the ceiling's own attacker: its expected count *is* the
  ceiling).

The **ceiling** is :func:`pramkit.risk.attack.bayes_ceiling` with the prior supplied as the original itself (the
true law) and its default ``scope="record"``: ``expected_correct``, per key, and where computed the exact expectation
over every draw (``expected_over_draws``, equal to ``correct_over_draws`` under the true law).  It bounds, in
expectation over the draws of the release, the correct guesses of any rule that guesses from the known columns and
the whole released record, the prior being the truth; the baseline is the prior given the known columns alone.  The
whole-record posterior computed here is the same sum: its expected share is printed beside the ceiling, with the
largest gap between the two over the keys.

Verdict rule: per key, ``d = measured - expected_correct`` (the same key's ceiling, paired); an attack is **above the
ceiling** when the mean of ``d`` over the keys exceeds 3 standard errors (``sd(d) / sqrt(keys)``).  A single key's
``d`` is printed in units of ``sd(d)`` (its own Monte Carlo error): one key in twenty near +2 is sampling, not a
breach.  Time: per key (every attack on every target at one epsilon) and in total, against a floor measured in the
same run: reading the CSV file and one pandas groupby of the known columns.

Every figure comes from the original (private): the tables are for the benchmark's page, never for a release.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))

from timing import best_of  # noqa: E402

from pramkit.codebook import canonical  # noqa: E402
from pramkit.engine.perturb import perturb_frame  # noqa: E402
from pramkit.manifest import Manifest  # noqa: E402
from pramkit.release.pipeline import design_release  # noqa: E402
from pramkit.risk.attack import TRUE_LAW, bayes_ceiling, reconstruction_attack  # noqa: E402

DATA = BENCHMARKS.parents[1] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
DEFAULT_FEATURES = ("AGEP", "SEX", "MSP", "RAC1P", "EDU", "OWN_RENT", "PINCP_DECILE")
DEFAULT_KNOWN = ("AGEP", "SEX", "RAC1P")
DEFAULT_EPSILONS = (1.0, 2.0, 5.0)
DEFAULT_KEYS = 20
DEFAULT_SEED = 2019
#: The verdict's rule: the mean over keys above the ceiling by more than this many standard errors.
RULE_SE = 3.0
#: Fewest keys the verdict is given for (the standard error of fewer is itself too uncertain).
RULE_KEYS = 5
#: The attacks, in the table's order.
ATTACKS = ("reconstruction (mode given the known)", "Bayes argmax, estimated prior (mle), target's cell only",
           "Bayes argmax, true law, target's cell only", "Bayes argmax, true law, whole released record")


def key_of(seed: int, index: int) -> bytes:
    """The ``index``-th secret key (32 bytes) derived from ``seed``.

    >>> len(key_of(2019, 0)), key_of(2019, 0) == key_of(2019, 0), key_of(2019, 0) == key_of(2019, 1)
    (32, True, False)
    """
    return hashlib.sha256(f"bench_attack_mc:{seed}:{index}".encode()).digest()


def codes_of(values: pd.Series, categories: Sequence[object]) -> np.ndarray:
    """Each value's position among ``categories`` (matched as pramkit matches labels; -1 when absent).

    >>> codes_of(pd.Series(["1", "N", "x"]), (1, "N")).tolist()
    [0, 1, -1]
    """
    index: dict[object, int] = {}
    for i, c in enumerate(categories):
        index.setdefault(canonical(c), i)
    local, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    lut = np.array([index.get(canonical(u), -1) for u in uniques] + [-1], dtype=np.intp)
    return lut[local]


def whole_record_posteriors(original: pd.DataFrame, released: pd.DataFrame, manifest: Manifest,
                            known: Sequence[str], targets: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The exact posterior of each target given the known columns and every perturbed column of the released record.

    The prior is the original's own joint table of the known and target columns (the true law of all of them): among
    the original's records sharing a person's known values, candidate ``j`` has weight
    ``prod_v M_v[x_jv, z_v]`` over the perturbed targets ``v`` (each perturbed alone, with its own matrix), and the
    posterior of a target's value is the share of the weight of the candidates holding it.

    Returns, per target, the posterior's argmax is right (bool per record) and its largest value (per record), in
    the records' order.

    >>> from pramkit import PramMatrix
    >>> m = Manifest.of({c: PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("0", "1")) for c in "ab"})
    >>> o = pd.DataFrame({"a": ["0", "1"], "b": ["0", "1"]})
    >>> right, top = whole_record_posteriors(o, o.assign(b=["1", "1"]), m, [], ["a", "b"])["a"]
    >>> right.tolist(), top.round(4).tolist()
    ([True, True], [0.5, 0.9])
    """
    n = len(original)
    group = (original.groupby(list(known), sort=False).ngroup().to_numpy() if known
             else np.zeros(n, dtype=np.intp))
    cats = {t: tuple(manifest[t].matrix.categories) for t in targets}
    x = {t: codes_of(original[t], cats[t]) for t in targets}
    z = {t: codes_of(released[t], cats[t]) for t in targets}
    if any((x[t] < 0).any() or (z[t] < 0).any() for t in targets):
        raise ValueError("a target value outside its matrix's categories: the whole-record attack needs them all")
    matrices = {t: np.asarray(manifest[t].matrix.matrix, dtype=float) for t in targets}
    right = {t: np.zeros(n, dtype=bool) for t in targets}
    top = {t: np.zeros(n) for t in targets}
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(group[order]) != 0, True])
    for a, b in itertools.pairwise(bounds):
        rows = order[a:b]
        weight = np.ones((len(rows), len(rows)))  # [person released, candidate true record]
        for t in targets:
            weight *= matrices[t][x[t][rows]][:, z[t][rows]].T
        for t in targets:
            post = np.zeros((len(rows), len(cats[t])))
            np.add.at(post.T, x[t][rows], weight.T)
            post /= post.sum(axis=1, keepdims=True)
            right[t][rows] = post.argmax(axis=1) == x[t][rows]
            top[t][rows] = post.max(axis=1)
    return {t: (right[t], top[t]) for t in targets}


@dataclass
class TargetRuns:
    """One epsilon and target over the keys: per key, each attack's correct guesses and the ceiling's figures."""

    epsilon: float
    target: str
    target_epsilon: float
    records: int = 0
    baseline: float = math.nan
    over_draws: float | None = None
    correct_over_draws: float | None = None
    conditioned_on: tuple[str, ...] = ()
    ceiling: list[float] = field(default_factory=list)
    whole_ceiling: list[float] = field(default_factory=list)
    correct: dict[str, list[float]] = field(default_factory=lambda: {a: [] for a in ATTACKS})


@dataclass(frozen=True)
class Row:
    """One attack's line of a table (shares and points in percent of the records)."""

    attack: str
    mean: float
    sd: float
    ceiling: float
    baseline: float
    minus_ceiling: float
    minus_ceiling_se: float
    largest_key_sd: float
    above: str


def summarise(runs: TargetRuns) -> list[Row]:
    """The table's rows of one epsilon and target: each attack against the same key's ceiling (paired).

    >>> r = TargetRuns(1.0, "t", 0.5, records=100, baseline=50.0, over_draws=60.0, ceiling=[60.0, 61.0, 59.0] * 2)
    >>> r.correct = {a: [60.0, 62.0, 58.0] * 2 for a in ATTACKS}
    >>> row = summarise(r)[0]
    >>> row.mean, row.ceiling, row.baseline, row.minus_ceiling, row.above
    (60.0, 60.0, 50.0, 0.0, 'no')
    """
    n = runs.records
    ceiling = np.asarray(runs.ceiling)
    share = 100 * (runs.over_draws if runs.over_draws is not None else float(ceiling.mean())) / n
    rows = []
    for attack in ATTACKS:
        measured = np.asarray(runs.correct[attack])
        d = measured - ceiling
        sd = float(d.std(ddof=1)) if len(d) > 1 else math.nan
        se = sd / math.sqrt(len(d))
        mean_d = float(d.mean())
        z = mean_d / se if se > 0 else (math.inf if mean_d > 0 else -math.inf if mean_d < 0 else 0.0)
        largest = float(d.max()) / sd if sd > 0 else math.nan
        above = f"n/a (< {RULE_KEYS} keys)" if len(d) < RULE_KEYS else ("yes" if z > RULE_SE else "no")
        rows.append(Row(attack, 100 * float(measured.mean()) / n,
                        100 * float(measured.std(ddof=1)) / n if len(d) > 1 else math.nan,
                        share, 100 * runs.baseline / n, 100 * mean_d / n, z, largest, above))
    return rows


def table(runs: TargetRuns, known: Sequence[str], keys: int) -> str:
    """The Markdown table of one epsilon and target, with its heading lines."""
    ceiling = 100 * np.asarray(runs.ceiling) / runs.records
    whole = 100 * np.asarray(runs.whole_ceiling) / runs.records
    exact = ("not computed (too many patterns)" if runs.over_draws is None else
             f"{100 * runs.over_draws / runs.records:.3f} % over every draw (exact; its argmax right "
             f"{100 * (runs.correct_over_draws or 0.0) / runs.records:.3f} %)")
    head = [f"epsilon {runs.epsilon:g} (record), target {runs.target} (its matrix {runs.target_epsilon:.4g}), "
            f"{runs.records:,} records, {keys} keys, known {', '.join(known)}",
            f"ceiling (prior: the original's table of every feature; released {', '.join(runs.conditioned_on)} "
            f"seen): {exact}; per key {ceiling.mean():.3f} % (sd {_sd(ceiling):.3f})",
            f"whole-record posterior's expected share (computed here, all released columns seen): {whole.mean():.3f} "
            f"% (sd {_sd(whole):.3f}; largest gap to the key's ceiling {_gap(runs):.1e} points)", ""]
    lines = ["| attack | right, % (mean over keys) | sd, points | ceiling, % | baseline, % | mean minus ceiling, "
             "points (in SE) | largest key minus ceiling, in sd | above the ceiling |", "|---|---|---|---|---|---|---|---|"]
    for r in summarise(runs):
        lines.append(f"| {r.attack} | {r.mean:.3f} | {r.sd:.3f} | {r.ceiling:.3f} | {r.baseline:.3f} | "
                     f"{r.minus_ceiling:+.3f} ({r.minus_ceiling_se:+.1f}) | {r.largest_key_sd:+.2f} | {r.above} |")
    return "\n".join(head + lines)


def _gap(runs: TargetRuns) -> float:
    """The largest difference over the keys, in points, between the whole-record posterior's expected share computed
    here and the library's ceiling (the same sum: 0 up to rounding)."""
    return float(np.max(np.abs(np.subtract(runs.whole_ceiling, runs.ceiling)))) * 100 / runs.records


def _sd(x: np.ndarray) -> float:
    return float(x.std(ddof=1)) if len(x) > 1 else math.nan


def one_key(data: pd.DataFrame, manifest: Manifest, known: Sequence[str], targets: Sequence[str], key: bytes,
            runs: dict[str, TargetRuns]) -> None:
    """Release ``data`` with ``key`` and add every attack's correct guesses of every target to ``runs``."""
    released = perturb_frame(data, manifest, key=key).data
    rec = reconstruction_attack(data, released, list(known), list(targets))
    whole = whole_record_posteriors(data, released, manifest, known, targets)
    for feature in rec.per_feature:
        t = feature.feature
        truth = bayes_ceiling(released, manifest, list(known), t, prior=data, original=data, prior_label=TRUE_LAW)
        own = bayes_ceiling(released, manifest, list(known), t, prior=data, original=data, scope="target")
        estimated = bayes_ceiling(released, manifest, list(known), t, original=data, scope="target")
        r = runs[t]
        r.conditioned_on = truth.conditioned_on
        r.records, r.baseline = truth.records, truth.baseline_expected
        r.over_draws, r.correct_over_draws = truth.expected_over_draws, truth.correct_over_draws
        r.ceiling.append(truth.expected_correct)
        r.whole_ceiling.append(float(whole[t][1].sum()))
        counts = (feature.accuracy * len(data), estimated.realised_correct, own.realised_correct,
                  int(whole[t][0].sum()))
        for attack, count in zip(ATTACKS, counts, strict=True):
            assert count is not None  # the original is passed: the realised counts are given
            r.correct[attack].append(float(count))


def floor_seconds(path: Path, known: Sequence[str]) -> float:
    """The physical floor: reading the CSV file and one pandas groupby of the known columns (best of 3)."""
    def once() -> object:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        return frame.groupby(list(known)).size()
    return best_of(once)


def _names(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="national2019.csv (NIST's CRC excerpt)")
    parser.add_argument("--features", default=",".join(DEFAULT_FEATURES), help="the columns of the released file")
    parser.add_argument("--known", default=",".join(DEFAULT_KNOWN), help="the columns the attacker knows (released "
                                                                         "exactly)")
    parser.add_argument("--epsilons", default=",".join(f"{e:g}" for e in DEFAULT_EPSILONS),
                        help="record epsilons (the design step included, split equally over the perturbed columns)")
    parser.add_argument("--keys", type=int, default=DEFAULT_KEYS, help="secret keys per epsilon")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="of the design's DP counts and of the keys")
    parser.add_argument("--rows", type=int, default=None, help="the file's first N records only")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the Monte Carlo and print one table per epsilon and target; 0 (also when the file is absent)."""
    args = parse(argv)
    if not args.data.is_file():
        print(f"{args.data} is absent: nothing to measure")
        return 0
    features, known = _names(args.features), _names(args.known)
    targets = [f for f in features if f not in known]
    epsilons = [float(e) for e in _names(args.epsilons)]
    floor = floor_seconds(args.data, known)
    data = pd.read_csv(args.data, dtype=str, keep_default_na=False, usecols=features)[features]
    if args.rows is not None:
        data = data.head(args.rows).reset_index(drop=True)
    t_all = time.perf_counter()
    per_key = []
    for eps in epsilons:
        manifest = design_release(data, targets, epsilon=eps, rng=random.Random(args.seed))
        runs = {t: TargetRuns(eps, t, float(manifest[t].epsilon)) for t in targets}
        for k in range(args.keys):
            t0 = time.perf_counter()
            one_key(data, manifest, known, targets, key_of(args.seed, k), runs)
            per_key.append(time.perf_counter() - t0)
        for t in targets:
            print(table(runs[t], known, args.keys))
            print()
    total = time.perf_counter() - t_all
    mean_key = float(np.mean(per_key)) if per_key else math.nan
    print(f"records: {len(data):,}; features: {', '.join(features)}; perturbed: {', '.join(targets)}; "
          f"epsilons {', '.join(f'{e:g}' for e in epsilons)}; {args.keys} keys each (seed {args.seed})")
    print(f"verdict rule: above the ceiling when the mean over keys of (measured - the key's ceiling) exceeds "
          f"{RULE_SE:g} standard errors (given from {RULE_KEYS} keys)")
    print(f"floor, reading the CSV file and one groupby of {', '.join(known)}: {floor:.3f} s")
    print(f"time per key (4 attacks on {len(targets)} targets): {mean_key:.2f} s = {mean_key / floor:.1f}x the floor; "
          f"total {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
