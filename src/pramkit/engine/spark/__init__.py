"""The Spark engine: every pass over records as Spark jobs, with results equal to the local engine's.

pyspark is an optional dependency (``pip install pramkit[spark]``); these modules import
it only when a function runs.  One module per pass:

* :mod:`~pramkit.engine.spark.session`: sessions, and Spark's failures as one-line errors;
* :mod:`~pramkit.engine.spark.files`: reading and writing CSV and Parquet (folders of part files);
* :mod:`~pramkit.engine.spark.counts`: frequency tables (the design's counts, risk's key tables,
  estimation's sufficient statistics), aggregated by Spark and counted locally;
* :mod:`~pramkit.engine.spark.perturb`, :mod:`~pramkit.engine.spark.shuffle` and
  :mod:`~pramkit.engine.spark.apply`: the release itself;
* :mod:`~pramkit.swap.spark`: record swapping (the swap drawn on the driver, applied by Spark;
  a workflow, imported from its module: ``from pramkit.swap.spark import swap_file_spark``).

Examples
--------
>>> from pramkit.engine import spark
>>> spark.apply_file_spark.__module__
'pramkit.engine.spark.apply'
"""

from pramkit.engine.spark.apply import apply_file_spark
from pramkit.engine.spark.counts import category_counts, table_counts
from pramkit.engine.spark.files import SPARK_CHARSETS, read, spark_charset, write
from pramkit.engine.spark.perturb import perturb
from pramkit.engine.spark.session import SparkEngineError, engine_error, from_spark, jvm_log, session
from pramkit.engine.spark.shuffle import shuffle_rows, smallest_group

__all__ = [
    "SPARK_CHARSETS",
    "SparkEngineError",
    "apply_file_spark",
    "category_counts",
    "engine_error",
    "from_spark",
    "jvm_log",
    "perturb",
    "read",
    "session",
    "shuffle_rows",
    "smallest_group",
    "spark_charset",
    "table_counts",
    "write",
]
