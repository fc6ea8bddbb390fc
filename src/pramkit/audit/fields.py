"""Every field of every public file pramkit writes, declared once with how the audit checks it.

A public file is a JSON object: the manifest of a PRAM release (plain, joint, stratified, derived, or a
random swap's), the receipt beside a released file (with the shuffled guarantees of ``apply --shuffle``,
or the ``post_processing`` of ``pramkit resample``) and the manifest of ``pramkit synthesize``.  Each of
its fields is named here by a path pattern (``variables[*].q``: ``[*]`` any item of a list, ``*`` any
key of an object) with one of three kinds:

* ``recomputed`` -- recomputed from the public files (the manifest, the receipt, the released file) and
  compared;
* ``rederived`` -- derived again from the original and the key (``--original``, ``--key-file``): the
  release made again, a noisy table drawn again from the original's exact table and the key's noise;
* ``free_text`` -- documentation (when the file was written, by which version, how long a step took):
  no reader draws a claim from it, and the audit ignores it.

The audit walks the published JSON: a field that no pattern declares fails, and each declared field is
checked by the check its declaration names (:mod:`pramkit.audit.declared`).  A release method owns its
declarations (:data:`FILES` maps a kind of public file to them); :func:`field_table` renders them as
the table of docs/audit.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: How a field is checked.
KINDS = ("recomputed", "rederived", "free_text")


@dataclass(frozen=True)
class PublicField:
    """One field of a public file and how the audit checks it.

    Parameters
    ----------
    path : str
        A path pattern: keys joined by ``.``, ``[*]`` for every item of a list, ``*`` for every key
        of an object (``ledger.dp_counts.*.noisy``).  A pattern covers the whole value at its path.
    kind : str
        ``"recomputed"``, ``"rederived"`` or ``"free_text"`` (:data:`KINDS`).
    check : str
        The name of the check (:data:`pramkit.audit.declared.CHECKS`); ``"ignored"`` for free text.
    doc : str
        What the field is and how it is checked, in words.

    Examples
    --------
    >>> f = PublicField("variables[*].epsilon", "recomputed", "regenerated", "the variable's epsilon")
    >>> f.parts
    ('variables', '[*]', 'epsilon')
    >>> f.matches(("variables", 2, "epsilon")), f.matches(("variables", 2, "q"))
    (True, False)
    """

    path: str
    kind: str
    check: str
    doc: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"field {self.path!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if (self.kind == "free_text") != (self.check == "ignored"):
            raise ValueError(f"field {self.path!r}: free text, and only free text, is ignored")

    @property
    def parts(self) -> tuple[str, ...]:
        """The pattern as segments: keys, ``"[*]"`` and ``"*"``."""
        return split_path(self.path)

    def matches(self, concrete: Sequence[str | int]) -> bool:
        """Whether a concrete path (keys and list indices) is this field's."""
        return _covers(self.parts, concrete)


_SEGMENT = re.compile(r"\[\*\]|\[\d+\]|[^.\[\]]+")


def split_path(path: str) -> tuple[str, ...]:
    """A path pattern as segments.

    Examples
    --------
    >>> split_path("variables[*].blocks[*].q"), split_path("ledger.dp_counts.*.noisy")
    (('variables', '[*]', 'blocks', '[*]', 'q'), ('ledger', 'dp_counts', '*', 'noisy'))
    """
    return tuple(_SEGMENT.findall(path))


def path_text(concrete: Sequence[str | int]) -> str:
    """A concrete path as text, as the audit names a field.

    Examples
    --------
    >>> path_text(("variables", 0, "q")), path_text(("ledger", "dp_counts", "age", "noisy"))
    ('variables[0].q', 'ledger.dp_counts.age.noisy')
    """
    out = ""
    for c in concrete:
        out += f"[{c}]" if isinstance(c, int) else (f".{c}" if out else str(c))
    return out


