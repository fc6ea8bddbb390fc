"""The page: one tab per step of a release, from the data to the files to publish.

Only layout lives here; what each output shows is computed by the library and
rendered by :mod:`pramkit.app.server` under the ids used below.
"""

from __future__ import annotations

import base64

from pramkit._extras import raise_missing_extra

try:
    from shiny import ui
    from shiny.types import NavSetArg
except ModuleNotFoundError as exc:
    raise_missing_extra(exc, "app", "the app (pramkit.app)")

from pramkit.app.fields import METHODS as METHODS  # the designs offered (re-exported: the page's names)
from pramkit.app.fields import Field, design_fields, methods, suppress_fields
from pramkit.app.live import live_ui
from pramkit.io_formats import suffix_formats


def data_files() -> list[str]:
    """The files a data upload accepts: every suffix pramkit reads, from the table of formats
    (:data:`pramkit.io_formats.FILE_FORMATS`, asked when the page is made: a format added there is offered here).

    Examples
    --------
    >>> ".csv" in data_files() and ".sav" in data_files()
    True
    """
    return sorted(suffix_formats())


#: Files a data upload accepts (:func:`data_files`, when the module was loaded).
DATA_FILES = data_files()


def _titles() -> str:
    """The formats a data upload accepts, in words (``CSV, Parquet, ...``), from the table of formats."""
    from pramkit.io_formats import formats

    return ", ".join(f.title for f in formats())


#: The tab's name for its release in progress (kept in the tab's sessionStorage, so that a reload,
#: or a lost connection, returns to the same release; another tab has its own).
RESUME = """
(function () {
  var item = "pramkit-desk", name = sessionStorage.getItem(item);
  if (!name) {
    name = (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Math.random()).slice(2) + Date.now();
    sessionStorage.setItem(item, name);
  }
  jQuery(document).on("shiny:connected", function () { Shiny.setInputValue("desk", name); });
})();
"""

#: The status boxes of a step's sidebar (its error, its Cancel button, the statements to confirm) take no
#: room before they are drawn: a waiting spinner's 32 px above a button moved it as its tab was first
#: shown, under the pointer of a click.  A long path in the sidebar (where the key was saved) wraps
#: instead of running under the results.
STYLE = (".bslib-sidebar-layout > .sidebar .shiny-html-output.recalculating { min-height: 0 !important; }\n"
         ".bslib-sidebar-layout > .sidebar { overflow-wrap: anywhere; }")


def page() -> ui.Tag:
    """The whole page: a title and the five steps as tabs.

    Returns
    -------
    shiny.ui.Tag
        The page, for :class:`shiny.App`.

    Examples
    --------
    >>> html = str(page())
    >>> all(f'id="{i}"' in html for i in ("open_census", "run_risk", "run_suppress", "run_design", "run_apply",
    ...                                    "run_attack", "run_export"))
    True
    """
    return ui.page_fluid(
        ui.tags.script(RESUME),
        ui.tags.style(STYLE),
        ui.h2("pramkit: a PRAM release, step by step"),
        session_bar(),
        ui.navset_tab(data_tab(), risk_tab(), suppress_tab(), design_tab(), apply_tab(), export_tab(), id="steps"),
        title="pramkit",
    )


def session_bar() -> ui.Tag:
    """Above the steps: undo the last change of the settings, save the session to a file, restore one.

    Examples
    --------
    >>> html = str(session_bar())
    >>> all(f'id="{i}"' in html for i in ("undo", "session_path", "save_session", "session_upload"))
    True
    """
    return ui.div(
        ui.input_action_button("undo", "Undo the last change", disabled=True),
        ui.input_text("session_path", None, "", placeholder="Save the session as, e.g. ~/release-2026.json"),
        ui.input_action_button("save_session", "Save the session"),
        ui.input_file("session_upload", None, accept=[".json"], button_label="Restore a session...",
                      placeholder="a session file (JSON)"),
        ui.output_ui("session_status"),
        class_="d-flex flex-wrap gap-2 align-items-start mb-2 session-bar",
    )


def _step(title: str, inputs: list[ui.TagChild], outputs: list[ui.TagChild], name: str) -> NavSetArg:
    """A tab: the inputs on the left (with the step's error box and cancel button), the results on the right, under
    what the library warned of during the step."""
    side = ui.sidebar(*inputs, ui.output_ui(f"{name}_cancel"), ui.output_ui(f"{name}_error"), width=360)
    return ui.nav_panel(title, ui.layout_sidebar(side, ui.output_ui(f"{name}_warnings"), *outputs), value=name)


