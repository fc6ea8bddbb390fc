"""The original frequency table of a PRAM-released file, estimated with numpy and pandas only.

Written by ``pramkit estimate --emit python``; it needs Python 3.9 or later, numpy and pandas, not
pramkit.  It reads the released file (CSV) and its manifest (JSON) and computes what
``pramkit estimate`` computes with its default estimator: the unbiased moment estimator
``T = (M^T)^-1 u`` of the original counts from the released counts ``u`` (Kronecker product of the
variables' matrices ``M``; identity on a column the manifest does not perturb), the covariance of
``T``, each cell's share of its group (of all records without ``BY``) with delta-method standard
errors, and normal intervals.

Without ``WEIGHTS`` the covariance is multinomial, ``A (diag(u) - u u^T / n) A^T`` with
``A = (M^T)^-1``, or PRAM's alone, ``A diag(u) A^T - diag(T)`` (``VARIANCE = "pram"``).  With
``WEIGHTS`` (and optionally ``STRATA`` and ``PSU``, primary sampling units nested in the strata)
``u`` is the weighted released count and its covariance the with-replacement ultimate-cluster
estimator ``sum_h n_h / (n_h - 1) sum_i (Y_hi - Ybar_h)(Y_hi - Ybar_h)^T`` over the PSU totals
``Y_hi`` (every record its own PSU without ``PSU``), which covers the design's variance and PRAM's
together; a record with a missing value adds nothing to any cell but stays in its stratum and PSU.

Run:   python THIS_FILE [OUT.csv]
It prints the table; with OUT.csv it also writes it there, numbers in full precision.
Change the settings below to tabulate other columns of the same release.
"""

from __future__ import annotations

import json
import math
import re
import sys
from statistics import NormalDist

import numpy as np
import pandas as pd

# ---- settings (written by pramkit) ----
RELEASED_FILE = "released.csv"
MANIFEST_FILE = "manifest.json"
VARS: list[str] = []
BY: list[str] = []
VARIANCE = "multinomial"  # "multinomial" or "pram" (without weights)
CONFIDENCE = 0.95
NA_STRINGS: list[str] = ["NA"]  # missing besides the empty field
CSV_SEP = ","
FILE_ENCODING = "utf-8"
MAX_CONDITION = 1e12
WEIGHTS: str | None = None  # the sampling weight column; None: an unweighted file
STRATA: str | None = None
PSU: str | None = None
SINGLE_PSU = "error"  # a stratum with one PSU: "error", "certainty" (adds nothing) or "center"
# ---- end of settings ----

