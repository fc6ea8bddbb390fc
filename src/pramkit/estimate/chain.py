"""Manifests applied one after the other, seen by the estimates as one law.

A release made in steps (``pramkit apply`` of a second manifest to the release of a first, and so on)
perturbs each step's columns with that step's matrices, independently of the other steps given the
original values: a step reads and changes only its own columns, and a stratum it reads is a column no
step perturbs.  So the released table of variables from different steps has the law of the Kronecker
product of their matrices, exactly as variables of one manifest, and within each shared stratum the
Kronecker product of the variables' blocks.  The estimators of :mod:`pramkit.estimate` apply as they are,
each axis with the matrix of the step that perturbed it.

Two cases are not products:

* a column perturbed by two steps: its law is the product ``M_1 M_2`` of the two matrices (the second
  perturbs the first's output), composed here when both are plain variables over the same categories
  (no strata, kept codes or households); otherwise refused;
* a stratum of one step's variable perturbed by another step: the stratum a record is perturbed in is
  then itself random, and the table's law is no product of the variables' matrices: refused.

:func:`pramkit.engine.receipt.check_chain` checks, from the last release's receipt, that the manifests
given are the steps that made it, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pramkit.errors import ManifestError, ParameterError
from pramkit.manifest import Manifest, PerturbedVariable


@dataclass(frozen=True)
class ManifestChain:
    """The variables of manifests applied one after the other, each looked up in the step that perturbed it.

    Parameters
    ----------
    manifests : tuple of Manifest
        The steps, in the order they were applied (one manifest: itself).

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> first = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> second = Manifest.of({"smoker": randomized_response(["yes", "no"], 2.0)})
    >>> chain = ManifestChain.of([first, second])
    >>> chain.names, chain.step_of("smoker"), chain["sex"] is first["sex"]
    (['sex', 'smoker'], 1, True)
    >>> twice = ManifestChain.of([first, first])      # sex perturbed again: the law is the product
    >>> twice["sex"].release_matrix.matrix.round(4).tolist() == (first["sex"].matrix.matrix @
    ...                                                          first["sex"].matrix.matrix).round(4).tolist()
    True
    """

    manifests: tuple[Manifest, ...]
    _variables: dict[str, PerturbedVariable] = field(init=False, repr=False, compare=False)
    _steps: dict[str, int] = field(init=False, repr=False, compare=False)
    _refused: dict[str, str] = field(init=False, repr=False, compare=False)

    @classmethod
    def of(cls, manifest: Manifest | Sequence[Manifest]) -> ManifestChain:
        """The chain of one manifest, or of a sequence of them in the order applied.

        Raises
        ------
        ParameterError
            No manifest, or something that is not a :class:`pramkit.Manifest`.
        """
        steps = (manifest,) if isinstance(manifest, Manifest) else tuple(manifest)
        if not steps:
            raise ParameterError("give the manifest(s) that made the release")
        bad = next((m for m in steps if not isinstance(m, Manifest)), None)
        if bad is not None:
            raise ParameterError(f"manifests must be pramkit.Manifest objects (Manifest.read(path)), "
                                 f"not {type(bad).__name__}")
        return cls(steps)

    def __post_init__(self) -> None:
        variables: dict[str, PerturbedVariable] = {}
        steps: dict[str, int] = {}
        refused: dict[str, str] = {}
        owner: dict[str, str] = {}  # perturbed column -> the variable that perturbs it last
        for k, m in enumerate(self.manifests):
            for v in m.variables:
                earlier = [owner[c] for c in v.columns if c in owner]
                if earlier and (set(earlier) != {v.name} or v.name not in variables):
                    refused[v.name] = (f"{', '.join(c for c in v.columns if c in owner)} is perturbed by manifest "
                                       f"{steps[earlier[0]] + 1} ({earlier[0]!r}) and again by manifest {k + 1} "
                                       f"({v.name!r}) over other columns: their law is no product of the steps' "
                                       "matrices; tabulate other variables")
                    for name in earlier:
                        refused.setdefault(name, refused[v.name])
                elif earlier:
                    try:  # the same variable perturbed again: the law is the product of both steps
                        v = PerturbedVariable(v.name, v.matrix, missing=v.missing,
                                              applied_to=variables[v.name].release_matrix)
                    except ManifestError:
                        refused[v.name] = (f"{v.name!r} is perturbed by manifest {steps[v.name] + 1} and again by "
                                           f"manifest {k + 1}, with strata, kept codes, households or other "
                                           "categories: their product is not composed; tabulate other variables")
                variables[v.name] = v
                steps[v.name] = k
                owner.update(dict.fromkeys(v.columns, v.name))
        perturbed = set(owner)
        for name, v in variables.items():
            moved = [c for c in v.given if c in perturbed]
            if moved and name not in refused:
                refused[name] = (f"the stratum {moved[0]!r} of {name!r} (manifest {steps[name] + 1}) is perturbed "
                                 f"by manifest {steps[owner[moved[0]]] + 1}: the stratum a record is perturbed in is "
                                 "then itself random, and the table's law is no product of the variables' matrices")
        object.__setattr__(self, "_variables", variables)
        object.__setattr__(self, "_steps", steps)
        object.__setattr__(self, "_refused", refused)

    @property
    def names(self) -> list[str]:
        """Every perturbed variable of every step (a variable perturbed twice once)."""
        return list(self._variables)

    @property
    def variables(self) -> list[PerturbedVariable]:
        """The variables, each as the last step that perturbed it states it (composed with earlier steps)."""
        return list(self._variables.values())

    def __getitem__(self, name: str) -> PerturbedVariable:
        """The variable ``name``.

        Raises
        ------
        ParameterError
            Its law across the steps is no product of their matrices (see the module's docstring).
        KeyError
            No step perturbs it.
        """
        if name in self._refused:
            raise ParameterError(self._refused[name])
        return self._variables[name]

    def step_of(self, name: str) -> int:
        """The index of the last manifest that perturbs ``name``."""
        return self._steps[name]

    def keeps_rule_breakers(self, name: str) -> bool:
        """The step that perturbed ``name`` released its rule breakers unperturbed
        (:attr:`pramkit.Manifest.keeps_rule_breakers`)."""
        return self.manifests[self._steps[name]].keeps_rule_breakers
