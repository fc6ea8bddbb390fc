#!/usr/bin/env bash
# Create the virtual environment of NIST's SDNist scorer for benchmarks/bench_sdnist.py.
#
# SDNist 2.4 pins old library versions (pandas 2.0, numpy 1.24, scikit-learn 1.2), so it lives in a
# venv of its own, never in pramkit's.  Usage:
#
#   bash benchmarks/sdnist_setup.sh [VENV_DIR]        # default: ./sdnist-venv
#   export SDNIST_PYTHON=$PWD/sdnist-venv/bin/python
#   python benchmarks/bench_sdnist.py
#
# PYTHON picks the interpreter that builds the venv (default python3.11, then python3); SDNist 2.4
# installs on Python 3.10 and 3.11.
set -euo pipefail
venv="${1:-sdnist-venv}"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "sdnist==2.4"
"$venv/bin/python" -c "import sdnist.report" 
echo "SDNist is ready: export SDNIST_PYTHON=$(cd "$venv" && pwd)/bin/python"
