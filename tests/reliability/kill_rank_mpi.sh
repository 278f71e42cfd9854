#!/usr/bin/env bash
# A rank SIGKILLed under mpirun (Open MPI 4.1, no ULFM): the job must END, not hang. Runs TRIALS
# jobs of NP ranks in which the last rank kills itself before, during or after its collectives;
# each mpirun must exit with a failure within the 60 s watchdog (exit 124 from `timeout` is a
# hang and fails the test). Prints the trials and the slowest job end.
#   kill_rank_mpi.sh MPIEXEC BINARY before|during|after NP TRIALS TIMEOUT_MS
set -uo pipefail
mpiexec=$1 binary=$2 when=$3 np=$4 trials=$5 timeout_ms=$6
worst=0
for trial in $(seq 1 "$trials"); do
  start=$(date +%s%N)
  timeout -k 5 60 "$mpiexec" -n "$np" --oversubscribe --mca mpi_yield_when_idle 1 \
    "$binary" mpi "$when" "$timeout_ms" >/dev/null 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  (( ms > worst )) && worst=$ms
  # mpirun itself exits 137 (128 + SIGKILL) for the killed rank; `timeout` exits 124 on a hang.
  if [ "$rc" -eq 124 ] || [ "$ms" -ge 60000 ]; then
    echo "trial $trial: mpirun still running after 60 s (hang), killed"
    exit 1
  fi
  if [ "$rc" -eq 0 ]; then
    echo "trial $trial: mpirun exited 0 although a rank was killed"
    exit 1
  fi
  echo "trial $trial: job ended with exit code $rc after $ms ms"
done
echo "kill_rank mpi $when: $trials trials, $np ranks, every job ended (no hang), slowest $worst ms"
