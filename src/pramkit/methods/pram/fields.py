"""The fields PRAM publishes: the manifest of its matrices and ledger, and the receipt beside a released file.

The manifest (``pramkit design``) and the receipt (``pramkit apply``, with the shuffled guarantees of
``--shuffle``) are the public files of a PRAM release; a derived release and a random swap add their own
fields to them (:mod:`pramkit.methods.derived.fields`, :mod:`pramkit.methods.swap.fields`).  The fields of a
matrix (:func:`matrix_fields`) and the receipt's common fields (:data:`RECEIPT_COMMON`) are declared here
once and used by those methods too.
"""

from __future__ import annotations

from pramkit.methods.contract import PublicField, PublicFile, fields

#: The kinds of check, short.
R, D, F = "recomputed", "rederived", "free_text"
#: The pramkit version that wrote a file: free text.
VERSION = (F, "ignored", "the pramkit version that wrote the file")

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
    ("categories", D, "applied", "the categories, in the matrix's order: the release made again with the key "
                                  "from the original reproduces the variable's columns"),
    ("form", D, "applied", "how the matrix is stored (diagonal, dense, blocks): as the categories"),
    ("q", D, "applied", "the diagonal of a diagonal matrix: as the categories"),
    ("w", D, "applied", "the off-diagonal entries of a diagonal matrix: as the categories"),
    ("matrix", D, "applied", "the dense matrix: as the categories"),
    ("members", D, "applied", "the categories of a block: as the categories"),
    ("design.method", F, "ignored", "the name of the design family (what the matrix is is its entries)"),
    ("design.parameters.p", R, "design p", "the frequencies the design read: the noisy counts of the ledger, "
                                            "floored at one and normalised"),
    ("design.parameters.*", F, "ignored", "the design's other settings, as given (the matrix's epsilon and "
                                           "information are recomputed from its entries)"),
    ("design.objective", R, "certificate", "the stated information: recomputed from p and the matrix"),
    ("design.objective_name", F, "ignored", "what the objective measures"),
    *((f"design.certificate.{figure}", R, "certificate", f"a figure of the optimality certificate: {doc}")
      for figure, doc in _CERTIFICATE),
    ("design.certificate.*", F, "ignored", "the search's diagnostics (candidates, patterns, nodes, the proof's "
                                            "page): how the optimum was found, which the audit proves again"),
    ("design.certificate", R, "certificate", "no certificate (null)"),
    ("design.seconds", F, "ignored", "how long the design took"),
)


def matrix_fields(prefix: str, doc_of: str, applied: str = "applied") -> list[tuple[str, str, str, str]]:
    """The fields of a matrix at ``prefix``; ``applied``: the check of its entries (``"parent"``: the first
    step of a derived variable is the parent manifest's matrix)."""
    out = []
    for suffix, kind, check, doc in _MATRIX:
        if kind != F and applied != "applied":
            kind, check, doc = R, applied, doc.split(":")[0] + ": the parent manifest's, beside this one"
        out.append((f"{prefix}.{suffix}", kind, check, f"{doc} ({doc_of})"))
    return out



# ----------------------------------------------------------------- the PRAM manifest

