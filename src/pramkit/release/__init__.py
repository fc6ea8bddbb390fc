"""The design workflow of a release, one stage per module.

=================  =====================================================  ==========================
stage              what it does                                           module
=================  =====================================================  ==========================
plan               every parameter checked, before any data is read       :mod:`~pramkit.release.plan`
count              the data counted over each target's cells              :mod:`~pramkit.release.count`
frequencies        none, a public prior, exact, or DP counts (ledger)     :mod:`~pramkit.release.frequencies`
allocate           the record budget shared over the matrices             :mod:`~pramkit.release.allocate`
build              each matrix designed through the family registry       :mod:`~pramkit.release.build`
assemble           the public manifest and the private design record      :mod:`~pramkit.release.assemble`
=================  =====================================================  ==========================

:func:`~pramkit.release.pipeline.design_planned` runs them; :func:`~pramkit.release.pipeline.design_release`
plans and runs in one call.  The targets a structured release designs (edit rules, strata,
kept codes, households) are laid out by :mod:`~pramkit.release.targets`; the private design
record and writing a release are in :mod:`~pramkit.release.record`; the recognition design
as a release is :mod:`~pramkit.release.recognition`.
"""
