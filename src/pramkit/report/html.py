"""Render a :class:`~pramkit.report.build.ReleaseReport` as one self-contained HTML file.

Styles are inline, figures are base64 ``data:`` URIs, and nothing refers to
the network: the file opens anywhere, offline.  Every figure carries its
unit (nats, %, records, probability).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any

from pramkit._json import to_jsonable
from pramkit.atomic import check_writable, write_text_atomic
from pramkit.ledger import epsilon_words
from pramkit.report.build import (
    DisclosureRisk,
    LedgerEntry,
    Locality,
    LocalityFigure,
    ReleaseReport,
    RiskFigures,
    VariableUtility,
)
from pramkit.report.images import data_uri
from pramkit.report.plots import curve_chart, frequency_chart

#: Longest certificate or parameter listing shown in full (characters of JSON).
MAX_JSON_CHARS = 1500

#: Half-width of a 95 % normal interval, in standard errors.
Z95 = NormalDist().inv_cdf(0.975)

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       margin: 0 auto; max-width: 1100px; padding: 1.5em 2em; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.1em; } h2 { border-bottom: 2px solid #4c72b0; padding-bottom: 0.2em; margin-top: 1.8em; }
h3 { margin-bottom: 0.3em; }
.meta { color: #666; font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.6em 0 1em; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #eef2f8; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.warn { background: #fdecea; border-left: 5px solid #c0392b; padding: 0.6em 1em; margin: 0.8em 0; }
.note { background: #f4f6f8; border-left: 5px solid #8a9bb0; padding: 0.6em 1em; margin: 0.8em 0; }
.cards { display: flex; gap: 1em; flex-wrap: wrap; margin: 1em 0; }
.card { border: 1px solid #ccc; border-radius: 6px; padding: 0.6em 1em; min-width: 12em; }
.card b { font-size: 1.4em; display: block; }
img { max-width: 100%; height: auto; display: block; margin: 0.4em 0 1em; }
pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.85em; max-width: 100%; }
code { font-size: 0.95em; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def fmt(x: float | int | None, digits: int = 4) -> str:
    """A number for display: ``None`` as "n/a", infinities spelled out, ``digits`` significant digits.

    Parameters
    ----------
    x : float, int, bool or None
        The number (a bool is shown as yes / no, an int in full with thousands separators).
    digits : int
        Significant digits of a float.

    Returns
    -------
    str
        Plain text (no HTML).

    Examples
    --------
    >>> fmt(1.0986122886681098), fmt(1.0986122886681098, 2), fmt(12345), fmt(True)
    ('1.099', '1.1', '12,345', 'yes')
    >>> fmt(None), fmt(float("nan")), fmt(float("inf")), fmt(-float("inf"))
    ('n/a', 'n/a', 'infinite', '-infinite')
    """
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "infinite" if x > 0 else "-infinite"
    return f"{x:.{digits}g}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[bool]) -> str:
    """An HTML table; cells are already escaped HTML."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td class="n">{c}</td>' if num else f"<td>{c}</td>" for c, num in zip(r, numeric)) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _json_block(obj: Any) -> str:
    if obj is None or obj == {}:
        return "none"
    text = json.dumps(to_jsonable(obj), indent=1, sort_keys=True)
    if len(text) > MAX_JSON_CHARS:
        text = text[:MAX_JSON_CHARS] + f"\n... ({len(text):,} characters in all; see the manifest)"
    return f"<pre>{_e(text)}</pre>"


