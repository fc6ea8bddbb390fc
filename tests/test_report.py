"""The release report (pramkit.report): numbers checked against pramkit's own measures
computed here, self-contained HTML, no key material, atomic writes, the CLI and the demo step."""

from __future__ import annotations

import base64
import html
import math
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pramkit import Manifest, PramMatrix, SecretKey, perturb_frame
from pramkit.cli import main
from pramkit.datasets import census, census_areas
from pramkit.design.classic import randomized_response
from pramkit.design.dp.distance import dp_min_distance
from pramkit.design.metric.mechanisms import truncated_geometric
from pramkit.distances import read_distances
from pramkit.engine.receipt import write_receipt
from pramkit.errors import DataError, OutputExistsError, ParameterError
from pramkit.information import entropy, mutual_information
from pramkit.io import read_table, sha256_of, write_table
from pramkit.ledger import Ledger
from pramkit.manifest import PerturbedVariable
from pramkit.privacy.bistochastic import bistochastic_privacy
from pramkit.privacy.epsilon import matrix_epsilon
from pramkit.privacy.geometric import dp_counts
from pramkit.release.pipeline import design_release
from pramkit.report import build_public_report, build_report, render_html, write_report
from pramkit.report.html import fmt
from pramkit.risk.identification import identification_risk

