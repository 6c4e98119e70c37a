// OpenMPI's MPI_Allreduce (float sum, in place) over TCP, for comparison with
// bench_allreduce_bandwidth's dtrain figures: the same sizes, the same bus-bandwidth formula
// 2(n-1)/n * bytes / time, the median time per op at rank 0. Not part of the CMake build (MPI is
// no dependency of dtrain): bench/mpi_allreduce.sh compiles and runs it.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  for (long bytes :
       {16L << 10, 32L << 10, 64L << 10, 128L << 10, 256L << 10, 4L << 20, 64L << 20}) {
    const int floats = static_cast<int>(bytes / static_cast<long>(sizeof(float)));
    const int reps = std::clamp(static_cast<int>((256L << 20) / bytes), 5, 200);
    std::vector<float> data(static_cast<std::size_t>(floats));
    for (int i = 0; i < floats; ++i) data[static_cast<std::size_t>(i)] = (i * 7 + rank) % 13;
    std::vector<double> times;
    for (int op = 0; op <= reps; ++op) {
      const double start = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, data.data(), floats, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (op > 0) times.push_back(MPI_Wtime() - start);
      // Keep the values bounded, as dtrain's bench does with a mean.
      for (float& x : data) x *= 1.0f / static_cast<float>(world);
    }
    std::sort(times.begin(), times.end());
    if (rank == 0) {
      const double moved = 2.0 * (world - 1) / world * static_cast<double>(bytes);
      std::printf("n=%d %8ld KiB  %6.2f GB/s\n", world, bytes >> 10,
                  moved / times[times.size() / 2] / 1e9);
    }
  }
  MPI_Finalize();
  return 0;
}