def data_tab() -> NavSetArg:
    """Step 1: the built-in census (with a row count) or an uploaded file; its variables and first rows.

    Examples
    --------
    >>> html = str(ui.page_fluid(ui.navset_tab(data_tab())))
    >>> 'id="upload"' in html, 'id="open_path"' in html
    (True, True)
    """
    return _step("1 Data", [
        ui.input_text("census_rows", "Rows of the census-like data", "20000"),
        ui.input_action_button("open_census", "Open the census", class_="btn-primary"),
        ui.hr(),
        ui.input_text("na_values", "Texts meaning missing (comma-separated)", "NA"),
        ui.input_text("csv_sep", "CSV field separator (';' or tab for many European offices' files)", ","),
        ui.input_text("csv_encoding", "CSV character encoding (utf-8, latin-1, cp1252, ...)", "utf-8"),
        ui.input_file("upload", f"Or upload a file ({_titles()})", accept=data_files()),
        ui.input_text("data_path", "Or open a file on this computer by its path (large files: read where "
                      "they are, streamed)", ""),
        ui.input_action_button("open_path", "Open the file"),
        ui.output_ui("data_folders"),
        ui.hr(),
        ui.input_text_area("recode", "Recode before PRAM (one rule a line; empty: the file as opened)", "",
                           rows=3, placeholder="marital_status: married, spouse present | married, spouse absent "
                           "-> married\nage > 80 -> 80+"),
        ui.input_action_button("run_recode", "Recode"),
    ], [
        ui.output_ui("data_summary"),
        ui.h4("Variables"), ui.output_table("variables"),
        ui.h4("First rows"), ui.output_table("preview"),
    ], "data")


def risk_tab() -> NavSetArg:
    """Step 2: the identification risk of the original file for the chosen key variables.

    Examples
    --------
    >>> 'id="risk_keys"' in str(ui.page_fluid(ui.navset_tab(risk_tab())))
    True
    """
    return _step("2 Risk", [
        ui.input_selectize("risk_keys", "Key variables", choices=[], multiple=True),
        ui.input_text("sampling_fraction", "Sampling fraction of the file", "0.05"),
        ui.input_select("risk_weights", "Weights", choices={"": "none"}),
        ui.input_select("risk_household", "Household id", choices={"": "none"}),
        ui.input_checkbox("risk_contributions", "What each variable contributes (SUDA, tau1, tau2)", False),
        ui.input_action_button("run_risk", "Assess the risk", class_="btn-primary"),
    ], [
        ui.output_table("risk_table"),
        ui.output_table("risk_contributions_table"),
        ui.output_ui("risk_plot"),
    ], "risk")


#: The suppression step's tab (optional, between the risk and the design).
SUPPRESS_TAB = "Suppression (optional)"


def suppress_tab() -> NavSetArg:
    """Between the risk and the design, optional: local suppression to k-anonymity (the settings of
    :class:`pramkit.workbench.suppression.SuppressSpec`), the records below k counted live as they change, and
    what the suppression did once run.

    Examples
    --------
    >>> html = str(ui.page_fluid(ui.navset_tab(suppress_tab())))
    >>> all(f'id="{i}"' in html for i in ("suppress_keys", "suppress_k", "suppress_missing", "run_suppress"))
    True
    """
    return _step(SUPPRESS_TAB, [
        *(design_field(f) for f in suppress_fields()),
        ui.input_action_button("run_suppress", "Suppress", class_="btn-primary"),
        ui.input_action_button("undo_suppress", "Take the suppression back"),
    ], [
        ui.h4("Records below k, as the settings stand"), ui.output_ui("suppress_live"),
        ui.output_ui("suppress_result"),
        ui.output_table("suppress_table"),
    ], "suppress")


def design_tab() -> NavSetArg:
    """Step 3: the design (family, record budget, structure) and its guarantee, ledger and matrices.

    Examples
    --------
    >>> 'id="epsilon"' in str(ui.page_fluid(ui.navset_tab(design_tab())))
    True
    """
    form = design_fields()
    main: list[ui.TagChild] = []
    for f in form:
        if not f.more:
            main.append(design_field(f))
        if f.setting == "forbid":  # the rules may be written in the page too
            main.append(ui.input_text_area(
                "edit_rules", "Edit rules written here (as in a rules file: a header of variables, then one "
                "forbidden combination a line; a|b for either)", "", rows=4,
                placeholder="age,marital_status\n0-9,widowed|divorced"))
            main.append(ui.output_ui("design_files"))
    return _step("3 Design", [
        ui.input_selectize("design_vars", "Variables to perturb", choices=[], multiple=True),
        ui.input_select("method", "Method", choices={k: label for k, (label, _) in methods().items()}),
        *main,
        ui.input_text("options", "Method options (name=value, ...)", ""),
        ui.accordion(ui.accordion_panel("More settings", *(design_field(f) for f in form if f.more)),
                     open=False, id="design_more"),
        ui.input_action_button("run_design", "Design", class_="btn-primary"),
        ui.hr(),
        ui.input_file("manifest_upload", "Or release with a manifest made before (JSON): its design as it is",
                      accept=[".json"]),
    ], [
        ui.output_ui("guarantee"),
        ui.h4("Ledger"), ui.output_table("ledger"),
        ui.output_ui("heatmaps"),
        live_ui(),
    ], "design")