KEYS = ["age", "sex", "marital_status", "race"]
PERTURBED = {"age": 1.5, "marital_status": 1.0}


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A small census-like release on disk: original, manifest, released, with a known key."""
    folder = tmp_path_factory.mktemp("release")
    data = census(6_000)
    manifest = Manifest.of(
        {n: randomized_response(list(data[n].cat.categories), e) for n, e in PERTURBED.items()},
        input={"file": "census.csv"},
    )
    key = SecretKey(bytes(range(7, 39)), "test key")
    released, _ = perturb_frame(data, manifest, key=key)
    files = {"original": folder / "census.csv", "manifest": folder / "manifest.json",
             "released": folder / "released.csv"}
    write_table(data, files["original"])
    manifest.write(files["manifest"])
    write_table(released, files["released"])
    report = build_report(files["original"], files["manifest"], files["released"], KEYS, sampling_fraction=0.1)
    return {"folder": folder, "files": files, "manifest": manifest, "key": key, "report": report,
            "html": render_html(report)}


def test_every_section_is_present(release: dict) -> None:
    page = release["html"]
    for title in ("1. Privacy ledger", "2. Disclosure risk before and after", "3. Utility", "4. Provenance"):
        assert f"<h2>{title}</h2>" in page
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")


def test_ledger_matches_the_matrices(release: dict) -> None:
    report, page, manifest = release["report"], release["html"], release["manifest"]
    assert [e.name for e in report.ledger] == list(PERTURBED)
    for entry in report.ledger:
        m = manifest[entry.name].matrix.matrix
        eps = matrix_epsilon(m)
        assert entry.epsilon == pytest.approx(eps, rel=1e-12)
        assert entry.epsilon == pytest.approx(PERTURBED[entry.name], rel=1e-9)
        assert entry.beta == pytest.approx(bistochastic_privacy(m).beta, rel=1e-12)
        assert entry.min_diagonal == pytest.approx(np.diagonal(m).min())
        assert entry.truthful and entry.bistochastic and entry.method == "randomized_response"
        assert f"<td class=\"n\">{fmt(eps)}</td>" in page
        assert f"<td class=\"n\">{fmt(entry.beta)}</td>" in page
    total = sum(matrix_epsilon(manifest[n].matrix.matrix) for n in PERTURBED)
    assert report.record_epsilon == pytest.approx(total, rel=1e-12)
    shown = re.search(r"<b>record epsilon: ([0-9.]+) \(design step plus the perturbation\)</b>", page)
    assert shown is not None and total <= float(shown.group(1)) <= total * (1 + 1e-3)  # rounded up, 4 digits
    others = [c for c in census(10).columns if c not in PERTURBED]            # the file's unperturbed columns
    assert html.escape(manifest.guarantee.split(" Columns that are not perturbed")[0], quote=True) in page
    assert (f"The columns {', '.join(others[:-1])} and {others[-1]} are released as they are (not perturbed)"
            in html.unescape(page))
    assert f"e^{total:.4g} = {math.exp(total):.4g}" in manifest.guarantee


def test_risk_matches_identification_risk(release: dict) -> None:
    report, page, files = release["report"], release["html"], release["files"]
    original = read_table(files["original"], columns=KEYS)
    released = read_table(files["released"], columns=KEYS)
    before = identification_risk(original, KEYS, sampling_fraction=0.1)
    after = identification_risk(released, KEYS, sampling_fraction=0.1, manifest=Manifest.read(files["manifest"]),
                                original=original)
    for got, want in ((report.risk.before, before), (report.risk.after, after)):
        assert got.sample_uniques == want.sample_uniques
        assert got.tau1 == pytest.approx(want.tau1, rel=1e-9, abs=1e-12)
        assert got.tau2 == pytest.approx(want.tau2, rel=1e-9, abs=1e-12)
        assert got.expected_reidentifications == pytest.approx(want.expected_reidentifications, rel=1e-9)
        for value in (want.tau1, want.tau2):
            assert f"<td class=\"n\">{fmt(value)}</td>" in page
    # the summed per-record risk ignores the perturbation: shown for the original file only
    assert f"<td class=\"n\">{fmt(before.expected_reidentifications)}</td>" in page
    assert f"<td class=\"n\">{fmt(after.expected_reidentifications)}</td>" not in page
    assert "n/a (see below)" in page
    assert before.tau2 > after.tau2
    assert "pi = 0.1, as given" in page
    rec = report.risk.recognition
    assert not rec.not_computed
    assert rec.max_posterior_before == 1.0  # a record unique on three keys is recognised for sure
    assert 0 < rec.max_posterior_after < 1


def test_utility_matches_mutual_information(release: dict) -> None:
    report, page, manifest = release["report"], release["html"], release["manifest"]
    data = census(6_000)
    for u in report.utility:
        m = manifest[u.name].matrix
        p = data[u.name].value_counts(normalize=True).reindex(list(m.categories)).to_numpy()
        mi = mutual_information(p, m.matrix)
        assert u.mutual_information_nats == pytest.approx(mi, rel=1e-9)
        assert u.entropy_nats == pytest.approx(entropy(p), rel=1e-9)
        assert f"<td class=\"n\">{fmt(mi)}</td>" in page
        assert f"<td class=\"n\">{fmt(100 * mi / entropy(p), 3)}</td>" in page
        assert u.frequencies["original"].to_numpy() == pytest.approx(100 * p)
        assert u.frequencies["estimate"].sum() == pytest.approx(100.0)
        assert np.all(u.frequencies["ci_low"] <= u.frequencies["estimate"])
        assert u.curve is not None and u.curve.chosen == pytest.approx(m.epsilon)
        assert u.curve.chosen_values["mutual_information_nats"] == pytest.approx(mi, rel=1e-9)


def test_figures_are_embedded_and_nothing_is_fetched(release: dict) -> None:
    page = release["html"]
    uris = re.findall(r'src="(data:image/png;base64,[^"]+)"', page)
    assert len(uris) == 2 * len(PERTURBED)  # frequencies and curve per variable
    for uri in uris:
        assert base64.b64decode(uri.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "http://" not in page and "https://" not in page
    assert len(re.findall(r'(?:src|href)="', page)) == len(uris)
    assert "<script" not in page and "<link" not in page and "@import" not in page


def test_provenance_and_no_key_material(release: dict) -> None:
    page, files, key = release["html"], release["files"], release["key"]
    for name in ("original", "released"):
        assert sha256_of(files[name]) in page
    assert "randomized_response" in page and html.escape('"epsilon": 1.5') in page
    material = key.material
    for form in (material.hex(), material.hex().upper(), base64.b64encode(material).decode(),
                 repr(material), key.philox_key("age").tobytes().hex()):
        assert form not in page


def test_write_is_atomic_and_never_overwrites(release: dict, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    write_report(release["report"], out)
    first = out.read_text(encoding="utf-8")
    assert first == release["html"]
    with pytest.raises(OutputExistsError):
        write_report(release["report"], out)
    assert out.read_text(encoding="utf-8") == first
    write_report(release["report"], out, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temporary left behind


def test_infinite_epsilon_and_not_bistochastic_are_said_plainly(tmp_path: Path) -> None:
    data = census(3_000)
    lopsided = PramMatrix([[1.0, 0.0], [0.3, 0.7]], tuple(data["sex"].cat.categories))
    manifest = Manifest.of({"sex": lopsided})
    released, _ = perturb_frame(data, manifest, key=bytes(32))
    report = build_report(data, manifest, released, ["age", "sex"])
    page = render_html(report)
    assert math.isinf(report.record_epsilon)
    assert "Warning: epsilon is infinite" in page and "no differential-privacy guarantee" in page
    assert "not bistochastic" in page
    assert "pi = 0.05 assumed" in page
    assert "cannot be placed on the curve" in page
    assert "n/a (data given in memory)" in page


def test_mismatched_release_is_refused() -> None:
    data = census(2_000)
    manifest = Manifest.of({"sex": randomized_response(list(data["sex"].cat.categories), 1.0)})
    with pytest.raises(DataError, match="records"):
        build_report(data, manifest, data.iloc[:-1], ["sex"])
    with pytest.raises(DataError, match="not in the"):
        build_report(data, manifest, data.drop(columns="sex"), ["age"])


def _cli(files: dict, out: Path, *extra: str, keys: str = "age,sex,race") -> int:
    return main(["report", str(files["original"]), "--manifest", str(files["manifest"]),
                 "--released", str(files["released"]), "--keys", keys, "--out", str(out), "--quiet", *extra])


def test_cli_writes_and_prints_the_path(release: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "r.html"
    assert _cli(release["files"], out, "--sampling-fraction", "0.2") == 0
    assert capsys.readouterr().out.strip() == f"{out} (internal: do not publish)"
    assert "pi = 0.2, as given" in out.read_text(encoding="utf-8")
    assert _cli(release["files"], out) == 2  # exists, no --force
    assert "--force" in capsys.readouterr().err


def test_cli_exit_2_on_bad_input(release: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    files = release["files"]
    assert _cli(files, tmp_path / "a.html", keys="age,nope") == 2
    assert "nope" in capsys.readouterr().err
    other = census(6_000)
    other["age"] = other["age"].cat.rename_categories(lambda c: f"age {c}")
    wrong = dict(files, released=tmp_path / "wrong.csv")
    write_table(other, wrong["released"])
    assert _cli(wrong, tmp_path / "b.html") == 2
    err = capsys.readouterr().err
    assert err.startswith("pramkit report: error:") and "age" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "a.html").exists() and not (tmp_path / "b.html").exists()


def test_demo_writes_public_and_private_reports(tmp_path: Path) -> None:
    from pramkit import demo

    result = demo.run_demo(tmp_path / "demo", rows=3_000, key=SecretKey(bytes(32), "test key"))
    internal = tmp_path / "demo" / result.files["internal_report"]
    public = tmp_path / "demo" / result.files["public_report"]
    assert internal.parent.name == "private" and public.parent.name == "public"
    assert result.lines[-1].startswith("report ")
    original_digest = sha256_of(tmp_path / "demo" / "private" / "census.csv")
    assert original_digest in internal.read_text(encoding="utf-8")
    page = public.read_text(encoding="utf-8")
    assert original_digest not in page and "may be published" in page and "Disclosure risk" not in page
    assert "do not publish" in internal.read_text(encoding="utf-8")
    assert isinstance(pd.read_json(tmp_path / "demo" / "private" / "summary.json", typ="series")["files"], dict)


# -- locality of variables with distances -------------------------------------------------------

GEO_AREAS = 30
GEO_RECORDS = 8_000


@pytest.fixture(scope="module")
def geo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A release of an area (the distance-optimal LP on noisy counts that the ledger publishes), an
    age band (the truncated geometric mechanism on the band order) and sex (no distances)."""
    folder = tmp_path_factory.mktemp("geo")
    areas = census_areas(GEO_AREAS)
    centroids = folder / "areas.csv"
    areas[["category", "x", "y"]].to_csv(centroids, index=False)
    data = census(GEO_RECORDS, areas=GEO_AREAS)
    cats = list(areas["category"])
    noisy = dp_counts(data["area"].value_counts().reindex(cats).to_numpy(), 0.5, rng=random.Random(5))
    manifest = Manifest(
        (PerturbedVariable("area", dp_min_distance(noisy.proportions(), 3.0, read_distances(centroids, cats))),
         PerturbedVariable("age", truncated_geometric(list(data["age"].cat.categories), 0.4)),
         PerturbedVariable("sex", randomized_response(list(data["sex"].cat.categories), 1.0))),
        input={"distances": {"area": str(centroids)}},
        ledger=Ledger(design_epsilon=0.5, frequencies="dp_counts", dp_counts={"area": noisy.to_dict()}),
    )
    released, _ = perturb_frame(data, manifest, key=bytes(32))
    files = {"manifest": folder / "manifest.json", "released": folder / "released.csv", "areas": centroids}
    manifest.write(files["manifest"])
    write_table(released, files["released"])
    write_receipt(files["released"], files["manifest"], rows=len(released),
                  digest=sha256_of(files["released"]))  # a release, as `pramkit apply` leaves it
    internal = build_report(data, manifest, released, ["age", "sex", "area"], within={"area": 5.0})
    public = build_public_report(files["manifest"], files["released"], within={"area": 5.0})
    xy = areas[["x", "y"]].to_numpy()
    km = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))    # Pythagoras, by hand
    bands = np.arange(len(data["age"].cat.categories))
    steps = np.abs(np.subtract.outer(bands, bands))
    return {"data": data, "released": released, "manifest": manifest, "files": files, "noisy": noisy,
            "internal": internal, "public": public, "d": {"area": km, "age": steps.astype(float)},
            "within": {"area": 5.0, "age": 1.0}}