#: The manifest's fields of a PRAM release.
MANIFEST: tuple[PublicField, ...] = fields([
    ("format", R, "constant", "the file's kind: 'pramkit-manifest'"),
    ("version", R, "constant", "the manifest's format version"),
    ("pramkit_version", *VERSION),
    ("created", F, "ignored", "when the manifest was written"),
    ("composition", R, "regenerated", "how the epsilons compose, in words: regenerated"),
    ("record_epsilon", R, "regenerated", "the record's epsilon: the design step plus every variable's, "
                                          "recomputed from the matrices"),
    ("perturbation_epsilon", R, "regenerated", "the sum of the variables' epsilons, recomputed"),
    ("record_epsilon_given_structure", R, "regenerated", "the record's epsilon given what is shown exactly, "
                                                          "recomputed"),
    ("input.method", F, "ignored", "the design method asked for (the matrices are checked, not the request)"),
    ("input.split", F, "ignored", "how the budget was split among the variables, as asked"),
    ("input.options", F, "ignored", "the design family's options, as given"),
    ("input.record_epsilon_budget", R, "same as ledger", "the budget: the ledger's"),
    ("input.design_epsilon", R, "same as ledger", "the design step's epsilon: the ledger's"),
    ("input.frequencies", R, "same as ledger", "what the design read: the ledger's"),
    ("input.prior", R, "same as ledger", "the public prior's name: the ledger's"),
    ("input.na_values", D, "applied file", "the texts read as missing: the release made again with the key, "
                                            "reading them, reproduces the released file"),
    ("input.missing", D, "applied file", "how missing values were designed: as the matrices"),
    ("input.missing_codes", R, "regenerated facts", "the missing codes of the original's format, named in the "
                                                     "facts the release shows exactly"),
    ("input.weights", R, "regenerated facts", "the weight columns, named in the facts the release shows exactly"),
    ("input.sampling", F, "ignored", "the sampling design as stated by the publisher (a sampled epsilon is "
                                      "recomputed from it and says whose statement it is)"),
    ("input.structure.strata", R, "strata", "the stratum columns: the variables' given columns"),
    ("input.structure.household", R, "household", "the household id column: the variables' unit"),
    ("input.structure.household_vars", R, "household", "the household variables: those with a unit"),
    ("input.structure.rule_breaking", D, "applied file", "what became of records that break a rule: the "
                                                          "release made again reproduces them"),
    ("input.structure.*", D, "applied file", "the structure asked for (edit rules, kept codes): the matrices "
                                              "carry it, and the release made again reproduces the file"),
    ("input.tuned", F, "ignored", "the tuning run's settings, as given (its data dependence is in the ledger)"),
    ("input.suppression.keys", R, "suppressed", "the keys of the local suppression the data went through "
                                                "(design --suppressed-by): as the guarantee sentence names them; "
                                                "k-anonymity recounted in the original and in the released file"),
    ("input.suppression.k", R, "suppressed", "its k: every combination of the keys in the original, and of the "
                                             "keys released as they are in the released file, counted at least k"),
    ("input.suppression.missing", R, "suppressed", "its rule for a missing value: the frequencies counted by it"),
    ("input.suppression.strata", R, "suppressed", "its stratum columns: k-anonymity counted within each"),
    ("ledger.record_epsilon_budget", R, "budget", "the budget: the record's epsilon is within it"),
    ("ledger.design_epsilon", R, "design epsilon", "the design step's epsilon: at least the sum of its "
                                                    "DP histograms' epsilons"),
    ("ledger.perturbation_epsilon", R, "regenerated", "the perturbation's epsilon, recomputed"),
    ("ledger.record_epsilon", R, "regenerated", "the record's epsilon (given the structure), recomputed"),
    ("ledger.record_epsilon_is_given_structure", R, "regenerated", "whether it is given the structure"),
    ("ledger.released_exactly", R, "regenerated", "what the release shows exactly, in words, regenerated "
                                                   "from the matrices and the structure"),
    ("ledger.released_exactly_facts", R, "regenerated", "the facts the release shows exactly, regenerated"),
    ("ledger.covers_everything_published", R, "regenerated", "whether the epsilon covers every published "
                                                              "thing, recomputed"),
    ("ledger.statement", R, "regenerated", "the guarantee sentence, regenerated from the facts"),
    ("ledger.sampled_epsilon", R, "regenerated", "the sampled epsilon, recomputed from the stated design"),
    ("ledger.sampling", R, "regenerated", "the sampling design the sampled epsilon assumes"),
    ("ledger.sampling_conditions", R, "regenerated", "the conditions of the sampled epsilon"),
    ("ledger.frequencies", R, "frequencies", "what the design read: DP counts exactly when the ledger "
                                              "lists them"),
    ("ledger.prior", R, "prior", "the public prior's name: given exactly when the design read a prior"),
    ("ledger.categories.*", R, "category source", "whether a variable's categories were declared or read "
                                                   "from the data: a data source is stated in data_dependent"),
    ("ledger.data_dependent", R, "data dependent", "what the manifest shows that no epsilon covers: every "
                                                    "dependence the other fields imply is stated"),
    ("ledger.dp_counts.*.mechanism", R, "constant", "the DP mechanism: 'geometric' (discrete Laplace)"),
    ("ledger.dp_counts.*.sensitivity", R, "constant", "the L1 sensitivity of a histogram: 2"),
    ("ledger.dp_counts.*.epsilon", R, "dp share", "a histogram's epsilon: its share of the design step's, "
                                                   "in proportion to its cells"),
    ("ledger.dp_counts.*.noisy", D, "noisy counts", "a noisy histogram: drawn again from the original's "
                                                     "exact counts and the key's noise"),
    ("variables[*].name", R, "name", "the variable's name: its columns' (joined by '*')"),
    ("variables[*].columns", D, "applied", "the columns the variable perturbs: the release made again "
                                            "reproduces them"),
    *matrix_fields("variables[*]", "the variable's matrix"),
    ("variables[*].epsilon", R, "regenerated", "the variable's epsilon, recomputed from its matrix"),
    ("variables[*].epsilon_given_block", R, "regenerated", "its epsilon within a block, recomputed"),
    ("variables[*].realised_law", R, "regenerated", "the law the engine realises (integer units): its "
                                                     "epsilons recomputed"),
    ("variables[*].missing", D, "applied", "how the variable's missing values are released: as its columns"),
    ("variables[*].given", D, "applied", "the stratum columns the variable is designed within"),
    ("variables[*].unit", D, "applied", "the household id column: drawn once per household"),
    ("variables[*].kept_codes", D, "applied", "the codes the variable never changes"),
    ("variables[*].unpaired", D, "applied", "per column, the values the rules leave with no value to be "
     "released as (released as they are; the ledger's unpaired fact)"),
    ("variables[*].bistochastic", R, "regenerated", "whether the columns sum to one, recomputed"),
    ("variables[*].min_diagonal", R, "regenerated", "the smallest probability of keeping a value, recomputed"),
    ("variables[*].released_exactly", R, "regenerated", "what the structure shows exactly, regenerated"),
    *matrix_fields("variables[*].blocks[*]", "a block of a stratified matrix"),
])


