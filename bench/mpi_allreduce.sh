#!/usr/bin/env bash
# OpenMPI's MPI_Allreduce, n = 2 and 4 processes on this host, beside bench_allreduce_bandwidth:
# over loopback TCP only (the default, to compare with dtrain's TCP ring), or with --shm over
# OpenMPI's shared-memory transport (vader, to compare with dtrain's ShmLink ring).
# Needs `apt-get install -y openmpi-bin libopenmpi-dev`.
# Usage: bench/mpi_allreduce.sh [--shm]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
transport=(--mca btl tcp,self --mca btl_tcp_if_include lo)
if [ "${1:-}" = "--shm" ]; then
  transport=(--mca btl vader,self)
elif [ -n "${1:-}" ]; then
  echo "usage: bench/mpi_allreduce.sh [--shm]" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicxx -std=c++20 -O3 -Wall -Wextra -DOMPI_SKIP_MPICXX=1 -o "$work/mpi_allreduce" "$here/mpi_allreduce.cc"
for n in 2 4; do
  mpirun --allow-run-as-root --oversubscribe --mca pml ob1 "${transport[@]}" \
    -np "$n" "$work/mpi_allreduce"
done
