"""Support for the app's tests: the app served in a thread, and a stand-in for pramkit.workbench until it lands.

Installed as ``pramkit.workbench`` only when that module is absent.
"""

from __future__ import annotations

import contextlib
import threading
import sys
import time
import types
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from pramkit.datasets import census
from pramkit.release.choices import DesignChoices
from pramkit.errors import DataError, ParameterError
from pramkit.progress import progress
from pramkit.validate import epsilon as check_epsilon


def _ns(**kw: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**kw)


class Workbench:
    def __init__(self, work_dir: Path) -> None:
        self.work_dir = Path(work_dir)
        self.data: pd.DataFrame | None = None
        self.settings: DesignChoices | None = None
        self.uncovered: tuple[str, ...] = ()

    def _source(self, data: pd.DataFrame, label: str, fmt: str) -> Any:
        self.data = data
        variables = tuple(_ns(name=c, dtype=str(data[c].dtype), distinct=int(data[c].nunique()),
                              missing=int(data[c].isna().sum()), value_labels=None, missing_codes=())
                          for c in data.columns)
        frame = pd.DataFrame([(v.name, v.dtype, v.distinct, v.missing) for v in variables],
                             columns=["name", "type", "distinct", "missing"])
        return _ns(path=None, label=label, format=fmt, rows=len(data), variables=variables,
                   preview=data.head(20), variables_frame=lambda: frame)

    def open_census(self, rows: int = 20_000) -> Any:
        return self._source(census(rows), f"census-like data ({rows} rows)", "generated")

    def open_file(self, path: Path, *, label: str | None = None, na_values: Any = None, upload: bool = False) -> Any:
        try:
            data = pd.read_csv(path)
        except pd.errors.EmptyDataError:
            raise DataError(f"'{Path(path).name}' holds no data") from None
        return self._source(data, Path(path).name, "csv")

    def risk(self, keys: tuple, sampling_fraction: float = 0.05, weights: Any = None, household: Any = None) -> Any:
        table = pd.DataFrame({"measure": ["keys", "sampling fraction"], "value": [", ".join(keys), f"{sampling_fraction:g}"]})
        return _ns(table=table, plot_png=None)

    def design(self, variables: tuple, s: DesignChoices, *, key: Any = None) -> Any:
        check_epsilon(s.epsilon, "the record budget")
        s.options()
        assert self.data is not None
        if s.forbid is not None:
            rules = pd.read_csv(s.forbid, dtype=str)
            for column in rules.columns:
                known = set(self.data[column].astype(str))
                for cell in rules[column].dropna():
                    for value in cell.split("|"):
                        if value not in known:
                            raise DataError(f"the rules name {value!r}, not a category of {column}")
        with progress(total=len(variables), desc="designing", quiet=True) as bar:
            for _ in variables:
                time.sleep(0.2)
                bar.update(1)
        self.settings = s
        self.variables = variables
        self.uncovered = tuple(f"the stratum column {c} is released unperturbed" for c in (s.strata or "").split(",") if c)
        ledger = pd.DataFrame({"variable": list(variables), "epsilon": [f"{s.epsilon / len(variables):g}"] * len(variables)})
        return _ns(guarantee=f"Each record is protected at epsilon = {s.epsilon:g}.", ledger=ledger,
                   uncovered=self.uncovered, heatmaps={}, record_epsilon=f"{s.epsilon:g}", notes=())

    def apply(self, key: Any) -> Any:
        with progress(total=10, desc="perturbing", quiet=True) as bar:
            for _ in range(10):
                time.sleep(0.05)
                bar.update(1)
        self.key = key
        changed = pd.DataFrame({"variable": list(self.variables), "changed %": ["1.0"] * len(self.variables)})
        return _ns(changed=changed, estimates=pd.DataFrame({"variable": [], "category": []}), risk_after=None,
                   design=self.design(self.variables, self.settings))

    def script(self) -> str:
        return "#!/bin/sh\npramkit apply ...\n"

    def export(self, out: Path, confirmed: bool = False) -> Any:
        if self.uncovered and not confirmed:
            raise ParameterError("confirm: " + "; ".join(self.uncovered))
        out = Path(out)
        if out.exists() and any(out.iterdir()):
            raise ParameterError(f"{out} is not empty")
        (out / "public").mkdir(parents=True)
        (out / "private").mkdir()
        self.data.to_csv(out / "public" / "released.csv", index=False)
        (out / "public" / "manifest.json").write_text("{}")
        (out / "private" / "reproduce.sh").write_text(self.script())
        files = {"released file": "public/released.csv", "manifest": "public/manifest.json",
                 "script": "private/reproduce.sh"}
        return _ns(out=out, files=files, script=self.script())


def install() -> None:
    """Make this module ``pramkit.workbench`` when the library has no workbench yet."""
    import pramkit.workbench

    if not hasattr(pramkit.workbench, "Workbench"):
        sys.modules["pramkit.workbench"] = sys.modules[__name__]


@contextlib.contextmanager
def running_app(work_root: Path, token: str) -> Iterator[str]:
    """The app served by uvicorn in a background thread on a free loopback port; yields its base URL."""
    import uvicorn

    from pramkit.app import create_app
    from pramkit.app.serve import listen

    sock = listen("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(work_root, token), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the app did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
