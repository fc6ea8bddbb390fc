"""``pramkit report --release-note``: the one-page Five Safes note, built from public things only."""

from __future__ import annotations

import errno
import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from conftest import assert_refused

from pramkit import atomic
from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.ledger import release_guarantee
from pramkit.manifest import Manifest
from pramkit.report import release_note

SAFES = ["Safe projects", "Safe people", "Safe settings", "Safe data", "Safe outputs"]


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A release of the census-like file: the original, its manifest, the released file and its receipt."""
    from pramkit.datasets import census

    d = tmp_path_factory.mktemp("note")
    census(1200, seed=7).to_csv(d / "data.csv", index=False)
    assert main(["keygen", str(d / "key")]) == 0
    assert main(["design", str(d / "data.csv"), "--vars", "age,sex,marital_status", "--epsilon", "4", "--out",
                 str(d / "m.json"), "--key-file", str(d / "key"), "--quiet"]) == 0
    assert main(["apply", str(d / "data.csv"), "--manifest", str(d / "m.json"), "--out", str(d / "r.csv"),
                 "--key-file", str(d / "key"), "--quiet"]) == 0
    return {"dir": d, "data": d / "data.csv", "manifest": d / "m.json", "released": d / "r.csv"}


class _Text(HTMLParser):
    """The headings, list items and paragraphs of a page, in order; fails on a closing tag never opened."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.parts: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag not in ("meta",):
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, (tag, self.open)
        self.open.pop()

    def handle_data(self, data: str) -> None:
        if self.open and self.open[-1] in ("h1", "h2", "p", "li"):
            self.parts.append((self.open[-1], data))


def test_the_note_holds_the_five_safes_and_the_ledgers_sentence(release, capsys) -> None:
    d = release["dir"]
    for name in ("note.md", "note.html"):
        assert main(["report", "--manifest", str(release["manifest"]), "--released", str(release["released"]),
                     "--release-note", str(d / name)]) == 0
        assert "may be published" in capsys.readouterr().out
    manifest = Manifest.read(release["manifest"])
    columns = list(pd.read_csv(release["released"], nrows=0).columns)
    sentence = release_guarantee(manifest, columns).sentence  # the ledger's words, whatever they are
    page = _Text()
    page.feed((d / "note.html").read_text(encoding="utf-8"))
    page.close()
    assert page.open == []
    assert [text for tag, text in page.parts if tag == "h2"] == SAFES
    paragraphs = [text for tag, text in page.parts if tag in ("p", "li")]
    assert any(sentence in text for text in paragraphs)
    assert all(any(name in text for text in paragraphs) for name in columns)  # every column is named
    for v in manifest.variables:
        assert any(text.startswith(f"{v.name}: {len(v.matrix.categories)} categories") for tag, text in page.parts
                   if tag == "li")
    markdown = (d / "note.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (.+)$", markdown, flags=re.M) == SAFES
    assert sentence in re.sub(r"\\(.)", r"\1", markdown)  # Markdown escapes removed: the same sentence


def test_the_note_never_reads_the_original_or_the_released_values(release, tmp_path) -> None:
    """Other records under the same header, and no original anywhere: the same note, byte for byte."""
    first = release_note(release["manifest"], release["released"])
    other = tmp_path / "r.csv"
    frame = pd.read_csv(release["released"])
    frame.iloc[::-1].head(5).to_csv(other, index=False)  # five other rows, same columns
    assert release_note(release["manifest"], other) == first
    assert first.html() == release_note(release["manifest"], other).html()
    assert not any("data.csv" in text for _, texts in first.sections for text in texts)


def test_labels_with_unicode_and_markdown_characters(tmp_path) -> None:
    manifest = Manifest.of({"région": randomized_response([" Île-de-France", "a*b", "x_y "], 1.0)})
    pd.DataFrame({"région": ["a*b"], "revenu|net": [1]}).to_csv(tmp_path / "r.csv", index=False)
    note = release_note(manifest, tmp_path / "r.csv")
    markdown = note.markdown()
    assert "revenu\\|net" in markdown and "région: 3 categories" in markdown
    page = note.html()
    assert "revenu|net" in html.unescape(page) and "<script" not in page


