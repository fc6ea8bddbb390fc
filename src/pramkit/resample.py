"""Analysis-ready releases: each record's perturbed values redrawn from their posterior (post-processing).

A PRAM release is exact for an analyst who corrects it (:mod:`pramkit.estimate`), but most
people read the released file as it is, and its raw margins are the original's blurred by the
matrices.  :func:`resample_release` turns the release into a file whose raw margins estimate
the original's, from public inputs only: the released file, the published matrices and the
columns released as they are.  It is post-processing of the release, so the release's
guarantee holds for the file unchanged and no budget is spent.

The model (docs/resample.md):

1. **Nodes.**  Each perturbed variable of the manifest is a node over its matrix's categories
   (a variable perturbed jointly, or within strata, is one node over its cells, as the matrix
   lists them); each public column is a node over its values, released exactly (the identity
   matrix).  A node has one more state, *released as it is*: a missing value kept missing, a
   joint record with some columns missing, a record that breaks a rule and was released
   unperturbed.  That state is observed exactly and never resampled.
2. **Two-way tables.**  For every pair of nodes the released two-way table is the original's
   times ``M_a ⊗ M_b`` (identity for a public column); the original table is its maximum
   likelihood estimate (:func:`pramkit.estimate.mle_estimate`, EM on the simplex), with the
   cells an edit rule forbids as structural zeros.
3. **Tree.**  A maximum spanning tree of the estimated mutual informations (Chow and Liu 1968),
   the pairs tied by an edit rule forced in first, so that every rule is a zero of an edge's (or
   a node's) potential and holds exactly.  The law of the original is
   ``P(x) = P_r(x_r) prod_c P(x_c | x_parent(c))``, the conditionals taken from the estimated
   two-way tables (smoothed by :data:`SMOOTHING` over the allowed cells).
4. **Posterior draws.**  A record's released values ``z`` have likelihood ``prod_v M_v[x_v, z_v]``
   (the variables are perturbed independently given the original), so its posterior is
   ``P(x) prod_v M_v[x_v, z_v]`` restricted to the allowed cells.  It is sampled exactly by belief
   propagation on the tree: messages upwards (computed once per distinct pattern of released
   values below a node), then each node drawn given its parent's draw, by the inverse of its
   conditional distribution at a keyed uniform.

Randomness: a key derived from the secret key and the release's identity (:func:`resample_key`), never
the perturbation's streams; row ``i`` of node ``v`` uses uniform ``i`` of the stream ``v``, so the
file is the same byte for byte for the same key, however it is processed.

References: C. K. Chow and C. N. Liu, "Approximating discrete probability distributions with
dependence trees", IEEE Trans. Inf. Theory 14 (1968) 462-467; J. Pearl, *Probabilistic
Reasoning in Intelligent Systems* (1988), ch. 4 (belief propagation on trees).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from scipy.special import xlogy

from pramkit.codebook import (
    MISSING,
    Codebook,
    JointCodebook,
    MissingCodes,
    canonical,
    sort_labels,
    spelling_clash,
    spelling_error,
)
from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import DataError, ParameterError, PramkitWarning
from pramkit.estimate.axes import contract
from pramkit.kernel.rng import SecretKey, resolve_key, uniforms
from pramkit.labels import Label, joint_cell
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix
from pramkit.structure import Rule, Rules, as_rules

#: Default public columns: the unperturbed columns with at most this many distinct values.
MAX_PUBLIC_LEVELS = 100
#: Most categories of one node (a variable's matrix, or a public column's values).
MAX_NODE_CELLS = 4096
#: Most cells of one two-way table.
MAX_PAIR_CELLS = 2_000_000
#: The estimates' stopping rule: the log-likelihood of the two-way table within this many nats of its
#: maximum (:func:`pramkit.estimate.mle_estimate`), which puts it within about one standard error
#: of the maximum-likelihood estimate in any direction.
TOL = 0.5
#: The most EM updates per table: where the maximum is on the boundary (cells the data say are empty) EM nears
#: it slowly, and the cross-validated shrinkage that follows matters more than the last digits.  EM alone
#: (``newton=False``): its early stopping regularises the tables.
MAX_ITER = 500
#: Share of each estimated table spread evenly over its allowed cells, so that no record's
#: released values are impossible under the model (a maximum-likelihood table has exact zeros).
SMOOTHING = 1e-9
#: Floats held at once while drawing (records x categories), which sets the records per chunk.
CHUNK_FLOATS = 8_000_000
#: Domain separation of the resampling key (never the perturbation's or the design step's).
_PERSON = b"pramkit-resamp1"
#: What the receipt of a resampled file calls the method.
METHOD = "resample"
#: The sentence added to the release's guarantee.
POST_PROCESSING = (
    "The resampled file is post-processing of that release (pramkit resample): it is computed from the released "
    "file, the published manifest and the columns released as they are, with randomness independent of the "
    "original data, so the statement above holds for it unchanged and it spends no further budget.")


@dataclass(frozen=True)
class Node:
    """One node of the model: a perturbed variable (its matrix's categories) or a public column.

    Parameters
    ----------
    name : str
        The variable's name (its stream) or the public column's name.
    columns : tuple of str
        The columns its categories hold a value of (a joint variable: its strata, then its columns).
    labels : list of labels
        Its categories; state ``len(labels)`` is *released as it is* (observed exactly).
    matrix : numpy.ndarray or None
        The law from the original category to the released one (``None``: a public column).
    variable : PerturbedVariable or None
        The manifest's variable (``None`` for a public column).

    Examples
    --------
    >>> node = Node("sex", ("sex",), ["f", "m"], np.array([[0.8, 0.2], [0.2, 0.8]]))
    >>> node.size, node.perturbed, node.evidence.tolist()
    (3, True, [[0.8, 0.2, 0.0], [0.2, 0.8, 0.0], [0.0, 0.0, 1.0]])
    """

    name: str
    columns: tuple[str, ...]
    labels: list[Label]
    matrix: np.ndarray | None
    variable: PerturbedVariable | None = None

    @property
    def size(self) -> int:
        """The number of states: the categories and *released as it is*."""
        return len(self.labels) + 1

    @property
    def perturbed(self) -> bool:
        return self.matrix is not None

    @property
    def evidence(self) -> np.ndarray:
        """``E[x, z]``: the probability that original state x is released as z (the matrix, and the
        state *released as it is*, which only itself releases)."""
        s = len(self.labels)
        out = np.zeros((s + 1, s + 1))
        out[:s, :s] = np.eye(s) if self.matrix is None else self.matrix
        out[s, s] = 1.0
        return out

    def cells(self) -> list[tuple]:
        """Each category as a tuple of values of :attr:`columns`."""
        return [joint_cell(c) if len(self.columns) > 1 else (c,) for c in self.labels]

    # The codebooks are made once per node, not once per chunk: a codebook builds its lookups (for text, an
    # index of the labels) on first use, which for chunks of a few rows took longer than coding them.
    @cached_property
    def encoder(self) -> Codebook | JointCodebook:
        """The codebook that codes a chunk's released values (:func:`_variable_encoder` for a perturbed
        variable; the categories of a public column)."""
        if self.variable is None:
            return Codebook(self.labels, column=self.name)
        return _variable_encoder(self.variable)

    @cached_property
    def decoder(self) -> Codebook | JointCodebook:
        """The codebook that writes a perturbed variable's draws as values of its columns."""
        v = self.variable
        if v is None:
            raise ValueError(f"{self.name!r} is a public column: it is not drawn")
        if v.is_joint:
            return JointCodebook([joint_cell(c) for c in self.labels], v.read_columns)
        return Codebook(self.labels, column=v.name, missing=v.missing)


@dataclass(frozen=True)
class Edge:
    """An edge of the tree: the parent, the child, the estimated mutual information and why it is there.

    Examples
    --------
    >>> Edge("age", "marital_status", 0.41234, True).to_dict()
    {'parent': 'age', 'child': 'marital_status', 'mutual_information_nats': 0.41234, 'forced_by_rule': True}
    """

    parent: str
    child: str
    mutual_information: float
    forced: bool

    def to_dict(self) -> dict[str, Any]:
        return {"parent": self.parent, "child": self.child, "mutual_information_nats": self.mutual_information,
                "forced_by_rule": self.forced}