def epsilon_meaning(record_epsilon: float, variables: int) -> str:
    """What the record's epsilon means, in words (plain text).

    Parameters
    ----------
    record_epsilon : float
        The record's epsilon (nats), possibly infinite.
    variables : int
        How many variables are perturbed.

    Returns
    -------
    str
        The bound e^epsilon on how far one release can move an attacker's odds between two
        statements about one record (epsilon-DP as in Shlomo and Skinner 2012, section 4),
        or a warning that an infinite epsilon gives no guarantee.

    Examples
    --------
    >>> import math
    >>> print(epsilon_meaning(math.log(3), 1))  # doctest: +NORMALIZE_WHITESPACE
    An attacker who knows everything about the file except one record's original values of the 1
    perturbed variable(s) can, after seeing that record in the release, change their odds between any
    two statements about those values by a factor of at most e^epsilon = e^1.099 = 3.
    >>> epsilon_meaning(math.inf, 2).endswith("This release carries no differential-privacy guarantee.")
    True
    """
    if math.isinf(record_epsilon):
        return ("The record's epsilon is infinite: at least one released value rules out some original value "
                "with certainty (a matrix column mixes zero and positive probabilities, or a category is never "
                "changed). This release carries no differential-privacy guarantee.")
    factor = math.exp(record_epsilon)
    return (
        f"An attacker who knows everything about the file except one record's original values of the "
        f"{variables} perturbed variable(s) can, after seeing that record in the release, change their odds "
        f"between any two statements about those values by a factor of at most e^epsilon = "
        f"e^{record_epsilon:.4g} = {fmt(factor)}."
    )


def _ledger(report: ReleaseReport) -> str:
    def row(v: LedgerEntry) -> list[str]:
        beta = fmt(v.beta) if v.beta is not None else "not bistochastic"
        eps = fmt(v.epsilon) if v.epsilon_given_structure is None else _e(epsilon_words(v.epsilon,
                                                                                        v.epsilon_given_structure))
        return [_e(v.name) + ("" if v.columns == (v.name,) else f" ({_e(', '.join(v.columns))})"),
                fmt(v.categories), eps, beta, fmt(v.min_diagonal), fmt(v.truthful), _e(v.method)]

    table = _table(
        ["variable", "categories S", "epsilon [nats]", "beta = H(P) / log2 S [fraction]",
         "smallest diagonal [probability]", "truthful", "design method"],
        [row(v) for v in report.ledger], [False, True, True, True, True, False, False],
    )
    infinite = [v.name for v in report.ledger if math.isinf(v.epsilon)]
    warn = ""
    if infinite:
        warn = (f'<div class="warn"><b>Warning: epsilon is infinite</b> for {_e(", ".join(infinite))}. '
                "Some released value of these variables is impossible for some original value, so seeing it "
                "proves the record did not have that value.</div>")
    meaning = _e(report.guarantee or epsilon_meaning(report.record_epsilon, len(report.ledger)))
    box = "warn" if math.isinf(report.record_epsilon) or report.ledger_facts.get("data_dependent") else "note"
    facts = report.ledger_facts
    design = ""
    if "design_epsilon" in facts:
        source = {"dp_counts": "noisy counts from the geometric mechanism (differentially private)",
                  "prior": f"the public prior {facts.get('prior')!r} (no budget)",
                  "none": "none (the design does not depend on the data's frequencies)",
                  "exact": "the exact frequencies of the original file (not differentially private)"}
        design = (f"<p>Design step: epsilon {fmt(facts['design_epsilon'])} nats; frequencies: "
                  f"{_e(source.get(facts['frequencies'], facts['frequencies']))}. Perturbation: epsilon "
                  f"{_e(fmt(facts['perturbation_epsilon']) if not isinstance(facts['perturbation_epsilon'], str) else facts['perturbation_epsilon'])} nats"
                  + (f"; record budget {fmt(facts['record_epsilon_budget'])} nats" if facts.get("record_epsilon_budget")
                     is not None else "") + ".</p>" + _category_sources(facts.get("categories") or {}))
    stated = report.stated
    headline = (f"<p><b>{_e(stated.headline)}</b> (nats; the variables are perturbed independently: sequential "
                f"composition).</p><p>{_e(stated.coverage)}</p>" if stated is not None else
                f"<p><b>Record epsilon: {fmt(report.record_epsilon)} nats</b> (the design step plus the variables, "
                "which are perturbed independently: sequential composition).</p>")
    return (
        table + headline + design + warn
        + f'<div class="{box}">{meaning}</div>' + _guarantees(report.guarantees)
        + _shown_exactly(facts.get("released_exactly_facts") or [])
    )


