#!/usr/bin/env bash
# OpenMPI's MPI_Allreduce over loopback TCP (no shared-memory transport), n = 2 and 4 processes,
# beside bench_allreduce_bandwidth. Needs `apt-get install -y openmpi-bin libopenmpi-dev`.
# Usage: bench/mpi_allreduce.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicxx -std=c++20 -O3 -Wall -Wextra -DOMPI_SKIP_MPICXX=1 -o "$work/mpi_allreduce" "$here/mpi_allreduce.cc"
for n in 2 4; do
  mpirun --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl tcp,self \
    --mca btl_tcp_if_include lo -np "$n" "$work/mpi_allreduce"
done
