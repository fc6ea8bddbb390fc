"""``apply --engine spark --shuffle``: the part files, read in order, hold the local engine's shuffled release."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from _requires import require_spark  # noqa: E402

from pramkit.cli import main
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import apply_file
from pramkit.manifest import Manifest, PerturbedVariable

require_spark()

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("missing", ["keep", "category"])
def test_spark_shuffle_matches_the_local_engine(spark, tmp_path: Path, key, capsys, missing) -> None:
    """Row for row and in the receipt's guarantee, with missing sexes kept missing or perturbed as a category
    (then the clone groups are counted on the released file: its missing values are not the original's)."""
    frame = census(3_000, seed=11)[["age", "sex", "marital_status"]]
    frame.loc[::97, "sex"] = None                                   # missing values stay missing, in place
    frame.to_parquet(tmp_path / "in.parquet", index=False)
    sexes = [*sorted(frame["sex"].dropna().unique()), *([None] if missing == "category" else [])]
    Manifest((PerturbedVariable("age", randomized_response(sorted(frame["age"].unique()), 2.0)),
              PerturbedVariable("sex", randomized_response(sexes, 2.0), missing=missing))).write(tmp_path / "m.json")
    local = apply_file(tmp_path / "in.parquet", tmp_path / "m.json", tmp_path / "local.parquet", key=key,
                       shuffle=True, public_columns=["marital_status"])
    (tmp_path / "key").write_bytes(key.material)
    out = tmp_path / "spark.parquet"
    code = main(["apply", str(tmp_path / "in.parquet"), "--manifest", str(tmp_path / "m.json"), "--out", str(out),
                 "--key-file", str(tmp_path / "key"), "--engine", "spark", "--spark-master", "local[2]",
                 "--shuffle", "--public-columns", "marital_status", "--quiet", "--json"])
    assert code == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    parts = sorted(p for p in out.iterdir() if p.name.endswith(".parquet"))
    released = pd.concat([pq.read_table(p).to_pandas() for p in parts], ignore_index=True)
    expected = pq.read_table(tmp_path / "local.parquet").to_pandas()
    pd.testing.assert_frame_equal(released.astype("string"), expected.astype("string"))  # row for row
    assert summary["guarantees"] == local.guarantees.to_dict()
