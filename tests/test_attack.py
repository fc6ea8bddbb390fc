"""Risk by attack (:mod:`pramkit.risk.attack`, ``pramkit attack``) on sdcMicro's testdata: the Bayes posterior
against brute-force enumeration, the local guarantee on the posterior odds, the ceiling against simulated
releases, the command's refusals and its JSON."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA

from pramkit import Manifest, PramMatrix
from pramkit.cli import main
from pramkit.engine.perturb import apply_file, perturb_frame
from pramkit.errors import ParameterError
from pramkit.manifest import PerturbedVariable
from pramkit.release.pipeline import design_release
from pramkit.risk.attack import bayes_ceiling, reconstruction_attack

pytestmark = pytest.mark.skipif(not (SDC_DATA / "testdata.csv").is_file(), reason="../shared/data/sdcmicro is absent")

COLUMNS = ["urbrur", "roof", "walls", "water", "electcon", "sex", "relat"]
KEY = bytes(range(32))


def _testdata(rows: int | None = None) -> pd.DataFrame:
    frame = pd.read_csv(SDC_DATA / "testdata.csv", dtype=str, keep_default_na=False)[COLUMNS]
    return frame if rows is None else frame.sample(rows, random_state=rows).reset_index(drop=True)


@pytest.fixture(scope="module")
def release() -> tuple[pd.DataFrame, Manifest, pd.DataFrame]:
    """The whole file, water, roof and walls perturbed at a record epsilon of 4 (a fixed key)."""
    data = _testdata()
    manifest = design_release(data, ["water", "roof", "walls"], epsilon=4.0, rng=random.Random(1))
    return data, manifest, perturb_frame(data, manifest, key=KEY).data


def _row(matrix: PramMatrix, label: object) -> int:
    return [str(c) for c in matrix.categories].index(str(label))


def brute_force(original: pd.DataFrame, released: pd.DataFrame, manifest: Manifest, known: list[str],
                target: str, prior: pd.DataFrame) -> list[dict[str, float]]:
    """Per record, P(target | the whole released record, known true values) by enumerating every assignment of
    true values to the perturbed columns the attacker does not know, the other columns fixed (the known ones at
    their true values, those released exactly at their released values), each weighted by its prior frequency
    times the probability of the record's released values of every perturbed column (independent matrices
    multiplied)."""
    columns = list(prior.columns)
    table = prior[columns].astype(str).value_counts()
    free = [c for c in columns if c in manifest.names and c not in known]
    levels = [sorted(set(prior[c].astype(str))) for c in free]
    out = []
    for i in range(len(original)):
        fixed = {c: str(original[c][i]) if c in known else str(released[c][i]) for c in columns}
        weights: dict[str, float] = {}
        for values in itertools.product(*levels):
            row = {**fixed, **dict(zip(free, values))}
            p = float(table.get(tuple(row[c] for c in columns), 0))
            for column in manifest.names:
                m = manifest[column].matrix
                p *= m.matrix[_row(m, row[column]), _row(m, released[column][i])]
            weights[row[target]] = weights.get(row[target], 0.0) + p
        total = sum(weights.values())
        out.append({x: w / total for x, w in weights.items()})
    return out


def test_the_posterior_is_the_enumerated_one_on_a_small_file() -> None:
    """Known: an unperturbed and a perturbed column (its true value from the original)."""
    data = _testdata(60)
    manifest = design_release(data, ["water", "roof"], epsilon=3.0, rng=random.Random(2))
    released = perturb_frame(data, manifest, key=KEY).data
    c = bayes_ceiling(released, manifest, ["urbrur", "roof"], "water", prior=data, original=data)
    expected = brute_force(data, released, manifest, ["urbrur", "roof"], "water", data)
    labels = [str(x) for x in c.categories]
    assert c.records == 60 and c.rows.tolist() == list(range(60))
    for i, post in enumerate(expected):
        got = dict(zip(labels, c.posterior[i]))
        assert all(math.isclose(got[x], p, abs_tol=1e-12) for x, p in post.items()), i
        assert math.isclose(sum(got[x] for x in post), 1.0)
    assert math.isclose(c.expected_correct, sum(max(p.values()) for p in expected))
    truth = data["water"].tolist()
    assert c.realised_correct == sum(str(g) == t for g, t in zip(c.guesses(), truth))
    assert c.given_exactly == ("walls", "electcon", "sex", "relat") and c.not_conditioned_on == ()


def test_the_estimated_prior_is_the_release_s_corrected_table() -> None:
    from pramkit import estimate_table

    data = _testdata(400)
    manifest = design_release(data, ["water"], epsilon=2.0, rng=random.Random(3))
    released = perturb_frame(data, manifest, key=KEY).data
    c = bayes_ceiling(released, manifest, "urbrur", "water")
    est = estimate_table(released, manifest, ["water", "urbrur"], estimator="mle")
    counts = np.clip(est.table.counts, 0, None)
    m = manifest["water"].matrix
    for i in (0, 7, 123):
        k = [str(x) for x in est.categories[1]].index(released["urbrur"][i])
        post = counts[:, k] * m.matrix[:, _row(m, released["water"][i])]
        assert np.allclose(c.posterior[i], post / post.sum())
        assert np.allclose(c.prior_given_known[i], counts[:, k] / counts[:, k].sum())
    assert c.prior == "estimated (mle)" and c.realised_correct is None


def test_a_joint_variable_enters_through_its_cell_and_its_other_column_is_summed_over() -> None:
    """a and b perturbed jointly, c alone; the attacker knows a and d and guesses c: b is summed over."""
    rng = np.random.default_rng(5)
    n = 200
    a = rng.choice(["x", "y"], n)
    b = np.where(rng.random(n) < 0.7, a, np.where(a == "x", "y", "x"))
    c = np.where(rng.random(n) < 0.6, b, rng.choice(["x", "y"], n))
    data = pd.DataFrame({"a": a, "b": b, "c": c, "d": rng.choice(["0", "1"], n)})
    cells = [("x", "x"), ("x", "y"), ("y", "x"), ("y", "y")]
    joint = PramMatrix.form8([0.7] * 4, categories=cells)
    manifest = Manifest((PerturbedVariable("a*b", joint, columns=("a", "b")),
                         PerturbedVariable("c", PramMatrix([[0.8, 0.2], [0.3, 0.7]], ("x", "y")))))
    released = perturb_frame(data, manifest, key=KEY).data
    res = bayes_ceiling(released, manifest, ["a", "d"], "c", prior=data, original=data)
    table = data.value_counts(["a", "b", "c", "d"])
    for i in range(0, n, 17):
        weights = {}
        for bv, cv in itertools.product("xy", "xy"):
            p = float(table.get((data["a"][i], bv, cv, data["d"][i]), 0))
            p *= joint.matrix[cells.index((data["a"][i], bv)), cells.index((released["a"][i], released["b"][i]))]
            p *= manifest["c"].matrix.matrix["xy".index(cv), "xy".index(released["c"][i])]
            weights[cv] = weights.get(cv, 0.0) + p
        total = sum(weights.values())
        assert np.allclose(res.posterior[i], [weights["x"] / total, weights["y"] / total]), i
    assert math.isclose(res.correct_over_draws, res.expected_over_draws)  # the true law: one expectation


def test_posterior_odds_over_prior_odds_are_at_most_e_to_the_record_epsilon(release) -> None:
    """The local guarantee on the real release: for every record and pair of values, the whole released record
    moves the odds (over the prior given the known columns and those released exactly) by at most e^epsilon of
    every perturbed variable read, water, roof and walls: more than the target's own epsilon allows."""
    data, manifest, released = release
    record = sum(manifest[v].epsilon for v in ("water", "roof", "walls"))
    for target in ("water", "roof"):
        c = bayes_ceiling(released, manifest, ["urbrur", "sex", "relat"], target, prior=data, original=data)
        assert c.epsilon == pytest.approx(record, rel=1e-12) and c.given_exactly == ("electcon",)
        post, prior = c.posterior, c.prior_given_known
        ok = (post[:, :, None] > 0) & (post[:, None, :] > 0) & (prior[:, :, None] > 0) & (prior[:, None, :] > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (post[:, :, None] / post[:, None, :]) / (prior[:, :, None] / prior[:, None, :])
        worst = float(np.log(ratio[ok]).max())
        assert worst <= record * (1 + 1e-9), (target, worst)
        assert worst > manifest[target].epsilon  # the target's own epsilon is no bound of the whole record
        own = bayes_ceiling(released, manifest, ["urbrur", "sex", "relat"], target, prior=data, original=data,
                            scope="target")
        assert own.epsilon == pytest.approx(manifest[target].epsilon, rel=1e-12)
        assert own.not_conditioned_on == tuple(c for c in COLUMNS if c not in ("urbrur", "sex", "relat", target))


def test_no_attack_beats_the_ceiling_over_many_releases() -> None:
    """50 releases of 300 real records: the Bayes argmax (prior the true joint table) and the reconstruction
    attack on the target get, on average, at most the expected ceiling (Monte Carlo error: 3 standard errors);
    the argmax's realised count agrees with the ceiling, which is its expectation."""
    data = _testdata(300)
    known = ["urbrur", "sex", "relat"]
    manifest = design_release(data, ["water"], epsilon=1.5, rng=random.Random(4))
    expected, realised, reconstructed, exact = [], [], [], set()
    for seed in range(50):
        released = perturb_frame(data, manifest, key=bytes([seed]) * 32).data
        c = bayes_ceiling(released, manifest, known, "water", prior=data, original=data)
        expected.append(c.expected_correct)
        realised.append(c.realised_correct)
        exact.add(round(c.correct_over_draws, 9))
        # under the true law the two expectations over the draws are one number
        assert math.isclose(c.correct_over_draws, c.expected_over_draws, rel_tol=1e-12)
        rec = reconstruction_attack(data, released, known, "water")
        reconstructed.append(rec.accuracy * len(data))
        assert rec.accuracy * len(data) <= c.baseline_expected + 1e-9 <= c.expected_correct + 1e-9
    ceiling = np.mean(expected)
    for attack in (realised, reconstructed):
        se = np.std(np.asarray(attack) - expected, ddof=1) / math.sqrt(len(expected))
        assert np.mean(attack) <= ceiling + 3 * se + 1e-9, (np.mean(attack), ceiling, se)
    se = np.std(np.asarray(realised) - expected, ddof=1) / math.sqrt(len(expected))
    assert abs(np.mean(realised) - ceiling) <= 4 * se
    # the exact expectation over every draw (no release needed) is what the releases average
    (over_draws,) = exact
    for draws in (realised, expected):
        se = np.std(draws, ddof=1) / math.sqrt(len(draws))
        assert abs(np.mean(draws) - over_draws) <= 4 * se, (np.mean(draws), over_draws, se)


def test_the_reconstruction_guesses_the_mode_of_the_agreeing_records_or_the_nearest() -> None:
    original = pd.DataFrame({"a": ["1", "1", "2", "3"], "b": ["p", "p", "q", "q"], "c": ["u", "v", "v", "w"]})
    released = pd.DataFrame({"a": ["1", "1", "1", "2"], "b": ["p", "p", "q", "q"], "c": ["v", "v", "u", "w"]})
    r = reconstruction_attack(original, released, ["a", "b"], "c")
    # (1, p) -> v; (2, q) -> w; (3, q) agrees with none: nearest (2, q) and (1, q) tie -> mode of u, w
    assert r.matched == 3 and r.nearest == 1
    assert r.recovered[:, 0].tolist() == [False, True, False, False]
    assert r.baseline == 0.5  # the released mode v
    weights = np.array([1, 1 / 2, 1 / 2, 1])  # u once, v twice, w once in the original
    assert math.isclose(r.weighted_accuracy, (weights * [0, 1, 0, 0]).sum() / weights.sum())


def test_the_library_refuses_what_it_cannot_attack(release) -> None:
    _, manifest, released = release
    with pytest.raises(ParameterError, match="does not perturb the target 'sex'"):
        bayes_ceiling(released, manifest, "urbrur", "sex")
    with pytest.raises(ParameterError, match="known column 'roof' is perturbed"):
        bayes_ceiling(released, manifest, ["roof"], "water")
    with pytest.raises(ParameterError, match="cannot be known too"):
        bayes_ceiling(released, manifest, ["water"], "water")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("attack")
    data = _testdata(1000)
    f = {"original": d / "o.csv", "released": d / "r.csv", "manifest": d / "m.json", "fewer": d / "fewer.csv"}
    data.to_csv(f["original"], index=False)
    design_release(data, ["water", "roof"], epsilon=3.0, rng=random.Random(6)).write(f["manifest"])
    apply_file(f["original"], f["manifest"], f["released"], key=KEY)
    data.drop(columns="relat").to_csv(f["fewer"], index=False)
    return f


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("args", "message"), [
    (["--known", "age"], "no known column 'age' in the files"),
    (["--known", "urbrur,water", "--target", "water"], "a target cannot be known too: water"),
    (["--known", "urbrur", "--target", "income"], "no target column 'income'"),
    (["--known", ","], "--known names no column"),
    (["--known", "relat", "--fewer"], "columns differ from the original's; only in the original: relat"),
])
def test_bad_input_is_one_line_and_exit_2(files: dict[str, Path], args: list[str], message: str) -> None:
    released = files["fewer"] if "--fewer" in args else files["released"]
    args = [a for a in args if a != "--fewer"]
    code, out, err = _run(["attack", released, "--original", files["original"], *args])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err