def design_field(f: Field) -> ui.TagChild:
    """The input of one field of the design form (:func:`pramkit.app.fields.design_fields`): its widget by its
    setting's type, its help on hovering, shown only with the designs it applies to.

    Examples
    --------
    >>> from pramkit.app.fields import design_fields
    >>> k = str(design_field({f.setting: f for f in design_fields()}["k"]))
    >>> 'id="design_k"' in k, 'data-display-if="[&quot;kanon&quot;].indexOf(input.method) &gt;= 0"' in k
    (True, True)
    """
    if f.widget == "checkbox":
        tag = ui.input_checkbox(f.id, f.label, f.value == "true")
    elif f.widget == "select":
        tag = ui.input_select(f.id, f.label, choices={c: c or "default" for c in f.choices}, selected=f.value)
    elif f.widget == "file":
        tag = ui.input_file(f.id, f.label, accept=[".csv"])
    elif f.widget == "columns":
        tag = ui.input_selectize(f.id, f.label, choices=[], multiple=True)
    elif f.widget == "column":
        tag = ui.input_select(f.id, f.label, choices={"": "none"})
    else:
        tag = ui.input_text(f.id, f.label, f.value)
    shown = ui.div(tag, title=f.help)
    condition = f.condition()
    return shown if condition is None else ui.panel_conditional(condition, shown)


def apply_tab() -> NavSetArg:
    """Step 4: the secret key (generated for download, or uploaded; never shown), the perturbation, and the attack
    figures of the release beside its guarantee (private: from the original).

    Examples
    --------
    >>> 'id="key_upload"' in str(ui.page_fluid(ui.navset_tab(apply_tab())))
    True
    """
    return _step("4 Apply", [
        ui.input_action_button("new_key", "Generate a key"),
        ui.output_ui("key_download"),
        ui.input_file("key_upload", "Or upload a key file"),
        ui.output_ui("key_status"),
        ui.input_action_button("run_apply", "Apply", class_="btn-primary"),
        ui.hr(),
        ui.input_selectize("attack_known", "Columns an attacker knows", choices=[], multiple=True),
        ui.input_action_button("run_attack", "Attack the release"),
        ui.output_ui("attack_cancel"), ui.output_ui("attack_error"),
    ], [
        ui.output_ui("attack_warnings"), ui.output_ui("attack_figures"),
        ui.h4("Values changed"), ui.output_table("changed"),
        ui.output_ui("apply_notes"),
        ui.h4("Risk of the released file"), ui.output_table("risk_after"),
        ui.h4("Estimates from the released file (%, with 95 % intervals)"), ui.output_table("estimates"),
    ], "apply")


def export_tab() -> NavSetArg:
    """Step 5: the output folder, the statements to confirm, the files written and the script.

    Examples
    --------
    >>> 'id="out_folder"' in str(ui.page_fluid(ui.navset_tab(export_tab())))
    True
    """
    return _step("5 Export", [
        ui.input_text("out_folder", "Output folder (new or empty)", ""),
        ui.output_ui("uncovered"),
        ui.input_action_button("run_export", "Export", class_="btn-primary"),
    ], [
        ui.output_ui("export_files"),
        ui.h4("Script reproducing the release with the same key"), ui.output_ui("script"),
    ], "export")


def png(data: bytes, alt: str) -> ui.Tag:
    """A PNG image inline in the page.

    Parameters
    ----------
    data : bytes
        The PNG file's bytes (from the library).
    alt : str
        The image's text alternative.

    Examples
    --------
    >>> str(png(b"\\x89PNG", "plot"))
    '<img src="data:image/png;base64,iVBORw==" alt="plot" style="max-width:100%;"/>'
    """
    return ui.tags.img(src="data:image/png;base64," + base64.b64encode(data).decode(), alt=alt,
                       style="max-width:100%;")


def warnings_box(said: tuple[str, ...] | list[str]) -> ui.Tag | None:
    """What the library warned of during a step, above its result (nothing when it warned of nothing).

    Examples
    --------
    >>> box = str(warnings_box(["the matrix is singular"]))
    >>> "The library warns:" in box, "<li>the matrix is singular</li>" in box, "alert-warning" in box
    (True, True, True)
    >>> warnings_box(()) is None
    True
    """
    if not said:
        return None
    return ui.div(ui.strong("The library warns:"), ui.tags.ul(*(ui.tags.li(w) for w in said)),
                  class_="alert alert-warning step-warnings", role="status")


def error_box(message: str) -> ui.Tag:
    """A step's error message, one line in a red box.

    Examples
    --------
    >>> str(error_box("no data"))
    '<div class="alert alert-danger step-error" role="alert">no data</div>'
    """
    return ui.div(message, class_="alert alert-danger step-error", role="alert")
