"""Adapters that run pramkit's kernels on other engines (Spark)."""
