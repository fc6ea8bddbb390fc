"""The app's reactive server: one function per step, each a thin layer over :mod:`pramkit.workbench`.

Every browser session gets its own :class:`pramkit.workbench.Workbench` in a
private folder.  A step parses its fields (:mod:`pramkit.app.fields`), runs the
library in a worker thread (:class:`Step`: a progress bar fed by
:func:`pramkit.progress.watching`, a Cancel button) and shows what the library
returned.  An error caused by the input (:class:`pramkit.errors.PramkitError`)
is shown as its one-line message; any other exception as "internal error" and
its class name, with the traceback on the server's stderr.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pramkit._extras import raise_missing_extra

try:
    from shiny import Inputs, Outputs, Session, reactive, render, ui
except ModuleNotFoundError as exc:
    raise_missing_extra(exc, "app", "the app (pramkit.app)")

from pramkit.app import fields
from pramkit.app.live import live_panel
from pramkit.app.ui import error_box, png, warnings_box
from pramkit.errors import Cancelled, ParameterError, PramkitError
from pramkit.kernel.rng import SecretKey
from pramkit.progress import TimeLeft, watching
from pramkit.workbench import DesignChoices, Workbench

#: The steps, in order; a step's new result clears the results of the steps after it (but the risk's: the
#: suppression does not read it).
STEPS = ("data", "risk", "suppress", "design", "apply", "export")

#: Seconds a closed tab's release (its folder: copies of uploaded files, the release in progress) is kept
#: for a reload of the tab; then it is removed.
EXPIRE_AFTER = 30.0


def outcome_message(exc: BaseException) -> str:
    """What the page says about an exception raised by a step.

    Parameters
    ----------
    exc : BaseException
        The exception.

    Returns
    -------
    str
        The error's one-line message for an error of the input, ``cancelled`` for a cancelled
        step, ``internal error (ClassName)`` for anything else (a bug; its traceback goes to stderr).

    Examples
    --------
    >>> outcome_message(ParameterError("epsilon must be a positive finite number,\\n got -1"))
    'epsilon must be a positive finite number, got -1'
    >>> outcome_message(Cancelled("design cancelled at 3 of 10"))
    'cancelled: design cancelled at 3 of 10'
    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()):
    ...     outcome_message(KeyError("x"))
    'internal error (KeyError); the details are in the log of `pramkit app`'
    """
    if isinstance(exc, Cancelled):
        return "cancelled: " + " ".join(str(exc).split())
    if isinstance(exc, PramkitError):
        return " ".join(str(exc).split())
    traceback.print_exception(exc, file=sys.stderr)
    return f"internal error ({type(exc).__name__}); the details are in the log of `pramkit app`"


class Step:
    """One step's work: the library call in a worker thread, its progress bar, Cancel button and outcome.

    Parameters
    ----------
    name : str
        The step (one of :data:`STEPS`): its outputs are ``NAME_error`` and ``NAME_cancel``,
        its Cancel button ``NAME_stop``.
    busy : reactive.Value
        Shared by the session's steps: the name of the step running, ``""`` when none (one
        step at a time works on the session's workbench).
    """

    def __init__(self, name: str, busy: reactive.Value[str]) -> None:
        self.name = name
        self.busy = busy
        self.error: reactive.Value[str] = reactive.value("")
        self.result: reactive.Value[Any] = reactive.value(None)
        self.later: tuple[Step, ...] = ()
        self._stop = threading.Event()
        self._update: tuple[str, float, float | None, str] = ("", 0.0, None, "")
        self._then: Callable[[Any], None] | None = None
        #: The page's words for a message (its fields, the officer's file names): set by the server.
        self.words: Callable[[str], str] = lambda message: message
        self._keep = False
        self.task = reactive.ExtendedTask(self._work)
        reactive.effect(self._finish)

    def start(self, call: Callable[[], Any], then: Callable[[Any], None] | None = None, *, keep: bool = False) -> None:
        """Run ``call()`` in a worker thread unless a step is running (then say so); ``then(result)`` once it
        succeeded; ``keep``: an error leaves the step's result as it was (a change that was refused)."""
        with reactive.isolate():
            running = self.busy.get()
        if running:
            ui.notification_show(f"the {running} step is running: wait for it or cancel it", type="warning")
            return
        self.error.set("")
        self.busy.set(self.name)
        self._then, self._keep = then, keep
        self.task.invoke(call)

    def fail(self, message: str, *, keep: bool = False) -> None:
        """Show ``message`` (nothing was run) and clear what this step and the later ones showed (``keep``: leave
        them, the change asked for was refused and the step's result still holds)."""
        message = self.words(message)
        self.error.set(message)
        ui.notification_show(message, type="error", duration=8)
        if not keep:
            self.clear()

    def clear(self) -> None:
        """Forget this step's result and the later steps' (their inputs changed)."""
        self.result.set(None)
        for step in self.later:
            step.result.set(None)
            step.error.set("")

    def stop(self) -> None:
        """Ask the running work to stop at its next progress update."""
        self._stop.set()

    def _watched(self, call: Callable[[], Any]) -> Any:
        def update(desc: str, done: float, total: float | None, unit: str = "") -> None:
            if self._stop.is_set():
                raise Cancelled(f"{desc or self.name} cancelled")
            self._update = (desc, done, total, unit)

        with watching(update, unit=True):
            return call()

    async def _work(self, call: Callable[[], Any]) -> tuple[Any, str]:
        """The task: the call in a thread, the progress bar updated from here (the event loop)."""
        self._stop.clear()
        self._update = ("", 0.0, None, "")
        words = TimeLeft()  # the amount done and the time left, in words
        with ui.Progress(min=0, max=1) as bar:
            bar.set(message=f"{self.name}: working")
            job = asyncio.ensure_future(asyncio.to_thread(self._watched, call))
            while not job.done():
                await asyncio.wait({job}, timeout=0.2)
                desc, done, total, unit = self._update
                bar.set(value=min(done / total, 1.0) if total else None, message=f"{self.name}: working",
                        detail=words(desc, done, total, unit) if desc or done else "")
        try:
            return job.result(), ""
        except BaseException as exc:
            return None, outcome_message(exc)

    def _finish(self) -> None:
        """When the task ends: keep its result, or show its error."""
        if self.task.status() not in ("success", "error"):
            return
        with reactive.isolate():
            self.busy.set("")
            try:
                value, message = self.task.result()
            except Exception as exc:  # the task itself failed (e.g. the page went away)
                value, message = None, outcome_message(exc)
            if message:
                self.fail(message, keep=self._keep)
            else:
                self.clear()
                self.result.set(value)
                if self._then is not None:
                    self._then(value)