def walk(raw: Any, fields: Sequence[PublicField]
         ) -> tuple[list[tuple[PublicField, tuple[str | int, ...], Any]], list[str]]:
    """Every declared field of a JSON document with its concrete path and value, and every undeclared
    path: a value whose path no pattern covers (a leaf, an empty object or list, or an object or list
    holding neither declared nor walkable items) is undeclared.

    Examples
    --------
    >>> fields = [PublicField("a", "recomputed", "x", ""), PublicField("b[*].c", "recomputed", "x", "")]
    >>> found, undeclared = walk({"a": 1, "b": [{"c": 2, "d": 3}], "e": {}}, fields)
    >>> [(f.path, path_text(p), v) for f, p, v in found], undeclared
    ([('a', 'a', 1), ('b[*].c', 'b[0].c', 2)], ['b[0].d', 'e'])
    """
    found: list[tuple[PublicField, tuple[str | int, ...], Any]] = []
    undeclared: list[str] = []

    def visit(value: Any, at: tuple[str | int, ...]) -> None:
        field = next((f for f in fields if f.matches(at)), None)
        if field is not None and not (isinstance(value, Mapping) and value and _under(fields, at)):
            found.append((field, at, value))
            return
        if isinstance(value, Mapping) and value:
            for k, v in value.items():
                visit(v, (*at, str(k)))
        elif isinstance(value, list) and value and _open(fields, at):
            for i, v in enumerate(value):
                visit(v, (*at, i))
        elif not (isinstance(value, (Mapping, list)) and not value and _under(fields, at)):  # empty, declared inside
            undeclared.append(path_text(at))

    if isinstance(raw, Mapping):
        for k, v in raw.items():
            visit(v, (str(k),))
    return found, undeclared


def _open(fields: Sequence[PublicField], at: tuple[str | int, ...]) -> bool:
    """Whether some pattern reaches into the items of the list at ``at``."""
    n = len(at)
    return any(len(f.parts) > n and f.parts[n] == "[*]" and _covers(f.parts[:n], at) for f in fields)


def _under(fields: Sequence[PublicField], at: tuple[str | int, ...]) -> bool:
    """Whether some pattern declares fields inside the value at ``at``."""
    return any(len(f.parts) > len(at) and _covers(f.parts[:len(at)], at) for f in fields)


def _covers(parts: Sequence[str], at: Sequence[str | int]) -> bool:
    return len(parts) == len(at) and all(
        (p == "[*]" and isinstance(c, int)) or (p == "*" and isinstance(c, str)) or p == c for p, c in zip(parts, at))


def _fields(rows: Sequence[tuple[str, str, str, str]]) -> tuple[PublicField, ...]:
    return tuple(PublicField(*row) for row in rows)


_R, _D, _F = "recomputed", "rederived", "free_text"
_VERSION = (_F, "ignored", "the pramkit version that wrote the file")

# ----------------------------------------------------------------- a matrix, wherever it stands

#: The figures of an optimality certificate the audit recomputes (:mod:`pramkit.audit.certificates`).
_CERTIFICATE = (
    ("optimal", "the claim: true exactly when the audit proves the design optimal (where it can)"),
    ("upper_bound_nats", "an upper bound on the information: at least the objective"),
    ("upper_bound", "an upper bound on the objective"),
    ("lower_bound", "a lower bound on the objective"),
    ("information_lower_nats", "a lower bound on the information: at most the objective"),
    ("certified_gap_nats", "the gap: the upper bound less the lower"),
    ("certified_gap", "the gap: the upper bound less the lower"),
    ("objective_rounding_nats", "the rounding of the objective: part of the lower bound"),
    ("budget_adjustment", "the budget's adjustment: part of the lower bound"),
    ("tolerance_nats", "the tolerance of the claim: at least the gap"),
    ("tolerance", "the tolerance of the claim: at least the gap"),
    ("dual_y", "the dual values: the staircase bound recomputed from them"),
)

