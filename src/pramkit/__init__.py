"""pramkit: statistical disclosure control of categorical microdata by PRAM.

Design a release under one record budget (:func:`design_release`), perturb files
with keyed randomness (:func:`perturb_frame`, :func:`apply_file`), estimate tables
from the released data (:func:`estimate_table`), assess disclosure risk
(:func:`identification_risk`) and report (:func:`build_report`,
:func:`build_public_report`).

The names are loaded on first use, so ``import pramkit`` (and the command line)
starts without importing SciPy, pandas or matplotlib.

Examples
--------
>>> import random, pramkit
>>> from pramkit.datasets import census, CENSUS_VARIABLES
>>> data = census(10_000)
>>> m = pramkit.design_release(data, ["age", "sex"], epsilon=2.0, categories=CENSUS_VARIABLES,
...                            rng=random.Random(0))
>>> released = pramkit.perturb_frame(data, m, key=bytes(32)).data
>>> table = pramkit.estimate_table(released, m, ["sex"])
>>> m.record_epsilon <= 2.0
True
"""

from __future__ import annotations

from pramkit._lazy import lazy_exports
from pramkit._version import __version__
from pramkit.errors import ParameterError, PramkitError

#: Public name -> the module that defines it.
_EXPORTS = {
    "plan_release": "pramkit.release.plan",
    "ReleasePlan": "pramkit.release.plan",
    "design_planned": "pramkit.release.pipeline",
    "design_release": "pramkit.release.pipeline",
    "design_recognition": "pramkit.release.recognition",
    "design_to_target": "pramkit.release.tuned",
    "Release": "pramkit.release.record",
    "DesignRecord": "pramkit.release.record",
    "write_design": "pramkit.release.record",
    "Rules": "pramkit.structure",
    "read_rules": "pramkit.structure",
    "household_risk": "pramkit.risk.household",
    "expected_matches": "pramkit.risk.matches",
    "estimate_table": "pramkit.estimate",
    "resample_release": "pramkit.resample",
    "ResampleResult": "pramkit.resample",
    "Manifest": "pramkit.manifest",
    "PerturbedVariable": "pramkit.manifest",
    "Ledger": "pramkit.ledger",
    "PramMatrix": "pramkit.matrix",
    "Provenance": "pramkit.matrix",
    "apply_file": "pramkit.engine.perturb",
    "perturb_codes": "pramkit.engine.perturb",
    "perturb_frame": "pramkit.engine.perturb",
    "FrameResult": "pramkit.engine.perturb",
    "ApplyResult": "pramkit.engine.perturb",
    "SecretKey": "pramkit.engine.rng",
    "identification_risk": "pramkit.risk.identification",
    "build_report": "pramkit.report",
    "build_public_report": "pramkit.report",
    "write_report": "pramkit.report",
}

__all__ = ["__version__", "PramkitError", "ParameterError", *_EXPORTS]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), ("__version__", "PramkitError", "ParameterError"))
