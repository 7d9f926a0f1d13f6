#!/usr/bin/env bash
# On a GPU machine: the GPU checks of the plugin ABI (issue 21), into
# ${OUT:-results}/plugins. Needs make kbench examples test-plugins.
#   check      kbench check with every example plugin (must pass)
#   faulty     the faulty plugins: off_by_one (exit 1), oob (exit 3, named),
#              hang (the watchdog, exit 3; --timeout 2 so it takes ~65 s)
#   sanitize   compute-sanitizer memcheck over each example's small odd shapes
#   time       configs/layernorm.json (bf16, fp16) with naive,opt,example,
#              twice, compared
set -uo pipefail
out=${OUT:-results}/plugins
mkdir -p "$out"
K=./kbench
E=build/examples P=build/tests/plugins
LN="example=$E/libkb_layernorm_plain.so" RO="example_gptj=$E/libkb_rope_gptj.so" ML="example_cublas=$E/libkb_mlp_cublas.so"
for step in "$@"; do
    echo "== $step"
    case $step in
    check)
        for p in "$LN" "$RO" "$ML"; do
            timeout 300 $K check --impl "$p" > "$out/check-${p%%=*}.txt" 2>&1
            echo "${p%%=*}: exit $? $(tail -n 1 "$out/check-${p%%=*}.txt")"
            grep -m5 FAIL "$out/check-${p%%=*}.txt"
        done ;;
    faulty)
        small="--rows 7,300 --cols 200 --dtype fp32 --affine none --pass fwd --quiet --csv $out/f.csv --json $out/f.json"
        for impl in off_by_one oob hang; do
            timeout 200 $K layernorm $small --impl naive,$impl,opt --timeout 2 --plugin "$P/libfaulty.so" > "$out/f-$impl.txt" 2>&1
            echo "$impl: exit $?; rows kept $(( $(wc -l < "$out/f.csv") - 1 ))"
            tr '\r' '\n' < "$out/f-$impl.txt" | grep -v '^\[' | grep . | tail -n 3
        done ;;
    sanitize)
        # small odd shapes of every example, each dtype and pass (a whole
        # check under memcheck takes longer than a device call)
        small="--quiet --min-time 0 --min-samples 1 --warmup 0 --csv /dev/null --json /dev/null"
        san() { # name kbench-arguments...
            local name=$1
            shift
            timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $K "$@" $small > "$out/san-$name.txt" 2>&1
            echo "memcheck $name: exit $? $(grep -m1 'ERROR SUMMARY' "$out/san-$name.txt")"
        }
        san layernorm layernorm --impl "naive,$LN" --rows 7,300 --cols 8,200,1000,3000,5120 --dtype fp32,fp16,bf16 --pass fwd,bwd
        san rope rope --impl "naive,$RO" --style gptj --layout sbhd,bshd,thd --seq 7,33 --batch 3 --heads 3 --dim 8,72 --rotary-dim 0,4 --dtype fp32,fp16,bf16 --pass fwd,bwd
        san mlp mlp --impl "naive,$ML" --tokens 5,130 --hidden 72,264 --inter 136 --dtype fp32,fp16,bf16 ;;
    time)
        for r in 1 2; do
            timeout 280 $K sweep configs/layernorm.json --set dtype=bf16,fp16 --impl "naive,opt,$LN" --quiet --csv "$out/t$r.csv" --json "$out/t$r.json"
            echo "run $r: exit $?"
        done
        python3 - "$out/t1.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
key = lambda r: (r["pass"], r["dtype"], r["cols"])
by = {}
for r in rows: by.setdefault(key(r), {})[r["impl"]] = r
for k in sorted(by):
    o, e = by[k].get("opt"), by[k].get("example")
    if o and e and o["median_ms"] and e["median_ms"]:
        print("  %s %s cols=%s: opt %s ms %s GB/s %s%%, example %s ms %s GB/s %s%%" % (k + (o["median_ms"], o["gbps"], o["pct_of_copy"], e["median_ms"], e["gbps"], e["pct_of_copy"])))
PY
        $K compare "$out/t1.json" "$out/t2.json" --impl example > "$out/cmp.txt"; echo "compare exit $?"; tail -n 1 "$out/cmp.txt" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
    esac
done
