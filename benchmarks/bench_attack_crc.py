"""Risk at equal utility on NIST's CRC data: ``pramkit attack`` on the releases a run of ``bench_sdnist.py`` kept,
each beside its SDNist k-marginal, scored again here with the same scorer.

    python benchmarks/bench_sdnist.py --peers --feature-set demographic --epsilons 1 --out runs
    python benchmarks/bench_attack_crc.py --releases runs [--known AGEP,SEX,RAC1P] [--no-score]

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
that each buys its utility with.  Every figure comes from the original (private): the table is for the
benchmark's page, never for a release's public folder.  SDNist runs in its own environment
(``SDNIST_PYTHON``, as for ``bench_sdnist.py``); the attack runs here, and its time is printed.
"""

from __future__ import annotations

import argparse
import sys
import time
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
    return {"release": name, "accuracy": rec.accuracy, "baseline": rec.baseline,
            "advantage": rec.accuracy - rec.baseline,
            "weighted_advantage": rec.weighted_accuracy - rec.weighted_baseline,
            "linked": None if link is None else link.unique_on_known_linked,
            "unique_on_known": None if link is None else link.unique_on_known,
            "at_zero": None if link is None else link.share_at_zero,
            "closer": None if link is None else link.closer_to_release,
            "attack_s": seconds}


def _pct(x: object) -> str:
    return "-" if x is None else f"{100 * float(x):.1f}"  # type: ignore[arg-type]


def table(rows: list[dict[str, object]], known: tuple[str, ...]) -> str:
    """The Markdown table, by k-marginal (the files SDNist did not score last)."""
    head = ("| release | k-marginal | right, % (margins alone) | advantage, points | rarity-weighted advantage, "
            f"points | one-to-one links on {', '.join(known)} | equal to a released record, % | closer to the "
            "release than to the holdout, % | attack s |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    ordered = sorted(rows, key=lambda r: -float(r["k_marginal"]) if r.get("k_marginal") is not None else 1.0)
    for r in ordered:
        links = "-" if r["linked"] is None else f"{r['linked']} of {r['unique_on_known']}"
        lines.append(f"| {r['release']} | {r.get('k_marginal') if r.get('k_marginal') is not None else '-'} | "
                     f"{_pct(r['accuracy'])} ({_pct(r['baseline'])}) | {100 * float(r['advantage']):+.1f} | "  # type: ignore[arg-type]
                     f"{100 * float(r['weighted_advantage']):+.1f} | {links} | {_pct(r['at_zero'])} | "  # type: ignore[arg-type]
                     f"{_pct(r['closer'])} | {float(r['attack_s']):.1f} |")  # type: ignore[arg-type]
    return "\n".join(lines)


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
            scores = bench_sdnist.score(path, python=python, data_root=bench_sdnist.DATA_ROOT, target=args.target,
                                        workdir=args.releases / "scores" / path.stem)
            row["k_marginal"] = scores.k_marginal
        print(f"{path.stem}: advantage {100 * float(row['advantage']):+.1f} points, k-marginal "
              f"{row.get('k_marginal', '-')}, attack {float(row['attack_s']):.1f} s", file=sys.stderr)  # type: ignore[arg-type]
        rows.append(row)
    print(table(rows, known))


if __name__ == "__main__":
    main()
