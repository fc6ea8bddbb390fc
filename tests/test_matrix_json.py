"""The serialiser of a matrix (PramMatrix.to_dict / from_dict, pramkit.matrix.FORMS), the manifest
and the design record that write through it, and the record's figures of compact matrices.

References the code did not produce: manifests written before the serialiser existed
(tests/fixtures/manifests, byte for byte), dense figures derived by hand, the dense
mutual information, and a brute-force rebuild of the general design's law.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.design.measures import information_kept
from pramkit.distances import Distances, euclidean_distances, ordinal_distances
from pramkit.errors import ManifestError
from pramkit.information import mutual_information
from pramkit.manifest import Manifest
from pramkit.matrix import FORMS, PramMatrix, Provenance
from pramkit.release.record import MAX_DENSE_RECORD, record_matrix

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "manifests"


def _builders() -> dict:
    spec = importlib.util.spec_from_file_location("manifest_fixtures", FIXTURES / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MANIFESTS


@pytest.mark.parametrize("form", sorted(_builders()))
def test_manifests_are_byte_identical_to_those_written_before_the_serialiser(form):
    reference = (FIXTURES / f"{form}.json").read_text(encoding="utf-8")
    built = _builders()[form]()
    assert built.to_json() == reference
    assert Manifest.read(FIXTURES / f"{form}.json") == built


def test_every_form_has_a_fixture():
    assert set(FORMS) == set(_builders()) == {p.stem for p in FIXTURES.glob("*.json")}


def _every_form(s: int, rng: np.random.Generator) -> list[PramMatrix]:
    """One matrix of each form on s >= 2 categories."""
    cats = [f"c{i}" for i in range(s)]
    dense = rng.dirichlet(np.ones(s), size=s)
    q = rng.uniform(0.2, 0.9, s)
    half = s // 2
    parts = [PramMatrix.from_diagonal(q[:half] if half > 1 else [1.0], cats[:half]),
             PramMatrix(rng.dirichlet(np.ones(s - half), size=s - half), cats[half:])] if half else []
    blocks = PramMatrix.block_diagonal(parts, cats[::-1]) if parts else PramMatrix.identity(cats)
    xy = np.column_stack([np.arange(s, dtype=float), rng.uniform(0, 1, s)])
    return [PramMatrix(dense, cats, Provenance("user", {"p": [0.5]}, 0.25, "nats", {"optimal": True}, 1.0)),
            PramMatrix.from_diagonal(q, cats), blocks,
            PramMatrix.truncated_geometric(float(rng.uniform(0.05, 2)), cats),
            PramMatrix.exponential(float(rng.uniform(0.1, 2)), ordinal_distances(cats)),
            PramMatrix.exponential(0.7, euclidean_distances(cats, xy))]


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2 ** 32 - 1))
def test_round_trip_through_json_keeps_entries_epsilon_and_form(s, seed):
    for m in _every_form(s, np.random.default_rng(seed)):
        text = json.dumps(m.to_dict(), allow_nan=False)
        back = PramMatrix.from_dict(json.loads(text))
        assert back == m and back.form == m.form
        assert np.array_equal(back.matrix, m.matrix)          # entrywise, bit for bit
        assert back.epsilon == m.epsilon and back.block_epsilon == m.block_epsilon


def test_dense_figures_of_tiny_matrices_derived_by_hand():
    # truncated geometric, rate log 3: a = 1/3, inner (1 - a)/(1 + a) = 1/2, ends a^d / (1 + a) = 3/4 a^d
    d = record_matrix(PramMatrix.truncated_geometric(math.log(3), ["a", "b", "c"]))
    expected = [[3 / 4, 1 / 6, 1 / 12], [1 / 4, 1 / 2, 1 / 4], [1 / 12, 1 / 6, 3 / 4]]
    assert np.allclose(d["matrix"], expected, rtol=1e-15, atol=0)
    assert d["rate"] == math.log(3) and math.isclose(d["epsilon"], 2 * math.log(3))
    # form (8): q = (0.5, 0.8), w = (1 - q) / (S - 1)
    d = record_matrix(PramMatrix.from_diagonal([0.5, 0.8, 0.6]))
    assert np.allclose(d["matrix"], [[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]], rtol=1e-15, atol=0)
    # exponential over steps at rate 2 log 2: weights 2^-d, row 0 = (1, 1/2) / (3/2)
    d = record_matrix(PramMatrix.exponential(2 * math.log(2), ordinal_distances(["x", "y"])))
    assert np.allclose(d["matrix"], [[2 / 3, 1 / 3], [1 / 3, 2 / 3]], rtol=1e-15, atol=0)
    # blocks: a kept code and a 2 x 2 block, zeros between
    m = PramMatrix.block_diagonal([PramMatrix.identity(["n/a"]), PramMatrix([[0.75, 0.25], [0.5, 0.5]], ["u", "v"])],
                                  ["u", "n/a", "v"])
    d = record_matrix(m)
    assert d["matrix"] == [[0.75, 0.0, 0.25], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]]
    assert [b["members"] for b in d["blocks"]] == [[1], [0, 2]]


def test_the_dense_figure_stops_at_the_limit_for_compact_forms_only():
    big = MAX_DENSE_RECORD + 1
    assert "matrix" not in record_matrix(PramMatrix.truncated_geometric(0.5, range(big)))
    assert "matrix" not in record_matrix(PramMatrix.from_diagonal(np.full(big, 0.5)))
    assert len(record_matrix(PramMatrix(np.full((big, big), 1 / big)))["matrix"]) == big  # the form's own field


@pytest.mark.parametrize("change, message", [
    ({"form": "sparse"}, r"field 'v\.form' must be one of \['dense', 'diagonal'"),
    ({"categories": []}, r"field 'v\.categories' must be a non-empty list"),
    ({"categories": [{"a": 1}, "b"]}, r"field 'v\.categories\[0\]' must be a string, number or null"),
    ({"q": [0.5, "x"]}, r"field 'v\.q\[1\]' must be a number"),
    ({"w": [0.5]}, r"field 'v\.w' has 1 entries but 'v\.categories' has 2 labels"),
    ({"design": {"seconds": "soon"}}, r"field 'v\.design\.seconds' must be a number or null"),
    ({"design": {"method": None}}, r"field 'v\.design\.method' must be a string"),
])
def test_reading_names_the_malformed_field(change, message):
    d = {**PramMatrix.from_diagonal([0.5, 0.5], ["a", "b"]).to_dict(), **change}
    with pytest.raises(ManifestError, match=message):
        PramMatrix.from_dict(d, "v")


def test_reading_other_forms_names_the_malformed_field():
    geo = PramMatrix.truncated_geometric(0.5, ["a", "b"]).to_dict()
    with pytest.raises(ManifestError, match=r"field 'v\.rate' must be a number"):
        PramMatrix.from_dict({**geo, "rate": True}, "v")
    expo = PramMatrix.exponential(0.5, Distances(["a", "b"], [[0, 1], [1, 0]])).to_dict()
    with pytest.raises(ManifestError, match=r"field 'v\.distances\.matrix' must be a list of numbers"):
        PramMatrix.from_dict({**expo, "distances": {**expo["distances"], "matrix": [[0, "1"], [1, 0]]}}, "v")
    with pytest.raises(ManifestError, match=r"field 'v\.distances\.edges' does not generate the distances"):
        PramMatrix.from_dict({**expo, "distances": {**expo["distances"], "kind": "graph", "edges": [[0, 1]],
                                                    "matrix": [[0, 2], [2, 0]]}}, "v")
    blocks = PramMatrix.block_diagonal([PramMatrix.identity(["a"]), PramMatrix.identity(["b"])]).to_dict()
    with pytest.raises(ManifestError, match=r"field 'v\.blocks' covers 1 positions"):
        PramMatrix.from_dict({**blocks, "blocks": blocks["blocks"][:1]}, "v")


def test_provenance_round_trip():
    prov = Provenance("dp_optimal", {"epsilon": 1.0, "p": [0.5, 0.5]}, 0.25, "mutual_information_nats",
                      {"optimal": True}, 0.5)
    assert Provenance.from_dict(json.loads(json.dumps(prov.to_dict()))) == prov
    assert Provenance.from_dict({}) == Provenance()


# -- the design record's figures, without densifying --------------------------------------------

@settings(max_examples=20, deadline=None)
@given(st.integers(2, 30), st.integers(0, 2 ** 32 - 1))
def test_information_and_measures_agree_with_the_dense_computation(s, seed):
    from pramkit.design.measures import measure

    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(s))
    for m in _every_form(s, rng):
        assert math.isclose(information_kept(p, m), mutual_information(p, m.matrix), rel_tol=1e-9, abs_tol=1e-12)
        if m.blocks is None:
            mine, dense = measure(m, p).__dict__, measure(PramMatrix(m.matrix), p).__dict__
            for key, value in dense.items():
                if isinstance(value, float):
                    assert math.isclose(mine[key], value, rel_tol=1e-9, abs_tol=1e-12), key
                elif key != "epsilon":
                    assert mine[key] == value, key


def test_block_information_is_the_block_entropy_plus_the_information_within():
    """I = H(block) + sum_b P(b) I(X; Z | b), against the dense matrix, a block given no mass included."""
    rng = np.random.default_rng(3)
    parts = [PramMatrix.truncated_geometric(0.4, ["a", "b", "c"]), PramMatrix.from_diagonal([0.6, 0.7], ["d", "e"]),
             PramMatrix.exponential(1.0, ordinal_distances(["f", "g", "h"])), PramMatrix.identity(["i"])]
    m = PramMatrix.block_diagonal(parts)
    for p in (rng.dirichlet(np.ones(9)), np.array([0, 0, 0, 0.5, 0.5, 0, 0, 0, 0.0])):
        assert math.isclose(information_kept(p, m), mutual_information(p, m.matrix), rel_tol=1e-12, abs_tol=1e-15)


def _design(s: int, method: str):
    import pandas as pd

    from pramkit.release.pipeline import design_planned
    from pramkit.release.plan import plan_release

    cats = [f"b{i:06d}" for i in range(s)]
    data = pd.DataFrame({"v": np.array(cats)[np.random.default_rng(2).integers(0, s, 50_000)]})
    family = ({"options": {"metric_epsilon": 0.3, "mechanism": "geometric"}} if method == "metric"
              else {"epsilon": 3.0})
    plan = plan_release(["v"], method=method, categories={"v": cats}, **family)
    return design_planned(data, plan, rng=random.Random(1), quiet=True)


@pytest.mark.parametrize("method", ["metric", "dp"])   # a truncated geometric design; a form (8) design
def test_record_size_at_large_s(method):
    """At S = 3000 (100 000 categories: tests/test_scale_contract.py, with the memory traced)."""
    for s in (3000,):
        release = _design(s, method)
        manifest, record = release.manifest.to_json(), release.record.to_json()
        assert len(record) < 5 * len(manifest), (s, len(record), len(manifest))
        matrix = json.loads(record)["matrices"]["v"]
        assert matrix["form"] == release.manifest["v"].matrix.form != "dense" and "matrix" not in matrix
        assert release.record.variables["v"]["information_nats"] > 0


def test_the_general_design_stays_within_the_budget_the_engine_realises():
    """epsilon 2, the general form on 12 categories and the exact frequencies: the LP's near-zero
    outputs (1e-17, some 100 units of 2^-62 that the engine cannot realise in proportion) are
    dropped, so the realised law's epsilon, recomputed here from its integer units, is within the budget."""
    import pandas as pd

    import pramkit
    from pramkit.engine import realised_law

    for seed in range(3):
        cats = [f"c{i:02d}" for i in range(12)]
        data = pd.DataFrame({"v": np.array(cats)[np.random.default_rng(seed).integers(0, 12, 3000)]})
        manifest = pramkit.design_release(data, ["v"], epsilon=2, options={"form": "general"},
                                          exact_frequencies=True, categories={"v": cats})
        units = realised_law(manifest["v"].matrix).units.astype(object)   # exact integers
        worst = max(max(col) / min(col) for col in zip(*units.tolist()) if min(col) > 0)
        assert all(min(col) > 0 or max(col) == 0 for col in zip(*units.tolist()))
        assert worst <= math.exp(2) and manifest.record_epsilon <= 2
