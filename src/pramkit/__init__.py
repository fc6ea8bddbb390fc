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

from typing import TYPE_CHECKING

from pramkit._lazy import lazy_exports
from pramkit._moved import install as _install_former_names
from pramkit._version import __version__ as __version__
from pramkit.errors import ParameterError as ParameterError
from pramkit.errors import PramkitError as PramkitError

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
    "synthesize_release": "pramkit.synthesize",
    "SynthesisResult": "pramkit.synthesize",
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
    "SecretKey": "pramkit.kernel.rng",
    "identification_risk": "pramkit.risk.identification",
    "build_report": "pramkit.report",
    "build_public_report": "pramkit.report",
    "write_report": "pramkit.report",
    "output_schema": "pramkit._json",
}

__all__ = ["__version__", "PramkitError", "ParameterError", *_EXPORTS]

if TYPE_CHECKING:  # what type checkers read: the names below, with their types (the lazy loader is not seen)
    from pramkit._json import output_schema as output_schema
    from pramkit.engine.perturb import ApplyResult as ApplyResult
    from pramkit.engine.perturb import FrameResult as FrameResult
    from pramkit.engine.perturb import apply_file as apply_file
    from pramkit.engine.perturb import perturb_codes as perturb_codes
    from pramkit.engine.perturb import perturb_frame as perturb_frame
    from pramkit.estimate import estimate_table as estimate_table
    from pramkit.kernel.rng import SecretKey as SecretKey
    from pramkit.ledger import Ledger as Ledger
    from pramkit.manifest import Manifest as Manifest
    from pramkit.manifest import PerturbedVariable as PerturbedVariable
    from pramkit.matrix import PramMatrix as PramMatrix
    from pramkit.matrix import Provenance as Provenance
    from pramkit.release.pipeline import design_planned as design_planned
    from pramkit.release.pipeline import design_release as design_release
    from pramkit.release.plan import ReleasePlan as ReleasePlan
    from pramkit.release.plan import plan_release as plan_release
    from pramkit.release.recognition import design_recognition as design_recognition
    from pramkit.release.record import DesignRecord as DesignRecord
    from pramkit.release.record import Release as Release
    from pramkit.release.record import write_design as write_design
    from pramkit.release.tuned import design_to_target as design_to_target
    from pramkit.report import build_public_report as build_public_report
    from pramkit.report import build_report as build_report
    from pramkit.report import write_report as write_report
    from pramkit.resample import ResampleResult as ResampleResult
    from pramkit.resample import resample_release as resample_release
    from pramkit.risk.household import household_risk as household_risk
    from pramkit.risk.identification import identification_risk as identification_risk
    from pramkit.risk.matches import expected_matches as expected_matches
    from pramkit.structure import Rules as Rules
    from pramkit.structure import read_rules as read_rules
    from pramkit.synthesize import SynthesisResult as SynthesisResult
    from pramkit.synthesize import synthesize_release as synthesize_release
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), ("__version__", "PramkitError", "ParameterError"))

_install_former_names()