def make_server(work_root: Path, *, data_dirs: Sequence[Path] | None = None,
                expire_after: float = EXPIRE_AFTER) -> Callable[[Inputs, Outputs, Session], None]:
    """The server function of the app: a workbench per session, in a new folder of ``work_root``.

    Parameters
    ----------
    work_root : Path
        A private folder (the sessions' folders are made in it and removed when they end).
    data_dirs : sequence of Path, optional
        The folders whose files may be opened by their path (None: any file).
    expire_after : float
        Seconds a closed tab's release is kept for a reload of the tab before its folder is removed.

    Returns
    -------
    callable
        ``server(input, output, session)`` for :class:`shiny.App`.

    Examples
    --------
    >>> import pathlib
    >>> callable(make_server(pathlib.Path(".")))
    True
    """

    desks: dict[str, Desk] = {}  # a browser tab's release in progress, kept a while for a reload of the tab
    live: set[str] = set()
    lock = threading.Lock()

    def expire(name: str) -> None:
        """A closed tab's release: removed unless the tab came back."""
        with lock:
            if name in live:
                return
            kept = desks.pop(name, None)
        if kept is not None:
            shutil.rmtree(kept.folder, ignore_errors=True)

    def server(input: Inputs, output: Outputs, session: Session) -> None:
        folder = Path(tempfile.mkdtemp(prefix="session-", dir=work_root))
        desk = Desk(Workbench(folder / "work", data_dirs=data_dirs), folder)
        busy: reactive.Value[str] = reactive.value("")
        steps = {name: Step(name, busy) for name in STEPS}
        for step in steps.values():  # every message in the page's words: no flag, no path of the work folder
            step.words = lambda message: desk.wb.in_page_words(message, hidden=[work_root])
        attack = Step("attack", busy)  # the attack figures of the release applied (step 4)
        attack.words = steps["data"].words
        for i, name in enumerate(STEPS):
            steps[name].later = tuple(steps[n] for n in STEPS[i + 1:] if (name, n) != ("risk", "suppress"))
            steps[name].later += (attack,) if name != "export" else ()
            _step_controls(input, output, steps[name])
        _step_controls(input, output, attack)
        key: reactive.Value[SecretKey | None] = reactive.value(None)
        returned: reactive.Value[int] = reactive.value(0)  # the tab's release came back after a reload
        gone = threading.Event()  # the session has ended (while it waited for a tab of its name to close)
        keep_form(input, desk, returned)

        @reactive.effect
        @reactive.event(input.desk)
        async def _resume() -> None:
            name = str(input.desk())
            waited = 0.0
            while True:
                with lock:
                    earlier = desks.get(name)
                    if earlier is None or name not in live:
                        if earlier is None:
                            desks[name] = desk
                        live.add(name)
                        break
                if waited >= RELOAD_GRACE or gone.is_set():  # a duplicated tab starts its own; an ended one none
                    return
                await asyncio.sleep(RELOAD_POLL)  # a reload whose old page has not closed yet
                waited += RELOAD_POLL
            desk.name = name
            if earlier is not None:
                desk.wb, desk.folder, desk.form = earlier.wb, earlier.folder, dict(earlier.form)
                desks[name] = desk
                shutil.rmtree(folder, ignore_errors=True)  # this session's own, unused
                _show_earlier(earlier.wb, steps)
                returned.set(returned.get() + 1)  # the fields as they were filled in, over the results' settings
                stopped = (f"; the {earlier.interrupted} step, running when the tab was reloaded, was stopped: "
                           "run it again" if earlier.interrupted else "")
                ui.notification_show(f"the release in progress in this tab is back{stopped}",
                                     type="warning" if stopped else "message", duration=8 if stopped else 5)

        def ended() -> None:
            gone.set()
            with reactive.isolate():
                desk.interrupted = busy.get()  # a step running as the tab went away is stopped: say so on return
            for step in steps.values():
                step.stop()
            with lock:
                live.discard(desk.name)
                kept = desks.get(desk.name) is desk
            if desk.folder != folder:
                shutil.rmtree(folder, ignore_errors=True)
            if kept:  # kept for a reload of the tab, then removed
                timer = threading.Timer(expire_after, expire, args=(desk.name,))
                timer.daemon = True
                timer.start()
            else:
                shutil.rmtree(desk.folder, ignore_errors=True)

        session.on_ended(ended)
        data_step(input, output, desk, steps["data"], folder / "uploads")
        risk_step(input, output, desk, steps["risk"], steps["data"])
        suppress_step(input, output, desk, steps["suppress"], steps["data"])
        design_step(input, output, desk, steps["design"], steps["data"], folder / "uploads", key, steps["risk"])
        apply_step(input, output, desk, steps["apply"], steps["design"], key)
        attack_step(input, output, desk, attack, steps["apply"], steps["data"], steps["risk"])
        export_step(input, output, desk, steps["export"], steps["design"], steps["apply"])
        session_bar(input, output, desk, steps, folder / "uploads")

    return server


#: Seconds a tab that connects under the name of a tab still open waits for that one to close, checking every
#: ``RELOAD_POLL`` seconds: a reloaded page's old session may end after the new one connects (on a loaded
#: machine), and the reload then takes its release back; a duplicated tab, whose original stays open, then
#: starts a release of its own.
RELOAD_GRACE = 5.0
RELOAD_POLL = 0.05


class Desk:
    """The workbench a browser session works on: its own, or the one its tab had before a reload.

    Parameters
    ----------
    wb : Workbench
        The session's workbench.
    folder : Path
        The folder holding it (removed when the tab is closed for good).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> desk = Desk(Workbench(tempfile.mkdtemp()), pathlib.Path("."))
    >>> desk.name, desk.wb.source
    ('', None)
    """

    def __init__(self, wb: Workbench, folder: Path) -> None:
        self.wb = wb
        self.folder = folder
        self.name = ""
        self.interrupted = ""  # the step that was running when the tab went away
        #: The risk and design steps' fields as last filled in, id -> value (never a key: no field holds one).
        self.form: dict[str, Any] = {}


