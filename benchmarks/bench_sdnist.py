"""pramkit releases of NIST's CRC excerpt scored by SDNist, beside the published references.

Releases one file (default: ``national2019`` of NIST's Collaborative Research Cycle, the
"demographic-focused" features) under named configurations, scores each release with SDNist
(``python -m sdnist.report RELEASED NATIONAL --data-root ROOT``) and prints one table: the stated
local and central epsilon (from the manifests' ledgers), k-marginal, pMSE, unique exact matches (as
a share of all records and of the unique records), inconsistencies, the total variation of the
2-way tables that ``pramkit.estimate_table`` corrects (mean and max, the raw file's beside it) and
the time, with the published figures of sdcMicro's ``pram`` and SmartNoise's MST under it.

SDNist pins old library versions: it lives in a virtual environment of its own
(``benchmarks/sdnist_setup.sh``), found through ``SDNIST_PYTHON`` (its interpreter); the data
through ``SDNIST_DATA_ROOT`` (default ``../shared/data/nist-crc`` beside the repository).  Without
either the script prints one line and exits 0.

A configuration is a function that designs and applies a release with the library exactly as an
officer would (``design_release``, ``apply_file``) and returns the released file and its manifests;
adding one is a small function decorated with ``@configuration`` (it lands in ``CONFIGS``).

Usage::

    python benchmarks/bench_sdnist.py [--configs raw,dp-10,...] [--list] [--out DIR] [--plot FILE]
        [--data FILE] [--features A,B,...] [--public A,B] [--target NATIONAL|MA|TX] [--seed 1]
    python benchmarks/bench_sdnist.py --peers [--feature-set SET] [--epsilons 1,2,10] [--peer-tools mst,aim]
        [--models pgm-zcdp,...] [--peer-minutes 60] [--peer-releases DIR] [--rounds-per-variable R]
        [--tables-per-fit K] [--plot FILE]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA_ROOT = REPO.parent / "shared" / "data" / "nist-crc"
DEFAULT_DATA = DATA_ROOT / "national" / "national2019.csv"
FEATURES = ("AGEP", "SEX", "MSP", "RAC1P", "HOUSING_TYPE", "OWN_RENT", "EDU", "PINCP_DECILE", "DVET", "DEYE")
PUBLIC = ("AGEP", "SEX")
#: The feature sets of the side-by-side comparison (``--peers``): the CRC bundle's demographic- and family-focused
#: sets, and an industry set of this benchmark's (the industry columns INDP, INDP_CAT with the demographic keys).
FEATURE_SETS = {
    "demographic": FEATURES,
    "family": ("PUMA", "AGEP", "SEX", "MSP", "HISP", "RAC1P", "NOC", "NPF", "OWN_RENT", "PINCP_DECILE", "POVPIP"),
    "industry": ("PUMA", "AGEP", "SEX", "RAC1P", "HISP", "EDU", "INDP", "INDP_CAT", "PINCP_DECILE"),
}
NA = "N"  # SDNist's "not applicable"
AGE_CLASS = "AGE_CLASS"  # a stratum derived from the public AGEP; not in the scored file
GROUP_QUARTERS = "GQ"  # a stratum derived from HOUSING_TYPE (released exactly where used)

#: Published figures (CRC data and metric bundle 1.0, national2019, demographic-focused features).
REFERENCES = (
    {"configuration": "sdcMicro pram (pd 0.8, alpha 0.5) [published]", "local": "none stated",
     "k_marginal": 980, "pmse": 0.01373, "matched_all": 31.89, "inconsistencies": "458 + 31"},
    {"configuration": "SmartNoise MST, central eps 10 [published]", "central": "10",
     "k_marginal": 969, "matched_all": 7.44},
)


# --------------------------------------------------------------------------------------------
# SDNist's report.json


@dataclass(frozen=True)
class Scores:
    """What the benchmark reads from one SDNist ``report.json``.

    k_marginal: k_marginal.k_marginal_synopsys.k_marginal_score (1000: the target itself)
    pmse: "propensity mean square error".pmse_score
    matched: unique target records matched exactly by a released record
    unique: unique records of the target
    records: records of the released file
    inconsistent: records with an inconsistency, summed over SDNist's groups (age, work, housing)
    violations: each inconsistency's name -> its violations
    """

    k_marginal: float
    pmse: float
    matched: int
    unique: int
    records: int
    inconsistent: int
    violations: dict[str, int] = field(default_factory=dict)
    subsample: float | None = None  # SDNist's subsample equivalent: the % sample of the target as close (k-marginal)
    #: SDNist's random subsamples of the target: (% of the target, its k-marginal), smallest first
    subsample_curve: tuple[tuple[float, float], ...] = ()

    @property
    def matched_all(self) -> float:
        """Matched unique records as a percentage of all records (the published figures)."""
        return 100.0 * self.matched / self.records

    @property
    def matched_unique(self) -> float:
        """Matched unique records as a percentage of the unique records (SDNist 2.4 prints this)."""
        return 100.0 * self.matched / self.unique

    def sample_as_close(self) -> float | None:
        """The share (%) of the target, sampled at random, whose k-marginal is this release's: SDNist's subsample
        scores interpolated linearly between the two that enclose it.  A random p % sample reproduces p % of the
        unique records, so a release matching fewer (:attr:`matched_unique`) lies above the subsample line.  None
        without the scores or below the smallest sample's; the largest sample's share above its score (a bound).

        >>> curve = ((1.0, 534.0), (5.0, 764.0), (10.0, 835.0), (20.0, 885.0), (90.0, 981.0))
        >>> [Scores(k, 0.0, 1, 2, 2, 0, subsample_curve=curve).sample_as_close() for k in (875, 835, 990, 500)]
        [18.0, 10.0, 90.0, None]
        """
        curve = self.subsample_curve
        if not curve or self.k_marginal < curve[0][1]:
            return None
        for (p0, k0), (p1, k1) in itertools.pairwise(curve):
            if k0 <= self.k_marginal <= k1:
                return p0 if k1 == k0 else p0 + (p1 - p0) * (self.k_marginal - k0) / (k1 - k0)
        return curve[-1][0]


def parse_report(report: dict[str, Any], folder: Path | None = None) -> Scores:
    """Read the scores of one SDNist report (the parsed ``report.json``; with its ``folder``, also the k-marginal
    of SDNist's random subsamples of the target, from the CSV the report names).

    SDNist 2.4 lists every inconsistency under the ``age`` group whatever its group; the
    counts per group are in ``inconsistencies.summary``.

    >>> r = {"k_marginal": {"k_marginal_synopsys": {"k_marginal_score": 990}},
    ...      "propensity mean square error": {"pmse_score": 0.001},
    ...      "unique_exact_matches": {"records matched in target data": 5, "unique target records": 10},
    ...      "data_description": {"deid": {"records": 20}},
    ...      "inconsistencies": {"summary": [{"Number of Records Inconsistent": 2}], "age": {
    ...          "inconsistencies": [{"inconsistency_name": "child_MSP", "inconsistency_violations": 2}]}}}
    >>> s = parse_report(r)
    >>> s.k_marginal, s.matched_all, s.matched_unique, s.inconsistent, s.violations
    (990, 25.0, 50.0, 2, {'child_MSP': 2})
    """
    uem = report["unique_exact_matches"]
    inc = report["inconsistencies"]
    violations: dict[str, int] = {}
    for group in ("age", "work", "housing"):
        for item in inc.get(group, {}).get("inconsistencies", []):
            name = item["inconsistency_name"]
            violations[name] = violations.get(name, 0) + int(item["inconsistency_violations"])
    return Scores(
        k_marginal=report["k_marginal"]["k_marginal_synopsys"]["k_marginal_score"],
        pmse=float(report["propensity mean square error"]["pmse_score"]),
        matched=int(uem["records matched in target data"]),
        unique=int(uem["unique target records"]),
        records=int(report["data_description"]["deid"]["records"]),
        inconsistent=sum(int(g["Number of Records Inconsistent"]) for g in inc["summary"]),
        violations=violations,
        subsample=report["k_marginal"]["k_marginal_synopsys"].get("sub_sampling_equivalent"),
        subsample_curve=() if folder is None else subsample_curve(report, folder),
    )


def subsample_curve(report: dict[str, Any], folder: Path) -> tuple[tuple[float, float], ...]:
    """SDNist's random subsamples of the target and their k-marginal, ``((percent, k-marginal), ...)`` smallest
    first, from the CSV that ``report.json`` names (``k_marginal.k_marginal_synopsys.subsample_error_comparison``);
    empty when the report names none or it cannot be read."""
    name = report["k_marginal"]["k_marginal_synopsys"].get("subsample_error_comparison")
    try:
        with open(folder / str(name), encoding="utf-8", newline="") as f:
            rows = [(float(r["Sub-Sample Size"].rstrip("%")), float(r["Sub-Sample K-Marginal Score"]))
                    for r in csv.DictReader(f)]
    except (OSError, KeyError, ValueError, TypeError):
        return ()
    return tuple(sorted(rows))


def environment_python(variable: str, module: str) -> str | None:
    """The interpreter an environment variable names (``variable``), or None when it is unset or cannot
    import ``module`` (the tools pinned to old libraries live in environments of their own)."""
    python = os.environ.get(variable)
    if not python:
        return None
    try:
        ok = subprocess.run([python, "-c", f"import {module}"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return None
    return python if ok else None


def sdnist_python() -> str | None:
    """The interpreter of SDNist's environment (``SDNIST_PYTHON``), or None when it cannot import SDNist."""
    return environment_python("SDNIST_PYTHON", "sdnist.report")


def score(released: Path, *, python: str, data_root: Path, target: str, workdir: Path) -> Scores:
    """Score one released CSV with SDNist (in ``workdir``, where it writes its ``reports`` folder)."""
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([python, "-m", "sdnist.report", str(released.resolve()), target,
                           "--data-root", str(data_root.resolve())],
                          cwd=workdir, capture_output=True, text=True)
    reports = sorted(workdir.glob("reports/*/report.json"))
    if proc.returncode != 0 or not reports:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ToolFailed(f"SDNist failed on {released}: {' | '.join(tail)}")
    return parse_report(json.loads(reports[-1].read_text(encoding="utf-8")), reports[-1].parent)


# --------------------------------------------------------------------------------------------
# The setting every configuration shares


@dataclass
class Setup:
    """The file to release and what every configuration may use.

    source: the input file (the scored features, plus derived strata), as read by pramkit
    frame: the same as text (every value a string, 'N' kept as it is)
    features: the scored features; public: those released as they are (never perturbed)
    categories: each variable's codes from SDNist's data dictionary (declared, not read off the data)
    key: the secret key of every perturbation; seed: the seed of the DP counts' noise
    ranges: the codes of a numeric variable the dictionary gives by its range (AGEP: 0 to 99), for the
        configurations that protect it (the others keep their categories as before)
    peer_seconds: how long a peer's release may run before it is stopped (:class:`Unfinished`)
    rounds_per_variable: the model pgm's nominal rounds over the number of variables (``--rounds-per-variable``;
        None: the command's default)
    bins: the model pgm's declared bins (``--bins``), variable -> width, for the features among them
    tables_per_fit: the model pgm's tables between two fits (``--tables-per-fit``; None: the command's default)
    peer_releases: the folder of the peers' releases kept from earlier runs (``--peer-releases``; None: none kept)
    """

    source: Path
    frame: Any
    features: tuple[str, ...]
    public: tuple[str, ...]
    categories: dict[str, list[str]]
    key: bytes
    seed: int
    workdir: Path
    ranges: dict[str, list[str]] = field(default_factory=dict)
    peer_seconds: float | None = None  # a peer's release stopped after this long (``--peer-minutes``); None: never
    rounds_per_variable: int | None = None  # the model pgm's ``--rounds`` over the variables; None: the default
    tables_per_fit: int | None = None  # the model pgm's ``--tables-per-fit``; None: the command's default
    bins: dict[str, int] = field(default_factory=dict)  # the model pgm's ``--bins``, for the features among them
    peer_releases: Path | None = None  # ``--peer-releases``: a peer's release kept there is read, not made again
    kept_only: bool = False  # ``--kept-peers-only``: a peer's release not kept in ``peer_releases`` is not made

    @property
    def perturbed(self) -> list[str]:
        return [f for f in self.features if f not in self.public]

    def rng(self) -> random.Random:
        return random.Random(self.seed)

    def codebook(self, variables: Sequence[str], *, without: Sequence[str] = ()) -> dict[str, list[str]]:
        return {v: [c for c in self.categories[v] if c not in without] for v in variables if v in self.categories}

    def path(self, name: str) -> Path:
        return self.workdir / name

    def rules(self, name: str, rows: list[dict[str, str]]) -> Path | None:
        """Write an edit-rules CSV (docs/structure.md: a row is a forbidden combination, '' any value)."""
        if not rows:
            return None
        columns = list(dict.fromkeys(c for row in rows for c in row))
        path = self.path(name)
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, columns)
            w.writeheader()
            w.writerows(rows)
        return path

    def apply(self, src: Path, manifest: Any, out: str, *, na_values: Sequence[str] = ("NA",),
              shuffle: bool = False) -> tuple[Path, Any]:
        import pramkit

        path = self.path(out)
        result = pramkit.apply_file(src, manifest, path, key=self.key, force=True, na_values=na_values,
                                    shuffle=shuffle, public_columns=self.public if shuffle else ())
        return path, result


@dataclass
class Release:
    """What a configuration made: the released file, its manifests in the order applied, a note.

    steps: (step name, manifest) pairs; one step is written NAME.json, several NAME.STEP.json
    guarantees: the shuffled file's guarantees (``apply --shuffle``), if any
    na_values: the texts the design read as missing (the estimates read them the same way)
    """

    released: Path
    steps: list[tuple[str, Any]]
    guarantees: Any = None
    na_values: tuple[str, ...] = ("NA",)
    note: str = ""
    synthesis: Any = None  # a pramkit.synthesize.SynthesisResult (central epsilon; its manifest is kept)
    central: str | None = None  # another tool's stated central guarantee (its own words)
    kept: KeptRelease | None = None  # read from ``--peer-releases``: when and how fast an earlier run made it


@dataclass(frozen=True)
class Config:
    build: Callable[[Setup], Release]
    summary: str


#: Configuration name -> how to make its release.  Add one with ``@configuration``.
CONFIGS: dict[str, Config] = {}


