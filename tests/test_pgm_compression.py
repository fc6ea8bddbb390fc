"""The model pgm's domain compression: rare categories merged by their noisy 1-way counts, alike under the rules.

On NIST's CRC excerpt (the first 3 000 records; AGEP over its declared 0-99, MSP, SEX; the rule that a person
under 15 has MSP 'N'), released at (1, 1e-5) under zCDP, add-or-remove neighbours:

* the manifest's ``groups`` are what the published 1-way tables give, recomputed here by hand: a category is
  rare when its noisy count is below 3 standard deviations (``sqrt(sigma2)``), and the rare categories of a
  variable that one rule alone names form one group (``compress_rules: "jointly"``), every other category
  alone; a manifest without ``compress_rules`` (written before) has its rare ages under 15 and from 15 apart,
  and MSP's 'N' never with a marital status;
* every table measured after the start is over the groups (its shape), and the noise of each is that of its
  stated variance against the table counted here over the groups;
* every released record keeps the rule, and the records drawn into a pair of groups take each allowed pair of
  members in proportion to the product of their noisy counts;
* the audit passes with the original and the key (which make the release again) and names a forged group, a
  forged threshold and a forged ``compress_rules``; ``compress=0`` leaves every category as it is (the fit's
  tables over them all).

Skipped in one line without ``mbi`` or without the shared data.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import NIST_CRC, nist_inputs
from hypothesis import given, settings
from hypothesis import strategies as st
from test_synthesize_neighbours import _groups, _table

pytest.importorskip("mbi", reason='the model pgm needs mbi: pip install "pramkit[pgm]"')

from pramkit.audit import audit
from pramkit.pgm_compression import Compression
from pramkit.synthesize import synthesize_release

#: The module's tests run in one test process (``--dist loadgroup``): its fixture makes a release (about
#: 6 s) and, with the tests spread over two processes, was made once in each.
pytestmark = pytest.mark.xdist_group("test_pgm_compression")

VARS = ["AGEP", "MSP", "SEX"]
ROWS = 3_000
KEY = bytes(range(32))
AGES = [str(a) for a in range(100)]
YOUNG = {str(a) for a in range(15)}
MARRIED = ["1", "2", "3", "4", "5", "6"]  # MSP's statuses; 'N' is not applicable (under 15)
RULES = f"AGEP,MSP\n{'|'.join(sorted(YOUNG))},{'|'.join(MARRIED)}\n"


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("compress")
    frame = nist_inputs(d, VARS, ROWS, RULES, KEY)
    res = synthesize_release(d / "o.csv", d / "s.csv", variables=VARS, public="", epsilon=1.0, key=d / "k.key",
                             categories={"AGEP": AGES}, forbid=d / "rules.csv", model="pgm", delta=1e-5,
                             neighbours="add-remove", na_values=())
    raw = json.loads((d / "s.synthesis.json").read_text())
    return {"dir": d, "frame": frame, "raw": raw, "released": pd.read_csv(d / "s.csv", dtype=str,
                                                                            keep_default_na=False), "res": res}


def _by_hand(raw: dict[str, Any], v: str, alike: Any) -> list[list[int]]:
    """The groups of ``v`` from its published 1-way table: the rare categories (noisy count below 3 sd)
    merged within each class of ``alike`` (the categories the rule treats alike), others alone."""
    m = raw["measurements"][VARS.index(v)]
    assert m["axes"] == [v]
    cats = raw["variables"][v]["categories"]
    rare = [i for i, y in enumerate(m["noisy"]) if y < 3 * math.sqrt(m["sigma2"])]
    classes: dict[Any, list[int]] = {}
    for i in rare:
        classes.setdefault(alike(cats[i]), []).append(i)
    merged = {i: g for g in classes.values() if len(g) > 1 for i in g}
    if len(rare) == len(cats):
        return [[i] for i in range(len(cats))]
    return [merged.get(i, [i]) for i in range(len(cats)) if i not in merged or merged[i][0] == i]


def test_the_groups_are_what_the_published_tables_give(release):
    """AGEP and MSP are each named by one rule alone: their rare categories merge whatever the rule says of
    them (each record is expanded jointly, below)."""
    raw = release["raw"]
    assert raw["procedure"]["compress"] == 3.0 and raw["procedure"]["compress_rules"] == "jointly"
    expected = {v: _by_hand(raw, v, lambda c: 0) for v in VARS}
    for v in VARS:
        groups = raw["variables"][v].get("groups")
        assert (groups or [[i] for i in range(len(raw["variables"][v]["categories"]))]) == expected[v], v
    assert any(len(g) > 1 for g in raw["variables"]["AGEP"]["groups"])  # 3 000 records, 100 ages: old ones merge


def test_a_manifest_without_joint_groups_has_them_within_the_rules_signatures(release):
    """A manifest written before joint groups (no ``compress_rules``) has its groups recomputed as they were
    made then: never a young age with an adult one, nor MSP's 'N' with a marital status."""
    from pramkit.synthesize_pgm import manifest_groups

    raw = json.loads(json.dumps(release["raw"]))
    del raw["procedure"]["compress_rules"]
    expected = {"AGEP": _by_hand(raw, "AGEP", lambda c: c in YOUNG),
                "MSP": _by_hand(raw, "MSP", lambda c: c == "N"), "SEX": _by_hand(raw, "SEX", lambda c: 0)}
    got = manifest_groups(raw)
    assert isinstance(got, dict)
    for v in VARS:
        assert (got[v] or [[i] for i in range(len(raw["variables"][v]["categories"]))]) == expected[v], v
    for g in got["AGEP"] or []:
        assert len({AGES[i] in YOUNG for i in g}) == 1, g