def keep_form(input: Inputs, desk: Desk, returned: reactive.Value[int]) -> None:
    """Keep the risk and design steps' fields in the tab's desk as they are filled in, and fill them so again
    when the tab comes back after a reload (``returned`` changes).

    A reload shows each step's result again and fills the fields as its settings say (:func:`_fill`, the
    path of a restored session and an undo); the fields as they were filled in then go over them: a budget
    typed after the last design, a method chosen but not yet run.  This runs after those (a lower
    priority), in the same update of the page.

    Parameters
    ----------
    input : Inputs
        The session's inputs.
    desk : Desk
        The tab's desk (``desk.form``).
    returned : reactive.Value
        Set when the tab's release came back.
    """
    widgets = fields.form_widgets()

    @reactive.effect
    def _keep() -> None:
        desk.form = {field: input[field]() for field in widgets if field in input}

    @reactive.effect(priority=-1)
    @reactive.event(returned, ignore_init=True)
    def _back() -> None:
        fill_fields(desk.form)


def _show_earlier(wb: Workbench, steps: dict[str, Step]) -> None:
    """Show what a tab's workbench had done before the tab was reloaded, step by step (never a key: the
    key is given again)."""
    with reactive.isolate():
        steps["data"].result.set(wb.source)
        steps["risk"].result.set(wb.assessed)
        steps["suppress"].result.set(None if wb.suppression is None else wb.suppression.view)
        steps["design"].result.set(None if wb.designed is None else wb.designed.view)
        steps["apply"].result.set(wb.applied)
        steps["export"].result.set(wb.exported)


def _fill(wb: Workbench, names: Sequence[str] | None = None) -> None:
    """The fields of the risk and design steps as the workbench's settings say (after a restore or an undo);
    ``names``: the file's columns, when the choices of the fields change too."""
    fill_fields(settings_form(wb), names)


def settings_form(wb: Workbench) -> dict[str, Any]:
    """The risk and design steps' fields (id -> value, :func:`pramkit.app.fields.form_widgets`) as the
    workbench's settings say: its risk step's keys and sampling, its design's variables and choices (a field
    with nothing to say is left out, as it is).

    Examples
    --------
    >>> import tempfile
    >>> wb = Workbench(tempfile.mkdtemp())
    >>> wb.risk_keys, wb.sampling_fraction = ("age", "sex"), 0.05
    >>> form = settings_form(wb)
    >>> form["risk_keys"], form["sampling_fraction"], form["design_vars"], "method" in form
    (['age', 'sex'], '0.05', [], False)
    """
    choices = wb.designed.choices if wb.designed is not None else None
    design_vars = list(wb.designed.variables) if wb.designed is not None and choices is not None else []

    def listed(text: str | None) -> list[str]:
        return [t for t in (text or "").split(",") if t]

    form = fields.design_fields()
    values: dict[str, Any] = {"risk_keys": list(wb.risk_keys), "design_vars": design_vars,
                              **{f.id: listed(getattr(choices, f.setting) if choices else None) for f in form
                                 if f.widget == "columns"},
                              "risk_weights": wb.weights or "", "risk_household": wb.household or "",
                              **{f.id: (getattr(choices, f.setting) if choices else None) or "" for f in form
                                 if f.widget == "column"}}
    if wb.sampling_fraction is not None:
        values["sampling_fraction"] = repr(wb.sampling_fraction)
    values.update(fields.suppress_texts(None if wb.suppression is None else wb.suppression.spec))
    if choices is not None:
        values.update(_design_form(choices, form))
    return values


def _design_form(choices: DesignChoices, form: Sequence[fields.Field]) -> dict[str, Any]:
    """The design form's fields as ``choices`` say (the files and the lists of columns are the caller's)."""
    method, options = method_of(choices)
    values: dict[str, Any] = {"method": method}
    for f in form:
        value = getattr(choices, f.setting)
        if f.setting == "epsilon" and value is None and method not in optional_budget():
            continue  # the recognition design reads no budget: the field keeps one for the next design
        if f.setting == "epsilon" and value is None:  # a classic design without a cap: an empty field
            values[f.id] = ""
        if f.widget == "text":
            values[f.id] = repr(value) if isinstance(value, float) else f.text(value)
        elif f.widget == "select":
            values[f.id] = f.text(value)
        elif f.widget == "checkbox":
            values[f.id] = bool(value)
    shown = {f.setting for f in form}
    values["options"] = ", ".join(f"{k}={v}" for k, v in options.items() if k not in shown)
    return values


def fill_fields(values: dict[str, Any], names: Sequence[str] | None = None) -> None:
    """Set the page's fields of the risk and design steps to ``values`` (id -> value), each by its widget
    (:func:`pramkit.app.fields.form_widgets`); ``names``: the file's columns, the choices of the fields of
    columns, when they change too."""
    widgets = fields.form_widgets()
    optional = None if names is None else {"": "none", **{n: n for n in names}}
    for field, value in values.items():
        kind = widgets.get(field)
        if kind == "columns":
            ui.update_selectize(field, selected=list(value or ()), choices=None if names is None else list(names))
        elif kind == "column":
            ui.update_select(field, selected=value or "", choices=optional)
        elif kind == "select":
            ui.update_select(field, selected=value)
        elif kind == "checkbox":
            ui.update_checkbox(field, value=bool(value))
        elif kind == "text_area":
            ui.update_text_area(field, value=value or "")
        elif kind == "text":
            ui.update_text(field, value=value or "")


def method_of(choices: DesignChoices) -> tuple[str, dict[str, Any]]:
    """The page's method (a key of :data:`pramkit.app.ui.METHODS`) and its options field for ``choices``.

    Examples
    --------
    >>> method_of(DesignChoices(method="dp", objective="variance", epsilon=1.0))
    ('dp-variance', {})
    >>> method_of(DesignChoices(method="dp", recognition=0.5)), method_of(DesignChoices(method="keep", keep=0.8))
    (('recognition', {'recognition': 0.5}), ('keep', {'keep': 0.8}))
    """
    defaults = DesignChoices()
    options = {f.name: getattr(choices, f.name) for f in dataclasses.fields(DesignChoices)
               if f.name not in _FORM and getattr(choices, f.name) != getattr(defaults, f.name)}
    if choices.recognition is not None:
        return "recognition", options
    for name, (_, flags) in fields.methods().items():
        if name != "recognition" and all(getattr(choices, k) == v for k, v in flags.items()) \
                and (choices.objective is None or flags.get("objective") == choices.objective):
            return name, options
    return "dp", options


