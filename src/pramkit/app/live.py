"""The design step's live panel: the expected risk and utility of the design the fields describe, updated
as the officer changes them (:meth:`pramkit.workbench.Workbench.preview`), and the risk-utility map of the
designs tried.

The fields are read on every change; the preview runs once they have been still for :data:`DEBOUNCE`
seconds, in a worker thread, while the figures shown before stay in the page, greyed.  The figures are
computed from the original file: the panel says they are private expected values, never published.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from shiny import Inputs, Outputs, reactive, render, ui

from pramkit.errors import PramkitError
from pramkit.release.choices import DesignChoices
from pramkit.workbench.preview import PRIVATE_NOTE

#: Seconds the design fields must be still before the preview runs.
DEBOUNCE = 0.6

#: Styles of the panel (greyed while a new preview is computed).
STYLE = ("#live_panel .live-stale { opacity: 0.4; transition: opacity 0.2s; }"
         "#live_panel .live-note { color: #555; font-size: 0.9em; }"
         "#live_panel th { text-align: left; }")


def live_ui() -> ui.Tag:
    """The panel's place in the design step's results.

    Examples
    --------
    >>> 'id="live_panel"' in str(live_ui())
    True
    """
    return ui.div(ui.tags.style(STYLE), ui.h4("Live: expected risk and utility of the design in the fields"),
                  ui.output_ui("live_figures"), ui.h5("Risk-utility map of the designs tried"),
                  ui.output_ui("live_map"), id="live_panel")


def live_panel(input: Inputs, output: Outputs, desk: Any, fields: Callable[[], tuple[tuple[str, ...], DesignChoices]],
               key: reactive.Value[Any], ready: Callable[[], bool], depends: Callable[[], Any]) -> None:
    """The server side of the panel.

    Parameters
    ----------
    input, output : Inputs, Outputs
        The session's.
    desk : Desk
        The session's workbench (``desk.wb``).
    fields : callable
        Reads the design fields (reactively): the variables and the choices, or a ParameterError.
    key : reactive.Value
        The session's key, when there is one (the design's noise).
    ready : callable
        Whether a file is open.
    depends : callable
        Read reactively: what else the figures depend on (the risk step's result).
    """
    wanted: reactive.Value[Any] = reactive.value(None)
    changed: reactive.Value[float] = reactive.value(0.0)
    shown: reactive.Value[Any] = reactive.value(None)  # (the fields it was made for, the view or an error message)
    lock = threading.Lock()  # one preview at a time on the workbench

    @reactive.effect
    def _fields() -> None:
        marker = id(depends())  # the risk step's result: its keys and sampling are the problem set
        if not ready():
            return
        try:
            variables, choices = fields()
            now: tuple[Any, ...] = (variables, choices, marker)
        except PramkitError as exc:
            now = ("error", str(exc), marker)
        with reactive.isolate():
            if now != wanted.get():
                wanted.set(now)
                changed.set(time.monotonic())

    def run(variables: tuple[str, ...], choices: DesignChoices, k: Any) -> Any:
        with lock:
            return desk.wb.preview(variables, choices, key=k)

    @reactive.extended_task
    async def task(request: Any, k: Any) -> tuple[Any, Any]:
        try:
            return request, await asyncio.to_thread(run, request[0], request[1], k)
        except PramkitError as exc:
            return request, desk.wb.in_page_words(str(exc))

    @reactive.effect
    def _fire() -> None:
        request = wanted()
        stamp = changed()
        if request is None or request[0] == "error":
            if request is not None:
                shown.set((request, desk.wb.in_page_words(request[1])))
            return
        with reactive.isolate():
            done = shown.get()
            status = task.status()
        if done is not None and done[0] == request:
            return
        wait = DEBOUNCE - (time.monotonic() - stamp)
        if wait > 0 or status == "running":
            reactive.invalidate_later(max(wait, 0.2))
            return
        with reactive.isolate():
            k = key.get()
        task.invoke(request, k)

    @reactive.effect
    def _done() -> None:
        if task.status() == "success":
            with reactive.isolate():
                shown.set(task.result())

    def stale() -> bool:
        done, request = shown(), wanted()
        return task.status() == "running" or (done is not None and request is not None and done[0] != request)

    @render.ui
    def live_figures() -> ui.TagChild:
        done = shown()
        grey = "live-stale" if stale() else "live-fresh"
        if done is None:
            return ui.div(ui.p(ui.em("Choose the variables to perturb: the expected figures of the design appear "
                                     "here as you change the fields.")), class_=grey)
        view = done[1]
        if isinstance(view, str):
            return ui.div(ui.p(ui.em(f"No preview: {view}")), class_=grey)
        parts: list[ui.TagChild] = [ui.p(ui.em(PRIVATE_NOTE), class_="live-note")]
        if view.note:
            parts.append(ui.p(view.note))
        if not view.risk.empty:
            parts.append(ui.HTML(view.risk.to_html(index=False, classes="table table-sm live-risk", border=0)))
        household_note = None if view.expected is None else view.expected.household_note()
        if household_note is not None:
            parts.append(ui.p(household_note, class_="live-note live-household"))
        if not view.utility.empty:
            parts.append(ui.HTML(view.utility.to_html(index=False, classes="table table-sm live-utility", border=0)))
        current = view.current
        if current is not None:
            parts.append(ui.p(f"Design #{current.number}: {current.parameters} (record budget {current.epsilon})",
                              class_="live-note live-current"))
        return ui.div(*parts, class_=grey)

    @render.ui
    def live_map() -> ui.TagChild:
        done = shown()
        if done is None or isinstance(done[1], str):
            return None
        view = done[1]
        listing = ui.tags.ol(*(ui.tags.li(f"#{t.number} {t.parameters} (record budget {t.epsilon})",
                                          value=str(t.number)) for t in view.tried), class_="live-note")
        return ui.div(ui.HTML(view.ru_map()), listing, class_="live-stale" if stale() else "live-fresh")
