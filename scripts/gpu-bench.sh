#!/usr/bin/env bash
# On a GPU machine: the measurements the issues quote, one section per op
# family, each ending with PyTorch's numbers from the same run when a copy of
# ../shared/tools/peers.py is at .peers/peers.py (ratios from one run, not
# two). Outputs (CSV, JSON, logs) go to ${OUT:-results}.
#
#   scripts/gpu-bench.sh [rope] [norm] [norm-bulk] [norm-wr] [mlp] [mlp-variants]
#                                                (default: rope norm mlp)
#
#   rope       sbhd s2048 b16 h8 d256 every dtype, bshd s4096 b2 h32 d128 bf16
#   norm       configs/layernorm.json and configs/rmsnorm.json for every
#              dtype (--set dtype=all), fwd and bwd, naive and opt
#   norm-bulk  opt alone at the same shapes, twice: KBENCH_NORM_BULK=0 and
#              KBENCH_NORM_BULK=1 (the sm_90 bulk-copy kernels), after
#              `kbench check layernorm rmsnorm` with the bulk kernels
#   norm-wr    the warp-row norm kernels' knobs: `kbench check layernorm
#              rmsnorm --impl opt` under KBENCH_NORM_WR_STAGES=0,
#              KBENCH_NORM_WR_OCC=0 and KBENCH_NORM_WR_WIDE=0, then opt timed
#              (no verify) at rows 4096, fp16 and bf16: the default,
#              WR_STAGES=0, WR_OCC=0 and WR_WIDE=0 (backward) twice each,
#              the kernels before the warp-row ones (KBENCH_NORM_WR=0) once;
#              the backward without affine (no dgamma sums); RMSNorm bf16
#              (NOCHECK=1, NOPEERS=1 skip those steps)
#   mlp        configs/mlp.json, every implementation
#   mlp-variants  fused's experimental knobs (KBENCH_FUSED, kernels/mlp_fused.cu):
#              `kbench check mlp --impl fused` under each, then each timed
#              twice at the seed's shape against the default
# Each section takes a few minutes on an H100; run one or two per call.
set -uo pipefail
out=${OUT:-results}
mkdir -p "$out"
peers() { [ -f .peers/peers.py ] && PYTHONUNBUFFERED=1 timeout 300 python3 .peers/peers.py --only "$1" --out "$out/peers-$2.json" 2>&1 | tail -n 40; }
kb() { timeout 600 ./kbench "$@"; }
# one line per row of a kbench CSV: pass dtype rows cols impl median_ms GB/s %copy (or TFLOP/s)
show() { awk -F, 'FNR==1{for(i=1;i<=NF;i++)h[$i]=i;next}{printf "%s %s %s %s %s %s %s %s%s\n",$h["pass"],$h["dtype"],$h["rows"],$h["cols"],$h["impl"],$h["median_ms"],$h["gbps"],$h["pct_of_copy"],($h["affine"]=="none"?" none":"")}' "$@"; }
LN_COLS=512,1024,2048,3072,4096,5120,6144,8192,10240,12288,14336,16384
RMS="--rows 4096,16384 --cols 2048,4096,5120,8192"
[ $# -gt 0 ] || set -- rope norm mlp
./kbench device | tee "$out/bench-device.txt"
for section in "$@"; do
    echo "== $section"
    case $section in
    rope)
        kb rope --seq 2048 --batch 16 --heads 8 --dim 256 --dtype fp32,bf16,fp16 --pass fwd,bwd \
            --csv "$out/bench-rope-sbhd.csv" --json "$out/bench-rope-sbhd.json" | tee "$out/bench-rope-sbhd.txt"
        kb rope --layout bshd --seq 4096 --batch 2 --heads 32 --dim 128 --dtype bf16 --pass fwd,bwd \
            --csv "$out/bench-rope-bshd.csv" --json "$out/bench-rope-bshd.json" | tee "$out/bench-rope-bshd.txt"
        peers copy,rope rope
        ;;
    norm)
        kb sweep configs/layernorm.json --set dtype=all --min-time 0.1 --quiet \
            --csv "$out/bench-layernorm.csv" --json "$out/bench-layernorm.json"
        kb sweep configs/rmsnorm.json --set dtype=all --min-time 0.1 --quiet \
            --csv "$out/bench-rmsnorm.csv" --json "$out/bench-rmsnorm.json"
        peers copy,layernorm norm
        ;;
    norm-bulk)
        KBENCH_NORM_BULK=1 timeout 150 ./kbench check layernorm rmsnorm | tail -n 5
        for bulk in 0 1; do
            KBENCH_NORM_BULK=$bulk kb layernorm --impl opt --rows 4096 --cols $LN_COLS --dtype fp16,bf16 --pass fwd,bwd \
                --min-time 0.1 --quiet --csv "$out/bench-layernorm-bulk$bulk.csv" --json "$out/bench-layernorm-bulk$bulk.json"
            KBENCH_NORM_BULK=$bulk kb rmsnorm --impl opt $RMS --dtype bf16 --pass fwd,bwd \
                --min-time 0.1 --quiet --csv "$out/bench-rmsnorm-bulk$bulk.csv" --json "$out/bench-rmsnorm-bulk$bulk.json"
        done
        ;;
    norm-wr)
        for v in WR_STAGES=0 WR_OCC=0 WR_WIDE=0; do
            [ -n "${NOCHECK:-}" ] && break
            echo "-- check KBENCH_NORM_$v"
            env "KBENCH_NORM_$v" timeout 200 ./kbench check layernorm rmsnorm --impl opt | tail -n 2
        done
        ln="--impl opt --rows 4096 --cols 512,1024,2048,3072,4096,5120,6144,8192,9000,10240,16384 --dtype fp16,bf16 --min-time 0.05 --no-verify --quiet"
        r=0
        for v in d s0 o0 w0 d s0 o0 w0 0; do
            r=$((r + 1))
            case $v in
            d) env="KBENCH_NORM_WR=" pass=fwd,bwd ;;
            s0) env="KBENCH_NORM_WR_STAGES=0" pass=bwd ;;
            o0) env="KBENCH_NORM_WR_OCC=0" pass=bwd ;;
            w0) env="KBENCH_NORM_WR_WIDE=0" pass=bwd ;;
            *) env="KBENCH_NORM_WR=$v" pass=fwd,bwd ;;
            esac
            env $env timeout 300 ./kbench layernorm $ln --pass $pass --csv "$out/ln-wr$r.csv"
            echo "-- layernorm $env (run $r)"
            show "$out/ln-wr$r.csv"
        done
        for v in "" 0; do
            KBENCH_NORM_WR=$v timeout 300 ./kbench layernorm $ln --pass bwd --affine none --csv "$out/ln-none-wr${v:-d}.csv"
            KBENCH_NORM_WR=$v timeout 300 ./kbench rmsnorm --impl opt $RMS --dtype bf16 --pass fwd,bwd --min-time 0.05 --no-verify --quiet --csv "$out/rms-wr${v:-d}.csv"
            echo "-- KBENCH_NORM_WR=$v: layernorm bwd affine none; rmsnorm bf16"
            show "$out/ln-none-wr${v:-d}.csv" "$out/rms-wr${v:-d}.csv"
        done
        [ -n "${NOPEERS:-}" ] || peers copy,layernorm norm
        ;;
    mlp)
        kb sweep configs/mlp.json --csv "$out/bench-mlp.csv" --json "$out/bench-mlp.json" | tee "$out/bench-mlp.txt" | tail -n 60
        peers mlp mlp
        ;;
    mlp-variants)
        seed="--tokens 2048 --hidden 1024 --inter 11008 --dtype bf16 --min-time 0.2 --quiet"
        for v in "" s0 n96 n112 n128 c1; do
            echo "-- KBENCH_FUSED=$v"
            KBENCH_FUSED=$v timeout 120 ./kbench check mlp --impl fused | tail -n 2
            for r in 1 2; do
                KBENCH_FUSED=$v kb mlp --impl fused $seed --csv "$out/bench-mlp-fused-${v:-default}-$r.csv"
                sed -n 2p "$out/bench-mlp-fused-${v:-default}-$r.csv" | cut -d, -f1-12
            done
        done
        ;;
    *) echo "gpu-bench.sh: unknown section '$section' (rope, norm, norm-bulk, norm-wr, mlp, mlp-variants)" >&2; exit 2 ;;
    esac
done
