#!/usr/bin/env bash
# On a GPU machine: build from a clean tree, run `kbench check` (every op, or
# the ops named), then the same checks under compute-sanitizer (memcheck;
# racecheck for the kernels' shared memory). Logs go to ${OUT:-results}/verify-*.txt.
#
#   scripts/gpu-verify.sh [OP...]        e.g. scripts/gpu-verify.sh layernorm rmsnorm
#
# Every named implementation is checked (the sm_90 ones give n/a rows elsewhere).
set -uo pipefail
out=${OUT:-results}
mkdir -p "$out"
make clean >/dev/null && make -j"$(nproc)" kbench > "$out/verify-build.txt" 2>&1 || { tail "$out/verify-build.txt"; exit 1; }
rc=0
timeout 600 ./kbench check "$@" 2>&1 | tee "$out/verify-check.txt" | tail -n 3
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool kbench check $*"
    timeout 900 compute-sanitizer --tool "$tool" --error-exitcode 9 ./kbench check "$@" > "$out/verify-$tool.txt" 2>&1
    r=$?
    tail -n 3 "$out/verify-$tool.txt"
    [ $r -eq 0 ] || { echo "$tool: exit $r"; rc=1; }
done
exit $rc
