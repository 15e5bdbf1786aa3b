#!/usr/bin/env bash
# Instructions per call of the single-thread paths, under callgrind: the noise-free figure on
# a shared machine. Each row runs ITERS calls inside `measured` (benches/callgrind.rs);
# callgrind counts only inside it; the `empty` row (the bare loop) is subtracted.
#
#   bash benches/callgrind.sh [ITERS]        # default 200000
#   ROWS="Gcra GcraPair" bash benches/callgrind.sh   # only these rows
#
# Needs valgrind (apt-get install valgrind). Prints a markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${1:-200000}
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)"; exit 1; }
# The bench target's binary: `cargo bench --no-run` prints its path.
BIN=$(cargo bench -p hotlimit-benches --bench callgrind --no-run 2>&1 | grep -o 'target/[^)]*callgrind-[0-9a-f]*' | tail -1)
[ -x "$BIN" ] || { echo "could not build the callgrind bench target"; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

count() { # row path -> instructions collected inside `measured`
    valgrind --tool=callgrind --toggle-collect='*measured*' --callgrind-out-file="$OUT/cg.$1.$2" \
        "$BIN" "$1" "$2" "$ITERS" >/dev/null 2>"$OUT/log"
    grep -E '^summary:|^totals:' "$OUT/cg.$1.$2" | head -1 | awk '{print $2}'
}

base_a=$(count empty allowed)
base_b=$(count empty busy)
base_d=$(count empty denied)
echo "ITERS=$ITERS; empty loop: $(echo "scale=2; $base_a / $ITERS" | bc) instr/iter (subtracted)"
echo
echo "| row | allowed instr/call | busy instr/call | denied instr/call |"
echo "|---|---|---|---|"
ROWS=${ROWS:-"Gcra Gcra+CoarseClock ShardedGcra ShardedGcra16 SlidingWindow SlidingLog MultiWindow2 MultiWindow2-log GcraPair GcraMulti2 GcraMulti3 Gcra-then-Gcra \
           governor governor-keyed governor-then-governor throttle-net-hybrid2 ratelimit rate-net rate-net+CoarseClock rate-net-keyed \
           mutex-log mutex-bucket Keyed-u64 Keyed-String Keyed-str Keyed-short IntKeyed-u64 IntKeyed-Ipv4Addr IntKeyed-IpAddr-v6 \
           quanta-now coarse-now instant-now fetch-add cas-loop sdd-guard seize-guard"}
for row in $ROWS; do
    a=$(count "$row" allowed)
    d=$(count "$row" denied)
    if [ "$row" = mutex-log ] || [ "$row" = SlidingWindow ] || [ "$row" = SlidingLog ] || [ "$row" = MultiWindow2 ] || [ "$row" = MultiWindow2-log ]; then
        b="–" # a sliding log has no burst apart from its limit: no busy path
    else
        b=$(echo "scale=1; ($(count "$row" busy) - $base_b) / $ITERS" | bc)
    fi
    printf '| %s | %s | %s | %s |\n' "$row" \
        "$(echo "scale=1; ($a - $base_a) / $ITERS" | bc)" "$b" \
        "$(echo "scale=1; ($d - $base_d) / $ITERS" | bc)"
done
