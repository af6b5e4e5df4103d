#!/usr/bin/env bash
# A Slurm of one or more nodes on this machine, to run the sbatch scripts for real (CI and developers).
#
#   scripts/slurm/local_cluster.sh start DIR [--nodes N]   # installs Debian's slurm and munge if missing, starts them
#   export SLURM_CONF=DIR/slurm.conf                       # then sbatch, squeue, scontrol talk to it
#   scripts/slurm/local_cluster.sh stop DIR
#
# Everything the cluster writes stays in DIR (configuration, state, logs, the job completion log
# DIR/jobcomp.log). Each node claims 4 CPUs whatever the machine has (config_overrides), so a
# 2-rank job and an array can run side by side. Needs root (the daemons run as root and munge).
# MpiDefault=pmi2 plays a site's default MPI plugin (what the PyPI mpich wheel's mpi4py starts
# under): the sbatch scripts call srun without --mpi unless LANDSCAPE_SRUN_MPI asks for one.
#
# One node (the default) is this machine under its own name. With --nodes N (2 to 8) the nodes are
# node1 ... nodeN, each a slurmd in a network, UTS and mount namespace of its own: its own host name,
# address 10.77.0.(10+i) on a bridge (lsbr0, 10.77.0.1, where slurmctld listens) and an /etc/hosts
# naming every node, so ranks on two nodes see two hosts and talk over TCP, as on a cluster; nothing
# leaves the machine. stop removes the namespaces, links and bridge it made (listed in DIR/made).
# A node that stops answering for 10 s (SlurmdTimeout; sites use minutes) is DOWN and its jobs end
# with NODE_FAIL, as on a cluster that loses a node mid-job.
#
# MPICH names a node's shared memory after the job and step id (/dev/shm/mpich_shm_<FNV-1a of
# "JOB.STEP">_<node>), and a rank killed with SIGKILL leaves it behind; a later step with the same
# ids attaches to that stale segment and fails or hangs in MPI_Init. So job ids do not restart at 1
# on each start (FirstJobId from the clock: 10 ids a second, wrapping after about 70 days), and an
# epilog removes a job's segments when it ends, as a production site's epilog cleans /dev/shm.
set -euo pipefail

usage="usage: local_cluster.sh start DIR [--nodes N] | stop DIR"
action=${1:?$usage}
dir=$(mkdir -p "${2:?$usage}" && cd "$2" && pwd)
host=$(hostname -s)
nodes=1
if [ "${3:-}" = --nodes ]; then nodes=${4:?$usage}; elif [ -n "${3:-}" ]; then echo "$usage" >&2; exit 2; fi
case $nodes in [1-8]) ;; *) echo "local_cluster.sh: --nodes $nodes: expected 1 to 8" >&2; exit 2 ;; esac

stop() {  # and wait until they are gone: a daemon still shutting down keeps the ports of the next start
  local file pid
  for file in "$dir"/slurmd*.pid "$dir/slurmctld.pid" "$dir/munged.pid"; do
    if [ -f "$file" ]; then
      pid=$(cat "$file")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$file"
    fi
  done
  if [ -f "$dir/made" ]; then  # the nodes' namespaces (and any rank left in them), their links, the bridge
    local kind name
    while read -r kind name; do
      case $kind in
        netns) ip netns pids "$name" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
               ip netns delete "$name" 2>/dev/null || true ;;
        link) ip link delete "$name" 2>/dev/null || true ;;
      esac
    done < <(tac "$dir/made")
    rm -f "$dir/made"
  fi
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
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/slurmctld.log
CONF
if [ "$nodes" = 1 ]; then
  controller_addr=127.0.0.1 names=$host
  cat >> "$dir/slurm.conf" <<CONF
SlurmdSpoolDir=$dir/spool
SlurmdPidFile=$dir/slurmd.pid
SlurmdLogFile=$dir/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 RealMemory=4000 State=UNKNOWN
CONF
else
  controller_addr=10.77.0.1 names=node[1-$nodes]
  cat >> "$dir/slurm.conf" <<CONF
