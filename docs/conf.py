"""Sphinx configuration of pramkit's documentation site.

The pages are the Markdown files of ``docs/`` (MyST); a page whose front matter names the
``mystnb`` format is a text notebook whose ``{code-cell}`` blocks run at every build, so its
numbers and figures are the build's.  The API reference comes from the docstrings (numpydoc),
the gallery from the scripts of ``examples/`` (sphinx-gallery).  Build it with
``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (CONTRIBUTING.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import myst_nb.core.render as myst_nb_render
from pygments.lexers.special import TextLexer
from sphinx.highlighting import lexers

import pramkit

ROOT = Path(__file__).resolve().parents[1]
# The source tree, for the executed pages that run the project's own scripts (benchmarks/): their kernels
# inherit this process's environment, and run in a temporary folder with pramkit installed or not editable.
os.environ["PRAMKIT_SOURCE_TREE"] = str(ROOT)

project = "pramkit"
author = "pramkit developers"
copyright = "pramkit developers"
release = pramkit.__version__
version = release

extensions = [
    "myst_nb",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx_gallery.gen_gallery",
]

exclude_patterns = [
    "_build",
    "_generated",  # the option tables, included by options.md (written at every build: setup below)
    "jupyter_execute",
    # sphinx-gallery writes a notebook beside each example page, for download only.
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.md5",
    "auto_examples/*.json",
]

# --- MyST and the executed pages ---------------------------------------------------------------
# Links between pages are checked: an unknown page or heading is a warning, and warnings fail the
# build (-W).  Headings get anchors so that ``page.md#heading`` links resolve.
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath", "colon_fence"]
# Every executed page runs at every build, in a fresh temporary folder: nothing is cached.
nb_execution_mode = "force"
nb_execution_in_temp = True
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 180
nb_merge_streams = True
# A cell's output is shown whole.  IPython's ``%%bash`` writes a command's output in pieces of
# 100 bytes, and myst-nb's merge ends every piece with a newline, which cut long lines (a JSON
# document, a wide table) into pieces.  The pieces of a stream are joined as written first.
_merge_pieces_of = myst_nb_render.coalesce_streams


def _join_stream_pieces(outputs: list) -> list:
    """The outputs of a cell with the pieces of each stream joined as written, then myst-nb's merge.

    myst-nb's merge moves every piece of a stream into the stream's first output, so the joined
    text goes there too; other outputs keep their order.
    """
    joined: list = []
    first: dict = {}
    for output in outputs:
        if output.get("output_type") == "stream" and output["name"] in first:
            first[output["name"]]["text"] += output["text"]
            continue
        if output.get("output_type") == "stream":
            first[output["name"]] = output
        joined.append(output)
    return _merge_pieces_of(joined)


myst_nb_render.coalesce_streams = _join_stream_pieces
# Anything a cell writes to stderr (a warning, a traceback) fails the build.
nb_output_stderr = "warn"
# ``python`` in a page's kernel is this interpreter (the one that has pramkit installed).
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")

# A ``csv`` fence (a file's content) is shown as it is.
lexers["csv"] = TextLexer()

# --- API reference ------------------------------------------------------------------------------
autosummary_generate = True
# The signatures carry the type hints (short names: ``DataFrame``, not ``pandas.DataFrame``); the
# numpydoc sections say the same in words.
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_class_members_toctree = False

# --- gallery ------------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": [str(ROOT / "examples")],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "plot_gallery": "True",
    "write_computation_times": False,  # nothing written into the sources
}

# --- HTML ----------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"pramkit {release}"
html_static_path: list[str] = []
html_theme_options = {
    "description": "Statistical disclosure control of categorical microdata by PRAM",
    "fixed_sidebar": True,
}


# --- the option tables, made from the workflows' specifications at every build ---------------------
def _write_option_tables(app: object) -> None:
    """``_generated/COMMAND-options.md`` (design, estimate, apply, swap, risk): the table of each
    specification's settings (:mod:`pramkit.settings`), included by ``options.md``."""
    from pramkit.estimate.spec import EstimateSpec
    from pramkit.release.apply_spec import ApplySpec
    from pramkit.release.spec import option_table
    from pramkit.release.swap_spec import SwapSpec
    from pramkit.release.risk_spec import RiskSpec
    from pramkit.settings import option_table as table

    folder = Path(__file__).resolve().parent / "_generated"
    folder.mkdir(exist_ok=True)
    for name, text in (("design-options.md", option_table()), ("estimate-options.md", table(EstimateSpec)),
                       ("apply-options.md", table(ApplySpec)), ("swap-options.md", table(SwapSpec)),
                       ("risk-options.md", table(RiskSpec))):
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text + "\n":
            path.write_text(text + "\n", encoding="utf-8")
    from pramkit.cli.reference import flag_reference

    reference, path = flag_reference(), folder / "commands.md"  # every flag of every command (commands.md)
    if not path.exists() or path.read_text(encoding="utf-8") != reference:
        path.write_text(reference, encoding="utf-8")


def setup(app: object) -> None:
    app.connect("builder-inited", _write_option_tables)  # type: ignore[attr-defined]
