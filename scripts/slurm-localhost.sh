#!/usr/bin/env bash
# A one-node Slurm cluster on this machine (node "localhost", every core), so that
# `srun --mpi=pmix -n P owt train ...` runs here as on a cluster: munged, slurmctld and
# slurmd as daemons, PMIx as the default MPI plugin, no cgroups (containers have none to
# give), tasks may outnumber cores (srun -O). Needs the Debian packages slurmctld, slurmd,
# slurm-client and munge (.ci/run installs them); run as root. Idempotent: daemons already
# running are left as they are. Ends once the node answers as idle, or fails saying why.
set -euo pipefail
cpus=$(nproc)
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
chown munge:munge /run/munge
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=owt-local
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd -N localhost
for _ in $(seq 60); do
  if sinfo -h -o %T 2>/dev/null | grep -qE "idle|mix|alloc"; then
    sinfo
    exit 0
  fi
  sleep 1
done
echo "slurm-localhost: the node did not come up; the logs say why:" >&2
tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