def session_bar(input: Inputs, output: Outputs, desk: Desk, steps: dict[str, Step], uploads: Path) -> None:
    """Undo the last change of the settings; save the session to a file; restore one (:mod:`pramkit.workbench.saved`).

    Parameters
    ----------
    input, output : Inputs, Outputs
        The session's inputs and outputs.
    desk : Desk
        The session's workbench (``desk.wb``).
    steps : dict
        The steps, by name (a restore runs as the data step: it opens the file again).
    uploads : Path
        The session's folder for uploaded files.
    """
    status: reactive.Value[str] = reactive.value("")
    changed: reactive.Value[int] = reactive.value(0)

    def say(message: str, kind: str = "message") -> None:
        message = steps["data"].words(message)
        status.set(message)
        ui.notification_show(message, type=kind, duration=6)  # type: ignore[arg-type]

    @reactive.effect
    @reactive.event(input.undo)
    def _undo() -> None:
        with reactive.isolate():
            running = steps["data"].busy.get()
        if running:
            say(f"the {running} step is running: wait for it or cancel it", "warning")
            return
        try:
            desk.wb.undo()
        except PramkitError as exc:
            say(outcome_message(exc), "error")
            return
        _show_earlier(desk.wb, steps)
        _fill(desk.wb)
        say("The last change is undone: apply again (with the key) before exporting.")

    @reactive.effect
    @reactive.event(input.save_session)
    def _save() -> None:
        text = input.session_path().strip()
        try:
            if not text:
                raise ParameterError("give the path of the new session file")
            where = desk.wb.save_session(text)
        except PramkitError as exc:
            say(outcome_message(exc), "error")
            return
        say(f"Session saved in {where} (no key and no data inside; it names your file and its digest).")

    @reactive.effect
    @reactive.event(input.session_upload)
    def _restore() -> None:
        try:
            path = fields.upload(input.session_upload()[0], uploads / "session")
        except ParameterError as exc:
            say(str(exc), "error")
            return

        dropped: list[str] = []  # what the session file held that a session file may not do (connect, read files)

        def restored() -> Any:
            try:
                dropped.extend(desk.wb.restore_session(path))
            finally:
                path.unlink(missing_ok=True)
            return desk.wb.source

        def shown(_: Any) -> None:
            _show_earlier(desk.wb, steps)
            changed.set(changed.get() + 1)
            said = "".join(f" {n[0].upper()}{n[1:]}." for n in dropped)
            say("The session is restored: give the key and apply again." + said, "warning" if dropped else "message")

        steps["data"].start(restored, then=shown)

    @render.ui
    def session_status() -> ui.TagChild:
        return ui.span(status(), class_="text-muted") if status() else None

    @reactive.effect
    def _undo_enabled() -> None:
        for step in steps.values():
            step.result()  # any step's new result may change what can be undone
        changed()
        ui.update_action_button("undo", disabled=not desk.wb.can_undo)


def _step_controls(input: Inputs, output: Outputs, step: Step) -> None:
    """A step's error box, its Cancel button (shown while it runs) and what the library warned of during it."""

    def error() -> ui.TagChild:
        return error_box(step.error()) if step.error() else None

    def warned() -> ui.TagChild:
        return warnings_box(getattr(step.result(), "warnings", ()))

    def cancel() -> ui.TagChild:
        if step.task.status() == "running":
            return ui.input_action_button(f"{step.name}_stop", "Cancel", class_="btn-warning")
        return None

    output(id=f"{step.name}_error")(render.ui(error))
    output(id=f"{step.name}_cancel")(render.ui(cancel))
    output(id=f"{step.name}_warnings")(render.ui(warned))

    @reactive.effect
    @reactive.event(input[f"{step.name}_stop"])
    def _stop() -> None:
        step.stop()


def _table(step: Step, pick: Callable[[Any], Any]) -> render.table:
    """A table output showing ``pick(result)`` of ``step`` (nothing before the step has a result)."""

    def show() -> Any:
        value = step.result()
        return None if value is None else pick(value)

    return render.table(show, index=False)


def data_step(input: Inputs, output: Outputs, desk: Desk, step: Step, uploads: Path) -> None:
    """Step 1: open the census, an uploaded file or a file on this computer; show the variables and the first rows.

    Parameters
    ----------
    input, output : Inputs, Outputs
        The session's inputs and outputs.
    desk : Desk
        The session's workbench (``desk.wb``).
    step : Step
        This step.
    uploads : Path
        The session's folder for uploaded files.
    """

    @reactive.effect
    @reactive.event(input.open_census)
    def _census() -> None:
        try:
            rows = fields.row_count(input.census_rows())
        except ParameterError as exc:
            step.fail(str(exc))
            return
        step.start(lambda: desk.wb.open_census(rows=rows))

    @reactive.effect
    @reactive.event(input.upload)
    def _upload() -> None:
        try:
            path = fields.upload(input.upload()[0], uploads)
        except ParameterError as exc:
            step.fail(str(exc))
            return
        na, label = fields.markers(input.na_values()), input.upload()[0]["name"]
        sep, encoding = input.csv_sep(), input.csv_encoding().strip()

        def opened() -> Any:
            try:
                return desk.wb.open_file(path, label=label, na_values=na, upload=True, sep=sep, encoding=encoding)
            finally:
                path.unlink(missing_ok=True)  # the workbench holds its own copy

        step.start(opened)

    @reactive.effect
    @reactive.event(input.open_path)
    def _path() -> None:
        text = input.data_path().strip()
        if not text:
            step.fail("give the path of a file on this computer")
            return
        na = fields.markers(input.na_values())
        sep, encoding = input.csv_sep(), input.csv_encoding().strip()
        step.start(lambda: desk.wb.open_file(text, na_values=na, sep=sep, encoding=encoding))

    @reactive.effect
    @reactive.event(input.run_recode)
    def _recode() -> None:
        try:
            _require(step, "open the data first")
            spec = fields.recoding(input.recode())
        except ParameterError as exc:
            step.fail(str(exc), keep=True)
            return
        step.start(lambda: desk.wb.recoding(spec), keep=True)

    @render.ui
    def data_summary() -> ui.TagChild:
        src = step.result()
        if src is None:
            return ui.p("Open the census-like data or upload a file.")
        recoded = desk.wb.recode
        return ui.div(
            ui.p(ui.strong(src.label), f": {src.rows:,} rows, {len(src.variables)} variables ({src.format})"),
            ui.p(ui.em("Recoded before PRAM: " + "; ".join(_recode_words(c, r) for c, r in recoded.items())))
            if recoded else None)

    @render.ui
    def data_folders() -> ui.TagChild:
        if desk.wb.data_dirs is None:
            return None
        return ui.p(ui.em("Files are opened by their path from: " + ", ".join(str(d) for d in desk.wb.data_dirs)
                          + " (a relative path is taken in the first). Upload any other file."))

    output(id="variables")(_table(step, lambda src: src.variables_frame()))
    output(id="preview")(_table(step, lambda src: src.shown_preview()))  # value labels, missing codes

    @reactive.effect
    def _choices() -> None:
        src = step.result()
        names = [v.name for v in src.variables] if src is not None else []
        with reactive.isolate():
            _fill(desk.wb, names)  # a new file: nothing chosen; a restored session: its choices