def _codes(column: pd.Series, categories) -> np.ndarray:
    return pd.Categorical(column.astype(str), categories=[str(c) for c in categories]).codes


def _rr(epsilon: float, s: int) -> tuple[float, float]:
    """Randomized response's keep and move probabilities at epsilon (by hand)."""
    return math.exp(epsilon) / (math.exp(epsilon) + s - 1), 1 / (math.exp(epsilon) + s - 1)


def test_locality_on_exact_frequencies_and_released_records(geo: dict) -> None:
    data, released, report = geo["data"], geo["released"], geo["internal"]
    assert [loc.name for loc in report.locality] == ["area", "age"]           # sex has no distances
    for loc in report.locality:
        m = geo["manifest"][loc.name].matrix
        d, r = geo["d"][loc.name], geo["within"][loc.name]
        assert loc.within == r and loc.weights == "the exact frequencies of the original file"
        x, z = _codes(data[loc.name], m.categories), _codes(released[loc.name], m.categories)
        rows = m.matrix[x]                                          # each record's row of M
        moved, kept, near = ((rows * d[x]).sum(axis=1), rows[np.arange(x.size), x],
                             np.where(d[x] <= r, rows, 0).sum(axis=1))
        q, w = _rr(m.epsilon, m.size)
        rr = (w * d[x].sum(axis=1), np.full(x.size, q), q + w * ((d[x] <= r).sum(axis=1) - 1))
        realised = (d[x, z], x == z, d[x, z] <= r)
        for f, mine, theirs, seen, scale in zip(loc.figures, (moved, kept, near), rr, realised, (1, 100, 100)):
            assert f.design == pytest.approx(scale * mine.mean(), rel=1e-9)
            assert f.rr == pytest.approx(scale * theirs.mean(), rel=1e-9)
            assert f.realised == pytest.approx(scale * seen.mean(), rel=1e-12)
            assert f.design_se is None and f.rr_se is None
        # the release's records: within 4.5 standard errors of the expectation
        spread = math.sqrt(((rows * d[x] ** 2).sum(axis=1) - moved ** 2).sum()) / x.size
        assert abs(loc.figures[0].realised - loc.figures[0].design) <= 4.5 * spread
    assert report.locality[1].figures[2].measure == "records moved at most 1 step"   # default: nearest band


