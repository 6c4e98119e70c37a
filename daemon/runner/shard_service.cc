#include "daemon/runner/shard_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>

#include "config/job_layout.h"
#include "config/mode_traits.h"
#include "core/dist/parameter_shard.h"
#include "core/dist/shard_ranges.h"
#include "core/model/model.h"
#include "core/model/partition_plan.h"

namespace dtrain::runner {
namespace {

// What a shard of `job` reports: with backup workers, the late pushes it dropped; elastic on
// several shards, the steps it undid.
std::vector<train::MetricPoint> StatPoints(const dist::ShardStats& stats,
                                           const config::JobConfig& job) {
  const auto step = static_cast<std::int64_t>(stats.global_clock);
  std::vector<train::MetricPoint> points{
      {step, 0.0, "pushes_applied", static_cast<double>(stats.pushes_applied)}};
  if (job.cluster.backup_workers > 0) {
    points.push_back({step, 0.0, "pushes_dropped", static_cast<double>(stats.pushes_dropped)});
  }
  if (job.cluster.Elastic() && job.cluster.Servers() > 1) {
    points.push_back({step, 0.0, "steps_undone", static_cast<double>(stats.steps_undone)});
  }
  AppendStalenessPoints(step, stats.staleness, points);
  return points;
}

// The shard's link to worker `rank` over the connection it introduced (the worker made it, so
// it creates the shared memory when they share a host), sending as the job's cluster.checksum
// says.
Result<std::unique_ptr<dist::Link>> WorkerLink(net::FrameStream stream, int self, int rank,
                                               const config::JobConfig& job,
                                               dist::Deadline deadline) {
  auto link = dist::MakeLink(std::move(stream), LinkTransportOf(job), dist::ShmRole::kOpener, self,
                             rank, "", deadline);
  if (link.ok()) link.value()->SetSendChecksums(job.cluster.checksum);
  return link;
}

// Until `serving` drops: each connection introduced as a replica rank below `ranks` becomes that
// worker's link (its hello due within `handshake`) and goes to `take`; the links it keeps live in
// `kept` until Serve has returned, anything else is closed.
void AcceptWorkers(const dist::PeerListener& listener, int self, const config::JobConfig& job,
                   int ranks, dist::Clock::duration handshake,
                   const std::function<Status(int rank, dist::Link* link)>& take,
                   const std::atomic<bool>& serving,
                   std::vector<std::unique_ptr<dist::Link>>& kept) {
  using namespace std::chrono_literals;
  while (serving) {
    const auto start = dist::Clock::now();
    Result<dist::IntroducedPeer> in = listener.Accept(start + 200ms);
    if (!in.ok()) {
      if (dist::Clock::now() - start < 50ms) std::this_thread::sleep_for(50ms);  // not a timeout
      continue;
    }
    const std::uint32_t rank = in.value().id;
    if (rank >= static_cast<std::uint32_t>(ranks)) continue;
    auto link = WorkerLink(std::move(in.value().stream), self, static_cast<int>(rank), job,
                           dist::Clock::now() + handshake);
    if (!link.ok()) continue;
    if (take(static_cast<int>(rank), link.value().get()).ok()) {
      kept.push_back(std::move(link).value());
    }
  }
}

}  // namespace

dist::PsMode PsModeOf(const config::JobConfig& job) {
  return config::TraitsOf(job.cluster.mode).exchange == config::Exchange::kAsynchronous
             ? dist::PsMode::kAsync
             : dist::PsMode::kSync;
}

void AppendStalenessPoints(std::int64_t step, const dist::StalenessStats& staleness,
                           std::vector<train::MetricPoint>& points) {
  points.push_back({step, 0.0, "staleness_p50", static_cast<double>(staleness.Percentile(0.5))});
  points.push_back({step, 0.0, "staleness_p90", static_cast<double>(staleness.Percentile(0.9))});
  points.push_back({step, 0.0, "staleness_max", static_cast<double>(staleness.max)});
  points.push_back({step, 0.0, "staleness_mean", staleness.mean});
}

Result<std::vector<std::unique_ptr<dist::Link>>> AcceptWorkerLinks(const config::JobConfig& job,
                                                                   const Placement& placement,
                                                                   const std::string& name) {
  const int workers = job.cluster.workers;
  std::vector<std::unique_ptr<dist::Link>> links(static_cast<std::size_t>(workers));
  const dist::Deadline deadline = dist::Clock::now() + JobTimeout(job);
  for (int accepted = 0; accepted < workers; ++accepted) {
    Result<dist::IntroducedPeer> in = placement.listener->Accept(deadline);
    if (!in.ok()) {
      return Status::Error(name + ": waiting for the workers: " + in.status().message());
    }
    const std::uint32_t rank = in.value().id;
    if (rank >= static_cast<std::uint32_t>(workers) || links[rank] != nullptr) {
      return Status::Error(name + ": a connection introduced itself as " + std::to_string(rank) +
                           ", which is no worker still expected");
    }
    auto link = WorkerLink(std::move(in.value().stream), placement.rank, static_cast<int>(rank),
                           job, deadline);
    if (!link.ok()) return link.status();
    links[rank] = std::move(link).value();
  }
  return links;
}

Status ServeShardOfJob(const config::JobConfig& whole_job, const model::ModelSpec& spec,
                       const Placement& whole_placement,
                       const std::optional<store::CheckpointData>& resume,
                       train::MetricSink& sink) {
  // The shard serves its data-parallel group: the whole model's parameters, or with model
  // parallelism its partition's (as that partition's processes lay them out).
  const config::ProcessRole role = config::RoleOf(whole_job.cluster, whole_placement.rank);
  const GroupView group = DataParallelView(whole_job, whole_placement);
  const config::JobConfig& job = group.job;
  const Placement& placement = group.placement;
  const int workers = job.cluster.workers;
  const int shards = job.cluster.Servers();
  // The shards' ranks follow every replica's: an elastic job's up to max_workers.
  const int shard = placement.rank - job.cluster.MostMembers();
  if (role.kind != config::ProcessRole::Kind::kShard || placement.listener == nullptr) {
    return Status::Error("process " + std::to_string(whole_placement.rank) +
                         " is not a parameter server of this job");
  }
  const model::Model model(spec);
  std::size_t n = model.NumParams();
  std::optional<model::PartitionPlan> plan;
  if (whole_job.cluster.model_parallel > 1) {
    Result<model::PartitionPlan> planned =
        model::PlanPartitions(spec, whole_job.cluster.partition, whole_job.cluster.model_parallel);
    if (!planned.ok()) return planned.status();
    plan = std::move(planned).value();
    n = plan->Size(role.partition);
  }
  const auto [begin, end] = dist::ShardRanges(n, shards)[static_cast<std::size_t>(shard)];
  const auto timeout =
      std::chrono::milliseconds(static_cast<long>(job.cluster.timeout_seconds * 1000));
  // A restarted replica rejoins its shards where the mode restarts a lost replica alone.
  const bool takes_back =
      config::TraitsOf(job.cluster.mode).lost_replica == config::LostProcess::kRestartAlone;
  dist::ParameterShard server(dist::ShardOptions{
      .shard = shard,
      .shards = shards,
      .begin = begin,
      .end = end,
      .num_params = n,
      .workers = workers,
      .mode = PsModeOf(job),
      .max_staleness = job.cluster.max_staleness,
      .optimizer = job.optimizer,
      .timeout = timeout,
      .rejoin = takes_back,
      .backup_workers = job.cluster.backup_workers,
      .elastic = job.cluster.Elastic(),
      .log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }});