def test_later_tables_are_over_the_groups_with_their_stated_noise(release):
    from scipy.stats import chi2

    raw, frame = release["raw"], release["frame"]
    cats = {v: [str(c) for c in s["categories"]] for v, s in raw["variables"].items()}
    z2, cells = 0.0, 0
    for i, m in enumerate(raw["measurements"]):
        merged = _groups(raw, i)
        exact = _table(frame, m["axes"], cats, merged)
        assert np.shape(m["noisy"]) == exact.shape, (i, m["axes"])
        z2 += float(((np.asarray(m["noisy"]) - exact) ** 2).sum() / m["sigma2"])
        cells += exact.size
    assert len(raw["measurements"]) > len(VARS) and cells > 100
    assert chi2.sf(z2, cells) > 1e-4 and chi2.cdf(z2, cells) > 1e-4, (z2, cells)


def test_every_record_keeps_the_rule_and_groups_expand_jointly_by_their_noisy_counts(release):
    """Each released record keeps the rule; the records drawn into one pair of groups (AGEP's, MSP's) take
    each allowed pair of members in proportion to the product of the members' noisy counts, to within the
    rounding of systematic sampling (two records a draw: 3 records a cell), counted here from the published
    tables alone."""
    out = release["released"]
    young = out["AGEP"].isin(YOUNG)
    assert not (young & out["MSP"].isin(MARRIED)).any()
    raw = release["raw"]
    cats = {v: [str(c) for c in raw["variables"][v]["categories"]] for v in ("AGEP", "MSP")}
    groups = {v: raw["variables"][v].get("groups") or [[i] for i in range(len(cats[v]))] for v in cats}
    noisy = {v: np.clip(np.asarray(raw["measurements"][VARS.index(v)]["noisy"], dtype=float), 0, None)
             for v in cats}
    code = {v: out[v].map({c: i for i, c in enumerate(cats[v])}).to_numpy() for v in cats}
    group_of = {v: {i: k for k, g in enumerate(groups[v]) for i in g} for v in cats}
    pairs = pd.Series(list(zip(code["AGEP"], code["MSP"]))).value_counts()
    checked = 0
    for ga in groups["AGEP"]:
        for gm in groups["MSP"]:
            if len(ga) * len(gm) < 2:
                continue
            allowed = np.array([[not (cats["AGEP"][a] in YOUNG and cats["MSP"][m] in MARRIED) for m in gm]
                                for a in ga])
            w = np.outer(*(noisy[v][g] if noisy[v][g].sum() > 0 else np.ones(len(g))
                           for v, g in (("AGEP", ga), ("MSP", gm)))) * allowed
            w = w if w.sum() > 0 else allowed.astype(float)
            got = np.array([[pairs.get((a, m), 0) for m in gm] for a in ga], dtype=float)
            if got.sum() == 0:
                continue
            assert (got[~allowed] == 0).all()
            assert np.abs(got - w / w.sum() * got.sum()).max() <= 5, (ga, gm, got, w)
            checked += 1
    assert checked and all(group_of["AGEP"][a] is not None for a in code["AGEP"])