def risk_step(input: Inputs, output: Outputs, desk: Desk, step: Step, data: Step) -> None:
    """Step 2: the identification risk of the original file for the chosen keys (table and plot).

    Parameters
    ----------
    input, output : Inputs, Outputs
        The session's inputs and outputs.
    desk : Desk
        The session's workbench (``desk.wb``).
    step, data : Step
        This step and the data step.
    """

    @reactive.effect
    @reactive.event(input.run_risk)
    def _run() -> None:
        try:
            _require(data, "open the data first (step 1)")
            keys = tuple(input.risk_keys())
            if not keys:
                raise ParameterError("choose at least one key variable")
            weights, household = input.risk_weights() or None, input.risk_household() or None
            # the weights give each record's sampling fraction: the field is then not read (the view says so)
            fraction = None if weights else fields.fraction(input.sampling_fraction())
        except ParameterError as exc:
            step.fail(str(exc))
            return
        explain = bool(input.risk_contributions())
        step.start(lambda: desk.wb.risk(keys, sampling_fraction=fraction, weights=weights, household=household,
                                        contributions=explain))

    output(id="risk_table")(_table(step, lambda r: r.table))
    output(id="risk_contributions_table")(_table(step, lambda r: r.contributions))

    @render.ui
    def risk_plot() -> ui.TagChild:
        r = step.result()
        if r is None:
            return None
        return ui.div(ui.p(ui.em(r.note)) if r.note else None,
                      ui.tags.ul(*[ui.tags.li(s) for s in r.sentences]) if r.sentences else None,
                      png(r.plot_png, "goodness of fit of the risk model") if r.plot_png else None)


def suppress_step(input: Inputs, output: Outputs, desk: Desk, step: Step, data: Step) -> None:
    """Between the risk and the design, optional: local suppression to k-anonymity (``pramkit suppress``,
    through :meth:`pramkit.workbench.Workbench.suppress`).  The records below k are counted live as the settings
    change, before anything is run; once run, the page shows the values suppressed per key (private: never
    exported to ``public/``), the lower bound on the fewest suppressions and the records below k after.

    Parameters
    ----------
    input, output : Inputs, Outputs
        The session's inputs and outputs.
    desk : Desk
        The session's workbench (``desk.wb``).
    step, data : Step
        This step and the data step.
    """
    form = fields.suppress_fields()

    def spec() -> Any:
        return fields.suppress_spec({f.setting: input[f.id]() for f in form})

    @render.ui
    def suppress_live() -> ui.TagChild:
        if data.result() is None:
            return ui.p("Open the data first (step 1).")
        step.result()  # counted again once a suppression is run or taken back
        if step.busy():
            return ui.p(ui.em(f"Counted again once the {step.busy()} step has run."))
        try:
            counted = desk.wb.below_k(spec())
        except PramkitError as exc:
            return ui.p(ui.em(step.words(outcome_message(exc))))
        file = "the recoded file" if desk.wb.recode else "the file as opened"
        return ui.div(ui.p(ui.strong(counted.sentence())),
                      ui.p(ui.em(f"Counted in {file}, before any suppression; the figures are the file's own "
                                 "(private).")), class_="suppress-live")

    @reactive.effect
    @reactive.event(input.run_suppress)
    def _run() -> None:
        try:
            _require(data, "open the data first (step 1)")
            settings = spec()
        except ParameterError as exc:
            step.fail(str(exc), keep=True)
            return
        step.start(lambda: desk.wb.suppress(settings), keep=True)

    @reactive.effect
    @reactive.event(input.undo_suppress)
    def _back() -> None:
        if not desk.wb.is_suppressed:
            step.fail("no suppression to take back: the steps read the file as opened", keep=True)
            return
        step.start(lambda: (desk.wb.unsuppress(), None)[1], keep=True)

    @render.ui
    def suppress_result() -> ui.TagChild:
        v = step.result()
        if v is None:
            return ui.p("No suppression: the design reads the file as opened. Choose the key variables and k, "
                        "then Suppress.")
        after = v.after
        blank = ([ui.p(ui.em(f"{v.blank_records:,} records have every key missing: under the rule 'any' they "
                             "match every record, which is how few suppressions reach k-anonymity."))]
                 if v.spec.missing == "any" and v.blank_records else [])
        return ui.div(
            ui.p(ui.strong("Suppressed: "), f"{v.total:,} values; {v.bound_words}."),
            ui.p(ui.strong("After: "), after.sentence()),
            ui.p(ui.strong("The receipt states: "), v.guarantee, "."),
            *blank,
            ui.p(ui.em("The design reads the suppressed file and states the suppression in the manifest. The values "
                       "suppressed per key (below) are private: shown here, never exported to public/.")),
            class_="alert alert-info suppress-result")

    output(id="suppress_table")(_table(step, lambda v: v.table))


