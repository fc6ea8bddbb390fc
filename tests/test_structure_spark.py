"""The Spark engine (real, local mode) enforces the structure exactly as the local engine does."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from _requires import require_spark  # noqa: E402

from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.engine.perturb import apply_file
from pramkit.io import write_table
from pramkit.kernel.rng import SecretKey
from pramkit.release.pipeline import design_release

require_spark()

from pramkit.engines import spark as ps  # noqa: E402

REGIONS = ("north", "south", "east", "west")
KEY = SecretKey(b"structure on spark, 32 bytes!!!!", "test")


def test_spark_releases_what_the_local_engine_releases_with_structure(spark, tmp_path):
    d = census(30_000, seed=21)[["age", "sex", "marital_status"]].astype(str)
    d.insert(0, "row", np.arange(len(d), dtype=np.int64))
    d["hid"] = (np.arange(len(d)) // 3).astype(np.int64)
    d["region"] = np.array(REGIONS)[(d["hid"].to_numpy() * 7919) % 4]
    write_table(d, tmp_path / "in.parquet")
    cats = {**CENSUS_VARIABLES, "region": REGIONS}
    rules = [{"age": "0-9", "marital_status": "married, spouse present|married, spouse absent|separated|divorced|"
                                              "widowed"}]
    manifests = [
        design_release(d, ["age", "marital_status"], epsilon=3.0, split="joint", strata="sex", forbid=rules,
                       categories=cats, rng=random.Random(1)),
        design_release(d, ["region", "age"], epsilon=3.0, household="hid", household_vars="region",
                       keep_codes={"age": "75+"}, categories=cats, rng=random.Random(2)),
    ]
    for i, m in enumerate(manifests):
        local_path = tmp_path / f"local{i}.parquet"
        apply_file(tmp_path / "in.parquet", m, local_path, key=KEY)
        local = pq.read_table(local_path).to_pandas()
        df = ps.read(spark, tmp_path / "in.parquet").repartition(3)
        released = ps.perturb(df, m, key=KEY, row_number="row").toPandas().sort_values("row").reset_index(drop=True)
        pd.testing.assert_frame_equal(released, local, check_dtype=False)
        assert (released["age"] != d["age"]).any()
        if i == 0:
            assert (released["sex"] == d["sex"]).all()
            assert (released.loc[released["age"] == "0-9", "marital_status"] == "never married").all()
        else:
            assert released.groupby("hid")["region"].nunique().max() == 1
            assert ((released["age"] == "75+") == (d["age"] == "75+")).all()
