"""The recognition design as a release: one joint matrix over the keys against spontaneous recognition."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from pramkit._json import to_jsonable
from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import ParameterError
from pramkit.information import mutual_information
from pramkit.labels import joint_cell
from pramkit.ledger import Ledger
from pramkit.manifest import Manifest
from pramkit.recognition.design import Method
from pramkit.release.assemble import public_matrix
from pramkit.release.plan import variable_names
from pramkit.release.record import DesignRecord, Release


def design_recognition(
    data: Any,
    keys: Sequence[str],
    *,
    alpha: float,
    combinations: int | Sequence[Sequence[str]] = 3,
    solver: Method = "restricted",
    gamma: float = 0.9,
    na_values: Sequence[str] = NA_VALUES,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
) -> Release:
    """One joint matrix over the key variables against spontaneous recognition (Cator,
    Hensbergen and Rozenholc, condition C1), as a release manifest.

    The design reads the exact joint frequencies of the keys (condition C1 is a statement
    about the file's own counts), so no DP guarantee covers it: the ledger says so in plain
    words.  The figures of the design (worst posterior, L2 loss, the uniform-noise
    baseline) are in the private design record.

    Parameters
    ----------
    data : str, Path, pandas.DataFrame or pramkit.source.Source
        The original data (a file is read for the keys only: :meth:`pramkit.source.Source.frame`).
    keys : sequence of str
        The key variables, perturbed jointly.
    alpha : float
        The bound on every posterior of condition (C1) (a probability).
    combinations : int or sequence of sequences
        The key combinations checked: a size, or lists of keys.
    solver : {"restricted", "full"}
        Restricted: convex, certified gap; full: every entry free (small key spaces only).
    gamma : float
        Lower bound on the diagonal of the reductions.
    na_values, sep, encoding
        How a CSV file is read: the texts that mean missing besides the empty field, the field
        separator and the character encoding (:func:`pramkit.io.iter_batches`).

    Returns
    -------
    Release
        The manifest and its private design record.

    Raises
    ------
    ParameterError
        No key, a key twice, ``alpha``, ``gamma`` or ``solver`` out of range, or
        ``combinations`` not between 1 and the number of keys.
    DataError
        The data cannot be read, or a key is not one of its columns.

    References
    ----------
    Cator, Hensbergen and Rozenholc, condition (C1).

    Examples
    --------
    >>> from pramkit.datasets import census
    >>> m, record = design_recognition(census(3_000), ["sex", "marital_status"], alpha=0.9, combinations=2)
    >>> m.ledger.frequencies, m.ledger.covers_everything
    ('exact', False)
    """
    from pramkit.recognition.design import recognition_design_from_data
    from pramkit.source import Source

    names = variable_names(list(keys))
    if len(names) < 2:
        raise ParameterError("the recognition design perturbs the key variables jointly: give at least two keys")
    t0 = time.perf_counter()
    source = Source.open(data, na_values=na_values, sep=sep, encoding=encoding)
    described, digest = (source.described, source.digest) if source.on_disk else ("a DataFrame in memory", None)
    d = recognition_design_from_data(source.frame(names) if source.on_disk else source.data, names, alpha=alpha, combinations=combinations, method=solver,
                                     gamma=gamma)
    designed = d.perturbed_variable()
    # the loss, the worst posterior and the certificate are computed on the exact counts: private
    var = dataclasses.replace(designed, matrix=public_matrix(designed.matrix, exact=True))
    ledger = Ledger(frequencies="exact", categories=dict.fromkeys(names, "data"), data_dependent=(
        "the recognition design reads the exact joint frequencies of the keys, and the published joint matrix "
        "lists the key combinations that occur in the original file",))
    top = d.destinations().head(5)
    extra = {
        "keys": names,
        "alpha": d.alpha,
        "worst_posterior": d.worst_posterior,
        "l2_loss": d.loss,
        "expected_changes_records": d.expected_changes,
        "min_diagonal": d.matrix.min_diagonal if d.matrix is not None else None,
        "baseline": {"weight": d.baseline.weight, "l2_loss": d.baseline.loss,
                     "expected_changes_records": d.baseline.expected_changes},
        "destinations": [{"cell": list(c) if isinstance(c, tuple) else c, "records_in": float(r)}
                         for c, r in zip(top["cell"], top["records_in"])],
        "diagnostics": dataclasses.asdict(d.diagnostics),
        "seconds": time.perf_counter() - t0,
    }
    counts = d.space.counts
    info = mutual_information(counts / counts.sum(), var.matrix.matrix) if var.matrix.size == counts.size else None
    record = DesignRecord(
        data=described, sha256=digest, rows=int(counts.sum()), missing=0, method="recognition", split="joint",
        options={"alpha": alpha, "combinations": combinations, "solver": solver, "gamma": gamma},
        variables={var.name: {"categories": [list(joint_cell(c)) for c in var.matrix.categories], "epsilon": var.epsilon,
                              "information_nats": info, "design_information_nats": None}},
        matrices={var.name: designed.matrix}, extra=extra,
    )
    facts = {"method": "recognition", "split": "joint", "record_epsilon_budget": None, "design_epsilon": 0.0,
             "frequencies": "exact", "prior": None, "options": to_jsonable(record.options)}
    return Release(Manifest((var,), input=facts, ledger=ledger), record)
