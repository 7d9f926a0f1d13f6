#!/usr/bin/env bash
# On a GPU machine: build from a clean tree, run `kbench check`, then the
# same checks under compute-sanitizer (memcheck; racecheck for the kernels'
# shared memory). Logs go to ${OUT:-results}/verify-*.txt.
set -uo pipefail
out=${OUT:-results}
mkdir -p "$out"
make clean >/dev/null && make -j"$(nproc)" kbench > "$out/verify-build.txt" 2>&1 || { tail "$out/verify-build.txt"; exit 1; }
rc=0
./kbench check 2>&1 | tee "$out/verify-check.txt" | tail -n 3 || rc=1
for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool kbench check"
    compute-sanitizer --tool "$tool" --error-exitcode 9 ./kbench check > "$out/verify-$tool.txt" 2>&1
    r=$?
    tail -n 3 "$out/verify-$tool.txt"
    [ $r -eq 0 ] || { echo "$tool: exit $r"; rc=1; }
done
exit $rc
