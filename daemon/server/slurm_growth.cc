// An elastic job placed by Slurm (cluster.scheduler = "slurm") starts once its first allocation,
// of its cluster.min_workers replicas (FirstAllocationTasks), is granted; then it asks Slurm for
// one more replica at a time, an allocation of one task under the job's Slurm name and keys
// (SallocArguments), up to cluster.max_workers (workers unless set above). Slurm cannot grant a
// range of tasks (--ntasks is exact; --nodes=MIN-MAX sizes an allocation once, when it starts, and
// never grows it), so each further replica is an allocation of its own, granted when Slurm has
// room. Its grant is an event as the first allocation's, and it starts as a joiner exactly as a
// replica elastic_growth.cc starts (StartJoiner). One request is pending at a time; one Slurm
// never grants blocks nothing: the attempt's end cancels it with the others (EndSlurmAttempt),
// and one granted after that end is cancelled at once. A grown replica lost and not replaced
// gives its allocation back at once (ReleaseSlurmReplica): its cores are nobody's use otherwise.
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <memory>

#include "daemon/server/active_job.h"
#include "daemon/server/slurm_commands.h"

namespace dtrain::server {
namespace {

// How often a job whose first members are still meeting is looked at again.
constexpr std::chrono::milliseconds kRendezvousPoll{200};

}  // namespace

asio::awaitable<void> JobManager::GrowOnSlurm(std::int64_t id, std::uint64_t attempt) {
  const std::string name = SlurmJobName(settings_.node_name, id);
  for (;;) {
    Job* job = Current(id, attempt);
    if (job == nullptr || !MayStillGrow(*job)) co_return;
    if (!job->machine.ready()) {
      // Joiners are admitted once the first members' rendezvous is done.
      asio::steady_timer pause(io_, kRendezvousPoll);
      co_await pause.async_wait(asio::use_awaitable);
      continue;
    }
    const Owner owner = job->owner;
    // Told here (not only on the job) so that an allocation granted after the attempt's end is
    // still known, to be cancelled.
    auto named = std::make_shared<std::int64_t>(0);
    SlurmCommand salloc;
    salloc.argv = SallocArguments(job->config, name, 1);
    salloc.on_line = [this, id, attempt, named](std::string_view line) {
      const std::optional<std::int64_t> allocation = AllocationIdIn(line);
      if (!allocation) return;
      *named = *allocation;
      Job* j = Current(id, attempt);
      if (j == nullptr || j->slurm.ended) return;
      j->slurm.growing = *allocation;
      if (!IsGrantLine(line)) {
        store_.AppendLog(id, 0, "daemon",
                         "waiting for Slurm to grant job " + std::to_string(*allocation) +
                             " (a further replica)");
      }
    };
    salloc.on_start = [this, id, attempt](pid_t pid) {
      if (Job* j = Current(id, attempt); j != nullptr && !j->slurm.ended) {
        j->slurm.growth_salloc = pid;
      }
    };
    Result<std::vector<std::string>> granted = co_await RunSlurmCommand(owner, std::move(salloc));
    job = Current(id, attempt);
    if (job != nullptr && !job->slurm.ended) {
      job->slurm.growing = 0;
      job->slurm.growth_salloc = 0;
    }
    const std::int64_t allocation = *named;
    if (job == nullptr || !MayStillGrow(*job)) {
      // Granted after the attempt ended (or stopped by that end: then Slurm cancelled it).
      if (granted.ok() && allocation != 0)
        co_await CancelSlurmJob(owner, std::to_string(allocation));
      co_return;
    }
    if (!granted.ok() || allocation == 0) {
      if (allocation != 0) co_await CancelSlurmJob(owner, std::to_string(allocation));
      NoteEvents(id, {"Slurm did not grant a further replica (" +
                      (granted.ok() ? std::string("salloc did not say which Slurm job it made")
                                    : granted.status().message()) +
                      "): the job goes on with the replicas it has"});
      co_return;
    }
    // Its rank's from now on, so that the attempt's end cancels it whatever happens meanwhile.
    const int rank = job->placed_workers;
    job->slurm.grown[rank] = allocation;
    co_await NoteSlurmGrant(id, owner, allocation, rank);
    job = Current(id, attempt);
    if (job == nullptr || !MayStillGrow(*job)) co_return;  // its end cancels the allocation
    std::vector<std::string> events;
    const bool started = StartJoiner(*job, rank, settings_.node_name,
                                     "in Slurm job " + std::to_string(allocation), events);
    NoteEvents(id, std::move(events));
    if (!started) co_return;
  }
}

asio::awaitable<void> JobManager::ReleaseSlurmReplica(std::int64_t id, std::uint64_t attempt,
                                                      int rank) {
  Job* job = Current(id, attempt);
  if (job == nullptr || job->slurm.ended) co_return;
  const auto grown = job->slurm.grown.find(rank);
  if (grown == job->slurm.grown.end()) co_return;
  const std::int64_t allocation = grown->second;
  job->slurm.grown.erase(grown);  // the attempt's end has it no more to cancel
  co_await CancelSlurmJob(job->owner, std::to_string(allocation));
  NoteEvents(id, {"Slurm job " + std::to_string(allocation) + " released: worker " +
                  std::to_string(rank) + " is not replaced"});
}

}  // namespace dtrain::server