def configuration(name: str, summary: str) -> Callable[[Callable[[Setup], Release]], Callable[[Setup], Release]]:
    def register(build: Callable[[Setup], Release]) -> Callable[[Setup], Release]:
        CONFIGS[name] = Config(build, summary)
        return build
    return register


class Skip(Exception):
    """The configuration does not apply to these features (the message says why)."""


class ToolFailed(RuntimeError):
    """SDNist could not score a release, or a peer could not release (the message names the tool and the file,
    and ends with the tool's last words)."""


class NotKept(Exception):
    """A peer's release not kept in ``--peer-releases``, under ``--kept-peers-only``: its row says so, with no score."""

    def __init__(self, central: str) -> None:
        super().__init__("not kept")
        self.central = central


class Unfinished(Exception):
    """A peer's release was stopped at its time limit (``--peer-minutes``): its row says so, with no score."""

    def __init__(self, seconds: float, central: str) -> None:
        super().__init__(f"not finished in {seconds / 60:g} min")
        self.seconds, self.central = seconds, central


# --------------------------------------------------------------------------------------------
# Edit rules from SDNist's definitions (data_dictionary.json, the inconsistency checks)

CHILD = ("0-2", "3-4", "5-14")  # under 15: MSP, PINCP_DECILE 'N'; no veteran; no doctorate
AGE_CLASSES = ((0, 2, "0-2"), (3, 4, "3-4"), (5, 14, "5-14"), (15, 200, "15+"))


def age_class(age: str) -> str:
    a = int(age)
    return next(label for lo, hi, label in AGE_CLASSES if lo <= a <= hi)


def age_rules(setup: Setup, variables: Sequence[str], *, na_is_value: bool) -> list[dict[str, str]]:
    """Forbidden (age class, variable) combinations: every one a definition, none read off the data.

    MSP and PINCP_DECILE are 'N' exactly under 15, DREM and DPHY exactly under 5, EDU exactly under 3 (the
    data dictionary);
    no child under 15 is a veteran or holds a doctorate, none under 5 a diploma (SDNist's checks).
    """
    def codes(v: str, keep: Sequence[str]) -> str:
        return "|".join(c for c in setup.categories[v] if c not in keep)

    rows: list[dict[str, str]] = []
    child = "|".join(CHILD)
    for v in ("MSP", "PINCP_DECILE"):
        if v in variables:
            rows.append({AGE_CLASS: child, v: codes(v, [NA])})
            if na_is_value:
                rows.append({AGE_CLASS: "15+", v: NA})
    if "DVET" in variables:
        rows.append({AGE_CLASS: child, "DVET": codes("DVET", [NA])})
    for v in ("INDP", "INDP_CAT"):  # no work industry under 15 (the data dictionary, SDNist's checks)
        if v in variables:
            rows.append({AGE_CLASS: child, v: codes(v, [NA])})
    for v in ("DREM", "DPHY"):  # 'N' exactly under 5 (the data dictionary: "N/A (Less than 5 years old)")
        if v in variables:
            rows.append({AGE_CLASS: "0-2|3-4", v: codes(v, [NA])})
            if na_is_value:
                rows.append({AGE_CLASS: "5-14|15+", v: NA})
    if "EDU" in variables:
        rows.append({AGE_CLASS: "0-2", "EDU": codes("EDU", [NA])})
        rows.append({AGE_CLASS: "3-4", "EDU": codes("EDU", [NA, "1", "2", "3", "4"])})
        rows.append({AGE_CLASS: "5-14", "EDU": "12"})
        if na_is_value:
            rows.append({AGE_CLASS: "3-4|5-14|15+", "EDU": NA})
    return rows


def housing_rules(variables: Sequence[str], stratum: str | None = None) -> list[dict[str, str]]:
    """OWN_RENT is 0 (group quarters) exactly when HOUSING_TYPE is 2 or 3 (the data dictionary)."""
    if stratum is not None:
        return [row for v, rows in (("HOUSING_TYPE", [{stratum: "yes", "HOUSING_TYPE": "1"},
                                                      {stratum: "no", "HOUSING_TYPE": "2|3"}]),
                                    ("OWN_RENT", [{stratum: "yes", "OWN_RENT": "1|2"},
                                                  {stratum: "no", "OWN_RENT": "0"}]))
                if v in variables for row in rows]
    if {"HOUSING_TYPE", "OWN_RENT"} <= set(variables):
        return [{"HOUSING_TYPE": "1", "OWN_RENT": "0"}, {"HOUSING_TYPE": "2|3", "OWN_RENT": "1|2"}]
    return []


def family_rules(setup: Setup, variables: Sequence[str]) -> list[dict[str, str]]:
    """Forbidden combinations of the family and industry features, each a definition (none read off the data).

    NOC (own children) is below NPF (persons in the family) where both apply (SDNist's check), and 'N' (group
    quarters or vacant) only where NPF is 'N' too, and exactly in group quarters (HOUSING_TYPE 2 or 3), where NPF
    is 'N' too (the data dictionary); INDP and INDP_CAT are 'N' together (SDNist's check).  The
    codes are each variable's declared ones (its range where it is drawn over it).

    >>> s = Setup(Path("x.csv"), None, ("NOC", "NPF"), (), {}, b"", 0, Path("."),
    ...           {"NOC": ["N", "0", "1", "2"], "NPF": ["N", "2", "3"]})
    >>> family_rules(s, ["NOC", "NPF"])
    [{'NOC': 'N', 'NPF': '2|3'}, {'NOC': '2', 'NPF': '2'}]
    """
    def codes(v: str) -> list[str]:
        return [c for c in (setup.ranges.get(v) or setup.categories[v]) if c != NA]

    rows: list[dict[str, str]] = []
    if {"NOC", "NPF"} <= set(variables):
        npf = codes("NPF")
        rows.append({"NOC": NA, "NPF": "|".join(npf)})
        for k in codes("NOC"):
            too_few = [j for j in npf if int(j) <= int(k)]
            if too_few:
                rows.append({"NOC": k, "NPF": "|".join(too_few)})
    for v in ("NOC", "NPF"):  # 'N' in group quarters (HOUSING_TYPE 2 or 3): "N/A (GQ/vacant...)"; NOC only there
        if {"HOUSING_TYPE", v} <= set(variables):
            rows.append({"HOUSING_TYPE": "2|3", v: "|".join(codes(v))})
            if v == "NOC":
                rows.append({"HOUSING_TYPE": "1", v: NA})
    if {"INDP", "INDP_CAT"} <= set(variables):
        rows += [{"INDP": NA, "INDP_CAT": "|".join(codes("INDP_CAT"))},
                 {"INDP": "|".join(codes("INDP")), "INDP_CAT": NA}]
        rows += sector_rules(codes("INDP"), codes("INDP_CAT"))
    return rows


#: The sectors of the Census industry codes (INDP, the 2017 Census Industry Code List of the 2019 PUMS data
#: dictionary, whose every label opens with its sector): INDP_CAT's code k is the k-th range, first to last.
INDUSTRY_SECTORS = ((170, 290), (370, 490), (570, 690), (770, 770), (1070, 3990), (4070, 4590), (4670, 5790),
                    (6070, 6390), (6470, 6780), (6870, 7190), (7270, 7790), (7860, 7890), (7970, 8290), (8370, 8470),
                    (8560, 8690), (8770, 9290), (9370, 9590), (9670, 9870), (9920, 9920))


def sector_rules(indp: Sequence[str], sectors: Sequence[str]) -> list[dict[str, str]]:
    """INDP_CAT is INDP's sector (a definition): each sector forbidden beside the industry codes outside it.

    A code in no range of :data:`INDUSTRY_SECTORS` is left free.

    >>> sector_rules(["170", "290", "370", "9999"], ["0", "1"])
    [{'INDP': '370', 'INDP_CAT': '0'}, {'INDP': '170|290', 'INDP_CAT': '1'}]
    """
    def sector(code: str) -> str | None:
        value = int(code)
        return next((str(k) for k, (lo, hi) in enumerate(INDUSTRY_SECTORS) if lo <= value <= hi), None)

    of = {c: sector(c) for c in indp}
    rows = []
    for k in sectors:
        outside = [c for c, s in of.items() if s is not None and s != k]
        if outside:
            rows.append({"INDP": "|".join(outside), "INDP_CAT": k})
    return rows


def definition_rules(setup: Setup, variables: Sequence[str]) -> list[dict[str, str]]:
    """Every rule of a file whose variables are all drawn or perturbed, 'N' a value: the age rules on AGEP's own
    values, the housing rules, and the family and industry rules.

    >>> s = Setup(Path("x.csv"), None, (), (), {"INDP": ["N", "170"], "INDP_CAT": ["N", "0"]}, b"", 0, Path("."),
    ...           {"AGEP": [str(a) for a in range(100)]})
    >>> [sorted(r) for r in definition_rules(s, ["AGEP", "INDP", "INDP_CAT"])]
    [['AGEP', 'INDP'], ['AGEP', 'INDP_CAT'], ['INDP', 'INDP_CAT'], ['INDP', 'INDP_CAT']]
    """
    return (age_rules_on_ages(setup, variables, na_is_value=True) + housing_rules(variables)
            + family_rules(setup, variables))


def resample_rules(setup: Setup, variables: Sequence[str]) -> list[dict[str, str]]:
    """:func:`definition_rules` without those the others imply, so that no rules tie variables in a cycle (``pramkit
    resample`` enforces its rules along a tree): with INDP and INDP_CAT both drawn, no work industry under 15 is
    written on INDP alone, for INDP_CAT is 'N' exactly where INDP is (:func:`family_rules`).

    >>> s = Setup(Path("x.csv"), None, (), (), {"INDP": ["N", "170"], "INDP_CAT": ["N", "0"]}, b"", 0, Path("."),
    ...           {"AGEP": [str(a) for a in range(100)]})
    >>> [sorted(r) for r in resample_rules(s, ["AGEP", "INDP", "INDP_CAT"])]
    [['AGEP', 'INDP'], ['INDP', 'INDP_CAT'], ['INDP', 'INDP_CAT']]
    """
    rules = definition_rules(setup, variables)
    if {"INDP", "INDP_CAT"} <= set(variables):
        rules = [r for r in rules if set(r) != {"AGEP", "INDP_CAT"}]
    return rules


def with_strata(setup: Setup, columns: Sequence[str]) -> Path:
    """The input file with the derived stratum columns added (computed from public or released columns)."""
    frame = setup.frame.copy()
    if AGE_CLASS in columns:
        if "AGEP" not in setup.public:
            raise Skip("needs AGEP among the public features")
        frame[AGE_CLASS] = frame["AGEP"].map(age_class)
    if GROUP_QUARTERS in columns:
        if "HOUSING_TYPE" not in setup.features:
            raise Skip("needs HOUSING_TYPE")
        frame[GROUP_QUARTERS] = frame["HOUSING_TYPE"].map(lambda h: "no" if h == "1" else "yes")
    path = setup.path("input-" + "-".join(columns) + ".csv")
    if not path.exists():
        frame.to_csv(path, index=False)
    return path


# --------------------------------------------------------------------------------------------
# The configurations


@configuration("raw", "the original file itself: the ceiling of every utility measure (no protection)")
def raw(setup: Setup) -> Release:
    return Release(setup.source, [])


def _sdcmicro(setup: Setup, *, structured: bool, diagonal: str | None = None, pd: float = 0.8) -> Release:
    import pramkit

    options = {"pd": pd, "alpha": 0.5, "seed": setup.seed, **({"diagonal": diagonal} if diagonal else {})}
    variables = setup.perturbed
    if not structured:
        m = pramkit.design_release(setup.source, variables, method="invariant", options=options,
                                   exact_frequencies=True, categories=setup.codebook(variables),
                                   na_values=())
        out, _ = setup.apply(setup.source, m, "released.csv", na_values=())
        return Release(out, [("pram", m)], na_values=())
    strata = [AGE_CLASS, GROUP_QUARTERS]
    src = with_strata(setup, strata)
    rules = setup.rules("sdcmicro-rules.csv", age_rules(setup, variables, na_is_value=True)
                        + housing_rules(variables, GROUP_QUARTERS))
    m = pramkit.design_release(src, variables, method="invariant", options=options, exact_frequencies=True,
                               categories=setup.codebook(variables), na_values=(), forbid=rules, strata=strata)
    out, _ = setup.apply(src, m, "released.csv", na_values=())
    return Release(out, [("pram", m)], na_values=())


@configuration("sdcmicro-pram", "invariant PRAM as sdcMicro's pram (pd 0.8, alpha 0.5, exact frequencies), "
               "every feature but the public ones, 'N' a category")
def sdcmicro_pram(setup: Setup) -> Release:
    return _sdcmicro(setup, structured=False)


@configuration("sdcmicro-pram-rules", "the same with edit rules and strata: age class (from AGEP) and "
               "group quarters (HOUSING_TYPE 2|3, released exactly)")
def sdcmicro_pram_rules(setup: Setup) -> Release:
    return _sdcmicro(setup, structured=True)


def _sdcmicro_joint(setup: Setup, *, design_epsilon: float | None = None) -> Release:
    """sdcMicro's invariant construction on joint cells, two manifests applied one after the other.

    housing: HOUSING_TYPE x OWN_RENT jointly over the 4 cells the housing rule allows, so that the
    released joint table equals the original in expectation and group quarters is not released exactly;
    person: the others as in sdcmicro-pram-rules (strata the age class, the age rules; 'N' a category).
    ``design_epsilon``: both designs read DP counts at that budget (shared in proportion to the cells)
    instead of the exact frequencies.
    """
    import pramkit

    options = {"pd": 0.8, "alpha": 0.5, "seed": setup.seed}
    variables = setup.perturbed
    housing = [v for v in ("HOUSING_TYPE", "OWN_RENT") if v in variables]
    if len(housing) < 2:
        raise Skip("needs HOUSING_TYPE and OWN_RENT among the perturbed features")
    person = [v for v in variables if v not in housing]
    cells = {"housing": 4, "person": sum(len(setup.categories[v]) for v in person) * len(AGE_CLASSES)}

    def source(step: str) -> dict[str, Any]:
        if design_epsilon is None:
            return {"exact_frequencies": True}
        return {"design_epsilon": design_epsilon * cells[step] / sum(cells.values()), "rng": setup.rng()}

    src = with_strata(setup, [AGE_CLASS])
    m = pramkit.design_release(src, housing, method="invariant", split="joint", options=options,
                               forbid=setup.rules("joint-housing-rules.csv", housing_rules(housing)),
                               categories=setup.codebook(housing), na_values=(), **source("housing"))
    current, _ = setup.apply(src, m, "released.housing.csv", na_values=())
    steps: list[tuple[str, Any]] = [("housing", m)]
    if person:
        rules = setup.rules("joint-person-rules.csv", age_rules(setup, person, na_is_value=True))
        m = pramkit.design_release(src, person, method="invariant", options=options, strata=[AGE_CLASS],
                                   forbid=rules, categories=setup.codebook(person), na_values=(),
                                   **source("person"))
        current, _ = setup.apply(current, m, "released.csv", na_values=())
        steps.append(("person", m))
    return Release(current, steps, na_values=())


