#!/usr/bin/env bash
# A real Slurm on this machine (Debian's slurm-wlm and munge, one node on
# localhost, four fake GPUs as GRES so that --gpus-per-task is honoured), and
# scripts/slurm/kbench-sweep.sbatch submitted over configs/ci.json with
# --dry-run as a 4-task array, then kbench-merge.sbatch after it: the merged
# plan must equal the unsharded one.
#
#   tests/slurm.sh [KBENCH]     (root; `make test-slurm`, which CI runs)
#
# Exit 0 passed, 1 failed, 77 skipped (it says why on stdout: not root, no
# slurm-wlm/munge, or the daemons could not start here).
set -uo pipefail
kb=$(realpath "${1:-./kbench}")
root=$(cd "$(dirname "$0")/.." && pwd)
skip() { echo "SKIP slurm: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (to start munged, slurmctld and slurmd)"
for c in munged slurmctld slurmd sbatch squeue; do command -v $c >/dev/null || skip "$c not installed (apt-get install slurm-wlm munge)"; done
d=$(mktemp -d /tmp/kbench-slurm.XXXXXX)
cleanup() {
    # this test's own Slurm only (SLURM_CONF exported below): never the machine's
    [ "${SLURM_CONF:-}" = "$d/slurm.conf" ] && scancel --full -u root >/dev/null 2>&1
    [ -f "$d/slurmd.pid" ] && kill "$(cat "$d/slurmd.pid")" 2>/dev/null
    [ -f "$d/slurmctld.pid" ] && kill "$(cat "$d/slurmctld.pid")" 2>/dev/null
    [ -f "$d/munged.pid" ] && kill "$(cat "$d/munged.pid")" 2>/dev/null
    sleep 1
    rm -rf "$d"
}
trap cleanup EXIT
[ -n "${KB_SLURM_KEEP:-}" ] && trap - EXIT
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
mkdir -p "$d/state" "$d/spool" "$d/log" "$d/munge" "$d/out"
cat >"$d/slurm.conf" <<EOF
ClusterName=kbench-ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$cpus RealMemory=$mem Gres=gpu:4 State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
# four GPUs that are not there (character devices that discard), so that
# the array's --gpus-per-task is scheduled as on a cluster
for i in 0 1 2 3; do mknod "$d/gpu$i" c 1 3 2>/dev/null || skip "mknod (the fake GPUs' device files) refused here"; done
printf 'NodeName=%s Name=gpu File=%s/gpu[0-3]\n' "$host" "$d" >"$d/gres.conf"
export SLURM_CONF=$d/slurm.conf
munged --socket="$d/munge/munge.socket" --pid-file="$d/munged.pid" --log-file="$d/log/munged.log" \
    --seed-file="$d/munge/seed" --force >"$d/log/munged.out" 2>&1 ||
    skip "munged did not start: $(tail -n 1 "$d/log/munged.out" "$d/log/munged.log" 2>/dev/null | tr '\n' ' ')"
slurmctld >"$d/log/ctld.out" 2>&1 || skip "slurmctld did not start: $(tail -n 2 "$d/log/slurmctld.log" | tr '\n' ' ')"
slurmd >"$d/log/d.out" 2>&1 || skip "slurmd did not start: $(tail -n 2 "$d/log/slurmd.log" | tr '\n' ' ')"
for i in $(seq ${KB_SLURM_WAIT:-60}); do
    sinfo -h -o %T 2>/dev/null | grep -q idle && break
    sleep 1
done
sinfo -h -o %T 2>/dev/null | grep -q idle ||
    skip "the node did not come up idle in ${KB_SLURM_WAIT:-60} s: $(sinfo -h 2>&1 | tr '\n' ' '); $(tail -n 3 "$d/log/slurmd.log" | tr '\n' ' ')"
cd "$root" || exit 1
jid=$(KBENCH=$kb sbatch --parsable --export=ALL --array=0-3 --cpus-per-task=1 --output="$d/log/sweep-%a.out" \
    scripts/slurm/kbench-sweep.sbatch configs/ci.json "$d/out" --dry-run) || { echo "FAIL slurm: sbatch of the array"; exit 1; }
KBENCH=$kb timeout 600 sbatch --parsable --export=ALL --wait --dependency=afterany:"$jid" --output="$d/log/merge.out" \
    scripts/slurm/kbench-merge.sbatch configs/ci.json "$d/out" >/dev/null
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$d/out/all.plan" ]; then
    echo "FAIL slurm: the merge job (exit $rc): $(cat "$d/log/merge.out" "$d"/log/sweep-*.out 2>/dev/null | tail -n 5 | tr '\n' ' ')"
    exit 1
fi
"$kb" sweep configs/ci.json --dry-run | grep -E '^ +[0-9]+  ' >"$d/plain.plan"
if ! cmp -s "$d/plain.plan" "$d/out/all.plan"; then
    echo "FAIL slurm: the merged plan of the 4-task array differs from the unsharded plan ($(wc -l <"$d/out/all.plan") and $(wc -l <"$d/plain.plan") cases)"
    exit 1
fi
n=$(ls "$d"/out/shard-*.plan | wc -l)
echo "PASS slurm: a 4-task array (job $jid) and its merge job: $(wc -l <"$d/out/all.plan") cases, the unsharded plan ($n shard plans)"
