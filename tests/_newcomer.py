"""The newcomer's first release, as docs/app.md writes it: its numbered steps read from the page of the
documentation and performed in Chromium, as a person does them (clicks and typing in the fields the step
names by their labels, waits on what the page shows).

One runner for the test (tests/test_app_newcomer_browser.py) and the benchmark
(benchmarks/bench_newcomer.py), so that neither can drift from the documentation: a step naming a label
the page does not have fails with the step's number and the labels the tab has.

A step is written in a few plain forms, each naming a label of the page in bold:

* ``click the tab **2 Risk**``; ``click **Assess the risk**`` (a button);
* ``type `0.05` in **Sampling fraction of the file**`` (a text field; a label may be given by its
  beginning if no other label of the tab begins so);
* ``in **Key variables**, pick `age`, `sex` and `marital_status``` (a field of several choices);
* ``choose `...` in **Method**`` (a list); ``leave **Weights** at `none``` (checks the field's value);
* ``tick **I have read these statements; release anyway**`` (a box);
* ``write ... in **Edit rules written here**`` and the code block that follows (a text area);
* ``the page shows “Guarantee:”``: waits until the tab shows the text (the step's result);
* ``type `pramkit app``` in the first step: starts the app (the caller's ``start``).

A bold label in a step that none of these forms uses is an error of the documentation.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from _browser import WAIT, Browser, Page, choose, expect, no_trace, shot
from playwright.sync_api import Locator

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "app.md"
SECTION = "## Your first release"

#: Milliseconds to find a label the documentation names (the field may be drawn after the step's button).
FIND = 10_000

#: The time a person takes beside the machine's, stated (docs/app.md, "How long it takes").  The
#: actions follow the Keystroke-Level Model (Card, Moran and Newell, 1980): to click, prepare (M, 1.35 s),
#: point (P, 1.1 s) and press and release (B+B, 0.2 s); to type, the same to reach the field, then a
#: keystroke per character (K, 0.28 s, an average typist) and a return of the hand to the mouse (H, 0.4 s).
#: Reading: the step's own words at 200 words a minute before acting, and 10 s per result the step points to.
MENTAL, POINT, PRESS, KEY, HOME = 1.35, 1.1, 0.2, 0.28, 0.4
WORDS_PER_MINUTE = 200
READ_RESULT = 10.0
#: A code block (the rules) is copied from the documentation and pasted: select, copy, click the field, paste.
PASTE = 2 * (MENTAL + POINT + PRESS) + 2 * KEY

_ACTIONS = [
    ("start", re.compile(r"`pramkit app`")),
    ("tab", re.compile(r"[Cc]lick the tab \*\*(?P<label>[^*]+)\*\*")),
    ("click", re.compile(r"[Cc]lick \*\*(?P<label>[^*]+)\*\*")),
    ("type", re.compile(r"[Tt]ype `(?P<value>[^`]+)` in \*\*(?P<label>[^*]+)\*\*")),
    ("pick", re.compile(r"[Ii]n \*\*(?P<label>[^*]+)\*\*, pick (?P<value>`[^`]+`(?:(?:,| and|, and) `[^`]+`)*)")),
    ("choose", re.compile(r"[Cc]hoose `(?P<value>[^`]+)` in \*\*(?P<label>[^*]+)\*\*")),
    ("leave", re.compile(r"[Ll]eave \*\*(?P<label>[^*]+)\*\* at `(?P<value>[^`]+)`")),
    ("tick", re.compile(r"[Tt]ick \*\*(?P<label>[^*]+)\*\*")),
    ("write", re.compile(r"[Ww]rite [^*]*?in \*\*(?P<label>[^*]+)\*\*.*?\n\s*```\w*\n(?P<value>.*?)\n\s*```", re.S)),
    ("see", re.compile(r"[Tt]he page shows “(?P<value>[^”]+)”")),
]


@dataclasses.dataclass(frozen=True)
class Action:
    """One thing the newcomer does: ``kind`` (a key of the forms above), the label it names, the value."""

    kind: str
    label: str = ""
    value: str = ""

    def think(self) -> float:
        """Seconds a person takes for it beside the machine (the Keystroke-Level Model, reading a result)."""
        click = MENTAL + POINT + PRESS
        if self.kind in ("tab", "click", "tick"):
            return click
        if self.kind == "type":
            return click + KEY * (len(self.value) + 1) + HOME  # select the field's text, type over it
        if self.kind == "pick":
            return click + len(_values(self.value)) * click + KEY  # open the list, click each, Escape
        if self.kind == "choose":
            return 2 * click
        if self.kind == "write":
            return PASTE
        if self.kind == "see":
            return READ_RESULT
        if self.kind == "start":  # typed in a terminal: `pramkit app` and Enter
            return MENTAL + KEY * len("pramkit app\n")
        return 0.0  # "leave": nothing to do


@dataclasses.dataclass(frozen=True)
class Step:
    """A numbered step of the documentation: its number, its text and its actions in order."""

    number: int
    text: str
    actions: tuple[Action, ...]

    @property
    def title(self) -> str:
        """The step's first sentence, without its markup."""
        first = re.split(r"(?<=[.:])\s", _plain(self.text), maxsplit=1)[0]
        return first.rstrip(".:")

    def reading(self) -> float:
        """Seconds to read the step's words (at :data:`WORDS_PER_MINUTE`)."""
        return len(_plain(self.text).split()) * 60.0 / WORDS_PER_MINUTE

    def think(self) -> float:
        """Seconds a person adds to the machine's for this step: reading it, then its actions."""
        return self.reading() + sum(a.think() for a in self.actions)