def _guarantees(guarantees: Any) -> str:
    """Local, sampled and shuffled guarantees side by side, each with its conditions (nothing without them).

    Examples
    --------
    >>> from pramkit.privacy.amplification import Guarantees
    >>> _guarantees(Guarantees(3.0, 0.67, "a secret sample")).count("<li>"), _guarantees(None)
    (2, '')
    """
    if guarantees is None:
        return ""
    items = "".join(f"<li>{_e(line)}</li>" for line in guarantees.lines())
    return f"<p>What the published file guarantees as a whole:</p><ul>{items}</ul>"


#: How the report names each kind of value released exactly (:data:`pramkit.ledger.FACT_KINDS`).
_FACT_NAMES = {"stratum": "stratum", "kept_code": "kept code", "missing": "missing value",
               "missing_code": "missing code",
               "joint_missing": "missing column of a joint variable", "stratum_missing": "missing stratum",
               "unpaired": "value allowed only with a missing column",
               "rule_breaker": "rule breaker", "household": "household id", "weights": "sampling weights"}


def _shown_exactly(facts: Sequence[Mapping[str, Any]]) -> str:
    """The table of what the release shows exactly (the ledger's facts, from which the sentence above is written).

    Examples
    --------
    >>> "which values of sex are missing" in _shown_exactly([{"kind": "missing", "variables": ["sex"],
    ...                                                       "reveals": "which values of sex are missing"}])
    True
    >>> _shown_exactly([])
    ''
    """
    if not facts:
        return ""
    rows = [[_e(_FACT_NAMES.get(f["kind"], f["kind"])), _e(", ".join(f["variables"])), _e(f["reveals"]),
             "given it" if f.get("covered", True) else "no"] for f in facts]
    return ("<p>What the release shows exactly, as the original holds it (the ledger's facts):</p>"
            + _table(["kind", "variables", "shown exactly", "epsilon bounds the rest"], rows, [False] * 4))


def _category_sources(categories: Mapping[str, str]) -> str:
    """Where each variable's list of categories came from, in words (the ledger's ``categories``)."""
    if not categories:
        return ""
    words = {"declared": "declared (a codebook or the file's value labels)", "prior": "the public prior",
             "data": "read from the original file (not covered by any epsilon)"}
    by_source: dict[str, list[str]] = {}
    for column, source in categories.items():
        by_source.setdefault(source, []).append(column)
    parts = [f"{_e(', '.join(cols))}: {_e(words.get(src, src))}" for src, cols in by_source.items()]
    return "<p>Categories: " + "; ".join(parts) + ".</p>"


#: Rows of the risk table: (label, attribute of RiskFigures).
_RISK_ROWS = (
    ("records", "n"),
    ("sample uniques (records unique on the keys)", "sample_uniques"),
    ("tau1: sample uniques that are population uniques", "tau1"),
    ("tau2: expected correct matches among sample uniques", "tau2"),
    ("expected re-identifications (per-record risk, summed)", "expected_reidentifications"),
)


#: Figures that ignore the misclassification, so are not shown for the released file.
_NOT_AFTER_PRAM = {"expected_reidentifications": "n/a (see below)"}


def _risk_rows(before: RiskFigures, after: RiskFigures | None, note: str) -> list[list[str]]:
    def released(attr: str) -> str:
        if after is None:
            return _e(note)
        return _NOT_AFTER_PRAM.get(attr) or fmt(getattr(after, attr))

    return [[label, "records", fmt(getattr(before, attr)), released(attr)] for label, attr in _RISK_ROWS]