@dataclass
class TreeModel:
    """The fitted law of the original records: a tree over the nodes (:func:`fit_tree`).

    Parameters
    ----------
    nodes : list of Node
    order : list of int
        The nodes from the root, each after its parent.
    parent : list of int
        Each node's parent (``-1`` for the root).
    prior : numpy.ndarray
        The root's law over its states.
    conditional : dict of int to numpy.ndarray
        ``conditional[c][x_parent, x_c] = P(x_c | x_parent)``.
    allowed : list of numpy.ndarray
        Each node's states that no rule on it alone forbids.
    edges : list of Edge

    Examples
    --------
    >>> a = Node("a", ("a",), ["x", "y"], None)
    >>> model = TreeModel([a], [0], [-1], np.array([0.25, 0.75, 0.0]), {}, [np.ones(3, bool)], [])
    >>> model.joint().round(2).tolist()
    [0.25, 0.75, 0.0]
    """

    nodes: list[Node]
    order: list[int]
    parent: list[int]
    prior: np.ndarray
    conditional: dict[int, np.ndarray]
    allowed: list[np.ndarray]
    edges: list[Edge]

    def joint(self) -> np.ndarray:
        """The law over every combination of the nodes' states, one axis per node (small models only).

        Raises
        ------
        ParameterError
            More than a million combinations.
        """
        sizes = [n.size for n in self.nodes]
        if math.prod(sizes) > 1_000_000:
            raise ParameterError(f"the model has {math.prod(sizes):,} combinations; joint() is for small models")
        out = np.zeros(sizes)
        for x in itertools.product(*(range(s) for s in sizes)):
            p = self.prior[x[self.order[0]]]
            for c in self.order[1:]:
                p *= self.conditional[c][x[self.parent[c]], x[c]]
            out[x] = p
        return out


@dataclass(frozen=True)
class NodeSummary:
    """What resampling did to one perturbed variable: its records, those redrawn to another
    value, and those left as released (missing, or released as they are).

    Examples
    --------
    >>> NodeSummary("sex", 10, 4, 1).to_dict()
    {'name': 'sex', 'rows': 10, 'changed': 4, 'kept_as_released': 1}
    """

    name: str
    rows: int
    changed: int
    kept_as_released: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rows": self.rows, "changed": self.changed,
                "kept_as_released": self.kept_as_released}


