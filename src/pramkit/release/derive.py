"""A public-use release derived from a scientific-use release: the second PRAM step.

``pramkit design --derive-from SUF.json --epsilon E --out PUF.json`` designs, for every
variable of the scientific-use release (SUF), a matrix ``M2`` applied to the *released*
SUF file (``pramkit apply SUF-FILE --manifest PUF.json``), so that the public-use file
(PUF) reaches a person's original value through ``M1 M2`` with the record epsilon at
most E and the most information kept (:func:`pramkit.design.nested.derive_matrix`).

**What the design reads.**  Only what is public: the SUF manifest (its matrices and the
DP counts of its ledger, post-processed as the SUF's own design did) or a public prior
(``--prior``).  Never the original file, so the design spends nothing.

**The ledger.**  The PUF manifest states, per variable, the epsilon of the composed law
(:attr:`pramkit.manifest.PerturbedVariable.applied_to` holds ``M1``), and its record
epsilon adds the SUF's design step (``M1``, published again in the PUF manifest, was
designed from the DP counts).  Published together, the pair's record epsilon is the
SUF's alone: the PUF is post-processing of the SUF and its manifest.

**Naming each other.**  Each manifest cannot hold the other's hash: the SUF manifest is
written first, and a hash of a file that names a hash of itself would be a fixed point
of SHA-256.  So the link goes one way, from the later file to the earlier: the PUF
manifest's ``ledger.derived_from`` names the SUF manifest by file name and the SHA-256 of
its bytes, and :func:`verify_pair` checks, from the PUF side, that a SUF manifest is that
file and that the matrices the PUF states it was applied to are that file's.  The SUF
manifest is never rewritten (a published release must not change, and rewriting it would
change the hash the PUF names).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pramkit.engine.receipt import check_derived_input as check_derived_input  # its home is the receipt it reads
from pramkit.errors import ManifestError, ParameterError
from pramkit.io import sha256_of
from pramkit.ledger import Ledger, split_within
from pramkit.manifest import Manifest, PerturbedVariable


@dataclass(frozen=True)
class DerivedRelease:
    """A derived (public-use) release: its manifest and what each variable keeps.

    Attributes
    ----------
    manifest : pramkit.Manifest
        The PUF manifest: ``M2`` per variable, applied to the SUF's released file.
    information : mapping of str to float
        Per variable, I(X; Z) of the composed release under the public frequencies the
        design read (nats): public, computed from public inputs only.
    source : str
        Where those frequencies came from (the SUF's DP counts, or the prior's name).
    """

    manifest: Manifest
    information: Mapping[str, float]
    source: str

    def to_dict(self) -> dict[str, Any]:
        """JSON values: per variable its composed epsilon, information and certificate's verdict,
        the record epsilon of the PUF alone and of the pair.

        Examples
        --------
        >>> import os, tempfile
        >>> from pramkit.datasets import census
        >>> from pramkit.release.choices import DesignChoices
        >>> suf = DesignChoices(epsilon=3.0).release(census(2_000), ["sex"]).manifest
        >>> with tempfile.TemporaryDirectory() as d:
        ...     out = derive_release(suf.write(os.path.join(d, "suf.json")), 1.0).to_dict()
        >>> out["per_variable"]["sex"]["epsilon"] <= 1.0, out["pair_record_epsilon"] == suf.record_epsilon
        (True, True)
        """
        led = self.manifest.ledger
        assert led is not None  # a derived manifest always has its ledger
        return {
            "per_variable": {v.name: {"epsilon": v.epsilon, "information_nats": self.information[v.name],
                                      "optimal": (v.matrix.provenance.certificate or {}).get("optimal")}
                             for v in self.manifest.variables},
            "frequencies": self.source,
            "record_epsilon": self.manifest.record_epsilon_given_structure,
            "pair_record_epsilon": led.derived_from["record_epsilon"],
            "derived_from": dict(led.derived_from),
        }


def derive_release(suf: str | Path, epsilon: float, *, variables: Sequence[str] | None = None,
                   prior: str | Path | None = None, categories: str | Path | None = None) -> DerivedRelease:
    """Design the public-use release of a scientific-use release (module docstring).

    Parameters
    ----------
    suf : str or Path
        The SUF manifest.
    epsilon : float
        The PUF's record epsilon (the SUF's design step included, since the PUF manifest
        shows the SUF's matrices): shared equally by the variables.
    variables : sequence of str, optional
        The SUF's variables, as a check (every one is derived: a variable left out would
        reach the PUF as the SUF released it).
    prior : str or Path, optional
        Public frequencies (``variable,category,frequency``); default: the DP counts of
        the SUF's ledger, post-processed as its design did.
    categories : str or Path, optional
        A codebook, as a check: it must declare each variable's categories as the SUF has them.

    Returns
    -------
    DerivedRelease

    Raises
    ------
    ParameterError
        The variables, prior or codebook differ from the SUF's; the SUF has no ledger, or no
        DP counts and no prior is given; a variable is joint, stratified, drawn per household, has kept codes
        or is derived already; epsilon is not above the SUF's design epsilon.
    ManifestError
        The SUF manifest cannot be read or is malformed.

    Examples
    --------
    The census's sex and race released at record epsilon 6, then derived at 2: the design
    reads the DP counts of the first release's ledger.

    >>> import os, tempfile
    >>> from pramkit.datasets import census
    >>> from pramkit.release.choices import DesignChoices
    >>> suf = DesignChoices(epsilon=6.0).release(census(2_000), ["sex", "race"]).manifest
    >>> with tempfile.TemporaryDirectory() as d:
    ...     puf = derive_release(suf.write(os.path.join(d, "suf.json")), 2.0)
    >>> puf.manifest.record_epsilon <= 2.0, puf.manifest["sex"].applied_to == suf["sex"].matrix, puf.source
    (True, True, 'dp_counts')
    """
    from pramkit.design.nested import derive_matrix

    first = Manifest.read(suf)
    digest = sha256_of(suf)
    names = first.names
    if variables is not None and sorted(variables) != sorted(names):
        raise ParameterError(f"--vars must name the variables of the release derived from, {', '.join(names)}; "
                             f"got {', '.join(variables)} (each is derived: one left out would reach the public-use "
                             "file as the scientific-use file released it)")
    for v in first.variables:
        _check_derivable(v)
    if categories is not None:
        _check_codebook(first, categories)
    led = first.ledger
    if led is None:
        raise ParameterError(f"{str(suf)!r} has no privacy ledger, so nothing records how its matrices were "
                             "designed: derive from a manifest written by pramkit design")
    if not (math.isfinite(epsilon) and epsilon > led.design_epsilon):
        raise ParameterError(f"--epsilon must be above the design epsilon of the release derived from, "
                             f"{led.design_epsilon!r} (its matrices, designed from its DP counts, are shown again), "
                             f"got {epsilon!r}")
    p, source = _frequencies(first, led, prior)
    shares = split_within(epsilon, led.design_epsilon, [1.0] * len(names))
    derived = [PerturbedVariable(v.name, derive_matrix(v.matrix, p[v.name], share), v.missing, applied_to=v.matrix)
               for v, share in zip(first.variables, shares)]
    ledger = Ledger(design_epsilon=led.design_epsilon, frequencies=led.frequencies, record_epsilon_budget=epsilon,
                    prior=led.prior, categories=dict(led.categories), data_dependent=led.data_dependent,
                    dp_counts=dict(led.dp_counts), derived_from={
                        "manifest": Path(suf).name, "sha256": digest,
                        "record_epsilon": first.record_epsilon_given_structure})
    shown = {k: first.input[k] for k in ("weights", "structure") if k in first.input}  # still released as they are
    manifest = Manifest(tuple(derived), input={"method": "derived", "derived_from": Path(suf).name,
                                               "record_epsilon_budget": epsilon, "frequencies": source, **shown},
                        ledger=ledger)
    return DerivedRelease(manifest, {v.name: float(v.matrix.provenance.objective or 0.0) for v in derived}, source)


def _check_derivable(v: PerturbedVariable) -> None:
    """Refuse a variable the second step cannot be designed for."""
    if v.applied_to is not None:
        raise ParameterError(f"variable {v.name!r} is derived already: derive from the first release")
    if v.is_joint or v.unit is not None or v.matrix.blocks is not None:
        raise ParameterError(f"variable {v.name!r} is joint, stratified, drawn per household or has kept codes: "
                             "a derived release is designed for single columns perturbed by one matrix")


def _check_codebook(first: Manifest, path: str | Path) -> None:
    """The codebook must declare each variable's categories as the release has them, in order."""
    from pramkit.codebook import canonical
    from pramkit.public_inputs import read_codebook, require_variables

    book = read_codebook(path)
    require_variables(book, first.names, "codebook")
    for v in first.variables:
        if [canonical(c) for c in book[v.name]] != [canonical(c) for c in v.matrix.categories]:
            raise ParameterError(f"the codebook's categories of {v.name!r} differ from those of the release derived "
                                 f"from: {list(v.matrix.categories)}")