def _risk(risk: DisclosureRisk) -> str:
    table = _table(["measure", "unit", "original file", "released file"],
                   _risk_rows(risk.before, risk.after, risk.after_note), [False, False, True, True])
    rec = risk.recognition
    if rec.not_computed:
        recognition = f"<p>Spontaneous recognition: not computed ({_e(rec.not_computed)}).</p>"
    else:
        recognition = _table(
            ["spontaneous recognition (condition C1)", "unit", "original file", "released file"],
            [["largest posterior that a seen record is a given person", "probability",
              fmt(rec.max_posterior_before), fmt(rec.max_posterior_after)],
             [f"(combination, value, record type) above alpha = {fmt(rec.alpha)}", "count",
              fmt(rec.violations_before), fmt(rec.violations_after)]],
            [False, False, True, True],
        ) + (f"<p class=\"meta\">Every combination of three keys, or of all of them when there are fewer "
             f"({rec.combinations} combination(s)); "
             "the posterior is equation (1) of Cator, Hensbergen and Rozenholc.</p>")
    return (
        f"<p>Key variables: <b>{_e(', '.join(risk.keys))}</b>. Sampling fraction: {_e(risk.sampling_note)}. "
        "tau1 and tau2 come from a Poisson log-linear model of the key table (all two-way interactions by "
        "default); after PRAM they count matches that are correct given the known misclassification.</p>"
        + table +
        '<p class="meta">Expected re-identifications (the Benedetti-Franconi per-record risk summed) take the '
        "frequencies of a file as true ones; on the released file they would ignore the perturbation, so they "
        "are shown for the original file only: after PRAM, tau2 is the expected number of correct matches.</p>"
        + recognition
    )


def _utility_block(u: VariableUtility) -> str:
    parts = [f"<h3>{_e(u.name)}</h3>", f'<img alt="frequencies of {_e(u.name)}" src="{data_uri(frequency_chart(u))}">']
    if u.curve is not None:
        parts.append(f'<img alt="privacy-utility curve of {_e(u.name)}" src="{data_uri(curve_chart(u.curve))}">')
    parts.append(f'<p class="meta">Curve: randomized response on the categories of {_e(u.name)}; {_e(u.curve_note)}.</p>')
    return "".join(parts)


def _utility(report: ReleaseReport) -> str:
    if report.public:
        note = f'<p class="meta">{_e(report.utility_note)}</p>' if report.utility_note else ""
        return (
            "<p>For each perturbed variable, the released shares of records and the shares estimated from the "
            "released file and the manifest (unbiased moment estimator, 95 % confidence interval).</p>"
            + note + "".join(_utility_block(u) for u in report.utility)
        )
    table = _table(
        ["variable", "H(X) [nats]", "I(X; Z) kept [nats]", "share of H(X) kept [%]"],
        [[_e(u.name), fmt(u.entropy_nats), fmt(u.mutual_information_nats), fmt(100 * u.share_kept, 3)]
         for u in report.utility],
        [False, True, True, True],
    )
    note = f'<p class="meta">{_e(report.utility_note)}</p>' if report.utility_note else ""
    return (
        "<p>Mutual information between the original value X and the released value Z of each perturbed "
        "variable, for the original frequencies. The charts show the original, released and estimated "
        "shares of records (unbiased moment estimator from the released file and the manifest, 95 % "
        "confidence interval), then utility against epsilon.</p>"
        + table + note + "".join(_utility_block(u) for u in report.utility)
    )


def with_interval(value: float, se: float | None, bounds: tuple[float, float] | None = None) -> str:
    """A figure, with its 95 % normal interval (cut to ``bounds``, the figure's range) when it
    has a positive standard error (escaped HTML).

    Parameters
    ----------
    value : float
        The figure.
    se : float or None
        Its standard error (None, NaN or 0: shown without an interval).
    bounds : tuple of float, optional
        The range the interval is cut to (e.g. 0 to 100 for a share in %).

    Returns
    -------
    str
        The figure as :func:`fmt` writes it, then ``(low to high)``.

    Examples
    --------
    >>> with_interval(12.0, 0.5), with_interval(3.0, None), with_interval(float("nan"), float("nan"))
    ('12 (11.02 to 12.98)', '3', 'n/a')
    >>> with_interval(1.0, 1.0, (0.0, 100.0))
    '1 (0 to 2.96)'
    >>> with_interval(101.3, 1.0, (0.0, 100.0))
    '101.3 (99.34 to 100; the unbiased estimate lies outside 0 to 100)'
    """
    if se is None or not se > 0 or math.isnan(value):       # none, NaN, or exact (0)
        return fmt(value)
    low, high = value - Z95 * se, value + Z95 * se
    outside = ""
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
        if not bounds[0] <= value <= bounds[1]:  # the unbiased estimator is not held to the range: say so
            outside = f"; the unbiased estimate lies outside {fmt(bounds[0])} to {fmt(bounds[1])}"
    return f"{fmt(value)} ({fmt(low)} to {fmt(high)}{outside})"


