"""The specification of a risk assessment: every setting of ``pramkit risk`` declared once.

:class:`RiskSpec` holds the settings of ``pramkit risk`` besides the file, its key variables and the
files it reads or writes (``--manifest``, ``--original``, ``--plot``): the sampling fraction or the
weights, the model, the household id, the missing keys, the SUDA and contribution modes and their
limits, the records and cells below k and the l-diversity (:mod:`pramkit.risk.kanonymity`), how a CSV
file is read and the engine.  Each setting is declared by
:func:`pramkit.settings.setting` with its type, its rule, its help text and its flag; the command's
flags are made from it and :meth:`RiskSpec.check` refuses what the command line refuses, with the
same message, before any file is read.  :func:`pramkit.risk.identification.identification_risk`
takes one as ``spec=``, and works from these settings either way: they are
:class:`pramkit.settings.RiskSettings` (below the risk floor, which works from them; its keywords build one),
and :class:`RiskSpec` adds the method that runs them (:meth:`RiskSpec.assess`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pramkit.settings import RISK_FRACTIONS, RISK_MODEL, RiskSettings, max_steps

if TYPE_CHECKING:
    from pramkit.manifest import Manifest
    from pramkit.risk.identification import RiskResult

#: The model of the key table when none is given.
MODEL = RISK_MODEL
#: How the weights give the sampling fractions when not said.
FRACTIONS = RISK_FRACTIONS


@dataclass(frozen=True)
class RiskSpec(RiskSettings):
    """Every setting of ``pramkit risk DATA --keys ...`` but the key variables and the files
    (:class:`pramkit.settings.RiskSettings`), and the assessment that runs them (:meth:`assess`).

    Examples
    --------
    >>> RiskSpec(sampling_fraction=0.05).check()
    >>> RiskSpec(sampling_fraction=1.5).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the sampling fraction must lie in (0, 1], got 1.5
    >>> RiskSpec(suda=True, engine="spark").check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --engine spark counts the key table of tau1, tau2 and the per-record risk; --suda, --contributions, --household, --k-anonymity and --l-diversity read records on this machine: use --engine local
    """

    def assess(self, data: Any, keys: Any, *, manifest: Manifest | None = None,
               original: Any = None) -> RiskResult:
        """tau1, tau2 and the per-record risks of ``data`` on ``keys`` with these settings
        (:func:`pramkit.risk.identification.identification_risk`, given them as ``spec=``: checked once,
        before any file is read).

        Examples
        --------
        >>> import pandas as pd
        >>> data = pd.DataFrame({"region": [0] * 6 + [1] * 4, "sex": [0, 0, 0, 1, 1, 0, 0, 1, 1, 0]})
        >>> res = RiskSpec(sampling_fraction=0.1, model="independence").assess(data, ["region", "sex"])
        >>> res.n, res.sample_uniques
        (10, 0)
        """
        from pramkit.risk.identification import identification_risk

        return identification_risk(data, keys, manifest=manifest, original=original, spec=self)


__all__ = ["FRACTIONS", "MODEL", "RiskSpec", "max_steps"]