@configuration("sdcmicro-pram-joint", "sdcMicro's invariant matrix (pd 0.8, alpha 0.5, exact frequencies) on the "
               "joint cells of HOUSING_TYPE x OWN_RENT with the housing rule; the rest as sdcmicro-pram-rules")
def sdcmicro_pram_joint(setup: Setup) -> Release:
    return _sdcmicro_joint(setup)


@configuration("sdcmicro-pram-joint-dp", "sdcmicro-pram-joint designed on DP counts (design epsilon 1, in the "
               "ledger) instead of the exact frequencies")
def sdcmicro_pram_joint_dp(setup: Setup) -> Release:
    return _sdcmicro_joint(setup, design_epsilon=1.0)


def _dp(setup: Setup, epsilon: float, *, shuffle: bool = False) -> Release:
    """DP-optimal PRAM (form (8)), budget split equally, 'N' read as missing (kept, never made)."""
    import pramkit

    variables = setup.perturbed
    m = pramkit.design_release(setup.source, variables, epsilon=epsilon, rng=setup.rng(), na_values=(NA,),
                               categories=setup.codebook(variables, without=[NA]))
    out, result = setup.apply(setup.source, m, "released.csv", na_values=(NA,), shuffle=shuffle)
    return Release(out, [("dp", m)], guarantees=result.guarantees if shuffle else None, na_values=(NA,))


#: The central delta of a shuffled release's stated epsilon (``apply --shuffle``): stricter than the peers'
#: 1e-5, so a row at central epsilon E is also (E, 1e-5)-DP.
SHUFFLE_DELTA = 1e-6


def local_for_central(central: float, design: Callable[[float], Any], n: int, *, delta: float = SHUFFLE_DELTA,
                      bounds: tuple[float, float] = (0.01, 40.0), rtol: float = 1e-5) -> tuple[float, Any, float]:
    """The largest local budget in ``bounds`` (to ``rtol``) whose design, its columns shuffled among ``n``
    records with none public, is at most ``central``-DP at ``delta``, as ``apply --shuffle`` states it
    (:func:`pramkit.privacy.amplification.release_guarantees`: the clone bound with the matrices' own clone
    probability, plus the design step's epsilon), found by :func:`pramkit.risk.tuning.search_epsilon`:
    ``(local, manifest, its central epsilon)``.  ``design`` makes the manifest at a local budget; the
    central epsilon grows with it.

    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.manifest import Manifest
    >>> rr = lambda e: Manifest.of({"sex": randomized_response(["f", "m"], e)})
    >>> local, _, got = local_for_central(0.5, rr, 10_000)
    >>> from pramkit.privacy.shuffle_bound import shuffled_epsilon
    >>> above = shuffled_epsilon([randomized_response(["f", "m"], local + 1e-3)], 10_000, 1e-6).epsilon
    >>> got <= 0.5 < above, round(local, 1)
    (True, 4.3)
    """
    from pramkit.errors import ParameterError
    from pramkit.privacy.amplification import release_guarantees
    from pramkit.risk.tuning import search_epsilon

    def central_of(local: float) -> float:
        m = design(local)
        g = release_guarantees(m, columns=list(m.columns), shuffled=True, clones=n, delta=delta)
        return math.inf if g.shuffled is None else g.shuffled

    try:
        found = search_epsilon(central_of, bounds, central, measure="the central epsilon", rtol=rtol)
    except ParameterError as err:
        raise Skip(f"{err} (among {n} records)") from None
    return found.epsilon, design(found.epsilon), found.risk


def _dp_shuffled(setup: Setup, central: float) -> Release:
    """DP-optimal PRAM on every feature ('N' a category, AGEP over its declared range), written in a random
    order (``apply --shuffle``), at the largest local budget whose shuffled central epsilon is ``central``."""
    import pramkit

    variables = list(setup.features)
    if setup.public:
        raise Skip("a central epsilon for every column needs every column perturbed: run with --public ''")
    cats = {**setup.codebook(variables), **{v: r for v, r in setup.ranges.items() if v in variables}}
    local, m, _ = local_for_central(
        central, lambda e: pramkit.design_release(setup.source, variables, epsilon=e, rng=setup.rng(),
                                                  na_values=(), categories=cats), len(setup.frame))
    out, result = setup.apply(setup.source, m, "released.csv", na_values=(), shuffle=True)
    g = result.guarantees
    if g is None or g.shuffled is None or g.shuffled > central + 1e-9:
        raise RuntimeError(f"the shuffled release states {getattr(g, 'shuffled', None)}, not at most {central:g}")
    return Release(out, [("dp", m)], guarantees=g, na_values=(),
                   note=f"local record budget {local:.3f}, shuffled among {len(setup.frame):,} records")


def _dp_rules(setup: Setup, epsilon: float, *, invariant: bool = False) -> Release:
    """Two manifests applied one after the other, the budget shared in proportion to the variables.

    housing: HOUSING_TYPE x OWN_RENT jointly over the 4 cells the rules allow;
    person: the other variables, strata the age class, the age rules; 'N' a category.
    ``invariant``: both designs are the invariant least-change design (docs/geography.md) instead of
    DP-optimal: every cell keeps its share of the released file within its stratum.
    """
    import pramkit

    design = ({"method": "dp", "distances": "discrete", "options": {"objective": "distance", "invariant": True}}
              if invariant else {})

    variables = setup.perturbed
    housing = [v for v in ("HOUSING_TYPE", "OWN_RENT") if v in variables]
    if len(housing) < 2:
        housing = []
    person = [v for v in variables if v not in housing]
    src = with_strata(setup, [AGE_CLASS])
    steps: list[tuple[str, Any]] = []
    current = src
    share = epsilon / len(variables)
    if housing:
        rules = setup.rules("housing-rules.csv", housing_rules(housing))
        m = pramkit.design_release(current, housing, epsilon=share * len(housing), split="joint", forbid=rules,
                                   rng=setup.rng(), categories=setup.codebook(housing), na_values=(), **design)
        current, _ = setup.apply(current, m, "released.housing.csv", na_values=())
        steps.append(("housing", m))
    if person:
        rules = setup.rules("person-rules.csv", age_rules(setup, person, na_is_value=True))
        m = pramkit.design_release(src, person, epsilon=share * len(person), strata=[AGE_CLASS], forbid=rules,
                                   rng=setup.rng(), categories=setup.codebook(person), na_values=(), **design)
        current, _ = setup.apply(current, m, "released.csv", na_values=())
        steps.append(("person", m))
    return Release(current, steps, na_values=())


def _register_dp() -> None:
    for eps in (3, 10, 20):
        configuration(f"dp-{eps}", f"DP-optimal PRAM at record budget {eps}, split equally, 'N' missing "
                      "(kept as it is)")(lambda s, e=eps: _dp(s, e))
    for eps in (10, 20):
        configuration(f"dp-rules-strata-{eps}", f"DP-optimal at {eps}: HOUSING_TYPE x OWN_RENT jointly with the "
                      "housing rule, the rest stratified by age class with the age rules ('N' a category)")(
            lambda s, e=eps: _dp_rules(s, e))
    configuration("dp-10-shuffle", "dp-10 written with apply --shuffle (AGEP, SEX public): the ledger's "
                  "central epsilon")(lambda s: _dp(s, 10, shuffle=True))


_register_dp()


def _invariant(setup: Setup, epsilon: float) -> Release:
    """The invariant least-change DP design (docs/geography.md): each of the perturbed features keeps its share of
    the released file within each age class (the stratum, from the public AGEP), with the age rules; 'N' a
    category; the budget split equally; HOUSING_TYPE and OWN_RENT perturbed apart (their rule is left to
    ``resample``)."""
    import pramkit

    variables = setup.perturbed
    src = with_strata(setup, [AGE_CLASS])
    rules = setup.rules("invariant-rules.csv", age_rules(setup, variables, na_is_value=True))
    m = pramkit.design_release(src, variables, epsilon=epsilon, method="dp", strata=[AGE_CLASS], forbid=rules,
                               distances="discrete", options={"objective": "distance", "invariant": True},
                               rng=setup.rng(), categories=setup.codebook(variables), na_values=())
    out, _ = setup.apply(src, m, "released.csv", na_values=())
    return Release(out, [("invariant", m)], na_values=())


def _resampled(setup: Setup, release: Release, rules: list[dict[str, str]]) -> Release:
    """The release post-processed by ``pramkit resample`` (the same epsilon), the given rules enforced."""
    import pramkit

    (_, manifest), = release.steps
    path = setup.path("resampled.csv")
    forbid = setup.rules("resample-rules.csv", rules)
    pramkit.resample_release(release.released, manifest, path, key=setup.key, forbid=forbid, force=True,
                             na_values=release.na_values)
    return Release(path, release.steps, guarantees=release.guarantees, na_values=release.na_values,
                   note="; ".join(filter(None, [release.note, "resampled from the release"])))


def age_rules_on_ages(setup: Setup, variables: Sequence[str], *, na_is_value: bool) -> list[dict[str, str]]:
    """:func:`age_rules` written on AGEP's own values (for a file without the age class column): those of
    the file where AGEP is released as it is, its declared range where it is itself drawn; none for features
    without AGEP (``--features``), where no rule can name an age.

    >>> import pandas as pd
    >>> s = Setup(Path("x.csv"), pd.DataFrame({"SEX": ["1"], "MSP": ["N"]}), ("SEX", "MSP"), (),
    ...           {"MSP": ["N", "1", "2"]}, b"", 0,
    ...           Path("."), {"AGEP": [str(a) for a in range(100)]})
    >>> age_rules_on_ages(s, ["SEX", "MSP"], na_is_value=True)
    []
    >>> len(age_rules_on_ages(s, ["AGEP", "MSP"], na_is_value=True)) > 0
    True
    """
    drawn = "AGEP" in variables and "AGEP" in setup.ranges
    if not drawn and "AGEP" not in setup.frame:
        return []
    ages = setup.ranges["AGEP"] if drawn else sorted(set(setup.frame["AGEP"]), key=int)
    spelled = {label: "|".join(a for a in ages if lo <= int(a) <= hi) for lo, hi, label in AGE_CLASSES}
    return [{("AGEP" if c == AGE_CLASS else c): ("|".join(spelled[x] for x in v.split("|") if spelled[x])
                                                if c == AGE_CLASS else v) for c, v in row.items()}
            for row in age_rules(setup, variables, na_is_value=na_is_value)]


@configuration("sdcmicro-pram-rules-fixed", "sdcmicro-pram-rules with P's diagonal fixed at pd 0.8 (diagonal "
               "'fixed') instead of drawn from U(0.8, 1): more values move")
def sdcmicro_pram_rules_fixed(setup: Setup) -> Release:
    return _sdcmicro(setup, structured=True, diagonal="fixed")


def _register_post_processed() -> None:
    configuration("invariant-rules-strata-10", "the invariant least-change design at 10: HOUSING_TYPE x OWN_RENT "
                  "jointly with the housing rule, the rest within age classes with the age rules ('N' a category)")(
        lambda s: _dp_rules(s, 10, invariant=True))
    for eps in (10, 20):
        configuration(f"invariant-{eps}", f"invariant least-change DP design at record budget {eps} within age "
                      "classes, the age rules, 'N' a category")(lambda s, e=eps: _invariant(s, e))
        configuration(f"invariant-{eps}-resampled", f"invariant-{eps}, then `pramkit resample` with the age and "
                      "housing rules (post-processing: the same epsilon)")(
            lambda s, e=eps: _resampled(s, _invariant(s, e), age_rules(s, s.perturbed, na_is_value=True)
                                        + housing_rules(s.perturbed)))
        configuration(f"dp-{eps}-resampled", f"dp-{eps}, then `pramkit resample` with the age rules (on AGEP) and "
                      "the housing rule (post-processing: the same epsilon)")(
            lambda s, e=eps: _resampled(s, _dp(s, e), age_rules_on_ages(s, s.perturbed, na_is_value=False)
                                        + housing_rules(s.perturbed)))


_register_post_processed()


def _synthesized(setup: Setup, epsilon: float, min_count: int, *, every: bool = False, model: str = "margins",
                 neighbours: str = "replace-one", rounds_per_variable: int | None = None,
                 delta: float | None = None, binned: bool = False,
                 records_per_draw: float | None = None) -> Release:
    """``pramkit synthesize``: the public columns as they are, the others drawn from DP-measured margins;
    ``every``: every feature synthesized, none released as it is (``--public`` ignored), a numeric
    feature's codes its declared range; ``rounds_per_variable``: the model pgm's ``--rounds`` over the number
    of variables (None: the setup's, ``--rounds-per-variable``); ``delta``: the model pgm's ``--delta`` (an
    (epsilon, delta) guarantee accounted in zCDP); ``binned``: the model pgm's features among the setup's bins
    modelled in them (``--bins``); ``records_per_draw``: the model pgm's ``--records-per-draw``."""
    import pramkit

    variables = list(setup.features) if every else setup.perturbed
    public = () if every else setup.public
    rules = definition_rules(setup, variables)
    categories = {**setup.codebook(variables), **({v: r for v, r in setup.ranges.items() if v in variables}
                                                  if every else {})}
    path = setup.path("synthesized.csv")
    if model == "pgm" and rounds_per_variable is None:
        rounds_per_variable = setup.rounds_per_variable
    bins = {v: w for v, w in setup.bins.items() if v in variables} if model == "pgm" and binned else {}
    res = pramkit.synthesize_release(setup.source, path, variables=variables, public=public,
                                     epsilon=epsilon, key=setup.key, categories=categories,
                                     forbid=setup.rules("synthesis-rules.csv", rules), min_count=min_count,
                                     na_values=(), force=True, **({"model": model} if model != "margins" else {}),
                                     **({"neighbours": neighbours} if neighbours != "replace-one" else {}),
                                     **({"rounds": rounds_per_variable * len(variables)}
                                        if rounds_per_variable else {}),
                                     **({"delta": delta} if delta is not None else {}),
                                     **({"bins": bins} if bins else {}),
                                     **({"records_per_draw": records_per_draw} if records_per_draw else {}),
                                     **({"tables_per_fit": setup.tables_per_fit}
                                        if model == "pgm" and setup.tables_per_fit else {}))
    return Release(path, [], na_values=(), synthesis=res,
                   note=f"{res.shared_draws} records share their draw" if min_count == 2 else "")


