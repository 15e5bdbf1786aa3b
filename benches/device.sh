#!/usr/bin/env bash
# Issue 24's many-core run, in two halves: build here, run there (a 16-core machine with no
# network and no cargo, reached as DEVELOPERS.md says; the device runner carries ignored paths
# such as target/device/ with the working tree).
#
#   bash benches/device.sh build              # here: the harness binaries into target/device/
#   bash benches/device.sh run [OUT]          # there (the device runner: run "$OUT"): every
#                                             #   row, path and thread count in one
#                                             #   run, into OUT (default target/device-out/)
#   bash benches/device.sh run-keyed [OUT]    # there: issue 26's keyed table (keyed_compare
#                                             #   paired, 1, 2 and 16 threads, then the u64
#                                             #   rows on random keys, then on clock_gettime
#                                             #   with OSCLOCK=1) into OUT/keyed.md
#   bash benches/device.sh build-ab           # here: the scaling harness once more for each
#                                             #   candidate of POLICIES (default
#                                             #   "backoff_reload batch3 immediate
#                                             #   layout:state_first"), the crate built with
#                                             #   --cfg hotlimit_policy=… or hotlimit_layout=…,
#                                             #   and keyed_compare likewise
#   bash benches/device.sh run-ab [OUT]       # there: the real single-word limiters and the
#                                             #   GCRA loops under the default policy and each
#                                             #   candidate, one after another, governor in
#                                             #   every run, into OUT/ab-<policy>.md
#   bash benches/device.sh run-keyed-ab [OUT] # there: run-keyed's table for the default build
#                                             #   and each candidate (keyed_compare-<policy>),
#                                             #   into OUT/keyed-<policy>.md
#   bash benches/device.sh all [OUT]          # there, after build and build-ab here: run
#                                             #   (REPS=3), run-keyed and run-ab in one
#                                             #   command (about 8 minutes on 16 cores;
#                                             #   the A/B tables in OUT/ab.md)
#
# `run` writes OUT/machine.txt (cores, CPU, load before and after), OUT/scaling.md (the
# tables, ratios to governor, the audits of the allowed path's denials, the load at each
# path's start and end), OUT/scaling.tsv (the plotted medians, labelled "16 cores" or however
# many there are) and OUT/scaling.svg. Back here, the 2-core and many-core panels go into one
# picture with:
#
#   cargo bench -p hotlimit-benches --bench scaling -- --render docs/scaling.tsv,OUT/scaling.tsv \
#       --svg docs/scaling.svg
#
# MS, REPS, THREADS and ONLY override the run (defaults: 40 ms x 5 reps per cell, threads
# 1,2,4,8,12,16,64, the rows below). On the 2-core machine one rep of every row took 2.5
# minutes at 60 ms (most of it starting and joining 64 threads per cell on 2 cores); on 16
# cores the default run should fit one 10-minute device command with room to spare: if it
# does not, REPS=3.
set -euo pipefail
cd "$(dirname "$0")/.."

# The keyed table of one keyed_compare binary: BIN NAME ROUNDS ROUNDS_RANDOM (the defaults of
# ROUNDS and ROUNDS_RANDOM when the environment sets neither). The paired table, then the u64
# rows on keys with no structure (consecutive ids spread differently from random keys under
# foldhash's one-multiply hash: BENCHMARKS.md, "Keyed"), shuffled, 1 and 16 threads.
# The time source quanta (every crate's default clock here) reads: the TSC where the CPU
# reports an invariant one (constant_tsc and nonstop_tsc), clock_gettime otherwise.
clock_info() {
    echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown);" \
        "TSC flags: $(grep -o -w -E 'constant_tsc|nonstop_tsc|tsc_known_freq' /proc/cpuinfo 2>/dev/null | sort -u | tr '\n' ' ')"
}

keyed_table() {
    echo "commit: $(cat target/device/commit 2>/dev/null || echo unknown); cores: $(nproc); build $2"
    clock_info
    echo "start $(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg)"
    ROUNDS=${ROUNDS:-$3} THREADS=${THREADS:-1,2,16} "$1" paired
    echo "KEYVALS=random:"
    KEYVALS=random ORDER=shuffled ROUNDS=${ROUNDS_RANDOM:-$4} THREADS=${THREADS_RANDOM:-1,16} "$1" paired
    echo "OSCLOCK=1 (each crate on clock_gettime), KEYVALS=random:"
    OSCLOCK=1 KEYVALS=random ORDER=shuffled KEYS=${KEYS_OS:-100000} ROUNDS=${ROUNDS_RANDOM:-$4} \
        THREADS=${THREADS_RANDOM:-1,16} "$1" paired
    echo "end $(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg)"
}

