#!/usr/bin/env bash
# usage: scripts/ab/fleet-ab.sh REPS VARIANT...   (on a machine of 2 GPUs or more, after make kbench)
#
# What each piece of --devices's machinery buys: this tree rebuilt with some
# of the worker hooks (cli/fleet/devices.c's run_worker) switched off, by sed
# on a copy under .ab/fleet-VARIANT, and each build timed on make run's sweep
# (configs/default.json) on GPUs 0,1 and on configs/mlp-grid.json on every
# GPU, REPS times in turn. VARIANT:
#   all      as it is: the GEMM ladders' search shared
#   nolad    each worker searches its own ladders
# (At 060cfa7's parent, 589dbfc, it also switched off the workers' turns at
# opening their GPUs and the core pool, both dropped since: variants nogate,
# nopool, ladonly, none; results/curated/2026-11-26-h100x4-fleet-ab.)
# Prints "VARIANT SWEEP REP WALL_S" lines; logs and JSON go to ${OUT:-results}/fleet-ab.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2p' "$0" >&2; exit 2; }
reps=$1
shift
out=${OUT:-results}/fleet-ab
mkdir -p "$out" .ab
[ -x ./kbench ] || { echo "fleet-ab: build ./kbench first (make kbench)" >&2; exit 2; }
patch_variant() { # VARIANT FILE: the hooks of that variant switched off in FILE
    case $1 in
    all) ;;
    nolad) sed -i 's/\.ladder = f->L\.size\[w\] > 1 ? &sh : NULL,/.ladder = NULL,/' "$2"
        grep -q '\.ladder = NULL,' "$2" || { echo "fleet-ab: $2 has no ladder hook to switch off" >&2; return 2; } ;;
    *) echo "fleet-ab: unknown variant $1" >&2; return 2 ;;
    esac
}
for v in "$@"; do
    d=.ab/fleet-$v
    rm -rf "$d" && mkdir -p "$d"
    tar -cf - --exclude=./.ab --exclude=./results . | tar -xf - -C "$d" # the tree and its build
    patch_variant "$v" "$d/cli/fleet/devices.c" || exit 2
    (cd "$d" && make -j"$(nproc)" kbench >build.log 2>&1) || { tail "$d/build.log"; exit 1; }
done
for r in $(seq 1 "$reps"); do
    for v in "$@"; do
        for sw in default:0,1 mlp-grid:all; do
            name=${sw%%:*} devs=${sw#*:}
            s=$(date +%s.%N)
            timeout 280 ".ab/fleet-$v/kbench" sweep "configs/$name.json" --devices "$devs" --quiet \
                --json "$out/$v-$name-$r.json" --csv /dev/null >"$out/$v-$name-$r.log" 2>&1 || echo "$v $name $r: exit $?"
            echo "$v $name $r $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')"
        done
    done
done