def test_public_locality_uses_published_figures_only(geo: dict) -> None:
    report, manifest = geo["public"], geo["manifest"]
    area, age = report.locality
    # the area: weighted by the ledger's noisy counts
    noisy = np.maximum(np.asarray(geo["noisy"].noisy), 0).astype(float)
    p = noisy / noisy.sum()
    m, d = manifest["area"].matrix.matrix, geo["d"]["area"]
    assert "noisy counts" in area.weights
    assert area.figures[0].design == pytest.approx(float(p @ (m * d).sum(axis=1)), rel=1e-9)
    assert area.figures[0].design != pytest.approx(geo["internal"].locality[0].figures[0].design, rel=1e-6)
    # the age band: no noisy counts, so estimated from the released file with a standard error
    m, d = manifest["age"].matrix.matrix, geo["d"]["age"]
    released = geo["released"]["age"].value_counts().reindex(manifest["age"].matrix.categories).to_numpy(float)
    n = released.sum()
    lam = released / n
    assert "estimated from the released file" in age.weights and "unbiased" in age.weights
    for f, row in zip(age.figures, ((m * d).sum(axis=1), 100 * np.diagonal(m))):
        v = np.linalg.solve(m, row)                  # row . (M^T)^-1 U = (M^-1 row) . U
        se = math.sqrt(n * (v ** 2 @ lam - (v @ lam) ** 2)) / n         # multinomial variance of v . U
        assert f.design == pytest.approx(float(v @ released) / n, rel=1e-9)
        assert f.design_se == pytest.approx(se, rel=1e-6)
    assert all(f.realised is None for loc in report.locality for f in loc.figures)
    page = render_html(report)
    assert "<h2>3. How far values move</h2>" in page and "<h2>4. Provenance</h2>" in page
    assert "realised" not in page


