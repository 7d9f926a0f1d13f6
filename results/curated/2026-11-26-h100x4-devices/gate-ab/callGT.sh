#!/usr/bin/env bash
# (.peers/ is the session scratch folder; this copy is the record)
# session 26: in-turn opens (gate3.patch) A/B on make run's sweep under --devices, both traced (trace.py)
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[$(( $(date +%s)-T0 )) s] $*"; }
left() { echo $(( ${BUDGET:-400} - ($(date +%s)-T0) )); }
nvidia-smi --query-gpu=index,name,power.limit,persistence_mode --format=csv,noheader; hostname
cp -r cli /tmp/cli.orig
python3 .peers/trace.py && make -j64 kbench GIT_COMMIT=$GC-trace > $OUT/build.base.log 2>&1 || { echo BUILD FAILED; tail -20 $OUT/build.base.log; exit 1; }
cp kbench /tmp/kb.base
rm -rf cli; cp -r /tmp/cli.orig cli
git apply .peers/gate3.patch && python3 .peers/trace.py && make -j64 kbench GIT_COMMIT=$GC-gate-trace > $OUT/build.gate.log 2>&1 || { echo BUILD FAILED; tail -20 $OUT/build.gate.log; exit 1; }
cp kbench /tmp/kb.gate
rm -rf cli; cp -r /tmp/cli.orig cli
el build
mkdir -p $OUT/ab
r() { local w=$1 K=$2 mode=$3 s e rc; s=$(date +%s.%N)
  if [ $mode = one ]; then CUDA_VISIBLE_DEVICES=0 $K sweep configs/default.json --quiet --csv $OUT/ab/$w.csv --json $OUT/ab/$w.json > $OUT/ab/$w.log 2>&1; rc=$?
  else $K sweep configs/default.json --quiet --devices all --csv $OUT/ab/$w.csv --json $OUT/ab/$w.json > $OUT/ab/$w.log 2>&1; rc=$?; fi
  e=$(awk -v a=$s -v b=$(date +%s.%N) 'BEGIN{printf "%.2f", b-a}')
  echo "$w: $e s exit $rc" | tee -a $OUT/ab/summary.txt
  { python3 .peers/tl2.py $OUT/ab/$w.log $e; python3 .peers/timeline.py $OUT/ab/$w.json $e; } >> $OUT/ab/summary.txt 2>&1
  python3 .peers/tl2.py $OUT/ab/$w.log $e | grep parent; }
/tmp/kb.base sweep configs/mlp.json --quiet --devices all --json /tmp/warm.json --csv /tmp/warm.csv > $OUT/ab/warm.log 2>&1; el warm
r one-base /tmp/kb.base one; el one
for k in 1 2 3 4 5 6 7 8 9; do [ $(left) -gt 40 ] && { r dev-base$k /tmp/kb.base dev; r dev-gate$k /tmp/kb.gate dev; }; done
el end
