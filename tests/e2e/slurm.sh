#!/usr/bin/env bash
# The Slurm path for real: a one-node cluster on localhost (munged, slurmctld
# and slurmd from Debian's munge and slurm-wlm, configured in the test's temp
# dir on free loopback ports), ci/slurm/submit.sh submits the smoke suite as a
# 3-task array job on the CPU backend plus the dependent merge job, and the
# merged database must hold every case of the suite exactly once, in one
# complete run of the night (its three shards folded together). Skips (77) only when Slurm or munge is not installed or
# cannot be started here, and says why.
source "$(dirname "$0")/lib.bash"
source "$SRC/tests/e2e/net.bash"

for tool in munged slurmctld slurmd sbatch scontrol; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (Debian packages slurm-wlm and munge; scripts/install-deps.sh installs them)"
done
[ "$(id -u)" -eq 0 ] || skip "slurmd must run as root to start jobs (this test is run as $(id -un))"

C="$WORK/cluster"
mkdir -p "$C/state" "$C/spool/slurmd-ppbnode" "$C/log" "$C/munge"
chmod 755 "$WORK" "$C" "$C/munge" # munge clients must reach the socket
dd if=/dev/urandom of="$C/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$C/munge/munge.key"
SOCK="$C/munge/munge.sock"

cluster_logs() {
  local f
  for f in "$C/log/"* "$C/munge/munged.log"; do
    [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }
  done
}
# Daemons run in the foreground as children of this script, so the EXIT trap
# (net.bash) stops them by pid.
munged -F --force --socket="$SOCK" --key-file="$C/munge/munge.key" --log-file="$C/munge/munged.log" \
  --pid-file="$C/munge/munged.pid" --seed-file="$C/munge/munged.seed" >/dev/null 2>&1 &
_PPB_PIDS+=($!)
for i in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || skip "munged did not start: $(tail -3 "$C/munge/munged.log" 2>/dev/null)"

CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
[ "$CTLD_PORT" != "$SLURMD_PORT" ] || SLURMD_PORT=$(free_port)
export SLURM_CONF="$C/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=ppbtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$SOCK
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool/slurmd-%n
SlurmctldPidFile=$C/slurmctld.pid
SlurmdPidFile=$C/slurmd-%n.pid
SlurmctldLogFile=$C/log/slurmctld.log
SlurmdLogFile=$C/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=600
NodeName=ppbnode NodeAddr=127.0.0.1 NodeHostname=$(hostname) CPUs=$(nproc) State=UNKNOWN
PartitionName=ppb Nodes=ppbnode Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -c -f "$SLURM_CONF" >"$C/log/slurmctld.stdout" 2>&1 &
_PPB_PIDS+=($!)
slurmd -D -f "$SLURM_CONF" -N ppbnode >"$C/log/slurmd.stdout" 2>&1 &
_PPB_PIDS+=($!)
up=0
for i in $(seq 150); do
  if sinfo -h -n ppbnode -o '%t' 2>/dev/null | grep -qx 'idle'; then up=1; break; fi
  sleep 0.2
done
[ "$up" -eq 1 ] || { cluster_logs; skip "the one-node Slurm cluster did not come up (logs above)"; }

OUT="$WORK/out-shards"
expect_rc 0 bash "$SRC/ci/slurm/submit.sh" --suite "$SRC/suites/smoke.yaml" --shards 3 --out "$OUT" \
  --ppbench "$PPB" --backend cpu
array=$(awk '/^array /{print $2}' "$WORK/out")
merge=$(awk '/^merge /{print $2}' "$WORK/out")
[ -n "$array" ] && [ -n "$merge" ] || fail "submit.sh printed no job ids: $(cat "$WORK/out")"

# Wait for the merge job (it runs after every shard), two minutes at most.
state=""
for i in $(seq 600); do
  state=$(scontrol show job "$merge" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -1)
  case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
  sleep 0.2
done
if [ "$state" != "COMPLETED" ]; then
  scontrol show job "$array" || true
  for f in "$OUT"/*.log; do echo "--- $f"; cat "$f"; done
  cluster_logs
  fail "the merge job ended as '${state:-unknown}'"
fi
for k in 1 2 3; do
  [ -f "$OUT/shard-$k-of-3.db" ] || fail "shard $k stored no database: $(cat "$OUT/shard-$k-of-3.log" 2>/dev/null)"
done
grep -q "merged 3 shards" "$OUT/merge.log" || fail "merge log: $(cat "$OUT/merge.log")"

"$PPB" list "$SRC/suites/smoke.yaml" | sort >"$WORK/want_keys"
"$PY" - "$OUT/all.db" "$WORK/want_keys" <<'PY' || fail "the merged database is not the whole suite exactly once"
import collections, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
want = [l.rstrip("\n") for l in open(sys.argv[2]) if l.strip()]
runs = con.execute("SELECT id, status, shard_count, run_group, backend, label FROM runs").fetchall()
assert len(runs) == 1, ("the three shards are not one run", runs)
rid, status, count, group, backend, label = runs[0]
assert (status, count, backend) == ("complete", 3, "cpu") and group.startswith("slurm-") and label.startswith("slurm "), runs
parts = sorted(k for (k,) in con.execute("SELECT shard_index FROM run_parts WHERE run_id = ?", (rid,)))
assert parts == [1, 2, 3], parts
keys = [k for (k,) in con.execute("SELECT c.key FROM results r JOIN cases c ON c.id = r.case_id")]
count = collections.Counter(keys)
dupes = [k for k, n in count.items() if n > 1]
assert not dupes, ("cases more than once", dupes[:3])
assert sorted(count) == sorted(want), (len(count), len(want))
n_samples = con.execute("SELECT count(*) FROM samples").fetchone()[0]
assert n_samples > 0
print(f"slurm: {len(keys)} cases of {len(want)} in one run of 3 shards, {n_samples} samples")
PY
scontrol shutdown >/dev/null 2>&1 || true
echo "slurm: ok"
