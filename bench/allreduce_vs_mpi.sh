#!/usr/bin/env bash
# dtrain's all-reduce over loopback TCP against OpenMPI's MPI_Allreduce over TCP, alternating:
# each round runs bench_allreduce_bandwidth once (--no-shm --rounds 1, checksums on, the default)
# and then bench/mpi_allreduce.sh, so that both meet the same state of a noisy shared machine.
# Prints each round's GB/s and dtrain/MPI ratios, then the median ratio per size and n.
# Needs the build tree's bench_allreduce_bandwidth and `apt-get install -y openmpi-bin
# libopenmpi-dev`.
# Usage: bench/allreduce_vs_mpi.sh [ROUNDS [BUILD_DIR [BENCH_ARG...]]]
#   (defaults: 5 rounds, ./build; BENCH_ARGs go to bench_allreduce_bandwidth, e.g. --no-checksum)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-5}
bench=${2:-build}/bench/bench_allreduce_bandwidth
shift $(($# < 2 ? $# : 2))
if [ ! -x "$bench" ]; then
  echo "allreduce_vs_mpi.sh: no $bench; build the project first" >&2
  exit 2
fi
# The figures depend on the host: say which.
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq "$rounds"); do
  # Lines "SIZE n=2 GB/s n=4 GB/s" from dtrain's table ("4 MiB  raw raw+crc | n=2 ... | n=4 ...").
  "$bench" --no-shm --rounds 1 "$@" | awk -v r="$round" '$2 ~ /iB$/ && $5 == "|" {
    print r, "dtrain", $1 $2, $6, $10 }' >>"$results"
  # Lines "n=N SIZE KiB GB/s GB/s" from the MPI benchmark.
  "$here/mpi_allreduce.sh" | awk -v r="$round" '$1 ~ /^n=/ {
    kib = $2; size = kib >= 1024 ? kib / 1024 "MiB" : kib "KiB"; print r, "mpi-" $1, size, $4 }' \
    >>"$results"
done
awk '
  $2 == "dtrain" {
    d2[$1, $3] = $4; d4[$1, $3] = $5; last = $1
    if (!($3 in seen)) { seen[$3] = 1; sizes[++count] = $3 }
  }
  $2 == "mpi-n=2" { m2[$1, $3] = $4 }
  $2 == "mpi-n=4" { m4[$1, $3] = $4 }
  function median(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    printf "%-8s %5s | %6s %6s %6s | %6s %6s %6s\n", "size", "round", "n=2", "MPI", "ratio", "n=4", "MPI", "ratio"
    for (k = 1; k <= count; k++) {
      s = sizes[k]; n = 0
      for (r = 1; r <= last; r++) {
        printf "%-8s %5d | %6.2f %6.2f %6.2f | %6.2f %6.2f %6.2f\n", s, r, d2[r, s], m2[r, s],
               d2[r, s] / m2[r, s], d4[r, s], m4[r, s], d4[r, s] / m4[r, s]
        n++; q2[n] = d2[r, s] / m2[r, s]; q4[n] = d4[r, s] / m4[r, s]
      }
      printf "%-8s %5s | %13s %6.2f | %13s %6.2f\n", s, "median", "dtrain/MPI", median(q2, n),
             "dtrain/MPI", median(q4, n)
    }
  }' "$results"