#: The fields of a matrix (a variable's, a block's, the first step's of a derived variable), by suffix.
_MATRIX = (
    ("categories", _D, "applied", "the categories, in the matrix's order: the release made again with the key "
                                  "from the original reproduces the variable's columns"),
    ("form", _D, "applied", "how the matrix is stored (diagonal, dense, blocks): as the categories"),
    ("q", _D, "applied", "the diagonal of a diagonal matrix: as the categories"),
    ("w", _D, "applied", "the off-diagonal entries of a diagonal matrix: as the categories"),
    ("matrix", _D, "applied", "the dense matrix: as the categories"),
    ("members", _D, "applied", "the categories of a block: as the categories"),
    ("design.method", _F, "ignored", "the name of the design family (what the matrix is is its entries)"),
    ("design.parameters.p", _R, "design p", "the frequencies the design read: the noisy counts of the ledger, "
                                            "floored at one and normalised"),
    ("design.parameters.*", _F, "ignored", "the design's other settings, as given (the matrix's epsilon and "
                                           "information are recomputed from its entries)"),
    ("design.objective", _R, "certificate", "the stated information: recomputed from p and the matrix"),
    ("design.objective_name", _F, "ignored", "what the objective measures"),
    *((f"design.certificate.{figure}", _R, "certificate", f"a figure of the optimality certificate: {doc}")
      for figure, doc in _CERTIFICATE),
    ("design.certificate.*", _F, "ignored", "the search's diagnostics (candidates, patterns, nodes, the proof's "
                                            "page): how the optimum was found, which the audit proves again"),
    ("design.certificate", _R, "certificate", "no certificate (null)"),
    ("design.seconds", _F, "ignored", "how long the design took"),
)


def _matrix_fields(prefix: str, doc_of: str, applied: str = "applied") -> list[tuple[str, str, str, str]]:
    """The fields of a matrix at ``prefix``; ``applied``: the check of its entries (``"parent"``: the first
    step of a derived variable is the parent manifest's matrix)."""
    out = []
    for suffix, kind, check, doc in _MATRIX:
        if kind != _F and applied != "applied":
            kind, check, doc = _R, applied, doc.split(":")[0] + ": the parent manifest's, beside this one"
        out.append((f"{prefix}.{suffix}", kind, check, f"{doc} ({doc_of})"))
    return out


# ----------------------------------------------------------------- the PRAM manifest

#: The description of a swap (the manifest's and the receipt's ``swapping``).
_SWAPPING = (
    ("swapping.guarantee", _R, "swap", "the swap's guarantee sentence, regenerated from the plan"),
    ("swapping.epsilon", _R, "swap", "the swap's epsilon: the manifest's, recomputed from its matrix"),
    ("swapping.epsilon_given_*", _R, "swap", "the swap's epsilon within the level above, recomputed"),
    ("swapping.areas", _R, "swap", "the areas of the lowest level: the manifest's categories of the variable"),
    *((f"swapping.{name}", _D, "swap plan", f"the swap's {doc}: the swap made again with the key from the "
                                            "original reproduces the released file")
      for name, doc in (("household_id", "household id column"), ("levels", "levels of the geography"),
                        ("rate", "rate"), ("k_anonymity", "k-anonymity threshold"),
                        ("risk_variables", "risk variables"), ("similar", "similarity profiles"),
                        ("donors", "donor rule"))),
    ("swapping.*", _R, "swap", "the swap's words (method, semantics, donor rule, variable): regenerated from "
                               "its plan"),
)

