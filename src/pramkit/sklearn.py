"""PRAM as a scikit-learn transformer: design on ``fit``, perturb with a key on ``transform``.

:class:`PRAMTransformer` puts a release into a scikit-learn ``Pipeline`` or
``ColumnTransformer``: ``fit`` designs the matrices from the training data through
the DP design step at a record budget (:func:`pramkit.design_planned`), or takes a
published manifest; ``transform`` perturbs the columns with the secret key
(:func:`pramkit.perturb_frame`) and returns them in their own dtype, missing values
kept missing.  The rows go to the engine as an Arrow table, never through pandas.

With a ``key``, the transformer is deterministic: the DP counts' noise and the
draws come from the key, so ``fit`` then ``transform`` twice gives the same
release, and ``transform`` releases row ``i`` with the draw ``(K, column, i)`` of the release key
``K`` (the key derived for the fitted manifest: :func:`pramkit.engine.perturb.release_key`).
Without a key every ``fit`` draws fresh noise and every ``transform`` a fresh key
(never saved): the release cannot be reproduced, which is what a data holder
wants once the release is final.

Examples
--------
>>> import numpy as np
>>> X = np.array([["north", "f"], ["south", "m"], ["north", None], ["east", "m"]] * 25, dtype=object)
>>> pram = PRAMTransformer(epsilon=4.0, key=bytes(32)).fit(X)
>>> released = pram.transform(X)
>>> released.shape, released.dtype, released[2, 1] is None
((100, 2), dtype('O'), True)
>>> bool((pram.transform(X) == released).all())  # the key fixes the release
True
>>> pram.get_feature_names_out().tolist(), pram.manifest_.record_epsilon <= 4.0
(['x0', 'x1'], True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from pramkit._extras import raise_missing_extra

try:
    from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
    from sklearn.utils.validation import check_is_fitted, validate_data
except ModuleNotFoundError as exc:
    raise_missing_extra(exc, "sklearn", "pramkit.sklearn (the scikit-learn transformer)")

from pramkit.errors import ParameterError
from pramkit.io import require_columns
from pramkit.manifest import Manifest


class PRAMTransformer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Perturb categorical features by PRAM: matrices designed on ``fit`` (or given), drawn on ``transform``.

    Parameters
    ----------
    columns : sequence of str, optional
        The features to perturb, by name (:attr:`feature_names_in_`; a NumPy array's
        columns are named ``x0``, ``x1``, ...); default all of them.  The others pass
        through unchanged.
    epsilon : float
        The record's total budget (nats), the design step's DP counts included
        (:func:`pramkit.plan_release`); not used with ``manifest``.
    method : str
        The design family (:func:`pramkit.plan_release`; default ``"dp"``).
    categories : mapping of str to sequence, optional
        Declared categories of some features; the others are read from the data
        (the ledger says so).
    manifest : pramkit.Manifest, str or pathlib.Path, optional
        A manifest (or its file) to apply instead of designing one: ``fit`` then
        only checks that the data have its columns.
    key : bytes, str or pathlib.Path, optional
        The secret key (:func:`pramkit.engine.rng.resolve_key`): it makes the DP counts
        and the draws reproducible.  ``None``: fresh randomness on every call.

    Attributes
    ----------
    manifest_ : pramkit.Manifest
        The manifest designed (or given).
    feature_names_in_ : ndarray of str
        The names of the features seen on ``fit`` (when the data have them).
    n_features_in_ : int
        The number of features seen on ``fit``.

    Examples
    --------
    In a ``ColumnTransformer``, beside a numeric feature left as it is:

    >>> import pandas as pd
    >>> from sklearn.compose import ColumnTransformer
    >>> from pramkit.datasets import census
    >>> data = census(2_000)[["sex", "age"]].assign(hours=range(2_000))
    >>> ct = ColumnTransformer([("pram", PRAMTransformer(epsilon=3.0, key=bytes(32)), ["sex", "age"])],
    ...                        remainder="passthrough", verbose_feature_names_out=False)
    >>> out = ct.fit_transform(data)
    >>> out.shape, list(ct.get_feature_names_out())
    ((2000, 3), ['sex', 'age', 'hours'])
    """

    def __init__(self, columns: Sequence[str] | None = None, *, epsilon: float = 1.0, method: str = "dp",
                 categories: Mapping[str, Sequence[Any]] | None = None,
                 manifest: Manifest | str | Path | None = None, key: bytes | str | Path | None = None) -> None:
        self.columns = columns
        self.epsilon = epsilon
        self.method = method
        self.categories = categories
        self.manifest = manifest
        self.key = key

    def fit(self, X: Any, y: Any = None) -> PRAMTransformer:
        """Design the matrices from ``X`` (or take :attr:`manifest`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The original records (a DataFrame of pandas or polars, an Arrow table, an array).
        y : None
            Ignored.

        Returns
        -------
        PRAMTransformer
            ``self``, fitted.

        Raises
        ------
        ValueError
            ``X`` is not two-dimensional or has fewer than two samples; a feature to perturb
            has fewer than two categories (:class:`pramkit.errors.DataError`); a setting is
            wrong (:class:`pramkit.errors.ParameterError`).
        """
        from pramkit.engine.rng import resolve_key
        from pramkit.release.pipeline import design_planned
        from pramkit.release.plan import plan_release

        table = self._arrow(validate_data(self, X, reset=True, **self._checks(2)))  # a design needs two rows
        if self.manifest is not None:
            manifest = self.manifest if isinstance(self.manifest, Manifest) else Manifest.read(self.manifest)
            require_columns(manifest.read_columns, table.column_names, "the data")
        else:
            plan = plan_release(self._perturbed(table.column_names), epsilon=self.epsilon, method=self.method,
                                categories=self.categories)
            key = None if self.key is None else resolve_key(self.key)
            manifest = design_planned(table, plan, key=key).manifest
        self.manifest_ = manifest
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Perturb the manifest's features of ``X`` with the key.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The records, with the features seen on ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The released records, each column in the dtype of ``X``'s (missing values kept missing).

        Raises
        ------
        ValueError
            ``X`` has other features than on ``fit``, or a value is not one of its
            feature's categories (:class:`pramkit.errors.DataError`).
        """
        from pramkit.engine.perturb import perturb_frame

        check_is_fitted(self, "manifest_")
        array = validate_data(self, X, reset=False, **self._checks(1))
        released = perturb_frame(self._arrow(array), self.manifest_, key=self.key).data
        out = np.empty_like(array)
        for j, name in enumerate(released.column_names):
            out[:, j] = released.column(name).to_numpy(zero_copy_only=False)
        return out

    def _perturbed(self, names: list[str]) -> list[str]:
        """The features to perturb: :attr:`columns`, checked to be among ``names``, or all of them."""
        if self.columns is None:
            return names
        wanted = [self.columns] if isinstance(self.columns, str) else list(self.columns)
        if not wanted:
            raise ParameterError("columns names no feature to perturb; name at least one, or leave it None for all")
        require_columns(wanted, names, "the data")
        return wanted

    def _checks(self, rows: int) -> dict[str, Any]:
        """What :func:`sklearn.utils.validation.validate_data` checks: a dense 2-d array of ``rows`` rows or
        more, of any dtype (labels may be text), missing values allowed (they are kept, never perturbed)."""
        return {"dtype": None, "ensure_all_finite": "allow-nan", "ensure_min_samples": rows}

    def _arrow(self, array: np.ndarray) -> pa.Table:
        """A 2-d array as an Arrow table whose columns are the feature names (NaN and ``None``: missing)."""
        names = getattr(self, "feature_names_in_", None)
        names = [str(n) for n in names] if names is not None else [f"x{j}" for j in range(array.shape[1])]
        try:
            return pa.table([pa.array(array[:, j], from_pandas=True) for j in range(array.shape[1])], names=names)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ParameterError(f"a feature holds values of mixed types ({exc}); give each column one type") from None

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # a missing value is kept missing, never perturbed
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.non_deterministic = self.key is None  # fresh noise and a fresh key on every call unless keyed
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
