#!/usr/bin/env bash
# On a host with several GPUs: issue 24's measurement of sweeps across them,
# into ${OUT:-results}/devices. Needs make kbench.
#   scripts/gpu-devices.sh STEP...
#     inventory       kbench device on each GPU, one after another: the copy
#                     and GEMM ceilings side by side, and the largest spread
#     scale:SWEEP[:R] SWEEP (a config) three ways: on GPU 0 alone, with
#                     --devices all (R times: the speedup from the median;
#                     where the last cases fall moves a run's wall by up to a
#                     second), and as --shard K/N runs started by hand,
#                     one per GPU at once (OMP_NUM_THREADS an equal share of
#                     the cores, as --devices gives its workers), then kbench
#                     merge; wall times, speedup over one GPU and its share
#                     of N; kbench compare of each against the one-GPU run,
#                     the differing cases with the GPU that ran them, and
#                     the rows' wall_s (ceilings, setup, reference, wait,
#                     verify, time) summed over the workers of each way
#     kill:SWEEP[@S]  --devices all with one worker SIGKILLed after S s (8):
#                     exit 3, the killed case an error row, every other case
#                     a row, the JSON valid, no parts left (2 s into an MLP
#                     sweep: during the GEMM ladders' shared search)
# e.g. scripts/gpu-devices.sh inventory scale:configs/default.json:3 kill:configs/layernorm.json
set -u
K=./kbench
out=${OUT:-results}/devices
mkdir -p "$out"
n=$(nvidia-smi -L | wc -l)
cores=$(nproc)
echo "GPUs: $n; host cores: $cores"
nvidia-smi -L
[ "$n" -ge 2 ] || echo "(one GPU: the scaling figures say nothing)"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }

inventory() {
    echo "== inventory"
    for ((g = 0; g < n; g++)); do
        CUDA_VISIBLE_DEVICES=$g $K device > "$out/device.gpu$g.txt" 2>&1 || echo "GPU $g: kbench device exit $?"
    done
    python3 - "$out" "$n" <<'PY'
import re, sys
out, n = sys.argv[1], int(sys.argv[2])
rows = {}
for g in range(n):
    t = open(f"{out}/device.gpu{g}.txt").read()
    name = re.search(r"^device\s+(.*)$", t, re.M)
    uuid = re.search(r"(GPU-[0-9a-f-]+)", t)
    v = {"name": name.group(1) if name else "?", "uuid": uuid.group(1) if uuid else "?"}
    # the copy ceiling: the best candidate at each size and ratio (the starred)
    best = {}
    head = None
    for line in t.splitlines():
        if line.strip().startswith("candidate"):
            head = line.split()[1:]
            head = [f"{head[i]}MiB {head[i+1]}" for i in range(0, len(head), 2)]
            continue
        if head and re.match(r"^[ +] \S", line):
            nums = re.findall(r"\s(\d+)\*?(?=\s|$)", line)[-len(head):]
            for h, x in zip(head, nums):
                best[h] = max(best.get(h, 0), int(x))
        if line.startswith("GEMM"):
            head = None
    v["copy"] = best
    v["gemm"] = {m.group(1): float(m.group(2)) for m in re.finditer(r"^\s+(fp32|fp16|bf16|tf32):\s+([\d.]+) TFLOP/s", t, re.M)}
    rows[g] = v
for g, v in rows.items():
    print(f"GPU {g}: {v['name']}, {v['uuid']}")
keys = list(rows[0]["copy"]) + [f"gemm {k}" for k in rows[0]["gemm"]]
print(f"{'ceiling':<18}" + "".join(f"{'GPU ' + str(g):>10}" for g in rows) + f"{'spread':>9}")
worst = (0, "")
for k in keys:
    vals = [rows[g]["gemm"][k[5:]] if k.startswith("gemm ") else rows[g]["copy"][k] for g in rows]
    spread = (max(vals) - min(vals)) / max(vals) * 100
    worst = max(worst, (spread, k))
    unit = "TFLOP/s" if k.startswith("gemm ") else "GB/s"
    print(f"{k + ' ' + unit:<26}"[:18] + "".join(f"{x:>10.1f}" for x in vals) + f"{spread:>8.1f}%")
print(f"largest spread: {worst[0]:.1f}% ({worst[1]}); {'all within 2%' if worst[0] <= 2 else 'NOT all within 2%'}")
PY
}

# t LOGNAME CMD...: run, time, note the exit (a way already timed in this
# $out is kept: a sweep too long for one device call goes on in the next)
t() {
    local name=$1; shift
    [ -s "$out/$name.secs" ] && { echo "  $name: $(cat "$out/$name.secs") s (timed before)"; return; }
    local s; s=$(now)
    "$@" > "$out/$name.log" 2>&1
    local rc=$?
    echo "$(secs "$s" "$(now)")" > "$out/$name.secs"
    echo "  $name: $(cat "$out/$name.secs") s, exit $rc"
}

