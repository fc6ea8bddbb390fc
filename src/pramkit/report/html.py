"""Render a :class:`~pramkit.report.build.ReleaseReport` as one self-contained HTML file.

Styles are inline, figures are base64 ``data:`` URIs, and nothing refers to
the network: the file opens anywhere, offline.  Every figure carries its
unit (nats, %, records, probability).

The markup is in Jinja2 templates (``pramkit/report/templates``): ``report.html`` is the page,
``report.css`` its style, ``macros.html`` the pieces the sections share (a table, a row, a JSON listing,
the cards) and ``sections/`` one template per section (:data:`SECTION_TEMPLATES`).  Numbers are formatted
here and given to the templates as filters (:func:`fmt`, :func:`with_interval`, ``epsilon_words``);
:func:`environment` says how the templates are read (escaping, and what becomes of their line breaks).
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from statistics import NormalDist
from typing import Any

import jinja2
from jinja2.ext import Extension
from markupsafe import Markup

from pramkit._json import to_jsonable
from pramkit.atomic import check_writable, write_text_atomic
from pramkit.ledger import epsilon_words
from pramkit.privacy.kinds import kind_lines
from pramkit.report.build import (
    DisclosureRisk,
    Locality,
    ReleaseReport,
    RiskFigures,
    VariableUtility,
)
from pramkit.report.images import data_uri
from pramkit.report.plots import curve_chart, frequency_chart
from pramkit.risk.attack_words import percent

#: Longest certificate or parameter listing shown in full (characters of JSON).
MAX_JSON_CHARS = 1500

#: Half-width of a 95 % normal interval, in standard errors.
Z95 = NormalDist().inv_cdf(0.975)

#: The reports' inline style (the template ``report.css``).
_STYLE = resources.files("pramkit.report").joinpath("templates", "report.css").read_text(encoding="utf-8")

#: The template of each section, by the function that renders it (:func:`sections` lists them in order).
SECTION_TEMPLATES = {
    "ledger": "sections/ledger.html",
    "risk": "sections/risk.html",
    "contributions": "sections/contributions.html",
    "attack": "sections/attack.html",
    "risk_utility_map": "sections/risk_utility_map.html",
    "utility": "sections/utility.html",
    "locality": "sections/locality.html",
    "structure": "sections/structure.html",
    "audit": "sections/audit.html",
    "provenance": "sections/provenance.html",
}


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


#: A line break of a template with the indentation after it (and any blank lines).
_BREAK = re.compile(r"\n\s*")


def join_lines(source: str) -> str:
    r"""A template's source as one line: each line break (with the indentation and blank lines after it) is
    dropped next to an HTML tag or a ``{% ... %}`` / ``{# ... #}`` tag, and becomes one space elsewhere
    (inside running text, around ``{{ ... }}``).

    Parameters
    ----------
    source : str
        The template's text.

    Returns
    -------
    str
        The text the template is compiled from (without the final line break).

    Examples
    --------
    >>> join_lines("<p>A sentence\n   wrapped, {{ x }}\n  and more.</p>\n<ul>\n  {% for i in y %}<li>{{ i }}</li>{% endfor %}\n</ul>\n")
    '<p>A sentence wrapped, {{ x }} and more.</p><ul>{% for i in y %}<li>{{ i }}</li>{% endfor %}</ul>'
    """
    def joined(m: re.Match[str]) -> str:
        before, after = source[m.start() - 1:m.start()], source[m.end():m.end() + 2]
        tag = before == ">" or after[:1] == "<" or source[m.start() - 2:m.start()] in ("%}", "#}") \
            or after in ("{%", "{#")
        return "" if tag else " "

    return _BREAK.sub(joined, source.strip())


class _OneLine(Extension):
    """Compile every ``.html`` template from :func:`join_lines` of its source (``report.css`` is kept as it is)."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return join_lines(source) if name is not None and name.endswith(".html") else source


def _finalize(value: Any) -> Any:
    """Every ``{{ value }}`` of a template escaped as :func:`_e` does; markup (a macro's output) as it is."""
    return value if hasattr(value, "__html__") else Markup(_e(value))


def _joined(values: Iterable[Any], sep: str = ", ") -> str:
    return sep.join(str(v) for v in values)


def _json_text(obj: Any) -> str | None:
    """The JSON listing of a certificate, parameters or input (None for nothing), cut at :data:`MAX_JSON_CHARS`."""
    if obj is None or obj == {}:
        return None
    text = json.dumps(to_jsonable(obj), indent=1, sort_keys=True)
    if len(text) > MAX_JSON_CHARS:
        text = text[:MAX_JSON_CHARS] + f"\n... ({len(text):,} characters in all; see the manifest)"
    return text


def _grouped_by_value(mapping: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """``{column: source}`` as ``[(source, [columns])]``, in the order the sources first appear."""
    by_value: dict[str, list[str]] = {}
    for key, value in mapping.items():
        by_value.setdefault(value, []).append(key)
    return list(by_value.items())


def _rule_columns(forbidden: Sequence[Mapping[str, Any]]) -> list[str]:
    """The columns the edit rules name, in the order they first appear."""
    return list(dict.fromkeys(c for r in forbidden for c in r))


@functools.cache
def environment() -> jinja2.Environment:
    r"""The Jinja2 environment of the report templates (``pramkit/report/templates``), made once.

    Autoescaping is on, every ``{{ value }}`` escaped as ``html.escape(str(value), quote=True)`` unless it
    is markup already; ``.html`` templates are compiled from their source joined into one line
    (:func:`join_lines`); an undefined name is an error.  Filters: ``fmt``, ``with_interval``,
    ``epsilon_words``, ``epsilon_meaning``, ``joined``, ``json_text``, ``repr``, and the charts as ``data:``
    URIs; globals: ``figure``, ``publication_sentence``, the tables of labels.

    Returns
    -------
    jinja2.Environment

    Examples
    --------
    >>> env = environment()
    >>> env.autoescape, env.from_string("<b>{{ x }}</b> {{ y|fmt }}").render(x="<O'Hara>", y=2 / 3)
    (True, '<b>&lt;O&#x27;Hara&gt;</b> 0.6667')
    """
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pramkit.report", "templates"), autoescape=True, finalize=_finalize,
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, extensions=[_OneLine])
    env.filters.update(
        fmt=fmt, with_interval=with_interval, epsilon_words=epsilon_words, epsilon_meaning=epsilon_meaning,
        joined=_joined, json_text=_json_text, repr=repr, grouped_by_value=_grouped_by_value,
        rule_columns=_rule_columns, percent=percent,
        known_values=lambda pairs: "; ".join(f"{column} = {value}" for column, value in pairs),
        method_of=lambda ledger: {e.name: e.method for e in ledger},
        frequency_uri=lambda u: data_uri(frequency_chart(u)), curve_uri=lambda c: data_uri(curve_chart(c)))
    env.tests["infinite"] = lambda x: isinstance(x, (int, float)) and math.isinf(x)
    env.globals.update(
        zip=zip, infinity=math.inf, newline="\n", figure=_figure, publication_sentence=publication_sentence,
        kind_lines=kind_lines,
        FACT_NAMES=_FACT_NAMES, RISK_ROWS=_RISK_ROWS, NOT_AFTER_PRAM=_NOT_AFTER_PRAM)
    return env


def _render(template: str, **context: Any) -> str:
    """A template of :func:`environment` rendered (a section's body, or the page)."""
    return environment().get_template(template).render(**context)


def _macro(name: str) -> Any:
    """A macro of ``macros.html``, to call from Python (it returns markup)."""
    return getattr(environment().get_template("macros.html").module, name)


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
    """An HTML table (the macro ``table_of`` of ``macros.html``); headers and cells are already escaped HTML."""
    cells = [[Markup(c) for c in r] for r in rows]
    return str(_macro("table_of")([Markup(h) for h in header], cells, list(numeric)))


def _json_block(obj: Any) -> str:
    return str(_macro("json_block")(obj))


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
    return _render(SECTION_TEMPLATES["ledger"], report=report)


def _guarantees(guarantees: Any) -> str:
    """Local, sampled and shuffled guarantees side by side, each with its conditions (nothing without them).

    Examples
    --------
    >>> from pramkit.privacy.amplification import Guarantees
    >>> _guarantees(Guarantees(3.0, 0.67, "a secret sample")).count("<li>"), _guarantees(None)
    (2, '')
    """
    return str(_macro("guarantees")(guarantees))


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
    return str(_macro("shown_exactly")(facts))


def _category_sources(categories: Mapping[str, str]) -> str:
    """Where each variable's list of categories came from, in words (the ledger's ``categories``)."""
    return str(_macro("category_sources")(categories))


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
    return _render(SECTION_TEMPLATES["risk"], risk=risk)


def _utility_block(u: VariableUtility) -> str:
    return str(_macro("utility_block")(u))


def _utility(report: ReleaseReport) -> str:
    return _render(SECTION_TEMPLATES["utility"], report=report)


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
    return str(_macro("locality_block")(loc, method, internal))


def _locality(report: ReleaseReport) -> str:
    return _render(SECTION_TEMPLATES["locality"], report=report)


def _provenance(report: ReleaseReport) -> str:
    return _render(SECTION_TEMPLATES["provenance"], report=report)


def _figure(report: ReleaseReport) -> str:
    """The record epsilon as the ledger states it (:attr:`pramkit.ledger.Guarantee.figure`), in nats."""
    return f"{report.stated.figure} (nats)" if report.stated is not None else f"{fmt(report.record_epsilon)} nats"


def _cards(report: ReleaseReport) -> str:
    return str(_macro("cards")(report))


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
    return _render(SECTION_TEMPLATES["structure"], facts=facts, figure=figure)


def _audit(result: Any) -> str:
    """The audit's verdict and its checks (:class:`pramkit.audit.AuditResult`), failures first."""
    return _render(SECTION_TEMPLATES["audit"], result=result)


def sections(report: ReleaseReport) -> list[tuple[str, str]]:
    """The report's sections in order, as (title, HTML body); :func:`render_html` numbers them.

    Parameters
    ----------
    report : ReleaseReport
        The numbers (:func:`pramkit.report.build_report` or :func:`pramkit.report.build_public_report`).

    Returns
    -------
    list of (str, str)
        The privacy ledger; the disclosure risk (internal report only); what makes records risky, the
        risk by attack and the risk-utility map of a release designed to a target (internal report only,
        when asked for); utility (or, in the
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

        out.append(("What makes records risky", _render(
            SECTION_TEMPLATES["contributions"], body=Markup(contributions_section(report.contributions, _table)))))
    if report.attack is not None and not report.public:  # computed from the original: never public
        out.append(("Risk by attack", _render(SECTION_TEMPLATES["attack"], attack=report.attack,
                                              figure=_figure(report))))
    if report.risk_utility_map is not None and not report.public:  # computed from the original: never public
        from pramkit.report.rumap import risk_utility_section

        out.append(("Risk-utility map of the budget search", _render(
            SECTION_TEMPLATES["risk_utility_map"], body=Markup(risk_utility_section(report.risk_utility_map, _table)))))
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
    return _render("report.html", report=report,
                   sections=[(title, Markup(body)) for title, body in sections(report)])


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