def _locality_block(loc: Locality, method: str, internal: bool) -> str:
    head = f"<h3>{_e(loc.name)}</h3>"
    if not loc.figures:
        return head + f'<p class="note">{_e(loc.note)}</p>'
    d = loc.distances
    rr = f"randomized response at epsilon {fmt(loc.epsilon)} nats"

    def row(f: LocalityFigure) -> list[str]:
        bounds = (0.0, 100.0) if f.unit == "%" else (0.0, math.inf)
        cells = [_e(f.measure), _e(f.unit), with_interval(f.design, f.design_se, bounds),
                 with_interval(f.rr, f.rr_se, bounds)]
        return cells + ([fmt(f.realised)] if internal else [])

    table = _table(["measure", "unit", f"released matrix ({_e(method)})", _e(rr)]
                   + (["realised in this release"] if internal else []),
                   [row(f) for f in loc.figures], [False, False, True, True] + ([True] if internal else []))
    note = f'<p class="meta">{_e(loc.note)}.</p>' if loc.note else ""
    return (head + f"<p>Distances: {_e(d.get('kind'))} ({_e(d.get('source'))}), unit: {_e(d.get('unit'))}, "
            f"{fmt(d.get('categories'))} categories. Weighted by {_e(loc.weights)}.</p>" + table + note)


def _locality(report: ReleaseReport) -> str:
    methods = {e.name: e.method for e in report.ledger}
    intro = ("For each variable with distances between its categories (areas, ordered bands): how far a record's "
             "released value is from its original one, for the released matrix and for randomized response at the "
             "same epsilon (the matrix's own)")
    if report.public:
        intro += (". Computed from published figures only: the manifest's matrices, weighted by the design step's "
                  "differentially private counts when the ledger has them, otherwise by the counts estimated from "
                  "the released file (95 % intervals).")
    else:
        intro += (", on the exact frequencies of the original file; the last column counts the records of this "
                  "release.")
    return f"<p>{_e(intro)}</p>" + "".join(
        _locality_block(loc, methods.get(loc.name, ""), not report.public) for loc in report.locality)


def _provenance(report: ReleaseReport) -> str:
    designs = _table(
        ["variable", "method", "objective", "objective name", "certificate", "parameters", "design time [s]"],
        [[_e(d.name), _e(d.method), fmt(d.objective, 8), _e(d.objective_name or "n/a"),
          _json_block(d.certificate), _json_block(d.parameters), fmt(d.seconds)] for d in report.designs],
        [False, False, True, False, False, False, True],
    )
    f = report.files
    original = [] if report.public else [
        ["original file", _e(f.original or "given in memory")],
        ["original file SHA-256", f"<code>{_e(f.original_sha256 or 'n/a (data given in memory)')}</code>"]]
    files = _table(
        ["item", "value"],
        [*original,
         ["released file", _e(f.released or "given in memory")],
         ["released file SHA-256", f"<code>{_e(f.released_sha256 or 'n/a (data given in memory)')}</code>"],
         ["manifest input", _json_block(f.manifest_input)],
         ["manifest written", f"{_e(f.manifest_created)} by pramkit {_e(f.manifest_version)}"],
         ["report written", f"{_e(report.created)} by pramkit {_e(report.pramkit_version)}"]],
        [False, False],
    )
    return designs + files


def _figure(report: ReleaseReport) -> str:
    """The record epsilon as the ledger states it (:attr:`pramkit.ledger.Guarantee.figure`), in nats."""
    return f"{report.stated.figure} (nats)" if report.stated is not None else f"{fmt(report.record_epsilon)} nats"


def _cards(report: ReleaseReport) -> str:
    cards = [("record epsilon", _figure(report)), ("records", fmt(report.records))]
    if report.risk is not None:
        before, after = report.risk.before, report.risk.after
        cards += [
            ("tau2 before", f"{fmt(before.tau2)} records"),
            ("tau2 after", f"{fmt(after.tau2)} records" if after is not None else "not computed"),
            ("sample uniques", f"{fmt(before.sample_uniques)} records"),
        ]
    return '<div class="cards">' + "".join(
        f'<div class="card">{_e(label)}<b>{_e(value)}</b></div>' for label, value in cards) + "</div>"