  Status loaded;
  if (resume) {
    if (resume->params.size() != n) {
      return Status::Error("the checkpoint at step " + std::to_string(resume->step) + " holds " +
                           std::to_string(resume->params.size()) + " parameters, the model has " +
                           std::to_string(n));
    }
    // The optimizer's state vectors; a compressed sync job's residuals follow them (its workers'
    // to restore).
    const std::size_t kept =
        std::min(resume->optimizer_state.size(),
                 static_cast<std::size_t>(optim::StateVectorCount(job.optimizer.type)));
    std::vector<std::span<const float>> state;
    for (std::size_t i = 0; i < kept; ++i) {
      const auto& v = resume->optimizer_state[i];
      if (v.size() != n)
        return Status::Error("the checkpoint's optimizer state has the wrong size");
      state.push_back(std::span<const float>(v).subspan(begin, end - begin));
    }
    loaded = server.Load(std::span<const float>(resume->params).subspan(begin, end - begin), state,
                         resume->optimizer_steps);
    // An async checkpoint keeps each shard's version vector: the clocks go on from it.
    const auto k = static_cast<std::size_t>(shard);
    if (loaded.ok() && PsModeOf(job) == dist::PsMode::kAsync &&
        resume->clocks.size() == static_cast<std::size_t>(shards) &&
        resume->clocks[k].size() == static_cast<std::size_t>(workers)) {
      loaded = server.LoadClocks(resume->clocks[k]);
    }
  } else {
    std::vector<float> params(n);
    if (plan) {
      model::PartitionInit(*plan, model, role.partition, params, job.train.seed);
    } else {
      model.Init(params, job.train.seed);
    }
    loaded = server.Load(std::span<const float>(params).subspan(begin, end - begin));
  }
  if (!loaded.ok()) return loaded;
  if (job.cluster.Elastic()) {
    // Links come as members say hello, for as long as the shard serves.
    return ServeReporting(
        sink, [&server, &job] { return StatPoints(server.Stats(), job); },
        [&]() -> Status {
          std::atomic<bool> serving{true};
          std::vector<std::unique_ptr<dist::Link>> admitted;
          std::thread acceptor([&] {
            // An elastic job's shard (ps_protocol.md, "Elastic jobs"): every replica rank's
            // connection is a link the shard admits (its hello says its membership).
            AcceptWorkers(
                *placement.listener, placement.rank, job, job.cluster.MostMembers(),
                JobTimeout(job), [&server](int, dist::Link* link) { return server.Admit(link); },
                serving, admitted);
          });
          Status served = server.Serve({});
          serving = false;
          acceptor.join();
          return served;
        });
  }

