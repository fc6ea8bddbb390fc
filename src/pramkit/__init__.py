"""pramkit: statistical disclosure control of categorical microdata by PRAM.

Design a PRAM matrix under a privacy model, assess disclosure risk, perturb
files with keyed randomness, and estimate tables from the released data.
"""

from pramkit._version import __version__
from pramkit.errors import PramkitError
from pramkit.estimate import estimate_table
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix, Provenance
from pramkit.perturb import apply_file, perturb_codes, perturb_frame
from pramkit.rng import SecretKey

__all__ = [
    "__version__", "PramkitError", "estimate_table", "Manifest", "PerturbedVariable", "PramMatrix",
    "Provenance", "apply_file", "perturb_codes", "perturb_frame", "SecretKey",
]