case "${1:-}" in
build)
    BIN=$(cargo bench -p hotlimit-benches --bench scaling --no-run 2>&1 | grep -o 'target/[^)]*scaling-[0-9a-f]*' | tail -1)
    [ -x "$BIN" ] || { echo "could not build the scaling bench target"; exit 1; }
    KEYED=$(cargo bench -p hotlimit-benches --bench keyed_compare --no-run 2>&1 | grep -o 'target/[^)]*keyed_compare-[0-9a-f]*' | tail -1)
    [ -x "$KEYED" ] || { echo "could not build the keyed_compare bench target"; exit 1; }
    mkdir -p target/device
    cp "$BIN" target/device/scaling
    cp "$KEYED" target/device/keyed_compare
    # Debug info is not needed there; the device runner carries at most 64 MiB.
    strip target/device/scaling target/device/keyed_compare 2>/dev/null || true
    git rev-parse HEAD > target/device/commit
    ls -l target/device
    echo "now run: bash benches/device.sh run   (on the many-core machine, carrying target/device)"
    echo "     and: bash benches/device.sh run-keyed"
    ;;
run)
    OUT=${2:-target/device-out}
    BIN=target/device/scaling
    [ -x "$BIN" ] || { echo "$BIN missing: run 'bash benches/device.sh build' first and carry target/device"; exit 1; }
    mkdir -p "$OUT"
    CORES=$(nproc)
    {
        echo "commit: $(cat target/device/commit 2>/dev/null || echo unknown)"
        echo "cores: $CORES"
        lscpu 2>/dev/null | grep -E 'Model name|Socket|Core|Thread|NUMA node\(s\)|MHz' || true
        clock_info
        echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    } > "$OUT/machine.txt"
    if [ "$CORES" -lt 16 ]; then
        echo "note: $CORES cores here; the issue's table wants 16" | tee -a "$OUT/machine.txt"
    fi
    # Ours, the peers users pick instead, the floors that say where the time goes, and every
    # contention candidate (the GCRA loops); the keyed peers and coarse-clock floors sit out.
    ONLY=${ONLY:-'Gcra,Sliding,MultiWindow,governor,Keyed,ratelimit,rate-net,Mutex,floor: quanta now(),floor: shared,GCRA loop'}
    "$BIN" --ms "${MS:-40}" --reps "${REPS:-5}" --threads "${THREADS:-1,2,4,8,12,16,64}" \
        --only "$ONLY" --machine "$CORES cores" --svg "$OUT/scaling.svg" \
        --data "$OUT/scaling.tsv" | tee "$OUT/scaling.md"
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/machine.txt"
    cat "$OUT/machine.txt"
    ;;
run-keyed)
    # Issue 26's table on this machine's cores: IntKeyed, Keyed<u64>, Keyed<String> (key from a
    # vector and hot) and Keyed<ShortKey> against governor, paired in rounds; ROUNDS, THREADS,
    # KEYS and ORDER as in benches/keyed_compare.rs (defaults here: 9 rounds, 1, 2 and 16
    # threads; about 4 minutes on 2 cores at 16 threads, less on 16).
    OUT=${2:-target/device-out}
    BIN=target/device/keyed_compare
    [ -x "$BIN" ] || { echo "$BIN missing: run 'bash benches/device.sh build' first and carry target/device"; exit 1; }
    mkdir -p "$OUT"
    keyed_table "$BIN" default 9 5 2>&1 | tee "$OUT/keyed.md"
    ;;
build-ab)
    # Each candidate in its own target directory: the cfg changes every crate's flags, and a
    # shared one would rebuild the default build's dependencies each time.
    mkdir -p target/device
    # A candidate is a contention policy (hotlimit_policy) or, with "layout:", a layout of the
    # single-word limiters (hotlimit_layout; "state_first": `Gcra`'s and `GcraPair`'s state
    # word first, the clock off its cache line).
    for p in ${POLICIES:-backoff_reload batch3 immediate layout:state_first}; do
        case "$p" in
        layout:*) CFG="--cfg hotlimit_layout=\"${p#layout:}\""; NAME="layout-${p#layout:}" ;;
        *) CFG="--cfg hotlimit_policy=\"$p\""; NAME="$p" ;;
        esac
        BIN=$(RUSTFLAGS="$CFG" CARGO_TARGET_DIR="target/ab-$NAME" \
            cargo bench -p hotlimit-benches --bench scaling --no-run 2>&1 | grep -o 'target/[^)]*scaling-[0-9a-f]*' | tail -1)
        [ -x "$BIN" ] || { echo "could not build the scaling bench with $CFG"; exit 1; }
        cp "$BIN" "target/device/scaling-$NAME"
        strip "target/device/scaling-$NAME" 2>/dev/null || true
        KEYED=$(RUSTFLAGS="$CFG" CARGO_TARGET_DIR="target/ab-$NAME" \
            cargo bench -p hotlimit-benches --bench keyed_compare --no-run 2>&1 | grep -o 'target/[^)]*keyed_compare-[0-9a-f]*' | tail -1)
        [ -x "$KEYED" ] || { echo "could not build keyed_compare with $CFG"; exit 1; }
        cp "$KEYED" "target/device/keyed_compare-$NAME"
        strip "target/device/keyed_compare-$NAME" 2>/dev/null || true
    done
    git rev-parse HEAD > target/device/commit
    ls -l target/device
    echo "now run: bash benches/device.sh run-ab   (on the many-core machine, carrying target/device)"
    ;;
