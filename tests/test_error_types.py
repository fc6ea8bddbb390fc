"""Every error the package raises is typed by its cause.

:class:`pramkit.errors.PramkitError` is the base class to catch; the package
never raises it itself.  A parameter out of its domain is a
:class:`~pramkit.errors.ParameterError`, data that do not match what was
declared a :class:`~pramkit.errors.DataError` (both ValueErrors), a bad
matrix a :class:`~pramkit.errors.MatrixError`, an output that cannot be
written a :class:`~pramkit.errors.WriteError`.
"""

from __future__ import annotations

import ast
import contextlib
import io
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

import pramkit
from pramkit.errors import DataError, MatrixError, ParameterError, PramkitError, WriteError

SRC = Path(pramkit.__file__).parent


def _calls_of_base(tree: ast.AST) -> list[int]:
    """Lines where ``PramkitError`` (or ``errors.PramkitError``) is called or raised bare."""
    def names_base(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "PramkitError") or (
            isinstance(node, ast.Attribute) and node.attr == "PramkitError")

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and names_base(node.func):
            lines.append(node.lineno)
        elif isinstance(node, ast.Raise) and node.exc is not None and names_base(node.exc):
            lines.append(node.lineno)
    return sorted(lines)


def test_the_base_class_is_never_raised() -> None:
    found = {
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        for line in _calls_of_base(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    }
    assert not found, f"raise a subclass of PramkitError, not the base class: {sorted(found)}"


def test_the_ast_check_finds_a_bare_raise() -> None:
    """The check above is not vacuous: it sees both spellings, and not the subclasses."""
    tree = ast.parse("def f():\n    raise PramkitError('x')\n"
                     "def g():\n    raise errors.PramkitError\n"
                     "def h():\n    raise ParameterError('x')\n")
    assert _calls_of_base(tree) == [2, 4]


# --- representative bad calls, one per module -------------------------------------------------------


def _tmp_csv(tmp: Path) -> Path:
    path = tmp / "data.csv"
    pd.DataFrame({"sex": ["m", "f", "f", "m"], "region": [1, 2, 2, 1]}).to_csv(path, index=False)
    return path


def _manifest() -> pramkit.Manifest:
    from pramkit.design.classic import randomized_response

    return pramkit.Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})


def _count_file(tmp: Path) -> None:
    from pramkit.counts import count_file

    count_file(_tmp_csv(tmp), ["sex"], missing="drop")


def _class_bounds(tmp: Path) -> None:
    from pramkit.design.bistochastic.families import class_bounds

    class_bounds(7, 8)


def _dp_min_variance(tmp: Path) -> None:
    from pramkit.design.dp.variance import dp_min_variance

    dp_min_variance([0.5, 0.5], 1.0, truthful="yes")


def _dp_min_distance(tmp: Path) -> None:
    from pramkit.design.dp.distance import dp_min_distance

    dp_min_distance(None, 1.0, "ordinal", categories=["a"])


def _split_budget(tmp: Path) -> None:
    from pramkit.design.dp.multivariate import split_budget

    split_budget({"a": [0.5, 0.5]}, 1.0, grid=0)


def _bistochastic_numeric(tmp: Path) -> None:
    from pramkit.design.bistochastic.numeric import bistochastic_numeric

    bistochastic_numeric([1.0, 2.0, 3.0], family="spiral")


def _combinations_of(tmp: Path) -> None:
    from pramkit.recognition.design import combinations_of

    combinations_of(["sex", "region"], [["sex", "income"]])


def _restricted_l2(tmp: Path) -> None:
    import scipy.sparse as sp

    from pramkit.recognition.reductions import restricted_l2
    from pramkit.risk.space import key_space

    space = key_space([[30.0, 1.0], [40.0, 20.0]])
    # cell 0 moves to cell 1, which moves to cell 2: a target that moves itself
    chain = sp.csr_matrix(np.array([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0], [0, 0, 1, 0], [0, 0, 0, 1]]))
    restricted_l2(space, chain)


