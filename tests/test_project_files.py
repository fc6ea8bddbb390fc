"""The files an office's reviewer reads before installing: licence, third-party notice, changelog, citation.

Each is checked against something else the project states (pyproject.toml's licence and dependencies,
the changelog's latest version, the Citation File Format 1.2.0's rules), so that none drifts alone.
"""

from __future__ import annotations

import datetime
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

#: The top-level keys of CFF 1.2.0 (its schema's "properties"; the schema allows no other) and the required ones.
CFF_KEYS = {"abstract", "authors", "cff-version", "commit", "contact", "date-released", "doi", "identifiers",
            "keywords", "license", "license-url", "message", "preferred-citation", "references", "repository",
            "repository-artifact", "repository-code", "title", "type", "url", "version"}
CFF_REQUIRED = {"authors", "cff-version", "message", "title"}
DATE = re.compile(r"^[0-9]{4}-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])$")  # the schema's pattern of a date
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)


def _releases() -> list[tuple[str, str]]:
    """(version, date) of the changelog's released versions, newest first."""
    return RELEASE.findall((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))


def test_licence_is_the_mit_text_the_metadata_names():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert PYPROJECT["project"]["license"] == "MIT"
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the pramkit developers" in text
    assert "Permission is hereby granted, free of charge" in text and 'THE SOFTWARE IS PROVIDED "AS IS"' in text


def test_licence_files_and_history_go_into_the_source_distribution():
    """PEP 639 licence files (also copied into the wheel's metadata) and MANIFEST.in for the others."""
    licence_files = PYPROJECT["project"]["license-files"]
    assert set(licence_files) == {"LICENSE", "THIRD-PARTY-NOTICES.md"}
    assert all((ROOT / f).is_file() for f in licence_files)
    included = {word for line in (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines()
                if line.startswith("include ") for word in line.split()[1:]}
    assert {"CHANGELOG.md", "CITATION.cff"} <= included


def test_third_party_notice_names_every_dependency():
    """Every run-time dependency and every user-facing extra's package is in the notice's table."""
    notice = (ROOT / "THIRD-PARTY-NOTICES.md").read_text(encoding="utf-8").lower()
    table = {line.split("|")[1].strip() for line in notice.splitlines() if line.startswith("| ")}
    names = set()
    for extra, requirements in [("", PYPROJECT["project"]["dependencies"]),
                                *PYPROJECT["project"]["optional-dependencies"].items()]:
        if extra in {"test", "docs", "lint"}:  # the developers' tools, never installed for users
            continue
        names |= {re.split(r"[<>=!~\[ ]", r, maxsplit=1)[0].lower() for r in requirements}
    spelled = {"pyarrow": "pyarrow", "scikit-learn": "scikit-learn", "pyspark": "pyspark", "shiny": "shiny for python"}
    missing = {n for n in names if not any(spelled.get(n, n) in row for row in table)}
    assert not missing, f"add {sorted(missing)} to THIRD-PARTY-NOTICES.md"


def test_no_third_party_code_in_the_package():
    """The notice says nothing third-party is bundled: no file of src/ carries another licence's header."""
    foreign = re.compile(r"SPDX-License-Identifier|Licensed under|Copyright \(c\)|All rights reserved", re.I)
    files = [p for p in (ROOT / "src").rglob("*") if p.is_file() and p.suffix in {".py", ".c", ".h", ".R", ".js",
                                                                                  ".css", ".pyi"}]
    assert len(files) > 100
    assert [str(p) for p in files if foreign.search(p.read_text(encoding="utf-8", errors="replace"))] == []


def test_changelog_keeps_a_changelog_shape():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n") and "\n## [Unreleased]\n" in text
    releases = _releases()
    assert releases and ("0.1.0", releases[-1][1]) == releases[-1]  # the first version is 0.1.0
    versions = [tuple(int(x) for x in v.split(".")) for v, _ in releases]
    dates = [datetime.date.fromisoformat(d) for _, d in releases]
    assert versions == sorted(versions, reverse=True) and dates == sorted(dates, reverse=True)
    assert text.index("## [Unreleased]") < text.index(f"## [{releases[0][0]}]")
    sections = set(re.findall(r"^### (.+)$", text, re.M))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, sections


def test_citation_file_is_valid_cff_1_2_0():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert isinstance(cff, dict)
    assert CFF_REQUIRED <= set(cff) <= CFF_KEYS, set(cff) ^ CFF_KEYS
    assert cff["cff-version"] == "1.2.0"
    assert isinstance(cff["message"], str) and cff["message"] and isinstance(cff["title"], str) and cff["title"]
    assert cff["type"] in {"software", "dataset"}
    authors = cff["authors"]
    assert isinstance(authors, list) and authors
    for author in authors:  # an entity (a name) or a person (family-names, given-names, ...)
        assert isinstance(author, dict) and ("name" in author or "family-names" in author or "given-names" in author)
        assert all(isinstance(v, str) and v for v in author.values())
    assert cff["license"] == PYPROJECT["project"]["license"]
    assert isinstance(cff["version"], str)  # quoted: YAML would read 0.10 as a number
    assert isinstance(cff["date-released"], str) and DATE.match(cff["date-released"])  # quoted: not a YAML date
    assert (cff["version"], cff["date-released"]) == _releases()[0]  # the citation names the latest release
    assert all(isinstance(k, str) and k for k in cff["keywords"]) and len(set(cff["keywords"])) == len(cff["keywords"])
