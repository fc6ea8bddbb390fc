"""The Spark engine, run for real on a local Spark: identical releases whatever the partitioning."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from _requires import require_spark  # noqa: E402

from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import apply_file
from pramkit.io import write_table
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix

require_spark()

from pramkit.engines import spark as ps  # noqa: E402

#: Records of the test file: its CSV (about 176 KB) splits into 8 partitions at the smaller split size below.
N = 8_000


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("spark")
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({
        "row": np.arange(N, dtype=np.int64),
        "region": rng.integers(1, 8, N),
        "sex": rng.choice(["m", "f"], N),
        "age": pd.Series(rng.choice(["0-17", "18-64", "65+", None], N, p=[0.2, 0.6, 0.15, 0.05]), dtype=object),
        "income": rng.lognormal(8, 1, N).round(2),
    })
    write_table(frame, d / "in.parquet")
    frame.to_csv(d / "in.csv", index=False)
    general = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    Manifest.of({
        "region": randomized_response(list(range(1, 8)), 1.0),
        "sex": randomized_response(["m", "f"], 0.5),
        "age": PramMatrix(general, ("0-17", "18-64", "65+")),
    }).write(d / "m.json")
    return {"dir": d, "parquet": d / "in.parquet", "csv": d / "in.csv", "manifest": d / "m.json"}


@pytest.fixture(scope="module")
def key() -> SecretKey:
    return SecretKey(b"spark test key, 32 bytes long!!!", "test")


@pytest.fixture(scope="module")
def local(files, key) -> pd.DataFrame:
    apply_file(files["parquet"], Manifest.read(files["manifest"]), files["dir"] / "local.parquet", key=key)
    return pq.read_table(files["dir"] / "local.parquet").to_pandas()


# one partition and several: a third count (3) ran the same code on other boundaries, a Spark job more for nothing
@pytest.mark.parametrize("partitions", [1, 7])
def test_any_partitioning_with_row_numbers(spark, files, key, local, partitions: int) -> None:
    df = ps.read(spark, files["parquet"]).repartition(partitions)
    assert df.rdd.getNumPartitions() == partitions
    released = ps.perturb(df, Manifest.read(files["manifest"]), key=key, row_number="row").toPandas()
    released = released.sort_values("row").reset_index(drop=True)
    pd.testing.assert_frame_equal(released, local, check_dtype=True)


# one split and several (8: every partition after the first needs its offset; 3 splits checked nothing more)
@pytest.mark.parametrize(("max_bytes", "partitions"), [("200000000", 1), ("25000", 8)])
def test_file_order_without_row_numbers(spark, files, key, local, max_bytes: str, partitions: int) -> None:
    spark.conf.set("spark.sql.files.maxPartitionBytes", max_bytes)
    try:
        df = ps.read(spark, files["csv"])
        assert df.rdd.getNumPartitions() == partitions
        released = ps.perturb(df, Manifest.read(files["manifest"]), key=key).toPandas()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    expected = local.astype({"row": str, "region": str, "income": str})
    assert (released["row"] == expected["row"]).all()  # same order
    for col in ("region", "sex", "age"):
        assert released[col].fillna("").tolist() == expected[col].fillna("").tolist(), col


def test_frequency_tables(spark, files) -> None:
    df = ps.read(spark, files["parquet"])
    frame = pd.read_parquet(files["parquet"])
    counts = ps.category_counts(df, "sex")
    assert counts == frame["sex"].value_counts().to_dict()
    table = ps.table_counts(df, ["region", "sex"]).set_index(["region", "sex"])["count"].sort_index()
    expected = frame.groupby(["region", "sex"]).size().sort_index()
    assert table.to_dict() == expected.to_dict()
    assert ps.category_counts(df, "age")[None] == int(frame["age"].isna().sum())


def test_cli_engine_spark(files, key, local, capsys) -> None:
    key_file = files["dir"] / "key"
    key_file.write_text(key.text())  # hex, as `pramkit keygen` writes it
    out = files["dir"] / "spark_out.parquet"
    code = main(["apply", str(files["parquet"]), "--manifest", str(files["manifest"]), "--out", str(out),
                 "--key-file", str(key_file), "--engine", "spark", "--spark-master", "local[2]", "--quiet"])
    assert code == 0, capsys.readouterr().err
    released = pq.read_table(out).to_pandas().sort_values("row").reset_index(drop=True)
    pd.testing.assert_frame_equal(released, local)
    code = main(["apply", str(files["parquet"]), "--manifest", str(files["manifest"]), "--out", str(out),
                 "--engine", "spark"])
    assert code == 2 and "--force" in capsys.readouterr().err


def test_joint_variable_on_spark(spark, files, key) -> None:
    """A joint matrix over two columns: Spark releases what the local engine releases."""
    cells = [(r, s) for r in range(1, 8) for s in ("m", "f")]
    rng = np.random.default_rng(9)
    m = PramMatrix(0.7 * np.eye(len(cells)) + 0.3 * rng.dirichlet(np.ones(len(cells)), size=len(cells)), cells)
    manifest = Manifest((PerturbedVariable("region*sex", m, columns=("region", "sex")),))
    apply_file(files["parquet"], manifest, files["dir"] / "joint_local.parquet", key=key)
    expected = pq.read_table(files["dir"] / "joint_local.parquet").to_pandas()
    df = ps.read(spark, files["parquet"]).repartition(3)
    released = ps.perturb(df, manifest, key=key, row_number="row").toPandas()
    released = released.sort_values("row").reset_index(drop=True)
    pd.testing.assert_frame_equal(released, expected)
    assert (released["region"] != pd.read_parquet(files["parquet"])["region"]).any()


def test_column_names_are_taken_literally(spark, key) -> None:
    """Dots and backticks in column names name columns, not nested fields; the other columns pass unchanged."""
    from pramkit.engine.perturb import perturb_frame

    frame = pd.DataFrame({"row": np.arange(2000, dtype=np.int64), "sex.code": ["m", "f"] * 1000,
                          "odd`name": np.arange(2000, dtype=np.int64) % 7})
    manifest = Manifest.of({"sex.code": randomized_response(["m", "f"], 0.5)})
    expected = perturb_frame(frame, manifest, key=key)[0]
    released = ps.perturb(spark.createDataFrame(frame).repartition(3), manifest, key=key, row_number="row")
    assert released.columns == list(frame.columns)
    released = released.toPandas().sort_values("row").reset_index(drop=True)
    pd.testing.assert_frame_equal(released, expected, check_dtype=False)
    assert (released["sex.code"] != frame["sex.code"]).any()