NUMBER = re.compile(r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$")


def fail(message: str) -> None:
    """Stop with one line on stderr."""
    sys.exit(f"error: {message}")


def number_key(v: float) -> str:
    """A number as the manifest and pramkit spell it (integers without a decimal point)."""
    return str(int(v)) if v == round(v) and abs(v) < 2**53 else repr(float(v))


def label_text(label: object) -> str:
    """A category of the manifest as text."""
    return number_key(label) if isinstance(label, (int, float)) and not isinstance(label, bool) else str(label)


def distances(dist: dict, size: int) -> np.ndarray:
    """The public distances of an exponential mechanism (a matrix, or one point per category)."""
    if dist.get("matrix") is not None:
        return np.array(dist["matrix"], dtype=float).reshape(size, size)
    p = np.array(dist["points"], dtype=float).reshape(size, -1)
    if dist["kind"] == "ordinal":
        return np.abs(p[:, :1] - p[:, 0])
    if dist["kind"] == "euclidean":
        return np.sqrt((p[:, :1] - p[:, 0]) ** 2 + (p[:, 1:2] - p[:, 1]) ** 2)
    if dist["kind"] == "haversine":
        def km(lat1, lon1, lat2, lon2):
            p1, p2 = lat1 * math.pi / 180, lat2 * math.pi / 180
            h = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin((lon2 - lon1) * math.pi / 180 / 2) ** 2
            return 2 * 6371.0088 * np.arcsin(np.sqrt(np.clip(h, 0, 1)))
        lat1, lon1 = np.repeat(p[:, :1], size, axis=1), np.repeat(p[:, 1:2], size, axis=1)
        d = np.maximum(km(lat1, lon1, lat1.T, lon1.T), km(lat1.T, lon1.T, lat1, lon1))
        np.fill_diagonal(d, 0.0)
        return d
    fail(f"distances of kind {dist['kind']!r}: use pramkit estimate")
    raise AssertionError


def dense_matrix(entry: dict, size: int) -> np.ndarray:
    """A matrix of the manifest, dense, from its form."""
    form = entry.get("form", "dense")
    if form == "dense":
        return np.array(entry["matrix"], dtype=float).reshape(size, size)
    if form == "diagonal":
        m = np.repeat(np.array(entry["w"], dtype=float)[:, None], size, axis=1)
        np.fill_diagonal(m, entry["q"])
        return m
    if form == "truncated_geometric":
        a = math.exp(-entry["rate"])
        k = np.arange(size)
        m = (1 - a) / (1 + a) * a ** np.abs(k[:, None] - k[None, :])
        m[:, 0] = a**k / (1 + a)
        m[:, size - 1] = a ** (size - 1 - k) / (1 + a)
        return m
    if form == "blocks":
        m = np.zeros((size, size))
        for block in entry["blocks"]:
            members = np.array(block["members"], dtype=int)
            m[np.ix_(members, members)] = dense_matrix(block, len(members))
        return m
    if form == "exponential":
        w = np.exp(distances(entry["distances"], size) * (-entry["rate"] / 2))
        return w / w.sum(axis=1, keepdims=True)
    fail(f"a matrix in form {form!r}: this script reads the forms dense, diagonal, blocks, truncated_geometric "
         "and exponential; use pramkit estimate")
    raise AssertionError


def spelling_key(values: list[str]) -> list[str]:
    """One key per spelling of a value (surrounding white space, or numbers such as 3 and 3.0)."""
    stripped = [v.strip() for v in values]
    if all(NUMBER.match(v) for v in stripped):
        return [number_key(float(v)) for v in stripped]
    return stripped


def axis_codes(data: pd.DataFrame, name: str, perturbed: dict) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """A column's categories, each row's code (-1: missing) and its matrix (None: not perturbed)."""
    values = data[name]
    present = values.notna().to_numpy()
    v = perturbed.get(name)
    matrix = None
    if v is not None:
        if len(v["columns"]) != 1 or v.get("given"):
            fail(f"{name!r} is perturbed jointly or within strata: use pramkit estimate")
        labels = [label_text(c) for c in v["categories"]]
        matrix = dense_matrix(v, len(labels))
        outside = present & ~values.isin(labels).to_numpy()
        if outside.any():
            row = int(np.flatnonzero(outside)[0])
            fail(f"column {name!r}, row {row + 1}: {values.iloc[row]!r} is not a category of its matrix "
                 "(as the manifest writes it)")
    else:
        labels = list(pd.unique(values[present]))
        if not labels:
            fail(f"column {name!r} has no non-missing value")
        if len(set(spelling_key(labels))) < len(labels):
            fail(f"column {name!r} spells one value two ways (white space or numeric spelling)")
        numeric = all(NUMBER.match(x) for x in labels)
        labels = sorted(labels, key=float) if numeric else sorted(labels)
    codes = pd.Categorical(values, categories=labels).codes.astype(np.int64)
    return labels, codes, matrix


def ultimate_cluster(cells: np.ndarray, weights: np.ndarray, strata: np.ndarray, psu: np.ndarray | None,
                     n_cells: int) -> np.ndarray:
    """Covariance of the weighted released counts: sum_h n_h/(n_h-1) sum_i (Y_hi - Ybar_h)(Y_hi - Ybar_h)^T."""
    y = np.where(cells >= 0, weights, 0.0)
    c = np.where(cells >= 0, cells, 0)
    stratum, stratum_labels = pd.factorize(strata)
    if psu is None:  # every record its own PSU
        unit = np.arange(len(cells))
    else:
        unit = pd.factorize(pd.MultiIndex.from_arrays([stratum, psu]))[0]
    n_units = int(unit.max()) + 1
    totals = np.bincount(unit * n_cells + c, y, minlength=n_units * n_cells).reshape(n_units, n_cells)
    unit_stratum = np.zeros(n_units, dtype=np.int64)
    unit_stratum[unit] = stratum
    grand = totals.sum(axis=0) / n_units
    out = np.zeros((n_cells, n_cells))
    for h, label in enumerate(stratum_labels):
        block = totals[unit_stratum == h]
        n = block.shape[0]
        if n == 1:
            if SINGLE_PSU == "error":
                fail(f"stratum {label!r} has a single PSU, so no variance of its own; set SINGLE_PSU to "
                     "'certainty' or 'center'")
            if SINGLE_PSU == "center":
                out += np.outer(block[0] - grand, block[0] - grand)
            continue
        d = block - block.mean(axis=0)
        out += (d.T @ d) * (n / (n - 1))
    return out


def read_released(axes: list[str], design: list[str]) -> pd.DataFrame:
    """The released file's tabulated and design columns, as text (missing: NaN)."""
    encoding = "utf-8-sig" if FILE_ENCODING.lower() in ("utf-8", "utf8") else FILE_ENCODING
    data = pd.read_csv(RELEASED_FILE, dtype=str, keep_default_na=False, na_values=["", *NA_STRINGS],
                       sep=CSV_SEP, encoding=encoding, usecols=lambda c: c in axes or c in design)
    absent = [a for a in [*axes, *design] if a not in data.columns]
    if absent:
        fail(f"column(s) {', '.join(absent)} are not in {RELEASED_FILE}")
    return data


def table_axes(data: pd.DataFrame, axes: list[str],
               perturbed: dict) -> tuple[list[list[str]], list[np.ndarray], np.ndarray]:
    """Each axis's categories and codes, and A = (M^T)^-1 of the table (identity on an unperturbed axis)."""
    levels, codes, matrices, condition = [], [], [], 1.0
    for a in axes:
        labels, code, m = axis_codes(data, a, perturbed)
        levels.append(labels)
        codes.append(code)
        if m is None:
            m = np.eye(len(labels))
        else:
            s = np.linalg.svd(m, compute_uv=False)
            if s.min() <= s.max() * len(s) * np.finfo(float).eps:
                fail(f"the matrix of {a!r} is singular: use pramkit estimate (maximum likelihood)")
            condition *= s.max() / s.min()
        matrices.append(m)
    if condition > MAX_CONDITION:
        fail(f"the matrices are badly conditioned (condition number {condition:.3g}): use pramkit estimate")
    full = np.ones((1, 1))
    for m in matrices:
        full = np.kron(full, m)
    return levels, codes, np.linalg.inv(full.T)  # cells in C order


def cell_codes(codes: list[np.ndarray], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's cell of the table (-1: a missing value), and whether it has none missing."""
    stacked = np.vstack(codes)
    complete = np.asarray((stacked >= 0).all(axis=0))
    cells = np.full(stacked.shape[1], -1, dtype=np.int64)
    cells[complete] = np.ravel_multi_index(tuple(stacked[:, complete]), shape)
    return cells, complete


def unweighted_estimate(cells: np.ndarray, complete: np.ndarray, a_inv: np.ndarray,
                        n_cells: int) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """The released counts u, their total, the estimate A u and its covariance (multinomial or PRAM's)."""
    u = np.bincount(cells[complete], minlength=n_cells).astype(float)
    n = u.sum()
    if n == 0:
        fail("every row has a missing value in the columns tabulated")
    estimate = a_inv @ u
    cov = (a_inv * u) @ a_inv.T
    cov -= np.outer(estimate, estimate) / n if VARIANCE == "multinomial" else np.diag(estimate)
    return u, n, estimate, cov


def weighted_estimate(data: pd.DataFrame, cells: np.ndarray, complete: np.ndarray, a_inv: np.ndarray,
                      n_cells: int) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """The weighted released counts u, their total, the estimate A u and its covariance (ultimate clusters)."""
    weights = pd.to_numeric(data[WEIGHTS], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(weights) | (weights < 0)
    if bad.any():
        fail(f"column {WEIGHTS!r}, row {int(np.flatnonzero(bad)[0]) + 1}: a weight must be a finite number >= 0")
    for col in (STRATA, PSU):
        if col is not None and data[col].isna().any():
            fail(f"column {col!r} has a missing value at row {int(np.flatnonzero(data[col].isna())[0]) + 1}")
    strata = np.zeros(len(data), dtype=np.int64) if STRATA is None else data[STRATA].to_numpy()
    psu = None if PSU is None else data[PSU].to_numpy()
    u = np.bincount(cells[complete], weights[complete], minlength=n_cells)
    n = u.sum()
    if n == 0:
        fail("every weight of the rows tabulated is zero")
    estimate = a_inv @ u
    cov = a_inv @ ultimate_cluster(cells, weights, strata, psu, n_cells) @ a_inv.T
    return u, n, estimate, cov


def shares(estimate: np.ndarray, cov: np.ndarray, index: np.ndarray, shape: tuple[int, ...],
           n_vars: int) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's share of its group (the last axes, BY) and its standard error: gradient (e_c - r_c 1_g) / T_g."""
    n_cells = len(estimate)
    group_axes = list(range(n_vars, len(shape)))
    group = (np.ravel_multi_index(tuple(index[group_axes]), tuple(shape[g] for g in group_axes))
             if group_axes else np.zeros(n_cells, dtype=np.int64))
    totals = np.bincount(group, estimate)[group]
    same = group[:, None] == group[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = estimate / totals
        jac = (np.eye(n_cells) - share[:, None] * same) / totals[:, None]
        share_var = np.einsum("ij,jk,ik->i", jac, cov, jac)
    share_se = np.where(np.isfinite(share_var), np.sqrt(np.maximum(share_var, 0.0)), np.nan)
    return share, share_se


def main(argv: list[str]) -> None:
    """Estimate the table and print it (and write it to ``argv[0]`` when given)."""
    with open(MANIFEST_FILE, encoding="utf-8") as f:
        manifest = json.load(f)
    perturbed = {v["name"]: v for v in manifest["variables"]}
    axes = VARS + BY
    data = read_released(axes, [c for c in (WEIGHTS, STRATA, PSU) if c is not None])
    levels, codes, a_inv = table_axes(data, axes, perturbed)
    shape = tuple(len(x) for x in levels)
    n_cells = int(np.prod(shape))
    cells, complete = cell_codes(codes, shape)
    dropped = int((~complete).sum())
    if WEIGHTS is None:
        u, n, estimate, cov = unweighted_estimate(cells, complete, a_inv, n_cells)
    else:
        u, n, estimate, cov = weighted_estimate(data, cells, complete, a_inv, n_cells)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    index = np.indices(shape).reshape(len(shape), -1)
    share, share_se = shares(estimate, cov, index, shape, len(VARS))

    z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
    result = pd.DataFrame({a: [levels[i][k] for k in index[i]] for i, a in enumerate(axes)})
    result["released"] = u
    result["estimate"] = estimate
    result["se"] = se
    result["ci_low"] = estimate - z * se
    result["ci_high"] = estimate + z * se
    result["proportion"] = share
    result["proportion_se"] = share_se
    result["proportion_ci_low"] = share - z * share_se
    result["proportion_ci_high"] = share + z * share_se

    how = (f"weighted by {WEIGHTS}" + (f", strata {STRATA}" if STRATA else "") + (f", PSUs {PSU}" if PSU else "")
           if WEIGHTS else f"variance: {VARIANCE}")
    print(f"Estimated original frequencies of {' x '.join(axes)} (unbiased moment estimator; {how})")
    print(f"n = {n:.10g} ({dropped} rows with a missing value left out)\n")
    print(result.to_string(index=False))
    if argv:
        result.to_csv(argv[0], index=False, float_format="%.17g", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