@dataclass(frozen=True)
class ResampleResult:
    """What :func:`resample_release` did.

    rows: records; variables: per perturbed variable (:class:`NodeSummary`); public: the
    public columns the model reads; left_out: unperturbed columns it does not read (too many
    values; copied as they are); edges: the tree; rules: the edit rules enforced;
    rule_breaking_released / rule_breaking_resampled: records that break one, before and after;
    impossible: records whose released values no allowed combination explains (left as released);
    record_epsilon and guarantee: the release's, unchanged, with the post-processing sentence;
    output, receipt: the files written (``None`` for a frame); data: the resampled frame (``None``
    for a file); model: the fitted :class:`TreeModel`.
    """

    rows: int
    variables: list[NodeSummary]
    public: tuple[str, ...]
    left_out: tuple[str, ...]
    edges: list[Edge]
    rules: int
    rule_breaking_released: int
    rule_breaking_resampled: int
    impossible: int
    record_epsilon: float
    guarantee: str
    release: str
    key_source: str
    key_fingerprint: str
    seconds: float
    output: str | None = None
    receipt: str | None = None
    data: Any = None
    model: TreeModel | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (the frame and the model left out), ready for JSON.

        Examples
        --------
        >>> import json
        >>> from pramkit.design.classic import randomized_response
        >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 2.0)})
        >>> released = pd.DataFrame({"sex": ["f", "m", "f", "f"]})
        >>> d = resample_release(released, m, key=bytes(32)).to_dict()
        >>> json.loads(json.dumps(d))["variables"][0]["rows"], d["method"]
        (4, 'resample')
        """
        from pramkit.ledger import epsilon_to_json

        return {
            "method": METHOD, "rows": self.rows, "variables": [v.to_dict() for v in self.variables],
            "public": list(self.public), "left_out": list(self.left_out), "edges": [e.to_dict() for e in self.edges],
            "rules": self.rules, "rule_breaking_released": self.rule_breaking_released,
            "rule_breaking_resampled": self.rule_breaking_resampled, "impossible": self.impossible,
            "record_epsilon": epsilon_to_json(self.record_epsilon), "guarantee": self.guarantee,
            "release": self.release, "key_source": self.key_source, "key_fingerprint": self.key_fingerprint,
            "seconds": self.seconds, "output": self.output, "receipt": self.receipt,
        }


_F = TypeVar("_F", bound=Callable[..., Any])


def _one_blas_thread(function: _F) -> _F:
    """``function`` run with the linear algebra library (BLAS) on one thread.

    The fit's estimates and the posterior's messages are matrix products. BLAS splits a product among its
    threads, one per core, and adds the pieces, so their last bits, the draws made from them, and the file,
    depended on the machine's number of cores (NIST's demographic features: one file on one core, another on
    two). On one thread each product is summed in one order; the products are small, and one thread was no
    slower.

    Examples
    --------
    >>> from threadpoolctl import threadpool_info
    >>> threads = _one_blas_thread(lambda: {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
    >>> threads() <= {1}
    True
    """
    import functools

    @functools.wraps(function)
    def limited(*args: Any, **kwargs: Any) -> Any:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return function(*args, **kwargs)

    return cast(_F, limited)


def resample_key(key: SecretKey, manifest: Manifest) -> SecretKey:
    """The key of the resampling draws: derived from the secret key and the release's identity.

    A keyed BLAKE2b under a domain-separation string of its own, so its streams share nothing with
    the perturbation's (whatever a variable is called) nor with the design step's, and resampling
    another release (another manifest) with the same key draws independently.  The identity is
    :func:`pramkit.engine.receipt.release_digest`, the one the perturbation's key is derived from: the
    manifest's content without when it was written, by which version and how long its steps took, so
    that a design made again (the same data, settings and key) is resampled as it was.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 2.0)})
    >>> key = SecretKey(bytes(32), "zeros")
    >>> derived = resample_key(key, m)
    >>> derived.material == resample_key(key, m).material, derived.material != key.material
    (True, True)
    >>> bool((derived.philox_key("sex") != key.philox_key("sex")).all())
    True
    """
    from pramkit.engine.receipt import release_digest

    digest = release_digest(manifest)
    master = hashlib.blake2b(key.material, digest_size=64, person=_PERSON).digest()
    material = hashlib.blake2b(digest.encode("ascii"), key=master, digest_size=32, person=_PERSON).digest()
    return SecretKey(material, f"{key.source}, resampling stream")


def resample_release(
    released: Any,
    manifest: Manifest | str | Path,
    out: str | Path | None = None,
    *,
    key: SecretKey | bytes | str | Path | None = None,
    public: Sequence[str] | str | None = None,
    forbid: Rules | str | Path | Sequence[Mapping[str, Any]] | None = None,
    force: bool = False,
    na_values: Sequence[str] = NA_VALUES,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
) -> ResampleResult:
    """Redraw each record's perturbed values from their posterior given its released values and
    public columns, under a tree model fitted to the release (module docstring): post-processing.

    Parameters
    ----------
    released : str, pathlib.Path or pandas.DataFrame
        The released file (CSV, Parquet, Stata, SPSS, SAS), or a released frame.
    manifest : Manifest, str or pathlib.Path
        The manifest published with the release (checked against its receipt).
    out : str or pathlib.Path, optional
        The resampled file (for a file; its suffix gives the format), written atomically with its
        receipt ``OUT.receipt.json``.  ``None`` for a frame.
    key : SecretKey, bytes, str, pathlib.Path or None
        The secret key (:func:`pramkit.kernel.rng.resolve_key`; ``None``: a fresh one, never saved).
        The draws use a key derived from it (:func:`resample_key`), never the perturbation's.
    public : sequence of str, or str, optional
        The unperturbed columns the model reads (a text: comma-separated; ``""``: none).  Default:
        every unperturbed column with at most :data:`MAX_PUBLIC_LEVELS` values (household ids left out).
    forbid : Rules, path, or list of mappings, optional
        Edit rules to enforce besides the manifest's (:func:`pramkit.structure.as_rules`).
    force : bool
        Replace an existing ``out``.
    na_values : sequence of str
        The texts of a CSV file that are missing besides the empty field (as for ``apply``).
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    ResampleResult

    Raises
    ------
    ParameterError
        A public column is perturbed or has too many values; a rule names an unknown column or
        value, or couples more than two nodes, or rules tie nodes in a cycle; the manifest perturbs
        households or swaps records; ``out`` is an input or missing for a file, or given for a frame.
    DataError
        The release was made with another manifest (its receipt says so), a column is missing,
        or a value is not one of its variable's categories.
    OutputExistsError
        ``out`` exists and ``force`` is false.

    Warns
    -----
    PramkitWarning
        The release has no receipt to check the manifest against.

    Examples
    --------
    Age and marital status released at epsilon 2 each; a rule (no child is married) holds in every
    resampled record, and the resampled file's margins are those of the model fitted to the release:

    >>> import random, pramkit
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> data = census(5_000)[["age", "marital_status", "sex"]]
    >>> m = pramkit.design_release(data, ["age", "marital_status"], epsilon=4.5, split="equal",
    ...                            categories=CENSUS_VARIABLES, rng=random.Random(0))
    >>> released = pramkit.perturb_frame(data, m, key=bytes(32)).data
    >>> rule = [{"age": "0-9|10-17", "marital_status": "married, spouse present|married, spouse absent"}]
    >>> res = resample_release(released, m, key=bytes(range(32)), forbid=rule)
    >>> res.rule_breaking_released > 0, res.rule_breaking_resampled, res.public
    (True, 0, ('sex',))
    >>> res.data.shape == released.shape, res.record_epsilon == m.record_epsilon
    (True, True)
    """
    t0 = time.perf_counter()
    man = manifest if isinstance(manifest, Manifest) else Manifest.read(manifest)
    _refuse_unsupported(man)
    secret = resolve_key(key)
    frame = isinstance(released, pd.DataFrame)
    if not frame and not isinstance(released, (str, Path)):
        raise ParameterError(f"released must be a file or a pandas DataFrame, not {type(released).__name__}")
    if frame and out is not None:
        raise ParameterError("a released frame is resampled in memory: give no out (write the frame yourself)")
    if not frame and out is None:
        raise ParameterError("give out, the file to write the resampled release to")
    from pramkit.atomic import check_writable
    from pramkit.engine.receipt import check_release

    inputs: list[Any] = [] if frame else [released, None if isinstance(manifest, Manifest) else manifest,
                                          secret.path, forbid if isinstance(forbid, (str, Path)) else None]
    if out is not None:
        from pramkit.io import table_format

        table_format(out)  # an unknown suffix is refused before any work
        check_writable(out, force=force, inputs=inputs)
    unchecked = check_release(released, manifest)  # a release of another manifest is refused
    if unchecked:
        warnings.warn(unchecked, PramkitWarning, stacklevel=2)
    release = _Release(released, na_values, sep, encoding)
    scan = _scan(release, man, public, release.meta.missing)
    rules = _rules(man, forbid)
    release_name = "the frame" if frame else Path(released).name
    model = fit_tree(scan.nodes, scan.counts, rules)
    guarantee = f"{man.guarantee} {POST_PROCESSING}"
    post = {"method": METHOD, "release": release_name, "model": "tree (Chow-Liu) of maximum-likelihood two-way tables",
            "public_columns": list(scan.public), "record_epsilon": _epsilon_json(man.record_epsilon),
            "guarantee": guarantee}
    tally = _Tally()
    tables = _resampled(release, model, resample_key(secret, man), rules, tally)
    result_data = None
    receipt_file = None
    if frame:
        result_data = _to_frame(released, pa.concat_tables(list(tables)), model.nodes)
        from pramkit.engine.receipt import mark_frame

        mark_frame(result_data, man, post_processing=post)
    else:
        assert out is not None
        receipt_file = _write(Path(released), man, manifest, Path(out), tables, release.meta, force, inputs, post)
    return ResampleResult(
        rows=tally.rows, variables=list(tally.variables.values()), public=tuple(scan.public),
        left_out=tuple(scan.left_out), edges=model.edges, rules=0 if rules is None else len(rules.rules),
        rule_breaking_released=tally.broken_before, rule_breaking_resampled=tally.broken_after,
        impossible=tally.impossible, record_epsilon=man.record_epsilon, guarantee=guarantee, release=release_name,
        key_source=secret.source, key_fingerprint=secret.fingerprint, seconds=time.perf_counter() - t0,
        output=None if out is None else str(out), receipt=receipt_file, data=result_data, model=model,
    )


def _epsilon_json(eps: float) -> Any:
    from pramkit.ledger import epsilon_to_json

    return epsilon_to_json(eps)


def _refuse_unsupported(man: Manifest) -> None:
    """One line for a release the per-record tree model cannot resample (households, record swapping)."""
    if man.swapping is not None:
        raise ParameterError("the manifest describes a record swap, whose records are not perturbed independently: "
                             "pramkit resample handles PRAM releases only")
    for v in man.variables:
        if v.unit is not None:
            raise ParameterError(f"variable {v.name!r} is perturbed once per household ({v.unit}); pramkit resample "
                                 "draws each record on its own and would give the members different values: it "
                                 "handles releases without household variables")
        if len(v.matrix.categories) > MAX_NODE_CELLS:
            raise ParameterError(f"variable {v.name!r} has {len(v.matrix.categories):,} categories; pramkit resample "
                                 f"handles at most {MAX_NODE_CELLS:,} per variable")


# ---------------------------------------------------------------------------------------------- reading


@dataclass
class _Meta:
    missing: MissingCodes
    file: Any = None


class _Release:
    """The released records chunk by chunk, each with the row of its first record: a file read afresh for
    each pass (:func:`pramkit.io.iter_batches`, its missing codes as they are), or a frame as one table."""

    def __init__(self, released: Any, na_values: Sequence[str], sep: str = CSV_SEP,
                 encoding: str = CSV_ENCODING) -> None:
        self._source = released
        self._na_values, self._sep, self._encoding = na_values, sep, encoding
        if isinstance(released, pd.DataFrame):
            if len(released) == 0:
                raise DataError("the released frame has no rows")
            from pramkit.engine.perturb import _arrow_column

            first = pa.table([_arrow_column(released[c]) for c in released.columns],
                             names=[str(c) for c in released.columns])
            self.meta = _Meta(MissingCodes())
            self._frame: pa.Table | None = first
            self._pending: Iterator[pa.Table] | None = None
        else:
            meta, tables = self._batches()
            found = next((t for t in tables if t.num_rows), None)
            if found is None:
                raise DataError(f"file {str(released)!r} has no data rows")
            first = found
            self.meta = _Meta(meta.missing, meta)
            self._frame = None
            self._pending = itertools.chain([first], tables)  # the first pass goes on from the chunk read
        #: The columns of the release.
        self.columns = list(first.column_names)

    def _batches(self) -> tuple[Any, Iterator[pa.Table]]:
        from pramkit.io import iter_batches

        return iter_batches(self._source, keep_missing_codes=True, na_values=self._na_values, sep=self._sep,
                            encoding=self._encoding)

    def chunks(self) -> Iterator[tuple[int, pa.Table]]:
        """Each chunk (its columns one array each) and the row of its first record in the release."""
        tables, self._pending = self._pending, None
        if self._frame is not None:
            tables = iter([self._frame])
        elif tables is None:
            tables = self._batches()[1]
        start = 0
        for table in tables:
            if table.num_rows:
                yield start, table.combine_chunks()
                start += table.num_rows


def _blanked(table: pa.Table, column: str, missing: MissingCodes) -> tuple[pa.Array, np.ndarray | None]:
    """A column with its missing codes as nulls, and where they were (``None``: nowhere)."""
    values = table.column(column).combine_chunks()
    marks = missing.found(column, values)
    if marks is None:
        return values, None
    return pc.if_else(pa.array(marks), pa.scalar(None, values.type), values), marks


def _public_names(man: Manifest, names: list[str], public: Sequence[str] | str | None) -> tuple[list[str], list[str]]:
    """The columns that may be public (every one given, or each unperturbed column by default) and the
    unperturbed columns left out whatever their values."""
    perturbed = set(man.columns)
    units = {v.unit for v in man.variables if v.unit}
    from pramkit.io import require_columns

    require_columns(man.read_columns, names, "the release")
    candidates = [c for c in names if c not in perturbed and c not in units]
    if public is None:
        return candidates, []
    wanted = [c.strip() for c in public.split(",") if c.strip()] if isinstance(public, str) else list(public)
    require_columns(wanted, names, "the release")
    both = [c for c in wanted if c in perturbed]
    if both:
        raise ParameterError(f"{', '.join(both)} {'is' if len(both) == 1 else 'are'} perturbed, so not public: "
                             "list among the public columns only columns released as they are")
    if len(set(wanted)) != len(wanted):
        raise ParameterError(f"the public columns must be distinct, got {wanted}")
    return wanted, [c for c in candidates if c not in wanted]


class _Values:
    """An unperturbed column's distinct values met so far, in the order met, with the row each was first
    met in: its categories at the end of the first pass, and meanwhile codes by the order met (``0``:
    missing, ``i + 1``: the ``i``-th value met).  A NaN is missing, as for :func:`categories_of`.

    ``limit``: the most distinct values (NaN counted, as :func:`pyarrow.compute.unique` counts it) before
    the column is left out (:attr:`over`; ``None``: no limit)."""

    def __init__(self, name: str, limit: int | None) -> None:
        self.name = name
        self.limit = limit
        self.known: pa.Array | None = None
        self.rows: list[int] = []
        self.nan = False
        self.over = False

    @property
    def size(self) -> int:
        """The states met so far: missing and each value."""
        return 1 + (0 if self.known is None else len(self.known))

    def codes(self, values: pa.Array, start: int) -> np.ndarray:
        """The codes of a chunk's values (missing codes blanked) whose first row is ``start``."""
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        if pa.types.is_floating(values.type):
            nan = pc.is_nan(values)
            if pc.any(nan).as_py():
                self.nan = True
                values = pc.if_else(nan, pa.scalar(None, values.type), values)
        known = pa.array([], values.type) if self.known is None else self.known
        index = pc.index_in(values, value_set=known)
        new = pc.and_(index.is_null(), values.is_valid())
        if pc.any(new).as_py():
            fresh = values.filter(new)
            distinct = pc.unique(fresh)
            _, first = np.unique(pc.index_in(fresh, value_set=distinct).to_numpy(), return_index=True)
            self.rows += (np.flatnonzero(new.to_numpy(zero_copy_only=False))[first] + start + 1).tolist()
            known = pa.concat_arrays([known, distinct])
            index = pc.index_in(values, value_set=known)
        self.known = known
        if self.limit is not None and len(known) + self.nan > self.limit:
            self.over, self.known, self.rows = True, None, []
        return pc.fill_null(index, -1).to_numpy(zero_copy_only=False).astype(np.intp) + 1

    def categories(self) -> list[Label]:
        """The column's categories (as :func:`categories_of` finds them in the whole column).

        Raises
        ------
        DataError
            Two values are one value spelled two ways (their first rows named).
        """
        distinct = [] if self.known is None else self.known.to_pylist()
        clash = spelling_clash(distinct)
        if clash is not None:
            rows = tuple(self.rows[distinct.index(label)] for label in clash[:2])
            raise spelling_error(self.name, clash, (rows[0], rows[1]))
        return sort_labels(distinct)

    def states(self, categories: list[Label]) -> np.ndarray:
        """Each code's state among ``categories`` (missing: the state *released as it is*)."""
        known = pa.array([], pa.null()) if self.known is None else self.known
        code = Codebook(categories, column=self.name).encode(known)
        return np.concatenate([[len(categories)], np.where(code == MISSING, len(categories), code)]).astype(np.intp)


