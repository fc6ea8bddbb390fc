"""Following a design through the calls: down the floors and back up once.

The import rule (``tests/test_architecture.py``) keeps every module from naming one of a higher
floor; these tests follow what runs.  They record, with :func:`sys.setprofile`, every call from one
function of the package to another while a real release is designed (sdcMicro's testdata and the
EU-SILC file, missing values included), and check:

* **no call goes up a floor**: a function never calls one of a module on a higher floor of
  ``FLOORS`` (a method of an object handed down from above, a callback), so that every descent
  returns to its caller and the route of the data and of the budget goes down the floors and back
  up once; the few calls allowed are :data:`CALLBACKS`, each with its reason;
* **the stages run one way**: ``design_planned`` calls count, frequencies, allocate, build and
  assemble once each, in that order, and no stage calls a function of an earlier one;
* **nothing is derived twice**: on the route of ``pramkit design DATA --epsilon E`` the settings are
  checked once, the record budget's rule runs once, the plan is made once and the family is asked
  once whether it takes a budget.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest
from test_architecture import ARCHITECTURE, floor_of

import pramkit
from pramkit.release.plan import plan_release
from pramkit.release.spec import ReleaseSpec

PACKAGE = Path(pramkit.__file__).resolve().parent

#: Calls allowed to go up a floor, by ``(caller's module, callee's module)``, each with its reason.
CALLBACKS: dict[tuple[str, str], str] = {
    ("pramkit.validate", "pramkit.release.rules"): "the rule of --method is made with its own check "
                                                   "(pramkit.validate.Checked), which calls the function it was "
                                                   "made with: a value handed down, not a name of a higher floor",
    ("pramkit.validate", "pramkit.release.spec"): "the rules of --epsilon-per-variable, --keep-codes, --sampling "
                                                  "and --target are made with their own checks, handed down alike",
    ("pramkit.settings", "pramkit.release.spec"): "pramkit.settings.checked checks the specification it is given "
                                                  "once, by the spec's own check: a value handed down",
    ("pramkit.ledger", "pramkit.manifest"): "the guarantee sentence asks the manifest it is given for its columns "
                                            "and facts, while pramkit.ledger stands below pramkit.manifest (after "
                                            "the design: the command's printout)",
    ("pramkit.privacy.kinds", "pramkit.manifest"): "each guarantee kind reads the figure of the perturbed variable "
                                                   "it is given (its epsilon, its released law, its structure), "
                                                   "for the ledger's guarantee, as the ledger reads the manifest",
}
#: The stages of ``design_planned``, in order: module and function.
STAGES = (("pramkit.release.count", "count_release"), ("pramkit.release.frequencies", "design_frequencies"),
          ("pramkit.release.allocate", "allocate"), ("pramkit.release.build", "build_matrices"),
          ("pramkit.release.assemble", "assemble"))


@dataclass(frozen=True)
class Call:
    """One call from a function of the package to another: modules, qualified names, the arguments."""

    caller: str
    caller_name: str
    callee: str
    callee_name: str
    arguments: dict[str, Any]

    @property
    def up(self) -> bool:
        """Whether the callee stands on a higher floor than the caller."""
        if "<module>" in (self.caller_name, self.callee_name):  # a module's first import runs its body
            return False
        here, there = floor_of(self.caller), floor_of(self.callee)
        return here is not None and there is not None and there > here


def _module(code: CodeType) -> str | None:
    """The package's module of a function's code, or None outside the package."""
    path = Path(code.co_filename)
    if not path.is_relative_to(PACKAGE):
        return None
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _arguments(frame: FrameType) -> dict[str, Any]:
    code = frame.f_code
    return {n: frame.f_locals.get(n) for n in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]}


@contextmanager
def recorded() -> Iterator[list[Call]]:
    """Record every call from a function of the package to another (frames outside it skipped over)."""
    found: list[Call] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        callee = _module(frame.f_code) if event == "call" else None
        if callee is None:
            return
        caller = frame.f_back
        while caller is not None and _module(caller.f_code) is None:
            caller = caller.f_back
        if caller is not None:
            found.append(Call(str(_module(caller.f_code)), caller.f_code.co_qualname, callee,
                              frame.f_code.co_qualname, _arguments(frame)))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(previous)


def _climbs(calls: list[Call]) -> list[tuple[str, str, str, str]]:
    """The calls that go up a floor and are not :data:`CALLBACKS`."""
    return sorted({(c.caller, c.caller_name, c.callee, c.callee_name) for c in calls
                   if c.up and (c.caller, c.callee) not in CALLBACKS})


def _back(calls: list[Call]) -> list[tuple[str, str, str, str]]:
    """Calls from a stage's module to a function of an earlier stage's module (the plan's included)."""
    order = ["pramkit.release.plan", *(m for m, _ in STAGES)]
    return sorted({(c.caller, c.caller_name, c.callee, c.callee_name) for c in calls
                   if c.caller in order and c.callee in order and order.index(c.callee) < order.index(c.caller)
                   and "." not in c.callee_name and c.callee_name != "<module>"})


#: Real designs: a file, its variables and the plan's other settings.
DESIGNS: dict[str, tuple[str, list[str], dict[str, Any]]] = {
    "testdata": ("testdata.csv", ["urbrur", "water", "sex"], {"epsilon": 2.0}),
    "eusilc, economic status missing": ("eusilc_laeken.csv", ["db040", "pl030"], {"epsilon": 3.0}),
    "eusilc, missing a category, strata": ("eusilc_laeken.csv", ["pl030"],
                                           {"epsilon": 2.0, "missing": "category", "strata": "rb090"}),
    "eusilc, joint": ("eusilc_laeken.csv", ["rb090", "pl030"], {"epsilon": 2.0, "split": "joint"}),
    "eusilc, kanon": ("eusilc_laeken.csv", ["db040"], {"method": "kanon", "options": {"k": 3}}),
}


@pytest.mark.parametrize("name", DESIGNS)
def test_design_planned_goes_down_the_floors_and_back_up_once(name: str, sdc_data: Path) -> None:
    file, variables, settings = DESIGNS[name]
    plan = plan_release(variables, **settings)
    with recorded() as calls:
        manifest, record = pramkit.design_planned(sdc_data / file, plan, rng=random.Random(7))
    assert record.rows == {"testdata.csv": 4580, "eusilc_laeken.csv": 14827}[file]
    given = manifest.ledger.total([v.epsilon_given_shown for v in manifest.variables])  # given the strata
    assert given <= settings.get("epsilon", float("inf"))
    assert len(calls) > 200 and {c.callee for c in calls} >= {"pramkit.source", "pramkit.counts", "pramkit.ledger"}
    assert not _climbs(calls), _climbs(calls)
    stages = [(c.callee, c.callee_name) for c in calls if c.caller_name == "design_planned"
              and c.callee.startswith("pramkit.release.") and c.callee != "pramkit.release.plan"]
    assert stages == list(STAGES)
    assert not _back(calls), _back(calls)


@pytest.fixture(scope="module")
def cli_route(tmp_path_factory: pytest.TempPathFactory) -> list[Call]:
    """The calls of ``pramkit design testdata.csv --vars urbrur,water,sex --epsilon 2.5 --out M.json``."""
    from conftest import SDC_DATA

    from pramkit.cli import main

    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    out = tmp_path_factory.mktemp("route") / "m.json"
    with recorded() as calls:
        code = main(["design", str(SDC_DATA / "testdata.csv"), "--vars", "urbrur,water,sex", "--epsilon", "2.5",
                     "--out", str(out), "--quiet"])
    assert code == 0
    assert pramkit.Manifest.read(out).record_epsilon <= 2.5
    return calls


def test_the_route_of_epsilon_from_the_command_line_checks_and_derives_each_thing_once(
        cli_route: list[Call]) -> None:
    def count(module: str, function: str, **arguments: Any) -> int:
        return sum(1 for c in cli_route if (c.callee, c.callee_name) == (module, function)
                   and all(c.arguments.get(k) == v for k, v in arguments.items()))

    assert count("pramkit.settings", "check_rules") == 1                     # the settings, once
    assert count("pramkit.release.plan", "plan_release") == 1                 # the plan, once
    assert count("pramkit.validate", "positive", value=2.5) == 1              # the budget's rule, once
    assert count("pramkit.design.registry", "DesignFamily.takes_budget") == 1  # handed down in the plan
    assert count("pramkit.release.rules", "check_split") == 1
    assert count("pramkit.release.pipeline", "design_planned") == 1
    assert count("pramkit.source", "Source.__init__") == 1                    # the data opened once
    assert not _climbs(cli_route), _climbs(cli_route)
    seen = {(c.caller, c.callee) for c in cli_route if c.up}
    assert seen == {("pramkit.validate", "pramkit.release.rules"), ("pramkit.ledger", "pramkit.manifest"),
                    ("pramkit.settings", "pramkit.release.spec"), ("pramkit.privacy.kinds", "pramkit.manifest")}


def test_each_callback_is_still_taken() -> None:
    """An entry of :data:`CALLBACKS` no longer seen on a route is removed (a rule's check on the spec's)."""
    from pramkit.design.classic import randomized_response
    from pramkit.ledger import release_guarantee

    with recorded() as calls:
        ReleaseSpec(epsilon=1.0, epsilon_per_variable="age=0.5").plan(["age"])
        release_guarantee(pramkit.Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}), ["sex", "id"])
    seen = {(c.caller, c.callee) for c in calls if c.up}
    assert seen == set(CALLBACKS), seen ^ set(CALLBACKS)


