"""The Spark engine's public names, kept here for scripts that import them from ``pramkit.engines.spark``.

The engine lives in :mod:`pramkit.engine.spark`, one module per pass.

Examples
--------
>>> from pramkit.engine import spark
>>> from pramkit.engines.spark import apply_file_spark
>>> apply_file_spark is spark.apply_file_spark
True
"""

from pramkit.engine.spark import *  # noqa: F403
from pramkit.engine.spark import __all__  # noqa: F401
