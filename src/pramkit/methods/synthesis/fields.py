"""The fields of the manifest of a synthesized release (``pramkit synthesize``)."""

from __future__ import annotations

from pramkit.methods.contract import PublicField, PublicFile, fields
from pramkit.methods.pram.fields import VERSION, D, F, R

#: The manifest of a synthesized release (recognised by its shape when its format is forged).
MANIFEST_FILE = PublicFile(
    "synthesis manifest", "pramkit.synthesis", "pramkit synthesis manifest",
    "The public description of a synthesized release: its noisy tables and their epsilons, the ledger, the "
    "edit rules every record keeps and the procedure's settings.",
    shape=(("variables", "object"), ("measurements", "array")), audit="pramkit.audit:audit_synthesis")

#: Its fields.
MANIFEST: tuple[PublicField, ...] = fields([
    ("format", R, "constant", "the file's kind: 'pramkit.synthesis'"),
    ("version", R, "constant", "the synthesis manifest's format version"),
    ("pramkit_version", *VERSION),
    ("neighbours", R, "neighbours", "the neighbour relation of the guarantee, written when it is not replace-one "
                                    "(absent: replace-one, the number of records public): 'add-remove', the model "
                                    "pgm's, every table at L1 sensitivity 1 and the released records the total the "
                                    "noisy tables estimate, recomputed"),
    ("variables.*.categories", D, "synthesized again", "a variable's categories: the release made again"),
    ("variables.*.categories_source", R, "category source", "declared or read from the data: a data source "
                                                             "is stated in data_dependent"),
    ("variables.*.groups", R, "pgm groups", "with the model pgm, a variable's categories merged for the model, "
                                            "each group the indexes of its categories: recomputed from the "
                                            "variable's noisy 1-way table, its noise, the rules, "
                                            "procedure.compress, procedure.compress_rules and "
                                            "procedure.bins"),
    ("public.columns", D, "synthesized again", "the public columns the model conditions on, in order: the "
                                                "release made again (each one released as it is)"),
    ("public.bins", D, "synthesized again", "the bins of a numeric public column: the release made again"),
    ("public.cells", R, "table shapes", "the public cells: the first axis of each table given them"),
    ("released_as_they_are", R, "released columns", "the columns released as they are: the file's others"),
    ("rules.source", F, "ignored", "where the edit rules were read from"),
    ("rules.*", D, "synthesized again", "the edit rules: every released record keeps them; the release made "
                                         "again"),
    ("rules", D, "synthesized again", "no edit rules (null)"),
    ("procedure.compress_rules", R, "compress rules", "with the model pgm, 'jointly': a variable that one rule "
                                                      "alone names has its rare categories merged across the "
                                                      "rule's kinds and is drawn jointly with the rule's other "
                                                      "variables (absent: a release made before, its groups within "
                                                      "the kinds)"),
    ("procedure.bins", R, "pgm bins", "with the model pgm, the declared bins, variable -> width: the values in "
                                      "[k width, (k + 1) width) that every rule treats alike are one category of "
                                      "the model (absent: none); the groups they give recomputed from the "
                                      "categories, the width and the rules, against the variable's groups"),
    ("procedure.draw", R, "pgm draw", "with the model pgm, the draw setting: 'auto', 'balanced' or 'systematic' "
                                      "(absent: 'systematic', a release made before it)"),
    ("procedure.balanced", R, "pgm balanced", "with the model pgm, whether the draws were balanced (chosen among "
                                              "four times as many to meet the model's 3-way tables): recomputed "
                                              "from procedure.draw, the released rows, procedure.min_count and "
                                              "the variables"),
    ("procedure.min_count", R, "min count", "2: every released combination shown twice; counted in the file"),
    ("procedure.records_per_draw", R, "records per draw", "with the model pgm and min_count 1, the records given "
                                                          "each draw on average, above 1 and at most 2 (absent: "
                                                          "min_count's); the release made again follows it"),
    ("procedure.tables_per_fit", D, "tables per fit", "with the model pgm, the tables chosen and measured between "
                                                      "two fits of the model, a whole number from 1 to 16 (absent: "
                                                      "1, a release made before it; the schedule's annealing "
                                                      "replayed at its fits): the release made again follows it"),
    ("procedure.*", D, "synthesized again", "the procedure's settings: the release made again"),
    ("na_values", D, "synthesized again", "the texts read as missing: the release made again reads them"),
    ("measurements[*].mechanism", R, "table mechanism", "the DP mechanism: 'geometric' (discrete Laplace), or "
                                                         "'discrete_gaussian' under zCDP (a procedure.delta)"),
    ("measurements[*].sensitivity", R, "table sensitivity", "the L1 sensitivity of a table: 2, or 1 under the "
                                                            "add-or-remove neighbours the manifest states"),
    ("measurements[*].axes", R, "tables", "the tables measured: each variable given the public cell, then "
                                           "each pair; with the model pgm, each variable's 1-way table, then the "
                                           "table each selection chose"),
    ("measurements[*].epsilon", R, "table share", "a table's epsilon: its share of the budget, in proportion "
                                                   "to the square root of its cells; with the model pgm, its "
                                                   "round's share, the schedule replayed from the budget, the "
                                                   "rounds and the stated epsilons"),
    ("measurements[*].sigma2", R, "table share", "under zCDP, a discrete Gaussian table's variance: its round's "
                                                  "share of the rho budget, the schedule replayed"),
    ("measurements[*].rho", R, "table rho", "under zCDP, a table's rho: sensitivity / (2 sigma2), rounded up"),
    ("measurements[*].noisy", D, "synthesized again", "a noisy table: drawn again from the original's exact "
                                                       "table and the key's noise (its shape recomputed)"),
    ("selections[*].mechanism", R, "pgm selection", "the model pgm's choice of a table: 'exponential' (the "
                                                    "exponential mechanism)"),
    ("selections[*].round", R, "pgm selection", "the round: 0, 1, ... in order"),
    ("selections[*].epsilon", R, "pgm selection", "the selection's epsilon: its round's share, the schedule "
                                                  "replayed"),
    ("selections[*].rho", R, "pgm selection", "under zCDP, the selection's rho: epsilon^2 / 8 (the exponential "
                                              "mechanism's bounded range), rounded up"),
    ("selections[*].sensitivity", R, "pgm selection", "the sensitivity of the quality score: at least twice the "
                                                      "chosen table's workload weight"),
    ("selections[*].candidates", D, "synthesized again", "the tables the round chose among (the model's size "
                                                         "cap): the release made again"),
    ("selections[*].chosen", R, "pgm selection", "the table chosen: 1 to 3 synthesized variables, the next "
                                                 "table measured"),
    ("ledger.record_epsilon_budget", D, "synthesized again", "the budget asked for: the release made again"),
    ("ledger.design_epsilon", R, "synthesis epsilon", "the tables' epsilons (and the selections') added up, "
                                                      "rounded outward"),
    ("ledger.record_epsilon", R, "synthesis epsilon", "the central epsilon: the design step's"),
    ("ledger.rho_budget", R, "synthesis ledger", "under zCDP, the largest rho that implies the (epsilon, delta) "
                                                 "asked for: recomputed from the budget and the procedure's delta"),
    ("ledger.*", R, "synthesis ledger", "the ledger's other figures and its sentence, regenerated from the "
                                         "tables and the facts"),
    ("rows", R, "released rows", "the released file's rows, counted"),
    ("released.file", R, "released name", "the released file's name"),
    ("released.sha256", R, "released digest", "the released file's SHA-256, recomputed"),
    ("released.rows", R, "released rows", "the released file's rows, counted"),
])

