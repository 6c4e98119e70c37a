// The job's [train] memory_limit inside its processes. A daemon's launcher sets it on every
// process it starts (RLIMIT_AS, launch.h); `dtrain run` sets it on itself. A process under such a
// limit keeps one malloc arena (each thread's own arena would reserve 64 MiB or more of address
// space it never uses) and checks, once it knows its BLAS threads, that the limit leaves room for
// them and the model; an allocation that fails later becomes OutOfMemory's message.
//
//   runner::AdaptToAddressSpaceLimit();                        // at the start of a worker
//   if (Status s = runner::CheckMemoryLimit(job, threads); !s.ok()) ...
//   catch (const std::bad_alloc&) { Fail(runner::OutOfMemory("reading the job's data", job)); }
//
// Process-wide; call from the main thread before others start where it says so.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/job.h"
#include "core/status.h"

namespace dtrain::runner {

// Puts this process under `bytes` of address space (0: nothing) and adapts it (below).
Status LimitAddressSpace(std::uint64_t bytes);

// When this process runs under an address-space limit: one malloc arena from now on. Returns the
// limit in bytes, 0 when there is none.
std::uint64_t AdaptToAddressSpaceLimit();

// Whether this process's address-space limit (job.memory_limit, or one it inherited) leaves room
// for `blas_threads` BLAS threads beside the least the model needs (config/job_memory.h); the
// error gives both figures.
Status CheckMemoryLimit(const config::JobConfig& job, int blas_threads);

// "out of memory while <doing>", with the job's memory_limit when it has one.
std::string OutOfMemory(std::string_view doing, const config::JobConfig& job);

}  // namespace dtrain::runner
