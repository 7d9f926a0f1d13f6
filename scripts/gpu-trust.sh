#!/usr/bin/env bash
# On a GPU machine: what issue 19 (numbers a kernel engineer can trust) asks
# to be measured, into ${OUT:-results}/trust.
#   scripts/gpu-trust.sh STEP...
#     device     kbench device (NVML state, every copy candidate, GEMM ladder)
#     selftest   kbench selftest
#     small      the smallest case of each op under --timing events and graph
#     default    configs/default.json, timed; the largest share of each
#                ceiling over its rows and every note
#     layernorm, mlp   configs/layernorm.json, configs/mlp.json, the same
#     peers      PyTorch's copy (peers.py --only copy, from $PEERS: a copy of
#                ../shared/tools, default .peers) and torch.mm at the GEMM
#                ladder's sizes (scripts/torch-mm.py), next to kbench device
#     samples    configs/rope.json twice with --save-samples, compared (same)
#     slowed     a copy of this tree whose RoPE opt launcher runs its kernel
#                twice (a deliberately slowed build: a test of compare, never
#                committed), the same sweep, compared with samples' first run
#                (slower)
set -uo pipefail
out=${OUT:-results}/trust
mkdir -p "$out"
K=./kbench
shares() { # CSV: the largest pct_of_copy, pct_of_gemm, pct_of_cublas_shape and the notes
    python3 - "$1" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
for col in ("pct_of_copy", "pct_of_gemm", "pct_of_cublas_shape"):
    v = [(float(r[col]), r) for r in rows if r.get(col)]
    if v:
        m, r = max(v, key=lambda x: x[0])
        print(f"  max {col}: {m:.1f} ({r['op']} {r['pass']} {r['impl']} {r['dtype']} {r.get('kernel','')}; note '{r['note']}')")
notes = collections.Counter(r["note"] for r in rows if r.get("note"))
thr = sum(1 for r in rows if r.get("throttled") == "1")
print(f"  rows {len(rows)}, notes {dict(notes) or 'none'}, throttled {thr}")
PY
}
for step in "$@"; do
    echo "== $step"
    case $step in
    device) timeout 300 $K device > "$out/device.txt" 2>&1; echo "exit $?"; cat "$out/device.txt" ;;
    selftest) timeout 120 $K selftest > "$out/selftest.txt" 2>&1; echo "exit $?"; cat "$out/selftest.txt" ;;
    small)
        for op in "rope --seq 16 --batch 1 --heads 2 --dim 64 --impl naive,opt" \
            "layernorm --rows 16 --cols 256 --impl naive,opt" "rmsnorm --rows 16 --cols 256 --impl naive,opt" \
            "mlp --tokens 16 --hidden 256 --inter 512 --impl naive,cublas,fused_wgmma,fused_mma"; do
            for tm in events graph; do
                n=${op%% *}-$tm
                timeout 120 $K $op --timing $tm --csv "$out/small-$n.csv" --json /dev/null > "$out/small-$n.txt" 2>&1
                echo "$n: exit $?"
                python3 -c 'import csv,sys; [print("  %-8s %-6s %s ms" % (r["impl"], r["timing"], r["median_ms"])) for r in csv.DictReader(open(sys.argv[1]))]' "$out/small-$n.csv"
            done
        done ;;
    default | layernorm | mlp)
        s=$(date +%s)
        timeout 400 $K sweep configs/$step.json --quiet --csv "$out/$step.csv" --json "$out/$step.json"
        echo "exit $?, $(( $(date +%s) - s )) s"
        shares "$out/$step.csv" ;;
    peers)
        P=${PEERS:-.peers}
        [ -f "$P/peers.py" ] || { echo "no $P/peers.py (copy ../shared/tools there)"; continue; }
        timeout 120 python3 "$P/peers.py" --only copy > "$out/peers.txt" 2>&1
        timeout 120 python3 scripts/torch-mm.py >> "$out/peers.txt" 2>&1
        grep '^{' "$out/peers.txt" | cut -c1-160
        grep -A6 '^GEMM' "$out/device.txt" 2>/dev/null ;;
    samples)
        for r in 1 2; do timeout 200 $K sweep configs/rope.json --impl opt --min-time 0.1 --save-samples --quiet --csv /dev/null --json "$out/s$r.json"; done
        $K compare "$out/s1.json" "$out/s2.json" > "$out/samples-compare.txt"; echo "compare exit $?"; tail -n 1 "$out/samples-compare.txt" ;;
    slowed)
        rm -rf .slow && mkdir -p .slow && git ls-files -z | xargs -0 tar -c | tar -x -C .slow
        python3 - .slow/kernels/rope/opt.cu <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
k = "k<<<(unsigned)p->blocks, THREADS, p->smem, s>>>((const T *)a->in, (T *)a->out, *a, p->groups, p->rpg, p->gpb,"
i = s.index(k); j = s.index(";", i) + 1
assert s.count(k) == 1
open(p, "w").write(s[:j] + "\n    " + s[i:j] + " // slowed: launched twice" + s[j:])
PY
        (cd .slow && make -j"$(nproc)" kbench > build.log 2>&1) || { tail .slow/build.log; exit 1; }
        timeout 200 .slow/kbench sweep configs/rope.json --impl opt --min-time 0.1 --save-samples --quiet --csv /dev/null --json "$out/slow.json"
        $K compare "$out/s1.json" "$out/slow.json" > "$out/slow-compare.txt"; echo "compare exit $? (4: slower)"; tail -n 1 "$out/slow-compare.txt" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
    esac
done
