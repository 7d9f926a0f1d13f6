#!/usr/bin/env bash
# On a GPU machine: issue 23's checks on one GPU, into ${OUT:-results}/sweeps.
#   scripts/gpu-sweeps.sh [SWEEP.json]   (default configs/layernorm.json: the
#   whole script fits a device call; configs/rope.json took 89 s a run)
#   1. the sweep plain, then with --devices all: kbench compare (all same)
#   2. --shard 0/2 and --shard 1/2, kbench merge, compared with the plain run
#      (all same, no case only in one) and every case present
#   3. --devices all with a worker killed mid-sweep (SIGKILL to the worker):
#      the killed case an error row, the JSON valid, exit 3
#   4. --devices all stopped by SIGINT to kbench (not a worker): the workers
#      finish their case, the finished rows merged, the JSON valid, exit 130
set -uo pipefail
out=${OUT:-results}/sweeps
mkdir -p "$out"
K=./kbench
sw=${1:-configs/layernorm.json}
f="--impl opt --min-time 0.1 --quiet"
t() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "  ($(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s, exit $rc)"; }
echo "== 1. plain and --devices all"
t $K sweep "$sw" $f --csv "$out/plain.csv" --json "$out/plain.json"
# not --quiet, stderr on a terminal (script(1)): the progress line (each GPU's
# current case) is drawn, and kept in dev.progress
dev() { script -qec "$K sweep '$sw' ${f/--quiet/} --devices all --csv '$out/dev.csv' --json '$out/dev.json' > '$out/dev.log'" /dev/null > "$out/dev.progress"; }
t dev
echo "  progress, sampled: $(tr '\r' '\n' < "$out/dev.progress" | grep -v '^$' | awk 'NR % 20 == 1' | head -n 3 | cut -c1-160 | tr '\n' '|')"
$K compare "$out/plain.json" "$out/dev.json" | tail -n 1
echo "== 2. two shards, merged"
for k in 0 1; do t $K sweep "$sw" $f --shard $k/2 --csv "$out/s$k.csv" --json "$out/s$k.json"; done
$K merge -o "$out/merged.json" --csv "$out/merged.csv" "$out/s0.json" "$out/s1.json"; echo "merge exit $?"
$K compare "$out/plain.json" "$out/merged.json" | tail -n 1
cmp <(cut -d, -f1-5 "$out/plain.csv") <(cut -d, -f1-5 "$out/merged.csv") && echo "merged CSV: the plain run's rows, in its order"
echo "== 3. a worker killed mid-sweep"
$K sweep "$sw" $f --devices all --csv "$out/kill.csv" --json "$out/kill.json" 2> "$out/kill.err" &
pid=$!
sleep 8
w=$(pgrep -P $pid | head -n 1)
[ -n "$w" ] && kill -KILL "$w"
wait $pid
echo "exit $? (want 3)"
cat "$out/kill.err"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); e=[r for r in d["results"] if r.get("error")]; print("JSON parses:", len(d["results"]), "rows,", len(e), "error rows:", [r["error"] for r in e][:2])' "$out/kill.json"
echo "== 4. --devices all stopped by SIGINT"
rm -f "$out/int.json" "$out/int.csv"
$K sweep "$sw" $f --devices all --csv "$out/int.csv" --json "$out/int.json" 2> "$out/int.err" &
pid=$!
sleep 8
kill -INT $pid
wait $pid
echo "exit $? (want 130)"
cat "$out/int.err"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("JSON parses:", len(d["results"]), "rows")' "$out/int.json"
ls "$out" | grep -E '\.gpu[0-9]+\.|\.ended\.|\.tmp$' && echo "parts or temporaries left" || echo "no parts or temporaries left"
