// An elastic job (sync ring or local; config::ClusterConfig::Elastic) that had cores for only some
// of its replicas started with those (at least cluster.min_workers: JobManager::PlaceToStart);
// whenever the scheduler runs with no waiting job held back, the others start as cores free up, and
// beyond cluster.workers up to cluster.max_workers (ranks never started in this attempt). Each is a
// fresh process of the running attempt, admitted as a joiner like a lost replica's replacement
// (replica_restart.cc): it enters the ring at the next step boundary with a member's state
// (elastic_regroup.cc), and its cores are charged from its start. Growing is no restart. A job
// placed by Slurm grows as Slurm grants its replicas instead (slurm_growth.cc), each started here
// too (StartJoiner).
#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <limits>

#include "core/net/auth.h"
#include "daemon/server/active_job.h"

namespace dtrain::server {

bool JobManager::MayStillGrow(const Job& job) const {
  const AttemptMachine& machine = job.machine;
  return job.active && job.regroup && job.placed_workers < job.config.cluster.MostMembers() &&
         machine.failure().empty() && !machine.cancel_requested() && !machine.shutting_down() &&
         !job.regroup_finished && !job.slurm.ended && !shutting_down_;
}

bool JobManager::StartJoiner(Job& job, int rank, const std::string& node, const std::string& how,
                             std::vector<std::string>& events) {
  Process& p = job.processes[static_cast<std::size_t>(rank)];
  p = Process{};
  p.rank = rank;
  p.token = net::RandomToken();
  if (node != settings_.node_name) p.node = node;
  if (Status spawned = SpawnProcess(job.id, job.attempt, p); !spawned.ok()) {
    events.push_back("cannot start " + job.Who(rank) + ": " + spawned.message());
    return false;
  }
  job.machine.Added(rank);
  job.placed_workers = rank + 1;
  events.push_back("started " + job.Who(rank) + " " + how +
                   ": it joins the others' ring at a step boundary");
  asio::co_spawn(io_, RecordStart(job.id, job.attempt, rank, p.pid), asio::detached);
  return true;
}

void JobManager::GrowElastic(Job& job, UsageByUser& usage) {
  const int workers = job.config.cluster.MostMembers();
  if (job.OnSlurm() || !MayStillGrow(job) || !job.machine.ready()) return;
  const int held = job.cores;
  const int free_cores = settings_.cores - CoresInUse();
  const int cores_per_user = settings_.limits.cores_per_user;
  const int share_left = cores_per_user > 0 ? cores_per_user - usage[job.owner.uid].cores
                                            : std::numeric_limits<int>::max();
  Placed placed;
  const int grown = MostThatFit(workers, job.placed_workers + 1, [&](int n) {
    placed = Place(job, n);
    const int more = job.cores - held;
    return placed.ok() && more <= free_cores && more <= share_left;
  });
  if (grown == 0) {
    job.cores = held;
    if (!placed.wait.empty() && !schedule_later_) {
      // A peer may come up, or free cores, with no event to say so: asked again in a moment.
      schedule_later_ = true;
      asio::co_spawn(io_, ScheduleLater(), asio::detached);
    }
    return;
  }
  std::vector<std::string> events;
  for (int rank = job.placed_workers; rank < grown; ++rank) {
    const std::string& node = placed.nodes[static_cast<std::size_t>(rank)];
    if (!StartJoiner(job, rank, node, "as cores freed up", events)) break;
  }
  if (job.placed_workers < grown) Place(job, job.placed_workers);  // the cores of those started
  job.placement = placed.nodes;
  usage[job.owner.uid].cores += job.cores - held;
  NoteEvents(job.id, std::move(events));
}

}  // namespace dtrain::server
