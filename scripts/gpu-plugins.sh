#!/usr/bin/env bash
# On a GPU machine: the GPU checks of the plugin ABI (issue 21), into
# ${OUT:-results}/plugins. Needs make kbench examples test-plugins.
#   check      kbench check with every example plugin (must pass)
#   faulty     the faulty plugins: off_by_one (exit 1), oob (exit 3, named),
#              hang (the watchdog, exit 3; --timeout 2 so it takes ~65 s)
#   isolated   the faulty plugins in one run under --isolate auto (the
#              default): each fault or hang costs its rows, the rest run
#              (exit 3); the seconds each took; then oob with --isolate off
#   isotime    each example's medians in kbench's process (--isolate off)
#              and in the helper (auto), twice each, compared
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
    isolated)
        small="--rows 7,300 --cols 200 --dtype fp32 --affine none --pass fwd --csv $out/iso.csv --json $out/iso.json"
        s0=$(date +%s.%N)
        timeout 300 $K layernorm $small --impl naive,off_by_one,oob,hang,opt --timeout 2 --plugin "$P/libfaulty.so" > "$out/iso.txt" 2>&1
        echo "isolated: exit $? in $(awk -v a=$s0 -v b=$(date +%s.%N) 'BEGIN{printf "%.1f", b-a}') s; rows kept $(( $(wc -l < "$out/iso.csv") - 1 ))"
        python3 - "$out/iso.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print("  %-11s rows=%-4s %-5s %-8s %s" % (r["impl"], r["rows"], r["verified"], r["median_ms"], (r.get("error") or "")[:150]))
PY
        s0=$(date +%s.%N)
        timeout 100 $K layernorm $small --impl naive,oob,opt --isolate off --plugin "$P/libfaulty.so" > "$out/iso-off.txt" 2>&1
        echo "isolate off: exit $? in $(awk -v a=$s0 -v b=$(date +%s.%N) 'BEGIN{printf "%.1f", b-a}') s; rows kept $(( $(wc -l < "$out/iso.csv") - 1 ))"
        tail -n 2 "$out/iso-off.txt" ;;
    isotime)
        IN="inplace=$E/libkb_rope_inplace.so" AC="accum=$E/libkb_layernorm_accum.so"
        for r in 1 2; do
            for mode in off auto; do
                s0=$(date +%s.%N)
                { timeout 200 $K layernorm --rows 4096 --cols 1024,4096,16384 --dtype bf16 --pass fwd,bwd --impl "opt,$LN,$AC" --isolate $mode --quiet --json "$out/ln-$mode-$r.json" --csv /dev/null &&
                  timeout 200 $K rope --seq 4096 --batch 8 --heads 32 --dim 128 --dtype bf16 --pass fwd,bwd --style gptj --impl "opt,$RO,$IN" --isolate $mode --quiet --json "$out/ro-$mode-$r.json" --csv /dev/null &&
                  timeout 200 $K mlp --tokens 2048 --hidden 4096 --inter 11008 --dtype bf16 --impl "cublas,$ML" --isolate $mode --quiet --json "$out/ml-$mode-$r.json" --csv /dev/null; } || echo "run $r $mode: failed"
                echo "run $r isolate=$mode: $(awk -v a=$s0 -v b=$(date +%s.%N) 'BEGIN{printf "%.1f", b-a}') s"
            done
        done
        for op in ln ro ml; do
            for pair in "off-1 auto-1" "off-2 auto-2" "off-1 off-2" "auto-1 auto-2"; do
                set -- $pair
                echo "$op $1 -> $2: $($K compare "$out/$op-$1.json" "$out/$op-$2.json" | tail -n 1)"
            done
            python3 - "$out/$op-off-1.json" "$out/$op-auto-1.json" "$out/$op-off-2.json" "$out/$op-auto-2.json" <<'PY'
import json, sys
def rows(p):
    return {(r["impl"], r["case"]): r for r in json.load(open(p))["results"] if r.get("median_ms")}
a, b, c, d = (rows(p) for p in sys.argv[1:])
for k in a:
    if k in b and k in c and k in d:
        print("  %-10s %-44.44s off %.4f/%.4f  auto %.4f/%.4f ms  auto/off %.3f" % (k[0], k[1], a[k]["median_ms"], c[k]["median_ms"], b[k]["median_ms"], d[k]["median_ms"], (b[k]["median_ms"] + d[k]["median_ms"]) / (a[k]["median_ms"] + c[k]["median_ms"])))
PY
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