def test_the_recorder_sees_a_call_that_goes_up() -> None:
    """The check can fail: a call from the base to the command line goes up, one from a stage back to
    an earlier stage goes back; and the recorder sees the calls of a real check."""
    seen = Call("pramkit.settings", "check_values", "pramkit.cli.design", "run", {})
    assert seen.up and _climbs([seen]) == [("pramkit.settings", "check_values", "pramkit.cli.design", "run")]
    assert not Call("pramkit.cli.design", "run", "pramkit.settings", "check_values", {}).up
    back = Call("pramkit.release.assemble", "assemble", "pramkit.release.count", "count_release", {})
    assert _back([back]) == [("pramkit.release.assemble", "assemble", "pramkit.release.count", "count_release")]
    with recorded() as calls:
        ReleaseSpec(epsilon=1.0).plan(["age"])
    assert sum(1 for c in calls if (c.caller_name, c.callee_name) == ("ReleaseSpec.check", "check_rules")) == 1


def test_the_architecture_page_draws_the_route_of_epsilon(cli_route: list[Call]) -> None:
    """docs/architecture.md lists the route of ``--epsilon``: each module with its floor as FLOORS places it,
    each call named there made on the command's route, into that module."""
    import re

    text = ARCHITECTURE.read_text(encoding="utf-8").split("## The route of --epsilon")[1].split("\n## ")[0]
    route = re.findall(r"^\| (\d+) \| `(pramkit[\w.]*)` \| (.+?) \|", text, flags=re.M)
    assert len(route) >= 12
    called = {(c.callee, c.callee_name) for c in cli_route}
    for number, module, names in route:
        floor = floor_of(module)
        assert floor is not None and floor + 1 == int(number), (module, number)
        for name in re.findall(r"`([\w.]+)", names):
            assert any(m == module and (f == name or f.startswith(name + ".")) for m, f in called), (module, name)
