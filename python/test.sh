#!/usr/bin/env bash
# dpq's Python package, as a user gets it: `pip install .` from this checkout into a fresh
# virtual environment, with what its tests need (pytest, pandas, Polars, pyarrow, and a real
# Jupyter kernel: nbclient and ipykernel), then its tests. The tests run the command line
# too: they use the newer of target/release/dpq and target/debug/dpq (or DPQ_BIN).
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${DPQ_PYTHON_VENV:-target/python-venv}"
python="${PYTHON:-python3}"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet ".[test]"
"$venv/bin/python" -c 'import dpq, sys; print(f"dpq {dpq.__version__} on Python {sys.version.split()[0]}")'
"$venv/bin/python" -m pytest -q python/tests "$@"
