"""The reference of every command and flag, read from the command line's own parser.

``docs/commands.md`` includes what :func:`flag_reference` writes at every documentation build, so a flag
added to a command is documented by the same change, with the help its ``--help`` prints.  The
specifications' tables (``docs/options.md``) say more about the settings they declare (rules, library
names); this page lists every flag of every command, files and switches included.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The commands of ``pramkit`` and their parsers, in the order ``pramkit --help`` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def flags(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, str]]:
    """Each argument of a command: its spelling (``--sep CHAR``, ``data``), its help and its default.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        A command's parser.

    Yields
    ------
    tuple of str
        ``(spelling, help, default)``: the flags as ``--help`` shows them (every alias, and the metavar
        of a flag that takes a value), the help with argparse's ``%(default)s`` filled in, and the default
        (empty when there is none to show).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("data", help="the file")
    >>> _ = p.add_argument("--k", "-k", type=int, default=3, metavar="K", help="threshold (default %(default)s)")
    >>> _ = p.add_argument("--na", default=("NA", "-9"), help="missing codes")
    >>> list(flags(p))
    [('data', 'the file', ''), ('--k K, -k K', 'threshold (default 3)', '3'), ('--na NA', 'missing codes', 'NA,-9')]
    """
    formatter = parser._get_formatter()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        spelling = formatter._format_action_invocation(action)
        text = formatter._expand_help(action) if action.help else ""
        default = action.default
        if isinstance(default, (list, tuple)):
            default = ",".join(str(d) for d in default)
        shown = "" if default in (None, False, argparse.SUPPRESS) or action.option_strings == [] else str(default)
        yield spelling, " ".join(text.split()), shown


def _cell(text: str) -> str:
    """Text as one Markdown table cell: pipes escaped, code kept as code."""
    return text.replace("|", "\\|")


def flag_reference() -> str:
    """Markdown: a section per command of ``pramkit``, each a table of its flags (:func:`flags`).

    Returns
    -------
    str
        The reference, every command in the order ``pramkit --help`` lists them.

    Examples
    --------
    >>> text = flag_reference()
    >>> "## `pramkit recode`" in text and "`--map MAP`" in text
    True
    """
    from pramkit.cli import build_parser

    out = []
    for name, parser in _subparsers(build_parser(None)).items():
        out += [f"## `pramkit {name}`", "", " ".join((parser.description or "").split()), "",
                "| flag | what it does | default |", "|---|---|---|"]
        out += [f"| `{_cell(spelling)}` | {_cell(text)} | {f'`{_cell(default)}`' if default else ''} |"
                for spelling, text, default in flags(parser)]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