# ----------------------------------------------------------------- the receipt beside a released file

#: The fields of every receipt beside a released file.
RECEIPT_COMMON = (
    ("format", R, "constant", "the file's kind: 'pramkit-release-receipt'"),
    ("version", R, "constant", "the receipt's format version"),
    ("pramkit_version", *VERSION),
    ("released_file", R, "released name", "the released file's name"),
    ("released_sha256", R, "released digest", "the released file's SHA-256, recomputed"),
    ("rows", R, "released rows", "the released file's rows, counted"),
    ("manifest_sha256", R, "manifest digest", "the manifest's SHA-256, recomputed"),
    ("manifest_content_sha256", R, "manifest digest", "the SHA-256 of the manifest's content (without when it "
                                                       "was written), recomputed"),
    ("release", D, "applied file", "the release's label: the key's stream for this release; the release made "
                                    "again under it reproduces the file (a resampled file: its release's label)"),
)

#: The receipt's fields of a PRAM release.
RECEIPT: tuple[PublicField, ...] = fields([
    *RECEIPT_COMMON,
    ("guarantees.*", R, "shuffled guarantees", "the local, sampled and shuffled guarantees: recomputed from "
                                                "the manifest and the released file's records"),
])


#: The manifest of a PRAM release.
MANIFEST_FILE = PublicFile(
    "manifest", "pramkit-manifest", "pramkit manifest",
    "The public description of a PRAM release: every variable's matrix, the ledger of what the release's "
    "epsilon covers and what it shows exactly, and how it was designed.")
#: The receipt beside a released file.
RECEIPT_FILE = PublicFile(
    "receipt", "pramkit-release-receipt", "pramkit release receipt",
    "What was released: the released file's name, digest and rows, the manifest it was released by, the "
    "release's label and, with --shuffle, its guarantees as a file.")
