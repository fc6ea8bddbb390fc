"""Disclosure risk of categorical microdata, before and after PRAM.

Frequencies on key variables, sampling fractions per cell from the weights,
identification risk (tau1, tau2) under Poisson log-linear models (Shlomo and
Skinner 2012, sec. 2.1; Skinner and Shlomo 2008), per-record risk
(Benedetti and Franconi), risk of released sample uniques under known
misclassification, spontaneous recognition (condition C1 of Cator et al.)
and tuning epsilon to a risk threshold.  See docs/risk.md.
"""

from pramkit.risk.expected import ExpectedRelease, ProblemSet, expected_release
from pramkit.risk.fractions import SamplingFractions, sampling_fractions
from pramkit.risk.frequencies import Frequencies, frequencies
from pramkit.risk.household import HouseholdRisk, household_risk
from pramkit.risk.identification import RiskResult, identification_risk
from pramkit.risk.individual import IndividualRisk, benedetti_franconi, individual_risk
from pramkit.risk.loglinear import LogLinearFit, Watch, fit_loglinear, fit_loglinear_misclassified
from pramkit.risk.misclassified import CellRisk, cell_risk
from pramkit.risk.recognition import RecognitionResult, Violation, recognition_risk
from pramkit.risk.suda import SudaResult, suda
from pramkit.risk.tuning import TuningResult, tune_epsilon

__all__ = [
    "CellRisk",
    "ExpectedRelease",
    "Frequencies",
    "HouseholdRisk",
    "IndividualRisk",
    "LogLinearFit",
    "ProblemSet",
    "RecognitionResult",
    "RiskResult",
    "SamplingFractions",
    "SudaResult",
    "TuningResult",
    "Violation",
    "Watch",
    "benedetti_franconi",
    "cell_risk",
    "expected_release",
    "fit_loglinear",
    "fit_loglinear_misclassified",
    "frequencies",
    "household_risk",
    "identification_risk",
    "individual_risk",
    "recognition_risk",
    "sampling_fractions",
    "suda",
    "tune_epsilon",
]
