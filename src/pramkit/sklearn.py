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

The key never shows: ``repr``, the notebook diagram and :meth:`PRAMTransformer.get_params`
show a key given as bytes as ``<secret key, not shown>`` (a :class:`HiddenKey`, which is still
the key for :func:`sklearn.base.clone`, ``set_params`` and pickling).  A fit designs under the
record budget again: fitting a transformer, or its clones as cross-validation and grid search
make, on other data spends the budget once per fit on the records the fits share, and a
:class:`~pramkit.errors.PramkitWarning` says what the fits spend in total.

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

import hashlib
import warnings
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

from pramkit.errors import ParameterError, PramkitWarning
from pramkit.io import require_columns
from pramkit.manifest import Manifest


class HiddenKey(bytes):
    """A secret key's bytes that never show: ``repr`` and ``str`` say only that a key is there.

    :meth:`PRAMTransformer.get_params` gives a key given as bytes in this form, so that
    ``repr``, the notebook diagram and parameter dumps never print it.  It is still the
    key: equal to the bytes it holds, and :func:`pramkit.kernel.rng.resolve_key` reads it as
    bytes.

    Examples
    --------
    >>> key = HiddenKey(bytes(range(32)))
    >>> key, str(key), f"{key}", key == bytes(range(32)), len(key)
    (<secret key, not shown>, '<secret key, not shown>', '<secret key, not shown>', True, 32)
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "<secret key, not shown>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)


class _FitLog:
    """The fits of a transformer and of its clones (shared by :meth:`PRAMTransformer.__sklearn_clone__`).

    ``spent`` holds the record epsilon of each fit that spent the budget again; ``seen`` the
    keyed fits' (key fingerprint, data digest, release digest): a keyed fit of the same settings
    on the same data designs the same manifest from the same noise, the same release, and
    spends nothing new.
    """

    __slots__ = ("seen", "spent")

    def __init__(self) -> None:
        self.spent: list[float] = []
        self.seen: set[tuple[str, str, str]] = set()

    def add(self, epsilon: float, keyed: tuple[str, str, str] | None) -> bool:
        """Record a fit; whether it spent the budget again (a fit not seen before)."""
        if keyed is not None:
            if keyed in self.seen:
                return False
            self.seen.add(keyed)
        self.spent.append(float(epsilon))
        return True

    def message(self) -> str:
        """What the fits recorded spend together, for the warning."""
        from pramkit.ledger import fmt_epsilon
        from pramkit.privacy.exact import sum_up

        n, total = len(self.spent), fmt_epsilon(sum_up(self.spent))
        low, high = fmt_epsilon(min(self.spent)), fmt_epsilon(max(self.spent))
        each = high if low == high else f"{low} to {high}"
        return (f"PRAMTransformer fitted {n} times on different data (with its clones, as cross-validation and "
                f"grid search make them), each fit designing and releasing at a record epsilon of {each} nats: a "
                f"record in the data of every fit is covered by {total} nats in total, not by one fit's epsilon "
                f"(the budgets compose). To spend one budget, design once on the whole file and pass the "
                f"manifest: PRAMTransformer(manifest=...)")


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
        The secret key (:func:`pramkit.kernel.rng.resolve_key`): it makes the DP counts
        and the draws reproducible.  ``None``: fresh randomness on every call.  Bytes are
        never shown (:meth:`get_params` gives them as a :class:`HiddenKey`); a pickled
        transformer holds them, so a key file's path keeps the key out of the pickle.

    Attributes
    ----------
    manifest_ : pramkit.Manifest
        The manifest designed (or given).
    feature_names_in_ : ndarray of str
        The names of the features seen on ``fit`` (when the data have them).
    n_features_in_ : int
        The number of features seen on ``fit``.

    Warns
    -----
    PramkitWarning
        On a fit that designs under the budget again on other data than the earlier fits of
        this transformer and of its clones (cross-validation, grid search): what the fits
        spend together on the records they share.

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
        from pramkit.engine.receipt import release_digest
        from pramkit.kernel.rng import resolve_key
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
            self._record_fit(manifest.record_epsilon,
                             None if key is None else (key.fingerprint, _digest(table), release_digest(manifest)))
        self.manifest_ = manifest
        return self

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters (scikit-learn's contract), a key given as bytes as a :class:`HiddenKey`.

        Parameters
        ----------
        deep : bool
            Also the parameters of contained estimators (there are none).

        Returns
        -------
        dict
            Parameter name -> value.  The key's :class:`HiddenKey` is made once per key and
            kept, so that :func:`sklearn.base.clone` finds the very object it passed.

        Examples
        --------
        >>> PRAMTransformer(epsilon=2.0, key=bytes(32)).get_params()["key"]
        <secret key, not shown>
        >>> PRAMTransformer(epsilon=2.0, key=bytes(32))
        PRAMTransformer(epsilon=2.0, key=<secret key, not shown>)
        """
        params = super().get_params(deep=deep)
        key = params.get("key")
        if isinstance(key, (bytes, bytearray)) and not isinstance(key, HiddenKey):
            shown = self.__dict__.get("_key_shown")
            if shown is None or shown[0] is not key or shown[1] != key:  # made again for a new (or changed) key
                shown = (key, HiddenKey(key))
                self._key_shown = shown
            params["key"] = shown[1]
        return params

    def __sklearn_clone__(self) -> PRAMTransformer:
        """A clone (:func:`sklearn.base.clone`) that shares this transformer's record of fits."""
        clone: PRAMTransformer = super().__sklearn_clone__()
        clone._fits = self._fit_log()
        return clone

    def _fit_log(self) -> _FitLog:
        """The record of fits of this transformer and its clones (made on first use)."""
        log = self.__dict__.get("_fits")
        if log is None:
            log = self._fits = _FitLog()
        return log

    def _record_fit(self, epsilon: float, keyed: tuple[str, str, str] | None) -> None:
        """Record a fit that designed under the budget; warn when it spends it again on other data."""
        log = self._fit_log()
        if log.add(epsilon, keyed) and len(log.spent) > 1:
            warnings.warn(log.message(), PramkitWarning, stacklevel=3)

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

    def __getstate__(self) -> dict[str, Any]:
        state: dict[str, Any] = super().__getstate__()
        state.pop("_key_shown", None)  # made again on demand
        return state

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # a missing value is kept missing, never perturbed
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.non_deterministic = self.key is None  # fresh noise and a fresh key on every call unless keyed
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def _digest(table: pa.Table) -> str:
    """A digest of the records of ``table`` (its columns' names, types and values, in order).

    Examples
    --------
    >>> a = pa.table({"sex": ["f", "m", None]})
    >>> _digest(a) == _digest(pa.table({"sex": ["f", "m", None]})), _digest(a) == _digest(a.slice(1))
    (True, False)
    """
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())
    return hashlib.blake2b(sink.getvalue(), digest_size=16).hexdigest()
