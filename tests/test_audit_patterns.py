"""The release audit's checks decided from distinct records (what Spark aggregates:
:class:`pramkit.audit.records.Patterns`) against the same checks decided record by record (the
local engine): for any pair of files, the same checks, figures, rows and messages.

The distinct records and the rows they hold are computed here with pandas, not by the code under
test; the Spark tests (tests/test_spark_passes.py) check the same on real data through Spark.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.audit.records import SHOWN, Patterns, _holm_family, _Variable
from pramkit.codebook import MissingCodes
from pramkit.manifest import PerturbedVariable
from pramkit.matrix import PramMatrix

#: sex, a kept code "u" (its row and column zero but for the diagonal), missing as "NA" or empty.
MATRIX = PramMatrix([[0.7, 0.3, 0.0], [0.3, 0.7, 0.0], [0.0, 0.0, 1.0]], ["f", "m", "u"])
VALUES = ["f", "m", "u", "NA", None]


def _by_records(variable: PerturbedVariable, original: pa.Table, released: pa.Table) -> list[dict]:
    found = _Variable(variable, original.column_names, MissingCodes(texts=("NA",)))
    found.add(original, released, 0)
    return [c.to_dict() for c in _holm_family([found], 1e-3)]


def _by_patterns(variable: PerturbedVariable, original: pa.Table, released: pa.Table) -> list[dict]:
    """Distinct (original, released[, household's first member]) records, counted here in plain Python."""
    o, r = original.column("sex").to_pylist(), released.column("sex").to_pylist()
    columns = [o, r]
    if variable.unit is not None:
        first: dict[str, int] = {}
        lead = [first.setdefault(h, i) for i, h in enumerate(original.column("hid").to_pylist())]
        columns += [[o[j] for j in lead], [r[j] for j in lead], [j == i for i, j in enumerate(lead)]]
    index: dict[tuple, int] = {}
    entry = np.array([index.setdefault(key, len(index)) for key in zip(*columns, strict=True)])
    distinct = list(zip(*index, strict=True))
    times = np.bincount(entry, minlength=len(index))

    def side(k: int) -> pa.Table:
        return pa.table({"sex": pa.array(list(distinct[k]), pa.string())})

    leads = None
    if variable.unit is not None:
        leads = (side(2), side(3), np.array(distinct[4], dtype=bool))
    found = _Variable(variable, original.column_names, MissingCodes(texts=("NA",)))
    assert found.add_patterns(side(0), side(1), Patterns(times), leads)

    def first_rows(mask: np.ndarray) -> tuple[list[int], list[int]]:
        rows = np.flatnonzero(mask[entry])[:SHOWN]
        return rows.tolist(), entry[rows].tolist()

    found.resolve(first_rows)
    return [c.to_dict() for c in _holm_family([found], 1e-3)]


records = st.lists(st.tuples(st.sampled_from(VALUES), st.sampled_from(VALUES), st.integers(0, 30)),
                   min_size=1, max_size=400)


@settings(max_examples=60, deadline=None)
@given(records, st.booleans())
def test_distinct_records_give_the_checks_of_every_record(rows, households):
    original = pa.table({"sex": pa.array([o for o, _, _ in rows], pa.string()),
                         "hid": pa.array([str(h) for _, _, h in rows], pa.string())})
    released = pa.table({"sex": pa.array([r for _, r, _ in rows], pa.string()), "hid": original.column("hid")})
    variable = PerturbedVariable("sex", MATRIX, unit="hid" if households else None)
    assert _by_patterns(variable, original, released) == _by_records(variable, original, released)


def test_a_release_with_every_finding_is_decided_alike():
    """Moves into zero cells (a kept code left and entered), missing values moved, household members who
    disagree: more than SHOWN of each, so that the rows listed are the first ones."""
    rng = np.random.default_rng(5)
    n = 3000
    o = rng.choice(np.array(VALUES, dtype=object), n)
    r = np.where(rng.random(n) < 0.9, o, rng.choice(np.array(VALUES, dtype=object), n))
    hid = (np.arange(n) // 3).astype(str)
    original = pa.table({"sex": pa.array(o.tolist(), pa.string()), "hid": pa.array(hid.tolist())})
    released = pa.table({"sex": pa.array(r.tolist(), pa.string()), "hid": pa.array(hid.tolist())})
    for unit in (None, "hid"):
        variable = PerturbedVariable("sex", MATRIX, unit=unit)
        local = _by_records(variable, original, released)
        assert _by_patterns(variable, original, released) == local
        failed = {c["field"] for c in local if not c["passed"]}
        assert {"missing kept missing", "impossible transitions"} <= failed
        impossible = next(c for c in local if c["field"] == "impossible transitions")
        assert len(impossible["data"]["rows"]) == SHOWN or unit is not None  # households: their first members only
