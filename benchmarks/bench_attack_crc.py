"""Risk at equal utility on NIST's CRC data: ``pramkit attack`` on the releases a run of ``bench_sdnist.py`` kept,
each beside its SDNist k-marginal, scored again here with the same scorer.

    python benchmarks/bench_sdnist.py --peers --feature-set demographic --epsilons 1 --out runs
    python benchmarks/bench_attack_crc.py --releases runs [--known AGEP,SEX,RAC1P] [--no-score]

    # curves: pramkit's releases at several parameters, every column protected, and the peers
    python benchmarks/bench_sdnist.py --public '' --configs pgm-all-0.25,pgm-all-0.5,pgm-all-1,... --out runs
    python benchmarks/bench_sdnist.py --public '' --configs mst-1,aim-1 --out runs

For every ``NAME.csv`` of the folder (pramkit's releases and the peers' MST and AIM files alike: the attack reads
any released file), against national2019 restricted to the same columns:

* **k-marginal**: SDNist's score of the file (``bench_sdnist.score``; ``--no-score`` leaves it out);
* **reconstruction**: an attacker who knows the ``--known`` columns of every person guesses each other feature
  from the released records that agree on them (:func:`pramkit.risk.attack.reconstruction_attack`): the share
  of values right, overall and weighted by rarity as the CRC red team scores, each against the baseline of the
  published margins alone; the *advantage* is the difference;
* **linkage**: the records unique on the known columns that exactly one released record shares them with (a
  one-to-one link), the share of the original's records some released record equals in every column, and, of
  the records set against a keyed holdout half, the share closer to the release than to the holdout
  (:func:`pramkit.risk.attack_linkage.linkage_attack`).

The table is sorted by k-marginal, so that releases of equal utility stand together: an officer reads the risk
that each buys its utility with; each row says what the file releases exactly and what its epsilon covers (read
from the manifest beside it, ``NAME.json`` or ``NAME.STEP.json``).  A second table compares at **equal
k-marginal**: a release's name is its method and a parameter (``pgm-all-0.5``: the method ``pgm-all`` at epsilon
0.5; ``dp-40-resampled``: ``dp-resampled`` at 40; ``sdcmicro-pram-pd0.9``: ``sdcmicro-pram`` at pd 0.9), the runs
of one method a curve; for each peer's release (MST, AIM) each of pramkit's methods gets the advantage at the
peer's k-marginal by linear interpolation between its two runs whose k-marginals bracket it
(:func:`at_k_marginal`), or "out of range" when none do: never extrapolated.  SDNist's report of a file already
scored into ``DIR/scores/NAME`` is read again when newer than the file (delete the folder to score again).

Every figure comes from the original (private): the tables are for the benchmark's page, never for a release's
public folder.  SDNist runs in its own environment (``SDNIST_PYTHON``, as for ``bench_sdnist.py``); the attack
runs here, and its time is printed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))

import bench_sdnist  # noqa: E402  (the scorer and the data's place, shared with the utility benchmark)

from pramkit.risk.attack import attack  # noqa: E402

DEFAULT_KNOWN = ("AGEP", "SEX", "RAC1P")
#: The key of the holdout half (a benchmark's fixed key: the split is reproducible).
HOLDOUT_KEY = bytes(range(7, 39))


def attack_row(name: str, released: Path, original: pd.DataFrame, known: tuple[str, ...]) -> dict[str, object]:
    """The attack's figures on one released file (columns of the original it shares)."""
    frame = pd.read_csv(released, dtype=str, keep_default_na=False)
    columns = [c for c in frame.columns if c in original.columns]
    t0 = time.perf_counter()
    result = attack(original[columns], frame[columns], [k for k in known if k in columns], key=HOLDOUT_KEY)
    seconds = time.perf_counter() - t0
    rec, link = result.reconstruction, result.linkage
    exact, covers = describe(released, columns)
    return {"release": name, "exact": exact, "epsilon": covers, "accuracy": rec.accuracy, "baseline": rec.baseline,
            "advantage": rec.accuracy - rec.baseline,
            "weighted_advantage": rec.weighted_accuracy - rec.weighted_baseline,
            "linked": None if link is None else link.unique_on_known_linked,
            "unique_on_known": None if link is None else link.unique_on_known,
            "at_zero": None if link is None else link.share_at_zero,
            "closer": None if link is None else link.closer_to_release,
            "attack_s": seconds}


def _pct(x: object) -> str:
    return "-" if x is None else f"{100 * float(x):.1f}"  # type: ignore[arg-type]


