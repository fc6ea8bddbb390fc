"""The marginals of a model from its calibrated junction tree (pramkit.synthesize_marginals), against the joint
table summed by brute force: on sdcMicro's real testdata (the tables a model pgm fits to, with a rule's zeros),
and on factors Hypothesis draws (zeros, variables in no factor, parts of the tree that share no variable)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.synthesize_marginals import Calibrated

TESTDATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "testdata.csv"


def product(factors: list[tuple[tuple[str, ...], np.ndarray]], sizes: dict[str, int]) -> np.ndarray:
    """The factors' product over every variable (axes in ``sizes``' order; a variable in no factor uniform)."""
    names = list(sizes)
    joint = np.ones([sizes[v] for v in names])
    for cl, t in factors:
        order = sorted(range(len(cl)), key=lambda a: names.index(cl[a]))
        joint = joint * np.transpose(t, order).reshape([sizes[v] if v in cl else 1 for v in names])
    return joint


def brute(factors: list[tuple[tuple[str, ...], np.ndarray]], sizes: dict[str, int], r: tuple[str, ...]
          ) -> np.ndarray:
    """The joint table, normalized, summed onto ``r`` (axes in ``r``'s order)."""
    names = list(sizes)
    joint = product(factors, sizes)
    joint = joint / joint.sum()
    out = joint.sum(axis=tuple(i for i, v in enumerate(names) if v not in r))
    kept = [v for v in names if v in r]
    return np.transpose(out, [kept.index(v) for v in r])


def test_the_tables_of_real_records_with_a_rule() -> None:
    """Factors from sdcMicro's testdata: each pair of a chain of its key variables' 2-way counts over the
    1-way counts (a tree-shaped model, as a fit of those tables gives), and a rule's zeros (no urban record
    with roof 4) that cut cells out.  Every 1-, 2- and 3-way marginal equals the brute-force joint's."""
    if not TESTDATA.is_file():
        pytest.skip(f"{TESTDATA} is not available")
    frame = pd.read_csv(TESTDATA)
    names = ["urbrur", "roof", "walls", "water", "sex"]
    codes = {v: pd.Categorical(frame[v]).codes for v in names}
    sizes = {v: int(codes[v].max()) + 1 for v in names}
    factors = []
    for a, b in [*itertools.pairwise(names), ("walls", "sex")]:  # a cycle (roof, walls, water, sex): triangulated
        counts = np.zeros((sizes[a], sizes[b]))
        np.add.at(counts, (codes[a], codes[b]), 1.0)
        factors.append(((a, b), (counts + 0.5) / (counts.sum(axis=1, keepdims=True) + 0.5)))
    rule = np.ones((sizes["urbrur"], sizes["roof"]))
    rule[0, min(3, sizes["roof"] - 1)] = 0.0
    factors.append((("urbrur", "roof"), rule))
    tree = Calibrated(factors, sizes)
    for m in (1, 2, 3):
        for r in itertools.permutations(names, m):
            np.testing.assert_allclose(tree.marginal(r), brute(factors, sizes, r), rtol=0, atol=1e-13)
    assert tree.marginal(("urbrur", "roof"))[0, min(3, sizes["roof"] - 1)] == 0


@st.composite
def models(draw: st.DrawFn) -> tuple[list[tuple[tuple[str, ...], np.ndarray]], dict[str, int]]:
    n = draw(st.integers(1, 6))
    names = [f"v{i}" for i in range(n)]
    sizes = {v: draw(st.integers(1, 3)) for v in names}
    factors = []
    for _ in range(draw(st.integers(0, 6))):
        cl = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)))
        cells = int(np.prod([sizes[v] for v in cl]))
        values = draw(st.lists(st.sampled_from([0.0, 1e-3, 0.5, 1.0, 2.0, 7.0]), min_size=cells, max_size=cells))
        factors.append((cl, np.array(values).reshape([sizes[v] for v in cl])))
    return factors, sizes


@settings(max_examples=300, deadline=None)
@given(models(), st.data())
def test_every_marginal_equals_the_brute_force_joints(model, data) -> None:
    """Any set of up to three variables, in any order, from factors Hypothesis draws; factors whose product is
    zero everywhere are refused with ``FloatingPointError``, as the brute force finds them."""
    factors, sizes = model
    names = list(sizes)
    r = tuple(data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=min(3, len(names)), unique=True)))
    if not product(factors, sizes).sum() > 0:
        with pytest.raises(FloatingPointError):
            Calibrated(factors, sizes)
        return
    np.testing.assert_allclose(Calibrated(factors, sizes).marginal(r), brute(factors, sizes, r), rtol=0,
                               atol=1e-12)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[dict[str, int], list[tuple[str, ...]]]:
    n = draw(st.integers(1, 9))
    names = [f"v{i}" for i in range(n)]
    sizes = {v: draw(st.sampled_from([1, 2, 3, 5, 20, 100])) for v in names}
    cliques = [(v,) for v in names]
    for _ in range(draw(st.integers(0, 12))):
        cliques.append(tuple(draw(st.lists(st.sampled_from(names), min_size=2, max_size=3, unique=True)))
                       if n > 1 else (names[0],))
    return sizes, draw(st.permutations(cliques))


@settings(max_examples=500, deadline=None)
@given(graphs())
def test_the_cells_counted_on_sets_are_mbis(graph) -> None:
    """``tree_cells`` gives the cells of the junction tree mbi makes (its greedy order and its tree-shaped case,
    ties included), for any cliques over up to nine variables with each variable's own clique among them."""
    import warnings

    from pramkit.synthesize_marginals import tree_cells

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from mbi import Domain, junction_tree
    sizes, cliques = graph
    domain = Domain(list(sizes), list(sizes.values()))
    tree, _ = junction_tree.make_junction_tree(domain, cliques)
    assert tree_cells(sizes, cliques) == sum(domain.size(cl) for cl in junction_tree.maximal_cliques(tree))
