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

# The same abi3 wheel on the other Pythons from 3.10 to 3.13 this machine has (pyenv's, or on
# the PATH): installed alone in a fresh environment, imported, a session and a count. (The
# suite above needs pandas, Polars and pyarrow; this needs nothing but the wheel.)
"$venv/bin/pip" wheel --quiet --no-deps --wheel-dir target/wheels .
wheel="$(ls -t target/wheels/dpq-*-cp310-abi3-*.whl | head -n 1)"
for version in 3.10 3.11 3.12 3.13; do
    other=""
    for candidate in "$(command -v "python$version" 2>/dev/null || true)" "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/"$version".*/bin/"python$version"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then
            other="$candidate"
            break
        fi
    done
    if [ -z "$other" ]; then
        echo "Python $version: not on this machine"
        continue
    fi
    env_dir="target/python$version-wheel-venv"
    rm -rf "$env_dir"
    "$other" -m venv "$env_dir"
    "$env_dir/bin/pip" install --quiet --no-index "$wheel"
    "$env_dir/bin/python" - <<'PY'
import sys
import dpq
s = dpq.Session(practice=True, seed=1)
s.load("examples/data/people.csv", "people")
[r] = s.run("COUNT WHERE age <= 30 WITH EPS 0.1;")
assert r.kind == "count" and r.to_dict()["practice"]
print(f"the wheel on Python {sys.version.split()[0]}: import dpq, a session and a count")
PY
done