def attack_step(input: Inputs, output: Outputs, desk: Desk, step: Step, applied: Step, data: Step,
                risk: Step) -> None:
    """In step 4, once applied: the attack figures of the release (:meth:`pramkit.workbench.Workbench.attack`) in
    plain words beside its guarantee sentence.  The figures come from the original: private, shown here, never
    written to ``public/``.

    Parameters
    ----------
    input, output : Inputs, Outputs
        The session's inputs and outputs.
    desk : Desk
        The session's workbench (``desk.wb``).
    step, applied, data, risk : Step
        The attack, the apply, the data and the risk steps (the risk's first two keys are known by default).
    """

    @reactive.effect
    def _known() -> None:
        a, src = applied.result(), data.result()
        with reactive.isolate():
            keys = list(desk.wb.risk_keys) or (list(desk.wb.suppression.spec.keys) if desk.wb.suppression else [])
        names = [v.name for v in src.variables] if src is not None else []
        ui.update_selectize("attack_known", choices=names, selected=keys[:2] if a is not None else [])

    @reactive.effect
    @reactive.event(input.run_attack)
    def _run() -> None:
        try:
            _require(applied, "apply the design first: the attack reads the released file")
            known = tuple(input.attack_known())
            if not known:
                raise ParameterError("choose the columns an attacker knows")
        except ParameterError as exc:
            step.fail(str(exc))
            return
        step.start(lambda: desk.wb.attack(known))

    @render.ui
    def attack_figures() -> ui.TagChild:
        a = applied.result()
        if a is None:
            return None
        r = step.result()
        figures: list[ui.TagChild] = [ui.p("Pick the columns an attacker knows and click Attack the release.")]
        if r is not None and r.key_fingerprint == a.key_fingerprint:
            figures = [ui.p(ui.em(f"Knowing {', '.join(r.known)}; private: computed from the original, never "
                                  "exported.")),
                       ui.tags.ul(*(ui.tags.li(sentence) for sentence in r.sentences)),
                       *(ui.p(ui.em(note)) for note in r.notes)]
        return ui.layout_columns(
            ui.div(ui.h5("The guarantee"), ui.p(a.design.guarantee), class_="alert alert-info"),
            ui.div(ui.h5("What an attack gets"), *figures, class_="alert alert-secondary attack-figures"))


def _recode_words(column: str, rule: dict[str, Any]) -> str:
    """One column's recoding in words, each category quoted (a category may hold a comma).

    Examples
    --------
    >>> _recode_words("age", {"merge": {"1, 2": "low", "3": "low"}, "top": {"above": 80.0, "value": "80+"}})
    "age: '1, 2', '3' -> 'low'; above 80 -> '80+'"
    """
    merged: dict[str, list[str]] = {}
    for old, new in rule.get("merge", {}).items():
        merged.setdefault(new, []).append(old)
    words = [", ".join(map(repr, olds)) + f" -> {new!r}" for new, olds in merged.items()]
    words += [f"above {rule['top']['above']:g} -> {rule['top']['value']!r}"] if "top" in rule else []
    words += [f"below {rule['bottom']['below']:g} -> {rule['bottom']['value']!r}"] if "bottom" in rule else []
    return f"{column}: " + "; ".join(words)


def _require(step: Step, message: str) -> None:
    """A ParameterError with ``message`` unless ``step`` has a result."""
    with reactive.isolate():
        if step.result() is None:
            raise ParameterError(message)


def _choices(input: Inputs, files: dict[str, Path | None]) -> tuple[tuple[str, ...], DesignChoices]:
    """The variables to perturb and the design's choices from the fields (a ParameterError names a
    field that cannot be read)."""
    variables = tuple(input.design_vars())
    if not variables:
        raise ParameterError("choose at least one variable to perturb")
    choice = input.method()
    form = [f for f in fields.design_fields() if f.widget != "file" and f.setting != "epsilon"]
    # each field typed as the command line types its flag; the options field, as the flags written name=value
    options = fields.design_values({f.setting: input[f.id]() for f in form if f.applies(choice)}, choice)
    for name, value in fields.design_options(input.options(), _FORM).items():
        if name in options and options[name] != value:
            raise ParameterError(f"{name} is given twice, in its field and in the field Method options: "
                                 "empty one of them")
        options[name] = value
    if choice == "recognition" and "recognition" not in options:
        raise ParameterError("the recognition design needs its alpha: write the option recognition=ALPHA "
                             "(e.g. recognition=0.5)")
    if choice == "recognition" and "combinations" not in options:  # every key, up to 3 at a time (the default
        options["combinations"] = str(min(3, len(variables)))      # 3 refuses two keys)
    text = input.epsilon().strip()
    # the recognition design has no budget; a classic design's is a cap, which may be left empty
    budget = None if choice == "recognition" or (not text and choice in optional_budget()) else fields.budget(text)
    kinds = {f.setting: f.kind for f in fields.design_fields()}  # a codebook is given as a text
    given: dict[str, Any] = {name: str(path) if kinds[name] is str else path for name, path in files.items()
                             if path is not None}
    return variables, DesignChoices(**fields.methods()[choice][1], epsilon=budget, **given, **options)


def optional_budget() -> tuple[str, ...]:
    """The designs of the page whose record budget is a cap that may be left empty: those of a family whose own
    parameters set the matrix (:attr:`pramkit.design.registry.DesignFamily.budget_is_cap`; a budget given
    refuses a design above it); the recognition design reads none.

    >>> optional_budget()
    ('metric', 'keep', 'kanon', 'invariant', 'tridiagonal', 'circulant', 'bistochastic-beta')
    """
    from pramkit.design.registry import FAMILIES

    return tuple(choice for choice, (_, flags) in fields.methods().items()
                 if choice != "recognition" and FAMILIES[flags["method"]].budget_is_cap)

#: How the page names an uploaded file of the design (by its setting; another by the setting's name).
UPLOADS = {"forbid": "edit rules", "prior": "public frequencies", "categories": "codebook"}

#: The choices set by the design form's own fields (not by its options field).
_FORM = ("method", "objective", "epsilon", "split", "forbid", "strata", "keep_codes", "household", "household_vars", "prior",
         "categories", "missing", "na_values", "sep", "encoding", "recoded_by")