def publication_sentence(public: bool) -> str:
    """Whether a report may be published, in one sentence.

    Parameters
    ----------
    public : bool
        Whether the report is the public one (:attr:`ReleaseReport.public`).

    Returns
    -------
    str
        The sentence shown at the top of the report.

    Examples
    --------
    >>> publication_sentence(True).startswith("This public report may be published")
    True
    >>> print(publication_sentence(False))
    Internal report: computed from the original file; keep it with the data holder and do not publish it (publish the public report instead).
    """
    if public:
        return ("This public report may be published: it shows only the manifest and figures computed from the "
                "released file.")
    return ("Internal report: computed from the original file; keep it with the data holder and do not "
            "publish it (publish the public report instead).")


def _structure(facts: Mapping[str, Any], figure: str | None = None) -> str:
    """Edit rules, strata, values never changed and household units, and the epsilon given them."""
    parts = []
    rules = facts.get("rules")
    if rules:
        columns = list(dict.fromkeys(c for r in rules["forbidden"] for c in r))
        rows = [[_e(" | ".join(r[c])) if c in r else "any" for c in columns] for r in rules["forbidden"]]
        parts.append(f"<p>Edit rules from {_e(rules['source'])}: no released record holds one of these "
                     "combinations (each row is forbidden; public knowledge, no budget spent).</p>"
                     + _table([_e(c) for c in columns], rows, [False] * len(columns)))
        if facts.get("rule_breaking") == "keep":
            parts.append('<div class="warn">Original records that break a rule are released unperturbed: '
                         "no epsilon covers them.</div>")
    rows = [[_e(v["name"]), _e(", ".join(v["strata"])) or "none",
             _e(", ".join(str(c) for c in v["unchanged"][:8]) + (", ..." if len(v["unchanged"]) > 8 else ""))
             or "none", _e(v["household"] or "person"),
             _e(epsilon_words(v.get("epsilon", math.inf), v["epsilon_given_block"] if v.get("structured", True)
                              else None))]
            for v in facts.get("variables", [])]
    if rows:
        parts.append(_table(["variable", "strata (released unperturbed)", "values never changed",
                             "unit of the draw", "epsilon [nats]"], rows,
                            [False, False, False, False, True]))
    if facts.get("released_exactly"):
        parts.append(f'<div class="note">Released exactly, as in the original: {_e(facts["released_exactly"])}. '
                     f"Among records that agree on it, the record epsilon is "
                     f"{_e(figure or fmt(facts['record_epsilon_given_structure']) + ' nats')}.</div>")
    return "".join(parts)


def _audit(result: Any) -> str:
    """The audit's verdict and its checks (:class:`pramkit.audit.AuditResult`), failures first."""
    checks = sorted(result.checks, key=lambda c: c.passed)
    rows = [["pass" if c.passed else "<b>FAIL</b>", _e(c.audit), _e(c.subject), _e(c.field), _e(c.detail)]
            for c in checks]
    return (f'<div class="{"note" if result.passed else "warn"}"><b>{_e(result.verdict())}</b></div>'
            "<p>Rerun it with <code>pramkit audit</code> (docs/audit.md).</p>"
            + _table(["", "audit", "of", "field", "evidence"], rows, [False] * 5))