for _eps in (5, 10):
    configuration(f"synth-{_eps}", f"`pramkit synthesize` at central epsilon {_eps}: AGEP and SEX as they are, the "
                  "rest drawn from DP-measured margins (each given the public cell, each pair), the age and housing "
                  "rules, each draw shared by two records of the same public values")(
        lambda s, e=_eps: _synthesized(s, e, 2))
configuration("synth-10-single", "synth-10 with one draw per record (min_count 1)")(lambda s: _synthesized(s, 10, 1))
for _eps in (1, 2, 5, 10):
    configuration(f"synth-all-{_eps}", f"`pramkit synthesize --public ''` at central epsilon {_eps}: every feature "
                  "synthesized, none released as it is (AGEP's codes its declared range 0-99), the age and housing "
                  "rules, each draw shared by two records (min-count 2; with no public column, any two)")(
        lambda s, e=_eps: _synthesized(s, e, 2, every=True))


for _eps in (1, 2, 5, 10):
    configuration(f"pgm-all-{_eps}", f"`pramkit synthesize --model pgm --public ''` at central epsilon {_eps}: every "
                  "feature synthesized from a graphical model (Private-PGM) over 1- to 3-way tables chosen under the "
                  "budget as AIM chooses them (pure epsilon-DP), the age and housing rules as structural zeros, each "
                  "draw shared by two records (min-count 2)")(
        lambda s, e=_eps: _synthesized(s, e, 2, every=True, model="pgm"))
    configuration(f"pgm-all-{_eps}-single", f"pgm-all-{_eps} with one draw per record (min-count 1)")(
        lambda s, e=_eps: _synthesized(s, e, 1, every=True, model="pgm"))
for _eps in (1, 2, 5, 10):
    configuration(f"pgm-ar-{_eps}", f"pgm-all-{_eps} under add-or-remove neighbours (`--neighbours add-remove`, the "
                  "peers' relation): pure epsilon-DP, delta 0, every table at L1 sensitivity 1, the number of records "
                  "estimated from the noisy tables")(
        lambda s, e=_eps: _synthesized(s, e, 2, every=True, model="pgm", neighbours="add-remove"))
#: The model pgm's tuned rounds: AIM's T = 16 rounds per variable (``--rounds 16 d``) in place of the default 4.
TUNED_ROUNDS_PER_VARIABLE = 16
for _eps in (1, 2, 5, 10):
    configuration(f"pgm-tuned-{_eps}", f"pgm-all-{_eps} with AIM's {TUNED_ROUNDS_PER_VARIABLE} rounds per variable "
                  f"(`--rounds {TUNED_ROUNDS_PER_VARIABLE} d`, d the number of features): more tables chosen, each "
                  "measured with more noise")(
        lambda s, e=_eps: _synthesized(s, e, 2, every=True, model="pgm",
                                       rounds_per_variable=TUNED_ROUNDS_PER_VARIABLE))


#: The peers: dpmm's MST and AIM synthesizers (McKenna et al.'s, as SmartNoise's MST and AIM), run by
#: ``DPMM_PYTHON``: every column categorical over its declared codes (no binning, none of the budget spent on a
#: domain), the released file as many records as the original.
PEER_SCRIPT = """
import json, sys
import pandas as pd
from dpmm.pipelines import AIMPipeline, MSTPipeline
peer, source, codes_file, out, epsilon, delta, seed = sys.argv[1:8]
codes = json.load(open(codes_file))
frame = pd.read_csv(source, dtype=str, keep_default_na=False)[list(codes)]
coded = pd.DataFrame({c: pd.Categorical(frame[c], categories=v).codes for c, v in codes.items()})
assert (coded >= 0).all().all(), "a value outside its declared codes"
model = {"mst": MSTPipeline, "aim": AIMPipeline}[peer](epsilon=float(epsilon), delta=float(delta),
                                                      disable_processing=True, n_jobs=1)
model.fit(coded, domain={c: len(v) for c, v in codes.items()}, random_state=int(seed))
drawn = model.generate(n_records=len(frame), random_state=int(seed))
pd.DataFrame({c: [codes[c][int(i)] for i in drawn[c]] for c in codes}).to_csv(out, index=False)
"""
#: Kept for scripts that ran MST alone.
MST_SCRIPT = PEER_SCRIPT
PEER_DELTA = MST_DELTA = 1e-5
#: The peers run beside pramkit, by name.
PEERS = {"mst": "MST", "aim": "AIM"}
#: The peers' releases kept in the repository (``--peer-releases benchmarks/peer-releases``; made in the environment
#: of benchmarks/peers_setup.sh): AIM takes hours a release at epsilon 10, longer than one run here.
KEPT_PEER_RELEASES = Path(__file__).resolve().parent / "peer-releases"
#: The central epsilons of the side-by-side comparison (``--peers``).
PEER_EPSILONS = (1, 2, 10)
#: A peer's release still running after this many minutes is stopped (``--peer-minutes``): AIM at epsilon 10
#: had not finished after 80 minutes, and the table is printed only when every row has ended.
PEER_MINUTES = 60
#: The most ``--rounds-per-variable``: the command's most rounds (10 000) over the largest feature set's 11.
MOST_ROUNDS_PER_VARIABLE = 900
#: The model pgm's declared bins (``--bins``): AGEP in 5-year bins, POVPIP in bins of 25 points (SDNist reads
#: both in 20 percentile bins); measured to pay on the three feature sets (docs/benchmarks.md).
BINS = "AGEP=5,POVPIP=25"


def dpmm_python() -> str | None:
    """The interpreter of an environment with dpmm (``DPMM_PYTHON``), or None when it cannot import it."""
    return environment_python("DPMM_PYTHON", "dpmm.pipelines")


@dataclass(frozen=True)
class KeptRelease:
    """A peer's release made by an earlier run (``--peer-releases``): when (UTC, ISO 8601) and in how many seconds."""

    made: str
    seconds: float


@dataclass(frozen=True)
class PeerStore:
    """The peers' releases kept in a folder (``--peer-releases``), each under the digest of everything it was made
    from, so that a long run (AIM at epsilon 10 takes hours here) is made once and then scored by every later run.

    A release is made from: the peer's script (:data:`PEER_SCRIPT`), the peer, epsilon, delta and seed, the bytes
    of the input file and of the declared codes, and the peer's environment (its Python and every installed
    distribution with its version).  Any change of these gives another digest, so the release is made again.
    Each kept release is ``DIGEST.csv`` with ``DIGEST.json`` beside it: the inputs in words, the SHA-256 of the
    CSV, when it was made and in how many seconds.  A CSV whose bytes no longer have that SHA-256 is made again.

    >>> import tempfile
    >>> store = PeerStore(Path(tempfile.mkdtemp()))
    >>> inputs = {"peer": "aim", "epsilon": 10.0}
    >>> made = store.path(inputs).with_suffix(".new")
    >>> _ = made.write_text("A\\n1\\n", encoding="utf-8")
    >>> store.keep(inputs, made, 3600.0)
    >>> out = store.root / "copy.csv"
    >>> store.read(inputs, out).seconds, out.read_text(encoding="utf-8")
    (3600.0, 'A\\n1\\n')
    >>> store.read({"peer": "aim", "epsilon": 1.0}, out) is None
    True
    """

    root: Path

    def path(self, inputs: Mapping[str, Any]) -> Path:
        digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
        return self.root / f"{digest}.csv"

    def read(self, inputs: Mapping[str, Any], out: Path) -> KeptRelease | None:
        """Copy the release made from ``inputs`` to ``out``; None when none is kept, or its bytes have changed."""
        path = self.path(inputs)
        try:
            about = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
            data = path.read_bytes()
        except (OSError, ValueError):
            return None
        if not isinstance(about, dict) or about.get("inputs") != json.loads(json.dumps(inputs)) \
                or about.get("sha256") != hashlib.sha256(data).hexdigest():
            return None
        out.write_bytes(data)
        return KeptRelease(str(about["made"]), float(about["seconds"]))

    def keep(self, inputs: Mapping[str, Any], made: Path, seconds: float) -> None:
        """Keep the file ``made`` as the release of ``inputs``: the CSV, then its description, each written whole
        (:func:`pramkit.atomic.write_bytes_atomic`), so that a run stopped part-way leaves nothing a later run would read."""
        path = self.path(inputs)
        self.root.mkdir(parents=True, exist_ok=True)
        data = made.read_bytes()
        about = {"inputs": inputs, "sha256": hashlib.sha256(data).hexdigest(), "seconds": round(seconds, 3),
                 "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        from pramkit.atomic import write_bytes_atomic

        write_bytes_atomic(path, data, force=True)
        write_bytes_atomic(path.with_suffix(".json"), (json.dumps(about, indent=1, sort_keys=True) + "\n").encode(),
                           force=True)


_ENVIRONMENTS: dict[str, str] = {}


def environment_digest(python: str) -> str:
    """The SHA-256 of an interpreter's version and of every distribution installed beside it (name and version):
    a peer's release depends on them.  Asked once per interpreter in a run."""
    if python not in _ENVIRONMENTS:
        listing = subprocess.run(
            [python, "-c", "import sys, importlib.metadata as m; print(sys.version); "
             "print(sorted({(d.metadata['Name'] or '').lower(): d.version for d in m.distributions()}.items()))"],
            capture_output=True, text=True, check=True).stdout
        _ENVIRONMENTS[python] = hashlib.sha256(listing.encode()).hexdigest()
    return _ENVIRONMENTS[python]


def peer_codes(setup: Setup) -> bytes:
    """The declared codes of every feature as the peers are given them (JSON, feature -> codes): a numeric
    feature's whole declared range, each other feature's categories.  Part of what a kept release is made from."""
    return json.dumps({f: setup.ranges.get(f) or setup.categories[f] for f in setup.features}).encode()


def _peer(setup: Setup, peer: str, epsilon: float) -> Release:
    """dpmm's MST or AIM on every feature (none released as it is), in its own environment (``DPMM_PYTHON``); with
    ``--peer-releases``, read from there when an earlier run made it from the same inputs (:class:`PeerStore`)."""
    python = dpmm_python()
    if python is None:
        raise Skip("dpmm is not available: set DPMM_PYTHON to the interpreter of a venv with `pip install dpmm`")
    codes_file = setup.path(f"{peer}-codes.json")
    codes_file.write_bytes(peer_codes(setup))
    path = setup.path(f"{peer}.csv")
    central = f"{epsilon:g} (delta {PEER_DELTA:g}; dpmm {PEERS[peer]})"
    note = f"every feature synthesized by dpmm's {PEERS[peer]}"
    store = None if setup.peer_releases is None else PeerStore(setup.peer_releases)
    inputs: dict[str, Any] = {}
    if store is not None:
        inputs = {"peer": peer, "epsilon": epsilon, "delta": PEER_DELTA, "seed": setup.seed,
                  "script": hashlib.sha256(PEER_SCRIPT.encode()).hexdigest(),
                  "input": hashlib.sha256(setup.source.read_bytes()).hexdigest(),
                  "codes": hashlib.sha256(codes_file.read_bytes()).hexdigest(), "environment": environment_digest(python)}
        kept = store.read(inputs, path)
        if kept is not None:
            return Release(path, [], na_values=(), central=central, note=note, kept=kept)
        if setup.kept_only:
            raise NotKept(central)
    t0 = time.perf_counter()
    try:  # stopped (killed) at the time limit, when there is one
        proc = subprocess.run([python, "-c", PEER_SCRIPT, peer, str(setup.source), str(codes_file), str(path),
                               str(epsilon), str(PEER_DELTA), str(setup.seed)], capture_output=True, text=True,
                              timeout=setup.peer_seconds)
    except subprocess.TimeoutExpired:
        raise Unfinished(float(setup.peer_seconds or 0), central) from None
    if proc.returncode != 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no message)"]
        raise ToolFailed(f"dpmm's {PEERS[peer]} failed at epsilon {epsilon:g}: {last[0]}")
    if store is not None:
        from pramkit.errors import PramkitError

        try:
            store.keep(inputs, path, time.perf_counter() - t0)
        except (OSError, PramkitError) as why:  # the release stands (it is scored); a later run makes it again
            print(f"bench_sdnist: {peer}-{epsilon:g} not kept in {store.root}: {why}", file=sys.stderr)
    return Release(path, [], na_values=(), central=central, note=note)


def _mst(setup: Setup, epsilon: float) -> Release:
    return _peer(setup, "mst", epsilon)


for _peer_name, _title in PEERS.items():
    for _eps in PEER_EPSILONS:
        configuration(f"{_peer_name}-{_eps}", f"dpmm's {_title} at central epsilon {_eps}, delta {PEER_DELTA:g}, on "
                      "every feature (none released as it is; the codes declared), run in this benchmark beside "
                      f"synth-all-{_eps} (DPMM_PYTHON)")(lambda s, p=_peer_name, e=_eps: _peer(s, p, e))


#: The records given each draw on average by the ``-quarter`` rows of the model pgm (``--records-per-draw``).
QUARTER = 1.25
#: The same for the ``-half`` rows: half of the draws given two records, fewer records matched for about a point of
#: k-marginal (docs/benchmarks.md).
HALF = 1.5
#: The nominal rounds per variable of the ``-half`` rows (the command's default is 4): more, smaller tables, which
#: scored 3 to 8 points higher at epsilon 1 on the family and industry sets at each of three keys
#: (docs/benchmarks.md).
HALF_ROUNDS_PER_VARIABLE = 8
#: How the draws of a ``pgm-zcdp`` row go to records, by its name's suffix: its ``--records-per-draw`` (None: one
#: record a draw), the share of the draws given two records, and its own rounds per variable (None: the run's).
#: Every such row draws with ``--min-count 1``; a row without a suffix gives each draw to two records.
DRAWS: dict[str, tuple[float | None, str, int | None]] = {
    "-single": (None, "", None),
    "-quarter": (QUARTER, "a quarter", None),
    "-half": (HALF, "half", HALF_ROUNDS_PER_VARIABLE),
}
#: Every suffix a configuration's name may end with after its epsilon.
SUFFIXES = ("-resampled", *DRAWS)

