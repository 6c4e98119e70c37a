// JobMemory: the least memory a job's processes need — what `dtrain validate`, `dtrain submit`
// and dtraind compare with [train] memory_limit and with a host's memory before the job runs —
// and the byte sizes memory_limit is written in.
//
//   JobMemory m = EstimateJobMemory(job);          // m.replica: bytes one replica needs at least
//   if (m.replica + ProcessOverhead(1) > job.memory_limit) ... FormatBytes(m.replica) ...
//   Result<std::uint64_t> limit = ParseBytes("4GiB");
//
// The estimate is a lower bound: a replica holds the parameters, their gradient, the optimizer's
// state vectors, the activations of one batch and, to take a checkpoint, the encoding of the
// parameters and state (with parameter servers also the shards' snapshot it is encoded from; with
// model parallelism, each of its K processes its partition's share); a shard its slice of the
// parameters and their optimizer state and a pushed gradient (an elastic job's on several
// servers, a second copy of the slice and state, from before its last step). The data a replica
// reads comes on top (it is not known until its files are read, which only the job's own processes
// do), and where the job leaves model.inputs to the data one input is counted. A sparse model
// (data.sparse) counts 0: its size is the keys its rows touch. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/job.h"
#include "core/status.h"

namespace dtrain::config {

struct JobMemory {
  std::uint64_t params = 0;   // the model's parameter count
  std::uint64_t replica = 0;  // bytes one replica needs at least
  std::uint64_t shard = 0;    // bytes one parameter-server shard needs at least (0: no shards)
  std::uint64_t host = 0;     // bytes of the job's processes that share one host at least: all
                              // of them when it is packed (the default placement), else one
  std::string breakdown;      // how `replica` adds up, for messages
};

JobMemory EstimateJobMemory(const JobConfig& job);

// What a process needs under an address-space limit beyond its model and data: its program,
// libraries and threads (about 256 MiB), and OpenBLAS's 128 MiB buffer of each BLAS thread.
std::uint64_t ProcessOverhead(int blas_threads);

// The smallest [train] memory_limit: one BLAS thread's overhead and room for a small model.
inline constexpr std::uint64_t kMinMemoryLimit = std::uint64_t{512} << 20;

// "512 MiB", "1.5 GiB", "12.0 TiB", "900 B".
std::string FormatBytes(std::uint64_t bytes);

// "4GiB", "512 MiB", "1.5G", "2T", "1048576" (bytes): a number and an optional unit, B, K/KiB,
// M/MiB, G/GiB or T/TiB, all powers of 1024; an error says what is wrong.
Result<std::uint64_t> ParseBytes(std::string_view text);

}  // namespace dtrain::config