def _variable_encoder(v: PerturbedVariable) -> Codebook | JointCodebook:
    """The codebook of a perturbed variable's released values: a joint variable's cells, over the unpaired
    values too; else its release matrix's categories."""
    if v.is_joint:
        joint: JointCodebook = v.joint_codebook()  # typed Any where it is made (imported there)
        return joint
    return Codebook(list(v.release_matrix.categories), column=v.name, missing=v.missing)


def _variable_codes(v: PerturbedVariable, table: pa.Table, missing: MissingCodes, start: int,
                    book: Codebook | JointCodebook) -> np.ndarray:
    """A perturbed variable's released state of each record of a chunk whose first row is ``start`` (its
    last state: released as it is); ``book``: its :func:`_variable_encoder`, made once for every chunk."""
    cols = [_blanked(table, c, missing)[0] for c in v.read_columns]
    if isinstance(book, JointCodebook):  # a joint variable's: its cells, over the unpaired values too
        code, _outside = book.encode_cells(cols, first_row=start)
    else:
        code = book.encode(cols[0], first_row=start)
    return np.where(code == MISSING, len(v.release_matrix.categories), code)


def _codes(table: pa.Table, nodes: list[Node], missing: MissingCodes, start: int) -> np.ndarray:
    """Every record's released state of each node (``n x nodes``; the last state of a node: released as it
    is) in a chunk whose first row is ``start``."""
    codes = np.empty((table.num_rows, len(nodes)), dtype=np.intp)
    for j, node in enumerate(nodes):
        if node.variable is not None:
            codes[:, j] = _variable_codes(node.variable, table, missing, start, node.encoder)
        else:
            code = node.encoder.encode(_blanked(table, node.name, missing)[0])
            codes[:, j] = np.where(code == MISSING, len(node.labels), code)
    return codes


@dataclass
class _Scan:
    """What the first pass found: the nodes, the counts the model is fitted to, and the unperturbed columns."""

    nodes: list[Node]
    counts: ReleasedCounts
    public: list[str]
    left_out: list[str]


def _scan(release: _Release, man: Manifest, public: Sequence[str] | str | None, missing: MissingCodes) -> _Scan:
    """The first pass: every record's released states counted (each chunk's public values coded in the
    order met, renumbered at the end), the values checked, the public columns chosen.

    Errors are those of the whole release at once: a perturbed variable's first value that is not a
    category (the first variable's that has one), then a public column's values."""
    maybe, left = _public_names(man, release.columns, public)
    tracked = [_Values(c, MAX_PUBLIC_LEVELS if public is None else None) for c in maybe]
    p = len(man.variables)
    counts = ReleasedCounts([len(v.release_matrix.categories) + 1 for v in man.variables] + [1] * len(tracked))
    failed: dict[int, DataError] = {}
    books: dict[int, Codebook | JointCodebook] = {}  # each variable's, made at its first chunk
    for start, table in release.chunks():
        codes = np.zeros((table.num_rows, p + len(tracked)), dtype=np.intp)
        for j, v in enumerate(man.variables[:min(failed, default=p)]):
            try:
                if j not in books:
                    books[j] = _variable_encoder(v)
                codes[:, j] = _variable_codes(v, table, missing, start, books[j])
            except DataError as exc:
                failed[j] = exc
        if failed:
            continue
        for k, values in enumerate(tracked, p):
            if not values.over:
                codes[:, k] = values.codes(_blanked(table, values.name, missing)[0], start)
            if values.over or values.size > MAX_NODE_CELLS + 1:
                counts.drop(k)
            else:
                counts.resize(k, values.size)
        counts.add(codes, start)
    if failed:
        raise failed[min(failed)]
    nodes = [Node(v.name, v.read_columns, list(v.release_matrix.categories), v.release_matrix.matrix, v)
             for v in man.variables]
    states = [np.arange(n.size) for n in nodes]
    chosen = [values for values in tracked if not values.over]
    for values in chosen:
        cats = values.categories()
        if len(cats) > MAX_NODE_CELLS:
            raise ParameterError(f"public column {values.name!r} has {len(cats):,} values; the model reads at most "
                                 f"{MAX_NODE_CELLS:,}: leave it out of the public columns")
        nodes.append(Node(values.name, (values.name,), cats, None))
        states.append(values.states(cats))
    keep = list(range(p)) + [k for k, values in enumerate(tracked, p) if not values.over]
    left_out = [v.name for v in tracked if v.over] if public is None else left
    return _Scan(nodes, counts.renumbered(keep, states), [v.name for v in chosen], left_out)


def _rules(man: Manifest, forbid: Any) -> Rules | None:
    """The manifest's edit rules (``input.structure.forbid``) and those given, as one set."""
    found: list[Rule] = []
    structure = man.input.get("structure") if isinstance(man.input, Mapping) else None
    declared = structure.get("forbid") if isinstance(structure, Mapping) else None
    if isinstance(declared, Mapping) and declared.get("forbidden"):
        found += Rules.of(declared["forbidden"], source="the manifest's rules").rules
    given = as_rules(forbid)
    if given is not None:
        found += given.rules
    if not found:
        return None
    source = "the manifest's and the given rules" if given is not None and declared else \
        (given.source if given is not None else "the manifest's rules")
    return Rules(tuple(found), source)


# ---------------------------------------------------------------------------------------------- the model