def design_step(input: Inputs, output: Outputs, desk: Desk, step: Step, data: Step, uploads: Path,
                key: reactive.Value[SecretKey | None], risk: Step | None = None) -> None:
    """Step 3: the design; its guarantee sentence, ledger, a heat map per matrix and the risk after.

    Parameters
    ----------
    input, output : Inputs, Outputs
        The session's inputs and outputs.
    desk : Desk
        The session's workbench (``desk.wb``).
    step, data : Step
        This step and the data step.
    uploads : Path
        The session's folder for uploaded files (the rules, prior and codebook).
    key : reactive.Value
        The session's key when there is one yet: the design step's noise is drawn from it.
    risk : Step, optional
        The risk step: its keys and sampling are the live panel's problem set (:mod:`pramkit.app.live`).
    """
    uploaded = {f.setting: f.id for f in fields.design_fields() if f.widget == "file"}  # setting -> field
    files: dict[str, Path | None] = dict.fromkeys(uploaded)

    in_use: reactive.Value[int] = reactive.value(0)  # the uploaded files changed

    def keep_upload(name: str) -> None:
        @reactive.effect
        @reactive.event(input[uploaded[name]])
        def _keep() -> None:
            files[name] = None
            try:
                files[name] = fields.upload(input[uploaded[name]]()[0], uploads / name)
            except ParameterError as exc:
                step.fail(str(exc))
            in_use.set(in_use.get() + 1)

    for name in files:
        keep_upload(name)

    @reactive.effect
    @reactive.event(input.clear_files)
    def _clear() -> None:
        for name, path in files.items():
            if path is not None:
                path.unlink(missing_ok=True)
            files[name] = None
        in_use.set(in_use.get() + 1)

    @render.ui
    def design_files() -> ui.TagChild:
        in_use()
        used = [f"{UPLOADS.get(name, name)}: {path.name}" for name, path in files.items() if path is not None]
        written = ["the edit rules written here"] if input.edit_rules().strip() else []
        if not used:
            return ui.p(ui.em("The next design reads the edit rules written here." if written else
                              "No uploaded rules, frequencies or codebook: the next design reads none."))
        return ui.div(ui.p(ui.em("The next design reads " + "; ".join(used + written) + ".")),
                      ui.input_action_button("clear_files", "Remove the uploaded files", class_="btn-sm"))

    in_page = [False]  # the design's rules were written in the page: its messages name the field, not a file
    said = step.words
    step.words = lambda message: said(message).replace("the edit rules file", fields.RULES_FIELD) if in_page[0] \
        else said(message)

    def rules_written() -> Path | None:
        """The rules of the editor (a rules file in the session's folder), or the uploaded rules file."""
        written = fields.rules(input.edit_rules(), uploads / "written")
        if written is not None and files["forbid"] is not None:
            raise ParameterError("the edit rules are given twice, uploaded and written here: remove the uploaded "
                                 "files or empty the field Edit rules written here")
        in_page[0] = written is not None
        return written or files["forbid"]

    @reactive.effect
    def _rules_back() -> None:
        """A design shown again (an undo, a restored session, a reload of the tab) writes its rules back into the
        editor, so that designing again reads them; not over rules uploaded in this page."""
        if step.result() is None:
            return
        with reactive.isolate():
            designed = desk.wb.designed
            if designed is None or designed.choices is None or files["forbid"] is not None:  # a manifest given
                return
            kept = designed.choices.forbid
            text = Path(kept).read_text(encoding="utf-8") if kept is not None and Path(kept).is_file() else ""
            if text.strip() != input.edit_rules().strip():
                ui.update_text_area("edit_rules", value=text)

    @reactive.effect
    @reactive.event(input.run_design)
    def _run() -> None:
        try:
            _require(data, "open the data first (step 1)")
            variables, choices = _choices(input, {**files, "forbid": rules_written()})
        except PramkitError as exc:
            step.fail(str(exc))
            return
        k = key.get()
        step.start(lambda: desk.wb.design(variables, choices, key=k))

    live_panel(input, output, desk, lambda: (in_use(), _choices(input, files))[1], key,
               lambda: data.result() is not None, lambda: None if risk is None else risk.result())

    @reactive.effect
    @reactive.event(input.manifest_upload)
    def _manifest() -> None:
        try:
            _require(data, "open the data first (step 1)")
            path = fields.upload(input.manifest_upload()[0], uploads / "manifest")
        except ParameterError as exc:
            step.fail(str(exc))
            return
        k = key.get()
        step.start(lambda: desk.wb.use_manifest(path, key=k))

    @render.ui
    def guarantee() -> ui.TagChild:
        d = step.result()
        if d is None:
            return ui.p("Choose the variables and the budget, then Design.")
        from pramkit.ledger import release_guarantee
        from pramkit.privacy.kinds import kind_lines

        kinds = kind_lines((d.stated or release_guarantee(d.manifest)).kinds)  # the other privacy models stated
        return ui.div(ui.p(ui.strong("Guarantee: "), d.guarantee),
                      ui.p(ui.strong(d.headline)), *(ui.p(line) for line in kinds), ui.p(d.coverage),
                      *(ui.p(ui.em(note)) for note in d.notes), class_="alert alert-info")

    output(id="ledger")(_table(step, lambda d: d.ledger))

    @render.ui
    def heatmaps() -> ui.TagChild:
        d = step.result()
        if d is None:
            return None
        return ui.div(*(ui.div(ui.h5(v), png(p, f"the matrix of {v}"), style="display:inline-block;width:420px")
                        for v, p in d.heatmaps.items()))