def test_a_failed_write_leaves_nothing(release, capsys, monkeypatch) -> None:
    d = release["dir"]

    def enospc(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    for point in ("_fsync", "_write_file"):
        before = sorted(p.name for p in d.iterdir())
        monkeypatch.setattr(atomic, point, enospc)
        code = main(["report", "--manifest", str(release["manifest"]), "--released", str(release["released"]),
                     "--release-note", str(d / "failed.md")])
        monkeypatch.undo()
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "No space left" in err, err
        assert sorted(p.name for p in d.iterdir()) == before  # no note, no temporary


BAD = [
    (["--release-note", "{d}/note.pdf"], "name a Markdown (.md) or HTML (.html) file"),
    (["--release-note", "{d}/old.md"], "exists"),
    (["--release-note", "{d}/m.json", "--force"], "m.json"),
    (["--release-note", "{d}/r.csv", "--force"], "r.csv"),
    (["--release-note", "{d}/no/such/folder/note.md"], "does not exist"),
    (["--release-note", "{d}/note.md", "--manifest", "{d}/absent.json"], "absent.json"),
    (["--release-note", "{d}/note.md", "--manifest", "{d}/not-json.json"], "not valid JSON"),
    (["--release-note", "{d}/note.md", "--released", "{d}/empty.csv"], "empty"),
]


@pytest.mark.parametrize(("flags", "message"), BAD)
def test_bad_input_is_one_line_and_writes_nothing(release, tmp_path, capsys, flags, message) -> None:
    d = tmp_path
    for name in ("m.json", "r.csv", "r.csv.receipt.json"):
        (d / name).write_bytes((release["dir"] / name).read_bytes())
    (d / "old.md").write_text("an earlier note\n")
    (d / "not-json.json").write_text("{not json")
    (d / "empty.csv").write_text("")
    args = {"--manifest": str(d / "m.json"), "--released": str(d / "r.csv")}
    rest = []
    for flag in flags:
        flag = flag.format(d=d)
        if rest and rest[-1] in args:
            args[rest.pop()] = flag
        else:
            rest.append(flag)
    assert_refused(d, ["report", "--manifest", args["--manifest"], "--released", args["--released"], *rest],
                   message, capsys)


def test_a_stratified_release_gets_its_note(tmp_path) -> None:
    """A manifest with strata describes its variable's epsilon as the text 'inf': the note says it in words
    (it ended in a traceback)."""
    import random

    import pramkit
    from pramkit.datasets import CENSUS_VARIABLES, census
    from pramkit.report.release_note import release_note

    data = census(1_000)
    data.to_csv(tmp_path / "d.csv", index=False)
    m = pramkit.design_release(data, ["marital_status"], epsilon=2.0, strata=["sex"], categories=CENSUS_VARIABLES,
                               rng=random.Random(1))
    m.write(tmp_path / "m.json")
    pramkit.apply_file(tmp_path / "d.csv", tmp_path / "m.json", tmp_path / "r.csv", key=bytes(32))
    text = release_note(tmp_path / "m.json", tmp_path / "r.csv").markdown()
    assert "epsilon local inf; 1.8 given the structure" in text


def test_the_notes_estimate_command_runs_as_printed(tmp_path, capsys, monkeypatch) -> None:
    """On EU-SILC exported with ``;`` and its not-applicable code -9: the command the note prints reads the
    released file as it was written (its missing code, its separator) and exits 0 in the release's folder."""
    import shlex

    from conftest import eusilc_export

    eusilc_export(1500).to_csv(tmp_path / "silc.csv", sep=";", index=False)
    read = ["--na-values", "-9", "--sep", ";"]
    assert main(["keygen", str(tmp_path / "key")]) == 0
    assert main(["design", str(tmp_path / "silc.csv"), "--vars", "pl030", "--epsilon", "3", "--out",
                 str(tmp_path / "m.json"), "--key-file", str(tmp_path / "key"), "--quiet", *read]) == 0
    assert main(["apply", str(tmp_path / "silc.csv"), "--manifest", str(tmp_path / "m.json"), "--out",
                 str(tmp_path / "released.csv"), "--key-file", str(tmp_path / "key"), "--quiet", *read]) == 0
    note = release_note(tmp_path / "m.json", tmp_path / "released.csv", sep=";").markdown()
    printed = re.search(r"(pramkit estimate .*?) \(or any software", re.sub(r"\\(.)", r"\1", note)).group(1)
    words = shlex.split(printed)
    assert words[:2] == ["pramkit", "estimate"] and "--na-values=-9" in words and "';'" not in words
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(words[1:]) == 0, capsys.readouterr().err
    assert "pl030" in capsys.readouterr().out
    # the same command without the missing code fails: the note's flags are needed, not decoration
    assert main([w for w in words[1:] if not w.startswith("--na-values")]) == 2


def test_a_recoded_release_names_its_recoding(tmp_path) -> None:
    """The map the data holder declared (``design --recoded-by``: the manifest's ``input.recode``), in words."""
    recode = {"age": {"top": {"above": 80, "value": "80+"}},
              "marital": {"merge": {"married, spouse present": "married", "married, spouse absent": "married"}}}
    m = Manifest.of({"age": randomized_response(["20", "80+"], 1.0)}, input={"recode": recode})
    (tmp_path / "r.csv").write_text("age,marital\n20,married\n")
    data = dict(release_note(m, tmp_path / "r.csv").sections)["Safe data"]
    at = data.index("Recoded before PRAM (a global recoding the data holder declared, not read from the data):")
    assert data[at + 1:at + 3] == ("- age: numbers above 80 become '80+'",
                                   "- marital: 'married, spouse present' and 'married, spouse absent' become 'married'")
    assert not any("Recoded" in text for text in dict(release_note(
        Manifest.of({"age": randomized_response(["20", "80+"], 1.0)}), tmp_path / "r.csv").sections)["Safe data"])
