"""Every flag of every command is documented: docs/commands.md includes the reference that
:func:`pramkit.cli.reference.flag_reference` writes at each documentation build, and each flag that a
command's ``--help`` prints (read from the printed help, not from the parser) stands in that command's
section with a help text of its own.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from pramkit.cli import COMMANDS, main
from pramkit.cli.reference import flag_reference, flags

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _help(command: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The command's ``--help``, unwrapped (argparse wraps at hyphens: ``--replicate-`` / ``weights``)."""
    monkeypatch.setenv("COLUMNS", "10000")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([command, "--help"]) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def sections() -> dict[str, str]:
    text = flag_reference()
    parts = re.split(r"^## `pramkit (\S+)`$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_the_reference_page_includes_the_generated_tables() -> None:
    page = (DOCS / "commands.md").read_text(encoding="utf-8")
    assert "{include} _generated/commands.md" in page
    assert "commands" in (DOCS / "index.md").read_text(encoding="utf-8").split("Reference")[1]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_of_the_help_is_documented(sections, command, monkeypatch) -> None:
    assert command in sections, command
    printed = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", _help(command, monkeypatch))) - {"--help"}
    documented = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", sections[command]))
    assert printed and printed <= documented, sorted(printed - documented)


def test_every_flag_has_its_own_help() -> None:
    from pramkit.cli import build_parser
    from pramkit.cli.reference import _subparsers

    unexplained = [f"{name} {spelling}" for name, parser in _subparsers(build_parser(None)).items()
                   for spelling, text, _ in flags(parser) if not text.strip()]
    assert unexplained == []