#: The families a configuration name may take any parameter of (``on_demand``): a curve of releases, not a point.
ON_DEMAND = ("pgm-all-E", "pgm-zcdp-E", *(f"pgm-zcdp-E{d}" for d in DRAWS), "synth-all-E", "mst-E", "aim-E", "dp-E",
             "dp-E-resampled", "dp-shuffle-E", "dp-shuffle-E-resampled", "sdcmicro-pram-pdP")


def on_demand(name: str) -> bool:
    """Register ``name`` when it is one of the ``ON_DEMAND`` families at a parameter of its own (epsilon E > 0,
    sdcMicro's pd P in (0, 1]); False for any other name.  Registered names do not join the default run.

    >>> on_demand("pgm-all-0.25"), on_demand("sdcmicro-pram-pd0.9"), on_demand("dp-0"), on_demand("rr-3")
    (True, True, False, False)
    >>> "pgm-all-0.25" in CONFIGS and CONFIGS["sdcmicro-pram-pd0.9"].summary.startswith("invariant PRAM")
    True
    >>> for n in ("pgm-all-0.25", "sdcmicro-pram-pd0.9"):
    ...     del CONFIGS[n]
    """
    import re

    if name in CONFIGS:
        return True
    match = re.fullmatch(r"(pgm-all|pgm-zcdp|synth-all|mst|aim|dp-shuffle|dp)-(\d+(?:\.\d+)?)"
                         rf"({'|'.join(SUFFIXES)})?|sdcmicro-pram-pd(\d?\.\d+|1)", name)
    if match is None or (match.group(3) == "-resampled" and match.group(1) not in ("dp", "dp-shuffle")) or \
            (match.group(3) in DRAWS and match.group(1) != "pgm-zcdp"):
        return False
    if match.group(4) is not None:
        pd_ = float(match.group(4))
        if not 0 < pd_ <= 1:
            return False
        configuration(name, f"invariant PRAM as sdcMicro's pram (pd {pd_:g}, alpha 0.5, exact frequencies), every "
                      "feature but the public ones, 'N' a category")(
            lambda s: _sdcmicro(s, structured=False, pd=pd_))
        return True
    family, eps = match.group(1), float(match.group(2))
    from pramkit.design.dp.optimal import MAX_EPSILON  # pramkit's own bound: beyond it a noisy count is the count

    if not 0 < eps <= MAX_EPSILON:
        return False
    if family in PEERS:
        build: Callable[[Setup], Release] = lambda s: _peer(s, family, eps)  # noqa: E731
        summary = f"dpmm's {PEERS[family]} at central epsilon {eps:g}, delta {PEER_DELTA:g}, on every feature"
    elif family == "dp-shuffle":
        rules = match.group(3) == "-resampled"
        build = lambda s: (_resampled(s, _dp_shuffled(s, eps), resample_rules(s, s.features))  # noqa: E731
                           if rules else _dp_shuffled(s, eps))
        summary = (f"DP-optimal PRAM on every feature, shuffled (`apply --shuffle`), at the largest local budget "
                   f"whose central epsilon is {eps:g} (delta {SHUFFLE_DELTA:g}, clone bound)"
                   + (", then `pramkit resample` with the age, housing, family and industry rules" if rules else ""))
    elif family == "dp" and match.group(3):
        build = lambda s: _resampled(s, _dp(s, eps), age_rules_on_ages(s, s.perturbed, na_is_value=False)  # noqa: E731
                                     + housing_rules(s.perturbed))
        summary = f"dp-{eps:g}, then `pramkit resample` with the age and housing rules (the same epsilon)"
    elif family == "dp":
        build = lambda s: _dp(s, eps)  # noqa: E731
        summary = f"DP-optimal PRAM at record budget {eps:g}, split equally, 'N' missing (kept as it is)"
    elif family == "pgm-zcdp":
        draws = match.group(3)
        shared, share, rounds = DRAWS[draws] if draws else (None, "", None)
        build = lambda s: _synthesized(s, eps, 1 if draws else 2,  # noqa: E731
                                       every=True, model="pgm", neighbours="add-remove", delta=PEER_DELTA, binned=True,
                                       records_per_draw=shared, rounds_per_variable=rounds)
        summary = (f"`pramkit synthesize --model pgm --public '' --neighbours add-remove --delta {PEER_DELTA:g}` at "
                   f"central epsilon {eps:g}: the peers' guarantee, (epsilon, delta) by zCDP under add-or-remove"
                   + "; AGEP and POVPIP in bins where they are features (--bins)"
                   + ("; one draw per record (min-count 1), as the peers draw" if draws == "-single" else "")
                   + (f"; {shared:g} records a draw on average (--min-count 1 --records-per-draw {shared:g}: {share} "
                      "of the draws given to two records)" if shared else "")
                   + (f" and {rounds} rounds per variable (its own, whatever --rounds-per-variable says)"
                      if rounds else ""))
    else:
        model = "pgm" if family == "pgm-all" else "margins"
        build = lambda s: _synthesized(s, eps, 2, every=True, model=model)  # noqa: E731
        summary = f"`pramkit synthesize{' --model pgm' * (model == 'pgm')} --public ''` at central epsilon {eps:g}"
    configuration(name, summary)(build)
    return True


# --------------------------------------------------------------------------------------------
# Stated epsilons, from the manifests' ledgers


def stated(release: Release) -> tuple[str, str]:
    """The local and central epsilon as the ledgers state them (words where infinite or structural)."""
    from pramkit.ledger import fmt_epsilon
    from pramkit.privacy.epsilon import record_epsilon

    if release.synthesis is not None:
        res = release.synthesis
        chosen = f", {len(res.selections)} chosen" if getattr(res, "selections", None) else ""
        chosen += rounds_note(res.manifest) + bins_note(res.manifest)
        relation = ", add-remove" if getattr(res, "neighbours", "replace-one") == "add-remove" else ""
        delta = res.manifest.get("ledger", {}).get("delta")
        kind = "pure" if delta is None else f"delta {delta:g}, zCDP"
        return "-", f"{fmt_epsilon(res.record_epsilon)} ({kind}{relation}; {len(res.measurements)} DP tables{chosen})"
    if release.central is not None:
        return "-", release.central
    if not release.steps:
        return "none", "none"
    manifests = [m for _, m in release.steps]
    local = record_epsilon([m.record_epsilon for m in manifests])
    words = fmt_epsilon(local)
    if any(m.is_structured for m in manifests):
        given = record_epsilon([m.record_epsilon_given_structure for m in manifests])
        words = f"{words}; {fmt_epsilon(given)} given the structure"
    if any(m.ledger.frequencies == "exact" for m in manifests):
        words += "; design on exact frequencies (not covered)"
    central = "-"
    g = release.guarantees
    if g is not None:
        if g.shuffled is not None:
            central = f"{fmt_epsilon(g.shuffled)} (delta {g.delta:g}; smallest group {g.clones} records)"
        else:
            central = f"none: {g.shuffle_conditions}"
    return words, central


# --------------------------------------------------------------------------------------------
# Corrected 2-way tables


@dataclass(frozen=True)
class TableTV:
    pairs: int  # two-way tables with a perturbed variable
    corrected: int  # of them, those pramkit.estimate_table corrects
    corrected_mean: float
    corrected_max: float
    raw_mean: float  # the released file read as it is, on the same tables
    raw_max: float


def total_variation(a: Any, b: Any) -> float:
    """Half the L1 distance between two tables, each normalised to shares.

    >>> total_variation([[1, 1], [0, 0]], [[0, 0], [1, 1]])
    1.0
    """
    import numpy as np

    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    return float(0.5 * np.abs(x / x.sum() - y / y.sum()).sum())


def corrected_table(released: Path, manifest: Any, a: str, b: str, *, na_values: Sequence[str],
                    estimator: str) -> Any:
    """``pramkit.estimate_table``'s estimate of the (a, b) table, summed over strata and joint partners.

    ``manifest``: the release's manifest, or its manifests in the order applied (a release made in
    steps).  A column perturbed jointly is tabulated through its joint variable (its categories are
    the cells); a stratified variable's categories are (stratum, value): both are summed to (a, b).
    """
    import itertools

    import numpy as np
    import pandas as pd

    import pramkit
    from pramkit.estimate.chain import ManifestChain

    chain = ManifestChain.of(manifest)
    owner = {c: v.name for v in chain.variables for c in v.columns}
    tabulate = list(dict.fromkeys(owner.get(v, v) for v in (a, b)))
    est = pramkit.estimate_table(released, manifest, tabulate, na_values=tuple(na_values), estimator=estimator)
    counts = np.asarray(est.table.counts, dtype=float).reshape([len(c) for c in est.categories])
    records = []
    for index in itertools.product(*(range(len(c)) for c in est.categories)):
        values: dict[str, str] = {}
        for axis, i in enumerate(index):
            name, label = tabulate[axis], est.categories[axis][i]
            columns = chain[name].columns if name in chain.names else (name,)
            cell = label if isinstance(label, tuple) else (label,)
            values.update(zip(columns, (str(x) for x in cell[len(cell) - len(columns):])))
        records.append((values[a], values[b], counts[index]))
    frame = pd.DataFrame(records, columns=[a, b, "count"])
    return frame.groupby([a, b])["count"].sum().unstack(fill_value=0.0)


def two_way_tv(setup: Setup, release: Release, *, estimator: str = "mle") -> TableTV | None:
    """TV of every 2-way table of a perturbed feature, corrected (with every manifest of the release, in the
    order applied) and raw."""
    from itertools import combinations

    import numpy as np
    import pandas as pd

    if not release.steps and release.synthesis is None:
        return None
    released = pd.read_csv(release.released, dtype=str, keep_default_na=False)
    owner = {c: i for i, (_, m) in enumerate(release.steps) for c in m.columns}
    if release.synthesis is not None:  # nothing to correct: every synthesized column is read as it is
        owner = dict.fromkeys(release.synthesis.variables, -1)
    pairs = [p for p in combinations(setup.features, 2) if any(v in owner for v in p)]
    corrected: list[float] = []
    raw: list[float] = []
    na = set(release.na_values)
    with warnings.catch_warnings():  # the MLE's notes on singular matrices: the TV says what matters
        warnings.simplefilter("ignore")
        for a, b in pairs:
            _one_pair(setup, release, released, owner, a, b, na, estimator, corrected, raw)
    return TableTV(len(pairs), len(corrected),
                   float(np.mean(corrected)) if corrected else math.nan,
                   float(np.max(corrected)) if corrected else math.nan,
                   float(np.mean(raw)), float(np.max(raw)))


def _one_pair(setup: Setup, release: Release, released: Any, owner: dict[str, int], a: str, b: str,
              na: set[str], estimator: str, corrected: list[float], raw: list[float]) -> None:
    """Append the (a, b) table's raw TV, and its corrected TV where the release's manifests correct it."""
    from pramkit.errors import PramkitError

    truth = _crosstab(setup.frame, a, b, na)
    raw.append(total_variation(*_aligned(truth, _crosstab(released, a, b, na))))
    if not any(v in owner for v in (a, b)) or -1 in {owner.get(v) for v in (a, b)}:
        return
    try:
        est = corrected_table(release.released, [m for _, m in release.steps], a, b,
                              na_values=release.na_values, estimator=estimator)
    except PramkitError:  # a table the manifests cannot correct: left out (the count says how many)
        return
    corrected.append(total_variation(*_aligned(truth, est)))


def _crosstab(frame: Any, a: str, b: str, na: set[str]) -> Any:
    import pandas as pd

    rows = ~(frame[a].isin(na) | frame[b].isin(na))
    return pd.crosstab(frame.loc[rows, a], frame.loc[rows, b])


def _aligned(x: Any, y: Any) -> tuple[Any, Any]:
    rows = sorted(set(x.index) | set(y.index))
    cols = sorted(set(x.columns) | set(y.columns))
    return (x.reindex(index=rows, columns=cols, fill_value=0).to_numpy(),
            y.reindex(index=rows, columns=cols, fill_value=0).to_numpy())


# --------------------------------------------------------------------------------------------
# Running, keeping, printing


@dataclass
class Row:
    name: str
    local: str
    central: str
    scores: Scores | None
    tv: TableTV | None
    release_seconds: float
    score_seconds: float
    epsilon: float | None = None  # the finite local epsilon (given the structure, if any), for the plot
    note: str = ""
    digest: str = ""  # SHA-256 of the scored file: two runs that print the same digest scored the same file
    unfinished: bool = False  # a peer stopped at its time limit (release_seconds): nothing released, nothing scored
    broken: int | None = None  # records breaking a definition of :func:`definition_rules` (SDNist checks some)
    made: str = ""  # a peer's release read from ``--peer-releases``: when an earlier run made it ("": in this run)
    absent: str = ""  # why a peer's row has no release ("not kept": ``--kept-peers-only``); "": it has one


