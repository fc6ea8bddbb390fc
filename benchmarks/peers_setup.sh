#!/usr/bin/env bash
# Create the virtual environment of the peers (dpmm's MST and AIM) for benchmarks/bench_sdnist.py.
#
# dpmm lives in a venv of its own, never in pramkit's.  Every distribution is pinned
# (benchmarks/peers-requirements.txt) and pip is left as the venv brings it, so that the environment's
# digest is the one the releases kept in benchmarks/peer-releases/ were made in.  Usage:
#
#   bash benchmarks/peers_setup.sh [VENV_DIR]         # default: ./dpmm-venv
#   export DPMM_PYTHON=$PWD/dpmm-venv/bin/python
#   python benchmarks/bench_sdnist.py --peers --peer-releases benchmarks/peer-releases
#
# PYTHON picks the interpreter that builds the venv (default python3.11, then python3).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-dpmm-venv}"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --no-deps -r "$here/peers-requirements.txt"
"$venv/bin/python" -m pip check
"$venv/bin/python" -c "import dpmm.pipelines"
echo "dpmm is ready: export DPMM_PYTHON=$(cd "$venv" && pwd)/bin/python"
