#include "daemon/runner/supported.h"

#include <string>

namespace dtrain::runner {

Status CheckRunnable(const config::JobConfig& job) {
  if (job.cluster.workers == 1 && job.cluster.mode == config::ClusterMode::kSingle) {
    return Status::Ok();
  }
  return Status::Error("cluster: mode '" + std::string(config::ClusterModeName(job.cluster.mode)) +
                       "' with " + std::to_string(job.cluster.workers) +
                       " workers is not available in this version of dtrain (distributed "
                       "training is being built); set cluster.workers = 1 and mode = \"single\"");
}

}  // namespace dtrain::runner
