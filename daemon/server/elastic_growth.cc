// An elastic job (sync ring or local; config::ClusterConfig::Elastic) that had cores for only some
// of its replicas started with those (at least cluster.min_workers: JobManager::PlaceToStart);
// whenever the scheduler runs with no waiting job held back, the others start as cores free up, and
// beyond cluster.workers up to cluster.max_workers (ranks never started in this attempt). Each is a
// fresh process of the running attempt, admitted as a joiner like a lost replica's replacement
// (replica_restart.cc): it enters the ring at the next step boundary with a member's state
// (elastic_regroup.cc), and its cores are charged from its start. Growing is no restart.
#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <limits>

#include "core/net/auth.h"
#include "daemon/server/active_job.h"

namespace dtrain::server {

void JobManager::GrowElastic(Job& job, UsageByUser& usage) {
  const int workers = job.config.cluster.MostMembers();
  const AttemptMachine& machine = job.machine;
  if (!job.active || !job.regroup || job.placed_workers >= workers || !machine.ready() ||
      !machine.failure().empty() || machine.cancel_requested() || machine.shutting_down() ||
      job.regroup_finished || shutting_down_) {
    return;
  }
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
  const std::uint64_t attempt = job.attempt;
  std::vector<std::string> events;
  for (int rank = job.placed_workers; rank < grown; ++rank) {
    Process& p = job.processes[static_cast<std::size_t>(rank)];
    p = Process{};
    p.rank = rank;
    p.token = net::RandomToken();
    const std::string& node = placed.nodes[static_cast<std::size_t>(rank)];
    if (node != settings_.node_name) p.node = node;
    Result<pid_t> pid = SpawnProcess(job.id, attempt, p);
    if (!pid.ok()) {
      events.push_back("cannot start " + job.Who(rank) + ": " + pid.status().message());
      break;
    }
    p.pid = pid.value();
    job.machine.Added(rank);
    job.placed_workers = rank + 1;
    events.push_back("started " + job.Who(rank) +
                     " as cores freed up: it joins the others' ring at a step boundary");
    asio::co_spawn(io_, RecordStart(job.id, attempt, rank, p.pid), asio::detached);
  }
  if (job.placed_workers < grown) Place(job, job.placed_workers);  // the cores of those started
  job.placement = placed.nodes;
  usage[job.owner.uid].cores += job.cores - held;
  NoteEvents(job.id, std::move(events));
}

}  // namespace dtrain::server
