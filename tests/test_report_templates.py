"""The reports' Jinja2 templates (pramkit/report/templates): every template parses, every section template is
used by a report, autoescaping is on and escapes as ``html.escape(str(value), quote=True)``, and the public
report holds nothing computed from the original.

The reports are made by the command line from a copy of sdcMicro's testdata.csv whose roof category 9 is
renamed to a ``<script>`` element, kept unperturbed (a kept code), so that the label is shown in both reports.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import io
import re
from pathlib import Path

import pandas as pd
import pytest
from jinja2 import TemplateSyntaxError

from pramkit.audit import audit
from pramkit.cli import main
from pramkit.report import build_public_report, build_report, render_html
from pramkit.report import html as report_html
from pramkit.report.build import with_audit

TESTDATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "testdata.csv"
TEMPLATES = Path(report_html.__file__).parent / "templates"
LABEL = "<script>alert('roof')</script>"


def _run(*args: object) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    assert code == 0, err.getvalue()


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """testdata.csv with one roof label made a script, released with strata, the label kept, designed to a
    target; the internal report with contributions and the risk-utility map, and the public report."""
    if not TESTDATA.is_file():
        pytest.skip("../shared/data/sdcmicro/testdata.csv is not available")
    folder = tmp_path_factory.mktemp("templates")
    data = pd.read_csv(TESTDATA, dtype=str, keep_default_na=False)
    data.loc[data["roof"] == "9", "roof"] = LABEL
    original = folder / "testdata.csv"
    data.to_csv(original, index=False)
    key = folder / "secret.key"
    key.write_bytes(bytes(range(32)))
    key.chmod(0o600)
    f = {"data": original, "manifest": folder / "m.json", "released": folder / "r.csv",
         "internal": folder / "internal.html", "public": folder / "public.html"}
    _run("design", original, "--vars", "roof,walls", "--strata", "urbrur", "--keep-codes", f"roof={LABEL}",
         "--epsilon", "6", "--target", "matched=5%", "--target-keys", "urbrur,roof,walls,water",
         "--out", f["manifest"], "--key-file", key, "--quiet")
    _run("apply", original, "--manifest", f["manifest"], "--out", f["released"], "--key-file", key, "--quiet")
    _run("report", original, "--manifest", f["manifest"], "--released", f["released"], "--keys", "roof,walls,water",
         "--out", f["internal"], "--public", f["public"], "--contributions", "--design-record",
         folder / "m.design-record.json", "--quiet")
    return f


def test_every_template_parses() -> None:
    env = report_html.environment()
    names = sorted(p.relative_to(TEMPLATES).as_posix() for p in TEMPLATES.rglob("*.html"))
    assert "report.html" in names and "macros.html" in names
    for name in names:
        env.parse(env.loader.get_source(env, name)[0], name)  # type: ignore[union-attr]
        env.get_template(name)
    with pytest.raises(TemplateSyntaxError):
        env.from_string("{% if %}")


def test_every_section_has_a_template_and_every_template_is_a_section() -> None:
    files = {p.relative_to(TEMPLATES).as_posix() for p in (TEMPLATES / "sections").glob("*.html")}
    assert files == set(report_html.SECTION_TEMPLATES.values())


def test_every_section_template_is_used(release: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The internal report (with contributions, the map, the structure and an audit) and a release with
    distances and the attack render every section template."""
    used: list[str] = []
    render = report_html._render

    def spy(template: str, **context: object) -> str:
        used.append(template)
        return render(template, **context)

    monkeypatch.setattr(report_html, "_render", spy)
    f = release
    internal = build_report(f["data"], f["manifest"], f["released"], ["roof", "walls", "water"], contributions=True,
                            design_record=f["manifest"].with_name("m.design-record.json"))
    render_html(with_audit(internal, audit(f["manifest"], released=f["released"], original=f["data"])))
    data = pd.DataFrame({"band": ["1", "2", "3", "4"] * 50, "sex": ["f", "m"] * 100})
    from pramkit import Manifest, perturb_frame
    from pramkit.design.classic import randomized_response

    manifest = Manifest.of({"band": randomized_response(["1", "2", "3", "4"], 1.0)})
    released = perturb_frame(data, manifest, key=bytes(32)).data
    render_html(build_report(data, manifest, released, ["band", "sex"], sampling_fraction=0.1,
                             distances={"band": "ordinal"}, attack_known=["sex"], attack_key=bytes(32)))
    assert set(report_html.SECTION_TEMPLATES.values()) <= set(used)
    assert "report.html" in used


def test_labels_are_escaped_in_both_reports(release: dict[str, Path]) -> None:
    escaped = html.escape(LABEL, quote=True)   # the escaping the reports always did: &#x27; for '
    assert escaped == "&lt;script&gt;alert(&#x27;roof&#x27;)&lt;/script&gt;"
    for name in ("internal", "public"):
        page = release[name].read_text(encoding="utf-8")
        assert "<script" not in page.lower(), name
        assert escaped in page, name
        # the kept code in the structure table, a cell of its own
        assert f"<td>{escaped}</td>" in page, name


def test_the_escaping_of_values_and_markup() -> None:
    env = report_html.environment()
    assert env.autoescape is True
    page = env.from_string('{{ x }}|{{ m.code(x) }}|<a title="{{ x }}">').render(
        x="a & \"b\" <'c'>", m=env.get_template("macros.html").module)
    assert page == ("a &amp; &quot;b&quot; &lt;&#x27;c&#x27;&gt;|<code>a &amp; &quot;b&quot; &lt;&#x27;c&#x27;&gt;"
                    "</code>|<a title=\"a &amp; &quot;b&quot; &lt;&#x27;c&#x27;&gt;\">")


def test_line_breaks_of_a_template() -> None:
    """Dropped next to a tag or a statement, one space in running text and around {{ }}."""
    assert report_html.join_lines("<p>\n  one\n  two {{ x }}\n  {{ y }}.\n</p>\n{% if z %}\n  <b>z</b>\n{% endif %}\n") \
        == "<p>one two {{ x }} {{ y }}.</p>{% if z %}<b>z</b>{% endif %}"


def test_the_public_report_holds_nothing_from_the_original(release: dict[str, Path]) -> None:
    public = release["public"].read_text(encoding="utf-8")
    internal = release["internal"].read_text(encoding="utf-8")
    sha = hashlib.sha256(release["data"].read_bytes()).hexdigest()
    titles = re.findall(r"<h2>\d+\. (.*?)</h2>", public)
    assert titles == ["Privacy ledger", "Estimates from the released file", "Structure of the microdata",
                      "Provenance"]
    assert {"Disclosure risk before and after", "What makes records risky",
            "Risk-utility map of the budget search"} <= set(re.findall(r"<h2>\d+\. (.*?)</h2>", internal))
    assert sha in internal and sha not in public
    assert str(release["data"]) not in public and "original file SHA-256" not in public
    assert "risk-utility-map" not in public and "tau2 before" not in public
    again = render_html(build_public_report(release["manifest"], release["released"]))
    assert re.findall(r"<h2>(.*?)</h2>", again) == re.findall(r"<h2>(.*?)</h2>", public)