def apply_step(input: Inputs, output: Outputs, desk: Desk, step: Step, design: Step,
               key: reactive.Value[SecretKey | None]) -> None:
    """Step 4: the key (generated and offered for download, or uploaded; never shown) and the perturbation.

    Parameters
    ----------
    input, output : Inputs, Outputs
        The session's inputs and outputs.
    desk : Desk
        The session's workbench (``desk.wb``).
    step, design : Step
        This step and the design step.
    key : reactive.Value
        The session's key (None until one is generated or uploaded).
    """

    generated: reactive.Value[bool] = reactive.value(False)
    saved: reactive.Value[str] = reactive.value("")  # where the generated key was saved

    @reactive.effect
    @reactive.event(input.new_key)
    def _new() -> None:
        key.set(SecretKey.generate())
        generated.set(True)
        saved.set("")

    @reactive.effect
    @reactive.event(input.key_upload)
    def _upload() -> None:
        info = input.key_upload()[0]
        try:
            if int(info["size"]) == 0:
                raise ParameterError(f"the uploaded key file {info['name']!r} is empty (0 bytes)")
            Path(info["datapath"]).chmod(0o600)  # the upload was written readable by others
            key.set(SecretKey.from_file(info["datapath"], name=f"the uploaded key file {info['name']!r}"))
            generated.set(False)
            saved.set("")
        except PramkitError as exc:
            key.set(None)
            step.fail(outcome_message(exc))
        finally:
            Path(info["datapath"]).unlink(missing_ok=True)  # no copy of a key is left behind

    @reactive.effect
    @reactive.event(input.save_key)
    def _save() -> None:
        k, text = key.get(), input.key_path().strip()
        try:
            if k is None:
                raise ParameterError("generate a key first")
            if not text:
                raise ParameterError("give the path of the new key file")
            saved.set(str(k.save(text)))
        except PramkitError as exc:
            step.fail(outcome_message(exc))

    @render.ui
    def key_download() -> ui.TagChild:  # the key is saved by the app (0600), never downloaded (the browser's umask)
        if not generated():
            return None
        return ui.div(ui.input_text("key_path", "Save the key as (a new file only you can read)", "",
                                    placeholder="e.g. ~/keys/release.key"),
                      ui.input_action_button("save_key", "Save the key file"))

    @render.ui
    def key_status() -> ui.TagChild:
        k, a = key(), step.result()
        if k is None and a is not None:
            return ui.p(f"Applied with the key of fingerprint {a.key_fingerprint}. The app does not keep the key: "
                        "give it again to apply again.")
        if k is None:
            return ui.p("No key yet: generate one (and save it) or upload a key file.")
        where = saved()
        kept = (f" Saved in {where} (only you can read it)." if where else
                " Not saved yet: without the key file the release cannot be made again." if generated() else "")
        return ui.p(f"A key is ready (fingerprint {k.fingerprint}).{kept} Keep the key file apart from the release: "
                    "whoever holds it can undo the perturbation. The app drops the key once the design is applied.")

    @reactive.effect
    @reactive.event(input.run_apply)
    def _run() -> None:
        try:
            _require(design, "design the release first (step 3)")
            k = key.get()
            if k is None:
                raise ParameterError("generate or upload a key first")
        except ParameterError as exc:
            step.fail(str(exc))
            return
        step.start(lambda: desk.wb.apply(k))

    output(id="changed")(_table(step, lambda a: a.changed))
    output(id="estimates")(_table(step, lambda a: a.estimates))
    output(id="risk_after")(_table(step, lambda a: None if a.risk_after is None or a.risk_after.table.empty
                                   else a.risk_after.table))

    @render.ui
    def apply_notes() -> ui.TagChild:
        a = step.result()
        if a is None:
            return None
        notes = [] if a.risk_after is None or not a.risk_after.note else [f"Risk of the released file: {a.risk_after.note}"]
        if a.risk_after is None:
            notes.append("The risk of the released file is assessed on the keys of the Risk step: assess it first.")
        if a.estimates.empty:
            notes.append("No estimates from the released file for this design.")
        return ui.div(*(ui.p(ui.em(n)) for n in notes))

    @reactive.effect
    def _designed_again() -> None:
        a = step.result()
        if a is not None:  # applying with another key than the design's designs again with it
            design.result.set(a.design)
            with reactive.isolate():
                key.set(None)  # applied: the key is dropped (the workbench keeps its fingerprint only)
                generated.set(False)


def export_step(input: Inputs, output: Outputs, desk: Desk, step: Step, design: Step, applied: Step) -> None:
    """Step 5: the output folder, the statements not covered by a DP mechanism to confirm, the files and script.

    Parameters
    ----------
    input, output : Inputs, Outputs
        The session's inputs and outputs.
    desk : Desk
        The session's workbench (``desk.wb``).
    step, design, applied : Step
        This step, the design step and the apply step.
    """

    @render.ui
    def uncovered() -> ui.TagChild:
        d = design.result()
        if d is None:
            return None
        coverage = ui.p(d.coverage)  # the ledger's words (pramkit.ledger.Guarantee.coverage), as every surface
        if not d.uncovered:
            return coverage
        return ui.div(coverage, ui.p(ui.strong("Derived from the data without a DP mechanism:")),
                      ui.tags.ul(*(ui.tags.li(s) for s in d.uncovered)),
                      ui.input_checkbox("confirm", "I have read these statements; release anyway"),
                      class_="alert alert-warning")

    @reactive.effect
    @reactive.event(input.run_export)
    def _run() -> None:
        try:
            _require(applied, "apply the design first (step 4)")
            text = input.out_folder().strip()
            if not text:
                raise ParameterError("give the output folder")
            confirmed = bool(design.result().uncovered) and "confirm" in input and bool(input.confirm())
            if design.result().uncovered and not confirmed:
                raise ParameterError("confirm the statements not covered by a DP mechanism first")
        except ParameterError as exc:
            step.fail(str(exc))
            return
        out = Path(text).expanduser()
        step.start(lambda: desk.wb.export(out, confirmed=confirmed))

    @render.ui
    def export_files() -> ui.TagChild:
        e = step.result()
        if e is None:
            return ui.p("Apply, give a new or empty folder and Export.")
        return ui.div(ui.p(ui.strong("Written to "), ui.code(str(e.out))),
                      _folder(e.files, "public/", "public/: may be published"),
                      _folder(e.files, "private/", "private/: never publish"))

    @render.ui
    def script() -> ui.TagChild:
        e = step.result()
        if e is not None:
            return ui.pre(e.script)
        if applied.result() is None:
            return ui.p("The script is shown once the design is applied.")
        try:
            return ui.pre(desk.wb.script())
        except PramkitError as exc:
            return error_box(outcome_message(exc))


def _folder(files: dict[str, str], prefix: str, title: str) -> ui.TagChild:
    """The files of one folder of the export, as a list under its title."""
    rows = [ui.tags.li(ui.code(path), f": {label}") for label, path in files.items() if path.startswith(prefix)]
    return ui.div(ui.h5(title), ui.tags.ul(*rows))
