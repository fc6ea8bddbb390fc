"""Estimation benchmarks: run ``python benchmarks/bench_estimate.py``.

1. Standard errors of a table of independently perturbed variables: the
   factored formula (axis by axis, no K x K matrix) against the dense
   computation ``diag(A Cov(u) A^T)`` with ``A = (⊗ M_a^T)^{-1}`` built by np.kron.
2. estimate_table on the census-like file (953 076 rows, 3 perturbed
   variables), against ``pandas.crosstab`` of the same columns (the cost of
   just counting the released table).
3. The MLE (accelerated EM, finished by Newton steps) on the same table, against the moment
   estimator, and accelerated EM alone (``newton=False``).
4. The MLE of a real table whose maximum has many empty cells (the sdcMicro test data, water x
   roof randomized within the urban/rural strata at epsilon 1: every cell crossing two strata is
   empty), against accelerated EM alone; skipped without ``../shared``.
5. The standard errors of a singular table (36 x 28 cells, both matrices singular: rank 35 x 26 =
   910): the identifiable covariance and every identifiable cell's variance, then the shares within
   the categories of the first variable, against one LAPACK inverse of the 910 x 910 information
   matrix (the floor: the one dense step the computation cannot avoid).
6. The corrected regression of EU-SILC's employee income on economic status (pl030, released
   by randomized response at epsilon 3) and sex, with keys where plain EM converges in about
   200 steps and where it crawls, against a least-squares fit of the released values (the
   naive fit's floor); skipped without ``../shared``.

Every figure is a ratio to a baseline measured in the same run.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from timing import best_of

from pramkit import Manifest, SecretKey, perturb_codes
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.design.classic import randomized_response
from pramkit.estimate import estimate_table, mle_estimate, moment_estimate
from pramkit.estimate.regression import corrected_regression


def dense_se(u: np.ndarray, mats) -> np.ndarray:
    big = np.ones((1, 1))
    for m in mats:
        big = np.kron(big, m.matrix)
    a = np.linalg.inv(big.T)
    lam = u.ravel() / u.sum()
    cov = u.sum() * a @ (np.diag(lam) - np.outer(lam, lam)) @ a.T
    return np.sqrt(np.diag(cov))


def bench_standard_errors() -> None:
    rng = np.random.default_rng(0)
    for sizes in [(9, 11, 6), (9, 11, 6, 4)]:
        mats = [randomized_response(list(range(s)), 2.0) for s in sizes]
        u = rng.integers(50, 500, size=sizes).astype(float)
        assert np.allclose(moment_estimate(u, mats).se.ravel(), dense_se(u, mats), rtol=1e-8)
        factored = best_of(lambda: moment_estimate(u, mats))
        dense = best_of(lambda: dense_se(u, mats), repeat=1)
        print(f"standard errors, {'x'.join(map(str, sizes))} = {u.size} cells: factored {factored * 1e3:.2f} ms, "
              f"dense K x K {dense * 1e3:.0f} ms; dense / factored = {dense / factored:.0f}x")


def bench_census() -> None:
    original = census()
    names = ["age", "education", "marital_status"]
    key = SecretKey(bytes(32), "benchmark")
    matrices = {v: randomized_response(list(CENSUS_VARIABLES[v]), 2.0) for v in names}
    released = original[names + ["sex"]].copy()
    for v, m in matrices.items():
        codes = perturb_codes(original[v].cat.codes.to_numpy(), m, key=key, variable=v)
        released[v] = pd.Categorical.from_codes(codes, categories=list(CENSUS_VARIABLES[v]))
    manifest = Manifest.of(matrices)
    rows = len(released)
    crosstab = best_of(lambda: pd.crosstab([released["age"], released["education"]],
                                           [released["marital_status"], released["sex"]]))
    moment = best_of(lambda: estimate_table(released, manifest, names, by="sex"))
    print(f"estimate_table, {rows} rows, age x education x marital_status by sex (1188 cells): "
          f"{moment:.3f} s; pandas.crosstab {crosstab:.3f} s; ratio {moment / crosstab:.2f}")
    res = estimate_table(released, manifest, names, by="sex")
    u, mats = res.table.released, [matrices[v] for v in names] + [None]
    t_moment = best_of(lambda: moment_estimate(u, mats))
    t_mle = best_of(lambda: mle_estimate(u, mats), repeat=1)
    t_uniform = best_of(lambda: mle_estimate(u, mats, start="uniform"), repeat=1)
    t_em = best_of(lambda: mle_estimate(u, mats, newton=False), repeat=1)
    mle = mle_estimate(u, mats)
    uni = mle_estimate(u, mats, start="uniform")
    em = mle_estimate(u, mats, newton=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # plain EM is expected to stop short
        plain = mle_estimate(u, mats, accelerate=False, max_iter=em.iterations)
    print(f"  moment estimator on the counted table ({int((res.table.counts < 0).sum())} negative cells): "
          f"{t_moment * 1e3:.2f} ms")
    print(f"  MLE (SQUAREM-accelerated EM, then Newton steps) from the moment start: {mle.iterations} iterations "
          f"to a log-likelihood gap <= {mle.loglik_gap:.2g} nats, {t_mle:.2f} s ({t_mle / t_moment:.0f}x the moment "
          f"estimator); from uniform: {uni.iterations} iterations, {t_uniform:.2f} s ({t_uniform / t_moment:.0f}x)")
    print(f"  accelerated EM alone (newton=False): {em.iterations} updates to a gap <= {em.loglik_gap:.2g} nats, "
          f"{t_em:.2f} s")
    print(f"  plain EM after the same {plain.iterations} updates: gap bound {plain.loglik_gap:.3g} nats "
          f"(log-likelihood {em.loglik - plain.loglik:.3g} nats below the accelerated one)")


def bench_empty_cells() -> None:
    from pramkit import design_planned, perturb_frame, plan_release

    source = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "testdata.csv"
    if not source.is_file():
        print(f"MLE with many empty cells: skipped ({source} is not available)")
        return
    data = pd.read_csv(source, dtype=str)
    key = SecretKey(bytes(range(32)), "benchmark")
    plan = plan_release(["water", "roof"], method="rr", epsilon=1.0, strata="urbrur")
    manifest = design_planned(data, plan, key=key).manifest
    res = estimate_table(perturb_frame(data, manifest, key=key).data, manifest, ["water", "roof"], estimator="mle")
    u, mats = res.table.released, [manifest[v].release_matrix for v in ("water", "roof")]
    t_mle = best_of(lambda: mle_estimate(u, mats))
    mle = mle_estimate(u, mats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # EM alone is expected to stop short
        t_em = best_of(lambda: mle_estimate(u, mats, newton=False), repeat=1)
        em = mle_estimate(u, mats, newton=False)
    print(f"MLE of water x roof within urban/rural strata, sdcMicro test data ({int(res.n)} rows, "
          f"{u.size} cells, epsilon 1): {mle.iterations} iterations to a gap <= {mle.loglik_gap:.2g} nats, "
          f"{t_mle:.2f} s; accelerated EM alone: {em.iterations} updates, gap {em.loglik_gap:.2g} nats "
          f"(converged {em.converged}), {t_em:.2f} s")


def _singular(size: int, merged: int, rng: np.random.Generator) -> np.ndarray:
    """A random transition matrix of ``size`` categories whose first ``merged`` rows are one row (rank
    ``size - merged + 1``)."""
    m = rng.uniform(0.0, 1.0, (size, size)) + size * np.eye(size)
    m[1:merged] = m[0]
    return m / m.sum(axis=1, keepdims=True)


def bench_singular() -> None:
    from pramkit.estimate.identifiability import identifiability
    from pramkit.estimate.singular import IdentifiableCovariance

    rng = np.random.default_rng(4)
    mats = [_singular(36, 2, rng), _singular(28, 3, rng)]
    p = rng.dirichlet(np.ones(36 * 28)).reshape(36, 28)
    lam = mats[0].T @ p @ mats[1]
    n = 100_000
    ident = np.outer(identifiability(mats[0]).identifiable, identifiability(mats[1]).identifiable)

    def standard_errors() -> None:
        cov = IdentifiableCovariance(mats, lam, n * p, n, "multinomial")
        cov.cell_variances(ident)

    def shares() -> None:
        IdentifiableCovariance(mats, lam, n * p, n, "multinomial").share_variances([0], ident)

    rank = IdentifiableCovariance(mats, lam, n * p, n, "multinomial").r_p
    block = rng.normal(size=(rank, rank))
    block = block @ block.T + rank * np.eye(rank)
    floor = best_of(lambda: np.linalg.inv(block))
    cells, within = best_of(standard_errors), best_of(shares, repeat=1)
    print(f"standard errors of a singular 36 x 28 table (rank {rank}): cells {cells:.3f} s "
          f"({cells / floor:.1f}x one {rank} x {rank} inverse, {floor * 1e3:.1f} ms); shares within the first "
          f"variable {within:.3f} s ({within / floor:.1f}x)")


def bench_regression() -> None:
    source = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "eusilc_laeken.csv"
    if not source.is_file():
        print(f"corrected regression: skipped ({source} is not available)")
        return
    raw = pd.read_csv(source, usecols=["pl030", "py010n", "rb090"]).dropna()
    labels = [str(k) for k in range(1, 8)]
    matrix = randomized_response(labels, 3.0)
    manifest = Manifest.of({"pl030": matrix})
    print(f"corrected regression py010n ~ pl030 + rb090, EU-SILC ({len(raw)} rows), pl030 at epsilon 3:")
    for key in (2, 4):
        codes = perturb_codes(raw["pl030"].astype(int).to_numpy() - 1, matrix,
                              key=SecretKey(key.to_bytes(32, "big"), f"k{key}"), variable="pl030")
        frame = pd.DataFrame({"py010n": raw["py010n"].to_numpy(), "pl030": np.array(labels)[codes],
                              "rb090": raw["rb090"].to_numpy()})
        design = np.column_stack([np.ones(len(frame)), pd.get_dummies(frame["pl030"]).to_numpy(float)[:, 1:],
                                  (frame["rb090"] == "male").to_numpy(float)])
        floor = best_of(lambda: np.linalg.lstsq(design, frame["py010n"].to_numpy(), rcond=None))
        fit = corrected_regression(frame, "py010n ~ pl030 + rb090", manifest, method="em")
        seconds = best_of(lambda: corrected_regression(frame, "py010n ~ pl030 + rb090", manifest, method="em"))
        print(f"  key {key}: {fit.iterations} EM steps (converged {fit.converged}), standard errors and the "
              f"naive fit included: {seconds:.3f} s; one least-squares fit {floor * 1e3:.2f} ms; "
              f"ratio {seconds / floor:.0f}")


if __name__ == "__main__":
    bench_standard_errors()
    bench_census()
    bench_empty_cells()
    bench_singular()
    bench_regression()