scale() {
    local sw=$1 b reps=1
    [[ $sw =~ ^(.*):([0-9]+)$ ]] && sw=${BASH_REMATCH[1]} reps=${BASH_REMATCH[2]}
    b=$(basename "$sw" .json)
    local f="--quiet"
    echo "== scale $sw"
    t "$b.one" env CUDA_VISIBLE_DEVICES=0 $K sweep "$sw" $f --csv "$out/$b.one.csv" --json "$out/$b.one.json"
    t "$b.dev" $K sweep "$sw" $f --devices all --csv "$out/$b.dev.csv" --json "$out/$b.dev.json"
    for ((r = 2; r <= reps; r++)); do # the first run is the one compared and broken down below
        t "$b.dev$r" $K sweep "$sw" $f --devices all --csv "$out/$b.dev$r.csv" --json "$out/$b.dev$r.json"
    done
    local s; s=$(now)
    local pids=()
    [ -s "$out/$b.shards.secs" ] && n=0 # timed before
    for ((k = 0; k < n; k++)); do
        CUDA_VISIBLE_DEVICES=$k OMP_NUM_THREADS=$((cores / n)) $K sweep "$sw" $f --shard $k/$n \
            --csv "$out/$b.s$k.csv" --json "$out/$b.s$k.json" > "$out/$b.s$k.log" 2>&1 &
        pids+=($!)
    done
    for ((k = 0; k < n; k++)); do wait "${pids[$k]}" || echo "  shard $k/$n exit $?"; done
    if [ "$n" -gt 0 ]; then
        $K merge -o "$out/$b.shards.json" --csv "$out/$b.shards.csv" $(for ((k = 0; k < n; k++)); do echo "$out/$b.s$k.json"; done) > "$out/$b.merge.log" 2>&1 || echo "  merge exit $?"
        secs "$s" "$(now)" > "$out/$b.shards.secs"
    fi
    n=$(nvidia-smi -L | wc -l)
    echo "  $b.shards (by hand, merged): $(cat "$out/$b.shards.secs") s"
    local one dev sh cases
    one=$(cat "$out/$b.one.secs"); sh=$(cat "$out/$b.shards.secs")
    local devs; devs=$(cat "$out/$b.dev.secs" $(for ((r = 2; r <= reps; r++)); do echo "$out/$b.dev$r.secs"; done))
    dev=$(echo "$devs" | sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
    [ "$reps" -gt 1 ] && echo "  --devices all, $reps runs: $(echo $devs) s; median $dev s"
    cases=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kbench"]["sweep_cases"])' "$out/$b.one.json")
    awk -v one="$one" -v dev="$dev" -v sh="$sh" -v n="$n" -v c="$cases" -v r="$reps" 'BEGIN{
        printf "  %d cases, %.2f s a case on one GPU\n", c, one / c;
        printf "  --devices all%s: %.2fx over one GPU (%.3f of N=%d; the target 0.85)\n", (r > 1 ? " (the median)" : ""), one / dev, one / dev / n, n;
        printf "  shards by hand: %.2fx over one GPU (%.2f of N=%d)\n", one / sh, one / sh / n, n }'
    # how much of the one-GPU wall time the timed samples are: the rest
    # (ceilings, inputs, CPU references, warm-up) is what more GPUs may not cut
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); g=sum(r.get("samples",0)*(r.get("median_ms") or 0) for r in d["results"])/1e3; print(f"  timed samples: {g:.1f} s of the one-GPU run'"'"'s {float(sys.argv[2]):.1f} s")' "$out/$b.one.json" "$one"
    # each GPU's run: its start before the first case is timed (its copy
    # ceiling, the GEMM ladders: searched alone or shared), then its rows'
    # GPU-side work (wall_s less the reference, which runs beside it), then
    # the tail to the run's end; and the GEMM ceilings each GPU measured
    python3 - "$out/$b" "$one" "$dev" "$sh" <<'PY'
import collections, glob, json, sys
walls = dict(zip(("one", "dev", "shards"), map(float, sys.argv[2:5])))
def runs():
    for w in ("one", "dev"):
        try:
            yield w, json.load(open(f"{sys.argv[1]}.{w}.json")), None
        except (OSError, ValueError):
            pass
    for f in sorted(glob.glob(f"{sys.argv[1]}.s[0-9]*.json")): # each shard's own part, on a GPU of its own
        try:
            yield "shards", json.load(open(f)), "shard " + f.rsplit(".s", 1)[1][:-5]
        except (OSError, ValueError):
            pass
for w, d, tag in runs():
    busy = collections.Counter()
    for r in d["results"]:
        busy[r.get("gpu", 0)] += sum(v for k, v in r.get("wall_s", {}).items() if k != "reference")
    kb = d["kbench"]
    devs = d.get("devices") or [dict(d["device"], start_s=kb.get("start_s"), start_parts_s=kb.get("start_parts_s", {}), gpu=0)]
    for i, x in enumerate(devs):
        g, st = x.get("gpu", i), x.get("start_s") or 0
        parts = ", ".join(f"{k} {v:.1f}" for k, v in x.get("start_parts_s", {}).items())
        if x.get("ladder_wait_s") is not None:
            parts += f"; of which waiting for the queue {x['ladder_wait_s']:.1f}"
        gm = " ".join(f"{k} {v:.1f}" for k, v in sorted(x.get("gemm_tflops", {}).items()))
        sharedby = sorted(set(x.get("gemm_ladder_gpus", {}).values()))
        print(f"  {w:6} {tag or f'gpu{g}'}: start {st:.1f} s ({parts}) + rows {busy[g]:.1f} s = {st + busy[g]:.1f} of {walls[w]:.1f} s;"
              f" GEMM {gm or '-'} TFLOP/s (ladder searched by {'/'.join(map(str, sharedby)) or '-'})")
PY
    # where the wall time went (the rows' wall_s, summed over every worker):
    # a phase whose sum grows with the workers is host work they share cores for
    python3 - "$out/$b" <<'PY'
import json, sys
for w in ("one", "dev", "shards"):
    try:
        rows = json.load(open(f"{sys.argv[1]}.{w}.json"))["results"]
    except (OSError, ValueError):
        continue
    tot = {}
    for r in rows:
        for k, v in r.get("wall_s", {}).items():
            tot[k] = tot.get(k, 0) + v
    print(f"  wall_s summed, {w:6}: " + ", ".join(f"{k} {v:.1f}" for k, v in tot.items()))
PY
    for w in dev shards; do
        $K compare "$out/$b.one.json" "$out/$b.$w.json" > "$out/$b.compare-$w.txt" 2>&1
        echo "  one vs $w: $(tail -n 1 "$out/$b.compare-$w.txt")"
    done
    # where the --devices run's rows ran, and the cases compare calls different
    python3 - "$out/$b.dev.json" "$out/$b.compare-dev.txt" <<'PY'
import collections, json, re, sys
d = json.load(open(sys.argv[1]))
by = collections.Counter(r.get("gpu") for r in d["results"])
print("  --devices rows per GPU:", dict(by))
def text(v):
    return v if isinstance(v, str) else json.dumps(v)
lab = {}
for r in d["results"]:
    lab[" ".join(f"{k}={text(v)}" for k, v in r["params"].items() if v != [])] = r.get("gpu")
for line in open(sys.argv[2]):
    if re.search(r"\d\.\d\dx\s+(faster|slower)\s", line):
        hits = [l for l in lab if l + " " in line]
        gpu = lab[max(hits, key=len)] if hits else "?"
        print(f"    gpu{gpu}: {line.rstrip()}")
PY
}