def sections(report: ReleaseReport) -> list[tuple[str, str]]:
    """The report's sections in order, as (title, HTML body); :func:`render_html` numbers them.

    Parameters
    ----------
    report : ReleaseReport
        The numbers (:func:`pramkit.report.build_report` or :func:`pramkit.report.build_public_report`).

    Returns
    -------
    list of (str, str)
        The privacy ledger; the disclosure risk (internal report only); what makes records risky and
        the risk-utility map of a release designed to a target (internal report only, when asked
        for); utility (or, in the
        public report, the estimates from the released file); how far values move (variables
        with distances); the structure of the microdata (if any); the audit (if any, :func:`pramkit.report.build.with_audit`);
        the provenance.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.report import build_public_report
    >>> m = Manifest.of({"sex": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("f", "m"))})
    >>> [title for title, _ in sections(build_public_report(m, pd.DataFrame({"sex": ["f", "m"] * 50})))]
    ['Privacy ledger', 'Estimates from the released file', 'Provenance']
    """
    out = [("Privacy ledger", _ledger(report))]
    if report.risk is not None:
        out.append(("Disclosure risk before and after", _risk(report.risk)))
    if report.contributions is not None:
        from pramkit.report.contributions import contributions_section

        out.append(("What makes records risky", contributions_section(report.contributions, _table)))
    if report.risk_utility_map is not None and not report.public:  # computed from the original: never public
        from pramkit.report.rumap import risk_utility_section

        out.append(("Risk-utility map of the budget search", risk_utility_section(report.risk_utility_map, _table)))
    out.append(("Estimates from the released file" if report.public else "Utility", _utility(report)))
    if report.locality:
        out.append(("How far values move", _locality(report)))
    if report.structure:
        out.append(("Structure of the microdata", _structure(report.structure, _figure(report))))
    if report.audit is not None:
        out.append(("Audit", _audit(report.audit)))
    out.append(("Provenance", _provenance(report)))
    return out


def render_html(report: ReleaseReport) -> str:
    """The report as one HTML document (figures embedded).

    Parameters
    ----------
    report : ReleaseReport
        The numbers (:func:`pramkit.report.build_report` or :func:`pramkit.report.build_public_report`).

    Returns
    -------
    str
        A self-contained HTML document: inline styles, figures as ``data:`` URIs, no
        reference to the network.

    Examples
    --------
    >>> import re
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.report import build_public_report
    >>> m = Manifest.of({"sex": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("f", "m"))})
    >>> page = render_html(build_public_report(m, pd.DataFrame({"sex": ["f", "m"] * 50})))
    >>> page.startswith("<!DOCTYPE html>"), "<h1>PRAM release report (public)</h1>" in page
    (True, True)
    >>> re.findall(r"<h2>(.*?)</h2>", page)
    ['1. Privacy ledger', '2. Estimates from the released file', '3. Provenance']
    >>> "<b>record epsilon: 1.099 (design step plus the perturbation)</b>" in page, "http" in page  # log 3; offline
    (True, False)
    """
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>PRAM release report</title><style>{_STYLE}</style></head><body>"
        f"<h1>PRAM release report ({'public' if report.public else 'internal'})</h1>"
        + f'<div class="{"note" if report.public else "warn"}"><b>{_e(publication_sentence(report.public))}</b></div>'
        + f'<p class="meta">Written {_e(report.created)} by pramkit {_e(report.pramkit_version)}; '
        f"{fmt(report.records)} records; perturbed: {_e(', '.join(v.name for v in report.ledger))}.</p>"
        + _cards(report)
        + "".join(f"<h2>{i}. {_e(title)}</h2>{body}" for i, (title, body) in enumerate(sections(report), start=1))
        + "</body></html>\n"
    )


def write_report(report: ReleaseReport, out: str | Path, *, force: bool = False) -> Path:
    """Write the report as one self-contained HTML file, atomically (never over an
    existing file unless ``force``).

    Parameters
    ----------
    report : ReleaseReport
        The numbers to render (:func:`render_html`).
    out : str or Path
        The HTML file to write.
    force : bool
        Replace an existing file.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    OutputExistsError
        If ``out`` exists and ``force`` is false (checked before rendering).
    WriteError
        If ``out`` is a folder, or its folder does not exist.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.errors import OutputExistsError
    >>> from pramkit.report import build_public_report
    >>> m = Manifest.of({"sex": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("f", "m"))})
    >>> report = build_public_report(m, pd.DataFrame({"sex": ["f", "m"] * 50}))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = write_report(report, Path(folder, "report.html"))
    ...     print(path.name, path.read_text(encoding="utf-8") == render_html(report))
    ...     try:
    ...         write_report(report, path)
    ...     except OutputExistsError:
    ...         print("refused: the report exists")
    ...     print(write_report(report, path, force=True) == path)
    report.html True
    refused: the report exists
    True
    """
    check_writable(out, force=force)
    return write_text_atomic(out, render_html(report), force=force)
