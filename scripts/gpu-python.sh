#!/usr/bin/env bash
# On a GPU machine: the GPU checks and measurements of Python implementations
# (issue 44, docs/python.md), into ${OUT:-results}/python. Needs make kbench,
# a python3 with torch and triton on PATH, and for the peers the wheels of
# ../shared/tools/peers-wheels.sh in $WHL (default .whl).
#   setup    the wheels installed into /tmp/site (PYTHONPATH), FlashInfer's
#            modules built in the background (its JIT: about a minute)
#   check    kbench check with the seeds' Triton examples (must pass), then
#            the LayerNorm example three times at tests/python/triton-ln-race.json
#            (wide backward rows, where a lock race once showed)
#   peers-check   kbench check with torch.eager, liger_ops, flashinfer_ops on
#            configs/ci.json and tests/python/peers-check.json (no FAIL;
#            check exits 1 where an implementation passes no case: flashinfer's
#            MLP on configs/ci.json, whose inter 513 is not a multiple of 8)
#   faults   tests/python/gpu_faults.py: an exception, wrong numbers, a
#            fault and a launch that cannot be captured, each its own rows
#   peers1, peers2   configs/peers.json (51 cases, issue 46's table), a run each (peers1 first: it
#            compiles and JITs what peers2 finds cached); compare: the two
#   dobench  the Triton examples timed by triton.testing.do_bench_cudagraph
#            at the peers' shapes, beside kbench's graph medians
#   floor    the launch floor: tests/python/empty.py under events and graph
set -uo pipefail
out=${OUT:-results}/python
mkdir -p "$out"
K=./kbench WHL=${WHL:-.whl}
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton-cache FLASHINFER_WORKSPACE_BASE=/tmp/flashinfer-ws
export FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=$PATH:/tmp/site/bin
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
for step in "$@"; do
    echo "== $step"
    s0=$(date +%s.%N)
    case $step in
    setup)
        python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site "$WHL"/*.whl ||
            echo "pip install failed: those peers will be n/a"
        for m in norm rope activation; do
            (timeout 400 python3 -c "
import flashinfer, importlib
j = importlib.import_module('flashinfer.jit.$m')
spec = j.gen_norm_module() if '$m' == 'norm' else j.gen_rope_module() if '$m' == 'rope' else j.gen_act_and_mul_module('silu')
spec.build_and_load(); print('$m built')" > "/tmp/fi-$m.log" 2>&1 &)
        done ;;
    check)
        for p in "triton_rope=examples/python/rope_triton.py" "triton_ln=examples/python/layernorm_triton.py"; do
            timeout 300 $K check --impl "$p" > "$out/check-${p%%=*}.txt" 2>&1
            echo "${p%%=*}: exit $? $(tail -n 1 "$out/check-${p%%=*}.txt")"
            grep -m5 FAIL "$out/check-${p%%=*}.txt"
        done
        for r in 1 2 3; do
            timeout 120 $K check --impl triton_ln=examples/python/layernorm_triton.py --shapes tests/python/triton-ln-race.json > "$out/check-race-$r.txt" 2>&1
            echo "triton_ln race shapes, run $r: exit $? $(tail -n 1 "$out/check-race-$r.txt")"
            grep -m5 FAIL "$out/check-race-$r.txt"
        done ;;
    peers-check)  # needs setup: the peers' wrappers under check (torch.compile left out: it
        # compiles each shape anew), on configs/ci.json and on shapes they take
        for w in "torch:--plugin torch=examples/python/torch_ops.py --impl torch.eager" \
                 "liger:--impl liger=examples/python/liger_ops.py" "flashinfer:--impl flashinfer=examples/python/flashinfer_ops.py"; do
            for s in configs/ci.json tests/python/peers-check.json; do
                f="$out/check-${w%%:*}-$(basename "$s" .json).txt"
                timeout 200 $K check ${w#*:} --shapes "$s" > "$f" 2>&1
                echo "${w%%:*} on $s: exit $? $(tail -n 1 "$f")"
                grep -m5 FAIL "$f"
            done
        done ;;
    faults)
        timeout 200 $K layernorm --rows 7,300 --cols 200 --dtype fp32 --pass fwd --affine none --timing graph \
            --impl "naive,f=tests/python/gpu_faults.py,opt" --csv "$out/faults.csv" --json /dev/null > "$out/faults.txt" 2>&1
        echo "faults: exit $? in $(secs $s0) s"
        grep "cannot be captured" "$out/faults.txt" | cut -c1-200
        python3 -c "
import csv, sys
for r in csv.DictReader(open('$out/faults.csv')):
    print('  %-9s rows=%-4s %-7s %-8s %s' % (r['impl'], r['rows'], r['verified'], r['median_ms'], (r.get('error') or '')[:110]))" ;;
    peers1 | peers2)
        r=${step#peers}
        timeout 560 $K sweep configs/peers.json --json "$out/peers-$r.json" --csv "$out/peers-$r.csv" > "$out/peers-$r.txt" 2>&1
        echo "peers run $r: exit $? in $(secs $s0) s"
        tr '\r' '\n' < "$out/peers-$r.txt" | grep -E "cannot|^kbench:" | cut -c1-220 | head -n 20 ;;
    compare)
        $K compare "$out/peers-1.json" "$out/peers-2.json" > "$out/compare.txt" 2>&1
        tail -n 1 "$out/compare.txt" ;;
    dobench)
        timeout 200 python3 scripts/python-dobench.py "$out/peers-1.json" 2>&1 | tee "$out/dobench.txt" ;;
    floor)
        for tm in events graph; do
            timeout 60 $K layernorm --rows 4096 --cols 1024 --dtype bf16 --impl "opt,e=tests/python/empty.py" --no-verify \
                --timing $tm --isolate off --json "$out/floor-$tm.json" --csv /dev/null > "$out/floor-$tm.txt" 2>&1
            grep -E "^  (opt|e) " "$out/floor-$tm.txt" | sed "s/^/  $tm /"
        done
        timeout 60 $K selftest > "$out/selftest.txt" 2>&1
        grep -i -E "floor|empty" "$out/selftest.txt" | head -n 6 ;;
    esac
done