def test_locality_in_the_internal_page(geo: dict) -> None:
    report = geo["internal"]
    page = render_html(report)
    assert "<h2>4. How far values move</h2>" in page and "<h2>5. Provenance</h2>" in page
    for loc in report.locality:
        for f in loc.figures:
            assert f"<td class=\"n\">{fmt(f.design)}</td>" in page and f"<td class=\"n\">{fmt(f.realised)}</td>" in page
    assert "records moved at most 5 coordinate unit" in page
    assert f"randomized response at epsilon {fmt(geo['manifest']['area'].matrix.epsilon)} nats" in page


def test_a_singular_design_is_marked_by_its_information_alone(geo: dict) -> None:
    """The area's least-distance matrix never releases most areas (zero columns): singular, so it has no
    unbiased estimator and no variance inflation, but it does have I(X; Z), which the curve marks; its
    note says so, and never that the released data do not match the manifest."""
    m = geo["manifest"]["area"].matrix
    entries = m.matrix
    assert (entries.max(axis=0) == 0).any()                           # the premise: areas never released
    (area,) = [u for u in geo["internal"].utility if u.name == "area"]
    p = geo["data"]["area"].value_counts(normalize=True).reindex(list(m.categories)).to_numpy()
    lam = p @ entries
    joint = p[:, None] * entries                                      # I(X; Z) by its definition, 0 log 0 = 0
    seen = joint > 0
    information = float(np.sum(joint[seen] * np.log(entries[seen] / np.broadcast_to(lam, entries.shape)[seen])))
    assert area.curve is not None and area.curve.chosen == m.epsilon
    assert area.curve.chosen_values["mutual_information_nats"] == pytest.approx(information, rel=1e-12)
    assert math.isnan(area.curve.chosen_values["variance_inflation"])
    assert "information panel only" in area.curve_note and "singular" in area.curve_note
    page = render_html(geo["internal"])
    assert "do not match the manifest" not in page and "cannot be placed" not in page


def test_locality_distances_are_checked(geo: dict, tmp_path: Path) -> None:
    files = geo["files"]
    shuffled = tmp_path / "shuffled.csv"
    frame = pd.read_csv(files["areas"])
    frame.assign(x=frame["x"].iloc[::-1].to_numpy()).to_csv(shuffled, index=False)
    with pytest.raises(ParameterError, match="not those its design used"):
        build_public_report(files["manifest"], files["released"], distances={"area": shuffled})
    with pytest.raises(ParameterError, match="no distances"):
        build_public_report(files["manifest"], files["released"], within={"sex": 1.0})
    moved = Manifest(geo["manifest"].variables, input={"distances": {"area": str(tmp_path / "gone.csv")}})
    loc = build_public_report(moved, files["released"]).locality[0]
    assert loc.name == "area" and not loc.figures and "could not be read" in loc.note
    assert "could not be read" in render_html(build_public_report(moved, files["released"]))


def test_locality_from_a_designed_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """design_release records the distances it used, a file by its name (a public file names no path of the
    machine); the public report reads the file the manifest names in the current folder."""
    monkeypatch.chdir(tmp_path)
    areas = census_areas(GEO_AREAS)
    centroids = tmp_path / "areas.csv"
    areas[["category", "x", "y"]].to_csv(centroids, index=False)
    data = census(3_000, areas=GEO_AREAS)
    manifest = design_release(data, ["area"], epsilon=3.0, categories={"area": list(areas["category"])},
                              options={"objective": "distance"}, distances=str(centroids), rng=random.Random(2))
    released, _ = perturb_frame(data, manifest, key=bytes(32))
    assert manifest.input["distances"] == {"area": "areas.csv"}
    (loc,) = build_public_report(manifest, released).locality
    assert loc.name == "area" and len(loc.figures) == 3 and "noisy counts" in loc.weights
    assert loc.figures[0].design < loc.figures[0].rr                      # moves less far than RR


