#include "daemon/runner/memory_limit.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "config/job_memory.h"

namespace dtrain::runner {

Status LimitAddressSpace(std::uint64_t bytes) {
  if (bytes == 0) return Status::Ok();
  const rlimit limit{bytes, bytes};
  if (::setrlimit(RLIMIT_AS, &limit) != 0) {
    return Status::Error("cannot limit this process to " + config::FormatBytes(bytes) +
                         " ([train] memory_limit): " + std::strerror(errno));
  }
  AdaptToAddressSpaceLimit();
  return Status::Ok();
}

std::uint64_t AdaptToAddressSpaceLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  ::mallopt(M_ARENA_MAX, 1);
  return limit.rlim_cur;
}

Status CheckMemoryLimit(const config::JobConfig& job, int blas_threads) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return Status::Ok();
  const config::JobMemory m = config::EstimateJobMemory(job);
  const std::uint64_t overhead = config::ProcessOverhead(blas_threads);
  const std::uint64_t need = std::max(m.replica, m.shard) + overhead;
  if (need <= limit.rlim_cur) return Status::Ok();
  const std::string which = limit.rlim_cur == job.memory_limit
                                ? "[train] memory_limit"
                                : "this process's address-space limit (ulimit -v)";
  return Status::Error(which + " is " + config::FormatBytes(limit.rlim_cur) +
                       ", but this process needs at least " + config::FormatBytes(need) + ": " +
                       m.breakdown + ", and " + config::FormatBytes(overhead) + " for " +
                       std::to_string(blas_threads) +
                       " BLAS threads and its program (set train.threads, or a larger limit)");
}

std::string OutOfMemory(std::string_view doing, const config::JobConfig& job) {
  std::string message = "out of memory while " + std::string(doing);
  if (job.memory_limit > 0) {
    message += " (this process may use " + config::FormatBytes(job.memory_limit) +
               ": [train] memory_limit)";
  }
  return message;
}

}  // namespace dtrain::runner