MANIFEST: tuple[PublicField, ...] = _fields([
    ("format", _R, "constant", "the file's kind: 'pramkit-manifest'"),
    ("version", _R, "constant", "the manifest's format version"),
    ("pramkit_version", *_VERSION),
    ("created", _F, "ignored", "when the manifest was written"),
    ("composition", _R, "regenerated", "how the epsilons compose, in words: regenerated"),
    ("record_epsilon", _R, "regenerated", "the record's epsilon: the design step plus every variable's, "
                                          "recomputed from the matrices"),
    ("perturbation_epsilon", _R, "regenerated", "the sum of the variables' epsilons, recomputed"),
    ("record_epsilon_given_structure", _R, "regenerated", "the record's epsilon given what is shown exactly, "
                                                          "recomputed"),
    ("input.method", _F, "ignored", "the design method asked for (the matrices are checked, not the request)"),
    ("input.split", _F, "ignored", "how the budget was split among the variables, as asked"),
    ("input.options", _F, "ignored", "the design family's options, as given"),
    ("input.record_epsilon_budget", _R, "same as ledger", "the budget: the ledger's"),
    ("input.design_epsilon", _R, "same as ledger", "the design step's epsilon: the ledger's"),
    ("input.frequencies", _R, "same as ledger", "what the design read: the ledger's"),
    ("input.prior", _R, "same as ledger", "the public prior's name: the ledger's"),
    ("input.na_values", _D, "applied file", "the texts read as missing: the release made again with the key, "
                                            "reading them, reproduces the released file"),
    ("input.missing", _D, "applied file", "how missing values were designed: as the matrices"),
    ("input.missing_codes", _R, "regenerated facts", "the missing codes of the original's format, named in the "
                                                     "facts the release shows exactly"),
    ("input.weights", _R, "regenerated facts", "the weight columns, named in the facts the release shows exactly"),
    ("input.sampling", _F, "ignored", "the sampling design as stated by the publisher (a sampled epsilon is "
                                      "recomputed from it and says whose statement it is)"),
    ("input.structure.strata", _R, "strata", "the stratum columns: the variables' given columns"),
    ("input.structure.household", _R, "household", "the household id column: the variables' unit"),
    ("input.structure.household_vars", _R, "household", "the household variables: those with a unit"),
    ("input.structure.rule_breaking", _D, "applied file", "what became of records that break a rule: the "
                                                          "release made again reproduces them"),
    ("input.structure.*", _D, "applied file", "the structure asked for (edit rules, kept codes): the matrices "
                                              "carry it, and the release made again reproduces the file"),
    ("input.derived_from", _R, "parent", "the manifest this one was derived from (its file name, beside it)"),
    ("input.tuned", _F, "ignored", "the tuning run's settings, as given (its data dependence is in the ledger)"),
    ("ledger.record_epsilon_budget", _R, "budget", "the budget: the record's epsilon is within it"),
    ("ledger.design_epsilon", _R, "design epsilon", "the design step's epsilon: at least the sum of its "
                                                    "DP histograms' epsilons"),
    ("ledger.perturbation_epsilon", _R, "regenerated", "the perturbation's epsilon, recomputed"),
    ("ledger.record_epsilon", _R, "regenerated", "the record's epsilon (given the structure), recomputed"),
    ("ledger.record_epsilon_is_given_structure", _R, "regenerated", "whether it is given the structure"),
    ("ledger.released_exactly", _R, "regenerated", "what the release shows exactly, in words, regenerated "
                                                   "from the matrices and the structure"),
    ("ledger.released_exactly_facts", _R, "regenerated", "the facts the release shows exactly, regenerated"),
    ("ledger.covers_everything_published", _R, "regenerated", "whether the epsilon covers every published "
                                                              "thing, recomputed"),
    ("ledger.statement", _R, "regenerated", "the guarantee sentence, regenerated from the facts"),
    ("ledger.sampled_epsilon", _R, "regenerated", "the sampled epsilon, recomputed from the stated design"),
    ("ledger.sampling", _R, "regenerated", "the sampling design the sampled epsilon assumes"),
    ("ledger.sampling_conditions", _R, "regenerated", "the conditions of the sampled epsilon"),
    ("ledger.frequencies", _R, "frequencies", "what the design read: DP counts exactly when the ledger "
                                              "lists them"),
    ("ledger.prior", _R, "prior", "the public prior's name: given exactly when the design read a prior"),
    ("ledger.categories.*", _R, "category source", "whether a variable's categories were declared or read "
                                                   "from the data: a data source is stated in data_dependent"),
    ("ledger.data_dependent", _R, "data dependent", "what the manifest shows that no epsilon covers: every "
                                                    "dependence the other fields imply is stated"),
    ("ledger.dp_counts.*.mechanism", _R, "constant", "the DP mechanism: 'geometric' (discrete Laplace)"),
    ("ledger.dp_counts.*.sensitivity", _R, "constant", "the L1 sensitivity of a histogram: 2"),
    ("ledger.dp_counts.*.epsilon", _R, "dp share", "a histogram's epsilon: its share of the design step's, "
                                                   "in proportion to its cells"),
    ("ledger.dp_counts.*.noisy", _D, "noisy counts", "a noisy histogram: drawn again from the original's "
                                                     "exact counts and the key's noise"),
    ("ledger.derived_from.manifest", _R, "parent", "the manifest derived from: the file beside this one"),
    ("ledger.derived_from.sha256", _R, "parent", "that manifest's SHA-256, recomputed"),
    ("ledger.derived_from.record_epsilon", _R, "parent", "that manifest's record epsilon"),
    ("variables[*].name", _R, "name", "the variable's name: its columns' (joined by '*')"),
    ("variables[*].columns", _D, "applied", "the columns the variable perturbs: the release made again "
                                            "reproduces them"),
    *_matrix_fields("variables[*]", "the variable's matrix"),
    ("variables[*].epsilon", _R, "regenerated", "the variable's epsilon, recomputed from its matrix"),
    ("variables[*].epsilon_given_block", _R, "regenerated", "its epsilon within a block, recomputed"),
    ("variables[*].realised_law", _R, "regenerated", "the law the engine realises (integer units): its "
                                                     "epsilons recomputed"),
    ("variables[*].missing", _D, "applied", "how the variable's missing values are released: as its columns"),
    ("variables[*].given", _D, "applied", "the stratum columns the variable is designed within"),
    ("variables[*].unit", _D, "applied", "the household id column: drawn once per household"),
    ("variables[*].kept_codes", _D, "applied", "the codes the variable never changes"),
    ("variables[*].unpaired", _D, "applied", "per column, the values the rules leave with no value to be "
     "released as (released as they are; the ledger's unpaired fact)"),
    ("variables[*].bistochastic", _R, "regenerated", "whether the columns sum to one, recomputed"),
    ("variables[*].min_diagonal", _R, "regenerated", "the smallest probability of keeping a value, recomputed"),
    ("variables[*].released_exactly", _R, "regenerated", "what the structure shows exactly, regenerated"),
    *_matrix_fields("variables[*].blocks[*]", "a block of a stratified matrix"),
    *_matrix_fields("variables[*].applied_to", "the first step of a derived variable", "parent"),
    *_SWAPPING,
])