def keep(out: Path, name: str, setup: Setup, release: Release) -> Path:
    """Write NAME.csv (exactly the scored features, every record) and the manifests beside it."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    frame = pd.read_csv(release.released, dtype=str, keep_default_na=False)
    path = out / f"{name}.csv"
    frame[list(setup.features)].to_csv(path, index=False)
    for step, m in release.steps:
        target = out / (f"{name}.json" if len(release.steps) == 1 else f"{name}.{step}.json")
        m.write(target, force=True)
    if release.synthesis is not None:
        (out / f"{name}.json").write_text(json.dumps(release.synthesis.manifest, indent=1) + "\n", encoding="utf-8")
    return path


def prepare(data: Path, features: Sequence[str], public: Sequence[str], seed: int, workdir: Path,
            dictionary: Path | None) -> Setup:
    import pandas as pd

    frame = pd.read_csv(data, dtype=str, keep_default_na=False, usecols=list(features))[list(features)]
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / "input.csv"
    frame.to_csv(source, index=False)
    categories: dict[str, list[str]] = {}
    ranges: dict[str, list[str]] = {}
    if dictionary is not None and dictionary.is_file():
        for name, entry in json.loads(dictionary.read_text(encoding="utf-8")).items():
            values = entry.get("values")
            if isinstance(values, dict) and "min" not in values:
                categories[name] = [str(v) for v in values]
            elif isinstance(values, dict) and all(isinstance(values.get(k), int) for k in ("min", "max")):
                # the codes beside the range too ('N', NOC's '0', POVPIP's '501')
                extra = [str(k) for k in values if k not in ("min", "max")]
                ranges[name] = list(dict.fromkeys([*extra, *(str(v) for v in range(values["min"], values["max"] + 1))]))
    for f in features:  # a feature the dictionary does not list: its codes from the file
        categories.setdefault(f, sorted(frame[f].unique()))
    if "PUMA" in features:  # SDNist's k-marginal by PUMA fails on a PUMA the target lacks: the target's PUMAs
        categories["PUMA"] = [c for c in categories["PUMA"] if c in set(frame["PUMA"])]  # (the excerpt's documented list)
    key = hashlib.sha256(f"bench_sdnist key {seed}".encode()).digest()
    return Setup(source, frame, tuple(features), tuple(public), categories, key, seed, workdir, ranges)


def run_config(name: str, setup: Setup, *, python: str | None, data_root: Path, target: str,
               out: Path | None, estimator: str = "mle") -> Row:
    """Release ``name``, keep it, and score it with SDNist (``python``; None: not scored)."""
    workdir = setup.workdir / name
    workdir.mkdir(parents=True, exist_ok=True)
    step = replace(setup, workdir=workdir)
    t0 = time.perf_counter()
    release = CONFIGS[name].build(step)
    release_seconds = time.perf_counter() - t0 if release.kept is None else release.kept.seconds
    scored = workdir / f"{name}.csv"
    if out is not None:
        scored = keep(out, name, step, release)
    else:
        keep(workdir / "kept", name, step, release)
        scored = workdir / "kept" / f"{name}.csv"
    local, central = stated(release)
    tv = two_way_tv(step, release, estimator=estimator)
    t1 = time.perf_counter()
    scores = None if python is None else score(scored, python=python, data_root=data_root, target=target,
                                               workdir=workdir / "sdnist")
    eps = None
    if release.steps and not any(m.ledger.frequencies == "exact" for _, m in release.steps):
        from pramkit.privacy.epsilon import record_epsilon
        e = record_epsilon([m.record_epsilon_given_structure if m.is_structured else m.record_epsilon
                            for _, m in release.steps])
        eps = e if math.isfinite(e) else None
    if release.synthesis is not None:
        eps = release.synthesis.record_epsilon
    digest = hashlib.sha256(scored.read_bytes()).hexdigest()
    import pandas as pd

    broken = rules_broken(pd.read_csv(scored, dtype=str, keep_default_na=False),
                          definition_rules(step, step.features))
    return Row(name, local, central, scores, tv, release_seconds, time.perf_counter() - t1, eps, release.note, digest,
               broken=broken, made="" if release.kept is None else release.kept.made)


def rules_broken(frame: Any, rules: Sequence[Mapping[str, str]]) -> int:
    """The records of ``frame`` that break one of ``rules``: a record breaks a rule (a forbidden combination) when
    each of its columns holds one of the rule's ``|``-separated codes.

    >>> import pandas as pd
    >>> f = pd.DataFrame({"INDP": ["170", "170", "N"], "INDP_CAT": ["0", "1", "N"]})
    >>> rules_broken(f, sector_rules(["170"], ["0", "1"]) + [{"INDP": "N", "INDP_CAT": "0|1"}])
    1
    """
    from pramkit.structure import Rules

    return int(Rules.of(list(rules)).breaking(frame, list(frame.columns)).sum()) if rules else 0


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def references(features: Sequence[str]) -> tuple[dict[str, Any], ...]:
    """The published figures that compare with a run on ``features``: :data:`REFERENCES` for the demographic
    features they were published on, none for any other set (a figure of other features is no comparison).

    >>> len(references(FEATURES)), references(FEATURE_SETS["family"])
    (2, ())
    """
    return REFERENCES if sorted(features) == sorted(FEATURES) else ()


def table(rows: Sequence[Row], refs: Sequence[dict[str, Any]] = REFERENCES) -> str:
    """The results as one Markdown table, the published references ``refs`` under them."""
    head = ["configuration", "local epsilon", "central epsilon", "k-marginal", "pMSE", "matched % all",
            "matched % unique", "inconsistencies", "rules broken", "TV corrected mean / max (tables)",
            "TV raw mean / max",
            "release s", "SDNist s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        s, tv = r.scores, r.tv
        inc = "-"
        if s is not None:
            detail = ", ".join(f"{k} {v}" for k, v in sorted(s.violations.items(), key=lambda kv: -kv[1]))
            inc = f"{s.inconsistent}" + (f" ({detail})" if detail else "")
        cells = [r.name, r.local, r.central,
                 _fmt(s and s.k_marginal, ".0f"), _fmt(s and s.pmse, ".5f"),
                 _fmt(s and s.matched_all, ".2f"), _fmt(s and s.matched_unique, ".2f"), inc, _fmt(r.broken, "d"),
                 "-" if tv is None else f"{_fmt(tv.corrected_mean, '.3f')} / {_fmt(tv.corrected_max, '.3f')} "
                                        f"({tv.corrected} of {tv.pairs})",
                 "-" if tv is None else f"{tv.raw_mean:.3f} / {tv.raw_max:.3f}",
                 f"{r.release_seconds:.1f}", f"{r.score_seconds:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    for ref in refs:
        cells = [ref["configuration"], str(ref.get("local", "-")), str(ref.get("central", "-")),
                 str(ref.get("k_marginal", "-")), str(ref.get("pmse", "-")), str(ref.get("matched_all", "-")),
                 "-", str(ref.get("inconsistencies", "-")), "-", "-", "-", "-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def checkout(folder: Path = REPO) -> str:
    """The git commit of the checkout holding ``folder`` (abbreviated), followed by ``, modified`` when a file git
    tracks has changed since; "" outside a git checkout or without git.

    >>> checkout(Path("/"))
    ''
    """
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return ""
    return commit + (", modified" if changed else "")


def provenance(rows: Sequence[Row]) -> str:
    """The libraries a run used and the digest of each scored file, printed under the table.

    A configuration's draws come from a key derived from its manifest's bytes, and a manifest holds the
    numbers the libraries computed, so another install can release other files from the same source:
    the digests tell whether two runs scored the same files.

    >>> print(provenance([Row("raw", "none", "none", None, None, 0.0, 0.0, digest="ab" * 32)]))  # doctest: +ELLIPSIS
    libraries: pramkit ..., numpy ..., scipy ..., pandas ..., pyarrow ...
    scored files (SHA-256, first 16 hex digits): raw abababababababab
    """
    import numpy
    import pandas
    import pyarrow
    import scipy

    import pramkit

    libraries = ", ".join(f"{m.__name__} {m.__version__}" for m in (pramkit, numpy, scipy, pandas, pyarrow))
    commit = checkout()
    if commit:  # an editable install keeps the version of the commit it was installed at
        libraries += f"; this script's checkout at {commit}"
    files = ", ".join(f"{r.name} {r.digest[:16]}" for r in rows if r.digest)  # stopped or not kept: no file
    kept = ", ".join(f"{r.name} ({r.made})" for r in rows if r.made)
    return (f"libraries: {libraries}\nscored files (SHA-256, first 16 hex digits): {files}"
            + (f"\npeers' releases made by an earlier run from the same inputs (--peer-releases), scored in this run: "
               f"{kept}" if kept else ""))


def plot(rows: Sequence[Row], path: Path, refs: Sequence[dict[str, Any]] = REFERENCES) -> bool:
    """k-marginal against matched % of all records, each release labelled by its epsilon; the references too."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    points: dict[tuple[float, float], list[Row]] = {}  # releases with the same scores share a label
    for r in rows:
        if r.scores is not None:
            points.setdefault((r.scores.matched_all, r.scores.k_marginal), []).append(r)
    for (x, y), same in points.items():
        finite = same[0].epsilon is not None
        ax.scatter(x, y, marker="o" if finite else "s", color="tab:blue" if finite else "tab:gray")
        eps = f" (eps {same[0].epsilon:.3g}{' given the structure' if 'given' in same[0].local else ''})" \
            if finite else ""
        ax.annotate(" = ".join(r.name for r in same) + eps, (x, y), fontsize=7, xytext=(4, 3),
                    textcoords="offset points")
    dp = sorted((r for r in rows if r.scores is not None and r.epsilon is not None and r.name.startswith("dp-")
                 and r.name.count("-") == 1), key=lambda r: r.epsilon or 0.0)
    if len(dp) > 1:
        ax.plot([r.scores.matched_all for r in dp if r.scores], [r.scores.k_marginal for r in dp if r.scores],
                color="tab:blue", lw=0.8)
    for ref, colour in zip(refs, ("tab:red", "tab:orange")):
        ax.scatter(ref["matched_all"], ref["k_marginal"], marker="*", s=120, color=colour)
        ax.annotate(ref["configuration"].replace(" [published]", ""), (ref["matched_all"], ref["k_marginal"]),
                    fontsize=7, xytext=(4, -10), textcoords="offset points", color=colour)
    ax.set_xlabel("unique records matched exactly, % of all records (lower is safer)")
    ax.set_ylabel("SDNist k-marginal (1000 = the original)")
    ax.set_title("The frontier: k-marginal against exact matches")
    ax.grid(alpha=0.3)
    return _saved(plt, fig, path, 120)


def _saved(plt: Any, fig: Any, path: Path, dpi: int) -> bool:
    """Write a figure as a PNG (its folder made) and close it."""
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return True


def method_of(name: str) -> tuple[str, float | None]:
    """A configuration's method and central epsilon: its name without the epsilon, and the epsilon.

    >>> method_of("pgm-zcdp-10"), method_of("mst-1"), method_of("pgm-zcdp-2-single"), method_of("raw")
    (('pgm-zcdp', 10.0), ('mst', 1.0), ('pgm-zcdp-single', 2.0), ('raw', None))
    """
    import re

    match = re.fullmatch(r"(.+?)-(\d+(?:\.\d+)?)(-[a-z]+)?", name)
    if match is None:
        return name, None
    return match.group(1) + (match.group(3) or ""), float(match.group(2))