def _spark_read(tmp: Path) -> None:
    from pramkit.engines.spark import read

    path = tmp / "data.dta"
    path.write_bytes(b"")
    read(None, path)


def _mle_estimate(tmp: Path) -> None:
    from pramkit.estimate.mle import mle_estimate

    mle_estimate([10.0, 20.0], [None], tol=-1.0)


def _estimate_table(tmp: Path) -> None:
    from pramkit.estimate.table import estimate_table

    estimate_table(pd.DataFrame({"sex": ["m", "f"]}), _manifest(), "sex", confidence=1.5)


def _norm_sub(tmp: Path) -> None:
    from pramkit.estimate.consistent import norm_sub

    norm_sub([[1.0, np.inf]], [1.0])


def _mutual_information_form8(tmp: Path) -> None:
    from pramkit.information import mutual_information_form8

    mutual_information_form8([0.5, 0.5], [0.5, 1.5])


def _table_format(tmp: Path) -> None:
    from pramkit.io import table_format

    table_format("survey.xlsx")


def _apply_file(tmp: Path) -> None:
    manifest = tmp / "m.json"
    _manifest().write(manifest)
    pramkit.apply_file(_tmp_csv(tmp), manifest, tmp / "out.csv", key=bytes(32), chunk_rows=0)


def _bistochastic_privacy(tmp: Path) -> None:
    from pramkit.privacy.bistochastic import bistochastic_privacy

    bistochastic_privacy([[1.0]])


def _swapping_matrix(tmp: Path) -> None:
    from pramkit.privacy.probabilistic import swapping_matrix

    swapping_matrix([3, 4], ["a", "b"], swap_rate=1.5)


def _check_release(tmp: Path) -> None:
    from pramkit.design.classic import randomized_response
    from pramkit.engine.receipt import check_release, mark_frame

    frame = pd.DataFrame({"sex": ["f"]})
    mark_frame(frame, _manifest())
    check_release(frame, pramkit.Manifest.of({"sex": randomized_response(["f", "m"], 2.0)}))


def _build_report(tmp: Path) -> None:
    from pramkit.report.build import build_report

    frame = pd.DataFrame({"sex": ["m", "f"]})
    build_report(frame, _manifest(), frame, [])


def _sampling_fraction_of(tmp: Path) -> None:
    from pramkit.risk.fractions import sampling_fraction_of

    sampling_fraction_of(3, sampling_fraction=None, weights=np.array([1.0, 1.0, 0.5]))


def _fit_loglinear(tmp: Path) -> None:
    from pramkit.risk.loglinear import fit_loglinear

    fit_loglinear(np.zeros((2, 2)), ["a", "b"])


def _cell_risk(tmp: Path) -> None:
    from pramkit.risk.misclassified import cell_risk

    cell_risk(np.array([0.5, 2.0]), np.array([0.5, 0.0]), [None])


def _tune_epsilon(tmp: Path) -> None:
    from pramkit.risk.tuning import tune_epsilon

    tune_epsilon(pd.DataFrame({"sex": ["m", "f"]}), ["sex"], perturb=["sex"], threshold=0.1, measure="tau3")


def _identification_risk(tmp: Path) -> None:
    from pramkit.risk.identification import identification_risk

    identification_risk(pd.DataFrame({"sex": ["m", "f"]}), ["sex"], sampling_fraction=0.5, tau_rtol=-1.0)


def _l2_loss(tmp: Path) -> None:
    from pramkit.utility import l2_loss

    l2_loss([10.0, 20.0], pramkit.PramMatrix([[0.5, 0.5], [0.5, 0.5]], ["a", "b"]))


def _check_writable(tmp: Path) -> None:
    from pramkit.atomic import check_writable

    check_writable(tmp / "absent" / "out.csv", force=False)


def _refuse_inputs(tmp: Path) -> None:
    from pramkit.atomic import refuse_inputs

    data = _tmp_csv(tmp)
    refuse_inputs(data, [data])