kill_one() {
    local sw=${1%@*} after=8 b
    [[ $1 == *@* ]] && after=${1##*@}
    b=$(basename "$sw" .json)
    echo "== kill a worker after $after s: $sw"
    $K sweep "$sw" --quiet --devices all --csv "$out/$b.kill.csv" --json "$out/$b.kill.json" 2> "$out/$b.kill.err" &
    local pid=$!
    sleep "$after"
    local w; w=$(pgrep -P $pid | head -n 1)
    [ -n "$w" ] && kill -KILL "$w"
    wait $pid
    echo "exit $? (want 3)"
    cat "$out/$b.kill.err"
    python3 - "$out/$b.kill.json" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
rows = d["results"]
cases = d["kbench"]["sweep_cases"]
err = [r for r in rows if r.get("error")]
have = {r["case"] for r in rows}
print(f"JSON parses: {len(rows)} rows, {len(err)} error rows, {len(have)} of {cases} cases have a row; missing: {sorted(set(range(cases)) - have)}")
print("rows per GPU:", dict(collections.Counter(r.get("gpu") for r in rows)))
for r in err:
    print("error row:", r["case"], r.get("gpu"), r["error"])
PY
    ls "$out" | grep -E "^$b\.kill.*(\.gpu[0-9]+\.|\.ended\.|\.tmp$)" && echo "parts or temporaries left" || echo "no parts or temporaries left"
}

for step in "$@"; do
    case $step in
    inventory) inventory ;;
    scale:*) scale "${step#scale:}" ;;
    kill:*) kill_one "${step#kill:}" ;;
    *) echo "gpu-devices.sh: unknown step '$step' (inventory, scale:SWEEP[:R], kill:SWEEP[@S])" >&2; exit 2 ;;
    esac
done