  Result<std::vector<std::unique_ptr<dist::Link>>> owned =
      AcceptWorkerLinks(job, placement, server.name());
  if (!owned.ok()) return owned.status();
  const std::vector<dist::Link*> links = dist::LinkPointers(owned.value());

  // In async mode a side thread takes restarted workers back (ParameterShard::Rejoin); their
  // links live in `rejoined` until Serve has returned.
  return ServeReporting(
      sink, [&server, &job] { return StatPoints(server.Stats(), job); },
      [&]() -> Status {
        std::atomic<bool> serving{true};
        std::vector<std::unique_ptr<dist::Link>> rejoined;
        std::thread acceptor;
        if (takes_back) {
          acceptor = std::thread([&] {
            // A restarted worker's link, if the shard takes it back.
            AcceptWorkers(
                *placement.listener, placement.rank, job, job.cluster.workers,
                std::chrono::seconds(10),
                [&server](int rank, dist::Link* link) { return server.Rejoin(rank, link); },
                serving, rejoined);
          });
        }
        Status served = server.Serve(links);
        serving = false;
        if (acceptor.joinable()) acceptor.join();
        return served;
      });
}

Status ServeReporting(train::MetricSink& sink,
                      const std::function<std::vector<train::MetricPoint>()>& points,
                      const std::function<Status()>& serve) {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  std::thread reporter([&] {  // the sink is this thread's until it is joined
    std::unique_lock lock(mu);
    while (!done_cv.wait_for(lock, std::chrono::seconds(1), [&] { return done; })) {
      sink.Record(points());
    }
  });
  const Status served = serve();
  {
    std::lock_guard lock(mu);
    done = true;
  }
  done_cv.notify_all();
  reporter.join();
  sink.Record(points());
  return served;
}

}  // namespace dtrain::runner
