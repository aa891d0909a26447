#!/usr/bin/env bash
# Fuzzes one target of dpq: fuzz/run.sh TARGET [SECONDS] [extra libFuzzer flags...]
#
# Targets: parse, interpret, csv, csv_chunks (fuzz/README.md). Runs from the repository root
# (the golden scripts LOAD paths relative to it), on stable Rust with `--sanitizer none`.
# Seeds fuzz/corpus/TARGET (git-ignored) from the golden scripts and data at every run; a
# crash lands in fuzz/artifacts/TARGET/, the log in fuzz/artifacts/logs/TARGET.log (git-ignored).
set -euo pipefail

target=${1:?usage: fuzz/run.sh TARGET [SECONDS] [libFuzzer flags...]}
seconds=${2:-60}
shift $(( $# < 2 ? $# : 2 ))

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

corpus=fuzz/corpus/$target
mkdir -p "$corpus" fuzz/artifacts/logs
seed() { # copy files into the corpus under a name made from their path
  for f in "$@"; do
    [ -f "$f" ] && cp "$f" "$corpus/seed-$(echo "$f" | tr '/' '_')"
  done
  return 0
}
case $target in
  parse|interpret)
    seed tests/golden/*/*.dpq examples/*.dpq
    # Statements that type tokens of fuzz/data/people-small.csv, so the interpret target's
    # leak check sees them in play.
    printf '%s\n' \
      "COUNT WHERE name = 'qZxN0001g' WITH EPS 0.1 PRIOR p=0.2;" \
      "COUNT WHERE code NOT IN ('qZxC0002, 26') AND age BETWEEN 20 AND 40 WITH EPS 0.2;" \
      "COUNT WHERE name > 'qZxN0150' OR NOT income < 5000 WITH EPS 0.3;" \
      "SHOW HISTORY; SHOW BUDGET; DESCRIBE people; SHOW TABLES;" > "$corpus/seed-canary.dpq"
    dict=(-dict=fuzz/dpq.dict)
    ;;
  csv|csv_chunks)
    seed tests/golden/data/*.csv fuzz/data/people-small.csv
    head -c 3000 examples/data/people.csv > "$corpus/seed-people-head.csv"
    dict=()
    ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac

log=fuzz/artifacts/logs/$target.log
echo "cargo fuzz run --sanitizer none $target $corpus -- -max_total_time=$seconds -timeout=10 ${dict[*]} $*" | tee "$log"
status=0
cargo fuzz run --sanitizer none "$target" "$corpus" -- \
  -max_total_time="$seconds" -timeout=10 -print_final_stats=1 "${dict[@]}" "$@" 2>&1 \
  | tee -a "$log" || status=$?
echo "--- summary"
grep -E 'Done [0-9]+ runs|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb' "$log" || true
if [ "$status" -ne 0 ] || grep -q -E 'panicked|ERROR: libFuzzer|SUMMARY: libFuzzer' "$log"; then
  echo "CRASH (exit $status): see $log and fuzz/artifacts/$target/" >&2
  exit 1
fi
