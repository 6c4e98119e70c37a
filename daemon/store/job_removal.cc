#include "daemon/store/job_removal.h"

#include <algorithm>
#include <string>

namespace dtrain::store {

bool Prunable(const JobRecord& job, const PruneFilter& filter) {
  if (!IsTerminal(job.state) || job.updated >= filter.before) return false;
  if (filter.owner && job.owner_uid != *filter.owner) return false;
  return filter.states.empty() ||
         std::find(filter.states.begin(), filter.states.end(), job.state) != filter.states.end();
}

Result<JobState> ParseEndedState(std::string_view name) {
  Result<JobState> state = ParseJobState(name);
  if (!state.ok() || !IsTerminal(state.value())) {
    std::string message(name);
    message += " is not a state a job ends in; choose from succeeded, failed, cancelled";
    return Status::Error(message);
  }
  return state;
}

nlohmann::json RemovedJobJson(const JobRecord& job) {
  return {{"id", job.id},
          {"name", job.name},
          {"state", JobStateName(job.state)},
          {"owner", job.owner_uid},
          {"updated", job.updated}};
}

}  // namespace dtrain::store