#: The peers' methods (dpmm's synthesizers, run by ``bench_sdnist.py``): every column synthesized.
PEER_METHODS = {"mst": "MST", "aim": "AIM"}


def method_of(name: str) -> tuple[str, float | None]:
    """A release's method and parameter (its epsilon, or sdcMicro's pd) read from its name: the curve it lies on.

    >>> method_of("pgm-all-0.25"), method_of("dp-40-resampled"), method_of("sdcmicro-pram-pd0.9")
    (('pgm-all', 0.25), ('dp-resampled', 40.0), ('sdcmicro-pram', 0.9))
    >>> method_of("mst-1"), method_of("raw")
    (('mst', 1.0), ('raw', None))
    """
    match = re.fullmatch(r"(.+?)-(?:pd)?(\d+(?:\.\d+)?)((?:-[a-z]+)*)", name)
    if match is None:
        return name, None
    return match.group(1) + match.group(3), float(match.group(2))


@dataclass(frozen=True)
class AtKMarginal:
    """One method's figure at a given k-marginal, interpolated linearly between the runs that bracket it.

    low, high: the bracketing runs (names; runs of the same k-marginal joined by " = ", their figures averaged)
    k_low, k_high: their k-marginals (equal when a run has the very k-marginal asked)
    value: the interpolated figure, or None when no two runs bracket the k-marginal (``span``: the runs' range)
    """

    low: str | None
    k_low: float | None
    high: str | None
    k_high: float | None
    value: float | None
    span: tuple[float, float] | None


def at_k_marginal(runs: list[dict[str, object]], k: float, field: str = "advantage") -> AtKMarginal:
    """``field`` of one method's ``runs`` at k-marginal ``k``: linear between the nearest run at or below ``k`` and
    the nearest at or above it; out of range (``value`` None) when ``k`` lies outside the runs' k-marginals.

    >>> runs = [{"release": "a-1", "k_marginal": 960, "advantage": 0.08},
    ...         {"release": "a-2", "k_marginal": 970, "advantage": 0.10}]
    >>> r = at_k_marginal(runs, 965)
    >>> r.low, r.high, round(r.value, 6)
    ('a-1', 'a-2', 0.09)
    >>> at_k_marginal(runs, 981).value is None, at_k_marginal(runs, 981).span
    (True, (960.0, 970.0))
    """
    points: dict[float, list[dict[str, object]]] = {}
    for r in runs:
        if r.get("k_marginal") is not None and r.get(field) is not None:
            points.setdefault(float(r["k_marginal"]), []).append(r)  # type: ignore[arg-type]
    if not points:
        return AtKMarginal(None, None, None, None, None, None)
    span = (min(points), max(points))
    below = [x for x in points if x <= k]
    above = [x for x in points if x >= k]
    if not below or not above:
        return AtKMarginal(None, None, None, None, None, span)
    lo, hi = max(below), min(above)

    def value(x: float) -> float:
        return sum(float(r[field]) for r in points[x]) / len(points[x])  # type: ignore[arg-type]

    def names(x: float) -> str:
        return " = ".join(str(r["release"]) for r in points[x])

    v = value(lo) if hi == lo else value(lo) + (k - lo) * (value(hi) - value(lo)) / (hi - lo)
    return AtKMarginal(names(lo), lo, names(hi), hi, v, span)