def test_cli_locality_options(geo: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    files = geo["files"]
    base = ["report", "--manifest", str(files["manifest"]), "--released", str(files["released"]), "--quiet"]
    out = tmp_path / "public.html"
    assert main([*base, "--public", str(out), "--within", "area=2.5", "--distances", f"area={files['areas']}"]) == 0
    assert "records moved at most 2.5 coordinate unit" in out.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main([*base, "--public", str(tmp_path / "x.html"), "--within", "area=far"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pramkit report: error:") and "--within" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.html").exists()


# -- the figures' layout --------------------------------------------------------------------------


def _misplaced(fig) -> list[str]:
    """Texts of a drawn figure that leave the figure, or that cover their axes or one another: tick labels
    beside (y) or below (x) the axes, axis labels outside the tick labels, the title above the axes."""
    fig.canvas.draw()
    renderer, page = fig.canvas.get_renderer(), fig.bbox
    bad = []
    for ax in fig.axes:
        frame = ax.get_window_extent(renderer)
        def drawn(axis, low_high):  # the tick labels drawn: visible, with a text, their tick in the limits
            low, high = sorted(low_high)
            return [t.get_window_extent(renderer) for v, t in zip(axis.get_ticklocs(), axis.get_ticklabels())
                    if t.get_visible() and t.get_text() and low - 1e-9 <= v <= high + 1e-9]

        xticks, yticks = drawn(ax.xaxis, ax.get_xlim()), drawn(ax.yaxis, ax.get_ylim())
        boxes = {"x tick": xticks, "y tick": yticks}
        for name, text in (("x label", ax.xaxis.label), ("y label", ax.yaxis.label), ("title", ax.title)):
            if text.get_text():
                boxes[name] = [text.get_window_extent(renderer)]
        for name, found in boxes.items():
            bad += [f"{name} leaves the figure" for e in found
                    if e.x0 < page.x0 - 1 or e.x1 > page.x1 + 1 or e.y0 < page.y0 - 1 or e.y1 > page.y1 + 1]
        bad += ["x tick label on the axes" for e in xticks if e.y1 > frame.y0 + 1]
        bad += ["y tick label on the axes" for e in yticks if ax.yaxis.get_label_position() == "left" and e.x1 > frame.x0 + 1]
        if xticks and "x label" in boxes and boxes["x label"][0].y1 > min(e.y0 for e in xticks) + 1:
            bad.append("x label on the tick labels")
        if yticks and "y label" in boxes and boxes["y label"][0].x1 > min(e.x0 for e in yticks) + 1:
            bad.append("y label on the tick labels")
        if "title" in boxes and boxes["title"][0].y0 < frame.y1 - 1:
            bad.append("title on the axes")
    return bad


def test_the_figures_place_their_labels_inside_and_apart(geo: dict) -> None:
    """The reports' figures set their margins from their labels (no layout engine): with the census's
    bands, the EU-SILC-like long and non-ASCII labels, a missing category, 2 to 60 categories, every
    label stays inside the figure and off the axes."""
    from pramkit.report.build import VariableUtility
    from pramkit.report.plots import frequency_figure, heatmap_figure
    from pramkit.utility import privacy_utility_curve
    from pramkit.utility.curve import curve_figure

    data = census(2_000)
    label_sets = {
        "sex": list(data["sex"].cat.categories),
        "age": list(data["age"].cat.categories),
        "long": [None, "Österreich — Wien, Niederösterreich", "Burgenland", "Kärnten", "Steiermark", "Tirol"],
        "areas": [str(c) for c in geo["manifest"]["area"].matrix.categories],
        "sixty": [f"A{i:03d}" for i in range(60)],
    }
    rng = np.random.default_rng(8)
    for name, labels in label_sets.items():
        shares = 100 * rng.dirichlet(np.ones(len(labels)))
        frame = pd.DataFrame({"category": labels, "original": shares, "released": shares, "estimate": shares,
                              "ci_low": 0.8 * shares, "ci_high": 1.2 * shares})
        assert _misplaced(frequency_figure(VariableUtility(name, 1.0, 0.5, frame, None, ""))) == [], name
        texts = ["(missing)" if c is None else c for c in labels]
        assert _misplaced(heatmap_figure(name, randomized_response(texts, 1.0).matrix, texts)) == [], name
    p = rng.dirichlet(np.ones(9))
    for chosen in (0.1, 1.0, 8.0):
        curve = privacy_utility_curve(p, np.geomspace(0.05, 10, 25), n=5000, chosen=chosen)
        assert _misplaced(curve_figure(curve)) == [], chosen
