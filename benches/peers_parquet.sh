#!/usr/bin/env bash
# Side by side on a Parquet file: dpq against Polars and DuckDB (benches/peers_parquet.py).
# Usage, from the project's root after `cargo build --release`:
#   bash benches/peers_parquet.sh [ROWS] [ROUNDS] [OLD_DPQ]
set -euo pipefail
rows=${1:-10000000}; rounds=${2:-5}; old=${3:-}
dir=${BENCH_DIR:-${TMPDIR:-/tmp}/dpq-bench}
mkdir -p "$dir"
[ -x "$dir/venv/bin/python" ] || { python3 -m venv "$dir/venv" && "$dir/venv/bin/pip" install -q numpy polars duckdb pyarrow; }
bin=${CARGO_TARGET_DIR:-target}/release/dpq
[ -x "$bin" ] || { echo "run from the project's root after cargo build --release" >&2; exit 2; }
BENCH_DIR="$dir" "$dir/venv/bin/python" "$(dirname "$0")/peers_parquet.py" "$rows" "$rounds" "$bin" $old
