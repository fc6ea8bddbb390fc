"""The type of a category label, shared by the modules that hold categories.

It lives apart from :mod:`pramkit.matrix` so that the modules the matrix reads
(the public distances of :meth:`pramkit.PramMatrix.exponential`) can name it
without importing the matrix back.
"""

from __future__ import annotations

#: A category label: a JSON scalar.  ``None`` labels the "missing" category of
#: a variable whose missing values are declared a category of their own.  A
#: matrix over the cross-classification of several variables (a joint
#: perturbation) has tuples of scalars as labels.
Label = str | int | float | bool | None | tuple


def joint_cell(label: Label) -> tuple:
    """A category of a joint variable: the tuple of its columns' labels.

    >>> joint_cell(("f", "20-29"))[1]
    '20-29'
    """
    assert isinstance(label, tuple), f"a joint category is a tuple of labels, got {label!r}"
    return label
