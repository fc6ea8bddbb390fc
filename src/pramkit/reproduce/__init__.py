"""The papers' tables and figures, regenerated (``pramkit reproduce NAME --out DIR``).

One module per paper, each with ``run(out, *, quick, quiet) -> dict``: ``ayed2020``
(DP-optimal PRAM), ``shlomo2012`` (sampling and misclassification), ``ruiz``
(bistochastic privacy), ``cator`` (spontaneous recognition).  ``docs/reproductions.md``
compares every figure with the paper's.
"""
