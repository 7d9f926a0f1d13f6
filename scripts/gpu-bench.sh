#!/usr/bin/env bash
# On a GPU machine: the measurements the RoPE issue quotes, and (when a
# copy of ../shared/tools/peers.py is at .peers/peers.py) PyTorch's numbers
# from the same run. Outputs go to ${OUT:-results}.
set -uo pipefail
out=${OUT:-results}
mkdir -p "$out"
./kbench device | tee "$out/bench-device.txt"
./kbench rope --seq 2048 --batch 16 --heads 8 --dim 256 --dtype fp32,bf16,fp16 --pass fwd,bwd \
    --csv "$out/bench-rope-sbhd.csv" --json "$out/bench-rope-sbhd.json" | tee "$out/bench-rope-sbhd.txt"
./kbench rope --layout bshd --seq 4096 --batch 2 --heads 32 --dim 128 --dtype bf16 --pass fwd,bwd \
    --csv "$out/bench-rope-bshd.csv" --json "$out/bench-rope-bshd.json" | tee "$out/bench-rope-bshd.txt"
if [ -f .peers/peers.py ]; then
    PYTHONUNBUFFERED=1 python3 .peers/peers.py --only copy,rope --out "$out/bench-peers.json" 2>&1 | tail -n 14
fi