# ----------------------------------------------------------------- the receipt beside a released file

_RECEIPT_COMMON = [
    ("format", _R, "constant", "the file's kind: 'pramkit-release-receipt'"),
    ("version", _R, "constant", "the receipt's format version"),
    ("pramkit_version", *_VERSION),
    ("released_file", _R, "released name", "the released file's name"),
    ("released_sha256", _R, "released digest", "the released file's SHA-256, recomputed"),
    ("rows", _R, "released rows", "the released file's rows, counted"),
    ("manifest_sha256", _R, "manifest digest", "the manifest's SHA-256, recomputed"),
    ("manifest_content_sha256", _R, "manifest digest", "the SHA-256 of the manifest's content (without when it "
                                                       "was written), recomputed"),
    ("release", _D, "applied file", "the release's label: the key's stream for this release; the release made "
                                    "again under it reproduces the file (a resampled file: its release's label)"),
]

RECEIPT: tuple[PublicField, ...] = _fields([
    *_RECEIPT_COMMON,
    ("input_release", _D, "input release", "the receipt of the file this release perturbed (a derived "
                                           "release): the original's receipt, read again"),
    *_SWAPPING,
    ("guarantees.*", _R, "shuffled guarantees", "the local, sampled and shuffled guarantees: recomputed from "
                                                "the manifest and the released file's records"),
])

RESAMPLE_RECEIPT: tuple[PublicField, ...] = _fields([
    *_RECEIPT_COMMON,
    ("input_release", _R, "input release", "the receipt chain of the release resampled"),
    ("post_processing.method", _R, "constant", "the post-processing: 'resample'"),
    ("post_processing.release", _R, "parent release", "the release resampled: the file beside this one"),
    ("post_processing.release_sha256", _R, "parent release", "that release's SHA-256, recomputed"),
    ("post_processing.record_epsilon", _R, "parent release", "the release's record epsilon, unchanged"),
    ("post_processing.guarantee", _R, "parent release", "the release's guarantee and the post-processing "
                                                        "sentence, regenerated"),
    ("post_processing.model", _F, "ignored", "the model fitted to the release, in words"),
    ("post_processing.public_columns", _F, "ignored", "the public columns the model read (the model is "
                                                      "post-processing whatever it reads)"),
])

