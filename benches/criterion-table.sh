#!/usr/bin/env bash
# Turns `cargo bench -p hotlimit-benches --bench limiters` output (stdin) into markdown tables: per group, each
# row's median time per call with criterion's confidence interval, and the ratio of
# governor's median time to the row's (>1 = faster than governor).
#
#   cargo bench -p hotlimit-benches --bench limiters 2>&1 | tee /tmp/bench.txt | bash benches/criterion-table.sh
set -euo pipefail
awk '
function unit(v, u) { return u == "ps" ? v / 1000 : u == "µs" ? v * 1000 : u == "ms" ? v * 1e6 : v }
/time:/ {
    line = $0
    name = line; sub(/ *time:.*/, "", name); gsub(/^ +| +$/, "", name)
    if (name == "") name = prev
    s = line; sub(/.*time: *\[/, "", s); sub(/\].*/, "", s)
    if (s ~ /%/) next  # a "change:" block comparing with the previous run
    n = split(s, f, " ")
    lo = unit(f[1], f[2]); med = unit(f[3], f[4]); hi = unit(f[5], f[6])
    g = name; sub(/\/[^\/]*$/, "", g); r = name; sub(/.*\//, "", r)
    if (!(g in seen)) { seen[g] = 1; groups[++ng] = g }
    k = ++cnt[g]; rows[g, k] = r; meds[g, k] = med; los[g, k] = lo; his[g, k] = hi
    if (r == "governor") base[g] = med
    next
}
NF { prev = $0; gsub(/^ +| +$/, "", prev) }
END {
    for (i = 1; i <= ng; i++) {
        g = groups[i]
        printf "\n### %s\n\n| row | ns/call (median) | 95%% CI | calls/s vs governor |\n|---|---|---|---|\n", g
        for (k = 1; k <= cnt[g]; k++) {
            ratio = (g in base) ? sprintf("×%.2f", base[g] / meds[g, k]) : "–"
            printf "| %s | %.2f | %.2f – %.2f | %s |\n", rows[g, k], meds[g, k], los[g, k], his[g, k], ratio
        }
    }
}'
