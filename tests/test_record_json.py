"""The design record is converted to JSON values once and written as indented strict JSON.

What is written is read back with the standard library's parser (strict: NaN and infinity
literals refused) and compared with the values the record converts to; the conversion is counted
through a wrapper of :func:`pramkit._json.to_jsonable` as the record module sees it.
"""

from __future__ import annotations

import contextlib
import io
import json
import random

import numpy as np
import pandas as pd
import pytest

import pramkit
import pramkit.release.record as record_module
from pramkit.cli import main
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.manifest import Manifest

#: Categories of the large record.
S = 100_000


def strict_load(text: str) -> object:
    """Parse ``text`` as strict JSON: the constants NaN, Infinity and -Infinity are refused."""
    def refuse(name: str) -> object:
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def count_record_conversions(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record every value the record module converts that holds a design record's matrices."""
    seen: list[object] = []
    convert = record_module.to_jsonable

    def counting(obj: object) -> object:
        if isinstance(obj, dict) and "matrices" in obj:
            seen.append(obj)
        return convert(obj)

    monkeypatch.setattr(record_module, "to_jsonable", counting)
    return seen


@pytest.fixture(scope="module")
def small_release() -> pramkit.Release:
    plan = pramkit.plan_release(["age", "sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
    return pramkit.design_planned(census(2_000), plan, rng=random.Random(3))


@pytest.fixture(scope="module")
def large_release() -> pramkit.Release:
    gen = np.random.default_rng(11)
    labels = np.array([f"c{k:06d}" for k in range(S)], dtype=object)
    codes = np.concatenate([np.arange(S), gen.integers(0, S, S)])
    frame = pd.DataFrame({"band": labels[codes]})
    plan = pramkit.plan_release(["band"], method="rr", epsilon=5.0, categories={"band": labels.tolist()})
    return pramkit.design_planned(frame, plan, rng=random.Random(5))


def test_the_record_read_back_equals_what_was_written(small_release, tmp_path) -> None:
    written = pramkit.write_design(small_release, tmp_path / "m.json")
    text = written.record_path.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    back = strict_load(text)
    assert back == small_release.record.to_dict()
    assert back == written.record_values
    assert back["per_variable"]["sex"]["counts"] == small_release.record.variables["sex"]["counts"]


def test_the_written_text_is_the_record_as_json(small_release, tmp_path) -> None:
    written = pramkit.write_design(small_release, tmp_path / "m.json")
    text = written.record_path.read_text(encoding="utf-8")
    assert strict_load(text) == json.loads(json.dumps(small_release.record.to_dict(), indent=2))
    assert text == small_release.record.to_json()
    path = small_release.record.write(tmp_path / "again.json")
    assert path.read_text(encoding="utf-8") == text


def test_an_infinite_epsilon_is_written_as_text(tmp_path) -> None:
    plan = pramkit.plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
    record = pramkit.design_planned(census(500), plan, rng=random.Random(1)).record
    values = record.to_dict()
    values_with_inf = {**values, "extra_bound": float("inf")}
    text = record_module._record_text(record_module.to_jsonable(values_with_inf))
    assert strict_load(text)["extra_bound"] == "inf"
    with pytest.raises(ValueError):
        record_module._record_text({"bad": float("nan")})


def test_the_manifest_text_is_unchanged(small_release, tmp_path) -> None:
    written = pramkit.write_design(small_release, tmp_path / "m.json")
    text = written.manifest_path.read_text(encoding="utf-8")
    assert text == json.dumps(small_release.manifest.to_dict(), indent=2, allow_nan=False) + "\n"
    assert Manifest.read(written.manifest_path) == small_release.manifest


def test_written_design_to_dict_adds_the_public_figures(small_release, tmp_path) -> None:
    written = pramkit.write_design(small_release, tmp_path / "m.json")
    out = written.to_dict()
    public = json.loads(small_release.manifest.to_json())
    assert {k: out[k] for k in written.record_values} == written.record_values
    assert out["record_epsilon"] == public["record_epsilon"]
    assert out["ledger"] == public.get("ledger")
    assert out["manifest"] == str(written.manifest_path)
    assert out["design_record"] == str(written.record_path)


def test_the_cli_prints_the_record_it_wrote(tmp_path) -> None:
    data = tmp_path / "data.csv"
    census(400).to_csv(data, index=False)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        code = main(["design", str(data), "--vars", "sex", "--epsilon", "1",
                     "--out", str(tmp_path / "m.json"), "--json"])
    assert code == 0
    printed = strict_load(sink.getvalue())
    on_disk = strict_load((tmp_path / "m.design-record.json").read_text(encoding="utf-8"))
    assert {k: printed[k] for k in on_disk} == on_disk
    assert printed["design_record"].endswith("m.design-record.json")


def test_a_large_record_is_converted_once(large_release, tmp_path, monkeypatch) -> None:
    seen = count_record_conversions(monkeypatch)
    written = pramkit.write_design(large_release, tmp_path / "m.json")
    out = written.to_dict()
    assert len(seen) == 1
    assert out["per_variable"] is written.record_values["per_variable"]
    assert out["matrices"]["band"] is written.record_values["matrices"]["band"]
    back = strict_load(written.record_path.read_text(encoding="utf-8"))
    assert back == written.record_values
    assert len(back["matrices"]["band"]["q"]) == S
    assert np.array_equal(back["per_variable"]["band"]["counts"], large_release.record.variables["band"]["counts"])