# ----------------------------------------------------------------- the synthesis manifest

SYNTHESIS: tuple[PublicField, ...] = _fields([
    ("format", _R, "constant", "the file's kind: 'pramkit.synthesis'"),
    ("version", _R, "constant", "the synthesis manifest's format version"),
    ("pramkit_version", *_VERSION),
    ("variables.*.categories", _D, "synthesized again", "a variable's categories: the release made again"),
    ("variables.*.categories_source", _R, "category source", "declared or read from the data: a data source "
                                                             "is stated in data_dependent"),
    ("public.columns", _D, "synthesized again", "the public columns the model conditions on, in order: the "
                                                "release made again (each one released as it is)"),
    ("public.bins", _D, "synthesized again", "the bins of a numeric public column: the release made again"),
    ("public.cells", _R, "table shapes", "the public cells: the first axis of each table given them"),
    ("released_as_they_are", _R, "released columns", "the columns released as they are: the file's others"),
    ("rules.source", _F, "ignored", "where the edit rules were read from"),
    ("rules.*", _D, "synthesized again", "the edit rules: every released record keeps them; the release made "
                                         "again"),
    ("rules", _D, "synthesized again", "no edit rules (null)"),
    ("procedure.min_count", _R, "min count", "2: every released combination shown twice; counted in the file"),
    ("procedure.*", _D, "synthesized again", "the procedure's settings: the release made again"),
    ("na_values", _D, "synthesized again", "the texts read as missing: the release made again reads them"),
    ("measurements[*].mechanism", _R, "constant", "the DP mechanism: 'geometric' (discrete Laplace)"),
    ("measurements[*].sensitivity", _R, "constant", "the L1 sensitivity of a table: 2"),
    ("measurements[*].axes", _R, "tables", "the tables measured: each variable given the public cell, then "
                                           "each pair"),
    ("measurements[*].epsilon", _R, "table share", "a table's epsilon: its share of the budget, in proportion "
                                                   "to the square root of its cells"),
    ("measurements[*].noisy", _D, "synthesized again", "a noisy table: drawn again from the original's exact "
                                                       "table and the key's noise (its shape recomputed)"),
    ("ledger.record_epsilon_budget", _D, "synthesized again", "the budget asked for: the release made again"),
    ("ledger.design_epsilon", _R, "synthesis epsilon", "the tables' epsilons added up, rounded outward"),
    ("ledger.record_epsilon", _R, "synthesis epsilon", "the central epsilon: the design step's"),
    ("ledger.*", _R, "synthesis ledger", "the ledger's other figures and its sentence, regenerated from the "
                                         "tables and the facts"),
    ("rows", _R, "released rows", "the released file's rows, counted"),
    ("released.file", _R, "released name", "the released file's name"),
    ("released.sha256", _R, "released digest", "the released file's SHA-256, recomputed"),
    ("released.rows", _R, "released rows", "the released file's rows, counted"),
])

#: Each kind of public file and its declarations.
FILES: dict[str, tuple[PublicField, ...]] = {
    "manifest": MANIFEST,
    "receipt": RECEIPT,
    "resample receipt": RESAMPLE_RECEIPT,
    "synthesis manifest": SYNTHESIS,
}


def field_table() -> str:
    """The declarations as the Markdown table of docs/audit.md: one row per field of every public file.

    Examples
    --------
    >>> print("\\n".join(field_table().splitlines()[:3]))
    | File | Field | Checked | How |
    |---|---|---|---|
    | manifest | `format` | recomputed | the file's kind: 'pramkit-manifest' |
    """
    rows = ["| File | Field | Checked | How |", "|---|---|---|---|"]
    for name, fields in FILES.items():
        rows += [f"| {name} | `{f.path}` | {f.kind.replace('_', ' ')} | {f.doc} |" for f in fields]
    return "\n".join(rows)


def declared(kind: str) -> Iterator[PublicField]:
    """The declarations of one kind of public file (:data:`FILES`).

    Examples
    --------
    >>> sum(1 for f in declared("receipt") if f.kind == "free_text")
    1
    """
    yield from FILES[kind]
