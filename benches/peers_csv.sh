#!/usr/bin/env bash
# Side by side over a generated CSV: dpq against Polars and DuckDB (benches/peers_csv.py).
# Usage: bash benches/peers_csv.sh ROWS ROUNDS count|histogram|sum [DPQ_BINARY[=LABEL] ...]
# With no binary, the release build's (cargo build --release first). The Python environment and
# the CSV (the same generator as the COUNT comparison in the README) are kept in BENCH_DIR.
set -euo pipefail
rows=${1:-10000000}; rounds=${2:-5}; question=${3:-histogram}
shift $(( $# < 3 ? $# : 3 ))
here=$(cd "$(dirname "$0")" && pwd)
dir=${BENCH_DIR:-${TMPDIR:-/tmp}/dpq-bench}
mkdir -p "$dir"
[ -x "$dir/venv/bin/python" ] || { python3 -m venv "$dir/venv" && "$dir/venv/bin/pip" install -q numpy polars duckdb; }
csv="$dir/data-$rows.csv"
[ -f "$csv" ] || "$dir/venv/bin/python" "$here/gen_csv.py" "$rows" "$csv" >/dev/null
if [ $# -eq 0 ]; then
    bin="${CARGO_TARGET_DIR:-$here/../target}/release/dpq"
    [ -x "$bin" ] || { echo "no $bin: run cargo build --release first" >&2; exit 2; }
    set -- "$bin=release"
fi
"$dir/venv/bin/python" "$here/peers_csv.py" "$csv" "$rounds" "$question" "$@"