run-ab)
    # The default build (`build`) and every candidate, one after another, each on the rows a
    # policy changes; MS, REPS and THREADS as for `run` (defaults here: 40 ms x 3 reps, about
    # 50 s a policy on 16 cores).
    OUT=${2:-target/device-out}
    [ -x target/device/scaling ] || { echo "target/device/scaling missing: run 'bash benches/device.sh build' first"; exit 1; }
    mkdir -p "$OUT"
    ONLY=${ONLY:-'Gcra,Sliding,governor,GCRA loop: immediate retry,GCRA loop: Backoff+jitter, reload,GCRA loop: batch'}
    echo "commit: $(cat target/device/commit 2>/dev/null || echo unknown); cores: $(nproc)" > "$OUT/ab-machine.txt"
    for BIN in target/device/scaling target/device/scaling-*; do
        [ -x "$BIN" ] || continue # no candidate built: the glob stays as written
        NAME=$(basename "$BIN"); NAME=${NAME#scaling-}; [ "$NAME" = scaling ] && NAME=default
        echo "$NAME: start $(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/ab-machine.txt"
        "$BIN" --ms "${MS:-40}" --reps "${REPS:-3}" --threads "${THREADS:-1,2,4,8,12,16,64}" \
            --only "$ONLY" --machine "$(nproc) cores, policy $NAME" --svg "/tmp/ab-$NAME.svg" \
            --data "/tmp/ab-$NAME.tsv" > "$OUT/ab-$NAME.md" 2>&1
    done
    echo "end $(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/ab-machine.txt"
    cat "$OUT/ab-machine.txt"
    ;;
run-keyed-ab)
    # The keyed table (`run-keyed`'s, ROUNDS default 5 here) for the default build and each
    # candidate `build-ab` made, one after another, then the u64 rows on random keys for each,
    # into OUT/keyed-<policy>.md (about 2 minutes a candidate on 16 cores).
    OUT=${2:-target/device-out}
    [ -x target/device/keyed_compare ] || { echo "target/device/keyed_compare missing: run 'bash benches/device.sh build' first"; exit 1; }
    mkdir -p "$OUT"
    for BIN in target/device/keyed_compare target/device/keyed_compare-*; do
        [ -x "$BIN" ] || continue # no candidate built: the glob stays as written
        NAME=$(basename "$BIN"); NAME=${NAME#keyed_compare-}; [ "$NAME" = keyed_compare ] && NAME=default
        keyed_table "$BIN" "$NAME" 5 3 > "$OUT/keyed-$NAME.md" 2>&1
    done
    ;;
all)
    # One device command for a whole session's tables. At most 8 files come back from the
    # device runner: the svg is left out (draw it here from scaling.tsv with --render) and the
    # A/B's machine notes join machine.txt.
    OUT=${2:-target/device-out}
    SELF="$(pwd)/benches/device.sh"
    REPS=${REPS:-3} bash "$SELF" run "$OUT" > /dev/null
    rm -f "$OUT/scaling.svg"
    bash "$SELF" run-keyed "$OUT" > /dev/null
    bash "$SELF" run-ab "$OUT" > /dev/null
    cat "$OUT/ab-machine.txt" >> "$OUT/machine.txt"
    rm -f "$OUT/ab-machine.txt"
    for f in "$OUT"/ab-*.md; do echo "=== $(basename "$f" .md)"; cat "$f"; done > "$OUT/ab.md"
    rm -f "$OUT"/ab-*.md
    cat "$OUT/machine.txt"
    ls "$OUT"
    ;;
*)
    echo "usage: bash benches/device.sh build | run [OUT] | run-keyed [OUT] | build-ab | run-ab [OUT] | run-keyed-ab [OUT] | all [OUT]"
    exit 2
    ;;
esac