class ReleasedCounts:
    """The counts of released states the tree model is fitted to (:func:`fit_tree`): each node's, and each
    pair's among the records of even and of odd rows (the two folds of the shrinkage's cross-validation).

    They are added chunk by chunk (:meth:`add`, each chunk with the row of its first record), so that a
    file is fitted without holding it; a node's number of states may grow between chunks (:meth:`resize`).
    A pair of more than :data:`MAX_PAIR_CELLS` cells is not counted (:func:`fit_tree` refuses it).

    Parameters
    ----------
    sizes : sequence of int
        Each node's number of states so far.

    Examples
    --------
    Two chunks of one release of two nodes; the second node's third state is met in the second chunk:

    >>> counts = ReleasedCounts([2, 2])
    >>> counts.add(np.array([[0, 1], [1, 1], [0, 0]]), start=0)
    >>> counts.resize(1, 3)
    >>> counts.add(np.array([[1, 2]]), start=3)
    >>> counts.margin(0).tolist(), counts.pair(0, 1).tolist()
    ([2, 2], [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    >>> counts.pair(0, 1, fold=1).tolist()  # rows 1 and 3
    [[0.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    >>> counts.pair(0, 1).tolist() == ReleasedCounts.of(np.array([[0, 1], [1, 1], [0, 0], [1, 2]]), [2, 3]).pair(0, 1).tolist()
    True
    """

    def __init__(self, sizes: Sequence[int]) -> None:
        self.sizes = list(sizes)
        self._margins = [np.zeros(s, dtype=np.int64) for s in self.sizes]
        self._folds: dict[tuple[int, int], np.ndarray] = {}
        self._dropped: set[int] = set()
        for a, b in itertools.combinations(range(len(self.sizes)), 2):
            self._open(a, b)

    @classmethod
    def of(cls, codes: np.ndarray, sizes: Sequence[int]) -> ReleasedCounts:
        """The counts of every record's released states (``n x nodes``) held at once."""
        out = cls(sizes)
        out.add(codes, start=0)
        return out

    def _open(self, a: int, b: int) -> None:
        """Start counting the pair, or stop when it has more cells than any table the model reads."""
        cells = self.sizes[a] * self.sizes[b]
        if a in self._dropped or b in self._dropped or cells > MAX_PAIR_CELLS:
            self._folds.pop((a, b), None)
            return
        old = self._folds.get((a, b))
        new = np.zeros((2, self.sizes[a], self.sizes[b]), dtype=np.int64)
        if old is not None:
            new[:, :old.shape[1], :old.shape[2]] = old
        self._folds[(a, b)] = new

    def resize(self, k: int, size: int) -> None:
        """Node ``k`` has ``size`` states from now on (no fewer than before); its counts so far are kept."""
        if size == self.sizes[k] or k in self._dropped:
            return
        self.sizes[k] = size
        self._margins[k] = np.concatenate([self._margins[k], np.zeros(size - len(self._margins[k]), np.int64)])
        for other in range(len(self.sizes)):
            if other != k and (min(k, other), max(k, other)) in self._folds:
                self._open(min(k, other), max(k, other))

    def drop(self, k: int) -> None:
        """Stop counting node ``k`` (a column that will not be a node)."""
        self._dropped.add(k)
        for pair in [p for p in self._folds if k in p]:
            del self._folds[pair]

    def add(self, codes: np.ndarray, start: int) -> None:
        """Count a chunk's released states (``n x nodes``, each below its node's size), its first record being
        row ``start`` of the release."""
        parity = (np.arange(start, start + len(codes)) & 1).astype(np.intp)
        for k, size in enumerate(self.sizes):
            if k not in self._dropped:
                self._margins[k] += np.bincount(codes[:, k], minlength=size)
        for (a, b), folds in self._folds.items():
            flat = (parity * self.sizes[a] + codes[:, a]) * self.sizes[b] + codes[:, b]
            folds += np.bincount(flat, minlength=folds.size).reshape(folds.shape)

    def renumbered(self, keep: Sequence[int], states: Sequence[np.ndarray]) -> ReleasedCounts:
        """The counts of the nodes ``keep``, each node's codes mapped to the states ``states[i]`` gives them."""
        out = ReleasedCounts([int(s.max()) + 1 for s in states])
        for i, (k, s) in enumerate(zip(keep, states)):
            np.add.at(out._margins[i], s, self._margins[k])
        for (i, j), folds in out._folds.items():
            for fold, counted in zip(folds, self._folds[(keep[i], keep[j])]):
                np.add.at(fold, (states[i][:, None], states[j][None, :]), counted)
        return out

    def margin(self, k: int) -> np.ndarray:
        """Node ``k``'s count of each state."""
        return self._margins[k]

    def pair(self, a: int, b: int, fold: int | None = None) -> np.ndarray:
        """The two-way table of nodes ``a < b`` (as floats): of every record, or of the even (``fold=0``) or
        odd (``fold=1``) rows."""
        folds = self._folds[(a, b)]
        return (folds[0] + folds[1] if fold is None else folds[fold]).astype(float)



def _rule_nodes(rules: Rules, nodes: list[Node]) -> list[tuple[int, ...]]:
    """The node, or the two nodes, whose columns cover each rule (one line for a rule no two cover)."""
    out: list[tuple[int, ...]] = []
    for i, rule in enumerate(rules.rules, 1):
        cols = set(rule.values)
        unknown = sorted(c for c in cols if not any(c in n.columns for n in nodes))
        if unknown:
            raise ParameterError(f"rule {i} of {rules.source} names {unknown[0]!r}, which is neither perturbed nor "
                                 f"among the public columns ({', '.join(n.name for n in nodes)})")
        single = [a for a, n in enumerate(nodes) if cols <= set(n.columns)]
        if single:
            out.append((single[0],))
            continue
        pairs = [(a, b) for a, b in itertools.combinations(range(len(nodes)), 2)
                 if cols <= set(nodes[a].columns) | set(nodes[b].columns)]
        pairs.sort(key=lambda ab: -(nodes[ab[0]].perturbed + nodes[ab[1]].perturbed))
        if not pairs:
            raise ParameterError(f"rule {i} of {rules.source} ({rule.describe()}) couples columns of more than two "
                                 "variables; the tree model enforces rules on one or two: perturb them jointly in "
                                 "the design, or split the rule")
        out.append(pairs[0])
    return out


def _check_rule_values(rules: Rules, nodes: list[Node]) -> None:
    """Every value a rule lists is a category of its column (a public column may lack a value in this file)."""
    categories: dict[str, list[Label]] = {}
    for n in nodes:
        if n.variable is not None and n.variable.is_joint:  # its cells' values and its unpaired ones
            for c, levels in zip(n.columns, n.variable.joint_levels()):
                categories.setdefault(c, levels)
            continue
        cells = n.cells()
        for i, c in enumerate(n.columns):
            categories.setdefault(c, list(dict.fromkeys(cell[i] for cell in cells)))
    for rule in rules.rules:
        for c, values in rule.values.items():
            if c in categories and not any(n.perturbed and c in n.columns for n in nodes):
                categories[c] = [*categories[c], *sorted(values - {canonical(x) for x in categories[c]})]
    rules.check(categories)


def _forbidden(rules: Rules | None, nodes: Sequence[Node]) -> np.ndarray | None:
    """Which combinations of the nodes' categories (states *released as it is* excluded) a rule forbids,
    as a table over their states (``None``: no rule applies)."""
    if rules is None:
        return None
    columns = tuple(c for n in nodes for c in n.columns)
    if not any(set(r.values) <= set(columns) for r in rules.rules):
        return None
    cells = [tuple(v for part in combo for v in part) for combo in itertools.product(*(n.cells() for n in nodes))]
    flags = rules.forbidden(columns, cells).reshape([len(n.labels) for n in nodes])
    out = np.zeros([n.size for n in nodes], dtype=bool)
    out[tuple(slice(0, len(n.labels)) for n in nodes)] = flags
    return out if out.any() else None