SlurmdSpoolDir=$dir/spool/%n
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmdLogFile=$dir/slurmd-%n.log
SlurmdTimeout=10
CONF
  printf '127.0.0.1 localhost\n10.77.0.1 %s\n' "$host" > "$dir/hosts"
  for i in $(seq "$nodes"); do
    echo "NodeName=node$i NodeAddr=10.77.0.$((10 + i)) CPUs=4 RealMemory=4000 State=UNKNOWN" >> "$dir/slurm.conf"
    echo "10.77.0.$((10 + i)) node$i" >> "$dir/hosts"
    mkdir -p "$dir/spool/node$i"
  done
fi
sed -i "s/^SlurmctldHost=.*/SlurmctldHost=$host($controller_addr)/" "$dir/slurm.conf"
echo "PartitionName=main Nodes=$names Default=YES MaxTime=INFINITE State=UP" >> "$dir/slurm.conf"
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

made() { echo "$1 $2" >> "$dir/made"; }
if [ "$nodes" -gt 1 ]; then  # the bridge the controller listens on, and a namespace per node plugged into it
  ip link show lsbr0 >/dev/null 2>&1 && {
    echo "local_cluster.sh: bridge lsbr0 exists: another multi-node cluster runs (stop it first)" >&2; exit 1; }
  ip link add lsbr0 type bridge && made link lsbr0
  ip addr add 10.77.0.1/24 dev lsbr0
  ip link set lsbr0 up
  for i in $(seq "$nodes"); do
    ip netns add "lsnode$i" && made netns "lsnode$i"
    ip link add "lsveth$i" type veth peer name "lsnet$i" && made link "lsveth$i"
    ip link set "lsnet$i" netns "lsnode$i"
    ip link set "lsveth$i" master lsbr0
    ip link set "lsveth$i" up
    ip netns exec "lsnode$i" ip addr add "10.77.0.$((10 + i))/24" dev "lsnet$i"
    ip netns exec "lsnode$i" ip link set "lsnet$i" up
    ip netns exec "lsnode$i" ip link set lo up
  done
fi

export SLURM_CONF=$dir/slurm.conf
slurmctld -D -c -f "$dir/slurm.conf" >"$dir/slurmctld.out" 2>&1 &
controller=$!
daemons=()
if [ "$nodes" = 1 ]; then
  slurmd -D -f "$dir/slurm.conf" >"$dir/slurmd.out" 2>&1 &
  daemons+=($!)
else
  for i in $(seq "$nodes"); do  # its own host name and /etc/hosts, in its own network
    nsenter --net="/run/netns/lsnode$i" unshare --uts --mount --propagation private \
      sh -c "hostname node$i && mount --bind '$dir/hosts' /etc/hosts && exec slurmd -D -N node$i -f '$dir/slurm.conf'" \
      >"$dir/slurmd-node$i.out" 2>&1 &
    daemons+=($!)
  done
fi
up() { [ "$(sinfo -h -N -o %T 2>/dev/null | grep -c '^idle$')" = "$nodes" ]; }
for _ in $(seq 300); do
  alive=1
  for pid in "$controller" "${daemons[@]}"; do kill -0 "$pid" 2>/dev/null || alive=0; done
  [ "$alive" = 1 ] || {
    echo "local_cluster.sh: slurmctld or a slurmd exited at start (see $dir/slurmctld.log, $dir/slurmd*.log)" >&2
    stop; exit 1; }
  if up; then
    answering=$(scontrol show config 2>/dev/null | awk '$1 == "StateSaveLocation" {print $3}')
    [ "$answering" = "$dir/state" ] && { echo "Slurm is up ($nodes node(s)): export SLURM_CONF=$dir/slurm.conf"; exit 0; }
    echo "local_cluster.sh: the cluster of ${answering%/state} holds the ports; stop it first:" \
         "local_cluster.sh stop ${answering%/state}" >&2; stop; exit 1
  fi
  sleep 0.1
done
echo "local_cluster.sh: the nodes did not become idle (see $dir/slurmctld.log, $dir/slurmd*.log)" >&2
exit 1