def test_the_audit_passes_and_names_a_forged_group_and_kind_of_merging(release, tmp_path):
    d = release["dir"]
    result = audit(manifest=d / "s.synthesis.json", released=d / "s.csv", original=d / "o.csv", key=d / "k.key")
    assert result.passed, [c.line() for c in result.checks if not c.passed]
    raw = json.loads(json.dumps(release["raw"]))
    groups = raw["variables"]["AGEP"]["groups"]
    big = max(range(len(groups)), key=lambda k: len(groups[k]))
    moved = groups[big].pop()
    groups.insert(big + 1, [moved])
    for name, forged in [("group", raw), ("threshold", {**release["raw"], "procedure": {
            **release["raw"]["procedure"], "compress": 2.0}})]:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(forged))
        failed = [c.line() for c in audit(manifest=path, released=d / "s.csv").checks if not c.passed]
        assert any("variables.AGEP.groups" in line for line in failed), (name, failed)
    forged = {**release["raw"], "procedure": {**release["raw"]["procedure"], "compress_rules": "within"}}
    path = tmp_path / "kinds.json"
    path.write_text(json.dumps(forged))
    failed = [c.line() for c in audit(manifest=path, released=d / "s.csv").checks if not c.passed]
    assert any("procedure.compress_rules" in line for line in failed), failed


def test_no_compression_leaves_every_category(release):
    import pramkit.synthesize_pgm as pgm
    from pramkit.kernel.rng import resolve_key

    fit = pgm.fit_and_draw(np.stack([pd.Categorical(release["frame"][v]).codes for v in VARS], 1).astype(np.int64),
                           VARS, {v: list(pd.Categorical(release["frame"][v]).categories) for v in VARS},
                           epsilon=1.0, key=resolve_key(KEY), draw_key=resolve_key(bytes(32)),
                           neighbours="add-remove", delta=1e-5, compress=0.0)
    assert all(fit.compression.groups_of(v) is None for v in VARS)
    assert [t.noisy.shape for t in fit.measurements[len(VARS):]] == \
        [tuple(len(pd.Categorical(release["frame"][a]).categories) for a in t.axes)
         for t in fit.measurements[len(VARS):]]


def test_a_group_expands_to_its_members_in_the_smallest_code_type(tmp_path):
    """AGEP's 100 ages of NIST's excerpt merged into 5 groups of 20, the drawn codes one byte each: every
    record drawn into a group takes one of that group's ages, in proportion to their counts within one record
    (the groups' offsets, 5 x 100, pass a byte's range: counted in one byte they wrapped round, and records
    took ages of other groups)."""
    from pramkit.kernel.rng import resolve_key
    from pramkit.synthesize_pgm import expand

    ages = nist_inputs(tmp_path, ["AGEP"], ROWS, "", KEY)["AGEP"].astype(int).to_numpy()
    counts = np.bincount(ages, minlength=100).astype(float)
    groups = [list(range(k, k + 20)) for k in range(0, 100, 20)]
    comp = Compression({"AGEP": groups}, {"AGEP": counts})
    drawn = (ages // 20).astype(np.uint8)[:, None]
    out = expand(comp, drawn, ["AGEP"], resolve_key(bytes(32)))
    assert (out[:, 0] // 20 == drawn[:, 0]).all()
    for g, members in enumerate(groups):
        got = np.bincount(out[drawn[:, 0] == g, 0], minlength=100)[members]
        want = counts[members] / counts[members].sum() * (drawn[:, 0] == g).sum()
        assert np.abs(got - want).max() <= 1.0, g


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_joint_expansion_keeps_the_rule_and_follows_the_weights(data):
    """Two variables merged across a 3-way rule's signatures, the third kept whole: the compressed mask allows
    a cell exactly when one of its members' cells is allowed (brute force), and every record drawn into a cell
    it allows takes a member combination the rule allows, each combination of one key (the groups and the third
    variable's value) in proportion to the product of the members' counts clipped at 0, to within 2 records
    (each record a keyed point in its own stratum)."""
    from pramkit.kernel.rng import resolve_key
    from pramkit.synthesize_pgm import expand

    sizes = {v: data.draw(st.integers(2, 5), label=v) for v in "abc"}
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=math.prod(sizes.values()),
                                       max_size=math.prod(sizes.values())), label="mask")).reshape(
        tuple(sizes.values()))
    mask.flat[data.draw(st.integers(0, mask.size - 1), label="one allowed")] = True
    groups = {}
    for v in "ab":
        cut = sorted(data.draw(st.sets(st.integers(1, sizes[v] - 1), max_size=sizes[v] - 1), label=f"cuts {v}"))
        bounds = [0, *cut, sizes[v]]
        groups[v] = [list(range(lo, hi)) for lo, hi in itertools.pairwise(bounds)]
    groups["c"] = [[i] for i in range(sizes["c"])]
    counts = {v: np.array(data.draw(st.lists(st.integers(-3, 40), min_size=sizes[v], max_size=sizes[v]),
                                    label=f"counts {v}"), dtype=float) for v in "abc"}
    comp = Compression(groups, counts, ((("a", "b", "c"), mask, ("a", "b")),))
    union = comp.mask(("a", "b", "c"), mask)
    for ga, gb, c in np.ndindex(union.shape):
        assert union[ga, gb, c] == mask[np.ix_(groups["a"][ga], groups["b"][gb], [c])].any()
    cells = np.argwhere(union)
    drawn = cells[np.array(data.draw(st.lists(st.integers(0, len(cells) - 1), min_size=1, max_size=300),
                                     label="drawn"))]
    out = expand(comp, drawn.astype(np.int64), ["a", "b", "c"], resolve_key(bytes(32)))
    assert mask[out[:, 0], out[:, 1], out[:, 2]].all()
    for key in {tuple(r) for r in drawn.tolist()}:
        rows = (drawn == key).all(axis=1)
        ma, mb = groups["a"][key[0]], groups["b"][key[1]]
        assert np.isin(out[rows, 0], ma).all() and np.isin(out[rows, 1], mb).all() and (out[rows, 2] == key[2]).all()
        weight = [np.clip(counts[v][m], 0, None) for v, m in (("a", ma), ("b", mb))]
        w = np.outer(*(x if x.sum() > 0 else np.ones(len(x)) for x in weight)) * mask[np.ix_(ma, mb, [key[2]])][..., 0]
        w = w if w.sum() > 0 else mask[np.ix_(ma, mb, [key[2]])][..., 0].astype(float)
        got = np.zeros((len(ma), len(mb)))
        np.add.at(got, (np.searchsorted(ma, out[rows, 0]), np.searchsorted(mb, out[rows, 1])), 1)
        assert np.abs(got - w / w.sum() * rows.sum()).max() < 2, (key, got, w)