def _pair_table(nodes: list[Node], a: int, b: int, counts: ReleasedCounts, zeros: np.ndarray | None) -> np.ndarray:
    """The estimated original two-way table of nodes a and b (proportions).

    The maximum-likelihood table (EM, :func:`pramkit.estimate.mle_estimate`) shrunk towards the
    independence of its margins by the weight that predicts best the released records it was not
    fitted to (two-fold cross-validation: fitted to the even rows, scored on the odd ones, and
    back).  Undoing strong perturbation amplifies the noise, and the unshrunk maximum puts spikes
    where the released table has none: its mutual information is far above the original's.
    """
    na, nb = nodes[a], nodes[b]
    if na.size * nb.size > MAX_PAIR_CELLS:
        raise ParameterError(f"the two-way table of {na.name} and {nb.name} has {na.size * nb.size:,} cells, more "
                             f"than {MAX_PAIR_CELLS:,}; leave a many-valued public column out")
    u = counts.pair(a, b)
    if not (na.perturbed or nb.perturbed):
        return u / u.sum()
    # a state *released as it is* that no record holds is left out: its estimate is 0, a boundary EM nears slowly
    keep = [np.arange(n.size - (1 if not (u.sum(axis=1 - i)[-1]) else 0)) for i, n in enumerate((na, nb))]
    sub = np.ix_(*keep)
    mats = [None if n.matrix is None else PramMatrix(n.evidence[np.ix_(k, k)]) for n, k in zip((na, nb), keep)]
    z = None if zeros is None or not zeros[sub].any() else zeros[sub]
    arrays = [None if m is None else m.matrix for m in mats]
    fitted = _fit(u[sub], mats, z)
    weights = np.linspace(0.0, 1.0, 21)
    score = np.zeros(weights.size)
    for fit_fold, test_fold in ((0, 1), (1, 0)):
        train, test = counts.pair(a, b, fit_fold)[sub], counts.pair(a, b, test_fold)[sub]
        if train.sum() == 0 or test.sum() == 0:
            continue
        p = _fit(train, mats, z)
        q = _independent(p, z)
        for i, w in enumerate(weights):
            lam = np.maximum(contract(w * p + (1.0 - w) * q, arrays), 0.0)
            with np.errstate(divide="ignore"):
                score[i] += float(xlogy(test, lam).sum())  # -inf when a released record is impossible
    w = float(weights[int(np.argmax(score))])  # ties: the strongest shrinkage
    out = np.zeros(u.shape)
    out[sub] = w * fitted + (1.0 - w) * _independent(fitted, z)
    return out / out.sum()


def _fit(u: np.ndarray, mats: list[PramMatrix | None], zeros: np.ndarray | None) -> np.ndarray:
    """The maximum-likelihood table (proportions), with structural zeros where no record breaks them."""
    from pramkit.estimate import EstimationWarning, mle_estimate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EstimationWarning)  # a singular matrix: one maximiser among many is enough
        try:
            p = mle_estimate(u, mats, zeros=zeros, tol=TOL, max_iter=MAX_ITER, newton=False).counts
        except DataError:  # records whose released values break the rule whatever they were (kept as released)
            assert zeros is not None
            p = np.where(zeros, 0.0, mle_estimate(u, mats, tol=TOL, max_iter=MAX_ITER, newton=False).counts)
    return p / p.sum()


def _independent(p: np.ndarray, zeros: np.ndarray | None) -> np.ndarray:
    """The product of the table's margins, zero on the structural zeros (renormalised)."""
    q = np.outer(p.sum(axis=1), p.sum(axis=0))
    if zeros is not None:
        q = np.where(zeros, 0.0, q)
    total = q.sum()
    return q / total if total > 0 else p


def _mutual_information(p: np.ndarray) -> float:
    """I of a two-way table in nats; 0 where the sum is within its own rounding of 0 (a table that is the
    product of its margins sums terms that cancel to a few units of 1e-16, not to 0)."""
    from pramkit.privacy.exact import rounding_bound

    rows, cols = p.sum(axis=1, keepdims=True), p.sum(axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / (rows * cols)), 0.0)
    value = float(terms.sum())
    # each log carries an absolute error of a few ulps, weighted by p: the sum's error is of the order sum(p)
    return 0.0 if value <= float(rounding_bound(float(p.sum() + np.abs(terms).sum()), terms.size)) else value