def test_the_command_prints_totals_and_no_record(files: dict[str, Path]) -> None:
    code, out, _ = _run(["attack", files["released"], "--original", files["original"], "--known",
                         "urbrur,sex,relat", "--manifest", files["manifest"]])
    assert code == 0
    assert "Bayes ceiling of water" in out and "Bayes ceiling of roof" in out
    assert "note: no Bayes ceiling for walls, electcon: released exactly" in out
    assert len(out.splitlines()) < 40  # totals and their sentences: nothing grows with the records
    before = sorted(files["original"].parent.iterdir())
    assert _run(["attack", files["released"], "--original", files["original"], "--known", "sex"])[0] == 0
    assert sorted(files["original"].parent.iterdir()) == before  # no file written


def test_the_json_validates_against_the_generated_schema(files: dict[str, Path]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from pramkit._json import output_schema

    code, out, _ = _run(["attack", files["released"], "--original", files["original"], "--known",
                         "urbrur,sex,relat", "--target", "water,walls", "--manifest", files["manifest"], "--json"])
    assert code == 0
    value = json.loads(out)
    jsonschema.Draft202012Validator(output_schema("pramkit.attack.result")).validate(value)
    assert value["format"] == "pramkit.attack.result"
    truth, public = value["ceilings"]
    assert truth["prior"] == "original (the true joint law)" and public["prior"] == "estimated (mle)"
    for ceiling in (truth, public):
        assert ceiling["target"] == ["water"] and ceiling["records"] == 1000
    # the true law's expectation is what the Bayes attacker gets (binomial error of 1000 guesses)
    assert abs(truth["realised_share"] - truth["share"]) < 4 * math.sqrt(0.25 / 1000)
    assert {f["feature"] for f in value["reconstruction"]["per_feature"]} == {"water", "walls"}
    assert "posterior" not in ceiling and "recovered" not in value["reconstruction"]