def _frequencies(first: Manifest, led: Ledger, prior: str | Path | None) -> tuple[dict[str, np.ndarray], str]:
    """Public proportions of each variable's categories: the prior's, or the SUF's DP counts post-processed."""
    from pramkit.codebook import canonical
    from pramkit.privacy.geometric import DPCounts
    from pramkit.public_inputs import read_prior, require_variables

    if prior is not None:
        read = read_prior(prior)
        require_variables(read.distributions, first.names, "prior")
        out = {}
        for v in first.variables:
            position = {canonical(c): i for i, c in enumerate(read.categories(v.name))}
            wanted = [canonical(c) for c in v.matrix.categories]
            if sorted(position, key=str) != sorted(wanted, key=str):
                raise ParameterError(f"the prior's categories of {v.name!r} differ from those of the release "
                                     f"derived from: {list(v.matrix.categories)}")
            out[v.name] = read.p(v.name)[[position[c] for c in wanted]]
        return out, read.name
    absent = [n for n in first.names if n not in led.dp_counts]
    if absent:
        raise ParameterError(f"the release derived from publishes no DP counts of {', '.join(absent)} "
                             "(its ledger's frequencies: " + led.frequencies + "): give a public prior with --prior")
    out = {}
    for v in first.variables:
        d = led.dp_counts[v.name]
        noisy = np.asarray(d["noisy"], dtype=np.int64)
        if noisy.shape != (v.matrix.size,):
            raise ManifestError(f"field 'ledger.dp_counts.{v.name}' must hold one count per category of {v.name!r}")
        out[v.name] = DPCounts(noisy, float(d["epsilon"]), int(d["sensitivity"])).proportions(floor=1.0)
    return out, "dp_counts"