def _run_demo(tmp: Path) -> None:
    from pramkit.demo import run_demo

    (tmp / "public").mkdir()
    (tmp / "public" / "mine.txt").write_text("not the demo's")
    run_demo(tmp, rows=1_000, force=True)


#: (call, the error's class, a part of its message): the class follows from the cause alone.
CASES: list[tuple[Callable[[Path], None], type[PramkitError], str]] = [
    (_count_file, ParameterError, "missing must be 'exclude' or 'category'"),
    (_class_bounds, ParameterError, "k must be a whole number"),
    (_dp_min_variance, ParameterError, "truthful must be True or False"),
    (_dp_min_distance, ParameterError, "a DP design needs at least two categories"),
    (_split_budget, ParameterError, "grid must be a positive integer"),
    (_bistochastic_numeric, ParameterError, "family must be 'blocks' or 'tridiagonal'"),
    (_combinations_of, ParameterError, "combination ['sex', 'income']"),
    (_restricted_l2, MatrixError, "restricted_l2 needs a matrix whose targets do not move themselves"),
    (_spark_read, ParameterError, "the Spark engine reads CSV and Parquet, not "),
    (_mle_estimate, ParameterError, "tol must be a positive number"),
    (_estimate_table, ParameterError, "confidence must be a number strictly between 0 and 1"),
    (_norm_sub, ParameterError, "norm_sub needs finite values"),
    (_mutual_information_form8, ParameterError, "keep probabilities q must lie in [0, 1]"),
    (_table_format, ParameterError, "cannot tell the format of 'survey.xlsx'"),
    (_apply_file, ParameterError, "chunk_rows must be at least 1"),
    (_bistochastic_privacy, MatrixError, "bistochastic privacy needs at least two categories"),
    (_swapping_matrix, ParameterError, "swap_rate must lie in [0, 1]"),
    (_check_release, DataError, "the data were released with another manifest"),
    (_build_report, ParameterError, "name at least one key variable"),
    (_sampling_fraction_of, DataError, "the weights sum to 2.5, less than the 3 records"),
    (_fit_loglinear, DataError, "the table is empty"),
    (_cell_risk, ParameterError, "the sampling fraction must lie in (0, 1]"),
    (_tune_epsilon, ParameterError, "measure must be 'tau2' or 'c1'"),
    (_identification_risk, ParameterError, "tau_rtol must be a positive number or None"),
    (_l2_loss, MatrixError, "the transition matrix is singular"),
    (_check_writable, WriteError, "out.csv' does not exist"),
    (_refuse_inputs, ParameterError, "not even with --force"),
    (_run_demo, WriteError, "mine.txt' is in the way"),
]


@pytest.mark.parametrize(("call", "kind", "part"), CASES, ids=[c[0].__name__.lstrip("_") for c in CASES])
def test_a_bad_call_raises_its_typed_error(tmp_path: Path, call, kind, part) -> None:
    with pytest.raises(PramkitError) as caught:
        call(tmp_path)
    assert type(caught.value) is kind, f"{type(caught.value).__name__}: {caught.value}"
    assert part in str(caught.value)
    assert "\n" not in str(caught.value)
    # a parameter or the data at fault is also a ValueError; a write is not
    assert isinstance(caught.value, ValueError) == (kind in (ParameterError, DataError, MatrixError))


@pytest.mark.parametrize(("argv", "start"), [
    (["reproduce", "no-such-paper", "--out", "out"], "unknown reproduction 'no-such-paper'"),  # a ParameterError
    (["keygen", "absent-folder/key"], "the folder 'absent-folder' of the output"),  # a WriteError: not a ValueError, still one line and status 2
])
def test_the_command_line_prints_a_typed_error_on_one_line(tmp_path: Path, monkeypatch, argv, start) -> None:
    from pramkit.cli import main

    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    lines = err.getvalue().splitlines()
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"pramkit {argv[0]}: error: {start}")
    assert list(tmp_path.iterdir()) == []