def test_a_joint_expansion_too_large_keeps_the_rules_kinds(monkeypatch):
    """NOC and NPF of NIST's excerpt under SDNist's rule (fewer own children than persons in the family): their
    rare categories merge across the rule's kinds, unless the joint expansion would pass ``JOINT_CELLS``; then
    each keeps its kinds apart (every NOC value one of its own: none merged; NPF's rare values 10 to 12, above
    every NOC, alike) and nothing is expanded jointly."""
    import pramkit.pgm_compression as pc
    from pramkit.structure import Rules
    from pramkit.synthesize_pgm import rule_masks

    if not NIST_CRC.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    frame = pd.read_csv(NIST_CRC, dtype=str, keep_default_na=False, usecols=["NOC", "NPF"])
    cats = {v: sorted(set(frame[v]), key=lambda c: (c != "N", int(c) if c != "N" else 0)) for v in ("NOC", "NPF")}
    rules = Rules.of([{"NOC": "N", "NPF": "|".join(c for c in cats["NPF"] if c != "N")}]
                     + [{"NOC": k, "NPF": "|".join(j for j in cats["NPF"] if j != "N" and int(j) <= int(k))}
                        for k in cats["NOC"] if k != "N" and any(j != "N" and int(j) <= int(k) for j in cats["NPF"])])
    masks = rule_masks(rules, ["NOC", "NPF"], cats, 10_000)
    counts = [frame[v].map({c: i for i, c in enumerate(cats[v])}).value_counts().reindex(range(len(cats[v])),
                                                                                       fill_value=0).to_numpy()
              for v in ("NOC", "NPF")]
    joint = pc.compression_of(["NOC", "NPF"], counts, [20.0, 20.0], masks, 3.0, jointly=True)
    assert joint.groups["NOC"][-1] == [7, 8, 9] and joint.jointly() == {"NOC", "NPF"}  # NOC 6, 7 and 9
    monkeypatch.setattr(pc, "JOINT_CELLS", pc.joint_cells(joint, ("NOC", "NPF"), ("NOC", "NPF")) - 1)
    kept = pc.compression_of(["NOC", "NPF"], counts, [20.0, 20.0], masks, 3.0, jointly=True)
    assert kept.joint == () and not kept.merged("NOC")  # every NOC value a kind of its own
    assert kept.groups == pc.compression_of(["NOC", "NPF"], counts, [20.0, 20.0], masks, 3.0).groups