def verify_pair(derived: Manifest, suf: str | Path) -> dict[str, Any]:
    """Check, from the derived (public-use) side, that ``suf`` is the manifest it was derived from.

    The SHA-256 of ``suf``'s bytes must be the one ``derived.ledger.derived_from`` names, and
    every matrix the derived manifest states it was applied to must be ``suf``'s matrix of
    that variable.

    Parameters
    ----------
    derived : pramkit.Manifest
        A PUF manifest (:func:`derive_release`).
    suf : str or Path
        The SUF manifest file.

    Returns
    -------
    dict
        ``sha256``, the record epsilon of the PUF alone and of the pair (the SUF's).

    Raises
    ------
    ManifestError
        ``derived`` is not derived, or ``suf`` is not the file it names (hash or matrices differ).

    Examples
    --------
    >>> import os, tempfile
    >>> from pramkit.datasets import census
    >>> from pramkit.release.choices import DesignChoices
    >>> suf = DesignChoices(epsilon=3.0).release(census(2_000), ["sex"]).manifest
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = suf.write(os.path.join(d, "suf.json"))
    ...     puf = derive_release(path, 1.0).manifest
    ...     verify_pair(puf, path)["pair_record_epsilon"] == suf.record_epsilon
    True
    """
    led = derived.ledger
    if led is None or not led.derived_from:
        raise ManifestError("the manifest is not derived from another release (its ledger has no derived_from)")
    digest = sha256_of(suf)
    if digest != led.derived_from["sha256"]:
        raise ManifestError(f"manifest {str(suf)!r} is not the one the derived release names: its SHA-256 is "
                            f"{digest}, the derived manifest names {led.derived_from['sha256']}")
    first = Manifest.read(suf)
    for v in derived.variables:
        if v.name not in first.names or first[v.name].matrix != v.applied_to:
            raise ManifestError(f"variable {v.name!r}: the matrix the derived release states it was applied to is "
                                f"not that of {str(suf)!r}")
    return {"sha256": digest, "record_epsilon": derived.record_epsilon_given_structure,
            "pair_record_epsilon": first.record_epsilon_given_structure}

