"""Condition (C1) of Cator et al. (risk/recognition.py) against a brute-force evaluation of (1)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pramkit.design.classic import randomized_response
from pramkit.errors import PramkitError
from pramkit.matrix import PramMatrix
from pramkit.risk.recognition import recognition_risk

LEVELS = (2, 3, 2, 3)
KEYS = ["a", "b", "c", "d"]


def _data(n, seed):
    rng = np.random.default_rng(seed)
    cols = {k: rng.choice(l, n, p=np.arange(l, 0, -1) / np.arange(l, 0, -1).sum()) for k, l in zip(KEYS, LEVELS)}
    return pd.DataFrame(cols)


def _brute(data, p, combos, alpha):
    """Literal (1): loops over record types m, combinations pi, values k0 and cells k."""
    cells = list(itertools.product(*[range(l) for l in LEVELS]))
    u0 = dict.fromkeys(cells, 0)
    for row in data[KEYS].itertuples(index=False):
        u0[tuple(row)] += 1
    out = {}
    for combo in combos:
        axes = [KEYS.index(v) for v in combo]
        for k0 in itertools.product(*[range(LEVELS[a]) for a in axes]):
            match = [i for i, k in enumerate(cells) if tuple(k[a] for a in axes) == k0]
            den = sum(u0[l] * sum(p[li, i] for i in match) for li, l in enumerate(cells))
            for mi, m in enumerate(cells):
                if u0[m] == 0 or den == 0:
                    continue
                out[(tuple(combo), k0, m)] = sum(p[mi, i] for i in match) / den
    return out


def _kron(mats):
    out = mats[0]
    for m in mats[1:]:
        out = np.kron(out, m)
    return out


def _source(data, streamed, folder):
    """The records as given, or their CSV file (each combination's table then counted as it is read)."""
    if not streamed:
        return data
    path = folder / "records.csv"
    data.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("reduce", [False, True])
def test_per_variable_matrices_against_brute_force(reduce, streamed, tmp_path):
    data = _data(60, 0)
    mats = {"b": randomized_response([0, 1, 2], 2.0), "d": PramMatrix(np.array(
        [[0.9, 0.1, 0.0], [0.05, 0.9, 0.05], [0.0, 0.2, 0.8]]))}
    alpha = 0.2
    res = recognition_risk(_source(data, streamed, tmp_path), KEYS, alpha=alpha, matrices=mats, reduce=reduce)
    p = _kron([mats[k].matrix if k in mats else np.eye(l) for k, l in zip(KEYS, LEVELS)])
    brute = _brute(data, p, list(itertools.combinations(KEYS, 3)), alpha)
    if not reduce:
        assert res.max_posterior == pytest.approx(max(brute.values()), rel=1e-12)
    expected = {(c, k0, tuple(m[KEYS.index(v)] for v in c)) for (c, k0, m), v in brute.items() if v > alpha}
    got = {(v.combination, v.released, v.record) for v in res.violations}
    assert got == expected and len(got) > 0
    for v in res.violations:
        m_match = [k for k in brute if k[0] == v.combination and k[1] == v.released
                   and tuple(k[2][KEYS.index(x)] for x in v.combination) == v.record]
        assert all(brute[k] == pytest.approx(v.posterior, rel=1e-12) for k in m_match)


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("reduce", [False, True])
def test_joint_matrix_against_brute_force(reduce, streamed, tmp_path):
    data = _data(40, 1)
    rng = np.random.default_rng(2)
    k = int(np.prod(LEVELS))
    p = 0.85 * np.eye(k) + 0.15 * rng.dirichlet(np.ones(k), size=k)
    alpha = 0.15
    res = recognition_risk(_source(data, streamed, tmp_path), KEYS, alpha=alpha, joint=PramMatrix(p), reduce=reduce)
    brute = _brute(data, p, list(itertools.combinations(KEYS, 3)), alpha)
    if not reduce:
        assert res.max_posterior == pytest.approx(max(brute.values()), rel=1e-12)
    expected = {(c, k0, m) for (c, k0, m), v in brute.items() if v > alpha}
    assert {(v.combination, v.released, v.record) for v in res.violations} == expected
    assert expected


def test_identity_gives_one_over_counts():
    # P = I: the posterior of a record is 1 / U_pi(k0) at its own value (sec. 2)
    data = _data(80, 3)
    res = recognition_risk(data, KEYS, alpha=0.99, combinations=[["a", "b"]], reduce=False)
    smallest = data.groupby(["a", "b"]).size().min()
    assert res.max_posterior == pytest.approx(1 / smallest)


def test_bad_alpha():
    with pytest.raises(PramkitError, match="alpha"):
        recognition_risk(_data(10, 0), KEYS, alpha=1.5)
    with pytest.raises(PramkitError, match="combination"):
        recognition_risk(_data(10, 0), KEYS, alpha=0.1, combinations=[["a", "zz"]])


def _same_on_file_and_frame(path, keys, **kw):
    """Condition C1 from the file (tables counted as it is streamed) and from the frame of its text columns."""
    from pramkit.io import read_table

    try:
        on_frame = recognition_risk(read_table(path, columns=keys), keys, **kw)
    except PramkitError as exc:
        with pytest.raises(type(exc)):
            recognition_risk(path, keys, **kw)
        return
    on_file = recognition_risk(path, keys, **kw)
    assert on_file == on_frame


def test_eusilc_from_the_file_is_that_of_the_frame():
    """Real records with missing values: every violation and posterior as from the frame."""
    from conftest import SDC_DATA

    path = SDC_DATA / "eusilc_laeken.csv"
    if not path.exists():
        pytest.skip("../shared/data/sdcmicro is not available")
    keys = ["db040", "rb090", "pb220a", "pl030"]
    _same_on_file_and_frame(path, keys, alpha=0.5, reduce=False)
    _same_on_file_and_frame(path, keys, alpha=0.5, matrices={"rb090": randomized_response(["female", "male"], 1.5)})


_TEXTS = st.sampled_from(["a", "b", " a", "Zürich", "日本", "x,y", 'q"', "NA", ""])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_TEXTS, _TEXTS, _TEXTS), min_size=2, max_size=30))
def test_small_files_with_missing_unicode_and_quotes(tmp_path, rows):
    frame = pd.DataFrame(rows, columns=["k1", "k2", "k3"])
    path = tmp_path / "r.csv"
    frame.to_csv(path, index=False)
    _same_on_file_and_frame(path, ["k1", "k2", "k3"], alpha=0.5, size=2, reduce=False)