def _plain(text: str) -> str:
    return re.sub(r"[*`]", "", re.sub(r"```\w*\n.*?```", " ", text, flags=re.S))


def _values(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def steps(doc: Path = DOC) -> list[Step]:
    """The numbered steps of the section "Your first release" of ``doc``.

    Raises
    ------
    AssertionError
        The section is absent or a step names a label in bold that no action of the step uses.
    """
    text = doc.read_text(encoding="utf-8")
    assert SECTION in text, f"{doc.name} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    items = re.split(r"^(\d+)\. ", section, flags=re.M)
    found = []
    for number, body in zip(items[1::2], items[2::2]):
        body = re.split(r"\n\n(?=\S)", body, maxsplit=1)[0]  # the item: up to a paragraph not indented under it
        spans: list[tuple[int, int, Action]] = []
        for kind, pattern in _ACTIONS:
            for m in pattern.finditer(body):
                if any(s <= m.start() < e for s, e, _ in spans):  # "click the tab" is not also a "click"
                    continue
                groups = m.groupdict()
                value = groups.get("value") or ""
                if kind == "write":
                    value = "\n".join(line.strip() for line in value.splitlines())
                spans.append((m.start(), m.end(), Action(kind, (groups.get("label") or "").strip(), value)))
        spans.sort(key=lambda s: s[0])
        for label in re.finditer(r"\*\*([^*]+)\*\*", body):
            assert any(s <= label.start() < e for s, e, _ in spans), (
                f"{doc.name}, step {number} names **{label.group(1)}** but says nothing to do with it "
                f"(click, type ... in, in ..., pick, choose ... in, leave ... at, tick, write ... in)")
        found.append(Step(int(number), body.strip(), tuple(a for _, _, a in spans)))
    assert found, f"{doc.name}: the section {SECTION!r} has no numbered steps"
    assert [s.number for s in found] == list(range(1, len(found) + 1)), f"{doc.name}: the steps are not 1, 2, 3, ..."
    return found


@dataclasses.dataclass
class Timed:
    """A step done: the step and the machine's seconds for it (clicks, typing and waits on the page)."""

    step: Step
    seconds: float


class Newcomer:
    """Chromium doing the documented steps on the app.

    Parameters
    ----------
    browser : Browser
        The Chromium of tests/_browser.py.
    start : callable
        Starts the app (or finds it started) and returns the address to open, its token included.
    shots : list of Path
        Folders for the screenshots: the whole page after each step (``newcomer-NN``, in the first folder
        only: tests/artifacts/app/), then the window at the end (``newcomer``, in each: docs/app/ too).
    find : int
        Milliseconds to find a label a step names (:data:`FIND`); a documentation naming a label the page
        lacks is told so only after them.
    context : dict, optional
        The settings of the browser session (Playwright's ``new_context``); by default a window of 1280 by 900.
    """

    def __init__(self, browser: Browser, start: Callable[[], str], shots: list[Path], *, find: int = FIND,
                 context: dict | None = None) -> None:
        self.browser = browser
        self.start = start
        self.shots = shots
        self.find = find
        self.context = {"viewport": {"width": 1280, "height": 900}} if context is None else context
        self.page: Page | None = None

    def run(self, doc: Path = DOC) -> Iterator[Timed]:
        """Do each step of ``doc`` in turn; yield it with its machine seconds (screenshots not counted)."""
        done = steps(doc)
        for step in done:
            t0 = time.perf_counter()
            for i, action in enumerate(step.actions):
                after = step.actions[i + 1] if i + 1 < len(step.actions) else None
                if action.kind == "click" and after is not None and after.kind == "see":
                    self._not_yet(step, action, after.value)
                self._do(step, action)
            if self.page is not None:
                self._settled(step)
            seconds = time.perf_counter() - t0
            if self.page is not None:
                shot(self.page, f"newcomer-{step.number:02d}", self.shots[:1], full_page=True)
            yield Timed(step, seconds)
        assert self.page is not None, f"{doc.name}: no step starts the app (`pramkit app`)"
        shot(self.page, "newcomer", self.shots)
        no_trace(self.page)

    def close(self) -> None:
        if self.page is not None:
            self.page.context.close()

    # -- the actions ----------------------------------------------------------
    def _do(self, step: Step, action: Action) -> None:
        if action.kind == "start":
            ctx = self.browser.new_context(**self.context)
            self.page = ctx.new_page()
            self.page.goto(self.start())
            self.page.wait_for_function("() => window.Shiny && Shiny.shinyapp && Shiny.shinyapp.isConnected()",
                                        timeout=WAIT)
            return
        page = self.page
        assert page is not None, f"step {step.number}: start the app first (`pramkit app`)"
        if action.kind == "tab":
            tab = page.get_by_role("tab", name=action.label, exact=True)
            self._exists(step, tab, f"the tab **{action.label}**", "[role=tab]")
            tab.click()
            expect(tab).to_have_attribute("aria-selected", "true", timeout=WAIT)
            self._drawn()
        elif action.kind == "click":
            button = self._pane().get_by_role("button", name=action.label, exact=True)
            if not button.count():
                button = page.locator(".session-bar").get_by_role("button", name=action.label, exact=True)
            self._exists(step, button, f"the button **{action.label}**", "button")
            expect(button).to_be_enabled(timeout=WAIT)
            button.click()
        elif action.kind == "see":
            expect(self._pane()).to_contain_text(action.value, timeout=WAIT)
        else:
            field = self._field(step, action.label)
            if action.kind == "type":  # click in the field, select what it holds, type over it
                field.click()
                field.press("ControlOrMeta+a")
                field.press_sequentially(action.value)
            elif action.kind == "write":  # pasted from the documentation
                field.fill(action.value)
            elif action.kind == "tick":
                field.check()
            elif action.kind == "choose":
                field.select_option(label=action.value)
            elif action.kind == "pick":
                choose(page, str(field.get_attribute("id")), _values(action.value))
            elif action.kind == "leave":
                shown = field.evaluate("e => e.tagName === 'SELECT' ? (e.selectedOptions[0] || {}).text || '' "
                                       ": e.value")
                assert shown == action.value, (f"{DOC.name}, step {step.number}: **{action.label}** should be "
                                               f"left at {action.value!r}; the page has {shown!r}")

    def _not_yet(self, step: Step, action: Action, text: str) -> None:
        """The text a step waits for is not on the tab before its button is clicked (else the wait proves nothing)."""
        if self.page is not None and text in self._pane().inner_text():
            raise AssertionError(f"{DOC.name}, step {step.number}: the page shows “{text}” before **{action.label}** "
                                 "is clicked; name a text that the step's result brings")

    def _pane(self) -> Locator:
        assert self.page is not None
        return self.page.locator(".tab-pane.active")

    def _drawn(self) -> None:
        """The page's own signals that it is done: no progress shown, no output being drawn."""
        assert self.page is not None
        expect(self.page.locator(".shiny-notification .progress")).to_have_count(0, timeout=WAIT)
        self.page.wait_for_function("() => !document.querySelector('.tab-pane.active .recalculating')",
                                    timeout=WAIT)

    def _settled(self, step: Step) -> None:
        """After a step: its work is done and the tab shows no error (else the error, in the page's words)."""
        self._drawn()
        errors = self._pane().locator(".step-error")
        assert not errors.count(), f"step {step.number} ({step.title}): the page says {errors.first.inner_text()!r}"

    def _exists(self, step: Step, locator: Locator, what: str, kind: str) -> None:
        try:
            expect(locator).to_have_count(1, timeout=self.find)
        except AssertionError:
            assert self.page is not None
            names = self.page.locator(f".tab-pane.active {kind}, .nav {kind}" if kind != "[role=tab]"
                                      else kind).all_inner_texts()
            raise AssertionError(f"{DOC.name}, step {step.number} names {what}, which the page does not have "
                                 f"(it has: {', '.join(repr(n.strip()) for n in names if n.strip())})") from None

    def _field(self, step: Step, label: str) -> Locator:
        """The field of the active tab whose label is ``label`` or begins with it (the only one)."""
        assert self.page is not None
        pane = self._pane()
        deadline = time.monotonic() + self.find / 1000
        while True:
            texts = [" ".join(t.split()) for t in pane.locator("label").all_inner_texts()]
            hits = [i for i, t in enumerate(texts) if t == label] or [i for i, t in enumerate(texts)
                                                                       if t.startswith(label)]
            if len(hits) == 1 or time.monotonic() > deadline:
                break
            self.page.wait_for_timeout(50)
        assert len(hits) == 1, (f"{DOC.name}, step {step.number} names the field **{label}**, which "
                                f"{'the tab does not have' if not hits else 'more than one field of the tab begins with'}"
                                f" (its fields: {', '.join(repr(t) for t in texts if t)})")
        element = pane.locator("label").nth(hits[0])
        target = element.get_attribute("for")
        if target:
            return self.page.locator(f"[id='{target.removesuffix('-selectized')}']")
        return element.locator("input")
