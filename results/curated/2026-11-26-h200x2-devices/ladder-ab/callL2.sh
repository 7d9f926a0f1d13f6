#!/usr/bin/env bash
# more rounds of callL's ladder A/B, and make run's sweep under --devices with each order
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[$(( $(date +%s)-T0 )) s] $*"; }
[ -x kbench.base ] && [ -x kbench.s1 ] || {
  make -j64 kbench GIT_COMMIT=$GC > $OUT/build.log 2>&1; cp kbench kbench.base
  cp cli/ladder.c /tmp/ladder.c; sed -i "s/for (int i = NL - 1; i >= 0; i--)/for (int i = 0; i < NL; i++)/" cli/ladder.c && make -j64 kbench GIT_COMMIT=$GC-small1st > $OUT/build2.log 2>&1 && cp kbench kbench.s1; cp /tmp/ladder.c cli/ladder.c; }
el builds
mkdir -p $OUT/lad
r() { local tag=$1 K=$2 cfg=$3; shift 3; local s; s=$(date +%s.%N)
  "$@" $K sweep $cfg --quiet ${DEV:-} --json $OUT/lad/$tag.json --csv $OUT/lad/$tag.csv > $OUT/lad/$tag.log 2>&1
  echo "$tag: $(awk -v a=$s -v b=$(date +%s.%N) 'BEGIN{printf "%.2f", b-a}') s"; python3 .peers/ladinfo.py $OUT/lad/$tag.json $tag; }
for k in 4 5 6; do
  g=$(( (k + 1) % 2 ))
  r one$k-g$g ./kbench.base .peers/mlp1.json env CUDA_VISIBLE_DEVICES=$g
  DEV="--devices all" r devs1st$k ./kbench.s1 .peers/mlp1.json env
  DEV="--devices all" r devbase$k ./kbench.base .peers/mlp1.json env
done
el ladder
for k in 1 2; do
  DEV="--devices all" r defbase$k ./kbench.base configs/default.json env
  DEV="--devices all" r defs1st$k ./kbench.s1 configs/default.json env
done
el default
