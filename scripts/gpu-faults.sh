#!/usr/bin/env bash
# On a GPU machine: the faults a sweep must survive (issue 20), each with
# what kbench printed, into ${OUT:-results}/faults/faults.txt.
#   1. SIGINT mid-case: the finished rows stay in the CSV, the JSON parses,
#      no temporary file is left, exit 130 (and SIGTERM: 143)
#   2. a case whose allocation fails mid-sweep (another process takes the
#      memory for a while): that row reports the error, the sweep goes on
#   3. a case larger than the device's free memory: refused before any
#      allocation, naming the bytes needed and free
set -uo pipefail
out=${OUT:-results}/faults
mkdir -p "$out"
K=./kbench
cc -O2 -o "$out/gpu-hog" scripts/gpu-hog.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart || exit 1
rows() { [ -f "$1" ] && echo $(( $(wc -l < "$1") - 1 )) || echo 0; }
jsonok() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("JSON parses,", len(d["results"]), "results")' "$1" 2>&1; }
sweep="layernorm --rows 16384 --cols 1024:16384:x2 --dtype fp16,bf16,fp32 --pass fwd,bwd --impl naive,opt --min-time 0.3"
for sig in INT TERM; do
    echo "== 1. SIG$sig mid-case"
    rm -f "$out/int.csv" "$out/int.json"
    $K $sweep --csv "$out/int.csv" --json "$out/int.json" > "$out/int-$sig.log" 2> "$out/int-$sig.err" &
    pid=$!
    for i in $(seq 200); do [ "$(rows "$out/int.csv")" -ge 5 ] && break; sleep 0.1; done
    sleep 0.15 # inside the next case's timing
    kill -s "$sig" $pid
    wait $pid
    echo "exit $?"
    echo "stderr: $(tr '\r' '\n' < "$out/int-$sig.err" | grep -v '^\[' | grep .)"
    echo "CSV rows: $(rows "$out/int.csv"); $(jsonok "$out/int.json"); temporary files: $(ls "$out"/*.tmp 2>/dev/null | wc -l)"
done
echo "== 2. an allocation failing mid-sweep"
big="layernorm --rows 65536 --cols 4096:16384:2048 --dtype fp32 --pass fwd --impl naive,opt --no-verify --min-time 0.2"
rm -f "$out/hog.csv"
$K $big --csv "$out/hog.csv" --json "$out/hog.json" > "$out/hog.log" 2>&1 &
pid=$!
for i in $(seq 300); do [ "$(rows "$out/hog.csv")" -ge 2 ] && break; sleep 0.1; done
"$out/gpu-hog" 256 6 &
wait $pid
echo "exit $?"
wait
python3 - "$out/hog.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["cols"], r["impl"], r["verified"], r["median_ms"] or "-", r["error"] or "")
PY
echo "== 3. a case larger than the device's free memory (another process holds all but 8 GiB)"
"$out/gpu-hog" 8192 20 &
hog=$!
sleep 3
$K mlp --tokens 16384 --hidden 16384 --inter 32768 --dtype fp32 --csv "$out/huge.csv" --json "$out/huge.json"
echo "exit $?; files written: $(ls "$out"/huge.* 2>/dev/null | wc -l)"
kill $hog; wait