def equal_utility_table(rows: list[dict[str, object]]) -> str:
    """The second table: for each peer's scored release, each of pramkit's methods at the peer's k-marginal
    (its advantage and rarity-weighted advantage interpolated, minus the peer's own).

    >>> rows = [{"release": "mst-1", "k_marginal": 961, "advantage": 0.089, "weighted_advantage": 0.103},
    ...         {"release": "pgm-all-0.5", "k_marginal": 957, "advantage": 0.085, "weighted_advantage": 0.11},
    ...         {"release": "pgm-all-1", "k_marginal": 965, "advantage": 0.093, "weighted_advantage": 0.12}]
    >>> print(equal_utility_table(rows))  # doctest: +NORMALIZE_WHITESPACE
    | peer release | its k-marginal | its advantage, points (rarity-weighted) | pramkit method | bracketing runs (k-marginal) | advantage there, points (rarity-weighted) | pramkit minus peer, points (rarity-weighted) |
    |---|---|---|---|---|---|---|
    | mst-1 | 961 | +8.9 (+10.3) | pgm-all | pgm-all-0.5 (957), pgm-all-1 (965) | +8.9 (+11.5) | +0.0 (+1.2) |
    """
    head = ("| peer release | its k-marginal | its advantage, points (rarity-weighted) | pramkit method | bracketing "
            "runs (k-marginal) | advantage there, points (rarity-weighted) | pramkit minus peer, points "
            "(rarity-weighted) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    curves: dict[str, list[dict[str, object]]] = {}
    for r in rows:
        method = method_of(str(r["release"]))[0]
        if method not in PEER_METHODS and method != "raw":
            curves.setdefault(method, []).append(r)
    peers = [r for r in rows if method_of(str(r["release"]))[0] in PEER_METHODS and r.get("k_marginal") is not None]
    for peer in sorted(peers, key=lambda r: (-float(r["k_marginal"]), str(r["release"]))):  # type: ignore[arg-type]
        k = float(peer["k_marginal"])  # type: ignore[arg-type]
        own = (f"{100 * float(peer['advantage']):+.1f} "  # type: ignore[arg-type]
               f"({100 * float(peer['weighted_advantage']):+.1f})")  # type: ignore[arg-type]
        for method, runs in sorted(curves.items()):
            lines.append(f"| {peer['release']} | {k:g} | {own} | {method} | " + _at(runs, k, peer) + " |")
    return "\n".join(lines)


def _at(runs: list[dict[str, object]], k: float, peer: dict[str, object]) -> str:
    """The three cells of one method at a peer's k-marginal."""
    a, w = at_k_marginal(runs, k), at_k_marginal(runs, k, "weighted_advantage")
    if a.value is None or w.value is None:
        span = "no run scored" if a.span is None else f"out of range (runs {a.span[0]:g} to {a.span[1]:g})"
        return f"{span} | - | -"
    runs_cell = f"{a.low} ({a.k_low:g})" if a.low == a.high else f"{a.low} ({a.k_low:g}), {a.high} ({a.k_high:g})"
    diff = (100 * (a.value - float(peer["advantage"])),  # type: ignore[arg-type]
            100 * (w.value - float(peer["weighted_advantage"])))  # type: ignore[arg-type]
    return f"{runs_cell} | {100 * a.value:+.1f} ({100 * w.value:+.1f}) | {diff[0]:+.1f} ({diff[1]:+.1f})"


def synthesis_guarantee(raw: dict) -> str:
    """What a synthesis manifest's epsilon covers, in its own terms: pure or (epsilon, delta) by zCDP, and under
    which neighbour relation.

    >>> synthesis_guarantee({"ledger": {"record_epsilon": 1.0}})
    '1 central, pure (replace-one): the whole file'
    >>> synthesis_guarantee({"ledger": {"record_epsilon": 2.0, "delta": 1e-05}, "neighbours": "add-remove"})
    '2 central, delta 1e-05 (zCDP, add-or-remove): the whole file'
    """
    led = raw["ledger"]
    relation = "add-or-remove" if raw.get("neighbours") == "add-remove" else "replace-one"
    kind = f"delta {led['delta']:g} (zCDP, {relation})" if led.get("delta") is not None else f"pure ({relation})"
    return f"{led['record_epsilon']:.3g} central, {kind}: the whole file"


def describe(released: Path, columns: list[str]) -> tuple[str, str]:
    """What a kept release shows exactly and what its epsilon covers, from the manifest(s) beside it.

    A synthesis manifest: its public columns, and its central record epsilon (:func:`synthesis_guarantee`); PRAM's:
    the columns no step perturbs, the record's local epsilon (the design step included), or none where the
    design read exact frequencies; a resampled file is PRAM's, post-processed; no manifest: a peer's
    (its central epsilon, with delta) or unknown.
    """
    from pramkit import Manifest
    from pramkit.privacy.epsilon import record_epsilon

    name = released.stem
    steps = sorted(released.parent.glob(f"{name}.json")) or sorted(released.parent.glob(f"{name}.*.json"))
    method, parameter = method_of(name)
    if not steps:
        if method in PEER_METHODS and parameter is not None:
            return "none", (f"{parameter:g} central, delta {bench_sdnist.PEER_DELTA:g} (dpmm {PEER_METHODS[method]}, "
                            "add-or-remove): the whole file")
        return "-", "-"
    first = json.loads(steps[0].read_text(encoding="utf-8"))
    if first.get("format") == "pramkit.synthesis":
        exact = [*first["public"]["columns"], *first.get("released_as_they_are", [])]
        return (", ".join(exact) or "none"), synthesis_guarantee(first)
    manifests = [Manifest.read(p) for p in steps]
    perturbed = {v for m in manifests for v in m.names}
    exact = ", ".join(c for c in columns if c not in perturbed) or "none"
    missing = sorted({v for p in steps
                      for v in json.loads(p.read_text(encoding="utf-8"))["input"].get("na_values", [])})
    if missing:
        kept = f"every {' or '.join(repr(v) for v in missing)} value (kept as missing)"
        exact = kept if exact == "none" else f"{exact}; {kept}"
    post = ", resampled (post-processing)" if method.endswith("-resampled") else ""
    eps = record_epsilon([m.record_epsilon for m in manifests])
    if any(m.ledger.frequencies == "exact" for m in manifests):
        return exact, f"none: {eps:.4g} local from the matrices, but the design reads exact frequencies{post}"
    return exact, f"{eps:g} local per record (design step included){post}"


def table(rows: list[dict[str, object]], known: tuple[str, ...]) -> str:
    """The Markdown table, by k-marginal (the files SDNist did not score last)."""
    head = ("| release | released exactly | epsilon, and what it covers | k-marginal | right, % (margins alone) "
            "| advantage, points | rarity-weighted advantage, "
            f"points | one-to-one links on {', '.join(known)} | equal to a released record, % | closer to the "
            "release than to the holdout, % | attack s |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    ordered = sorted(rows, key=lambda r: -float(r["k_marginal"]) if r.get("k_marginal") is not None else 1.0)
    for r in ordered:
        links = "-" if r["linked"] is None else f"{r['linked']} of {r['unique_on_known']}"
        k = r.get("k_marginal")
        lines.append(f"| {r['release']} | {r.get('exact', '-')} | {r.get('epsilon', '-')} | "
                     f"{'-' if k is None else k} | "
                     f"{_pct(r['accuracy'])} ({_pct(r['baseline'])}) | {100 * float(r['advantage']):+.1f} | "  # type: ignore[arg-type]
                     f"{100 * float(r['weighted_advantage']):+.1f} | {links} | {_pct(r['at_zero'])} | "  # type: ignore[arg-type]
                     f"{_pct(r['closer'])} | {float(r['attack_s']):.1f} |")  # type: ignore[arg-type]
    return "\n".join(lines)


def k_marginal(path: Path, python: str, workdir: Path, target: str) -> float:
    """SDNist's k-marginal of one file: its report in ``workdir`` when newer than the file, else scored there."""
    reports = sorted(workdir.glob("reports/*/report.json"))
    if reports and reports[-1].stat().st_mtime > path.stat().st_mtime:
        return bench_sdnist.parse_report(json.loads(reports[-1].read_text(encoding="utf-8"))).k_marginal
    return bench_sdnist.score(path, python=python, data_root=bench_sdnist.DATA_ROOT, target=target,
                              workdir=workdir).k_marginal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", type=Path, required=True, help="a folder of NAME.csv released files "
                                                                     "(bench_sdnist.py --out)")
    parser.add_argument("--data", type=Path, default=bench_sdnist.DEFAULT_DATA)
    parser.add_argument("--known", default=",".join(DEFAULT_KNOWN), help="the columns the attacker knows")
    parser.add_argument("--target", default="NATIONAL", choices=("NATIONAL", "MA", "TX"), help="SDNist's target")
    parser.add_argument("--no-score", action="store_true", help="leave SDNist's k-marginal out")
    args = parser.parse_args()
    files = sorted(p for p in args.releases.glob("*.csv") if p.name != "input.csv")
    if not files:
        sys.exit(f"no released files (NAME.csv) in {args.releases}")
    if not args.data.is_file():
        sys.exit(f"{args.data} is absent")
    known = tuple(k.strip() for k in args.known.split(",") if k.strip())
    original = pd.read_csv(args.data, dtype=str, keep_default_na=False)
    python = None if args.no_score else bench_sdnist.sdnist_python()
    if python is None and not args.no_score:
        print("SDNist is not installed (SDNIST_PYTHON): the k-marginal is left out", file=sys.stderr)
    rows = []
    for path in files:
        row = attack_row(path.stem, path, original, known)
        if python is not None:
            row["k_marginal"] = k_marginal(path, python, args.releases / "scores" / path.stem, args.target)
        print(f"{path.stem}: advantage {100 * float(row['advantage']):+.1f} points, k-marginal "
              f"{row.get('k_marginal', '-')}, attack {float(row['attack_s']):.1f} s", file=sys.stderr)  # type: ignore[arg-type]
        rows.append(row)
    print(table(rows, known))
    print()
    print("At equal k-marginal:")
    print()
    print(equal_utility_table(rows))


if __name__ == "__main__":
    main()