def peers_plot(rows: Sequence[tuple[str, Row]], path: Path) -> bool:
    """The frontier of the side-by-side comparison: one panel per feature set, k-marginal against the unique
    records matched (% of all), one curve per method through its epsilons, each point labelled by its epsilon, and
    the line of SDNist's random subsamples of the target where the scores hold it (a release above it is closer to
    the original than a sample matching as many records).  False when matplotlib is absent."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sets = list(dict.fromkeys(f for f, _ in rows))
    fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 4.2), squeeze=False)
    for ax, features in zip(axes[0], sets):
        curves: dict[str, list[tuple[float, float, float]]] = {}
        for f, r in rows:
            method, eps = method_of(r.name)
            if f == features and r.scores is not None and eps is not None:
                curves.setdefault(method, []).append((eps, r.scores.matched_all, r.scores.k_marginal))
        for method, points in curves.items():
            points.sort()
            line, = ax.plot([p[1] for p in points], [p[2] for p in points], marker="o", lw=1, label=method)
            for eps, x, y in points:
                ax.annotate(f"{eps:g}", (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points",
                            color=line.get_color())
        sampled = next((r.scores for f, r in rows if f == features and r.scores is not None
                        and r.scores.subsample_curve), None)
        if sampled is not None and curves:  # a random p % sample matches p % of the unique records
            right = 1.15 * max(x for points in curves.values() for _, x, _ in points)
            share = sampled.unique / sampled.records
            ax.plot([p * share for p, _ in sampled.subsample_curve], [k for _, k in sampled.subsample_curve],
                    ls="--", lw=1, color="grey", marker=".", label="random subsample (SDNist)")
            ax.set_xlim(0, right)
            ax.set_ylim(min(k for points in curves.values() for *_, k in points) - 20, 1000)
        ax.set_title(f"{features} features (every column protected)", fontsize=9)
        ax.set_xlabel("unique records matched exactly, % of all (lower is safer)", fontsize=8)
        ax.set_ylabel("SDNist k-marginal (1000 = the original)", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _saved(plt, fig, path, 110)


#: pramkit's rows of the side-by-side comparison, every column protected: the default model, the model pgm, the
#: model pgm under the peers' own guarantee (add-or-remove with delta 1e-5 by zCDP; two records a draw, a quarter
#: of the draws given two records, and half of them with 8 rounds per variable, the setting of the goal against AIM:
#: docs/benchmarks.md), and the PRAM route (DP-optimal PRAM, shuffled, at the same central epsilon; and resampled
#: with the rules).
PRAMKIT_ROWS = ("synth-all", "pgm-all", "pgm-zcdp", "pgm-zcdp-quarter", "pgm-zcdp-half", "dp-shuffle",
                "dp-shuffle-resampled")
#: The rows ``--models`` may also choose.
PRAMKIT_MODELS = (*PRAMKIT_ROWS, "pgm-zcdp-single")


def peer_configs(epsilons: Sequence[float] = PEER_EPSILONS, *, peers: bool = True,
                 tools: Sequence[str] = tuple(PEERS), models: Sequence[str] = PRAMKIT_ROWS) -> list[str]:
    """The configurations of the side-by-side comparison: at each epsilon, pramkit's synthesizers with every
    column protected (``models``, of :data:`PRAMKIT_ROWS`), then each peer of ``tools`` (``peers=False``:
    pramkit's only).

    >>> peer_configs([1])  # doctest: +NORMALIZE_WHITESPACE
    ['synth-all-1', 'pgm-all-1', 'pgm-zcdp-1', 'pgm-zcdp-1-quarter', 'pgm-zcdp-1-half', 'dp-shuffle-1',
     'dp-shuffle-1-resampled', 'mst-1', 'aim-1']
    >>> peer_configs([2], peers=False, models=["pgm-zcdp", "dp-shuffle-resampled"])
    ['pgm-zcdp-2', 'dp-shuffle-2-resampled']
    >>> peer_configs([1, 10], tools=["mst"], models=["pgm-zcdp"])
    ['pgm-zcdp-1', 'mst-1', 'pgm-zcdp-10', 'mst-10']
    """
    return [name for e in epsilons for name in (*(at_epsilon(m, e) for m in models),
                                                 *(f"{p}-{e:g}" for p in (tools if peers else ())))]


def at_epsilon(model: str, epsilon: float) -> str:
    """A model's configuration at ``epsilon``: the epsilon before a ``-resampled`` or ``-single`` suffix.

    >>> at_epsilon("pgm-zcdp", 1), at_epsilon("dp-shuffle-resampled", 2), at_epsilon("pgm-zcdp-single", 0.5)
    ('pgm-zcdp-1', 'dp-shuffle-2-resampled', 'pgm-zcdp-0.5-single')
    """
    for suffix in SUFFIXES:
        if model.endswith(suffix):
            return f"{model[:-len(suffix)]}-{epsilon:g}{suffix}"
    return f"{model}-{epsilon:g}"


def name_list(text: str, allowed: Sequence[str]) -> list[str] | None:
    """A comma-separated choice among ``allowed`` (``--peer-tools``, ``--models``), or None when a name is not
    one of them or none is given.

    >>> name_list("mst", ("mst", "aim")), name_list("mst,x", ("mst", "aim")), name_list("", ("mst",))
    (['mst'], None, None)
    """
    names = [n for n in text.split(",") if n]
    return names if names and all(n in allowed for n in names) else None


def peers_table(rows: Sequence[tuple[str, Row]]) -> str:
    """The side-by-side table: per feature set and release, the guarantee, what is released exactly and the scores.

    >>> s = Scores(960, 0.0, 100, 1000, 2000, 3, subsample=20)
    >>> stopped = Row("aim-10", "-", "10 (delta 1e-05; dpmm AIM)", None, None, 3600.0, 0.0, unfinished=True)
    >>> mst = Row("mst-1", "-", "1 (delta 1e-05; dpmm MST)", s, None, 2.0, 18.0, broken=7)
    >>> print(peers_table([("family", mst), ("family", stopped)]))
    ... # doctest: +NORMALIZE_WHITESPACE
    | features | release | central epsilon | released exactly | k-marginal | subsample equivalent | matched % all | inconsistencies | rules broken | release s |
    |---|---|---|---|---|---|---|---|---|---|
    | family | mst-1 | 1 (delta 1e-05; dpmm MST) | none | 960 | 20 % | 5.00 | 3 | 7 | 2.0 |
    | family | aim-10 | 10 (delta 1e-05; dpmm AIM) | none | not finished | - | - | - | - | stopped at 3600 |
    >>> kept = replace(mst, made="2026-11-28T20:01:02Z")
    >>> peers_table([("family", kept)]).splitlines()[-1].split(" | ")[-1]
    '2.0, made 2026-11-28T20:01:02Z |'
    """
    head = ["features", "release", "central epsilon", "released exactly", "k-marginal", "subsample equivalent",
            "matched % all", "inconsistencies", "rules broken", "release s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for features, r in rows:
        s = r.scores
        k_marginal = r.absent or ("not finished" if r.unfinished else _fmt(s and s.k_marginal, ".0f"))
        cells = [features, r.name, r.central, "none", k_marginal,
                 "-" if s is None or s.subsample is None else f"{s.subsample:g} %", _fmt(s and s.matched_all, ".2f"),
                 "-" if s is None else str(s.inconsistent), _fmt(r.broken, "d"),
                 "-" if r.absent else f"stopped at {r.release_seconds:.0f}" if r.unfinished
                 else f"{r.release_seconds:.1f}" + (f", made {r.made}" if r.made else "")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: The published entries the goal of the side-by-side comparison names (CRC data and metric bundle 1.0, national2019,
#: demographic features): (feature set, central epsilon) -> (entry, k-marginal, unique records matched, % of all).
PUBLISHED_GOAL = {
    ("demographic", 1.0): ("MST [published]", 958, 6.82),
    ("demographic", 2.0): ("synthpop IPF, DP [published]", 953, 5.85),
    ("demographic", 10.0): ("MST [published]", 969, 7.44),
}


def goal_lines(rows: Sequence[tuple[str, Row]]) -> list[str]:
    """The goal of the side-by-side comparison, per feature set and epsilon: each of pramkit's rows against the
    best of the peers scored in this run and of the published entry (:data:`PUBLISHED_GOAL`), the best being the
    highest k-marginal.  A row meets it with a k-marginal at least the best's, no more unique records matched (as
    a share of all records), 0 inconsistencies, and above the subsample line: fewer of the unique records matched
    than a random sample of the target as close in k-marginal holds (:meth:`Scores.sample_as_close`; where SDNist's
    subsample scores are not known, the verdict says so).  A feature set and epsilon with no peer scored says so;
    one where a peer's row has no score (stopped at its time limit, or not kept) is not judged, for that peer may
    be the best, unless a row misses it whatever that peer scores: a lower k-marginal than a peer scored,
    inconsistencies, or below the subsample line (more matches than a scored peer are no sure miss: the best
    may match more).

    >>> curve = ((10.0, 835.0), (20.0, 885.0), (90.0, 995.0))
    >>> s = lambda k, m, i: Scores(k, 0.0, m, 500, 1000, i, subsample_curve=curve)
    >>> rows = [("family", Row("pgm-zcdp-2", "-", "2", s(890, 15, 0), None, 1.0, 1.0)),
    ...         ("family", Row("aim-2", "-", "2", s(886, 30, 656), None, 1.0, 1.0)),
    ...         ("family", Row("mst-2", "-", "2", s(800, 8, 7000), None, 1.0, 1.0)),
    ...         ("family", Row("pgm-zcdp-2-single", "-", "2", s(897, 31, 0), None, 1.0, 1.0)),
    ...         ("family", Row("pgm-zcdp-2-copy", "-", "2", s(890, 150, 0), None, 1.0, 1.0)),
    ...         ("demographic", Row("pgm-zcdp-10", "-", "10", Scores(990, 0.0, 60, 500, 1000, 0), None, 1.0, 1.0)),
    ...         ("industry", Row("pgm-zcdp-10", "-", "10", s(920, 8, 0), None, 1.0, 1.0)),
    ...         ("industry", Row("pgm-zcdp-10-single", "-", "10", s(925, 40, 0), None, 1.0, 1.0)),
    ...         ("industry", Row("pgm-zcdp-10-quarter", "-", "10", s(800, 2, 0), None, 1.0, 1.0)),
    ...         ("industry", Row("mst-10", "-", "10", s(815, 9, 900), None, 1.0, 1.0)),
    ...         ("industry", Row("aim-10", "-", "10", None, None, 0.0, 0.0, absent="not kept"))]
    >>> print("\\n".join(goal_lines(rows)))
    family, epsilon 2: the best is aim-2 (886, 3.00 % matched)
      pgm-zcdp-2: 890, 1.50 % matched (3.0 % of the unique records; a random 23.2 % sample as close), 0 inconsistencies: met
      pgm-zcdp-2-single: 897, 3.10 % matched (6.2 % of the unique records; a random 27.6 % sample as close), 0 inconsistencies: not met (more matched)
      pgm-zcdp-2-copy: 890, 15.00 % matched (30.0 % of the unique records; a random 23.2 % sample as close), 0 inconsistencies: not met (more matched, below the subsample line)
    demographic, epsilon 10: the best is MST [published] (969, 7.44 % matched); no peer scored in this run
      pgm-zcdp-10: 990, 6.00 % matched (12.0 % of the unique records; the subsample line not known), 0 inconsistencies: met on the rest
    industry, epsilon 10: the best is mst-10 (815, 0.90 % matched); aim-10 not scored, so the goal is not judged
      pgm-zcdp-10: 920, 0.80 % matched (1.6 % of the unique records; a random 42.3 % sample as close), 0 inconsistencies: not judged (aim-10 not scored)
      pgm-zcdp-10-single: 925, 4.00 % matched (8.0 % of the unique records; a random 45.5 % sample as close), 0 inconsistencies: not judged (aim-10 not scored)
      pgm-zcdp-10-quarter: 800, 0.20 % matched (0.4 % of the unique records; the subsample line not known), 0 inconsistencies: not met (lower k-marginal)
    """
    out: list[str] = []
    cells = list(dict.fromkeys((features, method_of(r.name)[1]) for features, r in rows))
    for features, eps in cells:
        if eps is None:
            continue
        here = [(method_of(r.name)[0], r) for f, r in rows if f == features and method_of(r.name)[1] == eps]
        peers = [(r.name, r.scores.k_marginal, r.scores.matched_all) for m, r in here
                 if m in PEERS and r.scores is not None]
        unscored = [r.name for m, r in here if m in PEERS and r.scores is None]
        published = PUBLISHED_GOAL.get((features, eps))
        bests = peers + ([published] if published is not None else [])
        ours = [r for m, r in here if m not in PEERS]
        if not ours or not bests:
            continue
        name, k, matched = max(bests, key=lambda b: b[1])
        out.append(f"{features}, epsilon {eps:g}: the best is {name} ({k:.0f}, {matched:.2f} % matched)"
                   + ("" if peers else "; no peer scored in this run")
                   + (f"; {', '.join(unscored)} not scored, so the goal is not judged" if unscored else ""))
        for r in ours:
            sc = r.scores
            if sc is None:
                out.append(f"  {r.name}: not scored")
                continue
            sample = sc.sample_as_close()
            # beside an unscored peer, which may be the best, only a miss that no best could undo is sure: a
            # lower k-marginal than a peer scored, inconsistencies, the subsample line (not the best's matches)
            why = [w for w, bad in (("lower k-marginal", sc.k_marginal < k),
                                    ("more matched", not unscored and sc.matched_all > matched),
                                    ("inconsistencies", sc.inconsistent > 0),
                                    ("below the subsample line", sample is not None and sc.matched_unique >= sample))
                   if bad]
            line = "the subsample line not known" if sample is None else f"a random {sample:.1f} % sample as close"
            verdict = (f"not met ({', '.join(why)})" if why else f"not judged ({', '.join(unscored)} not scored)"
                       if unscored else "met" if sample is not None else "met on the rest")
            out.append(f"  {r.name}: {sc.k_marginal:.0f}, {sc.matched_all:.2f} % matched ({sc.matched_unique:.1f} % of "
                       f"the unique records; {line}), {sc.inconsistent} inconsistencies: {verdict}")
    return out


#: The name of the set ``--peers --features`` gives (features no configuration was measured on as a set).
GIVEN_SET = "given"


def peer_sets(feature_set: str | None, features: str | None) -> list[tuple[str, list[str]]]:
    """The feature sets ``--peers`` runs, by name: ``--feature-set``'s, the features ``--features`` lists (one set,
    :data:`GIVEN_SET`), or every set of :data:`FEATURE_SETS`.

    >>> peer_sets("family", None)[0][0], [n for n, _ in peer_sets(None, None)]
    ('family', ['demographic', 'family', 'industry'])
    >>> peer_sets(None, "AGEP,SEX,,DREM")
    [('given', ['AGEP', 'SEX', 'DREM'])]
    """
    if features is not None:
        return [(GIVEN_SET, [f for f in features.split(",") if f])]
    return [(n, list(FEATURE_SETS[n])) for n in ([feature_set] if feature_set else FEATURE_SETS)]


def run_peers(args: argparse.Namespace, python: str | None, data_root: Path) -> int:
    """``--peers``: every column protected, pramkit's synthesizer beside MST and AIM at each epsilon, on each
    feature set, scored by SDNist in this run; one table."""
    rows: list[tuple[str, Row]] = []
    for name, features in peer_sets(args.feature_set, args.features):
        workdir = Path(tempfile.mkdtemp(prefix="bench-sdnist-peers-"))
        try:
            setup = replace(prepare(args.data, features, [], args.seed, workdir,
                                    data_root / "data_dictionary.json"),
                            peer_seconds=60 * args.peer_minutes if args.peer_minutes else None,
                            rounds_per_variable=args.rounds_per_variable, bins=args.bins,
                            tables_per_fit=args.tables_per_fit,
                            peer_releases=args.peer_releases, kept_only=args.kept_peers_only)
            for config in peer_configs(args.epsilons, peers=not args.no_peer_runs, tools=args.peer_tools,
                                       models=args.models):
                on_demand(config)
                try:
                    row = run_config(config, setup, python=python, data_root=data_root, target=args.target,
                                     out=None if args.out is None else args.out / name, estimator=args.estimator)
                except Skip as why:
                    print(f"{name} {config}: skipped ({why})", file=sys.stderr)
                    continue
                except NotKept as why:
                    print(f"{name} {config}: not kept in {args.peer_releases} (--kept-peers-only)", file=sys.stderr,
                          flush=True)
                    rows.append((name, Row(config, "-", why.central, None, None, 0.0, 0.0, absent=str(why))))
                    continue
                except Unfinished as why:
                    print(f"{name} {config}: stopped, {why} (--peer-minutes)", file=sys.stderr, flush=True)
                    rows.append((name, Row(config, "-", why.central, None, None, why.seconds, 0.0, unfinished=True)))
                    continue
                rows.append((name, row))
                s = row.scores
                print(f"{name} {config}: k-marginal {s.k_marginal if s else '-'}, central {row.central}, release "
                      f"{row.release_seconds:.1f} s", file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    print(peers_table(rows))
    goal = goal_lines(rows)
    if goal:
        print("\ngoal: k-marginal at least the best peer's of this run and the published entry's, no more unique "
              "records matched, 0 inconsistencies, and above SDNist's subsample line (fewer of the unique records "
              "matched than a random sample as close in k-marginal holds)")
        print("\n".join(goal))
    print(provenance([r for _, r in rows]))
    if args.plot is not None and peers_plot(rows, args.plot):
        print(f"frontier: {args.plot}")
    return 0


def features_error(features: Sequence[str], data: Path) -> str:
    """What is wrong with ``features`` for the file ``data`` (none, a feature twice, a feature not among the
    file's columns when the file is there), or ``""``.

    >>> features_error([], Path("x.csv")), features_error(["AGEP", "AGEP"], Path("x.csv"))
    ('none given', 'AGEP given twice')
    """
    if not features:
        return "none given"
    twice = sorted({f for f in features if features.count(f) > 1})
    if twice:
        return f"{', '.join(twice)} given twice"
    if data.is_file():
        with open(data, newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
        missing = [f for f in features if f not in header]
        if missing:
            return f"{', '.join(missing)} not among the columns of {data} ({', '.join(header)})"
    return ""


def positive_epsilons(text: str) -> list[float] | None:
    """``--epsilons``: comma-separated positive numbers up to pramkit's largest epsilon
    (:data:`pramkit.design.dp.optimal.MAX_EPSILON`), or None.

    >>> positive_epsilons("0.25,1,4"), positive_epsilons("1,0"), positive_epsilons("x"), positive_epsilons("")
    ([0.25, 1.0, 4.0], None, None, None)
    >>> positive_epsilons("700"), positive_epsilons("1,701"), positive_epsilons("inf")
    ([700.0], None, None)
    """
    try:
        values = [float(e) for e in text.split(",") if e]
    except ValueError:
        return None
    from pramkit.design.dp.optimal import MAX_EPSILON

    return values if values and all(0 < e <= MAX_EPSILON for e in values) else None


def bins_note(manifest: Mapping[str, Any]) -> str:
    """``", AGEP in bins of 5"`` for each variable a release of the model pgm modelled in declared bins, else
    ``""``.

    >>> bins_note({"procedure": {"bins": {"AGEP": 5, "POVPIP": 25}}}), bins_note({})
    (', AGEP in bins of 5, POVPIP in bins of 25', '')
    """
    bins = (manifest.get("procedure") or {}).get("bins") or {}
    return "".join(f", {v} in bins of {w}" for v, w in bins.items())


def bins_flag(text: str, features: Sequence[str]) -> dict[str, int] | str:
    """``--bins``: the model pgm's declared bins, ``VAR=WIDTH`` comma-separated, each a feature of the sets; or
    why not ('' for none).

    >>> bins_flag("AGEP=5", ["AGEP", "SEX"]), bins_flag("", ["AGEP"])
    ({'AGEP': 5}, {})
    >>> bins_flag("AGE=5", ["AGEP"])
    '--bins names AGE, which is not a synthesized variable (AGEP)'
    """
    from pramkit.errors import ParameterError
    from pramkit.synthesize_pgm import check_bins

    try:
        return check_bins(text, list(features)) or {}
    except ParameterError as why:
        return f"--{why}"


def rounds_note(manifest: Mapping[str, Any]) -> str:
    """``", T rounds"`` when a release of the model pgm ran other nominal rounds than its default (4 per variable),
    and ``", K tables a fit"`` when it fitted the model after every K tables (``--tables-per-fit``), else ``""``.

    >>> rounds_note({"variables": {"a": {}, "b": {}}, "procedure": {"rounds": 32}})
    ', 32 rounds'
    >>> rounds_note({"variables": {"a": {}, "b": {}}, "procedure": {"rounds": 8, "tables_per_fit": 3}})
    ', 3 tables a fit'
    >>> rounds_note({"variables": {"a": {}, "b": {}}, "procedure": {"rounds": 8}}), rounds_note({})
    ('', '')
    """
    from pramkit.synthesize_pgm import default_rounds

    proc = manifest.get("procedure") or {}
    rounds, per_fit = proc.get("rounds"), proc.get("tables_per_fit", 1)
    return ("" if rounds in (None, default_rounds(len(manifest.get("variables") or {}))) else f", {rounds} rounds") \
        + ("" if per_fit == 1 else f", {per_fit} tables a fit")


def rounds_per_variable(text: str) -> int | None:
    """``--rounds-per-variable``: a whole number from 1 to :data:`MOST_ROUNDS_PER_VARIABLE`, or None.

    >>> rounds_per_variable("16"), rounds_per_variable("0"), rounds_per_variable("2.5"), rounds_per_variable("901")
    (16, None, None, None)
    """
    try:
        value = int(text)
    except ValueError:
        return None
    return value if 1 <= value <= MOST_ROUNDS_PER_VARIABLE else None


def tables_per_fit(text: str) -> int | None:
    """``--tables-per-fit``: a whole number from 1 to 16 (``synthesize --tables-per-fit``), or None.

    >>> tables_per_fit("3"), tables_per_fit("0"), tables_per_fit("2.5"), tables_per_fit("17")
    (3, None, None, None)
    """
    from pramkit.errors import ParameterError
    from pramkit.synthesize_pgm import check_tables_per_fit

    try:
        return check_tables_per_fit(int(text))
    except (ValueError, ParameterError):
        return None


def peer_minutes(text: str) -> float | None:
    """``--peer-minutes``: a finite number of minutes, at least 0 (0: no limit), or None.

    >>> peer_minutes("90"), peer_minutes("0"), peer_minutes("2.5"), peer_minutes("-1"), peer_minutes("inf")
    (90.0, 0.0, 2.5, None, None)
    """
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 <= value < math.inf else None


def main(argv: Sequence[str] | None = None) -> int:
    from pramkit.design.dp.optimal import MAX_EPSILON

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated configurations (--list), or "
                    f"one of {', '.join(ON_DEMAND)} at any epsilon E or pd P (e.g. pgm-all-0.5)")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--features", default=None, help=f"comma-separated (default {','.join(FEATURES)}); with "
                    f"--peers, the one set run (named '{GIVEN_SET}')")
    ap.add_argument("--public", default=",".join(PUBLIC), help="features released as they are")
    ap.add_argument("--target", default="NATIONAL", choices=("NATIONAL", "MA", "TX"), help="SDNist's target")
    ap.add_argument("--seed", type=int, default=1, help="seed of the key, the DP noise and sdcMicro's draw")
    ap.add_argument("--estimator", default="mle", choices=("unbiased", "mle", "norm-sub", "rr-mle"),
                    help="the estimator of the corrected 2-way tables (pramkit.estimate_table)")
    ap.add_argument("--out", type=Path, help="keep every scored release as NAME.csv beside its manifests")
    ap.add_argument("--plot", type=Path, help="write the frontier (k-marginal against matches) as a PNG")
    ap.add_argument("--no-score", action="store_true",
                    help="release only, SDNist left out: the release times on a quiet machine (scores '-')")
    ap.add_argument("--peers", action="store_true",
                    help="every column protected: pramkit's synthesizer beside dpmm's MST and AIM at each epsilon "
                         "(--epsilons), on each feature set (--feature-set, or the one --features lists), in this run")
    ap.add_argument("--feature-set", choices=sorted(FEATURE_SETS),
                    help="one of SDNist's feature sets: with --peers, the only one run (default all); otherwise the "
                         "features (instead of --features)")
    ap.add_argument("--no-peer-runs", action="store_true",
                    help="with --peers: run pramkit's rows only (the peers take minutes a release)")
    ap.add_argument("--epsilons", default=",".join(map(str, PEER_EPSILONS)),
                    help=f"with --peers: the central epsilons (default %(default)s; positive, at most {MAX_EPSILON:g})")
    ap.add_argument("--peer-tools", default=",".join(PEERS),
                    help="with --peers: the peers to run (default %(default)s)")
    ap.add_argument("--models", default=",".join(PRAMKIT_ROWS),
                    help="with --peers: pramkit's rows to run (default %(default)s)")
    ap.add_argument("--peer-minutes", default=str(PEER_MINUTES),
                    help="with --peers: a peer's release still running after this many minutes is stopped, and its "
                         "row says so (default %(default)s; 0: never stopped)")
    ap.add_argument("--peer-releases", type=Path, default=None, metavar="DIR",
                    help="keep each peer's release in DIR, and read one made there from the same inputs (script, "
                         "data, codes, epsilon, delta, seed, the peer's installed packages) instead of making it "
                         "again: SDNist scores it in this run, and its row gives when it was made")
    ap.add_argument("--kept-peers-only", action="store_true",
                    help="with --peers and --peer-releases: read the peers' releases kept there and make none; a "
                         "peer's release not kept is a row 'not kept', and the goal is not judged beside it")
    ap.add_argument("--rounds-per-variable", default=None, metavar="R",
                    help="the model pgm's rows (pgm-zcdp, pgm-all) run `--rounds` R times their number of features "
                         f"(default the command's: 4 per variable; 1 to {MOST_ROUNDS_PER_VARIABLE})")
    ap.add_argument("--tables-per-fit", default=None, metavar="K",
                    help="the model pgm's rows choose K tables between two fits (`synthesize --tables-per-fit`; "
                         "default the command's: 1; 1 to 16)")
    ap.add_argument("--bins", default=BINS, metavar="VAR=WIDTH[,...]",
                    help="the rows pgm-zcdp model these features in bins of their values (`synthesize --bins`; "
                         "default %(default)s, each where it is a feature; '' for none)")
    args = ap.parse_args(argv)
    for flag, allowed in (("peer_tools", tuple(PEERS)), ("models", PRAMKIT_MODELS)):
        chosen = name_list(getattr(args, flag), allowed)
        if chosen is None:
            print(f"--{flag.replace('_', '-')} takes names among {', '.join(allowed)}, comma-separated; got "
                  f"{getattr(args, flag)!r}", file=sys.stderr)
            return 2
        setattr(args, flag, chosen)
    args.peer_minutes = peer_minutes(args.peer_minutes)
    if args.peer_minutes is None:
        print(f"--peer-minutes takes a number of minutes, at least 0 (default {PEER_MINUTES}; 0: never stopped)",
              file=sys.stderr)
        return 2
    given = args.rounds_per_variable
    args.rounds_per_variable = None if given is None else rounds_per_variable(given)
    if given is not None and args.rounds_per_variable is None:
        print(f"--rounds-per-variable takes a whole number from 1 to {MOST_ROUNDS_PER_VARIABLE} (the model pgm's "
              "rounds over its variables)", file=sys.stderr)
        return 2
    given = args.tables_per_fit
    args.tables_per_fit = None if given is None else tables_per_fit(given)
    if given is not None and args.tables_per_fit is None:
        print("--tables-per-fit takes a whole number from 1 to 16 (the model pgm's tables between two fits)",
              file=sys.stderr)
        return 2
    args.epsilons = positive_epsilons(args.epsilons)
    if args.epsilons is None:
        print(f"--epsilons takes positive numbers up to {MAX_EPSILON:g} (default "
              f"{', '.join(map(str, PEER_EPSILONS))})", file=sys.stderr)
        return 2
    if args.list:
        for name, c in CONFIGS.items():
            print(f"{name:24} {c.summary}")
        return 0
    names = [n for n in args.configs.split(",") if n]
    unknown = [n for n in names if not on_demand(n)]
    if unknown:
        print(f"unknown configuration(s) {', '.join(unknown)}; --list shows them (an epsilon E from above 0 to "
              f"{MAX_EPSILON:g})", file=sys.stderr)
        return 2
    if args.features is not None and args.feature_set:
        print("bench_sdnist: give --features or --feature-set, not both", file=sys.stderr)
        return 2
    features = (list(FEATURE_SETS[args.feature_set]) if args.feature_set
                else [f for f in (args.features or ",".join(FEATURES)).split(",") if f])
    bad = features_error(features, args.data)
    if bad:
        print(f"bench_sdnist: --features: {bad}", file=sys.stderr)
        return 2
    args.bins = bins_flag(args.bins, list(dict.fromkeys([*features, *(f for s in FEATURE_SETS.values() for f in s)])))
    if isinstance(args.bins, str):
        print(args.bins, file=sys.stderr)
        return 2
    public = [f for f in args.public.split(",") if f and f in features]
    from pramkit.synthesize_pgm import MOST_ROUNDS

    widest = max(len(f) for _, f in peer_sets(args.feature_set, args.features)) if args.peers else len(features)
    if args.rounds_per_variable is not None and args.rounds_per_variable * widest > MOST_ROUNDS:
        print(f"--rounds-per-variable {args.rounds_per_variable} times the {widest} features passes the most rounds "
              f"({MOST_ROUNDS}): at most {MOST_ROUNDS // widest} here", file=sys.stderr)
        return 2
    if args.kept_peers_only and (not args.peers or args.peer_releases is None):
        print("--kept-peers-only reads the peers' kept releases: give it with --peers and --peer-releases DIR",
              file=sys.stderr)
        return 2
    if args.kept_peers_only and not args.peer_releases.is_dir():
        print(f"--kept-peers-only reads the peers' kept releases, but {args.peer_releases} is not a folder",
              file=sys.stderr)
        return 2
    if args.peer_releases is not None and args.peer_releases.exists() and not args.peer_releases.is_dir():
        print(f"--peer-releases takes a folder; {args.peer_releases} is a file", file=sys.stderr)
        return 2
    data_root = Path(os.environ.get("SDNIST_DATA_ROOT") or DATA_ROOT)
    python = None if args.no_score else sdnist_python()
    if not args.data.is_file() or (python is None and not args.no_score):
        missing = f"the data ({args.data})" if not args.data.is_file() else \
            "SDNist (set SDNIST_PYTHON to the interpreter of benchmarks/sdnist_setup.sh's venv)"
        print(f"bench_sdnist: skipped: {missing} is not available")
        return 0
    if args.peers:
        return _scoring(lambda: run_peers(args, python, data_root))
    return _scoring(lambda: run_configs(args, names, features, public, python, data_root))


def _scoring(run: Callable[[], int]) -> int:
    """``run()``, a release SDNist cannot score or a peer cannot make reported in one line (exit 1) instead of a
    traceback, and a setting pramkit refuses in one line too (exit 2)."""
    from pramkit.errors import PramkitError

    try:
        return run()
    except ToolFailed as why:
        print(f"bench_sdnist: {why}", file=sys.stderr)
        return 1
    except PramkitError as why:  # a setting pramkit refuses for these features: the releases before it are kept
        print(f"bench_sdnist: {why}", file=sys.stderr)
        return 2


def run_configs(args: argparse.Namespace, names: Sequence[str], features: Sequence[str], public: Sequence[str],
                python: str | None, data_root: Path) -> int:
    """The configurations ``names`` on ``features`` (``public`` released as they are), scored by SDNist in this
    run; one table."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-sdnist-"))
    try:
        setup = replace(prepare(args.data, features, public, args.seed, workdir, data_root / "data_dictionary.json"),
                        rounds_per_variable=args.rounds_per_variable, bins=args.bins, peer_releases=args.peer_releases,
                        tables_per_fit=args.tables_per_fit)
        rows: list[Row] = []
        for name in names:
            try:
                row = run_config(name, setup, python=python, data_root=data_root, target=args.target,
                                 out=args.out, estimator=args.estimator)
            except Skip as why:
                print(f"{name}: skipped ({why})", file=sys.stderr)
                continue
            rows.append(row)
            s = row.scores
            print(f"{name}: k-marginal {s.k_marginal if s else '-'}, local {row.local}, central {row.central}, "
                  f"release {row.release_seconds:.1f} s, SDNist {row.score_seconds:.0f} s", file=sys.stderr,
                  flush=True)
        print(table(rows, references(features)))
        print(provenance(rows))
        if args.plot is not None and rows:
            print(f"frontier: {args.plot}" if plot(rows, args.plot, references(features))
                  else "no plot: matplotlib is not installed")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
