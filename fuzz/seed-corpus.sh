#!/bin/sh
# Fill fuzz/corpus/TARGET/ (cargo-fuzz's default corpus directories) with seeds:
# CapJava sources from corpus/ for compile_no_panic, STD traces from analyses/tests/data/rapid
# (RAPID's reference traces) and fuzz/seeds/ for trace_no_panic, and a few fixed byte strings for the generator
# targets (any bytes are a valid input there).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
rapid=$root/analyses/tests/data/rapid
c=$here/corpus
mkdir -p "$c/compile_no_panic" "$c/trace_no_panic"

# rand_bytes SEED N: N pseudo-random bytes, the same on every machine (a 32-bit LCG
# in awk, exact in doubles; its high byte), written with printf's octal escapes.
rand_bytes() {
    printf "$(awk -v x="$1" -v n="$2" 'BEGIN {
        for (i = 0; i < n; i++) {
            x = (x * 69069 + 1) % 4294967296
            printf "\\%03o", int(x / 16777216)
        }
    }')"
}
find "$root/corpus" -name '*.cj' -exec cp {} "$c/compile_no_panic/" \;
cp "$here"/seeds/trace_no_panic/*.std "$c/trace_no_panic/"
cp "$rapid"/*.std "$c/trace_no_panic/"
for t in detectors_vs_hb detectors_vs_hb_run filters_trace_precise spec_vs_bruteforce interp_vs_jit grits_spec bigfoot_vs_fasttrack slp_vs_uncompressed; do
    mkdir -p "$c/$t"
    for n in 1 2 3 4 5 6 7 8; do
        seq $((n * 37)) 7919 1000000 | head -c $((n * 64)) > "$c/$t/seed$n"
        # And bytes of every value: the digits above drive the generator into a
        # narrow family of programs (with a planted BigFoot bug, none of 400 such
        # inputs fails, against 9 of 400 pseudo-random ones; fuzz/README.md).
        rand_bytes $((n * 7)) $((256 * n)) > "$c/$t/rand$n"
    done
done
echo "seed corpus in $c"