def _smoothed(p: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """``p`` with :data:`SMOOTHING` of its mass spread over the allowed cells (zero elsewhere)."""
    spread = allowed / max(int(allowed.sum()), 1)
    return np.where(allowed, (1.0 - SMOOTHING) * p + SMOOTHING * spread, 0.0)


@_one_blas_thread
def fit_tree(nodes: list[Node], codes: np.ndarray | ReleasedCounts, rules: Rules | None = None) -> TreeModel:
    """Fit the tree model to the released states (module docstring, steps 2 and 3).

    Parameters
    ----------
    nodes : list of Node
        The first is the root.
    codes : numpy.ndarray or ReleasedCounts
        Every record's released state of each node (``n x nodes``), or their counts (a file's, counted
        chunk by chunk).
    rules : Rules, optional
        Edit rules: zeros of a node's or an edge's potential; an edge is forced for each rule tying a
        perturbed node to another.

    Returns
    -------
    TreeModel

    Raises
    ------
    ParameterError
        A rule names an unknown column or value, couples more than two nodes, or the rules tie
        nodes in a cycle.

    Examples
    --------
    Two public columns that always agree: the tree links them and the conditional is the identity.

    >>> a = Node("a", ("a",), ["x", "y"], None)
    >>> b = Node("b", ("b",), ["x", "y"], None)
    >>> model = fit_tree([a, b], np.array([[0, 0], [1, 1], [1, 1]]))
    >>> [(e.parent, e.child) for e in model.edges], model.conditional[1][:2, :2].round(6).tolist()
    ([('a', 'b')], [[1.0, 0.0], [0.0, 1.0]])
    """
    counts = codes if isinstance(codes, ReleasedCounts) else ReleasedCounts.of(codes, [n.size for n in nodes])
    tied = _rule_nodes(rules, nodes) if rules is not None else []
    if rules is not None:
        _check_rule_values(rules, nodes)
    allowed = _allowed_states(nodes, rules, tied)
    forced = _forced_edges(nodes, rules, tied)
    tables, scores = _pair_tables(nodes, counts, allowed, forced)
    chosen = _spanning_tree(nodes, forced, scores)
    order, parent, conditional, edges = _oriented(nodes, chosen, tables, scores, allowed, forced)
    root = _root_law(nodes[0], counts.margin(0), allowed[0])
    return TreeModel(nodes, order, parent, root, conditional, allowed, edges)


def _allowed_states(nodes: list[Node], rules: Rules | None, tied: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """Each node's states that no rule on it alone forbids.

    Parameters
    ----------
    nodes : list of Node
        The nodes.
    rules : Rules, optional
        The edit rules.
    tied : sequence of tuple of int
        The node, or the two nodes, of each rule (:func:`_rule_nodes`).

    Returns
    -------
    list of numpy.ndarray
        Per node, a bool per state.
    """
    allowed = []
    for k, n in enumerate(nodes):
        own = Rules(tuple(r for r, t in zip(rules.rules, tied) if t == (k,)), rules.source) if rules else None
        flags = _forbidden(own if own and own.rules else None, [n])
        allowed.append(np.ones(n.size, dtype=bool) if flags is None else ~flags)
    return allowed


def _forced_edges(nodes: list[Node], rules: Rules | None,
                  tied: Sequence[tuple[int, ...]]) -> dict[tuple[int, int], Rules]:
    """The edges the rules force, each with its rules: a rule tying two nodes, one of them perturbed.

    Parameters
    ----------
    nodes : list of Node
        The nodes.
    rules : Rules, optional
        The edit rules.
    tied : sequence of tuple of int
        The node, or the two nodes, of each rule (:func:`_rule_nodes`).

    Returns
    -------
    dict
        ``{(a, b): rules}``, ``a < b``, in the order the rules first name them.
    """
    forced: dict[tuple[int, int], Rules] = {}
    for r, t in zip(rules.rules if rules else (), tied):
        if len(t) == 2 and (nodes[t[0]].perturbed or nodes[t[1]].perturbed):
            prev = forced.get(t)
            forced[t] = Rules(((prev.rules if prev else ()) + (r,)), rules.source if rules else "rules")
    return forced


def _pair_tables(nodes: list[Node], counts: ReleasedCounts, allowed: Sequence[np.ndarray],
                 forced: Mapping[tuple[int, int], Rules]
                 ) -> tuple[dict[tuple[int, int], np.ndarray], list[tuple[float, int, int]]]:
    """The estimated two-way table of every pair of nodes (:func:`_pair_table`, zero where a rule forbids)
    and its mutual information.

    Parameters
    ----------
    nodes : list of Node
        The nodes.
    counts : ReleasedCounts
        The released states' counts.
    allowed : sequence of numpy.ndarray
        Each node's allowed states (:func:`_allowed_states`).
    forced : mapping
        The rules of each forced edge (:func:`_forced_edges`).

    Returns
    -------
    tables : dict
        ``{(a, b): table}`` for ``a < b``.
    scores : list of tuple
        ``(mutual information, a, b)`` of each pair, in the order of the pairs.
    """
    tables: dict[tuple[int, int], np.ndarray] = {}
    scores = []
    for a, b in itertools.combinations(range(len(nodes)), 2):
        zeros = _forbidden(forced.get((a, b)), [nodes[a], nodes[b]])
        unary = ~np.logical_and.outer(allowed[a], allowed[b])
        if unary.any():
            zeros = unary if zeros is None else zeros | unary
        p = _pair_table(nodes, a, b, counts, zeros)
        tables[(a, b)] = p
        scores.append((_mutual_information(p), a, b))
    return tables, scores


def _spanning_tree(nodes: list[Node], forced: Mapping[tuple[int, int], Rules],
                   scores: Sequence[tuple[float, int, int]]) -> list[tuple[int, int, bool]]:
    """The tree's edges by Kruskal's algorithm: the rules' edges first, then by decreasing mutual information
    (ties: the nodes' order).

    Parameters
    ----------
    nodes : list of Node
        The nodes.
    forced : mapping
        The rules of each forced edge (:func:`_forced_edges`).
    scores : sequence of tuple
        ``(mutual information, a, b)`` of each pair (:func:`_pair_tables`).

    Returns
    -------
    list of tuple
        ``(a, b, forced)`` of each edge chosen, in the order chosen.

    Raises
    ------
    ParameterError
        The rules' edges close a cycle.
    """
    component = list(range(len(nodes)))

    def find(i: int) -> int:
        while component[i] != i:
            component[i] = component[component[i]]
            i = component[i]
        return i

    chosen: list[tuple[int, int, bool]] = []
    for a, b in sorted(forced):
        ra, rb = find(a), find(b)
        if ra == rb:
            cycle = _path([(x, y) for x, y, _ in chosen], a, b)
            raise ParameterError(f"the rules tie {', '.join(nodes[x].name for x in cycle)} in a cycle (a rule on "
                                 "each pair of neighbours, the last and the first too); the tree model enforces "
                                 "rules along a tree: drop or merge a rule, or perturb the variables of a cycle "
                                 "jointly in the design")
        component[ra] = rb
        chosen.append((a, b, True))
    for _mi, a, b in sorted(scores, key=lambda s: (-s[0], s[1], s[2])):
        ra, rb = find(a), find(b)
        if ra != rb:
            component[ra] = rb
            chosen.append((a, b, False))
    return chosen


def _path(edges: Sequence[tuple[int, int]], a: int, b: int) -> list[int]:
    """The nodes from ``a`` to ``b`` along a forest's edges (``a`` and ``b`` in one tree of it).

    Examples
    --------
    >>> _path([(0, 1), (1, 2), (2, 3), (1, 4)], 4, 3)
    [4, 1, 2, 3]
    """
    linked: dict[int, list[int]] = {}
    for x, y in edges:
        linked.setdefault(x, []).append(y)
        linked.setdefault(y, []).append(x)
    came = {a: a}
    queue = [a]
    for node in queue:
        for nxt in linked.get(node, []):
            if nxt not in came:
                came[nxt] = node
                queue.append(nxt)
    path = [b]
    while path[-1] != a:
        path.append(came[path[-1]])
    return path[::-1]


def _oriented(nodes: list[Node], chosen: Sequence[tuple[int, int, bool]],
              tables: Mapping[tuple[int, int], np.ndarray], scores: Sequence[tuple[float, int, int]],
              allowed: Sequence[np.ndarray], forced: Mapping[tuple[int, int], Rules]
              ) -> tuple[list[int], list[int], dict[int, np.ndarray], list[Edge]]:
    """The tree hung from the root (node 0), breadth first, with each child's law given its parent.

    Parameters
    ----------
    nodes : list of Node
        The nodes.
    chosen : sequence of tuple
        The tree's edges ``(a, b, forced)`` (:func:`_spanning_tree`).
    tables : mapping
        The estimated two-way tables (:func:`_pair_tables`).
    scores : sequence of tuple
        ``(mutual information, a, b)`` of each pair.
    allowed : sequence of numpy.ndarray
        Each node's allowed states.
    forced : mapping
        The rules of each forced edge.

    Returns
    -------
    order : list of int
        The nodes from the root, each after its parent.
    parent : list of int
        Each node's parent (``-1`` for the root).
    conditional : dict
        ``conditional[c][x_parent, x_c]``: the child's law given its parent (smoothed, zero where forbidden).
    edges : list of Edge
        The edges, in the order of ``order``.
    """
    d = len(nodes)
    neighbours: dict[int, list[tuple[int, bool]]] = {k: [] for k in range(d)}
    for a, b, f in chosen:
        neighbours[a].append((b, f))
        neighbours[b].append((a, f))
    order, parent, edges = [0], [-1] * d, []
    conditional: dict[int, np.ndarray] = {}
    mi = {(a, b): s for s, a, b in scores}
    for up in order:  # breadth first from the root; the list grows as it is read
        for c, f in sorted(neighbours[up]):
            if c == 0 or parent[c] != -1:
                continue
            parent[c] = up
            order.append(c)
            pair = (min(up, c), max(up, c))
            table = tables[pair] if up < c else tables[pair].T
            ok = np.logical_and.outer(allowed[up], allowed[c])
            zeros = _forbidden(forced.get(pair), [nodes[pair[0]], nodes[pair[1]]])
            if zeros is not None:
                ok &= ~(zeros if up < c else zeros.T)
            joint = _smoothed(table, ok)
            rows = joint.sum(axis=1, keepdims=True)
            conditional[c] = np.divide(joint, rows, out=np.zeros_like(joint), where=rows > 0)
            edges.append(Edge(nodes[up].name, nodes[c].name, mi[pair], f))
    return order, parent, conditional, edges


def _root_law(node: Node, u: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """The root's estimated law (maximum likelihood, its forbidden states empty) from its released counts ``u``,
    smoothed."""
    from pramkit.estimate import EstimationWarning, mle_estimate

    if node.perturbed:
        k = node.size if u[-1] else node.size - 1  # an empty state *released as it is* left out
        mats = [PramMatrix(node.evidence[:k, :k])]
        p = np.zeros(node.size)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EstimationWarning)
            zeros = None if allowed[:k].all() else ~allowed[:k]
            try:
                p[:k] = mle_estimate(u[:k], mats, zeros=zeros, tol=TOL, max_iter=MAX_ITER, newton=False).counts
            except DataError:
                fit = mle_estimate(u[:k], mats, tol=TOL, max_iter=MAX_ITER, newton=False)
                p[:k] = np.where(allowed[:k], fit.counts, 0.0)
    else:
        p = np.where(allowed, u, 0.0)
    p = p / max(p.sum(), np.finfo(float).tiny)
    return _smoothed(p, allowed)


# ---------------------------------------------------------------------------------------------- drawing


def _patterns(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Number the distinct rows of the columns ``keys`` (each ``n`` codes): each record's pattern, and
    one record of each pattern."""
    inverse = np.zeros(len(keys[0]), dtype=np.int64)
    for k in keys:
        _, inverse = np.unique(inverse * (int(k.max()) + 1) + k, return_inverse=True)
    _, first = np.unique(inverse, return_index=True)
    return inverse.reshape(-1), first


def _draw(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One state per row of ``probs`` (unnormalised, non-negative) by the inverse of its distribution
    function at ``u``; ``-1`` for a row without mass."""
    cdf = np.cumsum(probs, axis=1)
    total = cdf[:, -1]
    x = np.count_nonzero(cdf <= (u * total)[:, None], axis=1)
    last = probs.shape[1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=1)   # rounding: never past the last state with mass
    x = np.minimum(x, last)
    return np.where(total > 0, x, -1)


@_one_blas_thread
def sample_posterior(model: TreeModel, codes: np.ndarray, key: SecretKey, *, start: int = 0) -> tuple[np.ndarray, int]:
    """Draw every record's original states from its posterior under ``model`` given its released states.

    Belief propagation on the tree (module docstring, step 4): the messages towards the root are
    computed once per distinct pattern of released states below each node; the nodes are then drawn
    from the root down, each given its parent's draw, at the uniform of its row in its stream.

    Parameters
    ----------
    model : TreeModel
    codes : numpy.ndarray
        Released states (``n x nodes``).
    key : SecretKey
        The key of the draws (:func:`resample_key`); row ``i`` of node ``v`` uses uniform ``i`` of the
        stream named after the node.
    start : int
        The row of the first record in the release (a chunk's), so that a file drawn chunk by chunk is
        drawn as it would be at once.

    Returns
    -------
    draws : numpy.ndarray
        ``n x nodes`` states (public columns: their released state); a record whose released states no
        allowed combination explains keeps its released states.
    impossible : int
        The number of such records.

    Examples
    --------
    One perturbed node under randomized response at 3/4 and a model with P(x) = (0.5, 0.5): a record
    released as 0 is 0 with posterior 3/4.

    >>> node = Node("a", ("a",), [0, 1], np.array([[0.75, 0.25], [0.25, 0.75]]))
    >>> model = TreeModel([node], [0], [-1], np.array([0.5, 0.5, 0.0]), {}, [np.ones(3, bool)], [])
    >>> draws, impossible = sample_posterior(model, np.zeros((20_000, 1), dtype=np.intp), SecretKey(bytes(32), "z"))
    >>> round(float((draws[:, 0] == 0).mean()), 2), impossible
    (0.75, 0)
    """
    n, d = codes.shape
    children: dict[int, list[int]] = {k: [] for k in range(d)}
    for c in model.order[1:]:
        children[model.parent[c]].append(c)
    evidence = [node.evidence * allowed[:, None] for node, allowed in zip(model.nodes, model.allowed)]
    chunk = max(1, CHUNK_FLOATS // max(node.size for node in model.nodes))
    draws = np.empty_like(codes)
    impossible = 0
    for offset in range(0, n, chunk):
        z = codes[offset:offset + chunk]
        m = len(z)
        belief: dict[int, np.ndarray] = {}
        pattern: dict[int, np.ndarray] = {}
        message: dict[int, np.ndarray] = {}
        for c in reversed(model.order):  # upwards: children before their parent
            kids = children[c]
            inverse, first = _patterns([z[:, c], *(pattern[k] for k in kids)])
            b = evidence[c][:, z[first, c]].T.copy()
            for k in kids:
                b *= message[k][pattern[k][first]]
            _rescale(b)
            belief[c], pattern[c] = b, inverse
            if model.parent[c] >= 0:
                message[c] = b @ model.conditional[c].T
                _rescale(message[c])
        x = np.empty((m, d), dtype=np.intp)
        dead = np.zeros(m, dtype=bool)
        for c in model.order:  # downwards: each node given its parent's draw
            if model.parent[c] < 0:
                probs = belief[c][pattern[c]] * model.prior[None, :]
            else:
                probs = model.conditional[c][np.maximum(x[:, model.parent[c]], 0)] * belief[c][pattern[c]]
            if model.nodes[c].perturbed:
                u = uniforms(key, model.nodes[c].name, start + offset, m)
                x[:, c] = _draw(probs, u)
            else:  # a public column: its released value, the only state its evidence allows
                x[:, c] = np.where(probs[np.arange(m), z[:, c]] > 0, z[:, c], -1)
            dead |= x[:, c] < 0
        x[dead] = z[dead]
        impossible += int(dead.sum())
        draws[offset:offset + m] = x
    return draws, impossible


def _rescale(a: np.ndarray) -> None:
    """Divide each row by its largest entry (in place): messages only matter up to a factor, and
    the products of many small likelihoods would underflow."""
    top = a.max(axis=1, keepdims=True)
    np.divide(a, top, out=a, where=top > 0)


# ---------------------------------------------------------------------------------------------- writing


@dataclass
class _Tally:
    """What the second pass counts, chunk by chunk: the records, those no allowed combination explains,
    the rule breakers before and after, and each perturbed variable's summary."""

    rows: int = 0
    impossible: int = 0
    broken_before: int = 0
    broken_after: int = 0
    variables: dict[str, NodeSummary] = field(default_factory=dict)

    def add(self, rows: int, impossible: int, broken: tuple[int, int], summaries: list[NodeSummary]) -> None:
        self.rows += rows
        self.impossible += impossible
        self.broken_before += broken[0]
        self.broken_after += broken[1]
        for s in summaries:
            seen = self.variables.get(s.name, NodeSummary(s.name, 0, 0, 0))
            self.variables[s.name] = NodeSummary(s.name, seen.rows + s.rows, seen.changed + s.changed,
                                                 seen.kept_as_released + s.kept_as_released)


def _resampled(release: _Release, model: TreeModel, key: SecretKey, rules: Rules | None,
               tally: _Tally) -> Iterator[pa.Table]:
    """The second pass: each chunk with its records' perturbed values drawn from their posterior (what it
    changed counted in ``tally``)."""
    missing = release.meta.missing
    for start, table in release.chunks():
        codes = _codes(table, model.nodes, missing, start)
        draws, impossible = sample_posterior(model, codes, key, start=start)
        new, summaries = _decode(table, model.nodes, codes, draws, missing)
        tally.add(table.num_rows, impossible, _rule_breakers(rules, table, new, model.nodes, missing), summaries)
        yield new



def _decode(table: pa.Table, nodes: list[Node], codes: np.ndarray, draws: np.ndarray,
            missing: MissingCodes) -> tuple[pa.Table, list[NodeSummary]]:
    """The release with each perturbed variable's columns replaced by the draws (a state *released as
    it is* keeps its values), and what changed."""
    out = table
    summaries = []
    for j, node in enumerate(nodes):
        v = node.variable
        if v is None:
            continue
        s = len(node.labels)
        kept = codes[:, j] == s
        new = np.where(kept, MISSING, draws[:, j])
        raw = [table.column(c).combine_chunks() for c in v.read_columns]
        book = node.decoder
        if isinstance(book, JointCodebook):
            arrays = book.decode(new, like=[a.type for a in raw])
        else:
            arrays = [book.decode(new, like=raw[0].type)]
        flags = pa.array(kept)
        for column, original, drawn in list(zip(v.read_columns, raw, arrays))[len(v.given):]:
            out = out.set_column(out.column_names.index(column), column, pc.if_else(flags, original, drawn))
        summaries.append(NodeSummary(v.name, len(codes), int(np.count_nonzero((draws[:, j] != codes[:, j]) & ~kept)),
                                     int(kept.sum())))
    return out, summaries


def _rule_breakers(rules: Rules | None, before: pa.Table, after: pa.Table, nodes: list[Node],
                   missing: MissingCodes) -> tuple[int, int]:
    """Records that break a rule in the release and in the resampled file."""
    if rules is None:
        return 0, 0
    columns = [c for c in rules.columns if c in before.column_names]

    def count(t: pa.Table) -> int:
        frame = pd.DataFrame({c: _blanked(t, c, missing)[0].to_pandas() for c in columns})
        return int(rules.breaking(frame, columns).sum())

    return count(before), count(after)


def _to_frame(original: pd.DataFrame, table: pa.Table, nodes: list[Node]) -> pd.DataFrame:
    """The resampled columns put back into a copy of the released frame, in their dtypes."""
    from pramkit.engine.perturb import _as_column

    out = original.copy()
    for node in nodes:
        v = node.variable
        if v is None:
            continue
        for i, column in enumerate(v.read_columns):
            if i < len(v.given):
                continue
            book = Codebook(node.labels, column=column, missing=v.missing) if not v.is_joint else \
                JointCodebook([joint_cell(c) for c in node.labels], v.read_columns).books[i]
            out[column] = _as_column(table.column(column), original[column], book)
    return out


def _write(src: Path, man: Manifest, manifest: Any, dst: Path, tables: Iterable[pa.Table], meta: _Meta, force: bool,
           inputs: list[Any], post: Mapping[str, Any]) -> str:
    """Write the resampled file chunk by chunk and its receipt (which names the release and its manifest)."""
    from pramkit.engine.receipt import receipt_after, receipt_path
    from pramkit.io import TableWriter, sha256_of

    post = {**post, "release_sha256": sha256_of(src)}
    # exits in reverse order: the resampled file is renamed into place first, then its receipt
    with receipt_after(dst, manifest if not isinstance(manifest, Manifest) else man, inputs=inputs) as pending, \
            TableWriter(dst, force=force, meta=meta.file, inputs=inputs) as writer:
        for table in tables:
            writer.write(table)
        writer.close()
        assert pending is not None
        pending.fill(rows=writer.rows, digest=writer.sha256, post_processing=post)
    return str(receipt_path(dst))
