"""The design workflow stays readable: no function in it has a cyclomatic complexity above 20.

Measured by radon (McCabe's cyclomatic complexity, as radon counts it: one per decision,
boolean operator and comprehension condition).  The workflow is the release package (plan,
count, frequencies, allocate, build, assemble), the family registry and the design command.
A test file of its own: the check reads the source, no data; it is no less a check for that.
"""

from __future__ import annotations

from pathlib import Path

import pytest

radon = pytest.importorskip("radon.complexity")

SRC = Path(__file__).resolve().parents[1] / "src" / "pramkit"
#: The files of the design workflow.
WORKFLOW = sorted([*(SRC / "release").glob("*.py"), SRC / "design" / "registry.py", SRC / "cli" / "design.py"])
#: The largest complexity allowed of one function in the workflow.
LIMIT = 20


def _functions(path: Path) -> list[tuple[str, int]]:
    """``(name, complexity)`` of every function and method in ``path``."""
    blocks = radon.cc_visit(path.read_text(encoding="utf-8"))
    out = []
    for b in blocks:
        out.append((b.fullname, b.complexity))
        out.extend((f"{b.fullname}.{m.name}", m.complexity) for m in getattr(b, "methods", ()))
    return out


@pytest.mark.parametrize("path", WORKFLOW, ids=lambda p: str(p.relative_to(SRC)))
def test_no_function_of_the_design_workflow_is_more_complex_than_the_limit(path: Path) -> None:
    over = [(name, c) for name, c in _functions(path) if c > LIMIT]
    assert not over, f"{path.relative_to(SRC)}: {over} above {LIMIT}; split them into functions with one job"


def test_the_measure_sees_a_complex_function() -> None:
    """The check can fail: a function of 21 branches measures 22."""
    body = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(21))
    (block,) = radon.cc_visit(f"def f(x):\n{body}\n    return -1\n")
    assert block.complexity == 22 > LIMIT


def test_the_workflow_is_where_the_check_looks() -> None:
    names = {p.name for p in WORKFLOW}
    assert {"plan.py", "count.py", "frequencies.py", "allocate.py", "build.py", "assemble.py",
            "registry.py", "design.py"} <= names
