#!/usr/bin/env bash
# session 24: d2698ab on a multi-GPU host: build, check on GPU 0, the kill;
# then the GEMM ladder alone (one GPU: smallest rung first) against the same
# ladder through the --devices queue (one worker searching: largest first)
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[$(( $(date +%s)-T0 )) s] $*"; }
nvidia-smi --query-gpu=index,name,power.limit,persistence_mode,uuid,temperature.gpu --format=csv,noheader; nproc; hostname
make -j64 kbench GIT_COMMIT=$GC > $OUT/build.log 2>&1 || { echo BUILD FAILED; tail -30 $OUT/build.log; exit 1; }
el build
if [ "${CHECK:-1}" = 1 ]; then
  CUDA_VISIBLE_DEVICES=0 timeout 200 ./kbench check > $OUT/check.txt 2>&1; echo "check exit $?"; tail -1 $OUT/check.txt
  el check
  timeout 120 bash scripts/gpu-devices.sh kill:configs/mlp.json@3.5 2>&1 | tee -a $OUT/devices.txt
  el kill
fi
cp kbench kbench.base
cp cli/ladder.c /tmp/ladder.c; sed -i "s/for (int i = NL - 1; i >= 0; i--)/for (int i = 0; i < NL; i++)/" cli/ladder.c && grep -c "for (int i = 0; i < NL; i++)" cli/ladder.c && make -j64 kbench GIT_COMMIT=$GC-small1st > $OUT/build2.log 2>&1 && cp kbench kbench.s1; cp /tmp/ladder.c cli/ladder.c
el build2
mkdir -p $OUT/lad
r() { local tag=$1 K=$2; shift 2; local s; s=$(date +%s.%N)
  "$@" $K sweep .peers/mlp1.json --quiet ${DEV:-} --json $OUT/lad/$tag.json --csv $OUT/lad/$tag.csv > $OUT/lad/$tag.log 2>&1
  echo "$tag: $(awk -v a=$s -v b=$(date +%s.%N) 'BEGIN{printf "%.2f", b-a}') s"; python3 .peers/ladinfo.py $OUT/lad/$tag.json $tag; }
for k in 1 2 3; do
  g=$(( (k + 1) % 2 ))
  r one$k-g$g ./kbench.base env CUDA_VISIBLE_DEVICES=$g
  DEV="--devices all" r devbase$k ./kbench.base env
  DEV="--devices all" r devs1st$k ./kbench.s1 env
done
el ladder
