"""The ``pramkit`` subcommands and their one-line help, known without importing them.

``pramkit --help`` and ``pramkit --version`` read only this table; a
subcommand's own module (and the libraries it needs) is imported only when
that subcommand runs (:func:`pramkit.cli.build_parser`).
"""

#: Subcommand -> its one-line help, in the order ``pramkit --help`` lists them.
HELP: dict[str, str] = {
    "demo": "run a whole release on the built-in census-like data",
    "recode": "global recoding before PRAM: merge categories, top and bottom code (a JSON map)",
    "suppress": "local suppression to k-anonymity: the fewest key values made missing (exact, or greedy with a bound)",
    "new-ids": "replace a grouping column (a household id) by keyed random ids and put the rows in a keyed order",
    "design": "design PRAM matrices (print one, or write a manifest for a data file)",
    "apply": "perturb a data file with the matrices of a manifest",
    "inspect": "show the privacy guarantees of a manifest",
    "keygen": "write a new secret key file (256 bits)",
    "reproduce": "regenerate the tables and figures of a paper",
    "estimate": "estimate original frequencies (with standard errors) from a released file",
    "resample": "an analysis-ready file: redraw the perturbed values from their posterior (post-processing)",
    "synthesize": "a file useful as it is at a central epsilon: public columns kept, the rest drawn from DP margins",
    "risk": "identification risk (sample uniques, tau1, tau2) under a Poisson log-linear model",
    "attack": "risk by attack: reconstruction from any released file, and the exact Bayes ceiling of a PRAM release",
    "report": "HTML release reports: internal (risk before and after) and public (ledger, estimates)",
    "audit": "audit a release: stated epsilons, ledger and receipt; original against release; the engine's epsilon",
    "app": "the workbench: a release step by step in the browser (needs pramkit[app])",
    "swap": "targeted record swapping of the geography (households whole), with its matrix and epsilon",
    "compare": "record swapping beside DP-PRAM and metric PRAM of the geography: risk, utility, guarantee",
}
