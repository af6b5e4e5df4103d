#!/usr/bin/env bash
# A one-node Slurm on this machine, to run the sbatch scripts for real (CI and developers).
#
#   scripts/slurm/local_cluster.sh start DIR    # installs Debian's slurm and munge if missing, starts them
#   export SLURM_CONF=DIR/slurm.conf            # then sbatch, squeue, scontrol talk to it
#   scripts/slurm/local_cluster.sh stop DIR
#
# Everything the cluster writes stays in DIR (configuration, state, logs, the job completion log
# DIR/jobcomp.log). The node claims 4 CPUs whatever the machine has (config_overrides), so a
# 2-rank job and an array can run side by side. Needs root (the daemons run as root and munge).
# MpiDefault=pmi2 plays a site's default MPI plugin (what the PyPI mpich wheel's mpi4py starts
# under): the sbatch scripts call srun without --mpi unless LANDSCAPE_SRUN_MPI asks for one.
#
# MPICH names a node's shared memory after the job and step id (/dev/shm/mpich_shm_<FNV-1a of
# "JOB.STEP">_<node>), and a rank killed with SIGKILL leaves it behind; a later step with the same
# ids attaches to that stale segment and fails or hangs in MPI_Init. So job ids do not restart at 1
# on each start (FirstJobId from the clock: 10 ids a second, wrapping after about 70 days), and an
# epilog removes a job's segments when it ends, as a production site's epilog cleans /dev/shm.
set -euo pipefail

action=${1:?usage: local_cluster.sh start|stop DIR}
dir=$(mkdir -p "${2:?usage: local_cluster.sh start|stop DIR}" && cd "$2" && pwd)
host=$(hostname -s)

stop() {  # and wait until they are gone: a daemon still shutting down keeps the ports of the next start
  local daemon pid
  for daemon in slurmd slurmctld munged; do
    if [ -f "$dir/$daemon.pid" ]; then
      pid=$(cat "$dir/$daemon.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/$daemon.pid"
    fi
  done
}

if [ "$action" = stop ]; then
  stop
  exit 0
fi
[ "$action" = start ] || { echo "local_cluster.sh: unknown action $action (expected start or stop)" >&2; exit 2; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi

mkdir -p "$dir/state" "$dir/spool" /run/munge
cat > "$dir/slurm.conf" <<CONF
ClusterName=landscape
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
AuthInfo=cred_expire=10
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmi2
SlurmdParameters=config_overrides
EnforcePartLimits=ALL
MailProg=/bin/true
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
MinJobAge=0
FirstJobId=$(( $(date +%s) * 10 % 60000000 + 1 ))
Epilog=$dir/epilog.sh
KillWait=10
OverTimeLimit=0
InactiveLimit=0
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
cat > "$dir/epilog.sh" <<'EPILOG'
#!/usr/bin/env bash
# Removes the shared memory MPICH left for this job's steps 0-63 (a rank killed by a time limit or scancel).
fnv1a() {
  local text=$1 hash=2166136261 i code
  for (( i = 0; i < ${#text}; i++ )); do
    printf -v code '%d' "'${text:i:1}"
    hash=$(( ((hash ^ code) * 16777619) & 0xffffffff ))
  done
  printf '%x' "$hash"
}
for step in $(seq 0 63); do
  rm -f /dev/shm/mpich_shm_"$(fnv1a "$SLURM_JOB_ID.$step")"_*
done
exit 0
EPILOG
chmod +x "$dir/epilog.sh"

stop  # a cluster left running by an earlier start
chown munge:munge /run/munge
[ -f /etc/munge/munge.key ] || { mungekey --create --keyfile /etc/munge/munge.key 2>/dev/null || \
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; chown munge:munge /etc/munge/munge.key; \
  chmod 400 /etc/munge/munge.key; }
setpriv --reuid=munge --regid=munge --init-groups munged --foreground >"$dir/munged.log" 2>&1 &
echo $! > "$dir/munged.pid"
for _ in $(seq 100); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
munge -n >/dev/null || { echo "local_cluster.sh: munge did not start (see $dir/munged.log)" >&2; exit 1; }

export SLURM_CONF=$dir/slurm.conf
slurmctld -D -c -f "$dir/slurm.conf" >"$dir/slurmctld.out" 2>&1 &
controller=$!
slurmd -D -f "$dir/slurm.conf" >"$dir/slurmd.out" 2>&1 &
node=$!
for _ in $(seq 300); do
  kill -0 "$controller" 2>/dev/null && kill -0 "$node" 2>/dev/null || {
    echo "local_cluster.sh: slurmctld or slurmd exited at start (see $dir/slurmctld.log, $dir/slurmd.log)" >&2
    stop; exit 1; }
  if [ "$(sinfo -h -o %T 2>/dev/null)" = idle ]; then
    answering=$(scontrol show config 2>/dev/null | awk '$1 == "StateSaveLocation" {print $3}')
    [ "$answering" = "$dir/state" ] && { echo "Slurm is up: export SLURM_CONF=$dir/slurm.conf"; exit 0; }
    echo "local_cluster.sh: the cluster of ${answering%/state} holds the ports; stop it first:" \
         "local_cluster.sh stop ${answering%/state}" >&2; stop; exit 1
  fi
  sleep 0.1
done
echo "local_cluster.sh: the node did not become idle (see $dir/slurmctld.log, $dir/slurmd.log)" >&2
exit 1
