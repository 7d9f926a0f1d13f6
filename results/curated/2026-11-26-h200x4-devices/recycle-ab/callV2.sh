#!/usr/bin/env bash
# session 25: kb_host_recycle A/B on make run's sweep (one GPU and --devices all), plus hostbench
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[$(( $(date +%s)-T0 )) s] $*"; }
left() { echo $(( ${BUDGET:-330} - ($(date +%s)-T0) )); }
nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader; hostname
gcc -O2 .peers/hostbench.c -o /tmp/hb -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/usr/local/cuda/lib64 2>/dev/null
for a in "1" "4" "4 mallopt"; do echo "== hostbench $a"; timeout 60 /tmp/hb $a; done 2>&1 | tee $OUT/hostbench.txt
el hostbench
make -j64 kbench GIT_COMMIT=$GC > $OUT/build.new.log 2>&1 || { echo BUILD FAILED; tail -20 $OUT/build.new.log; exit 1; }
cp kbench /tmp/kb.new
sed -i 's/^    kb_host_recycle();$//' cli/main.c
make -j64 kbench GIT_COMMIT=$GC-base > $OUT/build.base.log 2>&1 || { echo BUILD FAILED; exit 1; }
cp kbench /tmp/kb.base; git checkout cli/main.c 2>/dev/null
el build
mkdir -p $OUT/ab
sums() { python3 - "$1" <<'PY'
import json,sys,collections
d=json.load(open(sys.argv[1])); s=collections.Counter()
for r in d['results']:
    for k,v in r.get('wall_s',{}).items(): s[k]+=v
print('    wall_s summed: '+' '.join(f'{k} {v:.2f}' for k,v in s.items()))
PY
}
r() { local w=$1 K=$2 mode=$3 b=default s e rc; s=$(date +%s.%N)
  if [ $mode = one ]; then CUDA_VISIBLE_DEVICES=0 $K sweep configs/default.json --quiet --csv $OUT/ab/$w.csv --json $OUT/ab/$w.json > $OUT/ab/$w.log 2>&1; rc=$?
  else $K sweep configs/default.json --quiet --devices all --csv $OUT/ab/$w.csv --json $OUT/ab/$w.json > $OUT/ab/$w.log 2>&1; rc=$?; fi
  e=$(awk -v a=$s -v b=$(date +%s.%N) 'BEGIN{printf "%.2f", b-a}')
  echo "$w: $e s exit $rc"; sums $OUT/ab/$w.json; [ $mode = dev ] && python3 .peers/timeline.py $OUT/ab/$w.json $e; }
/tmp/kb.new sweep configs/mlp.json --quiet --devices all --json /tmp/warm.json --csv /tmp/warm.csv > /dev/null 2>&1; el warm
r one-base /tmp/kb.base one; r one-new /tmp/kb.new one; el one
for k in 1 2 3; do [ $(left) -gt 40 ] && { r dev-base$k /tmp/kb.base dev; r dev-new$k /tmp/kb.new dev; }; done
el end
