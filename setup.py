"""Build of pramkit's compiled kernels (the project's metadata is in pyproject.toml)."""

import sys

from setuptools import Extension, setup

# The draws must round as the NumPy expressions they replace: no fused multiply-add.
FLAGS = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off"]

setup(ext_modules=[Extension("pramkit.engine._kernels", ["src/pramkit/engine/_kernels.c"], extra_compile_args=FLAGS)])
